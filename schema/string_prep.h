// schema/string_prep.h: RFC 4518 string preparation, the front half of every character-string
// matching rule: transcode (the input must be valid UTF-8), map (§2.2: map to nothing, to
// SPACE, optional case folding), normalize (NFKC), prohibit (§2.4) and insignificant character
// handling (§2.6: spaces, numericString, telephoneNumber).
//
// Mapping uses RFC 4518's explicit code point lists; folding and NFKC use ICU (Unicode version of
// the linked ICU, not Unicode 3.2): case-ignore preparation is ICU's NFKC_Casefold, which also
// drops every Default_Ignorable code point (a superset of RFC 4518's map-to-nothing list).
// Prohibited: unassigned code points (for the linked ICU), private use, non-characters and
// U+FFFD REPLACEMENT CHARACTER; table C.8 characters are mapped to nothing before the check, or
// are canonically decomposed by NFKC, so none of them survives to it.
// Pure ASCII input never calls ICU (the common case on the hot path).
//
// Insignificant spaces (§2.6.1) come out in one of two forms, chosen by PrepTarget:
//   - kValue, for equality and ordering rules: leading and trailing spaces removed, inner runs
//     collapsed to one SPACE; a value without a non-space character (also "") becomes " ".
//     This is the RFC's equivalence with shorter keys; as SPACE is the smallest code point left
//     after mapping, byte order is the same as the RFC form's.
//   - kSubstringValue and the pieces kInitial / kAny / kFinal, for substring rules: exactly the
//     RFC 4518 form (with errata 1757 and 1758): a value is wrapped in one SPACE at each end with
//     inner runs doubled (all-space: two SPACEs); pieces double inner runs and keep one SPACE
//     at the edges the RFC lists (all-space piece: one SPACE). Then a substring match is a byte
//     substring match of these forms. A substring rule's value form is NOT its equality form.
// A SPACE followed by a combining mark is not a space for §2.6 (it is kept as it is).
//
// Thread contract: stateless functions; any thread may call them at any time. The ICU
// normalizer instances they use are process-wide singletons that ICU creates thread-safely.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace numadir::schema {

// Which characters §2.6 treats as insignificant.
enum class PrepInsignificant : std::uint8_t {
  kSpace,      // §2.6.1, for the case-ignore, case-exact, IA5 and list rules.
  kNumeric,    // §2.6.2: every space removed (numericString rules).
  kTelephone,  // §2.6.3: every space and hyphen removed (telephoneNumber rules).
};

// What the prepared string is used as; decides the §2.6.1 space form (see the file comment).
// kNumeric and kTelephone handling removes the characters whatever the target.
enum class PrepTarget : std::uint8_t {
  kValue,           // A value or assertion value of an equality or ordering rule.
  kSubstringValue,  // A value that substring assertions are matched against.
  kInitial,         // Substring assertion pieces.
  kAny,
  kFinal,
};

struct PrepOptions {
  bool case_fold = false;  // §2.2 case folding (case-ignore, numeric and telephone rules).
  PrepInsignificant insignificant = PrepInsignificant::kSpace;
  PrepTarget target = PrepTarget::kValue;
};

// Prepares `in` per RFC 4518 and writes the result to `out` (replacing its contents).
// Returns: false if `in` is not valid UTF-8 or holds a prohibited code point; `out` is then
//   unspecified. The output is valid UTF-8 without control characters (U+0000-001F, U+007F).
[[nodiscard]] bool prepare(std::string_view in, const PrepOptions& options, std::string& out);

}  // namespace numadir::schema
