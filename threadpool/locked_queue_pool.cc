// threadpool/locked_queue_pool.cc: see locked_queue_pool.h.
#include "threadpool/locked_queue_pool.h"

#include <pthread.h>

#include <chrono>
#include <string>

#include "base/check.h"

namespace numadir::threadpool {

LockedQueuePool::LockedQueuePool(WorkerPoolOptions options) : TaskPool(std::move(options)) {}

LockedQueuePool::~LockedQueuePool() { stop(); }

void LockedQueuePool::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
  }
  not_empty_.notify_all();
  join_threads();
}

std::unique_lock<std::mutex> LockedQueuePool::lock_counted() const {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    const auto start = std::chrono::steady_clock::now();
    lock.lock();
    ++lock_stats_.contended;
    lock_stats_.wait_ns +=
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now() - start)
                                       .count());
  }
  ++lock_stats_.acquisitions;
  return lock;
}

std::optional<TaskPool::LockStats> LockedQueuePool::lock_stats() const {
  std::lock_guard lock(mu_);
  return lock_stats_;
}

bool LockedQueuePool::try_submit(std::unique_ptr<Task>& task) {
  {
    const std::unique_lock lock = lock_counted();
    if (stopping_ || queue_.size() >= options_.queue_capacity) {
      return false;
    }
    queue_.push_back(std::move(task));
    high_water_ = std::max(high_water_, queue_.size());
  }
  not_empty_.notify_one();
  return true;
}

std::size_t LockedQueuePool::queue_depth() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

bool LockedQueuePool::has_room() const {
  std::lock_guard lock(mu_);
  return !stopping_ && queue_.size() <= room_mark();
}

std::size_t LockedQueuePool::queue_high_water() const {
  std::lock_guard lock(mu_);
  return high_water_;
}

void LockedQueuePool::run_worker(std::size_t index) {
  place_worker(options_, index);  // The Frontend gives it no pins and no node binding.
  const std::unique_ptr<WorkerState> state = make_worker_state(options_);
  WorkerCounters& counters = counters_[index];
  counters.on_start();
  for (;;) {
    std::unique_ptr<Task> task;
    std::size_t left = 0;
    {
      std::unique_lock lock = lock_counted();
      while (queue_.empty() && !stopping_) {
        counters.on_park();
        not_empty_.wait(lock);
        counters.on_wake();
      }
      if (queue_.empty()) {
        counters.on_exit();
        return;  // Stopping and drained.
      }
      task = std::move(queue_.front());
      queue_.pop_front();
      left = stopping_ ? room_mark() + 1 : queue_.size();
    }
    took_task(left);
    task->run(*state);
    task.release()->retire(*state);
    owner_add(counters.tasks);
  }
}

}  // namespace numadir::threadpool
