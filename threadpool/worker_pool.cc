// threadpool/worker_pool.cc: see worker_pool.h.
#include "threadpool/worker_pool.h"

#include <pthread.h>

#include <climits>
#include <iostream>
#include <utility>

#include "base/check.h"
#include "threadpool/detail/futex.h"
#include "threadpool/topology.h"

namespace numadir::threadpool {
namespace {

// Added to queued_ by stop() so that every parked worker sees a non-zero count and wakes.
constexpr std::int64_t kStopWake = std::int64_t{1} << 40;

}  // namespace

WorkerPool::WorkerPool(WorkerPoolOptions options)
    : options_(std::move(options)),
      queue_(options_.queue_capacity),
      counters_(new WorkerCounters[options_.threads]) {
  NUMADIR_CHECK(options_.threads > 0, "WorkerPool needs at least one thread");
}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::start() {
  NUMADIR_CHECK(threads_.empty(), "WorkerPool started twice");
  threads_.reserve(options_.threads);
  for (std::size_t i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this, i] { run_worker(i); });
    const std::string name = (options_.name + "-" + std::to_string(i)).substr(0, 15);
    pthread_setname_np(threads_.back().native_handle(), name.c_str());
  }
}

void WorkerPool::stop() {
  if (stopping_.exchange(true, std::memory_order_seq_cst)) {
    return;
  }
  queued_.fetch_add(kStopWake, std::memory_order_seq_cst);
  wake_sequence_.fetch_add(1, std::memory_order_seq_cst);
  detail::futex_wake(wake_sequence_, INT_MAX);
  for (std::thread& thread : threads_) {
    thread.join();
  }
  threads_.clear();
}

bool WorkerPool::try_submit(std::unique_ptr<Task>& task) {
  if (stopping_.load(std::memory_order_relaxed) || !queue_.try_push(task)) {
    return false;
  }
  // seq_cst pairs with the parking worker's parked_ increment and queued_ check: either the
  // worker sees this increment before it waits, or this thread sees parked_ and notifies.
  const std::int64_t depth = queued_.fetch_add(1, std::memory_order_seq_cst) + 1;
  std::int64_t high = high_water_.load(std::memory_order_relaxed);
  while (depth > high &&
         !high_water_.compare_exchange_weak(high, depth, std::memory_order_relaxed)) {
  }
  if (parked_.load(std::memory_order_seq_cst) > 0) {
    wake_one();
  }
  return true;
}

void WorkerPool::wake_one() {
  wake_sequence_.fetch_add(1, std::memory_order_seq_cst);
  detail::futex_wake(wake_sequence_, 1);
}

std::size_t WorkerPool::queue_depth() const {
  const std::int64_t depth = queued_.load(std::memory_order_relaxed);
  return depth > 0 && depth < kStopWake ? static_cast<std::size_t>(depth) : 0;
}

std::size_t WorkerPool::queue_high_water() const {
  return static_cast<std::size_t>(high_water_.load(std::memory_order_relaxed));
}

void pin_worker(const WorkerPoolOptions& options, std::size_t index) {
  if (index < options.pins.size() && options.pins[index].has_value()) {
    if (const Status pinned = pin_current_thread(*options.pins[index]); !pinned.ok()) {
      std::cerr << "numadir: " << options.name << "-" << index << ": " << pinned.message()
                << "; the thread floats\n";
    }
  }
}

void WorkerPool::run_worker(std::size_t index) {
  pin_worker(options_, index);
  WorkerCounters& counters = counters_[index];
  counters.on_start();
  std::uint32_t idle_rounds = 0;
  for (;;) {
    if (std::unique_ptr<Task> task = queue_.try_pop()) {
      queued_.fetch_sub(1, std::memory_order_relaxed);
      idle_rounds = 0;
      task->run();
      owner_add(counters.tasks);
      continue;
    }
    if (stopping_.load(std::memory_order_acquire)) {
      counters.on_exit();
      return;  // The queue is drained.
    }
    if (++idle_rounds < options_.spin_before_park) {
      continue;
    }
    idle_rounds = 0;
    parked_.fetch_add(1, std::memory_order_seq_cst);
    // The sequence is read before queued_: a submitter that counts its task after this check
    // sees parked_ and bumps the sequence, so the wait below returns at once. queued_ may be
    // briefly negative (a task popped before its submitter counted it) or hold a task another
    // worker is about to take; either way waking once more is harmless.
    const std::uint32_t sequence = wake_sequence_.load(std::memory_order_seq_cst);
    if (queued_.load(std::memory_order_seq_cst) <= 0 &&
        !stopping_.load(std::memory_order_seq_cst)) {
      counters.on_park();
      detail::futex_wait(wake_sequence_, sequence);
      counters.on_wake();
    }
    parked_.fetch_sub(1, std::memory_order_seq_cst);
  }
}

}  // namespace numadir::threadpool
