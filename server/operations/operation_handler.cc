// server/operations/operation_handler.cc: construction, sessions, worker states, and dispatch:
// the controls check, counting, and the switch to each operation's unit.
#include "server/operations/operation_handler.h"

#include <optional>
#include <utility>

#include "base/check.h"
#include "server/monitoring/monitor_search.h"
#include "server/monitoring/operation_meter.h"
#include "server/monitoring/operation_metrics.h"
#include "server/operations/add_operation.h"
#include "server/operations/bind_operation.h"
#include "server/operations/compare_operation.h"
#include "server/operations/delete_operation.h"
#include "server/operations/extended_operation.h"
#include "server/operations/modify_operation.h"
#include "server/operations/rename_operation.h"
#include "server/operations/result_sender.h"
#include "server/operations/root_dse.h"
#include "server/operations/search_operation.h"
#include "server/operations/server_session.h"
#include "server/operations/sync_search.h"
#include "server/operations/worker_state.h"
#include "threadpool/thread_counters.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;

namespace {

// Returns: an error result when a control of `request` cannot be honoured: an unknown critical
//   control, or a known one used where it does not apply while marked critical (RFC 4511
//   §4.1.11); nullopt when the operation may proceed. Non-critical unknown controls are ignored.
std::optional<OwnedResult> check_controls(const LdapMessage& request, bool policy_enabled,
                                          const SyncSearchService* sync) {
  for (const listener::wire::Control& control : request.controls) {
    if (sync != nullptr && request.op == ProtocolOp::kSearchRequest && sync->serves(control)) {
      continue;  // Decoded by the provider.
    }
    if (control.type == kManageDsaItOid) {
      if (control.value.has_value()) {
        return OwnedResult::error(ResultCode::kProtocolError,
                                  "manageDSAit control value not absent");
      }
      continue;
    }
    if (control.type == kPagedResultsOid && request.op == ProtocolOp::kSearchRequest) {
      continue;  // Decoded by the search (search_paging.h).
    }
    if (control.type == kPasswordPolicyOid && policy_enabled &&
        (request.op == ProtocolOp::kBindRequest || request.op == ProtocolOp::kAddRequest ||
         request.op == ProtocolOp::kModifyRequest ||
         (request.op == ProtocolOp::kExtendedRequest &&
          request.extended.name == kPasswordModifyOid))) {
      if (control.value.has_value()) {
        return OwnedResult::error(ResultCode::kProtocolError,
                                  "passwordPolicyRequest control value not absent");
      }
      continue;  // Read by these operations; elsewhere, as slapd, an unknown control.
    }
    if (control.criticality) {
      return OwnedResult::error(ResultCode::kUnavailableCriticalExtension,
                                "critical extension is unavailable");
    }
  }
  return std::nullopt;
}

// Returns: true for a Modify of nothing but userPassword (and operational attributes), what a
//   connection restricted to changing its password may still send (slapd's mod_pw_only).
bool changes_only_password(const OperationContext& context, const LdapMessage& request) {
  if (request.op != ProtocolOp::kModifyRequest) {
    return false;
  }
  bool password = false;
  for (const auto& attribute : request.modify_request.modifications.attributes()) {
    const schema::AttributeType* type = context.attribute_type(attribute.type);
    if (type != nullptr && type == context.user_password_type()) {
      password = true;
    } else if (type == nullptr || !type->operational()) {
      return false;
    }
  }
  return password;
}

// Returns: true if `request` is refused on a connection restricted to changing its password: an
//   operation on the directory's entries (the root DSE, cn=Subschema and cn=Monitor stay
//   readable, as in slapd, whose policy is the database's) other than a Modify of the password.
bool restricted(const OperationContext& context, const LdapMessage& request) {
  std::string_view dn;
  switch (request.op) {
    case ProtocolOp::kSearchRequest:
      dn = request.search_request.base_object;
      break;
    case ProtocolOp::kCompareRequest:
      dn = request.compare_request.entry;
      break;
    case ProtocolOp::kAddRequest:
      dn = request.add_request.entry;
      break;
    case ProtocolOp::kDelRequest:
      dn = request.dn;
      break;
    case ProtocolOp::kModifyDnRequest:
      dn = request.modify_dn_request.entry;
      break;
    case ProtocolOp::kModifyRequest:
      if (changes_only_password(context, request)) {
        return false;
      }
      dn = request.modify_request.object;
      break;
    default:
      return false;
  }
  const Result<std::string> ndn = context.normalize_dn(dn);
  return !ndn.ok() || context.in_naming_context(*ndn);
}

}  // namespace

struct OperationHandler::Units {
  Units(const OperationContext& context, const PolicyEngine* policy,
        const OperationCounters& counters)
      : bind(context, policy),
        monitor(context, counters),
        search(context, monitor),
        compare(context),
        add(context, policy),
        modify(context, policy),
        remove(context),
        rename(context),
        extended(context, policy) {}

  const BindOperation bind;
  const MonitorSearch monitor;
  const SearchOperation search;  // Uses `monitor`.
  const CompareOperation compare;
  const AddOperation add;
  const ModifyOperation modify;
  const DeleteOperation remove;
  const RenameOperation rename;
  const ExtendedOperation extended;
};

OperationHandler::OperationHandler(backend::Directory& directory, HandlerOptions options)
    : context_(directory, std::move(options)),
      policy_(context_.options().password_policy ? std::make_unique<PolicyEngine>(context_)
                                                 : nullptr),
      units_(std::make_unique<const Units>(context_, policy_.get(), counters_)) {}

OperationHandler::~OperationHandler() = default;

std::unique_ptr<listener::Session> OperationHandler::open_session(
    const listener::ConnectionInfo& info) {
  return std::make_unique<ServerSession>(info);
}

std::unique_ptr<listener::RequestWorkerState> OperationHandler::make_worker_state() {
  auto state =
      std::make_unique<ServerWorkerState>(this, context_.directory(), counters_.add_slot());
  if (OperationMetrics* metrics = context_.options().metrics; metrics != nullptr) {
    state->metrics_slot = &metrics->add_slot();
  }
  return state;
}

void OperationHandler::notice(const LdapMessage& request, listener::Session& session,
                              const listener::RequestOrigin& origin, const LdapMessage* response) {
  (void)session;
  if (response == nullptr) {
    return;
  }
  counters_.count_shared(request.op);
  OperationMetrics* metrics = context_.options().metrics;
  if (metrics == nullptr || !OperationMeter::is_result(*response)) {
    return;
  }
  if (const std::optional<OperationKind> kind = operation_kind(request.op); kind.has_value()) {
    const std::uint64_t latency_ns =
        origin.received_ns != 0
            ? OperationMeter::elapsed_ns(origin.received_ns, threadpool::steady_ns())
            : 0;
    OperationMetrics::record_shared(metrics->unowned_slot(), *kind, response->result.code,
                                    latency_ns);
  }
}

void OperationHandler::not_run(const LdapMessage& request, listener::Session& session,
                               const listener::RequestOrigin& origin) {
  (void)session;
  (void)origin;
  OperationMetrics* metrics = context_.options().metrics;
  if (metrics == nullptr) {
    return;
  }
  if (const std::optional<OperationKind> kind = operation_kind(request.op); kind.has_value()) {
    OperationMetrics::record_abandoned_shared(metrics->unowned_slot(), *kind);
  }
}

void OperationHandler::tls_established(listener::Session& session, const listener::TlsPeer& peer) {
  static_cast<ServerSession&>(session).set_tls(peer);
  if (OperationMetrics* metrics = context_.options().metrics; metrics != nullptr) {
    metrics->count_tls_handshake(peer.resumed);
  }
}

void OperationHandler::handle(const LdapMessage& request, listener::Session& session,
                              listener::ResponseSink& sink, threadpool::WorkerState& state) {
  // The requests that are operations are those with a response (response_op).
  const std::optional<OperationKind> kind = operation_kind(request.op);
  if (!kind.has_value()) {
    return;  // Not a request we answer (the listener handles unbind and abandon).
  }
  auto& worker = static_cast<ServerWorkerState&>(state);
  NUMADIR_DCHECK(worker.owner() == this, "a worker state made by another handler");
  OperationCounters::count(worker.counters(), *kind);
  auto& server_session = static_cast<ServerSession&>(session);
  if (worker.metrics_slot != nullptr) {
    OperationMeter meter(*worker.metrics_slot, *kind, sink.origin().received_ns);
    ResultSender sender(request, sink, &meter);
    run(request, server_session, worker, sender);
    return;
  }
  ResultSender sender(request, sink);
  run(request, server_session, worker, sender);
}

void OperationHandler::run(const LdapMessage& request, ServerSession& server_session,
                           ServerWorkerState& worker, ResultSender& sender) {
  if (std::optional<OwnedResult> refused =
          check_controls(request, policy_ != nullptr, context_.options().sync);
      refused.has_value()) {
    if (request.op == ProtocolOp::kExtendedRequest) {
      sender.send_extended(*refused, std::nullopt);
    } else {
      sender.send_result(*refused);
    }
    return;
  }
  if (request.op != ProtocolOp::kBindRequest && request.op != ProtocolOp::kExtendedRequest &&
      server_session.password_change_only() && restricted(context_, request)) {
    // pwdMustChange after a reset: slapd's ppolicy_restrict (the control only where it is one).
    if ((request.op == ProtocolOp::kAddRequest || request.op == ProtocolOp::kModifyRequest) &&
        requests_policy_control(request)) {
      PolicyResponse response;
      response.error = PolicyError::kChangeAfterReset;
      attach_policy_control(sender, response);
    }
    sender.send_result(OwnedResult::error(
        ResultCode::kInsufficientAccessRights,
        "Operations are restricted to bind/unbind/abandon/StartTLS/modify password"));
    return;
  }
  switch (request.op) {
    case ProtocolOp::kBindRequest:
      units_->bind.run(request, server_session, worker, sender);
      return;
    case ProtocolOp::kSearchRequest:
      units_->search.run(request, server_session, worker, sender);
      return;
    case ProtocolOp::kExtendedRequest:
      units_->extended.run(request, server_session, worker, sender);
      return;
    default:
      break;
  }
  const Identity who = server_session.identity();
  switch (request.op) {
    case ProtocolOp::kCompareRequest:
      units_->compare.run(request, who, worker, sender);
      return;
    case ProtocolOp::kAddRequest:
      units_->add.run(request, who, worker, sender);
      return;
    case ProtocolOp::kModifyRequest:
      units_->modify.run(request, who, server_session, worker, sender);
      return;
    case ProtocolOp::kDelRequest:
      units_->remove.run(request, who, worker, sender);
      return;
    case ProtocolOp::kModifyDnRequest:
      units_->rename.run(request, who, worker, sender);
      return;
    default:
      return;
  }
}

std::uint64_t OperationHandler::password_lockouts() const {
  return policy_ != nullptr ? policy_->failures().stats().lockouts : 0;
}

}  // namespace numadir::server
