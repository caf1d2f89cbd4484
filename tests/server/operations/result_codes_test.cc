// Status -> LDAP result (server/operations/result_codes.h).
#include "server/operations/result_codes.h"

#include <doctest/doctest.h>

namespace numadir::server {
namespace {

using listener::wire::ResultCode;

TEST_CASE("ResultCodes: directory outcomes map to their LDAP codes") {
  CHECK(result_code_for(StatusCode::kOk) == ResultCode::kSuccess);
  CHECK(result_code_for(StatusCode::kNoSuchObject) == ResultCode::kNoSuchObject);
  CHECK(result_code_for(StatusCode::kEntryAlreadyExists) == ResultCode::kEntryAlreadyExists);
  CHECK(result_code_for(StatusCode::kNotAllowedOnNonLeaf) == ResultCode::kNotAllowedOnNonLeaf);
  CHECK(result_code_for(StatusCode::kObjectClassViolation) == ResultCode::kObjectClassViolation);
  CHECK(result_code_for(StatusCode::kUndefinedAttributeType) ==
        ResultCode::kUndefinedAttributeType);
  CHECK(result_code_for(StatusCode::kSizeLimitExceeded) == ResultCode::kSizeLimitExceeded);
  CHECK(result_code_for(StatusCode::kTimeLimitExceeded) == ResultCode::kTimeLimitExceeded);
  CHECK(result_code_for(StatusCode::kMalformed) == ResultCode::kProtocolError);
  CHECK(result_code_for(StatusCode::kStorage) == ResultCode::kOther);
}

TEST_CASE("ResultCodes: messages become matchedDN or diagnostics like slapd's") {
  const OwnedResult missing = result_from_status(Status(StatusCode::kNoSuchObject, "dc=x"));
  CHECK(missing.code == ResultCode::kNoSuchObject);
  CHECK(missing.matched_dn == "dc=x");
  CHECK(missing.diagnostic.empty());

  const OwnedResult storage =
      result_from_status(Status(StatusCode::kStorage, "MDB_PANIC: secret path"));
  CHECK(storage.code == ResultCode::kOther);
  CHECK(storage.diagnostic == "internal error");

  const OwnedResult undecided = result_from_status(
      Status(StatusCode::kAccessCheckFailed, "reading cn=x: storage error: MDB_PANIC"));
  CHECK(undecided.code == ResultCode::kOther);
  CHECK(undecided.diagnostic == "access check failed");

  CHECK(result_from_status(Status(StatusCode::kInvalidDnSyntax, "DN: offset 3: x")).diagnostic ==
        "invalid DN");
  CHECK(result_from_status(Status(StatusCode::kObjectClassViolation, "missing sn")).diagnostic ==
        "missing sn");
}

}  // namespace
}  // namespace numadir::server
