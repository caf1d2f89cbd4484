#include "listener/wire/ldap_message.h"

namespace numadir::listener::wire {

void LdapMessage::clear_members(ProtocolOp operation) {
  switch (operation) {
    case ProtocolOp::kBindRequest:
      bind_request = BindRequest{};
      return;
    case ProtocolOp::kBindResponse:
      clear_result();
      server_sasl_creds.reset();
      return;
    case ProtocolOp::kUnbindRequest:
      return;
    case ProtocolOp::kSearchRequest:
      search_request.base_object = {};
      search_request.scope = SearchScope::kBaseObject;
      search_request.deref_aliases = DerefAliases::kNever;
      search_request.size_limit = 0;
      search_request.time_limit = 0;
      search_request.types_only = false;
      search_request.filter.clear();
      search_request.attributes.clear();
      return;
    case ProtocolOp::kSearchResultEntry:
      search_entry.object_name = {};
      search_entry.attributes.clear();
      return;
    case ProtocolOp::kSearchResultReference:
      uris.clear();
      return;
    case ProtocolOp::kModifyRequest:
      modify_request.object = {};
      modify_request.operations.clear();
      modify_request.modifications.clear();
      return;
    case ProtocolOp::kAddRequest:
      add_request.entry = {};
      add_request.attributes.clear();
      return;
    case ProtocolOp::kDelRequest:
      dn = {};
      return;
    case ProtocolOp::kModifyDnRequest:
      modify_dn_request = ModifyDnRequest{};
      return;
    case ProtocolOp::kCompareRequest:
      compare_request = CompareRequest{};
      return;
    case ProtocolOp::kAbandonRequest:
      abandon_id = 0;
      return;
    case ProtocolOp::kExtendedRequest:
    case ProtocolOp::kIntermediateResponse:
      extended = ExtendedFields{};
      return;
    case ProtocolOp::kExtendedResponse:
      clear_result();
      extended = ExtendedFields{};
      return;
    case ProtocolOp::kSearchResultDone:
    case ProtocolOp::kModifyResponse:
    case ProtocolOp::kAddResponse:
    case ProtocolOp::kDelResponse:
    case ProtocolOp::kModifyDnResponse:
    case ProtocolOp::kCompareResponse:
      clear_result();
      return;
  }
}

void LdapMessage::clear_result() {
  result.code = ResultCode::kSuccess;
  result.matched_dn = {};
  result.diagnostic_message = {};
  result.referrals.clear();
}

void LdapMessage::reset(std::int32_t id, ProtocolOp operation) {
  // Only the members of the old and the new operation can hold anything (the others were
  // cleared when their operation was last left), so only those are cleared: decoding PDU after
  // PDU into one message stays cheap.
  clear_members(op);
  if (operation != op) {
    clear_members(operation);
  }
  message_id = id;
  op = operation;
  controls.clear();
}

bool operator==(const LdapMessage& a, const LdapMessage& b) {
  if (a.message_id != b.message_id || a.op != b.op || a.controls != b.controls) {
    return false;
  }
  switch (a.op) {
    case ProtocolOp::kBindRequest:
      return a.bind_request == b.bind_request;
    case ProtocolOp::kBindResponse:
      return a.result == b.result && a.server_sasl_creds == b.server_sasl_creds;
    case ProtocolOp::kUnbindRequest:
      return true;
    case ProtocolOp::kSearchRequest:
      return a.search_request == b.search_request;
    case ProtocolOp::kSearchResultEntry:
      return a.search_entry == b.search_entry;
    case ProtocolOp::kSearchResultReference:
      return a.uris == b.uris;
    case ProtocolOp::kModifyRequest:
      return a.modify_request == b.modify_request;
    case ProtocolOp::kAddRequest:
      return a.add_request == b.add_request;
    case ProtocolOp::kDelRequest:
      return a.dn == b.dn;
    case ProtocolOp::kModifyDnRequest:
      return a.modify_dn_request == b.modify_dn_request;
    case ProtocolOp::kCompareRequest:
      return a.compare_request == b.compare_request;
    case ProtocolOp::kAbandonRequest:
      return a.abandon_id == b.abandon_id;
    case ProtocolOp::kExtendedRequest:
    case ProtocolOp::kIntermediateResponse:
      return a.extended == b.extended;
    case ProtocolOp::kExtendedResponse:
      return a.result == b.result && a.extended == b.extended;
    case ProtocolOp::kSearchResultDone:
    case ProtocolOp::kModifyResponse:
    case ProtocolOp::kAddResponse:
    case ProtocolOp::kDelResponse:
    case ProtocolOp::kModifyDnResponse:
    case ProtocolOp::kCompareResponse:
      return a.result == b.result;
  }
  return false;
}

}  // namespace numadir::listener::wire
