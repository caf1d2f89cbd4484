// server/operations/operation_access.cc: see operation_access.h.
#include "server/operations/operation_access.h"

#include <functional>

namespace numadir::server {

bool OperationAccess::DirectoryGroups::is_member(std::string_view group_ndn,
                                                 std::string_view member_ndn) const {
  for (const auto& [group, answer] : answers_) {
    if (group == group_ndn) {
      return answer;
    }
  }
  bool member = false;
  const auto on_entry = [&](const backend::EntryRef& entry) {
    for (const std::string_view attribute : {"member", "uniqueMember"}) {
      for (std::string_view value : entry.values(attribute)) {
        Result<std::string> ndn = context_.normalize_dn(value);
        if (!ndn.ok() && attribute == "uniqueMember") {
          // Name and Optional UID (RFC 4517 3.3.21): "<dn>#'0101'B".
          if (const std::size_t hash = value.rfind("#'"); hash != std::string_view::npos) {
            ndn = context_.normalize_dn(value.substr(0, hash));
          }
        }
        if (ndn.ok() && *ndn == member_ndn) {
          member = true;
          return;
        }
      }
    }
  };
  (void)reader_.lookup(group_ndn, std::ref(on_entry));
  answers_.emplace_back(std::string(group_ndn), member);
  return member;
}

std::optional<schema::Entry> OperationAccess::entry_for_access(std::string_view dn) const {
  if (!context_.access().needs_entry()) {
    return std::nullopt;
  }
  Result<schema::Entry> entry = reader_.get(dn);
  if (!entry.ok()) {
    return std::nullopt;
  }
  return std::move(*entry);
}

bool OperationAccess::may_write_children(std::string_view parent_ndn) const {
  return may(parent_ndn, entry_for_access(parent_ndn), AccessAttribute::children(),
             AccessLevel::kWrite);
}

bool OperationAccess::discloses(std::string_view dn) const {
  if (context_.access().is_default() || requester_.identity.root) {
    return true;
  }
  Result<std::string> ndn = context_.normalize_dn(dn);
  if (!ndn.ok()) {
    return false;
  }
  return may(*ndn, entry_for_access(dn), AccessAttribute::entry(), AccessLevel::kDisclose);
}

}  // namespace numadir::server
