// schema/oid.cc: numericoid and descr (RFC 4512 §1.4).
#include "schema/oid.h"

#include <cstddef>

#include "schema/ascii.h"

namespace numadir::schema {

bool is_numericoid(std::string_view value) {
  std::size_t arcs = 0;
  std::size_t i = 0;
  while (true) {
    const std::size_t start = i;
    while (i < value.size() && is_ascii_digit(value[i])) {
      ++i;
    }
    if (i == start || (value[start] == '0' && i - start > 1)) {
      return false;
    }
    ++arcs;
    if (i == value.size()) {
      return arcs >= 2;
    }
    if (value[i] != '.') {
      return false;
    }
    ++i;
  }
}

bool is_descr(std::string_view value) {
  if (value.empty() || !is_ascii_alpha(value.front())) {
    return false;
  }
  for (char c : value) {
    if (!is_ascii_alpha(c) && !is_ascii_digit(c) && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace numadir::schema
