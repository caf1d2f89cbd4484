// Tests of threadpool/node_memory.h: the hwloc binding on this machine, build_on_node, and the
// pools' workers asking for their node's memory (through the recording NodeMemory).
#include "threadpool/node_memory.h"

#include <doctest/doctest.h>
#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/threadpool/recording_node_memory.h"
#include "tests/wait_until.h"
#include "threadpool/locked_queue_pool.h"
#include "threadpool/thread_counters.h"
#include "threadpool/topology.h"
#include "threadpool/worker_pool.h"

namespace numadir::threadpool {
namespace {

using numadir::testing::wait_until;
using testing::current_affinity;
using testing::MemoryRequest;
using testing::RecordingNodeMemory;

// This machine's node 0 (logical): its allowed PUs and its OS index, read by Topology (which
// finds a PU's node by a walk of its own, not by hwloc_cpuset_to_nodeset).
struct MachineNode {
  std::vector<unsigned> pus;
  unsigned os_index = 0;
};

MachineNode machine_node_zero() {
  auto machine = Topology::detect();
  REQUIRE_MESSAGE(machine.ok(), machine.status().to_string());
  MachineNode out;
  for (const ProcessingUnit& pu : machine->pus_of_node(0)) {
    out.pus.push_back(pu.os_index);
  }
  REQUIRE_FALSE(out.pus.empty());
  out.os_index = machine->node_os_index(0);
  return out;
}

// Captures what is written to std::cerr while it lives.
class CerrCapture {
 public:
  CerrCapture() : old_(std::cerr.rdbuf(text_.rdbuf())) {}
  ~CerrCapture() { std::cerr.rdbuf(old_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
};

TEST_CASE("HwlocNodeMemory: the PUs of node 0 belong to node 0") {
  const MachineNode node = machine_node_zero();
  auto memory = HwlocNodeMemory::open();
  REQUIRE_MESSAGE(memory.ok(), memory.status().to_string());
  auto nodes = (*memory)->nodes_of(node.pus);
  REQUIRE_MESSAGE(nodes.ok(), nodes.status().to_string());
  CHECK(*nodes == std::vector<unsigned>{node.os_index});
  // One PU alone too (the listeners' and workers' PUs of one plan node may be a single one).
  auto one = (*memory)->nodes_of(std::span<const unsigned>(node.pus.data(), 1));
  REQUIRE(one.ok());
  CHECK(*one == std::vector<unsigned>{node.os_index});
}

TEST_CASE("HwlocNodeMemory: binding a thread to node 0's PUs binds its memory to node 0") {
  const MachineNode node = machine_node_zero();
  auto memory = HwlocNodeMemory::open();
  REQUIRE_MESSAGE(memory.ok(), memory.status().to_string());
  // On a thread of its own: the binding stays with the thread, not with the test runner.
  Status bound;
  Result<MemoryBinding> before = MemoryBinding{};
  Result<MemoryBinding> after = MemoryBinding{};
  std::thread thread([&] {
    before = (*memory)->current_binding();
    bound = (*memory)->bind(node.pus);
    after = (*memory)->current_binding();
  });
  thread.join();
  if (!bound.ok()) {
    // A container's seccomp policy (EPERM) or a kernel without NUMA support (ENOSYS): refused
    // with its reason, and nothing else changed.
    MESSAGE("memory binding refused here: " << bound.message());
    CHECK(bound.code() == StatusCode::kUnsupported);
    CHECK(bound.message().find("hwloc_set_membind") != std::string::npos);
    return;
  }
  REQUIRE_MESSAGE(after.ok(), after.status().to_string());
  REQUIRE(before.ok());
  CHECK(before->is_default());  // A new thread has the test runner's, the default.
  CHECK(after->policy == "bind");
  CHECK(after->nodes == std::vector<unsigned>{node.os_index});
}

TEST_CASE("HwlocNodeMemory: a process started under a policy of its own keeps it") {
  const MachineNode node = machine_node_zero();
  std::string said;
  long set = 0;
  int set_errno = 0;
  Result<MemoryBinding> kept = MemoryBinding{};
  // On a thread of its own, as `numactl --interleave` does for a process: the policy is set
  // before the NodeMemory is opened, then a node's thread asks for its node.
  std::thread thread([&] {
    const unsigned long mask = 1ul << node.os_index;
    set = syscall(SYS_set_mempolicy, MPOL_INTERLEAVE, &mask, sizeof(mask) * 8 + 1);
    set_errno = errno;
    if (set != 0) {
      return;
    }
    auto memory = HwlocNodeMemory::open();
    REQUIRE(memory.ok());
    CerrCapture capture;
    (*memory)->bind_current_thread(0, node.pus, MemoryUser::kWorker);
    (*memory)->bind_current_thread(0, node.pus, MemoryUser::kListener);
    said = capture.text();
    kept = (*memory)->current_binding();
  });
  thread.join();
  if (set != 0) {
    MESSAGE("set_mempolicy refused here: " << std::strerror(set_errno));
    return;
  }
  REQUIRE(kept.ok());
  CHECK(kept->policy == "interleave");
  CHECK(std::count(said.begin(), said.end(), '\n') == 1);
  CHECK(said.find("started under the memory policy \"interleave\" on NUMA node " +
                  std::to_string(node.os_index)) != std::string::npos);
}

TEST_CASE("HwlocNodeMemory: CPUs of no node are refused and said once on standard error") {
  auto memory = HwlocNodeMemory::open();
  REQUIRE_MESSAGE(memory.ok(), memory.status().to_string());
  const unsigned missing[] = {1u << 19};
  auto nodes = (*memory)->nodes_of(missing);
  REQUIRE_FALSE(nodes.ok());
  CHECK(nodes.status().code() == StatusCode::kInvalidArgument);
  CHECK((*memory)->bind(missing).code() == StatusCode::kInvalidArgument);
  std::string said;
  std::thread thread([&] {
    CerrCapture capture;
    (*memory)->bind_current_thread(3, missing, MemoryUser::kWorker);
    (*memory)->bind_current_thread(3, missing, MemoryUser::kListener);  // Not said again.
    said = capture.text();
  });
  thread.join();
  CHECK(std::count(said.begin(), said.end(), '\n') == 1);
  CHECK(said.find("node 3 (worker thread)") != std::string::npos);
  CHECK(said.find("first touches") != std::string::npos);
}

TEST_CASE("build_on_node: builds on a thread pinned to the node and bound to its memory") {
  const MachineNode node = machine_node_zero();
  RecordingNodeMemory recorder;
  NodeBinding binding{&recorder, 1, {node.pus.front()}};
  std::int32_t built_on = 0;
  std::set<unsigned> built_affinity;
  build_on_node(binding, [&] {
    built_on = os_thread_id();
    built_affinity = current_affinity();
  });
  CHECK(built_on != os_thread_id());
  CHECK(built_affinity == std::set<unsigned>{node.pus.front()});
  const std::vector<MemoryRequest> requests = recorder.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].user == MemoryUser::kPool);
  CHECK(requests[0].tid == built_on);
  CHECK(requests[0].plan_node == 1);
  CHECK(requests[0].pus == std::vector<unsigned>{node.pus.front()});
  CHECK(requests[0].affinity == std::set<unsigned>{node.pus.front()});
  CHECK(requests[0].machine_nodes == std::vector<unsigned>{node.os_index});

  SUBCASE("without a binding it builds on the calling thread and asks for nothing") {
    build_on_node(NodeBinding{}, [&] { built_on = os_thread_id(); });
    CHECK(built_on == os_thread_id());
    CHECK(recorder.requests().size() == 1);
  }
}

TEST_CASE("TaskPool: each pinned worker asks for its node's memory before it makes its state") {
  auto machine = Topology::detect();
  REQUIRE(machine.ok());
  RecordingNodeMemory recorder;
  WorkerPoolOptions options;
  options.threads = 3;
  std::set<unsigned> node_pus;
  for (std::size_t i = 0; i < options.threads; ++i) {
    const unsigned pu = machine->pus()[i % machine->pus().size()].os_index;
    options.pins.push_back(pu);
    node_pus.insert(pu);
  }
  options.memory = NodeBinding{&recorder, 1, {node_pus.begin(), node_pus.end()}};
  // The factory runs on each worker as it starts: whether that worker had asked already.
  std::mutex mu;
  std::map<std::int32_t, bool> asked_before_state;
  options.make_worker_state = [&] {
    const std::int32_t tid = os_thread_id();
    bool asked = false;
    for (const MemoryRequest& request : recorder.requests()) {
      asked = asked || (request.tid == tid && request.user == MemoryUser::kWorker);
    }
    std::lock_guard lock(mu);
    asked_before_state[tid] = asked;
    return std::make_unique<WorkerState>();
  };
  std::unique_ptr<TaskPool> pool;
  SUBCASE("lock-free") { pool = std::make_unique<WorkerPool>(options); }
  SUBCASE("locked queue") { pool = std::make_unique<LockedQueuePool>(options); }
  pool->start();
  REQUIRE(wait_until([&] {
    for (std::size_t i = 0; i < pool->threads(); ++i) {
      if (pool->counters(i).tid.load() == 0) {
        return false;
      }
    }
    return true;
  }));
  const std::vector<MemoryRequest> requests = recorder.requests();
  CHECK(requests.size() == options.threads);
  for (std::size_t i = 0; i < pool->threads(); ++i) {
    const std::int32_t tid = pool->counters(i).tid.load();
    CAPTURE(i);
    const auto found = std::find_if(requests.begin(), requests.end(),
                                    [&](const MemoryRequest& r) { return r.tid == tid; });
    REQUIRE(found != requests.end());
    CHECK(found->user == MemoryUser::kWorker);
    CHECK(found->plan_node == 1);
    CHECK(found->pus == options.memory.pus);
    CHECK(found->affinity == std::set<unsigned>{*options.pins[i]});  // Pinned first.
    std::lock_guard lock(mu);
    CHECK(asked_before_state[tid]);
  }
  pool->stop();
}

TEST_CASE("TaskPool: workers without a node binding ask for no memory") {
  RecordingNodeMemory recorder;
  WorkerPoolOptions options;
  options.memory = NodeBinding{&recorder, 0, {}};  // No PUs: not active.
  WorkerPool pool(options);
  pool.start();
  REQUIRE(wait_until([&] { return pool.counters(1).tid.load() != 0; }));
  REQUIRE(wait_until([&] { return pool.counters(0).tid.load() != 0; }));
  pool.stop();
  CHECK(recorder.requests().empty());
}

}  // namespace
}  // namespace numadir::threadpool
