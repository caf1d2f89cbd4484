// perf/authrate_main.cc: the `authrate` load generator. Runs the auth cycle (search for the
// user, bind as the found DN; see DESIGN.md "What we measure") against an LDAP server from
// several threads, each an AuthWorker with its own epoll loop and connections, prints a line per
// interval and a summary (text or JSON), and with --server-pid the server's CPU per auth and
// peak RSS.
//
//   authrate -H ldap://127.0.0.1:3389 -t 2 -c 32 -d 30 --warmup 5 --server-pid 1234
//   authrate -H ldaps://127.0.0.1:3636 --tls-ca ca.crt --reconnect --tls-resume
//   authrate -H ldap://127.0.0.1:3389 --mode modify -D cn=admin,dc=example,dc=com -w secret
//
// --mode modify measures updates instead: each connection binds once as -D / -w, then, closed
// loop (or at --rate), sends ModifyRequests replacing `description` of a random user in
// [--first, --last] (DN from --bind-dn-template, uid=user%d,<base> by default); the figures
// count modifications where the other modes count auths.
//
// --wrong-percent P makes P% of the auths (drawn per auth from the seeded RNG) bind with a wrong
// password (the right one followed by "-wrong"), in every mode that binds (same, split,
// bind-only, with or without --reconnect). invalidCredentials (49) is the expected answer: such
// an auth completes (auths and auths/s count every completed search+bind cycle, refused or
// not) and is counted as wrong / refused as expected, not as an error. A server that accepts a
// wrong password counts an error (wrong_password_accepted), and any other answer an error under
// its result code.
//
// TLS: ldaps:// URLs (TLS from the first byte) or --starttls (the StartTLS extended operation
// on each new connection, before its first request); --tls-ca to verify the server (without
// it the server's certificate is not checked), --tls-cert/--tls-key for a client certificate,
// --tls-resume to resume each slot's previous session on its next connection, --tls-max-version
// 1.2 to keep to TLS 1.2.
//
// Several servers (a replicated set, as nslcd and SSSD take a URI list):
//
//   authrate -H ldap://10.0.0.1:389 -H ldap://10.0.0.2:389 -c 64 --timeout 5 --json
//   authrate -H "ldap://10.0.0.1 ldap://10.0.0.2,ldap://10.0.0.3" --server-pid 11 --server-pid 12
//
// -H may be repeated and each value may list several URLs (separated by spaces or commas), at
// most 32. Connection i starts on URL i mod n (one that the preflight did not reach is skipped:
// the connection takes the next one that it did), so each thread drives connections to several
// servers. The preflight probes every URL and the run starts if at least one answers; the
// others are reported on standard error. A connection whose server fails (refused connect,
// reset or closed connection, Notice of Disconnection, failed TLS handshake, or with
// --timeout S no connection or no answer within S seconds) moves to the next URL in the list,
// at once (after a full round of failures over every URL it waits 100 ms first, so that a
// run whose servers are all down does not spin), and stays there when the failed server comes
// back, as nslcd and SSSD do. The auth in flight is counted as an error of its kind, as with
// one URL, and each move as a failover of the server left. With several URLs the interval
// lines end with the interval's failovers and each server's auths/s ("failovers 2  by
// server/s 15617 15617"; CSV: failovers,server0_per_sec,...), the summary gives the failovers
// and a line per URL, and the JSON has "failovers" and "per_server": [{"url", "auths" (completed
// there; in split mode counted for the bind's server), "failovers_from", "reachable_at_start"}]
// (both keys also with one URL: 0 and one entry). TLS is per URL (ldaps:// or --starttls, which
// is for ldap:// URLs and then applies to them all), with one --tls-ca / --tls-cert for all;
// the JSON's tls.mode is "mixed" for a mix of ldap:// and ldaps://. --server-pid may be given
// once per local server: the CPU per auth is that of all of them together (no figure if one
// has exited by the end of the run) and the peak RSS their sum.
//
// Exit: 0 when the run completed (auth errors are counted, not fatal); 1 when no server could
// be reached at all or no auth succeeded; 2 for a usage error.
//
// Thread contract: the main thread parses options, starts the workers and is the reporting
// thread (it alone reads the workers' stats and prints); SIGINT / SIGTERM are blocked in every
// thread and taken by the main thread with sigtimedwait, which ends the run early.
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "perf/auth_servers.h"
#include "perf/auth_stats.h"
#include "perf/auth_worker.h"
#include "perf/auth_workload.h"
#include "perf/authrate_report.h"
#include "perf/proc_stat.h"
#include "perf/tls_client.h"

namespace numadir::perf {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kPreflightTimeoutMs = 3000;
constexpr const char* kDefaultUrl = "ldap://127.0.0.1:389";

struct Options {
  WorkloadOptions workload;
  std::vector<std::string> urls;  // -H values as given (each may list several); empty: default.
  std::string hot;
  std::string password_file;
  std::string mode = "same";
  int threads = 1;
  int connections = 16;
  bool reconnect = false;
  bool starttls = false;
  TlsClientOptions tls;
  double rate = 0;
  double warmup_s = 0;
  double duration_s = 10;
  double interval_s = 1;
  std::uint64_t seed = 1;
  double wrong_percent = 0;
  bool json = false;
  bool csv = false;
  double timeout_s = 0;
  std::vector<int> server_pids;
};

int usage_error(const std::string& message) {
  std::fprintf(stderr, "authrate: %s\n", message.c_str());
  return kExitUsage;
}

// Resolves the URL's host and tries one blocking-style connect (and with `tls` one handshake,
// after StartTLS if asked), so that a server that is not there, or that TLS cannot reach, is
// reported once, clearly, instead of as a stream of connect errors. `address_len` is set
// (non-zero) once the name resolved, even when the connect then fails.
// Errors: kIo naming the URL and the reason.
Status resolve_and_probe(const LdapUrl& url, const std::string& text, const TlsClient* tls,
                         sockaddr_storage& address, socklen_t& address_len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return status_error(StatusCode::kIo, "cannot resolve " + text + ": " + gai_strerror(rc));
  }
  std::memcpy(&address, found->ai_addr, found->ai_addrlen);
  address_len = found->ai_addrlen;
  freeaddrinfo(found);

  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return status_error(StatusCode::kIo, std::string("socket: ") + std::strerror(errno));
  }
  int error = 0;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), address_len) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      pollfd wait{fd, POLLOUT, 0};
      if (::poll(&wait, 1, kPreflightTimeoutMs) == 1) {
        socklen_t length = sizeof error;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      } else {
        error = ETIMEDOUT;
      }
    }
  }
  if (error != 0) {
    ::close(fd);
    return status_error(StatusCode::kIo, "cannot connect to " + text + ": " + std::strerror(error));
  }
  Status status;
  if (tls != nullptr) {
    status = probe_tls(*tls, fd, text, kPreflightTimeoutMs);
  }
  ::close(fd);
  return status;
}

// Makes room for `connections` sockets (plus stdio, epoll and the like) under RLIMIT_NOFILE,
// raising the soft limit up to the hard one if needed.
// Errors: kLimitExceeded when the hard limit is too low.
Status raise_fd_limit(int connections) {
  const auto needed = static_cast<rlim_t>(connections) + 64;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= needed) {
    return Status();
  }
  limit.rlim_cur = std::min(needed, limit.rlim_max);
  setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < needed) {
    return limit_exceeded(std::to_string(connections) + " connections need " +
                          std::to_string(needed) + " file descriptors; the hard limit (ulimit " +
                          "-Hn) is " + std::to_string(limit.rlim_max));
  }
  return Status();
}

// Returns: the CPU ticks of every process in `pids`, summed; nullopt when one cannot be read.
std::optional<ProcCpuTicks> read_cpu_ticks_sum(const std::vector<int>& pids) {
  ProcCpuTicks sum{};
  for (const int pid : pids) {
    Result<ProcCpuTicks> ticks = read_proc_cpu_ticks(pid);
    if (!ticks.ok()) {
      return std::nullopt;
    }
    sum.user_ticks += ticks->user_ticks;
    sum.system_ticks += ticks->system_ticks;
  }
  return sum;
}

std::string join(const std::vector<std::string>& texts) {
  std::string out;
  for (const std::string& text : texts) {
    out += (out.empty() ? "" : " ") + text;
  }
  return out;
}

AuthTotals snapshot(const std::vector<std::unique_ptr<WorkerStats>>& stats) {
  AuthTotals totals;
  for (const auto& worker : stats) {
    totals.add_live(*worker);
  }
  return totals;
}

// Returns: each of `texts` parsed (split_url_list's output, in order).
// Errors: kInvalidArgument, the message for usage_error: a URL that does not parse, or an
//   ldaps:// one with `starttls`.
Result<std::vector<LdapUrl>> parse_urls(const std::vector<std::string>& texts, bool starttls) {
  std::vector<LdapUrl> urls;
  for (const std::string& text : texts) {
    Result<LdapUrl> url = parse_ldap_url(text);
    if (!url.ok()) {
      return url.status();
    }
    if (url->ldaps && starttls) {
      return invalid_argument(
          "--starttls is for ldap:// URLs; ldaps:// is TLS from the first byte");
    }
    urls.push_back(std::move(*url));
  }
  return urls;
}

// TLS per URL: one client (CA, certificate, the name to verify) for each URL that uses it.
struct TlsClients {
  std::vector<std::unique_ptr<TlsClient>> by_url;  // nullptr: that URL is in the clear.
  std::string mode_name;  // tls_mode_name() of every URL, or "mixed" when they differ.
};

// Returns: the TLS clients of `urls` (ldaps://, or every one with `starttls`), made from
//   `options` (the --tls-* options).
// Errors: the message for usage_error: a client that cannot be made (CA, certificate or key
//   file), or --tls-* options with no URL that uses TLS.
Result<TlsClients> create_tls_clients(const std::vector<LdapUrl>& urls,
                                      const TlsClientOptions& options, bool starttls) {
  TlsClients tls;
  tls.by_url.resize(urls.size());
  for (std::size_t i = 0; i < urls.size(); ++i) {
    TlsClientOptions tls_options = options;
    tls_options.mode = urls[i].ldaps ? TlsMode::kLdaps
                       : starttls    ? TlsMode::kStartTls
                                     : TlsMode::kNone;
    const std::string_view name = tls_mode_name(tls_options.mode);
    tls.mode_name = i == 0 || tls.mode_name == name ? std::string(name) : "mixed";
    if (tls_options.mode == TlsMode::kNone) {
      continue;
    }
    Result<std::unique_ptr<TlsClient>> client = TlsClient::create(tls_options, urls[i].host);
    if (!client.ok()) {
      return client.status();
    }
    tls.by_url[i] = std::move(*client);
  }
  if (tls.mode_name == "none" && (!options.ca_file.empty() || !options.cert_file.empty() ||
                                  !options.key_file.empty() || options.resume)) {
    return invalid_argument("--tls-* options need an ldaps:// URL or --starttls");
  }
  return tls;
}

// Returns: the workload `options` describe for `mode` (--hot, the modify mode's -D / -w, the
//   --password-file lines, --wrong-percent, the attributes: "1.1" when none are asked). Moves
//   options.workload out.
// Errors: the message for usage_error: an option that does not parse, does not fit `mode`
//   or cannot be read, or a workload AuthWorkload::create refuses.
Result<AuthWorkload> create_workload(Options& options, AuthMode mode) {
  if (!options.hot.empty()) {
    Result<HotSet> hot = parse_hot_set(options.hot);
    if (!hot.ok()) {
      return hot.status();
    }
    options.workload.hot = *hot;
  }
  if (mode == AuthMode::kModify) {
    if (options.workload.modify_bind_dn.empty()) {
      return invalid_argument("--mode modify needs -D (the DN each connection binds as) and -w");
    }
    if (!options.password_file.empty()) {
      return invalid_argument("--mode modify binds as -D with -w: no --password-file");
    }
    options.workload.modify_bind_password = options.workload.password_template;
  } else if (!options.workload.modify_bind_dn.empty()) {
    return invalid_argument("-D is for --mode modify");
  }
  if (!options.password_file.empty()) {
    std::ifstream in(options.password_file);
    if (!in) {
      return invalid_argument("--password-file " + options.password_file + ": " +
                              std::strerror(errno));
    }
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      options.workload.passwords.push_back(std::move(line));
    }
  }
  if (options.wrong_percent > 0 && (mode == AuthMode::kSearchOnly || mode == AuthMode::kModify)) {
    return invalid_argument(
        "--wrong-percent is for the modes that bind as the user (same, split, "
        "bind-only), not " +
        std::string(auth_mode_name(mode)));
  }
  options.workload.wrong_percent = options.wrong_percent;
  if (options.workload.attributes.empty()) {
    options.workload.attributes = {"1.1"};
  }
  return AuthWorkload::create(std::move(options.workload));
}

// Errors: the message for usage_error when the CPU ticks of a --server-pid cannot be read.
Status check_server_pids(const std::vector<int>& pids) {
  for (const int pid : pids) {
    Result<ProcCpuTicks> probe = read_proc_cpu_ticks(pid);
    if (!probe.ok()) {
      return invalid_argument("--server-pid " + std::to_string(pid) + ": " +
                              probe.status().message());
    }
  }
  return Status();
}

// The preflight: probes every URL (resolve_and_probe) and reports on standard error those that
// did not answer. Connections start on those that answered (they may fail over to the others
// later).
// Returns: the servers, in URL order; nullopt when none answered (the run must not start).
std::optional<std::vector<ServerTarget>> preflight(const std::vector<std::string>& url_texts,
                                                   const std::vector<LdapUrl>& urls,
                                                   const TlsClients& tls) {
  std::vector<ServerTarget> targets(urls.size());
  std::vector<Status> probes;
  std::size_t reachable = 0;
  for (std::size_t i = 0; i < urls.size(); ++i) {
    ServerTarget& target = targets[i];
    target.url = url_texts[i];
    target.tls = tls.by_url[i].get();
    probes.push_back(
        resolve_and_probe(urls[i], target.url, target.tls, target.address, target.address_len));
    target.reachable_at_start = probes.back().ok();
    reachable += target.reachable_at_start ? 1 : 0;
  }
  for (std::size_t i = 0; i < urls.size(); ++i) {
    if (probes[i].ok()) {
      continue;
    }
    // With one URL, the message as it always was.
    const char* what = reachable == 0 || urls.size() == 1 ? ""
                       : targets[i].usable() ? " (not used at the start; connections may fail "
                                               "over to it)"
                                             : " (never used)";
    std::fprintf(stderr, "authrate: %s%s\n", probes[i].message().c_str(), what);
  }
  if (reachable == 0) {
    if (urls.size() > 1) {
      std::fprintf(stderr, "authrate: no server answered\n");
    }
    return std::nullopt;
  }
  return targets;
}

// How the auths in flight spread over the threads.
struct SlotLayout {
  bool split = false;   // --mode split: two connections per slot.
  int slots = 0;        // Auths in flight, in total.
  int threads = 0;      // --threads, but no more than slots.
  int connections = 0;  // slots, or 2 * slots in split mode.
};

// Returns: the layout of --connections over --threads for `mode` (one slot per connection, or
//   per two in split mode), with a note on standard error when there are fewer slots than
//   threads.
SlotLayout lay_out_slots(const Options& options, AuthMode mode) {
  SlotLayout layout;
  layout.split = mode == AuthMode::kSplit;
  layout.slots = layout.split ? options.connections / 2 : options.connections;
  layout.threads = std::min(options.threads, layout.slots);
  layout.connections = layout.split ? 2 * layout.slots : layout.slots;
  if (layout.threads < options.threads) {
    std::fprintf(stderr, "authrate: %d threads for %d connections\n", layout.threads,
                 layout.connections);
  }
  return layout;
}

// The worker threads and what they count.
// Thread contract: made and joined by the main thread; each worker runs on its thread of
// `running`, and the main thread (the reporting thread) reads `stats` while they run.
struct Workers {
  std::vector<std::unique_ptr<WorkerStats>> stats;
  std::vector<std::unique_ptr<AuthWorker>> workers;
  std::vector<std::thread> running;
};

// Starts one AuthWorker thread per layout.threads, each with its share of the slots (spread
// as evenly as they go) and of the --rate, its seed drawn from --seed, and stop_fd to end it.
// Requires: `workload` and `servers` outlive the workers; start_ns is the run's start
//   (monotonic_ns()).
Workers start_workers(const Options& options, AuthMode mode, const SlotLayout& layout,
                      const AuthWorkload& workload, const ServerList& servers, int stop_fd,
                      std::int64_t start_ns) {
  Workers out;
  int first_connection = 0;
  for (int i = 0; i < layout.threads; ++i) {
    WorkerConfig config;
    config.workload = &workload;
    config.servers = &servers;
    config.first_connection = first_connection;
    config.timeout_ms = options.timeout_s > 0
                            ? std::max<std::int64_t>(std::llround(options.timeout_s * 1000), 1)
                            : 0;
    config.mode = mode;
    config.slots = layout.slots / layout.threads + (i < layout.slots % layout.threads ? 1 : 0);
    first_connection += layout.split ? 2 * config.slots : config.slots;
    config.reconnect = options.reconnect;
    if (options.rate > 0) {
      config.rate_per_sec = options.rate * config.slots / layout.slots;
      // Stagger the threads' schedules so their sends interleave instead of bunching.
      config.rate_start_ns = start_ns + static_cast<std::int64_t>(i * 1e9 / options.rate);
    }
    config.seed = options.seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(i);
    config.stop_fd = stop_fd;
    out.stats.push_back(std::make_unique<WorkerStats>());
    out.workers.push_back(std::make_unique<AuthWorker>(config, *out.stats.back()));
  }
  for (const std::unique_ptr<AuthWorker>& worker : out.workers) {
    out.running.emplace_back([worker = worker.get()] {
      if (Status status = worker->run(); !status.ok()) {
        std::fprintf(stderr, "authrate: worker: %s\n", status.message().c_str());
      }
    });
  }
  return out;
}

// Makes every worker's run() return (stop_fd readable) and joins their threads.
void stop_workers(Workers& workers, int stop_fd) {
  const std::uint64_t one = 1;
  NUMADIR_CHECK(::write(stop_fd, &one, sizeof one) == sizeof one, "eventfd write failed");
  for (std::thread& thread : workers.running) {
    thread.join();
  }
}

// What the reporting loop measured: the span after warm-up, or the whole run when it stopped
// during warm-up (base then zero, start_ns the run's start).
struct MeasuredSpan {
  bool warmed_up = false;  // The warm-up ended (or there was none).
  AuthTotals base;         // The totals when the span began.
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::optional<ProcCpuTicks> cpu_start;  // --server-pid: the servers' CPU when it began.
};

// Returns: the line of an interval of `span_s` seconds that ends `elapsed_s` after the start,
//   from `current` (the totals now) and `recent` (this interval's part of them).
IntervalLine interval_line(const AuthTotals& current, const AuthTotals& recent, double span_s,
                           double elapsed_s, const char* noun, bool wrong_passwords,
                           std::size_t server_count) {
  IntervalLine line;
  line.noun = noun;
  line.elapsed_s = elapsed_s;
  line.auths_per_sec = static_cast<double>(recent.auths) / span_s;
  line.overall_auths_per_sec = static_cast<double>(current.auths) / line.elapsed_s;
  line.mean_ms = recent.latency.mean() / 1e6;
  line.p99_ms = static_cast<double>(recent.latency.value_at_percentile(99)) / 1e6;
  line.errors_per_sec = static_cast<double>(recent.error_total()) / span_s;
  line.wrong_passwords = wrong_passwords;
  line.wrong_per_sec = static_cast<double>(recent.wrong_password_binds) / span_s;
  line.wrong_refused_per_sec = static_cast<double>(recent.wrong_password_refused) / span_s;
  if (server_count > 1) {
    line.failovers = recent.failovers;
    for (std::size_t server = 0; server < server_count; ++server) {
      line.server_auths_per_sec.push_back(static_cast<double>(recent.server_auths[server]) /
                                          span_s);
    }
  }
  return line;
}

// The reporting thread's part of the run, from start_ns (the workers already running): sleeps
// in sigtimedwait(`signals`) until the next interval line, live line (on a terminal) or end of
// warm-up, prints it, and returns at the end of the run (--warmup + --duration) or on SIGINT /
// SIGTERM. Interval lines go to standard output (standard error with --json), the live line to
// standard error.
// Returns: the span it measured.
MeasuredSpan report_intervals(const Options& options, const sigset_t& signals,
                              const std::vector<std::unique_ptr<WorkerStats>>& stats,
                              const char* noun, std::size_t server_count, std::int64_t start_ns) {
  std::FILE* interval_out = options.json ? stderr : stdout;
  const bool wrong_passwords = options.wrong_percent > 0;
  if (options.csv) {
    std::fputs(interval_csv_header(wrong_passwords, server_count).c_str(), interval_out);
  }
  const auto seconds_ns = [](double s) { return static_cast<std::int64_t>(s * 1e9); };
  const std::int64_t interval_ns = std::max<std::int64_t>(seconds_ns(options.interval_s), 1000);
  const std::int64_t warmup_end_ns = start_ns + seconds_ns(options.warmup_s);
  const std::int64_t end_ns =
      options.duration_s > 0 ? warmup_end_ns + seconds_ns(options.duration_s) : INT64_MAX;
  std::int64_t next_tick_ns = start_ns + interval_ns;
  std::int64_t previous_tick_ns = start_ns;
  MeasuredSpan span;
  span.warmed_up = options.warmup_s <= 0;
  span.start_ns = start_ns;
  AuthTotals previous;
  if (span.warmed_up && !options.server_pids.empty()) {
    span.cpu_start = read_cpu_ticks_sum(options.server_pids);
  }
  // On a terminal, a live line on standard error between the interval lines.
  const bool live = isatty(STDERR_FILENO) == 1;
  constexpr std::int64_t kLiveNs = 250'000'000;
  std::int64_t next_live_ns = start_ns + kLiveNs;
  std::int64_t now_ns = start_ns;
  for (;;) {
    std::int64_t wake_ns = std::min(next_tick_ns, end_ns);
    if (live) {
      wake_ns = std::min(wake_ns, next_live_ns);
    }
    if (!span.warmed_up) {
      wake_ns = std::min(wake_ns, warmup_end_ns);
    }
    const std::int64_t wait_ns = std::max<std::int64_t>(wake_ns - monotonic_ns(), 0);
    const timespec timeout{static_cast<time_t>(wait_ns / 1'000'000'000),
                           static_cast<long>(wait_ns % 1'000'000'000)};
    const int signal = sigtimedwait(&signals, nullptr, &timeout);
    now_ns = monotonic_ns();
    if (signal == SIGINT || signal == SIGTERM) {
      break;
    }
    if (live && now_ns >= next_live_ns && now_ns < next_tick_ns) {
      const AuthTotals current = snapshot(stats);
      std::fprintf(stderr, "\r%7.1f s  %llu %s  %llu errors %s",
                   static_cast<double>(now_ns - start_ns) / 1e9,
                   static_cast<unsigned long long>(current.auths), noun,
                   static_cast<unsigned long long>(current.error_total()),
                   span.warmed_up ? "" : "(warm-up)");
      std::fflush(stderr);
      next_live_ns = now_ns + kLiveNs;
    }
    if (now_ns >= next_tick_ns) {
      if (live) {
        std::fputs("\r\033[K", stderr);  // Clears the live line.
      }
      AuthTotals current = snapshot(stats);
      AuthTotals recent = current;
      recent.subtract(previous);
      const double span_s = static_cast<double>(now_ns - previous_tick_ns) / 1e9;
      previous_tick_ns = now_ns;
      const IntervalLine line =
          interval_line(current, recent, span_s, static_cast<double>(now_ns - start_ns) / 1e9, noun,
                        wrong_passwords, server_count);
      const std::string text = options.csv ? format_interval_csv(line) : format_interval_text(line);
      std::fputs(text.c_str(), interval_out);
      std::fflush(interval_out);
      previous = std::move(current);
      next_tick_ns += interval_ns;
    }
    if (!span.warmed_up && now_ns >= warmup_end_ns) {
      span.base = snapshot(stats);
      span.start_ns = now_ns;
      span.warmed_up = true;
      if (!options.server_pids.empty()) {
        span.cpu_start = read_cpu_ticks_sum(options.server_pids);
      }
    }
    if (now_ns >= end_ns) {
      break;
    }
  }
  if (live) {
    std::fputs("\r\033[K", stderr);
  }
  span.end_ns = now_ns;
  return span;
}

// --server-pid at the end of the measured span, before the workers stop: sums the servers'
// peak RSS into report.server_peak_rss_kib (one that cannot be read is reported on standard
// error and left out).
// Returns: the servers' CPU ticks summed; nullopt with no --server-pid or when one cannot be
//   read.
std::optional<ProcCpuTicks> read_servers_at_end(const std::vector<int>& pids,
                                                AuthrateReport& report) {
  if (pids.empty()) {
    return std::nullopt;
  }
  std::optional<ProcCpuTicks> cpu_end = read_cpu_ticks_sum(pids);
  for (const int pid : pids) {
    Result<std::uint64_t> rss = read_peak_rss_kib(pid);
    if (rss.ok()) {
      report.server_peak_rss_kib = report.server_peak_rss_kib.value_or(0) + *rss;
    } else if (pids.size() == 1) {
      std::fprintf(stderr, "authrate: server peak RSS: %s\n", rss.status().message().c_str());
    } else {
      std::fprintf(stderr, "authrate: server %d peak RSS: %s\n", pid,
                   rss.status().message().c_str());
    }
  }
  return cpu_end;
}

// Sets report.server_cpu_us_per_auth from the servers' CPU over the span, when both ends were
// read and there were auths; otherwise says on standard error why there is no figure (only
// when --server-pid was given).
void set_server_cpu(AuthrateReport& report, const std::optional<ProcCpuTicks>& cpu_start,
                    const std::optional<ProcCpuTicks>& cpu_end, bool server_pids) {
  if (cpu_start && cpu_end && report.totals.auths > 0) {
    const double cpu_us = static_cast<double>(cpu_end->total() - cpu_start->total()) * 1e6 /
                          static_cast<double>(clock_ticks_per_second());
    report.server_cpu_us_per_auth = cpu_us / static_cast<double>(report.totals.auths);
  } else if (server_pids) {
    std::fprintf(stderr, "authrate: no server CPU figure (process gone, or no auths)\n");
  }
}

// Blocks SIGINT and SIGTERM in the calling thread, and so in the threads it starts after.
// Returns: the set, for sigtimedwait.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

// The whole run, in its steps: the options checked (a usage error before anything starts), the
// preflight, the workers started, the intervals reported, the workers stopped, the summary.
// Returns: the exit code (kExitOk, kExitFailed, kExitUsage; see the file comment).
int run(Options& options) {
  // OpenSSL writes to its sockets with write(2), not send(MSG_NOSIGNAL): a server that closes
  // first must be an error counted, not a SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  Result<std::vector<std::string>> url_texts =
      split_url_list(options.urls.empty() ? std::vector<std::string>{kDefaultUrl} : options.urls);
  if (!url_texts.ok()) {
    return usage_error(url_texts.status().message());
  }
  Result<std::vector<LdapUrl>> urls = parse_urls(*url_texts, options.starttls);
  if (!urls.ok()) {
    return usage_error(urls.status().message());
  }
  Result<TlsClients> tls = create_tls_clients(*urls, options.tls, options.starttls);
  if (!tls.ok()) {
    return usage_error(tls.status().message());
  }
  Result<AuthMode> mode = parse_auth_mode(options.mode);
  if (!mode.ok()) {
    return usage_error(mode.status().message());
  }
  Result<AuthWorkload> workload = create_workload(options, *mode);
  if (!workload.ok()) {
    return usage_error(workload.status().message());
  }
  if (*mode == AuthMode::kSplit && options.connections < 2) {
    return usage_error("--mode split needs --connections of at least 2 (search + bind)");
  }
  if (Status pids = check_server_pids(options.server_pids); !pids.ok()) {
    return usage_error(pids.message());
  }

  std::optional<std::vector<ServerTarget>> targets = preflight(*url_texts, *urls, *tls);
  if (!targets) {
    return kExitFailed;
  }
  const ServerList servers(std::move(*targets));
  const SlotLayout layout = lay_out_slots(options, *mode);
  if (Status limit = raise_fd_limit(layout.connections); !limit.ok()) {
    return usage_error(limit.message());
  }

  const sigset_t signals = block_stop_signals();  // Inherited by the workers.
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    std::fprintf(stderr, "authrate: eventfd: %s\n", std::strerror(errno));
    return kExitFailed;
  }
  const std::int64_t start_ns = monotonic_ns();
  Workers workers = start_workers(options, *mode, layout, *workload, servers, stop_fd, start_ns);
  const MeasuredSpan span =
      report_intervals(options, signals, workers.stats, operation_noun(auth_mode_name(*mode)),
                       servers.size(), start_ns);
  AuthrateReport report;
  const std::optional<ProcCpuTicks> cpu_end = read_servers_at_end(options.server_pids, report);
  stop_workers(workers, stop_fd);
  ::close(stop_fd);

  report.totals = snapshot(workers.stats);
  report.totals.subtract(span.base);
  report.duration_s = static_cast<double>(span.end_ns - span.start_ns) / 1e9;
  report.connections = layout.connections;
  report.threads = layout.threads;
  report.mode = std::string(auth_mode_name(*mode));
  report.wrong_percent = options.wrong_percent;
  report.tls = tls->mode_name;
  report.tls_resume = options.tls.resume;
  for (std::size_t i = 0; i < servers.size(); ++i) {
    report.urls.push_back(servers[i].url);
    report.reachable_at_start.push_back(servers[i].reachable_at_start);
  }
  set_server_cpu(report, span.cpu_start, cpu_end, !options.server_pids.empty());
  const std::string summary =
      options.json ? format_summary_json(report) : format_summary_text(report);
  std::fputs(summary.c_str(), stdout);
  std::fflush(stdout);
  if (report.totals.auths == 0) {
    std::fprintf(stderr, "authrate: no %s succeeded against %s (%llu errors)\n",
                 *mode == AuthMode::kModify ? "modification" : "auth", join(*url_texts).c_str(),
                 static_cast<unsigned long long>(report.totals.error_total()));
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace
}  // namespace numadir::perf

int main(int argc, char** argv) {
  using numadir::perf::Options;
  Options options;
  CLI::App app{"authrate: LDAP search+bind load generator (numadir perf/)"};
  app.add_option("-H,--url", options.urls,
                 "server URL, ldap://host:port or ldaps://host:port (default "
                 "ldap://127.0.0.1:389); repeat it, or list several separated by spaces or "
                 "commas, for a set of servers: connections spread over them round-robin and "
                 "fail over to the next one");
  app.add_option("-b,--base", options.workload.base, "search base")->capture_default_str();
  app.add_option("-f,--filter", options.workload.filter_template,
                 "search filter template; %d is the user number")
      ->capture_default_str();
  app.add_option("--first", options.workload.first_user, "first user number")
      ->capture_default_str();
  app.add_option("--last", options.workload.last_user, "last user number")->capture_default_str();
  app.add_option("--hot", options.hot, "X:Y: X% of auths on the first Y% of users");
  auto* password = app.add_option("-w,--password", options.workload.password_template,
                                  "password template; %d is the user number (modify mode: "
                                  "-D's password, as given)")
                       ->capture_default_str();
  app.add_option("-D,--bind-dn", options.workload.modify_bind_dn,
                 "modify mode: the DN each connection binds as, once (e.g. the rootdn)");
  app.add_option("--password-file", options.password_file,
                 "one password per line; line i is user i's")
      ->excludes(password);
  app.add_option("-a,--attrs", options.workload.attributes, "attributes to request")
      ->delimiter(',');
  app.add_option("--bind-dn-template", options.workload.bind_dn_template,
                 "bind-only mode: bind DN template (default uid=user%d,<base>)");
  app.add_option("-t,--threads", options.threads, "worker threads")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("-c,--connections", options.connections, "connections in total")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--mode", options.mode, "same | split | bind-only | search-only | modify")
      ->capture_default_str();
  app.add_flag("--reconnect", options.reconnect, "a new connection for every auth");
  app.add_flag("--starttls", options.starttls,
               "StartTLS on each new connection before its first request (ldap:// URLs)");
  app.add_option("--tls-ca", options.tls.ca_file,
                 "PEM CA file to verify the server's certificate and name against (default: "
                 "the server is NOT verified)");
  app.add_option("--tls-cert", options.tls.cert_file, "PEM client certificate (with --tls-key)");
  app.add_option("--tls-key", options.tls.key_file, "PEM client private key (with --tls-cert)");
  app.add_flag("--tls-resume", options.tls.resume,
               "resume each slot's previous TLS session on its next connection (--reconnect)");
  app.add_option("--tls-max-version", options.tls.max_version,
                 "the newest TLS version offered: 1.2 (its resumption is an abbreviated "
                 "handshake without a key exchange) or 1.3 (default: OpenSSL's, 1.3)")
      ->check(CLI::IsMember({"1.2", "1.3"}));
  app.add_option("--rate", options.rate, "open loop: auths/s in total (0 = closed loop)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", options.warmup_s, "seconds before measuring")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-d,--duration", options.duration_s, "seconds measured (0 = until SIGINT)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("-i,--interval", options.interval_s, "seconds between report lines")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--wrong-percent", options.wrong_percent,
                 "this % of auths (drawn per auth from --seed) bind with a wrong password "
                 "(the right one + \"-wrong\"); invalidCredentials (49) is expected and counted "
                 "as 'refused', not as an error, while accepting it is an error. auths and "
                 "auths/s count every completed search+bind cycle, refused ones included "
                 "(same, split, bind-only)")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  app.add_option("--seed", options.seed, "random seed")->capture_default_str();
  app.add_flag("--json", options.json, "summary as one JSON object (intervals go to stderr)");
  app.add_flag("--csv", options.csv, "interval lines as CSV");
  app.add_option("--server-pid", options.server_pids,
                 "server process: CPU per auth, peak RSS; repeat it for several servers (their "
                 "CPU and peak RSS summed)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", options.timeout_s,
                 "seconds a connection may take to open, or a request to be answered, before "
                 "it is dropped as a timeout error (and fails over); 0 = no limit")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : numadir::perf::kExitUsage;
  }
  return numadir::perf::run(options);
}
