// server/monitoring/open_operation_decorator.h: the base of an OpenOperation that watches another
// one (the access log's, the metrics'): it owns the inner operation and passes on everything but
// send() and finish(), which the watcher overrides to note what goes through.
//
// Thread contract: as OpenOperation's.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

#include "listener/request_handler.h"

namespace numadir::server {

class OpenOperationDecorator : public listener::OpenOperation {
 public:
  // Requires: `inner` is not nullptr.
  explicit OpenOperationDecorator(std::unique_ptr<listener::OpenOperation> inner)
      : inner_(std::move(inner)) {}

  bool abandoned() const override { return inner_->abandoned(); }
  void set_on_end(std::function<void()> on_end) override { inner_->set_on_end(std::move(on_end)); }
  bool writable() const override { return inner_->writable(); }
  void set_on_writable(std::function<void(threadpool::WorkerState&)> resume) override {
    inner_->set_on_writable(std::move(resume));
  }
  void set_gather_bytes(std::size_t bytes) override { inner_->set_gather_bytes(bytes); }

 protected:
  listener::OpenOperation& inner() const { return *inner_; }

 private:
  const std::unique_ptr<listener::OpenOperation> inner_;
};

}  // namespace numadir::server
