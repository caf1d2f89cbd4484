// threadpool/worker_pool.h: a pool of worker threads taking tasks from bounded lock-free
// queues (one for the tasks a helping listener may run, one for the rest); idle workers park
// (each on its own futex) after a short bounded spin, so an idle pool costs no CPU, and a
// submitter wakes exactly one parked worker per task it queues.
//
// Thread contract: create/start/stop/destroy on one controlling thread. try_submit and
// try_help may be called from any thread, concurrently. Tasks run on the pool's threads, or on
// a listener that helps (try_help); a task's run() must not block for long (it holds a worker).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/cache_line.h"
#include "threadpool/bounded_queue.h"
#include "threadpool/thread_counters.h"

namespace numadir::threadpool {

// A unit of work. The pool owns a task from a successful try_submit until run() returns, then
// destroys it.
class Task {
 public:
  virtual ~Task() = default;
  virtual void run() = 0;
  // Returns: whether a thread helping the pool (TaskPool::try_help) may run this task inline,
  //   on its own stack: only tasks that are short and never wait for a lock held across I/O or
  //   for the disk.
  virtual bool may_run_inline() const { return false; }
};

struct WorkerPoolOptions {
  std::string name = "worker";  // Thread names: "<name>-<i>".
  std::size_t threads = 2;
  // Tasks queued at most (WorkerPool: its read and update queues together; submitters racing
  // may pass it by one each). <= BoundedQueue::kMaxCapacity.
  std::size_t queue_capacity = 4096;
  // Pops tried before a worker parks, giving up its PU (sched_yield) every yield_every of them
  // (0: never). Bounded: an idle worker sleeps within tens of microseconds. A request that comes
  // within the spin needs no futex wake-up and no context switch, and the yields let a
  // listener pinned to the same PU run instead of waiting for the spin to end.
  std::uint32_t spin_before_park = 1024;
  std::uint32_t yield_every = 64;
  // pins[i]: the PU (OS index) worker i pins itself to when it starts; absent or nullopt: it
  // floats. A pin the kernel refuses is reported once on standard error and the worker floats.
  std::vector<std::optional<unsigned>> pins;
};

// What a listener submits to: the lock-free WorkerPool here, or the classic LockedQueuePool
// (threadpool/locked_queue_pool.h) kept for comparison.
class TaskPool {
 public:
  virtual ~TaskPool() = default;
  virtual void start() = 0;
  // Lets the workers finish the tasks already queued, then joins them.
  virtual void stop() = 0;
  // Returns false when the queue is full or the pool is stopping; the caller keeps `task`.
  [[nodiscard]] virtual bool try_submit(std::unique_ptr<Task>& task) = 0;
  virtual std::size_t threads() const = 0;
  // Returns: the options the pool was built with (its name, threads and queue capacity).
  virtual const WorkerPoolOptions& options() const = 0;
  // Returns: worker `worker`'s counters (threadpool/thread_counters.h), readable from any
  //   thread while the pool lives. Requires: worker < threads().
  virtual const WorkerCounters& counters(std::size_t worker) const = 0;
  // Returns: tasks queued and not yet taken (approximate while threads run).
  virtual std::size_t queue_depth() const = 0;
  // Returns: the most tasks ever queued at once (approximate).
  virtual std::size_t queue_high_water() const = 0;
  // A listener with nothing left to read helps the pool: takes the oldest queued task for which
  // may_run_inline() holds and runs it on the calling thread; the others are left to the
  // workers. Any thread; never blocks except inside the task it runs.
  // Returns: true if a task ran on the calling thread.
  [[nodiscard]] virtual bool try_help() = 0;
};

// Pins the calling worker thread as options.pins[index] says (used by both pools).
void pin_worker(const WorkerPoolOptions& options, std::size_t index);

class WorkerPool final : public TaskPool {
 public:
  // Requires: 0 < options.threads; 0 < options.queue_capacity <= BoundedQueue::kMaxCapacity.
  explicit WorkerPool(WorkerPoolOptions options);
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  // Stops the pool if running; tasks still queued are destroyed without running.
  ~WorkerPool() override;

  void start() override;
  // Lets the workers finish the tasks already queued, then joins them. try_submit fails after.
  void stop() override;

  // Returns false when the queue is full (backpressure: the caller keeps `task` and retries
  // later) or the pool is stopping. On success `task` is left empty.
  [[nodiscard]] bool try_submit(std::unique_ptr<Task>& task) override;

  std::size_t threads() const override { return options_.threads; }
  const WorkerPoolOptions& options() const override { return options_; }
  const WorkerCounters& counters(std::size_t worker) const override { return counters_[worker]; }
  std::size_t queue_depth() const override;
  std::size_t queue_high_water() const override;
  [[nodiscard]] bool try_help() override;

 private:
  // A worker's parking place, on its own cache line: the futex it sleeps on.
  struct alignas(kCacheLineSize) Slot {
    // kWaiting (parked, not yet asleep in the kernel), kSleeping or kSignalled (worker_pool.cc).
    std::atomic<std::uint32_t> state{0};
  };

  void run_worker(std::size_t index);
  // Parks worker `index` until a submitter signals it, unless work arrived meanwhile.
  void park(std::size_t index, WorkerCounters& counters);
  // Claims one idle worker (clears its bit) and signals it. Returns: false if none was idle.
  bool wake_idle_worker();
  void signal(std::size_t index);

  const WorkerPoolOptions options_;
  // The tasks a helping listener may run (Task::may_run_inline) and the others, which only
  // workers take. Each can hold options.queue_capacity; try_submit bounds the two together.
  BoundedQueue<Task> reads_;
  BoundedQueue<Task> updates_;
  // Queued tasks, maintained beside the queue for depth figures and for parking: a worker parks
  // only while it reads 0 (seq_cst with the submitter's increment, so no wake-up is lost).
  alignas(kCacheLineSize) std::atomic<std::int64_t> queued_{0};
  alignas(kCacheLineSize) std::atomic<std::int64_t> high_water_{0};
  // Idle workers, a bit each (worker i: bit i % 64 of word i / 64). A worker sets its bit
  // before its last look at queued_; a submitter clears one bit after counting its task and
  // signals that worker alone, so each park costs at most one wake-up call, and a worker that
  // is already being woken is never woken again (no wake-up per submit while it gets going).
  std::unique_ptr<std::atomic<std::uint64_t>[]> idle_;
  std::size_t idle_words_ = 0;
  std::unique_ptr<Slot[]> slots_;
  alignas(kCacheLineSize) std::atomic<bool> stopping_{false};
  std::unique_ptr<WorkerCounters[]> counters_;
  std::vector<std::thread> threads_;  // Owner: the controlling thread.
};

}  // namespace numadir::threadpool
