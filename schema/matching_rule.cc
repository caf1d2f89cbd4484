// schema/matching_rule.cc: the built-in matching rules and their normalizers.
//
// Normalized forms (index keys: changing any of them needs a reindex):
//   - string rules: RFC 4518 preparation (schema/string_prep.h). Equality and ordering rules use
//     the compact space form (trimmed, inner runs -> one SPACE, all-space -> " "); substring
//     rules use RFC 4518's own form for both the value and the pieces, so a substrings rule's
//     normalize() differs from the matching equality rule's.
//   - integers: a sign byte ('-' negative, '0' zero, '1' positive), then for non-zero values
//     the digit count written as <number of its digits><its digits>, then the digits without
//     leading zeros; for negative values every byte after the sign is complemented
//     ('0'+'9'-c), which reverses their order. 4711 -> "1144711", -4711 -> "-855288", 0 -> "0".
//     Leading zeros and "-0" are accepted (lenient), anything else but [-]digits is rejected.
//   - generalized time: UTC "YYYYMMDDHHMMSS" and, when the fraction is not zero, "." and the
//     fraction of a second without trailing zeros. There is no trailing "Z": 'Z' sorts after
//     the digits, so "...05Z" would sort after "...05.5Z"; without it a shorter form is a prefix
//     of a longer one and byte order is chronological. Missing minutes and seconds are 00; a
//     fraction of an hour or minute becomes minutes, seconds and a fraction of a second
//     (exactly, in decimal). Values that fall outside years 0000-9999 once converted to UTC
//     are rejected.
//   - objectIdentifierMatch: a descr lower-cased, a numericoid unchanged. Mapping names to OIDs
//     needs the loaded schema, which rules here do not see: the caller must map "cn" and
//     "2.5.4.3" to one spelling first if it wants them to match.
//   - first-component rules: a value "( first ..." is reduced to its first component; any other
//     input is taken as the assertion value itself.
//   - distinguishedNameMatch: Dn::normalized() with values through caseIgnoreMatch's
//     preparation (full Unicode folding); types lower-cased (names are not mapped to OIDs).
//   - uuid rules: the lower-case string form (its byte order is the UUIDs' numeric order).
#include "schema/matching_rule.h"

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "schema/ascii.h"
#include "schema/dn.h"
#include "schema/oid.h"
#include "schema/string_prep.h"

namespace numadir::schema {
namespace {

PrepTarget piece_target(SubstringPosition position) {
  switch (position) {
    case SubstringPosition::kInitial:
      return PrepTarget::kInitial;
    case SubstringPosition::kAny:
      return PrepTarget::kAny;
    case SubstringPosition::kFinal:
      return PrepTarget::kFinal;
  }
  return PrepTarget::kAny;
}

// ---- String rules (RFC 4518) ----

// An equality / ordering value; kIa5 rules accept only ASCII.
template <bool kFold, PrepInsignificant kInsignificant, bool kIa5 = false>
bool prep_value(std::string_view value, std::string& out) {
  if (kIa5 && !is_ascii(value)) {
    return false;
  }
  return prepare(value, PrepOptions{kFold, kInsignificant, PrepTarget::kValue}, out);
}

// A value that substring assertions are matched against.
template <bool kFold, PrepInsignificant kInsignificant, bool kIa5 = false>
bool prep_substring_value(std::string_view value, std::string& out) {
  if (kIa5 && !is_ascii(value)) {
    return false;
  }
  return prepare(value, PrepOptions{kFold, kInsignificant, PrepTarget::kSubstringValue}, out);
}

template <bool kFold, PrepInsignificant kInsignificant, bool kIa5 = false>
bool prep_piece(std::string_view piece, SubstringPosition position, std::string& out) {
  if (kIa5 && !is_ascii(piece)) {
    return false;
  }
  return prepare(piece, PrepOptions{kFold, kInsignificant, piece_target(position)}, out);
}

constexpr PrepInsignificant kSpace = PrepInsignificant::kSpace;
constexpr PrepInsignificant kTelephone = PrepInsignificant::kTelephone;

// numericString rules: Numeric String is ASCII digits and spaces; every space is insignificant
// (RFC 4518 §2.6.2), so the prepared form is the digits alone.
bool numeric_digits(std::string_view value, std::string& out) {
  out.clear();
  for (char c : value) {
    if (is_ascii_digit(c)) {
      out += c;
    } else if (c != ' ') {
      return false;
    }
  }
  return true;
}

bool numeric_value(std::string_view value, std::string& out) {
  return !value.empty() && numeric_digits(value, out);
}

bool numeric_piece(std::string_view piece, SubstringPosition, std::string& out) {
  return numeric_digits(piece, out);
}

// Calls `fn(line)` for each line of a Postal Address value, with \24 and \5C unescaped.
// Returns: false on a bad escape or when fn returns false.
template <typename Fn>
bool for_each_postal_line(std::string_view value, Fn fn) {
  std::string line;
  for (std::size_t i = 0; i <= value.size(); ++i) {
    if (i == value.size() || value[i] == '$') {
      if (!fn(std::string_view(line))) {
        return false;
      }
      line.clear();
    } else if (value[i] == '\\') {
      const std::string_view code = value.substr(i + 1, 2);
      if (code == "24") {
        line += '$';
      } else if (ascii_iequals(code, "5c")) {
        line += '\\';
      } else {
        return false;
      }
      i += 2;
    } else {
      line += value[i];
    }
  }
  return true;
}

// caseIgnoreListMatch: each line prepared like caseIgnoreMatch, re-escaped and joined with '$'.
bool case_ignore_list(std::string_view value, std::string& out) {
  out.clear();
  std::string prepared;
  bool first = true;
  return for_each_postal_line(value, [&](std::string_view line) {
    if (!prepare(line, PrepOptions{true, kSpace, PrepTarget::kValue}, prepared)) {
      return false;
    }
    if (!first) {
      out += '$';
    }
    first = false;
    for (char c : prepared) {
      if (c == '$') {
        out += "\\24";
      } else if (c == '\\') {
        out += "\\5C";
      } else {
        out += c;
      }
    }
    return true;
  });
}

// caseIgnoreListSubstringsMatch: the lines in the substring form, joined by a byte that no
// prepared piece contains (controls are mapped away), so no piece matches across two lines.
constexpr char kLineSeparator = '\x1E';

bool case_ignore_list_substring_value(std::string_view value, std::string& out) {
  out.clear();
  std::string prepared;
  bool first = true;
  return for_each_postal_line(value, [&](std::string_view line) {
    if (!prepare(line, PrepOptions{true, kSpace, PrepTarget::kSubstringValue}, prepared)) {
      return false;
    }
    if (!first) {
      out += kLineSeparator;
    }
    first = false;
    out += prepared;
    return true;
  });
}

// ---- Integers, booleans, bit strings, octet strings, UUIDs ----

bool integer(std::string_view value, std::string& out) {
  const bool negative = !value.empty() && value.front() == '-';
  std::string_view digits = value.substr(negative ? 1 : 0);
  if (digits.empty()) {
    return false;
  }
  for (char c : digits) {
    if (!is_ascii_digit(c)) {
      return false;
    }
  }
  while (digits.size() > 1 && digits.front() == '0') {
    digits.remove_prefix(1);
  }
  out.clear();
  if (digits == "0") {
    out += '0';
    return true;
  }
  const std::string count = std::to_string(digits.size());
  out.reserve(2 + count.size() + digits.size());
  out += negative ? '-' : '1';
  const auto put = [&](char c) { out += negative ? static_cast<char>('0' + '9' - c) : c; };
  put(static_cast<char>('0' + count.size()));
  for (char c : count) {
    put(c);
  }
  for (char c : digits) {
    put(c);
  }
  return true;
}

bool boolean(std::string_view value, std::string& out) {
  if (value != "TRUE" && value != "FALSE") {
    return false;
  }
  out.assign(value);
  return true;
}

bool is_bit_string(std::string_view value) {
  if (value.size() < 3 || value.front() != '\'' || !value.ends_with("'B")) {
    return false;
  }
  for (char c : value.substr(1, value.size() - 3)) {
    if (c != '0' && c != '1') {
      return false;
    }
  }
  return true;
}

bool bit_string(std::string_view value, std::string& out) {
  if (!is_bit_string(value)) {
    return false;
  }
  out.assign(value);
  return true;
}

bool octet_string(std::string_view value, std::string& out) {
  out.assign(value);
  return true;
}

bool uuid(std::string_view value, std::string& out) {
  if (value.size() != 36) {
    return false;
  }
  out.clear();
  for (std::size_t i = 0; i < value.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? value[i] != '-' : ascii_hex_value(value[i]) < 0) {
      return false;
    }
    out += ascii_lower(value[i]);
  }
  return true;
}

// ---- Object identifiers and first components ----

bool object_identifier(std::string_view value, std::string& out) {
  if (is_numericoid(value)) {
    out.assign(value);
    return true;
  }
  if (!is_descr(value)) {
    return false;
  }
  out.clear();
  for (char c : value) {
    out += ascii_lower(c);
  }
  return true;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Returns: the first component of a value written "( first ...)" (RFC 4512 descriptions): the
// token after '(' (or the contents of a quoted one), or `value` itself when it does not start
// with '(' (then it is an assertion value).
std::string_view first_component(std::string_view value) {
  std::size_t i = 0;
  while (i < value.size() && is_space(value[i])) {
    ++i;
  }
  if (i == value.size() || value[i] != '(') {
    return value;
  }
  ++i;
  while (i < value.size() && is_space(value[i])) {
    ++i;
  }
  if (i < value.size() && value[i] == '\'') {
    const std::size_t end = value.find('\'', i + 1);
    return end == std::string_view::npos ? value.substr(i) : value.substr(i + 1, end - i - 1);
  }
  const std::size_t start = i;
  while (i < value.size() && !is_space(value[i]) && value[i] != ')') {
    ++i;
  }
  return value.substr(start, i - start);
}

bool integer_first_component(std::string_view value, std::string& out) {
  return integer(first_component(value), out);
}

bool object_identifier_first_component(std::string_view value, std::string& out) {
  return object_identifier(first_component(value), out);
}

bool directory_string_first_component(std::string_view value, std::string& out) {
  return prep_value<true, kSpace>(first_component(value), out);
}

// ---- Distinguished names ----

// Values through caseIgnoreMatch's preparation. A value that cannot be prepared (a prohibited
// code point) keeps its bytes, so that such a name still matches itself.
class CaseIgnoreDnValueNormalizer final : public DnValueNormalizer {
 public:
  std::string normalize(std::string_view /*type*/, std::string_view value) const override {
    std::string out;
    if (!prepare(value, PrepOptions{true, kSpace, PrepTarget::kValue}, out)) {
      out.assign(value);
    }
    return out;
  }
};

bool append_normalized_dn(std::string_view value, std::string& out) {
  const Result<Dn> dn = Dn::parse(value);
  if (!dn.ok()) {
    return false;
  }
  static const CaseIgnoreDnValueNormalizer normalizer;
  out += dn->normalized(&normalizer);
  return true;
}

bool distinguished_name(std::string_view value, std::string& out) {
  out.clear();
  return append_normalized_dn(value, out);
}

// uniqueMemberMatch: Name And Optional UID, "dn[#'bits'B]". The last '#' starts the UID if a
// bit string follows it and it is not escaped.
bool unique_member(std::string_view value, std::string& out) {
  std::string_view name = value;
  std::string_view uid;
  const std::size_t hash = value.rfind('#');
  if (hash != std::string_view::npos && is_bit_string(value.substr(hash + 1))) {
    std::size_t backslashes = 0;
    while (backslashes < hash && value[hash - 1 - backslashes] == '\\') {
      ++backslashes;
    }
    if (backslashes % 2 == 0) {
      name = value.substr(0, hash);
      uid = value.substr(hash + 1);
    }
  }
  out.clear();
  if (!append_normalized_dn(name, out)) {
    return false;
  }
  if (!uid.empty()) {
    out += '#';
    out += uid;
  }
  return true;
}

// ---- Generalized time ----

bool is_leap_year(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int days_in_month(int year, int month) {
  static constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap_year(year) ? 29 : kDays[static_cast<std::size_t>(month - 1)];
}

// Reads `count` digits at value[pos] as a number and advances; -1 if they are not all digits.
int read_number(std::string_view value, std::size_t& pos, std::size_t count) {
  if (value.size() - pos < count) {
    return -1;
  }
  int n = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const char c = value[pos + i];
    if (!is_ascii_digit(c)) {
      return -1;
    }
    n = n * 10 + (c - '0');
  }
  pos += count;
  return n;
}

bool next_is_digit(std::string_view value, std::size_t pos) {
  return pos < value.size() && is_ascii_digit(value[pos]);
}

// RFC 4517 §3.3.13: century year month day hour [minute [second / leap-second]] [fraction]
// g-time-zone, with the day checked against the month's length.
bool generalized_time(std::string_view value, std::string& out) {
  std::size_t pos = 0;
  int year = read_number(value, pos, 4);
  int month = read_number(value, pos, 2);
  int day = read_number(value, pos, 2);
  int hour = read_number(value, pos, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) ||
      hour < 0 || hour > 23) {
    return false;
  }
  int minute = 0;
  int second = 0;
  int fraction_unit_s = 3600;  // What the fraction is a fraction of.
  if (next_is_digit(value, pos)) {
    minute = read_number(value, pos, 2);
    if (minute < 0 || minute > 59) {
      return false;
    }
    fraction_unit_s = 60;
    if (next_is_digit(value, pos)) {
      second = read_number(value, pos, 2);
      if (second < 0 || second > 60) {  // 60: a leap second.
        return false;
      }
      fraction_unit_s = 1;
    }
  }
  std::string_view fraction;
  if (pos < value.size() && (value[pos] == '.' || value[pos] == ',')) {
    const std::size_t start = ++pos;
    while (next_is_digit(value, pos)) {
      ++pos;
    }
    fraction = value.substr(start, pos - start);
    if (fraction.empty()) {
      return false;
    }
  }
  int offset_min = 0;
  if (pos < value.size() && value[pos] == 'Z') {
    ++pos;
  } else if (pos < value.size() && (value[pos] == '+' || value[pos] == '-')) {
    const int sign = value[pos] == '-' ? -1 : 1;
    ++pos;
    const int offset_h = read_number(value, pos, 2);
    int offset_m = 0;
    if (next_is_digit(value, pos)) {
      offset_m = read_number(value, pos, 2);
    }
    if (offset_h < 0 || offset_h > 23 || offset_m < 0 || offset_m > 59) {
      return false;
    }
    offset_min = sign * (offset_h * 60 + offset_m);
  } else {
    return false;
  }
  if (pos != value.size()) {
    return false;
  }

  // The fraction times its unit, in decimal: whole seconds carry out, the rest stays a
  // fraction of a second with as many digits.
  std::string sub_second(fraction);
  int carry = 0;
  for (std::size_t i = sub_second.size(); i-- > 0;) {
    const int d = (sub_second[i] - '0') * fraction_unit_s + carry;
    sub_second[i] = static_cast<char>('0' + d % 10);
    carry = d / 10;
  }
  minute += carry / 60;  // Only a fraction of an hour carries minutes; then second is 0.
  second += carry % 60;
  while (!sub_second.empty() && sub_second.back() == '0') {
    sub_second.pop_back();
  }

  // To UTC: local = UTC + offset.
  int minutes = hour * 60 + minute - offset_min;
  if (minutes < 0) {
    minutes += 24 * 60;
    if (--day < 1) {
      if (--month < 1) {
        month = 12;
        --year;
      }
      day = days_in_month(year, month);
    }
  } else if (minutes >= 24 * 60) {
    minutes -= 24 * 60;
    if (++day > days_in_month(year, month)) {
      day = 1;
      if (++month > 12) {
        month = 1;
        ++year;
      }
    }
  }
  if (year < 0 || year > 9999) {
    return false;
  }
  out.clear();
  const auto put = [&](int number, int width) {
    for (int divisor = width == 4 ? 1000 : 10; divisor > 0; divisor /= 10) {
      out += static_cast<char>('0' + number / divisor % 10);
    }
  };
  put(year, 4);
  put(month, 2);
  put(day, 2);
  put(minutes / 60, 2);
  put(minutes % 60, 2);
  put(second, 2);
  if (!sub_second.empty()) {
    out += '.';
    out += sub_second;
  }
  return true;
}

// ---- authPassword (RFC 3112) ----

bool is_auth_scheme_char(char c) {
  return is_ascii_digit(c) || (c >= 'A' && c <= 'Z') || c == '-' || c == '.' || c == '/' ||
         c == '_';
}

bool is_auth_value_char(char c) { return c >= 0x21 && c <= 0x7E && c != '$'; }

// authPasswordExactMatch: "scheme $ authInfo $ authValue" with the optional spaces dropped.
bool auth_password_exact(std::string_view value, std::string& out) {
  std::size_t pos = 0;
  const auto skip_spaces = [&] {
    while (pos < value.size() && value[pos] == ' ') {
      ++pos;
    }
  };
  const auto read = [&](bool (*accept)(char)) {
    const std::size_t start = pos;
    while (pos < value.size() && accept(value[pos])) {
      ++pos;
    }
    return value.substr(start, pos - start);
  };
  skip_spaces();
  const std::string_view scheme = read(is_auth_scheme_char);
  if (scheme.empty() || scheme.size() > 64) {
    return false;
  }
  out.assign(scheme);
  for (int part = 0; part < 2; ++part) {
    skip_spaces();
    if (pos == value.size() || value[pos] != '$') {
      return false;
    }
    ++pos;
    skip_spaces();
    out += '$';
    out += read(is_auth_value_char);
  }
  skip_spaces();
  return pos == value.size();
}

// ---- The table ----

using MU = MatchingRuleUse;
constexpr MU kEq = MU::kEquality;
constexpr MU kOrd = MU::kOrdering;
constexpr MU kSub = MU::kSubstrings;

#define NUMADIR_SYNTAX(n) "1.3.6.1.4.1.1466.115.121.1." #n

constexpr std::array kRules = {
    MatchingRule{"2.5.13.0", "objectIdentifierMatch", kEq, NUMADIR_SYNTAX(38), object_identifier,
                 nullptr},
    MatchingRule{"2.5.13.1", "distinguishedNameMatch", kEq, NUMADIR_SYNTAX(12), distinguished_name,
                 nullptr},
    MatchingRule{"2.5.13.2", "caseIgnoreMatch", kEq, NUMADIR_SYNTAX(15), prep_value<true, kSpace>,
                 nullptr},
    MatchingRule{"2.5.13.3", "caseIgnoreOrderingMatch", kOrd, NUMADIR_SYNTAX(15),
                 prep_value<true, kSpace>, nullptr},
    MatchingRule{"2.5.13.4", "caseIgnoreSubstringsMatch", kSub, NUMADIR_SYNTAX(58),
                 prep_substring_value<true, kSpace>, prep_piece<true, kSpace>},
    MatchingRule{"2.5.13.5", "caseExactMatch", kEq, NUMADIR_SYNTAX(15), prep_value<false, kSpace>,
                 nullptr},
    MatchingRule{"2.5.13.6", "caseExactOrderingMatch", kOrd, NUMADIR_SYNTAX(15),
                 prep_value<false, kSpace>, nullptr},
    MatchingRule{"2.5.13.7", "caseExactSubstringsMatch", kSub, NUMADIR_SYNTAX(58),
                 prep_substring_value<false, kSpace>, prep_piece<false, kSpace>},
    MatchingRule{"2.5.13.8", "numericStringMatch", kEq, NUMADIR_SYNTAX(36), numeric_value, nullptr},
    MatchingRule{"2.5.13.9", "numericStringOrderingMatch", kOrd, NUMADIR_SYNTAX(36), numeric_value,
                 nullptr},
    MatchingRule{"2.5.13.10", "numericStringSubstringsMatch", kSub, NUMADIR_SYNTAX(58),
                 numeric_value, numeric_piece},
    MatchingRule{"2.5.13.11", "caseIgnoreListMatch", kEq, NUMADIR_SYNTAX(41), case_ignore_list,
                 nullptr},
    MatchingRule{"2.5.13.12", "caseIgnoreListSubstringsMatch", kSub, NUMADIR_SYNTAX(58),
                 case_ignore_list_substring_value, prep_piece<true, kSpace>},
    MatchingRule{"2.5.13.13", "booleanMatch", kEq, NUMADIR_SYNTAX(7), boolean, nullptr},
    MatchingRule{"2.5.13.14", "integerMatch", kEq, NUMADIR_SYNTAX(27), integer, nullptr},
    MatchingRule{"2.5.13.15", "integerOrderingMatch", kOrd, NUMADIR_SYNTAX(27), integer, nullptr},
    MatchingRule{"2.5.13.16", "bitStringMatch", kEq, NUMADIR_SYNTAX(6), bit_string, nullptr},
    MatchingRule{"2.5.13.17", "octetStringMatch", kEq, NUMADIR_SYNTAX(40), octet_string, nullptr},
    MatchingRule{"2.5.13.18", "octetStringOrderingMatch", kOrd, NUMADIR_SYNTAX(40), octet_string,
                 nullptr},
    MatchingRule{"2.5.13.20", "telephoneNumberMatch", kEq, NUMADIR_SYNTAX(50),
                 prep_value<true, kTelephone>, nullptr},
    MatchingRule{"2.5.13.21", "telephoneNumberSubstringsMatch", kSub, NUMADIR_SYNTAX(58),
                 prep_substring_value<true, kTelephone>, prep_piece<true, kTelephone>},
    MatchingRule{"2.5.13.23", "uniqueMemberMatch", kEq, NUMADIR_SYNTAX(34), unique_member, nullptr},
    MatchingRule{"2.5.13.27", "generalizedTimeMatch", kEq, NUMADIR_SYNTAX(24), generalized_time,
                 nullptr},
    MatchingRule{"2.5.13.28", "generalizedTimeOrderingMatch", kOrd, NUMADIR_SYNTAX(24),
                 generalized_time, nullptr},
    MatchingRule{"2.5.13.29", "integerFirstComponentMatch", kEq, NUMADIR_SYNTAX(27),
                 integer_first_component, nullptr},
    MatchingRule{"2.5.13.30", "objectIdentifierFirstComponentMatch", kEq, NUMADIR_SYNTAX(38),
                 object_identifier_first_component, nullptr},
    MatchingRule{"2.5.13.31", "directoryStringFirstComponentMatch", kEq, NUMADIR_SYNTAX(15),
                 directory_string_first_component, nullptr},
    MatchingRule{"1.3.6.1.4.1.1466.109.114.1", "caseExactIA5Match", kEq, NUMADIR_SYNTAX(26),
                 prep_value<false, kSpace, true>, nullptr},
    MatchingRule{"1.3.6.1.4.1.1466.109.114.2", "caseIgnoreIA5Match", kEq, NUMADIR_SYNTAX(26),
                 prep_value<true, kSpace, true>, nullptr},
    MatchingRule{"1.3.6.1.4.1.1466.109.114.3", "caseIgnoreIA5SubstringsMatch", kSub,
                 NUMADIR_SYNTAX(58), prep_substring_value<true, kSpace, true>,
                 prep_piece<true, kSpace, true>},
    MatchingRule{"1.3.6.1.4.1.4203.1.2.1", "caseExactIA5SubstringsMatch", kSub, NUMADIR_SYNTAX(58),
                 prep_substring_value<false, kSpace, true>, prep_piece<false, kSpace, true>},
    MatchingRule{"1.3.6.1.4.1.4203.1.2.2", "authPasswordExactMatch", kEq, "1.3.6.1.4.1.4203.1.1.2",
                 auth_password_exact, nullptr},
    MatchingRule{"1.3.6.1.1.16.2", "uuidMatch", kEq, "1.3.6.1.1.16.1", uuid, nullptr},
    MatchingRule{"1.3.6.1.1.16.3", "uuidOrderingMatch", kOrd, "1.3.6.1.1.16.1", uuid, nullptr},
};

#undef NUMADIR_SYNTAX

}  // namespace

const MatchingRule* find_matching_rule(std::string_view name_or_oid) {
  const bool numeric = !name_or_oid.empty() && is_ascii_digit(name_or_oid.front());
  for (const MatchingRule& rule : kRules) {
    if (numeric ? rule.oid == name_or_oid : ascii_iequals(rule.name, name_or_oid)) {
      return &rule;
    }
  }
  return nullptr;
}

std::span<const MatchingRule> all_matching_rules() { return kRules; }

bool substrings_match(std::string_view value, std::string_view initial,
                      std::span<const std::string> any, std::string_view final) {
  if (initial.size() + final.size() > value.size() || !value.starts_with(initial) ||
      !value.ends_with(final)) {
    return false;
  }
  // The any pieces, in order and without overlap, between initial and final.
  std::string_view middle =
      value.substr(initial.size(), value.size() - initial.size() - final.size());
  for (const std::string& piece : any) {
    const std::size_t at = middle.find(piece);
    if (at == std::string_view::npos) {
      return false;
    }
    middle.remove_prefix(at + piece.size());
  }
  return true;
}

}  // namespace numadir::schema
