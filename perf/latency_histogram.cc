#include "perf/latency_histogram.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>

namespace numadir::perf {
namespace {

// Values below kLinear get a bucket each; above, each power of two [2^k, 2^(k+1)) is split into
// kSubBuckets buckets of width 2^(k-7): a width of at most 1/128 of the value.
constexpr std::uint64_t kLinear = 256;
constexpr std::uint64_t kSubBuckets = 128;
constexpr int kSubBits = 7;

std::size_t bucket_count() {
  return LatencyHistogram::bucket_of(LatencyHistogram::kMaxValue - 1) + 1;
}

// Single-writer counters: a relaxed load and store is an increment no other thread can lose.
void add_relaxed(std::uint64_t& counter, std::uint64_t amount) {
  std::atomic_ref<std::uint64_t> ref(counter);
  ref.store(ref.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

std::uint64_t load_relaxed(const std::uint64_t& counter) {
  // atomic_ref needs a non-const object; loading does not write it.
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(counter))
      .load(std::memory_order_relaxed);
}

}  // namespace

LatencyHistogram::LatencyHistogram() : buckets_(bucket_count(), 0) {}

std::size_t LatencyHistogram::bucket_of(std::uint64_t value) {
  if (value < kLinear) {
    return static_cast<std::size_t>(value);
  }
  value = std::min(value, kMaxValue - 1);
  // shift >= 1: the value's top 8 bits, [128, 256), pick the sub-bucket.
  const int shift = std::bit_width(value) - (kSubBits + 1);
  const std::uint64_t top = value >> shift;
  return static_cast<std::size_t>(kLinear + static_cast<std::uint64_t>(shift - 1) * kSubBuckets +
                                  (top - kSubBuckets));
}

std::uint64_t LatencyHistogram::bucket_low(std::size_t bucket) {
  if (bucket < kLinear) {
    return bucket;
  }
  const std::uint64_t above = bucket - kLinear;
  const int shift = static_cast<int>(above / kSubBuckets) + 1;
  const std::uint64_t top = kSubBuckets + above % kSubBuckets;
  return top << shift;
}

std::uint64_t LatencyHistogram::bucket_high(std::size_t bucket) {
  if (bucket < kLinear) {
    return bucket;
  }
  const int shift = static_cast<int>((bucket - kLinear) / kSubBuckets) + 1;
  return bucket_low(bucket) + (std::uint64_t{1} << shift) - 1;
}

void LatencyHistogram::record(std::uint64_t value_ns) {
  add_relaxed(buckets_[bucket_of(value_ns)], 1);
  add_relaxed(sum_, value_ns);
  // min_/max_ before count_: a reader that sees the count sees bounds at least as wide (on
  // x86 stores are not reordered; elsewhere a copy is merely a sample behind, see the header).
  if (count_ == 0 || value_ns < min_) {
    std::atomic_ref<std::uint64_t>(min_).store(value_ns, std::memory_order_relaxed);
  }
  if (value_ns > max_) {
    std::atomic_ref<std::uint64_t>(max_).store(value_ns, std::memory_order_relaxed);
  }
  add_relaxed(count_, 1);
}

void LatencyHistogram::load_from(const LatencyHistogram& live) {
  count_ = load_relaxed(live.count_);
  sum_ = load_relaxed(live.sum_);
  min_ = load_relaxed(live.min_);
  max_ = load_relaxed(live.max_);
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    buckets_[i] = load_relaxed(live.buckets_[i]);
  }
}

void LatencyHistogram::merge(const LatencyHistogram& other) {
  if (other.count_ == 0) {
    return;
  }
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    buckets_[i] += other.buckets_[i];
  }
}

void LatencyHistogram::subtract(const LatencyHistogram& earlier) {
  count_ = 0;
  sum_ -= std::min(sum_, earlier.sum_);
  std::size_t lowest = buckets_.size();
  std::size_t highest = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    // A concurrent copy may show a bucket a sample behind; never go below zero.
    buckets_[i] -= std::min(buckets_[i], earlier.buckets_[i]);
    count_ += buckets_[i];
    if (buckets_[i] != 0) {
      lowest = std::min(lowest, i);
      highest = i;
    }
  }
  if (count_ == 0) {
    sum_ = 0;
    min_ = 0;
    max_ = 0;
    return;
  }
  // The exact bounds are kept when they still lie in the remaining extreme buckets.
  min_ = bucket_of(min_) == lowest ? min_ : bucket_low(lowest);
  max_ = bucket_of(max_) == highest ? max_ : bucket_high(highest);
}

void LatencyHistogram::reset() {
  std::fill(buckets_.begin(), buckets_.end(), 0);
  count_ = 0;
  sum_ = 0;
  min_ = 0;
  max_ = 0;
}

std::uint64_t LatencyHistogram::min() const { return count_ == 0 ? 0 : min_; }
std::uint64_t LatencyHistogram::max() const { return count_ == 0 ? 0 : max_; }

double LatencyHistogram::mean() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_) / static_cast<double>(count_);
}

std::uint64_t LatencyHistogram::value_at_percentile(double percentile) const {
  if (count_ == 0) {
    return 0;
  }
  // The rank of the sample at `percentile`, 1-based, as in a sorted array: ceil(p/100 * n).
  auto rank =
      static_cast<std::uint64_t>(std::ceil(percentile / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      return std::clamp(bucket_high(i), min(), max());
    }
  }
  return max();
}

}  // namespace numadir::perf
