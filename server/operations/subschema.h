// server/operations/subschema.h: the subschema subentry (RFC 4512 §4.2), cn=Subschema: the loaded
// schema published as ldapSyntaxes, matchingRules, matchingRuleUse, attributeTypes and
// objectClasses, in the RFC 4512 description forms clients (ldap3, Apache Directory Studio) parse.
//
// Thread contract: make_subschema_entry is a function of its arguments; the Entry it returns is
// a plain value (built once, then only read).
#pragma once

#include <chrono>

#include "schema/entry.h"
#include "schema/schema.h"

namespace numadir::server {

// Returns: the entry "cn=Subschema" as slapd shapes it: objectClass top / subentry / subschema /
//   extensibleObject and cn (user attributes); structuralObjectClass, createTimestamp and
//   modifyTimestamp (both `loaded_at`), subschemaSubentry, ldapSyntaxes (every built-in syntax),
//   matchingRules (every built-in rule), matchingRuleUse (each rule with the attribute types
//   that use it for equality, ordering or substrings; rules nobody uses are left out),
//   attributeTypes and objectClasses (each definition as loaded) (operational).
schema::Entry make_subschema_entry(const schema::Schema& schema,
                                   std::chrono::system_clock::time_point loaded_at);

}  // namespace numadir::server
