// Tests of the Frontend's threads over real loopback sockets, with the fake handler and client
// of frontend_test_util.h: which thread runs what (pinned placement plans, helping listeners,
// the single dispatcher), many clients at once, and the snapshot's counters per listener and
// per worker. The per-connection rules: frontend_test.cc.
#include "listener/frontend.h"

#include <doctest/doctest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/listener/frontend_test_util.h"
#include "tests/wait_until.h"
#include "threadpool/placement.h"
#include "threadpool/topology.h"

namespace numadir::listener {
namespace {

using numadir::testing::wait_until;
using testing::Client;
using testing::FakeHandler;
using testing::GateOpener;
using testing::Server;
using wire::LdapMessage;
using wire::ProtocolOp;

// Returns: the PUs (OS indexes) thread `tid` may run on; tid 0: the calling thread.
std::set<unsigned> affinity_of(std::int32_t tid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(tid, sizeof(set), &set) == 0);
  std::set<unsigned> pus;
  for (unsigned pu = 0; pu < CPU_SETSIZE; ++pu) {
    if (CPU_ISSET(pu, &set)) {
      pus.insert(pu);
    }
  }
  return pus;
}

TEST_CASE("Frontend: a placement plan of this machine serves with pinned threads") {
  auto topology = threadpool::Topology::detect();
  REQUIRE_MESSAGE(topology.ok(), topology.status().to_string());
  threadpool::PlacementOptions placement;
  SUBCASE("pinned") { placement.pin = true; }
  SUBCASE("unpinned") { placement.pin = false; }
  auto plan = threadpool::plan_placement(*topology, placement);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  // The threads start from this thread's mask: unpinned, they keep it.
  const std::set<unsigned> inherited = affinity_of(0);
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
  // A worker records its thread id once it has pinned itself; a listener pins itself before
  // it serves, and ours has served.
  REQUIRE(wait_until([&] {
    for (const WorkerSnapshot& worker : server.frontend->snapshot().workers) {
      if (worker.tid == 0) {
        return false;
      }
    }
    return true;
  }));
  const FrontendSnapshot snapshot = server.frontend->snapshot();
  // The snapshot lists listeners and workers node by node, in the plan's order.
  std::vector<std::optional<unsigned>> listener_pus, worker_pus;
  for (const threadpool::NodePlan& node : plan->nodes) {
    for (const threadpool::ThreadPlacement& listener : node.listeners) {
      listener_pus.push_back(listener.pu);
    }
    for (const threadpool::ThreadPlacement& worker : node.workers) {
      worker_pus.push_back(worker.pu);
    }
  }
  REQUIRE(snapshot.listeners.size() == listener_pus.size());
  REQUIRE(snapshot.workers.size() == worker_pus.size());
  const auto expected = [&](const std::optional<unsigned>& pu) {
    CHECK(pu.has_value() == placement.pin);
    return pu.has_value() ? std::set<unsigned>{*pu} : inherited;
  };
  for (std::size_t i = 0; i < snapshot.listeners.size(); ++i) {
    CAPTURE(snapshot.listeners[i].name);
    CHECK(affinity_of(snapshot.listeners[i].tid) == expected(listener_pus[i]));
  }
  std::set<std::int32_t> worker_tids;
  for (std::size_t i = 0; i < snapshot.workers.size(); ++i) {
    CAPTURE(snapshot.workers[i].name);
    CHECK(affinity_of(snapshot.workers[i].tid) == expected(worker_pus[i]));
    worker_tids.insert(snapshot.workers[i].tid);
  }
  for (int i = 1; i <= 20; ++i) {
    CHECK(worker_tids.count(server.handler.ran_on(i)) == 1);  // Run by those workers.
  }
}

TEST_CASE("Frontend: a listener with nothing to read runs queued reads itself and no update") {
  FrontendOptions options;
  options.listeners = 1;
  options.workers = 1;
  options.listeners_help = true;
  Server server(options);
  const GateOpener opener{server.handler};
  Client client(server.port);
  client.set_receive_timeout(20);  // Unhelped, search 3 would wait for the gate: fail, not hang.
  client.del(1, "gate");
  client.flush();
  server.handler.wait_at_gate(1);  // The only worker is held at the gate.
  client.del(2, "second");
  client.search(3, "quick");
  client.flush();
  client.expect_search(3, "quick");
  // The listener counts the request it ran once run() returns, just after the answer was sent.
  REQUIRE(wait_until([&] { return server.frontend->snapshot().listeners.at(0).helped >= 1; }));
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
  const std::size_t listeners = dispatcher == "single" ? 1 : 2;
  const auto accepted_by = [&] {
    std::vector<std::uint64_t> accepted;
    for (const ListenerSnapshot& listener : server.frontend->snapshot().listeners) {
      accepted.push_back(listener.accepted);
    }
    return accepted;
  };
  // Clients connect one at a time, each searching once; the listener whose accepted count
  // went up holds it. SO_REUSEPORT hashes connections, so more come until every listener has
  // one (64 landing on one of two listeners: odds of 2^-63).
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::size_t> listener_of;
  std::vector<int> searches;      // Per client; message IDs 100 * client + 1.. are unique.
  std::vector<std::int32_t> ids;  // Every search's message ID.
  std::vector<std::uint64_t> expected_accepted(listeners, 0);
  while (clients.size() < 64 &&
         std::count(expected_accepted.begin(), expected_accepted.end(), 0) != 0) {
    const std::vector<std::uint64_t> before = accepted_by();
    const int c = static_cast<int>(clients.size());
    clients.push_back(std::make_unique<Client>(server.port));
    clients.back()->search(100 * c + 1, "c" + std::to_string(c));
    clients.back()->flush();
    clients.back()->expect_search(100 * c + 1, "c" + std::to_string(c));
    ids.push_back(100 * c + 1);
    const std::vector<std::uint64_t> after = accepted_by();
    REQUIRE(after.size() == listeners);
    std::size_t which = listeners;
    for (std::size_t l = 0; l < listeners; ++l) {
      if (after[l] == before[l] + 1) {
        which = l;
      }
    }
    REQUIRE(which < listeners);
    listener_of.push_back(which);
    searches.push_back(1);
    ++expected_accepted[which];
  }
  REQUIRE(std::count(expected_accepted.begin(), expected_accepted.end(), 0) == 0);
  // Client c searches c + 1 more times, so each listener's total is its own.
  for (std::size_t c = 0; c < clients.size(); ++c) {
    for (std::size_t i = 0; i <= c; ++i) {
      const int id = static_cast<int>(100 * c + searches[c] + 1);
      clients[c]->search(id, "x");
      clients[c]->flush();
      clients[c]->expect_search(id, "x");
      ids.push_back(id);
      ++searches[c];
    }
  }
  // Both workers run requests: the first client's gate search holds one worker while the
  // second client's search runs on the other.
  clients[0]->search(99, "gate");
  clients[0]->flush();
  server.handler.wait_at_gate(1);
  clients[1 % clients.size()]->search(98, "beside");
  clients[1 % clients.size()]->flush();
  clients[1 % clients.size()]->expect_search(98, "beside");
  server.handler.open_gate();
  clients[0]->expect_search(99, "gate");
  ++searches[0];
  ++searches[1 % clients.size()];
  ids.push_back(99);
  ids.push_back(98);

  std::vector<std::uint64_t> expected_requests(listeners, 0), expected_bytes(listeners, 0);
  std::uint64_t total = 0;
  for (std::size_t c = 0; c < clients.size(); ++c) {
    expected_requests[listener_of[c]] += static_cast<std::uint64_t>(searches[c]);
    expected_bytes[listener_of[c]] += clients[c]->bytes_sent();
    total += static_cast<std::uint64_t>(searches[c]);
  }
  // A worker counts a request once it has run, which is just after its answer was sent.
  const auto worker_requests = [&] {
    std::uint64_t sum = 0;
    for (const WorkerSnapshot& worker : server.frontend->snapshot().workers) {
      sum += worker.requests;
    }
    return sum;
  };
  REQUIRE(wait_until([&] { return worker_requests() == total; }));
  FrontendSnapshot snapshot = server.frontend->snapshot();
  CHECK(snapshot.dispatcher == dispatcher);
  REQUIRE(snapshot.pools.size() == 1);
  CHECK(snapshot.pools[0].queue_capacity == 128);
  CHECK(snapshot.pools[0].workers == 2);
  CHECK(snapshot.pools[0].listeners == listeners);
  CHECK(snapshot.pools[0].queue_high_water <= total);
  REQUIRE(snapshot.listeners.size() == listeners);
  std::set<std::int32_t> tids;
  for (std::size_t l = 0; l < listeners; ++l) {
    const ListenerSnapshot& listener = snapshot.listeners[l];
    CAPTURE(listener.name);
    CHECK(listener.pool == 0);
    CHECK(listener.name.rfind("listener-", 0) == 0);
    CHECK(listener.connections == expected_accepted[l]);
    CHECK(listener.accepted == expected_accepted[l]);
    CHECK(listener.refused == 0);
    CHECK(listener.requests == expected_requests[l]);
    CHECK(listener.bytes_received == expected_bytes[l]);
    tids.insert(listener.tid);
  }
  // Each worker counts what ran on its own thread (the handler saw which thread ran each ID).
  REQUIRE(snapshot.workers.size() == 2);
  for (const WorkerSnapshot& worker : snapshot.workers) {
    CAPTURE(worker.name);
    CHECK(worker.name.rfind("worker", 0) == 0);
    CHECK(worker.pool == 0);
    std::uint64_t ran = 0;
    for (const std::int32_t id : ids) {
      ran += server.handler.ran_on(id) == worker.tid ? 1 : 0;
    }
    CHECK(worker.requests >= 1);
    CHECK(worker.requests == ran);
    tids.insert(worker.tid);
  }
  CHECK(tids.size() == listeners + 2);  // Every listener and both workers: each its own thread.
  CHECK(tids.count(0) == 0);

  clients.clear();  // Gone: the listeners close the connections.
  CHECK(wait_until([&] {
    std::uint64_t open = 0;
    for (const ListenerSnapshot& listener : server.frontend->snapshot().listeners) {
      open += listener.connections;
    }
    return open == 0;
  }));
}

TEST_CASE("Frontend: max_connections holds while several listeners accept at once") {
  FrontendOptions options;
  options.listeners = 4;
  options.limits.max_connections = 1;
  Server server(options);
  GateOpener opener{server.handler};
  // The first listener to accept stops inside open_session, after its limit check and before
  // its connection counts as open: the window in which another listener checks the limit too.
  server.handler.hold_sessions = true;
  const auto total = [&](auto counter) {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < server.frontend->listener_count(); ++i) {
      sum += (server.frontend->listener(i).counters().*counter).load();
    }
    return sum;
  };
  // SO_REUSEPORT hashes them over the listeners: the odds that all 16 reach the held one are
  // 4^-15. Each connect completes in the kernel's backlog, accepted or not.
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::make_unique<Client>(server.port));
  }
  // Another listener refuses its connection: the slot was taken before open_session. (Had the
  // limit only been read, it would have opened a second session, and come to the gate too.)
  REQUIRE(wait_until(
      [&] { return total(&ListenerCounters::refused) >= 1 || server.handler.at_gate() >= 2; }));
  REQUIRE(wait_until([&] { return server.handler.at_gate() >= 1; }));  // The held one, there.
  CHECK(server.handler.at_gate() == 1);
  server.handler.open_gate();
  REQUIRE(wait_until([&] {
    return total(&ListenerCounters::accepted) + total(&ListenerCounters::refused) == 16;
  }));
  CHECK(total(&ListenerCounters::accepted) == 1);
  CHECK(total(&ListenerCounters::open) == 1);
  CHECK(server.handler.sessions_opened == 1);
}

}  // namespace
}  // namespace numadir::listener
