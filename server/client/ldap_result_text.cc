// server/client/ldap_result_text.cc: see ldap_result_text.h.
#include "server/client/ldap_result_text.h"

namespace numadir::server {

namespace wire = listener::wire;

std::string_view result_code_name(wire::ResultCode code) {
  switch (code) {
    case wire::ResultCode::kSuccess:
      return "success";
    case wire::ResultCode::kOperationsError:
      return "operationsError";
    case wire::ResultCode::kProtocolError:
      return "protocolError";
    case wire::ResultCode::kTimeLimitExceeded:
      return "timeLimitExceeded";
    case wire::ResultCode::kSizeLimitExceeded:
      return "sizeLimitExceeded";
    case wire::ResultCode::kCompareFalse:
      return "compareFalse";
    case wire::ResultCode::kCompareTrue:
      return "compareTrue";
    case wire::ResultCode::kAuthMethodNotSupported:
      return "authMethodNotSupported";
    case wire::ResultCode::kStrongerAuthRequired:
      return "strongerAuthRequired";
    case wire::ResultCode::kReferral:
      return "referral";
    case wire::ResultCode::kAdminLimitExceeded:
      return "adminLimitExceeded";
    case wire::ResultCode::kUnavailableCriticalExtension:
      return "unavailableCriticalExtension";
    case wire::ResultCode::kConfidentialityRequired:
      return "confidentialityRequired";
    case wire::ResultCode::kSaslBindInProgress:
      return "saslBindInProgress";
    case wire::ResultCode::kNoSuchAttribute:
      return "noSuchAttribute";
    case wire::ResultCode::kUndefinedAttributeType:
      return "undefinedAttributeType";
    case wire::ResultCode::kInappropriateMatching:
      return "inappropriateMatching";
    case wire::ResultCode::kConstraintViolation:
      return "constraintViolation";
    case wire::ResultCode::kAttributeOrValueExists:
      return "attributeOrValueExists";
    case wire::ResultCode::kInvalidAttributeSyntax:
      return "invalidAttributeSyntax";
    case wire::ResultCode::kNoSuchObject:
      return "noSuchObject";
    case wire::ResultCode::kAliasProblem:
      return "aliasProblem";
    case wire::ResultCode::kInvalidDnSyntax:
      return "invalidDNSyntax";
    case wire::ResultCode::kAliasDereferencingProblem:
      return "aliasDereferencingProblem";
    case wire::ResultCode::kInappropriateAuthentication:
      return "inappropriateAuthentication";
    case wire::ResultCode::kInvalidCredentials:
      return "invalidCredentials";
    case wire::ResultCode::kInsufficientAccessRights:
      return "insufficientAccessRights";
    case wire::ResultCode::kBusy:
      return "busy";
    case wire::ResultCode::kUnavailable:
      return "unavailable";
    case wire::ResultCode::kUnwillingToPerform:
      return "unwillingToPerform";
    case wire::ResultCode::kLoopDetect:
      return "loopDetect";
    case wire::ResultCode::kNamingViolation:
      return "namingViolation";
    case wire::ResultCode::kObjectClassViolation:
      return "objectClassViolation";
    case wire::ResultCode::kNotAllowedOnNonLeaf:
      return "notAllowedOnNonLeaf";
    case wire::ResultCode::kNotAllowedOnRdn:
      return "notAllowedOnRDN";
    case wire::ResultCode::kEntryAlreadyExists:
      return "entryAlreadyExists";
    case wire::ResultCode::kObjectClassModsProhibited:
      return "objectClassModsProhibited";
    case wire::ResultCode::kAffectsMultipleDsas:
      return "affectsMultipleDSAs";
    case wire::ResultCode::kOther:
      return "other";
  }
  return {};
}

std::string describe_ldap_result(const wire::LdapResult& result) {
  const std::string_view name = result_code_name(result.code);
  const std::string number = std::to_string(static_cast<std::int32_t>(result.code));
  std::string out =
      name.empty() ? "result code " + number : std::string(name) + " (" + number + ")";
  if (!result.diagnostic_message.empty()) {
    out += ": " + std::string(result.diagnostic_message);
  }
  return out;
}

}  // namespace numadir::server
