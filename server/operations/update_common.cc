// server/operations/update_common.cc: see update_common.h.
#include "server/operations/update_common.h"

#include <algorithm>
#include <utility>

namespace numadir::server {

using listener::wire::ResultCode;

namespace {

// Returns: whether `value` starts with "{CLEARTEXT}" in any case.
bool has_cleartext_prefix(std::string_view value) {
  constexpr std::string_view kPrefix = "{CLEARTEXT}";
  return value.size() >= kPrefix.size() &&
         std::equal(kPrefix.begin(), kPrefix.end(), value.begin(), [](char want, char have) {
           return want == (have >= 'a' && have <= 'z' ? static_cast<char>(have - 'a' + 'A') : have);
         });
}

}  // namespace

std::optional<ParsedName> parse_name(const OperationContext& context, std::string_view dn) {
  Result<schema::Dn> parsed = context.parse_dn(dn);
  if (!parsed.ok()) {
    return std::nullopt;
  }
  std::string ndn = parsed->normalized(&context.dn_normalizer());
  std::string parent_ndn = parsed->parent().normalized(&context.dn_normalizer());
  return ParsedName{std::move(*parsed), std::move(ndn), std::move(parent_ndn)};
}

OwnedResult invalid_dn() { return OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid DN"); }

OwnedResult no_parent_access() {
  return OwnedResult::error(ResultCode::kInsufficientAccessRights, "no write access to parent");
}

OwnedResult no_entry_access() {
  return OwnedResult::error(ResultCode::kInsufficientAccessRights, "no write access to entry");
}

OwnedResult no_attribute_access(const schema::AttributeType& type) {
  return OwnedResult::error(ResultCode::kInsufficientAccessRights,
                            "no write access to attribute " + std::string(type.primary_name()));
}

OwnedResult outside_naming_context() {
  return OwnedResult::error(ResultCode::kUnwillingToPerform, "no global superior knowledge");
}

OwnedResult password_hash_failed() {
  return OwnedResult::error(ResultCode::kOther, "password hash failed");
}

Status hash_cleartext_passwords(backend::PasswordScheme scheme, std::vector<std::string>& values) {
  for (std::string& value : values) {
    Result<backend::PasswordScheme> stored = backend::stored_password_scheme(value);
    if (!stored.ok() || *stored != backend::PasswordScheme::kCleartext) {
      continue;
    }
    std::string_view password = value;
    if (has_cleartext_prefix(password)) {
      password.remove_prefix(std::string_view("{CLEARTEXT}").size());
    }
    Result<std::string> hashed = backend::hash_password(password, scheme);
    if (!hashed.ok()) {
      return hashed.status();
    }
    value = std::move(*hashed);
  }
  return Status();
}

bool UpdateTarget::parse(ResultSender& sender) {
  name_ = parse_name(context_, dn_);
  if (!name_.has_value()) {
    sender.send_result(invalid_dn());
    return false;
  }
  return true;
}

bool UpdateTarget::check(ResultSender& sender) const {
  const std::string& ndn = name_->ndn;
  if (ndn.empty() || ndn == context_.subschema_ndn()) {
    sender.send_result(
        OwnedResult::error(ResultCode::kUnwillingToPerform,
                           "cannot " + std::string(verb_) +
                               (ndn.empty() ? " the root DSE" : " the subschema subentry")));
    return false;
  }
  if (!context_.in_naming_context(ndn)) {
    sender.send_result(outside_naming_context());
    return false;
  }
  return true;
}

bool UpdateTarget::may_write(const OperationAccess& access, ServerWorkerState& state,
                             ResultSender& sender) const {
  if (access.may(name_->ndn, access.entry_for_access(dn_), AccessAttribute::entry(),
                 AccessLevel::kWrite)) {
    return true;
  }
  send_denied(context_, state, dn_, no_entry_access(), sender);
  return false;
}

void send_denied(const OperationContext& context, ServerWorkerState& state, std::string_view dn,
                 const OwnedResult& denied, ResultSender& sender) {
  // Whether the entry exists; a lookup, which decodes nothing of it.
  const Status found = context.directory().lookup(state.txn(), dn, [](const backend::EntryRef&) {});
  sender.send_denied(found, denied);
}

}  // namespace numadir::server
