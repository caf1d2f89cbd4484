// server/monitoring/metrics.h: Metrics, what the metrics endpoint serves: every metric of the
// server rendered, at scrape, in the Prometheus text format or OpenMetrics (exposition.h), from
// the sources the server already keeps: the Monitor (frontend snapshot, replication consumers and
// provider), the operation counters (auths), the operation metrics (results and latency
// histograms, per thread, attributed to a node by the snapshot's thread ids, and the TLS
// handshakes), the writer's stats, the access log, the password policy's
// lockouts, and /proc/self for the process. Names, types and labels: docs/metrics.md.
//
// Per-thread latency slots are put under the node (pool) whose worker or listener has the slot's
// thread id; a slot of no pool's thread (a thread gone, or what no thread owns: requests dropped
// before they ran, StartTLS) is rendered without a node label.
//
// Thread contract: built on the main thread; render() may be called from any thread at any time
// (the HTTP endpoint's), concurrently; it takes only the sources' short locks. The sources must
// outlive the Metrics (or be detached from the Monitor first: then the frontend's metrics are
// left out).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "backend/directory_update.h"
#include "server/monitoring/access_log.h"
#include "server/monitoring/exposition_format.h"
#include "server/monitoring/monitor.h"
#include "server/monitoring/operation_counters.h"
#include "server/monitoring/operation_metrics.h"

namespace numadir::server {

struct MetricsSources {
  std::string version;  // numadir_build_info{version}, e.g. "0.1.0".
  // Required: the frontend, consumers and provider (Monitor::collect).
  const Monitor* monitor = nullptr;
  // Required: the operation totals (numadir_auths_total), e.g. OperationHandler::operation_totals.
  std::function<OperationTotals()> operations;
  // Required: the results, latencies and TLS handshakes (what OperationHandler measures).
  const OperationMetrics* operation_metrics = nullptr;
  // Optional sources; absent ones leave their metrics out.
  std::function<backend::WriterStats()> writer;  // numadir_writer_*
  const AccessLog* access_log = nullptr;         // numadir_access_log_dropped_lines_total
  std::function<std::uint64_t()> lockouts;       // numadir_password_policy_lockouts_total
  // The directory's contextCSN ("" unknown) when there is no provider (whose status has it).
  std::function<std::string()> context_csn;
};

// What the process metrics read from /proc/self (and getrlimit).
struct ProcessStats {
  std::optional<std::uint64_t> resident_bytes;
  std::optional<std::uint64_t> open_fds;
  std::optional<std::uint64_t> max_fds;
  std::optional<double> cpu_seconds;
};
// Returns: this process's stats now; a field it could not read is nullopt.
ProcessStats read_process_stats();
// Returns: the resident pages of /proc/self/statm's text `statm` (its second field), or nullopt
//   when it is not two or more decimal fields.
std::optional<std::uint64_t> statm_resident_pages(std::string_view statm);

class Metrics {
 public:
  // Requires: the required sources set (aborts otherwise); all outlive this object.
  explicit Metrics(MetricsSources sources);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Renders every metric now into `out` (cleared first), in `format`. Any thread.
  void render(ExpositionFormat format, std::string& out) const;

 private:
  const MetricsSources sources_;
};

}  // namespace numadir::server
