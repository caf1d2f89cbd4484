// schema/syntax.cc: the table of built-in syntaxes and their validators (RFC 4517 §3.3 grammars,
// RFC 4530, RFC 2307, RFC 3112); the RFC 4512 §4.1 description syntaxes are validated in
// schema/syntax_description.cc.
//
// ABNF string literals are case-insensitive, so keywords (TRUE excepted, which RFC 4517 spells
// out in upper case) compare case-insensitively. Generalized Time, Name And Optional UID, UUID and
// authPassword values are checked by their matching rules' normalizers, so the two cannot
// disagree.
//
// Thread contract: as schema/syntax.h; the table is constant, and any thread may read it.
#include "schema/syntax.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "schema/ascii.h"
#include "schema/detail/syntax_validators.h"
#include "schema/dn.h"
#include "schema/matching_rule.h"
#include "schema/utf8.h"

namespace numadir::schema {
namespace {

using detail::escapes_ok;
using detail::is_number;
using detail::is_oid;
using detail::is_one_of;

// RFC 4517 PrintableCharacter.
bool is_printable_char(char c) {
  switch (c) {
    case '\'':
    case '(':
    case ')':
    case '+':
    case ',':
    case '-':
    case '.':
    case '=':
    case '/':
    case ':':
    case '?':
    case ' ':
      return true;
    default:
      return is_ascii_alpha(c) || is_ascii_digit(c);
  }
}

bool is_printable_string(std::string_view value) {
  if (value.empty()) {
    return false;
  }
  for (char c : value) {
    if (!is_printable_char(c)) {
      return false;
    }
  }
  return true;
}

bool is_ia5_string(std::string_view value) {
  for (char c : value) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      return false;
    }
  }
  return true;
}

// Calls fn(piece) for each '$'-separated piece of `value`; stops at the first false.
template <typename Fn>
bool for_each_dollar_piece(std::string_view value, Fn fn) {
  std::size_t index = 0;
  while (true) {
    const std::size_t dollar = value.find('$');
    if (!fn(value.substr(0, dollar), index++)) {
      return false;
    }
    if (dollar == std::string_view::npos) {
      return true;
    }
    value.remove_prefix(dollar + 1);
  }
}

// Returns: `value` without the `c`s at its start and end.
std::string_view trim(std::string_view value, char c = ' ') {
  while (!value.empty() && value.front() == c) {
    value.remove_prefix(1);
  }
  while (!value.empty() && value.back() == c) {
    value.remove_suffix(1);
  }
  return value;
}

// Returns: true if `rule` (nullptr: never) can normalize `value`.
bool accepted_by_rule(const MatchingRule* rule, std::string_view value) {
  std::string scratch;
  return rule != nullptr && rule->normalize(value, scratch);
}

// ---- Guide and Enhanced Guide (RFC 4517 §3.3.10, §3.3.14) ----

// criteria = and-term *( BAR and-term ); and-term = term *( AMPERSAND term );
// term = EXCLAIM term / attributetype DOLLAR match-type / LPAREN criteria RPAREN / "?true" /
// "?false". Nesting is bounded so that a hostile value cannot exhaust the stack.
class CriteriaParser {
 public:
  explicit CriteriaParser(std::string_view text) : s_(text) {}

  bool parse() { return criteria(0) && pos_ == s_.size(); }

 private:
  static constexpr int kMaxDepth = 64;

  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  std::string_view read_while(bool (*pred)(char)) {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && pred(s_[pos_])) {
      ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }

  bool criteria(int depth) {
    do {
      if (!and_term(depth)) {
        return false;
      }
    } while (eat('|'));
    return true;
  }

  bool and_term(int depth) {
    do {
      if (!term(depth)) {
        return false;
      }
    } while (eat('&'));
    return true;
  }

  bool term(int depth) {
    if (depth > kMaxDepth) {
      return false;
    }
    if (eat('!')) {
      return term(depth + 1);
    }
    if (eat('(')) {
      return criteria(depth + 1) && eat(')');
    }
    if (eat('?')) {
      const std::string_view word = read_while(is_ascii_alpha);
      return ascii_iequals(word, "true") || ascii_iequals(word, "false");
    }
    const std::string_view type = read_while(
        [](char c) { return is_ascii_alpha(c) || is_ascii_digit(c) || c == '-' || c == '.'; });
    static constexpr std::array<std::string_view, 5> kMatchTypes = {"EQ", "SUBSTR", "GE", "LE",
                                                                    "APPROX"};
    return is_oid(type) && eat('$') && is_one_of(read_while(is_ascii_alpha), kMatchTypes);
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

bool guide(std::string_view v) {
  const std::size_t sharp = v.find('#');
  if (sharp != std::string_view::npos && !is_oid(trim(v.substr(0, sharp)))) {
    return false;
  }
  return CriteriaParser(sharp == std::string_view::npos ? v : v.substr(sharp + 1)).parse();
}

bool enhanced_guide(std::string_view v) {
  const std::size_t first = v.find('#');
  const std::size_t last = v.rfind('#');
  if (first == std::string_view::npos || first == last ||
      v.substr(first + 1, last - first - 1).find('#') != std::string_view::npos) {
    return false;
  }
  static constexpr std::array<std::string_view, 3> kSubsets = {"baseobject", "oneLevel",
                                                               "wholeSubtree"};
  std::string_view subset = v.substr(last + 1);
  while (!subset.empty() && subset.front() == ' ') {
    subset.remove_prefix(1);
  }
  return is_oid(trim(v.substr(0, first))) &&
         CriteriaParser(trim(v.substr(first + 1, last - first - 1))).parse() &&
         is_one_of(subset, kSubsets);
}

// ---- The other RFC 4517 syntaxes ----

bool any_bytes(std::string_view) { return true; }

bool directory_string(std::string_view v) { return !v.empty() && is_valid_utf8(v); }

bool bit_string(std::string_view v) {
  if (v.size() < 3 || v.front() != '\'' || !v.ends_with("'B")) {
    return false;
  }
  for (char c : v.substr(1, v.size() - 3)) {
    if (c != '0' && c != '1') {
      return false;
    }
  }
  return true;
}

bool boolean(std::string_view v) { return v == "TRUE" || v == "FALSE"; }

bool country_string(std::string_view v) { return v.size() == 2 && is_printable_string(v); }

bool delivery_method(std::string_view v) {
  static constexpr std::array<std::string_view, 10> kMethods = {
      "any",   "mhs",   "physical", "telex",    "teletex",
      "g3fax", "g4fax", "ia5",      "videotex", "telephone"};
  return !v.empty() && v.front() != ' ' && v.back() != ' ' &&
         for_each_dollar_piece(v, [](std::string_view piece, std::size_t) {
           return is_one_of(trim(piece), kMethods);
         });
}

bool dn(std::string_view v) { return Dn::parse(v).ok(); }

bool facsimile_telephone_number(std::string_view v) {
  static constexpr std::array<std::string_view, 7> kParameters = {
      "twoDimensional", "fineResolution", "unlimitedLength", "b4Length",
      "a3Width",        "b4Width",        "uncompressed"};
  return for_each_dollar_piece(v, [](std::string_view piece, std::size_t index) {
    return index == 0 ? is_printable_string(piece) : is_one_of(piece, kParameters);
  });
}

bool generalized_time(std::string_view v) {
  static const MatchingRule* const rule = find_matching_rule("generalizedTimeMatch");
  return accepted_by_rule(rule, v);
}

bool ia5_string(std::string_view v) { return is_ia5_string(v); }

// RFC 4517 §3.3.16: no leading zeros and no "-0".
bool integer(std::string_view v) {
  if (!v.empty() && v.front() == '-') {
    v.remove_prefix(1);
    if (v == "0") {
      return false;
    }
  }
  return is_number(v);
}

bool name_and_optional_uid(std::string_view v) {
  static const MatchingRule* const rule = find_matching_rule("uniqueMemberMatch");
  return accepted_by_rule(rule, v);
}

bool numeric_string(std::string_view v) {
  if (v.empty()) {
    return false;
  }
  for (char c : v) {
    if (!is_ascii_digit(c) && c != ' ') {
      return false;
    }
  }
  return true;
}

bool oid(std::string_view v) { return is_oid(v); }

bool other_mailbox(std::string_view v) {
  const std::size_t dollar = v.find('$');
  return dollar != std::string_view::npos && is_printable_string(v.substr(0, dollar)) &&
         is_ia5_string(v.substr(dollar + 1));
}

bool postal_address(std::string_view v) {
  return is_valid_utf8(v) && for_each_dollar_piece(v, [](std::string_view line, std::size_t) {
           return !line.empty() && escapes_ok(line, "24");
         });
}

bool printable_string(std::string_view v) { return is_printable_string(v); }

// RFC 4517 §3.3.30: [initial] ASTERISK *(substring ASTERISK) [final], substrings non-empty,
// with '*' and '\' escaped as \2A and \5C.
bool substring_assertion(std::string_view v) {
  return is_valid_utf8(v) && v.find('*') != std::string_view::npos &&
         v.find("**") == std::string_view::npos && escapes_ok(v, "2a");
}

bool teletex_terminal_identifier(std::string_view v) {
  static constexpr std::array<std::string_view, 5> kKeys = {"graphic", "control", "misc", "page",
                                                            "private"};
  return for_each_dollar_piece(v, [](std::string_view piece, std::size_t index) {
    if (index == 0) {
      return is_printable_string(piece);
    }
    const std::size_t colon = piece.find(':');
    return colon != std::string_view::npos && is_one_of(piece.substr(0, colon), kKeys) &&
           escapes_ok(piece.substr(colon + 1), "24");
  });
}

bool telex_number(std::string_view v) {
  std::size_t count = 0;
  return for_each_dollar_piece(v,
                               [&](std::string_view piece, std::size_t) {
                                 ++count;
                                 return is_printable_string(piece);
                               }) &&
         count == 3;
}

// RFC 4517 §3.3.34: YYMMDDHHMM[SS][Z / (+|-)HHMM].
bool utc_time(std::string_view v) {
  const auto two = [&](std::size_t at, int low, int high) {
    if (at + 2 > v.size() || !is_ascii_digit(v[at]) || !is_ascii_digit(v[at + 1])) {
      return false;
    }
    const int n = (v[at] - '0') * 10 + (v[at + 1] - '0');
    return n >= low && n <= high;
  };
  static constexpr std::array<int, 12> kMaxDays = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (!two(0, 0, 99) || !two(2, 1, 12) || !two(6, 0, 23) || !two(8, 0, 59)) {
    return false;
  }
  const int month = (v[2] - '0') * 10 + (v[3] - '0');
  if (!two(4, 1, kMaxDays[static_cast<std::size_t>(month - 1)])) {
    return false;
  }
  std::size_t pos = 10;
  if (two(pos, 0, 59)) {
    pos += 2;
  }
  if (pos == v.size()) {
    return true;
  }
  if (v[pos] == 'Z') {
    return pos + 1 == v.size();
  }
  return (v[pos] == '+' || v[pos] == '-') && two(pos + 1, 0, 23) && two(pos + 3, 0, 59) &&
         pos + 5 == v.size();
}

bool uuid(std::string_view v) {
  static const MatchingRule* const rule = find_matching_rule("uuidMatch");
  return accepted_by_rule(rule, v);
}

// ---- RFC 2307, RFC 3112, legacy ----

bool is_netgroup_char(char c) { return c > ' ' && c < 0x7F && c != ',' && c != '(' && c != ')'; }

// "(" host "," user "," domain ")", each part possibly empty (or "-").
bool nis_netgroup_triple(std::string_view v) {
  if (v.size() < 4 || v.front() != '(' || v.back() != ')') {
    return false;
  }
  std::size_t commas = 0;
  for (char c : v.substr(1, v.size() - 2)) {
    if (c == ',') {
      ++commas;
    } else if (!is_netgroup_char(c)) {
      return false;
    }
  }
  return commas == 2;
}

// key "=" server ":" path.
bool boot_parameter(std::string_view v) {
  const std::size_t equals = v.find('=');
  if (equals == std::string_view::npos) {
    return false;
  }
  const std::size_t colon = v.find(':', equals + 1);
  if (colon == std::string_view::npos) {
    return false;
  }
  const auto all = [](std::string_view s, auto pred) {
    if (s.empty()) {
      return false;
    }
    for (char c : s) {
      if (!pred(c)) {
        return false;
      }
    }
    return true;
  };
  return all(v.substr(0, equals),
             [](char c) {
               return is_ascii_alpha(c) || is_ascii_digit(c) || c == '-' || c == '_';
             }) &&
         all(v.substr(equals + 1, colon - equals - 1),
             [](char c) {
               return is_ascii_alpha(c) || is_ascii_digit(c) || c == '-' || c == '_' || c == '.';
             }) &&
         all(v.substr(colon + 1), [](char c) { return c > ' ' && c < 0x7F; });
}

bool auth_password(std::string_view v) {
  static const MatchingRule* const rule = find_matching_rule("authPasswordExactMatch");
  return accepted_by_rule(rule, v);
}

bool mail_preference(std::string_view v) {
  static constexpr std::array<std::string_view, 3> kOptions = {"NO-LISTS", "ANY-LIST",
                                                               "PROFESSIONAL-LISTS"};
  return is_one_of(v, kOptions);
}

#define NUMADIR_SYNTAX(n) "1.3.6.1.4.1.1466.115.121.1." #n

// Sorted by OID arc, then the non-RFC 4517 ones.
constexpr std::array kSyntaxes = {
    Syntax{NUMADIR_SYNTAX(3), "Attribute Type Description", detail::attribute_type_description,
           true},
    Syntax{NUMADIR_SYNTAX(4), "Audio", any_bytes, false},
    Syntax{NUMADIR_SYNTAX(5), "Binary", any_bytes, false},
    Syntax{NUMADIR_SYNTAX(6), "Bit String", bit_string, true},
    Syntax{NUMADIR_SYNTAX(7), "Boolean", boolean, true},
    Syntax{NUMADIR_SYNTAX(8), "Certificate", any_bytes, false},
    Syntax{NUMADIR_SYNTAX(9), "Certificate List", any_bytes, false},
    Syntax{NUMADIR_SYNTAX(10), "Certificate Pair", any_bytes, false},
    Syntax{NUMADIR_SYNTAX(11), "Country String", country_string, true},
    Syntax{NUMADIR_SYNTAX(12), "DN", dn, true},
    Syntax{NUMADIR_SYNTAX(13), "Data Quality Syntax", directory_string, true},
    Syntax{NUMADIR_SYNTAX(14), "Delivery Method", delivery_method, true},
    Syntax{NUMADIR_SYNTAX(15), "Directory String", directory_string, true},
    Syntax{NUMADIR_SYNTAX(16), "DIT Content Rule Description", detail::dit_content_rule_description,
           true},
    Syntax{NUMADIR_SYNTAX(17), "DIT Structure Rule Description",
           detail::dit_structure_rule_description, true},
    Syntax{NUMADIR_SYNTAX(19), "DSA Quality Syntax", directory_string, true},
    Syntax{NUMADIR_SYNTAX(21), "Enhanced Guide", enhanced_guide, true},
    Syntax{NUMADIR_SYNTAX(22), "Facsimile Telephone Number", facsimile_telephone_number, true},
    Syntax{NUMADIR_SYNTAX(23), "Fax", any_bytes, false},
    Syntax{NUMADIR_SYNTAX(24), "Generalized Time", generalized_time, true},
    Syntax{NUMADIR_SYNTAX(25), "Guide", guide, true},
    Syntax{NUMADIR_SYNTAX(26), "IA5 String", ia5_string, true},
    Syntax{NUMADIR_SYNTAX(27), "INTEGER", integer, true},
    Syntax{NUMADIR_SYNTAX(28), "JPEG", any_bytes, false},
    Syntax{NUMADIR_SYNTAX(30), "Matching Rule Description", detail::matching_rule_description,
           true},
    Syntax{NUMADIR_SYNTAX(31), "Matching Rule Use Description",
           detail::matching_rule_use_description, true},
    Syntax{NUMADIR_SYNTAX(32), "Mail Preference", mail_preference, true},
    Syntax{NUMADIR_SYNTAX(33), "MHS OR Address", directory_string, true},
    Syntax{NUMADIR_SYNTAX(34), "Name And Optional UID", name_and_optional_uid, true},
    Syntax{NUMADIR_SYNTAX(35), "Name Form Description", detail::name_form_description, true},
    Syntax{NUMADIR_SYNTAX(36), "Numeric String", numeric_string, true},
    Syntax{NUMADIR_SYNTAX(37), "Object Class Description", detail::object_class_description, true},
    Syntax{NUMADIR_SYNTAX(38), "OID", oid, true},
    Syntax{NUMADIR_SYNTAX(39), "Other Mailbox", other_mailbox, true},
    Syntax{NUMADIR_SYNTAX(40), "Octet String", any_bytes, true},
    Syntax{NUMADIR_SYNTAX(41), "Postal Address", postal_address, true},
    Syntax{NUMADIR_SYNTAX(42), "Protocol Information", directory_string, true},
    Syntax{NUMADIR_SYNTAX(43), "Presentation Address", directory_string, true},
    Syntax{NUMADIR_SYNTAX(44), "Printable String", printable_string, true},
    Syntax{NUMADIR_SYNTAX(49), "Supported Algorithm", any_bytes, false},
    Syntax{NUMADIR_SYNTAX(50), "Telephone Number", printable_string, true},
    Syntax{NUMADIR_SYNTAX(51), "Teletex Terminal Identifier", teletex_terminal_identifier, true},
    Syntax{NUMADIR_SYNTAX(52), "Telex Number", telex_number, true},
    Syntax{NUMADIR_SYNTAX(53), "UTC Time", utc_time, true},
    Syntax{NUMADIR_SYNTAX(54), "LDAP Syntax Description", detail::ldap_syntax_description, true},
    Syntax{NUMADIR_SYNTAX(58), "Substring Assertion", substring_assertion, true},
    Syntax{"1.3.6.1.1.16.1", "UUID", uuid, true},
    Syntax{"1.3.6.1.1.1.0.0", "RFC2307 NIS Netgroup Triple", nis_netgroup_triple, true},
    Syntax{"1.3.6.1.1.1.0.1", "RFC2307 Boot Parameter", boot_parameter, true},
    Syntax{"1.3.6.1.4.1.4203.1.1.2", "authPassword", auth_password, true},
};

#undef NUMADIR_SYNTAX

}  // namespace

const Syntax* find_syntax(std::string_view oid) {
  for (const Syntax& syntax : kSyntaxes) {
    if (syntax.oid == oid) {
      return &syntax;
    }
  }
  return nullptr;
}

std::span<const Syntax> all_syntaxes() { return kSyntaxes; }

bool normalize_validates(const Syntax& syntax, const MatchingRule& rule) {
  // The syntaxes whose validation is a parse that the rule's normalize makes too (and fails
  // exactly when it fails).
  struct Pair {
    bool (*validate)(std::string_view);
    std::string_view rule;
  };
  static constexpr Pair kPairs[] = {{dn, "distinguishedNameMatch"},
                                    {generalized_time, "generalizedTimeMatch"},
                                    {uuid, "uuidMatch"},
                                    {name_and_optional_uid, "uniqueMemberMatch"},
                                    {auth_password, "authPasswordExactMatch"}};
  for (const Pair& pair : kPairs) {
    if (syntax.validate == pair.validate && rule.name == pair.rule) {
      return true;
    }
  }
  return false;
}

}  // namespace numadir::schema
