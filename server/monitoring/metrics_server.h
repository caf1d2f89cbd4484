// server/monitoring/metrics_server.h: the metrics endpoint: an HTTP/1.1 server (HTTPS with the
// server's certificate when asked) answering GET and HEAD /metrics with what a MetricsRender
// callback renders, in the Prometheus text format or OpenMetrics as the scraper's Accept asks.
//
// One thread of its own ("metrics") runs one poll(2) loop over one listening socket and at most
// max_connections non-blocking connections; it parks in poll when idle. Each request must
// arrive (its head, within 8 KiB) and its answer must be taken within request_timeout_ms, else
// the connection is closed: a slowloris client holds a slot for that long at most and never
// holds up another client. Routes: /metrics (GET, HEAD) 200; other paths 404; other methods 405;
// malformed 400; head over 8 KiB 431; Transfer-Encoding 501; other HTTP versions 505; with a
// bearer token, a request without it 401 (the token compared in constant time). Keep-alive as
// HTTP/1.1 says; every response has a Content-Length.
//
// Thread contract: start() and stop() from one thread (serve's main thread); stats(), port()
// and reload_tls() from any thread. The render callback runs on the metrics thread only, one
// call at a time. stop() (or the destructor) joins the thread and closes every connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "base/status.h"
#include "listener/tls.h"
#include "server/formats/config.h"
#include "server/monitoring/exposition_format.h"

namespace numadir::server {

// Renders every metric into `out` (cleared first), in `format` (Metrics::render).
using MetricsRender = std::function<void(ExpositionFormat, std::string&)>;

struct MetricsServerOptions {
  std::string host = "127.0.0.1";  // An IP literal (IPv6 without brackets) or "localhost".
  std::uint16_t port = 0;          // 0: any free port (tests; port() says which).
  // HTTPS with these settings (certificate, key, CAs); client_certificates kDemand requires a
  // client certificate verified against the CAs. nullopt: plain HTTP.
  std::optional<listener::TlsSettings> tls;
  std::string bearer_token;  // Non-empty: "Authorization: Bearer <token>" is required (401).
  std::uint32_t max_connections = 16;
  std::uint32_t request_timeout_ms = 5000;
};

// What the server has done, for the metrics it serves about itself. Counts since start().
struct MetricsServerStats {
  std::uint64_t scrapes = 0;               // 200s to GET /metrics (HEAD not counted).
  std::uint64_t connections_accepted = 0;  // Taken in (under max_connections).
  std::uint64_t connections_refused = 0;   // Closed at accept: max_connections reached.
  std::uint64_t timeouts = 0;              // Closed: a request or an answer took too long.
  std::uint64_t tls_failures = 0;          // Closed: the TLS handshake or a record failed.
  std::uint64_t unauthorized = 0;          // 401s.
  std::uint64_t not_found = 0;             // 404s.
  std::uint64_t bad_method = 0;            // 405s.
  std::uint64_t bad_requests = 0;          // 400, 431, 501 and 505 (malformed or refused).
};

// Returns: the options `numadir serve` starts the endpoint with, from [metrics] and [tls]: the
//   parsed listen address, the token read from its file, the [tls] files with the client
//   certificate demanded (metrics.client_certificate) or not asked for.
// Errors: as parse_metrics_listen and read_bearer_token, prefixed with the key
//   ("metrics.bearer_token_file: ..."); kInvalidArgument for metrics.tls without [tls].
Result<MetricsServerOptions> metrics_server_options(
    const MetricsSettings& metrics, const std::optional<listener::TlsSettings>& tls);

class MetricsServer {
 public:
  // Binds and listens (SO_REUSEADDR), makes the TLS context, starts the thread.
  // Errors: kInvalidArgument for a host that is not an address; kIo naming the address and the
  //   system's reason ("127.0.0.1:9330: Address already in use"); the TLS context's errors
  //   (listener::TlsContext::create).
  static Result<std::unique_ptr<MetricsServer>> start(const MetricsServerOptions& options,
                                                      MetricsRender render);
  ~MetricsServer();  // stop().
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Ends the thread and closes the listening socket and every connection. Idempotent.
  void stop();

  // Returns: the bound port (the one chosen when options.port was 0).
  std::uint16_t port() const { return port_; }
  // Returns: "http://127.0.0.1:9330/metrics" or "https://[::1]:9330/metrics".
  std::string url() const;
  // Re-reads the TLS certificate and key (SIGHUP); connections open keep the old ones.
  // Errors: as listener::TlsContext::reload; OK without TLS.
  Status reload_tls();
  MetricsServerStats stats() const;

 private:
  struct Counters;
  class Loop;
  MetricsServer(const MetricsServerOptions& options, int listen_fd, int wake_fd, std::uint16_t port,
                std::unique_ptr<listener::TlsContext> tls, MetricsRender render);

  const MetricsServerOptions options_;
  const int listen_fd_;  // Closed by stop(), after the thread ended.
  const int wake_fd_;    // eventfd: stop() writes it to wake the loop.
  const std::uint16_t port_;
  const std::unique_ptr<listener::TlsContext> tls_;  // Null without TLS.
  const std::unique_ptr<Counters> counters_;         // Written by the thread, read by stats().
  std::unique_ptr<Loop> loop_;                       // Owner: the metrics thread, once started.
  std::thread thread_;
  bool stopped_ = false;  // Owner: the thread calling start() and stop().
};

}  // namespace numadir::server
