// base/cache_line.h: the cache-line size used to keep counters written by different threads
// on separate lines.
//
// Thread contract: a compile-time constant; any thread may use it.
#pragma once

#include <cstddef>

namespace numadir {

// 64 bytes on every x86-64 and most AArch64 parts we target. A project constant rather than
// std::hardware_destructive_interference_size, which GCC 12 warns about (its value may change
// between compiler versions and so must not appear in an ABI).
inline constexpr std::size_t kCacheLineSize = 64;

}  // namespace numadir
