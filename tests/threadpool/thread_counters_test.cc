#include "threadpool/thread_counters.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tests/threadpool/function_task.h"
#include "tests/wait_until.h"
#include "threadpool/locked_queue_pool.h"
#include "threadpool/worker_pool.h"

namespace numadir::threadpool {
namespace {

using numadir::testing::wait_until;

using testing::FunctionTask;
using testing::task;

TEST_CASE("owner_add: a counter written by one thread counts up and down") {
  std::atomic<std::uint64_t> counter{0};
  owner_add(counter);
  owner_add(counter, 41);
  owner_sub(counter, 2);
  CHECK(counter.load() == 40);
}

TEST_CASE("WorkerCounters: busy time runs from start or wake-up to the next park") {
  WorkerCounters counters;
  CHECK(counters.busy_ns_at(steady_ns()) == 0);  // Not started.
  counters.on_start();
  CHECK(counters.tid.load() == os_thread_id());
  const std::uint64_t later = steady_ns() + 1'000'000;
  CHECK(counters.busy_ns_at(later) >= 1'000'000);  // The open stretch counts.
  counters.on_park();
  CHECK(counters.parks.load() == 1);
  const std::uint64_t busy = counters.busy_ns.load();
  CHECK(counters.busy_ns_at(later + 5'000'000) == busy);  // Parked: the clock stands still.
  counters.on_wake();
  CHECK(counters.wakeups.load() == 1);
  CHECK(counters.busy_ns_at(steady_ns() + 1'000'000) >= busy + 1'000'000);
  counters.on_exit();
  CHECK(counters.active_since_ns.load() == 0);
  CHECK(counters.busy_ns.load() >= busy);
}

TEST_CASE("TaskPool counters: tasks and parks and wake-ups and busy time per worker") {
  WorkerPoolOptions options;
  options.threads = 2;
  options.queue_capacity = 64;
  std::unique_ptr<TaskPool> pool;
  SUBCASE("lock-free WorkerPool") { pool = std::make_unique<WorkerPool>(options); }
  SUBCASE("LockedQueuePool") { pool = std::make_unique<LockedQueuePool>(options); }
  pool->start();
  CHECK(pool->options().queue_capacity == 64);
  // Both workers record their thread ids and, with nothing to do, park.
  REQUIRE(wait_until(
      [&] { return pool->counters(0).parks.load() >= 1 && pool->counters(1).parks.load() >= 1; }));
  const std::set<std::int32_t> worker_tids = {pool->counters(0).tid.load(),
                                              pool->counters(1).tid.load()};
  CHECK(worker_tids.size() == 2);
  CHECK(worker_tids.count(0) == 0);
  CHECK(worker_tids.count(os_thread_id()) == 0);

  constexpr int kTasks = 20;
  constexpr auto kSpin = std::chrono::milliseconds(5);
  std::latch done(kTasks);
  std::mutex mu;
  std::set<std::int32_t> ran_on;
  for (int i = 0; i < kTasks; ++i) {
    auto t = task([&] {
      // Busy without sleeping: the worker is not parked for this long.
      const auto until = std::chrono::steady_clock::now() + kSpin;
      while (std::chrono::steady_clock::now() < until) {
      }
      {
        std::lock_guard lock(mu);
        ran_on.insert(os_thread_id());
      }
      done.count_down();
    });
    REQUIRE(pool->try_submit(t));
  }
  done.wait();
  pool->stop();
  std::uint64_t tasks = 0;
  std::uint64_t busy_ns = 0;
  for (std::size_t i = 0; i < pool->threads(); ++i) {
    const WorkerCounters& counters = pool->counters(i);
    tasks += counters.tasks.load();
    busy_ns += counters.busy_ns_at(steady_ns());
    // Every park ended in a wake-up: at the latest, stop() woke it.
    CHECK(counters.wakeups.load() == counters.parks.load());
    CHECK(counters.active_since_ns.load() == 0);  // Exited: the last stretch is closed.
  }
  CHECK(tasks == kTasks);
  CHECK(busy_ns >= std::chrono::nanoseconds(kSpin).count() * kTasks);
  for (const std::int32_t tid : ran_on) {
    CHECK(worker_tids.count(tid) == 1);  // The tasks ran on the workers that recorded them.
  }
  CHECK(pool->queue_depth() == 0);
}

}  // namespace
}  // namespace numadir::threadpool
