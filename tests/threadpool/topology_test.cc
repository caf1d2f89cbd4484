// Topology from hwloc synthetic descriptions and from this machine; pinning a thread.
#include "threadpool/topology.h"

#include <doctest/doctest.h>

#include <sched.h>

#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace numadir::threadpool {
namespace {

// Returns: the CPUs in the calling thread's affinity mask.
std::set<unsigned> thread_affinity() {
  std::set<unsigned> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) {
      out.insert(cpu);
    }
  }
  return out;
}

std::vector<unsigned> os_indexes(std::span<const ProcessingUnit> pus) {
  std::vector<unsigned> out;
  for (const ProcessingUnit& pu : pus) {
    out.push_back(pu.os_index);
  }
  return out;
}

TEST_CASE("Topology: a synthetic machine has its nodes and cores and PUs in order") {
  auto topology = Topology::synthetic("numa:2 core:8 pu:2");
  REQUIRE_MESSAGE(topology.ok(), topology.status().to_string());
  CHECK(topology->node_count() == 2);
  REQUIRE(topology->pus().size() == 32);
  for (std::size_t i = 0; i < 32; ++i) {
    const ProcessingUnit& pu = topology->pus()[i];
    CHECK(pu.os_index == i);
    CHECK(pu.core == i / 2);  // Two SMT siblings per core.
    CHECK(pu.node == i / 16);
  }
  CHECK(topology->core_count(0) == 8);
  CHECK(topology->core_count(1) == 8);
  CHECK(topology->core_count(2) == 0);
  const std::vector<ProcessingUnit> node1 = topology->pus_of_node(1);
  REQUIRE(node1.size() == 16);
  CHECK(node1.front() == ProcessingUnit{16, 8, 1});
  CHECK(node1.back() == ProcessingUnit{31, 15, 1});
  CHECK(topology->pus_of_node(5).empty());
}

TEST_CASE("Topology: an hwloc XML file is read with every PU allowed") {
  // Exported by hwloc 2 from the synthetic "numa:2 core:2 pu:2".
  const std::string path = std::string(NUMADIR_TEST_DATA_DIR) + "/topology/numa2_core2_pu2.xml";
  auto topology = Topology::from_xml(path);
  REQUIRE_MESSAGE(topology.ok(), topology.status().to_string());
  CHECK(topology->node_count() == 2);
  CHECK(os_indexes(topology->pus()) == std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(topology->pus_of_node(1).size() == 4);
  CHECK(topology->core_count(1) == 2);
  CHECK(topology->describe().find("XML file " + path) != std::string::npos);
  auto missing = Topology::from_xml("/nonexistent/topology.xml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kInvalidArgument);
  CHECK(missing.status().message().find("/nonexistent/topology.xml") != std::string::npos);
}

TEST_CASE("Topology: emulated reads an XML file by its name and a synthetic description else") {
  auto synthetic = Topology::emulated("numa:2 core:1 pu:1");
  REQUIRE_MESSAGE(synthetic.ok(), synthetic.status().to_string());
  CHECK(synthetic->node_count() == 2);
  CHECK(synthetic->pus().size() == 2);
  auto xml =
      Topology::emulated(std::string(NUMADIR_TEST_DATA_DIR) + "/topology/numa2_core2_pu2.xml");
  REQUIRE_MESSAGE(xml.ok(), xml.status().to_string());
  CHECK(xml->pus().size() == 8);
  CHECK_FALSE(Topology::emulated("numa:two").ok());
}

TEST_CASE("Topology: allowed PUs restrict a synthetic machine like a cpuset") {
  const std::vector<unsigned> allowed = {5, 0, 1, 2};
  auto topology = Topology::synthetic("numa:2 core:4 pu:2", allowed);
  REQUIRE_MESSAGE(topology.ok(), topology.status().to_string());
  CHECK(topology->node_count() == 2);  // Node 1 is still there, with nothing allowed.
  CHECK(os_indexes(topology->pus()) == std::vector<unsigned>{0, 1, 2, 5});
  CHECK(topology->core_count(0) == 3);
  CHECK(topology->core_count(1) == 0);
  CHECK(topology->pus_of_node(1).empty());
  const std::string text = topology->describe();
  CHECK(text.find("allowed PUs: 4 of 16: 0-2,5") != std::string::npos);
  CHECK(text.find("node 0 (os 0): 3 cores, 4 PUs: 0-2,5") != std::string::npos);
  CHECK(text.find("node 1 (os 1): no allowed PU") != std::string::npos);
}

TEST_CASE("Topology: bad synthetic descriptions and unknown allowed PUs are errors") {
  SUBCASE("not a count") {
    auto topology = Topology::synthetic("numa:x");
    REQUIRE_FALSE(topology.ok());
    CHECK(topology.status().code() == StatusCode::kInvalidArgument);
    CHECK(topology.status().message().find("\"numa:x\"") != std::string::npos);
  }
  SUBCASE("not a type") { CHECK_FALSE(Topology::synthetic("bogus:3").ok()); }
  SUBCASE("empty") { CHECK_FALSE(Topology::synthetic("").ok()); }
  SUBCASE("a PU the machine lacks") {
    const std::vector<unsigned> allowed = {1, 4};
    auto topology = Topology::synthetic("numa:1 core:2 pu:1", allowed);
    REQUIRE_FALSE(topology.ok());
    CHECK(topology.status().code() == StatusCode::kInvalidArgument);
    CHECK(topology.status().message().find("no PU 4") != std::string::npos);
  }
}

TEST_CASE("Topology: describe summarizes the nodes and cores and the allowed set") {
  auto topology = Topology::synthetic("numa:1 core:2 pu:1");
  REQUIRE(topology.ok());
  const std::string text = topology->describe();
  INFO(text);
  CHECK(text.find("topology: synthetic \"numa:1 core:2 pu:1\"") != std::string::npos);
  CHECK(text.find("1 NUMA node, 2 cores, 2 PUs allowed") != std::string::npos);
  CHECK(text.find("allowed PUs: 2 of 2: 0-1") != std::string::npos);
  CHECK(text.find("node 0 (os 0): 2 cores, 2 PUs: 0-1") != std::string::npos);
}

TEST_CASE("Topology: cpu_list writes ranges") {
  CHECK(cpu_list({}).empty());
  CHECK(cpu_list({3}) == "3");
  CHECK(cpu_list({0, 1, 2, 3}) == "0-3");
  CHECK(cpu_list({11, 0, 10, 1, 8, 3, 2}) == "0-3,8,10-11");
  CHECK(cpu_list({4, 6, 4}) == "4,6");
}

TEST_CASE("Topology: detect finds the PUs this process may run on") {
  auto topology = Topology::detect();
  REQUIRE_MESSAGE(topology.ok(), topology.status().to_string());
  MESSAGE(topology->describe());
  REQUIRE(topology->pus().size() >= 1);
  CHECK(topology->node_count() >= 1);
  // The main thread is never pinned by these tests, so its mask is the process's.
  const std::vector<unsigned> found = os_indexes(topology->pus());
  CHECK(std::set<unsigned>(found.begin(), found.end()) == thread_affinity());
  std::size_t in_nodes = 0;
  for (unsigned node = 0; node < topology->node_count(); ++node) {
    in_nodes += topology->pus_of_node(node).size();
  }
  CHECK(in_nodes == topology->pus().size());
}

TEST_CASE("Topology: pin_current_thread pins the calling thread and no other") {
  auto topology = Topology::detect();
  REQUIRE(topology.ok());
  const unsigned target = topology->pus().back().os_index;
  const std::set<unsigned> main_before = thread_affinity();

  struct Seen {
    std::thread::id thread;
    Status status;
    std::set<unsigned> affinity;
    int cpu = -1;
  };
  std::promise<Seen> promise;
  std::future<Seen> seen_future = promise.get_future();
  std::thread pinned([&] {
    Seen seen;
    seen.thread = std::this_thread::get_id();
    seen.status = pin_current_thread(target);
    seen.affinity = thread_affinity();
    seen.cpu = sched_getcpu();  // sched_setaffinity moved this thread before returning.
    promise.set_value(std::move(seen));
  });
  const std::thread::id pinned_id = pinned.get_id();
  const Seen seen = seen_future.get();
  pinned.join();

  CHECK(seen.thread == pinned_id);
  CHECK(seen.thread != std::this_thread::get_id());
  REQUIRE_MESSAGE(seen.status.ok(), seen.status.to_string());
  CHECK(seen.affinity == std::set<unsigned>{target});
  CHECK(seen.cpu == static_cast<int>(target));
  CHECK(thread_affinity() == main_before);
}

TEST_CASE("Topology: pinning to a CPU that does not exist is an i/o error") {
  std::promise<Status> promise;
  std::thread thread([&] { promise.set_value(pin_current_thread(CPU_SETSIZE - 1)); });
  const Status status = promise.get_future().get();
  thread.join();
  REQUIRE_FALSE(status.ok());
  CHECK(status.code() == StatusCode::kIo);
  CHECK(status.message().find("Invalid argument") != std::string::npos);

  std::promise<Status> huge;
  std::thread other([&] { huge.set_value(pin_current_thread(4'000'000'000u)); });
  const Status huge_status = huge.get_future().get();
  other.join();
  CHECK(huge_status.code() == StatusCode::kIo);
}

}  // namespace
}  // namespace numadir::threadpool
