// server/operations/password_policy.h: the password policy (draft-behera-ldap-password-policy, as
// OpenLDAP 2.5's ppolicy overlay implements it): a policy's settings read from a pwdPolicy entry,
// a user's policy state read from its entry's operational attributes, the decisions slapd makes
// from the two (is the account locked, has the password expired, how many grace logins remain),
// the Password Policy control (request and response, 1.3.6.1.4.1.42.2.27.8.5.1) and the time
// values the state attributes hold.
//
// Which policy governs an entry: its pwdPolicySubentry, else [passwords] default_policy, else
// none; a policy entry that is missing or holds a value that is not a number applies no policy
// (as slapd, which logs "policy subentry ... missing or invalid").
//
// Thread contract: plain values and functions of their arguments.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/directory.h"
#include "base/status.h"

namespace numadir::server {

inline constexpr std::string_view kPasswordPolicyOid = "1.3.6.1.4.1.42.2.27.8.5.1";

// Seconds and microseconds since the Unix epoch, UTC.
using UnixSeconds = std::int64_t;
using UnixMicros = std::int64_t;

// Returns: the time of GeneralizedTime `text` ("YYYYmmddHH[MM[SS]][.fraction]Z"), in
//   microseconds; nullopt when it is not of that form (offsets other than Z are not written by
//   either server and read as invalid).
std::optional<UnixMicros> parse_generalized_time(std::string_view text);
// Returns: `micros` as "YYYYmmddHHMMSSZ" (with_fraction false) or "YYYYmmddHHMMSS.uuuuuuZ".
std::string format_generalized_time(UnixMicros micros, bool with_fraction);
// Returns: the clock now, in microseconds.
UnixMicros now_micros();

// The pwdAccountLockedTime an administrator sets to lock an account for good (slapd's
// convention): never expires, whatever pwdLockoutDuration says.
inline constexpr std::string_view kPermanentLockTime = "000001010000Z";

// One pwdPolicy entry's settings (durations in seconds); an absent attribute has slapd's
// default (0 or FALSE; pwdAllowUserChange TRUE).
struct PasswordPolicy {
  std::int64_t min_age_s = 0;
  std::int64_t max_age_s = 0;
  std::int64_t in_history = 0;
  std::int64_t check_quality = 0;  // 0 none, 1 check what can be, 2 refuse what cannot be.
  std::int64_t min_length = 0;
  std::int64_t max_length = 0;  // 0: no maximum.
  std::int64_t expire_warning_s = 0;
  std::int64_t grace_authn_limit = 0;
  std::int64_t grace_expiry_s = 0;  // 0: grace logins never expire.
  bool lockout = false;
  std::int64_t lockout_duration_s = 0;  // 0: locked until an administrator unlocks.
  std::int64_t max_failure = 0;
  std::int64_t failure_count_interval_s = 0;  // 0: failures count until a success.
  // How many pwdFailureTime values are kept: at least max_failure (slapd's rule).
  std::int64_t max_recorded_failure = 0;
  bool must_change = false;
  bool allow_user_change = true;
  bool safe_modify = false;

  // Returns: the settings of policy entry `entry`. Errors: kInvalidAttributeSyntax naming the
  //   first attribute whose value is not a number (slapd then applies no policy).
  static Result<PasswordPolicy> from_entry(const backend::EntryRef& entry);
};

// A user's policy state, as its entry stores it.
struct PasswordState {
  std::optional<UnixMicros> changed;  // pwdChangedTime
  // pwdAccountLockedTime; `permanent_lock` when it is kPermanentLockTime or unreadable.
  std::optional<UnixMicros> locked;
  bool permanent_lock = false;
  std::vector<UnixMicros> failures;  // pwdFailureTime, oldest first (unreadable ones dropped).
  std::size_t grace_uses = 0;        // pwdGraceUseTime values.
  bool reset = false;                // pwdReset: TRUE
  // pwdStartTime / pwdEndTime: the password is valid only from / until then (an unreadable
  // value disables the password, as in slapd).
  std::optional<UnixMicros> start;
  std::optional<UnixMicros> end;
  bool unreadable_validity = false;
  std::vector<std::string_view> history;  // pwdHistory values (views into the entry).

  // Returns: the state stored in `entry`; views live as long as the EntryRef.
  static PasswordState from_entry(const backend::EntryRef& entry);
  // The attribute types read(): the state's, then userPassword and pwdPolicySubentry (kept in
  // `values` for the caller, a bind, that reads the entry once).
  static constexpr std::size_t kReadTypes = 10;
  static constexpr std::size_t kUserPassword = 8;
  static constexpr std::size_t kPolicySubentry = 9;
  using Values = std::array<std::vector<std::string_view>, kReadTypes>;
  // As from_entry, into this state (its vectors keep their capacity), in one pass over the entry
  // through `values`, which keeps the values of every type read (views into the entry):
  // allocates nothing once warm.
  void read(const backend::EntryRef& entry, Values& values);
};

// The errors of the response control (draft-behera §6.2), with slapd's numbering.
enum class PolicyError : std::uint8_t {
  kPasswordExpired = 0,
  kAccountLocked = 1,
  kChangeAfterReset = 2,
  kPasswordModNotAllowed = 3,
  kMustSupplyOldPassword = 4,
  kInsufficientPasswordQuality = 5,
  kPasswordTooShort = 6,
  kPasswordTooYoung = 7,
  kPasswordInHistory = 8,
  kPasswordTooLong = 9,
  kNone = 255,
};

// What a response control says: at most one warning, and an error.
struct PolicyResponse {
  std::optional<std::int64_t> time_before_expiration_s;
  std::optional<std::int64_t> grace_authns_remaining;
  PolicyError error = PolicyError::kNone;
};

// Returns: the response control's value (BER, as slapd's create_passcontrol writes it).
std::string encode_policy_response(const PolicyResponse& response);

// Returns: true if `state` under `policy` is locked at `now` (slapd's account_locked: the
// validity window first, then, when pwdLockout is on, pwdAccountLockedTime unless
// pwdLockoutDuration has passed since it). `lock_expired` is set when a lock time is stored
// but has run out (the bind then removes it).
bool account_locked(const PasswordState& state, const PasswordPolicy& policy, UnixMicros now,
                    bool* lock_expired);

// Returns: how many of `failures` still count at `now` (those within pwdFailureCountInterval,
//   or all of them without one).
std::int64_t counted_failures(const std::vector<UnixMicros>& failures, const PasswordPolicy& policy,
                              UnixMicros now);

// What a successful bind tells the client once the password is right (slapd's
// ppolicy_bind_response, success branch).
struct BindVerdict {
  bool refuse = false;       // Expired with no grace login left: invalidCredentials.
  bool use_grace = false;    // A grace login: pwdGraceUseTime gets a value.
  bool must_change = false;  // pwdReset with pwdMustChange: only a password change is allowed.
  PolicyResponse response;
};
BindVerdict judge_successful_bind(const PasswordState& state, const PasswordPolicy& policy,
                                  UnixMicros now);

// Checks a new password's quality (slapd's check_password_quality): its length when it can be
// read (cleartext or {CLEARTEXT}), else refused only when pwdCheckQuality is 2. Returns:
// kNone when it passes, else the error (kPasswordTooShort, kPasswordTooLong,
// kInsufficientPasswordQuality; the result is constraintViolation).
PolicyError check_password_quality(std::string_view password, const PasswordPolicy& policy);

// pwdHistory values: "time#syntaxOID#length#value" (slapd's form).
// Returns: the value recording `old_password` (a stored userPassword value) at `now`.
std::string make_history_value(UnixMicros now, std::string_view old_password);
// Returns: the stored password of history value `value`, with its time; nullopt if malformed.
struct HistoryItem {
  UnixMicros time = 0;
  std::string_view password;
};
std::optional<HistoryItem> parse_history_value(std::string_view value);

}  // namespace numadir::server
