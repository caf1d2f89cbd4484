// server/monitoring/metrics_handler.h: a RequestHandler that measures another one for the metrics
// endpoint: each operation's result (by code) and its latency, from when the listener read the
// request's bytes (RequestOrigin::received_ns; the handle() start when requests are not stamped)
// to when its result was handed to the connection (written, or queued behind earlier output),
// into the OperationMetrics slot of the thread that ran it; and the TLS handshakes, full or
// resumed. An operation that ends without a result counts as "abandoned", without a latency.
// Wrapped around the server's handler only when metrics are on, so a server without them pays
// nothing; with them, one clock read per operation and no allocation (but for a detached
// operation, which allocates already).
//
// An operation kept open (ResponseSink::detach) is finished on whichever thread holds it (the
// writer thread for every update): its result goes into the shared part of the slot of the
// thread that started it, so it counts under that thread's node.
//
// Thread contract: as RequestHandler. tls_handshakes() any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "listener/request_handler.h"
#include "server/monitoring/operation_metrics.h"

namespace numadir::server {

class MetricsHandler final : public listener::RequestHandler {
 public:
  // Requires: `inner` and `metrics` outlive this handler and every session and operation it
  // opened.
  MetricsHandler(listener::RequestHandler& inner, OperationMetrics& metrics)
      : inner_(inner), metrics_(metrics) {}

  std::unique_ptr<listener::Session> open_session(const listener::ConnectionInfo& info) override {
    return inner_.open_session(info);
  }
  // The inner handler's, which must be a LoggingWorkerState (access_log.h), given a new slot of
  // the calling thread's.
  std::unique_ptr<listener::RequestWorkerState> make_worker_state() override;
  void handle(const listener::wire::LdapMessage& request, listener::Session& session,
              listener::ResponseSink& sink, threadpool::WorkerState& state) override;
  // StartTLS's result is counted (unowned slot), then the inner handler is told.
  void notice(const listener::wire::LdapMessage& request, listener::Session& session,
              const listener::RequestOrigin& origin,
              const listener::wire::LdapMessage* response) override;
  // Counted as abandoned (unowned slot), then the inner handler is told.
  void not_run(const listener::wire::LdapMessage& request, listener::Session& session,
               const listener::RequestOrigin& origin) override;
  // Counts the handshake, full or resumed, then tells the inner handler.
  void tls_established(listener::Session& session, const listener::TlsPeer& peer) override;

  struct TlsHandshakes {
    std::uint64_t full = 0;
    std::uint64_t resumed = 0;
  };
  // Any thread. Returns: the handshakes counted so far.
  TlsHandshakes tls_handshakes() const;

 private:
  listener::RequestHandler& inner_;
  OperationMetrics& metrics_;
  // Once per connection, from listener threads: shared, relaxed (monitoring reads).
  std::atomic<std::uint64_t> tls_full_{0};
  std::atomic<std::uint64_t> tls_resumed_{0};
};

}  // namespace numadir::server
