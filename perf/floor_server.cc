#include "perf/floor_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/check.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "perf/detail/input_buffer.h"

namespace numadir::perf {

namespace wire = listener::wire;

namespace {

constexpr std::size_t kFloorInputBytes = 16 * 1024;
// Past this much unsent output a connection is not read until the client catches up.
constexpr std::size_t kMaxPendingOutputBytes = 1024 * 1024;
constexpr int kEventsPerWait = 256;

Status io_error(const std::string& what) {
  return status_error(StatusCode::kIo, what + ": " + std::strerror(errno));
}

struct Connection {
  int fd = -1;
  bool want_write = false;
  bool reading = true;
  detail::InputBuffer input;  // Allocated when the connection is accepted.
  wire::BerWriter output;
  std::size_t output_sent = 0;
};

}  // namespace

struct FloorServer::Loop {
  int listen_fd = -1;
  int epoll_fd = -1;
  std::vector<std::unique_ptr<Connection>> connections;  // Indexed by fd. Owner: the thread.
  wire::LdapMessage request;
  wire::LdapMessage response;
  std::string dn;

  ~Loop() {
    for (auto& conn : connections) {
      if (conn && conn->fd >= 0) {
        ::close(conn->fd);
      }
    }
    if (epoll_fd >= 0) {
      ::close(epoll_fd);
    }
    if (listen_fd >= 0) {
      ::close(listen_fd);
    }
  }

  void accept_all();
  void on_event(Connection& conn, std::uint32_t events);
  void close_connection(Connection& conn);
  // Returns: false if the connection was closed.
  bool read_and_answer(Connection& conn);
  // Appends the answer to the request now in `request`. Returns: false to close after flushing.
  bool answer(Connection& conn);
  // Returns: false if the connection was closed.
  bool flush(Connection& conn);
  void update_events(Connection& conn);
};

Result<std::unique_ptr<FloorServer>> FloorServer::open(const FloorServerConfig& config) {
  if (config.threads < 1) {
    return invalid_argument("--threads must be at least 1");
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(config.port);
  if (inet_pton(AF_INET, config.host.c_str(), &address.sin_addr) != 1) {
    return invalid_argument("'" + config.host + "' is not an IPv4 address");
  }
  std::unique_ptr<FloorServer> server(new FloorServer());
  server->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (server->stop_fd_ < 0) {
    return io_error("eventfd");
  }
  for (int i = 0; i < config.threads; ++i) {
    auto loop = std::make_unique<Loop>();
    loop->listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (loop->listen_fd < 0) {
      return io_error("socket");
    }
    const int one = 1;
    setsockopt(loop->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (setsockopt(loop->listen_fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
      return io_error("SO_REUSEPORT");
    }
    // The first socket may have let the kernel pick the port; the others share it.
    address.sin_port = htons(i == 0 ? config.port : server->port_);
    if (::bind(loop->listen_fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      return io_error("bind " + config.host + ":" + std::to_string(ntohs(address.sin_port)));
    }
    if (::listen(loop->listen_fd, SOMAXCONN) != 0) {
      return io_error("listen");
    }
    if (i == 0) {
      sockaddr_in bound{};
      socklen_t length = sizeof bound;
      if (getsockname(loop->listen_fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
        return io_error("getsockname");
      }
      server->port_ = ntohs(bound.sin_port);
    }
    loop->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (loop->epoll_fd < 0) {
      return io_error("epoll_create1");
    }
    epoll_event listen_event{EPOLLIN, {.fd = loop->listen_fd}};
    epoll_event stop_event{EPOLLIN, {.fd = server->stop_fd_}};
    if (epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, loop->listen_fd, &listen_event) != 0 ||
        epoll_ctl(loop->epoll_fd, EPOLL_CTL_ADD, server->stop_fd_, &stop_event) != 0) {
      return io_error("epoll_ctl");
    }
    server->loops_.push_back(std::move(loop));
  }
  return server;
}

FloorServer::~FloorServer() {
  stop();
  loops_.clear();
  if (stop_fd_ >= 0) {
    ::close(stop_fd_);
  }
}

void FloorServer::start() {
  NUMADIR_CHECK(threads_.empty(), "FloorServer::start called twice");
  for (auto& loop : loops_) {
    Loop* owned = loop.get();
    threads_.emplace_back([owned, stop_fd = stop_fd_] { run_loop(*owned, stop_fd); });
  }
}

void FloorServer::stop() {
  if (threads_.empty()) {
    return;
  }
  const std::uint64_t one = 1;
  NUMADIR_CHECK(::write(stop_fd_, &one, sizeof one) == sizeof one, "eventfd write failed");
  for (std::thread& thread : threads_) {
    thread.join();
  }
  threads_.clear();
}

void FloorServer::run_loop(Loop& loop, int stop_fd) {
  epoll_event events[kEventsPerWait];
  for (;;) {
    const int count = epoll_wait(loop.epoll_fd, events, kEventsPerWait, -1);
    if (count < 0) {
      NUMADIR_CHECK(errno == EINTR, "epoll_wait failed with valid arguments");
      continue;
    }
    for (int i = 0; i < count; ++i) {
      const int fd = events[i].data.fd;
      if (fd == stop_fd) {
        return;  // The eventfd stays readable, so every loop sees it.
      }
      if (fd == loop.listen_fd) {
        loop.accept_all();
        continue;
      }
      if (static_cast<std::size_t>(fd) < loop.connections.size() && loop.connections[fd]) {
        loop.on_event(*loop.connections[fd], events[i].events);
      }
    }
  }
}

void FloorServer::Loop::accept_all() {
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // EAGAIN: all taken. Anything else (EMFILE, a connection reset before accept): try
      // again on the next readiness; the listener does not die for it.
      return;
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connections.size() <= static_cast<std::size_t>(fd)) {
      connections.resize(static_cast<std::size_t>(fd) + 1);
    }
    auto conn = std::make_unique<Connection>();
    conn->fd = fd;
    conn->input.allocate_once(kFloorInputBytes);
    epoll_event event{EPOLLIN, {.fd = fd}};
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
      ::close(fd);
      continue;
    }
    connections[fd] = std::move(conn);
  }
}

void FloorServer::Loop::close_connection(Connection& conn) {
  const int fd = conn.fd;
  ::close(fd);
  connections[fd].reset();  // Destroys conn.
}

void FloorServer::Loop::on_event(Connection& conn, std::uint32_t events) {
  if ((events & EPOLLOUT) != 0 && !flush(conn)) {
    return;
  }
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0 && conn.reading) {
    read_and_answer(conn);
  }
}

bool FloorServer::Loop::read_and_answer(Connection& conn) {
  conn.input.make_room();
  const ssize_t n = ::recv(conn.fd, conn.input.free_space(), conn.input.free_bytes(), 0);
  if (n <= 0) {
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return true;
    }
    close_connection(conn);
    return false;
  }
  conn.input.commit(static_cast<std::size_t>(n));
  bool keep_open = true;
  while (keep_open && !conn.input.empty()) {
    const std::string_view buffered = conn.input.unconsumed();
    const wire::Frame frame = wire::frame_pdu(buffered);
    if (frame.state == wire::FrameState::kNeedMore) {
      break;
    }
    if (frame.state != wire::FrameState::kComplete ||
        !wire::decode_message(buffered.substr(0, frame.pdu_bytes), request).ok()) {
      response.reset(wire::kUnsolicitedMessageId, wire::ProtocolOp::kExtendedResponse);
      response.result.code = wire::ResultCode::kProtocolError;
      response.result.diagnostic_message = "floor-server: malformed PDU";
      response.extended.name = wire::kNoticeOfDisconnectionOid;
      wire::encode_message(response, conn.output);
      keep_open = false;
      break;
    }
    conn.input.consume(frame.pdu_bytes);
    keep_open = answer(conn);
  }
  if (!flush(conn)) {
    return false;
  }
  if (!keep_open) {
    close_connection(conn);
    return false;
  }
  return true;
}

bool FloorServer::Loop::answer(Connection& conn) {
  const std::int32_t id = request.message_id;
  switch (request.op) {
    case wire::ProtocolOp::kSearchRequest: {
      const schema::Filter& filter = request.search_request.filter;
      dn.assign("uid=");
      if (!filter.empty() && filter.node(0).kind == schema::FilterKind::kEquality) {
        dn.append(filter.node(0).value);  // Canned: not DN-escaped.
      } else {
        dn.append("floor");
      }
      if (!request.search_request.base_object.empty()) {
        dn.push_back(',');
        dn.append(request.search_request.base_object);
      }
      response.reset(id, wire::ProtocolOp::kSearchResultEntry);
      response.search_entry.object_name = dn;
      wire::encode_message(response, conn.output);
      response.reset(id, wire::ProtocolOp::kSearchResultDone);
      wire::encode_message(response, conn.output);
      return true;
    }
    case wire::ProtocolOp::kBindRequest:
      response.reset(id, wire::ProtocolOp::kBindResponse);
      wire::encode_message(response, conn.output);
      return true;
    case wire::ProtocolOp::kUnbindRequest:
      return false;
    case wire::ProtocolOp::kAbandonRequest:
      return true;
    case wire::ProtocolOp::kModifyRequest:
    case wire::ProtocolOp::kAddRequest:
    case wire::ProtocolOp::kDelRequest:
    case wire::ProtocolOp::kModifyDnRequest:
    case wire::ProtocolOp::kCompareRequest:
    case wire::ProtocolOp::kExtendedRequest:
      // Each of these responses is [APPLICATION request + 1].
      response.reset(id, static_cast<wire::ProtocolOp>(static_cast<int>(request.op) + 1));
      response.result.code = wire::ResultCode::kUnwillingToPerform;
      response.result.diagnostic_message = "floor-server answers only search and bind";
      wire::encode_message(response, conn.output);
      return true;
    default:
      // A response sent to a server has no answer; a protocol error, but a canned server
      // need not care.
      return true;
  }
}

bool FloorServer::Loop::flush(Connection& conn) {
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
      close_connection(conn);
      return false;
    }
    conn.output_sent += static_cast<std::size_t>(n);
  }
  if (conn.output_sent == conn.output.size()) {
    conn.output.clear();
    conn.output_sent = 0;
  }
  update_events(conn);
  return true;
}

void FloorServer::Loop::update_events(Connection& conn) {
  const std::size_t pending = conn.output.size() - conn.output_sent;
  const bool want_write = pending > 0;
  const bool reading = pending < kMaxPendingOutputBytes;  // Backpressure.
  if (want_write == conn.want_write && reading == conn.reading) {
    return;
  }
  conn.want_write = want_write;
  conn.reading = reading;
  epoll_event event{(reading ? EPOLLIN : 0u) | (want_write ? EPOLLOUT : 0u), {.fd = conn.fd}};
  NUMADIR_CHECK(epoll_ctl(epoll_fd, EPOLL_CTL_MOD, conn.fd, &event) == 0,
                "epoll_ctl MOD failed for an open socket");
}

}  // namespace numadir::perf
