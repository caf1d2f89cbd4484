// server/operations/extended_operation.cc: see extended_operation.h.
#include "server/operations/extended_operation.h"

#include <optional>
#include <string>

#include "server/operations/root_dse.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ResultCode;

void ExtendedOperation::run(const LdapMessage& request, ServerSession& session,
                            ServerWorkerState& state, ResultSender& sender) const {
  const std::string_view name = request.extended.name.value_or(std::string_view());
  if (name == kWhoAmIOid) {
    if (request.extended.value.has_value()) {
      sender.send_extended(
          OwnedResult::error(ResultCode::kProtocolError, "no request data expected"), std::nullopt);
      return;
    }
    const Identity who = session.identity();
    // RFC 4532 §2: the authzId, empty for anonymous.
    const std::string authz_id = who.anonymous() ? std::string() : "dn:" + who.dn;
    sender.send_extended(OwnedResult::success(), authz_id);
    return;
  }
  if (name == kPasswordModifyOid) {
    password_modify_.run(request, session, state, sender);
    return;
  }
  if (name == kStartTlsOid) {
    sender.send_extended(OwnedResult::error(ResultCode::kUnavailable, "Could not initialize TLS"),
                         std::nullopt);
    return;
  }
  sender.send_extended(
      OwnedResult::error(ResultCode::kProtocolError, "unsupported extended operation"),
      std::nullopt);
}

}  // namespace numadir::server
