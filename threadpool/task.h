// threadpool/task.h: what a pool runs (Task) and the per-worker context it runs with
// (WorkerState). Every thread that runs tasks, each pool worker and each thread that helps a pool,
// owns one WorkerState, made by the pool's factory (WorkerPoolOptions::make_worker_state),
// and hands it to every task it runs: state a task keeps between tasks (a read transaction,
// scratch buffers, memos) lives there instead of in thread-local variables, so what a task may
// touch is in its signature.
//
// Thread contract: a WorkerState belongs to the one thread that runs tasks with it: it is made
// on that thread when the thread starts and destroyed there when it ends; no other thread
// touches it. A Task is owned by the pool from a successful submit until run() returns.
#pragma once

#include <functional>
#include <memory>

namespace numadir::threadpool {

// Opaque to the pool: the code that makes tasks defines what a worker keeps (the server's
// ServerWorkerState) and downcasts in run(). The base holds nothing (the pools' default).
class WorkerState {
 public:
  WorkerState() = default;
  WorkerState(const WorkerState&) = delete;
  WorkerState& operator=(const WorkerState&) = delete;
  virtual ~WorkerState() = default;
};

// Makes the state of one task-running thread. Called on that thread as it starts, so calls
// from different workers run concurrently. Returns: never nullptr.
using WorkerStateFactory = std::function<std::unique_ptr<WorkerState>()>;

// Returns: a factory of empty WorkerStates, for tasks that keep nothing per worker.
inline WorkerStateFactory empty_worker_state() {
  return [] { return std::make_unique<WorkerState>(); };
}

// A unit of work. The pool owns a task from a successful try_submit until run() returns, then
// destroys it.
class Task {
 public:
  virtual ~Task() = default;
  // Runs on the thread that owns `state` (a worker, or a thread helping the pool), which lends
  // it for the call.
  virtual void run(WorkerState& state) = 0;
  // Returns: whether a thread helping the pool (TaskPool::try_help) may run this task inline,
  //   on its own stack: only tasks that are short and never wait for a lock held across I/O or
  //   for the disk.
  virtual bool may_run_inline() const { return false; }
};

}  // namespace numadir::threadpool
