// tests/listener/wire/pdu_bytes.h: helpers shared by the message decoder tests to spell PDUs as
// hex, build elements too big to spell, and describe decode results.
//
// Thread contract: plain functions and constants; test threads only.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include <doctest/doctest.h>

#include "base/check.h"
#include "base/status.h"
#include "listener/wire/ber_reader.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"

namespace numadir::listener::wire::testing {

// Returns: the bytes spelled by `text`: pairs of hex digits, spaces ignored.
inline std::string hex(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    while (i < text.size() && text[i] == ' ') {
      ++i;
    }
    if (i == text.size()) {
      break;
    }
    unsigned byte = 0;
    const char* const end = text.data() + std::min(i + 2, text.size());
    const auto [last, error] = std::from_chars(text.data() + i, end, byte, 16);
    NUMADIR_CHECK(error == std::errc() && last == text.data() + i + 2, "hex(): bad digit pair");
    out.push_back(static_cast<char>(byte));
  }
  return out;
}

// Returns: the element with identifier `tag` and content `content`, with a minimal length.
// For inputs too big or too deep to spell out in hex.
inline std::string tlv(std::uint8_t tag, std::string_view content) {
  std::string out(1, static_cast<char>(tag));
  const std::size_t length = content.size();
  if (length < 0x80) {
    out += static_cast<char>(length);
  } else {
    std::string octets;
    for (std::size_t rest = length; rest != 0; rest >>= 8) {
      octets.insert(octets.begin(), static_cast<char>(rest & 0xff));
    }
    out += static_cast<char>(0x80 | octets.size());
    out += octets;
  }
  out += content;
  return out;
}

// Returns: `bytes` with the byte at `index` replaced by `value`.
inline std::string with_byte(std::string bytes, std::size_t index, std::uint8_t value) {
  NUMADIR_CHECK(index < bytes.size(), "with_byte(): index past the end");
  bytes[index] = static_cast<char>(value);
  return bytes;
}

// Returns: true if `view` lies inside `buffer` (a view into it, not a copy).
inline bool points_into(std::string_view view, std::string_view buffer) {
  const std::less_equal<const char*> le;
  return le(buffer.data(), view.data()) &&
         le(view.data() + view.size(), buffer.data() + buffer.size());
}

// Returns: "ok" or the Status as text ("malformed: LDAPMessage: offset N: ..."), so that a failed
// CHECK shows what the decoder said.
inline std::string decode(std::string_view pdu, LdapMessage& message,
                          const DecodeLimits& limits = {}) {
  const Status status = decode_message(pdu, message, limits);
  return status.ok() ? "ok" : status.to_string();
}

// Returns: the text of the kMalformed Status decode_message gives for `what` at `offset`.
inline std::string malformed_at(std::size_t offset, std::string_view what) {
  return "malformed: LDAPMessage: offset " + std::to_string(offset) + ": " + std::string(what);
}

// SearchRequest, ID 2: base "dc=x", wholeSubtree, derefAlways, sizeLimit 10, timeLimit 20,
// typesOnly FALSE, (&(uid=jd)(objectClass=*)), attributes cn and 1.1. Byte offsets of the
// fields' content: scope 15, deref 18, sizeLimit 21, timeLimit 24, typesOnly 27; filter at 28.
inline const std::string kSearch =
    hex("30 3f 02 01 02 63 3a"
        " 04 04 64 63 3d 78 0a 01 02 0a 01 03 02 01 0a 02 01 14 01 01 00"
        " a0 18 a3 09 04 03 75 69 64 04 02 6a 64 87 0b 6f 62 6a 65 63 74 43 6c 61 73 73"
        " 30 09 04 02 63 6e 04 03 31 2e 31");
constexpr std::size_t kScopeOffset = 15;
constexpr std::size_t kDerefOffset = 18;
constexpr std::size_t kSizeLimitOffset = 21;
constexpr std::size_t kTimeLimitOffset = 24;
constexpr std::size_t kTypesOnlyOffset = 27;

// BindRequest, ID 1: version 3, "cn=a", simple "pw". The authentication choice is at 16.
inline const std::string kSimpleBind =
    hex("30 12 02 01 01 60 0d 02 01 03 04 04 63 6e 3d 61 80 02 70 77");

// Returns: a SearchRequest (ID 2, base "", baseObject, no limits, no attributes) with `filter`
// as its filter element, which starts at kFilterOffset while the PDU is under 128 bytes.
inline std::string search_with_filter(std::string_view filter) {
  return tlv(ber::kSequence,
             hex("02 01 02") + tlv(ber::application_constructed(3),
                                   hex("04 00 0a 01 00 0a 01 00 02 01 00 02 01 00 01 01 00") +
                                       std::string(filter) + hex("30 00")));
}
constexpr std::size_t kFilterOffset = 24;

// Returns: `count` nested NOT filters around (a=*).
inline std::string nested_nots(std::size_t count) {
  std::string filter = hex("87 01 61");
  for (std::size_t i = 0; i < count; ++i) {
    filter = tlv(ber::context_constructed(2), filter);
  }
  return filter;
}

// A PDU decode_message must refuse, and the offset and problem it must name.
struct Rejected {
  const char* name;
  std::string pdu;
  std::size_t offset;
  const char* what;
};

// Decodes each PDU in a SUBCASE of its own, into a message whose ID was 99, and checks the
// Status and that message_id is then `message_id` (0 when the failure comes before the ID).
inline void check_rejected(std::int32_t message_id, std::initializer_list<Rejected> cases) {
  for (const Rejected& c : cases) {
    SUBCASE(c.name) {
      LdapMessage m;
      m.message_id = 99;
      CHECK(decode(c.pdu, m) == malformed_at(c.offset, c.what));
      CHECK(m.message_id == message_id);
    }
  }
}

inline constexpr const char* kTrailing = "unexpected data after the last element";
inline constexpr const char* kNoElement = "element expected, end of data found";
inline constexpr const char* kBadBoolean = "boolean TRUE not encoded as 0xFF (RFC 4511 5.1)";

}  // namespace numadir::listener::wire::testing
