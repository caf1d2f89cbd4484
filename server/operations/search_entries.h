// server/operations/search_entries.h: what a search returns of the entries the directory finds:
// the filter items the client may not use (made Undefined, as slapd evaluates them), each
// entry's access (read on the entry, search on the attributes the filter names), the size limit
// and the page, and the attributes selected and readable. SearchEntrySender is the callback the
// backend streams the entries to.
//
// Thread contract: made and used by the worker running one search, for that search alone.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "backend/directory.h"
#include "listener/wire/ldap_message.h"
#include "schema/entry.h"
#include "schema/filter.h"
#include "server/operations/access_control.h"
#include "server/operations/attribute_selection.h"
#include "server/operations/operation_access.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/search_paging.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

// Returns: `filter`, or a copy written to `restricted` in which every matching-rule-only
// extensible item is Undefined: such an item tests every attribute the rule applies to, so only
// the rootdn (`root`) may use one.
const schema::Filter& restrict_typeless_items(const schema::Filter& filter, bool root,
                                              schema::Filter& restricted);

// Appends the attributes of `entry` (normalized DN `entry_ndn`) that `selection` selects and
// `access` lets its requester read to `out` (their values too unless `types_only`), but none of
// the types in `omitted`.
// Returns: kFailed if a decision failed (then `out` must not be sent), kAllowed otherwise.
AccessDecision append_readable_attributes(
    const schema::Entry& entry, std::string_view entry_ndn, const AttributeSelection& selection,
    const OperationAccess& access, bool types_only, listener::wire::AttributeList& out,
    std::span<const schema::AttributeType* const> omitted = {});

class SearchEntrySender;

// What a sync search (RFC 4533: server/replication/sync_provider.h) makes of each entry its
// search finds that the requester may see: sent with its content, counted as present (the hook
// keeps its entryUUID for a syncIdSet), or left out (unchanged since the consumer's cookie).
class SearchEntryHook {
 public:
  enum class Action : std::uint8_t { kSend, kPresent, kSkip };
  virtual ~SearchEntryHook() = default;
  // Returns: what becomes of `entry` (a visible entry the size limit admitted).
  virtual Action classify(const backend::EntryRef& entry) = 0;
  // Adjusts the response of an entry classify() said to send, just before it is sent (its
  // controls: they must stay valid until the next classify; attributes left out).
  virtual void decorate(listener::wire::LdapMessage& response) = 0;
  // Returns: the attribute types never to send, whatever the selection (left out as the
  // attributes are picked, where decorate would look each one up by name). Views the hook.
  virtual std::span<const schema::AttributeType* const> omitted_types() const { return {}; }
};

// Sends the end of a directory search that ran to `status` through `sender`: nothing once it was
// abandoned; else the page's control and the SearchResultDone (sizeLimitExceeded when the
// entries stopped at the size limit; matchedDN cleared where the requester may not know of it;
// a storage error logged and answered `other`).
void send_search_done(const Status& status, const SearchEntrySender& entries,
                      const OperationAccess& access, SearchPage& page, ResultSender& sender);

class SearchEntrySender {
 public:
  // Where a search stands, for it to go on after a pause: the entries the backend delivered
  // (handled, sent or not), and the counts of visible entries (earlier pages' included),
  // returned ones and this page's. A search resumed in the same snapshot starts its scan again
  // at `resume`, the entry it paused at (SearchSpec::resume_at: the caller sets it); without
  // one (an EntryRef that cannot tell), it skips as many entries as were delivered.
  struct Progress {
    std::uint64_t delivered = 0;
    std::uint64_t seen = 0;
    std::uint64_t returned = 0;
    std::uint64_t in_page = 0;
    std::optional<backend::SearchPoint> resume;
  };

  // Sends the entries of `request` (whose filter, restricted, is `filter`) through `sender`, at
  // most `size_limit` of them (0: no limit), as `page` allows, from the start or from `from`
  // (a search paused before). When the connection stops being writable it pauses: it stops,
  // pinning `txn`'s snapshot (the transaction the search reads;
  // backend::Directory::pin_snapshot) once it has handled an entry. With `hook`, each entry
  // goes through it (SearchEntryHook). Everything given outlives it.
  SearchEntrySender(const OperationContext& context, const OperationAccess& access,
                    ServerWorkerState& state, const listener::wire::LdapMessage& request,
                    const schema::Filter& filter, std::uint64_t size_limit, const SearchPage& page,
                    ResultSender& sender, backend::ReadTxn& txn,
                    const std::optional<Progress>& from = std::nullopt,
                    SearchEntryHook* hook = nullptr);
  SearchEntrySender(const SearchEntrySender&) = delete;
  SearchEntrySender& operator=(const SearchEntrySender&) = delete;

  // The backend's callback: sends `entry` if the client may see it and the limits allow.
  // Returns: false to stop the search (abandoned, size limit or page reached, or an access
  //   decision failed: the entry is not sent, and the access's failure() ends the search).
  bool operator()(const backend::EntryRef& entry);

  bool abandoned() const { return abandoned_; }
  // The search stopped at the connection's output bound, its snapshot pinned: it is to go on
  // from progress() once the output drained.
  bool paused() const { return paused_; }
  // Paused with `txn`'s snapshot pinned (it had handled entries): it must go on in `txn`.
  bool pinned() const { return pinned_; }
  Progress progress() const { return Progress{delivered_, seen_, returned_, in_page_, resume_}; }
  bool size_exceeded() const { return size_exceeded_; }
  bool page_full() const { return page_full_; }
  // Entries this search returned, earlier pages included.
  std::uint64_t returned() const { return returned_; }

 private:
  // Returns: whether the requester may see `entry` at all: read on the entry, and the filter
  //   still true with the items it may not search Undefined (kFailed: a decision failed). May
  //   decode the entry into `decoded` (then sets `have_decoded`).
  AccessDecision visible(const backend::EntryRef& entry, schema::Entry& decoded,
                         bool& have_decoded);
  // Returns: whether the filter, with the items on types the requester may not search on this
  //   entry made Undefined, still matches it. Requires: some item is denied.
  bool matches_without_denied_items(const schema::Entry& decoded) const;
  // Counts a visible entry against the pages and the size limit. Returns: whether to send it
  //   (`stop` says whether to end the search instead).
  bool admit(bool& stop);
  // Returns: false, having sent nothing, when a decision on its attributes failed.
  bool send(const backend::EntryRef& entry, schema::Entry& decoded, bool have_decoded);

  const OperationContext& context_;
  const OperationAccess& access_;
  ServerWorkerState& state_;
  const listener::wire::SearchRequest& search_;
  const schema::Filter& filter_;
  const std::uint64_t size_limit_;
  const SearchPage& page_;
  ResultSender& sender_;
  backend::ReadTxn& txn_;
  SearchEntryHook* const hook_;  // nullptr: a plain search.
  const AttributeSelection selection_;
  // Under the default policy only `self` clauses look at the entry's DN; rules may look at it,
  // and at the entry itself (filters).
  const bool ndn_matters_;
  const bool content_matters_;
  // The schema types of the filter's items on a type (typeless ones are the rootdn's alone):
  // the per-entry search right is checked for each. Views state_.item_types.
  const std::vector<const schema::AttributeType*>& item_types_;
  listener::wire::LdapMessage response_;  // Reused for every entry.
  std::uint64_t delivered_ = 0;           // Entries the backend delivered, skipped ones included.
  std::uint64_t skip_ = 0;                // Deliveries still to skip: handled before the pause.
  std::optional<backend::SearchPoint> resume_;  // Paused: the entry to go on from.
  std::uint64_t seen_ = 0;                      // Visible entries, earlier pages' included.
  std::uint64_t returned_ = 0;
  std::uint64_t in_page_ = 0;  // Entries of this page.
  bool abandoned_ = false;
  bool paused_ = false;
  bool pinned_ = false;
  bool size_exceeded_ = false;
  bool page_full_ = false;
};

}  // namespace numadir::server
