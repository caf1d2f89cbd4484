// server/commands/stats_view.h: what `numadir stats` shows: one reading of cn=Monitor (StatsSample,
// parsed from its entries) and the top-like view of two readings (rates over the time between
// them): auths/s, operations/s, the latency percentiles of each operation kind (with [metrics]
// on), connections, each pool's queue, each listener's and worker's
// requests/s and each thread's CPU%, each replication consumer's state and changes/s, and the
// replication provider with each sync search it serves (peer, identity, mode and phase, changes
// sent and per second, queue depth, since when, lag).
//
// Thread contract: plain values and functions of their arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "schema/entry.h"

namespace numadir::server {

struct StatsThread {
  std::string name;  // numadirThreadName.
  std::uint64_t pool = 0;
  std::uint64_t requests = 0;
  std::uint64_t connections = 0;  // Listeners: open now.
  std::uint64_t busy_ms = 0;      // Workers: time not parked.
  std::uint64_t parks = 0;        // Workers.
  std::uint64_t helped = 0;       // Listeners: requests run themselves.
  std::optional<std::uint64_t> cpu_ms;
};

struct StatsPool {
  std::string name;  // description: "node0", "pool0".
  std::uint64_t queue_depth = 0;
  std::uint64_t queue_high_water = 0;
  std::uint64_t queue_capacity = 0;
  std::uint64_t workers = 0;
};

struct StatsConsumer {
  std::uint64_t rid = 0;
  std::string state;  // numadirReplicationState.
  std::string provider;
  std::uint64_t changes_applied = 0;
  std::uint64_t failures = 0;
  std::string last_change;  // numadirLastChange (GeneralizedTime), "" if none.
  std::string last_error;
};

// cn=Provider,cn=Replication,cn=Monitor: the replication provider.
struct StatsProvider {
  bool enabled = false;  // numadirProviderEnabled.
  std::uint64_t session_log_entries = 0;
  std::string context_csn;  // "" if none yet.
  std::uint64_t searches = 0;
  std::uint64_t refused = 0;
  std::uint64_t fell_behind = 0;
};

// cn=Consumer <conn>-<msgid>,cn=Provider,...: one sync search the provider serves.
struct StatsSyncConsumer {
  std::string id;        // "<conn>-<msgid>", from the entry's cn.
  std::string peer;      // numadirPeer.
  std::string identity;  // numadirIdentity, "" anonymous.
  std::string mode;      // numadirSyncMode: refreshOnly or refreshAndPersist.
  std::string phase;     // numadirSyncPhase: refresh or persist.
  std::uint64_t entries_sent = 0;
  std::uint64_t changes_sent = 0;
  std::uint64_t queue_depth = 0;
  std::uint64_t queue_capacity = 0;
  std::string since;  // numadirSince (GeneralizedTime), "" if none.
  std::uint64_t lag_ms = 0;
};

// One operation kind's latency histogram (a numadirLatencyHistogram value of
// cn=Operations,cn=Monitor, present only while [metrics] is on).
struct StatsLatency {
  std::string op;  // "bind", "search", ...
  std::uint64_t count = 0;
  std::uint64_t sum_ns = 0;
  std::vector<std::uint64_t> buckets;  // Per bucket (not cumulative), kLatencyBoundsNs then +Inf.
};

// Returns: the histogram of a numadirLatencyHistogram value, "op=<kind> count=<n> sumNs=<ns>
//   buckets=<b0>,...,<b16>" (17 counts that sum to n), or nullopt when it is not one.
std::optional<StatsLatency> parse_latency_value(std::string_view text);

// Returns: the `q`-quantile (0 <= q <= 1), in nanoseconds, of the observations counted in
//   `buckets` (one count per latency bucket, not cumulative), estimated as Prometheus's
//   histogram_quantile does: linear within the bucket the rank falls in (from 0 in the first);
//   the highest finite bound (1 s) when it falls in +Inf. nullopt when there are none.
// Requires: buckets.size() == kLatencyBuckets.
std::optional<double> latency_quantile_ns(std::span<const std::uint64_t> buckets, double q);

struct StatsSample {
  double at_s = 0;  // When it was read (any monotonic clock, in seconds).
  std::string version;
  std::string dispatcher;
  std::uint64_t uptime_s = 0;
  std::uint64_t connections = 0;
  std::uint64_t connections_total = 0;
  std::uint64_t operations = 0;
  std::uint64_t binds = 0;
  std::uint64_t auths = 0;
  std::uint64_t searches = 0;
  std::vector<StatsThread> listeners;             // By index (cn=Listener <i>).
  std::vector<StatsThread> workers;               // By index (cn=Worker <i>).
  std::vector<StatsPool> pools;                   // By index (cn=Pool <i>).
  std::vector<StatsConsumer> consumers;           // In cn=Monitor's order (cn=Consumer <rid>).
  std::optional<StatsProvider> provider;          // Absent: no cn=Provider entry.
  std::vector<StatsSyncConsumer> sync_consumers;  // In cn=Monitor's order.
  // Absent: the server does not measure latencies ([metrics] off).
  std::optional<std::vector<StatsLatency>> latency;
};

// Returns: the sample that the entries of a subtree search of cn=Monitor describe, read at
//   `at_s`. Attribute names are matched case-insensitively; missing counters read 0.
// Errors: kMalformed when there is no cn=Monitor or cn=Operations,cn=Monitor entry.
Result<StatsSample> parse_stats_sample(const std::vector<schema::Entry>& entries, double at_s);

// Returns: the view of `current` (several lines, each ending in '\n'), with rates over the time
//   since `previous`; `url` names the server in the heading. Counters that went down (a
//   restarted server) read as rate 0.
std::string render_stats(const StatsSample& previous, const StatsSample& current,
                         std::string_view url);

}  // namespace numadir::server
