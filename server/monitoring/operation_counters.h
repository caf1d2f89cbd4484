// server/monitoring/operation_counters.h: how many operations of each kind the server ran, and how
// many binds succeeded with a name and password (the "auths" of auths/s), counted per thread: each
// thread that runs operations gets its own slot on its own cache lines the first time it counts,
// and only that thread writes it (threadpool::owner_add: no locked instruction). Readers sum
// the slots.
//
// Thread contract: count() and count_auth() may be called from any thread at once (each touches
// its own slot; registering a new thread's slot takes a mutex once). totals() may be called from
// any thread. Destroy only once no thread counts any more.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/cache_line.h"
#include "base/thread_annotations.h"
#include "listener/wire/ldap_message.h"

namespace numadir::server {

enum class OperationKind : std::uint8_t {
  kBind,
  kSearch,
  kCompare,
  kAdd,
  kModify,
  kDelete,
  kModifyDn,
  kExtended,
};
inline constexpr std::size_t kOperationKinds = 8;

struct OperationTotals {
  std::array<std::uint64_t, kOperationKinds> operations{};  // Indexed by OperationKind.
  std::uint64_t auths = 0;  // Binds with a name and password that succeeded.

  std::uint64_t of(OperationKind kind) const { return operations[static_cast<std::size_t>(kind)]; }
  std::uint64_t total() const;
};

class OperationCounters {
 public:
  OperationCounters();
  OperationCounters(const OperationCounters&) = delete;
  OperationCounters& operator=(const OperationCounters&) = delete;
  ~OperationCounters();

  // Counts one operation of the request kind `op`; other ops (responses, unbind, abandon) are
  // not counted.
  void count(listener::wire::ProtocolOp op);
  // Counts one successful bind with a name and password.
  void count_auth();
  // Returns: the sums over every thread's slot, read now.
  OperationTotals totals() const;

 private:
  struct alignas(kCacheLineSize) Slot {
    std::array<std::atomic<std::uint64_t>, kOperationKinds> operations{};
    std::atomic<std::uint64_t> auths{0};
  };
  // Returns: the calling thread's slot, registered on first use.
  Slot& slot();

  const std::uint64_t key_;  // Unique per object for the process's life (thread-local cache).
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Slot>> slots_ NUMADIR_GUARDED_BY(mu_);
};

}  // namespace numadir::server
