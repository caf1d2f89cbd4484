// server/operations/modify_operation.cc: see modify_operation.h.
#include "server/operations/modify_operation.h"

#include <optional>
#include <string>
#include <utility>

#include "server/operations/password_change.h"
#include "server/operations/password_cost.h"

namespace numadir::server {

using listener::wire::ResultCode;

namespace {

backend::ModificationKind modification_kind(listener::wire::ModifyOperation operation) {
  switch (operation) {
    case listener::wire::ModifyOperation::kAdd:
      return backend::ModificationKind::kAdd;
    case listener::wire::ModifyOperation::kDelete:
      return backend::ModificationKind::kDelete;
    case listener::wire::ModifyOperation::kReplace:
      return backend::ModificationKind::kReplace;
    case listener::wire::ModifyOperation::kIncrement:
      return backend::ModificationKind::kIncrement;
  }
  return backend::ModificationKind::kReplace;
}

}  // namespace

void ModifyOperation::run(const listener::wire::LdapMessage& request, const Identity& who,
                          ServerSession& session, ServerWorkerState& state,
                          ResultSender& sender) const {
  const listener::wire::ModifyRequest& modify = request.modify_request;
  const std::optional<ParsedName> name = check_request(modify, sender);
  if (!name.has_value()) {
    return;
  }
  // The password policy decides on the values as sent, before they are hashed.
  PasswordChangeDecision decision;
  if (PasswordChangeInput input;
      policy_ != nullptr && password_change_input(context_, modify, input)) {
    decision = PasswordChangePolicy(context_, *policy_)
                   .decide(who, modify.object, name->ndn, input, state);
    if (decision.refusal.has_value()) {
      if (requests_policy_control(request)) {
        PolicyResponse response;
        response.error = decision.error;
        attach_policy_control(sender, response);
      }
      sender.send_result(*decision.refusal);
      return;
    }
  }
  auto job = std::make_unique<backend::UpdateJob>();
  backend::ModifyChange change{std::string(modify.object), {}};
  std::vector<const schema::AttributeType*> types;
  if (!modifications(modify, change.modifications, types, sender)) {
    return;
  }
  if (decision.stored_old.has_value()) {
    // The old password was given in the clear: the delete names the stored value it matched.
    for (std::size_t i = 0; i < change.modifications.size(); ++i) {
      if (types[i] == context_.user_password_type() &&
          change.modifications[i].kind == backend::ModificationKind::kDelete &&
          !change.modifications[i].values.empty()) {
        change.modifications[i].values = {*decision.stored_old};
        break;
      }
    }
  }
  for (backend::Modification& extra : decision.extra) {
    change.modifications.push_back(std::move(extra));
  }
  job->context = backend::UpdateContext{who.dn, std::nullopt};
  job->check = [&context = context_, who, dn = change.dn, ndn = name->ndn, types = std::move(types),
                expected = std::move(decision.state)](const backend::WriteView& view) {
    NUMADIR_RETURN_IF_ERROR(may_modify(context, ViewEntryReader(view), who, dn, ndn, types));
    return expected.empty() ? Status() : PasswordChangePolicy::same_state(view, dn, expected);
  };
  job->change = std::move(change);
  std::function<void()> on_success;
  if (decision.changes_password) {
    on_success = [&session] { session.lift_password_restriction(); };
  }
  run_update(context_, std::move(job), sender, std::nullopt, std::move(on_success));
}

Status ModifyOperation::may_modify(const OperationContext& context, const EntryReader& reader,
                                   const Identity& who, std::string_view dn, std::string_view ndn,
                                   std::span<const schema::AttributeType* const> types) {
  const OperationAccess access(context, reader, who);
  const std::optional<schema::Entry> content = access.entry_for_access(dn);
  for (const schema::AttributeType* type : types) {
    if (type != nullptr) {
      NUMADIR_RETURN_IF_ERROR(
          access.status_of(access.may(ndn, content, AccessAttribute::of(type), AccessLevel::kWrite),
                           [&] { return refused(access, dn, no_attribute_access(*type)); }));
    }
  }
  return Status();
}

std::optional<ParsedName> ModifyOperation::check_request(
    const listener::wire::ModifyRequest& modify, ResultSender& sender) const {
  std::optional<ParsedName> name = parse_name(context_, modify.object);
  if (!name.has_value()) {
    sender.send_result(invalid_dn());
    return std::nullopt;
  }
  const std::string& ndn = name->ndn;
  if (modify.modifications.empty()) {
    sender.send_result(
        OwnedResult::error(ResultCode::kProtocolError, "no modifications specified"));
    return std::nullopt;
  }
  if (ndn.empty() || ndn == context_.subschema_ndn()) {
    sender.send_result(OwnedResult::error(ResultCode::kUnwillingToPerform,
                                          ndn.empty() ? "modification of the root DSE not supported"
                                                      : "modification of subschema not supported"));
    return std::nullopt;
  }
  if (!context_.in_naming_context(ndn)) {
    sender.send_result(outside_naming_context());
    return std::nullopt;
  }
  if (const std::string* referral = context_.update_referral(ndn)) {
    sender.send_result(update_referral(*referral, modify.object));
    return std::nullopt;
  }
  return name;
}

bool ModifyOperation::modifications(const listener::wire::ModifyRequest& modify,
                                    std::vector<backend::Modification>& out,
                                    std::vector<const schema::AttributeType*>& types,
                                    ResultSender& sender) const {
  const HandlerOptions& options = context_.options();
  out.reserve(modify.modifications.size());
  const auto attributes = modify.modifications.attributes();
  types.reserve(attributes.size());
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    const schema::AttributeType* type = context_.attribute_type(attributes[i].type);
    types.push_back(type);
    backend::Modification modification;
    modification.kind = i < modify.operations.size() ? modification_kind(modify.operations[i])
                                                     : backend::ModificationKind::kReplace;
    modification.description = std::string(attributes[i].type);
    for (std::string_view value : modify.modifications.values(attributes[i])) {
      modification.values.emplace_back(value);
    }
    // Values to delete are compared with what is stored, so only added ones are hashed.
    const bool adds_values = modification.kind == backend::ModificationKind::kAdd ||
                             modification.kind == backend::ModificationKind::kReplace;
    if (adds_values && type != nullptr && type == context_.user_password_type()) {
      if (!options.allow_cleartext_passwords &&
          !hash_cleartext_passwords(options.default_password_scheme, modification.values).ok()) {
        sender.send_result(password_hash_failed());
        return false;
      }
      // Deleting a costly value stays possible: only the values added are checked.
      if (const Status costly = check_password_costs(modification.values, options.password_limits);
          !costly.ok()) {
        sender.send_status(costly);
        return false;
      }
    }
    out.push_back(std::move(modification));
  }
  return true;
}

}  // namespace numadir::server
