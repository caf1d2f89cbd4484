// Tests of where the Frontend asks for each NUMA node's memory (FrontendOptions::node_memory),
// through the recording NodeMemory of tests/threadpool/recording_node_memory.h, on the plan of
// two emulated nodes mapped onto this machine's PUs. This machine has one NUMA node: every
// binding names node 0 and the real one (threadpool::HwlocNodeMemory) is a no-op here, so what
// is checked is who asks, for which node, from which thread pinned where.
#include "listener/frontend.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "tests/listener/frontend_test_util.h"
#include "tests/threadpool/recording_node_memory.h"
#include "tests/wait_until.h"
#include "threadpool/placement.h"
#include "threadpool/thread_counters.h"
#include "threadpool/topology.h"

namespace numadir::listener {
namespace {

using numadir::testing::wait_until;
using testing::Client;
using testing::Server;
using testing::two_node_plan;
using threadpool::MemoryUser;
using threadpool::testing::MemoryRequest;
using threadpool::testing::RecordingNodeMemory;

// Returns: the OS indexes of this machine's NUMA nodes that `pus` belong to, read by Topology
//   (its own walk of hwloc's nodes, not the hwloc_cpuset_to_nodeset of the code under test).
std::vector<unsigned> machine_nodes_of(const std::set<unsigned>& pus) {
  auto machine = threadpool::Topology::detect();
  REQUIRE(machine.ok());
  std::set<unsigned> nodes;
  for (const threadpool::ProcessingUnit& pu : machine->pus()) {
    if (pus.contains(pu.os_index)) {
      nodes.insert(machine->node_os_index(pu.node));
    }
  }
  return {nodes.begin(), nodes.end()};
}

// Serves a request, waits until every worker and listener of `server` has recorded its thread
// id, then stops the frontend so that each thread has done what it does before serving (a
// listener records its id before it pins itself and binds its memory).
// Returns: the snapshot taken before the stop.
FrontendSnapshot serve_and_stop(Server<>& server) {
  {
    Client client(server.port);
    client.search(1, "warm");
    client.flush();
    client.expect_search(1, "warm");
  }
  REQUIRE(wait_until([&] {
    const FrontendSnapshot snapshot = server.frontend->snapshot();
    return std::all_of(snapshot.workers.begin(), snapshot.workers.end(),
                       [](const WorkerSnapshot& w) { return w.tid != 0; }) &&
           std::all_of(snapshot.listeners.begin(), snapshot.listeners.end(),
                       [](const ListenerSnapshot& l) { return l.tid != 0; });
  }));
  FrontendSnapshot snapshot = server.frontend->snapshot();
  server.frontend->stop();
  return snapshot;
}

// Returns: the requests of thread `tid`.
std::vector<MemoryRequest> of_thread(const std::vector<MemoryRequest>& requests, std::int32_t tid) {
  std::vector<MemoryRequest> out;
  std::copy_if(requests.begin(), requests.end(), std::back_inserter(out),
               [tid](const MemoryRequest& r) { return r.tid == tid; });
  return out;
}

TEST_CASE("Frontend: each node of a two-node plan asks for its memory from its own threads") {
  RecordingNodeMemory recorder;
  FrontendOptions options;
  options.plan = two_node_plan();
  options.node_memory = &recorder;
  SUBCASE("listeners that help") { options.listeners_help = true; }
  SUBCASE("listeners that only read") { options.listeners_help = false; }
  Server server(options);
  const FrontendSnapshot snapshot = serve_and_stop(server);
  const std::vector<MemoryRequest> requests = recorder.requests();
  REQUIRE(snapshot.pools.size() == 2);
  CHECK(requests.size() == 2 + snapshot.workers.size() + snapshot.listeners.size());

  std::set<std::int32_t> pool_builders;
  for (std::size_t p = 0; p < options.plan->nodes.size(); ++p) {
    const threadpool::NodePlan& node = options.plan->nodes[p];
    CAPTURE(node.node);
    REQUIRE(snapshot.pools[p].name == "node" + std::to_string(node.node));
    // The PUs its threads are pinned to (on this 2-PU machine one each: node k on PU k).
    std::set<unsigned> pus;
    for (const auto& thread : node.workers) {
      pus.insert(*thread.pu);
    }
    for (const auto& thread : node.listeners) {
      pus.insert(*thread.pu);
    }
    const std::vector<unsigned> pu_list(pus.begin(), pus.end());
    const std::vector<unsigned> machine_nodes = machine_nodes_of(pus);
    CHECK(machine_nodes == std::vector<unsigned>{0});  // One-node hardware.
    const auto asks_for_node = [&](const MemoryRequest& request, MemoryUser user) {
      CHECK(request.user == user);
      CHECK(request.plan_node == node.node);
      CHECK(request.pus == pu_list);
      CHECK(request.machine_nodes == machine_nodes);
    };

    // The pool and its listeners' objects: built on a thread pinned to the node's PUs, which
    // asked before it built them.
    std::vector<MemoryRequest> builds;
    std::copy_if(requests.begin(), requests.end(), std::back_inserter(builds),
                 [&](const MemoryRequest& r) {
                   return r.user == MemoryUser::kPool && r.plan_node == node.node;
                 });
    REQUIRE(builds.size() == 1);
    asks_for_node(builds[0], MemoryUser::kPool);
    CHECK(builds[0].affinity == pus);
    CHECK(builds[0].tid != threadpool::os_thread_id());
    pool_builders.insert(builds[0].tid);

    // Each worker of the node's pool, from its own thread, pinned to its PU.
    std::size_t worker_index = 0;
    for (const WorkerSnapshot& worker : snapshot.workers) {
      if (worker.pool != p) {
        continue;
      }
      CAPTURE(worker.name);
      const std::vector<MemoryRequest> own = of_thread(requests, worker.tid);
      REQUIRE(own.size() == 1);
      asks_for_node(own[0], MemoryUser::kWorker);
      CHECK(own[0].affinity == std::set<unsigned>{*node.workers[worker_index].pu});
      ++worker_index;
    }
    CHECK(worker_index == node.workers.size());

    // Each listener of the node, from its own thread, pinned to its PU.
    std::size_t listener_index = 0;
    for (const ListenerSnapshot& listener : snapshot.listeners) {
      if (listener.pool != p) {
        continue;
      }
      CAPTURE(listener.name);
      const std::vector<MemoryRequest> own = of_thread(requests, listener.tid);
      REQUIRE(own.size() == 1);
      asks_for_node(own[0], MemoryUser::kListener);
      CHECK(own[0].affinity == std::set<unsigned>{*node.listeners[listener_index].pu});
      ++listener_index;
    }
    CHECK(listener_index == node.listeners.size());
  }
  CHECK(pool_builders.size() == 2);  // A thread per node.
}

TEST_CASE("Frontend: unpinned plans and the single dispatcher ask for no node's memory") {
  RecordingNodeMemory recorder;
  FrontendOptions options;
  options.node_memory = &recorder;
  SUBCASE("unpinned two-node plan") { options.plan = two_node_plan(/*pin=*/false); }
  SUBCASE("single dispatcher with a pinned plan") {
    options.plan = two_node_plan();
    options.dispatcher = Dispatcher::kSingle;
  }
  SUBCASE("no plan") { options.workers = 2; }
  Server server(options);
  serve_and_stop(server);
  CHECK(recorder.requests().empty());
}

}  // namespace
}  // namespace numadir::listener
