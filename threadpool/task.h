// threadpool/task.h: what a pool runs (Task) and the per-worker context it runs with
// (WorkerState). Every thread that runs tasks, each pool worker and each thread that helps a pool,
// owns one WorkerState, made by the pool's factory (WorkerPoolOptions::make_worker_state),
// and hands it to every task it runs: state a task keeps between tasks (a read transaction,
// scratch buffers, memos) lives there instead of in thread-local variables, so what a task may
// touch is in its signature.
//
// A task that runs inline on a helping thread (a listener: TaskPool::try_help) and finds it has
// more work than may_run_inline() promised (a bind whose stored password is a costly hash) does
// not do it there: its state's helping() names the pool it helps, and the task hands the rest of
// its work to that pool as a task that may not run inline, which only the pool's own workers
// take. The helper goes back to its own work (reading its connections) at once.
//
// Thread contract: a WorkerState belongs to the one thread that runs tasks with it: it is made
// on that thread when the thread starts and destroyed there when it ends; no other thread
// touches it. A Task is owned by the pool from a successful submit until the thread that ran it
// retires it (retire(), with the same state, right after run() returns).
#pragma once

#include <functional>
#include <memory>

namespace numadir::threadpool {

class TaskPool;

// Opaque to the pool: the code that makes tasks defines what a worker keeps (the server's
// ServerWorkerState) and downcasts in run(). The base holds only whether its thread is running
// a task inline for a pool it helps (the pools' default state holds nothing else).
class WorkerState {
 public:
  WorkerState() = default;
  WorkerState(const WorkerState&) = delete;
  WorkerState& operator=(const WorkerState&) = delete;
  virtual ~WorkerState() = default;

  // Returns: during a Task::run() that a helping thread runs inline (TaskPool::try_help), the
  //   pool it helps, to which the task may hand costly work (TaskPool::try_submit of a task
  //   whose may_run_inline() is false); nullptr while one of a pool's own workers runs the task.
  TaskPool* helping() const { return helping_; }

 private:
  friend class TaskPool;         // Sets helping_ around a task it lends a helper (run_as_helper).
  TaskPool* helping_ = nullptr;  // Owner: the thread owning the state.
};

// Makes the state of one task-running thread. Called on that thread as it starts, so calls
// from different workers run concurrently. Returns: never nullptr.
using WorkerStateFactory = std::function<std::unique_ptr<WorkerState>()>;

// Returns: a factory of empty WorkerStates, for tasks that keep nothing per worker.
inline WorkerStateFactory empty_worker_state() {
  return [] { return std::make_unique<WorkerState>(); };
}

// A unit of work. The pool owns a task from a successful try_submit until run() returns, then
// retires it. A task the pool never ran (queued when the pool is destroyed) is deleted.
class Task {
 public:
  virtual ~Task() = default;
  // Runs on the thread that owns `state` (a worker, or a thread helping the pool), which lends
  // it for the call.
  virtual void run(WorkerState& state) = 0;
  // Ends the task once run() has returned, on the same thread with the same `state`: the task
  // is gone after it. The default deletes it; a task whose memory the thread's state recycles
  // (listener/request.h) gives it back there.
  virtual void retire(WorkerState& state) {
    (void)state;
    delete this;
  }
  // Returns: whether a thread helping the pool (TaskPool::try_help) may run this task inline,
  //   on its own stack: only tasks that are short and never wait for a lock held across I/O or
  //   for the disk. One that may turn out long hands the long part to state.helping() (above).
  virtual bool may_run_inline() const { return false; }
};

}  // namespace numadir::threadpool
