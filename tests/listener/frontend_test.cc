// Tests of the listener side (Frontend, Listener, ConnectionRules, Connection, Request) over
// real loopback sockets, with the fake handler of frontend_test_util.h.
#include "listener/frontend.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/listener/frontend_test_util.h"
#include "threadpool/placement.h"
#include "threadpool/topology.h"

namespace numadir::listener {
namespace {

using testing::Client;
using testing::eventually;
using testing::FakeHandler;
using testing::Server;
using wire::LdapMessage;
using wire::ProtocolOp;

TEST_CASE("Frontend: pipelined searches are each answered with their message ID") {
  Server server;
  Client client(server.port);
  for (int i = 1; i <= 50; ++i) {
    client.search(i, "cn=" + std::to_string(i));
  }
  client.flush();
  // Answers may come out of order across workers, but each entry is followed by its done.
  std::vector<int> answered(51, 0);
  LdapMessage message;
  for (int i = 0; i < 100; ++i) {
    REQUIRE(client.receive(message));
    REQUIRE(message.message_id >= 1);
    REQUIRE(message.message_id <= 50);
    if (message.op == ProtocolOp::kSearchResultEntry) {
      CHECK(message.search_entry.object_name == "cn=" + std::to_string(message.message_id));
    } else {
      CHECK(message.op == ProtocolOp::kSearchResultDone);
      ++answered[static_cast<std::size_t>(message.message_id)];
    }
  }
  for (int i = 1; i <= 50; ++i) {
    CHECK(answered[static_cast<std::size_t>(i)] == 1);
  }
}

TEST_CASE("Frontend: a bind waits for what is outstanding and nothing runs beside it") {
  Server server;
  Client client(server.port);
  client.search(1, "gate");
  client.bind(2);
  client.search(3, "after");
  client.flush();
  server.handler.wait_at_gate(1);
  server.handler.open_gate();
  client.expect_search(1, "gate");
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.message_id == 2);
  CHECK(message.op == ProtocolOp::kBindResponse);
  client.expect_search(3, "after");
  CHECK(server.handler.bind_violations == 0);
}

TEST_CASE("Frontend: an abandoned search sends nothing and the connection goes on") {
  Server server;
  Client client(server.port);
  client.search(1, "gate");
  client.flush();
  server.handler.wait_at_gate(1);  // Running: the abandon reaches it through sink.abandoned().
  client.abandon(2, 1);
  client.search(3, "quick");
  client.flush();
  // Search 3 answered: the listener read the abandon before it.
  client.expect_search(3, "quick");
  server.handler.open_gate();
  client.search(4, "later");
  client.flush();
  client.expect_search(4, "later");
  server.frontend->stop();
  CHECK(server.handler.abandoned_seen == 1);
}

TEST_CASE(
    "Frontend: a malformed PDU gets a Notice of Disconnection and only that connection closes") {
  Server server;
  Client bad(server.port);
  Client good(server.port);
  good.search(1, "first");
  good.flush();
  good.expect_search(1, "first");
  // A SEQUENCE holding an INTEGER message ID and then a tag no operation has.
  bad.send_raw(std::string("\x30\x05\x02\x01\x07\x7f\x00", 7));
  LdapMessage message;
  REQUIRE(bad.receive(message));
  CHECK(message.message_id == 0);
  CHECK(message.op == ProtocolOp::kExtendedResponse);
  CHECK(message.result.code == wire::ResultCode::kProtocolError);
  CHECK(message.extended.name == wire::kNoticeOfDisconnectionOid);
  CHECK_FALSE(bad.receive(message));  // Closed.
  good.search(2, "second");
  good.flush();
  good.expect_search(2, "second");
}

TEST_CASE("Frontend: garbage that is not an LDAPMessage gets a notice and a close") {
  Server server;
  Client bad(server.port);
  bad.send_raw("GET / HTTP/1.1\r\n\r\n");
  LdapMessage message;
  REQUIRE(bad.receive(message));
  CHECK(message.extended.name == wire::kNoticeOfDisconnectionOid);
  CHECK_FALSE(bad.receive(message));
}

TEST_CASE("Frontend: unbind closes the connection") {
  Server server;
  Client client(server.port);
  client.search(1, "x");
  client.flush();
  client.expect_search(1, "x");
  client.unbind(2);
  client.flush();
  LdapMessage message;
  CHECK_FALSE(client.receive(message));
}

TEST_CASE("Frontend: connections over max_connections are closed at once") {
  FrontendOptions options;
  options.limits.max_connections = 1;
  Server server(options);
  Client first(server.port);
  first.search(1, "one");
  first.flush();
  first.expect_search(1, "one");  // Accepted and counted.
  Client second(server.port);
  LdapMessage message;
  CHECK_FALSE(second.receive(message));
  first.search(2, "two");
  first.flush();
  first.expect_search(2, "two");
}

TEST_CASE("Frontend: a PDU over max_pdu_bytes gets a notice and a close") {
  FrontendOptions options;
  options.limits.max_pdu_bytes = 1024;
  Server server(options);
  Client client(server.port);
  const std::string huge("\x30\x82\x10\x00", 4);  // Announces 4096 bytes.
  client.send_raw(huge);
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.extended.name == wire::kNoticeOfDisconnectionOid);
  CHECK_FALSE(client.receive(message));
}

TEST_CASE("Frontend: a client gone in the middle of an operation leaves nothing behind") {
  Server server;
  {
    Client client(server.port);
    client.search(1, "gate");
    client.flush();
    server.handler.wait_at_gate(1);
  }  // Closed while its search waits.
  server.handler.open_gate();
  Client other(server.port);
  other.search(1, "still here");
  other.flush();
  other.expect_search(1, "still here");
  server.frontend->stop();  // Joins everything; ASan reports any leak.
}

TEST_CASE("Frontend: an idle connection is closed after idle_timeout and a busy one is not") {
  FrontendOptions options;
  options.limits.idle_timeout_s = 1;
  Server server(options);
  Client idle(server.port);
  Client busy(server.port);
  idle.search(1, "once");
  idle.flush();
  idle.expect_search(1, "once");
  // The busy client asks every 200 ms for 3 s; the idle one is closed meanwhile (within about
  // two seconds: the limit plus the once-a-second look).
  for (int i = 2; i < 17; ++i) {
    busy.search(i, "again");
    busy.flush();
    busy.expect_search(i, "again");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // Simulated think time.
  }
  LdapMessage message;
  CHECK_FALSE(idle.receive(message));  // Closed by the server.
  busy.search(99, "still open");
  busy.flush();
  busy.expect_search(99, "still open");
}

TEST_CASE("Frontend: fewer connections than listeners are served") {
  FrontendOptions options;
  options.listeners = 4;
  Server server(options);
  Client client(server.port);
  client.search(1, "only");
  client.flush();
  client.expect_search(1, "only");
}

TEST_CASE("Frontend: a placement plan of this machine serves with pinned threads") {
  auto topology = threadpool::Topology::detect();
  REQUIRE_MESSAGE(topology.ok(), topology.status().to_string());
  threadpool::PlacementOptions placement;
  SUBCASE("pinned") { placement.pin = true; }
  SUBCASE("unpinned") { placement.pin = false; }
  auto plan = threadpool::plan_placement(*topology, placement);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  FrontendOptions options;
  options.plan = *plan;
  Server server(options);
  CHECK(server.frontend->pool_count() == plan->nodes.size());
  Client client(server.port);
  for (int i = 1; i <= 20; ++i) {
    client.search(i, "n" + std::to_string(i));
    client.flush();
    client.expect_search(i, "n" + std::to_string(i));
  }
}

TEST_CASE("Frontend: many clients with pipelining and disconnects get only their own answers") {
  FrontendOptions options;
  options.listeners = 2;
  options.workers = 3;
  options.limits.max_outstanding_per_connection = 8;  // Exercises holding requests back.
  SUBCASE("percpu dispatcher") { options.dispatcher = Dispatcher::kPerCpu; }
  SUBCASE("percpu dispatcher with listeners helping") {
    options.dispatcher = Dispatcher::kPerCpu;
    options.listeners_help = true;  // A listener also runs other listeners' requests.
  }
  SUBCASE("percpu dispatcher with a queue of two") {
    options.dispatcher = Dispatcher::kPerCpu;
    options.queue_capacity = 2;  // Refusals: listeners wait for the pool's room signal.
  }
  SUBCASE("single dispatcher") { options.dispatcher = Dispatcher::kSingle; }
  Server server(options);
  constexpr int kClients = 6;
  constexpr int kRounds = 40;
  const unsigned seed = 20261130;
  MESSAGE("seed " << seed);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937 random(seed + static_cast<unsigned>(c));
      for (int round = 0; round < kRounds; ++round) {
        Client client(server.port);
        const int count = 1 + static_cast<int>(random() % 20);
        for (int i = 1; i <= count; ++i) {
          client.search(
              i, "c" + std::to_string(c) + "r" + std::to_string(round) + "i" + std::to_string(i));
          if (random() % 10 == 0) {
            client.bind(1000 + i);
          }
        }
        client.flush();
        if (random() % 4 == 0) {
          continue;  // Disconnect with everything outstanding.
        }
        int done = 0;
        LdapMessage message;
        while (done < count) {
          if (!client.receive(message)) {
            failures.fetch_add(1);
            break;
          }
          if (message.op == ProtocolOp::kSearchResultEntry) {
            const std::string expected = "c" + std::to_string(c) + "r" + std::to_string(round) +
                                         "i" + std::to_string(message.message_id);
            if (message.search_entry.object_name != expected) {
              failures.fetch_add(1);
            }
          } else if (message.op == ProtocolOp::kSearchResultDone) {
            ++done;
          }
        }
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  CHECK(failures == 0);
  CHECK(server.handler.bind_violations == 0);
}

TEST_CASE("Frontend: a listener with nothing to read runs queued reads itself and no update") {
  FrontendOptions options;
  options.listeners = 1;
  options.workers = 1;
  options.listeners_help = true;
  Server server(options);
  struct GateOpener {  // A failed REQUIRE still lets the worker finish, so the server stops.
    FakeHandler& handler;
    ~GateOpener() { handler.open_gate(); }
  } opener{server.handler};
  Client client(server.port);
  client.set_receive_timeout(20);  // Unhelped, search 3 would wait for the gate: fail, not hang.
  client.del(1, "gate");
  client.flush();
  server.handler.wait_at_gate(1);  // The only worker is held at the gate.
  client.del(2, "second");
  client.search(3, "quick");
  client.flush();
  client.expect_search(3, "quick");
  // The listener counts the task it ran after the task returns, and so after the client may
  // have its answer: wait for the count rather than read it once.
  CHECK(eventually([&] { return server.frontend->snapshot().listeners[0].helped == 1; }));
  const FrontendSnapshot snapshot = server.frontend->snapshot();
  REQUIRE(snapshot.listeners.size() == 1);
  CHECK(server.handler.ran_on(3) == snapshot.listeners[0].tid);
  CHECK(snapshot.listeners[0].helped == 1);
  CHECK(server.handler.ran_on(2) == 0);  // Read before the search, left to the worker.
  server.handler.open_gate();
  std::set<std::int32_t> answered;
  LdapMessage message;
  for (int i = 0; i < 2; ++i) {
    REQUIRE(client.receive(message));
    CHECK(message.op == ProtocolOp::kDelResponse);
    answered.insert(message.message_id);
  }
  CHECK(answered == std::set<std::int32_t>{1, 2});
  CHECK(server.handler.ran_on(2) == server.handler.ran_on(1));  // The worker.
  CHECK(server.handler.ran_on(2) != snapshot.listeners[0].tid);
}

TEST_CASE("Frontend: a helping listener runs a request with its own worker state") {
  FrontendOptions options;
  options.listeners = 1;
  options.workers = 1;
  options.listeners_help = true;
  Server server(options);
  struct GateOpener {  // A failed REQUIRE still lets the worker finish, so the server stops.
    FakeHandler& handler;
    ~GateOpener() { handler.open_gate(); }
  } opener{server.handler};
  Client client(server.port);
  client.set_receive_timeout(20);  // Unhelped, search 2 would wait for the gate: fail, not hang.
  client.del(1, "gate");           // An update: only the worker takes it.
  client.flush();
  server.handler.wait_at_gate(1);  // The only worker is held at the gate.
  client.search(2, "quick");
  client.flush();
  client.expect_search(2, "quick");
  const FrontendSnapshot snapshot = server.frontend->snapshot();
  REQUIRE(snapshot.listeners.size() == 1);
  REQUIRE(snapshot.workers.size() == 1);
  const std::int32_t listener_tid = snapshot.listeners[0].tid;
  CHECK(server.handler.ran_on(2) == listener_tid);
  CHECK(server.handler.state_made_on(2) == listener_tid);  // The listener's, made on it.
  server.handler.open_gate();
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.op == ProtocolOp::kDelResponse);
  CHECK(server.handler.ran_on(1) == snapshot.workers[0].tid);
  CHECK(server.handler.state_made_on(1) == snapshot.workers[0].tid);  // The worker's own.
  CHECK(server.handler.state_made_on(1) != listener_tid);
}

TEST_CASE("Frontend: the single dispatcher's listener never runs a request") {
  FrontendOptions options;
  options.dispatcher = Dispatcher::kSingle;
  options.workers = 2;
  options.listeners_help = true;  // Ignored: the classic design.
  Server server(options);
  Client client(server.port);
  for (int i = 1; i <= 20; ++i) {
    client.search(i, "s" + std::to_string(i));
  }
  client.flush();
  std::set<std::int32_t> done;  // Two workers: the answers may come in any order.
  LdapMessage message;
  while (done.size() < 20) {
    REQUIRE(client.receive(message));
    if (message.op == ProtocolOp::kSearchResultDone) {
      done.insert(message.message_id);
    }
  }
  const FrontendSnapshot snapshot = server.frontend->snapshot();
  REQUIRE(snapshot.listeners.size() == 1);
  CHECK(snapshot.listeners[0].helped == 0);
  for (int i = 1; i <= 20; ++i) {
    CHECK(server.handler.ran_on(i) != snapshot.listeners[0].tid);
  }
}

TEST_CASE("Frontend: requests a full pool refused start once it has room") {
  FrontendOptions options;
  options.workers = 1;
  options.queue_capacity = 1;
  SUBCASE("percpu dispatcher") { options.dispatcher = Dispatcher::kPerCpu; }
  SUBCASE("single dispatcher") { options.dispatcher = Dispatcher::kSingle; }
  Server server(options);
  struct GateOpener {  // A failed REQUIRE still lets the worker finish, so the server stops.
    FakeHandler& handler;
    ~GateOpener() { handler.open_gate(); }
  } opener{server.handler};
  Client client(server.port);
  // The listener sleeps without a timeout: only the pool's room signal gets the refused
  // requests going. Without it this fails instead of hanging.
  client.set_receive_timeout(20);
  client.del(1, "gate");
  client.flush();
  server.handler.wait_at_gate(1);  // The only worker is held; search 2 fills the queue.
  for (int i = 2; i <= 6; ++i) {
    client.search(i, "s" + std::to_string(i));
  }
  client.flush();
  // All read: search 3 was refused and the rest are held behind it.
  REQUIRE(eventually([&] { return server.frontend->snapshot().listeners[0].requests == 6; }));
  server.handler.open_gate();
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.message_id == 1);
  CHECK(message.op == ProtocolOp::kDelResponse);
  for (int i = 2; i <= 6; ++i) {  // One worker: in order.
    client.expect_search(i, "s" + std::to_string(i));
  }
}

TEST_CASE("Frontend: the snapshot counts connections and requests per listener and per worker") {
  FrontendOptions options;
  options.listeners = 2;
  options.workers = 2;
  options.queue_capacity = 128;
  std::string dispatcher;
  SUBCASE("percpu dispatcher") {
    options.dispatcher = Dispatcher::kPerCpu;
    dispatcher = "percpu";
  }
  SUBCASE("single dispatcher") {
    options.dispatcher = Dispatcher::kSingle;
    dispatcher = "single";
  }
  Server server(options);
  constexpr int kSearches = 7;
  {
    Client client(server.port);
    for (int i = 1; i <= kSearches; ++i) {
      client.search(i, "s" + std::to_string(i));
      client.flush();
      client.expect_search(i, "s" + std::to_string(i));
    }
    FrontendSnapshot snapshot = server.frontend->snapshot();
    CHECK(snapshot.dispatcher == dispatcher);
    REQUIRE(snapshot.pools.size() == 1);
    CHECK(snapshot.pools[0].queue_capacity == 128);
    CHECK(snapshot.pools[0].workers == 2);
    CHECK(snapshot.pools[0].listeners == snapshot.listeners.size());
    CHECK(snapshot.listeners.size() == (dispatcher == "single" ? 1 : 2));
    REQUIRE(snapshot.workers.size() == 2);
    std::uint64_t open = 0, accepted = 0, requests = 0, bytes = 0;
    std::set<std::int32_t> tids;
    for (const ListenerSnapshot& listener : snapshot.listeners) {
      open += listener.connections;
      accepted += listener.accepted;
      requests += listener.requests;
      bytes += listener.bytes_received;
      CHECK(listener.pool == 0);
      CHECK(listener.name.rfind("listener-", 0) == 0);
      if (listener.accepted > 0) {
        tids.insert(listener.tid);  // It ran, so it has recorded its thread id.
      }
    }
    CHECK(open == 1);
    CHECK(accepted == 1);
    CHECK(requests == kSearches);
    CHECK(bytes > 0);
    // A worker counts a request once it has run, which is just after its answer was sent.
    auto worker_requests = [&] {
      std::uint64_t sum = 0;
      for (const WorkerSnapshot& worker : server.frontend->snapshot().workers) {
        sum += worker.requests;
      }
      return sum;
    };
    CHECK(eventually([&] { return worker_requests() == kSearches; }));
    REQUIRE(eventually([&] {
      for (const WorkerSnapshot& worker : server.frontend->snapshot().workers) {
        if (worker.tid == 0) {
          return false;
        }
      }
      return true;
    }));
    snapshot = server.frontend->snapshot();
    for (const WorkerSnapshot& worker : snapshot.workers) {
      CHECK(worker.name.rfind("worker", 0) == 0);
      CHECK(worker.pool == 0);
      tids.insert(worker.tid);
    }
    CHECK(tids.size() == 3);  // One listener and two workers: each its own thread.
    CHECK(tids.count(0) == 0);
    CHECK(snapshot.pools[0].queue_high_water <= kSearches);
  }
  // The client is gone: its listener closes the connection.
  CHECK(eventually([&] {
    std::uint64_t open = 0;
    for (const ListenerSnapshot& listener : server.frontend->snapshot().listeners) {
      open += listener.connections;
    }
    return open == 0;
  }));
}

}  // namespace
}  // namespace numadir::listener
