// schema/matching_rule.h: matching rules (RFC 4517 §4.2) with their normalizers, and the
// RFC 4518 string preparation they use.
//
// Every rule maps a value to a *normalized* byte string:
//   - equality rules: two values match iff their normalized forms are equal;
//   - ordering rules: values order as their normalized forms do under plain byte comparison
//     (memcmp, shorter first on a common prefix), so normalizers write order-preserving forms
//     (integers as sign + digit count + digits, negatives mirrored; times as UTC
//     "YYYYMMDDHHMMSS[.fff]" with no trailing Z, so that a shorter form is a prefix of a longer);
//   - substring rules: the normalized form of a value, and of each initial / any / final piece
//     of an assertion, are such that a substring match is a byte substring match of the
//     normalized forms (RFC 4518 §2.6.1's space handling for pieces).
// Index keys are these normalized forms, so the normalizers must never change between versions
// without reindexing.
//
// The rules are built in: a static table, immutable, looked up by name or OID.
//
// Thread contract: immutable after static initialization; any thread may call these.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace numadir::schema {

enum class MatchingRuleUse { kEquality, kOrdering, kSubstrings };

// Where a substring piece stands; RFC 4518 §2.6.1 prepares initial, any and final pieces so
// that insignificant spaces at their edges behave.
enum class SubstringPosition { kInitial, kAny, kFinal };

struct MatchingRule {
  std::string_view oid;   // e.g. "2.5.13.2"
  std::string_view name;  // e.g. "caseIgnoreMatch"
  MatchingRuleUse use;
  std::string_view syntax_oid;  // The assertion syntax.
  // Writes the normalized form of `value` to `out` (replacing its contents).
  // Returns: false if `value` is not a valid value for this rule (e.g. "abc" for integerMatch);
  //   `out` is then unspecified.
  bool (*normalize)(std::string_view value, std::string& out);
  // Substring rules only (nullptr otherwise): the normalized form of one assertion piece.
  bool (*normalize_piece)(std::string_view piece, SubstringPosition position, std::string& out);
};

// Returns: the rule named `name_or_oid` (names compare case-insensitively), or nullptr.
const MatchingRule* find_matching_rule(std::string_view name_or_oid);

// Returns: every built-in rule, in a stable order (for the subschema subentry).
std::span<const MatchingRule> all_matching_rules();

// Substring match of normalized forms: `value` matches initial / any... / final pieces (each
// already normalized by the rule's normalize_piece). Empty `initial` / `final` mean absent.
bool substrings_match(std::string_view value, std::string_view initial,
                      std::span<const std::string> any, std::string_view final);

}  // namespace numadir::schema
