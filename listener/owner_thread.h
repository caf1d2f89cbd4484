// listener/owner_thread.h: OwnerThread, the debug-build check behind the "// Owner:" marks of
// STYLE.md: an object's owner-only methods check that the calling thread is the thread that
// claimed the object. Release builds (NDEBUG) store nothing and check nothing.
//
// Thread contract: claim() on the owner thread before its first owner-only call (a Connection
// is claimed by the listener thread that creates it, a Listener by its own thread when it
// starts running). is_owner() may be called from any thread: calling it from another is the
// bug it reports.
#pragma once

#include <atomic>
#include <thread>

#include "base/check.h"

namespace numadir::listener {

class OwnerThread {
 public:
  // Makes the calling thread the owner.
  void claim() {
#ifndef NDEBUG
    // Relaxed: only the owner's own later checks rely on it, and those are sequenced after.
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
#endif
  }
  // Returns: whether the calling thread is the owner (always true in release builds, where
  //   NUMADIR_DCHECK_OWNER compiles to nothing).
  bool is_owner() const {
#ifndef NDEBUG
    return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
#else
    return true;
#endif
  }

 private:
#ifndef NDEBUG
  std::atomic<std::thread::id> owner_{};
#endif
};

}  // namespace numadir::listener

// Debug builds: aborts unless the calling thread owns `owner_thread` (an OwnerThread).
#define NUMADIR_DCHECK_OWNER(owner_thread) \
  NUMADIR_DCHECK((owner_thread).is_owner(), "an owner-only method called off its owner thread")
