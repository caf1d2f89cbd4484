// server/commands/stats_view.cc: see stats_view.h.
#include "server/commands/stats_view.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "schema/ascii.h"
#include "server/monitoring/operation_metrics.h"

namespace numadir::server {
namespace {

std::string text_of(const schema::Entry& entry, std::string_view type) {
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    if (schema::ascii_iequals(attribute.description, type) && !attribute.values.empty()) {
      return attribute.values[0];
    }
  }
  return "";
}

std::optional<std::uint64_t> number_of(const schema::Entry& entry, std::string_view type) {
  const std::string text = text_of(entry, type);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

std::uint64_t count_of(const schema::Entry& entry, std::string_view type) {
  return number_of(entry, type).value_or(0);
}

// Returns: i when `ndn` (lower-cased) is "cn=<prefix> <i>,<parent>"; nullopt otherwise.
std::optional<std::size_t> index_in(std::string_view ndn, std::string_view prefix,
                                    std::string_view parent) {
  const std::string head = "cn=" + std::string(prefix) + " ";
  const std::string tail = "," + std::string(parent);
  if (!ndn.starts_with(head) || !ndn.ends_with(tail) || ndn.size() <= head.size() + tail.size()) {
    return std::nullopt;
  }
  const std::string_view digits = ndn.substr(head.size(), ndn.size() - head.size() - tail.size());
  std::size_t index = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc() || end != digits.data() + digits.size() || index > 4096) {
    return std::nullopt;
  }
  return index;
}

template <typename T>
T& at_index(std::vector<T>& list, std::size_t index) {
  if (list.size() <= index) {
    list.resize(index + 1);
  }
  return list[index];
}

StatsThread thread_of(const schema::Entry& entry) {
  StatsThread thread;
  thread.name = text_of(entry, "numadirThreadName");
  thread.pool = count_of(entry, "numadirPool");
  thread.requests = count_of(entry, "numadirRequests");
  thread.connections = count_of(entry, "numadirConnections");
  thread.busy_ms = count_of(entry, "numadirBusyTimeMs");
  thread.parks = count_of(entry, "numadirParks");
  thread.helped = count_of(entry, "numadirHelped");
  thread.cpu_ms = number_of(entry, "numadirCpuTimeMs");
  return thread;
}

std::uint64_t delta(std::uint64_t now, std::uint64_t before) {
  return now >= before ? now - before : 0;
}

std::string format(const char* pattern, auto... values) {
  char line[256];
  std::snprintf(line, sizeof(line), pattern, values...);
  return line;
}

std::string uptime(std::uint64_t seconds) {
  const std::uint64_t days = seconds / 86400;
  std::string out = days > 0 ? std::to_string(days) + "d " : "";
  return out + format("%02u:%02u:%02u", static_cast<unsigned>(seconds % 86400 / 3600),
                      static_cast<unsigned>(seconds % 3600 / 60),
                      static_cast<unsigned>(seconds % 60));
}

// Returns: a percentage of `dt_s` that `ms` milliseconds are, as "12.3", or "-" when unknown.
std::string percent(std::optional<std::uint64_t> now, std::optional<std::uint64_t> before,
                    double dt_s) {
  if (!now.has_value() || !before.has_value()) {
    return "-";
  }
  return format("%.1f", static_cast<double>(delta(*now, *before)) / (dt_s * 10.0));
}

// Returns: `text` padded with spaces to `width` (longer text is kept whole).
std::string padded(std::string_view text, std::size_t width) {
  std::string out(text);
  if (out.size() < width) {
    out.append(width - out.size(), ' ');
  }
  return out;
}

// The sync searches the provider serves are named "cn=Consumer <conn>-<msgid>" below this.
constexpr std::string_view kProviderSuffix = ",cn=provider,cn=replication,cn=monitor";
constexpr std::string_view kSyncConsumerPrefix = "cn=consumer ";

const StatsThread* previous_of(const std::vector<StatsThread>& previous, std::size_t i,
                               const StatsThread& current) {
  return i < previous.size() && previous[i].name == current.name ? &previous[i] : nullptr;
}

// Returns: `ns` nanoseconds as "45.2us", "3.10ms" or "1.00s".
std::string duration_text(double ns) {
  if (ns < 1e6) {
    return format("%.1fus", ns / 1e3);
  }
  if (ns < 1e9) {
    return format("%.2fms", ns / 1e6);
  }
  return format("%.2fs", ns / 1e9);
}

// Returns: the unsigned decimal `text` is wholly, or nullopt.
std::optional<std::uint64_t> decimal(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// The latency section: per operation kind with operations since `previous` (or since the start
// when `previous` has no histogram of it), its rate and percentiles.
std::string render_latency(const StatsSample& previous, const StatsSample& current, double dt_s) {
  if (!current.latency.has_value()) {
    return "\nlatency percentiles: off (they are measured with [metrics] listen set in "
           "numadir.toml)\n";
  }
  std::string out = "\nLATENCY     OPS/S        P50        P90        P99      P99.9\n";
  bool any = false;
  for (const StatsLatency& now : *current.latency) {
    std::vector<std::uint64_t> buckets = now.buckets;
    bool interval = false;
    if (previous.latency.has_value()) {
      for (const StatsLatency& before : *previous.latency) {
        if (before.op == now.op && before.buckets.size() == buckets.size()) {
          for (std::size_t b = 0; b < buckets.size(); ++b) {
            buckets[b] = delta(buckets[b], before.buckets[b]);
          }
          interval = true;
        }
      }
    }
    std::uint64_t count = 0;
    for (const std::uint64_t n : buckets) {
      count += n;
    }
    if (count == 0) {
      continue;
    }
    any = true;
    std::string line =
        format("%-8s %8s", now.op.c_str(),
               interval ? format("%.1f", static_cast<double>(count) / dt_s).c_str() : "-");
    for (const double q : {0.5, 0.9, 0.99, 0.999}) {
      const std::optional<double> ns = latency_quantile_ns(buckets, q);
      line += format(" %10s", ns.has_value() ? duration_text(*ns).c_str() : "-");
    }
    out += line + "\n";
  }
  if (!any) {
    out += "(no operations)\n";
  }
  return out;
}

}  // namespace

std::optional<StatsLatency> parse_latency_value(std::string_view text) {
  StatsLatency latency;
  std::size_t fields = 0;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view field = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    const std::size_t equals = field.find('=');
    if (equals == std::string_view::npos) {
      return std::nullopt;
    }
    const std::string_view name = field.substr(0, equals);
    const std::string_view value = field.substr(equals + 1);
    if (name == "op" && fields == 0 && !value.empty()) {
      latency.op = std::string(value);
    } else if (name == "count" && fields == 1) {
      const std::optional<std::uint64_t> count = decimal(value);
      if (!count.has_value()) {
        return std::nullopt;
      }
      latency.count = *count;
    } else if (name == "sumNs" && fields == 2) {
      const std::optional<std::uint64_t> sum = decimal(value);
      if (!sum.has_value()) {
        return std::nullopt;
      }
      latency.sum_ns = *sum;
    } else if (name == "buckets" && fields == 3) {
      std::string_view rest = value;
      std::uint64_t total = 0;
      for (;;) {
        const std::size_t comma = rest.find(',');
        const std::optional<std::uint64_t> n = decimal(rest.substr(0, comma));
        if (!n.has_value() || latency.buckets.size() == kLatencyBuckets) {
          return std::nullopt;
        }
        latency.buckets.push_back(*n);
        total += *n;
        if (comma == std::string_view::npos) {
          break;
        }
        rest = rest.substr(comma + 1);
      }
      if (latency.buckets.size() != kLatencyBuckets || total != latency.count) {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    ++fields;
  }
  if (fields != 4) {
    return std::nullopt;
  }
  return latency;
}

std::optional<double> latency_quantile_ns(std::span<const std::uint64_t> buckets, double q) {
  std::uint64_t total = 0;
  for (const std::uint64_t n : buckets) {
    total += n;
  }
  if (total == 0 || buckets.size() != kLatencyBuckets) {
    return std::nullopt;
  }
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(total);
  std::uint64_t below = 0;  // Observations in the buckets before b.
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const std::uint64_t cumulative = below + buckets[b];
    if (static_cast<double>(cumulative) >= rank && buckets[b] > 0) {
      if (b == kLatencyBoundsNs.size()) {  // +Inf: the highest finite bound, as Prometheus.
        return static_cast<double>(kLatencyBoundsNs.back());
      }
      const double lower = b == 0 ? 0.0 : static_cast<double>(kLatencyBoundsNs[b - 1]);
      const double upper = static_cast<double>(kLatencyBoundsNs[b]);
      return lower + (upper - lower) * (rank - static_cast<double>(below)) /
                         static_cast<double>(buckets[b]);
    }
    below = cumulative;
  }
  return static_cast<double>(kLatencyBoundsNs.back());
}

Result<StatsSample> parse_stats_sample(const std::vector<schema::Entry>& entries, double at_s) {
  StatsSample sample;
  sample.at_s = at_s;
  bool server = false;
  bool operations = false;
  for (const schema::Entry& entry : entries) {
    const std::string ndn = schema::ascii_lowered(entry.dn);
    if (ndn == "cn=monitor") {
      server = true;
      sample.version = text_of(entry, "numadirVersion");
      sample.dispatcher = text_of(entry, "numadirDispatcher");
      sample.uptime_s = count_of(entry, "numadirUptimeSeconds");
    } else if (ndn == "cn=connections,cn=monitor") {
      sample.connections = count_of(entry, "numadirConnections");
      sample.connections_total = count_of(entry, "numadirConnectionsTotal");
    } else if (ndn == "cn=operations,cn=monitor") {
      operations = true;
      sample.operations = count_of(entry, "numadirOperations");
      sample.binds = count_of(entry, "numadirBinds");
      sample.auths = count_of(entry, "numadirAuths");
      sample.searches = count_of(entry, "numadirSearches");
      for (const schema::EntryAttribute& attribute : entry.attributes) {
        if (!schema::ascii_iequals(attribute.description, "numadirLatencyHistogram")) {
          continue;
        }
        std::vector<StatsLatency>& latency = sample.latency.emplace();
        for (const std::string& value : attribute.values) {
          if (std::optional<StatsLatency> parsed = parse_latency_value(value); parsed.has_value()) {
            latency.push_back(std::move(*parsed));
          }  // A value it cannot read is left out (a newer server's form).
        }
      }
    } else if (auto i = index_in(ndn, "listener", "cn=listeners,cn=monitor"); i.has_value()) {
      at_index(sample.listeners, *i) = thread_of(entry);
    } else if (auto w = index_in(ndn, "worker", "cn=workers,cn=monitor"); w.has_value()) {
      at_index(sample.workers, *w) = thread_of(entry);
    } else if (auto p = index_in(ndn, "pool", "cn=pools,cn=monitor"); p.has_value()) {
      StatsPool& pool = at_index(sample.pools, *p);
      pool.name = text_of(entry, "description");
      pool.queue_depth = count_of(entry, "numadirQueueDepth");
      pool.queue_high_water = count_of(entry, "numadirQueueHighWater");
      pool.queue_capacity = count_of(entry, "numadirQueueCapacity");
      pool.workers = count_of(entry, "numadirWorkers");
    } else if (ndn == kProviderSuffix.substr(1)) {
      StatsProvider& provider = sample.provider.emplace();
      provider.enabled = schema::ascii_iequals(text_of(entry, "numadirProviderEnabled"), "TRUE");
      provider.session_log_entries = count_of(entry, "numadirSessionLogEntries");
      provider.context_csn = text_of(entry, "numadirContextCSN");
      provider.searches = count_of(entry, "numadirSyncSearches");
      provider.refused = count_of(entry, "numadirSyncRefused");
      provider.fell_behind = count_of(entry, "numadirFellBehind");
    } else if (ndn.ends_with(kProviderSuffix) && ndn.starts_with(kSyncConsumerPrefix) &&
               ndn.size() > kSyncConsumerPrefix.size() + kProviderSuffix.size()) {
      StatsSyncConsumer& consumer = sample.sync_consumers.emplace_back();
      consumer.id =
          entry.dn.substr(kSyncConsumerPrefix.size(),
                          ndn.size() - kSyncConsumerPrefix.size() - kProviderSuffix.size());
      consumer.peer = text_of(entry, "numadirPeer");
      consumer.identity = text_of(entry, "numadirIdentity");
      consumer.mode = text_of(entry, "numadirSyncMode");
      consumer.phase = text_of(entry, "numadirSyncPhase");
      consumer.entries_sent = count_of(entry, "numadirEntriesSent");
      consumer.changes_sent = count_of(entry, "numadirChangesSent");
      consumer.queue_depth = count_of(entry, "numadirSyncQueueDepth");
      consumer.queue_capacity = count_of(entry, "numadirSyncQueueCapacity");
      consumer.since = text_of(entry, "numadirSince");
      consumer.lag_ms = count_of(entry, "numadirLagMs");
    } else if (auto r = index_in(ndn, "consumer", "cn=replication,cn=monitor"); r.has_value()) {
      StatsConsumer& consumer = sample.consumers.emplace_back();
      consumer.rid = *r;
      consumer.state = text_of(entry, "numadirReplicationState");
      consumer.provider = text_of(entry, "numadirProvider");
      consumer.changes_applied = count_of(entry, "numadirChangesApplied");
      consumer.failures = count_of(entry, "numadirFailures");
      consumer.last_change = text_of(entry, "numadirLastChange");
      consumer.last_error = text_of(entry, "numadirLastError");
    }
  }
  if (!server || !operations) {
    return malformed("cn=Monitor lacks the cn=Monitor or cn=Operations entry");
  }
  return sample;
}

std::string render_stats(const StatsSample& previous, const StatsSample& current,
                         std::string_view url) {
  const double dt_s = current.at_s > previous.at_s ? current.at_s - previous.at_s : 1.0;
  auto rate = [dt_s](std::uint64_t now, std::uint64_t before) {
    return static_cast<double>(delta(now, before)) / dt_s;
  };
  std::string out;
  out += "numadir stats  " + std::string(url) + "  " + current.version + "  " + current.dispatcher +
         "  up " + uptime(current.uptime_s) + "\n";
  out += format("auths/s %.1f   binds/s %.1f   searches/s %.1f   operations/s %.1f\n",
                rate(current.auths, previous.auths), rate(current.binds, previous.binds),
                rate(current.searches, previous.searches),
                rate(current.operations, previous.operations));
  out += format("connections %llu (accepted %llu)   over the last %.2f s\n",
                static_cast<unsigned long long>(current.connections),
                static_cast<unsigned long long>(current.connections_total), dt_s);

  out += render_latency(previous, current, dt_s);

  out += "\nPOOL  NAME          QUEUE       HIGH   CAPACITY  WORKERS\n";
  for (std::size_t i = 0; i < current.pools.size(); ++i) {
    const StatsPool& pool = current.pools[i];
    out += format("%-4zu  %-10s %8llu %10llu %10llu %8llu\n", i, pool.name.c_str(),
                  static_cast<unsigned long long>(pool.queue_depth),
                  static_cast<unsigned long long>(pool.queue_high_water),
                  static_cast<unsigned long long>(pool.queue_capacity),
                  static_cast<unsigned long long>(pool.workers));
  }

  // RAN/S: requests the listener ran itself, helping its pool (threads.listener_helps).
  out += "\nLISTENER  THREAD           POOL  CONNS      REQ/S      RAN/S   CPU%\n";
  for (std::size_t i = 0; i < current.listeners.size(); ++i) {
    const StatsThread& now = current.listeners[i];
    const StatsThread* before = previous_of(previous.listeners, i, now);
    out += format(
        "%-8zu  %-15s %5llu %6llu %10s %10s %6s\n", i, now.name.c_str(),
        static_cast<unsigned long long>(now.pool), static_cast<unsigned long long>(now.connections),
        before != nullptr ? format("%.1f", rate(now.requests, before->requests)).c_str() : "-",
        before != nullptr ? format("%.1f", rate(now.helped, before->helped)).c_str() : "-",
        percent(now.cpu_ms, before != nullptr ? before->cpu_ms : std::nullopt, dt_s).c_str());
  }

  out += "\nWORKER    THREAD           POOL      REQ/S  BUSY%   CPU%  PARKS/S\n";
  for (std::size_t i = 0; i < current.workers.size(); ++i) {
    const StatsThread& now = current.workers[i];
    const StatsThread* before = previous_of(previous.workers, i, now);
    const std::optional<std::uint64_t> busy_before =
        before != nullptr ? std::optional<std::uint64_t>(before->busy_ms) : std::nullopt;
    out += format(
        "%-8zu  %-15s %5llu %10s %6s %6s %8s\n", i, now.name.c_str(),
        static_cast<unsigned long long>(now.pool),
        before != nullptr ? format("%.1f", rate(now.requests, before->requests)).c_str() : "-",
        percent(now.busy_ms, busy_before, dt_s).c_str(),
        percent(now.cpu_ms, before != nullptr ? before->cpu_ms : std::nullopt, dt_s).c_str(),
        before != nullptr ? format("%.1f", rate(now.parks, before->parks)).c_str() : "-");
  }

  if (!current.consumers.empty()) {
    out += "\nCONSUMER  STATE             CHANGES/S  FAILURES  LAST CHANGE      PROVIDER\n";
    for (const StatsConsumer& now : current.consumers) {
      const StatsConsumer* before = nullptr;
      for (const StatsConsumer& old : previous.consumers) {
        before = old.rid == now.rid ? &old : before;
      }
      out += format("%-8llu  %-16s %10s %9llu  %-15s  %s\n",
                    static_cast<unsigned long long>(now.rid), now.state.c_str(),
                    before != nullptr
                        ? format("%.1f", rate(now.changes_applied, before->changes_applied)).c_str()
                        : "-",
                    static_cast<unsigned long long>(now.failures),
                    now.last_change.empty() ? "-" : now.last_change.c_str(), now.provider.c_str());
      if (!now.last_error.empty() && now.state != "persisting" && now.state != "refreshing") {
        out += "          last error: " + now.last_error + "\n";
      }
    }
  }
  if (current.provider.has_value()) {
    const StatsProvider& provider = *current.provider;
    out += "\nReplication provider: " + std::string(provider.enabled ? "enabled" : "disabled") +
           "   session log " + std::to_string(provider.session_log_entries) + "   contextCSN " +
           (provider.context_csn.empty() ? "-" : provider.context_csn) + "\n";
    out += format("sync searches %llu (now %zu)   refused %llu   fell behind %llu\n",
                  static_cast<unsigned long long>(provider.searches), current.sync_consumers.size(),
                  static_cast<unsigned long long>(provider.refused),
                  static_cast<unsigned long long>(provider.fell_behind));
    if (!current.sync_consumers.empty()) {
      out += padded("SYNC", 8) + "  " + padded("PEER", 21) + "  " + padded("MODE/PHASE", 25) + " " +
             format("%8s %10s %10s  ", "ENTRIES", "CHANGES", "CHANGES/S") + padded("QUEUE", 12) +
             "  " + padded("SINCE", 15) + " " + format("%7s", "LAG MS") + "  IDENTITY\n";
    }
    for (const StatsSyncConsumer& now : current.sync_consumers) {
      const StatsSyncConsumer* before = nullptr;
      for (const StatsSyncConsumer& old : previous.sync_consumers) {
        before = old.id == now.id && old.peer == now.peer ? &old : before;
      }
      out +=
          padded(now.id, 8) + "  " + padded(now.peer, 21) + "  " +
          padded(now.mode + "/" + now.phase, 25) + " " +
          format("%8llu %10llu %10s  ", static_cast<unsigned long long>(now.entries_sent),
                 static_cast<unsigned long long>(now.changes_sent),
                 before != nullptr
                     ? format("%.1f", rate(now.changes_sent, before->changes_sent)).c_str()
                     : "-") +
          padded(std::to_string(now.queue_depth) + "/" + std::to_string(now.queue_capacity), 12) +
          "  " + padded(now.since.empty() ? "-" : now.since, 15) + " " +
          format("%7llu", static_cast<unsigned long long>(now.lag_ms)) + "  " +
          (now.identity.empty() ? "(anonymous)" : now.identity) + "\n";
    }
  }
  return out;
}

}  // namespace numadir::server
