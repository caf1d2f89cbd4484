// listener/wire/message_decoder.h: decodes one LDAPMessage PDU (as framed by frame_pdu) into
// the LdapMessage model.
//
// Thread contract: a function of its arguments; the caller owns the message and the buffer.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "listener/wire/ldap_message.h"

namespace numadir::listener::wire {

struct DecodeLimits {
  // Constructed levels below the PDU's outer SEQUENCE (message, operation, filter nesting, ...).
  std::uint32_t max_depth = 64;
};

// Decodes `pdu`, which must be exactly one LDAPMessage (identifier, length and content, no more),
// into `message`. Every string in `message` becomes a view into `pdu`, which must outlive them.
// `message` is reset first and reused without allocating when its vectors have the capacity.
// Returns: ok, or kMalformed with "LDAPMessage: offset N: <problem>" for any encoding RFC 4511
//   §5.1 and §4 do not allow (wrong or unknown tags, bad lengths, non-minimal or out-of-range
//   integers, booleans other than 0x00 / 0xFF, missing or extra elements, nesting deeper than
//   limits.max_depth). Constraints that slapd answers with a result rather than a disconnect
//   (e.g. an AddRequest attribute without values) are left to the server. When the message ID could
//   be read before the failure, message.message_id holds it (the server may name it in its log);
//   otherwise it is 0.
Status decode_message(std::string_view pdu, LdapMessage& message, const DecodeLimits& limits = {});

}  // namespace numadir::listener::wire
