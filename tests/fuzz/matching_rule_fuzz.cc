// libFuzzer target for the value parsers of schema/: every syntax validator, every matching
// rule's normalizer and substring-piece normalizer, over the same input. Beyond "no crash":
// an equality rule's normalization is deterministic, and a value always matches itself as a
// substring (its normalized form contains its normalized "any" piece) when both normalize.
#include <cstddef>
#include <cstdint>
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
      __builtin_trap();  // Normalization must be a function of the value.
    }
    if (rule.use == MatchingRuleUse::kSubstrings && rule.normalize_piece != nullptr && ok &&
        rule.normalize_piece(value, SubstringPosition::kAny, piece) && !piece.empty() &&
        !numadir::schema::substrings_match(first, {}, std::span<const std::string>(&piece, 1),
                                           {})) {
      __builtin_trap();  // A value contains itself.
    }
  }
  return 0;
}
