// libFuzzer target for Dn::parse (schema/dn.h). Any input may be rejected; an accepted one must
// keep its properties, or the target traps:
//   - parse(to_string()) succeeds and gives an equal Dn;
//   - normalized() parses and normalizing again gives the same string;
//   - copies, moves and parent() keep values intact; the DN ends with its parent, and its
//     first RDN's normalized form, ',' and the parent's make normalized();
//   - the text before first_rdn_separator() parses alone to the first RDN and the text after it
//     to the parent (what the bind path's DN memo relies on to parse only a first RDN).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "schema/dn.h"

namespace {

using numadir::Result;
using numadir::schema::Dn;
using numadir::schema::DnParseLimits;

// Printed forms are never longer than what was parsed, but the property checks should not
// depend on that.
constexpr DnParseLimits kNoLimits{.max_bytes = std::numeric_limits<std::size_t>::max(),
                                  .max_rdns = std::numeric_limits<std::size_t>::max()};

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<Dn> dn = Dn::parse(text);
  if (!dn.ok()) {
    check(!dn.status().message().empty());
    return 0;
  }

  const std::string printed = dn->to_string();
  Result<Dn> reparsed = Dn::parse(printed, kNoLimits);
  check(reparsed.ok());
  check(*reparsed == *dn);
  check(reparsed->to_string() == printed);

  const std::string normalized = dn->normalized();
  Result<Dn> normal_dn = Dn::parse(normalized, kNoLimits);
  check(normal_dn.ok());
  check(normal_dn->normalized() == normalized);
  check(reparsed->normalized() == normalized);
  check(normal_dn->rdn_count() == dn->rdn_count());

  Dn copy = *dn;
  check(copy == *dn);
  const Dn moved = std::move(copy);
  check(moved.to_string() == printed);

  if (!dn->is_root()) {
    const Dn parent = dn->parent();
    check(parent.rdn_count() + 1 == dn->rdn_count());
    for (std::size_t i = 0; i < parent.rdn_count(); ++i) {
      check(parent.rdn_string(i) == dn->rdn_string(i + 1));
    }
    // The per-thread parent memo of the bind path relies on these two.
    check(dn->ends_with(parent, 1));
    check(!dn->ends_with(*dn, 1));
    std::string joined;
    dn->append_normalized_rdns(joined, nullptr, 0, 1);
    if (!parent.is_root()) {
      joined += ',';
      joined += parent.normalized();
    }
    check(joined == normalized);

    const std::size_t separator = numadir::schema::first_rdn_separator(text);
    if (parent.is_root()) {
      check(separator == text.size());
    } else {
      check(separator < text.size() && text[separator] == ',');
      Result<Dn> first = Dn::parse(text.substr(0, separator), kNoLimits);
      Result<Dn> rest = Dn::parse(text.substr(separator + 1), kNoLimits);
      check(first.ok() && first->rdn_count() == 1 && first->rdn_string(0) == dn->rdn_string(0));
      check(rest.ok() && *rest == parent);
    }
  }
  return 0;
}
