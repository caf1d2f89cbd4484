// server/operations/search_operation.cc: the Search operation (RFC 4511 §4.5): the root DSE and
// cn=Subschema, then the directory, streaming each entry as it is found; size and time limits
// per identity class; the Paged Results control (RFC 2696).
//
// Paged results: a page that fills up before the search ends is answered with a cookie naming
// a position saved in the connection's ServerSession: the request's signature (every field of
// the SearchRequest, so a cookie is only good for the same search) and how many entries the
// pages so far returned. The next page runs the same search again and skips that many entries
// before sending. Simple and correct while the directory does not change between pages (the
// backend streams a given tree in a stable order); an entry added or removed meanwhile can
// shift the rest by one, as in many servers. Each page costs the entries skipped; fine for the
// result sizes the server limits allow.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"
#include "server/operations/attribute_selection.h"
#include "server/operations/entry_match.h"
#include "server/operations/operation_handler.h"
#include "server/operations/root_dse.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;
using listener::wire::SearchRequest;
using listener::wire::SearchScope;
namespace ber = listener::wire::ber;

namespace {

// An attribute type no schema defines: a filter item on it is Undefined (backend/filter_eval.h),
// which is what an item on an attribute the client may not search must evaluate to.
constexpr std::string_view kUnsearchableType = "x-numadir-unsearchable";

struct PagedRequest {
  bool present = false;
  std::int64_t size = 0;
  std::string_view cookie;
};

// Decodes the Paged Results control of `request`, if any.
// Returns: an error result for a malformed control value.
std::optional<OwnedResult> parse_paged(const LdapMessage& request, PagedRequest& paged) {
  for (const listener::wire::Control& control : request.controls) {
    if (control.type != kPagedResultsOid) {
      continue;
    }
    const OwnedResult bad = OwnedResult::error(ResultCode::kProtocolError,
                                               "paged results control could not be decoded");
    if (!control.value.has_value()) {
      return bad;
    }
    listener::wire::BerError error;
    listener::wire::BerReader outer(*control.value, error, 2);
    listener::wire::BerReader sequence = outer.enter(ber::kSequence);
    if (!sequence.read_integer(ber::kInteger, 0, INT32_MAX, paged.size) ||
        !sequence.read_octets(ber::kOctetString, paged.cookie) || !sequence.at_end() ||
        !outer.at_end()) {
      return bad;
    }
    paged.present = true;
  }
  return std::nullopt;
}

// Returns: the encoded realSearchControlValue (RFC 2696): size 0 (no estimate) and `cookie`.
std::string paged_response_value(std::string_view cookie) {
  listener::wire::BerWriter writer;
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kInteger, 0);
  writer.write_octets(ber::kOctetString, cookie);
  writer.end();
  return std::string(writer.view());
}

std::string encode_cookie(std::uint64_t id) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>(id >> (8 * (7 - i)));
  }
  return out;
}

std::optional<std::uint64_t> decode_cookie(std::string_view cookie) {
  if (cookie.size() != 8) {
    return std::nullopt;
  }
  std::uint64_t id = 0;
  for (const char c : cookie) {
    id = (id << 8) | static_cast<std::uint8_t>(c);
  }
  return id;
}

// Returns: what identifies a search across its pages: every field of the request.
std::string search_signature(const SearchRequest& search) {
  std::string out(search.base_object);
  out += '\0';
  out += std::to_string(static_cast<int>(search.scope)) + ',' +
         std::to_string(static_cast<int>(search.deref_aliases)) + ',' +
         std::to_string(search.size_limit) + ',' + std::to_string(search.time_limit) + ',' +
         (search.types_only ? "1" : "0");
  out += '\0';
  out += search.filter.to_string();
  for (std::string_view attribute : search.attributes) {
    out += '\0';
    out += attribute;
  }
  return out;
}

std::uint64_t min_limit(std::uint64_t a, std::uint64_t b) {
  if (a == 0) {
    return b;
  }
  return b == 0 ? a : std::min(a, b);
}

backend::Scope backend_scope(SearchScope scope) {
  switch (scope) {
    case SearchScope::kBaseObject:
      return backend::Scope::kBase;
    case SearchScope::kSingleLevel:
      return backend::Scope::kOneLevel;
    case SearchScope::kWholeSubtree:
      return backend::Scope::kSubtree;
    case SearchScope::kSubordinateSubtree:
      return backend::Scope::kChildren;
  }
  return backend::Scope::kSubtree;
}

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

// Appends the attributes of `entry` (normalized DN `entry_ndn`) that `selection` selects and
// `who` may read.
void append_attributes(const schema::Entry& entry, std::string_view entry_ndn,
                       const AttributeSelection& selection, const AccessControl& access,
                       const Requester& who, bool types_only, listener::wire::AttributeList& out) {
  const AccessEntry target{entry_ndn, &entry};
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    const schema::AttributeType* type = selection.type_of(attribute.description);
    if (!selection.selects(attribute.description, type) ||
        !access.allows(who, target, AccessAttribute::of(type), AccessLevel::kRead)) {
      continue;
    }
    out.add(attribute.description);
    if (!types_only) {
      for (const std::string& value : attribute.values) {
        out.add_value(value);
      }
    }
  }
}

}  // namespace

bool OperationHandler::search_special(const LdapMessage& request, const Requester& who,
                                      std::string_view base_ndn,
                                      listener::ResponseSink& sink) const {
  const SearchRequest& search = request.search_request;
  const schema::Entry* entry = nullptr;
  if (base_ndn.empty()) {
    if (search.scope != SearchScope::kBaseObject) {
      send_result(request, OwnedResult::error(ResultCode::kNoSuchObject, ""), sink);
      return true;
    }
    entry = &root_dse_;
  } else if (base_ndn == subschema_ndn_) {
    if (search.scope == SearchScope::kSingleLevel ||
        search.scope == SearchScope::kSubordinateSubtree) {
      send_result(request, OwnedResult::success(), sink);  // It has no children.
      return true;
    }
    entry = &subschema_;
  } else {
    return false;
  }
  if (entry_matches(search.filter, *entry, catalog_)) {
    const AttributeSelection selection(search.attributes, catalog_);
    LdapMessage response;
    response.message_id = request.message_id;
    response.op = ProtocolOp::kSearchResultEntry;
    response.search_entry.object_name = entry->dn;
    append_attributes(*entry, base_ndn, selection, *access_, who, search.types_only,
                      response.search_entry.attributes);
    sink.send(response);
  }
  send_result(request, OwnedResult::success(), sink);
  return true;
}

void OperationHandler::search(const LdapMessage& request, ServerSession& session,
                              listener::ResponseSink& sink) const {
  const SearchRequest& search = request.search_request;
  // A per-thread copy: copying into it reuses its strings, so this allocates nothing once warm.
  thread_local Identity who_copy;
  session.copy_identity(who_copy);
  const Identity& who = who_copy;

  PagedRequest paged;
  if (std::optional<OwnedResult> bad = parse_paged(request, paged); bad.has_value()) {
    send_result(request, *bad, sink);
    return;
  }
  // Views the per-thread cache, which nothing below refills.
  const Result<std::string_view> base_ndn = normalize_dn_cached(search.base_object);
  if (!base_ndn.ok()) {
    send_result(request, OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid DN"), sink);
    return;
  }
  if (search_monitor(request, who, *base_ndn, sink)) {
    return;
  }
  const DirectoryGroups groups(*this);
  const Requester asker = requester(who, groups);
  if (search_special(request, asker, *base_ndn, sink)) {
    return;
  }
  if (!discloses(asker, search.base_object)) {
    // As slapd: a base the client may not know of is missing, and nothing above it is named.
    send_result(request, OwnedResult::error(ResultCode::kNoSuchObject, ""), sink);
    return;
  }

  // Limits: the smaller of the client's and the server's for this identity class.
  const std::uint64_t server_size_limit = who.root          ? options_.size_limit_root
                                          : who.anonymous() ? options_.size_limit_anonymous
                                                            : options_.size_limit_users;
  const std::uint64_t size_limit =
      min_limit(server_size_limit, static_cast<std::uint64_t>(std::max(search.size_limit, 0)));
  const std::uint64_t time_limit_s =
      min_limit(who.root ? 0 : options_.time_limit_s,
                static_cast<std::uint64_t>(std::max(search.time_limit, 0)));

  // Paged results: where the previous page stopped.
  std::uint64_t skip = 0;
  std::string signature;
  std::string done_control_value;
  LdapMessage done;
  done.message_id = request.message_id;
  done.op = ProtocolOp::kSearchResultDone;
  if (paged.present) {
    signature = search_signature(search);
    if (!paged.cookie.empty()) {
      const std::optional<std::uint64_t> id = decode_cookie(paged.cookie);
      std::optional<PagedPosition> position =
          id.has_value() ? session.take_paged(*id) : std::nullopt;
      if (!position.has_value() || position->signature != signature) {
        send_result(
            request,
            OwnedResult::error(ResultCode::kProtocolError, "paged results cookie is invalid"),
            sink);
        return;
      }
      skip = position->returned;
    }
    if (paged.size == 0) {
      // RFC 2696 §3: size 0 abandons the paged search (its position is already forgotten).
      done_control_value = paged_response_value("");
      done.controls.push_back({kPagedResultsOid, false, done_control_value});
      sink.send(done);
      return;
    }
  }

  // Matching-rule-only extensible items test every attribute the rule applies to: only the
  // rootdn may use them (made Undefined for anyone else). Items on attributes the client may
  // not search are made Undefined entry by entry below, as slapd evaluates them.
  const auto typeless = [&](const schema::FilterNode& node) {
    return node.kind == schema::FilterKind::kExtensible && node.attribute.empty() && !who.root;
  };
  const schema::Filter* filter = &search.filter;
  schema::Filter restricted;
  if (std::any_of(search.filter.nodes().begin(), search.filter.nodes().end(), typeless)) {
    copy_restricted(search.filter, 0, restricted, typeless);
    filter = &restricted;
  }

  backend::SearchSpec spec;
  // The base goes through a per-thread string (swapped in and back out) to keep its capacity.
  thread_local std::string base_buffer;
  spec.base.swap(base_buffer);
  spec.base.assign(search.base_object);
  spec.scope = backend_scope(search.scope);
  spec.filter = filter;
  if (time_limit_s != 0) {
    spec.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(time_limit_s);
  }

  const AttributeSelection selection(search.attributes, catalog_);
  // Under the default policy only `self` clauses look at the entry's DN; rules may look at it,
  // and at the entry itself (filters).
  const bool ndn_matters = !access_->is_default() || (!who.anonymous() && !who.root);
  const bool content_matters = access_->needs_entry();
  // The items of the filter on a type, for the per-entry search right (typeless ones are
  // already the rootdn's alone).
  std::vector<const schema::AttributeType*> item_types;
  for (const schema::FilterNode& node : filter->nodes()) {
    if (is_item(node.kind) && !node.attribute.empty()) {
      item_types.push_back(attribute_type(node.attribute));
    }
  }
  LdapMessage response;
  response.message_id = request.message_id;
  response.op = ProtocolOp::kSearchResultEntry;
  std::uint64_t seen = 0;
  std::uint64_t returned = skip;  // By this search, earlier pages included.
  std::uint64_t page = 0;
  bool size_exceeded = false;
  bool page_full = false;
  bool abandoned = false;
  std::string entry_ndn;
  const auto on_entry = [&](const backend::EntryRef& entry) {
    if (sink.abandoned()) {
      abandoned = true;
      return false;
    }
    entry_ndn.clear();
    if (ndn_matters && !entry.normalized_dn(entry_ndn)) {
      if (!normalize_dn_into(entry.dn(), entry_ndn).ok()) {
        entry_ndn.clear();
      }
    }
    schema::Entry decoded;  // Lives until the entry is sent: the response views it.
    bool have_decoded = false;
    if (content_matters) {
      decoded = entry.materialize();
      have_decoded = true;
    }
    const AccessEntry target{entry_ndn, have_decoded ? &decoded : nullptr};
    if (!access_->allows(asker, target, AccessAttribute::entry(), AccessLevel::kRead)) {
      return true;  // Silently left out, as an entry the client may not see.
    }
    const bool items_denied =
        std::any_of(item_types.begin(), item_types.end(), [&](const schema::AttributeType* type) {
          return type != nullptr &&
                 !access_->allows(asker, target, AccessAttribute::of(type), AccessLevel::kSearch);
        });
    if (items_denied) {
      // The backend matched with every item; match again with the denied ones Undefined.
      // Undefined never turns a non-match into a match, so the backend's candidates suffice.
      if (!have_decoded) {
        decoded = entry.materialize();
        have_decoded = true;
      }
      const AccessEntry full{entry_ndn, &decoded};
      schema::Filter per_entry;
      copy_restricted(*filter, 0, per_entry, [&](const schema::FilterNode& node) {
        if (!is_item(node.kind) || node.attribute.empty()) {
          return false;
        }
        const schema::AttributeType* type = attribute_type(node.attribute);
        return type != nullptr &&
               !access_->allows(asker, full, AccessAttribute::of(type), AccessLevel::kSearch);
      });
      if (!backend::EntryFilter(per_entry, catalog_).matches(decoded)) {
        return true;
      }
    }
    if (seen++ < skip) {
      return true;
    }
    if (size_limit != 0 && returned >= size_limit) {
      size_exceeded = true;
      return false;
    }
    if (paged.present && page >= static_cast<std::uint64_t>(paged.size)) {
      page_full = true;
      return false;
    }
    response.search_entry.object_name = entry.dn();
    response.search_entry.attributes.clear();
    if (!selection.selects_nothing()) {
      if (!have_decoded) {
        decoded = entry.materialize();
      }
      append_attributes(decoded, entry_ndn, selection, *access_, asker, search.types_only,
                        response.search_entry.attributes);
    }
    sink.send(response);
    ++returned;
    ++page;
    return true;
  };
  // std::ref: the std::function holds a pointer to the lambda instead of a heap copy of it.
  const Status status = directory_.search(read_txn(), spec, std::ref(on_entry));
  base_buffer.swap(spec.base);
  if (abandoned || sink.abandoned()) {
    return;  // RFC 4511 §4.11: an abandoned operation gets no response.
  }
  OwnedResult result;
  if (!status.ok()) {
    result = result_from_status(status);
    if (result.code == ResultCode::kOther) {
      send_status(request, status, sink);  // Logs it.
      return;
    }
  } else if (size_exceeded) {
    result = OwnedResult::error(ResultCode::kSizeLimitExceeded, "");
  }
  if (result.code == ResultCode::kNoSuchObject && !result.matched_dn.empty() &&
      !discloses(asker, result.matched_dn)) {
    result.matched_dn.clear();
  }
  done.result.code = result.code;
  done.result.matched_dn = result.matched_dn;
  done.result.diagnostic_message = result.diagnostic;
  if (paged.present) {
    std::string cookie;
    if (page_full && status.ok()) {
      cookie = encode_cookie(session.save_paged(PagedPosition{std::move(signature), returned}));
    }
    done_control_value = paged_response_value(cookie);
    done.controls.push_back({kPagedResultsOid, false, done_control_value});
  }
  sink.send(done);
}

}  // namespace numadir::server
