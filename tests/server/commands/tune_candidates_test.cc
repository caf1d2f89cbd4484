// tests/server/commands/tune_candidates_test.cc: the pure parts of numadir tune: candidates
// from synthetic topologies, the current settings, fragments, authrate summaries, medians and
// the best candidate.
#include "server/commands/tune_candidates.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/formats/config.h"

namespace numadir::server {
namespace {

threadpool::Topology synthetic(const char* description) {
  Result<threadpool::Topology> topology = threadpool::Topology::synthetic(description);
  REQUIRE_MESSAGE(topology.ok(), topology.status().to_string());
  return std::move(*topology);
}

std::vector<std::string> names(const std::vector<TuneCandidate>& candidates) {
  std::vector<std::string> out;
  for (const TuneCandidate& candidate : candidates) {
    out.push_back(candidate.name);
  }
  return out;
}

TuneResult result(const std::string& name, std::vector<double> rates, std::uint64_t errors = 0,
                  double cpu = 10) {
  TuneResult out;
  out.candidate.name = name;
  for (const double rate : rates) {
    TuneMeasurement run{rate, 1.0, cpu, errors};
    out.points.push_back(median_point(std::span(&run, 1), 0));
  }
  return out;
}

Config parse_tune_config(const std::string& text) {
  Result<Config> config = parse_config(text, "test.toml", "/etc/nd");
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  return std::move(*config);
}

constexpr const char* kTuneDatabase = "[database]\npath = \"db\"\nsuffix = \"dc=example,dc=com\"\n";

}  // namespace

TEST_CASE("TuneCandidates: one node of two PUs gives six candidates auto first") {
  const std::vector<TuneCandidate> candidates =
      generate_candidates(synthetic("numa:1 core:2 pu:1"), "");
  CHECK(names(candidates) == std::vector<std::string>{"l1-w2", "l1-w2-nohelp", "l1-w2-nopin",
                                                      "l1-w3", "l2-w2", "l2-w4"});
  const TuneCandidate& nopin = candidates[2];
  CHECK_FALSE(nopin.pin);
  CHECK(nopin.listener_helps);
  REQUIRE(nopin.nodes.size() == 1);
  CHECK(nopin.nodes[0].node == 0);
  CHECK(nopin.nodes[0].listeners == 1);
  CHECK(nopin.nodes[0].workers == 2);
  CHECK_FALSE(candidates[1].listener_helps);
  for (const TuneCandidate& candidate : candidates) {
    CHECK_FALSE(candidate.current);
    CHECK(candidate.topology.empty());
    // Every candidate plans on the topology it was made from.
    CHECK(
        threadpool::plan_placement(synthetic("numa:1 core:2 pu:1"), candidate_placement(candidate))
            .ok());
  }
}

TEST_CASE("TuneCandidates: every node gets the counts and the topology setting is kept") {
  const std::vector<TuneCandidate> candidates =
      generate_candidates(synthetic("numa:2 core:2 pu:1"), "numa:2 core:2 pu:1");
  REQUIRE(candidates.size() == 6);
  for (const TuneCandidate& candidate : candidates) {
    REQUIRE(candidate.nodes.size() == 2);
    CHECK(candidate.nodes[0].node == 0);
    CHECK(candidate.nodes[1].node == 1);
    CHECK(candidate.nodes[0].listeners == candidate.nodes[1].listeners);
    CHECK(candidate.nodes[0].workers == candidate.nodes[1].workers);
    CHECK(candidate.topology == "numa:2 core:2 pu:1");
  }
  CHECK(candidates[3].name == "l1-w3");
}

TEST_CASE("TuneCandidates: a large node tries at most four listeners and auto counts first") {
  // 16 cores of 2 PUs: auto is 4 listeners and 32 workers; the grid is 1..4 listeners.
  const std::vector<TuneCandidate> candidates =
      generate_candidates(synthetic("numa:1 core:16 pu:2"), "");
  CHECK(names(candidates) == std::vector<std::string>{"l4-w32", "l4-w32-nohelp", "l4-w32-nopin",
                                                      "l1-w32", "l1-w33", "l2-w32", "l2-w34",
                                                      "l3-w32", "l3-w35", "l4-w36"});
}

TEST_CASE("TuneCandidates: one PU gives the auto counts and their variants only") {
  const std::vector<TuneCandidate> candidates =
      generate_candidates(synthetic("numa:1 core:1 pu:1"), "");
  CHECK(names(candidates) ==
        std::vector<std::string>{"l1-w1", "l1-w1-nohelp", "l1-w1-nopin", "l1-w2"});
}

TEST_CASE("TuneCandidates: the current settings take their plan's counts") {
  const threadpool::Topology topology = synthetic("numa:1 core:2 pu:1");
  const Config config =
      parse_tune_config(std::string(kTuneDatabase) + "[threads]\nlistener_helps = false\n");
  Result<threadpool::PlacementPlan> plan =
      threadpool::plan_placement(topology, placement_options(config, topology));
  REQUIRE(plan.ok());
  const TuneCandidate current = current_candidate(config, &*plan);
  CHECK(current.name == "current");
  CHECK(current.current);
  REQUIRE(current.nodes.size() == 1);
  CHECK(current.nodes[0].listeners == 1);
  CHECK(current.nodes[0].workers == 2);
  CHECK_FALSE(current.listener_helps);
  const std::vector<TuneCandidate> generated = generate_candidates(topology, "");
  CHECK(same_settings(current, generated[1]));  // l1-w2-nohelp
  CHECK_FALSE(same_settings(current, generated[0]));

  SUBCASE("single") {
    const Config single = parse_tune_config(
        std::string(kTuneDatabase) + "[server]\nworkers = 3\n[threads]\ndispatcher = \"single\"\n");
    const TuneCandidate candidate = current_candidate(single, nullptr);
    CHECK(candidate.dispatcher == "single");
    CHECK(candidate.single_workers == 3);
    CHECK(describe_settings(candidate) == "single, 3 workers");
    CHECK_FALSE(same_settings(candidate, generated[0]));
    const std::string fragment = threads_fragment(candidate);
    CHECK(fragment ==
          "[threads]\ndispatcher = \"single\"\n# The pool's size is server.workers (3).\n");
  }
}

TEST_CASE("TuneCandidates: the fragment is the threads table and a node table per node") {
  TuneCandidate candidate;
  candidate.name = "l1-w3-nopin";
  candidate.pin = false;
  candidate.topology = "numa:2 core:1 pu:1";
  candidate.nodes = {{0, 1, 3}, {1, 2, 4}};
  CHECK(threads_fragment(candidate, "numadir tune: best of 6\nsecond line") ==
        "# numadir tune: best of 6\n# second line\n"
        "[threads]\ndispatcher = \"percpu\"\npin = false\nlistener_helps = true\n"
        "topology = \"numa:2 core:1 pu:1\"\n"
        "\n[[threads.node]]\nid = 0\nlisteners = 1\nworkers = 3\n"
        "\n[[threads.node]]\nid = 1\nlisteners = 2\nworkers = 4\n");
  CHECK(describe_settings(candidate) ==
        "percpu, node 0: 1 listener + 3 workers; node 1: 2 listeners + 4 workers, unpinned, "
        "listeners help, emulated numa:2 core:1 pu:1");

  SUBCASE("it parses as the threads of a config") {
    const Config config =
        parse_tune_config(std::string(kTuneDatabase) + threads_fragment(candidate, "x"));
    CHECK_FALSE(config.threads.pin);
    CHECK(config.threads.topology == "numa:2 core:1 pu:1");
    REQUIRE(config.threads.nodes.size() == 2);
    CHECK(config.threads.nodes[1].listeners == 2);
    CHECK(config.threads.nodes[1].workers == 4);
  }
  SUBCASE("a topology with quotes and backslashes is escaped") {
    candidate.topology = "a\"b\\c.xml";
    const Config config =
        parse_tune_config(std::string(kTuneDatabase) + threads_fragment(candidate));
    CHECK(config.threads.topology == "a\"b\\c.xml");
  }
}

TEST_CASE("TuneCandidates: authrate's summary is read") {
  const char* json =
      "{\"auths\": 1234, \"auths_per_sec\": 617.250, \"latency_ms\": {\"p50\": 1.100000, "
      "\"p90\": 2.000000, \"p99\": 3.500000, \"p999\": 9.000000, \"max\": 12.000000, \"mean\": "
      "1.300000}, \"errors\": {\"total\": 7, \"by_kind\": {\"connect\": 0}, \"by_code\": "
      "{\"49\": 7}}, \"server_cpu_us_per_auth\": 45.250, \"server_peak_rss_kib\": 1000, "
      "\"tls\": null, \"connections\": 4, \"threads\": 1, \"duration_s\": 2.000, \"mode\": "
      "\"same\"}\n";
  Result<TuneMeasurement> measurement = parse_authrate_summary(json);
  REQUIRE_MESSAGE(measurement.ok(), measurement.status().to_string());
  CHECK(measurement->auths_per_sec == doctest::Approx(617.25));
  CHECK(measurement->p99_ms == doctest::Approx(3.5));
  CHECK(measurement->errors == 7);
  REQUIRE(measurement->cpu_us_per_auth.has_value());
  CHECK(*measurement->cpu_us_per_auth == doctest::Approx(45.25));

  SUBCASE("a null server CPU") {
    std::string text = json;
    text.replace(text.find("45.250"), 6, "null");
    Result<TuneMeasurement> without = parse_authrate_summary(text);
    REQUIRE(without.ok());
    CHECK_FALSE(without->cpu_us_per_auth.has_value());
  }
  SUBCASE("a missing field") {
    std::string text = json;
    text.replace(text.find("\"p99\""), 5, "\"pXX\"");
    Result<TuneMeasurement> bad = parse_authrate_summary(text);
    CHECK(bad.status().code() == StatusCode::kMalformed);
    CHECK(bad.status().message() == "authrate summary: no \"p99\"");
  }
  SUBCASE("a negative or infinite count") {
    std::string text = json;
    text.replace(text.find("\"total\": 7"), 10, "\"total\": -7");
    CHECK(parse_authrate_summary(text).status().code() == StatusCode::kMalformed);
    text = json;
    text.replace(text.find("617.250"), 7, "inf");
    CHECK(parse_authrate_summary(text).status().code() == StatusCode::kMalformed);
  }
  SUBCASE("not a summary") { CHECK_FALSE(parse_authrate_summary("authrate: error").ok()); }
}

TEST_CASE("TuneCandidates: medians of odd and even counts") {
  std::vector<TuneMeasurement> runs = {{300, 3, 30, 0}, {100, 1, std::nullopt, 1}, {200, 2, 10, 0}};
  TunePoint point = median_point(runs, 1);
  CHECK(point.runs == 3);
  CHECK(point.failed_runs == 1);
  CHECK(point.auths_per_sec == 200);
  CHECK(point.p99_ms == 2);
  REQUIRE(point.cpu_us_per_auth.has_value());
  CHECK(*point.cpu_us_per_auth == 20);  // The median of the two runs that had it.
  CHECK(point.errors == 1);
  runs.pop_back();
  CHECK(median_point(runs, 0).auths_per_sec == 200);
  CHECK(median_point({}, 2).runs == 0);
}

TEST_CASE("TuneCandidates: the best has the highest summed median rate among clean ones") {
  std::vector<TuneResult> results = {result("current", {100, 200}), result("a", {150, 140}),
                                     result("b", {120, 200}), result("c", {500, 500}, 3)};
  results[0].candidate.current = true;
  // c is fastest but had errors; b sums 320 over current's 300 and a's 290.
  std::optional<std::size_t> best = choose_best(results);
  REQUIRE(best.has_value());
  CHECK(*best == 2);
  const std::vector<int> connections = {16, 64};
  CHECK(describe_best(results, connections, 2) ==
        "b: 320 auths/s summed over 16,64 connections (+6.7% over current)");

  SUBCASE("a tie goes to the lower CPU and then to the earlier") {
    results[1] = result("a", {120, 200}, 0, 5);
    CHECK(choose_best(results) == std::optional<std::size_t>(1));
    results[1] = result("a", {120, 200}, 0, 10);
    CHECK(choose_best(results) == std::optional<std::size_t>(1));
  }
  SUBCASE("a failed candidate or a failed run is never best") {
    results[2].failure = "did not start";
    CHECK(choose_best(results) == std::optional<std::size_t>(0));
    results[0].points[1].failed_runs = 1;
    CHECK(choose_best(results) == std::optional<std::size_t>(1));
  }
  SUBCASE("none clean") {
    for (TuneResult& r : results) {
      r.points[0].errors = 1;
    }
    CHECK_FALSE(choose_best(results).has_value());
  }
  SUBCASE("the table has a row per candidate and connection count") {
    const std::string table = format_table(results, connections, best);
    CHECK(table.find("candidate  conns") == 0);
    CHECK(table.find("b             16        120") != std::string::npos);
    CHECK(table.find("<- best") != std::string::npos);
    std::size_t rows = 0;
    for (const char c : table) {
      rows += c == '\n';
    }
    CHECK(rows == 1 + results.size() * connections.size());
  }
}

}  // namespace numadir::server
