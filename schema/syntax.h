// schema/syntax.h: LDAP syntaxes (RFC 4517 §3.3 and the ones RFC 4512 / 4519 / 4524 / 2798 /
// 2307 use) with their value validators.
//
// The syntaxes are built in: a static table, immutable, looked up by OID.
//
// Thread contract: immutable after static initialization; any thread may call these.
#pragma once

#include <span>
#include <string_view>

namespace numadir::schema {

struct Syntax {
  std::string_view oid;          // e.g. "1.3.6.1.4.1.1466.115.121.1.15"
  std::string_view description;  // e.g. "Directory String"
  // Returns: true if `value` is a valid value of this syntax (RFC 4517's grammar). Binary
  // syntaxes (Octet String, JPEG, certificates, ...) accept any bytes.
  bool (*validate)(std::string_view value);
  bool human_readable;  // RFC 4517 X-NOT-HUMAN-READABLE is the opposite.
};

// Returns: the syntax with `oid` (exact numeric OID), or nullptr if it is not built in.
const Syntax* find_syntax(std::string_view oid);

// Returns: every built-in syntax, in a stable order (for the subschema subentry).
std::span<const Syntax> all_syntaxes();

struct MatchingRule;
// Returns: whether `rule` normalizes exactly the values `syntax` accepts (the DN syntax and
// distinguishedNameMatch: both parse the DN), so that a value the rule normalized needs no
// validate call.
bool normalize_validates(const Syntax& syntax, const MatchingRule& rule);

}  // namespace numadir::schema
