// threadpool/node_memory.cc: see node_memory.h.
#include "threadpool/node_memory.h"

#include <hwloc.h>
#include <pthread.h>

#include <cerrno>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "threadpool/detail/hwloc_bitmap.h"
#include "threadpool/topology.h"

namespace numadir::threadpool {
namespace {

std::vector<unsigned> bitmap_members(hwloc_const_bitmap_t bitmap) {
  std::vector<unsigned> out;
  for (int i = hwloc_bitmap_first(bitmap); i >= 0; i = hwloc_bitmap_next(bitmap, i)) {
    out.push_back(static_cast<unsigned>(i));
  }
  return out;
}

// Returns: `pus` as a list, e.g. "0-3,8" (as cpu_list prints them).
std::string list(std::span<const unsigned> pus) {
  return cpu_list(std::vector<unsigned>(pus.begin(), pus.end()));
}

std::string_view policy_name(hwloc_membind_policy_t policy) {
  switch (policy) {
    case HWLOC_MEMBIND_DEFAULT:
    case HWLOC_MEMBIND_FIRSTTOUCH:  // What Linux's default policy is.
      return "default";
    case HWLOC_MEMBIND_BIND:
      return "bind";
    case HWLOC_MEMBIND_INTERLEAVE:
      return "interleave";
    case HWLOC_MEMBIND_NEXTTOUCH:
      return "nexttouch";
    default:
      return "mixed";
  }
}

// Returns: the calling thread's memory binding. Errors: kUnsupported with errno's text.
Result<MemoryBinding> thread_binding(hwloc_topology_t topology) {
  detail::BitmapHandle nodeset(hwloc_bitmap_alloc());
  if (nodeset == nullptr) {
    return Status(StatusCode::kIo, "hwloc: out of memory");
  }
  hwloc_membind_policy_t policy = HWLOC_MEMBIND_DEFAULT;
  if (hwloc_get_membind(topology, nodeset.get(), &policy,
                        HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) != 0) {
    return unsupported("reading the memory binding (hwloc_get_membind): " +
                       detail::errno_text(errno));
  }
  return MemoryBinding{bitmap_members(nodeset.get()), std::string(policy_name(policy))};
}

// The process's NodeMemory when hwloc cannot read this machine: binds nothing, says so once.
class UnboundNodeMemory final : public NodeMemory {
 public:
  explicit UnboundNodeMemory(Status why) : why_(std::move(why)) {}

  void bind_current_thread(unsigned /*plan_node*/, std::span<const unsigned> /*pus*/,
                           MemoryUser /*user*/) override {
    if (!reported_.exchange(true, std::memory_order_relaxed)) {
      std::cerr << "numadir: NUMA nodes' memory is not bound (" << why_.message()
                << "); it comes from where each pinned thread first touches it\n";
    }
  }

 private:
  const Status why_;
  std::atomic<bool> reported_{false};
};

}  // namespace

std::string_view memory_user_name(MemoryUser user) {
  switch (user) {
    case MemoryUser::kPool:
      return "pool";
    case MemoryUser::kWorker:
      return "worker";
    case MemoryUser::kListener:
      return "listener";
  }
  return "?";
}

Result<std::unique_ptr<HwlocNodeMemory>> HwlocNodeMemory::open() {
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0) {
    return Status(StatusCode::kIo, "hwloc: cannot initialize: " + detail::errno_text(errno));
  }
  if (hwloc_topology_load(topology) != 0) {
    const int error = errno;
    hwloc_topology_destroy(topology);
    return Status(StatusCode::kIo, "hwloc: cannot read the topology: " + detail::errno_text(error));
  }
  // Unreadable (no NUMA support): then binding fails too, and says why when asked.
  std::optional<MemoryBinding> started_with;
  if (auto binding = thread_binding(topology); binding.ok() && !binding->is_default()) {
    started_with = *std::move(binding);
  }
  return std::unique_ptr<HwlocNodeMemory>(new HwlocNodeMemory(topology, std::move(started_with)));
}

HwlocNodeMemory::~HwlocNodeMemory() { hwloc_topology_destroy(topology_); }

Result<std::vector<unsigned>> HwlocNodeMemory::nodes_of(std::span<const unsigned> pus) const {
  detail::BitmapHandle cpus(hwloc_bitmap_alloc());
  detail::BitmapHandle nodes(hwloc_bitmap_alloc());
  if (cpus == nullptr || nodes == nullptr) {
    return Status(StatusCode::kIo, "hwloc: out of memory");
  }
  for (const unsigned pu : pus) {
    hwloc_bitmap_set(cpus.get(), pu);
  }
  // Each PU's local nodes (a PU may have several: memory-side caches, HBM beside DRAM).
  hwloc_cpuset_to_nodeset(topology_, cpus.get(), nodes.get());
  if (hwloc_bitmap_iszero(nodes.get())) {
    return invalid_argument("no NUMA node of this machine has the CPUs " + list(pus));
  }
  return bitmap_members(nodes.get());
}

Status HwlocNodeMemory::bind(std::span<const unsigned> pus) const {
  auto nodes = nodes_of(pus);
  if (!nodes.ok()) {
    return nodes.status();
  }
  detail::BitmapHandle nodeset(hwloc_bitmap_alloc());
  if (nodeset == nullptr) {
    return Status(StatusCode::kIo, "hwloc: out of memory");
  }
  for (const unsigned node : *nodes) {
    hwloc_bitmap_set(nodeset.get(), node);
  }
  // Not HWLOC_MEMBIND_STRICT: Linux's preferred policy, so a full node lends rather than fails.
  if (hwloc_set_membind(topology_, nodeset.get(), HWLOC_MEMBIND_BIND,
                        HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET) != 0) {
    return unsupported("binding memory to NUMA node " + list(*nodes) +
                       " (hwloc_set_membind): " + detail::errno_text(errno));
  }
  return Status();
}

Result<MemoryBinding> HwlocNodeMemory::current_binding() const { return thread_binding(topology_); }

void HwlocNodeMemory::bind_current_thread(unsigned plan_node, std::span<const unsigned> pus,
                                          MemoryUser user) {
  if (started_with_.has_value()) {
    if (!reported_.exchange(true, std::memory_order_relaxed)) {
      std::cerr << "numadir: started under the memory policy \"" << started_with_->policy
                << "\" on NUMA node " << list(started_with_->nodes)
                << " (numactl, systemd's NUMAPolicy=): every thread keeps it, no node's memory "
                   "is bound to its node\n";
    }
    return;
  }
  const Status bound = bind(pus);
  if (!bound.ok() && !reported_.exchange(true, std::memory_order_relaxed)) {
    std::cerr << "numadir: node " << plan_node << " (" << memory_user_name(user)
              << " thread): " << bound.message()
              << "; memory comes from where each pinned thread first touches it\n";
  }
}

NodeMemory& machine_node_memory() {
  // Made once, on first use, and never destroyed: a thread may still bind while the process
  // exits.
  static NodeMemory* const memory = []() -> NodeMemory* {
    auto opened = HwlocNodeMemory::open();
    if (!opened.ok()) {
      return new UnboundNodeMemory(opened.status());
    }
    return opened->release();
  }();
  return *memory;
}

void build_on_node(const NodeBinding& binding, const std::function<void()>& build) {
  if (!binding.active()) {
    build();
    return;
  }
  std::thread thread([&binding, &build] {
    if (const Status pinned = pin_current_thread_to(binding.pus); !pinned.ok()) {
      std::cerr << "numadir: node " << binding.node << ": " << pinned.message()
                << "; its pool is built on an unpinned thread\n";
    }
    binding.bind_current_thread(MemoryUser::kPool);
    build();
  });
  const std::string name = "build-node" + std::to_string(binding.node);
  pthread_setname_np(thread.native_handle(), name.substr(0, 15).c_str());
  thread.join();
}

}  // namespace numadir::threadpool
