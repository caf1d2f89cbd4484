// server/monitoring/metrics.cc: see metrics.h.
#include "server/monitoring/metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/check.h"
#include "server/monitoring/exposition.h"
#include "server/replication/sync_protocol.h"

namespace numadir::server {
namespace {

static_assert(backend::kCommitBoundsNs == kLatencyBoundsNs,
              "the writer's commit buckets are the operations' latency buckets");

constexpr std::array<std::string_view, backend::kBatchSizeBuckets> kBatchSizeLabels = {
    "1", "2", "4", "8", "16", "32", "64", "128", "256", "+Inf"};

constexpr double kNsPerSecond = 1e9;

double seconds_of_ns(std::uint64_t ns) { return static_cast<double>(ns) / kNsPerSecond; }

// Returns: the time of CSN `csn` in seconds since the epoch, or nullopt.
std::optional<double> csn_seconds(std::string_view csn) {
  if (!replication::is_csn(csn)) {
    return std::nullopt;
  }
  const std::optional<std::int64_t> micros = replication::csn_micros(csn);
  if (!micros.has_value()) {
    return std::nullopt;
  }
  return static_cast<double>(*micros) / 1e6;
}

// Returns: the latest time among the CSNs of cookie `cookie`, or nullopt.
std::optional<double> cookie_seconds(std::string_view cookie) {
  Result<replication::SyncCookie> parsed = replication::parse_sync_cookie(cookie);
  if (!parsed.ok()) {
    return std::nullopt;
  }
  std::optional<double> latest;
  for (const std::string_view csn : parsed->csns) {
    if (const std::optional<double> time = csn_seconds(csn);
        time.has_value() && (!latest.has_value() || *time > *latest)) {
      latest = time;
    }
  }
  return latest;
}

// The node (pool name) of each thread the frontend runs, by tid.
std::unordered_map<std::int32_t, std::string> nodes_by_tid(
    const listener::FrontendSnapshot& frontend) {
  std::unordered_map<std::int32_t, std::string> nodes;
  for (const listener::WorkerSnapshot& worker : frontend.workers) {
    if (worker.tid != 0 && worker.pool < frontend.pools.size()) {
      nodes[worker.tid] = frontend.pools[worker.pool].name;
    }
  }
  for (const listener::ListenerSnapshot& listener : frontend.listeners) {
    if (listener.tid != 0 && listener.pool < frontend.pools.size()) {
      nodes[listener.tid] = frontend.pools[listener.pool].name;
    }
  }
  return nodes;
}

void render_operations(ExpositionWriter& writer, const MonitorData& data,
                       const OperationMetrics& metrics) {
  // Slots summed per node ("" for no node), nodes in name order.
  std::map<std::string, OperationMetricsTotals> by_node;
  std::unordered_map<std::int32_t, std::string> nodes;
  if (data.frontend.has_value()) {
    nodes = nodes_by_tid(*data.frontend);
  }
  OperationMetricsTotals all;
  for (const OperationMetrics::SlotReading& reading : metrics.read()) {
    const auto node = nodes.find(reading.tid);
    by_node[node != nodes.end() ? node->second : std::string()].add(reading.totals);
    all.add(reading.totals);
  }
  writer.family("numadir_operations_total", MetricType::kCounter,
                "Operations ended, by operation and LDAP result (abandoned: ended without one).");
  for (std::size_t k = 0; k < kOperationKinds; ++k) {
    const std::string_view op = operation_kind_name(static_cast<OperationKind>(k));
    for (ResultSlot r = 0; r < kResultSlots; ++r) {
      if (all.results[k][r] != 0) {
        writer.sample({{"op", op}, {"result", result_slot_name(r)}}, all.results[k][r]);
      }
    }
  }
  writer.family("numadir_auths_total", MetricType::kCounter,
                "Successful simple binds with a name and password.");
  writer.sample(MetricLabels{}, data.operations.auths);
  writer.family("numadir_operation_duration_seconds", MetricType::kHistogram,
                "Server time of an operation, from the read of its request to its result "
                "handed to the connection.");
  for (std::size_t k = 0; k < kOperationKinds; ++k) {
    const std::string_view op = operation_kind_name(static_cast<OperationKind>(k));
    for (const auto& [node, totals] : by_node) {
      const OperationHistogram& histogram = totals.latency[k];
      if (histogram.count() == 0) {
        continue;
      }
      const std::array<MetricLabel, 2> labels = {{{"op", op}, {"node", node}}};
      writer.histogram(std::span<const MetricLabel>(labels.data(), node.empty() ? 1 : 2),
                       kLatencyBucketLabels, histogram.buckets, seconds_of_ns(histogram.sum_ns));
    }
  }
}

void render_frontend(ExpositionWriter& writer, const listener::FrontendSnapshot& frontend) {
  auto node_of = [&](std::size_t pool) -> std::string_view {
    return pool < frontend.pools.size() ? std::string_view(frontend.pools[pool].name) : "";
  };
  struct ListenerCounter {
    const char* name;
    MetricType type;
    const char* help;
    std::uint64_t listener::ListenerSnapshot::*field;
  };
  static constexpr ListenerCounter kListenerCounters[] = {
      {"numadir_connections_open", MetricType::kGauge, "Connections open now.",
       &listener::ListenerSnapshot::connections},
      {"numadir_connections_accepted_total", MetricType::kCounter, "Connections accepted.",
       &listener::ListenerSnapshot::accepted},
      {"numadir_connections_refused_total", MetricType::kCounter,
       "Connections refused at accept (max_connections, or out of file descriptors).",
       &listener::ListenerSnapshot::refused},
      {"numadir_listener_requests_total", MetricType::kCounter, "Requests decoded.",
       &listener::ListenerSnapshot::requests},
  };
  for (const ListenerCounter& counter : kListenerCounters) {
    writer.family(counter.name, counter.type, counter.help);
    for (const listener::ListenerSnapshot& listener : frontend.listeners) {
      writer.sample({{"listener", listener.name}, {"node", node_of(listener.pool)}},
                    listener.*counter.field);
    }
  }
  writer.family("numadir_connections_closed_total", MetricType::kCounter,
                "Connections closed, by reason.");
  for (const listener::ListenerSnapshot& listener : frontend.listeners) {
    for (std::size_t r = 0; r < listener::kCloseReasons; ++r) {
      writer.sample(
          {{"listener", listener.name},
           {"node", node_of(listener.pool)},
           {"reason", listener::close_reason_name(static_cast<listener::CloseReason>(r))}},
          listener.closed[r]);
    }
  }
  // Per pool: its own counts, and its threads' summed.
  struct PoolSums {
    std::uint64_t tasks = 0, helped = 0, refused = 0, busy_ns = 0, parks = 0;
  };
  std::vector<PoolSums> sums(frontend.pools.size());
  for (const listener::WorkerSnapshot& worker : frontend.workers) {
    if (worker.pool < sums.size()) {
      sums[worker.pool].tasks += worker.requests;
      sums[worker.pool].busy_ns += worker.busy_ns;
      sums[worker.pool].parks += worker.parks;
    }
  }
  for (const listener::ListenerSnapshot& listener : frontend.listeners) {
    if (listener.pool < sums.size()) {
      sums[listener.pool].helped += listener.helped;
      sums[listener.pool].refused += listener.submit_refused;
    }
  }
  struct PoolGauge {
    const char* name;
    const char* help;
    std::uint64_t listener::PoolSnapshot::*field;
  };
  static constexpr PoolGauge kPoolGauges[] = {
      {"numadir_pool_queue_depth", "Requests waiting for a worker now.",
       &listener::PoolSnapshot::queue_depth},
      {"numadir_pool_queue_high_water", "The most requests ever waiting at once.",
       &listener::PoolSnapshot::queue_high_water},
      {"numadir_pool_queue_capacity", "The pool's queue capacity.",
       &listener::PoolSnapshot::queue_capacity},
  };
  for (const PoolGauge& gauge : kPoolGauges) {
    writer.family(gauge.name, MetricType::kGauge, gauge.help);
    for (const listener::PoolSnapshot& pool : frontend.pools) {
      writer.sample({{"node", pool.name}}, pool.*gauge.field);
    }
  }
  struct PoolCounter {
    const char* name;
    const char* help;
    std::uint64_t PoolSums::*field;
  };
  static constexpr PoolCounter kPoolCounters[] = {
      {"numadir_pool_tasks_total", "Tasks the pool's workers ran.", &PoolSums::tasks},
      {"numadir_pool_helped_total", "Requests the pool's listeners ran themselves.",
       &PoolSums::helped},
      {"numadir_pool_submit_refused_total", "Submits refused (queue full: backpressure).",
       &PoolSums::refused},
      {"numadir_worker_parks_total", "Times the node's workers went to sleep idle.",
       &PoolSums::parks},
  };
  for (const PoolCounter& counter : kPoolCounters) {
    writer.family(counter.name, MetricType::kCounter, counter.help);
    for (std::size_t p = 0; p < frontend.pools.size(); ++p) {
      writer.sample({{"node", frontend.pools[p].name}}, sums[p].*counter.field);
    }
  }
  writer.family("numadir_worker_busy_seconds_total", MetricType::kCounter,
                "Worker time not parked, summed over the node's workers.");
  for (std::size_t p = 0; p < frontend.pools.size(); ++p) {
    writer.sample({{"node", frontend.pools[p].name}}, seconds_of_ns(sums[p].busy_ns));
  }
  bool any_lock = false;
  for (const listener::PoolSnapshot& pool : frontend.pools) {
    any_lock = any_lock || pool.lock.has_value();
  }
  if (any_lock) {
    writer.family("numadir_pool_lock_acquisitions_total", MetricType::kCounter,
                  "Locks of the single dispatcher's queue mutex.");
    for (const listener::PoolSnapshot& pool : frontend.pools) {
      if (pool.lock.has_value()) {
        writer.sample({{"node", pool.name}}, pool.lock->acquisitions);
      }
    }
    writer.family("numadir_pool_lock_contended_total", MetricType::kCounter,
                  "Locks of the queue mutex that found it held.");
    for (const listener::PoolSnapshot& pool : frontend.pools) {
      if (pool.lock.has_value()) {
        writer.sample({{"node", pool.name}}, pool.lock->contended);
      }
    }
    writer.family("numadir_pool_lock_wait_seconds_total", MetricType::kCounter,
                  "Time contended locks of the queue mutex waited.");
    for (const listener::PoolSnapshot& pool : frontend.pools) {
      if (pool.lock.has_value()) {
        writer.sample({{"node", pool.name}}, seconds_of_ns(pool.lock->wait_ns));
      }
    }
  }
}

void render_writer(ExpositionWriter& writer, const backend::WriterStats& stats) {
  writer.family("numadir_writer_jobs_total", MetricType::kCounter,
                "Update jobs the writer completed, committed or failed.");
  writer.sample(MetricLabels{}, stats.jobs);
  writer.family("numadir_writer_failed_jobs_total", MetricType::kCounter,
                "Update jobs whose completion got an error.");
  writer.sample(MetricLabels{}, stats.failed);
  writer.family("numadir_writer_commits_total", MetricType::kCounter,
                "Write transactions committed.");
  writer.sample(MetricLabels{}, stats.commits);
  writer.family("numadir_writer_batch_size", MetricType::kHistogram,
                "Jobs per batch the writer ran.");
  writer.histogram({}, kBatchSizeLabels, stats.batch_size_buckets,
                   static_cast<double>(stats.batched_jobs));
  writer.family("numadir_writer_commit_duration_seconds", MetricType::kHistogram,
                "Duration of mdb_txn_commit, fsync included.");
  writer.histogram({}, kLatencyBucketLabels, stats.commit_buckets, seconds_of_ns(stats.commit_ns));
}

void render_replication(ExpositionWriter& writer, const MonitorData& data,
                        const std::function<std::string()>& context_csn) {
  if (!data.consumers.empty()) {
    std::vector<std::string> rids;
    for (const replication::ConsumerStatus& consumer : data.consumers) {
      rids.push_back(std::to_string(consumer.rid));
    }
    writer.family("numadir_replication_consumer_up", MetricType::kGauge,
                  "1 for the replication consumer's current state.");
    for (std::size_t i = 0; i < data.consumers.size(); ++i) {
      writer.sample(
          {{"rid", rids[i]}, {"state", replication::consumer_state_name(data.consumers[i].state)}},
          std::uint64_t{1});
    }
    writer.family("numadir_replication_consumer_changes_applied_total", MetricType::kCounter,
                  "Entries the consumer stored or deleted as the provider sent them.");
    for (std::size_t i = 0; i < data.consumers.size(); ++i) {
      writer.sample({{"rid", rids[i]}}, data.consumers[i].changes_applied);
    }
    writer.family("numadir_replication_consumer_csn_timestamp_seconds", MetricType::kGauge,
                  "Time of the CSN in the consumer's last committed cookie.");
    for (std::size_t i = 0; i < data.consumers.size(); ++i) {
      if (const std::optional<double> time = cookie_seconds(data.consumers[i].cookie);
          time.has_value()) {
        writer.sample({{"rid", rids[i]}}, *time);
      }
    }
  }
  std::optional<double> context_time;
  if (data.provider.has_value()) {
    context_time = csn_seconds(data.provider->context_csn);
  } else if (context_csn) {
    context_time = csn_seconds(context_csn());
  }
  if (context_time.has_value()) {
    writer.family("numadir_context_csn_timestamp_seconds", MetricType::kGauge,
                  "Time of the directory's contextCSN.");
    writer.sample(MetricLabels{}, *context_time);
  }
  if (data.provider.has_value()) {
    const std::vector<replication::ProviderConsumerStatus>& served = data.provider->consumers;
    std::uint64_t persist = 0;
    for (const replication::ProviderConsumerStatus& consumer : served) {
      persist += consumer.persist ? 1 : 0;
    }
    writer.family("numadir_sync_consumers", MetricType::kGauge, "Sync searches served now.");
    writer.sample({{"mode", "refreshOnly"}}, served.size() - persist);
    writer.sample({{"mode", "refreshAndPersist"}}, persist);
    std::vector<std::string> rids;
    for (const replication::ProviderConsumerStatus& consumer : served) {
      rids.push_back(consumer.rid >= 0 ? std::to_string(consumer.rid) : std::string());
    }
    if (!served.empty()) {
      writer.family("numadir_sync_consumer_lag_seconds", MetricType::kGauge,
                    "Per sync search: the provider's contextCSN time less the last CSN sent.");
      for (std::size_t i = 0; i < served.size(); ++i) {
        writer.sample({{"peer", served[i].peer}, {"rid", rids[i]}},
                      static_cast<double>(served[i].lag_ms) / 1e3);
      }
      writer.family("numadir_sync_consumer_queue_depth", MetricType::kGauge,
                    "Per sync search: changes waiting to be sent.");
      for (std::size_t i = 0; i < served.size(); ++i) {
        writer.sample({{"peer", served[i].peer}, {"rid", rids[i]}}, served[i].queue_depth);
      }
    }
  }
}

void render_process(ExpositionWriter& writer, const Monitor& monitor) {
  const ProcessStats stats = read_process_stats();
  if (stats.resident_bytes.has_value()) {
    writer.family("process_resident_memory_bytes", MetricType::kGauge, "Resident memory size.");
    writer.sample(MetricLabels{}, *stats.resident_bytes);
  }
  if (stats.open_fds.has_value()) {
    writer.family("process_open_fds", MetricType::kGauge, "Open file descriptors.");
    writer.sample(MetricLabels{}, *stats.open_fds);
  }
  if (stats.max_fds.has_value()) {
    writer.family("process_max_fds", MetricType::kGauge, "The file descriptor limit.");
    writer.sample(MetricLabels{}, *stats.max_fds);
  }
  if (stats.cpu_seconds.has_value()) {
    writer.family("process_cpu_seconds_total", MetricType::kCounter,
                  "User and system CPU time spent.");
    writer.sample(MetricLabels{}, *stats.cpu_seconds);
  }
  writer.family("process_start_time_seconds", MetricType::kGauge,
                "Start time of the process since the Unix epoch.");
  const auto started = std::chrono::duration_cast<std::chrono::milliseconds>(
      monitor.started_at().time_since_epoch());
  writer.sample(MetricLabels{}, static_cast<double>(started.count()) / 1e3);
}

}  // namespace

std::optional<std::uint64_t> statm_resident_pages(std::string_view statm) {
  // "size resident shared text lib data dt": the second field.
  std::uint64_t fields[2] = {0, 0};
  const char* at = statm.data();
  const char* const end = statm.data() + statm.size();
  for (std::uint64_t& field : fields) {
    while (at < end && *at == ' ') {
      ++at;
    }
    const auto [next, ec] = std::from_chars(at, end, field);
    if (ec != std::errc() || next == at) {
      return std::nullopt;
    }
    at = next;
    if (at < end && *at != ' ' && *at != '\n') {
      return std::nullopt;
    }
  }
  return fields[1];
}

ProcessStats read_process_stats() {
  ProcessStats stats;
  if (std::ifstream statm("/proc/self/statm"); statm) {
    std::string text;
    std::getline(statm, text);
    const long page = sysconf(_SC_PAGESIZE);
    if (const std::optional<std::uint64_t> pages = statm_resident_pages(text);
        pages.has_value() && page > 0) {
      stats.resident_bytes = *pages * static_cast<std::uint64_t>(page);
    }
  }
  std::error_code error;
  std::filesystem::directory_iterator fds("/proc/self/fd", error);
  if (!error) {
    std::uint64_t count = 0;
    for (auto it = fds; it != std::filesystem::directory_iterator(); it.increment(error)) {
      if (error) {
        break;
      }
      ++count;
    }
    if (!error) {
      stats.open_fds = count > 0 ? count - 1 : 0;  // Less the iterator's own descriptor.
    }
  }
  if (rlimit limit{}; getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    stats.max_fds = static_cast<std::uint64_t>(limit.rlim_cur);
  }
  if (rusage usage{}; getrusage(RUSAGE_SELF, &usage) == 0) {
    auto micros = [](const timeval& time) {
      return static_cast<std::int64_t>(time.tv_sec) * 1'000'000 + time.tv_usec;
    };
    // Summed in whole microseconds, then divided once: the shortest form stays short.
    stats.cpu_seconds = static_cast<double>(micros(usage.ru_utime) + micros(usage.ru_stime)) / 1e6;
  }
  return stats;
}

Metrics::Metrics(MetricsSources sources) : sources_(std::move(sources)) {
  NUMADIR_CHECK(
      sources_.monitor != nullptr && sources_.operations && sources_.operation_metrics != nullptr,
      "Metrics: the monitor, operations and operation metrics are required");
}

void Metrics::render(ExpositionFormat format, std::string& out) const {
  ExpositionWriter writer(format, out);
  const MonitorData data = sources_.monitor->collect(sources_.operations());
  writer.family("numadir_build_info", MetricType::kInfo, "The numadir build.");
  writer.sample({{"version", sources_.version}}, std::uint64_t{1});
  render_operations(writer, data, *sources_.operation_metrics);
  if (data.frontend.has_value()) {
    render_frontend(writer, *data.frontend);
  }
  if (sources_.writer) {
    render_writer(writer, sources_.writer());
  }
  if (sources_.access_log != nullptr) {
    writer.family("numadir_access_log_dropped_lines_total", MetricType::kCounter,
                  "Access log lines dropped (the log fell behind).");
    writer.sample(MetricLabels{}, sources_.access_log->dropped());
  }
  {
    const OperationMetrics::TlsHandshakes tls = sources_.operation_metrics->tls_handshakes();
    writer.family("numadir_tls_handshakes_total", MetricType::kCounter,
                  "TLS handshakes completed, full or resumed.");
    writer.sample({{"kind", "full"}}, tls.full);
    writer.sample({{"kind", "resumed"}}, tls.resumed);
  }
  if (sources_.lockouts) {
    writer.family("numadir_password_policy_lockouts_total", MetricType::kCounter,
                  "Accounts locked by failed binds.");
    writer.sample(MetricLabels{}, sources_.lockouts());
  }
  render_replication(writer, data, sources_.context_csn);
  render_process(writer, *sources_.monitor);
  writer.finish();
}

}  // namespace numadir::server
