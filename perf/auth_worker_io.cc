#include "perf/auth_worker.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/check.h"
#include "listener/wire/framing.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "perf/detail/auth_slot.h"

namespace numadir::perf {

namespace wire = listener::wire;
using detail::kInitialInputBytes;
using detail::kNsPerMs;

void AuthWorker::open_connection(Connection& conn) {
  NUMADIR_DCHECK(conn.state == Connection::State::kClosed, "open_connection: already open");
  conn.fd = ::socket(config_.address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (conn.fd < 0) {
    // Out of descriptors or buffers: counted like a refused connect, and retried later.
    drop(conn, AuthError::kConnectFailed, kConnectRetryMs * kNsPerMs);
    return;
  }
  const int one = 1;
  setsockopt(conn.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  conn.next_id = 1;
  conn.pending_id = 0;
  conn.input_begin = conn.input_end = 0;
  conn.output.clear();
  conn.output_sent = 0;
  if (!conn.input) {
    conn.input = std::make_unique<char[]>(kInitialInputBytes);
    conn.input_capacity = kInitialInputBytes;
  }
  const int rc =
      ::connect(conn.fd, reinterpret_cast<const sockaddr*>(&config_.address), config_.address_len);
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
  if (send_unbind && conn.state == Connection::State::kOpen) {
    // Best effort, as clients do; the buffer is empty unless a write is pending.
    wire::LdapMessage& unbind = scratch_->request;
    unbind.reset(conn.next_id, wire::ProtocolOp::kUnbindRequest);
    conn.output.clear();
    wire::encode_message(unbind, conn.output);
    [[maybe_unused]] const ssize_t n =
        ::send(conn.fd, conn.output.view().data(), conn.output.size(), MSG_NOSIGNAL);
  }
  ::close(conn.fd);  // Also removes it from the epoll set.
  conn.fd = -1;
  conn.state = Connection::State::kClosed;
  conn.want_write = false;
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
  if ((events & EPOLLOUT) != 0) {
    flush(conn);
    if (conn.fd < 0) {
      return;
    }
  }
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) {
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
  conn.state = Connection::State::kOpen;
  update_events(conn);
  Slot& slot = *conn.slot;
  if (slot.active && !slot.request_sent && &phase_connection(slot) == &conn) {
    advance(slot);
  }
}

void AuthWorker::update_events(Connection& conn) {
  const bool want_write = conn.output_sent < conn.output.size();
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

void AuthWorker::on_readable(Connection& conn) {
  if (conn.input_end == conn.input_capacity) {
    // Move the partial PDU to the front; grow only when it fills the whole buffer.
    const std::size_t kept = conn.input_end - conn.input_begin;
    if (conn.input_begin > 0) {
      std::memmove(conn.input.get(), conn.input.get() + conn.input_begin, kept);
    } else {
      auto bigger = std::make_unique<char[]>(conn.input_capacity * 2);
      std::memcpy(bigger.get(), conn.input.get(), kept);
      conn.input = std::move(bigger);
      conn.input_capacity *= 2;
    }
    conn.input_begin = 0;
    conn.input_end = kept;
  }
  const ssize_t n =
      ::recv(conn.fd, conn.input.get() + conn.input_end, conn.input_capacity - conn.input_end, 0);
  if (n <= 0) {
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return;
    }
    drop(conn, AuthError::kConnectionDropped, 0);
    return;
  }
  conn.input_end += static_cast<std::size_t>(n);
  while (conn.fd >= 0 && conn.input_begin < conn.input_end) {
    const std::string_view buffered(conn.input.get() + conn.input_begin,
                                    conn.input_end - conn.input_begin);
    const wire::Frame frame = wire::frame_pdu(buffered);
    if (frame.state == wire::FrameState::kNeedMore) {
      break;
    }
    if (frame.state != wire::FrameState::kComplete ||
        !wire::decode_message(buffered.substr(0, frame.pdu_bytes), scratch_->response).ok()) {
      drop(conn, AuthError::kProtocolError, 0);
      return;
    }
    conn.input_begin += frame.pdu_bytes;
    on_message(conn);  // May close conn; the response's views die with this iteration.
  }
  if (conn.input_begin == conn.input_end) {
    conn.input_begin = conn.input_end = 0;
  }
}
}  // namespace numadir::perf
