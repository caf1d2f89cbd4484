// libFuzzer target for the value parsers of schema/: every syntax validator, every matching
// rule's normalizer and substring-piece normalizer, over the same input. Beyond "no crash":
// normalization is deterministic, and a value always matches itself as a substring (its
// normalized form contains its normalized "any" piece) when both normalize. List rules
// (caseIgnoreListSubstringsMatch) are exempt from the latter: RFC 4517 §4.2.12 never lets a
// piece match across two lines, and a value with a '$' has two.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "schema/matching_rule.h"
#include "schema/syntax.h"

using numadir::schema::all_matching_rules;
using numadir::schema::all_syntaxes;
using numadir::schema::MatchingRule;
using numadir::schema::MatchingRuleUse;
using numadir::schema::SubstringPosition;
using numadir::schema::Syntax;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view value(reinterpret_cast<const char*>(data), size);
  for (const Syntax& syntax : all_syntaxes()) {
    (void)syntax.validate(value);
  }
  std::string first;
  std::string second;
  std::string piece;
  for (const MatchingRule& rule : all_matching_rules()) {
    const bool ok = rule.normalize(value, first);
    if (ok != rule.normalize(value, second) || (ok && first != second)) {
      std::fprintf(stderr, "%.*s: normalization differs between two calls\n",
                   static_cast<int>(rule.name.size()), rule.name.data());
      __builtin_trap();  // Normalization must be a function of the value.
    }
    const bool list_rule = rule.name.find("List") != std::string_view::npos;
    if (rule.use == MatchingRuleUse::kSubstrings && rule.normalize_piece != nullptr && ok &&
        !list_rule && rule.normalize_piece(value, SubstringPosition::kAny, piece) &&
        !piece.empty() &&
        !numadir::schema::substrings_match(first, {}, std::span<const std::string>(&piece, 1),
                                           {})) {
      std::fprintf(stderr, "%.*s: a value does not contain itself\n",
                   static_cast<int>(rule.name.size()), rule.name.data());
      __builtin_trap();  // A value contains itself.
    }
  }
  return 0;
}
