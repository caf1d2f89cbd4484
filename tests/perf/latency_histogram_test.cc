#include "perf/latency_histogram.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace numadir::perf {
namespace {

// The reference percentile: the sample of 1-based rank ceil(p/100 * n) in sorted order.
std::uint64_t reference_percentile(const std::vector<std::uint64_t>& sorted, double percentile) {
  auto rank = static_cast<std::size_t>(std::ceil(percentile / 100.0 * sorted.size()));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

TEST_CASE("LatencyHistogram: percentiles match a sorted reference within 1%") {
  const std::uint64_t seed = 20240611;
  MESSAGE("seed " << seed);
  std::mt19937_64 rng(seed);
  // Log-uniform from 100 ns to 1 s, as latencies spread.
  std::uniform_real_distribution<double> exponent(2.0, 9.0);
  LatencyHistogram histogram;
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 200'000; ++i) {
    const auto value = static_cast<std::uint64_t>(std::pow(10.0, exponent(rng)));
    values.push_back(value);
    histogram.record(value);
  }
  std::sort(values.begin(), values.end());
  CHECK(histogram.count() == values.size());
  CHECK(histogram.min() == values.front());
  CHECK(histogram.max() == values.back());
  for (double percentile : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    CAPTURE(percentile);
    const std::uint64_t expected = reference_percentile(values, percentile);
    const std::uint64_t got = histogram.value_at_percentile(percentile);
    CHECK(got >= expected);
    CHECK(static_cast<double>(got) <= static_cast<double>(expected) * 1.01);
  }
  double sum = 0;
  for (std::uint64_t value : values) {
    sum += static_cast<double>(value);
  }
  CHECK(histogram.mean() == doctest::Approx(sum / static_cast<double>(values.size())));
}

TEST_CASE("LatencyHistogram: buckets tile the value range without gaps") {
  CHECK(LatencyHistogram::bucket_of(0) == 0);
  CHECK(LatencyHistogram::bucket_of(255) == 255);
  const std::size_t last = LatencyHistogram::bucket_of(LatencyHistogram::kMaxValue - 1);
  for (std::size_t bucket = 0; bucket < last; ++bucket) {
    CAPTURE(bucket);
    REQUIRE(LatencyHistogram::bucket_high(bucket) + 1 == LatencyHistogram::bucket_low(bucket + 1));
    REQUIRE(LatencyHistogram::bucket_of(LatencyHistogram::bucket_low(bucket)) == bucket);
    REQUIRE(LatencyHistogram::bucket_of(LatencyHistogram::bucket_high(bucket)) == bucket);
    const std::uint64_t low = LatencyHistogram::bucket_low(bucket);
    const std::uint64_t width = LatencyHistogram::bucket_high(bucket) - low + 1;
    REQUIRE(static_cast<double>(width) <= std::max(1.0, static_cast<double>(low) / 128.0));
  }
  CHECK(LatencyHistogram::bucket_high(last) == LatencyHistogram::kMaxValue - 1);
  // Values past the range land in the last bucket.
  CHECK(LatencyHistogram::bucket_of(LatencyHistogram::kMaxValue * 4) == last);
}

TEST_CASE("LatencyHistogram: an empty histogram reports zeros") {
  LatencyHistogram histogram;
  CHECK(histogram.count() == 0);
  CHECK(histogram.value_at_percentile(99) == 0);
  CHECK(histogram.min() == 0);
  CHECK(histogram.max() == 0);
  CHECK(histogram.mean() == 0);
}

TEST_CASE("LatencyHistogram: merge equals recording everything in one") {
  LatencyHistogram a;
  LatencyHistogram b;
  LatencyHistogram all;
  for (std::uint64_t v = 1; v < 100'000; v += 7) {
    (v % 2 == 0 ? a : b).record(v);
    all.record(v);
  }
  LatencyHistogram merged;
  merged.merge(a);
  merged.merge(b);
  CHECK(merged.count() == all.count());
  CHECK(merged.min() == all.min());
  CHECK(merged.max() == all.max());
  CHECK(merged.mean() == doctest::Approx(all.mean()));
  for (double percentile : {50.0, 99.0, 99.9}) {
    CHECK(merged.value_at_percentile(percentile) == all.value_at_percentile(percentile));
  }
}

TEST_CASE("LatencyHistogram: subtract leaves what was recorded after the earlier copy") {
  LatencyHistogram live;
  for (int i = 0; i < 1000; ++i) {
    live.record(1'000'000);  // Warm-up: 1 ms.
  }
  LatencyHistogram earlier;
  earlier.load_from(live);
  for (int i = 0; i < 500; ++i) {
    live.record(10'000);  // Measured: 10 us.
  }
  LatencyHistogram window;
  window.load_from(live);
  window.subtract(earlier);
  CHECK(window.count() == 500);
  CHECK(window.mean() == doctest::Approx(10'000));
  CHECK(window.value_at_percentile(100) <= 10'100);
  CHECK(window.max() <= 10'100);
  CHECK(window.min() >= 9'900);

  SUBCASE("subtracting a histogram from itself empties it") {
    window.load_from(live);
    window.subtract(window);
    CHECK(window.count() == 0);
    CHECK(window.max() == 0);
  }
}

}  // namespace
}  // namespace numadir::perf
