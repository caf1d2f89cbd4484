// tests/server/replication/fake_provider.h: a tiny LDAP server for the replication client's
// tests: it listens on 127.0.0.1 (port 0), accepts one connection on a thread of its own and runs
// the test's script on it: read a request, write hand-built answers (encoded with listener/wire's
// encoder) or raw bytes, start TLS (from the first byte, or when the script has answered a
// StartTLS) with a listener::TlsContext, close. The script records what it saw in variables the
// test reads after join(), on the test's thread.
//
// Thread contract: construct, join and destroy on the test's thread; the script runs on the
// provider's thread and may touch only what the test leaves alone until join() returns.
#pragma once

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "listener/tls.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"

namespace numadir::server::replication::testing {

namespace wire = listener::wire;

// The provider's side of the one connection.
class FakeSession {
 public:
  explicit FakeSession(int fd) : fd_(fd) {
    // Bounds every read: a test whose client never sends fails instead of hanging.
    const timeval guard{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
  }
  ~FakeSession() {
    if (ssl_ != nullptr) {
      SSL_free(ssl_);
    }
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  FakeSession(const FakeSession&) = delete;
  FakeSession& operator=(const FakeSession&) = delete;

  // Reads the next request into `message` (valid until the next read). Returns: false when
  // the client closed the connection, sent garbage or nothing within 10 s.
  bool read(wire::LdapMessage& message) {
    for (;;) {
      const wire::Frame frame = wire::frame_pdu(input_);
      if (frame.state == wire::FrameState::kComplete) {
        pdu_.assign(input_, 0, frame.pdu_bytes);
        input_.erase(0, frame.pdu_bytes);
        return wire::decode_message(pdu_, message).ok();
      }
      if (frame.state != wire::FrameState::kNeedMore) {
        return false;
      }
      char chunk[4096];
      const int n = ssl_ != nullptr ? SSL_read(ssl_, chunk, sizeof chunk)
                                    : static_cast<int>(::recv(fd_, chunk, sizeof chunk, 0));
      if (n <= 0) {
        return false;
      }
      input_.append(chunk, static_cast<std::size_t>(n));
    }
  }

  void write_raw(std::string_view bytes) {
    while (!bytes.empty()) {
      const int n = ssl_ != nullptr
                        ? SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size()))
                        : static_cast<int>(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL));
      if (n <= 0) {
        return;  // The client went away; the test sees it from its side.
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  // Encodes and writes `message`.
  void write(const wire::LdapMessage& message) {
    wire::BerWriter writer;
    wire::encode_message(message, writer);
    write_raw(writer.view());
  }

  // Writes a response of `op` (an LDAPResult-bearing one) to request `id`.
  void answer(std::int32_t id, wire::ProtocolOp op,
              wire::ResultCode code = wire::ResultCode::kSuccess,
              std::string_view diagnostic = "") {
    wire::LdapMessage response;
    response.reset(id, op);
    response.result.code = code;
    response.result.diagnostic_message = diagnostic;
    write(response);
  }

  // Runs the server side of a TLS handshake on the connection. Returns: whether it finished.
  bool start_tls(const listener::TlsContext& tls) {
    ssl_ = tls.new_ssl();
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
      return false;
    }
    return SSL_accept(ssl_) == 1;
  }
  // Returns: whether the client presented a certificate in the handshake.
  bool client_sent_certificate() const {
    if (ssl_ == nullptr) {
      return false;
    }
    X509* peer = SSL_get1_peer_certificate(ssl_);
    X509_free(peer);
    return peer != nullptr;
  }
  bool tls_active() const { return ssl_ != nullptr; }

  // Half-closes the connection: the client reads end of file.
  void close() { ::shutdown(fd_, SHUT_WR); }

 private:
  int fd_;
  SSL* ssl_ = nullptr;
  std::string input_;
  std::string pdu_;
};

class FakeProvider {
 public:
  using Script = std::function<void(FakeSession&)>;

  // Listens, and runs `script` on the first connection accepted (within 10 s), after a TLS
  // handshake if `ldaps` is given (it must outlive the provider); with `connections` > 1, on
  // each of that many connections in turn (a client that reconnects).
  explicit FakeProvider(Script script, const listener::TlsContext* ldaps = nullptr,
                        int connections = 1)
      : listen_fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE(listen_fd_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listen_fd_, 4) == 0);
    socklen_t size = sizeof address;
    REQUIRE(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &size) == 0);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this, script = std::move(script), ldaps, connections] {
      script_thread_ = std::this_thread::get_id();
      // OpenSSL writes without MSG_NOSIGNAL: a SIGPIPE for this thread stays pending, unseen.
      // The test's threads keep the default disposition, so the client shows it copes alone.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      for (int served = 0; served < connections; ++served) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, 10'000) != 1) {
          return;
        }
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
          return;
        }
        FakeSession session(fd);
        accepted_ = true;
        if (ldaps != nullptr && !session.start_tls(*ldaps)) {
          handshake_failed_ = true;
          return;
        }
        script(session);
      }
    });
  }
  ~FakeProvider() {
    join();
    ::close(listen_fd_);
  }
  FakeProvider(const FakeProvider&) = delete;
  FakeProvider& operator=(const FakeProvider&) = delete;

  // Waits for the script to end. Afterwards what it recorded may be read.
  void join() {
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  std::uint16_t port() const { return port_; }
  // Returns: "<scheme>://<host>:<port>".
  std::string url(std::string_view scheme = "ldap", std::string_view host = "127.0.0.1") const {
    return std::string(scheme) + "://" + std::string(host) + ":" + std::to_string(port_);
  }
  // After join(): whether a connection came, and whether its ldaps:// handshake failed.
  bool accepted() const { return accepted_; }
  bool handshake_failed() const { return handshake_failed_; }
  // After join(): the thread the script ran on.
  std::thread::id script_thread() const { return script_thread_; }

 private:
  const int listen_fd_;
  std::uint16_t port_ = 0;
  // Written by the provider's thread, read by the test's after join().
  bool accepted_ = false;
  bool handshake_failed_ = false;
  std::thread::id script_thread_;
  std::thread thread_;
};

}  // namespace numadir::server::replication::testing
