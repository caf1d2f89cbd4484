// server/operations/failure_table.h: FailureTable, the password policy's lockout state in
// memory: the failed binds and the lock of each user who has some, kept per user in a sharded
// table and made durable in batches by the directory's writer, so that a password-guessing storm
// is counted at bind speed instead of becoming a write per failed bind (slapd's ppolicy writes
// pwdFailureTime at every one).
//
// What it guarantees:
//   - Counting is exact: a failure is counted, and the account locked, under the user's shard
//     lock, against the table's state (never a stale snapshot), so N connections guessing at once
//     lock the account after exactly pwdMaxFailure failures and count no more.
//   - A lockout is durable before any response reveals it: a bind that would answer "locked"
//     while the lock is not yet committed waits (when_lock_durable) for the write that carries
//     it, which the lock triggers at once. A crash forgets at most the last flush interval of
//     failures (failure_flush_ms, default 100 ms), never a lockout a client was told of.
//   - A successful bind of a user with no failures writes nothing and takes one shard lock.
//   - The table is authoritative for a user while it holds a record; otherwise the entry is
//     (pwdFailureTime, pwdAccountLockedTime as stored). An update by anyone else that changes
//     the entry's lockout state (an administrator's unlock, a password change) or removes it
//     (a delete, a rename) drops the record: the stored state wins again. Other updates of the
//     entry leave the record. A flush checks, in the write transaction, that the stored
//     state is still what the table last wrote or read, and writes nothing otherwise.
//   - A success that only clears stored failures is written within the clear interval (10 s by
//     default) rather than the flush interval (a crash before counts those failures again:
//     stricter, never laxer); under a storm the user's next failure usually comes first and one
//     write carries both.
//   - Records whose state is in storage and untouched for a second are evicted.
//
// Thread contract: every public function may be called from any thread (workers, listeners
// helping their pool, the writer's completions). A flusher thread of its own submits the writes
// and the change-feed callback runs on the writer thread. The table must be destroyed before the
// Directory; its destructor flushes what is left and waits for its writes' completions.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend/directory.h"
#include "base/cache_line.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "server/operations/password_policy.h"

namespace numadir::server {

class FailureTable {
 public:
  // `normalize`: a DN's normalized form (the key binds use), for the change feed's DNs; returns
  // nullopt when it does not parse. Requires: `directory` outlives the table.
  // `flush_interval`: how late a failure (or a lock, at once) is written; `clear_interval`: how
  // late a success that only clears stored failures is.
  FailureTable(backend::Directory& directory, std::chrono::milliseconds flush_interval,
               std::chrono::milliseconds clear_interval,
               std::function<std::optional<std::string>(std::string_view)> normalize);
  FailureTable(const FailureTable&) = delete;
  FailureTable& operator=(const FailureTable&) = delete;
  ~FailureTable();

  // Overlays the table's record for `ndn`, if any, on `state` (read from the entry): its
  // failures and lock replace the stored ones. Returns: whether a record exists; `lock_durable`
  // then says whether its lock (if any) is committed.
  bool overlay(std::string_view ndn, PasswordState& state, bool& lock_durable) const;

  // What a failed bind did.
  enum class Failure : std::uint8_t {
    kCounted,      // Counted (and maybe locked the account: the lock is being written).
    kLocked,       // The account was locked meanwhile: not counted; answer as locked.
    kNotRecorded,  // The policy records no failures (pwdMaxFailure and pwdMaxRecordedFailure 0).
  };
  // Counts a failed bind of the entry `dn` (normalized `ndn`) at `now` under `policy`,
  // `stored` being its state as read (used only when the table has no record). Counts against
  // the table's state under the shard lock; locks the account when this failure reaches
  // pwdMaxFailure (slapd's rule: the failures already counted >= pwdMaxFailure - 1) and then
  // starts writing the lock at once.
  Failure record_failure(std::string_view ndn, std::string_view dn, const PasswordState& stored,
                         const PasswordPolicy& policy, UnixMicros now);
  // A successful password check of `dn` (`ndn`). Returns: true if the account turned out to be
  // locked meanwhile (answer as locked; nothing changed); otherwise clears its failures and an
  // expired lock, if any (written with the next flush), and returns false.
  bool record_success(std::string_view ndn, std::string_view dn, const PasswordState& stored,
                      const PasswordPolicy& policy, UnixMicros now);
  // Calls `done(true)` once the lock of `ndn`'s record is committed (at once if it is, from the
  // write's completion on the writer thread otherwise), or `done(false)` if the record went away
  // first (the entry changed under it) or has no lock. `done` must be cheap (it may run on the
  // writer thread) and is called exactly once.
  void when_lock_durable(std::string_view ndn, std::function<void(bool)> done);

  // For tests and monitoring.
  struct Stats {
    std::uint64_t records = 0;
    std::uint64_t flushes = 0;         // Writes committed.
    std::uint64_t flush_failures = 0;  // Writes refused (the entry changed or went away) or failed.
    std::uint64_t lockouts = 0;        // Accounts newly locked by failed binds.
  };
  Stats stats() const;
  // Writes every dirty record now and waits for the writes. For tests (and the destructor).
  void flush_now();

 private:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };
  // The lockout part of a user's state.
  struct Snapshot {
    std::vector<UnixMicros> failures;
    std::optional<UnixMicros> locked;
    bool permanent = false;

    static Snapshot of(const PasswordState& state) {
      return Snapshot{state.failures, state.locked, state.permanent_lock};
    }
    // Puts this lockout state into `state` (the rest of it stays as read).
    void apply_to(PasswordState& state) const {
      state.failures = failures;
      state.locked = locked;
      state.permanent_lock = permanent;
    }
    bool same_lock(const Snapshot& other) const {
      return locked == other.locked && permanent == other.permanent;
    }
    friend bool operator==(const Snapshot&, const Snapshot&) = default;
  };

  struct Record {
    std::string dn;             // As the entry stores it: the flush's target.
    std::uint64_t epoch = 0;    // Tells a re-created record from the one a write was for.
    Snapshot current;           // The state binds see.
    Snapshot stored;            // What storage holds, as the table last read or wrote it.
    std::uint64_t version = 0;  // Bumped at every change of `current`.
    std::uint64_t written_version = 0;
    bool in_flight = false;  // A write of this record is queued or running.
    std::chrono::steady_clock::time_point touched;
    std::vector<std::function<void(bool)>> waiters;  // when_lock_durable callers.

    bool lock_durable() const { return current.same_lock(stored); }
  };

  struct Shard {
    alignas(kCacheLineSize) mutable Mutex mu;
    std::unordered_map<std::string, Record, StringHash, std::equal_to<>> records
        NUMADIR_GUARDED_BY(mu);
  };

  Shard& shard_for(std::string_view ndn) const;
  // Returns: the record of `ndn`, created from `stored` when missing. Requires: shard.mu held.
  Record& record_of(Shard& shard, std::string_view ndn, std::string_view dn,
                    const PasswordState& stored) NUMADIR_REQUIRES(shard.mu);
  // Submits the write of `record` (key `ndn`) unless one is in flight. Requires: shard.mu held.
  void submit_flush(Shard& shard, const std::string& ndn, Record& record)
      NUMADIR_REQUIRES(shard.mu);
  // The flush's completion (writer thread).
  void flushed(const std::string& ndn, std::uint64_t epoch, std::uint64_t version,
               const Snapshot& written, const Status& status);
  // An update by someone else of the entry `dn` (normalized `ndn`) committed: drops its record
  // (failing its waiters) if the entry's stored lockout state is no longer what the table last
  // read or wrote (an unlock, a password change, a delete or rename), keeps it otherwise.
  void reconcile(const std::string& ndn, std::string_view dn);
  void wake_flusher(bool urgent);
  void flusher_main();

  backend::Directory& directory_;
  const std::chrono::milliseconds flush_interval_;
  const std::chrono::milliseconds clear_interval_;
  const std::function<std::optional<std::string>(std::string_view)> normalize_;
  std::unique_ptr<Shard[]> shards_;

  std::mutex flusher_mu_;
  std::condition_variable flusher_cv_;
  bool stopping_ = false;            // Guarded by flusher_mu_.
  bool urgent_ = false;              // Guarded by flusher_mu_: a lock waits to be written.
  std::uint64_t in_flight_ = 0;      // Guarded by flusher_mu_: writes submitted, not completed.
  std::condition_variable idle_cv_;  // in_flight_ reached 0.
  std::atomic<std::uint64_t> records_{0};  // Relaxed: a count for the flusher's sleep and stats.
  // The flusher sleeps with no record to flush (not on its timer): a new record must wake it.
  std::atomic<bool> sleeping_idle_{false};
  std::atomic<std::uint64_t> flushes_{0};
  std::atomic<std::uint64_t> flush_failures_{0};
  std::atomic<std::uint64_t> lockouts_{0};  // Relaxed: a count for monitoring.
  std::atomic<std::uint64_t> next_epoch_{1};

  std::unique_ptr<backend::ChangeSubscription> subscription_;
  std::thread flusher_;
};

}  // namespace numadir::server
