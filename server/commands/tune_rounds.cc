// server/commands/tune_rounds.cc: see tune_rounds.h.
#include "server/commands/tune_rounds.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace numadir::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kServerStopGrace = std::chrono::milliseconds(30'000);

std::string format_seconds(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (total < 60) {
    return std::to_string(total) + " s";
  }
  return std::to_string(total / 60) + " min " + std::to_string(total % 60) + " s";
}

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

// One tune's rounds (run_tune_rounds), and what they share.
class TuneRounds {
 public:
  TuneRounds(const TuneOptions& options, const std::filesystem::path& numadir,
             const AuthrateRun& run, const std::filesystem::path& work,
             const ChildProcess::Interrupted& interrupted, std::vector<TuneSlot>& slots,
             std::ostream& err)
      : options_(options),
        numadir_(numadir),
        run_(run),
        work_(work),
        interrupted_(interrupted),
        slots_(slots),
        err_(err),
        rounds_(static_cast<std::size_t>(options.repeat)),
        progress_(err, rounds_ * slots.size() * options.connections.size(), rounds_ * slots.size(),
                  run.seconds + 0.2) {}
  TuneRounds(const TuneRounds&) = delete;
  TuneRounds& operator=(const TuneRounds&) = delete;

  void run_all() {
    for (std::size_t round = 0; round < rounds_ && !interrupted_(); ++round) {
      for (std::size_t k = 0; k < slots_.size() && !interrupted_(); ++k) {
        // Each round starts one candidate later, so none is always measured first.
        run_candidate(round, (k + round) % slots_.size());
      }
    }
  }

 private:
  // One round of the candidate at `index`: its server started, a run at each connection count,
  // its server stopped.
  void run_candidate(std::size_t round, std::size_t index) {
    TuneSlot& slot = slots_[index];
    if (!slot.failure.empty()) {
      return;
    }
    const std::string where = "round " + std::to_string(round + 1) + "/" + std::to_string(rounds_) +
                              ", candidate " + std::to_string(index + 1) + "/" +
                              std::to_string(slots_.size()) + " " + slot.candidate.name;
    const std::filesystem::path server_stderr = work_ / (slot.candidate.name + ".stderr");
    const auto start_began = Clock::now();
    Result<RunningServer> server = start_server(numadir_, slot.config, server_stderr, interrupted_);
    if (!server.ok()) {
      if (interrupted_()) {
        return;
      }
      slot.failure = server.status().message();
      err_ << "numadir tune: " << where << ": giving it up: " << slot.failure << std::endl;
      progress_.dropped((rounds_ - round) * options_.connections.size(), rounds_ - round);
      return;
    }
    progress_.started(std::chrono::duration<double>(Clock::now() - start_began).count());
    for (std::size_t c = 0; c < options_.connections.size() && !interrupted_(); ++c) {
      measure_point(slot, c, *server, where);
    }
    if (const int status = server->process->stop(kServerStopGrace); status != 0) {
      err_ << "numadir tune: " << where << ": its server exited " << status
           << " on SIGTERM: " << last_line(server_stderr) << std::endl;
    }
  }

  // One authrate run against `server` at the `c`th connection count, into `slot`.
  void measure_point(TuneSlot& slot, std::size_t c, const RunningServer& server,
                     const std::string& where) {
    const int connections = options_.connections[c];
    progress_.line(where + ", " + std::to_string(connections) + " connections");
    const auto run_began = Clock::now();
    Result<TuneMeasurement> measured =
        measure(run_, server, connections, work_ / "authrate.stderr", interrupted_);
    progress_.ran(std::chrono::duration<double>(Clock::now() - run_began).count());
    if (!measured.ok()) {
      ++slot.failed_runs[c];
      err_ << "numadir tune: " << where << ", " << connections
           << " connections: " << measured.status().message() << std::endl;
      return;
    }
    if (measured->errors > 0) {
      err_ << "numadir tune: " << where << ", " << connections
           << " connections: " << measured->errors << " auth errors" << std::endl;
    }
    slot.runs[c].push_back(*measured);
  }

  const TuneOptions& options_;
  const std::filesystem::path& numadir_;
  const AuthrateRun& run_;
  const std::filesystem::path& work_;
  const ChildProcess::Interrupted& interrupted_;
  std::vector<TuneSlot>& slots_;
  std::ostream& err_;
  const std::size_t rounds_;
  Progress progress_;
};

}  // namespace

void run_tune_rounds(const TuneOptions& options, const std::filesystem::path& numadir,
                     const AuthrateRun& run, const std::filesystem::path& work,
                     const ChildProcess::Interrupted& interrupted, std::vector<TuneSlot>& slots,
                     std::ostream& err) {
  TuneRounds(options, numadir, run, work, interrupted, slots, err).run_all();
}

std::vector<TuneResult> tune_results(const std::vector<TuneSlot>& slots,
                                     std::size_t connection_counts) {
  std::vector<TuneResult> results;
  for (const TuneSlot& slot : slots) {
    TuneResult result;
    result.candidate = slot.candidate;
    result.failure = slot.failure;
    for (std::size_t c = 0; c < connection_counts; ++c) {
      result.points.push_back(median_point(slot.runs[c], slot.failed_runs[c]));
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace numadir::server
