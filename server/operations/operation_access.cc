// server/operations/operation_access.cc: see operation_access.h.
#include "server/operations/operation_access.h"

#include <functional>

namespace numadir::server {

Membership OperationAccess::DirectoryGroups::is_member(std::string_view group_ndn,
                                                       std::string_view member_ndn) const {
  for (const auto& [group, answer] : answers_) {
    if (group == group_ndn) {
      return answer ? Membership::kMember : Membership::kNotMember;
    }
  }
  const OperationContext& context = access_.context_;
  bool member = false;
  const auto on_entry = [&](const backend::EntryRef& entry) {
    for (const std::string_view attribute : {"member", "uniqueMember"}) {
      for (std::string_view value : entry.values(attribute)) {
        Result<std::string> ndn = context.normalize_dn(value);
        if (!ndn.ok() && attribute == "uniqueMember") {
          // Name and Optional UID (RFC 4517 3.3.21): "<dn>#'0101'B".
          if (const std::size_t hash = value.rfind("#'"); hash != std::string_view::npos) {
            ndn = context.normalize_dn(value.substr(0, hash));
          }
        }
        if (ndn.ok() && *ndn == member_ndn) {
          member = true;
          return;
        }
      }
    }
  };
  const Status read = access_.reader_.lookup(group_ndn, std::ref(on_entry));
  if (is_read_failure(read)) {
    // Not "not a member": with first-match rules that could hand a later clause the decision.
    access_.fail(group_ndn, read);
    return Membership::kUnknown;
  }
  answers_.emplace_back(std::string(group_ndn), member);
  return member ? Membership::kMember : Membership::kNotMember;
}

const Status& OperationAccess::fail(std::string_view dn, const Status& error) const {
  if (failure_.ok()) {
    failure_ = Status(StatusCode::kAccessCheckFailed,
                      "reading " + std::string(dn) + ": " + error.to_string() + "; denied");
  }
  return failure_;
}

std::optional<schema::Entry> OperationAccess::entry_for_access(std::string_view dn) const {
  if (!context_.access().needs_entry()) {
    return std::nullopt;
  }
  Result<schema::Entry> entry = reader_.get(dn);
  if (!entry.ok()) {
    if (is_read_failure(entry.status())) {
      fail(dn, entry.status());
    }
    return std::nullopt;
  }
  return std::move(*entry);
}

AccessDecision OperationAccess::may_write_children(std::string_view parent_ndn) const {
  return may(parent_ndn, entry_for_access(parent_ndn), AccessAttribute::children(),
             AccessLevel::kWrite);
}

AccessDecision OperationAccess::discloses(std::string_view dn) const {
  if (context_.access().is_default() || requester_.identity.root) {
    return AccessDecision::kAllowed;
  }
  Result<std::string> ndn = context_.normalize_dn(dn);
  if (!ndn.ok()) {
    return AccessDecision::kDenied;
  }
  return may(*ndn, entry_for_access(dn), AccessAttribute::entry(), AccessLevel::kDisclose);
}

}  // namespace numadir::server
