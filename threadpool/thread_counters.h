// threadpool/thread_counters.h: counters that one thread writes and any thread reads, the
// helpers that keep writing them cheap, and the counters of one pool worker.
//
// A counter owned by one thread is updated with a relaxed load and a relaxed store rather than
// a fetch_add: no locked instruction, no bus traffic beyond the owner's cache line. Readers see
// some recent value, which is all monitoring needs; they never write.
//
// Thread contract: owner_add / owner_sub only on the counter's owning thread; loads from any
// thread. WorkerCounters: every member is written by its worker thread only (after start,
// before join); any thread may read it at any time.
#pragma once

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "base/cache_line.h"

namespace numadir::threadpool {

// Adds `n` to a counter that only the calling thread writes.
inline void owner_add(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Subtracts `n` from a counter that only the calling thread writes.
inline void owner_sub(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
}

// Returns: the steady clock in nanoseconds (never 0 on a running system): CLOCK_MONOTONIC, the
//   clock of std::chrono::steady_clock, read straight from the vDSO (steady_clock::now() is a
//   call into libstdc++ around the same clock_gettime).
inline std::uint64_t steady_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000U +
         static_cast<std::uint64_t>(now.tv_nsec);
}

// Returns: the calling thread's OS thread id (gettid), which names /proc/self/task/<tid>.
inline std::int32_t os_thread_id() { return static_cast<std::int32_t>(::syscall(SYS_gettid)); }

// One worker's counters, on its own cache line. Busy time is time not parked; it is measured
// at park and wake-up only (never per task), so a worker that never parks costs no clock read.
struct alignas(kCacheLineSize) WorkerCounters {
  std::atomic<std::uint64_t> tasks{0};    // Tasks run to completion.
  std::atomic<std::uint64_t> parks{0};    // Times it went to sleep with nothing to do.
  std::atomic<std::uint64_t> wakeups{0};  // Times it came back from sleep.
  // Busy nanoseconds up to the last park; the stretch since active_since_ns is added by readers.
  std::atomic<std::uint64_t> busy_ns{0};
  // steady_ns() when it last started or woke; 0 while parked.
  std::atomic<std::uint64_t> active_since_ns{0};
  std::atomic<std::int32_t> tid{0};  // os_thread_id() of the worker, 0 before it runs.

  // Worker thread, first thing: records its tid and starts the busy clock.
  void on_start() {
    tid.store(os_thread_id(), std::memory_order_relaxed);
    active_since_ns.store(steady_ns(), std::memory_order_release);
  }
  // Worker thread, just before it sleeps.
  void on_park() {
    owner_add(parks);
    close_busy_stretch();
  }
  // Worker thread, just after it woke.
  void on_wake() {
    owner_add(wakeups);
    active_since_ns.store(steady_ns(), std::memory_order_release);
  }
  // Worker thread, when it exits: its last busy stretch is counted.
  void on_exit() { close_busy_stretch(); }

  // Any thread. Returns: busy nanoseconds up to `now_ns` (a steady_ns() value); approximate
  //   while the worker runs (a stretch being closed may be missed for a moment).
  std::uint64_t busy_ns_at(std::uint64_t now_ns) const {
    const std::uint64_t busy = busy_ns.load(std::memory_order_acquire);
    const std::uint64_t since = active_since_ns.load(std::memory_order_acquire);
    return busy + (since != 0 && now_ns > since ? now_ns - since : 0);
  }

 private:
  void close_busy_stretch() {
    const std::uint64_t since = active_since_ns.load(std::memory_order_relaxed);
    // Cleared before busy_ns grows: a reader that sees the new busy_ns (acquire) sees 0 here
    // and never counts the stretch twice.
    active_since_ns.store(0, std::memory_order_relaxed);
    if (since != 0) {
      busy_ns.store(busy_ns.load(std::memory_order_relaxed) + (steady_ns() - since),
                    std::memory_order_release);
    }
  }
};

}  // namespace numadir::threadpool
