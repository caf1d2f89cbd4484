// listener/detached_operation.cc: see detached_operation.h.
#include "listener/detached_operation.h"

#include "base/check.h"
#include "listener/wire/message_encoder.h"

namespace numadir::listener {

DetachedOperation::DetachedOperation(Connection& connection, std::int32_t message_id)
    : connection_(connection) {
  slot_.message_id = message_id;
  connection_.open_operation(slot_);
}

DetachedOperation::~DetachedOperation() { connection_.close_open(slot_); }

void DetachedOperation::send(const wire::LdapMessage& message) {
  NUMADIR_DCHECK(!finished_, "OpenOperation::send after finish");
  if (abandoned()) {
    out_.clear();
    return;  // Not even encoded; send_open would drop it anyway.
  }
  // Unless the holder gathers them, one message at a time, sent at once: an open operation's
  // messages come one by one, as its feeder learns them, and the client waits for each.
  wire::encode_message(message, out_);
  if (out_.size() >= gather_bytes_) {
    send_gathered();
  }
}

void DetachedOperation::send_gathered() {
  if (out_.size() == 0) {
    return;
  }
  connection_.send_open(slot_, out_.view());
  out_.clear();
}

void DetachedOperation::set_gather_bytes(std::size_t bytes) {
  gather_bytes_ = bytes;
  if (bytes == 0) {
    send_gathered();
  }
}

void DetachedOperation::finish(const wire::LdapMessage& last_message) {
  NUMADIR_DCHECK(!finished_, "OpenOperation::finish called twice");
  finished_ = true;
  if (abandoned()) {
    out_.clear();
    return;
  }
  wire::encode_message(last_message, out_);  // After what was gathered: one write for both.
  connection_.finish_open(slot_, out_.view());
  out_.clear();
}

bool DetachedOperation::abandoned() const {
  return slot_.state.load(std::memory_order_acquire) == OpenSlot::State::kEnded;
}

void DetachedOperation::set_on_end(std::function<void()> on_end) {
  connection_.set_on_end(slot_, std::move(on_end));
}

bool DetachedOperation::writable() const { return connection_.writable(); }

void DetachedOperation::set_on_writable(std::function<void(threadpool::WorkerState&)> resume) {
  NUMADIR_DCHECK(!finished_, "OpenOperation::set_on_writable after finish");
  send_gathered();  // Counted in the output before the wait for it to drain.
  connection_.set_on_writable(slot_, std::move(resume));
}

}  // namespace numadir::listener
