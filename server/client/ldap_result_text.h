// server/client/ldap_result_text.h: LDAP result codes as an admin reads them in numadir's client
// messages ("invalidCredentials (49): <diagnostic>").
//
// Thread contract: pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

#include "listener/wire/ldap_message.h"

namespace numadir::server {

// Returns: the RFC 4511 name of `code` ("invalidCredentials"), or "" for a code without one.
std::string_view result_code_name(listener::wire::ResultCode code);

// Returns: the result code's name and number, and the diagnostic if any:
//   "invalidCredentials (49): <diagnostic>"; an unnamed code reads "result code 4096".
std::string describe_ldap_result(const listener::wire::LdapResult& result);

}  // namespace numadir::server
