// server/replication/sync_provider.cc: see sync_provider.h.
#include "server/replication/sync_provider.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "backend/change_feed.h"
#include "server/operations/search_entries.h"
#include "server/operations/search_operation.h"
#include "server/operations/search_paging.h"
#include "server/operations/search_pause.h"
#include "server/operations/search_scope.h"
#include "server/replication/sync_protocol.h"

namespace numadir::server::replication {

using listener::wire::Control;
using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;
using listener::wire::SearchScope;

namespace {

// UUIDs per syncIdSet message (slapd's SLAP_SYNCUUID_SET_SIZE).
constexpr std::size_t kIdSetSize = 256;
// Changes one run of a persist drain sends before it lets the worker go (it goes on at once
// when the output has room: the connection runs it again on a worker).
constexpr std::size_t kChangesPerRun = 256;
// The refresh's messages go to the connection in writes of about this many bytes (about 80
// entries of a user directory), not one write per entry: a consumer takes the whole refresh
// as fast as it can, and one send and one receive per entry cost the provider 13% of its CPU
// and the consumer a wake-up per segment. The persist phase sends each change as it comes.
constexpr std::size_t kRefreshGatherBytes = 64 * 1024;

// How the refresh phase treats the entries, from the cookie the consumer sent.
enum class Phase : std::uint8_t {
  kFull,       // No usable cookie: every entry.
  kDelta,      // Covered by the session log: the newer entries, then the deleted ones' UUIDs.
  kPresent,    // Not covered: the newer entries, and the UUIDs of the others.
  kUnchanged,  // The cookie is the contextCSN: nothing.
};

const Control* find_sync_control(const LdapMessage& request) {
  for (const Control& control : request.controls) {
    if (control.type == kSyncRequestOid) {
      return &control;
    }
  }
  return nullptr;
}

// Returns: whether normalized DN `ndn` is in the scope `scope` of normalized base `base`.
bool in_scope(std::string_view ndn, std::string_view base, SearchScope scope) {
  switch (scope) {
    case SearchScope::kBaseObject:
      return ndn == base;
    case SearchScope::kSingleLevel:
      return ndn != base && ndn_at_or_below(ndn, base) &&
             schema::first_rdn_separator(ndn) + 1 + base.size() == ndn.size();
    case SearchScope::kWholeSubtree:
      return base.empty() || ndn_at_or_below(ndn, base);
    case SearchScope::kSubordinateSubtree:
      return ndn != base && ndn_at_or_below(ndn, base);
  }
  return false;
}

SyncUuid uuid_of(std::string_view text) {
  const std::optional<SyncUuid> uuid = parse_uuid(text);
  return uuid.has_value() ? *uuid : SyncUuid{};
}

std::chrono::system_clock::time_point now() { return std::chrono::system_clock::now(); }

}  // namespace

// One sync search being served. Shared: the provider's list holds it while it is open, and the
// callbacks it gives the connection (resume) hold it while they wait; the change feed's
// callback holds only a weak reference.
class SyncSearch final : public std::enable_shared_from_this<SyncSearch>, private SearchEntryHook {
 public:
  SyncSearch(SyncProvider& provider, const OperationContext& context, const Identity& who,
             ServerSession& session, const LdapMessage& request, SyncMode mode,
             std::optional<int> rid)
      : provider_(provider),
        context_(context),
        who_(who),
        session_(session),
        mode_(mode),
        rid_(rid),
        since_(now()) {
    copy_request(request, pdu_, request_);
    omitted_ = {context.attribute_type("entryDN"), context.attribute_type("hasSubordinates"),
                context.attribute_type("numSubordinates"),
                context.attribute_type("subschemaSubentry"), context.attribute_type("contextCSN")};
  }

  bool persist() const { return mode_ == SyncMode::kRefreshAndPersist; }

  // Subscribes to the change feed (before the refresh's snapshot is taken).
  void subscribe() {
    std::weak_ptr<SyncSearch> weak = weak_from_this();
    subscription_ = provider_.directory_.subscribe_changes(
        [weak = std::move(weak)](const backend::ChangeRecord& record) {
          if (std::shared_ptr<SyncSearch> self = weak.lock()) {
            self->on_change(record);
          }
        });
  }

  // Sets how the refresh goes: `phase`, the consumer's CSN, the cookie to end it with.
  void plan(Phase phase, std::string cookie_csn, std::string context_csn,
            std::vector<std::string> deleted) {
    phase_ = phase;
    cookie_csn_ = std::move(cookie_csn);
    refresh_csn_ = std::move(context_csn);
    deleted_ = std::move(deleted);
  }

  // Keeps the operation open through `open` and runs the refresh (on this worker).
  void start(std::unique_ptr<listener::OpenOperation> open, ServerWorkerState& state) {
    open_ = std::move(open);
    std::weak_ptr<SyncSearch> weak = weak_from_this();
    open_->set_on_end([weak = std::move(weak)] {
      if (std::shared_ptr<SyncSearch> self = weak.lock()) {
        self->end();
      }
    });
    // The search normalized it before it came here.
    const Result<std::string_view> base =
        context_.normalize_dn_cached(request_.search_request.base_object, state.dn);
    base_ndn_ = base.ok() ? std::string(*base) : std::string();
    open_->set_gather_bytes(kRefreshGatherBytes);  // Until end_refresh.
    refresh(state);
  }

  // The change feed's callback (the writer thread): queues, never waits.
  void on_change(const backend::ChangeRecord& record) {
    bool schedule = false;
    {
      MutexLock lock(mu_);
      if (ended_ || overflowed_) {
        return;
      }
      if (queue_.size() >= provider_.options_.queue_changes) {
        overflowed_ = true;
        queue_.clear();
      } else {
        queue_.push_back(record);
      }
      schedule = !scheduled_ && !refreshing_;
      scheduled_ = scheduled_ || schedule;
    }
    if (schedule) {
      wait_for_room();
    }
  }

  ProviderConsumerStatus status() const {
    ProviderConsumerStatus status;
    status.connection_id = session_.info().id;
    status.message_id = request_.message_id;
    status.peer = session_.info().peer;
    status.identity = who_.dn;
    status.rid = rid_.value_or(-1);
    status.persist = persist();
    status.base = std::string(request_.search_request.base_object);
    status.since = since_;
    status.queue_capacity = provider_.options_.queue_changes;
    MutexLock lock(mu_);
    status.refreshing = refreshing_;
    status.entries_sent = entries_sent_;
    status.changes_sent = changes_sent_;
    status.queue_depth = queue_.size();
    status.last_csn = last_csn_;
    return status;
  }

 private:
  // What classify() made of the entry decorate() completes.
  struct Pending {
    SyncStateKind state = SyncStateKind::kAdd;
    SyncUuid uuid{};
    std::optional<std::string> cookie;
  };

  // The listener ended the operation (abandon, unbind, close, stop).
  void end() {
    {
      MutexLock lock(mu_);
      ended_ = true;
      queue_.clear();
    }
    provider_.remove(this);
  }

  // Asks to run drain() on a worker once the connection takes output.
  void wait_for_room() {
    open_->set_on_writable([self = shared_from_this()](threadpool::WorkerState& state) {
      // The pool's worker states are the handler's (OperationHandler::make_worker_state).
      self->drain(static_cast<ServerWorkerState&>(state));
    });
  }

  // Searches `base` (its scope, or the base alone for one change) with the request's filter,
  // the entries going through this hook. Returns: the search's status; `entries` says what it
  // sent.
  Status search(ServerWorkerState& state, ResultSender& sender, const OperationAccess& access,
                backend::ReadTxn& txn, std::string_view base, backend::Scope scope,
                std::uint64_t size_limit, std::optional<SearchEntrySender::Progress> progress,
                SearchPage& page, std::optional<SearchEntrySender>& entries) {
    // A member: the entry sender keeps a reference to the filter.
    const schema::Filter& filter =
        restrict_typeless_items(request_.search_request.filter, who_.root, restricted_);
    backend::SearchSpec spec;
    spec.base.assign(base);
    spec.scope = scope;
    spec.filter = &filter;
    if (progress.has_value()) {
      spec.resume_at = progress->resume;  // A refresh going on where it paused.
    }
    SearchEntryHook* const hook = this;  // A private base: converted here, where it is visible.
    entries.emplace(context_, access, state, request_, filter, size_limit, page, sender, txn,
                    progress, hook);
    return context_.directory().search(txn, spec, std::ref(*entries));
  }

  // The refresh phase, from where it stopped (a pause at the connection's output bound).
  void refresh(ServerWorkerState& state) {
    OpenOperationSink sink(*open_);
    ResultSender sender(request_, sink);
    if (sender.abandoned()) {
      return;  // end() removes it.
    }
    const OperationAccess access(context_, state, who_);
    PagedRequest unpaged;
    SearchPage page(unpaged, session_);
    backend::ReadTxn& txn = txn_ != nullptr ? *txn_ : state.txn();
    sender_ = &sender;
    Status status;
    std::optional<SearchEntrySender> entries;
    if (phase_ != Phase::kUnchanged) {
      // The consumer's own size limit only: numadir's limits are per identity class, not per
      // identity, and a replication identity must get every entry it may read (slapd's sites
      // give theirs `limits ... size=unlimited`). Access control decides what is replicated.
      const std::uint64_t size_limit =
          static_cast<std::uint64_t>(std::max(request_.search_request.size_limit, 0));
      status = search(state, sender, access, txn, request_.search_request.base_object,
                      backend_scope(request_.search_request.scope), size_limit, progress_, page,
                      entries);
    }
    if (entries.has_value() && entries->paused()) {
      progress_ = entries->progress();
      if (entries->pinned() && txn_ == nullptr) {
        txn_ = state.take_txn();
      }
      sender_ = nullptr;
      open_->set_on_writable([self = shared_from_this()](threadpool::WorkerState& worker) {
        self->refresh(static_cast<ServerWorkerState&>(worker));
      });
      return;
    }
    txn_.reset();
    flush_present(sender);
    sender_ = nullptr;
    if (entries.has_value() &&
        (!status.ok() || entries->size_exceeded() || entries->abandoned() || access.failed())) {
      send_search_done(status, *entries, access, page, sender);
      provider_.remove(this);
      return;
    }
    if (sender.abandoned()) {
      return;
    }
    end_refresh(sender);
  }

  // Sends what ends the refresh phase; ends a refreshOnly search, or turns to persist.
  void end_refresh(ResultSender& sender) {
    if (!deleted_.empty()) {
      std::vector<SyncUuid> uuids;
      for (std::size_t i = 0; i < deleted_.size(); ++i) {
        uuids.push_back(uuid_of(deleted_[i]));
        if (uuids.size() == kIdSetSize || i + 1 == deleted_.size()) {
          sender.send_intermediate(kSyncInfoOid,
                                   encode_sync_info_id_set(std::nullopt, true, uuids));
          uuids.clear();
        }
      }
      deleted_.clear();
    }
    std::optional<std::string> cookie;
    if (phase_ != Phase::kUnchanged && !refresh_csn_.empty()) {
      cookie = compose_sync_cookie(rid_, provider_.options_.server_id, refresh_csn_);
    }
    const bool presents = phase_ == Phase::kPresent;
    if (!persist()) {
      sender.add_response_control(kSyncDoneOid, false, encode_sync_done(cookie, !presents));
      sender.send_result(OwnedResult::success());
      note_cookie_sent();
      provider_.remove(this);
      return;
    }
    sender.send_intermediate(
        kSyncInfoOid,
        encode_sync_info_refresh(
            presents ? SyncInfoKind::kRefreshPresent : SyncInfoKind::kRefreshDelete, cookie, true));
    open_->set_gather_bytes(0);  // The refresh's last messages go out; each change from now on.
    note_cookie_sent();
    bool pending = false;
    {
      MutexLock lock(mu_);
      refreshing_ = false;
      pending = !queue_.empty() || overflowed_;
      scheduled_ = pending;
    }
    if (pending) {
      wait_for_room();
    }
  }

  void note_cookie_sent() {
    MutexLock lock(mu_);
    if (!refresh_csn_.empty()) {
      last_csn_ = refresh_csn_;
    }
  }

  // Sends the queued changes while the connection takes output (persist phase).
  void drain(ServerWorkerState& state) {
    OpenOperationSink sink(*open_);
    ResultSender sender(request_, sink);
    for (std::size_t sent = 0;; ++sent) {
      if (sender.abandoned()) {
        return;
      }
      if (sent == kChangesPerRun || !sender.writable()) {
        wait_for_room();  // Still scheduled: goes on once there is room.
        return;
      }
      backend::ChangeRecord record;
      bool fell_behind = false;
      {
        MutexLock lock(mu_);
        if (ended_) {
          return;
        }
        if (overflowed_) {
          fell_behind = true;
          ended_ = true;  // The writer queues nothing more.
        } else if (queue_.empty()) {
          scheduled_ = false;
          return;
        } else {
          record = std::move(queue_.front());
          queue_.pop_front();
        }
      }
      if (fell_behind) {
        end_fallen_behind(sender);
        return;
      }
      if (!send_change(record, state, sender)) {
        // The connection filled up before the change went out: it goes first next time.
        {
          MutexLock lock(mu_);
          queue_.push_front(std::move(record));
        }
        wait_for_room();
        return;
      }
    }
  }

  // Ends the search whose queue overflowed: busy, which the consumer resumes from by its cookie.
  void end_fallen_behind(ResultSender& sender) {
    provider_.fell_behind_.fetch_add(1, std::memory_order_relaxed);
    sender.send_result(OwnedResult::error(
        ResultCode::kBusy, "the consumer fell behind: more than " +
                               std::to_string(provider_.options_.queue_changes) +
                               " changes waited to be sent; resume with the last cookie"));
    provider_.remove(this);
  }

  // Sends one committed change. Returns: false when the connection's output filled before it
  // went (nothing sent: send it again later).
  bool send_change(const backend::ChangeRecord& record, ServerWorkerState& state,
                   ResultSender& sender) {
    const std::string cookie = compose_sync_cookie(rid_, provider_.options_.server_id, record.csn);
    std::string old_ndn;
    const bool was_in = context_.normalize_dn_into(record.dn, old_ndn, state.dn).ok() &&
                        in_scope(old_ndn, base_ndn_, request_.search_request.scope);
    bool sent = false;
    if (record.kind != backend::ChangeKind::kDelete) {
      // The entry goes out under its DN as of the change, for the consumer applies the changes in
      // order (an entry added under a parent renamed since is added where the parent still is
      // on the consumer, then moved with it), with its content of now, found by its id.
      const std::string& dn =
          record.kind == backend::ChangeKind::kRename ? record.new_dn : record.dn;
      std::string ndn;
      const bool is_in = context_.normalize_dn_into(dn, ndn, state.dn).ok() &&
                         in_scope(ndn, base_ndn_, request_.search_request.scope);
      std::string current_dn;
      if (is_in) {
        const Status found = context_.directory().lookup_id(
            state.txn(), record.entry_id,
            [&](const backend::EntryRef& entry) { current_dn.assign(entry.dn()); });
        if (found.code() == StatusCode::kNoSuchObject) {
          note_change(record.csn, false);
          return true;  // Deleted since: its delete follows in the queue.
        }
      }
      if (is_in && !current_dn.empty()) {
        const OperationAccess access(context_, state, who_);
        PagedRequest unpaged;
        SearchPage page(unpaged, session_);
        change_state_ =
            record.kind == backend::ChangeKind::kAdd ? SyncStateKind::kAdd : SyncStateKind::kModify;
        change_cookie_ = &cookie;
        change_dn_ = &dn;
        std::optional<SearchEntrySender> entries;
        (void)search(state, sender, access, state.txn(), current_dn, backend::Scope::kBase, 0,
                     std::nullopt, page, entries);
        change_cookie_ = nullptr;
        change_dn_ = nullptr;
        if (entries->paused()) {
          return false;
        }
        sent = entries->returned() > 0;
      }
      if (!sent && (record.kind == backend::ChangeKind::kAdd || !(was_in || is_in))) {
        note_change(record.csn, false);
        return true;  // Nothing the consumer holds or should hold.
      }
    } else if (!was_in) {
      note_change(record.csn, false);
      return true;
    }
    if (!sent) {
      // Deleted, or out of the consumer's content now: it goes.
      LdapMessage entry;
      entry.op = ProtocolOp::kSearchResultEntry;
      entry.search_entry.object_name = record.dn;
      const std::string value =
          encode_sync_state(SyncStateKind::kDelete, uuid_of(record.entry_uuid), cookie);
      entry.controls.push_back(Control{kSyncStateOid, false, value});
      sender.send_entry(entry);
    }
    note_change(record.csn, true);
    return true;
  }

  void note_change(const std::string& csn, bool sent) {
    MutexLock lock(mu_);
    last_csn_ = csn;
    if (sent) {
      ++changes_sent_;
    }
  }

  // Sends the UUIDs the present phase gathered (a syncIdSet without refreshDeletes).
  void flush_present(ResultSender& sender) {
    if (present_.empty()) {
      return;
    }
    sender.send_intermediate(kSyncInfoOid, encode_sync_info_id_set(std::nullopt, false, present_));
    present_.clear();
  }

  // SearchEntryHook: what becomes of an entry the search found.
  Action classify(const backend::EntryRef& entry) override {
    static constexpr std::array<std::string_view, 2> kTypes = {"entryCSN", "entryUUID"};
    entry.values_of_types(kTypes, values_);
    const std::string_view csn = values_[0].empty() ? std::string_view() : values_[0][0];
    pending_.uuid = values_[1].empty() ? SyncUuid{} : uuid_of(values_[1][0]);
    if (change_cookie_ != nullptr) {  // One change of the persist phase.
      pending_.state = change_state_;
      pending_.cookie = *change_cookie_;
      return Action::kSend;
    }
    pending_.state = SyncStateKind::kAdd;
    pending_.cookie.reset();
    if (phase_ == Phase::kFull || csn > cookie_csn_) {
      MutexLock lock(mu_);
      ++entries_sent_;
      return Action::kSend;
    }
    if (phase_ != Phase::kPresent) {
      return Action::kSkip;
    }
    present_.push_back(pending_.uuid);
    {
      MutexLock lock(mu_);
      ++entries_sent_;
    }
    if (present_.size() == kIdSetSize && sender_ != nullptr) {
      flush_present(*sender_);
    }
    return Action::kPresent;
  }

  // The computed attributes are left out as the entry's attributes are picked.
  std::span<const schema::AttributeType* const> omitted_types() const override { return omitted_; }

  void decorate(LdapMessage& response) override {
    if (change_dn_ != nullptr) {
      response.search_entry.object_name = *change_dn_;
    }
    state_value_ = encode_sync_state(pending_.state, pending_.uuid, pending_.cookie);
    response.controls.clear();
    response.controls.push_back(Control{kSyncStateOid, false, state_value_});
  }

  SyncProvider& provider_;
  const OperationContext& context_;
  const Identity who_;
  ServerSession& session_;
  const SyncMode mode_;
  const std::optional<int> rid_;
  const std::chrono::system_clock::time_point since_;
  std::string pdu_;
  LdapMessage request_;        // Views pdu_.
  schema::Filter restricted_;  // The filter without typeless items (restrict_typeless_items).
  // The computed attributes, never sent: each server computes its own.
  std::array<const schema::AttributeType*, 5> omitted_{};

  // Owner: the thread running the search's part of the moment (start, refresh, drain: one at a
  // time, as the connection runs each resume once).
  std::unique_ptr<listener::OpenOperation> open_;
  std::string base_ndn_;
  Phase phase_ = Phase::kFull;
  std::string cookie_csn_;
  std::string refresh_csn_;
  std::vector<std::string> deleted_;
  std::vector<SyncUuid> present_;
  SearchEntrySender::Progress progress_;
  std::unique_ptr<backend::ReadTxn> txn_;  // Pinned by a paused refresh.
  ResultSender* sender_ = nullptr;         // The refresh's, while it runs.
  SyncStateKind change_state_ = SyncStateKind::kAdd;
  const std::string* change_cookie_ = nullptr;  // Set while one change is sent,
  const std::string* change_dn_ = nullptr;      // with the DN it goes out under.
  Pending pending_;
  std::string state_value_;
  std::vector<std::vector<std::string_view>> values_ =
      std::vector<std::vector<std::string_view>>(2);
  std::unique_ptr<backend::ChangeSubscription> subscription_;  // Set before the refresh.

  mutable Mutex mu_;
  std::deque<backend::ChangeRecord> queue_ NUMADIR_GUARDED_BY(mu_);
  bool refreshing_ NUMADIR_GUARDED_BY(mu_) = true;
  bool scheduled_ NUMADIR_GUARDED_BY(mu_) = false;  // A drain runs or waits for room.
  bool overflowed_ NUMADIR_GUARDED_BY(mu_) = false;
  bool ended_ NUMADIR_GUARDED_BY(mu_) = false;
  std::uint64_t entries_sent_ NUMADIR_GUARDED_BY(mu_) = 0;
  std::uint64_t changes_sent_ NUMADIR_GUARDED_BY(mu_) = 0;
  std::string last_csn_ NUMADIR_GUARDED_BY(mu_);
};

SyncProvider::SyncProvider(backend::Directory& directory, SyncProviderOptions options)
    : directory_(directory), options_(options) {}

SyncProvider::~SyncProvider() {
  std::vector<std::shared_ptr<SyncSearch>> left;
  {
    MutexLock lock(mu_);
    left.swap(searches_);
  }
}

bool SyncProvider::serves(const Control& control) const { return control.type == kSyncRequestOid; }

void SyncProvider::remove(const SyncSearch* search) {
  std::shared_ptr<SyncSearch> removed;
  {
    MutexLock lock(mu_);
    const auto found = std::find_if(searches_.begin(), searches_.end(),
                                    [search](const auto& held) { return held.get() == search; });
    if (found != searches_.end()) {
      removed = std::move(*found);
      searches_.erase(found);
    }
  }
}

void SyncProvider::run(const OperationContext& context, const LdapMessage& request,
                       const OperationAccess& access, ServerSession& session,
                       ServerWorkerState& state, ResultSender& sender) {
  const Control* control = find_sync_control(request);
  if (control == nullptr || !control->value.has_value()) {
    sender.send_result(
        OwnedResult::error(ResultCode::kProtocolError, "Sync control : value is absent"));
    return;
  }
  const Result<SyncRequest> sync = decode_sync_request(*control->value);
  if (!sync.ok()) {
    sender.send_result(OwnedResult::error(
        ResultCode::kProtocolError, "Sync control : " + std::string(sync.status().message())));
    return;
  }
  // The consumer's CSN for the CSNs' server id of this directory (slapd drops the others).
  std::optional<int> rid;
  std::optional<std::string> cookie_csn;
  std::vector<std::string_view> cookie_csns;
  if (sync->cookie.has_value() && !sync->cookie->empty()) {
    const Result<SyncCookie> cookie = parse_sync_cookie(*sync->cookie);
    if (!cookie.ok()) {
      sender.send_result(OwnedResult::error(
          ResultCode::kProtocolError,
          "Sync control : cookie parsing error: " + std::string(cookie.status().message())));
      return;
    }
    for (const std::string_view csn : cookie->csns) {
      if (!is_csn(csn)) {
        sender.send_result(OwnedResult::error(
            ResultCode::kProtocolError,
            "Sync control : cookie parsing error: \"" + std::string(csn) + "\" is not a CSN"));
        return;
      }
      cookie_csns.push_back(csn);
    }
    rid = cookie->rid;
  }
  const Result<std::string> context_csn = directory_.context_csn(state.txn());
  if (!context_csn.ok()) {
    sender.send_status(context_csn.status());
    return;
  }
  if (!cookie_csns.empty()) {
    if (context_csn->empty()) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      sender.send_result(OwnedResult::error(ResultCode::kUnwillingToPerform,
                                            "consumer has state info but provider doesn't!"));
      return;
    }
    const std::optional<std::uint32_t> sid = csn_server_id(*context_csn);
    for (const std::string_view csn : cookie_csns) {
      if (csn_server_id(csn) == sid) {
        cookie_csn = std::string(csn);
      }
    }
    if (cookie_csn.has_value() && *cookie_csn > *context_csn) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      sender.send_result(OwnedResult::error(ResultCode::kUnwillingToPerform,
                                            "consumer state is newer than provider!"));
      return;
    }
  }
  {
    MutexLock lock(mu_);
    if (searches_.size() >= options_.max_consumers) {
      sender.send_result(OwnedResult::error(
          ResultCode::kBusy, "too many sync searches (replication.provider.max_consumers = " +
                                 std::to_string(options_.max_consumers) + ")"));
      return;
    }
  }
  auto search = std::make_shared<SyncSearch>(*this, context, access.requester().identity, session,
                                             request, sync->mode, rid);
  if (search->persist()) {
    search->subscribe();  // Before the snapshot: no change falls between it and the feed.
  }
  // Read again after subscribing: a change committed in between is both in the feed and newer
  // than this CSN (sent twice at worst, never missed).
  const Result<std::string> refresh_csn = directory_.context_csn(state.txn());
  if (!refresh_csn.ok()) {
    sender.send_status(refresh_csn.status());
    return;
  }
  // A cookie with CSNs but none of this directory's server id (a consumer of another provider):
  // every entry is sent, as a present phase (slapd's too), so that the consumer removes what
  // this directory does not hold. A cookie without CSNs (a consumer's first sync, "rid=001") is a
  // full refresh, with nothing to remove: no present phase to process.
  Phase phase = cookie_csns.empty() ? Phase::kFull : Phase::kPresent;
  std::vector<std::string> deleted;
  if (cookie_csn.has_value()) {
    if (*cookie_csn == *refresh_csn) {
      phase = Phase::kUnchanged;
    } else {
      const Result<backend::Directory::SessionLogChanges> log =
          directory_.session_log_since(state.txn(), *cookie_csn);
      if (!log.ok()) {
        sender.send_status(log.status());
        return;
      }
      phase = log->covered ? Phase::kDelta : Phase::kPresent;
      if (log->covered) {
        deleted = log->deleted;
      }
    }
  }
  search->plan(phase, cookie_csn.value_or(std::string()), *refresh_csn, std::move(deleted));
  std::unique_ptr<listener::OpenOperation> open = sender.detach();
  if (open == nullptr) {
    sender.send_result(OwnedResult::error(ResultCode::kUnwillingToPerform,
                                          "sync searches are not served on this connection"));
    return;
  }
  {
    MutexLock lock(mu_);
    searches_.push_back(search);
  }
  served_.fetch_add(1, std::memory_order_relaxed);
  search->start(std::move(open), state);
}

ProviderStatus SyncProvider::status() const {
  ProviderStatus status;
  status.enabled = true;
  status.session_log_entries = options_.session_log_entries;
  status.searches_served = served_.load(std::memory_order_relaxed);
  status.refused = refused_.load(std::memory_order_relaxed);
  status.fell_behind = fell_behind_.load(std::memory_order_relaxed);
  std::unique_ptr<backend::ReadTxn> txn = directory_.begin_read();
  if (Result<std::string> csn = directory_.context_csn(*txn); csn.ok()) {
    status.context_csn = std::move(*csn);
  }
  std::vector<std::shared_ptr<SyncSearch>> searches;
  {
    MutexLock lock(mu_);
    searches = searches_;
  }
  const std::optional<std::int64_t> context_micros = csn_micros(status.context_csn);
  for (const std::shared_ptr<SyncSearch>& search : searches) {
    ProviderConsumerStatus& consumer = status.consumers.emplace_back(search->status());
    const std::optional<std::int64_t> sent = csn_micros(consumer.last_csn);
    if (context_micros.has_value() && sent.has_value() && *context_micros > *sent) {
      consumer.lag_ms = static_cast<std::uint64_t>((*context_micros - *sent) / 1000);
    }
  }
  return status;
}

}  // namespace numadir::server::replication
