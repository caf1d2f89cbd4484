// Placement plans for hwloc synthetic machines: auto counts, spreading, cpusets, wrapping.
#include "threadpool/placement.h"

#include <doctest/doctest.h>

#include <set>
#include <vector>

namespace numadir::threadpool {
namespace {

Topology synthetic(std::string_view description, std::span<const unsigned> allowed = {}) {
  auto topology = Topology::synthetic(description, allowed);
  REQUIRE_MESSAGE(topology.ok(), topology.status().to_string());
  return *std::move(topology);
}

PlacementPlan plan(const Topology& topology, const PlacementOptions& options = {}) {
  auto result = plan_placement(topology, options);
  REQUIRE_MESSAGE(result.ok(), result.status().to_string());
  return *std::move(result);
}

std::vector<unsigned> pus_of(const std::vector<ThreadPlacement>& threads) {
  std::vector<unsigned> out;
  for (const ThreadPlacement& thread : threads) {
    REQUIRE(thread.pu.has_value());
    out.push_back(*thread.pu);
  }
  return out;
}

std::vector<unsigned> cores_of(const std::vector<ThreadPlacement>& threads) {
  std::vector<unsigned> out;
  for (const ThreadPlacement& thread : threads) {
    REQUIRE(thread.core.has_value());
    out.push_back(*thread.core);
  }
  return out;
}

std::vector<unsigned> range(unsigned from, unsigned to) {
  std::vector<unsigned> out;
  for (unsigned i = from; i < to; ++i) {
    out.push_back(i);
  }
  return out;
}

TEST_CASE("Placement: an emulated plan's PUs are moved onto the machine's in order") {
  const Topology emulated = synthetic("numa:2 core:1 pu:1");  // PUs 0 (node 0) and 1 (node 1).
  const PlacementPlan planned = plan(emulated);
  REQUIRE(planned.nodes.size() == 2);
  // A machine whose allowed PUs are 3 and 5: node 0's threads go to 3, node 1's to 5.
  const std::vector<unsigned> two = {3, 5};
  const PlacementPlan mapped = map_onto_machine(planned, emulated, synthetic("core:8 pu:1", two));
  REQUIRE(mapped.nodes.size() == 2);
  for (unsigned node = 0; node < 2; ++node) {
    const unsigned expected = two[node];
    CHECK(mapped.nodes[node].node == node);
    CHECK(mapped.nodes[node].listeners.size() == planned.nodes[node].listeners.size());
    CHECK(mapped.nodes[node].workers.size() == planned.nodes[node].workers.size());
    for (const unsigned pu : pus_of(mapped.nodes[node].listeners)) {
      CHECK(pu == expected);
    }
    for (const unsigned pu : pus_of(mapped.nodes[node].workers)) {
      CHECK(pu == expected);
    }
  }
  CHECK(planned.cpu_nodes == std::vector<CpuNode>{{0, 0}, {1, 1}});
  CHECK(mapped.cpu_nodes == std::vector<CpuNode>{{3, 0}, {5, 1}});
  // A machine with one PU: every thread shares it.
  const std::vector<unsigned> one = {2};
  const PlacementPlan single = map_onto_machine(planned, emulated, synthetic("core:4 pu:1", one));
  for (const NodePlan& node : single.nodes) {
    for (const unsigned pu : pus_of(node.workers)) {
      CHECK(pu == 2);
    }
  }
  // An unpinned plan stays unpinned.
  PlacementOptions unpinned;
  unpinned.pin = false;
  const PlacementPlan loose =
      map_onto_machine(plan(emulated, unpinned), emulated, synthetic("core:8 pu:1", two));
  CHECK_FALSE(loose.nodes[0].workers.at(0).pu.has_value());
}

TEST_CASE("Placement: one node with two cores gets one listener and a worker per PU") {
  const Topology topology = synthetic("numa:1 core:2 pu:1");
  const PlacementPlan p = plan(topology);
  CHECK(p.pinned);
  REQUIRE(p.nodes.size() == 1);
  const NodePlan& node = p.nodes[0];
  CHECK(node.node == 0);
  CHECK(node.cores == 2);
  CHECK(node.pus == 2);
  REQUIRE(node.listeners.size() == 1);
  CHECK(node.listeners[0].node == 0);
  CHECK(node.listeners[0].index == 0);
  CHECK(pus_of(node.listeners) == std::vector<unsigned>{0});
  CHECK(pus_of(node.workers) == std::vector<unsigned>{0, 1});
  CHECK(node.workers[1].index == 1);
  const std::string table = p.to_table();
  INFO(table);
  CHECK(table.find("placement: pinned, 1 node, 1 listener, 2 workers") != std::string::npos);
  CHECK(table.find("listener-0-0         0     0     0\n") != std::string::npos);
  CHECK(table.find("worker-0-1           0     1     1\n") != std::string::npos);
  CHECK(table.find("note:") == std::string::npos);
}

TEST_CASE("Placement: two SMT nodes spread listeners over distinct cores") {
  const Topology topology = synthetic("numa:2 core:8 pu:2");
  const PlacementPlan p = plan(topology);
  REQUIRE(p.nodes.size() == 2);
  for (unsigned n = 0; n < 2; ++n) {
    const NodePlan& node = p.nodes[n];
    CHECK(node.node == n);
    // 8 cores / 4 = 2 listeners, on the first PU of cores 0 and 1 of the node.
    CHECK(pus_of(node.listeners) == std::vector<unsigned>{16 * n, 16 * n + 2});
    CHECK(cores_of(node.listeners) == std::vector<unsigned>{8 * n, 8 * n + 1});
    // One worker per PU, in core order.
    CHECK(pus_of(node.workers) == range(16 * n, 16 * n + 16));
    for (const ThreadPlacement& thread : node.workers) {
      CHECK(thread.node == n);
    }
  }
}

TEST_CASE("Placement: four nodes each get their own threads") {
  const Topology topology = synthetic("numa:4 core:8 pu:2");
  const PlacementPlan p = plan(topology);
  REQUIRE(p.nodes.size() == 4);
  std::set<unsigned> worker_pus;
  for (unsigned n = 0; n < 4; ++n) {
    CHECK(p.nodes[n].listeners.size() == 2);
    REQUIRE(p.nodes[n].workers.size() == 16);
    for (unsigned pu : pus_of(p.nodes[n].workers)) {
      CHECK(topology.pus()[pu].node == n);  // PU os indexes are 0.. in order here.
      worker_pus.insert(pu);
    }
  }
  CHECK(worker_pus.size() == 64);
  CHECK(p.to_table().find("placement: pinned, 4 nodes, 8 listeners, 64 workers") !=
        std::string::npos);
}

TEST_CASE("Placement: listeners take a second PU of a core only once every core has one") {
  const Topology topology = synthetic("numa:1 core:3 pu:2");
  PlacementOptions options;
  options.nodes = {NodeThreads{0, 5, 0}};
  const PlacementPlan p = plan(topology, options);
  REQUIRE(p.nodes.size() == 1);
  CHECK(pus_of(p.nodes[0].listeners) == std::vector<unsigned>{0, 2, 4, 1, 3});
  CHECK(p.nodes[0].workers.size() == 6);  // Auto.
}

TEST_CASE("Placement: a restricted cpuset uses only allowed PUs") {
  // Node 0: core 0 {0 1}, core 1 {2}, core 2 {5}; node 1: nothing allowed.
  const std::vector<unsigned> allowed = {0, 1, 2, 5};
  const Topology topology = synthetic("numa:2 core:4 pu:2", allowed);
  SUBCASE("auto leaves the node without PUs out") {
    const PlacementPlan p = plan(topology);
    REQUIRE(p.nodes.size() == 1);
    CHECK(p.nodes[0].node == 0);
    CHECK(p.nodes[0].cores == 3);
    CHECK(pus_of(p.nodes[0].listeners) == std::vector<unsigned>{0});
    CHECK(pus_of(p.nodes[0].workers) == std::vector<unsigned>{0, 1, 2, 5});
  }
  SUBCASE("listeners spread over the allowed cores") {
    PlacementOptions options;
    options.nodes = {NodeThreads{0, 4, 0}};
    const PlacementPlan p = plan(topology, options);
    CHECK(pus_of(p.nodes[0].listeners) == std::vector<unsigned>{0, 2, 5, 1});
  }
  SUBCASE("asking threads on the node without PUs is an error naming it") {
    PlacementOptions options;
    options.nodes = {NodeThreads{0, 1, 1}, NodeThreads{1, 1, 1}};
    auto p = plan_placement(topology, options);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == StatusCode::kInvalidArgument);
    CHECK(p.status().message().find("node 1 has no PU") != std::string::npos);
  }
}

TEST_CASE("Placement: more threads than PUs wrap around and the table notes it") {
  const Topology topology = synthetic("numa:1 core:2 pu:1");
  PlacementOptions options;
  options.nodes = {NodeThreads{0, 3, 5}};
  const PlacementPlan p = plan(topology, options);
  REQUIRE(p.nodes.size() == 1);
  CHECK(pus_of(p.nodes[0].listeners) == std::vector<unsigned>{0, 1, 0});
  CHECK(pus_of(p.nodes[0].workers) == std::vector<unsigned>{0, 1, 0, 1, 0});
  CHECK(p.nodes[0].workers[4].index == 4);
  const std::string table = p.to_table();
  INFO(table);
  CHECK(table.find("note: node 0: 3 listeners for 2 PUs: several threads per PU") !=
        std::string::npos);
  CHECK(table.find("note: node 0: 5 workers for 2 PUs: several threads per PU") !=
        std::string::npos);
}

TEST_CASE("Placement: pin false keeps the counts and pins nothing") {
  const Topology topology = synthetic("numa:2 core:8 pu:2");
  PlacementOptions options;
  options.pin = false;
  const PlacementPlan p = plan(topology, options);
  CHECK_FALSE(p.pinned);
  REQUIRE(p.nodes.size() == 2);
  for (const NodePlan& node : p.nodes) {
    CHECK(node.listeners.size() == 2);
    CHECK(node.workers.size() == 16);
    for (const ThreadPlacement& thread : node.listeners) {
      CHECK_FALSE(thread.pu.has_value());
      CHECK_FALSE(thread.core.has_value());
    }
    for (const ThreadPlacement& thread : node.workers) {
      CHECK_FALSE(thread.pu.has_value());
    }
  }
  const std::string table = p.to_table();
  CHECK(table.find("not pinned") != std::string::npos);
  CHECK(table.find("worker-1-15          1     -     -\n") != std::string::npos);
}

TEST_CASE("Placement: listed nodes only get threads and in node order") {
  const Topology topology = synthetic("numa:4 core:8 pu:2");
  PlacementOptions options;
  options.nodes = {NodeThreads{3, 1, 2}, NodeThreads{1}};
  const PlacementPlan p = plan(topology, options);
  REQUIRE(p.nodes.size() == 2);
  CHECK(p.nodes[0].node == 1);
  CHECK(p.nodes[0].listeners.size() == 2);  // Auto.
  CHECK(p.nodes[0].workers.size() == 16);   // Auto.
  CHECK(p.nodes[1].node == 3);
  CHECK(pus_of(p.nodes[1].listeners) == std::vector<unsigned>{48});
  CHECK(pus_of(p.nodes[1].workers) == std::vector<unsigned>{49, 50});  // Not the listener's.
}

TEST_CASE("Placement: fewer workers than PUs leave the listeners' PUs to them") {
  const Topology topology = synthetic("numa:1 core:2 pu:1");
  PlacementOptions options;
  options.nodes = {NodeThreads{0, 1, 1}};
  PlacementPlan p = plan(topology, options);
  CHECK(pus_of(p.nodes[0].listeners) == std::vector<unsigned>{0});
  CHECK(pus_of(p.nodes[0].workers) == std::vector<unsigned>{1});

  options.nodes = {NodeThreads{0, 2, 1}};  // Every PU has a listener: the worker shares one.
  p = plan(topology, options);
  CHECK(pus_of(p.nodes[0].workers) == std::vector<unsigned>{0});

  const Topology bigger = synthetic("numa:1 core:4 pu:2");  // PUs 0-7, core k: 2k and 2k+1.
  options.nodes = {NodeThreads{0, 2, 3}};
  p = plan(bigger, options);
  CHECK(pus_of(p.nodes[0].listeners) == std::vector<unsigned>{0, 2});
  CHECK(pus_of(p.nodes[0].workers) == std::vector<unsigned>{1, 3, 4});
  options.nodes = {NodeThreads{0, 2, 8}};  // As many workers as PUs: one on each, in order.
  p = plan(bigger, options);
  CHECK(pus_of(p.nodes[0].workers) == std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("Placement: bad options are errors naming the problem") {
  const Topology topology = synthetic("numa:2 core:2 pu:1");
  PlacementOptions options;
  std::string expected;
  SUBCASE("an unknown node") {
    options.nodes = {NodeThreads{7, 1, 1}};
    expected = "node 7 does not exist (nodes: 0-1)";
  }
  SUBCASE("a node listed twice") {
    options.nodes = {NodeThreads{0, 1, 1}, NodeThreads{0, 2, 2}};
    expected = "node 0 is listed twice";
  }
  SUBCASE("too many threads") {
    options.nodes = {NodeThreads{1, 1, kMaxThreadsPerNode + 1}};
    expected = "node 1: more than 4096";
  }
  auto p = plan_placement(topology, options);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == StatusCode::kInvalidArgument);
  CHECK_MESSAGE(p.status().message().find(expected) != std::string::npos, p.status().message());
}

}  // namespace
}  // namespace numadir::threadpool
