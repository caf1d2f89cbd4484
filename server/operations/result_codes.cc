// server/operations/result_codes.cc: Status -> LDAP result, in one function (STYLE.md: errors
// become LDAP result codes in one place in server).
#include "server/operations/result_codes.h"

namespace numadir::server {

using listener::wire::ResultCode;

ResultCode result_code_for(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return ResultCode::kSuccess;
    case StatusCode::kInvalidArgument:
    case StatusCode::kUnsupported:
      return ResultCode::kUnwillingToPerform;
    case StatusCode::kMalformed:
      return ResultCode::kProtocolError;
    case StatusCode::kLimitExceeded:
      return ResultCode::kAdminLimitExceeded;
    case StatusCode::kNotFound:
    case StatusCode::kNoSuchObject:
      return ResultCode::kNoSuchObject;
    case StatusCode::kAlreadyExists:
    case StatusCode::kEntryAlreadyExists:
      return ResultCode::kEntryAlreadyExists;
    case StatusCode::kStorage:
    case StatusCode::kIo:
    case StatusCode::kInternal:
    case StatusCode::kAccessCheckFailed:
      return ResultCode::kOther;
    case StatusCode::kNotAllowedOnNonLeaf:
      return ResultCode::kNotAllowedOnNonLeaf;
    case StatusCode::kNotAllowedOnRdn:
      return ResultCode::kNotAllowedOnRdn;
    case StatusCode::kNamingViolation:
      return ResultCode::kNamingViolation;
    case StatusCode::kObjectClassViolation:
      return ResultCode::kObjectClassViolation;
    case StatusCode::kObjectClassModsProhibited:
      return ResultCode::kObjectClassModsProhibited;
    case StatusCode::kUndefinedAttributeType:
      return ResultCode::kUndefinedAttributeType;
    case StatusCode::kInvalidAttributeSyntax:
      return ResultCode::kInvalidAttributeSyntax;
    case StatusCode::kInappropriateMatching:
      return ResultCode::kInappropriateMatching;
    case StatusCode::kConstraintViolation:
      return ResultCode::kConstraintViolation;
    case StatusCode::kAttributeOrValueExists:
      return ResultCode::kAttributeOrValueExists;
    case StatusCode::kNoSuchAttribute:
      return ResultCode::kNoSuchAttribute;
    case StatusCode::kInvalidDnSyntax:
      return ResultCode::kInvalidDnSyntax;
    case StatusCode::kSizeLimitExceeded:
      return ResultCode::kSizeLimitExceeded;
    case StatusCode::kTimeLimitExceeded:
      return ResultCode::kTimeLimitExceeded;
    case StatusCode::kAdminLimitExceeded:
      return ResultCode::kAdminLimitExceeded;
    case StatusCode::kUnwillingToPerform:
      return ResultCode::kUnwillingToPerform;
    case StatusCode::kInsufficientAccessRights:
      return ResultCode::kInsufficientAccessRights;
  }
  return ResultCode::kOther;
}

OwnedResult result_from_status(const Status& status) {
  OwnedResult result;
  result.code = result_code_for(status.code());
  switch (status.code()) {
    case StatusCode::kOk:
      break;
    case StatusCode::kNoSuchObject:
      result.matched_dn = status.message();
      break;
    case StatusCode::kInvalidDnSyntax:
      result.diagnostic = "invalid DN";
      break;
    case StatusCode::kStorage:
    case StatusCode::kIo:
    case StatusCode::kInternal:
      result.diagnostic = "internal error";
      break;
    case StatusCode::kAccessCheckFailed:
      // The error decided, not the rules: say so, without the storage details (logged).
      result.diagnostic = "access check failed";
      break;
    default:
      result.diagnostic = status.message();
      break;
  }
  return result;
}

}  // namespace numadir::server
