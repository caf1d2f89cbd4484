// tests/wait_until.h: a bounded wait for a condition that nothing signals (a counter another
// thread bumps after the event the test saw, a process's file descriptors), for tests.
//
// Thread contract: call from any test thread; `done` is called on that thread only and must be
// safe to run while other threads change what it reads (atomics, snapshots).
#pragma once

#include <chrono>
#include <thread>

namespace numadir::testing {

// Calls `done` until it returns true or `timeout` has passed. The first polls only yield (what
// is waited for is usually a few instructions away on another thread); later ones are 1 ms
// apart, so a long wait does not take a CPU from the threads it waits for.
// Returns: true as soon as `done()` did, false if it still did not at the deadline.
template <typename Predicate>
bool wait_until(Predicate&& done, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int polls = 0; !done(); ++polls) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    if (polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // A poll interval, not a wait.
    }
  }
  return true;
}

}  // namespace numadir::testing
