// server/commands/tune_candidates.cc: see tune_candidates.h.
#include "server/commands/tune_candidates.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace numadir::server {
namespace {

// Most listeners per node the grid tries.
constexpr unsigned kMaxGridListeners = 4;

std::string candidate_name(const TuneCandidate& candidate) {
  std::string name = "l" + std::to_string(candidate.nodes.front().listeners) + "-w" +
                     std::to_string(candidate.nodes.front().workers);
  if (!candidate.listener_helps) {
    name += "-nohelp";
  }
  if (!candidate.pin) {
    name += "-nopin";
  }
  return name;
}

std::string plural(std::size_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

// A TOML basic string.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string format_number(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// Returns: the number after `"key": ` in `json` (the first occurrence); nullopt for null.
// Errors: kMalformed when the key is missing or what follows is neither a number nor null.
Result<std::optional<double>> json_number(std::string_view json, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\":";
  std::size_t at = json.find(quoted);
  if (at == std::string_view::npos) {
    return malformed("authrate summary: no \"" + std::string(key) + "\"");
  }
  at += quoted.size();
  while (at < json.size() && json[at] == ' ') {
    ++at;
  }
  if (json.substr(at, 4) == "null") {
    return std::optional<double>();
  }
  const std::string rest(json.substr(at, 40));
  char* end = nullptr;
  const double value = std::strtod(rest.c_str(), &end);
  if (end == rest.c_str()) {
    return malformed("authrate summary: \"" + std::string(key) + "\" is not a number");
  }
  return std::optional<double>(value);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

bool measured_cleanly(const TuneResult& result) {
  if (!result.failure.empty() || result.points.empty()) {
    return false;
  }
  return std::all_of(result.points.begin(), result.points.end(), [](const TunePoint& point) {
    return point.runs > 0 && point.failed_runs == 0 && point.errors == 0;
  });
}

double summed_rate(const TuneResult& result) {
  double sum = 0;
  for (const TunePoint& point : result.points) {
    sum += point.auths_per_sec;
  }
  return sum;
}

double summed_cpu(const TuneResult& result) {
  double sum = 0;
  for (const TunePoint& point : result.points) {
    sum += point.cpu_us_per_auth.value_or(0);
  }
  return sum;
}

}  // namespace

std::vector<TuneCandidate> generate_candidates(const threadpool::Topology& topology,
                                               std::string_view topology_setting) {
  struct NodeShape {
    unsigned node;
    unsigned cores;
    unsigned pus;
  };
  std::vector<NodeShape> shapes;
  unsigned most_cores = 0;
  for (unsigned node = 0; node < topology.node_count(); ++node) {
    const auto pus = static_cast<unsigned>(topology.pus_of_node(node).size());
    if (pus == 0) {
      continue;
    }
    const auto cores = static_cast<unsigned>(topology.core_count(node));
    shapes.push_back({node, cores, pus});
    most_cores = std::max(most_cores, cores);
  }
  std::vector<TuneCandidate> candidates;
  if (shapes.empty()) {
    return candidates;
  }
  // `listeners` 0: the auto count (one per 4 cores); `extra_workers`: workers = PUs + listeners.
  const auto make = [&](unsigned listeners, bool extra_workers, bool helps, bool pin) {
    TuneCandidate candidate;
    candidate.pin = pin;
    candidate.listener_helps = helps;
    candidate.topology = std::string(topology_setting);
    for (const NodeShape& shape : shapes) {
      const unsigned l = listeners == 0 ? std::max(1u, shape.cores / 4)
                                        : std::max(1u, std::min(listeners, shape.cores));
      candidate.nodes.push_back({shape.node, l, shape.pus + (extra_workers ? l : 0)});
    }
    candidate.name = candidate_name(candidate);
    return candidate;
  };
  const auto add = [&](TuneCandidate candidate) {
    for (const TuneCandidate& earlier : candidates) {
      if (same_settings(earlier, candidate)) {
        return;
      }
    }
    candidates.push_back(std::move(candidate));
  };
  add(make(0, false, true, true));
  add(make(0, false, false, true));
  add(make(0, false, true, false));
  const unsigned grid = std::max(1u, std::min(most_cores, kMaxGridListeners));
  for (unsigned listeners = 1; listeners <= grid; ++listeners) {
    add(make(listeners, false, true, true));
    add(make(listeners, true, true, true));
  }
  return candidates;
}

TuneCandidate current_candidate(const Config& config, const threadpool::PlacementPlan* plan) {
  TuneCandidate candidate;
  candidate.name = "current";
  candidate.current = true;
  candidate.dispatcher = config.threads.dispatcher;
  candidate.pin = config.threads.pin;
  candidate.listener_helps = config.threads.listener_helps;
  candidate.topology = config.threads.topology;
  candidate.single_workers = config.server.workers;
  if (config.threads.dispatcher != "single" && plan != nullptr) {
    candidate.pin = plan->pinned;
    for (const threadpool::NodePlan& node : plan->nodes) {
      candidate.nodes.push_back({node.node, static_cast<unsigned>(node.listeners.size()),
                                 static_cast<unsigned>(node.workers.size())});
    }
  }
  return candidate;
}

threadpool::PlacementOptions candidate_placement(const TuneCandidate& candidate) {
  threadpool::PlacementOptions options;
  options.pin = candidate.pin;
  options.nodes = candidate.nodes;
  return options;
}

bool same_settings(const TuneCandidate& a, const TuneCandidate& b) {
  if (a.dispatcher != b.dispatcher || a.topology != b.topology) {
    return false;
  }
  if (a.dispatcher == "single") {
    return a.single_workers == b.single_workers;
  }
  if (a.pin != b.pin || a.listener_helps != b.listener_helps || a.nodes.size() != b.nodes.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    if (a.nodes[i].node != b.nodes[i].node || a.nodes[i].listeners != b.nodes[i].listeners ||
        a.nodes[i].workers != b.nodes[i].workers) {
      return false;
    }
  }
  return true;
}

std::string describe_settings(const TuneCandidate& candidate) {
  if (candidate.dispatcher == "single") {
    return "single, " + (candidate.single_workers == 0
                             ? std::string("a worker per CPU")
                             : plural(candidate.single_workers, "worker"));
  }
  std::string text = "percpu, ";
  const auto counts = [](const threadpool::NodeThreads& node) {
    return plural(node.listeners, "listener") + " + " + plural(node.workers, "worker");
  };
  const bool uniform =
      std::all_of(candidate.nodes.begin(), candidate.nodes.end(), [&](const auto& node) {
        return node.listeners == candidate.nodes.front().listeners &&
               node.workers == candidate.nodes.front().workers;
      });
  if (candidate.nodes.empty()) {
    text += "no threads";
  } else if (uniform) {
    text += plural(candidate.nodes.size(), "node") + " x (" + counts(candidate.nodes.front()) + ")";
  } else {
    for (std::size_t i = 0; i < candidate.nodes.size(); ++i) {
      text += (i == 0 ? "node " : "; node ") + std::to_string(candidate.nodes[i].node) + ": " +
              counts(candidate.nodes[i]);
    }
  }
  text += candidate.pin ? ", pinned" : ", unpinned";
  text += candidate.listener_helps ? ", listeners help" : ", listeners do not help";
  if (!candidate.topology.empty()) {
    text += ", emulated " + candidate.topology;
  }
  return text;
}

std::string threads_fragment(const TuneCandidate& candidate, std::string_view comment) {
  std::ostringstream out;
  std::string_view rest = comment;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    out << "# " << rest.substr(0, end) << "\n";
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
  }
  out << "[threads]\n";
  out << "dispatcher = " << toml_string(candidate.dispatcher) << "\n";
  if (candidate.dispatcher == "single") {
    out << "# The pool's size is server.workers (";
    out << (candidate.single_workers == 0 ? std::string("0: a worker per CPU")
                                          : std::to_string(candidate.single_workers))
        << ").\n";
  } else {
    out << "pin = " << (candidate.pin ? "true" : "false") << "\n";
    out << "listener_helps = " << (candidate.listener_helps ? "true" : "false") << "\n";
  }
  if (!candidate.topology.empty()) {
    out << "topology = " << toml_string(candidate.topology) << "\n";
  }
  if (candidate.dispatcher != "single") {
    for (const threadpool::NodeThreads& node : candidate.nodes) {
      out << "\n[[threads.node]]\nid = " << node.node << "\nlisteners = " << node.listeners
          << "\nworkers = " << node.workers << "\n";
    }
  }
  return out.str();
}

Result<TuneMeasurement> parse_authrate_summary(std::string_view json) {
  TuneMeasurement measurement;
  Result<std::optional<double>> rate = json_number(json, "auths_per_sec");
  if (!rate.ok()) {
    return rate.status();
  }
  const std::size_t latency = json.find("\"latency_ms\":");
  Result<std::optional<double>> p99 =
      latency == std::string_view::npos
          ? Result<std::optional<double>>(malformed("authrate summary: no \"latency_ms\""))
          : json_number(json.substr(latency), "p99");
  if (!p99.ok()) {
    return p99.status();
  }
  const std::size_t errors = json.find("\"errors\":");
  Result<std::optional<double>> total =
      errors == std::string_view::npos
          ? Result<std::optional<double>>(malformed("authrate summary: no \"errors\""))
          : json_number(json.substr(errors), "total");
  if (!total.ok()) {
    return total.status();
  }
  Result<std::optional<double>> cpu = json_number(json, "server_cpu_us_per_auth");
  if (!cpu.ok()) {
    return cpu.status();
  }
  const auto usable = [](const std::optional<double>& value) {
    return value.has_value() && std::isfinite(*value) && *value >= 0 && *value < 1e18;
  };
  if (!usable(*rate) || !usable(*p99) || !usable(*total) || (cpu->has_value() && !usable(*cpu))) {
    return malformed(
        "authrate summary: auths_per_sec, latency_ms.p99, errors.total and "
        "server_cpu_us_per_auth must be numbers from 0 (the last may be null)");
  }
  measurement.auths_per_sec = **rate;
  measurement.p99_ms = **p99;
  measurement.errors = static_cast<std::uint64_t>(**total);
  measurement.cpu_us_per_auth = *cpu;
  return measurement;
}

TunePoint median_point(std::span<const TuneMeasurement> runs, std::size_t failed_runs) {
  TunePoint point;
  point.runs = runs.size();
  point.failed_runs = failed_runs;
  if (runs.empty()) {
    return point;
  }
  std::vector<double> rates;
  std::vector<double> p99s;
  std::vector<double> cpus;
  for (const TuneMeasurement& run : runs) {
    rates.push_back(run.auths_per_sec);
    p99s.push_back(run.p99_ms);
    if (run.cpu_us_per_auth.has_value()) {
      cpus.push_back(*run.cpu_us_per_auth);
    }
    point.errors += run.errors;
  }
  point.auths_per_sec = median(std::move(rates));
  point.p99_ms = median(std::move(p99s));
  if (!cpus.empty()) {
    point.cpu_us_per_auth = median(std::move(cpus));
  }
  return point;
}

std::optional<std::size_t> choose_best(std::span<const TuneResult> results) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!measured_cleanly(results[i])) {
      continue;
    }
    if (!best.has_value()) {
      best = i;
      continue;
    }
    const double rate = summed_rate(results[i]);
    const double best_rate = summed_rate(results[*best]);
    if (rate > best_rate ||
        (rate == best_rate && summed_cpu(results[i]) < summed_cpu(results[*best]))) {
      best = i;
    }
  }
  return best;
}

std::string format_table(std::span<const TuneResult> results, std::span<const int> connections,
                         std::optional<std::size_t> best) {
  std::size_t name_width = 9;  // "candidate"
  for (const TuneResult& result : results) {
    name_width = std::max(name_width, result.candidate.name.size() + 2);
  }
  std::ostringstream out;
  const auto pad = [](std::string text, std::size_t width, bool left) {
    if (text.size() >= width) {
      return text;
    }
    const std::string fill(width - text.size(), ' ');
    return left ? text + fill : fill + text;
  };
  out << pad("candidate", name_width, true) << "  " << pad("conns", 5, false) << "  "
      << pad("auths/s", 9, false) << "  " << pad("p99_ms", 8, false) << "  "
      << pad("cpu_us/auth", 11, false) << "  " << pad("errors", 6, false) << "  settings\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const TuneResult& result = results[i];
    const std::string& name = result.candidate.name;
    for (std::size_t c = 0; c < connections.size(); ++c) {
      const TunePoint* point = c < result.points.size() ? &result.points[c] : nullptr;
      const bool measured = point != nullptr && point->runs > 0;
      std::string errors = "-";
      if (point != nullptr && (point->runs > 0 || point->failed_runs > 0)) {
        errors = std::to_string(point->errors);
        if (point->failed_runs > 0) {
          errors += "+" + std::to_string(point->failed_runs) + "f";
        }
      }
      const std::string cpu = measured && point->cpu_us_per_auth.has_value()
                                  ? format_number("%.1f", *point->cpu_us_per_auth)
                                  : "-";
      out << pad(name, name_width, true) << "  " << pad(std::to_string(connections[c]), 5, false)
          << "  " << pad(measured ? format_number("%.0f", point->auths_per_sec) : "-", 9, false)
          << "  " << pad(measured ? format_number("%.3f", point->p99_ms) : "-", 8, false) << "  "
          << pad(cpu, 11, false) << "  " << pad(errors, 6, false) << "  "
          << describe_settings(result.candidate)
          << (result.failure.empty() ? "" : " (failed: " + result.failure + ")")
          << (best == i ? "  <- best" : "") << "\n";
    }
  }
  return out.str();
}

std::string describe_best(std::span<const TuneResult> results, std::span<const int> connections,
                          std::size_t best) {
  std::string counts;
  for (const int c : connections) {
    counts += (counts.empty() ? "" : ",") + std::to_string(c);
  }
  const double rate = summed_rate(results[best]);
  std::string text = results[best].candidate.name + ": " + format_number("%.0f", rate) +
                     " auths/s summed over " + counts + " connections";
  for (const TuneResult& result : results) {
    if (result.candidate.current && !result.candidate.name.empty() && measured_cleanly(result)) {
      if (&result == &results[best]) {
        text += " (the current settings)";
      } else {
        const double current = summed_rate(result);
        if (current > 0) {
          text +=
              " (" + format_number("%+.1f", 100 * (rate - current) / current) + "% over current)";
        }
      }
    }
  }
  return text;
}

}  // namespace numadir::server
