// perf/latency_histogram.h: LatencyHistogram, a log-linear histogram of latencies in
// nanoseconds (HdrHistogram-like: exact below 256 ns, then 128 buckets per power of two, so any
// recorded value is known to within 0.8%), with percentiles, merging and subtraction.
//
// authrate gives each worker thread one histogram that only that thread records into; the
// reporting thread copies it with load_from() while the worker keeps recording, and works on its
// copies (merge, subtract, percentiles) alone. record() and load_from() use relaxed
// std::atomic_ref on the counters: the only writer is the owner, so a relaxed load + store is
// an increment nobody else can lose, and a reader gets each counter whole (a copy taken during
// recording may be a few samples behind in some buckets, which interval reports tolerate).
//
// Thread contract: record() only from the owning thread; load_from(live) may read `live` from
// any thread while its owner records. Every other method needs the histogram to be owned by
// the calling thread (a copy, or a histogram nobody records into).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace numadir::perf {

class LatencyHistogram {
 public:
  // Values at or above kMaxValue (about 18 minutes) are recorded as kMaxValue - 1.
  static constexpr std::uint64_t kMaxValue = std::uint64_t{1} << 40;

  LatencyHistogram();
  LatencyHistogram(const LatencyHistogram&) = default;
  LatencyHistogram& operator=(const LatencyHistogram&) = default;

  // Records one value. Thread: the owner only; never allocates.
  void record(std::uint64_t value_ns);

  // Makes this a copy of `live`, which its owner may be recording into meanwhile.
  void load_from(const LatencyHistogram& live);
  // Adds every sample of `other`.
  void merge(const LatencyHistogram& other);
  // Removes the samples of `earlier`, an older copy of the same histogram (so that `this` minus
  // `earlier` is what was recorded in between). min() and max() become the bounds of the
  // remaining buckets (within the bucket precision).
  void subtract(const LatencyHistogram& earlier);
  void reset();

  std::uint64_t count() const { return count_; }
  // Returns: 0 when empty.
  std::uint64_t min() const;
  std::uint64_t max() const;
  double mean() const;
  // Returns: the smallest recorded value v (to within the bucket precision, and never above
  //   max()) such that at least `percentile`% of the samples are <= v; 0 when empty.
  // Requires: 0 <= percentile <= 100.
  std::uint64_t value_at_percentile(double percentile) const;

  // The bucket of a value, and the highest value that falls in a bucket (for tests).
  static std::size_t bucket_of(std::uint64_t value);
  static std::uint64_t bucket_high(std::size_t bucket);
  static std::uint64_t bucket_low(std::size_t bucket);

 private:
  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  std::uint64_t min_ = 0;  // Exact while only record()ed and merged; 0 when empty.
  std::uint64_t max_ = 0;
};

}  // namespace numadir::perf
