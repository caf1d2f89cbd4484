// server/operations/bind_operation.cc: see bind_operation.h.
#include "server/operations/bind_operation.h"

#include <string.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "backend/directory_update.h"
#include "backend/password_scheme.h"
#include "server/monitoring/access_log.h"
#include "server/operations/external_map.h"
#include "server/operations/operation_access.h"
#include "server/operations/password_cost.h"
#include "threadpool/worker_pool.h"

namespace numadir::server {

using listener::wire::BindMethod;
using listener::wire::LdapMessage;
using listener::wire::ResultCode;

// A bind handed from a helping listener to a worker: what of the request the bind needs (its
// views do not outlive handle()), the open operation it answers through, and its session. Never
// runs inline (may_run_inline() is false), so only a pool's own workers run it. Destroyed by the
// pool after run(), or unrun when the pool stops: the operation is released either way.
class BindOperation::Verification final : public threadpool::Task {
 public:
  Verification(const BindOperation& bind, const LdapMessage& request, ServerSession& session,
               std::unique_ptr<listener::OpenOperation> open)
      : bind_(bind),
        session_(session),
        open_(std::move(open)),
        name_(request.bind_request.name),
        password_(request.bind_request.simple_password) {
    request_.message_id = request.message_id;
    request_.op = request.op;
    request_.bind_request.method = BindMethod::kSimple;
    request_.bind_request.name = name_;
    request_.bind_request.simple_password = password_;
    if (requests_policy_control(request)) {
      // The only control a bind reads; its type is a static string, so the view stays valid.
      request_.controls.push_back(listener::wire::Control{kPasswordPolicyOid, false, std::nullopt});
    }
  }
  Verification(const Verification&) = delete;
  Verification& operator=(const Verification&) = delete;
  ~Verification() override { explicit_bzero(password_.data(), password_.size()); }

  void run(threadpool::WorkerState& state) override {
    if (open_->abandoned()) {
      return;  // Ended by the listener meanwhile (unbind, close): nothing to check or answer.
    }
    OpenOperationSink sink(*open_);
    ResultSender sender(request_, sink);
    bind_.simple(request_, session_, static_cast<ServerWorkerState&>(state), sender,
                 /*cheap_only=*/state.helping() != nullptr);
  }

  // The pool refused the task: answers busy through the open operation.
  void answer_busy() {
    OpenOperationSink sink(*open_);
    ResultSender sender(request_, sink);
    sender.send_result(OwnedResult::error(ResultCode::kBusy, "too busy to check the password"));
  }

 private:
  const BindOperation& bind_;
  ServerSession& session_;
  const std::unique_ptr<listener::OpenOperation> open_;
  const std::string name_;
  std::string password_;  // Wiped when the task is destroyed.
  LdapMessage request_;   // Its views point into name_ and password_.
};

void BindOperation::run(const LdapMessage& request, ServerSession& session,
                        ServerWorkerState& state, ResultSender& sender) const {
  const listener::wire::BindRequest& bind = request.bind_request;
  // Whatever happens below, a bind first drops the identity the connection had (RFC 4513 §4:
  // a failed bind leaves the connection anonymous).
  session.clear_identity();

  if (bind.version != 3) {
    sender.send_result(
        OwnedResult::error(ResultCode::kProtocolError, "requested protocol version not supported"));
    return;
  }
  if (bind.method == BindMethod::kUnsupported) {
    // RFC 4511 §4.2: an authentication choice we do not implement (slapd's answer and text).
    sender.send_result(
        OwnedResult::error(ResultCode::kAuthMethodNotSupported, "unknown authentication method"));
    return;
  }
  if (bind.method == BindMethod::kSasl) {
    if (bind.sasl_mechanism == "EXTERNAL" &&
        (context_.options().tls || session.info().peer_credentials.has_value())) {
      external(request, session, sender);
      return;
    }
    sender.send_result(
        OwnedResult::error(ResultCode::kAuthMethodNotSupported, "SASL mechanism not supported"));
    return;
  }
  if (bind.simple_password.empty()) {
    if (bind.name.empty()) {
      sender.send_result(OwnedResult::success());  // Anonymous (RFC 4513 §5.1.1).
      return;
    }
    if (!context_.options().allow_unauthenticated_bind) {
      sender.send_result(
          OwnedResult::error(ResultCode::kUnwillingToPerform,
                             "unauthenticated bind (DN with no password) disallowed"));
      return;
    }
    // RFC 4513 §5.1.2: the name is not checked and the connection stays anonymous.
    sender.send_result(OwnedResult::success());
    return;
  }
  // ldapi:// is as confidential as TLS (slapd: its local SSF meets `security simple_bind`).
  if (context_.options().simple_bind_requires_tls && !session.has_tls() && !session.info().local) {
    // RFC 4513 §5.1.3 / §6.3.3: a password is never accepted in the clear.
    sender.send_result(OwnedResult::error(ResultCode::kConfidentialityRequired,
                                          "TLS confidentiality required for simple binds"));
    return;
  }
  simple(request, session, state, sender, /*cheap_only=*/state.helping() != nullptr);
}

BindOperation::Check BindOperation::check_value(std::string_view password, std::string_view stored,
                                                bool cheap_only, backend::PasswordScratch& scratch,
                                                std::optional<backend::CostExcess>& refused) const {
  // The salted SHA family costs one digest: it goes straight to verify_password, as always.
  if (const Result<backend::PasswordScheme> scheme = backend::stored_password_scheme(stored);
      scheme.ok() && backend::password_scheme_costly(*scheme)) {
    if (std::optional<backend::CostExcess> excess =
            backend::password_cost_excess(stored, context_.verify_policy().limits)) {
      if (!refused.has_value()) {
        refused = *excess;
      }
      return Check::kNoMatch;
    }
    if (cheap_only) {
      return Check::kCostly;
    }
  }
  // Values we cannot read (unknown scheme, malformed, cleartext while refused) never match.
  const Result<bool> verified =
      backend::verify_password(password, stored, context_.verify_policy(), scratch);
  return verified.ok() && *verified ? Check::kMatch : Check::kNoMatch;
}

void BindOperation::simple(const LdapMessage& request, ServerSession& session,
                           ServerWorkerState& state, ResultSender& sender, bool cheap_only) const {
  const listener::wire::BindRequest& bind = request.bind_request;
  const OwnedResult invalid = OwnedResult::error(ResultCode::kInvalidCredentials, "");
  std::string& ndn = state.bind_ndn;
  if (!context_.normalize_dn_into(bind.name, ndn, state.dn).ok()) {
    // A name that is not a DN says nothing about the directory: invalidDNSyntax, as from slapd.
    sender.send_result(OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid DN"));
    return;
  }
  if (ndn.empty()) {
    sender.send_result(invalid);
    return;
  }
  std::optional<backend::CostExcess> refused;
  const HandlerOptions& options = context_.options();
  if (context_.is_root_ndn(ndn) && !options.root_password.empty()) {
    switch (check_value(bind.simple_password, options.root_password, cheap_only, state.password,
                        refused)) {
      case Check::kMatch:
        session.set_identity(bind.name, ndn, /*root=*/true);
        OperationCounters::count_auth(state.counters());
        sender.send_result(OwnedResult::success());
        return;
      case Check::kCostly:
        // Before the entry: the rootdn's password is tried first, on the worker too.
        hand_to_worker(request, session, state, sender);
        return;
      case Check::kNoMatch:
        break;  // As slapd: a rootdn that also names an entry may bind with the entry's password.
    }
  }

  // RFC 4513 §5.1.3: the check is made as anonymous, which the policy must grant `auth`.
  const Identity anonymous;
  const OperationAccess access(context_, state, anonymous);
  bool matched = false;
  bool costly = false;
  // The password policy of the entry, if one governs it, and whether it is locked already (then
  // the password is not checked at all, as in slapd).
  std::optional<PasswordPolicy> policy;
  bool locked = false;
  bool lock_durable = true;
  const UnixMicros now = policy_ != nullptr ? now_micros() : 0;
  const auto on_entry = [&](const backend::EntryRef& entry) {
    std::optional<schema::Entry> content;
    if (access.rules().needs_entry()) {
      content = entry.materialize();
    }
    if (access.may(ndn, content, AccessAttribute::of(context_.user_password_type()),
                   AccessLevel::kAuth) != AccessDecision::kAllowed) {
      return;  // Denied, or failed: then answered below.
    }
    // With a policy, the entry is read once for its password and its policy state.
    const std::vector<std::string_view>* passwords = &state.bind_values;
    if (policy_ != nullptr) {
      state.bind_state.read(entry, state.bind_state_values);
      state.bind_state.history.clear();  // Views into this entry: not kept past the lookup.
      passwords = &state.bind_state_values[PasswordState::kUserPassword];
    } else {
      entry.values_into("userPassword", state.bind_values);
    }
    if (policy_ != nullptr && !passwords->empty()) {
      // ITS#7089: an entry without a password is not the policy's (nothing to count).
      const std::vector<std::string_view>& subentry =
          state.bind_state_values[PasswordState::kPolicySubentry];
      state.bind_subentry.assign(subentry.empty() ? std::string_view() : subentry.front());
      // The policy entry is read in the side transaction: this one's views are in use.
      policy =
          policy_->policy_for(state.bind_subentry, state.side_txn(), state.policy_memo, state.dn);
      if (policy.has_value()) {
        state.bind_entry_dn.assign(entry.dn());
        PasswordState& effective = state.bind_effective;
        effective = state.bind_state;
        policy_->failures().overlay(ndn, effective, lock_durable);
        locked = account_locked(effective, *policy, now, nullptr);
        if (locked) {
          return;
        }
      }
    }
    for (const std::string_view value : *passwords) {
      const Check check =
          check_value(bind.simple_password, value, cheap_only, state.password, refused);
      if (check == Check::kMatch) {
        matched = true;
        return;
      }
      costly = costly || check == Check::kCostly;  // A later cheap value may still match.
    }
  };
  // By the normalized name: the directory keys it without normalizing it again. std::ref: the
  // std::function holds a pointer to the lambda instead of a heap copy of it.
  const Status status =
      context_.directory().lookup_normalized(state.txn(), ndn, std::ref(on_entry));
  if (!status.ok() && status.code() != StatusCode::kNoSuchObject &&
      status.code() != StatusCode::kInvalidDnSyntax) {
    sender.send_status(status);  // A storage failure is not the client's doing.
    return;
  }
  if (access.failed()) {
    sender.send_status(access.failure());  // Logs it.
    return;
  }
  if (policy.has_value() && (matched || !costly)) {
    if (refused.has_value() && !matched) {
      log_refusal(request, session, ndn, *refused);
    }
    finish_with_policy(request, session, state, sender, ndn, *policy, locked, lock_durable,
                       matched);
    return;
  }
  if (matched) {
    session.set_identity(bind.name, ndn, /*root=*/false);
    OperationCounters::count_auth(state.counters());
    sender.send_result(OwnedResult::success());
    return;
  }
  if (costly) {
    hand_to_worker(request, session, state, sender);  // It notes any refusal again there.
    return;
  }
  if (refused.has_value()) {
    log_refusal(request, session, ndn, *refused);
  }
  sender.send_result(invalid);
}

void BindOperation::finish_with_policy(const LdapMessage& request, ServerSession& session,
                                       ServerWorkerState& state, ResultSender& sender,
                                       std::string_view ndn, const PasswordPolicy& policy,
                                       bool locked, bool lock_durable, bool matched) const {
  const bool control = requests_policy_control(request);
  const UnixMicros now = now_micros();
  FailureTable& failures = policy_->failures();
  if (locked) {
    answer_locked(request, ndn, lock_durable, sender);
    return;
  }
  if (!matched) {
    if (failures.record_failure(ndn, state.bind_entry_dn, state.bind_state, policy, now) ==
        FailureTable::Failure::kLocked) {
      answer_locked(request, ndn, /*lock_durable=*/false, sender);
      return;
    }
    if (control) {
      attach_policy_control(sender, PolicyResponse{});
    }
    sender.send_result(OwnedResult::error(ResultCode::kInvalidCredentials, ""));
    return;
  }
  if (failures.record_success(ndn, state.bind_entry_dn, state.bind_state, policy, now)) {
    answer_locked(request, ndn, /*lock_durable=*/false, sender);
    return;
  }
  const BindVerdict verdict = judge_successful_bind(state.bind_state, policy, now);
  if (verdict.refuse) {
    if (control) {
      attach_policy_control(sender, verdict.response);
    }
    sender.send_result(OwnedResult::error(ResultCode::kInvalidCredentials, ""));
    return;
  }
  if (verdict.use_grace) {
    grace_login(request, session, state, sender, ndn, policy, now);
    return;
  }
  session.set_identity(request.bind_request.name, ndn, /*root=*/false);
  if (verdict.must_change) {
    session.restrict_to_password_change();
  }
  OperationCounters::count_auth(state.counters());
  if (control) {
    attach_policy_control(sender, verdict.response);
  }
  sender.send_result(OwnedResult::success());
}

namespace {

// A bind answered from the writer thread (a locked account once its lock is durable, a grace
// login once its use is written): the open operation and what of the request the answer needs.
class PolicyReply {
 public:
  PolicyReply(std::unique_ptr<listener::OpenOperation> open, const LdapMessage& request)
      : open_(std::move(open)),
        control_(requests_policy_control(request)),
        name_(request.bind_request.name) {
    request_.message_id = request.message_id;
    request_.op = request.op;
  }
  bool abandoned() const { return open_->abandoned(); }
  const std::string& name() const { return name_; }
  void send(ResultCode code, const PolicyResponse& response) {
    OpenOperationSink sink(*open_);
    ResultSender sender(request_, sink);
    if (control_) {
      attach_policy_control(sender, response);
    }
    sender.send_result(code == ResultCode::kSuccess ? OwnedResult::success()
                                                    : OwnedResult::error(code, ""));
  }

 private:
  const std::unique_ptr<listener::OpenOperation> open_;
  const bool control_;
  const std::string name_;
  LdapMessage request_;
};

}  // namespace

void BindOperation::answer_locked(const LdapMessage& request, std::string_view ndn,
                                  bool lock_durable, ResultSender& sender) const {
  PolicyResponse response;
  if (policy_->use_lockout()) {
    response.error = PolicyError::kAccountLocked;
  }
  if (lock_durable) {
    if (requests_policy_control(request)) {
      attach_policy_control(sender, response);
    }
    sender.send_result(OwnedResult::error(ResultCode::kInvalidCredentials, ""));
    return;
  }
  // Not yet committed: the answer waits for the write that carries the lock, so that no client
  // is told of a lockout a crash could forget.
  std::unique_ptr<listener::OpenOperation> open = sender.detach();
  if (open == nullptr) {
    sender.send_result(OwnedResult::error(ResultCode::kBusy, "account state being written"));
    return;
  }
  auto reply = std::make_shared<PolicyReply>(std::move(open), request);
  policy_->failures().when_lock_durable(ndn, [reply, response](bool durable) {
    reply->send(ResultCode::kInvalidCredentials, durable ? response : PolicyResponse{});
  });
}

void BindOperation::grace_login(const LdapMessage& request, ServerSession& session,
                                ServerWorkerState& state, ResultSender& sender,
                                std::string_view ndn, const PasswordPolicy& policy,
                                UnixMicros now) const {
  std::unique_ptr<listener::OpenOperation> open = sender.detach();
  if (open == nullptr) {
    sender.send_result(OwnedResult::error(ResultCode::kBusy, "grace login not recorded"));
    return;
  }
  auto reply = std::make_shared<PolicyReply>(std::move(open), request);
  auto job = std::make_unique<backend::UpdateJob>();
  job->context.internal = true;  // Not an update that should drop the lockout state.
  job->change = backend::ModifyChange{
      state.bind_entry_dn,
      {backend::Modification{backend::ModificationKind::kAdd,
                             "pwdGraceUseTime",
                             {format_generalized_time(now, /*with_fraction=*/true)},
                             /*internal=*/true}}};
  // The grace logins left are counted again in the write transaction: two at once cannot both
  // take the last one.
  auto remaining = std::make_shared<std::int64_t>(0);
  job->check = [dn = state.bind_entry_dn, policy, now, remaining](const backend::WriteView& view) {
    BindVerdict verdict;
    NUMADIR_RETURN_IF_ERROR(view.lookup(dn, [&](const backend::EntryRef& entry) {
      verdict = judge_successful_bind(PasswordState::from_entry(entry), policy, now);
    }));
    if (!verdict.use_grace) {
      return Status(StatusCode::kUnwillingToPerform, "no grace login left");
    }
    *remaining = verdict.response.grace_authns_remaining.value_or(0);
    return Status();
  };
  job->done = [reply, remaining, &session, ndn = std::string(ndn)](Status status) {
    if (reply->abandoned()) {
      return;
    }
    if (!status.ok()) {
      PolicyResponse expired;
      expired.error = PolicyError::kPasswordExpired;
      reply->send(ResultCode::kInvalidCredentials, expired);
      return;
    }
    session.set_identity(reply->name(), ndn, /*root=*/false);
    PolicyResponse grace;
    grace.grace_authns_remaining = *remaining;
    reply->send(ResultCode::kSuccess, grace);
  };
  if (!context_.directory().try_submit_update(job)) {
    reply->send(ResultCode::kBusy, PolicyResponse{});  // `job`, destroyed, releases the reply.
  }
}

void BindOperation::hand_to_worker(const LdapMessage& request, ServerSession& session,
                                   ServerWorkerState& state, ResultSender& sender) const {
  threadpool::TaskPool* pool = state.helping();
  std::unique_ptr<listener::OpenOperation> open = pool != nullptr ? sender.detach() : nullptr;
  if (open == nullptr) {
    simple(request, session, state, sender, /*cheap_only=*/false);
    return;
  }
  auto verification = std::make_unique<Verification>(*this, request, session, std::move(open));
  Verification& kept = *verification;
  std::unique_ptr<threadpool::Task> task = std::move(verification);
  if (!pool->try_submit(task)) {
    kept.answer_busy();  // `task` still owns it; destroying it releases the operation.
  }
}

void BindOperation::log_refusal(const LdapMessage& request, const ServerSession& session,
                                std::string_view ndn, const backend::CostExcess& refused) const {
  std::string line = "conn=" + std::to_string(session.info().id) +
                     " msgid=" + std::to_string(request.message_id) + " BIND dn=\"";
  for (const char c : ndn) {
    if (c == '\n' || c == '\r') {
      line += ' ';  // One line per refusal, whatever the DN holds.
      continue;
    }
    if (c == '"' || c == '\\') {
      line += '\\';
    }
    line += c;
  }
  line += "\" refused a userPassword value without checking it: " + describe_cost_excess(refused) +
          "\n";
  if (AccessLog* log = context_.options().refusal_log; log != nullptr) {
    line.pop_back();  // The log ends its lines itself.
    log->message(line);
  } else {
    std::fprintf(stderr, "numadir: %s", line.c_str());
  }
}

void BindOperation::external(const LdapMessage& request, ServerSession& session,
                             ResultSender& sender) const {
  // RFC 4513 §5.2.3: the identity comes from the lower layer: over ldapi:// the client process's
  // uid and gid (SO_PEERCRED, slapd's peercred DN), otherwise the TLS client certificate.
  Result<std::string> dn = Result<std::string>(invalid_argument(""));
  if (const std::optional<listener::PeerCredentials>& local = session.info().peer_credentials) {
    dn = peercred_dn(local->uid, local->gid);
  } else {
    const std::optional<listener::TlsPeer> peer = session.tls();
    if (!peer.has_value() || !peer->has_certificate || !peer->verified) {
      sender.send_result(OwnedResult::error(ResultCode::kInappropriateAuthentication,
                                            peer.has_value() && peer->has_certificate
                                                ? "client certificate not verified"
                                                : "no TLS client certificate"));
      return;
    }
    dn = expand_external_map(context_.options().external_map, *peer);
  }
  if (dn.ok() && context_.options().external_rules != nullptr) {
    dn = context_.options().external_rules->map(*dn);  // [[sasl.external_map]]: first match.
  }
  Result<std::string> ndn = dn.ok() ? context_.normalize_dn(*dn) : Result<std::string>(dn.status());
  if (!ndn.ok() || ndn->empty()) {
    sender.send_result(OwnedResult::error(ResultCode::kInvalidCredentials,
                                          session.info().peer_credentials.has_value()
                                              ? "peer credentials do not map to a DN"
                                              : "client certificate subject does not map to a DN"));
    return;
  }
  // An authorization identity, if any, must be the authenticated one (no proxy authorization).
  const std::optional<std::string_view> authzid = request.bind_request.sasl_credentials;
  if (authzid.has_value() && !authzid->empty()) {
    Result<std::string> asked = authzid->starts_with("dn:")
                                    ? context_.normalize_dn(authzid->substr(3))
                                    : Result<std::string>(invalid_argument(""));
    if (!asked.ok() || *asked != *ndn) {
      sender.send_result(OwnedResult::error(ResultCode::kInsufficientAccessRights,
                                            "authorization identity not permitted"));
      return;
    }
  }
  session.set_identity(*dn, *ndn, /*root=*/context_.is_root_ndn(*ndn));
  sender.send_result(OwnedResult::success());
}

}  // namespace numadir::server
