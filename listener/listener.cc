// listener/listener.cc: see listener.h.
#include "listener/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>

#include "base/check.h"
#include "listener/request.h"
#include "threadpool/topology.h"

namespace numadir::listener {
namespace {

// epoll_event.data.u64 values that are not Connection pointers.
constexpr std::uint64_t kEventFdTag = 1;
constexpr std::uint64_t kListenTagBase = 2;  // + index into listen_fds_ (pointers are larger).
constexpr int kMaxEvents = 256;
constexpr std::size_t kReadChunkBytes = 64 * 1024;
constexpr std::int64_t kTimerPeriodMs = 1000;

std::string peer_name(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(v4.sin_port));
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
  inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
  return "[" + std::string(text) + "]:" + std::to_string(ntohs(v6.sin6_port));
}

std::uint16_t local_port(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
      (address.ss_family != AF_INET && address.ss_family != AF_INET6)) {
    return 0;
  }
  return ntohs(address.ss_family == AF_INET
                   ? reinterpret_cast<const sockaddr_in&>(address).sin_port
                   : reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
}

// Runs an open operation's on_writable (Connection::take_due_writables) on a thread of the pool.
class ResumeTask final : public threadpool::Task {
 public:
  explicit ResumeTask(WritableResume resume) : resume_(std::move(resume)) {}
  void run(threadpool::WorkerState& state) override { resume_(state); }
  // What resumes is a read (a paused search) that never waits for the writer or the disk.
  bool may_run_inline() const override { return true; }

 private:
  WritableResume resume_;
};

}  // namespace

Listener::Listener(std::string name, std::vector<int> listen_fds, ListenerShared& shared,
                   threadpool::TaskPool& pool, std::optional<unsigned> pin,
                   threadpool::NodeBinding memory, std::size_t mailbox_capacity)
    : name_(std::move(name)),
      listen_fds_(std::move(listen_fds)),
      shared_(shared),
      pool_(pool),
      pin_(pin),
      memory_(std::move(memory)),
      epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
      event_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      rules_(shared, pool, counters_),
      read_buffer_(new char[kReadChunkBytes]),
      mailbox_(mailbox_capacity) {
  NUMADIR_CHECK(epoll_fd_ >= 0, "epoll_create1 failed");
  NUMADIR_CHECK(event_fd_ >= 0, "eventfd failed");
  spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kEventFdTag;
  NUMADIR_CHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &event) == 0, "epoll_ctl failed");
  for (std::size_t i = 0; i < listen_fds_.size(); ++i) {
    if (listen_fds_[i] < 0) {
      continue;  // An ldapi:// socket another listener accepts on.
    }
    event.events = EPOLLIN;
    event.data.u64 = kListenTagBase + i;
    NUMADIR_CHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fds_[i], &event) == 0,
                  "epoll_ctl failed");
  }
}

Listener::~Listener() {
  NUMADIR_CHECK(!thread_.joinable(), "Listener destroyed while running");
  pool_.cancel_room_wait(*this);
  connections_.clear();  // Their held requests go back to state_'s caches, when it has one.
  state_.reset();
  if (!draining_) {
    for (const int fd : listen_fds_) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }
  ::close(epoll_fd_);
  ::close(event_fd_);
  if (spare_fd_ >= 0) {
    ::close(spare_fd_);
  }
}

void Listener::start() {
  thread_ = std::thread([this] {
    counters_.tid.store(threadpool::os_thread_id(), std::memory_order_relaxed);
    if (pin_.has_value()) {
      if (const Status pinned = threadpool::pin_current_thread(*pin_); !pinned.ok()) {
        std::cerr << "numadir: " << name_ << ": " << pinned.message() << "; the thread floats\n";
      }
    }
    // Before the first accept: what this thread allocates from now on (connections, their
    // buffers, TLS sessions) comes from its node.
    memory_.bind_current_thread(threadpool::MemoryUser::kListener);
    run();
  });
  pthread_setname_np(thread_.native_handle(), name_.substr(0, 15).c_str());
}

void Listener::stop() {
  stop_requested_.store(true, std::memory_order_seq_cst);
  if (!thread_.joinable()) {
    return;  // Never started: a test driving it (run_round_for_test) drains it.
  }
  wake();
  thread_.join();
}

void Listener::notify(std::uint64_t connection_id) {
  if (!mailbox_.bounded_push(connection_id)) {
    rescan_.store(true, std::memory_order_seq_cst);
  }
  wake_if_sleeping();
}

void Listener::on_room() {
  pool_room_.store(true, std::memory_order_seq_cst);
  wake_if_sleeping();
}

void Listener::wake_if_sleeping() {
  // seq_cst pairs with sleep_timeout_ms(): either the listener sees the notice before it
  // sleeps, or this sees sleeping_ and wakes it.
  if (sleeping_.exchange(false, std::memory_order_seq_cst)) {
    wake();
  }
}

void Listener::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(event_fd_, &one, sizeof(one));
}

// The event loop, read as Redis's ae.c reads: each round works out how long it may sleep,
// waits for events, dispatches them, runs what other threads asked for and the timers that
// are due, and, with nothing left to read, runs one queued task for its pool (then the next
// round only looks for events, without sleeping).
void Listener::claim_thread() {
  owner_thread_.claim();
  if (state_ == nullptr) {
    // What the requests this thread runs for its pool get (the handler's, as the pool's workers'
    // are, on this thread), what the handler's connection events on this thread may use
    // (ConnectionInfo::listener_state), and the caches of the requests the thread makes.
    state_ = shared_.handler->make_worker_state();
    NUMADIR_CHECK(state_ != nullptr, "the handler made no worker state");
  }
}

void Listener::run() {
  claim_thread();
  bool helped = false;
  while (!stopped()) {
    helped = run_round(helped ? 0 : sleep_timeout_ms());
  }
  pool_.cancel_room_wait(*this);
  // On this thread, as it was made; every connection is closed, so no request holds its caches.
  state_.reset();
}

bool Listener::run_round(int timeout_ms) {
  epoll_event events[kMaxEvents];
  const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
  sleeping_.store(false, std::memory_order_relaxed);
  round_ns_ = 0;  // The round's stamp, read when a read first completes a request.
  for (int i = 0; i < n; ++i) {
    dispatch(events[i]);
  }
  graveyard_.clear();  // No event of this batch refers to them any more.
  run_notices();
  run_timers();
  return help_pool();
}

bool Listener::run_round_for_test() {
  claim_thread();
  if (stopped()) {
    return true;
  }
  run_round(0);
  return stopped();
}

void Listener::adopt_for_test(int fd) {
  claim_thread();
  if (!reserve_connection()) {
    ::close(fd);
    threadpool::owner_add(counters_.refused);
    return;
  }
  open_connection(fd, "test", false);
}

bool Listener::stopped() {
  if (!draining_ && stop_requested_.load(std::memory_order_acquire)) {
    draining_ = true;
    for (const int fd : listen_fds_) {
      if (fd >= 0) {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
      }
    }
    std::vector<OwnedConnection*> open;
    for (auto& [id, connection] : connections_) {
      open.push_back(connection.get());
    }
    for (OwnedConnection* connection : open) {
      // Their open operations end: each holder drops its own.
      begin_close(*connection, CloseReason::kServerStop);
    }
    pending_resumes_.clear();  // Paused producers never to run: they release their connections.
    graveyard_.clear();
  }
  return draining_ && connections_.empty();
}

int Listener::sleep_timeout_ms() {
  sleeping_.store(true, std::memory_order_seq_cst);
  if (!mailbox_.empty() || rescan_.load(std::memory_order_seq_cst) ||
      pool_room_.load(std::memory_order_seq_cst)) {
    sleeping_.store(false, std::memory_order_relaxed);
    return 0;
  }
  if (!timers_wanted()) {
    return -1;
  }
  return static_cast<int>(
      std::clamp<std::int64_t>(next_timer_ms_ - steady_ms(), 0, kTimerPeriodMs));
}

void Listener::dispatch(const epoll_event& event) {
  const std::uint64_t tag = event.data.u64;
  if (tag == kEventFdTag) {
    std::uint64_t count = 0;
    [[maybe_unused]] const ssize_t r = ::read(event_fd_, &count, sizeof(count));
    return;  // The notices are run after the batch.
  }
  if (tag < kListenTagBase + listen_fds_.size()) {
    accept_all(tag - kListenTagBase);
    return;
  }
  OwnedConnection& connection = *static_cast<OwnedConnection*>(event.data.ptr);
  if (connection.closing) {
    return;  // Closed by an earlier event of this batch.
  }
  // The socket took bytes: the owner writes what waited, and what paused for it goes on.
  if ((event.events & EPOLLOUT) != 0) {
    if (connection.shared.flush_from_owner()) {
      set_want_output(connection, false);
      set_interest(connection);
    }
    if (!connection.shared.output_failed() && connection.shared.output_paused() &&
        connection.shared.drained()) {
      resume_output(connection);
      return;
    }
  }
  if (connection.shared.output_failed()) {
    begin_close(connection, connection.shared.output_failure());
  } else if ((event.events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
    on_readable(connection);
  }
}

void Listener::set_want_output(OwnedConnection& connection, bool want) {
  if (connection.want_output == want) {
    return;
  }
  connection.want_output = want;
  if (want) {
    ++output_waiting_;
    connection.output_stalled_since_ms = shared_.limits.write_timeout_s != 0 ? steady_ms() : 0;
    connection.written_seen = connection.shared.bytes_written();
  } else {
    --output_waiting_;
  }
}

void Listener::resume_output(OwnedConnection& connection) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  std::vector<WritableResume> due;
  connection.shared.take_due_writables(due);
  for (WritableResume& resume : due) {
    std::unique_ptr<threadpool::Task> task = std::make_unique<ResumeTask>(std::move(resume));
    if (!pool_.try_submit(task)) {
      pending_resumes_.push_back(std::move(task));  // Run once the pool has room.
      if (!waiting_for_room_) {
        waiting_for_room_ = true;
        pool_.notify_when_room(*this);
      }
    }
  }
  if (connection.shared.output_paused() && connection.shared.drained()) {
    connection.shared.unpause_output();
    set_interest(connection);
    pump(connection);  // What it held, and what it read before it paused.
  }
}

void Listener::run_notices() {
  if (rescan_.exchange(false, std::memory_order_seq_cst)) {
    std::vector<std::uint64_t> ids;
    ids.reserve(connections_.size());
    for (const auto& [id, connection] : connections_) {
      ids.push_back(id);
    }
    for (const std::uint64_t id : ids) {
      on_notified(id);
    }
  }
  std::uint64_t id = 0;
  while (mailbox_.pop(id)) {
    on_notified(id);
  }
  if (pool_room_.exchange(false, std::memory_order_seq_cst)) {
    waiting_for_room_ = false;
    std::vector<std::unique_ptr<threadpool::Task>> resumes;
    resumes.swap(pending_resumes_);
    for (std::unique_ptr<threadpool::Task>& task : resumes) {
      if (!pool_.try_submit(task)) {
        pending_resumes_.push_back(std::move(task));
      }
    }
    if (!pending_resumes_.empty() && !waiting_for_room_) {
      waiting_for_room_ = true;
      pool_.notify_when_room(*this);
    }
    std::vector<std::uint64_t> stalled;
    stalled.swap(stalled_);
    for (const std::uint64_t stalled_id : stalled) {
      on_notified(stalled_id);  // Refused again: stalled_ and a new registration.
    }
  }
  graveyard_.clear();
}

bool Listener::timers_wanted() const {
  return (shared_.limits.idle_timeout_s != 0 && !connections_.empty()) || rules_.handshakes() > 0 ||
         (shared_.limits.write_timeout_s != 0 && output_waiting_ > 0);
}

void Listener::run_timers() {
  if (!timers_wanted()) {
    return;
  }
  const std::int64_t now_ms = steady_ms();
  if (now_ms < next_timer_ms_) {
    return;
  }
  next_timer_ms_ = now_ms + kTimerPeriodMs;
  std::vector<std::pair<OwnedConnection*, CloseReason>> expired;
  for (const auto& [id, connection] : connections_) {
    if (const std::optional<CloseReason> reason = rules_.expired(*connection, now_ms)) {
      expired.emplace_back(connection.get(), *reason);
    } else if (rules_.write_expired(*connection, now_ms)) {
      expired.emplace_back(connection.get(), CloseReason::kWriteTimeout);
    }
  }
  for (const auto& [connection, reason] : expired) {
    begin_close(*connection, reason);
  }
  graveyard_.clear();
}

bool Listener::help_pool() {
  // Everything readable so far is read: rather than sleep while a request waits in the queue,
  // run one.
  if (!shared_.help_pool || draining_ || !pool_.try_help(*state_)) {
    return false;
  }
  threadpool::owner_add(counters_.helped);
  return true;
}

void Listener::accept_all(std::size_t index) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  const int listen_fd = listen_fds_[index];
  const bool tls = index < shared_.tls_urls.size() && shared_.tls_urls[index];
  const std::string* local_path =
      index < shared_.local_paths.size() && !shared_.local_paths[index].empty()
          ? &shared_.local_paths[index]
          : nullptr;
  for (;;) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    const int fd = accept4(listen_fd, reinterpret_cast<sockaddr*>(&address), &length,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) {
        continue;
      }
      if ((errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
        // Out of fds: accept with the spare one and close at once, so the client hears a close
        // instead of waiting in the backlog and the level-triggered socket stops firing.
        ::close(spare_fd_);
        const int dropped = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (dropped >= 0) {
          ::close(dropped);
        }
        spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
        threadpool::owner_add(counters_.refused);
        if (dropped >= 0) {
          continue;
        }
      }
      return;  // EAGAIN, or an error the next readiness retries.
    }
    if (!reserve_connection()) {
      ::close(fd);
      threadpool::owner_add(counters_.refused);
      continue;
    }
    if (local_path != nullptr) {
      // The client process, as the kernel recorded it at connect (SASL EXTERNAL's identity).
      std::optional<PeerCredentials> credentials;
      ucred peer{};
      socklen_t peer_length = sizeof(peer);
      if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_length) == 0) {
        credentials = PeerCredentials{peer.uid, peer.gid, peer.pid};
      }
      open_connection(fd, "PATH=" + *local_path, tls, /*local=*/true, credentials);
      continue;
    }
    open_connection(fd, peer_name(address), tls);
  }
}

bool Listener::reserve_connection() {
  // One compare-and-swap, not a load now and an add once the connection is set up: listeners
  // accepting at once never hold more than max_connections between them. Relaxed: the count is
  // all that is ordered here, and a single atomic's modification order orders it.
  std::uint64_t open = shared_.connections.load(std::memory_order_relaxed);
  do {
    if (open >= shared_.limits.max_connections) {
      return false;
    }
  } while (!shared_.connections.compare_exchange_weak(open, open + 1, std::memory_order_relaxed));
  return true;
}

void Listener::release_connection() { shared_.connections.fetch_sub(1, std::memory_order_relaxed); }

void Listener::open_connection(int fd, std::string peer, bool tls, bool local,
                               std::optional<PeerCredentials> credentials) {
  if (!local) {
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));  // TCP only.
  }
  ConnectionInfo info;
  info.id = shared_.next_connection_id.fetch_add(1, std::memory_order_relaxed);
  info.peer = std::move(peer);
  info.local_port = local ? 0 : local_port(fd);
  info.tls = tls;
  info.local = local;
  info.peer_credentials = credentials;
  info.listener_state = state_.get();
  SSL* ssl = nullptr;
  if (tls && (shared_.tls == nullptr || (ssl = shared_.tls->new_ssl()) == nullptr)) {
    ::close(fd);
    release_connection();
    threadpool::owner_add(counters_.refused);
    return;
  }
  std::unique_ptr<TlsChannel> channel =
      ssl != nullptr ? std::make_unique<TlsChannel>(ssl) : nullptr;
  auto connection = std::make_unique<OwnedConnection>(fd, std::move(info), *this);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = connection.get();
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    release_connection();
    return;  // The Connection's destructor closes fd.
  }
  if (channel != nullptr) {
    rules_.begin_tls(*connection, std::move(channel), steady_ms());
  }
  connection->shared.set_output_bound(shared_.limits.max_output_bytes);
  connection->shared.set_session(shared_.handler->open_session(connection->shared.info()));
  threadpool::owner_add(counters_.accepted);
  threadpool::owner_add(counters_.open);
  connection->last_read_ms = shared_.limits.idle_timeout_s != 0 ? steady_ms() : 0;
  const std::uint64_t id = connection->shared.id();
  connections_.emplace(id, std::move(connection));
}

void Listener::on_readable(OwnedConnection& connection) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  // A connection with nothing buffered reads into the listener's buffer, given back below once
  // its requests are taken from it: between requests a connection holds no input buffer, and
  // steady traffic allocates none. One left with a partial request keeps the buffer.
  const bool lent = connection.input.empty();
  if (lent) {
    connection.input.swap(lent_input_);
  }
  // Reads until EAGAIN, but no further than one PDU past what was buffered: the rest waits in
  // the socket (the kernel's buffer is the backpressure).
  for (;;) {
    if (connection.reading_paused || connection.shared.output_paused() ||
        connection.input.size() > shared_.limits.max_pdu_bytes + kReadChunkBytes) {
      break;
    }
    // Into the listener's buffer, then appended: growing input_ by resize() would zero it.
    const ssize_t n = ::read(connection.shared.fd(), read_buffer_.get(), kReadChunkBytes);
    if (n > 0) {
      std::optional<CloseReason> tls_end;
      if (connection.shared.tls_started()) {
        tls_end = rules_.tls_input(
            connection, std::string_view(read_buffer_.get(), static_cast<std::size_t>(n)));
      } else {
        connection.input.append(read_buffer_.get(), static_cast<std::size_t>(n));
      }
      if (shared_.stamp_requests) {
        // After TLS decrypted it: the time the plaintext was there to frame.
        connection.input_stamps.after_read(connection.input.size(), round_ns_);
      }
      if (tls_end.has_value()) {
        close_after_input(connection, *tls_end);  // close_notify may come with requests.
        return;
      }
      threadpool::owner_add(counters_.bytes_received, static_cast<std::uint64_t>(n));
      if (shared_.limits.idle_timeout_s != 0) {
        connection.last_read_ms = steady_ms();
      }
      if (static_cast<std::size_t>(n) < kReadChunkBytes) {
        break;  // Drained for now; level-triggered epoll reports more.
      }
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    }
    // EOF or a reset: the client is gone; what it had outstanding is abandoned.
    close_after_input(connection, n == 0 || errno == ECONNRESET || errno == EPIPE
                                      ? CloseReason::kClient
                                      : CloseReason::kOther);
    return;
  }
  pump(connection);
  if (lent && connection.input.empty() && !connection.closing) {
    connection.input.swap(lent_input_);
  }
}

void Listener::close_after_input(OwnedConnection& connection, CloseReason reason) {
  // What the client sent before it went is read first (its last requests start, an Unbind is
  // noticed and carried out), as if the end had come in a read of its own.
  pump(connection);
  if (!connection.closing) {
    begin_close(connection, reason);
  }
}

void Listener::pump(OwnedConnection& connection) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  const bool was_paused = connection.reading_paused;
  const PumpResult result = rules_.pump(connection, state_->request_caches());
  if (result == PumpResult::kClose) {
    begin_close(connection, CloseReason::kOther);  // The rules decided why (decide_close).
    return;
  }
  if (connection.reading_paused != was_paused) {
    set_interest(connection);
  }
  if (result == PumpResult::kPoolFull) {
    wait_for_pool(connection);
  }
}

void Listener::wait_for_pool(OwnedConnection& connection) {
  stalled_.push_back(connection.shared.id());
  if (!waiting_for_room_) {
    waiting_for_room_ = true;
    pool_.notify_when_room(*this);  // May call on_room() at once, which only sets pool_room_.
  }
}

void Listener::begin_close(OwnedConnection& connection, CloseReason reason) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  if (!connection.closing) {
    connection.closing = true;
    connection.decide_close(reason);
    rules_.forget_handshake(connection);
    set_want_output(connection, false);
    connection.shared.abandon_all();  // Ends its open operations: their on_end runs here.
    for (const OwnedRequest& held : connection.held) {
      shared_.handler->not_run(held->message(), connection.shared.session(), held->origin());
    }
    connection.held.clear();
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, connection.shared.fd(), nullptr);
  }
  if (connection.shared.watch() > 1) {
    return;  // A worker or an open operation still holds it; its release brings us back.
  }
  release_connection();
  threadpool::owner_sub(counters_.open);
  threadpool::owner_add(
      counters_.closed[static_cast<std::size_t>(connection.close_reason.value_or(reason))]);
  auto it = connections_.find(connection.shared.id());
  graveyard_.push_back(std::move(it->second));
  connections_.erase(it);
}

void Listener::set_interest(OwnedConnection& connection) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  epoll_event event{};
  const bool read = !connection.reading_paused && !connection.shared.output_paused();
  event.events = (read ? static_cast<std::uint32_t>(EPOLLIN) : 0u) |
                 (connection.want_output ? static_cast<std::uint32_t>(EPOLLOUT) : 0u);
  event.data.ptr = &connection;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, connection.shared.fd(), &event);
}

void Listener::on_notified(std::uint64_t connection_id) {
  NUMADIR_DCHECK_OWNER(owner_thread_);
  const auto it = connections_.find(connection_id);
  if (it == connections_.end()) {
    return;  // Already closed: a late notice.
  }
  OwnedConnection& connection = *it->second;
  connection.shared.run_due_ends();
  if (connection.closing || connection.shared.output_failed()) {
    // Closing already: its reason was decided then.
    begin_close(connection, connection.shared.output_failed() ? connection.shared.output_failure()
                                                              : CloseReason::kOther);
    return;
  }
  if (!connection.want_output && connection.shared.output_blocked()) {
    set_want_output(connection, true);
    set_interest(connection);
  }
  if (!connection.shared.output_paused() && connection.shared.pause_output()) {
    threadpool::owner_add(counters_.output_pauses);
    set_interest(connection);  // Not read, nothing started, until drained().
  }
  if (connection.shared.drained()) {
    resume_output(connection);  // Pumps too, once unpaused.
    if (connection.closing) {
      return;
    }
  }
  pump(connection);
}

}  // namespace numadir::listener
