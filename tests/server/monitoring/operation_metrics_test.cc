// OperationMetrics (server/monitoring/operation_metrics.h): latency buckets, result slots, and
// sums over threads recording at once.
#include <doctest/doctest.h>

#include <barrier>
#include <cstdint>
#include <thread>
#include <vector>

#include "server/monitoring/operation_metrics.h"
#include "threadpool/thread_counters.h"

namespace numadir::server {
namespace {

using listener::wire::ResultCode;

constexpr std::size_t kBind = static_cast<std::size_t>(OperationKind::kBind);
constexpr std::size_t kModify = static_cast<std::size_t>(OperationKind::kModify);

TEST_CASE("OperationMetrics: bucket edges are inclusive upper bounds") {
  CHECK(latency_bucket_of(0) == 0);
  CHECK(latency_bucket_of(10'000) == 0);  // Exactly 10 µs: le=1e-05.
  CHECK(latency_bucket_of(10'001) == 1);  // 10 µs + 1 ns: le=2.5e-05.
  CHECK(latency_bucket_of(25'000) == 1);
  CHECK(latency_bucket_of(30'000'000) == 11);  // 30 ms: le=0.05, not le=0.025.
  CHECK(kLatencyBucketLabels[11] == "0.05");
  CHECK(latency_bucket_of(1'000'000'000) == 15);  // Exactly 1 s: le=1.
  CHECK(kLatencyBucketLabels[15] == "1");
  CHECK(latency_bucket_of(1'000'000'001) == 16);  // Past 1 s: +Inf only.
  CHECK(latency_bucket_of(UINT64_MAX) == 16);
  CHECK(kLatencyBucketLabels[16] == "+Inf");
  for (std::size_t i = 0; i < kLatencyBoundsNs.size(); ++i) {
    CAPTURE(i);
    CHECK(latency_bucket_of(kLatencyBoundsNs[i]) == i);
    CHECK(latency_bucket_of(kLatencyBoundsNs[i] + 1) == i + 1);
  }
}

TEST_CASE("OperationMetrics: result codes map to their RFC names") {
  CHECK(result_slot_name(result_slot(ResultCode::kSuccess)) == "success");
  CHECK(result_slot_name(result_slot(ResultCode::kInvalidCredentials)) == "invalidCredentials");
  CHECK(result_slot_name(result_slot(ResultCode::kNoSuchObject)) == "noSuchObject");
  CHECK(result_slot_name(result_slot(ResultCode::kInvalidDnSyntax)) == "invalidDNSyntax");
  CHECK(result_slot_name(result_slot(ResultCode::kOther)) == "other");
  CHECK(result_slot_name(result_slot(static_cast<ResultCode>(4096))) == "eSyncRefreshRequired");
  CHECK(result_slot_name(result_slot(static_cast<ResultCode>(118))) == "canceled");
  SUBCASE("a code without a name is other") {
    CHECK(result_slot(static_cast<ResultCode>(9)) == result_slot(ResultCode::kOther));
    CHECK(result_slot(static_cast<ResultCode>(-1)) == result_slot(ResultCode::kOther));
    CHECK(result_slot(static_cast<ResultCode>(100000)) == result_slot(ResultCode::kOther));
  }
  CHECK(result_slot_name(kAbandonedResult) == "abandoned");
  // Every slot but the abandoned one has a distinct name.
  for (ResultSlot a = 0; a < kResultSlots; ++a) {
    CHECK_FALSE(result_slot_name(a).empty());
    for (ResultSlot b = a + 1; b < kResultSlots; ++b) {
      CHECK(result_slot_name(a) != result_slot_name(b));
    }
  }
}

TEST_CASE("OperationMetrics: a slot records latency sum and result per kind") {
  OperationMetrics metrics;
  OperationMetrics::Slot& slot = metrics.add_slot();
  CHECK(slot.tid == threadpool::os_thread_id());
  OperationMetrics::record_owned(slot, OperationKind::kBind, ResultCode::kSuccess, 7'000);
  OperationMetrics::record_owned(slot, OperationKind::kBind, ResultCode::kInvalidCredentials,
                                 2'000'000);
  OperationMetrics::record_abandoned_owned(slot, OperationKind::kBind);
  const OperationMetricsTotals totals = metrics.totals();
  CHECK(totals.latency[kBind].count() == 2);
  CHECK(totals.latency[kBind].sum_ns == 2'007'000);
  CHECK(totals.latency[kBind].buckets[0] == 1);
  CHECK(totals.latency[kBind].buckets[7] == 1);  // le=0.0025
  CHECK(totals.results[kBind][result_slot(ResultCode::kSuccess)] == 1);
  CHECK(totals.results[kBind][result_slot(ResultCode::kInvalidCredentials)] == 1);
  CHECK(totals.results[kBind][kAbandonedResult] == 1);
  CHECK(totals.latency[kModify].count() == 0);
}

TEST_CASE("OperationMetrics: four threads recording at once sum exactly") {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  OperationMetrics metrics;
  std::vector<OperationMetrics::Slot*> slots(kThreads);
  std::vector<std::int32_t> tids(kThreads);
  std::barrier start(kThreads + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      OperationMetrics::Slot& slot = metrics.add_slot();
      slots[t] = &slot;
      tids[t] = threadpool::os_thread_id();
      start.arrive_and_wait();
      for (int i = 0; i < kPerThread; ++i) {
        OperationMetrics::record_owned(slot, OperationKind::kSearch, ResultCode::kSuccess,
                                       static_cast<std::uint64_t>(i % 3) * 20'000);
        // Another thread's operations finishing on this one (a detached modify).
        OperationMetrics::Slot& other = *slots[(t + 1) % kThreads];
        OperationMetrics::record_shared(other, OperationKind::kModify, ResultCode::kSuccess, 1'000);
      }
    });
  }
  start.arrive_and_wait();  // Every slot is in `slots` before anyone records.
  // Reads while they record: never more than the final counts.
  for (int i = 0; i < 50; ++i) {
    CHECK(metrics.totals().latency[static_cast<std::size_t>(OperationKind::kSearch)].count() <=
          std::uint64_t{kThreads} * kPerThread);
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  const OperationMetricsTotals totals = metrics.totals();
  const OperationHistogram& search =
      totals.latency[static_cast<std::size_t>(OperationKind::kSearch)];
  CHECK(search.count() == std::uint64_t{kThreads} * kPerThread);
  // i % 3 == 0: 0 ns (bucket 0); 1: 20 µs (bucket 1); 2: 40 µs (bucket 2).
  const std::uint64_t zeros = (kPerThread + 2) / 3, ones = (kPerThread + 1) / 3,
                      twos = kPerThread / 3;
  CHECK(search.buckets[0] == kThreads * zeros);
  CHECK(search.buckets[1] == kThreads * ones);
  CHECK(search.buckets[2] == kThreads * twos);
  CHECK(search.sum_ns == kThreads * (ones * 20'000 + twos * 40'000));
  CHECK(totals.latency[kModify].count() == std::uint64_t{kThreads} * kPerThread);
  // Each slot's reading carries its thread, and the shared part's counts stay with the slot.
  const std::vector<OperationMetrics::SlotReading> readings = metrics.read();
  REQUIRE(readings.size() == kThreads + 1);
  CHECK(readings[0].tid == 0);  // The unowned slot.
  for (int t = 0; t < kThreads; ++t) {
    bool found = false;
    for (const OperationMetrics::SlotReading& reading : readings) {
      if (reading.tid == tids[t]) {
        found = true;
        CHECK(reading.totals.latency[kModify].count() == kPerThread);
      }
    }
    CHECK(found);
  }
}

}  // namespace
}  // namespace numadir::server
