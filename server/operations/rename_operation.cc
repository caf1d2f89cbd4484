// server/operations/rename_operation.cc: see rename_operation.h.
#include "server/operations/rename_operation.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

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
  (void)state;
  auto job = std::make_unique<backend::UpdateJob>();
  backend::RenameChange change{std::string(rename.entry), std::string(rename.new_rdn),
                               rename.delete_old_rdn, std::nullopt};
  if (rename.new_superior.has_value()) {
    change.new_superior = std::string(*rename.new_superior);
  }
  job->context = backend::UpdateContext{who.dn, std::nullopt};
  std::optional<std::string> new_parent_ndn;
  if (new_parent.has_value()) {
    new_parent_ndn = new_parent->ndn;
  }
  job->check = [&context = context_, who, dn = change.dn, ndn = target.name().ndn,
                parent_ndn = target.name().parent_ndn,
                new_parent_ndn = std::move(new_parent_ndn)](const backend::WriteView& view) {
    const ViewEntryReader reader(view);
    const OperationAccess access(context, reader, who);
    // slapd checks the parents before the entry.
    NUMADIR_RETURN_IF_ERROR(
        access.status_of(access.may_write_children(parent_ndn), no_parent_access));
    if (new_parent_ndn.has_value()) {
      NUMADIR_RETURN_IF_ERROR(
          access.status_of(access.may_write_children(*new_parent_ndn), no_parent_access));
    }
    return UpdateTarget::may_write(access, dn, ndn);
  };
  job->change = std::move(change);
  run_update(context_, std::move(job), sender);
}

}  // namespace numadir::server
