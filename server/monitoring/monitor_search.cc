// server/monitoring/monitor_search.cc: see monitor_search.h.
#include "server/monitoring/monitor_search.h"

#include <algorithm>
#include <string>
#include <vector>

#include "backend/entry_filter.h"
#include "server/monitoring/monitor.h"
#include "server/operations/attribute_selection.h"
#include "server/operations/root_dse.h"
#include "server/operations/search_paging.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;
using listener::wire::SearchRequest;
using listener::wire::SearchScope;

namespace {

// A monitor entry with its normalized DN and its parent's.
struct ScopedEntry {
  const schema::Entry* entry;
  std::string ndn;
  std::string parent_ndn;
};

bool in_scope(const ScopedEntry& entry, std::string_view base_ndn, SearchScope scope) {
  switch (scope) {
    case SearchScope::kBaseObject:
      return entry.ndn == base_ndn;
    case SearchScope::kSingleLevel:
      return entry.parent_ndn == base_ndn;
    case SearchScope::kWholeSubtree:
      return ndn_at_or_below(entry.ndn, base_ndn);
    case SearchScope::kSubordinateSubtree:
      return entry.ndn != base_ndn && ndn_at_or_below(entry.ndn, base_ndn);
  }
  return false;
}

// Returns: `entries` with their normalized DNs.
std::vector<ScopedEntry> scoped_entries(const std::vector<schema::Entry>& entries,
                                        const OperationContext& context) {
  std::vector<ScopedEntry> scoped;
  scoped.reserve(entries.size());
  for (const schema::Entry& entry : entries) {
    Result<schema::Dn> dn = context.parse_dn(entry.dn);
    if (!dn.ok()) {
      continue;  // Cannot happen: the names are ours and the schema knows cn.
    }
    scoped.push_back(ScopedEntry{&entry, dn->normalized(&context.dn_normalizer()),
                                 dn->parent().normalized(&context.dn_normalizer())});
  }
  return scoped;
}

// Returns: noSuchObject for `base_ndn`, whose matchedDN is the deepest monitor entry above it.
OwnedResult missing_base(const std::vector<ScopedEntry>& scoped, std::string_view base_ndn) {
  OwnedResult missing = OwnedResult::error(ResultCode::kNoSuchObject, "");
  std::size_t matched_size = 0;
  for (const ScopedEntry& item : scoped) {
    if (item.ndn.size() > matched_size && ndn_at_or_below(base_ndn, item.ndn)) {
      missing.matched_dn = item.entry->dn;
      matched_size = item.ndn.size();
    }
  }
  return missing;
}

// Appends the attributes of `entry` that `selection` selects to `out`.
void append_selected(const schema::Entry& entry, const AttributeSelection& selection,
                     bool types_only, listener::wire::AttributeList& out) {
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    if (!selection.selects(attribute.description, selection.type_of(attribute.description))) {
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

bool MonitorSearch::run(const LdapMessage& request, const Identity& who, std::string_view base_ndn,
                        ServerWorkerState& state, ResultSender& sender) const {
  const Monitor* monitor = context_.options().monitor;
  if (monitor == nullptr || context_.monitor_ndn().empty() || base_ndn.empty() ||
      !ndn_at_or_below(base_ndn, context_.monitor_ndn())) {
    return false;
  }
  if (!who.root) {
    sender.send_result(OwnedResult::error(ResultCode::kNoSuchObject, ""));
    return true;
  }
  const SearchRequest& search = request.search_request;
  MonitorData data = monitor->collect(counters_.totals());
  data.writer = context_.directory().writer_stats();
  const std::vector<schema::Entry> entries = make_monitor_entries(data);
  const std::vector<ScopedEntry> scoped = scoped_entries(entries, context_);
  if (std::none_of(scoped.begin(), scoped.end(),
                   [&](const ScopedEntry& item) { return item.ndn == base_ndn; })) {
    sender.send_result(missing_base(scoped, base_ndn));
    return true;
  }
  const backend::EntryFilter filter(search.filter, context_.catalog());
  const AttributeSelection selection(search.attributes, context_.catalog());
  const std::uint64_t size_limit = search.size_limit > 0 ? search.size_limit : 0;
  std::uint64_t returned = 0;
  bool size_exceeded = false;
  LdapMessage response;
  response.op = ProtocolOp::kSearchResultEntry;
  for (const ScopedEntry& item : scoped) {
    if (sender.abandoned()) {
      return true;  // RFC 4511 §4.11: no response.
    }
    if (!in_scope(item, base_ndn, search.scope) || !filter.matches(*item.entry, state.filter)) {
      continue;
    }
    if (size_limit != 0 && returned >= size_limit) {
      size_exceeded = true;
      break;
    }
    response.search_entry.object_name = item.entry->dn;
    response.search_entry.attributes.clear();
    append_selected(*item.entry, selection, search.types_only, response.search_entry.attributes);
    sender.send_entry(response);
    ++returned;
  }
  // Every entry fits one page: a paged search gets its last page at once.
  for (const listener::wire::Control& control : request.controls) {
    if (control.type == kPagedResultsOid) {
      add_paged_control(sender, "");
      break;
    }
  }
  sender.send_result(size_exceeded ? OwnedResult::error(ResultCode::kSizeLimitExceeded, "")
                                   : OwnedResult::success());
  return true;
}

}  // namespace numadir::server
