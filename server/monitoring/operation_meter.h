// server/monitoring/operation_meter.h: measures one operation for the metrics endpoint: its
// result (by code) and its latency, from when the listener read the request's bytes
// (RequestOrigin::received_ns; the meter's making when requests are not stamped) to when its
// result was handed to the connection (written, or queued behind earlier output), into the
// OperationMetrics slot of the thread that ran it. An operation that ends without a result counts
// as "abandoned", without a latency. OperationHandler::handle makes one per operation when
// metrics are on (HandlerOptions::metrics) and gives it to the operation's ResultSender, which
// reports the result it sends: no decorator around the handler or the sink, one clock read per
// operation, no allocation (but for a detached operation, which allocates already).
//
// An operation kept open (ResponseSink::detach) is finished on whichever thread holds it (the
// writer thread for every update): its result goes into the shared part of the slot of the
// thread that started it, so it counts under that thread's node.
//
// Thread contract: made, used and destroyed by the thread running the operation's handle(),
// whose slot it is given; the OpenOperation detached() returns follows OpenOperation's.
#pragma once

#include <cstdint>
#include <memory>

#include "listener/request_handler.h"
#include "listener/wire/ldap_message.h"
#include "server/monitoring/operation_metrics.h"

namespace numadir::server {

class OperationMeter {
 public:
  // Requires: `slot` is the calling thread's and outlives the meter and what detached() returns.
  // `received_ns` is the request's RequestOrigin::received_ns (0: from now).
  OperationMeter(OperationMetrics::Slot& slot, OperationKind kind, std::int64_t received_ns);
  OperationMeter(const OperationMeter&) = delete;
  OperationMeter& operator=(const OperationMeter&) = delete;
  // Counts the operation as abandoned if it neither sent a result nor was detached.
  ~OperationMeter();

  // The operation's result `code` was handed to the sink: counted with its latency until now
  // (the first result only).
  void resulted(listener::wire::ResultCode code);
  // Returns: `open` (the sink's detach(); nullptr stays nullptr), wrapped so that the result it
  //   finishes with, or its end without one, is counted in the slot's shared part. The meter
  //   counts nothing more itself.
  std::unique_ptr<listener::OpenOperation> detached(std::unique_ptr<listener::OpenOperation> open);

  // Returns: nanoseconds from `start_ns` (a steady_ns() value) to `now_ns`, 0 if now is earlier.
  static std::uint64_t elapsed_ns(std::int64_t start_ns, std::uint64_t now_ns);
  // Returns: whether `response` carries its operation's result (an entry or an intermediate
  //   response does not).
  static bool is_result(const listener::wire::LdapMessage& response);

 private:
  OperationMetrics::Slot& slot_;
  const OperationKind kind_;
  const std::int64_t start_ns_;
  bool done_ = false;  // A result was counted, or the operation detached.
};

}  // namespace numadir::server
