// numadir tune: measures thread settings on this machine before a directory goes live. The live
// config is compiled as serve compiles it and the live database is only read (a compacted copy
// is made, tune_snapshot.h); each candidate (tune_candidates.h) is served by a private `numadir
// serve` (this same executable) on the copy, on 127.0.0.1 only, one server at a time, and
// driven by authrate at each connection count, the candidates interleaved round after round
// (tune_rounds.h). Prints the table and the best candidate's [threads] fragment; writes it
// (--write) and a plot (--plot, gnuplot) on request. Every private server is stopped and the
// copy removed at the end, on an error and on SIGINT / SIGTERM too.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backend/password_scheme.h"
#include "server/commands/child_process.h"
#include "server/commands/commands.h"
#include "server/commands/server_config.h"
#include "server/commands/tune_candidates.h"
#include "server/commands/tune_rounds.h"
#include "server/commands/tune_runs.h"
#include "server/commands/tune_snapshot.h"
#include "server/formats/config_derive.h"
#include "threadpool/placement.h"
#include "threadpool/topology.h"

namespace numadir::server {
namespace {

// Set by SIGINT / SIGTERM; read between and during the runs.
volatile sig_atomic_t g_interrupted = 0;

void on_interrupt(int) { g_interrupted = 1; }

bool interrupted() { return g_interrupted != 0; }

// SIGINT and SIGTERM set g_interrupted while it lives (no SA_RESTART: a blocked call returns
// EINTR); the previous handlers come back after.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupted = 0;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_int_);
    sigaction(SIGTERM, &action, &previous_term_);
  }
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  ~InterruptGuard() {
    sigaction(SIGINT, &previous_int_, nullptr);
    sigaction(SIGTERM, &previous_term_, nullptr);
  }

 private:
  struct sigaction previous_int_ {};
  struct sigaction previous_term_ {};
};

// A private directory under $TMPDIR (or /tmp), removed with everything in it when it goes.
class WorkDir {
 public:
  static Result<WorkDir> create() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/numadir-tune-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return Status(StatusCode::kIo, pattern + ": cannot be created");
    }
    return WorkDir(pattern);
  }
  WorkDir(WorkDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  ~WorkDir() {
    if (!path_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  explicit WorkDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

bool is_thread_error(const ConfigDiagnostic& error) {
  return error.key == "threads" || error.key == "threads.topology";
}

// The candidates that can run here, the current settings first; each one skipped is named on
// `err` with the reason.
std::vector<TuneCandidate> choose_candidates(const Config& config,
                                             const ServerConfigOutcome& outcome,
                                             const std::vector<std::string>& thread_errors,
                                             std::size_t max_candidates, std::ostream& err) {
  std::vector<TuneCandidate> chosen;
  if (!thread_errors.empty()) {
    std::string why;
    for (const std::string& error : thread_errors) {
      why += (why.empty() ? "" : "; ") + error;
    }
    err << "numadir tune: skipping candidate current (the config's own settings): " << why << "\n";
  } else {
    const threadpool::PlacementPlan* plan =
        outcome.compiled != nullptr && outcome.compiled->plan.has_value() ? &*outcome.compiled->plan
                                                                          : nullptr;
    chosen.push_back(current_candidate(config, plan));
  }
  const bool emulated = !config.threads.topology.empty();
  Result<threadpool::Topology> topology =
      emulated ? threadpool::Topology::emulated(config.threads.topology)
               : threadpool::Topology::detect();
  if (!topology.ok()) {
    err << "numadir tune: no candidates from the topology: "
        << (emulated ? "threads.topology: " : "") << topology.status().message() << "\n";
    return chosen;
  }
  for (TuneCandidate& candidate : generate_candidates(*topology, config.threads.topology)) {
    if (!chosen.empty() && chosen.front().current && same_settings(chosen.front(), candidate)) {
      continue;  // The current settings, measured as "current".
    }
    Result<threadpool::PlacementPlan> plan =
        threadpool::plan_placement(*topology, candidate_placement(candidate));
    if (!plan.ok()) {
      err << "numadir tune: skipping candidate " << candidate.name << ": "
          << plan.status().message() << "\n";
      continue;
    }
    chosen.push_back(std::move(candidate));
  }
  if (max_candidates != 0 && chosen.size() > max_candidates) {
    chosen.resize(max_candidates);
  }
  return chosen;
}

// The executables a tune runs: this numadir (each candidate's private server) and authrate.
struct TunePrograms {
  std::filesystem::path numadir;
  std::filesystem::path authrate;
};

// Errors: kInvalidArgument when --write names the config file itself; kAlreadyExists when it
//   names a file that exists and --force is not given.
Status check_write_target(const TuneOptions& options) {
  if (!options.write.has_value()) {
    return Status();
  }
  std::error_code ec;
  if (std::filesystem::equivalent(*options.write, options.config, ec)) {
    return Status(StatusCode::kInvalidArgument,
                  "--write " + options.write->string() +
                      ": that is the config file itself; tune writes only a [threads] fragment: "
                      "write it to another file and replace the config's [threads] with it");
  }
  if (std::filesystem::exists(*options.write, ec) && !options.force) {
    return Status(StatusCode::kAlreadyExists, "--write " + options.write->string() +
                                                  ": the file exists (--force overwrites it)");
  }
  return Status();
}

// Returns: this numadir (/proc/self/exe) and the authrate to run.
// Errors: kIo when /proc/self/exe cannot be read; find_authrate's kNotFound.
Result<TunePrograms> find_programs(const TuneOptions& options) {
  std::error_code ec;
  std::filesystem::path numadir = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return Status(StatusCode::kIo, "/proc/self/exe: " + ec.message());
  }
  Result<std::filesystem::path> authrate = find_authrate(options.authrate, numadir);
  if (!authrate.ok()) {
    return authrate.status();
  }
  return TunePrograms{std::move(numadir), std::move(*authrate)};
}

// The live config as serve compiles it.
struct LiveConfig {
  Config config;
  ServerConfigOutcome outcome;
  std::vector<std::string> thread_errors;  // They rule out the current settings only.
};

// Loads and compiles `file` as serve does, its warnings on `err`.
// Returns: nullopt, each reason said on `err`, when it does not load or has a mistake outside
//   the thread plan (threads, threads.topology).
std::optional<LiveConfig> compile_live_config(const std::filesystem::path& file,
                                              std::ostream& err) {
  Result<Config> loaded = load_config(file);
  if (!loaded.ok()) {
    err << "numadir tune: " << loaded.status().message() << "\n";
    return std::nullopt;
  }
  LiveConfig live{std::move(*loaded), compile_server_config(file), {}};
  std::vector<std::string> other_errors;
  for (const ConfigDiagnostic& error : live.outcome.errors) {
    (is_thread_error(error) ? live.thread_errors : other_errors).push_back(error.to_string());
  }
  for (const ConfigDiagnostic& warning : live.outcome.warnings) {
    err << warning.to_string("warning") << "\n";
  }
  if (!other_errors.empty()) {
    for (const std::string& error : other_errors) {
      err << "numadir tune: " << error << "\n";
    }
    return std::nullopt;
  }
  return live;
}

// Makes the copy tune measures on in `snapshot` (tune_snapshot.h), saying so on `err` first.
// Errors: make_tune_snapshot's.
Status make_snapshot(const Config& config, const std::filesystem::path& snapshot,
                     std::uint64_t users, std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directory(snapshot, ec);
  err << "numadir tune: copying " << config.database.path.string() << " and adding " << users
      << " test users (" << backend::password_scheme_name(config.default_password_scheme)
      << (backend::password_scheme_costly(config.default_password_scheme)
              ? ", a costly scheme: one password and stored hash for all"
              : "")
      << ") under " << tune_users_base(config) << " in the copy" << std::endl;
  return make_tune_snapshot(config, snapshot, users);
}

// Writes each candidate's config into `work`: the live config `config_file` serving `snapshot`
// on 127.0.0.1 (any port), with the candidate's [threads] unless it is the current one.
// Returns: a slot per candidate, in their order, with room for `connection_counts` points.
// Errors: derive_config_text's.
Result<std::vector<TuneSlot>> write_candidate_configs(const std::filesystem::path& config_file,
                                                      const std::vector<TuneCandidate>& candidates,
                                                      const std::filesystem::path& snapshot,
                                                      const std::filesystem::path& work,
                                                      std::size_t connection_counts) {
  std::vector<TuneSlot> slots;
  for (const TuneCandidate& candidate : candidates) {
    ConfigDerivation derivation;
    derivation.database_path = snapshot;
    derivation.listen = {"ldap://127.0.0.1:0"};
    derivation.drop_identity = geteuid() != 0;  // Only root can switch to server.user.
    if (!candidate.current) {
      derivation.threads_toml = threads_fragment(candidate);
    }
    Result<std::string> text = derive_config_text(config_file, derivation);
    if (!text.ok()) {
      return text.status();
    }
    TuneSlot slot;
    slot.candidate = candidate;
    slot.config = work / (candidate.name + ".toml");
    std::ofstream(slot.config) << *text;
    slot.runs.resize(connection_counts);
    slot.failed_runs.resize(connection_counts);
    slots.push_back(std::move(slot));
  }
  return slots;
}

// Returns: the threads authrate runs with: --authrate-threads, else one per 4 CPUs (at least 1).
int authrate_threads(const TuneOptions& options) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return options.authrate_threads > 0 ? options.authrate_threads
                                      : static_cast<int>(std::max(1L, (cpus > 0 ? cpus : 1) / 4));
}

// Returns: what every authrate run shares: binds of the test users in turn (tune_snapshot.h)
//   on `threads` threads for the warm-up and the duration; StartTLS, said on `err`, when the
//   config's simple binds require TLS.
AuthrateRun authrate_run(const TuneOptions& options, const Config& config,
                         const std::filesystem::path& authrate, int threads, std::ostream& err) {
  AuthrateRun run;
  run.authrate = authrate;
  run.workload = {"-b",
                  tune_users_base(config),
                  "-f",
                  tune_filter_template(),
                  "--bind-dn-template",
                  tune_bind_dn_template(config),
                  "-w",
                  tune_password_template(config),
                  "--first",
                  "0",
                  "--last",
                  std::to_string(options.users - 1),
                  "-t",
                  std::to_string(threads),
                  "-d",
                  number_text(options.duration_s),
                  "--warmup",
                  number_text(options.warmup_s)};
  if (config.tls.has_value() && config.simple_bind_requires_tls) {
    run.workload.push_back("--starttls");  // The binds need TLS: authrate asks for it.
    err << "numadir tune: tls.simple_bind_requires_tls: authrate uses StartTLS" << std::endl;
  }
  run.seconds = options.duration_s + options.warmup_s;
  return run;
}

// Says on `err` what the rounds will measure.
void announce_rounds(const TuneOptions& options, std::size_t candidates, int authrate_threads,
                     std::ostream& err) {
  std::string counts;
  for (const int c : options.connections) {
    counts += (counts.empty() ? "" : ",") + std::to_string(c);
  }
  err << "numadir tune: " << candidates << (candidates == 1 ? " candidate" : " candidates")
      << ", connections " << counts << ", " << static_cast<std::size_t>(options.repeat)
      << " round(s) of " << number_text(options.duration_s) << " s (after "
      << number_text(options.warmup_s) << " s of warm-up) each, authrate with " << authrate_threads
      << " thread(s)" << std::endl;
}

// Returns: the best candidate's [threads] fragment, its comment saying when and why it was
//   chosen (`summary`) and what to do with it.
std::string best_fragment(const std::vector<TuneResult>& results, std::size_t best,
                          const std::string& summary, const std::string& config_file) {
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&now));
  return threads_fragment(results[best].candidate,
                          "numadir tune, " + std::string(date) + ": best of " +
                              std::to_string(results.size()) + " candidates, " + summary +
                              "\nReplace the [threads] table (and its [[threads.node]] "
                              "tables) of " +
                              config_file + " with what follows.");
}

// Prints the table on `out` and, when there is a best candidate, the rule and its fragment,
// which --write also writes.
// Returns: the exit status: 1 when there is no best or the fragment cannot be written, else 0.
int report_results(const std::vector<TuneResult>& results, const TuneOptions& options,
                   std::ostream& out, std::ostream& err) {
  const std::optional<std::size_t> best = choose_best(results);
  out << format_table(results, options.connections, best);
  if (!best.has_value()) {
    err << "numadir tune: no candidate was measured at every connection count without errors "
           "(see the lines above); no best\n";
    return 1;
  }
  const std::string summary = describe_best(results, options.connections, *best);
  out << "\nbest: " << summary << "\n(rule: " << kBestRule << ")\n\n";
  const std::string fragment = best_fragment(results, *best, summary, options.config.string());
  out << fragment << std::flush;
  if (!options.write.has_value()) {
    return 0;
  }
  std::ofstream file(*options.write, std::ios::trunc);
  file << fragment;
  file.flush();
  if (!file) {
    err << "numadir tune: --write " << options.write->string() << ": cannot be written\n";
    return 1;
  }
  err << "numadir tune: wrote the fragment to " << options.write->string() << "\n";
  return 0;
}

// Draws --plot when it is given (its data and script in `work`); a plot that cannot be drawn is
// said on `err` and changes nothing else.
void plot_results(const std::vector<TuneResult>& results, const TuneOptions& options,
                  const std::filesystem::path& work, std::ostream& err) {
  if (!options.plot.has_value()) {
    return;
  }
  if (const Status plotted =
          draw_plot(results, options.connections, *options.plot, work, options.repeat);
      !plotted.ok()) {
    err << "numadir tune: --plot " << options.plot->string() << ": " << plotted.message()
        << "; no plot drawn\n";
  } else {
    err << "numadir tune: plotted auths/s to " << options.plot->string() << "\n";
  }
}

}  // namespace

int run_tune(const TuneOptions& options, std::ostream& out, std::ostream& err) {
  const auto fail = [&err](const Status& status) {
    err << "numadir tune: " << status.message() << "\n";
    return 1;
  };
  if (const Status checked = check_write_target(options); !checked.ok()) {
    return fail(checked);
  }
  Result<TunePrograms> programs = find_programs(options);
  if (!programs.ok()) {
    return fail(programs.status());
  }
  // A thread plan that does not fit this machine only rules out the current settings; any
  // other mistake in the config stops here.
  const std::optional<LiveConfig> live = compile_live_config(options.config, err);
  if (!live.has_value()) {
    return 1;
  }
  const Config& config = live->config;
  // The live database: there, not served, and from here on only read.
  if (const Status checked = check_tune_database(config); !checked.ok()) {
    return fail(checked);
  }
  std::vector<TuneCandidate> candidates =
      choose_candidates(config, live->outcome, live->thread_errors, options.max_candidates, err);
  if (candidates.empty()) {
    err << "numadir tune: no candidate can run on this machine\n";
    return 1;
  }

  // From here on SIGINT / SIGTERM end the runs, and the copy goes with `work` however tune ends.
  const InterruptGuard guard;
  Result<WorkDir> work = WorkDir::create();
  if (!work.ok()) {
    return fail(work.status());
  }
  const std::filesystem::path snapshot = work->path() / "db";
  if (const Status made = make_snapshot(config, snapshot, options.users, err); !made.ok()) {
    return fail(made);
  }
  Result<std::vector<TuneSlot>> slots = write_candidate_configs(
      options.config, candidates, snapshot, work->path(), options.connections.size());
  if (!slots.ok()) {
    return fail(slots.status());
  }
  const int threads = authrate_threads(options);
  const AuthrateRun run = authrate_run(options, config, programs->authrate, threads, err);
  announce_rounds(options, slots->size(), threads, err);
  run_tune_rounds(options, programs->numadir, run, work->path(), interrupted, *slots, err);
  if (interrupted()) {
    err << "numadir tune: interrupted: every private server is stopped and the copy removed; "
           "nothing is written\n";
    return 130;
  }

  const std::vector<TuneResult> results = tune_results(*slots, options.connections.size());
  const int status = report_results(results, options, out, err);
  plot_results(results, options, work->path(), err);
  return status;
}

}  // namespace numadir::server
