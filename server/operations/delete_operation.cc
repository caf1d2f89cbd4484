// server/operations/delete_operation.cc: see delete_operation.h.
#include "server/operations/delete_operation.h"

#include <memory>
#include <string>
#include <utility>

#include "server/operations/operation_access.h"
#include "server/operations/update_common.h"

namespace numadir::server {

void DeleteOperation::run(const listener::wire::LdapMessage& request, const Identity& who,
                          ServerWorkerState& state, ResultSender& sender) const {
  UpdateTarget target(context_, request.dn, "delete");
  if (!target.parse(sender) || !target.check(sender)) {
    return;
  }
  (void)state;
  auto job = std::make_unique<backend::UpdateJob>();
  job->change = backend::RemoveChange{std::string(request.dn)};
  job->context = backend::UpdateContext{who.dn, std::nullopt};
  job->check = [&context = context_, who, dn = std::string(request.dn), ndn = target.name().ndn,
                parent_ndn = target.name().parent_ndn](const backend::WriteView& view) {
    const ViewEntryReader reader(view);
    const OperationAccess access(context, reader, who);
    NUMADIR_RETURN_IF_ERROR(access.status_of(access.may_write_children(parent_ndn), [&] {
      return refused(access, dn, no_parent_access());
    }));
    return UpdateTarget::may_write(access, dn, ndn);
  };
  run_update(context_, std::move(job), sender);
}

}  // namespace numadir::server
