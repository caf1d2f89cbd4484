// server/operations/search_operation.cc: see search_operation.h.
#include "server/operations/search_operation.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "backend/entry_filter.h"
#include "server/operations/attribute_selection.h"
#include "server/operations/search_entries.h"
#include "server/operations/search_pause.h"
#include "server/operations/search_scope.h"
#include "server/operations/sync_search.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;
using listener::wire::SearchRequest;
using listener::wire::SearchScope;

namespace {

std::uint64_t min_limit(std::uint64_t a, std::uint64_t b) {
  if (a == 0) {
    return b;
  }
  return b == 0 ? a : std::min(a, b);
}

}  // namespace

void SearchOperation::run(const LdapMessage& request, ServerSession& session,
                          ServerWorkerState& state, ResultSender& sender) const {
  const SearchRequest& search = request.search_request;
  // The worker's copy: copying into it reuses its strings, so this allocates nothing once warm.
  session.copy_identity(state.identity);
  const Identity& who = state.identity;

  PagedRequest paged;
  if (std::optional<OwnedResult> bad = parse_paged(request, paged); bad.has_value()) {
    sender.send_result(*bad);
    return;
  }
  // Views the worker's cache, which nothing below refills.
  const Result<std::string_view> base_ndn =
      context_.normalize_dn_cached(search.base_object, state.dn);
  if (!base_ndn.ok()) {
    sender.send_result(OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid DN"));
    return;
  }
  if (monitor_.run(request, who, *base_ndn, state, sender)) {
    return;
  }
  const OperationAccess access(context_, state, who);
  if (search_special(request, access, *base_ndn, state, sender)) {
    return;
  }
  switch (access.discloses(search.base_object)) {
    case AccessDecision::kAllowed:
      break;
    case AccessDecision::kDenied:
      // As slapd: a base the client may not know of is missing, and nothing above it is named.
      sender.send_result(OwnedResult::error(ResultCode::kNoSuchObject, ""));
      return;
    case AccessDecision::kFailed:
      sender.send_status(access.failure());  // Logs it.
      return;
  }
  if (SyncSearchService* sync = context_.options().sync; sync != nullptr) {
    for (const listener::wire::Control& control : request.controls) {
      if (sync->serves(control)) {
        sync->run(context_, request, access, session, state, sender);
        return;
      }
    }
  }
  SearchPage page(paged, session);
  if (!page.resume(search, sender)) {
    return;
  }
  search_directory(request, access, session, state, page, sender);
}

SearchLimits search_limits(const HandlerOptions& options, const Identity& who,
                           const SearchRequest& search, bool paged) {
  std::uint64_t server_size_limit = who.root          ? options.size_limit_root
                                    : who.anonymous() ? options.size_limit_anonymous
                                                      : options.size_limit_users;
  if (paged && !who.root && options.size_limit_paged.has_value()) {
    server_size_limit = *options.size_limit_paged;
  }
  SearchLimits limits;
  limits.size =
      min_limit(server_size_limit, static_cast<std::uint64_t>(std::max(search.size_limit, 0)));
  limits.time_s = min_limit(who.root ? 0 : options.time_limit_s,
                            static_cast<std::uint64_t>(std::max(search.time_limit, 0)));
  return limits;
}

bool SearchOperation::search_special(const LdapMessage& request, const OperationAccess& access,
                                     std::string_view base_ndn, ServerWorkerState& state,
                                     ResultSender& sender) const {
  const SearchRequest& search = request.search_request;
  const schema::Entry* entry = nullptr;
  if (base_ndn.empty()) {
    if (search.scope != SearchScope::kBaseObject) {
      sender.send_result(OwnedResult::error(ResultCode::kNoSuchObject, ""));
      return true;
    }
    entry = &context_.root_dse();
  } else if (base_ndn == context_.subschema_ndn()) {
    if (search.scope == SearchScope::kSingleLevel ||
        search.scope == SearchScope::kSubordinateSubtree) {
      sender.send_result(OwnedResult::success());  // It has no children.
      return true;
    }
    entry = &context_.subschema();
  } else {
    return false;
  }
  if (!search.filter.empty() &&
      backend::EntryFilter(search.filter, context_.catalog()).matches(*entry, state.filter)) {
    const AttributeSelection selection(search.attributes, context_.catalog());
    LdapMessage response;
    response.op = ProtocolOp::kSearchResultEntry;
    response.search_entry.object_name = entry->dn;
    if (append_readable_attributes(*entry, base_ndn, selection, access, search.types_only,
                                   response.search_entry.attributes) == AccessDecision::kFailed) {
      sender.send_status(access.failure());  // Logs it.
      return true;
    }
    sender.send_entry(response);
  }
  sender.send_result(OwnedResult::success());
  return true;
}

void SearchOperation::search_directory(const LdapMessage& request, const OperationAccess& access,
                                       ServerSession& session, ServerWorkerState& state,
                                       SearchPage& page, ResultSender& sender) const {
  const SearchRequest& search = request.search_request;
  const SearchLimits limits =
      search_limits(context_.options(), access.requester().identity, search, page.paged());
  // Items on attributes the client may not search are made Undefined entry by entry
  // (SearchEntrySender), as slapd evaluates them; typeless extensible items here, at once.
  schema::Filter restricted;
  const schema::Filter& filter =
      restrict_typeless_items(search.filter, access.requester().identity.root, restricted);

  backend::SearchSpec spec;
  // The base goes through the worker's string (swapped in and back out) to keep its capacity.
  spec.base.swap(state.search_base);
  spec.base.assign(search.base_object);
  spec.scope = backend_scope(search.scope);
  spec.filter = &filter;
  if (limits.time_s != 0) {
    spec.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limits.time_s);
  }
  SearchEntrySender entries(context_, access, state, request, filter, limits.size, page, sender,
                            state.txn());
  // std::ref: the std::function holds a pointer to the sender instead of a heap copy of it.
  const Status status = context_.directory().search(state.txn(), spec, std::ref(entries));
  if (entries.paused()) {
    // The connection's output is full: the search goes on once the client has read, on a
    // worker, in the snapshot it pinned (if it had handled entries).
    spec.filter = nullptr;
    PausedSearch::pause(context_, request, access.requester().identity, session, spec, limits.size,
                        entries.progress(), page.save(),
                        entries.pinned() ? state.take_txn() : nullptr, sender);
  }
  state.search_base.swap(spec.base);
  if (!entries.paused()) {
    send_search_done(status, entries, access, page, sender);
  }
}

}  // namespace numadir::server
