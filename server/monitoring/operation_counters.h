// server/monitoring/operation_counters.h: how many operations of each kind the server ran, and how
// many binds succeeded with a name and password (the "auths" of auths/s), counted per worker:
// each thread that runs operations gets its own slot on its own cache lines (add_slot(), kept in
// its worker state), and only that thread writes it (threadpool::owner_add: no locked
// instruction). Readers sum the slots.
//
// Thread contract: add_slot() and totals() may be called from any thread at once (a mutex
// guards the list of slots). count() and count_auth() write the given slot: only its owner
// calls them; count_shared() any thread. Slots live as long as the OperationCounters (a
// worker's counts outlive it); destroy it only once no thread counts any more.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "base/cache_line.h"
#include "base/thread_annotations.h"
#include "listener/wire/ldap_message.h"
#include "threadpool/thread_counters.h"

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

// Returns: the kind of request `op`; nullopt for what is not an operation counted (responses,
//   unbind, abandon).
std::optional<OperationKind> operation_kind(listener::wire::ProtocolOp op);
// Returns: the kind's name as metrics label it: "bind", "search", "compare", "add", "modify",
//   "delete", "modrdn", "extended".
std::string_view operation_kind_name(OperationKind kind);

struct OperationTotals {
  std::array<std::uint64_t, kOperationKinds> operations{};  // Indexed by OperationKind.
  std::uint64_t auths = 0;  // Binds with a name and password that succeeded.

  std::uint64_t of(OperationKind kind) const { return operations[static_cast<std::size_t>(kind)]; }
  std::uint64_t total() const;
};

class OperationCounters {
 public:
  // One worker's counts. Owner: the thread that add_slot() gave it to.
  struct alignas(kCacheLineSize) Slot {
    std::array<std::atomic<std::uint64_t>, kOperationKinds> operations{};
    std::atomic<std::uint64_t> auths{0};
  };

  OperationCounters() = default;
  OperationCounters(const OperationCounters&) = delete;
  OperationCounters& operator=(const OperationCounters&) = delete;
  ~OperationCounters();

  // Returns: a new slot, counted in totals() from now on and valid for this object's life.
  Slot& add_slot() NUMADIR_EXCLUDES(mu_);
  // Counts one operation of the request kind `op` in `slot`; other ops (responses, unbind,
  // abandon) are not counted. Requires: the caller owns `slot`.
  static void count(Slot& slot, listener::wire::ProtocolOp op);
  // Counts one operation of `kind` in `slot`. Requires: the caller owns `slot`.
  static void count(Slot& slot, OperationKind kind) {
    threadpool::owner_add(slot.operations[static_cast<std::size_t>(kind)]);
  }
  // Counts one successful bind with a name and password in `slot`.
  static void count_auth(Slot& slot);
  // Counts one operation of the request kind `op` that a listener carried out itself (StartTLS),
  // from any thread: a locked add on a shared counter, for requests made once per connection.
  void count_shared(listener::wire::ProtocolOp op);
  // Returns: the sums over every slot, read now.
  OperationTotals totals() const NUMADIR_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Slot>> slots_ NUMADIR_GUARDED_BY(mu_);
  Slot shared_;  // count_shared()'s: any thread, fetch_add.
};

}  // namespace numadir::server
