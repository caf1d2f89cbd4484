// schema/oid.h: the two forms RFC 4512 §1.4 gives an object identifier, numericoid and descr,
// as the syntax validators, the matching rules and the description parser all check them.
//
// Thread contract: stateless functions over caller-owned values; any thread.
#pragma once

#include <string_view>

namespace numadir::schema {

// RFC 4512 §1.4: numericoid = number 1*( DOT number ), no leading zeros in a number.
bool is_numericoid(std::string_view value);
// RFC 4512 §1.4: descr = ALPHA *( ALPHA / DIGIT / HYPHEN ).
bool is_descr(std::string_view value);

}  // namespace numadir::schema
