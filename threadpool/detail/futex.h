// threadpool/detail/futex.h: Linux futex wait and wake on a 32-bit atomic: how parked workers
// sleep. Used instead of std::atomic::wait, whose libstdc++ implementation spins with
// sched_yield before sleeping (extra system calls on every park).
//
// Thread contract: any thread.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace numadir::threadpool::detail {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

// Sleeps while `word` holds `expected` (returns at once if it does not; may return spuriously).
inline void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

// Wakes up to `count` threads sleeping on `word`.
inline void futex_wake(std::atomic<std::uint32_t>& word, int count) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}

}  // namespace numadir::threadpool::detail
