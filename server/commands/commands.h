// server/commands/commands.h: the numadir subcommands, each a function that returns
// the process exit status (0 success, 1 failure, 2 usage) and reports on the given streams.
//
// Thread contract: each runs on the main thread of a short-lived process.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace numadir::server {

struct ImportOptions {
  std::filesystem::path config;
  std::string input;  // An LDIF file, or "-" for standard input.
  // Progress on standard error: a live bar when it is a terminal, plain lines otherwise.
  bool progress = true;
  // --allow-costly-hashes: keep userPassword values whose cost is over a [passwords] ceiling
  // (binds then refuse them without hashing them) instead of refusing the import.
  bool allow_costly_hashes = false;
};
// Loads an LDIF file into an empty directory, in one transaction: a bad record aborts the
// import with its line and reason, and nothing is committed. So does a userPassword value over
// a cost ceiling (password_cost.h), unless allow_costly_hashes: then it is kept, and the values
// kept are counted on `err`.
int run_import(const ImportOptions& options, std::ostream& out, std::ostream& err);

struct ExportOptions {
  std::filesystem::path config;
  std::string output = "-";  // A file, or "-" for standard output.
};
// Writes every entry (parents first) as LDIF that numadir import and slapadd accept.
int run_export(const ExportOptions& options, std::ostream& out, std::ostream& err);

struct IndexOptions {
  std::filesystem::path config;
  bool verify = false;  // Check instead of rebuilding.
};
int run_index(const IndexOptions& options, std::ostream& out, std::ostream& err);

struct PasswdOptions {
  std::string scheme = "SSHA512";
  std::optional<std::string> secret;       // -s: the password on the command line.
  std::optional<std::string> secret_file;  // -T: the password is the file's first line.
};
// Prints a userPassword value for a password, like slappasswd.
int run_passwd(const PasswdOptions& options, std::istream& in, std::ostream& out,
               std::ostream& err);

struct ServeOptions {
  std::filesystem::path config;
  std::filesystem::path pid_file;  // Empty: none.
};
// Runs the server in the foreground until SIGTERM or SIGINT; prints one line per bound listen
// URL ("numadir: listening on ldap://127.0.0.1:389 ...") once it accepts connections. Holds
// database.path/numadir.lock for its whole life (database_lock.h): exits 1 when another server
// holds it.
int run_serve(const ServeOptions& options, std::ostream& out, std::ostream& err);

// Loads the config, the schema files it names and opens nothing else; reports every problem.
// With `online` (--online), then connects to each [[replication.consumer]]'s provider as the
// consumer would (TLS, bind), and checks that it offers the Sync Request control and that the
// bind identity can read searchbase: one line per consumer on `out` ("replication.consumer
// rid=1: ldap://...: ok, ..."), or on `err` for one that fails. Exits 1 on any failure.
int run_check_config(const std::filesystem::path& config, std::ostream& out, std::ostream& err,
                     bool online = false);

struct TuneOptions {
  std::filesystem::path config;
  double duration_s = 5;  // Measured per run, after warmup_s.
  double warmup_s = 1;
  std::vector<int> connections = {16, 64};
  int repeat = 3;                  // Rounds; each point is the median of its rounds.
  std::uint64_t users = 1000;      // Test users added to the copy.
  std::size_t max_candidates = 0;  // 0: every candidate; else the first N (current first).
  int authrate_threads = 0;        // 0: one per 4 CPUs (at least one).
  std::optional<std::filesystem::path> write;     // Where to write the best fragment.
  bool force = false;                             // --write may overwrite an existing file.
  std::optional<std::filesystem::path> plot;      // A PNG of auths/s (gnuplot).
  std::optional<std::filesystem::path> authrate;  // None: beside numadir in the build tree.
};
// Measures thread settings on this machine (server/commands/tune_candidates.h has the
// candidates and the rule for the best) with private servers on a copy of the database, which
// it only reads; prints the table and the best [threads] fragment. Exits 1 on bad input (a
// missing database, a server holding it, no candidate that fits this machine, --write to an
// existing file without --force, authrate missing) or when no candidate ran without errors,
// 130 when interrupted (SIGINT / SIGTERM), 2 for bad options.
int run_tune(const TuneOptions& options, std::ostream& out, std::ostream& err);

struct StatsOptions {
  std::string url = "ldap://127.0.0.1:389";
  std::string bind_dn;                       // -D; empty: anonymous (cn=Monitor is then hidden).
  std::optional<std::string> password;       // -w
  std::optional<std::string> password_file;  // -y: the file's contents, less a final newline.
  // -Y: a SASL mechanism instead of a simple bind; only "EXTERNAL" (any case), over ldapi://
  // (the identity is the process's uid and gid), and never with -D, -w or -y.
  std::optional<std::string> sasl_mechanism;
  double interval_s = 1.0;
  std::optional<std::uint64_t> count;  // Stop after this many views; none: until interrupted.
  bool once = false;                   // One view (rates over one interval), then exit.
  bool terminal = false;               // Redraw in place (ANSI) instead of printing blocks.
};
// Reads cn=Monitor of a running server every interval and prints a top-like view: auths/s,
// requests/s per listener and per worker, queue depths, CPU% per thread. Exits 1 when the
// server cannot be reached or read (cn=Monitor is for the rootdn only), 2 for bad options
// (-Y other than EXTERNAL, -Y EXTERNAL with -D, -w or -y or with a URL other than ldapi://).
int run_stats(const StatsOptions& options, std::ostream& out, std::ostream& err);

struct TopologyOptions {
  std::optional<std::string> synthetic;         // An hwloc synthetic description or XML file.
  std::optional<std::filesystem::path> config;  // Its [threads] section; none: auto.
};
// Prints the topology (this machine's, or `synthetic`) and the thread placement plan. Exits 1
// when the synthetic description is bad (with hwloc's complaint), the config cannot be loaded
// or its [threads] does not fit the topology.
int run_topology(const TopologyOptions& options, std::ostream& out, std::ostream& err);

}  // namespace numadir::server
