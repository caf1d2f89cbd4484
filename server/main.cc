// numadir: the directory server's command line: `serve` runs the server; the other subcommands
// work on a directory's files directly, except `topology`, which prints the CPU topology and the
// thread placement plan, `stats`, which watches a running server over LDAP, and `tune`, which
// measures thread settings with private servers on a copy of the directory.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <iostream>

#include "server/commands/commands.h"
#include "server/commands/tune_candidates.h"

namespace {

constexpr const char* kDefaultConfig = "numadir.toml";

}  // namespace

int main(int argc, char** argv) {
  using namespace numadir::server;
  CLI::App app{"numadir: an LDAPv3 directory server built for authentication load"};
  app.require_subcommand(1);

  ServeOptions serve_options;
  serve_options.config = kDefaultConfig;
  CLI::App* serve = app.add_subcommand("serve", "Run the server in the foreground");
  serve->add_option("-c,--config", serve_options.config, "Config file")->capture_default_str();
  serve->add_option("--pidfile", serve_options.pid_file, "Write the process id to this file");

  ImportOptions import_options;
  import_options.config = kDefaultConfig;
  bool no_progress = false;
  CLI::App* import = app.add_subcommand("import", "Load an LDIF file into an empty directory");
  import->add_option("-c,--config", import_options.config, "Config file")->capture_default_str();
  import->add_option("ldif", import_options.input, "LDIF file, or - for standard input")
      ->required();
  import->add_flag("--no-progress", no_progress, "Print no progress");
  import->add_flag("--allow-costly-hashes", import_options.allow_costly_hashes,
                   "Keep userPassword values over the [passwords] cost ceilings (binds refuse "
                   "them without hashing them) instead of refusing the import");

  ExportOptions export_options;
  export_options.config = kDefaultConfig;
  CLI::App* export_cmd = app.add_subcommand("export", "Write every entry as LDIF");
  export_cmd->add_option("-c,--config", export_options.config, "Config file")
      ->capture_default_str();
  export_cmd->add_option("-o,--output", export_options.output, "Output file (default: stdout)");

  IndexOptions index_options;
  index_options.config = kDefaultConfig;
  CLI::App* index = app.add_subcommand("index", "Rebuild the attribute indexes (or --verify)");
  index->add_option("-c,--config", index_options.config, "Config file")->capture_default_str();
  index->add_flag("--verify", index_options.verify, "Check the indexes instead of rebuilding");

  PasswdOptions passwd_options;
  std::string secret;
  std::string secret_file;
  CLI::App* passwd = app.add_subcommand("passwd", "Print a userPassword hash, like slappasswd");
  passwd->set_help_flag("--help", "Print this help message and exit");  // -h is the scheme.
  passwd
      ->add_option("-h,--scheme", passwd_options.scheme,
                   "SSHA, SSHA256, SSHA384, SSHA512, PBKDF2-SHA256, PBKDF2-SHA512, ARGON2, "
                   "CRYPT")
      ->capture_default_str();
  CLI::Option* secret_option =
      passwd->add_option("-s,--secret", secret, "The password (visible to other users!)");
  CLI::Option* file_option =
      passwd->add_option("-T,--secret-file", secret_file, "Read the password from a file");
  secret_option->excludes(file_option);

  std::filesystem::path check_path = kDefaultConfig;
  CLI::App* check = app.add_subcommand("check-config", "Check a config file and its schema");
  check->add_option("-c,--config", check_path, "Config file")->capture_default_str();
  bool check_online = false;
  check->add_flag("--online", check_online,
                  "Also connect to each [[replication.consumer]]'s provider: TLS, bind, the Sync "
                  "Request control, a base search of searchbase");

  TopologyOptions topology_options;
  std::string synthetic;
  std::filesystem::path topology_config;
  CLI::App* topology =
      app.add_subcommand("topology", "Print the CPU topology and the thread placement plan");
  CLI::Option* synthetic_option = topology->add_option(
      "--synthetic", synthetic,
      "An hwloc synthetic topology, e.g. \"numa:4 core:8 pu:2\", or an hwloc XML file (*.xml)");
  CLI::Option* topology_config_option = topology->add_option(
      "-c,--config", topology_config, "Config file whose [threads] to plan (default: auto)");

  TuneOptions tune_options;
  tune_options.config = kDefaultConfig;
  std::string tune_write;
  std::string tune_plot;
  std::string tune_authrate;
  CLI::App* tune = app.add_subcommand(
      "tune",
      "Measure thread settings on this machine with private servers on a copy of the "
      "database; print the best [threads]");
  tune->footer(
      "Candidates: the config's own settings (\"current\") and, per NUMA node, 1 to min(cores, "
      "4) listeners with a worker per PU or per PU plus one per listener, and the auto counts "
      "with listener_helps off and with pin off. Each runs as a private `numadir serve` on "
      "127.0.0.1 over a compacted copy of the database with --users test users added (the live "
      "database is only read), one server at a time, driven by authrate at each connection "
      "count, the candidates interleaved over --repeat rounds; each point is the median of its "
      "rounds. Best: " +
      std::string(kBestRule) + ".");
  tune->add_option("-c,--config", tune_options.config, "Config file")->capture_default_str();
  tune->add_option("--duration", tune_options.duration_s, "Seconds measured per run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  tune->add_option("--warmup", tune_options.warmup_s, "Seconds of warm-up before each run")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  tune->add_option("--connections", tune_options.connections, "Connection counts, comma separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  tune->add_option("--repeat", tune_options.repeat, "Rounds over every candidate")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  tune->add_option("--users", tune_options.users, "Test users added to the copy")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{10'000'000}));
  tune->add_option("--max-candidates", tune_options.max_candidates,
                   "Measure only the first N candidates (current first; 0: all)")
      ->capture_default_str();
  tune->add_option("--authrate-threads", tune_options.authrate_threads,
                   "authrate's threads (0: one per 4 CPUs)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  CLI::Option* tune_write_option =
      tune->add_option("--write", tune_write, "Write the best [threads] fragment to this file");
  tune->add_flag("--force", tune_options.force, "Let --write overwrite an existing file");
  CLI::Option* tune_plot_option =
      tune->add_option("--plot", tune_plot, "Draw auths/s per candidate to this PNG (gnuplot)");
  CLI::Option* tune_authrate_option =
      tune->add_option("--authrate", tune_authrate,
                       "The authrate program (default: ../perf/authrate beside numadir)");

  StatsOptions stats_options;
  CLI::App* stats =
      app.add_subcommand("stats", "Show a running server's counters live, like top (cn=Monitor)");
  stats->add_option("-H,--uri", stats_options.url, "The server's LDAP URL")->capture_default_str();
  stats->add_option("-D,--bind-dn", stats_options.bind_dn, "Bind DN (the rootdn)");
  std::string stats_password;
  std::string stats_password_file;
  CLI::Option* stats_password_option =
      stats->add_option("-w,--password", stats_password, "Bind password");
  CLI::Option* stats_file_option = stats->add_option("-y,--password-file", stats_password_file,
                                                     "Read the bind password from a file");
  stats_password_option->excludes(stats_file_option);
  stats->add_option("--interval", stats_options.interval_s, "Seconds between views")
      ->capture_default_str();
  std::uint64_t stats_count = 0;
  CLI::Option* stats_count_option =
      stats->add_option("--count", stats_count, "Stop after this many views")
          ->check(CLI::PositiveNumber);
  CLI::Option* stats_once_option =
      stats->add_flag("--once", stats_options.once, "One view, then exit");
  stats_once_option->excludes(stats_count_option);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }

  if (serve->parsed()) {
    return run_serve(serve_options, std::cout, std::cerr);
  }
  if (import->parsed()) {
    import_options.progress = !no_progress;
    return run_import(import_options, std::cout, std::cerr);
  }
  if (export_cmd->parsed()) {
    return run_export(export_options, std::cout, std::cerr);
  }
  if (index->parsed()) {
    return run_index(index_options, std::cout, std::cerr);
  }
  if (passwd->parsed()) {
    if (secret_option->count() > 0) {
      passwd_options.secret = secret;
    }
    if (file_option->count() > 0) {
      passwd_options.secret_file = secret_file;
    }
    return run_passwd(passwd_options, std::cin, std::cout, std::cerr);
  }
  if (stats->parsed()) {
    if (stats_password_option->count() > 0) {
      stats_options.password = stats_password;
    }
    if (stats_file_option->count() > 0) {
      stats_options.password_file = stats_password_file;
    }
    if (stats_count_option->count() > 0) {
      stats_options.count = stats_count;
    }
    stats_options.terminal = isatty(STDOUT_FILENO) != 0;
    return run_stats(stats_options, std::cout, std::cerr);
  }
  if (tune->parsed()) {
    if (tune_write_option->count() > 0) {
      tune_options.write = tune_write;
    }
    if (tune_plot_option->count() > 0) {
      tune_options.plot = tune_plot;
    }
    if (tune_authrate_option->count() > 0) {
      tune_options.authrate = tune_authrate;
    }
    return run_tune(tune_options, std::cout, std::cerr);
  }
  if (topology->parsed()) {
    if (synthetic_option->count() > 0) {
      topology_options.synthetic = synthetic;
    }
    if (topology_config_option->count() > 0) {
      topology_options.config = topology_config;
    }
    return run_topology(topology_options, std::cout, std::cerr);
  }
  return run_check_config(check_path, std::cout, std::cerr, check_online);
}
