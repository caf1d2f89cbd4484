// OperationMeter (server/monitoring/operation_meter.h), through the ResultSender that reports to
// it and the OperationHandler that makes one per operation when metrics are on: each
// operation's result and latency land in its thread's slot; a detached operation's in the shared
// part of its starting thread's slot.
#include <doctest/doctest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "server/monitoring/access_log.h"
#include "server/monitoring/operation_meter.h"
#include "server/operations/result_sender.h"
#include "tests/server/operations/operation_handler_test_util.h"
#include "threadpool/thread_counters.h"

namespace numadir::server {
namespace {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;

constexpr std::size_t kBind = static_cast<std::size_t>(OperationKind::kBind);
constexpr std::size_t kSearch = static_cast<std::size_t>(OperationKind::kSearch);
constexpr std::size_t kModify = static_cast<std::size_t>(OperationKind::kModify);
constexpr std::size_t kExtended = static_cast<std::size_t>(OperationKind::kExtended);

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
  std::unique_ptr<listener::OpenOperation> detach() override {
    auto open = std::make_unique<NullOpen>();
    open_seen = open.get();
    return open;
  }
  ProtocolOp last = ProtocolOp::kUnbindRequest;
  int sent = 0;
  NullOpen* open_seen = nullptr;
};

LdapMessage request_of(ProtocolOp op) {
  LdapMessage request;
  request.reset(1, op);
  return request;
}

// Runs one operation of `op` as a handler would: a meter for it (read `received_ns`), a sender
// reporting to it, and `work` answering through the sender.
void run_metered(OperationMetrics::Slot& slot, ProtocolOp op, std::int64_t received_ns,
                 listener::ResponseSink& sink, const std::function<void(ResultSender&)>& work) {
  const LdapMessage request = request_of(op);
  OperationMeter meter(slot, *operation_kind(op), received_ns);
  ResultSender sender(request, sink, &meter);
  work(sender);
}

std::int64_t now_ns() { return static_cast<std::int64_t>(threadpool::steady_ns()); }

TEST_CASE("OperationMeter: a planted 30 ms operation lands in le=0.05 and not in le=0.025") {
  OperationMetrics metrics;
  OperationMetrics::Slot& slot = metrics.add_slot();
  FakeSink sink;
  run_metered(slot, ProtocolOp::kBindRequest, now_ns(), sink, [](ResultSender& sender) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // Its work (a costly hash).
    sender.send_result(OwnedResult::success());
  });
  CHECK(sink.sent == 1);
  const OperationMetricsTotals totals = metrics.totals();
  const OperationHistogram& bind = totals.latency[kBind];
  CHECK(bind.count() == 1);
  // 30 ms (sleep_for waits at least that; a loaded machine may add, but not 20 ms).
  CHECK(bind.buckets[11] == 1);  // (0.025, 0.05]
  CHECK(bind.sum_ns >= 30'000'000);
  CHECK(bind.sum_ns <= 50'000'000);
}

TEST_CASE("OperationMeter: latency counts from when the request was read") {
  OperationMetrics metrics;
  OperationMetrics::Slot& slot = metrics.add_slot();
  FakeSink sink;
  // Read 200 ms before it ran (it waited in the queue): that counts.
  run_metered(slot, ProtocolOp::kBindRequest, now_ns() - 200'000'000, sink,
              [](ResultSender& sender) { sender.send_result(OwnedResult::success()); });
  CHECK(metrics.totals().latency[kBind].buckets[13] == 1);  // (0.1, 0.25]
  SUBCASE("unstamped (0), from the meter's making") {
    run_metered(slot, ProtocolOp::kSearchRequest, 0, sink,
                [](ResultSender& sender) { sender.send_result(OwnedResult::success()); });
    CHECK(metrics.totals().latency[kSearch].count() == 1);
    CHECK(metrics.totals().latency[kSearch].sum_ns < 100'000'000);
  }
}

TEST_CASE("OperationMeter: results are counted by code and op once; no result is abandoned") {
  OperationMetrics metrics;
  OperationMetrics::Slot& slot = metrics.add_slot();
  FakeSink sink;
  const auto answer = [](ResultCode code) {
    return
        [code](ResultSender& sender) { sender.send_result(OwnedResult::error(code, "as told")); };
  };
  run_metered(slot, ProtocolOp::kBindRequest, now_ns(), sink, answer(ResultCode::kSuccess));
  run_metered(slot, ProtocolOp::kBindRequest, now_ns(), sink,
              answer(ResultCode::kInvalidCredentials));
  run_metered(slot, ProtocolOp::kBindRequest, now_ns(), sink,
              answer(ResultCode::kInvalidCredentials));
  run_metered(slot, ProtocolOp::kSearchRequest, now_ns(), sink, [](ResultSender& sender) {
    LdapMessage entry;
    entry.reset(1, ProtocolOp::kSearchResultEntry);
    sender.send_entry(entry);  // Not a result.
    sender.send_result(OwnedResult::error(ResultCode::kNoSuchObject, "none"));
  });
  CHECK(sink.last == ProtocolOp::kSearchResultDone);
  run_metered(slot, ProtocolOp::kSearchRequest, now_ns(), sink, [](ResultSender&) {});
  run_metered(slot, ProtocolOp::kExtendedRequest, now_ns(), sink, [](ResultSender& sender) {
    sender.send_extended(OwnedResult::success(), std::nullopt);
    sender.send_extended(OwnedResult::success(), std::nullopt);  // A second is not counted.
  });
  const OperationMetricsTotals totals = metrics.totals();
  CHECK(totals.results[kBind][result_slot(ResultCode::kSuccess)] == 1);
  CHECK(totals.results[kBind][result_slot(ResultCode::kInvalidCredentials)] == 2);
  CHECK(totals.results[kSearch][result_slot(ResultCode::kNoSuchObject)] == 1);
  CHECK(totals.results[kSearch][kAbandonedResult] == 1);
  CHECK(totals.latency[kBind].count() == 3);
  CHECK(totals.latency[kSearch].count() == 1);  // The entry is not a result; abandoned: none.
  CHECK(totals.results[kExtended][result_slot(ResultCode::kSuccess)] == 1);
}

TEST_CASE("OperationMeter: a detached operation finished on another thread counts in its slot") {
  OperationMetrics metrics;
  OperationMetrics::Slot& slot = metrics.add_slot();
  const std::int32_t worker_tid = threadpool::os_thread_id();
  FakeSink sink;
  std::unique_ptr<listener::OpenOperation> open;
  const auto detach = [&open](ResultSender& sender) { open = sender.detach(); };
  run_metered(slot, ProtocolOp::kModifyRequest, now_ns(), sink, detach);
  REQUIRE(open != nullptr);
  CHECK(metrics.totals().results[kModify][kAbandonedResult] == 0);  // Not ended yet.
  std::int32_t writer_tid = 0;
  int inner_finished = 0;
  std::thread writer([&] {  // The writer thread completes the update.
    writer_tid = threadpool::os_thread_id();
    LdapMessage response;
    response.reset(1, ProtocolOp::kModifyResponse);
    response.result.code = ResultCode::kInsufficientAccessRights;
    open->finish(response);
    inner_finished = sink.open_seen->finished;  // Passed on to the sink's operation.
    open.reset();
  });
  writer.join();
  CHECK(writer_tid != worker_tid);
  CHECK(inner_finished == 1);
  for (const OperationMetrics::SlotReading& reading : metrics.read()) {
    CAPTURE(reading.tid);
    const std::uint64_t counted =
        reading.totals.results[kModify][result_slot(ResultCode::kInsufficientAccessRights)];
    CHECK(counted == (reading.tid == worker_tid ? 1 : 0));
    CHECK(reading.totals.latency[kModify].count() == (reading.tid == worker_tid ? 1 : 0));
    CHECK(reading.totals.results[kModify][kAbandonedResult] == 0);
  }
  SUBCASE("one released unfinished is abandoned") {
    run_metered(slot, ProtocolOp::kModifyRequest, now_ns(), sink, detach);
    open.reset();
    CHECK(metrics.totals().results[kModify][kAbandonedResult] == 1);
  }
  SUBCASE("one finished after the listener ended it is abandoned") {
    run_metered(slot, ProtocolOp::kModifyRequest, now_ns(), sink, detach);
    sink.open_seen->ended = true;
    LdapMessage response;
    response.reset(1, ProtocolOp::kModifyResponse);
    open->finish(response);
    open.reset();
    CHECK(metrics.totals().results[kModify][kAbandonedResult] == 1);
    CHECK(metrics.totals().latency[kModify].count() == 1);  // Only the first.
  }
}

TEST_CASE("operation_kind: exactly the requests a handler answers (those with a response_op)") {
  for (const listener::wire::ProtocolOpInfo& info : listener::wire::kProtocolOps) {
    CAPTURE(info.name);
    CHECK(operation_kind(info.op).has_value() == response_op(info.op).has_value());
    CHECK(operation_kind(info.op).has_value() == (info.kind == listener::wire::OpKind::kRequest));
  }
}

TEST_CASE("OperationHandler: with metrics on every operation is measured in its worker's slot") {
  OperationMetrics metrics;
  HandlerOptions options = testing::default_handler_options();
  options.metrics = &metrics;
  testing::HandlerFixture fixture(options);
  REQUIRE(static_cast<LoggingWorkerState&>(fixture.worker_state()).metrics_slot != nullptr);
  auto session = fixture.open_session();
  CHECK(testing::code_of(*fixture.run_one(
            testing::bind_request(1, testing::user_dn(1), testing::user_password(1)), *session)) ==
        ResultCode::kSuccess);
  CHECK(testing::code_of(*fixture.run_one(testing::bind_request(2, testing::user_dn(1), "wrong"),
                                          *session)) == ResultCode::kInvalidCredentials);
  fixture.handler().not_run(request_of(ProtocolOp::kSearchRequest), *session, {});
  listener::TlsPeer peer;
  peer.resumed = true;
  fixture.handler().tls_established(*session, peer);
  const OperationMetricsTotals totals = metrics.totals();
  CHECK(totals.results[kBind][result_slot(ResultCode::kSuccess)] == 1);
  CHECK(totals.results[kBind][result_slot(ResultCode::kInvalidCredentials)] == 1);
  CHECK(totals.latency[kBind].count() == 2);
  CHECK(totals.results[kSearch][kAbandonedResult] == 1);  // Dropped before it ran.
  CHECK(metrics.tls_handshakes().resumed == 1);
  CHECK(metrics.tls_handshakes().full == 0);
  SUBCASE("and without, nothing is") {
    testing::HandlerFixture off;
    CHECK(static_cast<LoggingWorkerState&>(off.worker_state()).metrics_slot == nullptr);
  }
}

}  // namespace
}  // namespace numadir::server
