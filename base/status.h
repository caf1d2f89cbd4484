// base/status.h: Status (success or an error code with a message) and Result<T> (a value or a
// Status). The project's only error-return types: no exceptions on the request path.
//
// Thread contract: plain values. A Status or Result may be moved between threads; concurrent
// use of one object needs external synchronization, like any std type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "base/check.h"

namespace numadir {

enum class StatusCode : std::uint8_t {
  kOk = 0,
  kInvalidArgument,  // A caller-supplied value (config, command line, API argument) is wrong.
  kMalformed,        // Input bytes or text do not follow their grammar (BER, DN, filter, LDIF).
  kLimitExceeded,    // Input is well formed but over a configured limit (size, depth, count).
  kNotFound,         // Something looked up is absent.
  kAlreadyExists,    // Something to create is already there.
  kUnsupported,      // Well formed, but a feature we do not implement.
  kStorage,          // The storage engine failed; the message carries its text.
  kIo,               // A system call failed; the message carries strerror text.
  kInternal,         // A bug: an invariant did not hold.

  // Directory outcomes. Each names the LDAP result code (RFC 4511) that server/ turns it into;
  // schema/ and backend/ return them so that the mapping lives in one place.
  kNoSuchObject,               // 32: the entry (or its parent) does not exist.
  kEntryAlreadyExists,         // 68
  kNotAllowedOnNonLeaf,        // 66: delete or rename of an entry with children.
  kNotAllowedOnRdn,            // 67: a modify would remove an RDN value.
  kNamingViolation,            // 64: RDN attributes missing from the entry, bad placement.
  kObjectClassViolation,       // 65
  kObjectClassModsProhibited,  // 69: a change of the structural object class.
  kUndefinedAttributeType,     // 17
  kInvalidAttributeSyntax,     // 21
  kInappropriateMatching,      // 18
  kConstraintViolation,        // 19: e.g. single-value, no-user-modification.
  kAttributeOrValueExists,     // 20
  kNoSuchAttribute,            // 16
  kInvalidDnSyntax,            // 34
  kSizeLimitExceeded,          // 4
  kTimeLimitExceeded,          // 3
  kAdminLimitExceeded,         // 11
  kUnwillingToPerform,         // 53
  kInsufficientAccessRights,   // 50: access control refused (message: the diagnostic).
  // 80 (other): an access decision could not be made because a read it needed failed; it is
  // denied (message: the DN read and its error, for the log, never for the client).
  kAccessCheckFailed,
};

// Returns: a stable lower-case name for `code`, e.g. "malformed". The view is static.
constexpr std::string_view status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kMalformed:
      return "malformed";
    case StatusCode::kLimitExceeded:
      return "limit exceeded";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kAlreadyExists:
      return "already exists";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kStorage:
      return "storage error";
    case StatusCode::kIo:
      return "i/o error";
    case StatusCode::kInternal:
      return "internal error";
    case StatusCode::kNoSuchObject:
      return "no such object";
    case StatusCode::kEntryAlreadyExists:
      return "entry already exists";
    case StatusCode::kNotAllowedOnNonLeaf:
      return "not allowed on non-leaf";
    case StatusCode::kNotAllowedOnRdn:
      return "not allowed on RDN";
    case StatusCode::kNamingViolation:
      return "naming violation";
    case StatusCode::kObjectClassViolation:
      return "object class violation";
    case StatusCode::kObjectClassModsProhibited:
      return "object class mods prohibited";
    case StatusCode::kUndefinedAttributeType:
      return "undefined attribute type";
    case StatusCode::kInvalidAttributeSyntax:
      return "invalid attribute syntax";
    case StatusCode::kInappropriateMatching:
      return "inappropriate matching";
    case StatusCode::kConstraintViolation:
      return "constraint violation";
    case StatusCode::kAttributeOrValueExists:
      return "attribute or value exists";
    case StatusCode::kNoSuchAttribute:
      return "no such attribute";
    case StatusCode::kInvalidDnSyntax:
      return "invalid DN syntax";
    case StatusCode::kSizeLimitExceeded:
      return "size limit exceeded";
    case StatusCode::kTimeLimitExceeded:
      return "time limit exceeded";
    case StatusCode::kAdminLimitExceeded:
      return "admin limit exceeded";
    case StatusCode::kUnwillingToPerform:
      return "unwilling to perform";
    case StatusCode::kInsufficientAccessRights:
      return "insufficient access rights";
    case StatusCode::kAccessCheckFailed:
      return "access check failed";
  }
  return "unknown";
}

// Success, or a code with a human-readable message. An ok Status holds no heap memory.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns: "ok", or "<code name>: <message>".
  std::string to_string() const {
    if (ok()) {
      return "ok";
    }
    std::string out(status_code_name(code_));
    out += ": ";
    out += message_;
    return out;
  }

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status malformed(std::string message) {
  return Status(StatusCode::kMalformed, std::move(message));
}
inline Status limit_exceeded(std::string message) {
  return Status(StatusCode::kLimitExceeded, std::move(message));
}
inline Status not_found(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status unsupported(std::string message) {
  return Status(StatusCode::kUnsupported, std::move(message));
}
inline Status internal_error(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}
inline Status status_error(StatusCode code, std::string message) {
  return Status(code, std::move(message));
}

// A value of type T or a non-ok Status.
//
//   Result<Dn> dn = Dn::parse(text);
//   if (!dn.ok()) return dn.status();
//   use(*dn);
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}        // NOLINT: implicit.
  Result(Status status) : state_(std::in_place_index<1>, std::move(status)) {  // NOLINT
    NUMADIR_CHECK(!std::get<1>(state_).ok(), "Result built from an ok Status");
  }

  bool ok() const { return state_.index() == 0; }

  // Returns: the error; an ok Status when this holds a value.
  Status status() const { return ok() ? Status() : std::get<1>(state_); }

  // Requires: ok().
  T& value() & {
    NUMADIR_CHECK(ok(), "Result::value() on an error");
    return std::get<0>(state_);
  }
  const T& value() const& {
    NUMADIR_CHECK(ok(), "Result::value() on an error");
    return std::get<0>(state_);
  }
  T&& value() && {
    NUMADIR_CHECK(ok(), "Result::value() on an error");
    return std::get<0>(std::move(state_));
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace numadir

// Returns the Status of `expr` from the enclosing function if it is not ok.
#define NUMADIR_RETURN_IF_ERROR(expr)           \
  do {                                          \
    ::numadir::Status numadir_status_ = (expr); \
    if (!numadir_status_.ok()) {                \
      return numadir_status_;                   \
    }                                           \
  } while (false)
