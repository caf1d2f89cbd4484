// listener/connection.cc: see connection.h.
#include "listener/connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "listener/listener.h"
#include "listener/request.h"

namespace numadir::listener {

Connection::Connection(int fd, ConnectionInfo info, Listener& owner)
    : fd_(fd), info_(std::move(info)), owner_(owner) {}

Connection::~Connection() {
  held_.clear();  // Their references go before the socket does.
  session_.reset();
  ::close(fd_);
}

void Connection::release_from_worker() {
  // After this fetch_sub the owner may destroy the connection: read what is needed first.
  Listener& owner = owner_;
  const std::uint64_t id = info_.id;
  const std::uint64_t before = state_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
  if ((before & kWatchBit) != 0) {
    owner.notify(id);
  }
}

std::uint64_t Connection::watch() {
  return state_.fetch_or(kWatchBit, std::memory_order_seq_cst) >> 1;
}

void Connection::abandon(std::int32_t message_id) {
  MutexLock lock(mu_);
  if (std::find(running_ids_.begin(), running_ids_.end(), message_id) == running_ids_.end()) {
    return;  // Finished or never sent: nothing to abandon (RFC 4511 §4.11).
  }
  abandoned_ids_.push_back(message_id);
  abandoned_count_.store(static_cast<std::uint32_t>(abandoned_ids_.size()),
                         std::memory_order_release);
}

bool Connection::is_abandoned(std::int32_t message_id) const {
  if (abandon_all_.load(std::memory_order_acquire)) {
    return true;
  }
  if (abandoned_count_.load(std::memory_order_acquire) == 0) {
    return false;
  }
  MutexLock lock(mu_);
  return std::find(abandoned_ids_.begin(), abandoned_ids_.end(), message_id) !=
         abandoned_ids_.end();
}

void Connection::begin_operation(std::int32_t message_id) {
  MutexLock lock(mu_);
  running_ids_.push_back(message_id);
  ops_.fetch_add(kRefUnit, std::memory_order_seq_cst);
}

void Connection::cancel_operation(std::int32_t message_id) {
  MutexLock lock(mu_);
  forget_operation(message_id);
  ops_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
}

void Connection::finish_operation(std::int32_t message_id, std::string_view last_bytes) {
  bool write_now = false;
  std::uint64_t before = 0;
  {
    MutexLock lock(mu_);
    forget_operation(message_id);
    if (!last_bytes.empty() && !output_failed_.load(std::memory_order_relaxed)) {
      append_output(last_bytes);
      write_now = !writing_;
      writing_ = true;
    }
    // Ends under the lock, after the bytes are queued: a request the owner starts because of
    // this queues its response behind them.
    before = ops_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
  }
  if ((before & kWatchBit) != 0) {
    owner_.notify(info_.id);
  }
  if (write_now && !write_pending()) {
    owner_.notify(info_.id);  // Blocked or failed: the owner takes over or closes.
  }
}

void Connection::forget_operation(std::int32_t message_id) {
  if (auto it = std::find(running_ids_.begin(), running_ids_.end(), message_id);
      it != running_ids_.end()) {
    *it = running_ids_.back();
    running_ids_.pop_back();
  }
  if (auto it = std::find(abandoned_ids_.begin(), abandoned_ids_.end(), message_id);
      it != abandoned_ids_.end()) {
    *it = abandoned_ids_.back();
    abandoned_ids_.pop_back();
    abandoned_count_.store(static_cast<std::uint32_t>(abandoned_ids_.size()),
                           std::memory_order_release);
  }
}

std::size_t Connection::pending_output_bytes() const {
  MutexLock lock(mu_);
  return out_.size();
}

void Connection::send_bytes(std::string_view bytes) {
  {
    MutexLock lock(mu_);
    if (output_failed_.load(std::memory_order_relaxed)) {
      return;
    }
    append_output(bytes);
    if (writing_) {
      return;  // The current writer (or the owner's EPOLLOUT) takes these bytes too.
    }
    writing_ = true;
  }
  if (!write_pending()) {
    owner_.notify(info_.id);  // Blocked or failed: the owner takes over or closes.
  }
}

bool Connection::flush_from_owner() {
  {
    MutexLock lock(mu_);
    if (!blocked_) {
      return !writing_;
    }
    blocked_ = false;  // The owner is the writer now.
  }
  return write_pending();
}

bool Connection::write_pending() {
  // The writer owns writing_buffer_: swapping it with out_ hands the appenders an empty buffer
  // that kept its capacity, so steady traffic allocates nothing here.
  std::string& chunk = writing_buffer_;
  for (;;) {
    {
      MutexLock lock(mu_);
      if (out_.empty()) {
        writing_ = false;
        return true;
      }
      chunk.swap(out_);
    }
    std::size_t done = 0;
    while (done < chunk.size()) {
      const ssize_t n = ::send(fd_, chunk.data() + done, chunk.size() - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) {
        continue;
      }
      MutexLock lock(mu_);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        // Keep the order: what is left of this chunk goes before bytes appended meanwhile.
        out_.insert(0, chunk, done, std::string::npos);
        blocked_ = true;  // writing_ stays true: the owner writes on EPOLLOUT.
      } else {
        output_failed_.store(true, std::memory_order_release);
        out_.clear();
        writing_ = false;
      }
      chunk.clear();
      return false;
    }
    chunk.clear();
  }
}

void Connection::append_output(std::string_view bytes) {
  if (tls_ == nullptr) {
    out_.append(bytes);
    return;
  }
  if (!tls_->output(bytes, out_).ok()) {
    output_failed_.store(true, std::memory_order_release);
  }
}

void Connection::start_tls(std::unique_ptr<TlsChannel> channel) {
  MutexLock lock(mu_);
  tls_ = std::move(channel);
  tls_started_ = true;
}

TlsChannel::InputResult Connection::tls_input(std::string_view cipher) {
  bool write_now = false;
  TlsChannel::InputResult result;
  {
    MutexLock lock(mu_);
    result = tls_->input(cipher, input_, out_);
    if (!out_.empty() && !writing_ && !output_failed_.load(std::memory_order_relaxed)) {
      writing_ = true;
      write_now = true;
    }
  }
  if (write_now && !write_pending()) {
    owner_.notify(info_.id);  // Blocked or failed: the owner takes over or closes.
  }
  return result;
}

bool Connection::tls_handshake_done() const {
  MutexLock lock(mu_);
  return tls_ != nullptr && tls_->handshake_done();
}

TlsPeer Connection::tls_peer() const {
  MutexLock lock(mu_);
  return tls_->peer();
}

std::string Connection::tls_error() const {
  MutexLock lock(mu_);
  return tls_ == nullptr ? std::string() : tls_->error();
}

bool Connection::output_blocked() const {
  MutexLock lock(mu_);
  return blocked_;
}

}  // namespace numadir::listener
