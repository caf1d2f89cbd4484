// numadir serve: locks the database (numadir.lock: one server per database), opens the
// directory, starts the listeners and workers, and runs until SIGTERM or SIGINT. Foreground;
// tells systemd when it is ready (Type=notify) and writes a pid file on request.
#include <grp.h>
#include <signal.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cstdio>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include "base/check.h"
#include "listener/frontend.h"
#include "server/commands/commands.h"
#include "server/commands/database_lock.h"
#include "server/commands/server_config.h"
#include "server/formats/config.h"
#include "server/monitoring/access_log.h"
#include "server/monitoring/logging_handler.h"
#include "server/monitoring/metrics.h"
#include "server/monitoring/metrics_server.h"
#include "server/monitoring/monitor.h"
#include "server/operations/operation_handler.h"
#include "server/replication/consumer.h"
#include "server/replication/sync_provider.h"
#include "threadpool/placement.h"

namespace numadir::server {
namespace {

// sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET ("@" = abstract namespace).
void notify_systemd(const char* state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0' || std::strlen(path) >= sizeof(sockaddr_un::sun_path)) {
    return;
  }
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return;
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path, sizeof(address.sun_path) - 1);
  if (address.sun_path[0] == '@') {
    address.sun_path[0] = '\0';
  }
  const socklen_t length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + std::strlen(path));
  sendto(fd, state, std::strlen(state), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&address),
         length);
  ::close(fd);
}

// Switches to the compiled server.user / server.group (after the ports are bound, so ports
// below 1024 work). Errors: a refused setgid/setuid.
Status drop_privileges(const ServerConfig& compiled) {
  if (!compiled.uid.has_value() && !compiled.gid.has_value()) {
    return Status();
  }
  const gid_t gid = compiled.gid.value_or(getgid());
  const uid_t uid = compiled.uid.value_or(getuid());
  // Group first: after setuid the process may no longer change its group.
  if (getegid() != gid && (setgroups(0, nullptr) != 0 || setgid(gid) != 0)) {
    return Status(StatusCode::kIo, "server.group: setgid: " + std::string(std::strerror(errno)));
  }
  if (geteuid() != uid && setuid(uid) != 0) {
    return Status(StatusCode::kIo, "server.user: setuid: " + std::string(std::strerror(errno)));
  }
  return Status();
}

std::size_t online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<std::size_t>(n) : 1;
}

// The operation handler's options from the compiled config (cn=Monitor, the provider and the
// access log, made in run_serve, are set there).
HandlerOptions handler_options_from(const ServerConfig& compiled) {
  const Config& config = compiled.config;
  const ServerSettings& settings = config.server;
  HandlerOptions handler_options;
  handler_options.root_dn = settings.root_dn;
  handler_options.root_password = settings.root_password;
  handler_options.allow_cleartext_passwords = config.allow_cleartext_passwords;
  handler_options.password_policy = config.password_policy;
  handler_options.default_policy_dn = config.default_policy_dn;
  handler_options.policy_use_lockout = config.policy_use_lockout;
  handler_options.failure_flush_ms = config.failure_flush_ms;
  handler_options.clear_flush_ms = config.clear_flush_ms;
  handler_options.default_password_scheme = config.default_password_scheme;
  handler_options.allow_unauthenticated_bind = settings.allow_unauthenticated_bind;
  handler_options.size_limit_anonymous = settings.size_limit;
  handler_options.size_limit_users = settings.size_limit;
  handler_options.size_limit_paged = settings.size_limit_paged;
  handler_options.time_limit_s = settings.time_limit_s;
  handler_options.vendor_version = "numadir " NUMADIR_VERSION;
  handler_options.access = compiled.access.get();
  // TLS: the certificate and key were read by the compile (and are read again on SIGHUP).
  if (compiled.tls != nullptr) {
    handler_options.tls = true;
    handler_options.external_map = config.external_map;
  }
  handler_options.simple_bind_requires_tls = config.simple_bind_requires_tls;
  handler_options.external_rules = compiled.external_rules.get();
  for (const listener::ListenUrl& url : settings.listen) {
    handler_options.ldapi = handler_options.ldapi || url.is_local();
  }
  handler_options.password_limits = config.password_limits;
  for (const ReplicationConsumerConfig& consumer : config.replication_consumers) {
    handler_options.replicated.push_back({consumer.searchbase, consumer.updateref.to_string()});
  }
  return handler_options;
}

// The listeners' and pools' options from the compiled config (its placement plan is moved
// out), and in `threads_summary` the line serve prints of them.
listener::FrontendOptions frontend_options_from(ServerConfig& compiled, listener::TlsContext* tls,
                                                bool stamp_requests, std::string& threads_summary) {
  const Config& config = compiled.config;
  const ServerSettings& settings = config.server;
  listener::FrontendOptions frontend_options;
  frontend_options.urls = settings.listen;
  frontend_options.queue_capacity = settings.queue_capacity;
  frontend_options.limits.max_connections = settings.max_connections;
  frontend_options.limits.max_pdu_bytes = settings.max_pdu_bytes;
  frontend_options.limits.max_outstanding_per_connection = settings.max_outstanding_per_connection;
  frontend_options.limits.idle_timeout_s = settings.idle_timeout_s;
  frontend_options.limits.max_output_bytes = settings.max_output_bytes;
  frontend_options.limits.write_timeout_s = settings.write_timeout_s;
  frontend_options.tls = tls;
  // Each request stamped with when its bytes were read: the metrics' latencies start there.
  frontend_options.stamp_requests = stamp_requests;
  // ldapi:// socket files: made (and chown'ed) before the privilege drop below.
  frontend_options.unix_socket.mode = static_cast<mode_t>(settings.ldapi_mode);
  frontend_options.unix_socket.owner = compiled.ldapi_uid;
  frontend_options.unix_socket.group = compiled.ldapi_gid;
  if (config.threads.dispatcher == "single") {
    frontend_options.dispatcher = listener::Dispatcher::kSingle;
    frontend_options.listeners = 1;
    frontend_options.workers = settings.workers != 0 ? settings.workers : online_cpus();
    threads_summary = "single dispatcher: 1 listener, " + std::to_string(frontend_options.workers) +
                      " unpinned workers";
  } else {
    // Planned by the compile (placement_options on this machine's topology).
    NUMADIR_DCHECK(compiled.plan.has_value(), "a percpu config compiled without a plan");
    threadpool::PlacementPlan& plan = *compiled.plan;
    std::size_t listeners = 0;
    std::size_t workers = 0;
    for (const threadpool::NodePlan& node : plan.nodes) {
      listeners += node.listeners.size();
      workers += node.workers.size();
    }
    threads_summary = "percpu: " + std::to_string(plan.nodes.size()) + " node(s), " +
                      std::to_string(listeners) + " listeners, " + std::to_string(workers) +
                      " workers, " + (plan.pinned ? "pinned" : "unpinned") +
                      (config.threads.listener_helps ? ", listeners help" : "");
    frontend_options.plan = std::move(plan);
    frontend_options.listeners_help = config.threads.listener_helps;
  }
  return frontend_options;
}

// Waits for SIGTERM or SIGINT (`signals`, blocked on every thread); on SIGHUP reopens the
// access log and reloads the TLS certificates (the listeners' and the metrics port's).
void wait_for_stop(const sigset_t& signals, AccessLog* access_log, listener::TlsContext* tls,
                   MetricsServer* metrics_server, bool metrics_tls, std::ostream& out,
                   std::ostream& err) {
  for (;;) {
    int signal_number = 0;
    if (sigwait(&signals, &signal_number) != 0) {
      continue;
    }
    if (signal_number == SIGHUP) {
      if (access_log != nullptr) {
        if (const Status reopened = access_log->reopen(); !reopened.ok()) {
          err << "numadir serve: SIGHUP: " << reopened.message() << "\n";
        }
      }
      if (tls != nullptr) {
        // New connections get the new certificate; open ones keep theirs.
        if (const Status reloaded = tls->reload(); !reloaded.ok()) {
          err << "numadir serve: SIGHUP: " << reloaded.message()
              << " (keeping the previous certificate)\n";
        } else {
          out << "numadir: SIGHUP: TLS certificate and key reloaded" << std::endl;
        }
      }
      if (metrics_server != nullptr && metrics_tls) {
        // The metrics port's own context, from the same files.
        if (const Status reloaded = metrics_server->reload_tls(); !reloaded.ok()) {
          err << "numadir serve: SIGHUP: metrics: " << reloaded.message()
              << " (keeping the previous certificate)\n";
        }
      }
      continue;
    }
    break;
  }
}

// What the metrics endpoint reads, at each scrape, of the running server's parts (each outlives
// the endpoint).
MetricsSources metrics_sources(const Monitor& monitor, const OperationHandler& operations,
                               const OperationMetrics& operation_metrics,
                               const backend::Directory& directory, const AccessLog* access_log,
                               bool password_policy) {
  MetricsSources sources;
  sources.version = NUMADIR_VERSION;
  sources.monitor = &monitor;
  sources.operations = [&operations] { return operations.operation_totals(); };
  sources.operation_metrics = &operation_metrics;
  sources.writer = [&dir = directory] { return dir.writer_stats(); };
  sources.access_log = access_log;
  if (password_policy) {
    sources.lockouts = [&operations] { return operations.password_lockouts(); };
  }
  sources.context_csn = [&dir = directory]() -> std::string {
    std::unique_ptr<backend::ReadTxn> txn = dir.begin_read();
    Result<std::string> csn = dir.context_csn(*txn);
    return csn.ok() ? *csn : std::string();
  };
  return sources;
}

// Starts the metrics endpoint of `config.metrics`, rendering `metrics` (which outlives it).
Result<std::unique_ptr<MetricsServer>> start_metrics_server(const Config& config,
                                                            Metrics& metrics) {
  MetricsRender render = [&rendered = metrics](ExpositionFormat format, std::string& text) {
    rendered.render(format, text);
  };
  Result<MetricsServerOptions> metrics_options = metrics_server_options(config.metrics, config.tls);
  if (!metrics_options.ok()) {
    return metrics_options.status();
  }
  return MetricsServer::start(*metrics_options, std::move(render));
}

// Starts each [[replication.consumer]] on its own thread, writing into `directory`; what they
// say goes to the access log (when on) and to standard error.
std::vector<std::unique_ptr<replication::Consumer>> start_consumers(const Config& config,
                                                                    backend::Directory& directory,
                                                                    AccessLog* access_log) {
  std::vector<std::unique_ptr<replication::Consumer>> consumers;
  for (const ReplicationConsumerConfig& consumer : config.replication_consumers) {
    consumers.push_back(std::make_unique<replication::Consumer>(
        consumer, directory, [log = access_log](const std::string& line) {
          if (log != nullptr) {
            log->message(line);
          }
          std::fprintf(stderr, "numadir: %s\n", line.c_str());  // From the consumer's thread.
        }));
    consumers.back()->start();
  }
  return consumers;
}

// Blocks SIGTERM, SIGINT and SIGHUP (taken by sigwait on the calling thread only: called before
// any thread starts, each inheriting the mask) and ignores SIGPIPE. Returns: the blocked set.
sigset_t block_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

// Makes the database folder `path` if missing and takes its lock (DatabaseLock).
// Errors: "database PATH: <reason>" when the folder cannot be made; DatabaseLock::acquire's.
Result<DatabaseLock> lock_database(const std::filesystem::path& path) {
  std::error_code created;
  std::filesystem::create_directories(path, created);
  if (created) {
    return Status(StatusCode::kIo, "database " + path.string() + ": " + created.message());
  }
  return DatabaseLock::acquire(path);
}

// [replication.provider]'s settings, with the database's session log and server id.
replication::SyncProviderOptions sync_provider_options(const Config& config) {
  replication::SyncProviderOptions provider_options;
  provider_options.queue_changes = config.replication_provider.queue_changes;
  provider_options.max_consumers = config.replication_provider.max_consumers;
  provider_options.session_log_entries = config.database.session_log_entries;
  provider_options.server_id = config.database.server_id;
  return provider_options;
}

// Shows `consumers` and `provider` (when not null) in cn=Monitor; both outlive the
// attachment (monitor.detach() comes first).
void attach_replication(Monitor& monitor,
                        const std::vector<std::unique_ptr<replication::Consumer>>& consumers,
                        replication::SyncProvider* provider) {
  if (!consumers.empty()) {
    monitor.attach_consumers([&consumers] {
      std::vector<replication::ConsumerStatus> statuses;
      for (const std::unique_ptr<replication::Consumer>& consumer : consumers) {
        statuses.push_back(consumer->status());
      }
      return statuses;
    });
  }
  if (provider != nullptr) {
    monitor.attach_provider([provider] { return provider->status(); });
  }
}

}  // namespace

int run_serve(const ServeOptions& options, std::ostream& out, std::ostream& err) {
  // Signals are taken by sigwait on this thread only: block them before any thread starts
  // (the access log's writer, the listeners, the workers), which inherit the mask.
  const sigset_t signals = block_signals();

  // The config compiled as check-config compiles it: the same refusals, in the same words.
  ServerConfigOutcome outcome = compile_server_config(options.config);
  report_server_config(outcome, err);
  if (!outcome.ok()) {
    return 1;
  }
  ServerConfig& compiled = *outcome.compiled;
  const Config& config = compiled.config;
  // One server per database: numadir.lock, held until this process ends (database_lock.h).
  Result<DatabaseLock> lock = lock_database(config.database.path);
  if (!lock.ok()) {
    err << "numadir serve: " << lock.status().message() << "\n";
    return 1;
  }
  auto directory =
      backend::Directory::open(*compiled.schema, config.database, backend::OpenMode::kCreate);
  if (!directory.ok()) {
    err << "numadir serve: " << directory.status().message() << "\n";
    return 1;
  }
  if ((*directory)->created()) {  // A misspelt database.path shows here, not as no entries.
    err << "numadir: created an empty database in " << config.database.path.string() << "\n";
  }
  HandlerOptions handler_options = handler_options_from(compiled);
  Monitor monitor(handler_options.vendor_version);  // cn=Monitor; outlives the handler.
  handler_options.monitor = &monitor;
  // TLS: the certificate and key were read by the compile (and are read again on SIGHUP).
  std::unique_ptr<listener::TlsContext> tls = std::move(compiled.tls);
  // The replication provider ([replication.provider]): outlives the handler and the listeners,
  // whose stop ends every sync search.
  std::unique_ptr<replication::SyncProvider> provider;
  if (config.replication_provider.enabled) {
    provider =
        std::make_unique<replication::SyncProvider>(**directory, sync_provider_options(config));
    handler_options.sync = provider.get();
  }
  // The access log, when on, wraps the handler (and takes the binds' refusals of costly
  // values); off, requests go straight to it. Made first: it outlives the handler.
  std::unique_ptr<AccessLog> access_log;
  if (config.log_level != LogLevel::kOff) {
    auto opened_log = AccessLog::open(config.log_file, config.log_format);
    if (!opened_log.ok()) {
      err << "numadir serve: log.file: " << opened_log.status().message() << "\n";
      return 1;
    }
    access_log = std::move(*opened_log);
    handler_options.refusal_log = access_log.get();
    (*directory)->set_notices([log = access_log.get()](std::string_view text) {
      log->message(text);
    });
  }
  // [metrics]: the per-thread latency slots outlive the handler (made before it).
  std::unique_ptr<OperationMetrics> operation_metrics;
  if (config.metrics.enabled()) {
    operation_metrics = std::make_unique<OperationMetrics>();
    monitor.set_operation_metrics(operation_metrics.get());  // cn=Monitor's latencies.
  }
  handler_options.metrics = operation_metrics.get();  // Every operation measured when on.
  OperationHandler operations(**directory, handler_options);
  std::unique_ptr<LoggingHandler> logging;
  listener::RequestHandler* handler = &operations;
  if (access_log != nullptr) {
    logging = std::make_unique<LoggingHandler>(operations, *access_log, config.log_level);
    handler = logging.get();
  }
  std::unique_ptr<Metrics> metrics;
  if (operation_metrics != nullptr) {
    metrics = std::make_unique<Metrics>(metrics_sources(monitor, operations, *operation_metrics,
                                                        **directory, access_log.get(),
                                                        config.password_policy));
  }

  std::string threads_summary;
  listener::FrontendOptions frontend_options = frontend_options_from(
      compiled, tls.get(), /*stamp_requests=*/metrics != nullptr, threads_summary);
  auto frontend = listener::Frontend::start(frontend_options, *handler);
  if (!frontend.ok()) {
    err << "numadir serve: " << frontend.status().message() << "\n";
    return 1;
  }
  monitor.attach([&running = **frontend] { return running.snapshot(); });
  // The metrics endpoint ([metrics]): on its own thread, once the listeners run (and before the
  // privilege drop, so that it may have a port below 1024 and a root-only token file).
  std::unique_ptr<MetricsServer> metrics_server;
  if (metrics != nullptr) {
    Result<std::unique_ptr<MetricsServer>> started = start_metrics_server(config, *metrics);
    if (!started.ok()) {
      err << "numadir serve: " << started.status().message() << "\n";
      (*frontend)->stop();
      return 1;
    }
    metrics_server = std::move(*started);
  }
  if (const Status dropped = drop_privileges(compiled); !dropped.ok()) {
    err << "numadir serve: " << options.config.string() << ": " << dropped.message() << "\n";
    metrics_server.reset();
    (*frontend)->stop();
    return 1;
  }
  if (!options.pid_file.empty()) {
    std::ofstream pid(options.pid_file, std::ios::trunc);
    pid << getpid() << "\n";
    if (!pid) {
      err << "numadir serve: " << options.pid_file.string() << ": cannot be written\n";
      metrics_server.reset();
      (*frontend)->stop();
      return 1;
    }
  }
  for (const listener::ListenUrl& url : (*frontend)->bound_urls()) {
    out << "numadir: listening on " << url.to_string() << " (" << threads_summary << ")"
        << std::endl;
  }
  if (metrics_server != nullptr) {
    out << "numadir: metrics on " << metrics_server->url() << std::endl;
  }
  // The replication consumers, each on its thread, once the server answers: a long first
  // refresh does not hold the listeners back, and readers see each batch as it commits.
  std::vector<std::unique_ptr<replication::Consumer>> consumers =
      start_consumers(config, **directory, access_log.get());
  attach_replication(monitor, consumers, provider.get());
  notify_systemd("READY=1");

  wait_for_stop(signals, access_log.get(), tls.get(), metrics_server.get(), config.metrics.tls, out,
                err);
  notify_systemd("STOPPING=1");
  out << "numadir: shutting down" << std::endl;
  metrics_server.reset();  // First: it renders from everything below.
  monitor.detach();
  consumers.clear();  // Each stops, finishing the batch it is writing.
  (*frontend)->stop();
  if (!options.pid_file.empty()) {
    std::error_code ignored;
    std::filesystem::remove(options.pid_file, ignored);
  }
  return 0;
}

}  // namespace numadir::server
