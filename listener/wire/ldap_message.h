// listener/wire/ldap_message.h: the LDAPv3 message model (RFC 4511 §4): every protocol
// operation in both directions, controls and LDAPResult.
//
// Strings are views. A decoded message points into the PDU it was decoded from (which must
// outlive it); a message built for encoding points wherever its builder chose. An LdapMessage
// holds one member per kind of operation and only the member(s) named by `op` are meaningful;
// reset() clears them but keeps their capacity, so one LdapMessage reused for PDU after PDU
// (whatever their operations) stops allocating once it has seen its largest message.
//
// Thread contract: a plain value owned by one thread at a time (the listener that decoded it,
// then the worker it was handed to); const methods may be called from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "listener/wire/protocol_op.h"
#include "schema/filter.h"

namespace numadir::listener::wire {

// LDAPResult resultCode (RFC 4511 §4.1.9 and Appendix A). The type holds any int32: the
// ENUMERATED is extensible and other RFCs add codes.
enum class ResultCode : std::int32_t {
  kSuccess = 0,
  kOperationsError = 1,
  kProtocolError = 2,
  kTimeLimitExceeded = 3,
  kSizeLimitExceeded = 4,
  kCompareFalse = 5,
  kCompareTrue = 6,
  kAuthMethodNotSupported = 7,
  kStrongerAuthRequired = 8,
  kReferral = 10,
  kAdminLimitExceeded = 11,
  kUnavailableCriticalExtension = 12,
  kConfidentialityRequired = 13,
  kSaslBindInProgress = 14,
  kNoSuchAttribute = 16,
  kUndefinedAttributeType = 17,
  kInappropriateMatching = 18,
  kConstraintViolation = 19,
  kAttributeOrValueExists = 20,
  kInvalidAttributeSyntax = 21,
  kNoSuchObject = 32,
  kAliasProblem = 33,
  kInvalidDnSyntax = 34,
  kAliasDereferencingProblem = 36,
  kInappropriateAuthentication = 48,
  kInvalidCredentials = 49,
  kInsufficientAccessRights = 50,
  kBusy = 51,
  kUnavailable = 52,
  kUnwillingToPerform = 53,
  kLoopDetect = 54,
  kNamingViolation = 64,
  kObjectClassViolation = 65,
  kNotAllowedOnNonLeaf = 66,
  kNotAllowedOnRdn = 67,
  kEntryAlreadyExists = 68,
  kObjectClassModsProhibited = 69,
  kAffectsMultipleDsas = 71,
  kOther = 80,
};

enum class SearchScope : std::uint8_t {
  kBaseObject = 0,
  kSingleLevel = 1,
  kWholeSubtree = 2,
  kSubordinateSubtree = 3,  // draft-sermersheim-ldap-subordinate-scope; ldapsearch -s children.
};

enum class DerefAliases : std::uint8_t {
  kNever = 0,
  kInSearching = 1,
  kFindingBaseObj = 2,
  kAlways = 3,
};

enum class ModifyOperation : std::uint8_t {
  kAdd = 0,
  kDelete = 1,
  kReplace = 2,
  kIncrement = 3,  // RFC 4525.
};

// kUnsupported: an authentication choice numadir does not implement. RFC 4511 §4.2 makes the
// choice extensible: [1] and [2] (the retired Kerberos choices) and any other context-specific
// tag but simple [0] and sasl [3] decode as kUnsupported, and the bind answers
// authMethodNotSupported instead of the connection being dropped.
enum class BindMethod : std::uint8_t { kSimple, kSasl, kUnsupported };

// The LDAP message ID of an unsolicited notification (RFC 4511 §4.4).
inline constexpr std::int32_t kUnsolicitedMessageId = 0;
// The responseName of the Notice of Disconnection (RFC 4511 §4.4.1).
inline constexpr std::string_view kNoticeOfDisconnectionOid = "1.3.6.1.4.1.1466.20036";
inline constexpr std::string_view kStartTlsOid = "1.3.6.1.4.1.1466.20037";  // RFC 4511 §4.14

struct Control {
  std::string_view type;  // The control's OID.
  bool criticality = false;
  std::optional<std::string_view> value;

  friend bool operator==(const Control&, const Control&) = default;
};

// A list of attributes, each a description and its values, stored flat so that clearing and
// refilling it reuses its two vectors.
class AttributeList {
 public:
  struct Attribute {
    std::string_view type;
    std::uint32_t first_value = 0;
    std::uint32_t value_count = 0;

    friend bool operator==(const Attribute&, const Attribute&) = default;
  };

  void clear() {
    attributes_.clear();
    values_.clear();
  }
  // Starts a new attribute; add_value() appends to the last one started.
  void add(std::string_view type) {
    attributes_.push_back({type, static_cast<std::uint32_t>(values_.size()), 0});
  }
  // Requires: add() was called at least once.
  void add_value(std::string_view value) {
    values_.push_back(value);
    ++attributes_.back().value_count;
  }

  // Removes every attribute whose type `remove(type)` is true (its values stay in the flat
  // value storage, unreferenced, until clear()).
  template <typename Predicate>
  void erase_if(Predicate remove) {
    std::erase_if(attributes_, [&](const Attribute& attribute) { return remove(attribute.type); });
  }

  std::size_t size() const { return attributes_.size(); }
  bool empty() const { return attributes_.empty(); }
  const Attribute& operator[](std::size_t i) const { return attributes_[i]; }
  std::span<const Attribute> attributes() const { return attributes_; }
  std::span<const std::string_view> values(const Attribute& attribute) const {
    return std::span<const std::string_view>(values_).subspan(attribute.first_value,
                                                              attribute.value_count);
  }

  friend bool operator==(const AttributeList&, const AttributeList&) = default;

 private:
  std::vector<Attribute> attributes_;
  std::vector<std::string_view> values_;
};

struct LdapResult {
  ResultCode code = ResultCode::kSuccess;
  std::string_view matched_dn;
  std::string_view diagnostic_message;
  std::vector<std::string_view> referrals;  // Empty: the referral field is absent.

  friend bool operator==(const LdapResult&, const LdapResult&) = default;
};

struct BindRequest {
  std::int32_t version = 3;
  std::string_view name;
  BindMethod method = BindMethod::kSimple;
  std::string_view simple_password;                  // kSimple.
  std::string_view sasl_mechanism;                   // kSasl.
  std::optional<std::string_view> sasl_credentials;  // kSasl.
  std::uint8_t unsupported_tag = 0;                  // kUnsupported: the choice's identifier.
  std::string_view unsupported_credentials;          // kUnsupported: its content, unread.

  friend bool operator==(const BindRequest&, const BindRequest&) = default;
};

struct SearchRequest {
  std::string_view base_object;
  SearchScope scope = SearchScope::kBaseObject;
  DerefAliases deref_aliases = DerefAliases::kNever;
  std::int32_t size_limit = 0;
  std::int32_t time_limit = 0;
  bool types_only = false;
  schema::Filter filter;
  std::vector<std::string_view> attributes;

  friend bool operator==(const SearchRequest&, const SearchRequest&) = default;
};

struct SearchResultEntry {
  std::string_view object_name;
  AttributeList attributes;

  friend bool operator==(const SearchResultEntry&, const SearchResultEntry&) = default;
};

struct ModifyRequest {
  std::string_view object;
  // One operation per attribute of `modifications`, in order.
  std::vector<ModifyOperation> operations;
  AttributeList modifications;

  friend bool operator==(const ModifyRequest&, const ModifyRequest&) = default;
};

struct AddRequest {
  std::string_view entry;
  AttributeList attributes;

  friend bool operator==(const AddRequest&, const AddRequest&) = default;
};

struct ModifyDnRequest {
  std::string_view entry;
  std::string_view new_rdn;
  bool delete_old_rdn = false;
  std::optional<std::string_view> new_superior;

  friend bool operator==(const ModifyDnRequest&, const ModifyDnRequest&) = default;
};

struct CompareRequest {
  std::string_view entry;
  std::string_view attribute;
  std::string_view value;

  friend bool operator==(const CompareRequest&, const CompareRequest&) = default;
};

// ExtendedRequest, ExtendedResponse (beside its LDAPResult) and IntermediateResponse.
struct ExtendedFields {
  std::optional<std::string_view> name;  // Always present in an ExtendedRequest.
  std::optional<std::string_view> value;

  friend bool operator==(const ExtendedFields&, const ExtendedFields&) = default;
};

struct LdapMessage {
  std::int32_t message_id = 0;
  ProtocolOp op = ProtocolOp::kUnbindRequest;

  // Which members are meaningful, by op:
  //   kBindRequest: bind_request          kBindResponse: result, server_sasl_creds
  //   kSearchRequest: search_request      kSearchResultEntry: search_entry
  //   kSearchResultReference: uris        kModifyRequest: modify_request
  //   kAddRequest: add_request            kDelRequest: dn
  //   kModifyDnRequest: modify_dn_request kCompareRequest: compare_request
  //   kAbandonRequest: abandon_id         kExtendedRequest, kIntermediateResponse: extended
  //   kExtendedResponse: result, extended
  //   kSearchResultDone, kModifyResponse, kAddResponse, kDelResponse, kModifyDnResponse,
  //   kCompareResponse: result            kUnbindRequest: nothing
  BindRequest bind_request;
  LdapResult result;
  std::optional<std::string_view> server_sasl_creds;
  SearchRequest search_request;
  SearchResultEntry search_entry;
  std::vector<std::string_view> uris;
  ModifyRequest modify_request;
  AddRequest add_request;
  std::string_view dn;
  ModifyDnRequest modify_dn_request;
  CompareRequest compare_request;
  std::int32_t abandon_id = 0;
  ExtendedFields extended;

  std::vector<Control> controls;

  // Sets message_id and op, and clears the members of the previous and the new operation and
  // the controls, keeping capacity. Requires: members of other operations were left cleared
  // (build a message by reset() and then filling the new operation's members only).
  void reset(std::int32_t id, ProtocolOp operation);

 private:
  void clear_members(ProtocolOp operation);
  void clear_result();
};

// Equality of the meaningful members only (message ID, op, the op's members, controls).
bool operator==(const LdapMessage& a, const LdapMessage& b);

}  // namespace numadir::listener::wire
