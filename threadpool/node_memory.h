// threadpool/node_memory.h: keeping a NUMA node's memory on it. NodeMemory is the seam through
// which a thread asks that what it allocates and first touches from now on come from the node
// of the plan it serves: the machine NUMA nodes of that node's PUs. HwlocNodeMemory does it with
// hwloc (the calling thread's memory policy); tests record the calls instead. NodeBinding is what
// a pool or a listener carries to ask for it, and build_on_node runs a node's construction on a
// thread pinned to it and bound to its memory, so its allocations are first touched there.
//
// The policy is hwloc's HWLOC_MEMBIND_BIND without HWLOC_MEMBIND_STRICT: Linux's "preferred"
// (MPOL_PREFERRED_MANY), so a node whose memory is full lends from another rather than failing
// the allocation. On one-node hardware every binding names node 0 and changes nothing. A process
// started under a memory policy of its own (`numactl --interleave=all`, systemd's NUMAPolicy=)
// keeps it: that is the operator's choice, and HwlocNodeMemory then binds nothing.
//
// Thread contract: a NodeMemory is called from any thread, concurrently; each call affects the
// calling thread alone. machine_node_memory() may be called from any thread; it loads the
// machine's topology once per process and its object lives until the process exits.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

struct hwloc_topology;  // hwloc.h's, kept out of this header (hwloc is private to threadpool).

namespace numadir::threadpool {

// Which thread asks for its node's memory.
enum class MemoryUser : std::uint8_t {
  kPool,      // The short-lived thread that constructs a node's pool and its Listener objects.
  kWorker,    // A worker of the node's pool, after pinning, before it makes its WorkerState.
  kListener,  // A listener thread of the node, after pinning, before it accepts.
};

// Returns: "pool", "worker" or "listener".
std::string_view memory_user_name(MemoryUser user);

class NodeMemory {
 public:
  virtual ~NodeMemory() = default;

  // Asks that the memory the calling thread allocates and first touches from now on come from
  // the machine NUMA nodes that `pus` (OS indexes of this machine's PUs: the PUs of plan node
  // `plan_node`'s threads) belong to. Never fails the caller: where the system refuses, the
  // memory comes from where the thread first touches it, which for a thread pinned to the
  // node's PUs is the node itself (an implementation says so once on standard error).
  // Requires: `pus` is not empty.
  virtual void bind_current_thread(unsigned plan_node, std::span<const unsigned> pus,
                                   MemoryUser user) = 0;
};

// The calling thread's memory binding, as hwloc reads it back.
struct MemoryBinding {
  std::vector<unsigned> nodes;  // OS indexes of the machine NUMA nodes it may allocate from.
  // hwloc's policy: "default" (first touch: Linux's MPOL_DEFAULT), "bind" (what bind() sets;
  // also Linux's preferred policies), "interleave", "nexttouch" or "mixed".
  std::string policy = "default";

  bool is_default() const { return policy == "default"; }
};

// NodeMemory over this machine's hwloc topology, loaded once by open().
class HwlocNodeMemory final : public NodeMemory {
 public:
  // Loads this machine's topology and reads the calling thread's memory policy: opened on the
  // server's main thread before anything is bound (machine_node_memory(), first called by
  // Frontend::start), that is the policy the process was started with. If it is not the
  // default, bind_current_thread keeps it. Errors: kIo when hwloc cannot read the topology.
  static Result<std::unique_ptr<HwlocNodeMemory>> open();
  HwlocNodeMemory(const HwlocNodeMemory&) = delete;
  HwlocNodeMemory& operator=(const HwlocNodeMemory&) = delete;
  ~HwlocNodeMemory() override;

  // Returns: the OS indexes of the machine NUMA nodes whose CPUs include one of `pus`, in order.
  // Errors: kInvalidArgument when none of `pus` is a PU of this machine.
  Result<std::vector<unsigned>> nodes_of(std::span<const unsigned> pus) const;
  // Binds the calling thread's future allocations to nodes_of(pus).
  // Errors: as nodes_of; kUnsupported with errno's text when the system refuses (ENOSYS: no
  //   NUMA support; EPERM: a container's seccomp policy; EXDEV: a kernel without
  //   MPOL_PREFERRED_MANY asked for several nodes).
  [[nodiscard]] Status bind(std::span<const unsigned> pus) const;
  // Returns: the calling thread's memory binding. Errors: kUnsupported with errno's text.
  Result<MemoryBinding> current_binding() const;

  // bind(), and on the first refusal of this object a line on standard error; serving goes on.
  // When the process was started under a policy of its own (open()), nothing is bound and the
  // first call says so on standard error.
  void bind_current_thread(unsigned plan_node, std::span<const unsigned> pus,
                           MemoryUser user) override;

 private:
  HwlocNodeMemory(hwloc_topology* topology, std::optional<MemoryBinding> started_with)
      : topology_(topology), started_with_(std::move(started_with)) {}

  hwloc_topology* const topology_;  // Loaded; only read after open() (hwloc allows concurrent
                                    // binding calls on a loaded topology).
  // The policy the process was started with, when it is not the default: then it is kept.
  const std::optional<MemoryBinding> started_with_;
  std::atomic<bool> reported_{false};  // Said on stderr already (relaxed: orders nothing).
};

// Returns: the process's NodeMemory: an HwlocNodeMemory opened on the first call; if it cannot be
//   opened, one that binds nothing and says why once on standard error.
NodeMemory& machine_node_memory();

// What a node's thread needs to ask for its node's memory: nothing when `memory` is nullptr
// (unpinned plans, the single dispatcher, no plan).
struct NodeBinding {
  NodeMemory* memory = nullptr;  // Must outlive the pools and listeners that carry it.
  unsigned node = 0;             // The plan's node.
  std::vector<unsigned> pus;     // OS indexes of this machine's PUs its threads are pinned to.

  bool active() const { return memory != nullptr && !pus.empty(); }
  // Asks `memory` for the node's memory for the calling thread, if active().
  void bind_current_thread(MemoryUser user) const {
    if (active()) {
      memory->bind_current_thread(node, pus, user);
    }
  }
};

// Runs `build` on the calling thread when `binding` is not active(); otherwise on a new thread
// pinned to binding.pus (a pin the kernel refuses is said on standard error) with its memory
// bound to the node (MemoryUser::kPool), so that what `build` allocates and first touches comes
// from the node. Returns once `build` returned; what it made may then be used by the caller.
void build_on_node(const NodeBinding& binding, const std::function<void()>& build);

}  // namespace numadir::threadpool
