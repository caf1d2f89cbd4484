// server/commands/tune_runs.h: the programs numadir tune runs: a candidate's private `numadir
// serve` (its port read from its "listening on" line), one authrate run against it, and gnuplot
// for --plot; and where authrate is found.
//
// Thread contract: the main thread of `numadir tune` (ChildProcess's contract: it must be the
// process's only thread while it starts one).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/commands/child_process.h"
#include "server/commands/tune_candidates.h"

namespace numadir::server {

// A candidate's private server.
struct RunningServer {
  std::unique_ptr<ChildProcess> process;  // Killed by its destructor if still running.
  int port = 0;
};

// Starts `numadir serve -c config` (its standard error to `stderr_path`) and reads the port of
// its "listening on ldap://127.0.0.1:PORT" line.
// Errors: kIo "its server exited (STATUS): <its last line of stderr>"; kTimeLimitExceeded after
//   two minutes without the line; kIo "... interrupted" when `interrupted` says so.
Result<RunningServer> start_server(const std::filesystem::path& numadir,
                                   const std::filesystem::path& config,
                                   const std::filesystem::path& stderr_path,
                                   const ChildProcess::Interrupted& interrupted);

// What every authrate run of a tune shares.
struct AuthrateRun {
  std::filesystem::path authrate;
  std::vector<std::string> workload;  // -b, -f, templates, users, threads, duration, TLS.
  double seconds = 0;                 // Warm-up and duration: what a run should take.
};

// Runs authrate against `server` with `connections` (--server-pid: the server's CPU per auth;
// its standard error to `stderr_path`). When `interrupted` says so, authrate is sent SIGINT,
// which ends its run early; it still reports.
// Returns: its summary. Errors: kIo "authrate exited N: <its last line of stderr>" (e.g. no auth
//   succeeded), kMalformed for a summary that does not read, kTimeLimitExceeded a minute past
//   the run's time.
Result<TuneMeasurement> measure(const AuthrateRun& run, const RunningServer& server,
                                int connections, const std::filesystem::path& stderr_path,
                                const ChildProcess::Interrupted& interrupted);

// Returns: the authrate to run: `given` (--authrate), else beside `numadir` in the build tree
//   (server/numadir -> perf/authrate), else in numadir's directory.
// Errors: kNotFound naming where it looked.
Result<std::filesystem::path> find_authrate(const std::optional<std::filesystem::path>& given,
                                            const std::filesystem::path& numadir);

// Draws auths/s per candidate and connection count as clustered bars into `png` with gnuplot
// (pngcairo, else png), its data and script in `work`.
// Errors: kNotFound when gnuplot is not installed; kIo with gnuplot's complaint.
Status draw_plot(const std::vector<TuneResult>& results, const std::vector<int>& connections,
                 const std::filesystem::path& png, const std::filesystem::path& work, int rounds);

// Returns: the last non-empty line of the file at `path` ("" when none or unreadable).
std::string last_line(const std::filesystem::path& path);

}  // namespace numadir::server
