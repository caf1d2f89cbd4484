// server/access_control.cc: the default access policy (see the header).
#include "server/access_control.h"

namespace numadir::server {

AccessControl::AccessControl(const schema::Schema& schema)
    : user_password_(schema.attribute_type("userPassword")) {}

bool AccessControl::is_password(const schema::AttributeType* type) const {
  return type != nullptr && user_password_ != nullptr && type->is_subtype_of(*user_password_);
}

AccessLevel AccessControl::level(const Identity& who, std::string_view entry_ndn,
                                 const schema::AttributeType* type) const {
  if (who.root) {
    return AccessLevel::kWrite;
  }
  if (is_password(type)) {
    return AccessLevel::kAuth;
  }
  return is_self(who, entry_ndn) ? AccessLevel::kWrite : AccessLevel::kRead;
}

bool AccessControl::may_write(const Identity& who, std::string_view entry_ndn,
                              const schema::AttributeType* type) const {
  if (is_password(type)) {
    return who.root || is_self(who, entry_ndn);
  }
  return level(who, entry_ndn, type) == AccessLevel::kWrite;
}

bool AccessControl::may_write_children(const Identity& who, std::string_view parent_ndn) const {
  (void)parent_ndn;
  return who.root;
}

}  // namespace numadir::server
