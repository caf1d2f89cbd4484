#include "base/recycler.h"

#include <doctest/doctest.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace numadir {
namespace {

// Counts live objects, so a test can tell made from reused and kept from destroyed.
struct Counted {
  static inline std::atomic<int> live{0};
  static inline std::atomic<int> made{0};
  Counted() {
    ++live;
    ++made;
  }
  ~Counted() { --live; }
  std::string buffer;
};

TEST_CASE("Recycler: an object given back is taken again with what it grew") {
  Recycler<Counted> recycler(64);
  Recycler<Counted>::Cache cache;
  std::unique_ptr<Counted> first = recycler.take(cache);
  first->buffer.assign(200, 'x');
  Counted* address = first.get();
  recycler.give(cache, std::move(first));
  std::unique_ptr<Counted> again = recycler.take(cache);
  CHECK(again.get() == address);
  CHECK(again->buffer.size() == 200);  // As it was given: the owner clears what it must.
  recycler.give(cache, std::move(again));
}

TEST_CASE("Recycler: objects taken on one thread and given on another are reused") {
  Recycler<Counted> recycler(256);
  const int made_before = Counted::made.load();
  // A listener and a worker: this thread takes, the giver gives each back from its own thread,
  // so this thread's cache runs dry and refills from the depot the giver's cache spills into.
  constexpr int kObjects = 2000;
  std::mutex mu;
  std::deque<std::unique_ptr<Counted>> queue;
  std::atomic<bool> done{false};
  std::thread giver([&] {
    Recycler<Counted>::Cache giver_cache;
    for (;;) {
      std::unique_ptr<Counted> object;
      {
        std::lock_guard lock(mu);
        if (!queue.empty()) {
          object = std::move(queue.front());
          queue.pop_front();
        }
      }
      if (object != nullptr) {
        recycler.give(giver_cache, std::move(object));
      } else if (done.load()) {
        return;
      } else {
        std::this_thread::yield();
      }
    }
  });
  constexpr std::size_t kInFlight = 8;  // As requests in flight: bounded.
  Recycler<Counted>::Cache taker_cache;
  for (int i = 0; i < kObjects; ++i) {
    std::unique_ptr<Counted> object = recycler.take(taker_cache);
    for (;;) {
      std::lock_guard lock(mu);
      if (queue.size() < kInFlight) {
        queue.push_back(std::move(object));
        break;
      }
    }
  }
  done.store(true);
  giver.join();
  // Without reuse every take would make one. With it, new ones are made only while the objects
  // in flight and in the two caches are not yet back in the depot.
  const int made = Counted::made.load() - made_before;
  CAPTURE(made);
  CHECK(made < kObjects / 2);
}

TEST_CASE("Recycler: the depot keeps at most max_kept and destroys the rest") {
  const int live_before = Counted::live.load();
  {
    Recycler<Counted> recycler(Recycler<Counted>::kBatch);
    std::thread giver([&] {
      Recycler<Counted>::Cache giver_cache;
      std::vector<std::unique_ptr<Counted>> taken;
      for (std::size_t i = 0; i < 10 * Recycler<Counted>::kBatch; ++i) {
        taken.push_back(std::make_unique<Counted>());
      }
      for (std::unique_ptr<Counted>& object : taken) {
        recycler.give(giver_cache, std::move(object));
      }
    });
    giver.join();
    // The giver's cache went with its thread; the depot holds one batch, no more.
    CHECK(Counted::live.load() - live_before == static_cast<int>(Recycler<Counted>::kBatch));
  }
  CHECK(Counted::live.load() == live_before);
}

TEST_CASE("Recycler: an object given without a cache goes to the depot while it has room") {
  const int live_before = Counted::live.load();
  {
    Recycler<Counted> recycler(1);
    auto kept = std::make_unique<Counted>();
    Counted* address = kept.get();
    recycler.give(std::move(kept));
    recycler.give(std::make_unique<Counted>());  // The depot is full: destroyed.
    CHECK(Counted::live.load() - live_before == 1);
    Recycler<Counted>::Cache cache;
    std::unique_ptr<Counted> again = recycler.take(cache);
    CHECK(again.get() == address);
  }
  CHECK(Counted::live.load() == live_before);
}

}  // namespace
}  // namespace numadir
