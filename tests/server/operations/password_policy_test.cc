// tests/server/operations/password_policy_test.cc: the password policy's decisions, its time
// values and its control, against the behaviour of slapd 2.5's ppolicy overlay.
#include "server/operations/password_policy.h"

#include <doctest/doctest.h>

#include <string>

#include "listener/wire/ber_reader.h"

namespace numadir::server {
namespace {

constexpr UnixMicros kSecond = 1'000'000;
// 2026-12-03 12:00:00 UTC.
constexpr UnixMicros kNoon = 1'796'299'200LL * kSecond;

TEST_CASE("Password policy: generalized times read and write back") {
  CHECK(parse_generalized_time("19700101000000Z") == 0);
  CHECK(parse_generalized_time("20261203120000Z") == kNoon);
  CHECK(format_generalized_time(kNoon, false) == "20261203120000Z");
  CHECK(format_generalized_time(kNoon + 123'456, true) == "20261203120000.123456Z");
  CHECK(parse_generalized_time("20261203120000.123456Z") == kNoon + 123'456);
  CHECK(parse_generalized_time("20261203120000.5Z") == kNoon + 500'000);
  CHECK(parse_generalized_time("202612031200Z") == kNoon);  // Minutes only.
  CHECK(parse_generalized_time("2026120312Z") == kNoon);    // Hours only.
  // slapd's permanent lock, year 0, reads as a time long before the epoch.
  const std::optional<UnixMicros> permanent = parse_generalized_time(kPermanentLockTime);
  REQUIRE(permanent.has_value());
  CHECK(*permanent < 0);
  CHECK(format_generalized_time(*permanent, false) == "00000101000000Z");
  for (const char* bad : {"", "2026", "20261203120000", "20261303120000Z", "20261203250000Z",
                          "20261203120000+0100", "20261203120000.Z", "2026120312000xZ"}) {
    CHECK_MESSAGE(!parse_generalized_time(bad).has_value(), bad);
  }
}

TEST_CASE("Password policy: a lock holds for pwdLockoutDuration and only with pwdLockout") {
  PasswordPolicy policy;
  policy.lockout = true;
  policy.lockout_duration_s = 60;
  PasswordState state;
  bool expired = false;
  CHECK_FALSE(account_locked(state, policy, kNoon, &expired));
  state.locked = kNoon;
  CHECK(account_locked(state, policy, kNoon + 59 * kSecond, &expired));
  CHECK_FALSE(expired);
  CHECK_FALSE(account_locked(state, policy, kNoon + 60 * kSecond, &expired));
  CHECK(expired);  // Run out: the bind removes it.
  CHECK_FALSE(account_locked(state, policy, kNoon - kSecond, &expired));  // Not yet in effect.
  policy.lockout_duration_s = 0;
  CHECK(account_locked(state, policy, kNoon + 1'000'000 * kSecond, &expired));
  policy.lockout = false;
  CHECK_FALSE(account_locked(state, policy, kNoon, &expired));
  // The validity window applies with or without pwdLockout.
  state = PasswordState{};
  state.end = kNoon;
  CHECK(account_locked(state, policy, kNoon, nullptr));
  CHECK_FALSE(account_locked(state, policy, kNoon - kSecond, nullptr));
  state = PasswordState{};
  state.start = kNoon;
  CHECK(account_locked(state, policy, kNoon - kSecond, nullptr));
  CHECK_FALSE(account_locked(state, policy, kNoon, nullptr));
  state = PasswordState{};
  state.permanent_lock = true;
  policy.lockout = true;
  policy.lockout_duration_s = 5;
  CHECK(account_locked(state, policy, kNoon, nullptr));
}

TEST_CASE("Password policy: failures count within pwdFailureCountInterval") {
  PasswordPolicy policy;
  const std::vector<UnixMicros> failures = {kNoon - 100 * kSecond, kNoon - 10 * kSecond, kNoon};
  CHECK(counted_failures(failures, policy, kNoon) == 3);  // No interval: all of them.
  policy.failure_count_interval_s = 10;
  CHECK(counted_failures(failures, policy, kNoon) == 2);
  policy.failure_count_interval_s = 9;
  CHECK(counted_failures(failures, policy, kNoon) == 1);
}

TEST_CASE("Password policy: expiry warning and grace logins as slapd counts them") {
  PasswordPolicy policy;
  policy.max_age_s = 1000;
  policy.expire_warning_s = 900;
  PasswordState state;
  state.changed = kNoon - 200 * kSecond;
  BindVerdict verdict = judge_successful_bind(state, policy, kNoon);
  CHECK_FALSE(verdict.refuse);
  CHECK(verdict.response.time_before_expiration_s == 800);
  state.changed = kNoon - 50 * kSecond;  // 950 s left: no warning yet.
  CHECK_FALSE(judge_successful_bind(state, policy, kNoon).response.time_before_expiration_s);
  state.changed.reset();  // Never changed: never expires.
  CHECK_FALSE(judge_successful_bind(state, policy, kNoon).response.time_before_expiration_s);

  policy.grace_authn_limit = 2;
  state.changed = kNoon - 2000 * kSecond;
  verdict = judge_successful_bind(state, policy, kNoon);
  CHECK(verdict.use_grace);
  CHECK(verdict.response.grace_authns_remaining == 1);
  state.grace_uses = 1;
  verdict = judge_successful_bind(state, policy, kNoon);
  CHECK(verdict.use_grace);
  CHECK(verdict.response.grace_authns_remaining == 0);
  state.grace_uses = 2;
  verdict = judge_successful_bind(state, policy, kNoon);
  CHECK(verdict.refuse);
  CHECK(verdict.response.error == PolicyError::kPasswordExpired);
  // pwdGraceExpiry: past it, no grace login is left whatever the count.
  state.grace_uses = 0;
  policy.grace_expiry_s = 500;
  CHECK(judge_successful_bind(state, policy, kNoon).refuse);
  policy.grace_expiry_s = 5000;
  CHECK(judge_successful_bind(state, policy, kNoon).use_grace);
}

TEST_CASE("Password policy: pwdReset with pwdMustChange asks for a change") {
  PasswordPolicy policy;
  PasswordState state;
  state.reset = true;
  CHECK_FALSE(judge_successful_bind(state, policy, kNoon).must_change);
  policy.must_change = true;
  const BindVerdict verdict = judge_successful_bind(state, policy, kNoon);
  CHECK(verdict.must_change);
  CHECK(verdict.response.error == PolicyError::kChangeAfterReset);
}

TEST_CASE("Password policy: quality checks length and refuses hashes only at level 2") {
  PasswordPolicy policy;
  policy.min_length = 8;
  CHECK(check_password_quality("short", policy) == PolicyError::kPasswordTooShort);
  CHECK(check_password_quality("", policy) == PolicyError::kPasswordTooShort);
  CHECK(check_password_quality("long enough", policy) == PolicyError::kNone);
  policy.max_length = 10;
  CHECK(check_password_quality("far too long a password", policy) == PolicyError::kPasswordTooLong);
  policy.max_length = 0;
  policy.check_quality = 1;
  CHECK(check_password_quality("{SSHA}abcdefghijkl", policy) == PolicyError::kNone);
  policy.check_quality = 2;
  CHECK(check_password_quality("{SSHA}abcdefghijkl", policy) ==
        PolicyError::kInsufficientPasswordQuality);
  CHECK(check_password_quality("{CLEARTEXT}abcdefghijkl", policy) == PolicyError::kNone);
}

TEST_CASE("Password policy: history values in slapd's form") {
  const std::string value = make_history_value(kNoon, "{SSHA}xyz#with#hashes");
  CHECK(value == "20261203120000Z#1.3.6.1.4.1.1466.115.121.1.40#21#{SSHA}xyz#with#hashes");
  const std::optional<HistoryItem> item = parse_history_value(value);
  REQUIRE(item.has_value());
  CHECK(item->time == kNoon);
  CHECK(item->password == "{SSHA}xyz#with#hashes");
  CHECK_FALSE(parse_history_value("20261203120000Z#1.2#5#abc").has_value());  // Length wrong.
  CHECK_FALSE(parse_history_value("garbage").has_value());
}

TEST_CASE("Password policy: the response control encodes as slapd's") {
  // Empty: SEQUENCE {}.
  CHECK(encode_policy_response(PolicyResponse{}) == std::string("\x30\x00", 2));
  PolicyResponse locked;
  locked.error = PolicyError::kAccountLocked;
  CHECK(encode_policy_response(locked) == std::string("\x30\x03\x81\x01\x01", 5));
  PolicyResponse expiring;
  expiring.time_before_expiration_s = 800;
  CHECK(encode_policy_response(expiring) == std::string("\x30\x06\xa0\x04\x80\x02\x03\x20", 8));
  PolicyResponse grace;
  grace.grace_authns_remaining = 0;
  grace.error = PolicyError::kChangeAfterReset;
  CHECK(encode_policy_response(grace) ==
        std::string("\x30\x08\xa0\x03\x81\x01\x00\x81\x01\x02", 10));
}

}  // namespace
}  // namespace numadir::server
