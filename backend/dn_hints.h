// backend/dn_hints.h: DnHints, a fixed table of "dn key K was last seen at entry id I" guesses.
// A bind names the entry an auth search has just returned; the search leaves a hint, and the
// bind reads the entry by id instead of looking its dn key up in dn2id first (one B-tree walk
// less per bind, and the entry's pages are still warm from the search).
//
// A hint is never an answer: the reader reads the entry the hint names, in its own snapshot,
// and accepts it only if that entry's stored dn key is exactly the key looked up (the dn key is
// unique in a snapshot, so dn2id holds that same id). Otherwise, and when no hint is there, it
// uses dn2id. A stale hint (the entry since renamed, deleted or replaced, or another key that
// took the slot) costs one read and changes no result.
//
// Thread contract: any thread may call get() and put() at once. Slots are relaxed atomics: a
// hint publishes no data to the thread that reads it (the entry comes from the reader's own
// transaction), so no ordering is needed, only untorn ids.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string_view>

#include "backend/lmdb_env.h"

namespace numadir::backend {

class DnHints {
 public:
  // Requires: `slots` is a power of two.
  explicit DnHints(std::size_t slots);
  DnHints(const DnHints&) = delete;
  DnHints& operator=(const DnHints&) = delete;

  // Returns: the id last put under a key hashing to `key`'s slot, or 0 (none yet).
  EntryId get(std::string_view key) const {
    return slots_[slot(key)].load(std::memory_order_relaxed);
  }
  // Records `id` for `key`, replacing the slot's previous hint.
  void put(std::string_view key, EntryId id) {
    std::atomic<EntryId>& s = slots_[slot(key)];
    // Written only when it changes: a hot entry's slot stays shared in every core's cache.
    if (s.load(std::memory_order_relaxed) != id) {
      s.store(id, std::memory_order_relaxed);
    }
  }

 private:
  std::size_t slot(std::string_view key) const;

  const std::size_t mask_;
  const std::unique_ptr<std::atomic<EntryId>[]> slots_;
};

}  // namespace numadir::backend
