// server/access_control.h: who may do what to which entry and attribute. For now the one safe
// default policy below; configurable ordered rules (slapd's `access to ... by ...`) will be
// evaluated behind the same methods.
//
// The default policy, in slapd's terms:
//   access to attrs=userPassword  by dn=<rootdn> write  by self =wx  by * auth
//   access to *                   by dn=<rootdn> write  by self write  by * read
//   adding, deleting or renaming entries (write to a parent's children): rootdn only
// So userPassword is only ever used to authenticate: never returned by a search, never
// compared, not usable in a filter; its owner and the rootdn may replace it.
//
// Thread contract: immutable after construction; any thread may call its const methods.
#pragma once

#include <cstdint>
#include <string_view>

#include "schema/attribute_type.h"
#include "schema/schema.h"
#include "server/server_session.h"

namespace numadir::server {

// Ordered: each level includes the ones below it (slapd's none < disclose < auth < compare <
// search < read < write).
enum class AccessLevel : std::uint8_t {
  kNone = 0,
  kDisclose,  // May learn that the entry or attribute exists (error codes may say so).
  kAuth,      // May use the attribute to authenticate (bind).
  kCompare,
  kSearch,  // May use it in a search filter.
  kRead,
  kWrite,
};

class AccessControl {
 public:
  // Requires: `schema` outlives this object.
  explicit AccessControl(const schema::Schema& schema);

  // Returns: the access `who` has to attribute `type` of the entry with normalized DN
  //   `entry_ndn`; `type` nullptr stands for the entry itself (slapd's `entry` pseudo-attribute,
  //   needed to modify it at all). Subtypes of userPassword count as userPassword.
  AccessLevel level(const Identity& who, std::string_view entry_ndn,
                    const schema::AttributeType* type) const;

  // Returns: whether `who` may change attribute `type` of the entry `entry_ndn`. Usually
  //   level() == kWrite; a write-only grant (slapd's `=wx`, as the default policy gives owners
  //   for userPassword) allows it at a lower level.
  bool may_write(const Identity& who, std::string_view entry_ndn,
                 const schema::AttributeType* type) const;

  // Returns: whether `who` may add or remove children of (add entries below, delete or rename
  //   entries from / to) the entry with normalized DN `parent_ndn`.
  bool may_write_children(const Identity& who, std::string_view parent_ndn) const;

  // Returns: true if `type` is (a subtype of) userPassword.
  bool is_password(const schema::AttributeType* type) const;

 private:
  static bool is_self(const Identity& who, std::string_view entry_ndn) {
    return !who.ndn.empty() && who.ndn == entry_ndn;
  }

  const schema::AttributeType* const user_password_;  // nullptr if the schema lacks it.
};

}  // namespace numadir::server
