// server/operations/search_entries.cc: see search_entries.h.
#include "server/operations/search_entries.h"

#include <algorithm>

#include "backend/entry_filter.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;

namespace {

// An attribute type no schema defines: a filter item on it is Undefined (backend/filter_eval.h),
// which is what an item on an attribute the client may not search must evaluate to.
constexpr std::string_view kUnsearchableType = "x-numadir-unsearchable";

// Copies the subtree of `in` at `index` into `out`, replacing every item `denied` refuses with
// an item on kUnsearchableType (Undefined, as slapd evaluates an item without search access).
template <typename Denied>
void copy_restricted(const schema::Filter& in, std::uint32_t index, schema::Filter& out,
                     const Denied& denied) {
  const schema::FilterNode& node = in.node(index);
  if (denied(node)) {
    out.add_leaf(schema::FilterKind::kEquality, kUnsearchableType, "x");
    return;
  }
  const std::uint32_t copy = out.open(node.kind, node.attribute, node.value);
  out.set_extensible(copy, node.matching_rule, node.dn_attributes);
  for (std::uint32_t child = index + 1; child < node.end; child = in.node(child).end) {
    copy_restricted(in, child, out, denied);
  }
  out.close(copy);
}

bool is_item(schema::FilterKind kind) {
  return kind != schema::FilterKind::kAnd && kind != schema::FilterKind::kOr &&
         kind != schema::FilterKind::kNot && kind != schema::FilterKind::kSubInitial &&
         kind != schema::FilterKind::kSubAny && kind != schema::FilterKind::kSubFinal;
}

// Returns: `types` refilled with the schema types of `filter`'s items on a type.
const std::vector<const schema::AttributeType*>& fill_item_types(
    const schema::Filter& filter, const OperationContext& context,
    std::vector<const schema::AttributeType*>& types) {
  types.clear();
  for (const schema::FilterNode& node : filter.nodes()) {
    if (is_item(node.kind) && !node.attribute.empty()) {
      types.push_back(context.attribute_type(node.attribute));
    }
  }
  return types;
}

// Returns: the result of a directory search that ran to `status` (sizeLimitExceeded when the
//   entries stopped at the size limit), its matchedDN cleared when the requester may not know
//   of that entry.
OwnedResult search_result(const Status& status, const SearchEntrySender& entries,
                          const OperationAccess& access) {
  OwnedResult result;
  if (!status.ok()) {
    result = result_from_status(status);
  } else if (entries.size_exceeded()) {
    result = OwnedResult::error(listener::wire::ResultCode::kSizeLimitExceeded, "");
  }
  if (result.code == listener::wire::ResultCode::kNoSuchObject && !result.matched_dn.empty() &&
      access.discloses(result.matched_dn) != AccessDecision::kAllowed) {
    result.matched_dn.clear();  // A failed decision fails the search: send_search_done sees it.
  }
  return result;
}

}  // namespace

void send_search_done(const Status& status, const SearchEntrySender& entries,
                      const OperationAccess& access, SearchPage& page, ResultSender& sender) {
  if (entries.abandoned() || sender.abandoned()) {
    return;  // RFC 4511 §4.11: an abandoned operation gets no response.
  }
  const OwnedResult result = search_result(status, entries, access);
  if (access.failed()) {
    // The entry whose decision failed was not sent, nor anything after it.
    sender.send_status(access.failure());  // Logs it.
    return;
  }
  if (result.code == listener::wire::ResultCode::kOther) {
    sender.send_status(status);  // Logs it.
    return;
  }
  page.finish(entries.page_full() && status.ok(), entries.returned(), sender);
  sender.send_result(result);
}

const schema::Filter& restrict_typeless_items(const schema::Filter& filter, bool root,
                                              schema::Filter& restricted) {
  const auto typeless = [&](const schema::FilterNode& node) {
    return node.kind == schema::FilterKind::kExtensible && node.attribute.empty() && !root;
  };
  if (!std::any_of(filter.nodes().begin(), filter.nodes().end(), typeless)) {
    return filter;
  }
  copy_restricted(filter, 0, restricted, typeless);
  return restricted;
}

AccessDecision append_readable_attributes(const schema::Entry& entry, std::string_view entry_ndn,
                                          const AttributeSelection& selection,
                                          const OperationAccess& access, bool types_only,
                                          listener::wire::AttributeList& out,
                                          std::span<const schema::AttributeType* const> omitted) {
  const AccessEntry target{entry_ndn, &entry};
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    const schema::AttributeType* type = selection.type_of(attribute.description);
    if (!selection.selects(attribute.description, type) ||
        (type != nullptr && std::find(omitted.begin(), omitted.end(), type) != omitted.end())) {
      continue;
    }
    const AccessDecision read =
        access.decide(target, AccessAttribute::of(type), AccessLevel::kRead);
    if (read == AccessDecision::kFailed) {
      return read;
    }
    if (read == AccessDecision::kDenied) {
      continue;
    }
    out.add(attribute.description);
    if (!types_only) {
      for (const std::string& value : attribute.values) {
        out.add_value(value);
      }
    }
  }
  return AccessDecision::kAllowed;
}

SearchEntrySender::SearchEntrySender(const OperationContext& context, const OperationAccess& access,
                                     ServerWorkerState& state, const LdapMessage& request,
                                     const schema::Filter& filter, std::uint64_t size_limit,
                                     const SearchPage& page, ResultSender& sender,
                                     backend::ReadTxn& txn, const std::optional<Progress>& from,
                                     SearchEntryHook* hook)
    : context_(context),
      access_(access),
      state_(state),
      search_(request.search_request),
      filter_(filter),
      size_limit_(size_limit),
      page_(page),
      sender_(sender),
      txn_(txn),
      hook_(hook),
      selection_(request.search_request.attributes, context.catalog()),
      ndn_matters_(!context.access().is_default() ||
                   (!access.requester().identity.anonymous() && !access.requester().identity.root)),
      content_matters_(context.access().needs_entry()),
      item_types_(fill_item_types(filter, context, state.item_types)),
      returned_(page.skip()) {
  response_.op = ProtocolOp::kSearchResultEntry;
  if (from.has_value()) {
    if (from->resume.has_value()) {
      delivered_ = from->delivered;  // Resumed at the entry it paused at: nothing to skip.
    } else {
      skip_ = from->delivered;  // Started again from the first entry: skips what it handled.
    }
    seen_ = from->seen;
    returned_ = from->returned;
    in_page_ = from->in_page;
  }
}

bool SearchEntrySender::operator()(const backend::EntryRef& entry) {
  if (skip_ > 0) {  // Handled before the pause, in this same snapshot.
    --skip_;
    ++delivered_;
    return true;
  }
  if (sender_.abandoned()) {
    abandoned_ = true;
    return false;
  }
  if (!sender_.writable()) {
    // Past the connection's output bound: stop here without holding the worker and go on from
    // this entry once the client has read (PausedSearch). Once entries were handled the rest
    // must come from the same snapshot: it is pinned. Before, the search may start afresh.
    if (delivered_ > 0) {
      context_.directory().pin_snapshot(txn_);
      pinned_ = true;
      resume_ = entry.resume_point();  // This entry, not handled: the first one then.
    }
    paused_ = true;
    return false;
  }
  ++delivered_;
  std::string& entry_ndn = state_.entry_ndn;
  entry_ndn.clear();
  if (ndn_matters_ && !entry.normalized_dn(entry_ndn)) {
    if (!context_.normalize_dn_into(entry.dn(), entry_ndn, state_.dn).ok()) {
      entry_ndn.clear();
    }
  }
  schema::Entry decoded;  // Lives until the entry is sent: the response views it.
  bool have_decoded = false;
  switch (visible(entry, decoded, have_decoded)) {
    case AccessDecision::kAllowed:
      break;
    case AccessDecision::kDenied:
      return true;  // Silently left out, as an entry the client may not see.
    case AccessDecision::kFailed:
      return false;  // Not sent either; the search ends with the failure.
  }
  bool stop = false;
  if (!admit(stop)) {
    return !stop;
  }
  if (hook_ != nullptr && hook_->classify(entry) != SearchEntryHook::Action::kSend) {
    return true;  // The hook took it (present) or left it out (unchanged).
  }
  return send(entry, decoded, have_decoded);
}

AccessDecision SearchEntrySender::visible(const backend::EntryRef& entry, schema::Entry& decoded,
                                          bool& have_decoded) {
  if (content_matters_) {
    decoded = entry.materialize();
    have_decoded = true;
  }
  const AccessEntry target{state_.entry_ndn, have_decoded ? &decoded : nullptr};
  const AccessDecision read = access_.decide(target, AccessAttribute::entry(), AccessLevel::kRead);
  if (read != AccessDecision::kAllowed) {
    return read;
  }
  bool items_denied = false;
  for (const schema::AttributeType* type : item_types_) {
    if (type == nullptr) {
      continue;
    }
    const AccessDecision search =
        access_.decide(target, AccessAttribute::of(type), AccessLevel::kSearch);
    if (search != AccessDecision::kAllowed) {
      if (search == AccessDecision::kFailed) {
        return search;
      }
      items_denied = true;
      break;
    }
  }
  if (!items_denied) {
    return AccessDecision::kAllowed;
  }
  // The backend matched with every item; match again with the denied ones Undefined.
  // Undefined never turns a non-match into a match, so the backend's candidates suffice.
  if (!have_decoded) {
    decoded = entry.materialize();
    have_decoded = true;
  }
  const bool matches = matches_without_denied_items(decoded);
  // A decision that failed there made its item Undefined; the failure still decides.
  if (access_.failed()) {
    return AccessDecision::kFailed;
  }
  return matches ? AccessDecision::kAllowed : AccessDecision::kDenied;
}

bool SearchEntrySender::matches_without_denied_items(const schema::Entry& decoded) const {
  const AccessEntry full{state_.entry_ndn, &decoded};
  schema::Filter per_entry;
  copy_restricted(filter_, 0, per_entry, [&](const schema::FilterNode& node) {
    if (!is_item(node.kind) || node.attribute.empty()) {
      return false;
    }
    const schema::AttributeType* type = context_.attribute_type(node.attribute);
    return type != nullptr && access_.decide(full, AccessAttribute::of(type),
                                             AccessLevel::kSearch) != AccessDecision::kAllowed;
  });
  return backend::EntryFilter(per_entry, context_.catalog()).matches(decoded, state_.filter);
}

bool SearchEntrySender::admit(bool& stop) {
  if (seen_++ < page_.skip()) {
    return false;  // Returned by an earlier page.
  }
  if (size_limit_ != 0 && returned_ >= size_limit_) {
    size_exceeded_ = true;
    stop = true;
    return false;
  }
  if (page_.full(in_page_)) {
    page_full_ = true;
    stop = true;
    return false;
  }
  return true;
}

bool SearchEntrySender::send(const backend::EntryRef& entry, schema::Entry& decoded,
                             bool have_decoded) {
  response_.search_entry.object_name = entry.dn();
  response_.search_entry.attributes.clear();
  if (!selection_.selects_nothing()) {
    if (!have_decoded) {
      decoded = entry.materialize();
    }
    const std::span<const schema::AttributeType* const> omitted =
        hook_ != nullptr ? hook_->omitted_types() : std::span<const schema::AttributeType* const>();
    if (append_readable_attributes(decoded, state_.entry_ndn, selection_, access_,
                                   search_.types_only, response_.search_entry.attributes,
                                   omitted) == AccessDecision::kFailed) {
      return false;
    }
  }
  if (hook_ != nullptr) {
    hook_->decorate(response_);
  }
  sender_.send_entry(response_);
  ++returned_;
  ++in_page_;
  return true;
}

}  // namespace numadir::server
