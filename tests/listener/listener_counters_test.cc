// The listener's counters of why connections closed (ListenerSnapshot::closed, CloseReason) and
// of the requests its pool refused (ListenerSnapshot::submit_refused), over real loopback
// sockets with the fake handler of frontend_test_util.h. The write timeout's and TLS's reasons
// are checked where those closes are tested (output_bound_test.cc, frontend_tls_test.cc).
#include <doctest/doctest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>
#include <optional>
#include <string>

#include "listener/frontend.h"
#include "listener/listener.h"
#include "tests/listener/frontend_test_util.h"
#include "threadpool/worker_pool.h"

namespace numadir::listener {
namespace {

using testing::Client;
using testing::eventually;
using testing::FakeHandler;
using testing::GateOpener;
using testing::Server;
using wire::LdapMessage;
using wire::ProtocolOp;

std::uint64_t closed_total(const ListenerSnapshot& listener) {
  return std::accumulate(listener.closed.begin(), listener.closed.end(), std::uint64_t{0});
}

// Waits until the only listener has closed every connection it accepted, then checks that
// `accepted` were, each for `reason`.
void expect_closed(const Frontend& frontend, CloseReason reason, std::uint64_t accepted = 1) {
  REQUIRE(eventually([&] {
    const ListenerSnapshot listener = frontend.snapshot().listeners.at(0);
    return listener.connections == 0 && listener.accepted == accepted &&
           closed_total(listener) == accepted;
  }));
  const ListenerSnapshot listener = frontend.snapshot().listeners.at(0);
  for (std::size_t r = 0; r < kCloseReasons; ++r) {
    INFO("reason ", close_reason_name(static_cast<CloseReason>(r)));
    CHECK(listener.closed[r] == (r == static_cast<std::size_t>(reason) ? accepted : 0));
  }
}

// Opens a connection, runs a search on it, then lets `end` end it (returning once the server
// closed it, for the server's own reasons).
void close_one(Server<>& server, const std::function<void(Client&)>& end) {
  Client client(server.port);
  client.set_receive_timeout(20);
  client.search(1, "first");
  client.flush();
  client.expect_search(1, "first");
  const ListenerSnapshot before = server.frontend->snapshot().listeners.at(0);
  CHECK(before.accepted == 1);
  CHECK(before.connections == 1);
  CHECK(closed_total(before) == 0);
  end(client);
}

void expect_server_closed(Client& client) {
  LdapMessage message;
  while (client.receive(message)) {
    CHECK(message.extended.name == wire::kNoticeOfDisconnectionOid);  // Nothing else comes.
  }
}

TEST_CASE("Listener: each way a connection closes counts once under its reason") {
  FrontendOptions options;
  CloseReason expected = CloseReason::kOther;
  std::function<void(Client&)> end;
  SUBCASE("the client closes") {
    expected = CloseReason::kClient;
    end = [](Client& client) { client.close(); };
  }
  SUBCASE("the client resets") {
    expected = CloseReason::kClient;
    end = [](Client& client) {
      const linger reset{1, 0};  // Closing sends an RST.
      REQUIRE(setsockopt(client.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)) == 0);
      client.close();
    };
  }
  SUBCASE("an Unbind") {
    expected = CloseReason::kUnbind;
    end = [](Client& client) {
      client.unbind(2);
      client.flush();
      expect_server_closed(client);
    };
  }
  SUBCASE("a malformed PDU") {
    expected = CloseReason::kProtocolError;
    end = [](Client& client) {
      client.send_raw("GET / HTTP/1.1\r\n\r\n");
      expect_server_closed(client);
    };
  }
  SUBCASE("a response sent by the client") {
    expected = CloseReason::kProtocolError;
    end = [](Client& client) {
      LdapMessage done;
      done.reset(2, ProtocolOp::kSearchResultDone);
      wire::BerWriter writer;
      wire::encode_message(done, writer);
      client.send_raw(writer.view());
      expect_server_closed(client);
    };
  }
  SUBCASE("the idle timeout") {
    expected = CloseReason::kIdleTimeout;
    options.limits.idle_timeout_s = 1;
    end = [](Client& client) { CHECK(client.closed_within(std::chrono::seconds(20))); };
  }
  REQUIRE(end);
  Server server(options);
  close_one(server, end);
  expect_closed(*server.frontend, expected);
}

TEST_CASE("Listener: an Unbind that comes with the client's end is the reason") {
  Server server;
  Client client(server.port);
  client.unbind(1);
  client.flush();
  ::shutdown(client.fd(), SHUT_WR);  // The end comes right behind the Unbind.
  LdapMessage message;
  CHECK_FALSE(client.receive(message));
  expect_closed(*server.frontend, CloseReason::kUnbind);
}

TEST_CASE("Listener: connections open when it stops count as server_stop") {
  FakeHandler handler;
  ListenerShared shared;
  shared.handler = &handler;
  threadpool::WorkerPoolOptions pool_options;
  pool_options.name = "worker-test";
  pool_options.threads = 1;
  pool_options.make_worker_state = [&handler] { return handler.make_worker_state(); };
  threadpool::WorkerPool pool(pool_options);
  pool.start();
  // Driven on this thread (the fuzz target's seams): stop() and the rounds that drain.
  Listener listener("listener-test", {}, shared, pool, std::nullopt, threadpool::NodeBinding{});
  int ends[2][2];
  for (auto& pair : ends) {
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) == 0);
    listener.adopt_for_test(pair[0]);
  }
  CHECK_FALSE(listener.run_round_for_test());
  const ListenerCounters& counters = listener.counters();
  CHECK(counters.accepted.load() == 2);
  CHECK(counters.open.load() == 2);
  listener.stop();
  bool drained = false;
  for (int round = 0; round < 1000 && !drained; ++round) {
    drained = listener.run_round_for_test();
  }
  REQUIRE(drained);
  CHECK(counters.open.load() == 0);
  for (std::size_t r = 0; r < kCloseReasons; ++r) {
    INFO("reason ", close_reason_name(static_cast<CloseReason>(r)));
    CHECK(counters.closed[r].load() ==
          (r == static_cast<std::size_t>(CloseReason::kServerStop) ? 2 : 0));
  }
  for (auto& pair : ends) {
    char byte = 0;
    CHECK(::recv(pair[1], &byte, 1, 0) == 0);  // Closed by the listener.
    ::close(pair[1]);
  }
  pool.stop();
}

TEST_CASE("Listener: each request the full pool refuses counts in submit_refused") {
  FrontendOptions options;
  options.workers = 1;
  options.queue_capacity = 1;
  SUBCASE("percpu dispatcher") { options.dispatcher = Dispatcher::kPerCpu; }
  SUBCASE("single dispatcher") { options.dispatcher = Dispatcher::kSingle; }
  Server server(options);
  const GateOpener opener{server.handler};
  Client client(server.port);
  client.set_receive_timeout(20);
  client.del(1, "gate");
  client.flush();
  server.handler.wait_at_gate(1);  // The only worker is held.
  client.search(2, "queued");      // Fills the one-slot queue.
  client.flush();
  REQUIRE(eventually([&] { return server.frontend->snapshot().pools.at(0).queue_depth == 1; }));
  CHECK(server.frontend->snapshot().listeners.at(0).submit_refused == 0);  // Nothing refused yet.
  client.search(3, "refused");
  client.flush();
  REQUIRE(
      eventually([&] { return server.frontend->snapshot().listeners.at(0).submit_refused >= 1; }));
  server.handler.open_gate();
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.message_id == 1);
  client.expect_search(2, "queued");
  client.expect_search(3, "refused");
}

}  // namespace
}  // namespace numadir::listener
