// server/replication/consumer.cc: see consumer.h.
#include "server/replication/consumer.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "backend/directory_update.h"
#include "server/operations/search_scope.h"
#include "server/replication/provider_connection.h"
#include "server/replication/sync_protocol.h"
#include "server/replication/sync_session.h"

namespace numadir::server::replication {

using listener::wire::Control;
using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;

namespace {

const Control* find_control(const LdapMessage& message, std::string_view oid) {
  for (const Control& control : message.controls) {
    if (control.type == oid) {
      return &control;
    }
  }
  return nullptr;
}

// Returns: whether the replica holds no entry at `base` (and so none in a scope under it).
// Errors: kStorage, kInvalidDnSyntax.
Result<bool> scope_is_empty(const backend::Directory& directory, std::string_view base) {
  std::unique_ptr<backend::ReadTxn> txn = directory.begin_read();
  const Status found = directory.lookup(*txn, base, [](const backend::EntryRef&) {});
  if (found.code() == StatusCode::kNoSuchObject) {
    return true;
  }
  if (!found.ok()) {
    return found;
  }
  return false;
}

// The retry schedule as slapd walks it: each step's interval, `count` times, the last one
// forever when it says "+".
class RetrySchedule {
 public:
  explicit RetrySchedule(const std::vector<RetryStep>& steps) : steps_(steps) {}
  void reset() {
    step_ = 0;
    used_ = 0;
  }
  // Returns: the wait before the next try, or nullopt when the schedule is spent.
  std::optional<std::chrono::seconds> next() {
    while (step_ < steps_.size()) {
      const RetryStep& step = steps_[step_];
      if (step.forever || used_ < step.count) {
        ++used_;
        return std::chrono::seconds(step.interval_s);
      }
      ++step_;
      used_ = 0;
    }
    return std::nullopt;
  }

 private:
  const std::vector<RetryStep>& steps_;
  std::size_t step_ = 0;
  std::uint32_t used_ = 0;
};

// What a batch handed to the writer carries, for the consumer's counters once it is committed.
struct BatchNote {
  std::size_t items = 0;
  std::optional<std::string> cookie;
  std::uint64_t entries_received = 0;
  std::uint64_t deletes_received = 0;
};

// Batches of a refresh handed to the writer without waiting for the one before: those that
// store no cookie and prune nothing. A few queued together let the writer commit them in one
// transaction (one flush where each would take its own) when its flushes fall behind.
constexpr std::size_t kBatchesInFlight = 3;

// A connection's batches on their way to the writer: those handed over and not yet known
// committed, oldest first, so a refresh receives and decodes its next batches while the writer
// stores the last ones (on another thread). Destruction waits for every batch in flight (the
// writer completes every job), so nothing of a connection is still being written once it has
// ended and the consumer reads its stored cookie again.
class WriterPipe {
 public:
  explicit WriterPipe(backend::Directory& directory) : directory_(directory) {}
  WriterPipe(const WriterPipe&) = delete;
  WriterPipe& operator=(const WriterPipe&) = delete;
  ~WriterPipe() {
    while (!flights_.empty()) {
      (void)settle();
    }
  }

  std::size_t in_flight() const { return flights_.size(); }

  // Waits for the oldest batch in flight. Returns: its note once it is committed, nullopt when
  // none was in flight. Errors: the writer's, nothing of that batch written.
  Result<std::optional<BatchNote>> settle() {
    if (flights_.empty()) {
      return std::optional<BatchNote>();
    }
    const std::shared_ptr<Flight> flight = std::move(flights_.front().first);
    BatchNote note = std::move(flights_.front().second);
    flights_.pop_front();
    Status status;
    {
      std::unique_lock lock(flight->mu);
      flight->done_cv.wait(lock, [&] { return flight->done; });
      status = flight->status;
    }
    if (!status.ok()) {
      return status;
    }
    return std::optional<BatchNote>(std::move(note));
  }

  // Hands `job` to the writer, after those in flight.
  void submit(std::unique_ptr<backend::UpdateJob> job, BatchNote note) {
    auto flight = std::make_shared<Flight>();
    job->done = [flight](Status status) {
      std::lock_guard lock(flight->mu);
      flight->status = std::move(status);
      flight->done = true;
      flight->done_cv.notify_all();
    };
    flights_.emplace_back(std::move(flight), std::move(note));
    directory_.submit_update(std::move(job));
  }

 private:
  // Shared with the job's completion, which runs on the writer thread.
  struct Flight {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;  // Guarded by mu.
    Status status;      // Guarded by mu.
  };

  backend::Directory& directory_;
  std::deque<std::pair<std::shared_ptr<Flight>, BatchNote>> flights_;
};

// A connection's batches on their way to the writer: each batch its SyncSession collects is
// prepared here and handed to the writer through a WriterPipe, and counted in the consumer's
// status once committed. Made after the session, whose batches it takes; its destruction waits
// for every batch in flight (WriterPipe).
class BatchWriter {
 public:
  // Counts each committed batch in `status`, under `status_mu`. `check_schema`: each batch's
  // (the consumer's schemachecking).
  BatchWriter(backend::Directory& directory, SyncSession& session, bool check_schema,
              std::mutex& status_mu, ConsumerStatus& status)
      : directory_(directory),
        session_(session),
        check_schema_(check_schema),
        status_mu_(status_mu),
        status_(status),
        pipe_(directory) {}
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  // Hands the batch collected so far to the writer; with `wait`, returns once it is committed
  // (and every batch before it). Without a batch, waits for every batch in flight.
  // Errors: the preparation's or the writer's, as "applying the provider's changes failed,
  //   nothing of the batch was written: ...".
  Status apply(bool wait) {
    std::optional<backend::ReplicaChange> batch = session_.take_batch();
    if (!batch.has_value()) {
      return settle_all();
    }
    batch->check_schema = check_schema_;
    // Prepared here, while the writer stores the batch before: the writer only looks up and
    // writes. An entry refused now refuses the batch as the writer would.
    if (Status prepared = directory_.prepare_replica(*batch); !prepared.ok()) {
      NUMADIR_RETURN_IF_ERROR(settle_all());
      return Status(prepared.code(),
                    "applying the provider's changes failed, nothing of the batch was written: " +
                        prepared.message());
    }
    BatchNote note{batch->items.size(), batch->cookie, session_.entries_received(),
                   session_.deletes_received()};
    // A batch that stores a cookie or prunes waits until every batch before it is committed:
    // its cookie never covers a batch the writer refused.
    const std::size_t room =
        batch->cookie.has_value() || batch->prune.has_value() ? 1 : kBatchesInFlight;
    while (pipe_.in_flight() >= room) {
      NUMADIR_RETURN_IF_ERROR(settle());
    }
    auto job = std::make_unique<backend::UpdateJob>();
    job->change = std::move(*batch);
    pipe_.submit(std::move(job), std::move(note));
    return wait ? settle_all() : Status();
  }

 private:
  // Waits for the oldest batch in flight and counts it once committed.
  Status settle() {
    Result<std::optional<BatchNote>> applied = pipe_.settle();
    if (!applied.ok()) {
      return Status(applied.status().code(),
                    "applying the provider's changes failed, nothing of the batch was written: " +
                        applied.status().message());
    }
    if (!applied->has_value()) {
      return Status();
    }
    const BatchNote& note = **applied;
    std::lock_guard lock(status_mu_);
    ++status_.batches_applied;
    status_.changes_applied += note.items;
    status_.last_change = std::chrono::system_clock::now();
    if (note.cookie.has_value()) {
      status_.cookie = *note.cookie;
    }
    status_.entries_received = note.entries_received;
    status_.deletes_received = note.deletes_received;
    return Status();
  }

  // Waits for every batch in flight.
  Status settle_all() {
    while (pipe_.in_flight() > 0) {
      NUMADIR_RETURN_IF_ERROR(settle());
    }
    return Status();
  }

  backend::Directory& directory_;
  SyncSession& session_;
  const bool check_schema_;
  std::mutex& status_mu_;
  ConsumerStatus& status_;  // Guarded by status_mu_.
  WriterPipe pipe_;
};

// How long each receive of a sync search may wait. In the persist phase a change is written
// once no other has come within persist_batch_ms of the first one pending, those that did
// sharing its commit; a refresh fills its batches, written when full or when the provider
// pauses for kPollMs.
class ReceiveTimeout {
 public:
  ReceiveTimeout(int poll_ms, std::uint32_t persist_batch_ms)
      : poll_ms_(poll_ms), persist_batch_ms_(persist_batch_ms) {}

  // Returns: the wait for the next message, given where `session` is.
  int next_ms(const SyncSession& session) {
    if (session.phase() != SyncPhase::kPersist || !session.has_pending()) {
      collecting_ = false;
      return poll_ms_;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!collecting_) {
      pending_since_ = now;
      collecting_ = true;
    }
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - pending_since_).count();
    return static_cast<int>(std::max<std::int64_t>(0, std::int64_t{persist_batch_ms_} - waited));
  }

 private:
  const int poll_ms_;
  const std::uint32_t persist_batch_ms_;
  std::chrono::steady_clock::time_point pending_since_{};  // Valid while collecting_.
  bool collecting_ = false;  // A persist batch is collecting, since pending_since_.
};

// An entry of the sync search, with its Sync State control, into `session`.
// Errors: kMalformed when the control is missing or does not decode; session.on_entry's; each
//   prefixed with the provider's URL.
Status take_entry(const ProviderConnection& provider, const LdapMessage& message,
                  SyncSession& session) {
  const Control* control = find_control(message, kSyncStateOid);
  if (control == nullptr || !control->value.has_value()) {
    return malformed(provider.url() + ": an entry without a Sync State control: " +
                     std::string(message.search_entry.object_name));
  }
  Result<SyncState> state = decode_sync_state(*control->value);
  if (!state.ok()) {
    return malformed(provider.url() + ": " + state.status().message());
  }
  const Status handled =
      session.on_entry(message.search_entry.object_name, message.search_entry.attributes, *state);
  if (!handled.ok()) {
    return Status(handled.code(), provider.url() + ": " + handled.message());
  }
  return Status();
}

// An IntermediateResponse of the sync search into `session`, when it is a Sync Info message.
// Returns: false when it is not one (nothing to take).
// Errors: kMalformed when it has no value or the value does not decode; session.on_info's;
//   each prefixed with the provider's URL.
Result<bool> take_sync_info(const ProviderConnection& provider, const LdapMessage& message,
                            SyncSession& session) {
  if (message.extended.name != kSyncInfoOid) {
    return false;
  }
  if (!message.extended.value.has_value()) {
    return malformed(provider.url() + ": a Sync Info message without a value");
  }
  Result<SyncInfo> info = decode_sync_info(*message.extended.value);
  if (!info.ok()) {
    return malformed(provider.url() + ": " + info.status().message());
  }
  const Status handled = session.on_info(*info);
  if (!handled.ok()) {
    return Status(handled.code(), provider.url() + ": " + handled.message());
  }
  return true;
}

// A SearchResultDone of the sync search other than e-syncRefreshRequired, with its Sync Done
// control (defaults when it has none), into `session`: the search ends.
// Errors: kIo "<url>: the sync search ended with result N: <diagnostic>" for a result other
//   than success; kMalformed "<url>: ..." when the control does not decode; session.on_done's.
Status take_sync_done(const ProviderConnection& provider, const LdapMessage& message,
                      SyncSession& session) {
  if (message.result.code != ResultCode::kSuccess) {
    return Status(StatusCode::kIo,
                  provider.url() + ": the sync search ended with result " +
                      std::to_string(static_cast<std::int32_t>(message.result.code)) + ": " +
                      std::string(message.result.diagnostic_message));
  }
  SyncDone done;
  if (const Control* control = find_control(message, kSyncDoneOid)) {
    Result<SyncDone> decoded = decode_sync_done(control->value.value_or(""));
    if (!decoded.ok()) {
      return malformed(provider.url() + ": " + decoded.status().message());
    }
    done = *decoded;
  }
  return session.on_done(done);
}

}  // namespace

const char* consumer_state_name(ConsumerState state) {
  switch (state) {
    case ConsumerState::kStarting:
      return "starting";
    case ConsumerState::kConnecting:
      return "connecting";
    case ConsumerState::kRefreshing:
      return "refreshing";
    case ConsumerState::kPersisting:
      return "persisting";
    case ConsumerState::kIdle:
      return "idle";
    case ConsumerState::kWaiting:
      return "waiting to retry";
    case ConsumerState::kStopped:
      return "stopped";
  }
  return "unknown";
}

Consumer::Consumer(const ReplicationConsumerConfig& config, backend::Directory& directory, Log log,
                   std::size_t batch_entries)
    : config_(config), directory_(directory), log_(std::move(log)), batch_entries_(batch_entries) {
  status_.rid = config_.rid;
  status_.provider = config_.provider_text;
}

Consumer::~Consumer() { stop(); }

void Consumer::start() {
  thread_ = std::thread([this] { main(); });
}

void Consumer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_requested_.store(true, std::memory_order_relaxed);
  wake_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

ConsumerStatus Consumer::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

void Consumer::set_state(ConsumerState state) {
  bool changed = false;
  {
    std::lock_guard lock(mu_);
    changed = status_.state != state;
    status_.state = state;
  }
  if (changed) {
    log_("replication rid=" + std::to_string(config_.rid) + " " + config_.provider_text + ": " +
         consumer_state_name(state));
  }
}

void Consumer::note_failure(const Status& status) {
  {
    std::lock_guard lock(mu_);
    ++status_.failures;
    status_.last_error = status.message();
  }
  log_("replication rid=" + std::to_string(config_.rid) + " " + config_.provider_text + ": " +
       status.message());
}

bool Consumer::wait(std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, delay, [this] { return stopping_; });
  return !stopping_;
}

void Consumer::main() {
  RetrySchedule retry(config_.retry);
  bool reload = false;
  while (!stop_requested_.load(std::memory_order_relaxed)) {
    set_state(ConsumerState::kConnecting);
    Result<Outcome> outcome = run_connection(reload);
    if (outcome.ok() && *outcome == Outcome::kStopped) {
      break;
    }
    if (outcome.ok() && *outcome == Outcome::kRefreshDone) {
      retry.reset();
      set_state(ConsumerState::kIdle);
      if (!wait(std::chrono::seconds(config_.interval_s))) {
        break;
      }
      continue;
    }
    if (outcome.ok()) {
      continue;  // kReload: at once, without a cookie.
    }
    note_failure(outcome.status());
    if (persisted_) {
      retry.reset();  // A connection that reached the persist phase starts the schedule over.
      persisted_ = false;
    }
    const std::optional<std::chrono::seconds> delay = retry.next();
    if (!delay.has_value()) {
      log_("replication rid=" + std::to_string(config_.rid) +
           ": retry schedule spent; the consumer stops until the server restarts");
      break;
    }
    set_state(ConsumerState::kWaiting);
    if (!wait(*delay)) {
      break;
    }
  }
  set_state(ConsumerState::kStopped);
}

Result<Consumer::Outcome> Consumer::run_connection(bool& reload) {
  Result<std::unique_ptr<ProviderConnection>> connected = ProviderConnection::connect(config_);
  if (!connected.ok()) {
    return connected.status();
  }
  ProviderConnection& provider = **connected;
  NUMADIR_RETURN_IF_ERROR(provider.bind());
  {
    std::lock_guard lock(mu_);
    ++status_.connects;
  }
  std::string cookie;
  if (!reload) {
    Result<std::optional<std::string>> stored = directory_.replica_cookie(config_.rid);
    if (!stored.ok()) {
      return stored.status();
    }
    cookie = stored->value_or("");
  }
  reload = false;
  const SyncMode mode = config_.type == ReplicationType::kRefreshOnly
                            ? SyncMode::kRefreshOnly
                            : SyncMode::kRefreshAndPersist;
  Result<std::int32_t> search = send_sync_search(provider, mode, cookie);
  if (!search.ok()) {
    return search.status();
  }
  SyncSession session(static_cast<std::uint32_t>(config_.rid),
                      SyncScope{config_.searchbase, backend_scope(config_.scope)}, mode,
                      cookie.empty(), batch_entries_);
  // A first refresh (or one after the scope was emptied) has nothing of its own to prune.
  Result<bool> empty = scope_is_empty(directory_, config_.searchbase);
  if (!empty.ok()) {
    return empty.status();
  }
  if (*empty) {
    session.set_scope_empty();
  }
  set_state(ConsumerState::kRefreshing);
  return follow_search(provider, *search, session, mode, reload);
}

Result<std::int32_t> Consumer::send_sync_search(ProviderConnection& provider, SyncMode mode,
                                                const std::string& cookie) {
  // Without a stored cookie the request carries "rid=NNN" alone, as slapd's consumers send
  // it: the provider's cookies then name this rid.
  char rid_cookie[16];
  std::snprintf(rid_cookie, sizeof rid_cookie, "rid=%03d", config_.rid);
  const std::string request =
      encode_sync_request(mode, cookie.empty() ? rid_cookie : cookie, /*reload_hint=*/false);
  std::vector<std::string_view> attributes(config_.attrs.begin(), config_.attrs.end());
  return provider.send_search(config_.searchbase, config_.scope, config_.filter, attributes,
                              {Control{kSyncRequestOid, true, request}});
}

Result<Consumer::Outcome> Consumer::follow_search(ProviderConnection& provider, std::int32_t search,
                                                  SyncSession& session, SyncMode mode,
                                                  bool& reload) {
  BatchWriter batches(directory_, session, config_.schemachecking, mu_, status_);
  ReceiveTimeout timeout(kPollMs, config_.persist_batch_ms);
  LdapMessage message;
  for (;;) {
    if (stop_requested_.load(std::memory_order_relaxed)) {
      NUMADIR_RETURN_IF_ERROR(batches.apply(true));  // What was received and is whole is kept.
      (void)provider.abandon(search);
      (void)provider.unbind();
      return Outcome::kStopped;
    }
    const Status received = provider.receive(message, timeout.next_ms(session));
    if (!received.ok()) {
      if (!provider.usable()) {
        return received;
      }
      NUMADIR_RETURN_IF_ERROR(batches.apply(true));  // The provider has nothing more for now.
      continue;
    }
    if (message.message_id == listener::wire::kUnsolicitedMessageId) {
      return Status(StatusCode::kIo, provider.url() + ": the provider disconnected: " +
                                         std::string(message.result.diagnostic_message));
    }
    if (message.message_id != search) {
      continue;
    }
    switch (message.op) {
      case ProtocolOp::kSearchResultEntry:
        NUMADIR_RETURN_IF_ERROR(take_entry(provider, message, session));
        break;
      case ProtocolOp::kIntermediateResponse: {
        Result<bool> taken = take_sync_info(provider, message, session);
        if (!taken.ok()) {
          return taken.status();
        }
        if (!*taken) {
          continue;
        }
        break;
      }
      case ProtocolOp::kSearchResultDone:
        if (static_cast<std::int32_t>(message.result.code) == kSyncRefreshRequired) {
          return reload_required(provider, reload);
        }
        NUMADIR_RETURN_IF_ERROR(take_sync_done(provider, message, session));
        NUMADIR_RETURN_IF_ERROR(batches.apply(true));
        (void)provider.unbind();
        if (mode == SyncMode::kRefreshOnly) {
          return Outcome::kRefreshDone;
        }
        return Status(StatusCode::kIo, provider.url() + ": the provider ended the persist phase");
      default:
        continue;  // References, and anything else of this search, carry nothing to apply.
    }
    if (session.phase() == SyncPhase::kPersist) {
      set_state(ConsumerState::kPersisting);
      persisted_ = true;
    }
    if (session.batch_full()) {
      // A refresh goes on receiving while the writer stores the batch.
      NUMADIR_RETURN_IF_ERROR(batches.apply(session.phase() == SyncPhase::kPersist));
    }
  }
}

Consumer::Outcome Consumer::reload_required(ProviderConnection& provider, bool& reload) {
  log_("replication rid=" + std::to_string(config_.rid) +
       ": the provider requires a full reload (e-syncRefreshRequired)");
  {
    std::lock_guard lock(mu_);
    ++status_.reloads;
  }
  reload = true;
  (void)provider.unbind();
  return Outcome::kReload;
}

}  // namespace numadir::server::replication
