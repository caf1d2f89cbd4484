// server/operations/result_codes.h: the one place where a Status from schema/ or backend/ becomes
// an LDAP result (RFC 4511 §4.1.9): its resultCode, matchedDN and diagnosticMessage, worded like
// slapd's.
//
// Thread contract: pure functions of their arguments; any thread may call them.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "listener/wire/ldap_message.h"

namespace numadir::server {

// An LDAPResult that owns its strings, for building a response.
struct OwnedResult {
  listener::wire::ResultCode code = listener::wire::ResultCode::kSuccess;
  std::string matched_dn;
  std::string diagnostic;
  std::vector<std::string> referrals;  // Sent with kReferral (RFC 4511 §4.1.10).

  static OwnedResult success() { return {}; }
  static OwnedResult error(listener::wire::ResultCode code, std::string diagnostic) {
    return OwnedResult{code, std::string(), std::move(diagnostic), {}};
  }
};

// Returns: the result code a Status code stands for (kOk is success). Codes without an LDAP
// counterpart: kMalformed -> protocolError, kInvalidArgument and kUnsupported ->
// unwillingToPerform, kLimitExceeded -> adminLimitExceeded, kNotFound -> noSuchObject,
// kAlreadyExists -> entryAlreadyExists, kStorage / kIo / kInternal / kAccessCheckFailed -> other.
listener::wire::ResultCode result_code_for(StatusCode code);

// Returns: the LDAP result for `status`. kNoSuchObject carries the matched DN in its message
// (backend convention): it becomes matchedDN with an empty diagnostic, as slapd sends it.
// kInvalidDnSyntax reads "invalid DN" (slapd's text; the parser's offset stays in the log).
// Storage, I/O and internal failures read "internal error", and an access decision a failed read
// decided (kAccessCheckFailed) reads "access check failed": their text is for the log, not the
// client. Everything else keeps its message as the diagnostic.
OwnedResult result_from_status(const Status& status);

}  // namespace numadir::server
