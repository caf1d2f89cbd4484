// server/monitoring/monitor_search.cc: searches of the cn=Monitor subtree
// (server/monitoring/monitor.h). The entries are built from the counters when a search comes, then
// scoped and filtered here: each one is encoded as the backend stores entries so the backend's
// filter evaluation (every filter item, ordering and substrings included) applies to it unchanged.
//
// Access: the subtree exists for the rootdn only. Anyone else gets noSuchObject, exactly as for
// a name nothing holds, so the monitor does not even disclose that it exists.
#include <string>
#include <vector>

#include "backend/entry_codec.h"
#include "backend/filter_eval.h"
#include "backend/operational.h"
#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"
#include "server/monitoring/monitor.h"
#include "server/operations/attribute_selection.h"
#include "server/operations/operation_handler.h"
#include "server/operations/root_dse.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;
using listener::wire::SearchRequest;
using listener::wire::SearchScope;

namespace {

// Returns: true if normalized DN `ndn` is `base_ndn` or lies below it (`base_ndn` non-empty).
bool at_or_below(std::string_view ndn, std::string_view base_ndn) {
  if (ndn == base_ndn) {
    return true;
  }
  if (ndn.size() <= base_ndn.size() + 1 || !ndn.ends_with(base_ndn)) {
    return false;
  }
  // The separating comma must not be escaped: count the backslashes before it.
  std::size_t at = ndn.size() - base_ndn.size() - 1;
  if (ndn[at] != ',') {
    return false;
  }
  std::size_t backslashes = 0;
  while (at > 0 && ndn[at - 1] == '\\') {
    ++backslashes;
    --at;
  }
  return backslashes % 2 == 0;
}

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
      return at_or_below(entry.ndn, base_ndn);
    case SearchScope::kSubordinateSubtree:
      return entry.ndn != base_ndn && at_or_below(entry.ndn, base_ndn);
  }
  return false;
}

// Returns: the encoded realSearchControlValue of a last page (size 0, empty cookie; RFC 2696).
std::string last_page_control_value() {
  namespace ber = listener::wire::ber;
  listener::wire::BerWriter writer;
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kInteger, 0);
  writer.write_octets(ber::kOctetString, "");
  writer.end();
  return std::string(writer.view());
}

}  // namespace

OperationTotals OperationHandler::operation_totals() const { return operation_counters_.totals(); }

bool OperationHandler::search_monitor(const LdapMessage& request, const Identity& who,
                                      std::string_view base_ndn,
                                      listener::ResponseSink& sink) const {
  if (options_.monitor == nullptr || monitor_ndn_.empty() || base_ndn.empty() ||
      !at_or_below(base_ndn, monitor_ndn_)) {
    return false;
  }
  if (!who.root) {
    send_result(request, OwnedResult::error(ResultCode::kNoSuchObject, ""), sink);
    return true;
  }
  const SearchRequest& search = request.search_request;
  const std::vector<schema::Entry> entries =
      make_monitor_entries(options_.monitor->collect(operation_counters_.totals()));
  std::vector<ScopedEntry> scoped;
  scoped.reserve(entries.size());
  bool base_found = false;
  for (const schema::Entry& entry : entries) {
    Result<schema::Dn> dn = parse_dn(entry.dn);
    if (!dn.ok()) {
      continue;  // Cannot happen: the names are ours and the schema knows cn.
    }
    ScopedEntry item{&entry, dn->normalized(&dn_normalizer_),
                     dn->parent().normalized(&dn_normalizer_)};
    base_found = base_found || item.ndn == base_ndn;
    scoped.push_back(std::move(item));
  }
  if (!base_found) {
    // matchedDN: the deepest monitor entry above the base.
    std::string matched;
    std::size_t matched_size = 0;
    for (const ScopedEntry& item : scoped) {
      if (item.ndn.size() > matched_size && at_or_below(base_ndn, item.ndn)) {
        matched = item.entry->dn;
        matched_size = item.ndn.size();
      }
    }
    OwnedResult missing = OwnedResult::error(ResultCode::kNoSuchObject, "");
    missing.matched_dn = matched;
    send_result(request, missing, sink);
    return true;
  }

  const backend::OperationalTypes types(catalog_);
  backend::CompiledFilter filter;
  filter.compile(search.filter, catalog_, types);
  backend::FilterEvaluator evaluator;
  const AttributeSelection selection(search.attributes, catalog_);
  const std::uint64_t size_limit = search.size_limit > 0 ? search.size_limit : 0;
  std::uint64_t returned = 0;
  bool size_exceeded = false;
  std::string encoded;
  LdapMessage response;
  response.message_id = request.message_id;
  response.op = ProtocolOp::kSearchResultEntry;
  for (const ScopedEntry& item : scoped) {
    if (sink.abandoned()) {
      return true;  // RFC 4511 §4.11: no response.
    }
    if (!in_scope(item, base_ndn, search.scope)) {
      continue;
    }
    backend::encode_entry(backend::EntryHeader{0, item.entry->dn, ""}, item.entry->attributes,
                          encoded);
    Result<backend::EntryView> view = backend::EntryView::parse(encoded);
    Status error;
    if (!view.ok() || evaluator.evaluate(filter, *view, nullptr, &error) != backend::Tri::kTrue) {
      continue;
    }
    if (size_limit != 0 && returned >= size_limit) {
      size_exceeded = true;
      break;
    }
    response.search_entry.object_name = item.entry->dn;
    response.search_entry.attributes.clear();
    for (const schema::EntryAttribute& attribute : item.entry->attributes) {
      if (!selection.selects(attribute.description, selection.type_of(attribute.description))) {
        continue;
      }
      response.search_entry.attributes.add(attribute.description);
      if (!search.types_only) {
        for (const std::string& value : attribute.values) {
          response.search_entry.attributes.add_value(value);
        }
      }
    }
    sink.send(response);
    ++returned;
  }
  LdapMessage done;
  done.message_id = request.message_id;
  done.op = ProtocolOp::kSearchResultDone;
  if (size_exceeded) {
    done.result.code = ResultCode::kSizeLimitExceeded;
  }
  // Every entry fits one page: a paged search gets its last page at once.
  std::string control_value;
  for (const listener::wire::Control& control : request.controls) {
    if (control.type == kPagedResultsOid) {
      control_value = last_page_control_value();
      done.controls.push_back({kPagedResultsOid, false, control_value});
      break;
    }
  }
  sink.send(done);
  return true;
}

}  // namespace numadir::server
