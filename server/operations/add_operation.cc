// server/operations/add_operation.cc: see add_operation.h.
#include "server/operations/add_operation.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "server/operations/password_cost.h"

namespace numadir::server {

using listener::wire::ResultCode;

namespace {

// RFC 4511 §4.7: the entry is made of the request's attributes "along with those from the
// RDN". Adds each RDN value the attributes lack (compared with the type's equality rule), as
// slapd does; '#' hex values are left to the schema check.
void add_rdn_values(const schema::Dn& dn, const backend::AttributeCatalog& catalog,
                    schema::Entry& entry) {
  if (dn.is_root()) {
    return;
  }
  std::string wanted;
  std::string have;
  for (const schema::Ava& ava : dn.rdn(0)) {
    const backend::AttributeInfo* info = catalog.resolve(ava.type);
    if (ava.hex_form || info == nullptr) {
      continue;
    }
    const schema::MatchingRule* rule = info->type->equality;
    const bool comparable = rule != nullptr && catalog.normalize(*rule, ava.value, wanted);
    schema::EntryAttribute* target = nullptr;
    bool present = false;
    for (schema::EntryAttribute& attribute : entry.attributes) {
      const auto [type, options] = schema::split_description(attribute.description);
      const backend::AttributeInfo* attribute_info = catalog.resolve(type);
      if (attribute_info != info || !options.empty()) {
        continue;
      }
      target = &attribute;
      for (const std::string& value : attribute.values) {
        present = present || (comparable ? catalog.normalize(*rule, value, have) && have == wanted
                                         : value == ava.value);
      }
    }
    if (present) {
      continue;
    }
    if (target == nullptr) {
      entry.attributes.push_back(schema::EntryAttribute{std::string(ava.type), {}});
      target = &entry.attributes.back();
    }
    target->values.emplace_back(ava.value);
  }
}

// Returns: the entry `add` describes (an attribute listed twice is merged, as slapd does).
schema::Entry entry_of(const listener::wire::AddRequest& add) {
  schema::Entry entry;
  entry.dn = std::string(add.entry);
  for (const auto& attribute : add.attributes.attributes()) {
    schema::EntryAttribute* target = entry.find(attribute.type);
    if (target == nullptr) {
      entry.attributes.push_back(schema::EntryAttribute{std::string(attribute.type), {}});
      target = &entry.attributes.back();
    }
    for (std::string_view value : add.attributes.values(attribute)) {
      target->values.emplace_back(value);
    }
  }
  return entry;
}

}  // namespace

void AddOperation::run(const listener::wire::LdapMessage& request, const Identity& who,
                       ServerWorkerState& state, ResultSender& sender) const {
  const listener::wire::AddRequest& add = request.add_request;
  const std::optional<ParsedName> name = check_request(add, sender);
  if (!name.has_value()) {
    return;
  }
  (void)state;
  schema::Entry entry = entry_of(add);
  add_rdn_values(name->dn, context_.catalog(), entry);
  // The check sees the entry as the client sent it (access rules' filters match what was
  // asked for, not the hashes stored).
  auto job = std::make_unique<backend::UpdateJob>();
  job->context = backend::UpdateContext{who.dn, std::nullopt};
  job->check = [&context = context_, who, ndn = name->ndn, parent_ndn = name->parent_ndn,
                requested = entry](const backend::WriteView& view) {
    const ViewEntryReader reader(view);
    const OperationAccess access(context, reader, who);
    NUMADIR_RETURN_IF_ERROR(
        access.status_of(access.may_write_children(parent_ndn), no_parent_access));
    return may_write(context, access, ndn, requested);
  };
  std::vector<std::string> internal;
  if (policy_ != nullptr && !apply_policy(request, who, entry, internal, state, sender)) {
    return;
  }
  const HandlerOptions& options = context_.options();
  if (context_.user_password_type() != nullptr) {
    for (schema::EntryAttribute& attribute : entry.attributes) {
      if (context_.attribute_type(attribute.description) != context_.user_password_type()) {
        continue;
      }
      if (!options.allow_cleartext_passwords &&
          !hash_cleartext_passwords(options.default_password_scheme, attribute.values).ok()) {
        sender.send_result(password_hash_failed());
        return;
      }
      // A pre-hashed value is checked from its own cost fields, before anything is written.
      if (const Status costly = check_password_costs(attribute.values, options.password_limits);
          !costly.ok()) {
        sender.send_status(costly);
        return;
      }
    }
  }
  job->change = backend::AddChange{std::move(entry), std::move(internal)};
  run_update(context_, std::move(job), sender);
}

bool AddOperation::apply_policy(const listener::wire::LdapMessage& request, const Identity& who,
                                schema::Entry& entry, std::vector<std::string>& internal,
                                ServerWorkerState& state, ResultSender& sender) const {
  const schema::EntryAttribute* password = nullptr;
  std::string_view subentry;
  bool has_changed_time = false;
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    const schema::AttributeType* type = context_.attribute_type(attribute.description);
    if (type == nullptr || attribute.values.empty()) {
      continue;
    }
    if (type == context_.user_password_type()) {
      password = &attribute;
    } else if (type->primary_name() == "pwdPolicySubentry") {
      subentry = attribute.values.front();
    } else if (type->primary_name() == "pwdChangedTime") {
      has_changed_time = true;
    }
  }
  if (password == nullptr) {
    return true;
  }
  const std::optional<PasswordPolicy> policy =
      policy_->policy_for(subentry, state.txn(), state.policy_memo, state.dn);
  if (!policy.has_value()) {
    return true;
  }
  if (password->values.size() > 1) {
    sender.send_result(OwnedResult::error(ResultCode::kConstraintViolation,
                                          "Password policy only allows one password value"));
    return false;
  }
  if (policy->check_quality > 0 && !who.root) {
    if (const PolicyError error = check_password_quality(password->values.front(), *policy);
        error != PolicyError::kNone) {
      if (requests_policy_control(request)) {
        PolicyResponse response;
        response.error = error;
        attach_policy_control(sender, response);
      }
      sender.send_result(OwnedResult::error(ResultCode::kConstraintViolation,
                                            "Password fails quality checking policy"));
      return false;
    }
  }
  if ((policy->max_age_s != 0 || policy->min_age_s != 0) && !has_changed_time) {
    entry.attributes.push_back(schema::EntryAttribute{
        "pwdChangedTime", {format_generalized_time(now_micros(), /*with_fraction=*/false)}});
    internal.emplace_back("pwdChangedTime");
  }
  return true;
}

std::optional<ParsedName> AddOperation::check_request(const listener::wire::AddRequest& add,
                                                      ResultSender& sender) const {
  for (const auto& attribute : add.attributes.attributes()) {
    if (attribute.value_count == 0) {
      sender.send_result(
          OwnedResult::error(ResultCode::kProtocolError, "no values for attribute type"));
      return std::nullopt;
    }
  }
  std::optional<ParsedName> name = parse_name(context_, add.entry);
  if (!name.has_value()) {
    sender.send_result(invalid_dn());
    return std::nullopt;
  }
  if (add.attributes.empty()) {
    sender.send_result(OwnedResult::error(ResultCode::kProtocolError, "no attributes provided"));
    return std::nullopt;
  }
  if (name->ndn.empty()) {
    sender.send_result(
        OwnedResult::error(ResultCode::kEntryAlreadyExists, "root DSE already exists"));
    return std::nullopt;
  }
  if (name->ndn == context_.subschema_ndn()) {
    sender.send_result(
        OwnedResult::error(ResultCode::kEntryAlreadyExists, "subschema subentry already exists"));
    return std::nullopt;
  }
  if (!context_.in_naming_context(name->ndn)) {
    sender.send_result(outside_naming_context());
    return std::nullopt;
  }
  if (const std::string* referral = context_.update_referral(name->ndn)) {
    sender.send_result(update_referral(*referral, add.entry));
    return std::nullopt;
  }
  return name;
}

Status AddOperation::may_write(const OperationContext& context, const OperationAccess& access,
                               std::string_view ndn, const schema::Entry& entry) {
  // As slapd: write to the new entry itself and to each attribute it is given.
  const AccessEntry added{ndn, &entry};
  NUMADIR_RETURN_IF_ERROR(access.status_of(
      access.decide(added, AccessAttribute::entry(), AccessLevel::kWrite), no_entry_access));
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    const schema::AttributeType* type = context.attribute_type(attribute.description);
    if (type != nullptr) {
      NUMADIR_RETURN_IF_ERROR(
          access.status_of(access.decide(added, AccessAttribute::of(type), AccessLevel::kWrite),
                           [&] { return no_attribute_access(*type); }));
    }
  }
  return Status();
}

}  // namespace numadir::server
