// server/operations/compare_operation.cc: see compare_operation.h.
#include "server/operations/compare_operation.h"

#include <optional>
#include <string>

#include "server/operations/operation_access.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ResultCode;

void CompareOperation::run(const LdapMessage& request, const Identity& who,
                           ServerWorkerState& state, ResultSender& sender) const {
  const listener::wire::CompareRequest& compare = request.compare_request;
  const backend::AttributeCatalog& catalog = context_.catalog();
  Result<std::string> ndn = context_.normalize_dn(compare.entry);
  if (!ndn.ok()) {
    sender.send_result(OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid DN"));
    return;
  }
  Result<std::string> wanted = catalog.canonical_description(compare.attribute);
  const backend::AttributeInfo* info =
      wanted.ok() ? catalog.by_canonical(schema::split_description(*wanted).first) : nullptr;
  if (info == nullptr) {
    sender.send_result(
        OwnedResult::error(ResultCode::kUndefinedAttributeType, "attribute type undefined"));
    return;
  }
  if (info->type->equality == nullptr) {
    sender.send_result(
        OwnedResult::error(ResultCode::kInappropriateMatching, "no equality matching rule"));
    return;
  }
  const schema::MatchingRule& rule = *info->type->equality;
  std::string assertion;
  if (!catalog.normalize(rule, compare.value, assertion)) {
    sender.send_result(OwnedResult::error(ResultCode::kInvalidAttributeSyntax,
                                          "value does not conform to assertion syntax"));
    return;
  }

  std::optional<schema::Entry> fetched;
  const schema::Entry* entry = nullptr;
  if (ndn->empty()) {
    entry = &context_.root_dse();
  } else if (*ndn == context_.subschema_ndn()) {
    entry = &context_.subschema();
  } else {
    Result<schema::Entry> got = context_.directory().get(state.txn(), compare.entry);
    if (!got.ok()) {
      sender.send_status(got.status());
      return;
    }
    fetched = std::move(*got);
    entry = &*fetched;
  }
  // As slapd: an entry the client may not know of is missing; then the compare right.
  const OperationAccess access(context_, state, who);
  const AccessEntry target{*ndn, entry};
  switch (access.decide(target, AccessAttribute::entry(), AccessLevel::kDisclose)) {
    case AccessDecision::kAllowed:
      break;
    case AccessDecision::kDenied:
      sender.send_result(OwnedResult::error(ResultCode::kNoSuchObject, ""));
      return;
    case AccessDecision::kFailed:
      sender.send_status(access.failure());  // Logs it.
      return;
  }
  switch (access.decide(target, AccessAttribute::of(info->type), AccessLevel::kCompare)) {
    case AccessDecision::kAllowed:
      break;
    case AccessDecision::kDenied:
      sender.send_result(OwnedResult::error(ResultCode::kInsufficientAccessRights, ""));
      return;
    case AccessDecision::kFailed:
      sender.send_status(access.failure());
      return;
  }
  sender.send_result(
      compare_values(*entry, *info, backend::description_options(*wanted), rule, assertion));
}

OwnedResult CompareOperation::compare_values(const schema::Entry& entry,
                                             const backend::AttributeInfo& info,
                                             std::string_view wanted_options,
                                             const schema::MatchingRule& rule,
                                             std::string_view assertion) const {
  const backend::AttributeCatalog& catalog = context_.catalog();
  bool present = false;
  std::string normalized;
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    const std::string_view type = schema::split_description(attribute.description).first;
    const backend::AttributeInfo* have = catalog.by_canonical(type);
    if (have == nullptr) {
      have = catalog.resolve(type);
    }
    if (have == nullptr || !info.covers(have->name) ||
        !backend::options_cover(backend::description_options(attribute.description),
                                wanted_options)) {
      continue;
    }
    present = true;
    for (const std::string& value : attribute.values) {
      if (catalog.normalize(rule, value, normalized) && normalized == assertion) {
        return OwnedResult{ResultCode::kCompareTrue, "", "", {}};
      }
    }
  }
  return present ? OwnedResult{ResultCode::kCompareFalse, "", "", {}}
                 : OwnedResult::error(ResultCode::kNoSuchAttribute, "");
}

}  // namespace numadir::server
