// threadpool/locked_queue_pool.h: the classic design numadir is measured against: one queue
// behind one mutex and condition variable, shared by every listener and every worker, with
// unpinned workers (`dispatcher = "single"`).
//
// Thread contract: as WorkerPool: start/stop/destroy on one controlling thread; try_submit from
// any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "threadpool/worker_pool.h"

namespace numadir::threadpool {

class LockedQueuePool final : public TaskPool {
 public:
  // Requires: 0 < options.threads and 0 < options.queue_capacity.
  explicit LockedQueuePool(WorkerPoolOptions options);
  LockedQueuePool(const LockedQueuePool&) = delete;
  LockedQueuePool& operator=(const LockedQueuePool&) = delete;
  ~LockedQueuePool() override;

  void start() override;
  void stop() override;
  [[nodiscard]] bool try_submit(std::unique_ptr<Task>& task) override;
  std::size_t threads() const override { return options_.threads; }
  const WorkerPoolOptions& options() const override { return options_; }
  const WorkerCounters& counters(std::size_t worker) const override { return counters_[worker]; }
  std::size_t queue_depth() const override;
  std::size_t queue_high_water() const override;
  // The classic design: its listener only reads, so it never runs a task. Returns: false.
  [[nodiscard]] bool try_help() override { return false; }

 private:
  void run_worker(std::size_t index);

  const WorkerPoolOptions options_;
  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  std::deque<std::unique_ptr<Task>> queue_;  // Guarded by mu_.
  std::size_t high_water_ = 0;               // Guarded by mu_.
  bool stopping_ = false;                    // Guarded by mu_.
  std::unique_ptr<WorkerCounters[]> counters_;
  std::vector<std::thread> threads_;  // Owner: the controlling thread.
};

}  // namespace numadir::threadpool
