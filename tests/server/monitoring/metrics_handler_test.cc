// MetricsHandler (server/monitoring/metrics_handler.h): each operation's result and latency land
// in its thread's slot; a detached operation's in the shared part of its starting thread's slot.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "server/monitoring/access_log.h"
#include "server/monitoring/metrics_handler.h"
#include "threadpool/thread_counters.h"

namespace numadir::server {
namespace {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;

constexpr std::size_t kBind = static_cast<std::size_t>(OperationKind::kBind);
constexpr std::size_t kSearch = static_cast<std::size_t>(OperationKind::kSearch);
constexpr std::size_t kModify = static_cast<std::size_t>(OperationKind::kModify);

class NullOpen final : public listener::OpenOperation {
 public:
  void send(const LdapMessage&) override {}
  void finish(const LdapMessage&) override { ++finished; }
  bool abandoned() const override { return ended; }
  void set_on_end(std::function<void()>) override {}
  int finished = 0;
  bool ended = false;
};

class FakeSink final : public listener::ResponseSink {
 public:
  void send(const LdapMessage& response) override {
    last = response.op;
    ++sent;
  }
  bool abandoned() const override { return false; }
  listener::RequestOrigin origin() const override {
    listener::RequestOrigin origin;
    origin.received_ns = received_ns;
    return origin;
  }
  std::unique_ptr<listener::OpenOperation> detach() override {
    auto open = std::make_unique<NullOpen>();
    open_seen = open.get();
    return open;
  }
  std::int64_t received_ns = 0;
  ProtocolOp last = ProtocolOp::kUnbindRequest;
  int sent = 0;
  NullOpen* open_seen = nullptr;
};

// Answers each request as told: after `delay`, with `code`; or sends nothing; or detaches.
class Scripted final : public listener::RequestHandler {
 public:
  std::unique_ptr<listener::Session> open_session(const listener::ConnectionInfo&) override {
    return std::make_unique<listener::Session>();
  }
  std::unique_ptr<listener::RequestWorkerState> make_worker_state() override {
    return std::make_unique<LoggingWorkerState>();
  }
  void handle(const LdapMessage& request, listener::Session&, listener::ResponseSink& sink,
              threadpool::WorkerState&) override {
    if (detach) {
      open = sink.detach();
      return;
    }
    if (silent) {
      return;
    }
    std::this_thread::sleep_for(delay);  // The operation's own work (a costly hash).
    if (request.op == ProtocolOp::kSearchRequest) {
      LdapMessage entry;
      entry.reset(request.message_id, ProtocolOp::kSearchResultEntry);
      sink.send(entry);
    }
    LdapMessage response;
    response.reset(request.message_id, request.op == ProtocolOp::kSearchRequest
                                           ? ProtocolOp::kSearchResultDone
                                           : ProtocolOp::kBindResponse);
    response.result.code = code;
    sink.send(response);
  }
  void tls_established(listener::Session&, const listener::TlsPeer&) override { ++tls; }
  std::chrono::milliseconds delay{0};
  ResultCode code = ResultCode::kSuccess;
  bool silent = false;
  bool detach = false;
  std::unique_ptr<listener::OpenOperation> open;
  int tls = 0;
};

LdapMessage request_of(ProtocolOp op) {
  LdapMessage request;
  request.reset(1, op);
  return request;
}

TEST_CASE("MetricsHandler: a planted 30 ms operation lands in le=0.05 and not in le=0.025") {
  Scripted inner;
  OperationMetrics metrics;
  MetricsHandler handler(inner, metrics);
  auto session = handler.open_session({});
  const std::unique_ptr<threadpool::WorkerState> state = handler.make_worker_state();
  REQUIRE(static_cast<LoggingWorkerState&>(*state).metrics_slot != nullptr);
  inner.delay = std::chrono::milliseconds(30);
  FakeSink sink;
  sink.received_ns = static_cast<std::int64_t>(threadpool::steady_ns());
  handler.handle(request_of(ProtocolOp::kBindRequest), *session, sink, *state);
  CHECK(sink.sent == 1);
  const OperationMetricsTotals totals = metrics.totals();
  const OperationHistogram& bind = totals.latency[kBind];
  CHECK(bind.count() == 1);
  // 30 ms (sleep_for waits at least that; a loaded machine may add, but not 20 ms).
  CHECK(bind.buckets[11] == 1);  // (0.025, 0.05]
  CHECK(bind.sum_ns >= 30'000'000);
  CHECK(bind.sum_ns <= 50'000'000);
}

TEST_CASE("MetricsHandler: latency counts from when the request was read") {
  Scripted inner;
  OperationMetrics metrics;
  MetricsHandler handler(inner, metrics);
  auto session = handler.open_session({});
  const std::unique_ptr<threadpool::WorkerState> state = handler.make_worker_state();
  FakeSink sink;
  // Read 200 ms before it ran (it waited in the queue): that counts.
  sink.received_ns = static_cast<std::int64_t>(threadpool::steady_ns()) - 200'000'000;
  handler.handle(request_of(ProtocolOp::kBindRequest), *session, sink, *state);
  const OperationMetricsTotals totals = metrics.totals();
  const OperationHistogram& bind = totals.latency[kBind];
  CHECK(bind.buckets[13] == 1);  // (0.1, 0.25]
}

TEST_CASE("MetricsHandler: results are counted by code and op; no result is abandoned") {
  Scripted inner;
  OperationMetrics metrics;
  MetricsHandler handler(inner, metrics);
  auto session = handler.open_session({});
  const std::unique_ptr<threadpool::WorkerState> state = handler.make_worker_state();
  FakeSink sink;
  handler.handle(request_of(ProtocolOp::kBindRequest), *session, sink, *state);
  inner.code = ResultCode::kInvalidCredentials;
  handler.handle(request_of(ProtocolOp::kBindRequest), *session, sink, *state);
  handler.handle(request_of(ProtocolOp::kBindRequest), *session, sink, *state);
  inner.code = ResultCode::kNoSuchObject;
  handler.handle(request_of(ProtocolOp::kSearchRequest), *session, sink, *state);
  CHECK(sink.last == ProtocolOp::kSearchResultDone);
  inner.silent = true;
  handler.handle(request_of(ProtocolOp::kSearchRequest), *session, sink, *state);
  const OperationMetricsTotals totals = metrics.totals();
  CHECK(totals.results[kBind][result_slot(ResultCode::kSuccess)] == 1);
  CHECK(totals.results[kBind][result_slot(ResultCode::kInvalidCredentials)] == 2);
  CHECK(totals.results[kSearch][result_slot(ResultCode::kNoSuchObject)] == 1);
  CHECK(totals.results[kSearch][kAbandonedResult] == 1);
  CHECK(totals.latency[kBind].count() == 3);
  CHECK(totals.latency[kSearch].count() == 1);  // The entry is not a result; abandoned: none.
}

TEST_CASE("MetricsHandler: a detached operation finished on another thread counts in its slot") {
  Scripted inner;
  inner.detach = true;
  OperationMetrics metrics;
  MetricsHandler handler(inner, metrics);
  auto session = handler.open_session({});
  const std::unique_ptr<threadpool::WorkerState> state = handler.make_worker_state();
  const std::int32_t worker_tid = threadpool::os_thread_id();
  FakeSink sink;
  handler.handle(request_of(ProtocolOp::kModifyRequest), *session, sink, *state);
  REQUIRE(inner.open != nullptr);
  CHECK(metrics.totals().results[kModify][kAbandonedResult] == 0);  // Not ended yet.
  std::int32_t writer_tid = 0;
  std::thread writer([&] {  // The writer thread completes the update.
    writer_tid = threadpool::os_thread_id();
    LdapMessage response;
    response.reset(1, ProtocolOp::kModifyResponse);
    response.result.code = ResultCode::kInsufficientAccessRights;
    inner.open->finish(response);
    inner.open.reset();
  });
  writer.join();
  CHECK(writer_tid != worker_tid);
  for (const OperationMetrics::SlotReading& reading : metrics.read()) {
    CAPTURE(reading.tid);
    const std::uint64_t counted =
        reading.totals.results[kModify][result_slot(ResultCode::kInsufficientAccessRights)];
    CHECK(counted == (reading.tid == worker_tid ? 1 : 0));
    CHECK(reading.totals.latency[kModify].count() == (reading.tid == worker_tid ? 1 : 0));
    CHECK(reading.totals.results[kModify][kAbandonedResult] == 0);
  }
  SUBCASE("one released unfinished is abandoned") {
    handler.handle(request_of(ProtocolOp::kModifyRequest), *session, sink, *state);
    inner.open.reset();
    CHECK(metrics.totals().results[kModify][kAbandonedResult] == 1);
  }
  SUBCASE("one finished after the listener ended it is abandoned") {
    handler.handle(request_of(ProtocolOp::kModifyRequest), *session, sink, *state);
    sink.open_seen->ended = true;
    LdapMessage response;
    response.reset(1, ProtocolOp::kModifyResponse);
    inner.open->finish(response);
    inner.open.reset();
    CHECK(metrics.totals().results[kModify][kAbandonedResult] == 1);
    CHECK(metrics.totals().latency[kModify].count() == 1);  // Only the first.
  }
}

TEST_CASE("MetricsHandler: TLS handshakes are counted full and resumed") {
  Scripted inner;
  OperationMetrics metrics;
  MetricsHandler handler(inner, metrics);
  auto session = handler.open_session({});
  listener::TlsPeer peer;
  handler.tls_established(*session, peer);
  peer.resumed = true;
  handler.tls_established(*session, peer);
  handler.tls_established(*session, peer);
  CHECK(handler.tls_handshakes().full == 1);
  CHECK(handler.tls_handshakes().resumed == 2);
  CHECK(inner.tls == 3);
}

}  // namespace
}  // namespace numadir::server
