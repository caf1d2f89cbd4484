// Mutex / MutexLock behave as locks, and the annotated code below compiles cleanly under the
// clang presets' -Wthread-safety -Werror (a field marked NUMADIR_GUARDED_BY touched without its
// mutex would fail that build).
#include "base/thread_annotations.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "base/cache_line.h"

namespace numadir {
namespace {

class Counter {
 public:
  void add(int n) NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    add_locked(n);
  }
  int get() NUMADIR_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return value_;
  }

 private:
  void add_locked(int n) NUMADIR_REQUIRES(mu_) { value_ += n; }

  Mutex mu_;
  int value_ NUMADIR_GUARDED_BY(mu_) = 0;
};

TEST_CASE("Mutex: MutexLock serializes increments from several threads") {
  Counter counter;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&counter] {
      for (int i = 0; i < 10'000; ++i) {
        counter.add(1);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(counter.get() == 40'000);
}

TEST_CASE("Mutex: try_lock fails while held and succeeds once released") {
  Mutex mu;
  mu.lock();
  bool acquired_elsewhere = true;
  std::thread other([&] {
    if (mu.try_lock()) {
      mu.unlock();
    } else {
      acquired_elsewhere = false;
    }
  });
  other.join();
  CHECK_FALSE(acquired_elsewhere);
  mu.unlock();
  bool relocked = false;
  if (mu.try_lock()) {
    relocked = true;
    mu.unlock();
  }
  CHECK(relocked);
}

struct alignas(kCacheLineSize) PaddedCounter {
  long value = 0;
};

TEST_CASE("kCacheLineSize: aligned counters sit on separate cache lines") {
  PaddedCounter counters[2];
  const auto a = reinterpret_cast<std::uintptr_t>(&counters[0]);
  const auto b = reinterpret_cast<std::uintptr_t>(&counters[1]);
  CHECK(kCacheLineSize == 64);
  CHECK(a % kCacheLineSize == 0);
  CHECK(b - a == kCacheLineSize);
}

}  // namespace
}  // namespace numadir
