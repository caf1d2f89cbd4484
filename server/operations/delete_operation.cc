// server/operations/delete_operation.cc: see delete_operation.h.
#include "server/operations/delete_operation.h"

#include "server/operations/operation_access.h"
#include "server/operations/update_common.h"

namespace numadir::server {

void DeleteOperation::run(const listener::wire::LdapMessage& request, const Identity& who,
                          ServerWorkerState& state, ResultSender& sender) const {
  UpdateTarget target(context_, request.dn, "delete");
  if (!target.parse(sender) || !target.check(sender)) {
    return;
  }
  const OperationAccess access(context_, state, who);
  if (!access.may_write_children(target.name().parent_ndn)) {
    send_denied(context_, state, request.dn, no_parent_access(), sender);
    return;
  }
  if (!target.may_write(access, state, sender)) {
    return;
  }
  sender.send_update_result(
      context_.directory().remove(request.dn, backend::UpdateContext{who.dn, std::nullopt}));
}

}  // namespace numadir::server
