// server/commands/tune_runs.cc: see tune_runs.h.
#include "server/commands/tune_runs.h"

#include <csignal>
#include <cstdlib>
#include <fstream>

namespace numadir::server {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr auto kServerStartTimeout = std::chrono::seconds(120);
constexpr auto kAuthrateSlack = std::chrono::seconds(60);  // Beyond warm-up + duration.

}  // namespace

std::string last_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::string last;
  while (std::getline(in, line)) {
    if (!line.empty()) {
      last = line;
    }
  }
  return last;
}

Result<RunningServer> start_server(const std::filesystem::path& numadir,
                                   const std::filesystem::path& config,
                                   const std::filesystem::path& stderr_path,
                                   const ChildProcess::Interrupted& interrupted) {
  Result<std::unique_ptr<ChildProcess>> started =
      ChildProcess::start({numadir.string(), "serve", "-c", config.string()}, stderr_path);
  if (!started.ok()) {
    return started.status();
  }
  RunningServer server{std::move(*started), 0};
  const auto deadline = Clock::now() + kServerStartTimeout;
  constexpr std::string_view kListening = "listening on ldap://127.0.0.1:";
  for (;;) {
    Result<std::string> line = server.process->read_line(deadline, interrupted);
    if (!line.ok()) {
      if (line.status().code() == StatusCode::kNotFound) {
        const int status = server.process->wait(milliseconds(5000));
        return Status(StatusCode::kIo, "its server exited (" + std::to_string(status) +
                                           "): " + last_line(stderr_path));
      }
      return Status(line.status().code(), "its server did not listen: " + line.status().message());
    }
    if (const std::size_t at = line->find(kListening); at != std::string::npos) {
      server.port = std::atoi(line->c_str() + at + kListening.size());
      if (server.port > 0) {
        return server;
      }
    }
  }
}

Result<TuneMeasurement> measure(const AuthrateRun& run, const RunningServer& server,
                                int connections, const std::filesystem::path& stderr_path,
                                const ChildProcess::Interrupted& interrupted) {
  std::vector<std::string> argv = {run.authrate.string(),
                                   "-H",
                                   "ldap://127.0.0.1:" + std::to_string(server.port),
                                   "-c",
                                   std::to_string(connections),
                                   "--server-pid",
                                   std::to_string(server.process->pid()),
                                   "--json"};
  argv.insert(argv.end(), run.workload.begin(), run.workload.end());
  Result<std::unique_ptr<ChildProcess>> started = ChildProcess::start(argv, stderr_path);
  if (!started.ok()) {
    return started.status();
  }
  ChildProcess& authrate = **started;
  const auto deadline =
      Clock::now() +
      std::chrono::duration_cast<milliseconds>(std::chrono::duration<double>(run.seconds)) +
      kAuthrateSlack;
  bool told_to_stop = false;
  // On an interrupt authrate is told to stop (SIGINT ends its run early) and still reports.
  Result<std::string> output = authrate.read_all(deadline, [&] {
    if (interrupted && interrupted() && !told_to_stop) {
      authrate.signal(SIGINT);
      told_to_stop = true;
    }
    return false;
  });
  if (!output.ok()) {
    authrate.stop(milliseconds(1000));
    return Status(output.status().code(), "authrate: " + output.status().message());
  }
  const int status = authrate.wait(milliseconds(10'000));
  if (status != 0) {
    return Status(StatusCode::kIo,
                  "authrate exited " + std::to_string(status) + ": " + last_line(stderr_path));
  }
  return parse_authrate_summary(*output);
}

Result<std::filesystem::path> find_authrate(const std::optional<std::filesystem::path>& given,
                                            const std::filesystem::path& numadir) {
  if (given.has_value()) {
    if (std::optional<std::filesystem::path> found = find_program(given->string())) {
      return *found;
    }
    return not_found("--authrate " + given->string() + ": not an executable file");
  }
  const std::filesystem::path dir = numadir.parent_path();
  const std::filesystem::path build_tree = (dir / ".." / "perf" / "authrate").lexically_normal();
  const std::filesystem::path beside = dir / "authrate";
  for (const std::filesystem::path& path : {build_tree, beside}) {
    if (find_program(path.string()).has_value()) {
      return path;
    }
  }
  return not_found("authrate not found (looked for " + build_tree.string() + " and " +
                   beside.string() + "); build it (the perf/authrate target) or give --authrate");
}

Status draw_plot(const std::vector<TuneResult>& results, const std::vector<int>& connections,
                 const std::filesystem::path& png, const std::filesystem::path& work, int rounds) {
  const std::optional<std::filesystem::path> gnuplot = find_program("gnuplot");
  if (!gnuplot.has_value()) {
    return not_found("gnuplot not found (apt-get install gnuplot-nox)");
  }
  const std::filesystem::path data = work / "plot.dat";
  {
    std::ofstream out(data);
    out << "candidate";
    for (const int c : connections) {
      out << " " << c;
    }
    out << "\n";
    for (const TuneResult& result : results) {
      out << result.candidate.name;
      for (std::size_t c = 0; c < connections.size(); ++c) {
        const bool measured = c < result.points.size() && result.points[c].runs > 0;
        out << " " << (measured ? result.points[c].auths_per_sec : 0.0);
      }
      out << "\n";
    }
  }
  const std::filesystem::path absolute = std::filesystem::absolute(png);
  for (const char* terminal : {"pngcairo", "png"}) {  // gnuplot-nox may lack cairo.
    const std::filesystem::path script = work / "plot.gp";
    {
      std::ofstream out(script);
      out << "set terminal " << terminal << " size 900,500 noenhanced\n"
          << "set output \"" << absolute.string() << "\"\n"
          << "set title \"numadir tune: auths/s per candidate (median of " << rounds
          << " rounds)\"\n"
          << "set style data histograms\nset style histogram clustered gap 1\n"
          << "set style fill solid 0.8 border -1\nset ylabel \"auths/s\"\nset yrange [0:*]\n"
          << "set xtics rotate by -30\nset grid ytics\n"
          << "set key outside right title \"connections\"\n"
          << "plot for [i=2:" << connections.size() + 1 << "] \"" << data.string()
          << "\" using i:xtic(1) title columnheader(i)\n";
    }
    Result<std::unique_ptr<ChildProcess>> started =
        ChildProcess::start({gnuplot->string(), script.string()}, work / "gnuplot.stderr");
    if (!started.ok()) {
      return started.status();
    }
    if ((*started)->wait(milliseconds(60'000)) == 0) {
      return Status();
    }
  }
  return Status(StatusCode::kIo, "gnuplot failed: " + last_line(work / "gnuplot.stderr"));
}

}  // namespace numadir::server
