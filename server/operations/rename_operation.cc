// server/operations/rename_operation.cc: see rename_operation.h.
#include "server/operations/rename_operation.h"

#include <optional>

#include "server/operations/operation_access.h"
#include "server/operations/update_common.h"

namespace numadir::server {

using listener::wire::ResultCode;

void RenameOperation::run(const listener::wire::LdapMessage& request, const Identity& who,
                          ServerWorkerState& state, ResultSender& sender) const {
  const listener::wire::ModifyDnRequest& rename = request.modify_dn_request;
  UpdateTarget target(context_, rename.entry, "rename");
  if (!target.parse(sender)) {
    return;
  }
  Result<schema::Dn> new_rdn = context_.parse_dn(rename.new_rdn);
  if (!new_rdn.ok() || new_rdn->rdn_count() != 1) {
    sender.send_result(OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid new RDN"));
    return;
  }
  std::optional<ParsedName> new_parent;
  if (rename.new_superior.has_value()) {
    new_parent = parse_name(context_, *rename.new_superior);
    if (!new_parent.has_value()) {
      sender.send_result(OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid newSuperior"));
      return;
    }
  }
  if (!target.check(sender)) {
    return;
  }
  if (new_parent.has_value() && !context_.in_naming_context(new_parent->ndn)) {
    sender.send_result(
        OwnedResult::error(ResultCode::kAffectsMultipleDsas, "cannot rename between DSAs"));
    return;
  }
  const OperationAccess access(context_, state, who);
  if (!access.may_write_children(target.name().parent_ndn) ||
      (new_parent.has_value() && !access.may_write_children(new_parent->ndn))) {
    sender.send_result(no_parent_access());  // slapd checks this before the entry.
    return;
  }
  if (!target.may_write(access, state, sender)) {
    return;
  }
  sender.send_update_result(context_.directory().rename(
      rename.entry, rename.new_rdn, rename.delete_old_rdn, rename.new_superior,
      backend::UpdateContext{who.dn, std::nullopt}));
}

}  // namespace numadir::server
