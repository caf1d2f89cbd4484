// server/operations/bind_operation.cc: see bind_operation.h.
#include "server/operations/bind_operation.h"

#include <functional>
#include <optional>
#include <string>

#include "backend/password_scheme.h"
#include "server/operations/external_map.h"
#include "server/operations/operation_access.h"

namespace numadir::server {

using listener::wire::BindMethod;
using listener::wire::LdapMessage;
using listener::wire::ResultCode;

namespace {

// Returns: true if `password` matches one of `stored`. Values we cannot read (unknown scheme,
// malformed, over the cost policy, cleartext while refused) never match.
template <typename Values>
bool any_value_matches(std::string_view password, const Values& stored,
                       const backend::VerifyPolicy& policy) {
  for (const auto& value : stored) {
    if (Result<bool> verified = backend::verify_password(password, value, policy);
        verified.ok() && *verified) {
      return true;
    }
  }
  return false;
}

}  // namespace

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
    if (bind.sasl_mechanism == "EXTERNAL" && context_.options().tls) {
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
  if (context_.options().simple_bind_requires_tls && !session.has_tls()) {
    // RFC 4513 §5.1.3 / §6.3.3: a password is never accepted in the clear.
    sender.send_result(OwnedResult::error(ResultCode::kConfidentialityRequired,
                                          "TLS confidentiality required for simple binds"));
    return;
  }
  simple(request, session, state, sender);
}

void BindOperation::simple(const LdapMessage& request, ServerSession& session,
                           ServerWorkerState& state, ResultSender& sender) const {
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
  const HandlerOptions& options = context_.options();
  if (context_.is_root_ndn(ndn) && !options.root_password.empty()) {
    const std::string_view stored[] = {options.root_password};
    if (any_value_matches(bind.simple_password, stored, context_.verify_policy())) {
      session.set_identity(bind.name, ndn, /*root=*/true);
      OperationCounters::count_auth(state.counters());
      sender.send_result(OwnedResult::success());
      return;
    }
    // As slapd: a rootdn that also names an entry may still bind with the entry's password.
  }

  // RFC 4513 §5.1.3: the check is made as anonymous, which the policy must grant `auth`.
  const Identity anonymous;
  const OperationAccess access(context_, state, anonymous);
  bool matched = false;
  const auto on_entry = [&](const backend::EntryRef& entry) {
    std::optional<schema::Entry> content;
    if (access.rules().needs_entry()) {
      content = entry.materialize();
    }
    if (access.may(ndn, content, AccessAttribute::of(context_.user_password_type()),
                   AccessLevel::kAuth) != AccessDecision::kAllowed) {
      return;  // Denied, or failed: then answered below.
    }
    matched = any_value_matches(bind.simple_password, entry.values("userPassword"),
                                context_.verify_policy());
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
  if (!matched) {
    sender.send_result(invalid);
    return;
  }
  session.set_identity(bind.name, ndn, /*root=*/false);
  OperationCounters::count_auth(state.counters());
  sender.send_result(OwnedResult::success());
}

void BindOperation::external(const LdapMessage& request, ServerSession& session,
                             ResultSender& sender) const {
  // RFC 4513 §5.2.3: the identity comes from the TLS client certificate.
  const std::optional<listener::TlsPeer> peer = session.tls();
  if (!peer.has_value() || !peer->has_certificate || !peer->verified) {
    sender.send_result(OwnedResult::error(ResultCode::kInappropriateAuthentication,
                                          peer.has_value() && peer->has_certificate
                                              ? "client certificate not verified"
                                              : "no TLS client certificate"));
    return;
  }
  Result<std::string> dn = expand_external_map(context_.options().external_map, *peer);
  Result<std::string> ndn = dn.ok() ? context_.normalize_dn(*dn) : Result<std::string>(dn.status());
  if (!ndn.ok() || ndn->empty()) {
    sender.send_result(OwnedResult::error(ResultCode::kInvalidCredentials,
                                          "client certificate subject does not map to a DN"));
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
