// server/monitoring/operation_metrics.h: the latency histograms and result counts of operations,
// per operation kind, counted per thread: each thread that runs operations gets its own slot
// (add_slot(), kept in its worker state) on its own cache lines, and readers sum the slots at
// scrape. A slot has two parts: the owner's, written only by its thread (threadpool::owner_add:
// no locked instruction), and a shared one, for operations the thread started that finish on
// another thread (a detached operation finished by the writer thread or another worker: every
// add, modify and delete), written with relaxed fetch_add. Both are attributed to the slot's
// thread (its tid), so a scrape puts them under the node of the pool that thread serves.
//
// Latency buckets are integer nanoseconds (latency_bucket_of() is a few integer compares, no
// floating point); their upper bounds are Prometheus's `le`: 10 µs ... 1 s, then +Inf.
//
// It also counts the TLS handshakes, full or resumed.
//
// Thread contract: add_slot(), read(), totals() and the TLS handshake calls may be called from any
// thread at once (a mutex guards the list of slots). record_owned() writes the slot's owner part:
// only the thread the slot was given to calls it; record_shared() any thread. Slots live as long as
// the OperationMetrics (a worker's counts outlive it); destroy it only once no thread records any
// more.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/cache_line.h"
#include "base/thread_annotations.h"
#include "listener/wire/ldap_message.h"
#include "server/monitoring/operation_counters.h"

namespace numadir::server {

// Upper bounds (inclusive, as Prometheus's `le`) of the finite latency buckets, in nanoseconds.
inline constexpr std::array<std::uint64_t, 16> kLatencyBoundsNs = {
    10'000,      25'000,      50'000,      100'000,      250'000,    500'000,
    1'000'000,   2'500'000,   5'000'000,   10'000'000,   25'000'000, 50'000'000,
    100'000'000, 250'000'000, 500'000'000, 1'000'000'000};
inline constexpr std::size_t kLatencyBuckets = kLatencyBoundsNs.size() + 1;  // With +Inf.
// The bounds as the `le` label shows them (Prometheus's shortest float form), then "+Inf".
inline constexpr std::array<std::string_view, kLatencyBuckets> kLatencyBucketLabels = {
    "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
    "0.01",  "0.025",   "0.05",  "0.1",    "0.25",    "0.5",    "1",     "+Inf"};

// Returns: the index of the bucket `ns` falls in: the first whose bound is >= ns (exactly 10 µs
//   is bucket 0, 10 µs + 1 ns bucket 1), kLatencyBuckets - 1 past 1 s.
inline std::size_t latency_bucket_of(std::uint64_t ns) {
  // From the smallest bound up, stopping at the first at or above `ns`: a directory's
  // operations take well under a millisecond, so this is a few well-predicted compares where a
  // branch-free pass over every bound takes sixteen.
  std::size_t index = 0;
  while (index < kLatencyBoundsNs.size() && ns > kLatencyBoundsNs[index]) {
    ++index;
  }
  return index;
}

// The results an operation can end with, as a compact index: each RFC 4511 (and RFC 3909, 4533)
// result code with a name, "other" (code 80, and any code without a name), and "abandoned" (the
// operation ended without a result).
inline constexpr std::size_t kResultSlots = 47;
using ResultSlot = std::uint8_t;
// Returns: the slot of `code` (the "other" slot for a code without a name).
ResultSlot result_slot(listener::wire::ResultCode code);
inline constexpr ResultSlot kAbandonedResult = kResultSlots - 1;
// Returns: the slot's name in camelCase ("success", "invalidCredentials", "other", "abandoned");
//   "" for a slot no code uses.
std::string_view result_slot_name(ResultSlot slot);

// One kind's latencies and results, as read (plain values).
struct OperationHistogram {
  std::array<std::uint64_t, kLatencyBuckets> buckets{};  // Not cumulative: one count per bucket.
  std::uint64_t sum_ns = 0;
  std::uint64_t count() const;  // Operations with a latency (every result but "abandoned").
};
struct OperationMetricsTotals {
  std::array<OperationHistogram, kOperationKinds> latency{};  // Indexed by OperationKind.
  std::array<std::array<std::uint64_t, kResultSlots>, kOperationKinds> results{};
  void add(const OperationMetricsTotals& other);
};

class OperationMetrics {
 public:
  // One part of a slot: counters for every operation kind.
  struct alignas(kCacheLineSize) Part {
    struct Kind {
      std::array<std::atomic<std::uint64_t>, kLatencyBuckets> buckets{};
      std::atomic<std::uint64_t> sum_ns{0};
      std::array<std::atomic<std::uint64_t>, kResultSlots> results{};
    };
    std::array<Kind, kOperationKinds> kinds{};
  };
  // One thread's metrics. owned: Owner: the thread add_slot() gave it to. shared: any thread.
  struct Slot {
    Part owned;
    Part shared;
    const std::int32_t tid;  // os_thread_id() of the thread that made it (add_slot's caller).
    explicit Slot(std::int32_t thread) : tid(thread) {}
  };

  OperationMetrics();
  OperationMetrics(const OperationMetrics&) = delete;
  OperationMetrics& operator=(const OperationMetrics&) = delete;
  ~OperationMetrics();

  // Returns: a new slot of the calling thread (its tid recorded), read from now on and valid for
  //   this object's life.
  Slot& add_slot() NUMADIR_EXCLUDES(mu_);
  // Returns: the slot of what runs on no thread of its own (a request dropped before it ran,
  //   StartTLS carried out by a listener): record_shared() only; its tid is 0.
  Slot& unowned_slot() { return *unowned_; }

  // Records one operation of `kind` that ended with `code` after `latency_ns`, in the owner part.
  // Requires: the caller is the slot's thread.
  static void record_owned(Slot& slot, OperationKind kind, listener::wire::ResultCode code,
                           std::uint64_t latency_ns);
  // The same, in the shared part, from any thread.
  static void record_shared(Slot& slot, OperationKind kind, listener::wire::ResultCode code,
                            std::uint64_t latency_ns);
  // Counts one operation of `kind` that ended without a result (no latency): owner part / shared.
  static void record_abandoned_owned(Slot& slot, OperationKind kind);
  static void record_abandoned_shared(Slot& slot, OperationKind kind);

  // One slot as read: its thread and both parts summed.
  struct SlotReading {
    std::int32_t tid = 0;
    OperationMetricsTotals totals;
  };
  // Returns: every slot (the unowned one first, tid 0), read now.
  std::vector<SlotReading> read() const NUMADIR_EXCLUDES(mu_);
  // Returns: the sum over every slot, read now.
  OperationMetricsTotals totals() const NUMADIR_EXCLUDES(mu_);

  // Counts one TLS handshake completed, full or resumed: once per connection, from any thread.
  void count_tls_handshake(bool resumed) {
    (resumed ? tls_resumed_ : tls_full_).fetch_add(1, std::memory_order_relaxed);
  }
  struct TlsHandshakes {
    std::uint64_t full = 0;
    std::uint64_t resumed = 0;
  };
  // Any thread. Returns: the handshakes counted so far.
  TlsHandshakes tls_handshakes() const {
    return TlsHandshakes{tls_full_.load(std::memory_order_relaxed),
                         tls_resumed_.load(std::memory_order_relaxed)};
  }

 private:
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Slot>> slots_ NUMADIR_GUARDED_BY(mu_);
  const std::unique_ptr<Slot> unowned_;
  // Shared, relaxed (monitoring reads).
  std::atomic<std::uint64_t> tls_full_{0};
  std::atomic<std::uint64_t> tls_resumed_{0};
};

}  // namespace numadir::server
