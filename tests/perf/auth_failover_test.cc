// AuthWorker driving two servers (a replicated pair) against small cleartext LDAP servers on
// threads of the test: connections start round-robin, a connection whose server closes, refuses
// or does not answer (--timeout) moves to the other one and is counted as a failover of the
// server it left, the auths lost with it as errors of their kind, each completed auth for the
// server that answered it; with every server down the connections wait a full round before
// trying again instead of spinning. Server B decides when the run ends (once every connection
// has reached it and it answered some binds after that) by writing the worker's stop eventfd, so
// nothing waits on a clock, except the one test that measures the back-off over a fixed time.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "perf/auth_servers.h"
#include "perf/auth_stats.h"
#include "perf/auth_worker.h"
#include "perf/auth_workload.h"

namespace numadir::perf {
namespace {

namespace wire = listener::wire;
using std::chrono::steady_clock;

constexpr int kSlots = 4;  // Connections 0 and 2 start on server 0, 1 and 3 on server 1.

struct ReplicaOptions {
  bool accept = true;  // false: listens but never accepts (connects succeed, nothing answers).
  // Closes every connection and its listening socket after this many binds (-1: never), so
  // that connections to it are reset and new ones refused.
  int close_after_binds = -1;
  // Once this many connections were accepted, after stop_binds more binds: writes stop_fd and
  // answers nothing more (-1: never stops the worker itself).
  int stop_connections = -1;
  int stop_binds = 50;
  int stop_fd = -1;
};

struct ReplicaCounts {
  int connections = 0;  // Accepted.
  int binds = 0;        // Answered.
  bool stopped_worker = false;
  bool timed_out = false;  // Stopped the worker after 10 s instead (a check will fail).
};

// One thread poll()s the listening socket and every connection, answering a search with one
// entry and a bind with success, until the worker stopped and closed everything, or 10 s.
class Replica {
 public:
  explicit Replica(ReplicaOptions options) : options_(options) {
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
  Replica(const Replica&) = delete;
  ~Replica() {
    join();
    if (listen_fd_ >= 0) {
      ::close(listen_fd_);
    }
  }

  // Ends the server's loop (at its next poll, within 50 ms) and waits for it.
  void join() {
    quit_.store(true, std::memory_order_release);
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  ServerTarget target() const {
    ServerTarget target;
    target.address = address_;
    target.address_len = address_len_;
    return target;
  }
  const ReplicaCounts& counts() const { return counts_; }  // Valid after join().

 private:
  struct Client {
    int fd = -1;
    std::string input;
  };

  static void send(int fd, const wire::LdapMessage& message) {
    wire::BerWriter writer;
    wire::encode_message(message, writer);
    [[maybe_unused]] const ssize_t n =
        ::send(fd, writer.view().data(), writer.size(), MSG_NOSIGNAL);
  }

  void stop_worker() {
    stopped_ = true;
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(options_.stop_fd, &one, sizeof one);
  }

  // Answers every whole PDU in `client.input`. Returns: false when the connection should close.
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
      if (!wire::decode_message(pdu, request).ok() ||
          request.op == wire::ProtocolOp::kUnbindRequest) {
        return false;
      }
      if (stopped_ || closed_) {
        continue;
      }
      if (request.op == wire::ProtocolOp::kSearchRequest) {
        // Entry and done in one write: two small writes would wait for Nagle and a delayed ACK.
        wire::BerWriter writer;
        response.reset(request.message_id, wire::ProtocolOp::kSearchResultEntry);
        response.search_entry.object_name = "uid=user1,ou=people,dc=example,dc=com";
        wire::encode_message(response, writer);
        response.reset(request.message_id, wire::ProtocolOp::kSearchResultDone);
        wire::encode_message(response, writer);
        [[maybe_unused]] const ssize_t n =
            ::send(client.fd, writer.view().data(), writer.size(), MSG_NOSIGNAL);
      } else if (request.op == wire::ProtocolOp::kBindRequest) {
        response.reset(request.message_id, wire::ProtocolOp::kBindResponse);
        send(client.fd, response);
        ++counts_.binds;
        if (counts_.binds == options_.close_after_binds) {
          closed_ = true;
        }
        if (options_.stop_connections >= 0 && counts_.connections >= options_.stop_connections &&
            ++binds_after_all_ == options_.stop_binds) {
          counts_.stopped_worker = true;
          stop_worker();
        }
      } else {
        return false;
      }
    }
  }

  void serve() {
    const auto deadline = steady_clock::now() + std::chrono::seconds(10);
    std::vector<Client> clients;
    std::vector<pollfd> fds;
    while (!(stopped_ && clients.empty()) && steady_clock::now() < deadline &&
           !quit_.load(std::memory_order_acquire)) {
      fds.assign(1, pollfd{listen_fd_, static_cast<short>(options_.accept ? POLLIN : 0), 0});
      for (const Client& client : clients) {
        fds.push_back(pollfd{client.fd, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 50) < 0) {
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
      if (closed_ && listen_fd_ >= 0) {
        // The server goes away: every connection reset or closed, new ones refused.
        for (const Client& client : clients) {
          ::close(client.fd);
        }
        clients.clear();
        ::close(listen_fd_);
        listen_fd_ = -1;
        break;  // Nothing more to serve; the worker is stopped by the other server.
      }
      if ((fds[0].revents & POLLIN) != 0 && !stopped_) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          ++counts_.connections;
          clients.push_back(Client{fd, {}});
        }
      }
    }
    if (!stopped_ && options_.stop_connections >= 0 && !quit_.load(std::memory_order_acquire)) {
      counts_.timed_out = true;  // Never hang the test: stop the worker; the checks fail.
      stop_worker();
    }
    for (const Client& client : clients) {
      ::close(client.fd);
    }
  }

  const ReplicaOptions options_;
  int listen_fd_ = -1;
  sockaddr_storage address_{};
  socklen_t address_len_ = 0;
  bool stopped_ = false;  // Owner: the server thread.
  bool closed_ = false;   // Owner: the server thread.
  int binds_after_all_ = 0;
  ReplicaCounts counts_;  // Owner: the server thread until join().
  // Set by join() on the test's thread, read by the server thread: the test is done with it.
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

// An address where connects are refused: a bound socket that does not listen (kept bound, so
// that nothing else takes the port while the test runs).
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof target_.address;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&target_.address), &length);
    target_.address_len = length;
  }
  RefusingPort(const RefusingPort&) = delete;
  ~RefusingPort() { ::close(fd_); }
  const ServerTarget& target() const { return target_; }

 private:
  int fd_ = -1;
  ServerTarget target_;
};

struct WorkerRun {
  AuthMode mode = AuthMode::kSame;
  std::int64_t timeout_ms = 0;
};

// Runs one AuthWorker with kSlots slots over `servers` until `stop_fd` is written.
AuthTotals run_worker(const ServerList& servers, int stop_fd, WorkerRun how = {}) {
  const std::uint64_t seed = 7;
  MESSAGE("seed " << seed);
  auto workload = AuthWorkload::create(WorkloadOptions{});
  REQUIRE(workload.ok());
  WorkerConfig config;
  config.workload = &*workload;
  config.servers = &servers;
  config.mode = how.mode;
  config.slots = kSlots;
  config.timeout_ms = how.timeout_ms;
  config.seed = seed;
  config.stop_fd = stop_fd;
  WorkerStats stats;
  AuthWorker worker(config, stats);
  REQUIRE(worker.run().ok());
  AuthTotals totals;
  totals.add_live(stats);
  return totals;
}

std::uint64_t errors_of(const AuthTotals& totals, AuthError kind) {
  return totals.errors[static_cast<std::size_t>(kind)];
}

// Each server's auths add up to the total, and each server's failovers to the failovers.
void check_sums(const AuthTotals& totals) {
  std::uint64_t auths = 0;
  std::uint64_t failovers = 0;
  for (std::size_t i = 0; i < kMaxServers; ++i) {
    auths += totals.server_auths[i];
    failovers += totals.server_failovers[i];
  }
  CHECK(auths == totals.auths);
  CHECK(failovers == totals.failovers);
}

struct StopFd {
  StopFd() : fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) { REQUIRE(fd >= 0); }
  StopFd(const StopFd&) = delete;
  ~StopFd() { ::close(fd); }
  const int fd;
};

TEST_CASE("AuthWorker failover: a server that goes away sends its connections to the other") {
  StopFd stop;
  AuthTotals totals;
  ReplicaCounts a_counts;
  ReplicaCounts b_counts;
  {
    Replica a(ReplicaOptions{.close_after_binds = 100});
    // B stops the run once the two connections of A reached it too, 100 binds later.
    Replica b(ReplicaOptions{.stop_connections = 4, .stop_binds = 100, .stop_fd = stop.fd});
    const ServerList servers({a.target(), b.target()});
    totals = run_worker(servers, stop.fd);
    a.join();
    b.join();
    a_counts = a.counts();
    b_counts = b.counts();
  }
  REQUIRE_FALSE(b_counts.timed_out);
  CHECK(a_counts.connections == 2);
  CHECK(b_counts.connections == 4);
  // The two connections of A, each once; none went back to A (it refuses now anyway).
  CHECK(totals.failovers == 2);
  CHECK(totals.server_failovers[0] == 2);
  CHECK(totals.server_failovers[1] == 0);
  // The auth each of them had in flight, lost with the connection.
  CHECK(errors_of(totals, AuthError::kConnectionDropped) == 2);
  CHECK(totals.error_total() == 2);
  // A completed what it answered before it went (the last answers may be lost in the reset).
  CHECK(totals.server_auths[0] <= 100);
  CHECK(totals.server_auths[0] + 2 >= 100);
  // The worker may see the stop before the last answers (one per connection).
  CHECK(totals.server_auths[1] + kSlots >= static_cast<std::uint64_t>(b_counts.binds));
  CHECK(totals.server_auths[1] <= static_cast<std::uint64_t>(b_counts.binds));
  check_sums(totals);
}

TEST_CASE("AuthWorker failover: a refused server's connections go to the next at once") {
  StopFd stop;
  RefusingPort a;
  AuthTotals totals;
  ReplicaCounts b_counts;
  SUBCASE("the preflight did not know: each connection that starts there fails over once") {
    Replica b(ReplicaOptions{.stop_connections = 4, .stop_binds = 100, .stop_fd = stop.fd});
    const ServerList servers({a.target(), b.target()});
    totals = run_worker(servers, stop.fd);
    b.join();
    b_counts = b.counts();
    REQUIRE_FALSE(b_counts.timed_out);
    CHECK(totals.failovers == 2);
    CHECK(totals.server_failovers[0] == 2);
    CHECK(errors_of(totals, AuthError::kConnectFailed) == 2);
    CHECK(totals.error_total() == 2);
  }
  SUBCASE("the preflight found it down: connections start on the other one") {
    Replica b(ReplicaOptions{.stop_connections = 4, .stop_binds = 100, .stop_fd = stop.fd});
    ServerTarget down = a.target();
    down.reachable_at_start = false;
    const ServerList servers({down, b.target()});
    totals = run_worker(servers, stop.fd);
    b.join();
    b_counts = b.counts();
    REQUIRE_FALSE(b_counts.timed_out);
    CHECK(totals.failovers == 0);
    CHECK(totals.error_total() == 0);
  }
  CHECK(b_counts.connections == 4);
  CHECK(totals.server_auths[0] == 0);
  CHECK(totals.server_auths[1] == totals.auths);
  CHECK(totals.auths + kSlots >= static_cast<std::uint64_t>(b_counts.binds));
  check_sums(totals);
}

TEST_CASE("AuthWorker failover: a server that does not answer times out and fails over") {
  StopFd stop;
  AuthTotals totals;
  ReplicaCounts b_counts;
  {
    Replica a(ReplicaOptions{.accept = false});
    Replica b(ReplicaOptions{.stop_connections = 4, .stop_binds = 100, .stop_fd = stop.fd});
    const ServerList servers({a.target(), b.target()});
    totals = run_worker(servers, stop.fd, WorkerRun{.timeout_ms = 50});
    b.join();
    b_counts = b.counts();
  }
  REQUIRE_FALSE(b_counts.timed_out);
  CHECK(totals.failovers == 2);
  CHECK(totals.server_failovers[0] == 2);
  CHECK(errors_of(totals, AuthError::kTimeout) == 2);
  CHECK(totals.error_total() == 2);
  CHECK(totals.server_auths[1] == totals.auths);
  check_sums(totals);
}

TEST_CASE("AuthWorker failover: in split mode an auth counts for its bind's server") {
  StopFd stop;
  AuthTotals totals;
  ReplicaCounts a_counts;
  ReplicaCounts b_counts;
  {
    // kSlots slots of two connections: each search connection (even) on A, bind (odd) on B.
    Replica a(ReplicaOptions{});
    Replica b(ReplicaOptions{.stop_connections = kSlots, .stop_binds = 100, .stop_fd = stop.fd});
    const ServerList servers({a.target(), b.target()});
    totals = run_worker(servers, stop.fd, WorkerRun{.mode = AuthMode::kSplit});
    a.join();
    b.join();
    a_counts = a.counts();
    b_counts = b.counts();
  }
  REQUIRE_FALSE(b_counts.timed_out);
  CHECK(a_counts.connections == kSlots);
  CHECK(a_counts.binds == 0);
  CHECK(totals.error_total() == 0);
  CHECK(totals.server_auths[0] == 0);
  CHECK(totals.server_auths[1] == totals.auths);
  CHECK(totals.auths > 0);
}

TEST_CASE("AuthWorker failover: with every server down each connection waits a round") {
  // Measured over a fixed time, not synchronized: 2 connections over 2 refusing servers wait
  // kConnectRetryMs after every second refusal, so 600 ms allow at most 2 * 2 * (6 + 1) tries
  // (a slow machine makes fewer, never more).
  StopFd stop;
  RefusingPort a;
  RefusingPort b;
  const ServerList servers({a.target(), b.target()});
  auto workload = AuthWorkload::create(WorkloadOptions{});
  REQUIRE(workload.ok());
  WorkerConfig config;
  config.workload = &*workload;
  config.servers = &servers;
  config.slots = 2;
  config.stop_fd = stop.fd;
  WorkerStats stats;
  AuthWorker worker(config, stats);
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(stop.fd, &one, sizeof one);
  });
  REQUIRE(worker.run().ok());
  stopper.join();
  AuthTotals totals;
  totals.add_live(stats);
  const std::uint64_t refused = errors_of(totals, AuthError::kConnectFailed);
  CHECK(refused >= 4);  // At least the first round of each connection.
  CHECK(refused <= 2 * 2 * 7);
  CHECK(totals.failovers == refused);  // Each refusal moves the connection on.
  CHECK(totals.server_failovers[0] + 1 >= totals.server_failovers[1]);
  CHECK(totals.server_failovers[1] + 1 >= totals.server_failovers[0]);
  CHECK(totals.auths == 0);
}

}  // namespace
}  // namespace numadir::perf
