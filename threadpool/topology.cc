// threadpool/topology.cc: see topology.h. hwloc is called here and in node_memory.cc only.
#include "threadpool/topology.h"

#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <set>
#include <system_error>
#include <tuple>
#include "threadpool/detail/hwloc_bitmap.h"

namespace numadir::threadpool {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using TopologyHandle = std::unique_ptr<hwloc_topology, TopologyDeleter>;

// CPU numbers above this are refused before allocating a cpu_set_t for them (Linux's own
// limit, NR_CPUS, is at most 8192 today).
constexpr unsigned kMaxCpuIndex = 1u << 20;

Result<TopologyHandle> new_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    return Status(StatusCode::kIo, "hwloc: cannot initialize: " + detail::errno_text(errno));
  }
  return TopologyHandle(raw);
}

Status load(hwloc_topology_t topology) {
  if (hwloc_topology_load(topology) != 0) {
    return Status(StatusCode::kIo, "hwloc: cannot read the topology: " + detail::errno_text(errno));
  }
  return Status();
}

// Returns: the logical index of the first NUMA node (in logical order) whose CPUs include `pu`;
//   0 when none does (hwloc always has a node 0).
unsigned node_of(hwloc_topology_t topology, hwloc_obj_t pu) {
  hwloc_obj_t node = nullptr;
  while ((node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node)) != nullptr) {
    if (node->cpuset != nullptr && hwloc_bitmap_isset(node->cpuset, pu->os_index)) {
      return node->logical_index;
    }
  }
  return 0;
}

}  // namespace

// Builds a Topology from a loaded hwloc topology, keeping the PUs in `allowed`.
class TopologyBuilder {
 public:
  static Result<Topology> build(hwloc_topology_t topology, hwloc_const_bitmap_t allowed,
                                std::string source) {
    Topology out;
    out.source_ = std::move(source);
    hwloc_obj_t node = nullptr;
    while ((node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node)) != nullptr) {
      out.node_os_indexes_.push_back(node->os_index);
    }
    if (out.node_os_indexes_.empty()) {
      out.node_os_indexes_.push_back(0);  // hwloc 2 always has one; be safe on odd platforms.
    }
    hwloc_obj_t pu = nullptr;
    while ((pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, pu)) != nullptr) {
      ++out.machine_pus_;
      if (!hwloc_bitmap_isset(allowed, pu->os_index)) {
        continue;
      }
      // Without core objects (rare platforms) each PU counts as its own core.
      const hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_CORE, pu);
      out.pus_.push_back(ProcessingUnit{pu->os_index,
                                        core != nullptr ? core->logical_index : pu->logical_index,
                                        node_of(topology, pu)});
    }
    if (out.pus_.empty()) {
      return invalid_argument(out.source_ + ": no PU this process may run on");
    }
    std::sort(out.pus_.begin(), out.pus_.end(), [](const auto& a, const auto& b) {
      return std::tie(a.node, a.core, a.os_index) < std::tie(b.node, b.core, b.os_index);
    });
    return out;
  }
};

Result<Topology> Topology::detect() {
  auto topology = new_topology();
  if (!topology.ok()) {
    return topology.status();
  }
  hwloc_topology_t t = topology->get();
  NUMADIR_RETURN_IF_ERROR(load(t));
  // hwloc's allowed set covers cgroup cpusets; the process binding covers taskset and
  // sched_setaffinity. hwloc reads the binding of every thread of the process and unites
  // them, so a thread pinned earlier does not shrink the set.
  detail::BitmapHandle allowed(hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t)));
  detail::BitmapHandle binding(hwloc_bitmap_alloc());
  if (allowed == nullptr || binding == nullptr) {
    return Status(StatusCode::kIo, "hwloc: out of memory");
  }
  // Fails when the topology is not this system's (HWLOC_XMLFILE, HWLOC_SYNTHETIC set in the
  // environment); then the allowed set is all there is.
  if (hwloc_get_cpubind(t, binding.get(), HWLOC_CPUBIND_PROCESS) == 0) {
    hwloc_bitmap_and(allowed.get(), allowed.get(), binding.get());
  }
  // HWLOC_VERSION: the headers' release (hwloc_get_api_version() is the API's, e.g. 2.8.0).
  const std::string source = std::string("this machine (hwloc ") + HWLOC_VERSION + ")";
  return TopologyBuilder::build(t, allowed.get(), source);
}

Result<Topology> Topology::synthetic(std::string_view description,
                                     std::span<const unsigned> allowed_pus) {
  auto topology = new_topology();
  if (!topology.ok()) {
    return topology.status();
  }
  hwloc_topology_t t = topology->get();
  const std::string text(description);
  if (hwloc_topology_set_synthetic(t, text.c_str()) != 0) {
    return invalid_argument("hwloc rejects the synthetic topology \"" + text +
                            "\" (expected e.g. \"numa:4 core:8 pu:2\")");
  }
  NUMADIR_RETURN_IF_ERROR(load(t));
  detail::BitmapHandle allowed(hwloc_bitmap_dup(hwloc_topology_get_complete_cpuset(t)));
  if (allowed == nullptr) {
    return Status(StatusCode::kIo, "hwloc: out of memory");
  }
  if (!allowed_pus.empty()) {
    for (unsigned os_index : allowed_pus) {
      if (!hwloc_bitmap_isset(allowed.get(), os_index)) {
        return invalid_argument("synthetic topology \"" + text + "\" has no PU " +
                                std::to_string(os_index));
      }
    }
    hwloc_bitmap_zero(allowed.get());
    for (unsigned os_index : allowed_pus) {
      hwloc_bitmap_set(allowed.get(), os_index);
    }
  }
  return TopologyBuilder::build(t, allowed.get(), "synthetic \"" + text + "\"");
}

Result<Topology> Topology::from_xml(const std::string& path) {
  auto topology = new_topology();
  if (!topology.ok()) {
    return topology.status();
  }
  hwloc_topology_t t = topology->get();
  if (hwloc_topology_set_xml(t, path.c_str()) != 0) {
    return invalid_argument("hwloc cannot read the XML topology " + path + ": " +
                            detail::errno_text(errno));
  }
  if (hwloc_topology_load(t) != 0) {
    return invalid_argument("hwloc cannot load the XML topology " + path + ": " +
                            detail::errno_text(errno));
  }
  return TopologyBuilder::build(t, hwloc_topology_get_complete_cpuset(t), "XML file " + path);
}

Result<Topology> Topology::emulated(std::string_view description) {
  if (description.size() > 4 && description.substr(description.size() - 4) == ".xml") {
    return from_xml(std::string(description));
  }
  return synthetic(description);
}

std::vector<ProcessingUnit> Topology::pus_of_node(unsigned node) const {
  std::vector<ProcessingUnit> out;
  for (const ProcessingUnit& pu : pus_) {
    if (pu.node == node) {
      out.push_back(pu);
    }
  }
  return out;
}

std::size_t Topology::core_count(unsigned node) const {
  std::set<unsigned> cores;
  for (const ProcessingUnit& pu : pus_) {
    if (pu.node == node) {
      cores.insert(pu.core);
    }
  }
  return cores.size();
}

std::string Topology::describe() const {
  std::set<unsigned> cores;
  std::vector<unsigned> allowed;
  for (const ProcessingUnit& pu : pus_) {
    cores.insert(pu.core);
    allowed.push_back(pu.os_index);
  }
  const auto plural = [](std::size_t n, std::string_view one, std::string_view many) {
    return std::to_string(n) + " " + std::string(n == 1 ? one : many);
  };
  std::string out = "topology: " + source_ + "\n";
  out += plural(node_count(), "NUMA node", "NUMA nodes") + ", " +
         plural(cores.size(), "core", "cores") + ", " + plural(pus_.size(), "PU", "PUs") +
         " allowed\n";
  out += "allowed PUs: " + std::to_string(pus_.size()) + " of " + std::to_string(machine_pus_) +
         ": " + cpu_list(allowed) + "\n";
  for (unsigned node = 0; node < node_count(); ++node) {
    const std::vector<ProcessingUnit> pus = pus_of_node(node);
    out +=
        "node " + std::to_string(node) + " (os " + std::to_string(node_os_indexes_[node]) + "): ";
    if (pus.empty()) {
      out += "no allowed PU\n";
      continue;
    }
    std::vector<unsigned> node_cpus;
    for (const ProcessingUnit& pu : pus) {
      node_cpus.push_back(pu.os_index);
    }
    out += plural(core_count(node), "core", "cores") + ", " + plural(pus.size(), "PU", "PUs") +
           ": " + cpu_list(node_cpus) + "\n";
  }
  return out;
}

std::string cpu_list(std::vector<unsigned> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) {
      ++j;
    }
    if (!out.empty()) {
      out += ",";
    }
    out += std::to_string(cpus[i]);
    if (j > i) {
      out += "-" + std::to_string(cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

Status pin_current_thread(unsigned os_index) {
  const unsigned one[] = {os_index};
  return pin_current_thread_to(one);
}

Status pin_current_thread_to(std::span<const unsigned> os_indexes) {
  if (os_indexes.empty()) {
    return invalid_argument("sched_setaffinity: no CPU to pin to");
  }
  std::vector<unsigned> cpus(os_indexes.begin(), os_indexes.end());
  const std::string what = "sched_setaffinity(CPU " + cpu_list(cpus) + "): ";
  const unsigned highest = *std::max_element(cpus.begin(), cpus.end());
  if (highest >= kMaxCpuIndex) {
    return Status(StatusCode::kIo, what + detail::errno_text(EINVAL));
  }
  cpu_set_t* set = CPU_ALLOC(highest + 1);
  if (set == nullptr) {
    return Status(StatusCode::kIo, what + detail::errno_text(ENOMEM));
  }
  const std::size_t size = CPU_ALLOC_SIZE(highest + 1);
  CPU_ZERO_S(size, set);
  for (const unsigned cpu : cpus) {
    CPU_SET_S(cpu, size, set);
  }
  const int rc = sched_setaffinity(0, size, set);
  const int error = errno;
  CPU_FREE(set);
  if (rc != 0) {
    return Status(StatusCode::kIo, what + detail::errno_text(error));
  }
  return Status();
}

}  // namespace numadir::threadpool
