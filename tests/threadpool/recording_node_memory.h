// tests/threadpool/recording_node_memory.h: a NodeMemory (threadpool/node_memory.h) for tests: it
// binds nothing and records each call: the calling thread, the plan node and PUs asked for, the
// machine NUMA nodes of those PUs (HwlocNodeMemory::nodes_of on this machine) and the calling
// thread's CPU affinity at the time.
//
// Thread contract: bind_current_thread from any thread, concurrently; requests() from any thread.
#pragma once

#include <doctest/doctest.h>
#include <sched.h>

#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "threadpool/node_memory.h"
#include "threadpool/thread_counters.h"

namespace numadir::threadpool::testing {

struct MemoryRequest {
  std::int32_t tid = 0;  // os_thread_id() of the calling thread.
  unsigned plan_node = 0;
  std::vector<unsigned> pus;
  std::vector<unsigned> machine_nodes;  // Empty when nodes_of failed.
  MemoryUser user = MemoryUser::kPool;
  std::set<unsigned> affinity;  // The PUs the calling thread could run on when it asked.
};

// Returns: the PUs (OS indexes) the calling thread may run on.
inline std::set<unsigned> current_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::set<unsigned> pus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (unsigned pu = 0; pu < CPU_SETSIZE; ++pu) {
      if (CPU_ISSET(pu, &set)) {
        pus.insert(pu);
      }
    }
  }
  return pus;
}

class RecordingNodeMemory final : public NodeMemory {
 public:
  RecordingNodeMemory() {
    auto opened = HwlocNodeMemory::open();
    REQUIRE_MESSAGE(opened.ok(), opened.status().to_string());
    machine_ = *std::move(opened);
  }

  void bind_current_thread(unsigned plan_node, std::span<const unsigned> pus,
                           MemoryUser user) override {
    MemoryRequest request;
    request.tid = os_thread_id();
    request.plan_node = plan_node;
    request.pus.assign(pus.begin(), pus.end());
    if (auto nodes = machine_->nodes_of(pus); nodes.ok()) {
      request.machine_nodes = *std::move(nodes);
    }
    request.user = user;
    request.affinity = current_affinity();
    std::lock_guard lock(mu_);
    requests_.push_back(std::move(request));
  }

  std::vector<MemoryRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  std::unique_ptr<HwlocNodeMemory> machine_;
  mutable std::mutex mu_;
  std::vector<MemoryRequest> requests_;  // Guarded by mu_.
};

}  // namespace numadir::threadpool::testing
