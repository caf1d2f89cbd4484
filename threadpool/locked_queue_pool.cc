// threadpool/locked_queue_pool.cc: see locked_queue_pool.h.
#include "threadpool/locked_queue_pool.h"

#include <pthread.h>

#include <string>

#include "base/check.h"

namespace numadir::threadpool {

LockedQueuePool::LockedQueuePool(WorkerPoolOptions options)
    : options_(std::move(options)), counters_(new WorkerCounters[options_.threads]) {
  NUMADIR_CHECK(options_.threads > 0 && options_.queue_capacity > 0,
                "LockedQueuePool needs threads and queue capacity");
}

LockedQueuePool::~LockedQueuePool() { stop(); }

void LockedQueuePool::start() {
  NUMADIR_CHECK(threads_.empty(), "LockedQueuePool started twice");
  for (std::size_t i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this, i] { run_worker(i); });
    const std::string name = (options_.name + "-" + std::to_string(i)).substr(0, 15);
    pthread_setname_np(threads_.back().native_handle(), name.c_str());
  }
}

void LockedQueuePool::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
  }
  not_empty_.notify_all();
  for (std::thread& thread : threads_) {
    thread.join();
  }
  threads_.clear();
}

bool LockedQueuePool::try_submit(std::unique_ptr<Task>& task) {
  {
    std::lock_guard lock(mu_);
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

std::size_t LockedQueuePool::queue_high_water() const {
  std::lock_guard lock(mu_);
  return high_water_;
}

void LockedQueuePool::run_worker(std::size_t index) {
  pin_worker(options_, index);
  WorkerCounters& counters = counters_[index];
  counters.on_start();
  for (;;) {
    std::unique_ptr<Task> task;
    {
      std::unique_lock lock(mu_);
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
    }
    task->run();
    task.reset();
    owner_add(counters.tasks);
  }
}

}  // namespace numadir::threadpool
