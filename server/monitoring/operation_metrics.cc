// server/monitoring/operation_metrics.cc: see operation_metrics.h.
#include "server/monitoring/operation_metrics.h"

#include <utility>

#include "threadpool/thread_counters.h"

namespace numadir::server {
namespace {

struct NamedCode {
  int code;
  std::string_view name;
};
// Slot i is kNamedCodes[i]; "other" (80) also takes every code without a name.
constexpr std::array<NamedCode, kResultSlots - 1> kNamedCodes = {{
    {0, "success"},
    {1, "operationsError"},
    {2, "protocolError"},
    {3, "timeLimitExceeded"},
    {4, "sizeLimitExceeded"},
    {5, "compareFalse"},
    {6, "compareTrue"},
    {7, "authMethodNotSupported"},
    {8, "strongerAuthRequired"},
    {10, "referral"},
    {11, "adminLimitExceeded"},
    {12, "unavailableCriticalExtension"},
    {13, "confidentialityRequired"},
    {14, "saslBindInProgress"},
    {16, "noSuchAttribute"},
    {17, "undefinedAttributeType"},
    {18, "inappropriateMatching"},
    {19, "constraintViolation"},
    {20, "attributeOrValueExists"},
    {21, "invalidAttributeSyntax"},
    {32, "noSuchObject"},
    {33, "aliasProblem"},
    {34, "invalidDNSyntax"},
    {36, "aliasDereferencingProblem"},
    {48, "inappropriateAuthentication"},
    {49, "invalidCredentials"},
    {50, "insufficientAccessRights"},
    {51, "busy"},
    {52, "unavailable"},
    {53, "unwillingToPerform"},
    {54, "loopDetect"},
    {64, "namingViolation"},
    {65, "objectClassViolation"},
    {66, "notAllowedOnNonLeaf"},
    {67, "notAllowedOnRDN"},
    {68, "entryAlreadyExists"},
    {69, "objectClassModsProhibited"},
    {71, "affectsMultipleDSAs"},
    {80, "other"},
    {118, "canceled"},               // RFC 3909.
    {119, "noSuchOperation"},        // RFC 3909.
    {120, "tooLate"},                // RFC 3909.
    {121, "cannotCancel"},           // RFC 3909.
    {122, "assertionFailed"},        // RFC 4528.
    {123, "authorizationDenied"},    // RFC 4370.
    {4096, "eSyncRefreshRequired"},  // RFC 4533's e-syncRefreshRequired.
}};

constexpr ResultSlot slot_of_code(int code) {
  for (std::size_t i = 0; i < kNamedCodes.size(); ++i) {
    if (kNamedCodes[i].code == code) {
      return static_cast<ResultSlot>(i);
    }
  }
  return kResultSlots;  // Not named.
}
constexpr ResultSlot kOtherSlot = slot_of_code(80);

// Codes 0..127 looked up in one load; the rest (e-syncRefreshRequired) compared.
constexpr std::array<ResultSlot, 128> kSmallCodeSlots = [] {
  std::array<ResultSlot, 128> slots{};
  for (int code = 0; code < 128; ++code) {
    const ResultSlot slot = slot_of_code(code);
    slots[static_cast<std::size_t>(code)] = slot == kResultSlots ? kOtherSlot : slot;
  }
  return slots;
}();
constexpr ResultSlot kSyncRefreshSlot = slot_of_code(4096);
static_assert(kOtherSlot < kResultSlots && kSyncRefreshSlot < kResultSlots);

void add_owned(std::atomic<std::uint64_t>& counter, std::uint64_t n) {
  threadpool::owner_add(counter, n);
}
void add_shared(std::atomic<std::uint64_t>& counter, std::uint64_t n) {
  counter.fetch_add(n, std::memory_order_relaxed);
}

template <void (*Add)(std::atomic<std::uint64_t>&, std::uint64_t)>
void record(OperationMetrics::Part& part, OperationKind kind, listener::wire::ResultCode code,
            std::uint64_t latency_ns) {
  OperationMetrics::Part::Kind& counts = part.kinds[static_cast<std::size_t>(kind)];
  Add(counts.buckets[latency_bucket_of(latency_ns)], 1);
  Add(counts.sum_ns, latency_ns);
  Add(counts.results[result_slot(code)], 1);
}

void read_part(const OperationMetrics::Part& part, OperationMetricsTotals& totals) {
  for (std::size_t k = 0; k < kOperationKinds; ++k) {
    const OperationMetrics::Part::Kind& counts = part.kinds[k];
    for (std::size_t b = 0; b < kLatencyBuckets; ++b) {
      totals.latency[k].buckets[b] += counts.buckets[b].load(std::memory_order_relaxed);
    }
    totals.latency[k].sum_ns += counts.sum_ns.load(std::memory_order_relaxed);
    for (std::size_t r = 0; r < kResultSlots; ++r) {
      totals.results[k][r] += counts.results[r].load(std::memory_order_relaxed);
    }
  }
}

}  // namespace

ResultSlot result_slot(listener::wire::ResultCode code) {
  const auto value = static_cast<std::int32_t>(code);
  if (value >= 0 && value < 128) {
    return kSmallCodeSlots[static_cast<std::size_t>(value)];
  }
  return value == 4096 ? kSyncRefreshSlot : kOtherSlot;
}

std::string_view result_slot_name(ResultSlot slot) {
  if (slot == kAbandonedResult) {
    return "abandoned";
  }
  return slot < kNamedCodes.size() ? kNamedCodes[slot].name : std::string_view();
}

std::uint64_t OperationHistogram::count() const {
  std::uint64_t sum = 0;
  for (const std::uint64_t n : buckets) {
    sum += n;
  }
  return sum;
}

void OperationMetricsTotals::add(const OperationMetricsTotals& other) {
  for (std::size_t k = 0; k < kOperationKinds; ++k) {
    for (std::size_t b = 0; b < kLatencyBuckets; ++b) {
      latency[k].buckets[b] += other.latency[k].buckets[b];
    }
    latency[k].sum_ns += other.latency[k].sum_ns;
    for (std::size_t r = 0; r < kResultSlots; ++r) {
      results[k][r] += other.results[k][r];
    }
  }
}

OperationMetrics::OperationMetrics() : unowned_(std::make_unique<Slot>(0)) {}
OperationMetrics::~OperationMetrics() = default;

OperationMetrics::Slot& OperationMetrics::add_slot() {
  auto slot = std::make_unique<Slot>(threadpool::os_thread_id());
  Slot& added = *slot;
  MutexLock lock(mu_);
  slots_.push_back(std::move(slot));
  return added;
}

void OperationMetrics::record_owned(Slot& slot, OperationKind kind, listener::wire::ResultCode code,
                                    std::uint64_t latency_ns) {
  record<add_owned>(slot.owned, kind, code, latency_ns);
}

void OperationMetrics::record_shared(Slot& slot, OperationKind kind,
                                     listener::wire::ResultCode code, std::uint64_t latency_ns) {
  record<add_shared>(slot.shared, kind, code, latency_ns);
}

void OperationMetrics::record_abandoned_owned(Slot& slot, OperationKind kind) {
  threadpool::owner_add(slot.owned.kinds[static_cast<std::size_t>(kind)].results[kAbandonedResult]);
}

void OperationMetrics::record_abandoned_shared(Slot& slot, OperationKind kind) {
  slot.shared.kinds[static_cast<std::size_t>(kind)].results[kAbandonedResult].fetch_add(
      1, std::memory_order_relaxed);
}

std::vector<OperationMetrics::SlotReading> OperationMetrics::read() const {
  std::vector<SlotReading> readings;
  readings.emplace_back();
  read_part(unowned_->shared, readings.back().totals);
  MutexLock lock(mu_);
  readings.reserve(slots_.size() + 1);
  for (const std::unique_ptr<Slot>& slot : slots_) {
    SlotReading& reading = readings.emplace_back();
    reading.tid = slot->tid;
    read_part(slot->owned, reading.totals);
    read_part(slot->shared, reading.totals);
  }
  return readings;
}

OperationMetricsTotals OperationMetrics::totals() const {
  OperationMetricsTotals totals;
  for (const SlotReading& reading : read()) {
    totals.add(reading.totals);
  }
  return totals;
}

}  // namespace numadir::server
