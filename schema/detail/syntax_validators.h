// schema/detail/syntax_validators.h: what the syntax table (schema/syntax.cc) shares with the
// validators kept in a file of their own, the RFC 4512 §4.1 descriptions
// (schema/syntax_description.cc): those validators, and the small grammar pieces both use.
//
// Thread contract: stateless functions over caller-owned values; any thread.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "schema/ascii.h"
#include "schema/oid.h"

namespace numadir::schema::detail {

// Returns: whether `value` equals one of `keywords`, ASCII case-insensitively.
inline bool is_one_of(std::string_view value, std::span<const std::string_view> keywords) {
  for (std::string_view keyword : keywords) {
    if (ascii_iequals(value, keyword)) {
      return true;
    }
  }
  return false;
}

// RFC 4512 oid: a descr or a numericoid.
inline bool is_oid(std::string_view value) { return is_numericoid(value) || is_descr(value); }

// RFC 4512 number: DIGIT / LDIGIT 1*DIGIT.
inline bool is_number(std::string_view value) {
  if (value.empty() || (value.front() == '0' && value.size() > 1)) {
    return false;
  }
  for (char c : value) {
    if (!is_ascii_digit(c)) {
      return false;
    }
  }
  return true;
}

// Returns: true if every '\' in `value` starts the escape "\<escaped_hex>" or "\5C" (the hex
// digits case-insensitive).
inline bool escapes_ok(std::string_view value, std::string_view escaped_hex) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '\\') {
      continue;
    }
    const std::string_view code = value.substr(i + 1, 2);
    if (!ascii_iequals(code, escaped_hex) && !ascii_iequals(code, "5c")) {
      return false;
    }
    i += 2;
  }
  return true;
}

// RFC 4512 §4.1 descriptions, as the syntaxes of the same names (RFC 4517 §3.3) validate them.
bool attribute_type_description(std::string_view v);
bool object_class_description(std::string_view v);
bool matching_rule_description(std::string_view v);
bool matching_rule_use_description(std::string_view v);
bool ldap_syntax_description(std::string_view v);
bool dit_content_rule_description(std::string_view v);
bool dit_structure_rule_description(std::string_view v);
bool name_form_description(std::string_view v);

}  // namespace numadir::schema::detail
