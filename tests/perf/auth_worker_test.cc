// AuthWorker with --wrong-percent against a small cleartext LDAP server on a thread of the test:
// the binds drawn to use a wrong password, refused with invalidCredentials, complete their auths
// and are counted as refused, not as errors, in every mode that binds (same, split, bind-only,
// a new connection per auth); a server that accepts a wrong password, or answers another code,
// is counted as an error. The server decides when the run ends (after so many binds) by writing
// the worker's stop eventfd, so nothing waits on a clock.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "perf/auth_stats.h"
#include "perf/auth_worker.h"
#include "perf/auth_workload.h"

namespace numadir::perf {
namespace {

namespace wire = listener::wire;

struct ServerOptions {
  wire::ResultCode wrong_code = wire::ResultCode::kInvalidCredentials;  // For a wrong password.
  int stop_after = 200;  // Binds answered before the server stops the worker.
};

// What the server saw; the test reads it after join().
struct ServerCounts {
  int connections = 0;
  int binds = 0;
  int wrong_binds = 0;  // Binds whose password ends with kWrongPasswordSuffix.
  int other_requests = 0;
};

// One thread poll()s the listening socket and every connection (split mode holds two at once).
// A search finds uid=user1; a bind whose password ends with kWrongPasswordSuffix is answered
// `wrong_code`, any other success. After the bind that stops the worker it answers nothing
// more, and it returns once every connection has closed, or after 10 s without an event (never
// hanging the test).
class TestServer {
 public:
  TestServer(ServerOptions options, int stop_fd) : options_(options), stop_fd_(stop_fd) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listen_fd_, 64) == 0);
    socklen_t length = sizeof address_;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address_), &length);
    address_len_ = length;
    thread_ = std::thread([this] { serve(); });
  }
  TestServer(const TestServer&) = delete;
  ~TestServer() {
    join();
    ::close(listen_fd_);
  }

  void join() {
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  const sockaddr_storage& address() const { return address_; }
  socklen_t address_len() const { return address_len_; }
  const ServerCounts& counts() const { return counts_; }  // Valid after join().

 private:
  struct Client {
    int fd = -1;
    std::string input;
  };

  void send(int fd, const wire::LdapMessage& message) {
    wire::BerWriter writer;
    wire::encode_message(message, writer);
    [[maybe_unused]] const ssize_t n =
        ::send(fd, writer.view().data(), writer.size(), MSG_NOSIGNAL);
  }

  // Answers every whole PDU in `client.input`. Returns: false when the connection should close
  // (an unbind, or what this server does not speak).
  bool answer(Client& client) {
    for (;;) {
      const wire::Frame frame = wire::frame_pdu(client.input);
      if (frame.state == wire::FrameState::kNeedMore) {
        return true;
      }
      if (frame.state != wire::FrameState::kComplete) {
        return false;
      }
      const std::string pdu = client.input.substr(0, frame.pdu_bytes);
      client.input.erase(0, frame.pdu_bytes);
      wire::LdapMessage request;
      wire::LdapMessage response;
      if (!wire::decode_message(pdu, request).ok()) {
        return false;
      }
      if (stopped_ && request.op != wire::ProtocolOp::kUnbindRequest) {
        continue;  // The run is over: what the worker sent since goes unanswered and uncounted.
      }
      if (request.op == wire::ProtocolOp::kSearchRequest) {
        response.reset(request.message_id, wire::ProtocolOp::kSearchResultEntry);
        response.search_entry.object_name = "uid=user1,ou=people,dc=example,dc=com";
        send(client.fd, response);
        response.reset(request.message_id, wire::ProtocolOp::kSearchResultDone);
        send(client.fd, response);
      } else if (request.op == wire::ProtocolOp::kBindRequest) {
        const bool wrong = request.bind_request.simple_password.ends_with(kWrongPasswordSuffix);
        response.reset(request.message_id, wire::ProtocolOp::kBindResponse);
        response.result.code = wrong ? options_.wrong_code : wire::ResultCode::kSuccess;
        ++counts_.binds;
        counts_.wrong_binds += wrong ? 1 : 0;
        send(client.fd, response);
        if (counts_.binds == options_.stop_after) {
          stopped_ = true;
          const std::uint64_t one = 1;
          [[maybe_unused]] const ssize_t n = ::write(stop_fd_, &one, sizeof one);
        }
      } else {
        counts_.other_requests += request.op == wire::ProtocolOp::kUnbindRequest ? 0 : 1;
        return false;
      }
    }
  }

  void serve() {
    std::vector<Client> clients;
    std::vector<pollfd> fds;
    while (!stopped_ || !clients.empty()) {
      fds.assign(1, pollfd{listen_fd_, POLLIN, 0});
      for (const Client& client : clients) {
        fds.push_back(pollfd{client.fd, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 10'000) <= 0) {
        break;
      }
      for (std::size_t i = clients.size(); i-- > 0;) {
        if (fds[i + 1].revents == 0) {
          continue;
        }
        char chunk[4096];
        const ssize_t n = ::recv(clients[i].fd, chunk, sizeof chunk, 0);
        bool open = n > 0;
        if (open) {
          clients[i].input.append(chunk, static_cast<std::size_t>(n));
          open = answer(clients[i]);
        }
        if (!open) {
          ::close(clients[i].fd);
          clients.erase(clients.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
      if ((fds[0].revents & POLLIN) != 0 && !stopped_) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          // As a real server does: each answer leaves at once, not after the client's delayed
          // ACK (40 ms a search, whose entry and done go in two writes).
          const int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ++counts_.connections;
          clients.push_back(Client{fd, {}});
        }
      }
    }
    for (const Client& client : clients) {
      ::close(client.fd);
    }
  }

  const ServerOptions options_;
  const int stop_fd_;
  int listen_fd_ = -1;
  sockaddr_storage address_{};
  socklen_t address_len_ = 0;
  bool stopped_ = false;  // Owner: the server thread.
  ServerCounts counts_;   // Owner: the server thread until join().
  std::thread thread_;
};

struct RunResult {
  AuthTotals totals;
  ServerCounts server;
};

// Runs one AuthWorker (one slot) with `wrong_percent` against a TestServer until it stops it.
RunResult run(AuthMode mode, bool reconnect, double wrong_percent, ServerOptions server_options) {
  const std::uint64_t seed = 5;
  MESSAGE("seed " << seed);
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  REQUIRE(stop_fd >= 0);
  WorkloadOptions options;
  options.wrong_percent = wrong_percent;
  auto workload = AuthWorkload::create(options);
  REQUIRE(workload.ok());
  RunResult result;
  {
    TestServer server(server_options, stop_fd);
    WorkerConfig config;
    config.workload = &*workload;
    ServerTarget target;
    target.address = server.address();
    target.address_len = server.address_len();
    const ServerList servers({target});
    config.servers = &servers;
    config.mode = mode;
    config.reconnect = reconnect;
    config.seed = seed;
    config.stop_fd = stop_fd;
    WorkerStats stats;
    AuthWorker worker(config, stats);
    REQUIRE(worker.run().ok());
    server.join();
    result.totals.add_live(stats);
    result.server = server.counts();
  }
  ::close(stop_fd);
  CHECK(result.server.other_requests == 0);
  return result;
}

TEST_CASE("AuthWorker: wrong passwords refused with invalidCredentials complete their auths") {
  AuthMode mode = AuthMode::kSame;
  bool reconnect = false;
  SUBCASE("same") {}
  SUBCASE("split") { mode = AuthMode::kSplit; }
  SUBCASE("bind-only") { mode = AuthMode::kBindOnly; }
  SUBCASE("same with a new connection per auth") { reconnect = true; }
  SUBCASE("split with new connections per auth") {
    mode = AuthMode::kSplit;
    reconnect = true;
  }
  CAPTURE(auth_mode_name(mode));
  CAPTURE(reconnect);
  const RunResult run_result = run(mode, reconnect, 30, ServerOptions{});
  const AuthTotals& totals = run_result.totals;
  const ServerCounts& server = run_result.server;
  REQUIRE(server.binds == 200);
  // About 30% of the binds (the draw is the seeded RNG's); the last answer may race the stop.
  CHECK(server.wrong_binds > 200 * 15 / 100);
  CHECK(server.wrong_binds < 200 * 45 / 100);
  CHECK(totals.error_total() == 0);
  CHECK(totals.wrong_password_binds + 1 >= static_cast<std::uint64_t>(server.wrong_binds));
  CHECK(totals.wrong_password_binds <= static_cast<std::uint64_t>(server.wrong_binds));
  CHECK(totals.wrong_password_refused == totals.wrong_password_binds);
  // Every bind answered as expected is a completed auth, the refused ones included.
  CHECK(totals.auths + 1 >= static_cast<std::uint64_t>(server.binds));
  CHECK(totals.auths <= static_cast<std::uint64_t>(server.binds));
  CHECK(totals.latency.count() == totals.auths);
  if (reconnect) {
    CHECK(server.connections >= (mode == AuthMode::kSplit ? 2 : 1) * 199);
  } else {
    CHECK(server.connections == (mode == AuthMode::kSplit ? 2 : 1));
  }
}

TEST_CASE("AuthWorker: at 100 percent every bind is wrong and at 0 none is") {
  SUBCASE("100") {
    const RunResult run_result = run(AuthMode::kSame, false, 100, ServerOptions{});
    CHECK(run_result.server.wrong_binds == run_result.server.binds);
    CHECK(run_result.totals.error_total() == 0);
    CHECK(run_result.totals.wrong_password_refused == run_result.totals.auths);
    CHECK(run_result.totals.auths + 1 >= 200);
  }
  SUBCASE("0") {
    const RunResult run_result = run(AuthMode::kBindOnly, false, 0, ServerOptions{});
    CHECK(run_result.server.wrong_binds == 0);
    CHECK(run_result.totals.wrong_password_binds == 0);
    CHECK(run_result.totals.error_total() == 0);
    CHECK(run_result.totals.auths + 1 >= 200);
  }
}

TEST_CASE("AuthWorker: a server that accepts a wrong password is counted as an error") {
  ServerOptions server_options;
  server_options.wrong_code = wire::ResultCode::kSuccess;
  const RunResult run_result = run(AuthMode::kSame, false, 30, server_options);
  const AuthTotals& totals = run_result.totals;
  CHECK(totals.wrong_password_binds + 1 >=
        static_cast<std::uint64_t>(run_result.server.wrong_binds));
  CHECK(totals.wrong_password_binds > 0);
  CHECK(totals.wrong_password_refused == 0);
  CHECK(totals.errors[static_cast<std::size_t>(AuthError::kWrongPasswordAccepted)] ==
        totals.wrong_password_binds);
  CHECK(totals.error_total() == totals.wrong_password_binds);
  // Only the right passwords' auths count.
  CHECK(totals.auths + totals.wrong_password_binds + 1 >=
        static_cast<std::uint64_t>(run_result.server.binds));
  CHECK(totals.auths + totals.wrong_password_binds <=
        static_cast<std::uint64_t>(run_result.server.binds));
}

TEST_CASE("AuthWorker: another answer to a wrong password is an error under its code") {
  ServerOptions server_options;
  server_options.wrong_code = wire::ResultCode::kUnwillingToPerform;
  const RunResult run_result = run(AuthMode::kBindOnly, false, 30, server_options);
  const AuthTotals& totals = run_result.totals;
  CHECK(totals.wrong_password_binds > 0);
  CHECK(totals.wrong_password_refused == 0);
  CHECK(totals.result_codes[53] == totals.wrong_password_binds);
  CHECK(totals.errors[static_cast<std::size_t>(AuthError::kLdapResult)] == totals.error_total());
  CHECK(totals.errors[static_cast<std::size_t>(AuthError::kWrongPasswordAccepted)] == 0);
}

}  // namespace
}  // namespace numadir::perf
