// numadir stats' view (server/commands/stats_view.h): a sample parsed from cn=Monitor's entries and
// the rates rendered from two samples.
#include "server/commands/stats_view.h"

#include <doctest/doctest.h>

#include <string>

#include "server/monitoring/monitor.h"

namespace numadir::server {
namespace {

// cn=Monitor's entries for a server of one pool, one listener and two workers, after `auths`
// successful binds, with every per-thread counter scaled by `scale`.
std::vector<schema::Entry> monitor_entries(std::uint64_t auths, std::uint64_t scale) {
  MonitorData data;
  data.version = "numadir 1.2.3";
  data.uptime_s = 3723;
  listener::FrontendSnapshot frontend;
  frontend.dispatcher = "single";
  listener::ListenerSnapshot listener;
  listener.name = "listener-0";
  listener.connections = 16;
  listener.accepted = 20;
  listener.requests = 100 * scale;
  listener.helped = 30 * scale;
  frontend.listeners.push_back(listener);
  for (int i = 0; i < 2; ++i) {
    listener::WorkerSnapshot worker;
    worker.name = "worker-" + std::to_string(i);
    worker.requests = 50 * scale * static_cast<std::uint64_t>(i + 1);
    worker.busy_ns = 200'000'000 * scale;
    worker.parks = 10 * scale;
    frontend.workers.push_back(worker);
  }
  listener::PoolSnapshot pool;
  pool.name = "pool0";
  pool.queue_depth = 3;
  pool.queue_high_water = 99;
  pool.queue_capacity = 4096;
  pool.workers = 2;
  pool.listeners = 1;
  frontend.pools.push_back(pool);
  data.frontend = frontend;
  data.listener_cpu_ms = {300 * scale};
  data.worker_cpu_ms = {100 * scale, std::nullopt};
  data.operations.auths = auths;
  data.operations.operations[static_cast<std::size_t>(OperationKind::kBind)] = auths;
  return make_monitor_entries(data);
}

TEST_CASE("parse_stats_sample: reads what make_monitor_entries publishes") {
  Result<StatsSample> sample = parse_stats_sample(monitor_entries(7, 1), 12.5);
  REQUIRE_MESSAGE(sample.ok(), sample.status().to_string());
  CHECK(sample->at_s == 12.5);
  CHECK(sample->version == "numadir 1.2.3");
  CHECK(sample->dispatcher == "single");
  CHECK(sample->uptime_s == 3723);
  CHECK(sample->connections == 16);
  CHECK(sample->connections_total == 20);
  CHECK(sample->auths == 7);
  CHECK(sample->binds == 7);
  REQUIRE(sample->listeners.size() == 1);
  CHECK(sample->listeners[0].name == "listener-0");
  CHECK(sample->listeners[0].requests == 100);
  CHECK(sample->listeners[0].helped == 30);
  CHECK(sample->listeners[0].cpu_ms == std::optional<std::uint64_t>(300));
  REQUIRE(sample->workers.size() == 2);
  CHECK(sample->workers[1].requests == 100);
  CHECK(sample->workers[0].busy_ms == 200);
  CHECK_FALSE(sample->workers[1].cpu_ms.has_value());
  REQUIRE(sample->pools.size() == 1);
  CHECK(sample->pools[0].name == "pool0");
  CHECK(sample->pools[0].queue_depth == 3);
  CHECK(sample->pools[0].queue_high_water == 99);
}

TEST_CASE("render_stats: each replication consumer's state and changes per second") {
  const auto sample_with = [](std::uint64_t applied, std::string error) {
    MonitorData data;
    data.operations.auths = 1;
    replication::ConsumerStatus consumer;
    consumer.rid = 3;
    consumer.provider = "ldap://provider:389";
    consumer.state = error.empty() ? replication::ConsumerState::kPersisting
                                   : replication::ConsumerState::kWaiting;
    consumer.changes_applied = applied;
    consumer.last_error = std::move(error);
    data.consumers.push_back(consumer);
    return make_monitor_entries(data);
  };
  Result<StatsSample> before = parse_stats_sample(sample_with(100, ""), 10);
  Result<StatsSample> after = parse_stats_sample(sample_with(150, ""), 12);
  REQUIRE(before.ok());
  REQUIRE(after.ok());
  REQUIRE(after->consumers.size() == 1);
  CHECK(after->consumers[0].rid == 3);
  CHECK(after->consumers[0].state == "persisting");
  const std::string view = render_stats(*before, *after, "ldap://replica");
  CAPTURE(view);
  CHECK(view.find("CONSUMER") != std::string::npos);
  CHECK(view.find("persisting") != std::string::npos);
  CHECK(view.find("25.0") != std::string::npos);  // 50 changes over 2 s.
  CHECK(view.find("ldap://provider:389") != std::string::npos);
  Result<StatsSample> failing = parse_stats_sample(sample_with(150, "connection refused"), 14);
  REQUIRE(failing.ok());
  const std::string waiting = render_stats(*after, *failing, "ldap://replica");
  CHECK(waiting.find("waiting to retry") != std::string::npos);
  CHECK(waiting.find("last error: connection refused") != std::string::npos);
}

TEST_CASE("render_stats: the replication provider and a line per sync search it serves") {
  // The provider after `changes` changes sent to the persistent consumer.
  const auto sample_with = [](std::uint64_t changes, double at_s) {
    MonitorData data;
    data.operations.auths = 1;
    replication::ProviderStatus provider;
    provider.enabled = true;
    provider.session_log_entries = 10000;
    provider.context_csn = "20261206220000.000000Z#000000#001#000000";
    provider.searches_served = 5;
    provider.refused = 1;
    provider.fell_behind = 2;
    replication::ProviderConsumerStatus persist;
    persist.connection_id = 12;
    persist.message_id = 2;
    persist.peer = "192.0.2.7:40001";
    persist.identity = "cn=replicator,dc=example,dc=com";
    persist.rid = 1;
    persist.persist = true;
    persist.refreshing = false;
    persist.entries_sent = 10000;
    persist.changes_sent = changes;
    persist.queue_depth = 3;
    persist.queue_capacity = 4096;
    persist.since = std::chrono::system_clock::time_point(std::chrono::seconds(1796299200));
    persist.lag_ms = 15;
    provider.consumers.push_back(persist);
    replication::ProviderConsumerStatus refresh;  // Anonymous, refreshOnly, refreshing.
    refresh.connection_id = 13;
    refresh.message_id = 1;
    refresh.peer = "PATH=/run/numadir/ldapi";
    refresh.entries_sent = 700;
    provider.consumers.push_back(refresh);
    data.provider = provider;
    Result<StatsSample> sample = parse_stats_sample(make_monitor_entries(data), at_s);
    REQUIRE_MESSAGE(sample.ok(), sample.status().to_string());
    return *sample;
  };
  const StatsSample before = sample_with(100, 10);
  const StatsSample after = sample_with(160, 12);
  REQUIRE(after.provider.has_value());
  CHECK(after.provider->enabled);
  CHECK(after.provider->session_log_entries == 10000);
  CHECK(after.provider->fell_behind == 2);
  REQUIRE(after.sync_consumers.size() == 2);
  CHECK(after.sync_consumers[0].id == "12-2");
  CHECK(after.sync_consumers[0].identity == "cn=replicator,dc=example,dc=com");
  CHECK(after.sync_consumers[0].changes_sent == 160);
  CHECK(after.sync_consumers[1].id == "13-1");
  CHECK(after.sync_consumers[1].since.empty());
  CHECK(after.consumers.empty());  // The provider's consumers are not this server's own.

  const std::string view = render_stats(before, after, "ldap://provider");
  CAPTURE(view);
  CHECK(view.find("\nReplication provider: enabled   session log 10000   contextCSN "
                  "20261206220000.000000Z#000000#001#000000\n"
                  "sync searches 5 (now 2)   refused 1   fell behind 2\n") != std::string::npos);
  CHECK(view.find("SYNC      PEER                   MODE/PHASE                 ENTRIES    CHANGES"
                  "  CHANGES/S  QUEUE         SINCE            LAG MS  IDENTITY\n") !=
        std::string::npos);
  // 60 changes in 2 s; 3 of 4096 queued; 15 ms behind.
  CHECK(view.find("12-2      192.0.2.7:40001        refreshAndPersist/persist    10000        160"
                  "       30.0  3/4096        20261203120000Z      15  "
                  "cn=replicator,dc=example,dc=com\n") != std::string::npos);
  // A peer longer than its column is kept whole.
  CHECK(view.find("13-1      PATH=/run/numadir/ldapi  refreshOnly/refresh            700          0"
                  "        0.0  0/0           -                     0  (anonymous)\n") !=
        std::string::npos);
  CHECK(view.find("CONSUMER") == std::string::npos);

  SUBCASE("a sync search new since the last reading has no rate yet") {
    StatsSample earlier = before;
    earlier.sync_consumers.clear();
    const std::string fresh = render_stats(earlier, after, "ldap://provider");
    CHECK(fresh.find("160          -  3/4096") != std::string::npos);
  }
  SUBCASE("a server without a provider shows no provider section") {
    MonitorData data;
    data.operations.auths = 1;
    const StatsSample plain = *parse_stats_sample(make_monitor_entries(data), 1);
    CHECK_FALSE(plain.provider.has_value());
    CHECK(render_stats(plain, plain, "ldap://h").find("Replication provider") == std::string::npos);
  }
}

TEST_CASE("parse_stats_sample: entries without cn=Monitor are refused") {
  std::vector<schema::Entry> entries = monitor_entries(0, 1);
  entries.erase(entries.begin());
  Result<StatsSample> sample = parse_stats_sample(entries, 0);
  REQUIRE_FALSE(sample.ok());
  CHECK(sample.status().code() == StatusCode::kMalformed);
  CHECK(parse_stats_sample({}, 0).status().code() == StatusCode::kMalformed);
}

TEST_CASE("render_stats: rates over the interval between two samples") {
  const StatsSample before = *parse_stats_sample(monitor_entries(1000, 1), 10.0);
  const StatsSample after = *parse_stats_sample(monitor_entries(3000, 3), 12.0);
  const std::string view = render_stats(before, after, "ldap://127.0.0.1:389");
  INFO(view);
  CHECK(view.find("numadir stats  ldap://127.0.0.1:389  numadir 1.2.3  single  up 01:02:03") == 0);
  CHECK(view.find("auths/s 1000.0") != std::string::npos);  // 2000 binds in 2 s.
  CHECK(view.find("connections 16 (accepted 20)") != std::string::npos);
  CHECK(view.find("over the last 2.00 s") != std::string::npos);
  // The pool: depth 3, high-water 99, capacity 4096.
  CHECK(view.find("pool0             3         99       4096        2") != std::string::npos);
  // Listener: 200 requests in 2 s, 60 of them run itself; 600 ms of CPU in 2 s = 30%.
  CHECK(view.find("listener-0          0     16      100.0       30.0   30.0") !=
        std::string::npos);
  // Worker 0: 100 requests in 2 s, 400 ms busy = 20%, 200 ms CPU = 10%, 20 parks = 10/s.
  CHECK(view.find("worker-0            0       50.0   20.0   10.0     10.0") != std::string::npos);
  // Worker 1: its CPU time is unknown.
  CHECK(view.find("worker-1            0      100.0   20.0      -     10.0") != std::string::npos);
}

TEST_CASE("render_stats: counters that went down read as no activity") {
  const StatsSample before = *parse_stats_sample(monitor_entries(5000, 5), 1.0);
  const StatsSample after = *parse_stats_sample(monitor_entries(10, 1), 2.0);
  const std::string view = render_stats(before, after, "ldap://h");
  CHECK(view.find("auths/s 0.0") != std::string::npos);
}

// cn=Monitor's entries with latency histograms: `binds_fast` binds in the first bucket (up to
// 10 µs) and `binds_slow` in (25 ms, 50 ms].
std::vector<schema::Entry> latency_entries(std::uint64_t binds_fast, std::uint64_t binds_slow) {
  MonitorData data;
  data.version = "numadir 1.2.3";
  OperationMetricsTotals latency;
  OperationHistogram& bind = latency.latency[static_cast<std::size_t>(OperationKind::kBind)];
  bind.buckets[0] = binds_fast;
  bind.buckets[11] = binds_slow;
  bind.sum_ns = binds_fast * 8'000 + binds_slow * 30'000'000;
  data.latency = latency;
  return make_monitor_entries(data);
}

TEST_CASE("latency_quantile_ns: linear within the bucket as histogram_quantile") {
  std::vector<std::uint64_t> buckets(kLatencyBuckets, 0);
  CHECK_FALSE(latency_quantile_ns(buckets, 0.5).has_value());
  buckets[0] = 100;  // (0, 10 µs]
  CHECK(latency_quantile_ns(buckets, 0.5).value() == doctest::Approx(5'000));
  CHECK(latency_quantile_ns(buckets, 0.99).value() == doctest::Approx(9'900));
  buckets[11] = 100;  // (25 ms, 50 ms]: ranks past 100 fall here.
  CHECK(latency_quantile_ns(buckets, 0.5).value() == doctest::Approx(10'000));
  CHECK(latency_quantile_ns(buckets, 0.75).value() == doctest::Approx(37'500'000));
  CHECK(latency_quantile_ns(buckets, 0.999).value() == doctest::Approx(49'950'000));
  buckets[16] = 1000;  // +Inf: the highest finite bound.
  CHECK(latency_quantile_ns(buckets, 0.99).value() == doctest::Approx(1e9));
}

TEST_CASE("parse_latency_value: reads make_monitor_entries' values and refuses others") {
  std::vector<schema::Entry> entries = latency_entries(3, 1);
  Result<StatsSample> sample = parse_stats_sample(entries, 1.0);
  REQUIRE(sample.ok());
  REQUIRE(sample->latency.has_value());
  REQUIRE(sample->latency->size() == kOperationKinds);
  const StatsLatency& bind = sample->latency->front();
  CHECK(bind.op == "bind");
  CHECK(bind.count == 4);
  CHECK(bind.sum_ns == 30'024'000);
  REQUIRE(bind.buckets.size() == kLatencyBuckets);
  CHECK(bind.buckets[0] == 3);
  CHECK(bind.buckets[11] == 1);
  const std::string good = "op=bind count=1 sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0";
  CHECK(parse_latency_value(good).has_value());
  for (const std::string& bad : {
           std::string(),
           std::string("op=bind"),
           std::string("op=bind count=1 sumNs=5"),
           std::string("op= count=1 sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
           std::string("op=bind count=x sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
           std::string("op=bind count=-1 sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
           std::string("op=bind count=2 sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
           std::string("op=bind count=1 sumNs=5 buckets=1,0,0"),
           std::string("op=bind count=1 sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
           std::string("op=bind count=1 sumNs=5 buckets=1,,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
           std::string("op=bind count=1 sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"),
           std::string("count=1 op=bind sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
           std::string("op=bind count=1 sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0 x=1"),
           std::string("op=bind  count=1 sumNs=5 buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
           std::string("op=bind count=1 sumNs=99999999999999999999999 "
                       "buckets=1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"),
       }) {
    CAPTURE(bad);
    CHECK_FALSE(parse_latency_value(bad).has_value());
  }
}

TEST_CASE("render_stats: latency percentiles per operation over the interval") {
  Result<StatsSample> before = parse_stats_sample(latency_entries(100, 0), 1.0);
  Result<StatsSample> after = parse_stats_sample(latency_entries(200, 100), 3.0);
  REQUIRE(before.ok());
  REQUIRE(after.ok());
  const std::string text = render_stats(*before, *after, "ldap://x");
  CAPTURE(text);
  // Over the interval: 100 fast and 100 slow binds in 2 s; p50 at the top of the first bucket,
  // p90 at 40 ms in (25 ms, 50 ms].
  CHECK(text.find("LATENCY     OPS/S        P50        P90        P99      P99.9\n") !=
        std::string::npos);
  CHECK(text.find("bind        100.0     10.0us    45.00ms    49.50ms    49.95ms\n") !=
        std::string::npos);
  CHECK(text.find("search ") == std::string::npos);  // No searches: no line.
  SUBCASE("since the start when the first sample had none") {
    StatsSample first = *before;
    first.latency.reset();
    const std::string since = render_stats(first, *after, "ldap://x");
    CAPTURE(since);
    // 200 fast and 100 slow since the start: p50 at rank 150 of the 200 in (0, 10 µs].
    CHECK(since.find("bind            -      7.5us") != std::string::npos);
  }
}

TEST_CASE("render_stats: without metrics the latency says how to turn it on") {
  Result<StatsSample> sample = parse_stats_sample(monitor_entries(7, 1), 1.0);
  REQUIRE(sample.ok());
  CHECK_FALSE(sample->latency.has_value());
  const std::string text = render_stats(*sample, *sample, "ldap://x");
  CHECK(text.find("latency percentiles: off (they are measured with [metrics] listen set") !=
        std::string::npos);
}

}  // namespace
}  // namespace numadir::server
