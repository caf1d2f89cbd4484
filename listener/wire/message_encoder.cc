#include "listener/wire/message_encoder.h"

#include <cstdint>

#include "base/check.h"
#include "listener/wire/ber_reader.h"
#include "listener/wire/detail/message_tags.h"
#include "listener/wire/filter_codec.h"

namespace numadir::listener::wire {
namespace {

void write_optional(BerWriter& writer, std::uint8_t tag,
                    const std::optional<std::string_view>& value) {
  if (value.has_value()) {
    writer.write_octets(tag, *value);
  }
}

void write_strings(BerWriter& writer, const std::vector<std::string_view>& values) {
  for (std::string_view value : values) {
    writer.write_octets(ber::kOctetString, value);
  }
}

void write_result(BerWriter& writer, const LdapResult& result) {
  writer.write_integer(ber::kEnumerated, static_cast<std::int32_t>(result.code));
  writer.write_octets(ber::kOctetString, result.matched_dn);
  writer.write_octets(ber::kOctetString, result.diagnostic_message);
  if (!result.referrals.empty()) {
    writer.begin(detail::kReferralTag);
    write_strings(writer, result.referrals);
    writer.end();
  }
}

// One attribute of an AttributeList: SEQUENCE { type, vals SET OF value }.
void write_attribute(BerWriter& writer, const AttributeList& list,
                     const AttributeList::Attribute& attribute) {
  writer.begin(ber::kSequence);
  writer.write_octets(ber::kOctetString, attribute.type);
  writer.begin(ber::kSet);
  for (std::string_view value : list.values(attribute)) {
    writer.write_octets(ber::kOctetString, value);
  }
  writer.end();
  writer.end();
}

void write_attribute_list(BerWriter& writer, const AttributeList& list) {
  writer.begin(ber::kSequence);
  for (const AttributeList::Attribute& attribute : list.attributes()) {
    write_attribute(writer, list, attribute);
  }
  writer.end();
}

void write_bind_request(BerWriter& writer, const BindRequest& bind) {
  writer.write_integer(ber::kInteger, bind.version);
  writer.write_octets(ber::kOctetString, bind.name);
  if (bind.method == BindMethod::kSimple) {
    writer.write_octets(detail::kSimpleAuthTag, bind.simple_password);
    return;
  }
  if (bind.method == BindMethod::kUnsupported) {
    writer.write_octets(bind.unsupported_tag, bind.unsupported_credentials);
    return;
  }
  writer.begin(detail::kSaslAuthTag);
  writer.write_octets(ber::kOctetString, bind.sasl_mechanism);
  write_optional(writer, ber::kOctetString, bind.sasl_credentials);
  writer.end();
}

void write_search_request(BerWriter& writer, const SearchRequest& search) {
  writer.write_octets(ber::kOctetString, search.base_object);
  writer.write_integer(ber::kEnumerated, static_cast<std::int32_t>(search.scope));
  writer.write_integer(ber::kEnumerated, static_cast<std::int32_t>(search.deref_aliases));
  writer.write_integer(ber::kInteger, search.size_limit);
  writer.write_integer(ber::kInteger, search.time_limit);
  writer.write_boolean(ber::kBoolean, search.types_only);
  encode_filter(search.filter, writer);
  writer.begin(ber::kSequence);
  write_strings(writer, search.attributes);
  writer.end();
}

void write_modify_request(BerWriter& writer, const ModifyRequest& modify) {
  NUMADIR_CHECK(modify.operations.size() == modify.modifications.size(),
                "ModifyRequest: one operation per modification");
  writer.write_octets(ber::kOctetString, modify.object);
  writer.begin(ber::kSequence);
  for (std::size_t i = 0; i < modify.operations.size(); ++i) {
    writer.begin(ber::kSequence);
    writer.write_integer(ber::kEnumerated, static_cast<std::int32_t>(modify.operations[i]));
    write_attribute(writer, modify.modifications, modify.modifications[i]);
    writer.end();
  }
  writer.end();
}

void write_op_content(BerWriter& writer, const LdapMessage& message) {
  switch (message.op) {
    case ProtocolOp::kBindRequest:
      write_bind_request(writer, message.bind_request);
      return;
    case ProtocolOp::kBindResponse:
      write_result(writer, message.result);
      write_optional(writer, detail::kServerSaslCredsTag, message.server_sasl_creds);
      return;
    case ProtocolOp::kSearchRequest:
      write_search_request(writer, message.search_request);
      return;
    case ProtocolOp::kSearchResultEntry:
      writer.write_octets(ber::kOctetString, message.search_entry.object_name);
      write_attribute_list(writer, message.search_entry.attributes);
      return;
    case ProtocolOp::kSearchResultReference:
      write_strings(writer, message.uris);
      return;
    case ProtocolOp::kModifyRequest:
      write_modify_request(writer, message.modify_request);
      return;
    case ProtocolOp::kAddRequest:
      writer.write_octets(ber::kOctetString, message.add_request.entry);
      write_attribute_list(writer, message.add_request.attributes);
      return;
    case ProtocolOp::kModifyDnRequest:
      writer.write_octets(ber::kOctetString, message.modify_dn_request.entry);
      writer.write_octets(ber::kOctetString, message.modify_dn_request.new_rdn);
      writer.write_boolean(ber::kBoolean, message.modify_dn_request.delete_old_rdn);
      write_optional(writer, detail::kNewSuperiorTag, message.modify_dn_request.new_superior);
      return;
    case ProtocolOp::kCompareRequest:
      writer.write_octets(ber::kOctetString, message.compare_request.entry);
      writer.begin(ber::kSequence);
      writer.write_octets(ber::kOctetString, message.compare_request.attribute);
      writer.write_octets(ber::kOctetString, message.compare_request.value);
      writer.end();
      return;
    case ProtocolOp::kExtendedRequest:
      NUMADIR_CHECK(message.extended.name.has_value(), "ExtendedRequest without a name");
      writer.write_octets(detail::kRequestNameTag, *message.extended.name);
      write_optional(writer, detail::kRequestValueTag, message.extended.value);
      return;
    case ProtocolOp::kExtendedResponse:
      write_result(writer, message.result);
      write_optional(writer, detail::kResponseNameTag, message.extended.name);
      write_optional(writer, detail::kResponseValueTag, message.extended.value);
      return;
    case ProtocolOp::kIntermediateResponse:
      write_optional(writer, detail::kIntermediateNameTag, message.extended.name);
      write_optional(writer, detail::kIntermediateValueTag, message.extended.value);
      return;
    case ProtocolOp::kSearchResultDone:
    case ProtocolOp::kModifyResponse:
    case ProtocolOp::kAddResponse:
    case ProtocolOp::kDelResponse:
    case ProtocolOp::kModifyDnResponse:
    case ProtocolOp::kCompareResponse:
      write_result(writer, message.result);
      return;
    case ProtocolOp::kUnbindRequest:
    case ProtocolOp::kDelRequest:
    case ProtocolOp::kAbandonRequest:
      return;  // Primitive (kProtocolOps): written by encode_message.
  }
}

}  // namespace

void encode_message(const LdapMessage& message, BerWriter& writer) {
  const auto number = static_cast<std::uint8_t>(message.op);
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kInteger, message.message_id);
  const ProtocolOpInfo* info = find_protocol_op(number);
  if (info == nullptr || !info->primitive) {
    writer.begin(ber::application_constructed(number));
    write_op_content(writer, message);
    writer.end();
  } else if (message.op == ProtocolOp::kUnbindRequest) {
    writer.write_null(ber::application(number));
  } else if (message.op == ProtocolOp::kDelRequest) {
    writer.write_octets(ber::application(number), message.dn);
  } else {  // kAbandonRequest
    writer.write_integer(ber::application(number), message.abandon_id);
  }
  if (!message.controls.empty()) {
    writer.begin(detail::kControlsTag);
    for (const Control& control : message.controls) {
      writer.begin(ber::kSequence);
      writer.write_octets(ber::kOctetString, control.type);
      if (control.criticality) {
        writer.write_boolean(ber::kBoolean, true);
      }
      write_optional(writer, ber::kOctetString, control.value);
      writer.end();
    }
    writer.end();
  }
  writer.end();
}

}  // namespace numadir::listener::wire
