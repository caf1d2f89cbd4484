// server/client/ldap_connection.cc: see ldap_connection.h.
#include "server/client/ldap_connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "server/client/tls_client_context.h"

namespace numadir::server {

namespace wire = listener::wire;

namespace {

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t deadline_after(int timeout_ms) { return timeout_ms < 0 ? -1 : now_ms() + timeout_ms; }

// The one place errno becomes text in the client connection.
std::string errno_text(int err) { return std::strerror(err); }

// Connects non-blocking socket `fd` to `address` by `deadline_ms`.
// Returns: "" on success, else why not.
std::string connect_by(int fd, const addrinfo& address, std::int64_t deadline_ms, int timeout_ms) {
  if (::connect(fd, address.ai_addr, address.ai_addrlen) == 0) {
    return std::string();
  }
  if (errno != EINPROGRESS) {
    return errno_text(errno);
  }
  for (;;) {
    const std::int64_t left = deadline_ms - now_ms();
    if (left <= 0) {
      return "no connection within " + std::to_string(timeout_ms) + " ms";
    }
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready < 0) {
      return "poll: " + errno_text(errno);
    }
    if (ready == 0) {
      continue;  // The deadline check above ends it.
    }
    int error = 0;
    socklen_t size = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) {
      return errno_text(errno);
    }
    return error == 0 ? std::string() : errno_text(error);
  }
}

// While alive, a SIGPIPE raised by this thread is swallowed. OpenSSL writes to the socket with
// send() without MSG_NOSIGNAL (a close_notify or an alert to a server that has gone, a write
// racing its close), and a process that did not ignore SIGPIPE (check-config, tests) would die
// of it: the signal is blocked for this thread around each TLS call, and one that came is taken
// off the thread's pending set before the mask is restored. A SIGPIPE already pending before is
// left as it was.
class SigpipeSuppressed {
 public:
  SigpipeSuppressed() {
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1) {
      return;
    }
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe, &previous_) == 0;
  }
  ~SigpipeSuppressed() {
    if (!blocked_) {
      return;
    }
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      const timespec now{0, 0};
      while (sigtimedwait(&pipe, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeSuppressed(const SigpipeSuppressed&) = delete;
  SigpipeSuppressed& operator=(const SigpipeSuppressed&) = delete;

 private:
  bool blocked_ = false;
  sigset_t previous_{};
};

void set_keepalive(int fd, const TcpKeepalive& keepalive) {
  const int on = 1;
  const int idle = static_cast<int>(keepalive.idle_s);
  const int probes = static_cast<int>(keepalive.probes);
  const int interval = static_cast<int>(keepalive.interval_s);
  // Values within Linux's bounds (parse_keepalive checks them): the calls cannot fail.
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
}

// Connects to the Unix-domain socket at `path` (an ldapi:// URL's) by `deadline_ms`.
// Returns: the connected non-blocking socket, or why not.
Result<int> connect_local(const std::string& path, std::int64_t deadline_ms, int timeout_ms) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    return Status(StatusCode::kInvalidArgument,
                  "the socket path does not fit a Unix socket address");  // parse_ldap_url's.
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    return Status(StatusCode::kIo, errno_text(errno));
  }
  for (;;) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
      return fd;
    }
    const int error = errno;
    if (error == EINTR) {
      continue;
    }
    if (error == EAGAIN && now_ms() < deadline_ms) {
      // A Unix socket's full backlog: connect() cannot be waited for with poll(), so try again
      // shortly, within the caller's timeout.
      ::poll(nullptr, 0, 10);
      continue;
    }
    ::close(fd);
    if (error == EAGAIN) {
      return Status(StatusCode::kIo, "no connection within " + std::to_string(timeout_ms) +
                                         " ms (the server accepts none: " + errno_text(error) +
                                         ")");
    }
    if (error == ENOENT) {
      return Status(StatusCode::kNotFound, "no such socket (" + errno_text(error) + ")");
    }
    struct stat st {};
    if (error == ECONNREFUSED && ::stat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      // Linux refuses a connection to a file that is not a socket with ECONNREFUSED.
      return Status(StatusCode::kIo, "not a socket (" + errno_text(error) + ")");
    }
    return Status(StatusCode::kIo, errno_text(error));
  }
}

}  // namespace

Result<std::unique_ptr<LdapConnection>> LdapConnection::connect(const LdapUrl& url,
                                                                const LdapConnectOptions& options) {
  if (url.is_local()) {
    // No TCP_NODELAY and no keepalive: a Unix socket has neither (nor needs them).
    Result<int> fd =
        connect_local(url.path, now_ms() + options.connect_timeout_ms, options.connect_timeout_ms);
    if (!fd.ok()) {
      return fd.status();
    }
    return std::unique_ptr<LdapConnection>(new LdapConnection(*fd, options));
  }
  const std::string host = url.host.empty() ? "127.0.0.1" : url.host;
  const std::string port = std::to_string(url.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  // getaddrinfo has no timeout of its own: the resolver's (resolv.conf) applies.
  if (const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status(StatusCode::kIo, "host \"" + host + "\" does not resolve: " + gai_strerror(rc));
  }
  const std::int64_t deadline = now_ms() + options.connect_timeout_ms;
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* address = found; address != nullptr && fd < 0; address = address->ai_next) {
    fd = ::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                  address->ai_protocol);
    if (fd < 0) {
      last_error = errno_text(errno);
      continue;
    }
    last_error = connect_by(fd, *address, deadline, options.connect_timeout_ms);
    if (!last_error.empty()) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return Status(StatusCode::kIo, last_error);
  }
  const int on = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  if (options.keepalive.enabled()) {
    set_keepalive(fd, options.keepalive);
  }
  return std::unique_ptr<LdapConnection>(new LdapConnection(fd, options));
}

LdapConnection::~LdapConnection() {
  SSL_free(ssl_);
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

void LdapConnection::close() {
  if (fd_ < 0) {
    return;
  }
  if (ssl_ != nullptr && usable_) {
    const SigpipeSuppressed quiet;
    // One try, non-blocking: the close_notify goes if the socket takes it; the server's answer
    // is not awaited (RFC 8446 §6.1 lets a closing side leave without it).
    SSL_shutdown(ssl_);
    ERR_clear_error();
  }
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
  fd_ = -1;
  usable_ = false;
}

Status LdapConnection::fail(StatusCode code, std::string message) {
  usable_ = false;
  return Status(code, std::move(message));
}

std::int32_t LdapConnection::next_message_id() {
  const std::int32_t id = next_id_;
  next_id_ = next_id_ == INT32_MAX ? 1 : next_id_ + 1;
  return id;
}

std::string LdapConnection::tls_version() const {
  return ssl_ != nullptr ? std::string(SSL_get_version(ssl_)) : std::string();
}

LdapConnection::Io LdapConnection::wait(short events, std::int64_t deadline_ms,
                                        std::string& error) {
  for (;;) {
    int timeout = -1;
    if (deadline_ms >= 0) {
      const std::int64_t left = deadline_ms - now_ms();
      if (left <= 0) {
        return Io::kTimeout;
      }
      timeout = static_cast<int>(left);
    }
    pollfd p{fd_, events, 0};
    const int ready = ::poll(&p, 1, timeout);
    if (ready < 0 && errno == EINTR) {
      continue;
    }
    if (ready < 0) {
      error = "poll: " + errno_text(errno);
      return Io::kFailed;
    }
    if (ready > 0) {
      return Io::kOk;  // Readable, writable, or an error / hang-up the next call reports.
    }
  }
}

Status LdapConnection::start_tls(const TlsClientContext& tls, const std::string& host,
                                 int timeout_ms) {
  if (!usable() || ssl_ != nullptr || !buffer_.empty()) {
    return internal_error(
        "start_tls on a connection that is closed, has TLS already or has unread input");
  }
  Result<SSL*> ssl = tls.new_ssl(fd_, host);
  if (!ssl.ok()) {
    usable_ = false;
    return ssl.status();
  }
  ssl_ = *ssl;
  const std::int64_t deadline = deadline_after(timeout_ms);
  const SigpipeSuppressed quiet;
  for (;;) {
    ERR_clear_error();
    errno = 0;
    const int rc = SSL_connect(ssl_);
    if (rc == 1) {
      return Status();
    }
    const int error = SSL_get_error(ssl_, rc);
    std::string reason;
    Io io = Io::kFailed;
    if (error == SSL_ERROR_WANT_READ) {
      io = wait(POLLIN, deadline, reason);
    } else if (error == SSL_ERROR_WANT_WRITE) {
      io = wait(POLLOUT, deadline, reason);
    } else {
      const std::string fallback = error == SSL_ERROR_SYSCALL && errno != 0
                                       ? errno_text(errno)
                                       : std::string("the server closed the connection");
      return fail(StatusCode::kIo, describe_handshake_failure(ssl_, fallback));
    }
    if (io == Io::kTimeout) {
      return fail(StatusCode::kIo, "no TLS handshake within " + std::to_string(timeout_ms) + " ms");
    }
    if (io != Io::kOk) {
      return fail(StatusCode::kIo, "TLS handshake failed: " + reason);
    }
  }
}

LdapConnection::Io LdapConnection::read_more(std::int64_t deadline_ms, std::string& error) {
  char chunk[16384];
  for (;;) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      errno = 0;
      int n = 0;
      {
        const SigpipeSuppressed quiet;  // SSL_read may write (an alert, a key update's answer).
        n = SSL_read(ssl_, chunk, sizeof chunk);
      }
      if (n > 0) {
        buffer_.append(chunk, static_cast<std::size_t>(n));
        return Io::kOk;
      }
      const int ssl_error = SSL_get_error(ssl_, n);
      Io io = Io::kFailed;
      if (ssl_error == SSL_ERROR_WANT_READ) {
        io = wait(POLLIN, deadline_ms, error);
      } else if (ssl_error == SSL_ERROR_WANT_WRITE) {
        io = wait(POLLOUT, deadline_ms, error);  // A key update's answer waits for room.
      } else if (ssl_error == SSL_ERROR_ZERO_RETURN ||
                 (ssl_error == SSL_ERROR_SYSCALL && errno == 0)) {
        ERR_clear_error();
        return Io::kClosed;
      } else {
        error = ssl_error == SSL_ERROR_SYSCALL ? "receive: " + errno_text(errno)
                                               : "TLS: " + take_openssl_errors("failed");
        return Io::kFailed;
      }
      if (io != Io::kOk) {
        return io;
      }
      continue;
    }
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return Io::kOk;
    }
    if (n == 0) {
      return Io::kClosed;
    }
    if (errno == EINTR) {
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      error = "receive: " + errno_text(errno);
      return Io::kFailed;
    }
    if (const Io io = wait(POLLIN, deadline_ms, error); io != Io::kOk) {
      return io;
    }
  }
}

LdapConnection::Io LdapConnection::write_all(std::string_view bytes, std::int64_t deadline_ms,
                                             std::string& error) {
  while (!bytes.empty()) {
    short want = POLLOUT;
    if (ssl_ != nullptr) {
      ERR_clear_error();
      errno = 0;
      int n = 0;
      {
        const SigpipeSuppressed quiet;
        n = SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()));
      }
      if (n > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      const int ssl_error = SSL_get_error(ssl_, n);
      if (ssl_error == SSL_ERROR_WANT_READ) {
        want = POLLIN;
      } else if (ssl_error != SSL_ERROR_WANT_WRITE) {
        error = ssl_error == SSL_ERROR_SYSCALL && errno != 0
                    ? "send: " + errno_text(errno)
                    : "TLS: " + take_openssl_errors("the server closed the connection");
        return Io::kFailed;
      }
    } else {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        bytes.remove_prefix(static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        error = "send: " + errno_text(errno);
        return Io::kFailed;
      }
    }
    if (const Io io = wait(want, deadline_ms, error); io != Io::kOk) {
      return io;
    }
  }
  return Io::kOk;
}

Status LdapConnection::send(const wire::LdapMessage& message) {
  if (!usable()) {
    return Status(StatusCode::kIo, "the connection is closed");
  }
  writer_.clear();
  wire::encode_message(message, writer_);
  std::string error;
  switch (write_all(writer_.view(), deadline_after(options_.send_timeout_ms), error)) {
    case Io::kOk:
      return Status();
    case Io::kTimeout:
      return fail(StatusCode::kIo, "the server accepted nothing within " +
                                       std::to_string(options_.send_timeout_ms) + " ms");
    case Io::kClosed:
      return fail(StatusCode::kIo, "the server closed the connection");
    case Io::kFailed:
      break;
  }
  return fail(StatusCode::kIo, error);
}

Status LdapConnection::receive(wire::LdapMessage& message, int timeout_ms) {
  if (!usable()) {
    return Status(StatusCode::kIo, "the connection is closed");
  }
  const std::int64_t deadline = deadline_after(timeout_ms);
  for (;;) {
    const wire::Frame frame = wire::frame_pdu(buffer_, options_.max_pdu_bytes);
    switch (frame.state) {
      case wire::FrameState::kComplete: {
        pdu_.assign(buffer_, 0, frame.pdu_bytes);
        buffer_.erase(0, frame.pdu_bytes);
        if (Status decoded = wire::decode_message(pdu_, message); !decoded.ok()) {
          return fail(StatusCode::kMalformed, decoded.message());
        }
        if (message.message_id == wire::kUnsolicitedMessageId &&
            message.op == wire::ProtocolOp::kExtendedResponse &&
            message.extended.name == wire::kNoticeOfDisconnectionOid) {
          usable_ = false;  // RFC 4511 §4.4.1: the server closes the connection after it.
        }
        return Status();
      }
      case wire::FrameState::kTooLarge:
        return fail(StatusCode::kLimitExceeded,
                    "the server sent a message of " + std::to_string(frame.pdu_bytes) +
                        " bytes, over the limit of " + std::to_string(options_.max_pdu_bytes));
      case wire::FrameState::kMalformed:
        return fail(StatusCode::kMalformed,
                    std::string("the server sent something that is not an LDAP message: ") +
                        (frame.error != nullptr ? frame.error : "bad framing"));
      case wire::FrameState::kNeedMore:
        break;
    }
    std::string error;
    switch (read_more(deadline, error)) {
      case Io::kOk:
        continue;
      case Io::kTimeout:
        return Status(StatusCode::kIo, "no message within " + std::to_string(timeout_ms) + " ms");
      case Io::kClosed:
        return fail(StatusCode::kIo,
                    buffer_.empty() ? std::string("the server closed the connection")
                                    : "the server closed the connection in the middle of a "
                                      "message (" +
                                          std::to_string(buffer_.size()) + " bytes of it read)");
      case Io::kFailed:
        return fail(StatusCode::kIo, error);
    }
  }
}

Status LdapConnection::exchange(wire::LdapMessage& request, wire::ProtocolOp expected,
                                wire::LdapMessage& response, int timeout_ms) {
  request.message_id = next_message_id();
  NUMADIR_RETURN_IF_ERROR(send(request));
  const std::int64_t deadline = deadline_after(timeout_ms);
  for (;;) {
    const int left =
        deadline < 0 ? -1 : static_cast<int>(std::max<std::int64_t>(0, deadline - now_ms()));
    if (Status received = receive(response, left); !received.ok()) {
      if (received.code() == StatusCode::kIo && usable()) {
        return Status(StatusCode::kIo, "no answer within " + std::to_string(timeout_ms) + " ms");
      }
      return received;
    }
    if (response.message_id == wire::kUnsolicitedMessageId &&
        response.op == wire::ProtocolOp::kExtendedResponse) {
      const std::string diagnostic = describe_ldap_result(response.result);
      close();
      return Status(StatusCode::kIo, "the server disconnected: " + diagnostic);
    }
    if (response.message_id != request.message_id) {
      continue;  // An answer to something abandoned earlier.
    }
    if (response.op != expected) {
      return fail(StatusCode::kMalformed, std::string(wire::protocol_op_name(request.op)) +
                                              " answered with " +
                                              std::string(wire::protocol_op_name(response.op)));
    }
    return Status();
  }
}

}  // namespace numadir::server
