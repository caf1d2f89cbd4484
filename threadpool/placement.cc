// threadpool/placement.cc: see placement.h.
#include "threadpool/placement.h"

#include <algorithm>
#include <set>
#include <span>
#include <string_view>

namespace numadir::threadpool {
namespace {

// Returns: `pus` (one node's, in core order) reordered so that the first PU of every core comes
//   first, then the second PU of every core, and so on: listeners land on distinct cores first.
std::vector<ProcessingUnit> spread_over_cores(const std::vector<ProcessingUnit>& pus) {
  std::vector<std::vector<ProcessingUnit>> by_core;
  for (const ProcessingUnit& pu : pus) {
    if (by_core.empty() || by_core.back().front().core != pu.core) {
      by_core.emplace_back();
    }
    by_core.back().push_back(pu);
  }
  std::vector<ProcessingUnit> out;
  for (std::size_t k = 0; out.size() < pus.size(); ++k) {
    for (const std::vector<ProcessingUnit>& core : by_core) {
      if (k < core.size()) {
        out.push_back(core[k]);
      }
    }
  }
  return out;
}

// Returns: `pus` with the PUs that carry a listener moved to the end, the order otherwise kept:
//   a node given fewer workers than PUs leaves the listeners' PUs to the listeners.
std::vector<ProcessingUnit> listener_pus_last(const std::vector<ProcessingUnit>& pus,
                                              const std::vector<ThreadPlacement>& listeners) {
  std::vector<ProcessingUnit> out;
  std::vector<ProcessingUnit> taken;
  for (const ProcessingUnit& pu : pus) {
    const bool has_listener =
        std::any_of(listeners.begin(), listeners.end(),
                    [&pu](const ThreadPlacement& listener) { return listener.pu == pu.os_index; });
    (has_listener ? taken : out).push_back(pu);
  }
  out.insert(out.end(), taken.begin(), taken.end());
  return out;
}

// Returns: `count` placements on `node`, thread i on order[i % order.size()] when pinned.
std::vector<ThreadPlacement> place(unsigned node, unsigned count,
                                   const std::vector<ProcessingUnit>& order, bool pin) {
  std::vector<ThreadPlacement> out;
  out.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    ThreadPlacement placement{node, i, std::nullopt, std::nullopt};
    if (pin) {
      const ProcessingUnit& pu = order[i % order.size()];
      placement.pu = pu.os_index;
      placement.core = pu.core;
    }
    out.push_back(placement);
  }
  return out;
}

std::string pad_left(std::string text, std::size_t width) {
  if (text.size() < width) {
    text.insert(0, width - text.size(), ' ');
  }
  return text;
}

std::string pad_right(std::string text, std::size_t width) {
  if (text.size() < width) {
    text.append(width - text.size(), ' ');
  }
  return text;
}

std::string optional_text(const std::optional<unsigned>& value) {
  return value.has_value() ? std::to_string(*value) : "-";
}

}  // namespace

Result<PlacementPlan> plan_placement(const Topology& topology, const PlacementOptions& options) {
  std::vector<NodeThreads> wanted = options.nodes;
  if (wanted.empty()) {
    for (unsigned node = 0; node < topology.node_count(); ++node) {
      if (topology.core_count(node) > 0) {
        wanted.push_back(NodeThreads{node});
      }
    }
  }
  std::set<unsigned> seen;
  for (const NodeThreads& asked : wanted) {
    const std::string name = "node " + std::to_string(asked.node);
    if (asked.node >= topology.node_count()) {
      return invalid_argument(name + " does not exist (" +
                              (topology.node_count() == 1
                                   ? std::string("the only node is 0")
                                   : "nodes: 0-" + std::to_string(topology.node_count() - 1)) +
                              ")");
    }
    if (!seen.insert(asked.node).second) {
      return invalid_argument(name + " is listed twice");
    }
    if (topology.core_count(asked.node) == 0) {
      return invalid_argument(name + " has no PU this process may run on");
    }
    if (asked.listeners > kMaxThreadsPerNode || asked.workers > kMaxThreadsPerNode) {
      return invalid_argument(name + ": more than " + std::to_string(kMaxThreadsPerNode) +
                              " listeners or workers");
    }
  }
  std::sort(wanted.begin(), wanted.end(),
            [](const NodeThreads& a, const NodeThreads& b) { return a.node < b.node; });

  PlacementPlan plan;
  plan.pinned = options.pin;
  for (const ProcessingUnit& pu : topology.pus()) {
    plan.cpu_nodes.push_back(CpuNode{pu.os_index, pu.node});
  }
  for (const NodeThreads& asked : wanted) {
    const std::vector<ProcessingUnit> pus = topology.pus_of_node(asked.node);
    const auto cores = static_cast<unsigned>(topology.core_count(asked.node));
    const unsigned listeners = asked.listeners != 0 ? asked.listeners : std::max(1u, cores / 4);
    const unsigned workers = asked.workers != 0 ? asked.workers : static_cast<unsigned>(pus.size());
    NodePlan node_plan{asked.node, {}, {}, cores, static_cast<unsigned>(pus.size())};
    node_plan.listeners = place(asked.node, listeners, spread_over_cores(pus), options.pin);
    node_plan.workers = place(
        asked.node, workers,
        workers < pus.size() ? listener_pus_last(pus, node_plan.listeners) : pus, options.pin);
    plan.nodes.push_back(std::move(node_plan));
  }
  return plan;
}

std::string PlacementPlan::to_table() const {
  std::size_t listeners = 0;
  std::size_t workers = 0;
  for (const NodePlan& node : nodes) {
    listeners += node.listeners.size();
    workers += node.workers.size();
  }
  std::string out = std::string("placement: ") +
                    (pinned ? "pinned" : "not pinned (threads may run on any allowed PU)") + ", " +
                    std::to_string(nodes.size()) + (nodes.size() == 1 ? " node, " : " nodes, ") +
                    std::to_string(listeners) + (listeners == 1 ? " listener, " : " listeners, ") +
                    std::to_string(workers) + (workers == 1 ? " worker\n" : " workers\n");
  constexpr std::size_t kNameWidth = 16;
  constexpr std::size_t kColumnWidth = 6;
  out += pad_right("thread", kNameWidth) + pad_left("node", kColumnWidth) +
         pad_left("core", kColumnWidth) + pad_left("pu", kColumnWidth) + "\n";
  const auto add_rows = [&](std::string_view kind, const std::vector<ThreadPlacement>& threads) {
    for (const ThreadPlacement& thread : threads) {
      out += pad_right(std::string(kind) + "-" + std::to_string(thread.node) + "-" +
                           std::to_string(thread.index),
                       kNameWidth) +
             pad_left(std::to_string(thread.node), kColumnWidth) +
             pad_left(optional_text(thread.core), kColumnWidth) +
             pad_left(optional_text(thread.pu), kColumnWidth) + "\n";
    }
  };
  for (const NodePlan& node : nodes) {
    add_rows("listener", node.listeners);
    add_rows("worker", node.workers);
  }
  // Wrapped (pinned) or oversubscribed (not pinned): either way more threads than PUs.
  for (const NodePlan& node : nodes) {
    const auto note = [&](std::string_view kind, std::size_t count) {
      if (count > node.pus) {
        out += "note: node " + std::to_string(node.node) + ": " + std::to_string(count) + " " +
               std::string(kind) + " for " + std::to_string(node.pus) +
               (node.pus == 1 ? " PU" : " PUs") + ": several threads per PU\n";
      }
    };
    note("listeners", node.listeners.size());
    note("workers", node.workers.size());
  }
  return out;
}

PlacementPlan map_onto_machine(PlacementPlan plan, const Topology& emulated,
                               const Topology& machine) {
  const std::span<const ProcessingUnit> from = emulated.pus();
  const std::span<const ProcessingUnit> onto = machine.pus();
  const auto moved = [&](ThreadPlacement& thread) {
    if (!thread.pu.has_value()) {
      return;
    }
    for (std::size_t i = 0; i < from.size(); ++i) {
      if (from[i].os_index == *thread.pu) {
        thread.pu = onto[i % onto.size()].os_index;
        return;
      }
    }
  };
  plan.cpu_nodes.clear();
  for (std::size_t i = 0; i < from.size() || i < onto.size(); ++i) {
    const unsigned cpu = onto[i % onto.size()].os_index;
    const bool named = std::any_of(plan.cpu_nodes.begin(), plan.cpu_nodes.end(),
                                   [cpu](const CpuNode& known) { return known.cpu == cpu; });
    if (!named) {
      plan.cpu_nodes.push_back(CpuNode{cpu, from[i % from.size()].node});
    }
  }
  for (NodePlan& node : plan.nodes) {
    for (ThreadPlacement& thread : node.listeners) {
      moved(thread);
    }
    for (ThreadPlacement& thread : node.workers) {
      moved(thread);
    }
  }
  return plan;
}

}  // namespace numadir::threadpool
