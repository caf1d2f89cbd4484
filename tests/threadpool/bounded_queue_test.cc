#include "threadpool/bounded_queue.h"

#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace numadir::threadpool {
namespace {

TEST_CASE("BoundedQueue: a full queue refuses and the caller keeps the item") {
  BoundedQueue<int> q(1);
  auto first = std::make_unique<int>(1);
  auto second = std::make_unique<int>(2);
  REQUIRE(q.try_push(first));
  CHECK(first == nullptr);
  CHECK_FALSE(q.try_push(second));
  REQUIRE(second != nullptr);
  CHECK(*second == 2);
  CHECK(*q.try_pop() == 1);
  CHECK(q.try_pop() == nullptr);
}

TEST_CASE("BoundedQueue: items still queued are deleted with the queue") {
  struct Counted {
    explicit Counted(std::atomic<int>& live) : live_(live) { ++live_; }
    ~Counted() { --live_; }
    std::atomic<int>& live_;
  };
  std::atomic<int> live{0};
  {
    BoundedQueue<Counted> q(4);
    for (int i = 0; i < 3; ++i) {
      auto item = std::make_unique<Counted>(live);
      REQUIRE(q.try_push(item));
    }
    CHECK(live == 3);
  }
  CHECK(live == 0);
}

TEST_CASE("BoundedQueue: every item pushed by several threads is popped exactly once") {
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 5000;
  BoundedQueue<int> q(64);
  std::vector<std::atomic<int>> seen(kProducers * kPerProducer);
  std::atomic<int> popped{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&q, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        auto item = std::make_unique<int>(p * kPerProducer + i);
        while (!q.try_push(item)) {
          std::this_thread::yield();  // Full: the consumers make room.
        }
      }
    });
  }
  for (int c = 0; c < 2; ++c) {
    threads.emplace_back([&] {
      while (popped.load() < kProducers * kPerProducer) {
        if (auto item = q.try_pop()) {
          seen[static_cast<std::size_t>(*item)].fetch_add(1);
          popped.fetch_add(1);
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  for (const auto& count : seen) {
    CHECK(count.load() == 1);
  }
}

}  // namespace
}  // namespace numadir::threadpool
