// server/monitoring/operation_meter.cc: see operation_meter.h.
#include "server/monitoring/operation_meter.h"

#include <utility>

#include "server/monitoring/open_operation_decorator.h"
#include "threadpool/thread_counters.h"

namespace numadir::server {
namespace {

using listener::wire::LdapMessage;

// A detached operation, wrapped: its result (or its end without one) goes into the shared part
// of the starting thread's slot. Thread contract: as OpenOperation's.
class MeteredOpenOperation final : public OpenOperationDecorator {
 public:
  MeteredOpenOperation(std::unique_ptr<listener::OpenOperation> inner, OperationMetrics::Slot& slot,
                       OperationKind kind, std::int64_t start_ns)
      : OpenOperationDecorator(std::move(inner)), slot_(slot), kind_(kind), start_ns_(start_ns) {}
  ~MeteredOpenOperation() override {
    if (!resulted_) {
      OperationMetrics::record_abandoned_shared(slot_, kind_);
    }
  }
  void send(const LdapMessage& message) override {
    inner().send(message);
    if (!resulted_ && OperationMeter::is_result(message) && !inner().abandoned()) {
      note(message);
    }
  }
  void finish(const LdapMessage& last_message) override {
    const bool dropped = inner().abandoned();  // Then the result is not sent: "abandoned".
    inner().finish(last_message);
    if (!resulted_ && !dropped && OperationMeter::is_result(last_message)) {
      note(last_message);
    }
  }

 private:
  void note(const LdapMessage& result) {
    resulted_ = true;
    OperationMetrics::record_shared(slot_, kind_, result.result.code,
                                    OperationMeter::elapsed_ns(start_ns_, threadpool::steady_ns()));
  }

  OperationMetrics::Slot& slot_;
  const OperationKind kind_;
  const std::int64_t start_ns_;
  bool resulted_ = false;
};

}  // namespace

OperationMeter::OperationMeter(OperationMetrics::Slot& slot, OperationKind kind,
                               std::int64_t received_ns)
    : slot_(slot),
      kind_(kind),
      // Requests not stamped (tests, or stamp_requests off): from here.
      start_ns_(received_ns != 0 ? received_ns
                                 : static_cast<std::int64_t>(threadpool::steady_ns())) {}

OperationMeter::~OperationMeter() {
  if (!done_) {
    OperationMetrics::record_abandoned_owned(slot_, kind_);
  }
}

void OperationMeter::resulted(listener::wire::ResultCode code) {
  if (done_) {
    return;
  }
  done_ = true;
  OperationMetrics::record_owned(slot_, kind_, code,
                                 elapsed_ns(start_ns_, threadpool::steady_ns()));
}

std::unique_ptr<listener::OpenOperation> OperationMeter::detached(
    std::unique_ptr<listener::OpenOperation> open) {
  if (open == nullptr || done_) {
    return open;
  }
  done_ = true;
  return std::make_unique<MeteredOpenOperation>(std::move(open), slot_, kind_, start_ns_);
}

std::uint64_t OperationMeter::elapsed_ns(std::int64_t start_ns, std::uint64_t now_ns) {
  const auto start = static_cast<std::uint64_t>(start_ns);
  return now_ns > start ? now_ns - start : 0;
}

bool OperationMeter::is_result(const LdapMessage& response) {
  return response.op != listener::wire::ProtocolOp::kSearchResultEntry &&
         listener::wire::has_ldap_result(response.op);
}

}  // namespace numadir::server
