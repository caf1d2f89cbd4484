// backend/dn_hints.cc: see dn_hints.h.
#include "backend/dn_hints.h"

#include <functional>

#include "base/check.h"

namespace numadir::backend {

DnHints::DnHints(std::size_t slots)
    : mask_(slots - 1), slots_(std::make_unique<std::atomic<EntryId>[]>(slots)) {
  NUMADIR_CHECK(slots != 0 && (slots & mask_) == 0, "DnHints: slots must be a power of two");
}

std::size_t DnHints::slot(std::string_view key) const {
  const std::size_t hash = std::hash<std::string_view>{}(key);
  return hash & mask_;
}

}  // namespace numadir::backend
