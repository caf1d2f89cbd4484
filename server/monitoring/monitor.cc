// server/monitoring/monitor.cc: see monitor.h.
#include "server/monitoring/monitor.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <utility>

#include "backend/operational.h"
#include "base/heap_counter.h"
#include "server/replication/sync_protocol.h"

namespace numadir::server {
namespace {

class EntryBuilder {
 public:
  EntryBuilder(std::string dn, std::string_view object_class, std::string cn) {
    entry_.dn = std::move(dn);
    add("objectClass", {"top", "numadirMonitor"});
    if (object_class != "numadirMonitor") {
      entry_.attributes.back().values.emplace_back(object_class);
    }
    add("cn", {std::move(cn)});
  }
  EntryBuilder& add(std::string description, std::vector<std::string> values) {
    entry_.attributes.push_back(schema::EntryAttribute{std::move(description), std::move(values)});
    return *this;
  }
  EntryBuilder& text(std::string description, std::string value) {
    return add(std::move(description), {std::move(value)});
  }
  EntryBuilder& number(std::string description, std::uint64_t value) {
    return add(std::move(description), {std::to_string(value)});
  }
  EntryBuilder& cpu(const std::vector<std::optional<std::uint64_t>>& cpu_ms, std::size_t i) {
    if (i < cpu_ms.size() && cpu_ms[i].has_value()) {
      number("numadirCpuTimeMs", *cpu_ms[i]);
    }
    return *this;
  }
  schema::Entry take() { return std::move(entry_); }

 private:
  schema::Entry entry_;
};

// numadirLatencyHistogram's value: "op=<kind> count=<n> sumNs=<ns> buckets=<b0>,...,<b16>".
std::string format_latency_value(OperationKind kind, const OperationHistogram& histogram) {
  std::string value = "op=" + std::string(operation_kind_name(kind)) +
                      " count=" + std::to_string(histogram.count()) +
                      " sumNs=" + std::to_string(histogram.sum_ns) + " buckets=";
  for (std::size_t b = 0; b < kLatencyBuckets; ++b) {
    value += (b == 0 ? "" : ",") + std::to_string(histogram.buckets[b]);
  }
  return value;
}

std::string child_dn(std::string_view rdn, std::string_view parent) {
  return std::string(rdn) + "," + std::string(parent);
}

// Appends cn=Monitor, cn=Connections, cn=Operations and cn=Writer.
void add_server_entries(const MonitorData& data, std::vector<schema::Entry>& entries) {
  const std::string root(kMonitorDn);
  EntryBuilder server(root, "numadirMonitor", "Monitor");
  server.text("description", "numadir server status (read-only)");
  server.text("numadirVersion", data.version);
  if (data.frontend.has_value()) {
    server.text("numadirDispatcher", data.frontend->dispatcher);
    server.text("numadirSteering", data.frontend->steering);
  }
  server.number("numadirUptimeSeconds", data.uptime_s);
  if (data.heap_allocations.has_value()) {
    server.number("numadirHeapAllocations", *data.heap_allocations);
  }
  entries.push_back(server.take());

  std::uint64_t open = 0;
  std::uint64_t accepted = 0;
  std::uint64_t refused = 0;
  if (data.frontend.has_value()) {
    for (const listener::ListenerSnapshot& listener : data.frontend->listeners) {
      open += listener.connections;
      accepted += listener.accepted;
      refused += listener.refused;
    }
  }
  EntryBuilder connections(child_dn("cn=Connections", root), "numadirMonitor", "Connections");
  connections.text("description", "client connections, every listener together")
      .number("numadirConnections", open)
      .number("numadirConnectionsTotal", accepted)
      .number("numadirConnectionsRefused", refused);
  entries.push_back(connections.take());

  const OperationTotals& ops = data.operations;
  EntryBuilder operations(child_dn("cn=Operations", root), "numadirMonitor", "Operations");
  operations.text("description", "operations run since the server started")
      .number("numadirOperations", ops.total())
      .number("numadirBinds", ops.of(OperationKind::kBind))
      .number("numadirAuths", ops.auths)
      .number("numadirSearches", ops.of(OperationKind::kSearch))
      .number("numadirCompares", ops.of(OperationKind::kCompare))
      .number("numadirAdds", ops.of(OperationKind::kAdd))
      .number("numadirModifies", ops.of(OperationKind::kModify))
      .number("numadirDeletes", ops.of(OperationKind::kDelete))
      .number("numadirModDNs", ops.of(OperationKind::kModifyDn))
      .number("numadirExtendedOperations", ops.of(OperationKind::kExtended));
  if (data.latency.has_value()) {
    std::vector<std::string> values;
    for (std::size_t k = 0; k < kOperationKinds; ++k) {
      values.push_back(
          format_latency_value(static_cast<OperationKind>(k), data.latency->latency[k]));
    }
    operations.add("numadirLatencyHistogram", std::move(values));
  }
  entries.push_back(operations.take());

  if (data.writer.has_value()) {
    const backend::WriterStats& writer = *data.writer;
    EntryBuilder entry(child_dn("cn=Writer", root), "numadirMonitor", "Writer");
    entry.text("description", "the single writer: every update, batched into commits")
        .number("numadirWriterJobs", writer.jobs)
        .number("numadirWriterFailed", writer.failed)
        .number("numadirCommits", writer.commits)
        .number("numadirBatches", writer.batches)
        .number("numadirLargestBatch", writer.largest_batch);
    entries.push_back(entry.take());
  }
}

// Appends cn=Listeners and an entry per listener thread.
void add_listener_entries(const MonitorData& data, std::vector<schema::Entry>& entries) {
  const listener::FrontendSnapshot& frontend = *data.frontend;
  const std::string listeners_dn = child_dn("cn=Listeners", kMonitorDn);
  EntryBuilder listeners(listeners_dn, "numadirMonitor", "Listeners");
  listeners.text("description", "listener threads: accept, read, decode")
      .number("numadirListeners", frontend.listeners.size());
  entries.push_back(listeners.take());
  for (std::size_t i = 0; i < frontend.listeners.size(); ++i) {
    const listener::ListenerSnapshot& listener = frontend.listeners[i];
    const std::string cn = "Listener " + std::to_string(i);
    EntryBuilder entry(child_dn("cn=" + cn, listeners_dn), "numadirListenerObject", cn);
    entry.text("numadirThreadName", listener.name)
        .number("numadirThreadId", static_cast<std::uint64_t>(listener.tid))
        .number("numadirPool", listener.pool)
        .number("numadirConnections", listener.connections)
        .number("numadirConnectionsTotal", listener.accepted)
        .number("numadirConnectionsRefused", listener.refused)
        .number("numadirRequests", listener.requests)
        .number("numadirHelped", listener.helped)
        .number("numadirOutputPauses", listener.output_pauses)
        .number("numadirBytesReceived", listener.bytes_received)
        .cpu(data.listener_cpu_ms, i);
    entries.push_back(entry.take());
  }
}

// Appends cn=Workers and an entry per worker thread.
void add_worker_entries(const MonitorData& data, std::vector<schema::Entry>& entries) {
  const listener::FrontendSnapshot& frontend = *data.frontend;
  const std::string workers_dn = child_dn("cn=Workers", kMonitorDn);
  EntryBuilder workers(workers_dn, "numadirMonitor", "Workers");
  workers.text("description", "worker threads: run operations")
      .number("numadirWorkers", frontend.workers.size());
  entries.push_back(workers.take());
  for (std::size_t i = 0; i < frontend.workers.size(); ++i) {
    const listener::WorkerSnapshot& worker = frontend.workers[i];
    const std::string cn = "Worker " + std::to_string(i);
    EntryBuilder entry(child_dn("cn=" + cn, workers_dn), "numadirWorkerObject", cn);
    entry.text("numadirThreadName", worker.name)
        .number("numadirThreadId", static_cast<std::uint64_t>(worker.tid))
        .number("numadirPool", worker.pool)
        .number("numadirRequests", worker.requests)
        .number("numadirParks", worker.parks)
        .number("numadirWakeups", worker.wakeups)
        .number("numadirBusyTimeMs", worker.busy_ns / 1'000'000)
        .cpu(data.worker_cpu_ms, i);
    entries.push_back(entry.take());
  }
}

// Appends cn=Pools and an entry per pool.
void add_pool_entries(const listener::FrontendSnapshot& frontend,
                      std::vector<schema::Entry>& entries) {
  const std::string pools_dn = child_dn("cn=Pools", kMonitorDn);
  EntryBuilder pools(pools_dn, "numadirMonitor", "Pools");
  pools.text("description", "worker pools and their request queues");
  entries.push_back(pools.take());
  for (std::size_t i = 0; i < frontend.pools.size(); ++i) {
    const listener::PoolSnapshot& pool = frontend.pools[i];
    const std::string cn = "Pool " + std::to_string(i);
    EntryBuilder entry(child_dn("cn=" + cn, pools_dn), "numadirPoolObject", cn);
    entry.text("description", pool.name)
        .number("numadirQueueDepth", pool.queue_depth)
        .number("numadirQueueHighWater", pool.queue_high_water)
        .number("numadirQueueCapacity", pool.queue_capacity)
        .number("numadirWorkers", pool.workers)
        .number("numadirListeners", pool.listeners);
    if (pool.lock.has_value()) {
      entry.number("numadirQueueLockAcquisitions", pool.lock->acquisitions)
          .number("numadirQueueLockContended", pool.lock->contended)
          .number("numadirQueueLockWaitUs", pool.lock->wait_ns / 1000);
    }
    entries.push_back(entry.take());
  }
}

// Appends an entry per consumer under cn=Replication.
void add_consumer_entries(const MonitorData& data, std::string_view replication_dn,
                          std::vector<schema::Entry>& entries) {
  for (const replication::ConsumerStatus& consumer : data.consumers) {
    const std::string cn = "Consumer " + std::to_string(consumer.rid);
    EntryBuilder entry(child_dn("cn=" + cn, replication_dn), "numadirConsumerObject", cn);
    entry.text("numadirReplicationState", replication::consumer_state_name(consumer.state))
        .text("numadirProvider", consumer.provider);
    if (!consumer.cookie.empty()) {
      entry.text("numadirCookie", consumer.cookie);
      if (Result<replication::SyncCookie> cookie = replication::parse_sync_cookie(consumer.cookie);
          cookie.ok() && !cookie->csns.empty()) {
        std::string csns;
        for (std::string_view csn : cookie->csns) {
          csns += csns.empty() ? "" : ";";
          csns += csn;
        }
        entry.text("numadirContextCSN", csns);
      }
    }
    entry.number("numadirEntriesReceived", consumer.entries_received)
        .number("numadirDeletesReceived", consumer.deletes_received)
        .number("numadirChangesApplied", consumer.changes_applied)
        .number("numadirBatchesApplied", consumer.batches_applied)
        .number("numadirConnects", consumer.connects)
        .number("numadirFailures", consumer.failures)
        .number("numadirReloads", consumer.reloads);
    if (consumer.last_change.time_since_epoch().count() != 0) {
      entry.text("numadirLastChange", backend::generalized_time(consumer.last_change));
    }
    if (!consumer.last_error.empty()) {
      entry.text("numadirLastError", consumer.last_error);
    }
    entries.push_back(entry.take());
  }
}

// Appends cn=Provider under cn=Replication and an entry per sync search it serves.
void add_provider_entries(const replication::ProviderStatus& provider,
                          std::string_view replication_dn, std::vector<schema::Entry>& entries) {
  const std::string provider_dn = child_dn("cn=Provider", replication_dn);
  EntryBuilder entry(provider_dn, "numadirProviderObject", "Provider");
  entry.text("description", "the replication provider ([replication.provider]): sync searches")
      .text("numadirProviderEnabled", provider.enabled ? "TRUE" : "FALSE")
      .number("numadirSessionLogEntries", provider.session_log_entries);
  if (!provider.context_csn.empty()) {
    entry.text("numadirContextCSN", provider.context_csn);
  }
  entry.number("numadirSyncConsumers", provider.consumers.size())
      .number("numadirSyncSearches", provider.searches_served)
      .number("numadirSyncRefused", provider.refused)
      .number("numadirFellBehind", provider.fell_behind);
  entries.push_back(entry.take());
  for (const replication::ProviderConsumerStatus& consumer : provider.consumers) {
    const std::string cn = "Consumer " + std::to_string(consumer.connection_id) + "-" +
                           std::to_string(consumer.message_id);
    EntryBuilder child(child_dn("cn=" + cn, provider_dn), "numadirSyncConsumerObject", cn);
    child.number("numadirConnectionId", consumer.connection_id)
        .text("numadirMessageId", std::to_string(consumer.message_id))
        .text("numadirPeer", consumer.peer);
    if (!consumer.identity.empty()) {  // Absent: anonymous.
      child.text("numadirIdentity", consumer.identity);
    }
    if (consumer.rid >= 0) {  // Absent: the consumer's cookie named no rid.
      child.text("numadirRid", std::to_string(consumer.rid));
    }
    child.text("numadirSyncMode", consumer.persist ? "refreshAndPersist" : "refreshOnly")
        .text("numadirSyncPhase", consumer.refreshing ? "refresh" : "persist")
        .text("numadirSearchBase", consumer.base)
        .number("numadirEntriesSent", consumer.entries_sent)
        .number("numadirChangesSent", consumer.changes_sent)
        .number("numadirSyncQueueDepth", consumer.queue_depth)
        .number("numadirSyncQueueCapacity", consumer.queue_capacity);
    if (consumer.since.time_since_epoch().count() != 0) {
      child.text("numadirSince", backend::generalized_time(consumer.since));
    }
    if (!consumer.last_csn.empty()) {
      child.text("numadirLastCSN", consumer.last_csn);
    }
    child.number("numadirLagMs", consumer.lag_ms);
    entries.push_back(child.take());
  }
}

// Appends cn=Replication, this server's consumers and its provider.
void add_replication_entries(const MonitorData& data, std::vector<schema::Entry>& entries) {
  const std::string replication_dn = child_dn("cn=Replication", kMonitorDn);
  EntryBuilder replication(replication_dn, "numadirMonitor", "Replication");
  replication.text("description",
                   "replication: this server's consumers ([[replication.consumer]]) and its "
                   "provider ([replication.provider])");
  entries.push_back(replication.take());
  add_consumer_entries(data, replication_dn, entries);
  if (data.provider.has_value()) {
    add_provider_entries(*data.provider, replication_dn, entries);
  }
}

}  // namespace

std::vector<schema::Entry> make_monitor_entries(const MonitorData& data) {
  std::vector<schema::Entry> entries;
  add_server_entries(data, entries);
  if (data.frontend.has_value()) {
    add_listener_entries(data, entries);
    add_worker_entries(data, entries);
    add_pool_entries(*data.frontend, entries);
  }
  if (!data.consumers.empty() || data.provider.has_value()) {
    add_replication_entries(data, entries);
  }
  return entries;
}

std::optional<std::uint64_t> thread_cpu_ms(std::int32_t tid) {
  if (tid <= 0) {
    return std::nullopt;
  }
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!in || !std::getline(in, line)) {
    return std::nullopt;
  }
  // The thread name (field 2) may hold spaces and parentheses: count from the last ')'.
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) {
    return std::nullopt;
  }
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  std::uint64_t ticks = 0;
  for (int number = 3; number <= 15 && fields >> field; ++number) {
    if (number < 14) {
      continue;
    }
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (ec != std::errc() || end != field.data() + field.size()) {
      return std::nullopt;
    }
    ticks += value;
    if (number == 15) {
      const long per_second = sysconf(_SC_CLK_TCK);
      return ticks * 1000 / static_cast<std::uint64_t>(per_second > 0 ? per_second : 100);
    }
  }
  return std::nullopt;
}

Monitor::Monitor(std::string version)
    : version_(std::move(version)), started_(std::chrono::steady_clock::now()) {}

void Monitor::attach(Source source) {
  MutexLock lock(mu_);
  source_ = std::move(source);
}

void Monitor::detach() {
  MutexLock lock(mu_);
  source_ = nullptr;
  consumers_ = nullptr;
  provider_ = nullptr;
}

void Monitor::attach_provider(std::function<replication::ProviderStatus()> source) {
  MutexLock lock(mu_);
  provider_ = std::move(source);
}

void Monitor::detach_provider() {
  MutexLock lock(mu_);
  provider_ = nullptr;
}

void Monitor::set_operation_metrics(const OperationMetrics* metrics) {
  MutexLock lock(mu_);
  operation_metrics_ = metrics;
}

void Monitor::attach_consumers(std::function<std::vector<replication::ConsumerStatus>()> source) {
  MutexLock lock(mu_);
  consumers_ = std::move(source);
}

MonitorData Monitor::collect(const OperationTotals& operations) const {
  MonitorData data;
  data.version = version_;
  data.uptime_s = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_)
          .count());
  data.operations = operations;
  if (heap_counting()) {
    data.heap_allocations = heap_allocations();
  }
  {
    MutexLock lock(mu_);
    if (source_) {
      data.frontend = source_();
    }
    if (consumers_) {
      data.consumers = consumers_();
    }
    if (provider_) {
      data.provider = provider_();
    }
    if (operation_metrics_ != nullptr) {
      data.latency = operation_metrics_->totals();
    }
  }
  if (data.frontend.has_value()) {
    for (const listener::ListenerSnapshot& listener : data.frontend->listeners) {
      data.listener_cpu_ms.push_back(thread_cpu_ms(listener.tid));
    }
    for (const listener::WorkerSnapshot& worker : data.frontend->workers) {
      data.worker_cpu_ms.push_back(thread_cpu_ms(worker.tid));
    }
  }
  return data;
}

}  // namespace numadir::server
