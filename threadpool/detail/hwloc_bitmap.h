// threadpool/detail/hwloc_bitmap.h: an owning handle for hwloc bitmaps, and errno's text, shared
// by topology.cc and node_memory.cc.
//
// Thread contract: values; a handle is used by one thread at a time.
#pragma once

#include <hwloc.h>

#include <memory>
#include <string>
#include <system_error>

namespace numadir::threadpool::detail {

struct BitmapDeleter {
  void operator()(hwloc_bitmap_s* bitmap) const { hwloc_bitmap_free(bitmap); }
};
using BitmapHandle = std::unique_ptr<hwloc_bitmap_s, BitmapDeleter>;

inline std::string errno_text(int error) { return std::generic_category().message(error); }

}  // namespace numadir::threadpool::detail
