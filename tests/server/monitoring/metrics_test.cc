// Metrics (server/monitoring/metrics.h): every metric of the contract rendered from its sources,
// latency slots attributed to nodes by thread id, and the text checked by Debian's promtool.
#include "server/monitoring/metrics.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <sys/wait.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "server/monitoring/exposition.h"
#include "threadpool/thread_counters.h"

namespace numadir::server {
namespace {

using listener::wire::ResultCode;

// Two pools of one worker and one listener each; worker tids given.
listener::FrontendSnapshot two_nodes(std::int32_t worker0_tid, std::int32_t worker1_tid) {
  listener::FrontendSnapshot snapshot;
  snapshot.dispatcher = "percpu";
  for (int node = 0; node < 2; ++node) {
    listener::PoolSnapshot pool;
    pool.name = "node" + std::to_string(node);
    pool.queue_depth = 3 + node;
    pool.queue_high_water = 30 + node;
    pool.queue_capacity = 4096;
    snapshot.pools.push_back(pool);
    listener::ListenerSnapshot listener;
    listener.name = "listener-" + std::to_string(node) + "-0";
    listener.pool = node;
    listener.tid = 900 + node;
    listener.connections = 5 + node;
    listener.accepted = 50 + node;
    listener.requests = 500 + node;
    listener.helped = 7 + node;
    listener.submit_refused = 2 + node;
    listener.closed[static_cast<std::size_t>(listener::CloseReason::kIdleTimeout)] = 4;
    snapshot.listeners.push_back(listener);
    listener::WorkerSnapshot worker;
    worker.name = "worker-" + std::to_string(node) + "-0";
    worker.pool = node;
    worker.tid = node == 0 ? worker0_tid : worker1_tid;
    worker.requests = 100 + node;
    worker.parks = 9;
    worker.busy_ns = 1'500'000'000;
    snapshot.workers.push_back(worker);
  }
  return snapshot;
}

std::string render(const Metrics& metrics, ExpositionFormat format) {
  std::string out = "stale";
  metrics.render(format, out);
  return out;
}

std::string read_statm() {
  std::ifstream in("/proc/self/statm");
  std::string text;
  std::getline(in, text);
  return text;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

// CSN of 2026-01-02 03:04:05.5 UTC.
constexpr std::string_view kCsn = "20260102030405.500000Z#000000#000#000000";
constexpr double kCsnSeconds = 1767323045.5;

// A server's sources: two nodes, a slot for this thread (node0's worker) and one for another
// thread (node1's worker), a consumer, a provider serving one sync search.
struct Fixture {
  Fixture() {
    OperationMetrics::Slot& mine = operations.add_slot();
    std::int32_t other_tid = 0;
    std::thread other([&] {
      other_tid = threadpool::os_thread_id();
      OperationMetrics::Slot& theirs = operations.add_slot();
      OperationMetrics::record_owned(theirs, OperationKind::kBind, ResultCode::kSuccess, 40'000);
    });
    other.join();
    OperationMetrics::record_owned(mine, OperationKind::kBind, ResultCode::kSuccess, 5'000);
    OperationMetrics::record_owned(mine, OperationKind::kBind, ResultCode::kInvalidCredentials,
                                   30'000'000);
    OperationMetrics::record_shared(mine, OperationKind::kModify, ResultCode::kSuccess, 2'000'000);
    OperationMetrics::record_abandoned_shared(operations.unowned_slot(), OperationKind::kSearch);
    const std::int32_t my_tid = threadpool::os_thread_id();
    monitor.attach([my_tid, other_tid] { return two_nodes(my_tid, other_tid); });
    monitor.attach_consumers([] {
      replication::ConsumerStatus consumer;
      consumer.rid = 7;
      consumer.state = replication::ConsumerState::kPersisting;
      consumer.cookie = "rid=007,csn=" + std::string(kCsn);
      consumer.changes_applied = 12;
      return std::vector<replication::ConsumerStatus>{consumer};
    });
    monitor.attach_provider([] {
      replication::ProviderStatus provider;
      provider.enabled = true;
      provider.context_csn = std::string(kCsn);
      replication::ProviderConsumerStatus served;
      served.peer = "127.0.0.1:4000";
      served.rid = 3;
      served.persist = true;
      served.queue_depth = 6;
      served.lag_ms = 1500;
      provider.consumers.push_back(served);
      return provider;
    });
    sources.version = "0.1.0";
    sources.monitor = &monitor;
    sources.operations = [] {
      OperationTotals totals;
      totals.auths = 77;
      return totals;
    };
    sources.operation_metrics = &operations;
    sources.writer = [] {
      backend::WriterStats stats;
      stats.jobs = 10;
      stats.failed = 1;
      stats.commits = 4;
      stats.batch_size_buckets[0] = 3;  // Three batches of one,
      stats.batch_size_buckets[3] = 1;  // one of 5..8 jobs.
      stats.batched_jobs = 9;
      stats.commit_buckets[9] = 4;  // (5 ms, 10 ms]
      stats.commit_ns = 30'000'000;
      return stats;
    };
    sources.lockouts = [] { return std::uint64_t{2}; };
  }
  ~Fixture() { monitor.detach(); }
  Monitor monitor{"numadir test"};
  OperationMetrics operations;
  MetricsSources sources;
};

TEST_CASE("Metrics: every family of the contract with its labels") {
  Fixture fixture;
  const Metrics metrics(fixture.sources);
  const std::string text = render(metrics, ExpositionFormat::kPrometheusText);
  CAPTURE(text);
  CHECK(has_line(text, "numadir_build_info{version=\"0.1.0\"} 1"));
  CHECK(has_line(text, "numadir_operations_total{op=\"bind\",result=\"success\"} 2"));
  CHECK(has_line(text, "numadir_operations_total{op=\"bind\",result=\"invalidCredentials\"} 1"));
  CHECK(has_line(text, "numadir_operations_total{op=\"modify\",result=\"success\"} 1"));
  CHECK(has_line(text, "numadir_operations_total{op=\"search\",result=\"abandoned\"} 1"));
  CHECK(has_line(text, "numadir_auths_total 77"));
  // Bind latencies: this thread's under node0 (5 µs, 30 ms), the other's under node1 (40 µs).
  CHECK(has_line(
      text,
      "numadir_operation_duration_seconds_bucket{op=\"bind\",node=\"node0\",le=\"1e-05\"} 1"));
  CHECK(has_line(
      text,
      "numadir_operation_duration_seconds_bucket{op=\"bind\",node=\"node0\",le=\"0.025\"} 1"));
  CHECK(has_line(
      text, "numadir_operation_duration_seconds_bucket{op=\"bind\",node=\"node0\",le=\"0.05\"} 2"));
  CHECK(has_line(text, "numadir_operation_duration_seconds_count{op=\"bind\",node=\"node0\"} 2"));
  CHECK(has_line(text,
                 "numadir_operation_duration_seconds_sum{op=\"bind\",node=\"node0\"} 0.030005"));
  CHECK(has_line(
      text,
      "numadir_operation_duration_seconds_bucket{op=\"bind\",node=\"node1\",le=\"2.5e-05\"} 0"));
  CHECK(has_line(
      text,
      "numadir_operation_duration_seconds_bucket{op=\"bind\",node=\"node1\",le=\"5e-05\"} 1"));
  CHECK(has_line(
      text, "numadir_operation_duration_seconds_bucket{op=\"bind\",node=\"node1\",le=\"+Inf\"} 1"));
  // The detached modify counts under the node of the thread that started it.
  CHECK(has_line(text, "numadir_operation_duration_seconds_count{op=\"modify\",node=\"node0\"} 1"));
  CHECK(text.find("numadir_operation_duration_seconds_count{op=\"search\"") == std::string::npos);
  CHECK(has_line(text, "numadir_connections_open{listener=\"listener-1-0\",node=\"node1\"} 6"));
  CHECK(has_line(
      text, "numadir_connections_accepted_total{listener=\"listener-0-0\",node=\"node0\"} 50"));
  CHECK(has_line(text,
                 "numadir_connections_refused_total{listener=\"listener-0-0\",node=\"node0\"} 0"));
  CHECK(has_line(text,
                 "numadir_connections_closed_total{listener=\"listener-0-0\",node=\"node0\","
                 "reason=\"idle_timeout\"} 4"));
  CHECK(has_line(text,
                 "numadir_connections_closed_total{listener=\"listener-0-0\",node=\"node0\","
                 "reason=\"server_stop\"} 0"));
  CHECK(has_line(text,
                 "numadir_listener_requests_total{listener=\"listener-1-0\",node=\"node1\"} 501"));
  CHECK(has_line(text, "numadir_pool_queue_depth{node=\"node1\"} 4"));
  CHECK(has_line(text, "numadir_pool_queue_high_water{node=\"node0\"} 30"));
  CHECK(has_line(text, "numadir_pool_queue_capacity{node=\"node0\"} 4096"));
  CHECK(has_line(text, "numadir_pool_tasks_total{node=\"node1\"} 101"));
  CHECK(has_line(text, "numadir_pool_helped_total{node=\"node1\"} 8"));
  CHECK(has_line(text, "numadir_pool_submit_refused_total{node=\"node0\"} 2"));
  CHECK(has_line(text, "numadir_worker_busy_seconds_total{node=\"node0\"} 1.5"));
  CHECK(has_line(text, "numadir_worker_parks_total{node=\"node0\"} 9"));
  CHECK(text.find("numadir_pool_lock_") == std::string::npos);  // Lock-free pools.
  CHECK(has_line(text, "numadir_writer_jobs_total 10"));
  CHECK(has_line(text, "numadir_writer_failed_jobs_total 1"));
  CHECK(has_line(text, "numadir_writer_commits_total 4"));
  CHECK(has_line(text, "numadir_writer_batch_size_bucket{le=\"1\"} 3"));
  CHECK(has_line(text, "numadir_writer_batch_size_bucket{le=\"4\"} 3"));
  CHECK(has_line(text, "numadir_writer_batch_size_bucket{le=\"8\"} 4"));
  CHECK(has_line(text, "numadir_writer_batch_size_sum 9"));
  CHECK(has_line(text, "numadir_writer_batch_size_count 4"));
  CHECK(has_line(text, "numadir_writer_commit_duration_seconds_bucket{le=\"0.005\"} 0"));
  CHECK(has_line(text, "numadir_writer_commit_duration_seconds_bucket{le=\"0.01\"} 4"));
  CHECK(has_line(text, "numadir_writer_commit_duration_seconds_sum 0.03"));
  CHECK(has_line(text, "numadir_password_policy_lockouts_total 2"));
  CHECK(has_line(text, "numadir_replication_consumer_up{rid=\"7\",state=\"persisting\"} 1"));
  CHECK(has_line(text, "numadir_replication_consumer_changes_applied_total{rid=\"7\"} 12"));
  CHECK(has_line(text, "numadir_replication_consumer_csn_timestamp_seconds{rid=\"7\"} " +
                           ExpositionWriter::format_double(kCsnSeconds)));
  CHECK(has_line(text, "numadir_context_csn_timestamp_seconds " +
                           ExpositionWriter::format_double(kCsnSeconds)));
  CHECK(has_line(text, "numadir_sync_consumers{mode=\"refreshOnly\"} 0"));
  CHECK(has_line(text, "numadir_sync_consumers{mode=\"refreshAndPersist\"} 1"));
  CHECK(has_line(text, "numadir_sync_consumer_lag_seconds{peer=\"127.0.0.1:4000\",rid=\"3\"} 1.5"));
  CHECK(has_line(text, "numadir_sync_consumer_queue_depth{peer=\"127.0.0.1:4000\",rid=\"3\"} 6"));
  CHECK(text.find("\nprocess_resident_memory_bytes ") != std::string::npos);
  CHECK(text.find("\nprocess_open_fds ") != std::string::npos);
  CHECK(text.find("\nprocess_cpu_seconds_total ") != std::string::npos);
  CHECK(text.find("\nprocess_start_time_seconds ") != std::string::npos);
  // Sources left out leave their families out.
  CHECK(text.find("numadir_access_log_dropped_lines_total") == std::string::npos);
  CHECK(has_line(text, "numadir_tls_handshakes_total{kind=\"full\"} 0"));  // Always there.
  CHECK(text.find("# EOF") == std::string::npos);
  CHECK(text.find("untyped") == std::string::npos);
}

TEST_CASE("Metrics: the TLS handshakes and the access log's drops") {
  Fixture fixture;
  fixture.operations.count_tls_handshake(/*resumed=*/true);
  std::string pattern =
      (std::filesystem::temp_directory_path() / "numadir-metrics-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  auto log = AccessLog::open(std::filesystem::path(pattern) / "access.log");
  REQUIRE(log.ok());
  fixture.sources.access_log = log->get();
  const Metrics metrics(fixture.sources);
  const std::string text = render(metrics, ExpositionFormat::kPrometheusText);
  CAPTURE(text);
  CHECK(has_line(text, "numadir_tls_handshakes_total{kind=\"full\"} 0"));
  CHECK(has_line(text, "numadir_tls_handshakes_total{kind=\"resumed\"} 1"));
  CHECK(has_line(text, "numadir_access_log_dropped_lines_total 0"));
  log->reset();
  std::filesystem::remove_all(pattern);
}

TEST_CASE("Metrics: a slot of a thread in no pool has no node label") {
  Fixture fixture;
  fixture.monitor.detach();  // No frontend: no thread is in a pool.
  const Metrics metrics(fixture.sources);
  const std::string text = render(metrics, ExpositionFormat::kPrometheusText);
  CAPTURE(text);
  CHECK(has_line(text, "numadir_operation_duration_seconds_count{op=\"bind\"} 3"));
  CHECK(text.find("node=") == std::string::npos);
}

TEST_CASE("Metrics: OpenMetrics names counter families without _total and ends with EOF") {
  Fixture fixture;
  const Metrics metrics(fixture.sources);
  const std::string text = render(metrics, ExpositionFormat::kOpenMetrics);
  CAPTURE(text);
  REQUIRE(text.size() > 6);
  CHECK(text.substr(text.size() - 6) == "# EOF\n");
  CHECK(text.find("# EOF") == text.size() - 6);
  CHECK(has_line(text, "# TYPE numadir_operations counter"));
  CHECK(has_line(text, "# TYPE numadir_build info"));
  CHECK(has_line(text, "numadir_operations_total{op=\"bind\",result=\"success\"} 2"));
  CHECK(text.find("# TYPE numadir_operations_total") == std::string::npos);
  CHECK(text.find("untyped") == std::string::npos);
  // Structure: every sample's name belongs to the family declared last (its name, or with a
  // suffix its type allows), and no family is declared twice.
  std::istringstream lines(text);
  std::string line;
  std::string family;
  std::string type;
  std::set<std::string> families;
  while (std::getline(lines, line)) {
    CAPTURE(line);
    if (line.rfind("# TYPE ", 0) == 0) {
      const std::size_t space = line.find(' ', 7);
      family = line.substr(7, space - 7);
      type = line.substr(space + 1);
      CHECK(families.insert(family).second);
      continue;
    }
    if (line.rfind("# ", 0) == 0) {
      continue;
    }
    REQUIRE_FALSE(family.empty());
    const std::string name = line.substr(0, line.find_first_of("{ "));
    std::vector<std::string> allowed;
    if (type == "counter") {
      allowed = {family + "_total", family + "_created"};
    } else if (type == "histogram") {
      allowed = {family + "_bucket", family + "_sum", family + "_count", family + "_created"};
    } else if (type == "info") {
      allowed = {family + "_info"};
    } else {
      allowed = {family};
    }
    CHECK(std::find(allowed.begin(), allowed.end(), name) != allowed.end());
  }
}

// Returns: promtool's exit status on `text` (its output in `output`), or -1 without promtool.
int promtool_check(const std::string& text, std::string& output) {
  const std::filesystem::path promtool = "/usr/bin/promtool";
  if (!std::filesystem::exists(promtool)) {
    return -1;
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "numadir-prom-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  const std::filesystem::path dir = pattern;
  std::ofstream(dir / "metrics.txt") << text;
  const std::string command = promtool.string() + " check metrics < " +
                              (dir / "metrics.txt").string() + " > " + (dir / "out.txt").string() +
                              " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(dir / "out.txt");
  output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

TEST_CASE("Metrics: promtool check metrics passes on a rendered sample") {
  Fixture fixture;
  const Metrics metrics(fixture.sources);
  const std::string text = render(metrics, ExpositionFormat::kPrometheusText);
  std::string output;
  const int status = promtool_check(text, output);
  if (status == -1) {
    MESSAGE("skipped: /usr/bin/promtool is not installed");
    return;
  }
  CAPTURE(text);
  CAPTURE(output);
  CHECK(status == 0);
  CHECK(output.empty());  // No lint complaints either.
  SUBCASE("and fails on a broken one (the check can fail)") {
    std::string broken_output;
    CHECK(promtool_check("numadir_x{a=\"b} 1\n", broken_output) != 0);
  }
}

TEST_CASE("statm_resident_pages: the second field of /proc/self/statm and nothing else") {
  CHECK(statm_resident_pages("5046 1234 567 12 0 890 0\n") == 1234);
  CHECK(statm_resident_pages("5046 1234") == 1234);
  CHECK(statm_resident_pages(read_statm()).has_value());
  for (const std::string_view bad : {"", "5046", "5046 ", "a 1234", "5046 x", "5046 12x 3", "-1 -2",
                                     "5046 99999999999999999999999"}) {
    CAPTURE(bad);
    CHECK_FALSE(statm_resident_pages(bad).has_value());
  }
  const ProcessStats stats = read_process_stats();
  CHECK(stats.resident_bytes.value_or(0) > 0);
  CHECK(stats.open_fds.value_or(0) >= 3);  // At least the standard streams.
  CHECK(stats.cpu_seconds.has_value());
}

}  // namespace
}  // namespace numadir::server
