// server/operations/update_operations.cc: Compare (RFC 4511 §4.10), Add (§4.7), Modify (§4.6),
// Delete (§4.8) and Modify DN (§4.9): the wire request checked as slapd's frontend checks it,
// access decided by AccessControl, then one Directory call whose Status becomes the result.
// Cleartext userPassword values an Add or Modify writes are hashed with the default scheme unless
// cleartext passwords are allowed (then they are stored as sent, as slapd stores them).
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/password_scheme.h"
#include "schema/dn.h"
#include "server/operations/operation_handler.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ModifyOperation;
using listener::wire::ResultCode;

namespace {

struct ParsedName {
  schema::Dn dn;
  std::string ndn;
  std::string parent_ndn;
};

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

backend::ModificationKind modification_kind(ModifyOperation operation) {
  switch (operation) {
    case ModifyOperation::kAdd:
      return backend::ModificationKind::kAdd;
    case ModifyOperation::kDelete:
      return backend::ModificationKind::kDelete;
    case ModifyOperation::kReplace:
      return backend::ModificationKind::kReplace;
    case ModifyOperation::kIncrement:
      return backend::ModificationKind::kIncrement;
  }
  return backend::ModificationKind::kReplace;
}

// Returns: `parsed` with its normalized form and its parent's; nullopt if it did not parse.
std::optional<ParsedName> name_of(Result<schema::Dn> parsed,
                                  const schema::DnValueNormalizer& normalizer) {
  if (!parsed.ok()) {
    return std::nullopt;
  }
  std::string ndn = parsed->normalized(&normalizer);
  std::string parent_ndn = parsed->parent().normalized(&normalizer);
  return ParsedName{std::move(*parsed), std::move(ndn), std::move(parent_ndn)};
}

OwnedResult outside_naming_context() {
  return OwnedResult::error(ResultCode::kUnwillingToPerform, "no global superior knowledge");
}

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

// Returns: whether `value` starts with "{CLEARTEXT}" in any case.
bool has_cleartext_prefix(std::string_view value) {
  constexpr std::string_view kPrefix = "{CLEARTEXT}";
  return value.size() >= kPrefix.size() &&
         std::equal(kPrefix.begin(), kPrefix.end(), value.begin(), [](char want, char have) {
           return want == (have >= 'a' && have <= 'z' ? static_cast<char>(have - 'a' + 'A') : have);
         });
}

// Hashes each cleartext userPassword value in `values` (no "{SCHEME}" prefix, or {CLEARTEXT})
// with `scheme`: simple binds check cleartext values only where passwords.allow_cleartext is
// set, so one stored as sent could never be used. Values with another prefix, known or not,
// stay as sent (a hash made elsewhere, or a scheme this server cannot check).
// Errors: as backend::hash_password.
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

OwnedResult password_hash_failed() {
  return OwnedResult::error(ResultCode::kOther, "password hash failed");
}

}  // namespace

void OperationHandler::compare(const LdapMessage& request, const Identity& who,
                               listener::ResponseSink& sink) const {
  const listener::wire::CompareRequest& compare = request.compare_request;
  Result<std::string> ndn = normalize_dn(compare.entry);
  if (!ndn.ok()) {
    send_result(request, invalid_dn(), sink);
    return;
  }
  Result<std::string> wanted = catalog_.canonical_description(compare.attribute);
  const backend::AttributeInfo* info =
      wanted.ok() ? catalog_.by_canonical(schema::split_description(*wanted).first) : nullptr;
  if (info == nullptr) {
    send_result(request,
                OwnedResult::error(ResultCode::kUndefinedAttributeType, "attribute type undefined"),
                sink);
    return;
  }
  if (info->type->equality == nullptr) {
    send_result(request,
                OwnedResult::error(ResultCode::kInappropriateMatching, "no equality matching rule"),
                sink);
    return;
  }
  const schema::MatchingRule& rule = *info->type->equality;
  std::string assertion;
  if (!catalog_.normalize(rule, compare.value, assertion)) {
    send_result(request,
                OwnedResult::error(ResultCode::kInvalidAttributeSyntax,
                                   "value does not conform to assertion syntax"),
                sink);
    return;
  }

  std::optional<schema::Entry> fetched;
  const schema::Entry* entry = nullptr;
  if (ndn->empty()) {
    entry = &root_dse_;
  } else if (*ndn == subschema_ndn_) {
    entry = &subschema_;
  } else {
    Result<schema::Entry> got = directory_.get(read_txn(), compare.entry);
    if (!got.ok()) {
      send_status(request, got.status(), sink);
      return;
    }
    fetched = std::move(*got);
    entry = &*fetched;
  }
  // As slapd: an entry the client may not know of is missing; then the compare right.
  const DirectoryGroups groups(*this);
  const Requester asker = requester(who, groups);
  const AccessEntry target{*ndn, entry};
  if (!access_->allows(asker, target, AccessAttribute::entry(), AccessLevel::kDisclose)) {
    send_result(request, OwnedResult::error(ResultCode::kNoSuchObject, ""), sink);
    return;
  }
  if (!access_->allows(asker, target, AccessAttribute::of(info->type), AccessLevel::kCompare)) {
    send_result(request, OwnedResult::error(ResultCode::kInsufficientAccessRights, ""), sink);
    return;
  }

  const std::string_view wanted_options = backend::description_options(*wanted);
  bool present = false;
  std::string normalized;
  for (const schema::EntryAttribute& attribute : entry->attributes) {
    const std::string_view type = schema::split_description(attribute.description).first;
    const backend::AttributeInfo* have = catalog_.by_canonical(type);
    if (have == nullptr) {
      have = catalog_.resolve(type);
    }
    if (have == nullptr || !info->covers(have->name) ||
        !backend::options_cover(backend::description_options(attribute.description),
                                wanted_options)) {
      continue;
    }
    present = true;
    for (const std::string& value : attribute.values) {
      if (catalog_.normalize(rule, value, normalized) && normalized == assertion) {
        send_result(request, OwnedResult{ResultCode::kCompareTrue, "", ""}, sink);
        return;
      }
    }
  }
  send_result(request,
              present ? OwnedResult{ResultCode::kCompareFalse, "", ""}
                      : OwnedResult::error(ResultCode::kNoSuchAttribute, ""),
              sink);
}

void OperationHandler::add(const LdapMessage& request, const Identity& who,
                           listener::ResponseSink& sink) const {
  const listener::wire::AddRequest& add = request.add_request;
  for (const auto& attribute : add.attributes.attributes()) {
    if (attribute.value_count == 0) {
      send_result(request,
                  OwnedResult::error(ResultCode::kProtocolError, "no values for attribute type"),
                  sink);
      return;
    }
  }
  const std::optional<ParsedName> name = name_of(parse_dn(add.entry), dn_normalizer_);
  if (!name.has_value()) {
    send_result(request, invalid_dn(), sink);
    return;
  }
  if (add.attributes.empty()) {
    send_result(request, OwnedResult::error(ResultCode::kProtocolError, "no attributes provided"),
                sink);
    return;
  }
  if (name->ndn.empty()) {
    send_result(request,
                OwnedResult::error(ResultCode::kEntryAlreadyExists, "root DSE already exists"),
                sink);
    return;
  }
  if (name->ndn == subschema_ndn_) {
    send_result(
        request,
        OwnedResult::error(ResultCode::kEntryAlreadyExists, "subschema subentry already exists"),
        sink);
    return;
  }
  if (!in_naming_context(name->dn)) {
    send_result(request, outside_naming_context(), sink);
    return;
  }
  const DirectoryGroups groups(*this);
  const Requester asker = requester(who, groups);
  if (!may_write_children(asker, name->parent_ndn)) {
    send_result(request, no_parent_access(), sink);
    return;
  }
  schema::Entry entry;
  entry.dn = std::string(add.entry);
  for (const auto& attribute : add.attributes.attributes()) {
    // An attribute listed twice is merged, as slapd does.
    schema::EntryAttribute* target = entry.find(attribute.type);
    if (target == nullptr) {
      entry.attributes.push_back(schema::EntryAttribute{std::string(attribute.type), {}});
      target = &entry.attributes.back();
    }
    for (std::string_view value : add.attributes.values(attribute)) {
      target->values.emplace_back(value);
    }
  }
  add_rdn_values(name->dn, catalog_, entry);
  // As slapd: write to the new entry itself and to each attribute it is given.
  const AccessEntry added{name->ndn, &entry};
  if (!access_->allows(asker, added, AccessAttribute::entry(), AccessLevel::kWrite)) {
    send_result(request, no_entry_access(), sink);
    return;
  }
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    const schema::AttributeType* type = attribute_type(attribute.description);
    if (type != nullptr &&
        !access_->allows(asker, added, AccessAttribute::of(type), AccessLevel::kWrite)) {
      send_result(request, no_attribute_access(*type), sink);
      return;
    }
  }
  if (!options_.allow_cleartext_passwords && user_password_type_ != nullptr) {
    for (schema::EntryAttribute& attribute : entry.attributes) {
      if (attribute_type(attribute.description) == user_password_type_ &&
          !hash_cleartext_passwords(options_.default_password_scheme, attribute.values).ok()) {
        send_result(request, password_hash_failed(), sink);
        return;
      }
    }
  }
  send_update_result(request, directory_.add(entry, backend::UpdateContext{who.dn, std::nullopt}),
                     sink);
}

void OperationHandler::modify(const LdapMessage& request, const Identity& who,
                              listener::ResponseSink& sink) const {
  const listener::wire::ModifyRequest& modify = request.modify_request;
  const std::optional<ParsedName> name = name_of(parse_dn(modify.object), dn_normalizer_);
  if (!name.has_value()) {
    send_result(request, invalid_dn(), sink);
    return;
  }
  const std::string& ndn = name->ndn;
  if (modify.modifications.empty()) {
    send_result(request,
                OwnedResult::error(ResultCode::kProtocolError, "no modifications specified"), sink);
    return;
  }
  if (ndn.empty() || ndn == subschema_ndn_) {
    send_result(request,
                OwnedResult::error(ResultCode::kUnwillingToPerform,
                                   ndn.empty() ? "modification of the root DSE not supported"
                                               : "modification of subschema not supported"),
                sink);
    return;
  }
  if (!in_naming_context(name->dn)) {
    send_result(request, outside_naming_context(), sink);
    return;
  }
  // As slapd: write access to each attribute modified (the entry itself is not asked for).
  const DirectoryGroups groups(*this);
  const Requester asker = requester(who, groups);
  const std::optional<schema::Entry> content = entry_for_access(modify.object);
  std::vector<backend::Modification> modifications;
  modifications.reserve(modify.modifications.size());
  const auto attributes = modify.modifications.attributes();
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    const schema::AttributeType* type = attribute_type(attributes[i].type);
    if (type != nullptr &&
        !may(asker, ndn, content, AccessAttribute::of(type), AccessLevel::kWrite)) {
      send_denied(request, modify.object, no_attribute_access(*type), sink);
      return;
    }
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
    if (adds_values && type != nullptr && type == user_password_type_ &&
        !options_.allow_cleartext_passwords &&
        !hash_cleartext_passwords(options_.default_password_scheme, modification.values).ok()) {
      send_result(request, password_hash_failed(), sink);
      return;
    }
    modifications.push_back(std::move(modification));
  }
  send_update_result(
      request,
      directory_.modify(modify.object, modifications, backend::UpdateContext{who.dn, std::nullopt}),
      sink);
}

void OperationHandler::remove(const LdapMessage& request, const Identity& who,
                              listener::ResponseSink& sink) const {
  const std::optional<ParsedName> name = name_of(parse_dn(request.dn), dn_normalizer_);
  if (!name.has_value()) {
    send_result(request, invalid_dn(), sink);
    return;
  }
  if (name->ndn.empty() || name->ndn == subschema_ndn_) {
    send_result(request,
                OwnedResult::error(ResultCode::kUnwillingToPerform,
                                   name->ndn.empty() ? "cannot delete the root DSE"
                                                     : "cannot delete the subschema subentry"),
                sink);
    return;
  }
  if (!in_naming_context(name->dn)) {
    send_result(request, outside_naming_context(), sink);
    return;
  }
  const DirectoryGroups groups(*this);
  const Requester asker = requester(who, groups);
  if (!may_write_children(asker, name->parent_ndn)) {
    send_denied(request, request.dn, no_parent_access(), sink);
    return;
  }
  if (!may(asker, name->ndn, entry_for_access(request.dn), AccessAttribute::entry(),
           AccessLevel::kWrite)) {
    send_denied(request, request.dn, no_entry_access(), sink);
    return;
  }
  send_update_result(
      request, directory_.remove(request.dn, backend::UpdateContext{who.dn, std::nullopt}), sink);
}

void OperationHandler::rename(const LdapMessage& request, const Identity& who,
                              listener::ResponseSink& sink) const {
  const listener::wire::ModifyDnRequest& rename = request.modify_dn_request;
  const std::optional<ParsedName> name = name_of(parse_dn(rename.entry), dn_normalizer_);
  if (!name.has_value()) {
    send_result(request, invalid_dn(), sink);
    return;
  }
  Result<schema::Dn> new_rdn = parse_dn(rename.new_rdn);
  if (!new_rdn.ok() || new_rdn->rdn_count() != 1) {
    send_result(request, OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid new RDN"), sink);
    return;
  }
  std::optional<ParsedName> new_parent;
  if (rename.new_superior.has_value()) {
    new_parent = name_of(parse_dn(*rename.new_superior), dn_normalizer_);
    if (!new_parent.has_value()) {
      send_result(request, OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid newSuperior"),
                  sink);
      return;
    }
  }
  if (name->ndn.empty() || name->ndn == subschema_ndn_) {
    send_result(request,
                OwnedResult::error(ResultCode::kUnwillingToPerform,
                                   name->ndn.empty() ? "cannot rename the root DSE"
                                                     : "cannot rename the subschema subentry"),
                sink);
    return;
  }
  if (!in_naming_context(name->dn)) {
    send_result(request, outside_naming_context(), sink);
    return;
  }
  if (new_parent.has_value() && !in_naming_context(new_parent->dn)) {
    send_result(request,
                OwnedResult::error(ResultCode::kAffectsMultipleDsas, "cannot rename between DSAs"),
                sink);
    return;
  }
  const DirectoryGroups groups(*this);
  const Requester asker = requester(who, groups);
  if (!may_write_children(asker, name->parent_ndn) ||
      (new_parent.has_value() && !may_write_children(asker, new_parent->ndn))) {
    send_result(request, no_parent_access(), sink);  // slapd checks this before the entry.
    return;
  }
  if (!may(asker, name->ndn, entry_for_access(rename.entry), AccessAttribute::entry(),
           AccessLevel::kWrite)) {
    send_denied(request, rename.entry, no_entry_access(), sink);
    return;
  }
  send_update_result(
      request,
      directory_.rename(rename.entry, rename.new_rdn, rename.delete_old_rdn, rename.new_superior,
                        backend::UpdateContext{who.dn, std::nullopt}),
      sink);
}

void OperationHandler::send_denied(const LdapMessage& request, std::string_view dn,
                                   const OwnedResult& denied, listener::ResponseSink& sink) const {
  Result<schema::Entry> entry = directory_.get(read_txn(), dn);
  if (!entry.ok() && entry.status().code() == StatusCode::kNoSuchObject) {
    send_status(request, entry.status(), sink);
    return;
  }
  send_result(request, denied, sink);
}

bool OperationHandler::may_write_children(const Requester& who, std::string_view parent_ndn) const {
  return may(who, parent_ndn, entry_for_access(parent_ndn), AccessAttribute::children(),
             AccessLevel::kWrite);
}

void OperationHandler::send_update_result(const LdapMessage& request, const Status& status,
                                          listener::ResponseSink& sink) const {
  if (!status.ok()) {
    send_status(request, status, sink);
    return;
  }
  send_result(request, OwnedResult::success(), sink);
}

}  // namespace numadir::server
