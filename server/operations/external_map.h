// server/operations/external_map.h: SASL EXTERNAL's mapping from a client certificate's subject to
// the DN the connection is bound as (tls.external_map).
//
// The template is a DN with placeholders: {subject} stands for the whole subject DN (RFC 4514
// string, as OpenSSL prints it), {NAME} for the value of the subject attribute NAME (its short
// name as OpenSSL prints it: cn, uid, emailAddress, o, ou, ...; case-insensitive; the first
// one when repeated), escaped as an RDN value (RFC 4514 §2.4). "{subject}" (the default) binds
// as the subject itself, as slapd does without authz-regexp; "uid={cn},ou=people,dc=example,
// dc=com" maps a certificate for CN=jdoe to that user's entry.
//
// Thread contract: a function of its arguments.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "listener/tls.h"

namespace numadir::server {

// Returns: `map` with its placeholders replaced from `peer`'s subject.
// Errors: kInvalidArgument naming a placeholder the subject lacks or an unclosed '{'.
Result<std::string> expand_external_map(std::string_view map, const listener::TlsPeer& peer);

}  // namespace numadir::server
