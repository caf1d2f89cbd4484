// threadpool/locked_queue_pool.h: the classic design numadir is measured against: one queue
// behind one mutex and condition variable, shared by every submitter and every worker, with
// unpinned workers (`dispatcher = "single"`). It has one priority class and runs nothing inline.
// The Frontend gives it no pins and no node binding: its threads float, so no node is theirs.
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
  // Stops the pool if running; tasks still queued are destroyed without running.
  ~LockedQueuePool() override;

  void stop() override;
  [[nodiscard]] bool try_submit(std::unique_ptr<Task>& task) override;
  // The classic design runs every task on its workers. Returns: false.
  [[nodiscard]] bool try_help(WorkerState& /*state*/) override { return false; }
  std::size_t queue_depth() const override;
  std::size_t queue_high_water() const override;
  // Returns: the queue mutex's acquisitions, contended ones and their wait (a waiting worker
  //   woken by the condition variable counts once, its re-acquisition inside the wait uncounted).
  std::optional<LockStats> lock_stats() const override;

 private:
  void run_worker(std::size_t index) override;
  bool has_room() const override;
  // Locks mu_, counting the acquisition and, when it was held, the wait (a clock read only then).
  std::unique_lock<std::mutex> lock_counted() const;

  mutable std::mutex mu_;
  std::condition_variable not_empty_;
  std::deque<std::unique_ptr<Task>> queue_;  // Guarded by mu_.
  std::size_t high_water_ = 0;               // Guarded by mu_.
  bool stopping_ = false;                    // Guarded by mu_.
  mutable LockStats lock_stats_;             // Guarded by mu_.
};

}  // namespace numadir::threadpool
