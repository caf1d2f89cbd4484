// numadir topology: print the CPU topology (this machine's or an hwloc synthetic one) and the
// thread placement plan the server would use, from the config's [threads] or auto.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "server/commands/commands.h"
#include "server/formats/config.h"
#include "threadpool/placement.h"
#include "threadpool/topology.h"

namespace numadir::server {
namespace {

// Returns: what hwloc says about a synthetic description it rejects, or "" when it says
// nothing. hwloc explains only when HWLOC_SYNTHETIC_VERBOSE is set, and then only on stderr, so
// the description is tried again with the variable set and fd 2 sent to a temporary file.
// Changing the environment and fd 2 is safe here only because this command runs on the main
// thread of a short-lived process, and only on this error path.
std::string hwloc_complaint(const std::string& description) {
  const char* previous = std::getenv("HWLOC_SYNTHETIC_VERBOSE");
  const std::string saved_value = previous != nullptr ? previous : "";
  std::FILE* capture = std::tmpfile();
  if (capture == nullptr) {
    return "";
  }
  std::fflush(stderr);
  const int saved_stderr = dup(STDERR_FILENO);
  if (saved_stderr < 0 || dup2(fileno(capture), STDERR_FILENO) < 0) {
    if (saved_stderr >= 0) {
      close(saved_stderr);
    }
    std::fclose(capture);
    return "";
  }
  setenv("HWLOC_SYNTHETIC_VERBOSE", "1", 1);
  (void)threadpool::Topology::synthetic(description);
  std::fflush(stderr);
  dup2(saved_stderr, STDERR_FILENO);
  close(saved_stderr);
  if (previous != nullptr) {
    setenv("HWLOC_SYNTHETIC_VERBOSE", saved_value.c_str(), 1);
  } else {
    unsetenv("HWLOC_SYNTHETIC_VERBOSE");
  }

  std::string text;
  std::rewind(capture);
  char buffer[512];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), capture)) > 0 && text.size() < 4096) {
    text.append(buffer, n);
  }
  std::fclose(capture);
  // One line, whatever hwloc wrote.
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      if (!line.empty() && line.back() != ' ') {
        line += "; ";
      }
    } else {
      line += c;
    }
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == ';')) {
    line.pop_back();
  }
  return line;
}

}  // namespace

int run_topology(const TopologyOptions& options, std::ostream& out, std::ostream& err) {
  std::optional<Config> config;
  if (options.config.has_value()) {
    auto loaded = load_config(*options.config);
    if (!loaded.ok()) {
      err << "numadir topology: " << loaded.status().message() << "\n";
      return 1;
    }
    config = *std::move(loaded);
  }

  // --synthetic, else the config's threads.topology, else this machine.
  std::optional<std::string> emulated = options.synthetic;
  if (!emulated.has_value() && config.has_value() && !config->threads.topology.empty()) {
    emulated = config->threads.topology;
  }
  auto topology = emulated.has_value() ? threadpool::Topology::emulated(*emulated)
                                       : threadpool::Topology::detect();
  if (!topology.ok()) {
    err << "numadir topology: " << topology.status().message();
    if (emulated.has_value() && !emulated->ends_with(".xml") &&
        topology.status().code() == StatusCode::kInvalidArgument) {
      if (const std::string complaint = hwloc_complaint(*emulated); !complaint.empty()) {
        err << ": " << complaint;
      }
    }
    err << "\n";
    return 1;
  }
  out << topology->describe();

  threadpool::PlacementOptions placement;
  if (config.has_value()) {
    if (config->threads.dispatcher == "single") {
      out << "dispatcher: single: one listener, one mutex+condvar queue, one unpinned pool of "
          << (config->server.workers != 0 ? std::to_string(config->server.workers)
                                          : std::string("auto"))
          << " workers (server.workers); no placement\n";
      return 0;
    }
    placement = placement_options(*config, *topology);
  }
  out << "dispatcher: percpu" << (config.has_value() ? "" : " (auto: no config given)") << "\n";
  auto plan = threadpool::plan_placement(*topology, placement);
  if (!plan.ok()) {
    err << "numadir topology: ";
    if (config.has_value()) {
      err << options.config->string() << ": threads.node: ";
    }
    err << plan.status().message() << "\n";
    return 1;
  }
  out << plan->to_table();
  return 0;
}

}  // namespace numadir::server
