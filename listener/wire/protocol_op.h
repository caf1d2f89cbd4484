// listener/wire/protocol_op.h: the LDAPv3 protocol operations (RFC 4511 §4.2-4.14): the
// protocolOp CHOICE, and what the codec and the listener know of each operation, written once
// (kProtocolOps): its RFC name, the form of its [APPLICATION n] element and who sends it. The
// decoder finds an operation by its tag number, the encoder the form it writes, the listener
// which operations a client may send: each in one lookup of a table indexed by the number.
//
// Thread contract: compile-time constants; any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace numadir::listener::wire {

// The protocolOp CHOICE: each value is the operation's [APPLICATION n] number.
enum class ProtocolOp : std::uint8_t {
  kBindRequest = 0,
  kBindResponse = 1,
  kUnbindRequest = 2,
  kSearchRequest = 3,
  kSearchResultEntry = 4,
  kSearchResultDone = 5,
  kModifyRequest = 6,
  kModifyResponse = 7,
  kAddRequest = 8,
  kAddResponse = 9,
  kDelRequest = 10,
  kDelResponse = 11,
  kModifyDnRequest = 12,
  kModifyDnResponse = 13,
  kCompareRequest = 14,
  kCompareResponse = 15,
  kAbandonRequest = 16,
  kSearchResultReference = 19,
  kExtendedRequest = 23,
  kExtendedResponse = 24,
  kIntermediateResponse = 25,
};

// Who sends an operation, and what comes of it.
enum class OpKind : std::uint8_t {
  kRequest,     // From a client; the server answers it (the listener hands it to a handler).
  kUnanswered,  // From a client; the listener carries it out and never answers (Unbind, Abandon).
  kResponse,    // From the server, without an LDAPResult (an entry, a reference, intermediate).
  kResult,      // From the server, made of an LDAPResult (and possibly more fields).
};

struct ProtocolOpInfo {
  ProtocolOp op;
  std::string_view name;  // RFC 4511's, e.g. "searchRequest".
  bool primitive;         // [APPLICATION n] is primitive (else constructed).
  OpKind kind;
};

inline constexpr ProtocolOpInfo kProtocolOps[] = {
    {ProtocolOp::kBindRequest, "bindRequest", false, OpKind::kRequest},
    {ProtocolOp::kBindResponse, "bindResponse", false, OpKind::kResult},
    {ProtocolOp::kUnbindRequest, "unbindRequest", true, OpKind::kUnanswered},
    {ProtocolOp::kSearchRequest, "searchRequest", false, OpKind::kRequest},
    {ProtocolOp::kSearchResultEntry, "searchResEntry", false, OpKind::kResponse},
    {ProtocolOp::kSearchResultDone, "searchResDone", false, OpKind::kResult},
    {ProtocolOp::kModifyRequest, "modifyRequest", false, OpKind::kRequest},
    {ProtocolOp::kModifyResponse, "modifyResponse", false, OpKind::kResult},
    {ProtocolOp::kAddRequest, "addRequest", false, OpKind::kRequest},
    {ProtocolOp::kAddResponse, "addResponse", false, OpKind::kResult},
    {ProtocolOp::kDelRequest, "delRequest", true, OpKind::kRequest},
    {ProtocolOp::kDelResponse, "delResponse", false, OpKind::kResult},
    {ProtocolOp::kModifyDnRequest, "modDNRequest", false, OpKind::kRequest},
    {ProtocolOp::kModifyDnResponse, "modDNResponse", false, OpKind::kResult},
    {ProtocolOp::kCompareRequest, "compareRequest", false, OpKind::kRequest},
    {ProtocolOp::kCompareResponse, "compareResponse", false, OpKind::kResult},
    {ProtocolOp::kAbandonRequest, "abandonRequest", true, OpKind::kUnanswered},
    {ProtocolOp::kSearchResultReference, "searchResRef", false, OpKind::kResponse},
    {ProtocolOp::kExtendedRequest, "extendedReq", false, OpKind::kRequest},
    {ProtocolOp::kExtendedResponse, "extendedResp", false, OpKind::kResult},
    {ProtocolOp::kIntermediateResponse, "intermediateResponse", false, OpKind::kResponse},
};

namespace detail {

// [APPLICATION n] numbers that fit the identifier octet's low five bits (31 is the long form).
inline constexpr std::size_t kOpNumbers = 32;

// kProtocolOps by [APPLICATION n] number; nullptr where RFC 4511 has no operation.
inline constexpr std::array<const ProtocolOpInfo*, kOpNumbers> kOpsByNumber = [] {
  std::array<const ProtocolOpInfo*, kOpNumbers> table{};
  for (const ProtocolOpInfo& info : kProtocolOps) {
    table[static_cast<std::size_t>(info.op)] = &info;
  }
  return table;
}();

}  // namespace detail

// Returns: the operation that is [APPLICATION `number`], or nullptr if RFC 4511 has none.
constexpr const ProtocolOpInfo* find_protocol_op(std::uint8_t number) {
  return number < detail::kOpNumbers ? detail::kOpsByNumber[number] : nullptr;
}

// Returns: what is known of `op`. Requires: `op` is one of the enumerators (every decoded
//   message's is).
constexpr const ProtocolOpInfo& protocol_op_info(ProtocolOp op) {
  return *detail::kOpsByNumber[static_cast<std::uint8_t>(op)];
}

// Returns: the operation's RFC 4511 name, e.g. "searchRequest" ("unknown" for another value).
constexpr std::string_view protocol_op_name(ProtocolOp op) {
  const ProtocolOpInfo* info = find_protocol_op(static_cast<std::uint8_t>(op));
  return info != nullptr ? info->name : "unknown";
}

// Returns: true if `op` is a response made of an LDAPResult (and possibly more fields).
constexpr bool has_ldap_result(ProtocolOp op) {
  const ProtocolOpInfo* info = find_protocol_op(static_cast<std::uint8_t>(op));
  return info != nullptr && info->kind == OpKind::kResult;
}

}  // namespace numadir::listener::wire
