// numadir tune: measures thread settings on this machine before a directory goes live. The live
// config is compiled as serve compiles it and the live database is only read (a compacted copy
// is made, tune_snapshot.h); each candidate (tune_candidates.h) is served by a private `numadir
// serve` (this same executable) on the copy, on 127.0.0.1 only, one server at a time, and
// driven by authrate at each connection count, the candidates interleaved round after round.
// Prints the table and the best candidate's [threads] fragment; writes it (--write) and a plot
// (--plot, gnuplot) on request. Every private server is stopped and the copy removed at the end,
// on an error and on SIGINT / SIGTERM too.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backend/password_scheme.h"
#include "server/commands/child_process.h"
#include "server/commands/commands.h"
#include "server/commands/database_lock.h"
#include "server/commands/server_config.h"
#include "server/commands/tune_candidates.h"
#include "server/commands/tune_runs.h"
#include "server/commands/tune_snapshot.h"
#include "server/formats/config_derive.h"
#include "threadpool/placement.h"
#include "threadpool/topology.h"

namespace numadir::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kServerStopGrace = milliseconds(30'000);

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

std::string format_seconds(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (total < 60) {
    return std::to_string(total) + " s";
  }
  return std::to_string(total / 60) + " min " + std::to_string(total % 60) + " s";
}

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

// What one candidate collected.
struct Slot {
  TuneCandidate candidate;
  std::filesystem::path config;
  std::vector<std::vector<TuneMeasurement>> runs;  // Per connection count.
  std::vector<std::size_t> failed_runs;
  std::string failure;
};

// Progress and the time left, on `err`.
class Progress {
 public:
  Progress(std::ostream& err, std::size_t runs, std::size_t starts, double run_s)
      : err_(err), runs_left_(runs), starts_left_(starts), run_s_(run_s) {}

  void line(const std::string& what) {
    const double left =
        static_cast<double>(runs_left_) * run_s_ + static_cast<double>(starts_left_) * start_s_;
    err_ << "numadir tune: " << what << " (about " << format_seconds(left) << " left)" << std::endl;
  }
  void started(double seconds) {
    start_s_ = seconds;
    starts_left_ -= starts_left_ > 0 ? 1 : 0;
  }
  void ran(double seconds) {
    run_s_ = seconds;
    runs_left_ -= runs_left_ > 0 ? 1 : 0;
  }
  // A candidate given up: its runs and starts will not happen.
  void dropped(std::size_t runs, std::size_t starts) {
    runs_left_ -= std::min(runs, runs_left_);
    starts_left_ -= std::min(starts, starts_left_);
  }

 private:
  std::ostream& err_;
  std::size_t runs_left_;
  std::size_t starts_left_;
  double run_s_;
  double start_s_ = 0.5;
};

}  // namespace

int run_tune(const TuneOptions& options, std::ostream& out, std::ostream& err) {
  const std::string config_file = options.config.string();
  std::error_code ec;
  if (options.write.has_value()) {
    if (std::filesystem::equivalent(*options.write, options.config, ec)) {
      err << "numadir tune: --write " << options.write->string()
          << ": that is the config file itself; tune writes only a [threads] fragment: write it "
             "to another file and replace the config's [threads] with it\n";
      return 1;
    }
    if (std::filesystem::exists(*options.write, ec) && !options.force) {
      err << "numadir tune: --write " << options.write->string()
          << ": the file exists (--force overwrites it)\n";
      return 1;
    }
  }
  const std::filesystem::path numadir = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    err << "numadir tune: /proc/self/exe: " << ec.message() << "\n";
    return 1;
  }
  Result<std::filesystem::path> authrate = find_authrate(options.authrate, numadir);
  if (!authrate.ok()) {
    err << "numadir tune: " << authrate.status().message() << "\n";
    return 1;
  }

  // The config as serve compiles it. A thread plan that does not fit this machine only rules
  // out the current settings; any other mistake stops here.
  Result<Config> loaded = load_config(options.config);
  if (!loaded.ok()) {
    err << "numadir tune: " << loaded.status().message() << "\n";
    return 1;
  }
  const Config& config = *loaded;
  ServerConfigOutcome outcome = compile_server_config(options.config);
  std::vector<std::string> thread_errors;
  std::vector<std::string> other_errors;
  for (const ConfigDiagnostic& error : outcome.errors) {
    (is_thread_error(error) ? thread_errors : other_errors).push_back(error.to_string());
  }
  for (const ConfigDiagnostic& warning : outcome.warnings) {
    err << warning.to_string("warning") << "\n";
  }
  if (!other_errors.empty()) {
    for (const std::string& error : other_errors) {
      err << "numadir tune: " << error << "\n";
    }
    return 1;
  }

  // The live database: there, not served, and from here on only read.
  const std::filesystem::path& database = config.database.path;
  if (!std::filesystem::is_directory(database, ec)) {
    err << "numadir tune: database " << database.string() << ": no such directory\n";
    return 1;
  }
  if (!std::filesystem::exists(database / "data.mdb", ec)) {
    err << "numadir tune: database " << database.string()
        << ": no data.mdb in it (import the directory first)\n";
    return 1;
  }
  Result<std::optional<pid_t>> holder = database_lock_holder(database);
  if (!holder.ok()) {
    err << "numadir tune: " << holder.status().message() << "\n";
    return 1;
  }
  if (holder->has_value()) {
    err << "numadir tune: database " << database.string() << " is in use by numadir serve ("
        << (**holder > 0 ? "pid " + std::to_string(**holder) : std::string("pid unknown"))
        << "): stop it first (tune measures on this machine's CPUs, and would measure it too)\n";
    return 1;
  }

  std::vector<TuneCandidate> candidates =
      choose_candidates(config, outcome, thread_errors, options.max_candidates, err);
  if (candidates.empty()) {
    err << "numadir tune: no candidate can run on this machine\n";
    return 1;
  }

  const InterruptGuard guard;
  Result<WorkDir> work = WorkDir::create();
  if (!work.ok()) {
    err << "numadir tune: " << work.status().message() << "\n";
    return 1;
  }
  const std::filesystem::path snapshot = work->path() / "db";
  std::filesystem::create_directory(snapshot, ec);
  err << "numadir tune: copying " << database.string() << " and adding " << options.users
      << " test users (" << backend::password_scheme_name(config.default_password_scheme)
      << (backend::password_scheme_costly(config.default_password_scheme)
              ? ", a costly scheme: one password and stored hash for all"
              : "")
      << ") under " << tune_users_base(config) << " in the copy" << std::endl;
  if (const Status made = make_tune_snapshot(config, snapshot, options.users); !made.ok()) {
    err << "numadir tune: " << made.message() << "\n";
    return 1;
  }

  std::vector<Slot> slots;
  for (const TuneCandidate& candidate : candidates) {
    ConfigDerivation derivation;
    derivation.database_path = snapshot;
    derivation.listen = {"ldap://127.0.0.1:0"};
    derivation.drop_identity = geteuid() != 0;  // Only root can switch to server.user.
    if (!candidate.current) {
      derivation.threads_toml = threads_fragment(candidate);
    }
    Result<std::string> text = derive_config_text(options.config, derivation);
    if (!text.ok()) {
      err << "numadir tune: " << text.status().message() << "\n";
      return 1;
    }
    Slot slot;
    slot.candidate = candidate;
    slot.config = work->path() / (candidate.name + ".toml");
    std::ofstream(slot.config) << *text;
    slot.runs.resize(options.connections.size());
    slot.failed_runs.resize(options.connections.size());
    slots.push_back(std::move(slot));
  }

  AuthrateRun run;
  run.authrate = *authrate;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int threads = options.authrate_threads > 0
                          ? options.authrate_threads
                          : static_cast<int>(std::max(1L, (cpus > 0 ? cpus : 1) / 4));
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

  std::string counts;
  for (const int c : options.connections) {
    counts += (counts.empty() ? "" : ",") + std::to_string(c);
  }
  const std::size_t rounds = static_cast<std::size_t>(options.repeat);
  err << "numadir tune: " << slots.size() << (slots.size() == 1 ? " candidate" : " candidates")
      << ", connections " << counts << ", " << rounds << " round(s) of "
      << number_text(options.duration_s) << " s (after " << number_text(options.warmup_s)
      << " s of warm-up) each, authrate with " << threads << " thread(s)" << std::endl;
  Progress progress(err, rounds * slots.size() * options.connections.size(), rounds * slots.size(),
                    run.seconds + 0.2);
  for (std::size_t round = 0; round < rounds && !interrupted(); ++round) {
    for (std::size_t k = 0; k < slots.size() && !interrupted(); ++k) {
      // Each round starts one candidate later, so none is always measured first.
      const std::size_t index = (k + round) % slots.size();
      Slot& slot = slots[index];
      if (!slot.failure.empty()) {
        continue;
      }
      const std::string where = "round " + std::to_string(round + 1) + "/" +
                                std::to_string(rounds) + ", candidate " +
                                std::to_string(index + 1) + "/" + std::to_string(slots.size()) +
                                " " + slot.candidate.name;
      const auto start_began = Clock::now();
      Result<RunningServer> server = start_server(
          numadir, slot.config, work->path() / (slot.candidate.name + ".stderr"), interrupted);
      if (!server.ok()) {
        if (interrupted()) {
          break;
        }
        slot.failure = server.status().message();
        err << "numadir tune: " << where << ": giving it up: " << slot.failure << std::endl;
        progress.dropped((rounds - round) * options.connections.size(), rounds - round);
        continue;
      }
      progress.started(std::chrono::duration<double>(Clock::now() - start_began).count());
      for (std::size_t c = 0; c < options.connections.size() && !interrupted(); ++c) {
        progress.line(where + ", " + std::to_string(options.connections[c]) + " connections");
        const auto run_began = Clock::now();
        Result<TuneMeasurement> measured = measure(run, *server, options.connections[c],
                                                   work->path() / "authrate.stderr", interrupted);
        progress.ran(std::chrono::duration<double>(Clock::now() - run_began).count());
        if (!measured.ok()) {
          ++slot.failed_runs[c];
          err << "numadir tune: " << where << ", " << options.connections[c]
              << " connections: " << measured.status().message() << std::endl;
          continue;
        }
        if (measured->errors > 0) {
          err << "numadir tune: " << where << ", " << options.connections[c]
              << " connections: " << measured->errors << " auth errors" << std::endl;
        }
        slot.runs[c].push_back(*measured);
      }
      if (const int status = server->process->stop(kServerStopGrace); status != 0) {
        err << "numadir tune: " << where << ": its server exited " << status
            << " on SIGTERM: " << last_line(work->path() / (slot.candidate.name + ".stderr"))
            << std::endl;
      }
    }
  }
  if (interrupted()) {
    err << "numadir tune: interrupted: every private server is stopped and the copy removed; "
           "nothing is written\n";
    return 130;
  }

  std::vector<TuneResult> results;
  for (const Slot& slot : slots) {
    TuneResult result;
    result.candidate = slot.candidate;
    result.failure = slot.failure;
    for (std::size_t c = 0; c < options.connections.size(); ++c) {
      result.points.push_back(median_point(slot.runs[c], slot.failed_runs[c]));
    }
    results.push_back(std::move(result));
  }
  const std::optional<std::size_t> best = choose_best(results);
  out << format_table(results, options.connections, best);
  int status = 0;
  if (!best.has_value()) {
    err << "numadir tune: no candidate was measured at every connection count without errors "
           "(see the lines above); no best\n";
    status = 1;
  } else {
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&now));
    const std::string summary = describe_best(results, options.connections, *best);
    out << "\nbest: " << summary << "\n(rule: " << kBestRule << ")\n\n";
    const std::string fragment = threads_fragment(
        results[*best].candidate, "numadir tune, " + std::string(date) + ": best of " +
                                      std::to_string(results.size()) + " candidates, " + summary +
                                      "\nReplace the [threads] table (and its [[threads.node]] "
                                      "tables) of " +
                                      config_file + " with what follows.");
    out << fragment << std::flush;
    if (options.write.has_value()) {
      std::ofstream file(*options.write, std::ios::trunc);
      file << fragment;
      file.flush();
      if (!file) {
        err << "numadir tune: --write " << options.write->string() << ": cannot be written\n";
        status = 1;
      } else {
        err << "numadir tune: wrote the fragment to " << options.write->string() << "\n";
      }
    }
  }
  if (options.plot.has_value()) {
    if (const Status plotted =
            draw_plot(results, options.connections, *options.plot, work->path(), options.repeat);
        !plotted.ok()) {
      err << "numadir tune: --plot " << options.plot->string() << ": " << plotted.message()
          << "; no plot drawn\n";
    } else {
      err << "numadir tune: plotted auths/s to " << options.plot->string() << "\n";
    }
  }
  return status;
}

}  // namespace numadir::server
