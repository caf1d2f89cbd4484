// server/operations/bind_operation.cc: the Bind operation (RFC 4511 §4.2, RFC 4513 §5): anonymous,
// simple with the rootdn's password or an entry's userPassword; SASL EXTERNAL over TLS with a
// client certificate (RFC 4513 §5.2.3) when TLS is configured.
//
// Privacy: a simple bind that fails for any reason tied to the name or the password (bad DN
// syntax, no such entry, no userPassword, a wrong password, a stored value we cannot read)
// gets invalidCredentials with the same empty diagnostic, so a client cannot tell which.
#include <functional>
#include <string>

#include "backend/password_scheme.h"
#include "server/operations/external_map.h"
#include "server/operations/operation_handler.h"

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

void OperationHandler::bind(const LdapMessage& request, ServerSession& session,
                            listener::ResponseSink& sink) const {
  const listener::wire::BindRequest& bind = request.bind_request;
  // Whatever happens below, a bind first drops the identity the connection had (RFC 4513 §4:
  // a failed bind leaves the connection anonymous).
  session.clear_identity();

  if (bind.version != 3) {
    send_result(request,
                OwnedResult::error(ResultCode::kProtocolError,
                                   "requested protocol version not "
                                   "supported"),
                sink);
    return;
  }
  if (bind.method == BindMethod::kSasl) {
    if (bind.sasl_mechanism == "EXTERNAL" && options_.tls) {
      bind_external(request, session, sink);
      return;
    }
    send_result(
        request,
        OwnedResult::error(ResultCode::kAuthMethodNotSupported, "SASL mechanism not supported"),
        sink);
    return;
  }
  const OwnedResult invalid = OwnedResult::error(ResultCode::kInvalidCredentials, "");
  if (bind.simple_password.empty()) {
    if (bind.name.empty()) {
      send_result(request, OwnedResult::success(), sink);  // Anonymous (RFC 4513 §5.1.1).
      return;
    }
    if (!options_.allow_unauthenticated_bind) {
      send_result(request,
                  OwnedResult::error(ResultCode::kUnwillingToPerform,
                                     "unauthenticated bind (DN with no password) disallowed"),
                  sink);
      return;
    }
    // RFC 4513 §5.1.2: the name is not checked and the connection stays anonymous.
    send_result(request, OwnedResult::success(), sink);
    return;
  }

  if (options_.simple_bind_requires_tls && !session.has_tls()) {
    // RFC 4513 §5.1.3 / §6.3.3: a password is never accepted in the clear.
    send_result(request,
                OwnedResult::error(ResultCode::kConfidentialityRequired,
                                   "TLS confidentiality required for simple binds"),
                sink);
    return;
  }

  thread_local std::string ndn;  // Per-thread: keeps its capacity across binds.
  if (!normalize_dn_into(bind.name, ndn).ok() || ndn.empty()) {
    send_result(request, invalid, sink);
    return;
  }

  if (!root_ndn_.empty() && ndn == root_ndn_ && !options_.root_password.empty()) {
    const std::string_view stored[] = {options_.root_password};
    if (any_value_matches(bind.simple_password, stored, verify_policy_)) {
      session.set_identity(bind.name, ndn, /*root=*/true);
      operation_counters_.count_auth();
      send_result(request, OwnedResult::success(), sink);
      return;
    }
    // As slapd: a rootdn that also names an entry may still bind with the entry's password.
  }

  // RFC 4513 §5.1.3: the check is made as anonymous, which the policy must grant `auth`.
  const Identity anonymous;
  const DirectoryGroups groups(*this);
  const Requester requester_anonymous = requester(anonymous, groups);
  bool matched = false;
  const auto on_entry = [&](const backend::EntryRef& entry) {
    std::optional<schema::Entry> content;
    if (access_->needs_entry()) {
      content = entry.materialize();
    }
    if (!may(requester_anonymous, ndn, content, AccessAttribute::of(user_password_type_),
             AccessLevel::kAuth)) {
      return;
    }
    matched = any_value_matches(bind.simple_password, entry.values("userPassword"), verify_policy_);
  };
  // By the normalized name: the directory keys it without normalizing it again. std::ref: the
  // std::function holds a pointer to the lambda instead of a heap copy of it.
  const Status status = directory_.lookup_normalized(read_txn(), ndn, std::ref(on_entry));
  if (!status.ok() && status.code() != StatusCode::kNoSuchObject &&
      status.code() != StatusCode::kInvalidDnSyntax) {
    send_status(request, status, sink);  // A storage failure is not the client's doing.
    return;
  }
  if (!matched) {
    send_result(request, invalid, sink);
    return;
  }
  session.set_identity(bind.name, ndn, /*root=*/false);
  operation_counters_.count_auth();
  send_result(request, OwnedResult::success(), sink);
}

void OperationHandler::bind_external(const LdapMessage& request, ServerSession& session,
                                     listener::ResponseSink& sink) const {
  // RFC 4513 §5.2.3: the identity comes from the TLS client certificate.
  const std::optional<listener::TlsPeer> peer = session.tls();
  if (!peer.has_value() || !peer->has_certificate || !peer->verified) {
    send_result(request,
                OwnedResult::error(ResultCode::kInappropriateAuthentication,
                                   peer.has_value() && peer->has_certificate
                                       ? "client certificate not verified"
                                       : "no TLS client certificate"),
                sink);
    return;
  }
  Result<std::string> dn = expand_external_map(options_.external_map, *peer);
  Result<std::string> ndn = dn.ok() ? normalize_dn(*dn) : Result<std::string>(dn.status());
  if (!ndn.ok() || ndn->empty()) {
    send_result(request,
                OwnedResult::error(ResultCode::kInvalidCredentials,
                                   "client certificate subject does not map to a DN"),
                sink);
    return;
  }
  // An authorization identity, if any, must be the authenticated one (no proxy authorization).
  const std::optional<std::string_view> authzid = request.bind_request.sasl_credentials;
  if (authzid.has_value() && !authzid->empty()) {
    Result<std::string> asked = authzid->starts_with("dn:")
                                    ? normalize_dn(authzid->substr(3))
                                    : Result<std::string>(invalid_argument(""));
    if (!asked.ok() || *asked != *ndn) {
      send_result(request,
                  OwnedResult::error(ResultCode::kInsufficientAccessRights,
                                     "authorization identity not permitted"),
                  sink);
      return;
    }
  }
  session.set_identity(*dn, *ndn, /*root=*/!root_ndn_.empty() && *ndn == root_ndn_);
  send_result(request, OwnedResult::success(), sink);
}

}  // namespace numadir::server
