// threadpool/topology.h: the machine's NUMA nodes, cores and processing units (PUs), found with
// hwloc and restricted to the CPUs this process may run on; or an hwloc synthetic topology or XML
// file, so that tests, `numadir topology --synthetic` and a server with threads.topology can plan
// for (and serve on, their PUs mapped onto this machine's: placement.h map_onto_machine)
// machines we do not have. Also pin_current_thread, which binds the calling thread to one PU
// (pin_current_thread_to: to a set of them).
//
// Thread contract: a Topology is an immutable value once built (it keeps no hwloc handle): any
// thread may read it, copy it or destroy its own copy. detect() and synthetic() may be called
// from any thread. pin_current_thread affects only the calling thread.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace numadir::threadpool {

// One hardware thread the process may run on.
struct ProcessingUnit {
  unsigned os_index;  // The CPU number the kernel uses (sched_setaffinity, /proc/cpuinfo).
  unsigned core;      // hwloc's logical index of its core (machine-wide, 0-based).
  unsigned node;      // hwloc's logical index of its NUMA node (0-based).

  friend bool operator==(const ProcessingUnit&, const ProcessingUnit&) = default;
};

class Topology {
 public:
  // Returns: this machine's topology, restricted to the CPUs this process may run on: the
  //   process's CPU binding (taskset, sched_setaffinity: the union over its threads) and hwloc's
  //   allowed set (cgroup cpusets). Nodes keep their logical indexes; a node none of whose PUs
  //   is allowed stays in node_count() with no PUs.
  // Errors: kIo when hwloc cannot read the topology; kInvalidArgument when no PU is allowed.
  static Result<Topology> detect();

  // Returns: the topology hwloc builds from a synthetic description such as
  //   "numa:4 core:8 pu:2" (PUs numbered 0.. in order, as hwloc does). `allowed_pus` (os
  //   indexes), when non-empty, restricts it as a cpuset would.
  // Errors: kInvalidArgument when hwloc rejects the description (hwloc gives no reason unless
  //   HWLOC_SYNTHETIC_VERBOSE is set, in which case it prints one on stderr), when an allowed PU
  //   is not in the topology, or when no PU is left.
  static Result<Topology> synthetic(std::string_view description,
                                    std::span<const unsigned> allowed_pus = {});
  // Returns: the topology of an hwloc XML file (`lstopo --of xml`, `hwloc-gather-topology`), all
  //   of its PUs allowed.
  // Errors: kInvalidArgument naming the file when hwloc cannot read it.
  static Result<Topology> from_xml(const std::string& path);
  // Returns: an emulated topology (threads.topology): `description` read as an XML file when it
  //   ends in ".xml", else as a synthetic description. Errors: as from_xml / synthetic.
  static Result<Topology> emulated(std::string_view description);

  // Returns: the number of NUMA nodes (logical indexes 0..node_count()-1), including nodes
  //   with no allowed PU.
  std::size_t node_count() const { return node_os_indexes_.size(); }
  // Returns: the OS index of node `node` (logical), as the kernel and hwloc's node sets name it.
  //   Requires: node < node_count().
  unsigned node_os_index(unsigned node) const { return node_os_indexes_[node]; }
  // Returns: the allowed PUs, ordered by node, core, then os index; never empty. The view
  //   lives as long as this Topology.
  std::span<const ProcessingUnit> pus() const { return pus_; }
  // Returns: the allowed PUs of `node`, in core order; empty for an unknown node.
  std::vector<ProcessingUnit> pus_of_node(unsigned node) const;
  // Returns: the cores of `node` that have at least one allowed PU; 0 for an unknown node.
  std::size_t core_count(unsigned node) const;
  // Returns: a readable, multi-line summary: where it came from, nodes, cores and PUs per node,
  //   and the allowed set.
  std::string describe() const;

 private:
  friend class TopologyBuilder;  // topology.cc: fills one in from a loaded hwloc topology.
  Topology() = default;

  std::string source_;                     // "this machine (hwloc 2.9.0)", "synthetic ...".
  std::vector<unsigned> node_os_indexes_;  // By logical index.
  std::vector<ProcessingUnit> pus_;        // Allowed only; ordered as pus() says.
  std::size_t machine_pus_ = 0;            // PUs before the restriction.
};

// Returns: `cpus` (os indexes) as a compact list, e.g. "0-3,8,10-11"; "" when empty.
std::string cpu_list(std::vector<unsigned> cpus);

// Pins the calling thread to the PU with os index `os_index` (sched_setaffinity).
// Errors: kIo with the errno text (e.g. a CPU that does not exist or is not allowed).
[[nodiscard]] Status pin_current_thread(unsigned os_index);
// Pins the calling thread to the PUs `os_indexes` (it may run on any of them).
// Errors: kIo with the errno text; kInvalidArgument when `os_indexes` is empty.
[[nodiscard]] Status pin_current_thread_to(std::span<const unsigned> os_indexes);

}  // namespace numadir::threadpool
