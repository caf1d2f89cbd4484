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
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "base/check.h"
#include "listener/request.h"
#include "listener/wire/framing.h"
#include "listener/wire/message_encoder.h"
#include "threadpool/topology.h"

namespace numadir::listener {
namespace {

// epoll_event.data.u64 values that are not Connection pointers.
constexpr std::uint64_t kEventFdTag = 1;
constexpr std::uint64_t kListenTagBase = 2;  // + index into listen_fds_ (pointers are larger).
constexpr int kMaxEvents = 256;
constexpr std::size_t kReadChunkBytes = 64 * 1024;

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return 0;
  }
  return ntohs(address.ss_family == AF_INET
                   ? reinterpret_cast<const sockaddr_in&>(address).sin_port
                   : reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
}

bool is_request(wire::ProtocolOp op) {
  switch (op) {
    case wire::ProtocolOp::kBindRequest:
    case wire::ProtocolOp::kSearchRequest:
    case wire::ProtocolOp::kModifyRequest:
    case wire::ProtocolOp::kAddRequest:
    case wire::ProtocolOp::kDelRequest:
    case wire::ProtocolOp::kModifyDnRequest:
    case wire::ProtocolOp::kCompareRequest:
    case wire::ProtocolOp::kExtendedRequest:
      return true;
    default:
      return false;
  }
}

}  // namespace

Listener::Listener(std::string name, std::vector<int> listen_fds, ListenerShared& shared,
                   threadpool::TaskPool& pool, std::optional<unsigned> pin)
    : name_(std::move(name)),
      listen_fds_(std::move(listen_fds)),
      shared_(shared),
      pool_(pool),
      pin_(pin),
      read_buffer_(new char[kReadChunkBytes]) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  NUMADIR_CHECK(epoll_fd_ >= 0, "epoll_create1 failed");
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  NUMADIR_CHECK(event_fd_ >= 0, "eventfd failed");
  spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kEventFdTag;
  NUMADIR_CHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &event) == 0, "epoll_ctl failed");
  for (std::size_t i = 0; i < listen_fds_.size(); ++i) {
    event.events = EPOLLIN;
    event.data.u64 = kListenTagBase + i;
    NUMADIR_CHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fds_[i], &event) == 0,
                  "epoll_ctl failed");
  }
}

Listener::~Listener() {
  NUMADIR_CHECK(!thread_.joinable(), "Listener destroyed while running");
  connections_.clear();
  if (!draining_) {
    for (const int fd : listen_fds_) {
      ::close(fd);
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
    run();
  });
  pthread_setname_np(thread_.native_handle(), name_.substr(0, 15).c_str());
}

void Listener::stop() {
  if (!thread_.joinable()) {
    return;
  }
  stop_requested_.store(true, std::memory_order_seq_cst);
  wake();
  thread_.join();
}

void Listener::notify(std::uint64_t connection_id) {
  if (!mailbox_.bounded_push(connection_id)) {
    rescan_.store(true, std::memory_order_seq_cst);
  }
  // seq_cst pairs with run(): either the listener sees the id before it sleeps, or this sees
  // sleeping_ and wakes it.
  if (sleeping_.exchange(false, std::memory_order_seq_cst)) {
    wake();
  }
}

void Listener::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(event_fd_, &one, sizeof(one));
}

void Listener::run() {
  epoll_event events[kMaxEvents];
  for (;;) {
    drain_mailbox();
    if (stop_requested_.load(std::memory_order_acquire) && !draining_) {
      draining_ = true;
      for (const int fd : listen_fds_) {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
      }
      std::vector<Connection*> open;
      for (auto& [id, connection] : connections_) {
        open.push_back(connection.get());
      }
      for (Connection* connection : open) {
        begin_close(*connection);
      }
    }
    if (draining_ && connections_.empty()) {
      return;
    }
    // Everything readable so far is read: rather than sleep while a request waits in the
    // queue, run one (then only look for new events, without waiting).
    int timeout_ms = 0;
    if (shared_.help_pool && !draining_ && pool_.try_help()) {
      threadpool::owner_add(counters_.helped);
    } else {
      sleeping_.store(true, std::memory_order_seq_cst);
      if (!mailbox_.empty() || rescan_.load(std::memory_order_seq_cst)) {
        sleeping_.store(false, std::memory_order_relaxed);
        continue;
      }
      // No timeout unless a connection waits for room in the pool's queue, or idle
      // connections are to be closed (then once a second).
      timeout_ms = -1;
      if (!stalled_.empty()) {
        timeout_ms = 1;
      } else if ((shared_.limits.idle_timeout_s != 0 && !connections_.empty()) || handshakes_ > 0) {
        timeout_ms = 1000;
      }
    }
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
    sleeping_.store(false, std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[i].data.u64;
      if (tag == kEventFdTag) {
        std::uint64_t count = 0;
        [[maybe_unused]] const ssize_t r = ::read(event_fd_, &count, sizeof(count));
      } else if (tag < kListenTagBase + listen_fds_.size()) {
        const std::size_t index = tag - kListenTagBase;
        accept_all(listen_fds_[index], index < shared_.tls_urls.size() && shared_.tls_urls[index]);
      } else {
        Connection& connection = *static_cast<Connection*>(events[i].data.ptr);
        if (connection.closing_) {
          continue;
        }
        if ((events[i].events & EPOLLOUT) != 0 && connection.flush_from_owner()) {
          connection.want_output_ = false;
          set_interest(connection);
        }
        if (connection.output_failed()) {
          begin_close(connection);
        } else if ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
          on_readable(connection);
        }
      }
    }
    graveyard_.clear();  // No event of this batch refers to them any more.
    if (shared_.limits.idle_timeout_s != 0 || handshakes_ > 0) {
      const std::int64_t now_ms = steady_ms();
      if (now_ms >= next_idle_check_ms_) {
        if (shared_.limits.idle_timeout_s != 0) {
          close_idle(now_ms);
        }
        close_stalled_handshakes(now_ms);
        next_idle_check_ms_ = now_ms + 1000;
      }
    }
    if (!stalled_.empty()) {
      std::vector<std::uint64_t> stalled;
      stalled.swap(stalled_);
      for (const std::uint64_t id : stalled) {
        on_notified(id);
      }
    }
  }
}

void Listener::accept_all(int listen_fd, bool tls) {
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
    if (shared_.connections.load(std::memory_order_relaxed) >= shared_.limits.max_connections) {
      ::close(fd);
      threadpool::owner_add(counters_.refused);
      continue;
    }
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    ConnectionInfo info;
    info.id = shared_.next_connection_id.fetch_add(1, std::memory_order_relaxed);
    info.peer = peer_name(address);
    info.local_port = local_port(fd);
    info.tls = tls;
    SSL* ssl = nullptr;
    if (tls && (shared_.tls == nullptr || (ssl = shared_.tls->new_ssl()) == nullptr)) {
      ::close(fd);
      threadpool::owner_add(counters_.refused);
      continue;
    }
    auto connection = std::make_unique<Connection>(fd, std::move(info), *this);
    if (ssl != nullptr) {
      connection->start_tls(std::make_unique<TlsChannel>(ssl));
      connection->handshake_deadline_ms_ =
          steady_ms() + std::int64_t{1000} * shared_.tls->settings().handshake_timeout_s;
      ++handshakes_;
    }
    connection->session_ = shared_.handler->open_session(connection->info());
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.ptr = connection.get();
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      continue;  // The Connection's destructor closes fd.
    }
    shared_.connections.fetch_add(1, std::memory_order_relaxed);
    threadpool::owner_add(counters_.accepted);
    threadpool::owner_add(counters_.open);
    connection->last_read_ms_ = shared_.limits.idle_timeout_s != 0 ? steady_ms() : 0;
    const std::uint64_t id = connection->id();
    connections_.emplace(id, std::move(connection));
  }
}

void Listener::on_readable(Connection& connection) {
  // Reads until EAGAIN, but no further than one PDU past what was buffered: the rest waits in
  // the socket (the kernel's buffer is the backpressure).
  for (;;) {
    if (connection.reading_paused_ ||
        connection.input_.size() > shared_.limits.max_pdu_bytes + kReadChunkBytes) {
      break;
    }
    // Into the listener's buffer, then appended: growing input_ by resize() would zero it.
    const ssize_t n = ::read(connection.fd(), read_buffer_.get(), kReadChunkBytes);
    if (n > 0) {
      if (connection.tls_started()) {
        if (!on_tls_input(connection,
                          std::string_view(read_buffer_.get(), static_cast<std::size_t>(n)))) {
          begin_close(connection);
          return;
        }
      } else {
        connection.input_.append(read_buffer_.get(), static_cast<std::size_t>(n));
      }
      threadpool::owner_add(counters_.bytes_received, static_cast<std::uint64_t>(n));
      if (shared_.limits.idle_timeout_s != 0) {
        connection.last_read_ms_ = steady_ms();
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
    begin_close(connection);
    return;
  }
  pump(connection);
}

void Listener::pump(Connection& connection) {
  for (;;) {
    if (connection.closing_) {
      begin_close(connection);  // Finishes the close once no worker holds the connection.
      return;
    }
    bool pool_full = false;
    while (!connection.held_.empty()) {
      const StartResult result = try_start(connection, connection.held_.front());
      if (result != StartResult::kStarted) {
        pool_full = result == StartResult::kPoolFull;
        break;
      }
      connection.held_.pop_front();
    }
    if (connection.held_.empty() && !route_input(connection)) {
      return;
    }
    if (connection.held_.empty()) {
      connection.unwatch_operations();
      if (connection.reading_paused_) {
        connection.reading_paused_ = false;
        set_interest(connection);
      }
      return;
    }
    if (!connection.reading_paused_) {
      connection.reading_paused_ = true;  // Backpressure until the held requests start.
      set_interest(connection);
    }
    if (pool_full) {
      stalled_.push_back(connection.id());
      return;
    }
    // Waits for a worker to release the connection, unless one did while this looked.
    const std::uint64_t ops = connection.watch_operations();
    const bool bind_waits = connection.bind_running_ && ops > 0;
    const bool front_is_bind =
        connection.held_.front()->message().op == wire::ProtocolOp::kBindRequest;
    if (bind_waits || (front_is_bind && ops > 0) ||
        ops >= shared_.limits.max_outstanding_per_connection) {
      return;
    }
  }
}

bool Listener::route_input(Connection& connection) {
  std::size_t consumed = 0;
  const std::string_view input = connection.input_;
  bool open = true;
  while (consumed < input.size()) {
    if (connection.held_.size() >= shared_.limits.max_outstanding_per_connection) {
      break;  // Enough waiting: the rest stays unread until these start.
    }
    const std::string_view rest = input.substr(consumed);
    const wire::Frame frame = wire::frame_pdu(rest, shared_.limits.max_pdu_bytes);
    if (frame.state == wire::FrameState::kNeedMore) {
      break;
    }
    if (frame.state != wire::FrameState::kComplete) {
      protocol_error(connection, frame.error);
      open = false;
      break;
    }
    auto request =
        std::make_unique<Request>(connection, *shared_.handler, rest.substr(0, frame.pdu_bytes));
    consumed += frame.pdu_bytes;
    if (const Status decoded = request->decode({}); !decoded.ok()) {
      protocol_error(connection, decoded.message());
      open = false;
      break;
    }
    const wire::LdapMessage& message = request->message();
    if (message.op == wire::ProtocolOp::kUnbindRequest ||
        message.op == wire::ProtocolOp::kAbandonRequest) {
      shared_.handler->notice(message, *connection.session_);
    }
    if (message.op == wire::ProtocolOp::kUnbindRequest) {
      connection.abandon_all();
      begin_close(connection);
      open = false;
      break;
    }
    if (message.op == wire::ProtocolOp::kAbandonRequest) {
      const std::int32_t target = message.abandon_id;
      auto held = std::find_if(connection.held_.begin(), connection.held_.end(),
                               [target](const std::unique_ptr<Request>& r) {
                                 return r->message().message_id == target;
                               });
      if (held != connection.held_.end()) {
        connection.held_.erase(held);  // Never started: it just goes.
      } else {
        connection.abandon(target);
      }
      continue;
    }
    if (message.op == wire::ProtocolOp::kExtendedRequest &&
        message.extended.name == wire::kStartTlsOid && shared_.tls != nullptr) {
      threadpool::owner_add(counters_.requests);
      start_tls(connection, message);
      if (connection.tls_started()) {
        // Whatever the client sent after the request is already TLS.
        std::string rest_bytes(input.substr(consumed));
        connection.input_.clear();
        if (!rest_bytes.empty() && !on_tls_input(connection, rest_bytes)) {
          begin_close(connection);
          return false;
        }
        return open;
      }
      continue;
    }
    if (!is_request(message.op)) {
      protocol_error(connection,
                     "a client sent " + std::string(wire::protocol_op_name(message.op)));
      open = false;
      break;
    }
    threadpool::owner_add(counters_.requests);
    if (connection.held_.empty() && try_start(connection, request) == StartResult::kStarted) {
      continue;
    }
    connection.held_.push_back(std::move(request));
  }
  connection.input_.erase(0, consumed);
  return open;
}

Listener::StartResult Listener::try_start(Connection& connection,
                                          std::unique_ptr<Request>& request) {
  const std::uint64_t ops = connection.operations();
  if (connection.bind_running_) {
    if (ops > 0) {
      return StartResult::kWait;  // Nothing runs beside a bind (RFC 4511 §4.2.1).
    }
    connection.bind_running_ = false;
  }
  const bool bind = request->message().op == wire::ProtocolOp::kBindRequest;
  if ((bind && ops > 0) || ops >= shared_.limits.max_outstanding_per_connection) {
    return StartResult::kWait;
  }
  const std::int32_t message_id = request->message().message_id;
  connection.begin_operation(message_id);
  request->start();
  std::unique_ptr<threadpool::Task> task = std::move(request);
  if (!pool_.try_submit(task)) {
    request.reset(static_cast<Request*>(task.release()));
    request->cancel_start();
    connection.cancel_operation(message_id);
    return StartResult::kPoolFull;
  }
  connection.bind_running_ = bind;
  return StartResult::kStarted;
}

void Listener::protocol_error(Connection& connection, std::string_view why) {
  wire::LdapMessage notice;
  notice.reset(wire::kUnsolicitedMessageId, wire::ProtocolOp::kExtendedResponse);
  notice.result.code = wire::ResultCode::kProtocolError;
  notice.result.diagnostic_message = why;
  notice.extended.name = wire::kNoticeOfDisconnectionOid;
  wire::BerWriter writer;
  wire::encode_message(notice, writer);
  connection.send_bytes(writer.view());
  begin_close(connection);
}

void Listener::begin_close(Connection& connection) {
  if (!connection.closing_) {
    connection.closing_ = true;
    if (connection.handshake_deadline_ms_ != 0) {
      connection.handshake_deadline_ms_ = 0;
      --handshakes_;
    }
    connection.abandon_all();
    connection.held_.clear();
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, connection.fd(), nullptr);
  }
  if (connection.watch() > 1) {
    return;  // A worker still holds it; its release brings us back here.
  }
  shared_.connections.fetch_sub(1, std::memory_order_relaxed);
  threadpool::owner_sub(counters_.open);
  auto it = connections_.find(connection.id());
  graveyard_.push_back(std::move(it->second));
  connections_.erase(it);
}

void Listener::set_interest(Connection& connection) {
  epoll_event event{};
  event.events = (connection.reading_paused_ ? 0u : static_cast<std::uint32_t>(EPOLLIN)) |
                 (connection.want_output_ ? static_cast<std::uint32_t>(EPOLLOUT) : 0u);
  event.data.ptr = &connection;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, connection.fd(), &event);
}

void Listener::drain_mailbox() {
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
  graveyard_.clear();
}

void Listener::on_notified(std::uint64_t connection_id) {
  const auto it = connections_.find(connection_id);
  if (it == connections_.end()) {
    return;  // Already closed: a late notice.
  }
  Connection& connection = *it->second;
  if (connection.closing_) {
    begin_close(connection);
    return;
  }
  if (connection.output_failed()) {
    begin_close(connection);
    return;
  }
  if (!connection.want_output_ && connection.output_blocked()) {
    connection.want_output_ = true;
    set_interest(connection);
  }
  pump(connection);
}

bool Listener::on_tls_input(Connection& connection, std::string_view cipher) {
  const TlsChannel::InputResult result = connection.tls_input(cipher);
  if (connection.handshake_deadline_ms_ != 0 && connection.tls_handshake_done()) {
    connection.handshake_deadline_ms_ = 0;
    --handshakes_;
    shared_.handler->tls_established(*connection.session_, connection.tls_peer());
  }
  if (result == TlsChannel::InputResult::kFailed) {
    std::fprintf(stderr, "numadir: conn=%llu: TLS: %s\n",
                 static_cast<unsigned long long>(connection.id()), connection.tls_error().c_str());
  }
  return result == TlsChannel::InputResult::kOk;
}

void Listener::start_tls(Connection& connection, const wire::LdapMessage& request) {
  wire::LdapMessage response;
  response.reset(request.message_id, wire::ProtocolOp::kExtendedResponse);
  response.extended.name = wire::kStartTlsOid;
  SSL* ssl = nullptr;
  if (connection.tls_started()) {
    response.result.code = wire::ResultCode::kOperationsError;
    response.result.diagnostic_message = "TLS already started";
  } else if (connection.operations() > 0 || !connection.held_.empty()) {
    response.result.code = wire::ResultCode::kOperationsError;
    response.result.diagnostic_message = "other operations are outstanding";
  } else if ((ssl = shared_.tls->new_ssl()) == nullptr) {
    response.result.code = wire::ResultCode::kUnavailable;
    response.result.diagnostic_message = "TLS is not available";
  }
  wire::BerWriter writer;
  wire::encode_message(response, writer);
  // In plaintext: TLS starts with the first byte after this response (RFC 4511 §4.14.2).
  connection.send_bytes(writer.view());
  if (ssl != nullptr) {
    connection.start_tls(std::make_unique<TlsChannel>(ssl));
    connection.handshake_deadline_ms_ =
        steady_ms() + std::int64_t{1000} * shared_.tls->settings().handshake_timeout_s;
    ++handshakes_;
  }
}

void Listener::close_stalled_handshakes(std::int64_t now_ms) {
  if (handshakes_ == 0) {
    return;
  }
  std::vector<Connection*> stalled;
  for (const auto& [id, connection] : connections_) {
    if (!connection->closing_ && connection->handshake_deadline_ms_ != 0 &&
        now_ms >= connection->handshake_deadline_ms_) {
      stalled.push_back(connection.get());
    }
  }
  for (Connection* connection : stalled) {
    begin_close(*connection);
  }
  graveyard_.clear();
}

void Listener::close_idle(std::int64_t now_ms) {
  const std::int64_t limit_ms = std::int64_t{1000} * shared_.limits.idle_timeout_s;
  std::vector<Connection*> idle;
  for (const auto& [id, connection] : connections_) {
    if (!connection->closing_ && connection->held_.empty() && connection->operations() == 0 &&
        now_ms - connection->last_read_ms_ >= limit_ms) {
      idle.push_back(connection.get());
    }
  }
  for (Connection* connection : idle) {
    begin_close(*connection);
  }
  graveyard_.clear();
}

}  // namespace numadir::listener
