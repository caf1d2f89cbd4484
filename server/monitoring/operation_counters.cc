// server/monitoring/operation_counters.cc: see operation_counters.h.
#include "server/monitoring/operation_counters.h"

#include <array>
#include <optional>

#include "threadpool/thread_counters.h"

namespace numadir::server {

using listener::wire::ProtocolOp;

std::optional<OperationKind> operation_kind(ProtocolOp op) {
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

std::string_view operation_kind_name(OperationKind kind) {
  static constexpr std::array<std::string_view, kOperationKinds> kNames = {
      "bind", "search", "compare", "add", "modify", "delete", "modrdn", "extended"};
  return kNames[static_cast<std::size_t>(kind)];
}

std::uint64_t OperationTotals::total() const {
  std::uint64_t sum = 0;
  for (const std::uint64_t count : operations) {
    sum += count;
  }
  return sum;
}

OperationCounters::~OperationCounters() = default;

OperationCounters::Slot& OperationCounters::add_slot() {
  auto slot = std::make_unique<Slot>();
  Slot& added = *slot;
  MutexLock lock(mu_);
  slots_.push_back(std::move(slot));
  return added;
}

void OperationCounters::count(Slot& slot, ProtocolOp op) {
  if (const std::optional<OperationKind> kind = operation_kind(op); kind.has_value()) {
    count(slot, *kind);
  }
}

void OperationCounters::count_auth(Slot& slot) { threadpool::owner_add(slot.auths); }

void OperationCounters::count_shared(ProtocolOp op) {
  if (const std::optional<OperationKind> kind = operation_kind(op); kind.has_value()) {
    shared_.operations[static_cast<std::size_t>(*kind)].fetch_add(1, std::memory_order_relaxed);
  }
}

OperationTotals OperationCounters::totals() const {
  OperationTotals totals;
  for (std::size_t i = 0; i < kOperationKinds; ++i) {
    totals.operations[i] = shared_.operations[i].load(std::memory_order_relaxed);
  }
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
