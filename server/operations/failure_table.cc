// server/operations/failure_table.cc: see failure_table.h.
#include "server/operations/failure_table.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "backend/change_feed.h"
#include "backend/directory_update.h"
#include "base/cache_line.h"

namespace numadir::server {

namespace {

constexpr std::size_t kShards = 64;
// A record whose state is in storage is evicted once untouched this long: by then no bind that
// read the entry before the record's last write can still be running.
constexpr std::chrono::seconds kEvictAfter{1};

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};

UnixMicros whole_seconds(UnixMicros micros) { return micros - micros % 1'000'000; }

}  // namespace

FailureTable::FailureTable(backend::Directory& directory, std::chrono::milliseconds flush_interval,
                           std::chrono::milliseconds clear_interval,
                           std::function<std::optional<std::string>(std::string_view)> normalize)
    : directory_(directory),
      flush_interval_(flush_interval),
      clear_interval_(clear_interval),
      normalize_(std::move(normalize)),
      shards_(std::make_unique<Shard[]>(kShards)) {
  subscription_ = directory_.subscribe_changes([this](const backend::ChangeRecord& change) {
    if (change.internal || change.kind == backend::ChangeKind::kAdd ||
        records_.load(std::memory_order_relaxed) == 0) {
      return;  // Its own write, a new entry, or nothing to drop.
    }
    if (std::optional<std::string> ndn = normalize_(change.dn)) {
      reconcile(*ndn, change.dn);
    }
  });
  flusher_ = std::thread([this] { flusher_main(); });
}

FailureTable::~FailureTable() {
  {
    std::lock_guard lock(flusher_mu_);
    stopping_ = true;
  }
  flusher_cv_.notify_all();
  flusher_.join();
  flush_now();
  subscription_.reset();
}

FailureTable::Shard& FailureTable::shard_for(std::string_view ndn) const {
  return shards_[std::hash<std::string_view>{}(ndn) % kShards];
}

FailureTable::Record& FailureTable::record_of(Shard& shard, std::string_view ndn,
                                              std::string_view dn, const PasswordState& stored) {
  auto it = shard.records.find(ndn);
  if (it != shard.records.end()) {
    return it->second;
  }
  Record record;
  record.dn = std::string(dn);
  record.epoch = next_epoch_.fetch_add(1, std::memory_order_relaxed);
  record.current = Snapshot::of(stored);
  record.stored = record.current;
  record.touched = std::chrono::steady_clock::now();
  records_.fetch_add(1, std::memory_order_seq_cst);
  return shard.records.emplace(std::string(ndn), std::move(record)).first->second;
}

bool FailureTable::overlay(std::string_view ndn, PasswordState& state, bool& lock_durable) const {
  Shard& shard = shard_for(ndn);
  MutexLock lock(shard.mu);
  const auto it = shard.records.find(ndn);
  if (it == shard.records.end()) {
    return false;
  }
  it->second.current.apply_to(state);
  lock_durable = it->second.lock_durable();
  return true;
}

FailureTable::Failure FailureTable::record_failure(std::string_view ndn, std::string_view dn,
                                                   const PasswordState& stored,
                                                   const PasswordPolicy& policy, UnixMicros now) {
  Shard& shard = shard_for(ndn);
  bool lock_now = false;
  {
    MutexLock lock(shard.mu);
    const bool existed = shard.records.contains(ndn);
    if (!existed && policy.max_recorded_failure == 0) {
      return Failure::kNotRecorded;
    }
    Record& record = record_of(shard, ndn, dn, stored);
    PasswordState effective = stored;
    record.current.apply_to(effective);
    bool lock_expired = false;
    if (account_locked(effective, policy, now, &lock_expired)) {
      return Failure::kLocked;  // Locked since the caller looked: not counted.
    }
    if (lock_expired) {
      record.current.locked.reset();  // As slapd: the run-out lock goes, the failures stay.
      record.current.permanent = false;
      ++record.version;
    }
    if (policy.max_recorded_failure == 0) {
      return Failure::kNotRecorded;
    }
    const std::int64_t counted = counted_failures(record.current.failures, policy, now);
    std::vector<UnixMicros>& failures = record.current.failures;
    // Distinct values (pwdFailureTime is a set): two failures in one microsecond are a
    // microsecond apart.
    failures.push_back(!failures.empty() && failures.back() >= now ? failures.back() + 1 : now);
    const auto keep = static_cast<std::size_t>(policy.max_recorded_failure);
    if (failures.size() > keep) {
      failures.erase(failures.begin(), failures.end() - static_cast<std::ptrdiff_t>(keep));
    }
    lock_now = policy.max_failure > 0 && counted >= policy.max_failure - 1;
    if (lock_now) {
      record.current.locked = whole_seconds(now);  // Stored with second precision.
      record.current.permanent = false;
    }
    ++record.version;
    record.touched = std::chrono::steady_clock::now();
    if (lock_now) {
      lockouts_.fetch_add(1, std::memory_order_relaxed);
      // Written at once: a later bind that sees the lock waits for this write.
      submit_flush(shard, std::string(ndn), record);
    }
  }
  wake_flusher(lock_now);
  return Failure::kCounted;
}

bool FailureTable::record_success(std::string_view ndn, std::string_view dn,
                                  const PasswordState& stored, const PasswordPolicy& policy,
                                  UnixMicros now) {
  Shard& shard = shard_for(ndn);
  {
    MutexLock lock(shard.mu);
    const auto it = shard.records.find(ndn);
    if (it == shard.records.end()) {
      bool lock_expired = false;
      if (account_locked(stored, policy, now, &lock_expired)) {
        return true;
      }
      if (stored.failures.empty() && !lock_expired) {
        return false;  // The common case: nothing to write, nothing kept.
      }
    }
    Record& record = it != shard.records.end() ? it->second : record_of(shard, ndn, dn, stored);
    PasswordState effective = stored;
    record.current.apply_to(effective);
    bool lock_expired = false;
    if (account_locked(effective, policy, now, &lock_expired)) {
      return true;
    }
    bool changed = false;
    if (lock_expired) {
      record.current.locked.reset();
      record.current.permanent = false;
      changed = true;
    }
    if (!record.current.failures.empty()) {
      record.current.failures.clear();
      changed = true;
    }
    if (!changed) {
      return false;
    }
    ++record.version;
    record.touched = std::chrono::steady_clock::now();
  }
  wake_flusher(false);
  return false;
}

void FailureTable::when_lock_durable(std::string_view ndn, std::function<void(bool)> done) {
  Shard& shard = shard_for(ndn);
  bool answer = false;
  {
    MutexLock lock(shard.mu);
    const auto it = shard.records.find(ndn);
    if (it != shard.records.end() &&
        (it->second.current.locked.has_value() || it->second.current.permanent)) {
      Record& record = it->second;
      if (!record.lock_durable()) {
        record.waiters.push_back(std::move(done));
        submit_flush(shard, it->first, record);
        return;
      }
      answer = true;
    }
  }
  done(answer);
}

void FailureTable::submit_flush(Shard& shard, const std::string& ndn, Record& record) {
  (void)shard;
  if (record.in_flight || record.version == record.written_version) {
    return;  // The write in flight is followed by another from its completion if needed.
  }
  if (record.current == record.stored) {
    record.written_version = record.version;  // Back to what storage holds: nothing to write.
    return;
  }
  const Snapshot written = record.current;
  const Snapshot expected = record.stored;
  std::vector<std::string> failure_values;
  failure_values.reserve(written.failures.size());
  for (const UnixMicros failure : written.failures) {
    failure_values.push_back(format_generalized_time(failure, /*with_fraction=*/true));
  }
  std::vector<std::string> lock_values;
  if (written.permanent) {
    lock_values.emplace_back(kPermanentLockTime);
  } else if (written.locked.has_value()) {
    lock_values.push_back(format_generalized_time(*written.locked, /*with_fraction=*/false));
  }
  auto job = std::make_unique<backend::UpdateJob>();
  job->context.internal = true;
  std::vector<backend::Modification> modifications;
  modifications.push_back(backend::Modification{backend::ModificationKind::kReplace,
                                                "pwdFailureTime", std::move(failure_values),
                                                /*internal=*/true});
  modifications.push_back(backend::Modification{backend::ModificationKind::kReplace,
                                                "pwdAccountLockedTime", std::move(lock_values),
                                                /*internal=*/true});
  job->change = backend::ModifyChange{record.dn, std::move(modifications)};
  job->check = [dn = record.dn, expected](const backend::WriteView& view) {
    Snapshot now_stored;
    NUMADIR_RETURN_IF_ERROR(view.lookup(dn, [&](const backend::EntryRef& entry) {
      now_stored = Snapshot::of(PasswordState::from_entry(entry));
    }));
    if (!(now_stored == expected)) {
      return Status(StatusCode::kUnwillingToPerform, "the entry's lockout state changed");
    }
    return Status();
  };
  job->done = [this, ndn, epoch = record.epoch, version = record.version, written](Status status) {
    flushed(ndn, epoch, version, written, status);
  };
  {
    std::lock_guard lock(flusher_mu_);
    ++in_flight_;
  }
  if (!directory_.try_submit_update(job)) {
    // The writer's queue is full: the flusher tries again at its next round.
    std::lock_guard lock(flusher_mu_);
    --in_flight_;
    urgent_ = urgent_ || !record.waiters.empty();
    return;
  }
  record.in_flight = true;
}

void FailureTable::flushed(const std::string& ndn, std::uint64_t epoch, std::uint64_t version,
                           const Snapshot& written, const Status& status) {
  std::vector<std::function<void(bool)>> durable;
  std::vector<std::function<void(bool)>> gone;
  Shard& shard = shard_for(ndn);
  {
    MutexLock lock(shard.mu);
    const auto it = shard.records.find(ndn);
    if (it != shard.records.end() && it->second.epoch == epoch) {
      Record& record = it->second;
      record.in_flight = false;
      if (status.ok()) {
        flushes_.fetch_add(1, std::memory_order_relaxed);
        record.stored = written;
        record.written_version = std::max(record.written_version, version);
        if (record.lock_durable()) {
          durable.swap(record.waiters);
        } else if (!record.waiters.empty()) {
          submit_flush(shard, ndn, record);  // The lock came after this write: write it too.
        }
      } else if (status.code() == StatusCode::kUnwillingToPerform ||
                 status.code() == StatusCode::kNoSuchObject) {
        flush_failures_.fetch_add(1, std::memory_order_relaxed);
        // The entry changed under the table (the check refused) or went away: its stored state
        // wins.
        gone.swap(record.waiters);
        shard.records.erase(it);
        records_.fetch_sub(1, std::memory_order_relaxed);
      } else {
        // Not written (storage): kept, and tried again at the flusher's next round; said on
        // standard error at the 1st, 2nd, 4th, 8th, ... failure.
        const std::uint64_t failures = flush_failures_.fetch_add(1, std::memory_order_relaxed) + 1;
        if ((failures & (failures - 1)) == 0) {
          std::fprintf(stderr, "numadir: password policy state of %s not written: %s\n",
                       record.dn.c_str(), status.to_string().c_str());
        }
      }
    }
  }
  for (auto& done : durable) {
    done(true);
  }
  for (auto& done : gone) {
    done(false);
  }
  // Notified with the lock held: flush_now (and with it the destructor) cannot return and
  // destroy the condition variable before the notify is done.
  std::lock_guard lock(flusher_mu_);
  --in_flight_;
  idle_cv_.notify_all();
}

void FailureTable::reconcile(const std::string& ndn, std::string_view dn) {
  {
    Shard& shard = shard_for(ndn);
    MutexLock lock(shard.mu);
    if (!shard.records.contains(ndn)) {
      return;  // The common case: an entry without lockout state in memory.
    }
  }
  // Only this entry's lockout state decides: an update of its other attributes leaves the record.
  std::optional<Snapshot> stored;
  const std::unique_ptr<backend::ReadTxn> txn = directory_.begin_read();
  const Status found = directory_.lookup(*txn, dn, [&](const backend::EntryRef& entry) {
    stored = Snapshot::of(PasswordState::from_entry(entry));
  });
  (void)found;  // Gone, renamed or unreadable: the record goes.
  std::vector<std::function<void(bool)>> gone;
  {
    Shard& shard = shard_for(ndn);
    MutexLock lock(shard.mu);
    const auto it = shard.records.find(ndn);
    if (it == shard.records.end() || (stored.has_value() && *stored == it->second.stored)) {
      return;
    }
    gone.swap(it->second.waiters);
    shard.records.erase(it);
    records_.fetch_sub(1, std::memory_order_relaxed);
  }
  for (auto& done : gone) {
    done(false);
  }
}

void FailureTable::wake_flusher(bool urgent) {
  // A flusher on its timer finds the change at its next round: only a flusher asleep for want of
  // records, or a lock to write, is woken (a wake-up per failed bind cost more than the count).
  // seq_cst with records_ (record_of's increment, the flusher's check): one of the two sees
  // the other's write.
  if (!urgent && !sleeping_idle_.load(std::memory_order_seq_cst)) {
    return;
  }
  std::lock_guard lock(flusher_mu_);
  urgent_ = urgent_ || urgent;
  flusher_cv_.notify_one();
}

void FailureTable::flusher_main() {
  std::unique_lock lock(flusher_mu_);
  while (!stopping_) {
    if (records_.load(std::memory_order_seq_cst) == 0 && !urgent_) {
      // Nothing held: sleep until a failure makes a record (wake_flusher), not on a timer.
      sleeping_idle_.store(true, std::memory_order_seq_cst);
      flusher_cv_.wait(lock, [&] {
        return stopping_ || urgent_ || records_.load(std::memory_order_seq_cst) > 0;
      });
      sleeping_idle_.store(false, std::memory_order_relaxed);
    } else {
      flusher_cv_.wait_for(lock, flush_interval_, [&] { return stopping_ || urgent_; });
    }
    if (stopping_) {
      break;
    }
    urgent_ = false;
    lock.unlock();
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < kShards; ++i) {
      Shard& shard = shards_[i];
      MutexLock shard_lock(shard.mu);
      for (auto it = shard.records.begin(); it != shard.records.end();) {
        Record& record = it->second;
        const bool only_clears = record.current.failures.empty() &&
                                 record.current.same_lock(record.stored) &&
                                 !record.stored.failures.empty();
        if (record.version != record.written_version) {
          if (!only_clears || now - record.touched >= clear_interval_) {
            submit_flush(shard, it->first, record);
          }
        } else if (!record.in_flight && record.waiters.empty() &&
                   now - record.touched > kEvictAfter) {
          it = shard.records.erase(it);
          records_.fetch_sub(1, std::memory_order_relaxed);
          continue;
        }
        ++it;
      }
    }
    lock.lock();
  }
}

void FailureTable::flush_now() {
  for (int round = 0; round < 100; ++round) {
    bool dirty = false;
    for (std::size_t i = 0; i < kShards; ++i) {
      Shard& shard = shards_[i];
      MutexLock shard_lock(shard.mu);
      for (auto& [ndn, record] : shard.records) {
        if (record.version != record.written_version) {
          dirty = true;
          submit_flush(shard, ndn, record);
        }
      }
    }
    std::unique_lock lock(flusher_mu_);
    idle_cv_.wait(lock, [&] { return in_flight_ == 0; });
    if (!dirty) {
      return;
    }
  }
}

FailureTable::Stats FailureTable::stats() const {
  return Stats{records_.load(std::memory_order_relaxed), flushes_.load(std::memory_order_relaxed),
               flush_failures_.load(std::memory_order_relaxed),
               lockouts_.load(std::memory_order_relaxed)};
}

}  // namespace numadir::server
