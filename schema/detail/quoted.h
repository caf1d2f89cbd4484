// schema/detail/quoted.h: how schema error messages quote a name or a value.
//
// Thread contract: a free function over caller-owned values.
#pragma once

#include <string>
#include <string_view>

namespace numadir::schema::detail {

// Returns: `text` between single quotes ("'cn'").
inline std::string in_quotes(std::string_view text) {
  std::string out = "'";
  out += text;
  out += '\'';
  return out;
}

}  // namespace numadir::schema::detail
