// threadpool/worker_pool.h: a pool of worker threads taking tasks from bounded lock-free
// queues, one per priority class; idle workers park (each on its own futex) after a short
// bounded spin, so an idle pool costs no CPU, and a submitter wakes exactly one parked worker per
// task it queues. Also TaskPool, what submitters see of any pool, and RoomWaiter, how a refused
// submitter learns that the pool has room again.
//
// Thread contract: start/stop/destroy on one controlling thread, which also creates the pool or
// joins the thread that did (build_on_node, threadpool/node_memory.h). try_submit, try_help,
// notify_when_room and cancel_room_wait may be called from any thread, concurrently. Tasks run
// on the pool's threads, or inline on a thread that helps (try_help); a task's run() must not
// block for long (it holds a worker), and one run inline that finds costly work submits it back
// to the pool (WorkerState::helping()) rather than hold up the helper. Each worker thread makes
// its WorkerState (threadpool/task.h) with options.make_worker_state when it starts and destroys
// it when it exits (stop() or the destructor), after pinning itself and binding its memory to
// its node (options.pins, options.memory); a thread that helps lends its own. The pool's own
// memory (queues, slots, counters) comes from the thread that constructs it (first touch and
// its memory policy): threadpool/node_memory.h build_on_node puts it on a node.
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
#include "base/thread_annotations.h"
#include "threadpool/bounded_queue.h"
#include "threadpool/node_memory.h"
#include "threadpool/task.h"
#include "threadpool/thread_counters.h"

namespace numadir::threadpool {

struct WorkerPoolOptions {
  std::string name = "worker";  // Thread names: "<name>-<i>".
  std::size_t threads = 2;
  // Tasks queued at most (WorkerPool: its two priority classes together; submitters racing
  // may pass it by one each). <= BoundedQueue::kMaxCapacity.
  std::size_t queue_capacity = 4096;
  // Pops tried before a worker parks, giving up its PU (sched_yield) every yield_every of them
  // (0: never). Bounded: an idle worker sleeps within tens of microseconds. A request that comes
  // within the spin needs no futex wake-up and no context switch, and the yields let another
  // thread pinned to the same PU (a submitter, a helper) run instead of waiting for the spin.
  std::uint32_t spin_before_park = 1024;
  std::uint32_t yield_every = 64;
  // pins[i]: the PU (OS index) worker i pins itself to when it starts; absent or nullopt: it
  // floats. A pin the kernel refuses is reported once on standard error and the worker floats.
  std::vector<std::optional<unsigned>> pins;
  // The node whose memory each worker asks for (threadpool/node_memory.h) once pinned, before
  // it makes its WorkerState, so that the state and what its tasks allocate come from the node.
  // Inactive by default: no binding.
  NodeBinding memory;
  // Makes each worker's WorkerState, on the worker's thread as it starts (concurrently for
  // several workers); a listener that helps the pool makes its own with it too. The default
  // makes empty ones.
  WorkerStateFactory make_worker_state = empty_worker_state();
};

// Told when a pool that refused a task has room again (TaskPool::notify_when_room).
class RoomWaiter {
 public:
  // Called once per registration, on a thread that took a task from the pool (a worker or a
  // helper) or on the registering thread itself, with the pool's waiter lock held: must not
  // block and must not call into the pool.
  virtual void on_room() = 0;

 protected:
  ~RoomWaiter() = default;
};

// What submitters use: the lock-free WorkerPool here, or the classic LockedQueuePool
// (threadpool/locked_queue_pool.h) kept for comparison. It holds what the two share: the
// options, the worker threads and their counters, and the room signal.
class TaskPool {
 public:
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;
  // Requires: stopped (each pool's destructor stops it first).
  virtual ~TaskPool();

  // Starts options().threads workers, named "<name>-<i>". Requires: not started.
  void start();
  // Lets the workers finish the tasks already queued, then joins them. try_submit fails after.
  // Idempotent.
  virtual void stop() = 0;
  // Returns false when the queue is full (backpressure: the caller keeps `task` and retries
  // once the pool has room, see notify_when_room) or the pool is stopping. On success `task` is
  // left empty.
  [[nodiscard]] virtual bool try_submit(std::unique_ptr<Task>& task) = 0;
  // A thread with nothing else to do helps the pool: takes the oldest queued task for which
  // may_run_inline() holds, runs it on the calling thread with `state`, the caller's own
  // (made by options().make_worker_state), whose helping() is this pool during the run, and
  // retires it (Task::retire) with the same state; the others are left to the workers. Any
  // thread; never blocks except inside the task it runs.
  // Returns: true if a task ran on the calling thread.
  [[nodiscard]] virtual bool try_help(WorkerState& state) = 0;
  // Returns: tasks queued and not yet taken (approximate while threads run).
  virtual std::size_t queue_depth() const = 0;
  // Returns: the most tasks ever queued at once (approximate).
  virtual std::size_t queue_high_water() const = 0;
  // How often a pool's queue lock was taken and waited for: the cost the classic design's one
  // mutex puts on every request. Pools without a lock (WorkerPool) report nothing.
  struct LockStats {
    std::uint64_t acquisitions = 0;  // Every lock of the queue mutex.
    std::uint64_t contended = 0;     // Locks that found it held and waited.
    std::uint64_t wait_ns = 0;       // Time those waited.
  };
  // Returns: the counts so far; nullopt for a pool without a queue lock.
  virtual std::optional<LockStats> lock_stats() const { return std::nullopt; }

  std::size_t threads() const { return options_.threads; }
  // Returns: the options the pool was built with (its name, threads and queue capacity).
  const WorkerPoolOptions& options() const { return options_; }
  // Returns: worker `worker`'s counters (threadpool/thread_counters.h), readable from any
  //   thread while the pool lives. Requires: worker < threads().
  const WorkerCounters& counters(std::size_t worker) const { return counters_[worker]; }

  // The room signal, for a submitter whose task was refused: `waiter.on_room()` is called once,
  // as soon as no more than room_mark() tasks are queued (at once if that is so already). A
  // waiter registered again before it was called is called once. A stopping pool calls nobody.
  // Requires: `waiter` stays valid until it was called or cancel_room_wait(waiter) returned.
  void notify_when_room(RoomWaiter& waiter);
  // Withdraws `waiter`; once this returns, the pool never calls it (unless registered again).
  void cancel_room_wait(RoomWaiter& waiter);
  // Returns: the queue depth at which waiters are told: half the capacity, so that a refused
  //   submitter retries once for many tasks, not once per task taken.
  std::size_t room_mark() const { return room_mark_; }

 protected:
  // Requires: 0 < options.threads; 0 < options.queue_capacity.
  explicit TaskPool(WorkerPoolOptions options);

  // The loop of worker `index`: runs tasks until stop() and the queue is drained.
  virtual void run_worker(std::size_t index) = 0;
  // Runs `task` inline on a helping thread with its `state`, which tells the task so
  // (WorkerState::helping() is this pool during the call).
  void run_as_helper(Task& task, WorkerState& state) {
    state.helping_ = this;
    task.run(state);
    state.helping_ = nullptr;
  }
  // Returns: whether no more than room_mark() tasks are queued and the pool is not stopping;
  //   ordered after a registration's store (seq_cst or under a lock), so notify_when_room
  //   never misses the last task taken.
  virtual bool has_room() const = 0;
  // Joins the workers (stop(), once they were told to exit).
  void join_threads();
  // A task was taken, `depth` are left: tells the room waiters when depth reaches the mark.
  // Any thread; called after the depth was lowered (seq_cst or under a lock).
  void took_task(std::size_t depth) {
    if (depth <= room_mark_ && room_wanted_.load(std::memory_order_seq_cst)) {
      wake_room_waiters();
    }
  }

  const WorkerPoolOptions options_;
  const std::unique_ptr<WorkerCounters[]> counters_;

 private:
  void wake_room_waiters();

  const std::size_t room_mark_;
  std::vector<std::thread> threads_;  // Owner: the controlling thread.
  // Whether a waiter is registered. seq_cst: a registration stores it before looking at the
  // depth, a taker lowers the depth before loading it, so one of the two sees the other.
  alignas(kCacheLineSize) std::atomic<bool> room_wanted_{false};
  Mutex room_mu_;
  std::vector<RoomWaiter*> room_waiters_ NUMADIR_GUARDED_BY(room_mu_);
};

// Pins the calling worker thread as options.pins[index] says, then binds its memory as
// options.memory says (used by both pools, before they make the worker's WorkerState).
void place_worker(const WorkerPoolOptions& options, std::size_t index);
// Returns: a new state from options.make_worker_state (an empty one when it is not set). Aborts
//   if the factory returns nullptr (a bug of the caller's factory). Used by both pools' workers.
std::unique_ptr<WorkerState> make_worker_state(const WorkerPoolOptions& options);

// Tasks come in two priority classes. High: the tasks that must not run inline (they may wait
// for a lock held across I/O or for the disk); workers take them first, so a flood of the
// others never starves them. Low: the tasks that may run inline (Task::may_run_inline), which
// helpers (try_help) take too.
class WorkerPool final : public TaskPool {
 public:
  // Requires: 0 < options.threads; 0 < options.queue_capacity <= BoundedQueue::kMaxCapacity.
  explicit WorkerPool(WorkerPoolOptions options);
  // Stops the pool if running; tasks still queued are destroyed without running.
  ~WorkerPool() override;

  void stop() override;
  [[nodiscard]] bool try_submit(std::unique_ptr<Task>& task) override;
  [[nodiscard]] bool try_help(WorkerState& state) override;
  std::size_t queue_depth() const override;
  std::size_t queue_high_water() const override;

 private:
  // A worker's parking place, on its own cache line: the futex it sleeps on.
  struct alignas(kCacheLineSize) Slot {
    // kWaiting (parked, not yet asleep in the kernel), kSleeping or kSignalled (worker_pool.cc).
    std::atomic<std::uint32_t> state{0};
  };

  void run_worker(std::size_t index) override;
  bool has_room() const override;
  // Parks worker `index` until a submitter signals it, unless work arrived meanwhile.
  void park(std::size_t index, WorkerCounters& counters);
  // Claims one idle worker (clears its bit) and signals it. Returns: false if none was idle.
  bool wake_idle_worker();
  void signal(std::size_t index);
  // One task was popped: lowers queued_ and tells the room waiters when it reaches the mark.
  void count_taken() {
    // Below 0 for a moment when the pop came before its submitter's increment: then empty.
    const std::int64_t left = queued_.fetch_sub(1, std::memory_order_seq_cst) - 1;
    took_task(left < 0 ? 0 : static_cast<std::size_t>(left));
  }

  // The two priority classes. Each can hold options.queue_capacity; try_submit bounds the two
  // together.
  BoundedQueue<Task> high_priority_;
  BoundedQueue<Task> low_priority_;
  // Queued tasks, maintained beside the queues for depth figures, parking and the room signal:
  // a worker parks only while it reads 0 (seq_cst with the submitter's increment, so no
  // wake-up is lost).
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
};

}  // namespace numadir::threadpool
