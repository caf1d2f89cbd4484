#include "perf/auth_worker.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/check.h"
#include "listener/wire/framing.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "perf/detail/auth_worker.h"

namespace numadir::perf {

namespace wire = listener::wire;
using detail::kInitialInputBytes;
using detail::kNsPerMs;

void AuthWorker::open_connection(Connection& conn) {
  NUMADIR_DCHECK(conn.state == Connection::State::kClosed, "open_connection: already open");
  const ServerTarget& server = server_of(conn);
  conn.fd = ::socket(server.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (conn.fd < 0) {
    // Out of descriptors or buffers: counted like a refused connect, and retried later.
    drop(conn, AuthError::kConnectFailed, kConnectRetryMs * kNsPerMs);
    return;
  }
  const int one = 1;
  setsockopt(conn.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  conn.next_id = 1;
  conn.pending_id = 0;
  conn.bound = false;
  conn.input.clear();
  conn.output.clear();
  conn.output_sent = 0;
  conn.input.allocate_once(kInitialInputBytes);
  if (timeout_ns_ > 0) {
    routes_[conn.tag_base].deadline_ns = monotonic_ns() + timeout_ns_;  // Until ready.
  }
  const int rc =
      ::connect(conn.fd, reinterpret_cast<const sockaddr*>(&server.address), server.address_len);
  if (rc != 0 && errno != EINPROGRESS) {
    ::close(conn.fd);
    conn.fd = -1;
    drop(conn, AuthError::kConnectFailed, kConnectRetryMs * kNsPerMs);
    return;
  }
  conn.state = Connection::State::kConnecting;
  conn.want_write = true;
  ++conn.generation;
  epoll_event event{EPOLLIN | EPOLLOUT, {.u64 = event_tag(conn)}};
  NUMADIR_CHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, conn.fd, &event) == 0,
                "epoll_ctl ADD failed for a new socket");
}

void AuthWorker::close_connection(Connection& conn, bool send_unbind) {
  if (conn.fd < 0) {
    return;
  }
  // Best effort, as clients do. Over TLS only when no write waits to be retried (OpenSSL wants
  // the same bytes again), followed by a close_notify.
  const bool graceful = send_unbind && conn.state == Connection::State::kOpen &&
                        (conn.ssl == nullptr || conn.output_sent == conn.output.size());
  if (graceful) {
    wire::LdapMessage& unbind = scratch_->request;
    unbind.reset(conn.next_id, wire::ProtocolOp::kUnbindRequest);
    conn.output.clear();
    wire::encode_message(unbind, conn.output);
    if (conn.ssl != nullptr) {
      if (SSL_write(conn.ssl, conn.output.view().data(), static_cast<int>(conn.output.size())) >
          0) {
        SSL_shutdown(conn.ssl);
      }
    } else {
      [[maybe_unused]] const ssize_t n =
          ::send(conn.fd, conn.output.view().data(), conn.output.size(), MSG_NOSIGNAL);
    }
  }
  if (conn.ssl != nullptr) {
    SSL_free(conn.ssl);
    conn.ssl = nullptr;
    ERR_clear_error();  // Whatever a failed call left for this thread's next SSL call.
  }
  ::close(conn.fd);  // Also removes it from the epoll set.
  conn.fd = -1;
  conn.state = Connection::State::kClosed;
  conn.want_write = false;
  conn.tls_want_write = false;
  conn.write_wants_read = false;
  conn.pending_id = 0;
}

std::uint64_t AuthWorker::event_tag(const Connection& conn) {
  return static_cast<std::uint64_t>(conn.generation) << 32 | conn.tag_base;
}

void AuthWorker::on_event(Connection& conn, std::uint32_t events) {
  if (conn.state == Connection::State::kConnecting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) {
      on_connected(conn);
    }
    return;
  }
  if (conn.state == Connection::State::kHandshaking) {
    continue_handshake(conn);
    return;
  }
  // Over TLS a write may wait for data and a read for room (OpenSSL's WANT_READ / WANT_WRITE).
  const bool readable = (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0;
  const bool writable = (events & EPOLLOUT) != 0;
  if (writable || (readable && conn.write_wants_read)) {
    flush(conn);
    if (conn.fd < 0) {
      return;
    }
  }
  if (readable || (writable && conn.tls_want_write)) {
    on_readable(conn);
  }
}

void AuthWorker::on_connected(Connection& conn) {
  int error = 0;
  socklen_t length = sizeof error;
  if (getsockopt(conn.fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0) {
    close_connection(conn, /*send_unbind=*/false);
    drop(conn, AuthError::kConnectFailed, kConnectRetryMs * kNsPerMs);
    return;
  }
  if (server_of(conn).tls != nullptr) {
    start_tls(conn);
    return;
  }
  connection_ready(conn);
}

void AuthWorker::connection_ready(Connection& conn) {
  conn.state = Connection::State::kOpen;
  routes_[conn.tag_base].failures_in_row = 0;
  update_events(conn);
  Slot& slot = *conn.slot;
  if (slot.active && !slot.request_sent && &phase_connection(slot) == &conn) {
    advance(slot);
  }
}

void AuthWorker::update_events(Connection& conn) {
  const bool want_write = conn.output_sent < conn.output.size() || conn.tls_want_write;
  if (want_write == conn.want_write) {
    return;
  }
  conn.want_write = want_write;
  epoll_event event{EPOLLIN | (want_write ? EPOLLOUT : 0u), {.u64 = event_tag(conn)}};
  NUMADIR_CHECK(epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, conn.fd, &event) == 0,
                "epoll_ctl MOD failed for an open socket");
}

void AuthWorker::flush(Connection& conn) {
  while (conn.output_sent < conn.output.size()) {
    const std::string_view rest = conn.output.view().substr(conn.output_sent);
    if (conn.ssl != nullptr) {
      const int n = SSL_write(conn.ssl, rest.data(), static_cast<int>(rest.size()));
      if (n > 0) {
        conn.output_sent += static_cast<std::size_t>(n);
        conn.write_wants_read = false;
        continue;
      }
      const int error = SSL_get_error(conn.ssl, n);
      if (error == SSL_ERROR_WANT_WRITE) {
        break;
      }
      if (error == SSL_ERROR_WANT_READ) {
        conn.write_wants_read = true;
        break;
      }
      drop(conn, AuthError::kConnectionDropped, 0);
      return;
    }
    const ssize_t n = ::send(conn.fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        break;
      }
      if (errno == EINTR) {
        continue;
      }
      drop(conn, AuthError::kConnectionDropped, 0);
      return;
    }
    conn.output_sent += static_cast<std::size_t>(n);
  }
  if (conn.output_sent == conn.output.size()) {
    conn.output.clear();
    conn.output_sent = 0;
  }
  update_events(conn);
}

ssize_t AuthWorker::read_some(Connection& conn) {
  char* const into = conn.input.free_space();
  const std::size_t room = conn.input.free_bytes();
  if (conn.ssl != nullptr) {
    const int n =
        SSL_read(conn.ssl, into, static_cast<int>(std::min<std::size_t>(room, INT32_MAX)));
    if (n > 0) {
      return n;
    }
    const int error = SSL_get_error(conn.ssl, n);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      const bool want_write = error == SSL_ERROR_WANT_WRITE;
      if (want_write != conn.tls_want_write) {
        conn.tls_want_write = want_write;
        update_events(conn);
      }
      return 0;
    }
    // A TLS alert (in TLS 1.3 also a client certificate the server refused after the handshake)
    // or a bad record is a TLS failure; a close_notify or a reset, a dropped connection.
    drop(conn, error == SSL_ERROR_SSL ? AuthError::kTlsFailed : AuthError::kConnectionDropped, 0);
    return -1;
  }
  const ssize_t n = ::recv(conn.fd, into, room, 0);
  if (n > 0) {
    return n;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    return 0;
  }
  drop(conn, AuthError::kConnectionDropped, 0);
  return -1;
}

void AuthWorker::on_readable(Connection& conn) {
  const std::uint32_t generation = conn.generation;
  for (;;) {
    conn.input.make_room();
    const ssize_t n = read_some(conn);
    if (n <= 0) {
      return;
    }
    conn.input.commit(static_cast<std::size_t>(n));
    while (conn.fd >= 0 && !conn.input.empty()) {
      const std::string_view buffered = conn.input.unconsumed();
      const wire::Frame frame = wire::frame_pdu(buffered);
      if (frame.state == wire::FrameState::kNeedMore) {
        break;
      }
      if (frame.state != wire::FrameState::kComplete ||
          !wire::decode_message(buffered.substr(0, frame.pdu_bytes), scratch_->response).ok()) {
        drop(conn, AuthError::kProtocolError, 0);
        return;
      }
      conn.input.consume(frame.pdu_bytes);
      on_message(conn);  // May close (or reopen) conn; the response's views die here.
    }
    // OpenSSL may hold decrypted bytes of a record that did not fit: epoll cannot see those.
    // Read on while the connection is the same one, still open.
    if (conn.ssl == nullptr || conn.generation != generation ||
        conn.state != Connection::State::kOpen || SSL_pending(conn.ssl) == 0) {
      return;
    }
  }
}
}  // namespace numadir::perf
