// listener/wire/message_encoder.h: encodes the LdapMessage model as one LDAPMessage PDU, in the
// form OpenLDAP's liblber writes (minimal lengths and integers, BOOLEAN TRUE as 0xFF, DEFAULT
// values and absent OPTIONAL fields left out), so that a PDU decoded from a real client and
// encoded again comes out byte-identical.
//
// Thread contract: a function of its arguments; the caller owns the writer.
#pragma once

#include "listener/wire/ber_writer.h"
#include "listener/wire/ldap_message.h"

namespace numadir::listener::wire {

// Appends the PDU for `message` to `writer` (several messages may be appended to one writer,
// e.g. the entries and the SearchResultDone of one search, and sent with one write).
// Requires: `message` is complete (e.g. a SearchRequest's filter is non-empty; an
//   ExtendedRequest has a name) and `writer` has no open element.
void encode_message(const LdapMessage& message, BerWriter& writer);

}  // namespace numadir::listener::wire
