// server/monitoring/metrics_handler.cc: see metrics_handler.h.
#include "server/monitoring/metrics_handler.h"

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "base/check.h"
#include "server/monitoring/access_log.h"
#include "threadpool/thread_counters.h"

namespace numadir::server {
namespace {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;

// Returns: whether `response` carries the operation's result (an entry or an intermediate
// response does not).
bool is_result(const LdapMessage& response) {
  return response.op != ProtocolOp::kSearchResultEntry &&
         listener::wire::has_ldap_result(response.op);
}

std::uint64_t elapsed_ns(std::int64_t start_ns, std::uint64_t now_ns) {
  const auto start = static_cast<std::uint64_t>(start_ns);
  return now_ns > start ? now_ns - start : 0;
}

// A detached operation, wrapped: its result (or its end without one) goes into the shared part
// of the starting thread's slot. Thread contract: as OpenOperation's.
class MeteredOpenOperation final : public listener::OpenOperation {
 public:
  MeteredOpenOperation(std::unique_ptr<listener::OpenOperation> inner, OperationMetrics::Slot& slot,
                       OperationKind kind, std::int64_t start_ns)
      : inner_(std::move(inner)), slot_(slot), kind_(kind), start_ns_(start_ns) {}
  ~MeteredOpenOperation() override {
    if (!resulted_) {
      OperationMetrics::record_abandoned_shared(slot_, kind_);
    }
  }
  void send(const LdapMessage& message) override {
    inner_->send(message);
    if (!resulted_ && is_result(message) && !inner_->abandoned()) {
      note(message);
    }
  }
  void finish(const LdapMessage& last_message) override {
    const bool dropped = inner_->abandoned();  // Then the result is not sent: "abandoned".
    inner_->finish(last_message);
    if (!resulted_ && !dropped && is_result(last_message)) {
      note(last_message);
    }
  }
  bool abandoned() const override { return inner_->abandoned(); }
  void set_on_end(std::function<void()> on_end) override { inner_->set_on_end(std::move(on_end)); }
  bool writable() const override { return inner_->writable(); }
  void set_on_writable(std::function<void(threadpool::WorkerState&)> resume) override {
    inner_->set_on_writable(std::move(resume));
  }

 private:
  void note(const LdapMessage& result) {
    resulted_ = true;
    OperationMetrics::record_shared(slot_, kind_, result.result.code,
                                    elapsed_ns(start_ns_, threadpool::steady_ns()));
  }

  const std::unique_ptr<listener::OpenOperation> inner_;
  OperationMetrics::Slot& slot_;
  const OperationKind kind_;
  const std::int64_t start_ns_;
  bool resulted_ = false;
};

// Passes responses on; notes the result, timed once it was handed on. Owner: the thread running
// handle().
class MeteredSink final : public listener::ResponseSink {
 public:
  MeteredSink(listener::ResponseSink& inner, OperationMetrics::Slot& slot, OperationKind kind,
              std::int64_t start_ns)
      : inner_(inner), slot_(slot), kind_(kind), start_ns_(start_ns) {}
  void send(const LdapMessage& response) override {
    inner_.send(response);
    if (!resulted_ && is_result(response)) {
      resulted_ = true;
      OperationMetrics::record_owned(slot_, kind_, response.result.code,
                                     elapsed_ns(start_ns_, threadpool::steady_ns()));
    }
  }
  bool abandoned() const override { return inner_.abandoned(); }
  bool writable() const override { return inner_.writable(); }
  listener::RequestOrigin origin() const override { return inner_.origin(); }
  std::unique_ptr<listener::OpenOperation> detach() override {
    std::unique_ptr<listener::OpenOperation> open = inner_.detach();
    if (open == nullptr) {
      return nullptr;
    }
    detached_ = true;
    return std::make_unique<MeteredOpenOperation>(std::move(open), slot_, kind_, start_ns_);
  }
  // Returns: whether the operation ended here without a result (neither sent one nor detached).
  bool ended_without_result() const { return !resulted_ && !detached_; }

 private:
  listener::ResponseSink& inner_;
  OperationMetrics::Slot& slot_;
  const OperationKind kind_;
  const std::int64_t start_ns_;
  bool resulted_ = false;
  bool detached_ = false;
};

}  // namespace

std::unique_ptr<listener::RequestWorkerState> MetricsHandler::make_worker_state() {
  std::unique_ptr<listener::RequestWorkerState> state = inner_.make_worker_state();
  auto* worker = dynamic_cast<LoggingWorkerState*>(state.get());
  NUMADIR_CHECK(worker != nullptr,
                "MetricsHandler: the inner handler's worker state has no metrics slot");
  worker->metrics_slot = &metrics_.add_slot();
  return state;
}

void MetricsHandler::handle(const LdapMessage& request, listener::Session& session,
                            listener::ResponseSink& sink, threadpool::WorkerState& state) {
  NUMADIR_DCHECK(dynamic_cast<LoggingWorkerState*>(&state) != nullptr,
                 "MetricsHandler::handle: a worker state not made by make_worker_state");
  OperationMetrics::Slot* slot = static_cast<LoggingWorkerState&>(state).metrics_slot;
  const std::optional<OperationKind> kind = operation_kind(request.op);
  if (slot == nullptr || !kind.has_value()) {
    inner_.handle(request, session, sink, state);
    return;
  }
  std::int64_t start_ns = sink.origin().received_ns;
  if (start_ns == 0) {  // Requests not stamped (tests, or stamp_requests off): from here.
    start_ns = static_cast<std::int64_t>(threadpool::steady_ns());
  }
  MeteredSink metered(sink, *slot, *kind, start_ns);
  inner_.handle(request, session, metered, state);
  if (metered.ended_without_result()) {
    OperationMetrics::record_abandoned_owned(*slot, *kind);
  }
}

void MetricsHandler::notice(const LdapMessage& request, listener::Session& session,
                            const listener::RequestOrigin& origin, const LdapMessage* response) {
  if (response != nullptr && is_result(*response)) {
    if (const std::optional<OperationKind> kind = operation_kind(request.op); kind.has_value()) {
      const std::uint64_t now = threadpool::steady_ns();
      OperationMetrics::record_shared(
          metrics_.unowned_slot(), *kind, response->result.code,
          origin.received_ns != 0 ? elapsed_ns(origin.received_ns, now) : 0);
    }
  }
  inner_.notice(request, session, origin, response);
}

void MetricsHandler::not_run(const LdapMessage& request, listener::Session& session,
                             const listener::RequestOrigin& origin) {
  if (const std::optional<OperationKind> kind = operation_kind(request.op); kind.has_value()) {
    OperationMetrics::record_abandoned_shared(metrics_.unowned_slot(), *kind);
  }
  inner_.not_run(request, session, origin);
}

void MetricsHandler::tls_established(listener::Session& session, const listener::TlsPeer& peer) {
  (peer.resumed ? tls_resumed_ : tls_full_).fetch_add(1, std::memory_order_relaxed);
  inner_.tls_established(session, peer);
}

MetricsHandler::TlsHandshakes MetricsHandler::tls_handshakes() const {
  return TlsHandshakes{tls_full_.load(std::memory_order_relaxed),
                       tls_resumed_.load(std::memory_order_relaxed)};
}

}  // namespace numadir::server
