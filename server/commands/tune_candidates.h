// server/commands/tune_candidates.h: the pure parts of `numadir tune`: the thread settings it
// measures (candidates made from a topology, and the config's own), the [threads] fragment of a
// candidate, authrate's JSON summary read into a measurement, medians, the choice of the best
// candidate and the result table. Nothing here starts a process or touches a file
// (tune_command.cc does).
//
// The best candidate (kBestRule): among the candidates measured at every connection count
// without an error, the one with the highest sum over the connection counts of its median
// auths/s; a tie goes to the lower summed median server CPU per auth, then to the earlier
// candidate (the current settings come first).
//
// Thread contract: plain values and functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/formats/config.h"
#include "threadpool/placement.h"
#include "threadpool/topology.h"

namespace numadir::server {

inline constexpr std::string_view kBestRule =
    "the highest sum over the connection counts of median auths/s, among the candidates "
    "measured without errors";

// One set of thread settings.
struct TuneCandidate {
  std::string name;  // "current", or "l<listeners>-w<workers>[-nohelp][-nopin]".
  // The config's own [threads] (served unchanged); the others replace it with fragment().
  bool current = false;
  std::string dispatcher = "percpu";  // "percpu" or "single" (only the current may be single).
  bool pin = true;
  bool listener_helps = true;
  std::string topology;  // threads.topology, kept from the config ("": this machine).
  // percpu: the threads of each node, explicit counts, in node order. For the current
  // candidate they are its plan's counts (whatever auto chose).
  std::vector<threadpool::NodeThreads> nodes;
  std::size_t single_workers = 0;  // single: server.workers (0: one per CPU).
};

// Returns: the candidates to try on `topology`, every node with a PU given the same rule:
//   listeners l = 1 .. min(cores, 4) (each node at most its cores) and workers = the node's
//   PUs, or PUs + l; all with pin and listener_helps on; then the auto counts (one listener
//   per 4 cores, a worker per PU) with listener_helps off and with pin off. The auto counts
//   come first, then their two variants, then the rest of the grid; none twice. Each keeps
//   `topology_setting` as its threads.topology. On one node of 2 PUs: l1-w2, l1-w2-nohelp,
//   l1-w2-nopin, l1-w3, l2-w2, l2-w4.
std::vector<TuneCandidate> generate_candidates(const threadpool::Topology& topology,
                                               std::string_view topology_setting);

// Returns: the config's own settings as the "current" candidate; `plan` is what they plan on
//   this machine (compile_server_config's), nullptr for the single dispatcher.
TuneCandidate current_candidate(const Config& config, const threadpool::PlacementPlan* plan);

// Returns: the placement options `candidate` (percpu) plans from.
threadpool::PlacementOptions candidate_placement(const TuneCandidate& candidate);

// Returns: whether the two would run the same threads (names and `current` aside).
bool same_settings(const TuneCandidate& a, const TuneCandidate& b);

// Returns: the settings in one line, e.g. "percpu, 1 node x (1 listener + 2 workers), pinned,
//   listeners help" or "single, auto workers".
std::string describe_settings(const TuneCandidate& candidate);

// Returns: the candidate's [threads] table and its [[threads.node]] tables as TOML text (a
//   single-dispatcher candidate: dispatcher only, with a comment naming server.workers), each
//   line of `comment` first as a "# " comment.
std::string threads_fragment(const TuneCandidate& candidate, std::string_view comment = {});

// One authrate run.
struct TuneMeasurement {
  double auths_per_sec = 0;
  double p99_ms = 0;
  std::optional<double> cpu_us_per_auth;  // authrate --server-pid; none when it could not tell.
  std::uint64_t errors = 0;
};

// Reads the fields tune uses from authrate's --json summary: auths_per_sec, latency_ms.p99,
// errors.total and server_cpu_us_per_auth (a number or null).
// Errors: kMalformed naming the first field missing or not a number.
Result<TuneMeasurement> parse_authrate_summary(std::string_view json);

// The medians of one candidate at one connection count.
struct TunePoint {
  std::size_t runs = 0;  // Measurements that completed; 0: none did (the point failed).
  double auths_per_sec = 0;
  double p99_ms = 0;
  std::optional<double> cpu_us_per_auth;  // Median of the runs that had it.
  std::uint64_t errors = 0;               // Over all runs.
  std::size_t failed_runs = 0;            // Runs that gave no measurement.
};

// Returns: the medians of `runs` (the mean of the middle two for an even count); `failed_runs`
//   counts the runs that gave none.
TunePoint median_point(std::span<const TuneMeasurement> runs, std::size_t failed_runs);

// One candidate's outcome: a point per connection count (in the order tune was given them).
struct TuneResult {
  TuneCandidate candidate;
  std::vector<TunePoint> points;
  std::string failure;  // Why it was given up (its server did not start...); "" when it ran.
};

// Returns: the index in `results` of the best candidate by kBestRule; nullopt when no
//   candidate has every point measured without errors.
std::optional<std::size_t> choose_best(std::span<const TuneResult> results);

// Returns: the table, one row per candidate and connection count:
//   candidate  conns  auths/s  p99_ms  cpu_us/auth  errors  settings
// ("-" where a point has no measurement; errors "N+Mf": M runs gave no measurement), the best
// candidate's rows ending in "<- best".
std::string format_table(std::span<const TuneResult> results, std::span<const int> connections,
                         std::optional<std::size_t> best);

// Returns: "<name>: <sum> auths/s summed over <counts> connections (+N% over current)".
std::string describe_best(std::span<const TuneResult> results, std::span<const int> connections,
                          std::size_t best);

}  // namespace numadir::server
