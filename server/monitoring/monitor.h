// server/monitoring/monitor.h: the read-only cn=Monitor subtree, in the spirit of slapd's
// back-monitor: the server's counters as entries, built afresh for every search of it.
//
//   cn=Monitor                               numadirVersion, numadirDispatcher, uptime
//     cn=Connections,cn=Monitor              open, accepted and refused connections
//     cn=Operations,cn=Monitor               operations by kind; auths (successful binds); with
//                                            [metrics] on, each kind's latency histogram
//     cn=Writer,cn=Monitor                   the single writer: updates, commits, batches
//     cn=Listeners,cn=Monitor
//       cn=Listener <i>,cn=Listeners,...     per listener thread: connections, requests, CPU
//     cn=Workers,cn=Monitor
//       cn=Worker <i>,cn=Workers,...         per worker thread: requests, parks, busy, CPU
//     cn=Pools,cn=Monitor
//       cn=Pool <i>,cn=Pools,...             per pool: queue depth, high-water mark, capacity
//     cn=Replication,cn=Monitor              (with [[replication.consumer]] tables or a provider)
//       cn=Consumer <rid>,cn=Replication,... state, provider, cookie and contextCSN, entries
//                                            received and applied, last change, errors
//       cn=Provider,cn=Replication,...       (with a provider attached) enabled, session log
//                                            size, contextCSN, sync searches served, ended
//                                            with refresh required, fallen behind
//         cn=Consumer <conn>-<msgid>,cn=Provider,...  per sync search served: peer, identity,
//                                            rid, mode, phase, base, entries and changes sent,
//                                            queue depth and capacity, since, last CSN, lag
//
// The attributes and object classes are in schema/files/monitor.schema. The search itself
// (rootdn only; noSuchObject for everyone else) is MonitorSearch (monitor_search.h).
//
// Thread contract: a Monitor is built and attached / detached on the main thread; collect() may
// be called from any thread (workers running a search) at any time, concurrently with attach
// and detach (a mutex orders them). make_monitor_entries is a function of its argument.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/directory_update.h"
#include "base/thread_annotations.h"
#include "listener/frontend_snapshot.h"
#include "schema/entry.h"
#include "server/monitoring/monitor_dn.h"
#include "server/monitoring/operation_counters.h"
#include "server/monitoring/operation_metrics.h"
#include "server/replication/consumer.h"
#include "server/replication/sync_provider_status.h"

namespace numadir::server {

// What cn=Monitor shows, gathered at one moment.
struct MonitorData {
  std::string version;  // numadirVersion, e.g. "numadir 0.1.0".
  std::uint64_t uptime_s = 0;
  // numadirHeapAllocations: in a build that counts them (base/heap_counter.h) only.
  std::optional<std::uint64_t> heap_allocations;
  // Absent until the listeners run (and after they stop): the thread entries are then left out.
  std::optional<listener::FrontendSnapshot> frontend;
  // CPU time (user + system) of frontend->listeners[i] / ->workers[i] in milliseconds; nullopt
  // where /proc could not tell. Either empty or as long as the snapshot's vector.
  std::vector<std::optional<std::uint64_t>> listener_cpu_ms;
  std::vector<std::optional<std::uint64_t>> worker_cpu_ms;
  OperationTotals operations;
  // The operations' results and latency histograms: only while metrics are on ([metrics]).
  std::optional<OperationMetricsTotals> latency;
  // The directory's writer (cn=Writer is left out without it).
  std::optional<backend::WriterStats> writer;
  // The replication consumers, by rid (cn=Replication is left out without any).
  std::vector<replication::ConsumerStatus> consumers;
  // The replication provider and the sync searches it serves (cn=Provider is left out without).
  std::optional<replication::ProviderStatus> provider;
};

// Returns: the entries of cn=Monitor for `data`, parents before their children, each with its
//   DN, objectClass and cn first.
std::vector<schema::Entry> make_monitor_entries(const MonitorData& data);

// Returns: the CPU time (utime + stime) of thread `tid` of this process, in milliseconds, from
//   /proc/self/task/<tid>/stat; nullopt when it cannot be read (the thread is gone, no /proc).
std::optional<std::uint64_t> thread_cpu_ms(std::int32_t tid);

class Monitor {
 public:
  using Source = std::function<listener::FrontendSnapshot()>;

  // `version` is published as numadirVersion; the uptime counts from now.
  explicit Monitor(std::string version);
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // Main thread: from now on collect() takes the frontend's counters from `source` (e.g.
  // Frontend::snapshot), which must stay callable until detach().
  void attach(Source source) NUMADIR_EXCLUDES(mu_);
  // Main thread: stops calling the sources (the frontend's, the consumers', the provider's);
  // returns once no collect() is using them. Call before the frontend stops.
  void detach() NUMADIR_EXCLUDES(mu_);
  // Main thread: collect() also takes the replication consumers' status from `source`, until
  // detach().
  void attach_consumers(std::function<std::vector<replication::ConsumerStatus>()> source)
      NUMADIR_EXCLUDES(mu_);
  // Main thread: collect() also takes the replication provider's status from `source` (e.g.
  // SyncProvider::status), which must stay callable until detach_provider() or detach(). It is
  // called with the monitor's mutex held: it must not call into this Monitor.
  void attach_provider(std::function<replication::ProviderStatus()> source) NUMADIR_EXCLUDES(mu_);
  // Main thread: stops calling the provider's source; returns once no collect() is using it.
  // Call before the provider is destroyed.
  void detach_provider() NUMADIR_EXCLUDES(mu_);

  // Main thread, before any collect(): from now on collect() also sums `metrics` (latency),
  // which must outlive this Monitor's collect() calls; nullptr stops that.
  void set_operation_metrics(const OperationMetrics* metrics) NUMADIR_EXCLUDES(mu_);

  // Any thread. Returns: the wall-clock time the Monitor was made (the server's start).
  std::chrono::system_clock::time_point started_at() const { return started_wall_; }

  // Any thread. Returns: the monitor's data now, with `operations` and each thread's CPU time.
  MonitorData collect(const OperationTotals& operations) const NUMADIR_EXCLUDES(mu_);

 private:
  const std::string version_;
  const std::chrono::steady_clock::time_point started_;
  const std::chrono::system_clock::time_point started_wall_ = std::chrono::system_clock::now();
  mutable Mutex mu_;
  Source source_ NUMADIR_GUARDED_BY(mu_);
  std::function<std::vector<replication::ConsumerStatus>()> consumers_ NUMADIR_GUARDED_BY(mu_);
  std::function<replication::ProviderStatus()> provider_ NUMADIR_GUARDED_BY(mu_);
  const OperationMetrics* operation_metrics_ NUMADIR_GUARDED_BY(mu_) = nullptr;
};

}  // namespace numadir::server
