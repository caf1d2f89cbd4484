#include "threadpool/worker_pool.h"

#include "threadpool/locked_queue_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <typeinfo>
#include <vector>

#include "tests/threadpool/function_task.h"
#include "tests/wait_until.h"

namespace numadir::threadpool {
namespace {

using numadir::testing::wait_until;

using testing::FunctionTask;
using testing::task;

// Occupies the only worker of `pool` until release(): what is submitted meanwhile stays queued.
class HeldWorker {
 public:
  explicit HeldWorker(TaskPool& pool) {
    auto blocker = task([this] {
      started_.count_down();
      released_.wait();
    });
    REQUIRE(pool.try_submit(blocker));
    started_.wait();
  }
  void release() { release_.set_value(); }

 private:
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  std::latch started_{1};
};

// A task a helping listener may run (as a search is), recording the thread that ran it and the
// state it got.
class ReadTask : public Task {
 public:
  explicit ReadTask(std::atomic<std::thread::id>& ran_on,
                    std::atomic<WorkerState*>* state_seen = nullptr)
      : ran_on_(ran_on), state_seen_(state_seen) {}
  void run(WorkerState& state) override {
    if (state_seen_ != nullptr) {
      state_seen_->store(&state);
    }
    ran_on_.store(std::this_thread::get_id());
  }
  bool may_run_inline() const override { return true; }

 private:
  std::atomic<std::thread::id>& ran_on_;
  std::atomic<WorkerState*>* state_seen_;
};

// Counts the pool's calls and records the thread of the last one.
class CountingWaiter final : public RoomWaiter {
 public:
  void on_room() override {
    thread.store(std::this_thread::get_id());
    calls.fetch_add(1);
    calls.notify_all();
  }
  std::atomic<int> calls{0};
  std::atomic<std::thread::id> thread{};
};

// Both pools, for the behaviour TaskPool promises.
std::unique_ptr<TaskPool> make_pool(bool lock_free, WorkerPoolOptions options) {
  if (lock_free) {
    return std::make_unique<WorkerPool>(std::move(options));
  }
  return std::make_unique<LockedQueuePool>(std::move(options));
}

TEST_CASE("TaskPool: a refused submitter is told once when the queue drains to the room mark") {
  bool lock_free = true;
  SUBCASE("WorkerPool") { lock_free = true; }
  SUBCASE("LockedQueuePool") { lock_free = false; }
  WorkerPoolOptions options;
  options.threads = 1;
  options.queue_capacity = 4;
  std::unique_ptr<TaskPool> pool = make_pool(lock_free, options);
  REQUIRE(pool->room_mark() == 2);
  pool->start();
  auto held = std::make_unique<HeldWorker>(*pool);
  // The three tasks after the first wait until the test saw the waiter's call: the mark is
  // crossed by the second task taken, and the queue still holds two then.
  std::promise<void> told;
  std::shared_future<void> told_future = told.get_future().share();
  std::atomic<int> runs{0};
  for (int i = 0; i < 4; ++i) {
    auto t = task([&, i] {
      if (i > 0) {
        told_future.wait();
      }
      runs.fetch_add(1);
    });
    REQUIRE(pool->try_submit(t));
  }
  auto refused = task([] {});
  REQUIRE_FALSE(pool->try_submit(refused));
  CountingWaiter waiter;
  pool->notify_when_room(waiter);
  pool->notify_when_room(waiter);   // Registered twice: still called once.
  CHECK(waiter.calls.load() == 0);  // Four queued: above the mark, and the worker is held.
  held->release();
  waiter.calls.wait(0);
  CHECK(waiter.thread.load() != std::this_thread::get_id());  // The worker that took a task.
  CHECK(pool->queue_depth() <= 2);
  told.set_value();
  pool->stop();
  CHECK(runs.load() == 4);
  CHECK(waiter.calls.load() == 1);
}

TEST_CASE("TaskPool: a waiter registered while there is room is told at once on its thread") {
  bool lock_free = true;
  SUBCASE("WorkerPool") { lock_free = true; }
  SUBCASE("LockedQueuePool") { lock_free = false; }
  WorkerPoolOptions options;
  options.threads = 1;
  options.queue_capacity = 4;
  std::unique_ptr<TaskPool> pool = make_pool(lock_free, options);
  pool->start();
  CountingWaiter waiter;
  pool->notify_when_room(waiter);
  CHECK(waiter.calls.load() == 1);
  CHECK(waiter.thread.load() == std::this_thread::get_id());
  pool->stop();
  CountingWaiter late;
  pool->notify_when_room(late);  // A stopped pool calls nobody.
  CHECK(late.calls.load() == 0);
  pool->cancel_room_wait(late);
}

TEST_CASE("TaskPool: a cancelled waiter is never told") {
  bool lock_free = true;
  SUBCASE("WorkerPool") { lock_free = true; }
  SUBCASE("LockedQueuePool") { lock_free = false; }
  WorkerPoolOptions options;
  options.threads = 1;
  options.queue_capacity = 2;
  std::unique_ptr<TaskPool> pool = make_pool(lock_free, options);
  pool->start();
  auto held = std::make_unique<HeldWorker>(*pool);
  std::atomic<int> runs{0};
  for (int i = 0; i < 2; ++i) {
    auto t = task([&] { runs.fetch_add(1); });
    REQUIRE(pool->try_submit(t));
  }
  CountingWaiter waiter;
  pool->notify_when_room(waiter);
  pool->cancel_room_wait(waiter);
  held->release();
  pool->stop();  // Drains the queue past the mark.
  CHECK(runs.load() == 2);
  CHECK(waiter.calls.load() == 0);
}

// A worker state that knows the thread that made it, and tells `destroyed_on` which thread
// destroyed it.
class ThreadState : public WorkerState {
 public:
  explicit ThreadState(std::vector<std::thread::id>& destroyed_on, std::mutex& mu)
      : destroyed_on_(destroyed_on), mu_(mu) {}
  ~ThreadState() override {
    std::lock_guard lock(mu_);
    destroyed_on_.push_back(std::this_thread::get_id());
  }
  const std::thread::id made_on = std::this_thread::get_id();

 private:
  std::vector<std::thread::id>& destroyed_on_;
  std::mutex& mu_;
};

// Runs `body` with the state it is given.
class StateTask : public Task {
 public:
  explicit StateTask(std::function<void(WorkerState&)> body) : body_(std::move(body)) {}
  void run(WorkerState& state) override { body_(state); }

 private:
  std::function<void(WorkerState&)> body_;
};

// What one task saw: the thread that ran it, the state it got and the thread that made it.
struct Seen {
  std::thread::id thread;
  const WorkerState* state;
  std::thread::id state_made_on;
};

// Checks, for a pool of two workers, that each worker makes its own state on its own thread,
// runs every task with it, and destroys it on that thread when the pool stops.
template <typename Pool>
void check_worker_states() {
  std::mutex mu;
  std::vector<std::thread::id> destroyed_on;
  std::atomic<int> made{0};
  WorkerPoolOptions options;
  options.threads = 2;
  options.queue_capacity = 256;
  options.make_worker_state = [&] {
    made.fetch_add(1);
    return std::make_unique<ThreadState>(destroyed_on, mu);
  };
  std::vector<Seen> seen;
  const auto record = [&](WorkerState& state) {
    std::lock_guard lock(mu);
    seen.push_back(
        Seen{std::this_thread::get_id(), &state, dynamic_cast<ThreadState&>(state).made_on});
  };
  {
    Pool pool(options);
    pool.start();
    // Two tasks that each wait for the other: they run at once, so on both workers.
    std::latch both(2);
    for (int i = 0; i < 2; ++i) {
      std::unique_ptr<Task> t = std::make_unique<StateTask>([&](WorkerState& state) {
        record(state);
        both.arrive_and_wait();
      });
      REQUIRE(pool.try_submit(t));
    }
    constexpr int kMore = 200;
    std::latch done(kMore);
    for (int i = 0; i < kMore; ++i) {
      std::unique_ptr<Task> t = std::make_unique<StateTask>([&](WorkerState& state) {
        record(state);
        done.count_down();
      });
      REQUIRE(pool.try_submit(t));
    }
    done.wait();
    pool.stop();
  }
  CHECK(made.load() == 2);
  REQUIRE(seen.size() == 202);
  CHECK(seen[0].thread != seen[1].thread);
  CHECK(seen[0].state != seen[1].state);
  std::set<std::thread::id> threads;
  std::map<std::thread::id, const WorkerState*> state_of;
  for (const Seen& one : seen) {
    CHECK(one.state_made_on == one.thread);  // Each task got its own worker's state...
    const auto [at, first] = state_of.emplace(one.thread, one.state);
    CHECK(at->second == one.state);  // ... the same one every time.
    threads.insert(one.thread);
  }
  CHECK(threads.size() == 2);
  CHECK(threads.count(std::this_thread::get_id()) == 0);
  std::lock_guard lock(mu);
  CHECK(std::set<std::thread::id>(destroyed_on.begin(), destroyed_on.end()) == threads);
  CHECK(destroyed_on.size() == 2);
}

TEST_CASE("WorkerPool: tasks run on the pool's threads and each exactly once") {
  WorkerPoolOptions options;
  options.threads = 3;
  options.queue_capacity = 1024;
  WorkerPool pool(options);
  pool.start();
  constexpr int kTasks = 2000;
  std::latch done(kTasks);
  std::mutex mu;
  std::set<std::thread::id> ran_on;
  std::atomic<int> runs{0};
  for (int i = 0; i < kTasks; ++i) {
    auto t = task([&] {
      {
        std::lock_guard lock(mu);
        ran_on.insert(std::this_thread::get_id());
      }
      runs.fetch_add(1);
      done.count_down();
    });
    while (!pool.try_submit(t)) {
      std::this_thread::yield();  // Backpressure: the caller keeps the task and retries.
    }
  }
  done.wait();
  pool.stop();
  CHECK(runs == kTasks);
  CHECK(ran_on.count(std::this_thread::get_id()) == 0);
  CHECK(ran_on.size() <= 3);
  std::uint64_t counted = 0;
  for (std::size_t i = 0; i < pool.threads(); ++i) {
    counted += pool.counters(i).tasks.load();
  }
  CHECK(counted == kTasks);
}

TEST_CASE("WorkerPool: a full queue refuses the task and the caller keeps it") {
  WorkerPoolOptions options;
  options.threads = 1;
  options.queue_capacity = 2;
  WorkerPool pool(options);
  pool.start();
  HeldWorker held(pool);
  std::atomic<int> runs{0};
  auto a = task([&] { runs.fetch_add(1); });
  auto b = task([&] { runs.fetch_add(1); });
  auto c = task([&] { runs.fetch_add(1); });
  REQUIRE(pool.try_submit(a));
  REQUIRE(pool.try_submit(b));
  CHECK(pool.queue_depth() == 2);
  CHECK_FALSE(pool.try_submit(c));
  CHECK(c != nullptr);
  // The bound is the pool's: a read is refused too, though reads have a queue of their own.
  std::atomic<std::thread::id> read_ran_on{};
  std::unique_ptr<Task> read = std::make_unique<ReadTask>(read_ran_on);
  CHECK_FALSE(pool.try_submit(read));
  CHECK(read != nullptr);
  CHECK(pool.queue_depth() == 2);
  held.release();
  pool.stop();  // Drains what was queued.
  CHECK(runs == 2);
  CHECK(pool.queue_high_water() >= 2);
}

TEST_CASE("WorkerPool: idle workers park and wake for new work") {
  WorkerPoolOptions options;
  options.threads = 2;
  WorkerPool pool(options);
  pool.start();
  // Parking is asynchronous: wait (bounded) until both workers counted a park.
  auto parks = [&] { return pool.counters(0).parks.load() + pool.counters(1).parks.load(); };
  CHECK(wait_until([&] { return parks() >= 2; }));
  std::promise<std::thread::id> where;
  auto t = task([&] { where.set_value(std::this_thread::get_id()); });
  REQUIRE(pool.try_submit(t));
  CHECK(where.get_future().get() != std::this_thread::get_id());
  pool.stop();
}

TEST_CASE("WorkerPool: each task queued to a parked pool wakes another worker") {
  // 70 workers span two words of idle bits. Once all are parked, 70 tasks that each wait for
  // all 70 to have started can finish only if every submit woke a different parked worker.
  constexpr std::size_t kWorkers = 70;
  WorkerPoolOptions options;
  options.threads = kWorkers;
  WorkerPool pool(options);
  pool.start();
  const auto all_parked = [&] {
    for (std::size_t i = 0; i < kWorkers; ++i) {
      if (pool.counters(i).parks.load() == 0) {
        return false;
      }
    }
    return true;
  };
  REQUIRE(wait_until(all_parked, std::chrono::seconds(60)));
  // Each task counts itself started, then waits (bounded) until all have; the test waits until
  // all have finished.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::mutex mu;
  std::condition_variable changed;
  std::size_t started = 0;
  std::size_t finished = 0;
  std::set<std::thread::id> ran_on;
  for (std::size_t i = 0; i < kWorkers; ++i) {
    auto t = task([&] {
      std::unique_lock lock(mu);
      ran_on.insert(std::this_thread::get_id());
      ++started;
      changed.notify_all();
      changed.wait_until(lock, deadline, [&] { return started == kWorkers; });
      ++finished;
      changed.notify_all();
    });
    REQUIRE(pool.try_submit(t));
  }
  {
    std::unique_lock lock(mu);
    changed.wait_until(lock, deadline, [&] { return finished == kWorkers; });
    CHECK(started == kWorkers);
    CHECK(finished == kWorkers);
  }
  pool.stop();
  CHECK(ran_on.size() == kWorkers);
  for (std::size_t i = 0; i < kWorkers; ++i) {
    // A worker sleeps once per park and comes back once per sleep (stop wakes the last ones).
    CHECK(pool.counters(i).wakeups.load() == pool.counters(i).parks.load());
  }
}

TEST_CASE("WorkerPool: bursts from several submitters with parks between lose no wake-up") {
  WorkerPoolOptions options;
  options.threads = 3;
  options.spin_before_park = 1;  // Park at once: every burst finds parked workers.
  WorkerPool pool(options);
  pool.start();
  constexpr int kSubmitters = 4;
  constexpr int kBursts = 200;
  constexpr int kBurst = 5;
  std::atomic<int> runs{0};
  std::vector<std::thread> submitters;
  for (int s = 0; s < kSubmitters; ++s) {
    submitters.emplace_back([&] {
      for (int b = 0; b < kBursts; ++b) {
        const int target = runs.load() + kBurst;
        for (int i = 0; i < kBurst; ++i) {
          auto t = task([&] { runs.fetch_add(1); });
          while (!pool.try_submit(t)) {
            std::this_thread::yield();
          }
        }
        // Let the workers drain and park before the next burst (bounded).
        (void)wait_until([&] { return runs.load() >= target; });
      }
    });
  }
  for (std::thread& submitter : submitters) {
    submitter.join();
  }
  // Every task must run without stop()'s help: a lost wake-up would strand one in the queue.
  CHECK(wait_until([&] { return runs.load() == kSubmitters * kBursts * kBurst; }));
  pool.stop();
}

TEST_CASE("WorkerPool: stop refuses new tasks") {
  WorkerPool pool(WorkerPoolOptions{});
  pool.start();
  pool.stop();
  auto t = task([] {});
  CHECK_FALSE(pool.try_submit(t));
  CHECK(t != nullptr);
}

TEST_CASE("WorkerPool: each worker runs every task with its own state made on its thread") {
  check_worker_states<WorkerPool>();
}

TEST_CASE("LockedQueuePool: each worker runs every task with its own state made on its thread") {
  check_worker_states<LockedQueuePool>();
}

TEST_CASE("WorkerPool: the default factory makes an empty state per worker") {
  WorkerPoolOptions options;
  options.threads = 1;
  WorkerPool pool(options);
  pool.start();
  std::promise<bool> empty;
  std::unique_ptr<Task> t = std::make_unique<StateTask>(
      [&](WorkerState& state) { empty.set_value(typeid(state) == typeid(WorkerState)); });
  REQUIRE(pool.try_submit(t));
  CHECK(empty.get_future().get());
}

// What a RetiringTask saw: the thread and state it ran with, and those it was retired with.
struct Retired {
  std::thread::id ran_on;
  const WorkerState* ran_with = nullptr;
  std::thread::id retired_on;
  const WorkerState* retired_with = nullptr;
  bool destroyed = false;
};

// A task a helper may run that records where it ran and where it was retired (it deletes
// itself there, as the default does), and tells `record` when it is destroyed.
class RetiringTask final : public Task {
 public:
  explicit RetiringTask(Retired& record, std::latch* done = nullptr)
      : record_(record), done_(done) {}
  ~RetiringTask() override { record_.destroyed = true; }
  void run(WorkerState& state) override {
    record_.ran_on = std::this_thread::get_id();
    record_.ran_with = &state;
  }
  void retire(WorkerState& state) override {
    record_.retired_on = std::this_thread::get_id();
    record_.retired_with = &state;
    std::latch* const done = done_;
    delete this;
    if (done != nullptr) {
      done->count_down();
    }
  }
  bool may_run_inline() const override { return true; }

 private:
  Retired& record_;
  std::latch* const done_;
};

// Checks, for a pool of one worker, that a task is retired once run, on the thread that ran it
// and with the same state.
template <typename Pool>
void check_retire() {
  WorkerPoolOptions options;
  options.threads = 1;
  options.queue_capacity = 8;
  Retired ran;
  {
    Pool pool(options);
    pool.start();
    std::latch done(1);
    std::unique_ptr<Task> t = std::make_unique<RetiringTask>(ran, &done);
    REQUIRE(pool.try_submit(t));
    done.wait();
    pool.stop();
  }
  CHECK(ran.ran_on != std::thread::id{});
  CHECK(ran.ran_on != std::this_thread::get_id());
  CHECK(ran.retired_on == ran.ran_on);
  CHECK(ran.retired_with == ran.ran_with);
  CHECK(ran.destroyed);
}

TEST_CASE("WorkerPool: a worker retires each task it ran on its thread with its state") {
  check_retire<WorkerPool>();
}

TEST_CASE("LockedQueuePool: a worker retires each task it ran on its thread with its state") {
  check_retire<LockedQueuePool>();
}

TEST_CASE(
    "WorkerPool: a helper retires what it ran with its own state and unrun tasks are deleted") {
  WorkerPoolOptions options;
  options.threads = 1;
  options.queue_capacity = 8;
  Retired helped;
  Retired queued;
  WorkerState mine;
  {
    WorkerPool pool(options);
    pool.start();
    HeldWorker held(pool);
    std::unique_ptr<Task> first = std::make_unique<RetiringTask>(helped);
    REQUIRE(pool.try_submit(first));
    REQUIRE(pool.try_help(mine));
    CHECK(helped.ran_on == std::this_thread::get_id());
    CHECK(helped.ran_with == &mine);
    CHECK(helped.retired_on == std::this_thread::get_id());
    CHECK(helped.retired_with == &mine);
    CHECK(helped.destroyed);
    held.release();
    pool.stop();
  }
  {
    WorkerPool never_started(options);
    std::unique_ptr<Task> second = std::make_unique<RetiringTask>(queued);
    REQUIRE(never_started.try_submit(second));
  }
  CHECK(queued.retired_with == nullptr);  // Never ran: deleted, not retired.
  CHECK(queued.destroyed);
}

TEST_CASE("WorkerPool: try_help runs queued reads on the caller and leaves the rest to workers") {
  WorkerPoolOptions options;
  options.threads = 1;
  options.queue_capacity = 8;
  WorkerPool pool(options);
  pool.start();
  WorkerState mine;                  // The helping thread's own, as a listener keeps one.
  CHECK_FALSE(pool.try_help(mine));  // Nothing queued.
  HeldWorker held(pool);             // What follows stays queued until helped.
  std::atomic<std::thread::id> write_ran_on{};
  std::atomic<std::thread::id> read_ran_on{};
  std::atomic<WorkerState*> read_state{nullptr};
  auto write = task([&] { write_ran_on.store(std::this_thread::get_id()); });
  std::unique_ptr<Task> read = std::make_unique<ReadTask>(read_ran_on, &read_state);
  REQUIRE(pool.try_submit(write));
  REQUIRE(pool.try_submit(read));
  CHECK(pool.queue_depth() == 2);
  CHECK(pool.try_help(mine));  // The read, queued after the write: run on this thread.
  CHECK(read_ran_on.load() == std::this_thread::get_id());
  CHECK(read_state.load() == &mine);  // With the helper's state, not a worker's.
  CHECK(pool.queue_depth() == 1);
  CHECK_FALSE(pool.try_help(mine));  // The write: it stays for the worker.
  CHECK(pool.queue_depth() == 1);
  CHECK(write_ran_on.load() == std::thread::id{});
  held.release();
  pool.stop();  // The worker drains the queue: the write runs there.
  CHECK(write_ran_on.load() != std::thread::id{});
  CHECK(write_ran_on.load() != std::this_thread::get_id());
  CHECK(pool.counters(0).tasks.load() == 2);  // The blocker and the write; not the read.
}

// A read that, run inline, finds costly work and hands it to the pool it helps (as a bind with
// a costly stored password does); run by a worker, it does the work itself.
class HandingTask : public Task {
 public:
  HandingTask(std::promise<std::thread::id>& work_ran_on, std::atomic<TaskPool*>& helping_seen)
      : work_ran_on_(work_ran_on), helping_seen_(helping_seen) {}
  void run(WorkerState& state) override {
    helping_seen_.store(state.helping());
    if (TaskPool* pool = state.helping()) {
      // The handed work outlives this task: it keeps only what outlives both.
      std::unique_ptr<Task> rest = task(
          [&work_ran_on = work_ran_on_] { work_ran_on.set_value(std::this_thread::get_id()); });
      REQUIRE(pool->try_submit(rest));
      return;
    }
    work_ran_on_.set_value(std::this_thread::get_id());
  }
  bool may_run_inline() const override { return true; }

 private:
  std::promise<std::thread::id>& work_ran_on_;
  std::atomic<TaskPool*>& helping_seen_;
};

TEST_CASE(
    "WorkerPool: a task run inline sees the pool it helps and hands costly work to a worker") {
  WorkerPoolOptions options;
  options.threads = 1;
  options.queue_capacity = 8;
  WorkerPool pool(options);
  pool.start();
  WorkerState mine;
  CHECK(mine.helping() == nullptr);
  std::atomic<TaskPool*> helping_seen{nullptr};
  SUBCASE("inline on a helper") {
    std::promise<std::thread::id> work_ran_on;
    HeldWorker held(pool);
    std::unique_ptr<Task> read = std::make_unique<HandingTask>(work_ran_on, helping_seen);
    REQUIRE(pool.try_submit(read));
    REQUIRE(pool.try_help(mine));
    CHECK(helping_seen.load() == &pool);
    CHECK(mine.helping() == nullptr);  // Only during the run.
    CHECK(pool.queue_depth() == 1);    // The handed work, for the worker.
    CHECK_FALSE(pool.try_help(mine));  // Not for a helper.
    held.release();
    const std::thread::id worker = work_ran_on.get_future().get();
    CHECK(worker != std::this_thread::get_id());
  }
  SUBCASE("on a worker") {
    std::promise<std::thread::id> work_ran_on;
    std::unique_ptr<Task> read = std::make_unique<HandingTask>(work_ran_on, helping_seen);
    REQUIRE(pool.try_submit(read));
    const std::thread::id worker = work_ran_on.get_future().get();
    CHECK(worker != std::this_thread::get_id());
    CHECK(helping_seen.load() == nullptr);  // A worker's state names no pool.
  }
  pool.stop();
}

TEST_CASE("LockedQueuePool: runs every task on its threads and refuses when full") {
  WorkerPoolOptions options;
  options.threads = 1;
  options.queue_capacity = 1;
  LockedQueuePool pool(options);
  pool.start();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::latch started(1);
  std::promise<std::thread::id> where;
  auto blocker = task([&] {
    where.set_value(std::this_thread::get_id());
    started.count_down();
    released.wait();
  });
  REQUIRE(pool.try_submit(blocker));
  started.wait();
  std::atomic<int> runs{0};
  auto a = task([&] { runs.fetch_add(1); });
  auto b = task([&] { runs.fetch_add(1); });
  REQUIRE(pool.try_submit(a));
  CHECK_FALSE(pool.try_submit(b));
  CHECK(b != nullptr);
  CHECK(pool.queue_depth() == 1);
  WorkerState mine;
  CHECK_FALSE(pool.try_help(mine));  // The classic design's listener never runs a task.
  CHECK(pool.queue_depth() == 1);
  release.set_value();
  pool.stop();
  CHECK(runs == 1);
  CHECK(where.get_future().get() != std::this_thread::get_id());
  CHECK(pool.counters(0).tasks.load() == 2);
}

TEST_CASE("LockedQueuePool: counts every lock of its queue mutex and the waits for it") {
  WorkerPoolOptions options;
  options.threads = 2;
  LockedQueuePool pool(options);
  REQUIRE(pool.lock_stats().has_value());
  CHECK(pool.lock_stats()->acquisitions == 0);
  pool.start();
  // Two submitters race for the mutex with the two workers taking tasks.
  constexpr int kTasksPerSubmitter = 2000;
  std::atomic<int> runs{0};
  auto submit = [&] {
    for (int i = 0; i < kTasksPerSubmitter; ++i) {
      auto t = task([&] { runs.fetch_add(1); });
      while (!pool.try_submit(t)) {
        std::this_thread::yield();
      }
    }
  };
  std::thread other(submit);
  submit();
  other.join();
  pool.stop();
  REQUIRE(runs == 2 * kTasksPerSubmitter);
  const TaskPool::LockStats stats = *pool.lock_stats();
  // Each successful submit locks once and each take once; refused submits and parks add more.
  CHECK(stats.acquisitions >= 4 * kTasksPerSubmitter);
  CHECK(stats.contended <= stats.acquisitions);
  CHECK((stats.wait_ns == 0) == (stats.contended == 0));
  INFO("contended " << stats.contended << " of " << stats.acquisitions << ", waited "
                    << stats.wait_ns << " ns");
}

TEST_CASE("WorkerPool: has no queue lock to count") {
  WorkerPoolOptions options;
  options.threads = 1;
  WorkerPool pool(options);
  CHECK_FALSE(pool.lock_stats().has_value());
}

}  // namespace
}  // namespace numadir::threadpool
