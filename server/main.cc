// numadir: the directory server's command line: `serve` runs the server; the other subcommands
// work on a directory's files directly, except `topology`, which prints the CPU topology and the
// thread placement plan, `stats`, which watches a running server over LDAP, and `tune`, which
// measures thread settings with private servers on a copy of the directory.
//
// Usage errors (no command, an unknown command, a bad option) exit 2, after saying what was
// wrong; an unknown command is named, with the closest command when one is close. `numadir help
// [COMMAND]` and `--help` print to standard output and exit 0, as does `--version`.
#include <hwloc.h>
#include <lmdb.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "server/commands/commands.h"
#include "server/commands/tune_candidates.h"

namespace {

using namespace numadir::server;

constexpr const char* kDefaultConfig = "numadir.toml";
constexpr int kUsageExit = 2;  // commands.h: 2 is a usage error.

// A subcommand and what runs it once its options are parsed.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// -c,--config, with its default shown the same way for every subcommand.
CLI::Option* add_config_option(CLI::App& command, std::filesystem::path& config,
                               const std::string& description = "Config file") {
  config = kDefaultConfig;
  return command.add_option("-c,--config", config, description)->default_str(kDefaultConfig);
}

Command add_serve(CLI::App& app) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* serve = app.add_subcommand("serve", "Run the server in the foreground");
  add_config_option(*serve, options->config);
  serve->add_option("--pidfile", options->pid_file, "Write the process id to this file");
  return {serve, [options] { return run_serve(*options, std::cout, std::cerr); }};
}

Command add_import(CLI::App& app) {
  auto options = std::make_shared<ImportOptions>();
  auto no_progress = std::make_shared<bool>(false);
  CLI::App* import = app.add_subcommand("import", "Load an LDIF file into an empty directory");
  add_config_option(*import, options->config);
  import->add_option("ldif", options->input, "LDIF file, or - for standard input")->required();
  import->add_flag("--no-progress", *no_progress, "Print no progress");
  import->add_flag("--allow-costly-hashes", options->allow_costly_hashes,
                   "Keep userPassword values over the [passwords] cost ceilings (binds refuse "
                   "them without hashing them) instead of refusing the import");
  return {import, [options, no_progress] {
            options->progress = !*no_progress;
            return run_import(*options, std::cout, std::cerr);
          }};
}

Command add_export(CLI::App& app) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* export_cmd = app.add_subcommand("export", "Write every entry as LDIF");
  add_config_option(*export_cmd, options->config);
  export_cmd->add_option("-o,--output", options->output, "Output file (default: stdout)");
  return {export_cmd, [options] { return run_export(*options, std::cout, std::cerr); }};
}

Command add_index(CLI::App& app) {
  auto options = std::make_shared<IndexOptions>();
  CLI::App* index = app.add_subcommand("index", "Rebuild the attribute indexes (or --verify)");
  add_config_option(*index, options->config);
  index->add_flag("--verify", options->verify, "Check the indexes instead of rebuilding");
  return {index, [options] { return run_index(*options, std::cout, std::cerr); }};
}

Command add_passwd(CLI::App& app) {
  struct State {
    PasswdOptions options;
    std::string secret;
    std::string secret_file;
    CLI::Option* secret_option = nullptr;
    CLI::Option* file_option = nullptr;
  };
  auto state = std::make_shared<State>();
  CLI::App* passwd = app.add_subcommand("passwd", "Print a userPassword hash, like slappasswd");
  passwd->set_help_flag("--help", "Print this help message and exit");  // -h is the scheme.
  passwd
      ->add_option("-h,--scheme", state->options.scheme,
                   "SSHA, SSHA256, SSHA384, SSHA512, PBKDF2-SHA256, PBKDF2-SHA512, ARGON2, "
                   "CRYPT")
      ->capture_default_str();
  state->secret_option =
      passwd->add_option("-s,--secret", state->secret, "The password (visible to other users!)");
  state->file_option =
      passwd->add_option("-T,--secret-file", state->secret_file, "Read the password from a file");
  state->secret_option->excludes(state->file_option);
  return {passwd, [state] {
            if (state->secret_option->count() > 0) {
              state->options.secret = state->secret;
            }
            if (state->file_option->count() > 0) {
              state->options.secret_file = state->secret_file;
            }
            return run_passwd(state->options, std::cin, std::cout, std::cerr);
          }};
}

Command add_check_config(CLI::App& app) {
  struct State {
    std::filesystem::path config;
    bool online = false;
  };
  auto state = std::make_shared<State>();
  CLI::App* check = app.add_subcommand(
      "check-config", "Check a config file and its schema; list every mistake with its line");
  add_config_option(*check, state->config);
  check->add_flag("--online", state->online,
                  "Also connect to each [[replication.consumer]]'s provider: TLS, bind, the Sync "
                  "Request control, a base search of searchbase");
  return {check,
          [state] { return run_check_config(state->config, std::cout, std::cerr, state->online); }};
}

Command add_topology(CLI::App& app) {
  struct State {
    std::string synthetic;
    std::filesystem::path config;
    CLI::Option* synthetic_option = nullptr;
    CLI::Option* config_option = nullptr;
  };
  auto state = std::make_shared<State>();
  CLI::App* topology =
      app.add_subcommand("topology", "Print the CPU topology and the thread placement plan");
  state->synthetic_option = topology->add_option(
      "--synthetic", state->synthetic,
      "An hwloc synthetic topology, e.g. \"numa:4 core:8 pu:2\", or an hwloc XML file (*.xml)");
  state->config_option = add_config_option(
      *topology, state->config,
      "Config file whose [threads] to plan; without -c, numadir.toml when there is one here, "
      "else the auto plan");
  return {topology, [state] {
            TopologyOptions options;
            if (state->synthetic_option->count() > 0) {
              options.synthetic = state->synthetic;
            }
            // The plan serve would use from this folder; nothing to plan from: auto.
            std::error_code ec;
            if (state->config_option->count() > 0 || std::filesystem::exists(state->config, ec)) {
              options.config = state->config;
            }
            return run_topology(options, std::cout, std::cerr);
          }};
}

Command add_tune(CLI::App& app) {
  struct State {
    TuneOptions options;
    std::string write;
    std::string plot;
    std::string authrate;
    CLI::Option* write_option = nullptr;
    CLI::Option* plot_option = nullptr;
    CLI::Option* authrate_option = nullptr;
  };
  auto state = std::make_shared<State>();
  TuneOptions& options = state->options;
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
  add_config_option(*tune, options.config);
  tune->add_option("--duration", options.duration_s, "Seconds measured per run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  tune->add_option("--warmup", options.warmup_s, "Seconds of warm-up before each run")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  tune->add_option("--connections", options.connections, "Connection counts, comma separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  tune->add_option("--repeat", options.repeat, "Rounds over every candidate")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  tune->add_option("--users", options.users, "Test users added to the copy")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{10'000'000}));
  tune->add_option("--max-candidates", options.max_candidates,
                   "Measure only the first N candidates (current first; 0: all)")
      ->capture_default_str();
  tune->add_option("--authrate-threads", options.authrate_threads,
                   "authrate's threads (0: one per 4 CPUs)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  state->write_option =
      tune->add_option("--write", state->write, "Write the best [threads] fragment to this file");
  tune->add_flag("--force", options.force, "Let --write overwrite an existing file");
  state->plot_option =
      tune->add_option("--plot", state->plot, "Draw auths/s per candidate to this PNG (gnuplot)");
  state->authrate_option =
      tune->add_option("--authrate", state->authrate,
                       "The authrate program (default: ../perf/authrate beside numadir)");
  return {tune, [state] {
            if (state->write_option->count() > 0) {
              state->options.write = state->write;
            }
            if (state->plot_option->count() > 0) {
              state->options.plot = state->plot;
            }
            if (state->authrate_option->count() > 0) {
              state->options.authrate = state->authrate;
            }
            return run_tune(state->options, std::cout, std::cerr);
          }};
}

Command add_stats(CLI::App& app) {
  struct State {
    StatsOptions options;
    std::string password;
    std::string password_file;
    std::uint64_t count = 0;
    CLI::Option* password_option = nullptr;
    CLI::Option* file_option = nullptr;
    CLI::Option* count_option = nullptr;
    std::string sasl_mechanism;
    CLI::Option* sasl_option = nullptr;
  };
  auto state = std::make_shared<State>();
  StatsOptions& options = state->options;
  CLI::App* stats =
      app.add_subcommand("stats", "Show a running server's counters live, like top (cn=Monitor)");
  stats
      ->add_option("-H,--uri", options.url,
                   "The server's URL: ldap://HOST[:PORT], or ldapi:///PATH "
                   "(ldapi://%2FPATH, ldapi:// for /run/numadir/ldapi) for its Unix socket")
      ->capture_default_str();
  state->sasl_option = stats->add_option(
      "-Y,--sasl-mech", state->sasl_mechanism,
      "SASL mechanism instead of -D/-w: EXTERNAL over ldapi:// (as this process's uid and gid)");
  stats->add_option("-D,--bind-dn", options.bind_dn, "Bind DN (the rootdn)");
  state->password_option = stats->add_option("-w,--password", state->password, "Bind password");
  state->file_option = stats->add_option("-y,--password-file", state->password_file,
                                         "Read the bind password from a file");
  state->password_option->excludes(state->file_option);
  stats->add_option("--interval", options.interval_s, "Seconds between views")
      ->capture_default_str();
  state->count_option = stats->add_option("--count", state->count, "Stop after this many views")
                            ->check(CLI::PositiveNumber);
  CLI::Option* once_option = stats->add_flag("--once", options.once, "One view, then exit");
  once_option->excludes(state->count_option);
  return {stats, [state] {
            if (state->password_option->count() > 0) {
              state->options.password = state->password;
            }
            if (state->file_option->count() > 0) {
              state->options.password_file = state->password_file;
            }
            if (state->count_option->count() > 0) {
              state->options.count = state->count;
            }
            if (state->sasl_option->count() > 0) {
              state->options.sasl_mechanism = state->sasl_mechanism;
            }
            state->options.terminal = isatty(STDOUT_FILENO) != 0;
            return run_stats(state->options, std::cout, std::cerr);
          }};
}

// Returns: "2.9.0" for an hwloc API version (0x00020900).
std::string hwloc_version_text(unsigned version) {
  return std::to_string(version >> 16) + "." + std::to_string((version >> 8) & 0xff) + "." +
         std::to_string(version & 0xff);
}

// Returns: `numadir --version`'s text: numadir's version and build, and the versions of the
// libraries it runs with (and was built with, when they can differ).
std::string version_text() {
  std::string text = "numadir " NUMADIR_VERSION " (" NUMADIR_BUILD_TYPE " build";
  if (std::string_view(NUMADIR_SANITIZE_TEXT).empty()) {
    text += ")\n";
  } else {
    text += ", sanitizers " NUMADIR_SANITIZE_TEXT ")\n";
  }
  text +=
      std::string(OpenSSL_version(OPENSSL_VERSION)) + " (built with " OPENSSL_VERSION_TEXT ")\n";
  int major = 0;
  int minor = 0;
  int patch = 0;
  text +=
      std::string(mdb_version(&major, &minor, &patch)) + " (built with " MDB_VERSION_STRING ")\n";
  text += "hwloc API " + hwloc_version_text(hwloc_get_api_version()) + " (built with hwloc API " +
          hwloc_version_text(HWLOC_API_VERSION) + ")";
  return text;
}

// Returns: the edit distance between `a` and `b` (insertions, deletions, substitutions).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Returns: the command closest to `name` when one is close enough to be a slip (a prefix of at
// least 3 letters, or 1 edit for short names, 2 for longer ones); "" when none is.
std::string closest_command(std::string_view name, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_distance = name.size() <= 4 ? 1 : 2;
  for (const std::string& candidate : names) {
    if (name.size() >= 3 && candidate.starts_with(name)) {
      return candidate;
    }
    if (const std::size_t d = edit_distance(name, candidate); d <= best_distance) {
      if (best.empty() || d < best_distance) {
        best = candidate;
        best_distance = d;
      }
    }
  }
  return best;
}

// Prints the unknown-command error; returns its exit status.
int unknown_command(std::string_view name, const std::vector<std::string>& names) {
  std::cerr << "numadir: unknown command '" << name << "'";
  if (const std::string close = closest_command(name, names); !close.empty()) {
    std::cerr << "; did you mean '" << close << "'?\n";
  } else {
    std::cerr << "; the commands are:";
    for (const std::string& command : names) {
      std::cerr << " " << command;
    }
    std::cerr << "\n";
  }
  std::cerr << "Run 'numadir help' for what each does.\n";
  return kUsageExit;
}

// What comes before CLI11 parses, said better than CLI11 would: no command, `help [COMMAND]`,
// an option before the command, an unknown command. `help COMMAND` becomes `COMMAND --help` in
// `args`, exactly what that prints.
// Returns: the exit status when that settles the run; nullopt to go on and parse `args`.
std::optional<int> screen_arguments(std::vector<std::string>& args, const CLI::App& app,
                                    const std::vector<std::string>& names) {
  if (args.empty()) {
    std::cerr << app.help() << "numadir: a command is required\n";
    return kUsageExit;
  }
  if (args[0] == "help") {
    if (args.size() == 1) {
      std::cout << app.help();
      return 0;
    }
    if (args.size() > 2) {
      std::cerr << "numadir: help takes one command, e.g. 'numadir help import'\n";
      return kUsageExit;
    }
    if (args[1] == "help") {
      std::cout << app.help();
      return 0;
    }
    if (std::find(names.begin(), names.end(), args[1]) == names.end()) {
      return unknown_command(args[1], names);
    }
    args = {args[1], "--help"};  // Exactly what `numadir COMMAND --help` prints.
  } else if (args[0].starts_with("-")) {
    // Before a command only these; CLI11 would say "A subcommand is required".
    if (args[0] != "-h" && args[0] != "--help" && args[0] != "--version") {
      std::cerr << "numadir: unknown option '" << args[0]
                << "' (before a command: --help, --version)\nRun 'numadir help' for the "
                   "commands.\n";
      return kUsageExit;
    }
  } else if (std::find(names.begin(), names.end(), args[0]) == names.end()) {
    return unknown_command(args[0], names);
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"numadir: an LDAPv3 directory server built for authentication load", "numadir"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text());
  app.footer("Run 'numadir help COMMAND' (or 'numadir COMMAND --help') for a command's options.");
  const std::vector<Command> commands = {add_serve(app), add_import(app),   add_export(app),
                                         add_index(app), add_passwd(app),   add_stats(app),
                                         add_tune(app),  add_topology(app), add_check_config(app)};
  std::vector<std::string> names;
  for (const Command& command : commands) {
    names.push_back(command.app->get_name());
  }
  names.push_back("help");

  std::vector<std::string> args(argv + 1, argv + argc);
  if (const std::optional<int> status = screen_arguments(args, app, names)) {
    return *status;
  }

  std::vector<const char*> parse_argv = {argv[0]};
  for (const std::string& arg : args) {
    parse_argv.push_back(arg.c_str());
  }
  try {
    app.parse(static_cast<int>(parse_argv.size()), parse_argv.data());
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);
    return status == 0 ? 0 : kUsageExit;  // --help and --version are not errors.
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) {
      return command.run();
    }
  }
  return kUsageExit;  // require_subcommand(1): not reached.
}
