// threadpool/placement.h: the thread placement plan: for each NUMA node, its listener threads
// and its worker pool, and the PU each thread is pinned to. Pure computation over a Topology:
// nothing is started or pinned here (pin_current_thread in topology.h does that).
//
// Auto rules (a count of 0), to be revisited by measurement (perf/RESULTS.md):
// - Nodes: with no per-node options, every node that has an allowed PU, each with auto counts;
//   with options, exactly the nodes listed. A node with no allowed PU gets no threads.
// - Listeners per node: max(1, cores / 4), cores being the node's cores with an allowed PU.
// - Workers per node: one per allowed PU of the node.
// - Listeners and workers share PUs: a listener and a worker may be pinned to the same PU.
//   Listeners are spread over distinct cores first (listener i takes the first PU of core i,
//   then, once every core has one, the second PU of each core, ...); workers go round-robin
//   over the node's PUs in core order (worker j takes PU j). A node given fewer workers than
//   PUs takes the PUs without a listener first (in core order), then the listeners' PUs.
// - More threads than the node has PUs: the assignment wraps around (several threads per PU)
//   and to_table() notes it.
// - pin = false: the same counts, and no thread has a PU.
// - cpu_nodes: every allowed PU with its node, for the listeners' connection steering.
//
// Thread contract: plain values; plan_placement may be called from any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "threadpool/topology.h"

namespace numadir::threadpool {

// Threads asked for one node; 0 = auto.
struct NodeThreads {
  unsigned node;  // Logical NUMA node index.
  unsigned listeners = 0;
  unsigned workers = 0;
};

struct PlacementOptions {
  std::vector<NodeThreads> nodes;  // Empty: every node with an allowed PU, auto counts.
  bool pin = true;
};

// Most threads of one kind a node may be given (a typo guard, far above any useful count).
inline constexpr unsigned kMaxThreadsPerNode = 4096;

struct ThreadPlacement {
  unsigned node;                 // Logical NUMA node index.
  unsigned index;                // Position among its node's listeners (or workers), from 0.
  std::optional<unsigned> pu;    // OS index of the PU to pin to; nullopt when not pinned.
  std::optional<unsigned> core;  // Logical core index of `pu`; nullopt when not pinned.
};

struct NodePlan {
  unsigned node;
  std::vector<ThreadPlacement> listeners;
  std::vector<ThreadPlacement> workers;
  unsigned cores = 0;  // The node's cores and PUs with an allowed PU (for to_table's notes).
  unsigned pus = 0;
};

// A CPU (PU os index) of the machine and the NUMA node it belongs to.
struct CpuNode {
  unsigned cpu;
  unsigned node;
  friend bool operator==(const CpuNode&, const CpuNode&) = default;
};

struct PlacementPlan {
  std::vector<NodePlan> nodes;  // In node order; only nodes that get threads.
  bool pinned = true;
  // Every allowed PU and its node, in the topology's PU order: where a connection received on
  // that CPU is to be served (listener/frontend.h steers connections by it).
  std::vector<CpuNode> cpu_nodes;

  // Returns: a readable table, one line per thread ("listener-<node>-<index>",
  //   "worker-<node>-<index>") with its node, core and PU, then a note for each node whose
  //   threads of one kind outnumber its PUs.
  std::string to_table() const;
};

// Returns: the plan for `topology` under `options`, by the rules at the top of this file.
// Errors: kInvalidArgument naming the problem: a node that does not exist, a node listed
//   twice, a node listed with no allowed PU, more than kMaxThreadsPerNode threads of a kind.
Result<PlacementPlan> plan_placement(const Topology& topology, const PlacementOptions& options);

// Returns: `plan` (made for the emulated topology `emulated`) with each pinned thread's PU moved
//   onto this machine: the emulated topology's i-th PU (in pus() order) becomes `machine`'s
//   (i mod its PU count)-th, so that "numa:2 core:1 pu:1" on a 2-PU machine gives each emulated
//   node a PU of its own. Nodes, counts and cores stay the emulated ones; cpu_nodes names this
//   machine's CPUs, each with the node of the first emulated PU mapped onto it.
// Requires: every PU of `plan` is one of `emulated`'s.
PlacementPlan map_onto_machine(PlacementPlan plan, const Topology& emulated,
                               const Topology& machine);

}  // namespace numadir::threadpool
