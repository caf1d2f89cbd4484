#include "base/status.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>

namespace numadir {
namespace {

Status fails_with(StatusCode code) { return Status(code, "why"); }

Status propagates(StatusCode code, bool& reached_end) {
  NUMADIR_RETURN_IF_ERROR(fails_with(code));
  reached_end = true;
  return Status();
}

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') {
    return malformed(std::string("not a digit: ") + c);
  }
  return c - '0';
}

TEST_CASE("Status: ok by default and errors carry code and message") {
  CHECK(Status().ok());
  CHECK(Status().to_string() == "ok");
  const Status error = malformed("offset 3: bad");
  CHECK_FALSE(error.ok());
  CHECK(error.code() == StatusCode::kMalformed);
  CHECK(error.message() == "offset 3: bad");
  CHECK(error.to_string() == "malformed: offset 3: bad");
  CHECK(limit_exceeded("x").code() == StatusCode::kLimitExceeded);
  CHECK(invalid_argument("x").code() == StatusCode::kInvalidArgument);
  CHECK(not_found("x").code() == StatusCode::kNotFound);
  CHECK(unsupported("x").code() == StatusCode::kUnsupported);
  CHECK(internal_error("x").code() == StatusCode::kInternal);
}

TEST_CASE("Status: NUMADIR_RETURN_IF_ERROR returns the first error and passes ok through") {
  bool reached_end = false;
  CHECK(propagates(StatusCode::kStorage, reached_end).code() == StatusCode::kStorage);
  CHECK_FALSE(reached_end);
  CHECK(propagates(StatusCode::kOk, reached_end).ok());
  CHECK(reached_end);
}

TEST_CASE("Result: holds a value or an error") {
  SUBCASE("value") {
    Result<int> r = parse_digit('7');
    REQUIRE(r.ok());
    CHECK(*r == 7);
    CHECK(r.status().ok());
  }
  SUBCASE("error") {
    Result<int> r = parse_digit('x');
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kMalformed);
    CHECK(r.status().message() == "not a digit: x");
  }
  SUBCASE("move-only values move out") {
    Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
    REQUIRE(r.ok());
    std::unique_ptr<int> owned = std::move(r).value();
    CHECK(*owned == 5);
  }
}

}  // namespace
}  // namespace numadir
