// server/operations/operation_access.h: OperationAccess, the access checks of one operation: who
// asks (a Requester whose group clauses read group entries from the directory, each answer kept
// for the operation), and the entry reads the access rules need to decide (through the worker's
// side transaction, since the operation's own may be holding a search open).
//
// Thread contract: made and used by the worker running one operation, for that operation alone.
// The context, the worker state and the identity it borrows outlive it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/entry.h"
#include "server/operations/access_control.h"
#include "server/operations/operation_context.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class OperationAccess {
 public:
  OperationAccess(const OperationContext& context, ServerWorkerState& state, const Identity& who)
      : context_(context),
        groups_(context, state),
        requester_{who, context.access().has_groups() ? &groups_ : nullptr},
        state_(state) {}
  OperationAccess(const OperationAccess&) = delete;
  OperationAccess& operator=(const OperationAccess&) = delete;

  const Requester& requester() const { return requester_; }
  const AccessControl& rules() const { return context_.access(); }

  // Returns: whether the requester has privilege `level` on `attribute` of `entry`.
  bool allows(const AccessEntry& entry, const AccessAttribute& attribute, AccessLevel level) const {
    return context_.access().allows(requester_, entry, attribute, level);
  }
  // Returns: whether the requester has privilege `level` on `attribute` of the entry named
  //   `ndn` (`entry`: its content, when entry_for_access gave it).
  bool may(std::string_view ndn, const std::optional<schema::Entry>& entry,
           const AccessAttribute& attribute, AccessLevel level) const {
    return allows(AccessEntry{ndn, entry.has_value() ? &*entry : nullptr}, attribute, level);
  }
  // Returns: whether the requester may add or remove entries below the entry `parent_ndn`.
  bool may_write_children(std::string_view parent_ndn) const;
  // Returns: whether the requester may learn that the entry `dn` exists (for an answer that
  //   would name it: a result's matchedDN, noSuchObject versus another error).
  bool discloses(std::string_view dn) const;
  // Returns: the stored entry `dn`, when the access rules need entries to decide (filters);
  //   nullopt otherwise or when it cannot be read.
  std::optional<schema::Entry> entry_for_access(std::string_view dn) const;

 private:
  // Group membership read from the directory for one operation, each answer cached.
  class DirectoryGroups final : public GroupMembership {
   public:
    DirectoryGroups(const OperationContext& context, ServerWorkerState& state)
        : context_(context), state_(state) {}
    bool is_member(std::string_view group_ndn, std::string_view member_ndn) const override;

   private:
    const OperationContext& context_;
    ServerWorkerState& state_;
    mutable std::vector<std::pair<std::string, bool>> answers_;  // Keyed by group ndn.
  };

  const OperationContext& context_;
  const DirectoryGroups groups_;
  const Requester requester_;
  ServerWorkerState& state_;
};

}  // namespace numadir::server
