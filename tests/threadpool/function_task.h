// tests/threadpool/function_task.h: a Task that runs a function, for the pool tests.
//
// Thread contract: a task runs once, on whichever worker takes it.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "threadpool/task.h"

namespace numadir::threadpool::testing {

// Runs `body` on whichever worker takes it.
class FunctionTask : public Task {
 public:
  explicit FunctionTask(std::function<void()> body) : body_(std::move(body)) {}
  void run(WorkerState&) override { body_(); }

 private:
  std::function<void()> body_;
};

inline std::unique_ptr<Task> task(std::function<void()> body) {
  return std::make_unique<FunctionTask>(std::move(body));
}

}  // namespace numadir::threadpool::testing
