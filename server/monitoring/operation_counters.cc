// server/monitoring/operation_counters.cc: see operation_counters.h.
#include "server/monitoring/operation_counters.h"

#include <optional>

#include "threadpool/thread_counters.h"

namespace numadir::server {

using listener::wire::ProtocolOp;

namespace {

// Keys for the thread-local slot cache. Never reused, so an entry left behind by a destroyed
// OperationCounters can never be mistaken for a live one's.
std::atomic<std::uint64_t> next_counters_key{1};  // Relaxed: only uniqueness matters.

struct CachedSlot {
  std::uint64_t key;
  void* slot;  // An OperationCounters::Slot owned by the object with that key.
};
thread_local std::vector<CachedSlot> cached_slots;

std::optional<OperationKind> kind_of(ProtocolOp op) {
  switch (op) {
    case ProtocolOp::kBindRequest:
      return OperationKind::kBind;
    case ProtocolOp::kSearchRequest:
      return OperationKind::kSearch;
    case ProtocolOp::kCompareRequest:
      return OperationKind::kCompare;
    case ProtocolOp::kAddRequest:
      return OperationKind::kAdd;
    case ProtocolOp::kModifyRequest:
      return OperationKind::kModify;
    case ProtocolOp::kDelRequest:
      return OperationKind::kDelete;
    case ProtocolOp::kModifyDnRequest:
      return OperationKind::kModifyDn;
    case ProtocolOp::kExtendedRequest:
      return OperationKind::kExtended;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::uint64_t OperationTotals::total() const {
  std::uint64_t sum = 0;
  for (const std::uint64_t count : operations) {
    sum += count;
  }
  return sum;
}

OperationCounters::OperationCounters()
    : key_(next_counters_key.fetch_add(1, std::memory_order_relaxed)) {}

OperationCounters::~OperationCounters() = default;

OperationCounters::Slot& OperationCounters::slot() {
  for (const CachedSlot& cached : cached_slots) {
    if (cached.key == key_) {
      return *static_cast<Slot*>(cached.slot);
    }
  }
  auto slot = std::make_unique<Slot>();
  Slot* raw = slot.get();
  {
    MutexLock lock(mu_);
    slots_.push_back(std::move(slot));
  }
  cached_slots.push_back(CachedSlot{key_, raw});
  return *raw;
}

void OperationCounters::count(ProtocolOp op) {
  if (const std::optional<OperationKind> kind = kind_of(op); kind.has_value()) {
    threadpool::owner_add(slot().operations[static_cast<std::size_t>(*kind)]);
  }
}

void OperationCounters::count_auth() { threadpool::owner_add(slot().auths); }

OperationTotals OperationCounters::totals() const {
  OperationTotals totals;
  MutexLock lock(mu_);
  for (const std::unique_ptr<Slot>& slot : slots_) {
    for (std::size_t i = 0; i < kOperationKinds; ++i) {
      totals.operations[i] += slot->operations[i].load(std::memory_order_relaxed);
    }
    totals.auths += slot->auths.load(std::memory_order_relaxed);
  }
  return totals;
}

}  // namespace numadir::server
