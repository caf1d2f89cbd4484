// server/commands/tune_rounds.h: the measuring part of `numadir tune`: round after round, each
// candidate's private server (tune_runs.h) started in turn on the copy, driven by authrate at
// each connection count and stopped, one server at a time; each round starts one candidate
// later, so none is always measured first. What every run gave is kept per candidate, then
// turned into medians (tune_candidates.h).
//
// Thread contract: the main thread of `numadir tune` (tune_runs.h's: the process's only thread
// while a child starts).
#pragma once

#include <cstddef>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "server/commands/child_process.h"
#include "server/commands/commands.h"
#include "server/commands/tune_candidates.h"
#include "server/commands/tune_runs.h"

namespace numadir::server {

// What one candidate collected.
struct TuneSlot {
  TuneCandidate candidate;
  std::filesystem::path config;                    // Its private server's config.
  std::vector<std::vector<TuneMeasurement>> runs;  // Per connection count.
  std::vector<std::size_t> failed_runs;            // Per connection count.
  std::string failure;  // Why it was given up (its server did not start); "" while it runs.
};

// Runs options.repeat rounds over `slots` (each with a run and a failed-run count per
// connection count of `options`), `numadir` serving each candidate, the servers' and
// authrate's standard error in `work`, with the progress and the time left on `err`. A
// candidate whose server does not start is given up (its failure set) for the rounds left; a
// run that fails counts in its slot's failed_runs. Returns early, every server stopped, once
// `interrupted` says so.
void run_tune_rounds(const TuneOptions& options, const std::filesystem::path& numadir,
                     const AuthrateRun& run, const std::filesystem::path& work,
                     const ChildProcess::Interrupted& interrupted, std::vector<TuneSlot>& slots,
                     std::ostream& err);

// Returns: each slot's medians at each of its `connection_counts`, in the slots' order.
std::vector<TuneResult> tune_results(const std::vector<TuneSlot>& slots,
                                     std::size_t connection_counts);

}  // namespace numadir::server
