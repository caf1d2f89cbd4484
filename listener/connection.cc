// listener/connection.cc: see connection.h.
#include "listener/connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace numadir::listener {
namespace {

// The writer's buffer keeps its capacity up to this when the socket blocks (steady traffic
// allocates nothing); a larger one is freed, so a stalled client holds one buffer of its bound.
constexpr std::size_t kKeptChunkBytes = 64 * 1024;

}  // namespace

Connection::Connection(int fd, ConnectionInfo info, ConnectionNotifier& owner)
    : fd_(fd), info_(std::move(info)), owner_(owner) {
  owner_thread_.claim();
}

Connection::~Connection() {
  session_.reset();  // Before the socket goes (the held requests went before, in OwnedConnection).
  {
    MutexLock lock(mu_);
    NUMADIR_DCHECK(open_.empty(), "a connection destroyed with open operations");
  }
  ::close(fd_);
}

void Connection::release_from_worker() {
  // After this fetch_sub the owner may destroy the connection: read what is needed first.
  ConnectionNotifier& owner = owner_;
  const std::uint64_t id = info_.id;
  const std::uint64_t before = state_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
  if ((before & kWatchBit) != 0) {
    owner.notify(id);
  }
}

std::uint64_t Connection::watch() {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  return state_.fetch_or(kWatchBit, std::memory_order_seq_cst) >> 1;
}

bool Connection::abandon(std::int32_t message_id) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  std::vector<std::function<void()>> due;
  bool found = false;
  std::vector<WritableResume> dropped;  // Destroyed last, unlocked: they may release slots.
  {
    MutexLock lock(mu_);
    found = end_open_locked(message_id, due, dropped) > 0;
    // Finished or never sent: nothing to abandon (RFC 4511 §4.11).
    if (std::find(running_ids_.begin(), running_ids_.end(), message_id) != running_ids_.end()) {
      abandoned_ids_.push_back(message_id);
      abandoned_count_.store(static_cast<std::uint32_t>(abandoned_ids_.size()),
                             std::memory_order_release);
      found = true;
    }
  }
  run_ends(due);
  return found;
}

void Connection::abandon_all() {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  std::vector<std::function<void()>> due;
  std::vector<WritableResume> dropped;  // Destroyed last, unlocked: they may release slots.
  {
    MutexLock lock(mu_);
    // Under the lock: an operation opened after this is born ended (open_operation).
    abandon_all_.store(true, std::memory_order_release);
    end_open_locked(std::nullopt, due, dropped);
  }
  run_ends(due);
}

std::size_t Connection::end_open_locked(std::optional<std::int32_t> message_id,
                                        std::vector<std::function<void()>>& due,
                                        std::vector<WritableResume>& dropped) {
  std::size_t ended = 0;
  for (OpenSlot* slot : open_) {
    if ((message_id.has_value() && slot->message_id != *message_id) ||
        slot->state.load(std::memory_order_relaxed) != OpenSlot::State::kOpen) {
      continue;
    }
    slot->state.store(OpenSlot::State::kEnded, std::memory_order_release);
    ++ended;
    // The owner ends it itself, so there is no one to tell: it is the caller.
    ops_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
    if (slot->on_end) {
      slot->end_told = true;
      due.push_back(std::move(slot->on_end));
      slot->on_end = nullptr;
    }
    if (slot->on_writable) {
      --writable_waiters_;
      dropped.push_back(std::move(slot->on_writable));
      slot->on_writable = nullptr;
    }
  }
  return ended;
}

void Connection::run_ends(std::vector<std::function<void()>>& due) {
  // Unlocked: an on_end may take the feeder's lock, under which the feeder calls send_open, or
  // release the operation at once (close_open).
  for (std::function<void()>& on_end : due) {
    on_end();
  }
}

void Connection::run_due_ends() {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  std::vector<std::function<void()>> due;
  {
    MutexLock lock(mu_);
    for (OpenSlot* slot : open_) {
      if (slot->state.load(std::memory_order_relaxed) == OpenSlot::State::kEnded &&
          !slot->end_told && slot->on_end) {
        slot->end_told = true;
        due.push_back(std::move(slot->on_end));
        slot->on_end = nullptr;
      }
    }
  }
  run_ends(due);
}

void Connection::set_on_writable(OpenSlot& slot, WritableResume resume) {
  bool due = false;
  {
    MutexLock lock(mu_);
    if (slot.state.load(std::memory_order_relaxed) == OpenSlot::State::kOpen) {
      NUMADIR_DCHECK(!slot.on_writable, "OpenOperation::set_on_writable while one is set");
      slot.on_writable = std::move(resume);
      ++writable_waiters_;
      // Under the lock: a writer that drains after this sees the waiter and tells the owner.
      due = drained();
    }
  }
  // `resume` (moved from only when the slot is open) is destroyed here, unlocked.
  if (due) {
    owner_.notify(info_.id);
  }
}

bool Connection::pause_output() {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  MutexLock lock(mu_);
  if (writable()) {
    return false;
  }
  output_paused_mark_ = true;
  output_paused_ = true;
  return true;
}

void Connection::unpause_output() {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  MutexLock lock(mu_);
  output_paused_mark_ = false;
  output_paused_ = false;
}

void Connection::take_due_writables(std::vector<WritableResume>& out) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  if (!drained()) {
    return;
  }
  MutexLock lock(mu_);
  if (writable_waiters_ == 0) {
    return;
  }
  for (OpenSlot* slot : open_) {
    if (slot->on_writable) {
      out.push_back(std::move(slot->on_writable));
      slot->on_writable = nullptr;
      --writable_waiters_;
    }
  }
}

void Connection::open_operation(OpenSlot& slot) {
  add_ref();  // The caller's request holds one: the count cannot reach the owner's alone.
  MutexLock lock(mu_);
  const bool abandoned = abandon_all_.load(std::memory_order_relaxed) ||
                         std::find(abandoned_ids_.begin(), abandoned_ids_.end(), slot.message_id) !=
                             abandoned_ids_.end();
  if (abandoned) {
    slot.state.store(OpenSlot::State::kEnded, std::memory_order_release);
  } else {
    slot.state.store(OpenSlot::State::kOpen, std::memory_order_release);
    ops_.fetch_add(kRefUnit, std::memory_order_seq_cst);
  }
  open_.push_back(&slot);
}

void Connection::send_open(OpenSlot& slot, std::string_view bytes) {
  Queued queued = Queued::kQueued;
  bool crossed = false;
  {
    MutexLock lock(mu_);
    if (slot.state.load(std::memory_order_relaxed) != OpenSlot::State::kOpen) {
      return;  // Ended: nothing more goes out for it.
    }
    queued = queue_output(bytes, crossed);
  }
  after_queue(queued, crossed, bytes);
}

void Connection::finish_open(OpenSlot& slot, std::string_view last_bytes) {
  Queued queued = Queued::kQueued;
  bool crossed = false;
  std::uint64_t before = 0;
  {
    MutexLock lock(mu_);
    if (slot.state.load(std::memory_order_relaxed) != OpenSlot::State::kOpen) {
      return;
    }
    slot.state.store(OpenSlot::State::kFinished, std::memory_order_release);
    queued = queue_output(last_bytes, crossed);
    // After the bytes, under the lock: as finish_operation.
    before = ops_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
  }
  operation_ended(before);
  after_queue(queued, crossed, last_bytes);
}

void Connection::set_on_end(OpenSlot& slot, std::function<void()> on_end) {
  bool due = false;
  {
    MutexLock lock(mu_);
    slot.on_end = std::move(on_end);
    due = slot.state.load(std::memory_order_relaxed) == OpenSlot::State::kEnded && !slot.end_told;
  }
  if (due) {
    owner_.notify(info_.id);  // It ended before anyone was to be told: the owner runs it.
  }
}

void Connection::close_open(OpenSlot& slot) {
  std::optional<std::uint64_t> before;
  WritableResume dropped;  // Destroyed unlocked.
  {
    MutexLock lock(mu_);
    if (slot.on_writable) {
      --writable_waiters_;
      dropped = std::move(slot.on_writable);
      slot.on_writable = nullptr;
    }
    if (slot.state.load(std::memory_order_relaxed) == OpenSlot::State::kOpen) {
      slot.state.store(OpenSlot::State::kFinished, std::memory_order_release);
      before = ops_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
    }
    std::erase(open_, &slot);
    slot.on_end = nullptr;  // Never to run now; destroyed on the holder's thread.
  }
  if (before.has_value()) {
    operation_ended(*before);
  }
  release_from_worker();  // Last: the owner may destroy the connection from here on.
}

void Connection::operation_ended(std::uint64_t before) {
  if ((before & kWatchBit) != 0) {
    owner_.notify(info_.id);
  }
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
  NUMADIR_DCHECK_OWNER(owner_thread_);
  MutexLock lock(mu_);
  running_ids_.push_back(message_id);
  ops_.fetch_add(kRefUnit, std::memory_order_seq_cst);
}

void Connection::cancel_operation(std::int32_t message_id) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  MutexLock lock(mu_);
  forget_operation(message_id);
  ops_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
}

void Connection::finish_operation(std::int32_t message_id, std::string_view last_bytes) {
  Queued queued = Queued::kQueued;
  bool crossed = false;
  std::uint64_t before = 0;
  {
    MutexLock lock(mu_);
    forget_operation(message_id);
    queued = queue_output(last_bytes, crossed);
    // Ends under the lock, after the bytes are queued: a request the owner starts because of
    // this queues its response behind them.
    before = ops_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
  }
  operation_ended(before);
  after_queue(queued, crossed, last_bytes);
}

Connection::Queued Connection::queue_output(std::string_view bytes, bool& crossed) {
  if (bytes.empty() || output_failed_.load(std::memory_order_relaxed)) {
    return Queued::kQueued;
  }
  const bool was_writable = writable();
  if (!writing_ && out_.empty() && tls_ == nullptr) {
    // Nothing waits and no one writes: the caller writes its bytes from its own buffer, and
    // only what the socket does not take is copied (write_direct).
    writing_ = true;
    queued_bytes_.fetch_add(bytes.size(), std::memory_order_relaxed);
    crossed = was_writable && !writable();
    return Queued::kDirect;
  }
  append_output(bytes);
  crossed = was_writable && !writable();
  if (writing_) {
    return Queued::kQueued;  // The current writer (or the owner's EPOLLOUT) takes these too.
  }
  writing_ = true;
  return Queued::kWriter;
}

void Connection::after_queue(Queued queued, bool crossed, std::string_view bytes) {
  if (crossed) {
    owner_.notify(info_.id);  // The owner stops reading it (Listener::on_notified).
  }
  if (queued == Queued::kWriter) {
    write_as_writer();
  } else if (queued == Queued::kDirect) {
    write_direct(bytes);
  }
}

void Connection::write_direct(std::string_view bytes) {
  std::size_t done = 0;
  if (!send_from(bytes, done)) {
    {
      MutexLock lock(mu_);
      keep_unsent(bytes.substr(done));  // Before what others queued meanwhile.
    }
    owner_.notify(info_.id);
    return;
  }
  write_as_writer();  // What others queued while this wrote; gives up writing_ when drained.
}

bool Connection::send_from(std::string_view bytes, std::size_t& done) {
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      took(static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      send_errno_ = n < 0 ? errno : EPIPE;
      return false;
    }
  }
  return true;
}

void Connection::keep_unsent(std::string_view rest) {
  if (send_errno_ == EAGAIN || send_errno_ == EWOULDBLOCK) {
    out_.insert(0, rest);
    blocked_ = true;  // writing_ stays true: the owner writes on EPOLLOUT.
  } else {
    fail_output();
  }
}

void Connection::took(std::size_t bytes) {
  queued_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  // One writer at a time (writing_ hands the role over under mu_): no locked add needed.
  bytes_written_.store(bytes_written_.load(std::memory_order_relaxed) + bytes,
                       std::memory_order_relaxed);
}

void Connection::fail_output() {
  output_failure_ = send_errno_ == EPIPE || send_errno_ == ECONNRESET ? CloseReason::kClient
                                                                      : CloseReason::kOther;
  output_failed_.store(true, std::memory_order_release);
  out_.clear();
  queued_bytes_.store(0, std::memory_order_relaxed);
  writing_ = false;
}

void Connection::write_as_writer() {
  if (!write_pending()) {
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

void Connection::send_bytes(std::string_view bytes) {
  Queued queued = Queued::kQueued;
  bool crossed = false;
  {
    MutexLock lock(mu_);
    queued = queue_output(bytes, crossed);
  }
  after_queue(queued, crossed, bytes);
}

bool Connection::flush_from_owner() {
  NUMADIR_DCHECK_OWNER(owner_thread_);
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
    bool drained = false;
    {
      MutexLock lock(mu_);
      if (out_.empty()) {
        drained = true;
        // Drained: an idle connection keeps small buffers only (the next writer may be another
        // thread, so this happens before writing_ is given up).
        release_if_large(chunk);
        release_if_large(out_);
        writing_ = false;
        if (writable_waiters_ == 0 && !output_paused_mark_) {
          return true;
        }
      } else {
        chunk.swap(out_);
      }
    }
    if (drained) {
      // Drained with producers waiting or reading paused: the owner resumes them (chunk is no
      // longer this thread's to look at).
      owner_.notify(info_.id);
      return true;
    }
    std::size_t done = 0;
    if (!send_from(chunk, done)) {
      MutexLock lock(mu_);
      // Keep the order: what is left of this chunk goes before bytes appended meanwhile.
      keep_unsent(std::string_view(chunk).substr(done));
      if (chunk.capacity() > kKeptChunkBytes) {
        std::string().swap(chunk);  // A stalled client holds out_ alone, not twice its size.
      }
      chunk.clear();
      return false;
    }
    chunk.clear();
  }
}

void Connection::append_output(std::string_view bytes) {
  const std::size_t before = out_.size();
  if (tls_ == nullptr) {
    out_.append(bytes);
  } else if (!tls_->output(bytes, out_).ok()) {
    output_failure_ = CloseReason::kTlsFailure;
    output_failed_.store(true, std::memory_order_release);
  }
  queued_bytes_.fetch_add(out_.size() - before, std::memory_order_relaxed);
}

void Connection::start_tls(std::unique_ptr<TlsChannel> channel) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  MutexLock lock(mu_);
  tls_ = std::move(channel);
  tls_started_ = true;
}

TlsChannel::InputResult Connection::tls_input(std::string_view cipher, std::string& plain) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  bool write_now = false;
  TlsChannel::InputResult result;
  {
    MutexLock lock(mu_);
    const std::size_t before = out_.size();
    result = tls_->input(cipher, plain, out_);
    queued_bytes_.fetch_add(out_.size() - before, std::memory_order_relaxed);
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

CloseReason Connection::output_failure() const {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  MutexLock lock(mu_);
  return output_failure_;
}

bool Connection::output_blocked() const {
  MutexLock lock(mu_);
  return blocked_;
}

}  // namespace numadir::listener
