// tests/fuzz/stats_latency_fuzz.cc: the parsers of what the metrics read back: numadir stats'
// numadirLatencyHistogram values and the process metrics' /proc/self/statm line. Neither may
// crash; a histogram parse_latency_value accepts has kLatencyBuckets counts summing to its
// count, and every quantile of it lies within the buckets' bounds (up to 1 s past the last).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.h"
#include "server/commands/stats_view.h"
#include "server/monitoring/metrics.h"
#include "server/monitoring/operation_metrics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace numadir::server;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (std::optional<StatsLatency> latency = parse_latency_value(text); latency.has_value()) {
    NUMADIR_CHECK(latency->buckets.size() == kLatencyBuckets,
                  "parse_latency_value accepted a histogram with another bucket count");
    std::uint64_t total = 0;
    for (const std::uint64_t n : latency->buckets) {
      total += n;
    }
    NUMADIR_CHECK(total == latency->count,
                  "parse_latency_value accepted buckets that do not sum to the count");
    for (const double q : {0.0, 0.5, 0.99, 1.0}) {
      if (const std::optional<double> ns = latency_quantile_ns(latency->buckets, q);
          ns.has_value()) {
        NUMADIR_CHECK(*ns >= 0 && *ns <= static_cast<double>(kLatencyBoundsNs.back()),
                      "latency_quantile_ns outside the buckets' bounds");
      }
    }
  }
  (void)statm_resident_pages(text);
  return 0;
}
