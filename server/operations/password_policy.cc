// server/operations/password_policy.cc: see password_policy.h.
#include "server/operations/password_policy.h"

#include <charconv>
#include <cstdio>

#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"

namespace numadir::server {

namespace ber = listener::wire::ber;

namespace {

constexpr std::int64_t kMicrosPerSecond = 1'000'000;

UnixSeconds seconds_of(UnixMicros micros) {
  // Floor division: times before the epoch (the permanent lock's year 0) stay ordered.
  return micros >= 0 ? micros / kMicrosPerSecond
                     : -((-micros + kMicrosPerSecond - 1) / kMicrosPerSecond);
}

// Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool read_digits(std::string_view text, std::size_t at, std::size_t count, unsigned& out) {
  if (at + count > text.size()) {
    return false;
  }
  out = 0;
  for (std::size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') {
      return false;
    }
    out = out * 10 + static_cast<unsigned>(text[i] - '0');
  }
  return true;
}

// An INTEGER attribute of a policy entry: absent leaves `out` alone.
Status read_integer(const backend::EntryRef& entry, std::string_view name, std::int64_t& out,
                    std::vector<std::string_view>& scratch) {
  entry.values_into(name, scratch);
  if (scratch.empty()) {
    return Status();
  }
  const std::string_view text = scratch.front();
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0 || value > 0x7fffffff) {
    return Status(StatusCode::kInvalidAttributeSyntax, "password policy " +
                                                           std::string(entry.dn()) + ": " +
                                                           std::string(name) + " is not a number");
  }
  out = value;
  return Status();
}

void read_boolean(const backend::EntryRef& entry, std::string_view name, bool& out,
                  std::vector<std::string_view>& scratch) {
  entry.values_into(name, scratch);
  if (!scratch.empty()) {
    out = scratch.front() == "TRUE";
  }
}

}  // namespace

std::optional<UnixMicros> parse_generalized_time(std::string_view text) {
  unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!read_digits(text, 0, 4, year) || !read_digits(text, 4, 2, month) ||
      !read_digits(text, 6, 2, day) || !read_digits(text, 8, 2, hour)) {
    return std::nullopt;
  }
  std::size_t at = 10;
  if (read_digits(text, at, 2, minute)) {
    at += 2;
    if (read_digits(text, at, 2, second)) {
      at += 2;
    }
  }
  std::int64_t fraction_micros = 0;
  if (at < text.size() && (text[at] == '.' || text[at] == ',')) {
    ++at;
    std::int64_t scale = 100'000;
    const std::size_t first = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      fraction_micros += (text[at] - '0') * scale;
      scale /= 10;
      ++at;
    }
    if (at == first) {
      return std::nullopt;
    }
  }
  if (at + 1 != text.size() || text[at] != 'Z' || month < 1 || month > 12 || day < 1 || day > 31 ||
      hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  const std::int64_t days = days_from_civil(year, month, day);
  const std::int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second;
  return seconds * kMicrosPerSecond + fraction_micros;
}

std::string format_generalized_time(UnixMicros micros, bool with_fraction) {
  const UnixSeconds seconds = seconds_of(micros);
  const auto fraction = static_cast<unsigned>(micros - seconds * kMicrosPerSecond);
  std::int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
  const auto in_day = static_cast<unsigned>(seconds - days * 86400);
  // civil_from_days (Howard Hinnant's algorithm).
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned day = doy - (153 * mp + 2) / 5 + 1;
  const unsigned month = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t year = static_cast<std::int64_t>(yoe) + era * 400 + (month <= 2 ? 1 : 0);
  char buffer[32];
  const int length = with_fraction
                         ? std::snprintf(buffer, sizeof(buffer), "%04lld%02u%02u%02u%02u%02u.%06uZ",
                                         static_cast<long long>(year), month, day, in_day / 3600,
                                         in_day / 60 % 60, in_day % 60, fraction)
                         : std::snprintf(buffer, sizeof(buffer), "%04lld%02u%02u%02u%02u%02uZ",
                                         static_cast<long long>(year), month, day, in_day / 3600,
                                         in_day / 60 % 60, in_day % 60);
  return std::string(buffer, static_cast<std::size_t>(length));
}

UnixMicros now_micros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<PasswordPolicy> PasswordPolicy::from_entry(const backend::EntryRef& entry) {
  PasswordPolicy policy;
  std::vector<std::string_view> scratch;
  struct IntegerKey {
    std::string_view name;
    std::int64_t PasswordPolicy::*field;
  };
  static constexpr IntegerKey kIntegers[] = {
      {"pwdMinAge", &PasswordPolicy::min_age_s},
      {"pwdMaxAge", &PasswordPolicy::max_age_s},
      {"pwdInHistory", &PasswordPolicy::in_history},
      {"pwdCheckQuality", &PasswordPolicy::check_quality},
      {"pwdMinLength", &PasswordPolicy::min_length},
      {"pwdMaxLength", &PasswordPolicy::max_length},
      {"pwdMaxFailure", &PasswordPolicy::max_failure},
      {"pwdMaxRecordedFailure", &PasswordPolicy::max_recorded_failure},
      {"pwdGraceExpiry", &PasswordPolicy::grace_expiry_s},
      {"pwdGraceAuthNLimit", &PasswordPolicy::grace_authn_limit},
      {"pwdExpireWarning", &PasswordPolicy::expire_warning_s},
      {"pwdFailureCountInterval", &PasswordPolicy::failure_count_interval_s},
      {"pwdLockoutDuration", &PasswordPolicy::lockout_duration_s},
  };
  for (const IntegerKey& key : kIntegers) {
    NUMADIR_RETURN_IF_ERROR(read_integer(entry, key.name, policy.*key.field, scratch));
  }
  read_boolean(entry, "pwdLockout", policy.lockout, scratch);
  read_boolean(entry, "pwdMustChange", policy.must_change, scratch);
  read_boolean(entry, "pwdAllowUserChange", policy.allow_user_change, scratch);
  read_boolean(entry, "pwdSafeModify", policy.safe_modify, scratch);
  if (policy.max_recorded_failure < policy.max_failure) {
    policy.max_recorded_failure = policy.max_failure;
  }
  return policy;
}

PasswordState PasswordState::from_entry(const backend::EntryRef& entry) {
  PasswordState state;
  Values values;
  state.read(entry, values);
  return state;
}

namespace {

// The order of PasswordState::Values.
constexpr std::array<std::string_view, PasswordState::kReadTypes> kStateTypes = {
    "pwdChangedTime", "pwdAccountLockedTime", "pwdFailureTime", "pwdGraceUseTime",
    "pwdReset",       "pwdStartTime",         "pwdEndTime",     "pwdHistory",
    "userPassword",   "pwdPolicySubentry"};

std::optional<UnixMicros> first_time(const std::vector<std::string_view>& values,
                                     bool& unreadable) {
  if (values.empty()) {
    return std::nullopt;
  }
  std::optional<UnixMicros> time = parse_generalized_time(values.front());
  unreadable = unreadable || !time.has_value();
  return time;
}

}  // namespace

void PasswordState::read(const backend::EntryRef& entry, Values& values) {
  entry.values_of_types(kStateTypes, values);
  bool ignored = false;
  changed = first_time(values[0], ignored);
  bool unreadable_lock = false;
  locked = first_time(values[1], unreadable_lock);
  permanent_lock =
      unreadable_lock || (!values[1].empty() && values[1].front() == kPermanentLockTime);
  failures.clear();
  for (std::string_view value : values[2]) {
    if (std::optional<UnixMicros> time = parse_generalized_time(value)) {
      failures.push_back(*time);
    }
  }
  grace_uses = values[3].size();
  reset = !values[4].empty() && values[4].front() == "TRUE";
  unreadable_validity = false;
  start = first_time(values[5], unreadable_validity);
  end = first_time(values[6], unreadable_validity);
  history.assign(values[7].begin(), values[7].end());
}

std::string encode_policy_response(const PolicyResponse& response) {
  // PasswordPolicyResponseValue ::= SEQUENCE {
  //   warning [0] CHOICE { timeBeforeExpiration [0] INTEGER, graceAuthNsRemaining [1] INTEGER }
  //     OPTIONAL,
  //   error [1] ENUMERATED OPTIONAL }
  listener::wire::BerWriter writer;
  writer.begin(ber::kSequence);
  if (response.time_before_expiration_s.has_value() ||
      response.grace_authns_remaining.has_value()) {
    writer.begin(ber::context_constructed(0));
    if (response.time_before_expiration_s.has_value()) {
      writer.write_integer(ber::context(0), *response.time_before_expiration_s);
    } else {
      writer.write_integer(ber::context(1), *response.grace_authns_remaining);
    }
    writer.end();
  }
  if (response.error != PolicyError::kNone) {
    writer.write_integer(ber::context(1), static_cast<std::int64_t>(response.error));
  }
  writer.end();
  return std::string(writer.view());
}

bool account_locked(const PasswordState& state, const PasswordPolicy& policy, UnixMicros now,
                    bool* lock_expired) {
  if (lock_expired != nullptr) {
    *lock_expired = false;
  }
  const UnixSeconds now_s = seconds_of(now);
  if (state.unreadable_validity || (state.start.has_value() && now_s < seconds_of(*state.start)) ||
      (state.end.has_value() && seconds_of(*state.end) <= now_s)) {
    return true;
  }
  if (!policy.lockout || (!state.locked.has_value() && !state.permanent_lock)) {
    return false;
  }
  if (state.permanent_lock) {
    return true;
  }
  const UnixSeconds then = seconds_of(*state.locked);
  if (now_s < then) {
    return false;  // Set in the future: not yet in effect.
  }
  if (policy.lockout_duration_s == 0 || now_s < then + policy.lockout_duration_s) {
    return true;
  }
  if (lock_expired != nullptr) {
    *lock_expired = true;
  }
  return false;
}

std::int64_t counted_failures(const std::vector<UnixMicros>& failures, const PasswordPolicy& policy,
                              UnixMicros now) {
  if (policy.failure_count_interval_s == 0) {
    return static_cast<std::int64_t>(failures.size());
  }
  const UnixSeconds now_s = seconds_of(now);
  std::int64_t counted = 0;
  for (const UnixMicros failure : failures) {
    if (now_s <= seconds_of(failure) + policy.failure_count_interval_s) {
      ++counted;
    }
  }
  return counted;
}

BindVerdict judge_successful_bind(const PasswordState& state, const PasswordPolicy& policy,
                                  UnixMicros now) {
  BindVerdict verdict;
  const UnixSeconds now_s = seconds_of(now);
  // Plain values rather than an optional: GCC's -O1 (the sanitizer builds) warns wrongly of an
  // uninitialized optional read.
  const bool has_changed = state.changed.has_value();
  const UnixSeconds changed_s = has_changed ? seconds_of(*state.changed) : 0;
  bool expired = false;
  if (policy.must_change && state.reset) {
    verdict.must_change = true;
    verdict.response.error = PolicyError::kChangeAfterReset;
  } else if (policy.max_age_s != 0 && has_changed && now_s - changed_s > policy.max_age_s) {
    expired = true;
  }
  if (expired) {
    std::int64_t remaining = 0;
    if (policy.grace_expiry_s != 0 &&
        now_s - changed_s > policy.max_age_s + policy.grace_expiry_s) {
      remaining = 0;  // The grace period itself is over.
    } else {
      remaining = policy.grace_authn_limit - static_cast<std::int64_t>(state.grace_uses);
    }
    --remaining;  // This login would use one.
    if (remaining < 0) {
      verdict.refuse = true;
      verdict.response.error = PolicyError::kPasswordExpired;
      return verdict;
    }
    verdict.use_grace = true;
    verdict.response.grace_authns_remaining = remaining;
    return verdict;
  }
  if (policy.max_age_s >= 1 && policy.expire_warning_s >= 1 && has_changed) {
    const std::int64_t age = now_s - changed_s;
    if (policy.max_age_s - age < policy.expire_warning_s) {
      verdict.response.time_before_expiration_s = std::max<std::int64_t>(0, policy.max_age_s - age);
    }
  }
  return verdict;
}

PolicyError check_password_quality(std::string_view password, const PasswordPolicy& policy) {
  if (password.empty() || static_cast<std::int64_t>(password.size()) < policy.min_length) {
    return PolicyError::kPasswordTooShort;
  }
  if (policy.max_length != 0 && static_cast<std::int64_t>(password.size()) > policy.max_length) {
    return PolicyError::kPasswordTooLong;
  }
  if (password.front() == '{') {
    const std::size_t close = password.find('}');
    if (close != std::string_view::npos) {
      std::string scheme(password.substr(1, close - 1));
      for (char& c : scheme) {
        c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
      }
      if (scheme != "CLEARTEXT" && policy.check_quality == 2) {
        return PolicyError::kInsufficientPasswordQuality;  // A hash cannot be checked.
      }
    }
  }
  return PolicyError::kNone;
}

std::string make_history_value(UnixMicros now, std::string_view old_password) {
  // slapd: "<time>#<syntax OID of userPassword>#<length>#<value>".
  std::string value = format_generalized_time(now, /*with_fraction=*/false);
  value += "#1.3.6.1.4.1.1466.115.121.1.40#";
  value += std::to_string(old_password.size());
  value += '#';
  value += old_password;
  return value;
}

std::optional<HistoryItem> parse_history_value(std::string_view value) {
  const std::size_t time_end = value.find('#');
  if (time_end == std::string_view::npos) {
    return std::nullopt;
  }
  const std::size_t oid_end = value.find('#', time_end + 1);
  if (oid_end == std::string_view::npos) {
    return std::nullopt;
  }
  const std::size_t length_end = value.find('#', oid_end + 1);
  if (length_end == std::string_view::npos) {
    return std::nullopt;
  }
  const std::optional<UnixMicros> time = parse_generalized_time(value.substr(0, time_end));
  std::size_t length = 0;
  const std::string_view length_text = value.substr(oid_end + 1, length_end - oid_end - 1);
  const auto [end, error] =
      std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
  if (!time.has_value() || error != std::errc() || end != length_text.data() + length_text.size() ||
      value.size() - length_end - 1 != length) {
    return std::nullopt;
  }
  return HistoryItem{*time, value.substr(length_end + 1)};
}

}  // namespace numadir::server
