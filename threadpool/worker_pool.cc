// threadpool/worker_pool.cc: see worker_pool.h.
#include "threadpool/worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <iostream>
#include <utility>

#include "base/check.h"
#include "threadpool/detail/futex.h"
#include "threadpool/topology.h"

namespace numadir::threadpool {
namespace {

// Added to queued_ by stop() so that every worker about to park sees a non-zero count.
constexpr std::int64_t kStopWake = std::int64_t{1} << 40;

// Slot::state values, meaningful only between a worker setting its idle bit and its waking.
constexpr std::uint32_t kWaiting = 1;   // Its idle bit is (or was) set; no signal yet.
constexpr std::uint32_t kSleeping = 2;  // In futex_wait: a signal must wake it.
constexpr std::uint32_t kSignalled = 3;

}  // namespace

TaskPool::TaskPool(WorkerPoolOptions options)
    : options_(std::move(options)),
      counters_(new WorkerCounters[options_.threads]),
      room_mark_(options_.queue_capacity / 2) {
  NUMADIR_CHECK(options_.threads > 0 && options_.queue_capacity > 0,
                "a pool needs threads and queue capacity");
}

TaskPool::~TaskPool() { NUMADIR_CHECK(threads_.empty(), "a pool destroyed while running"); }

void TaskPool::start() {
  NUMADIR_CHECK(threads_.empty(), "a pool started twice");
  threads_.reserve(options_.threads);
  for (std::size_t i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this, i] { run_worker(i); });
    const std::string name = (options_.name + "-" + std::to_string(i)).substr(0, 15);
    pthread_setname_np(threads_.back().native_handle(), name.c_str());
  }
}

void TaskPool::join_threads() {
  for (std::thread& thread : threads_) {
    thread.join();
  }
  threads_.clear();
}

void TaskPool::notify_when_room(RoomWaiter& waiter) {
  {
    MutexLock lock(room_mu_);
    if (std::find(room_waiters_.begin(), room_waiters_.end(), &waiter) == room_waiters_.end()) {
      room_waiters_.push_back(&waiter);
    }
    room_wanted_.store(true, std::memory_order_seq_cst);
  }
  // The tasks may all have been taken before the store: then no taker saw it, and this does.
  if (has_room()) {
    wake_room_waiters();
  }
}

void TaskPool::cancel_room_wait(RoomWaiter& waiter) {
  MutexLock lock(room_mu_);
  std::erase(room_waiters_, &waiter);
}

void TaskPool::wake_room_waiters() {
  // Cleared before the lock: a waiter registering meanwhile sets it again and is either found
  // in the list below or calls this itself.
  if (!room_wanted_.exchange(false, std::memory_order_seq_cst)) {
    return;
  }
  // Called under the lock, so that cancel_room_wait waits for a call under way.
  MutexLock lock(room_mu_);
  for (RoomWaiter* waiter : room_waiters_) {
    waiter->on_room();
  }
  room_waiters_.clear();
}

WorkerPool::WorkerPool(WorkerPoolOptions options)
    : TaskPool(std::move(options)),
      high_priority_(options_.queue_capacity),
      low_priority_(options_.queue_capacity),
      idle_words_((options_.threads + 63) / 64) {
  idle_.reset(new std::atomic<std::uint64_t>[idle_words_]);
  for (std::size_t i = 0; i < idle_words_; ++i) {
    idle_[i].store(0, std::memory_order_relaxed);
  }
  slots_.reset(new Slot[options_.threads]);
}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::stop() {
  if (stopping_.exchange(true, std::memory_order_seq_cst)) {
    return;
  }
  // A worker setting its idle bit after this sees queued_ non-zero and does not sleep; the
  // ones already idle are claimed and signalled here.
  queued_.fetch_add(kStopWake, std::memory_order_seq_cst);
  while (wake_idle_worker()) {
  }
  join_threads();
}

bool WorkerPool::try_submit(std::unique_ptr<Task>& task) {
  // queue_capacity bounds the pool, both queues together (each could hold it all). The check
  // and the push are not one step: submitters racing here may pass it by one task each.
  BoundedQueue<Task>& queue = task->may_run_inline() ? low_priority_ : high_priority_;
  if (stopping_.load(std::memory_order_relaxed) ||
      queued_.load(std::memory_order_relaxed) >=
          static_cast<std::int64_t>(options_.queue_capacity) ||
      !queue.try_push(task)) {
    return false;
  }
  // seq_cst pairs with the parking worker's idle bit and queued_ check (park()): either the
  // worker sees this increment before it sleeps, or this thread sees its bit and signals it.
  const std::int64_t depth = queued_.fetch_add(1, std::memory_order_seq_cst) + 1;
  std::int64_t high = high_water_.load(std::memory_order_relaxed);
  while (depth > high &&
         !high_water_.compare_exchange_weak(high, depth, std::memory_order_relaxed)) {
  }
  wake_idle_worker();
  return true;
}

bool WorkerPool::wake_idle_worker() {
  for (std::size_t word = 0; word < idle_words_; ++word) {
    std::uint64_t bits = idle_[word].load(std::memory_order_seq_cst);
    while (bits != 0) {
      const std::uint64_t lowest = bits & (~bits + 1);
      if (idle_[word].compare_exchange_weak(bits, bits & ~lowest, std::memory_order_seq_cst)) {
        signal(word * 64 + static_cast<std::size_t>(std::countr_zero(lowest)));
        return true;
      }
    }
  }
  return false;
}

void WorkerPool::signal(std::size_t index) {
  // Only the claimer of the worker's bit gets here, once per park.
  if (slots_[index].state.exchange(kSignalled, std::memory_order_seq_cst) == kSleeping) {
    detail::futex_wake(slots_[index].state, 1);
  }
}

bool WorkerPool::try_help(WorkerState& state) {
  std::unique_ptr<Task> task = low_priority_.try_pop();
  if (task == nullptr) {
    return false;
  }
  count_taken();
  run_as_helper(*task, state);
  task.release()->retire(state);
  return true;
}

bool WorkerPool::has_room() const {
  // While stopping, kStopWake keeps the count above any mark.
  return queued_.load(std::memory_order_seq_cst) <= static_cast<std::int64_t>(room_mark());
}

std::size_t WorkerPool::queue_depth() const {
  const std::int64_t depth = queued_.load(std::memory_order_relaxed);
  return depth > 0 && depth < kStopWake ? static_cast<std::size_t>(depth) : 0;
}

std::size_t WorkerPool::queue_high_water() const {
  return static_cast<std::size_t>(high_water_.load(std::memory_order_relaxed));
}

std::unique_ptr<WorkerState> make_worker_state(const WorkerPoolOptions& options) {
  std::unique_ptr<WorkerState> state =
      options.make_worker_state ? options.make_worker_state() : std::make_unique<WorkerState>();
  NUMADIR_CHECK(state != nullptr, "the worker state factory made no state");
  return state;
}

void place_worker(const WorkerPoolOptions& options, std::size_t index) {
  if (index < options.pins.size() && options.pins[index].has_value()) {
    if (const Status pinned = pin_current_thread(*options.pins[index]); !pinned.ok()) {
      std::cerr << "numadir: " << options.name << "-" << index << ": " << pinned.message()
                << "; the thread floats\n";
    }
  }
  options.memory.bind_current_thread(MemoryUser::kWorker);
}

void WorkerPool::run_worker(std::size_t index) {
  place_worker(options_, index);
  // Made after pinning and binding: its memory comes from the worker's node.
  const std::unique_ptr<WorkerState> state = make_worker_state(options_);
  WorkerCounters& counters = counters_[index];
  counters.on_start();
  std::uint32_t idle_rounds = 0;
  for (;;) {
    // High priority first: a flood of the others (which helpers also take) never starves them.
    std::unique_ptr<Task> task = high_priority_.try_pop();
    if (task == nullptr) {
      task = low_priority_.try_pop();
    }
    if (task != nullptr) {
      count_taken();
      idle_rounds = 0;
      task->run(*state);
      task.release()->retire(*state);
      owner_add(counters.tasks);
      continue;
    }
    if (stopping_.load(std::memory_order_acquire)) {
      counters.on_exit();
      return;  // The queue is drained.
    }
    if (++idle_rounds < options_.spin_before_park) {
      if (options_.yield_every != 0 && idle_rounds % options_.yield_every == 0) {
        std::this_thread::yield();
      }
      continue;
    }
    idle_rounds = 0;
    park(index, counters);
  }
}

void WorkerPool::park(std::size_t index, WorkerCounters& counters) {
  Slot& slot = slots_[index];
  std::atomic<std::uint64_t>& word = idle_[index / 64];
  const std::uint64_t bit = std::uint64_t{1} << (index % 64);
  slot.state.store(kWaiting, std::memory_order_relaxed);  // Nobody signals before the bit.
  word.fetch_or(bit, std::memory_order_seq_cst);
  if (queued_.load(std::memory_order_seq_cst) > 0 || stopping_.load(std::memory_order_seq_cst)) {
    // Work (or stop) arrived: take the bit back, unless a submitter claimed it already; then
    // its signal is on the way and must be consumed here, not by a later park.
    if ((word.fetch_and(~bit, std::memory_order_seq_cst) & bit) != 0) {
      return;
    }
  }
  // Sleeps unless the signal is already here (then it is consumed without a system call).
  std::uint32_t state = kWaiting;
  if (slot.state.compare_exchange_strong(state, kSleeping, std::memory_order_seq_cst)) {
    counters.on_park();
    do {
      detail::futex_wait(slot.state, kSleeping);
    } while (slot.state.load(std::memory_order_seq_cst) == kSleeping);
    counters.on_wake();
  }
}

}  // namespace numadir::threadpool
