#include "listener/wire/message_decoder.h"

#include <cstdint>
#include <limits>
#include <string>

#include "listener/wire/ber_reader.h"
#include "listener/wire/detail/message_tags.h"
#include "listener/wire/filter_codec.h"

namespace numadir::listener::wire {
namespace {

constexpr std::int32_t kMaxInt = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kMinInt = std::numeric_limits<std::int32_t>::min();

// Reads an OPTIONAL primitive element with identifier `tag` if it comes next.
bool read_optional(BerReader& reader, std::uint8_t tag, std::optional<std::string_view>& out) {
  std::uint8_t next = 0;
  if (!reader.peek_tag(next) || next != tag) {
    return true;
  }
  std::string_view value;
  if (!reader.read_octets(tag, value)) {
    return false;
  }
  out = value;
  return true;
}

// SEQUENCE OF LDAPString / URI, appended to `out`.
bool read_string_sequence(BerReader& reader, std::uint8_t tag, std::vector<std::string_view>& out) {
  BerReader sequence = reader.enter(tag);
  while (!sequence.failed() && !sequence.at_end()) {
    std::string_view value;
    if (!sequence.read_octets(ber::kOctetString, value)) {
      return false;
    }
    out.push_back(value);
  }
  return !sequence.failed();
}

// LDAPResult ::= SEQUENCE { resultCode, matchedDN, diagnosticMessage, referral [3] OPTIONAL }
// as the first components of `reader`.
bool read_result(BerReader& reader, LdapResult& result) {
  std::int32_t code = 0;
  if (!reader.read_int32(ber::kEnumerated, kMinInt, kMaxInt, code) ||
      !reader.read_octets(ber::kOctetString, result.matched_dn) ||
      !reader.read_octets(ber::kOctetString, result.diagnostic_message)) {
    return false;
  }
  result.code = static_cast<ResultCode>(code);
  std::uint8_t tag = 0;
  if (reader.peek_tag(tag) && tag == detail::kReferralTag) {
    if (!read_string_sequence(reader, detail::kReferralTag, result.referrals)) {
      return false;
    }
    if (result.referrals.empty()) {
      return reader.fail("empty referral (SIZE (1..MAX))");
    }
  }
  return true;
}

// AttributeList / PartialAttributeList ::= SEQUENCE OF SEQUENCE { type, vals SET OF value }
bool read_attribute_list(BerReader& reader, AttributeList& list) {
  BerReader attributes = reader.enter(ber::kSequence);
  while (!attributes.failed() && !attributes.at_end()) {
    BerReader attribute = attributes.enter(ber::kSequence);
    std::string_view type;
    if (!attribute.read_octets(ber::kOctetString, type)) {
      return false;
    }
    list.add(type);
    BerReader values = attribute.enter(ber::kSet);
    while (!values.failed() && !values.at_end()) {
      std::string_view value;
      if (!values.read_octets(ber::kOctetString, value)) {
        return false;
      }
      list.add_value(value);
    }
    if (!attribute.expect_end()) {
      return false;
    }
  }
  return !attributes.failed();
}

bool read_bind_request(BerReader& op, BindRequest& bind) {
  if (!op.read_int32(ber::kInteger, 1, 127, bind.version) ||
      !op.read_octets(ber::kOctetString, bind.name)) {
    return false;
  }
  std::uint8_t tag = 0;
  if (!op.peek_tag(tag)) {
    return op.fail("bind authentication choice expected");
  }
  if (tag == detail::kSimpleAuthTag) {
    bind.method = BindMethod::kSimple;
    return op.read_octets(detail::kSimpleAuthTag, bind.simple_password);
  }
  if (tag == detail::kSaslAuthTag) {
    bind.method = BindMethod::kSasl;
    BerReader sasl = op.enter(detail::kSaslAuthTag);
    return sasl.read_octets(ber::kOctetString, bind.sasl_mechanism) &&
           read_optional(sasl, ber::kOctetString, bind.sasl_credentials) && sasl.expect_end();
  }
  // The choice is extensible (RFC 4511 §4.2): another context-specific tag number is a method
  // we do not implement, which the bind answers. Tag numbers 0 and 3 in the other form (a
  // constructed simple, a primitive sasl) are malformed, as are other classes.
  const std::uint8_t number = tag & 0x1f;
  const bool context_class = (tag & 0xc0) == 0x80;
  if (context_class && number != 0 && number != 3 && number != 0x1f) {
    bind.method = BindMethod::kUnsupported;
    bind.unsupported_tag = tag;
    return op.read_any(bind.unsupported_tag, bind.unsupported_credentials);
  }
  return op.fail("unknown bind authentication choice");
}

bool read_search_request(BerReader& op, SearchRequest& search) {
  std::int32_t scope = 0;
  std::int32_t deref = 0;
  if (!op.read_octets(ber::kOctetString, search.base_object) ||
      !op.read_int32(ber::kEnumerated, 0, 3, scope) ||
      !op.read_int32(ber::kEnumerated, 0, 3, deref) ||
      !op.read_int32(ber::kInteger, 0, kMaxInt, search.size_limit) ||
      !op.read_int32(ber::kInteger, 0, kMaxInt, search.time_limit) ||
      !op.read_boolean(ber::kBoolean, search.types_only) || !decode_filter(op, search.filter)) {
    return false;
  }
  search.scope = static_cast<SearchScope>(scope);
  search.deref_aliases = static_cast<DerefAliases>(deref);
  return read_string_sequence(op, ber::kSequence, search.attributes);
}

bool read_modify_request(BerReader& op, ModifyRequest& modify) {
  if (!op.read_octets(ber::kOctetString, modify.object)) {
    return false;
  }
  BerReader changes = op.enter(ber::kSequence);
  while (!changes.failed() && !changes.at_end()) {
    BerReader change = changes.enter(ber::kSequence);
    std::int32_t operation = 0;
    if (!change.read_int32(ber::kEnumerated, 0, 3, operation)) {
      return false;
    }
    modify.operations.push_back(static_cast<ModifyOperation>(operation));
    BerReader attribute = change.enter(ber::kSequence);
    std::string_view type;
    if (!attribute.read_octets(ber::kOctetString, type)) {
      return false;
    }
    modify.modifications.add(type);
    BerReader values = attribute.enter(ber::kSet);
    while (!values.failed() && !values.at_end()) {
      std::string_view value;
      if (!values.read_octets(ber::kOctetString, value)) {
        return false;
      }
      modify.modifications.add_value(value);
    }
    if (!attribute.expect_end() || !change.expect_end()) {
      return false;
    }
  }
  return !changes.failed();
}

bool read_modify_dn_request(BerReader& op, ModifyDnRequest& modify_dn) {
  return op.read_octets(ber::kOctetString, modify_dn.entry) &&
         op.read_octets(ber::kOctetString, modify_dn.new_rdn) &&
         op.read_boolean(ber::kBoolean, modify_dn.delete_old_rdn) &&
         read_optional(op, detail::kNewSuperiorTag, modify_dn.new_superior);
}

bool read_compare_request(BerReader& op, CompareRequest& compare) {
  if (!op.read_octets(ber::kOctetString, compare.entry)) {
    return false;
  }
  BerReader ava = op.enter(ber::kSequence);
  return ava.read_octets(ber::kOctetString, compare.attribute) &&
         ava.read_octets(ber::kOctetString, compare.value) && ava.expect_end();
}

bool read_controls(BerReader& message, std::vector<Control>& controls) {
  BerReader list = message.enter(detail::kControlsTag);
  while (!list.failed() && !list.at_end()) {
    BerReader element = list.enter(ber::kSequence);
    Control control;
    if (!element.read_octets(ber::kOctetString, control.type)) {
      return false;
    }
    std::uint8_t tag = 0;
    if (element.peek_tag(tag) && tag == ber::kBoolean &&
        !element.read_boolean(ber::kBoolean, control.criticality)) {
      return false;
    }
    if (!read_optional(element, ber::kOctetString, control.value) || !element.expect_end()) {
      return false;
    }
    controls.push_back(control);
  }
  return !list.failed();
}

// Reads a constructed protocolOp's content.
bool read_constructed_op(BerReader& op, LdapMessage& message) {
  switch (message.op) {
    case ProtocolOp::kBindRequest:
      return read_bind_request(op, message.bind_request);
    case ProtocolOp::kBindResponse:
      return read_result(op, message.result) &&
             read_optional(op, detail::kServerSaslCredsTag, message.server_sasl_creds);
    case ProtocolOp::kSearchRequest:
      return read_search_request(op, message.search_request);
    case ProtocolOp::kSearchResultEntry:
      return op.read_octets(ber::kOctetString, message.search_entry.object_name) &&
             read_attribute_list(op, message.search_entry.attributes);
    case ProtocolOp::kSearchResultReference:
      while (!op.at_end()) {
        std::string_view uri;
        if (!op.read_octets(ber::kOctetString, uri)) {
          return false;
        }
        message.uris.push_back(uri);
      }
      return !message.uris.empty() || op.fail("empty search result reference");
    case ProtocolOp::kModifyRequest:
      return read_modify_request(op, message.modify_request);
    case ProtocolOp::kAddRequest:
      return op.read_octets(ber::kOctetString, message.add_request.entry) &&
             read_attribute_list(op, message.add_request.attributes);
    case ProtocolOp::kModifyDnRequest:
      return read_modify_dn_request(op, message.modify_dn_request);
    case ProtocolOp::kCompareRequest:
      return read_compare_request(op, message.compare_request);
    case ProtocolOp::kExtendedRequest: {
      std::string_view name;
      if (!op.read_octets(detail::kRequestNameTag, name)) {
        return false;
      }
      message.extended.name = name;
      return read_optional(op, detail::kRequestValueTag, message.extended.value);
    }
    case ProtocolOp::kExtendedResponse:
      return read_result(op, message.result) &&
             read_optional(op, detail::kResponseNameTag, message.extended.name) &&
             read_optional(op, detail::kResponseValueTag, message.extended.value);
    case ProtocolOp::kIntermediateResponse:
      return read_optional(op, detail::kIntermediateNameTag, message.extended.name) &&
             read_optional(op, detail::kIntermediateValueTag, message.extended.value);
    case ProtocolOp::kSearchResultDone:
    case ProtocolOp::kModifyResponse:
    case ProtocolOp::kAddResponse:
    case ProtocolOp::kDelResponse:
    case ProtocolOp::kModifyDnResponse:
    case ProtocolOp::kCompareResponse:
      return read_result(op, message.result);
    case ProtocolOp::kUnbindRequest:
    case ProtocolOp::kDelRequest:
    case ProtocolOp::kAbandonRequest:
      break;
  }
  return op.fail("primitive operation encoded as constructed");
}

bool read_message(BerReader& top, LdapMessage& message) {
  BerReader body = top.enter(ber::kSequence);
  if (!top.expect_end()) {
    return false;
  }
  std::int32_t id = 0;
  if (!body.read_int32(ber::kInteger, 0, kMaxInt, id)) {
    return false;
  }
  message.message_id = id;
  std::uint8_t tag = 0;
  if (!body.peek_tag(tag)) {
    return body.fail("protocolOp expected");
  }
  const std::uint8_t number = tag & 0x1f;
  const ProtocolOpInfo* info = (tag & 0xc0) == 0x40 ? find_protocol_op(number) : nullptr;
  if (info == nullptr) {
    return body.fail("unknown protocolOp");
  }
  message.reset(id, info->op);
  if (info->primitive) {
    switch (message.op) {
      case ProtocolOp::kUnbindRequest:
        if (!body.read_null(ber::application(number))) {
          return false;
        }
        break;
      case ProtocolOp::kDelRequest:
        if (!body.read_octets(ber::application(number), message.dn)) {
          return false;
        }
        break;
      default:  // kAbandonRequest
        if (!body.read_int32(ber::application(number), 0, kMaxInt, message.abandon_id)) {
          return false;
        }
        break;
    }
  } else {
    BerReader op = body.enter(ber::application_constructed(number));
    if (op.failed() || !read_constructed_op(op, message) || !op.expect_end()) {
      return false;
    }
  }
  if (body.peek_tag(tag) && tag == detail::kControlsTag && !read_controls(body, message.controls)) {
    return false;
  }
  return body.expect_end();
}

}  // namespace

Status decode_message(std::string_view pdu, LdapMessage& message, const DecodeLimits& limits) {
  BerError error;
  // One level more for the outer SEQUENCE, without wrapping a limit of UINT32_MAX.
  const std::uint32_t budget = limits.max_depth == std::numeric_limits<std::uint32_t>::max()
                                   ? limits.max_depth
                                   : limits.max_depth + 1;
  BerReader top(pdu, error, budget);
  message.message_id = 0;
  if (read_message(top, message)) {
    return Status();
  }
  std::string text = "LDAPMessage: offset ";
  text += std::to_string(error.offset);
  text += ": ";
  text += error.what != nullptr ? error.what : "decoding failed";
  return malformed(std::move(text));
}

}  // namespace numadir::listener::wire
