// server/replication/consumer.h: a replication consumer (RFC 4533, slapd's syncrepl): one
// [[replication.consumer]] of numadir.toml, following its provider on a thread of its own.
//
// The thread connects (ProviderConnection), binds, and sends the sync search with the cookie
// the directory stored for its rid (none: a full refresh); the provider's messages become
// batches (SyncSession) that the directory's single writer applies, each in one transaction
// with the cookie that covers it, so a crash at any moment resumes with nothing lost and nothing
// applied twice. It batches a refresh (SyncSession's batch_entries, default 2,000 entries, or 8
// MiB), prepares each batch's entries itself (Directory::prepare_replica: the schema check, the
// encoding, the index keys) and hands it to the writer without waiting, receiving the next ones
// while the writer stores it (up to kBatchesInFlight, consumer.cc, committed together when the
// writer falls behind; a batch with a cookie waits for those before it); in the persist phase the
// changes that come within persist_batch_ms (default 10 ms) of the first one pending share its
// commit, which is waited for. refreshOnly: a refresh every `interval`; refreshAndPersist: the
// refresh, then the changes as they come. e-syncRefreshRequired (4096) makes it reload: a search
// without a cookie, whose end prunes what the provider no longer has (the entries stay served
// meanwhile: readers see the last committed state). A failure (the provider unreachable, a bad
// message, a change the schema refuses) is logged with its reason, the connection dropped, and the
// consumer tries again on its retry schedule ("5 10 60 +"), from its start again after a connection
// that reached the persist phase; once a schedule without "+" is spent it stops, as slapd's does,
// until the server restarts.
//
// Every state change and failure goes to `log` (the server's standard error and access log).
//
// Thread contract: start(), stop() and the destructor on one thread (the server's main
// thread); status() from any thread (cn=Monitor, numadir stats); the consumer's own thread does
// the rest. `directory` outlives the consumer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "backend/directory.h"
#include "base/status.h"
#include "server/formats/replication_consumer_config.h"
#include "server/replication/sync_protocol.h"

namespace numadir::server::replication {

class ProviderConnection;
class SyncSession;

enum class ConsumerState : std::uint8_t {
  kStarting,
  kConnecting,
  kRefreshing,
  kPersisting,
  kIdle,     // refreshOnly: waiting for the next interval.
  kWaiting,  // Waiting to retry after a failure.
  kStopped,  // stop() was called, or the retry schedule is spent.
};

// Returns: "starting", "connecting", "refreshing", "persisting", "idle", "waiting to retry",
// "stopped".
const char* consumer_state_name(ConsumerState state);

struct ConsumerStatus {
  int rid = 0;
  std::string provider;
  ConsumerState state = ConsumerState::kStarting;
  std::string cookie;                  // The last cookie committed.
  std::uint64_t entries_received = 0;  // Entries with their content (adds, modifies).
  std::uint64_t deletes_received = 0;
  std::uint64_t changes_applied = 0;  // Entries stored or deleted as the provider sent them.
  std::uint64_t batches_applied = 0;
  std::uint64_t connects = 0;
  std::uint64_t failures = 0;
  std::uint64_t reloads = 0;                          // Full refreshes after e-syncRefreshRequired.
  std::chrono::system_clock::time_point last_change;  // Epoch when none yet.
  std::string last_error;
};

class Consumer {
 public:
  using Log = std::function<void(const std::string& line)>;

  // Requires: `config` has been compiled (its credentials read); `directory` outlives this.
  Consumer(const ReplicationConsumerConfig& config, backend::Directory& directory, Log log,
           std::size_t batch_entries = 2000);
  Consumer(const Consumer&) = delete;
  Consumer& operator=(const Consumer&) = delete;
  ~Consumer();  // stop()s.

  void start();
  // Ends the thread: a receive in progress ends within kPollMs; a batch being written is
  // finished first.
  void stop();

  ConsumerStatus status() const;

  // How long a wait for the provider lasts before the thread looks at stop() again.
  static constexpr int kPollMs = 250;

 private:
  enum class Outcome : std::uint8_t { kStopped, kRefreshDone, kReload };

  void main();
  // One connection: connect, bind, sync search(es) until a failure, the end of a refreshOnly
  // refresh, or stop. Errors: why the connection ended (logged by main).
  Result<Outcome> run_connection(bool& reload);
  // Sends the sync search in `mode` with `cookie` ("": "rid=NNN" alone).
  // Returns: its message ID. Errors: send_search's.
  Result<std::int32_t> send_sync_search(ProviderConnection& provider, SyncMode mode,
                                        const std::string& cookie);
  // Receives the messages of the sync search `search` into `session`, its batches handed to the
  // writer, until the search ends, the connection fails or stop(). `reload` is set when the
  // provider requires a full reload. Errors: why the connection ended.
  Result<Outcome> follow_search(ProviderConnection& provider, std::int32_t search,
                                SyncSession& session, SyncMode mode, bool& reload);
  // e-syncRefreshRequired: the cookie is too old for the provider, so what came of this search
  // is dropped and the content reloaded: sets `reload`, logs and counts it, unbinds.
  // Returns: kReload.
  Outcome reload_required(ProviderConnection& provider, bool& reload);
  void set_state(ConsumerState state);
  void note_failure(const Status& status);
  // Waits `delay` or until stop(). Returns: false when stopped.
  bool wait(std::chrono::milliseconds delay);

  const ReplicationConsumerConfig config_;
  backend::Directory& directory_;
  const Log log_;
  const std::size_t batch_entries_;

  // A std::mutex for wake_ (condition_variable wants one): guards what the comments say.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;                    // Guarded by mu_.
  ConsumerStatus status_;                    // Guarded by mu_.
  std::atomic<bool> stop_requested_{false};  // Read by the thread between messages (relaxed).
  bool persisted_ = false;  // Owner: the consumer's thread. This connection reached persist.
  std::thread thread_;      // Owner: the thread that calls start() and stop().
};

}  // namespace numadir::server::replication
