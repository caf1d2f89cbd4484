// backend/writer.cc: the writer thread, its queue, group commit and the view a check reads.
#include "backend/detail/writer.h"

#include <array>
#include <atomic>
#include <chrono>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/detail/change_state.h"
#include "backend/detail/directory_core.h"
#include "backend/detail/update_util.h"
#include "base/cache_line.h"
#include "base/check.h"

namespace numadir::backend {

using detail::DirectoryCore;

namespace {

std::size_t attribute_bytes(std::string_view description, const std::vector<std::string>& values) {
  std::size_t bytes = description.size();
  for (const std::string& value : values) {
    bytes += value.size();
  }
  return bytes;
}

// A check's view of the write transaction (the job's nested one, before its change).
class TxnWriteView final : public WriteView {
 public:
  TxnWriteView(const DirectoryCore& core, MDB_txn* txn) : core_(core), txn_(txn) {}

  Result<schema::Entry> get(std::string_view dn) const override {
    EntryView view;
    Result<EntryId> id = find(dn, &view);
    if (!id.ok()) {
      return id.status();
    }
    // Cursors of a write transaction are closed before it ends: this cache dies with the call.
    CursorCache cursors;
    cursors.bind(txn_);
    schema::Entry entry;
    NUMADIR_RETURN_IF_ERROR(detail::materialize_entry(core_, cursors, *id, view, &entry));
    return entry;
  }

  Status lookup(std::string_view dn,
                const std::function<void(const EntryRef&)>& on_entry) const override {
    EntryView view;
    Result<EntryId> id = find(dn, &view);
    if (!id.ok()) {
      return id.status();
    }
    CursorCache cursors;
    cursors.bind(txn_);
    detail::deliver_entry(core_, cursors, *id, view, on_entry);
    return Status();
  }

  Result<bool> exists(std::string_view dn) const override {
    Result<std::string> key = dn_key_of(dn, core_.normalizer);
    if (!key.ok()) {
      return key.status();
    }
    if (detail::faults_injected(core_)) [[unlikely]] {
      NUMADIR_RETURN_IF_ERROR(detail::fault_for_read(core_, *key));
    }
    Result<EntryId> id = core_.dns.find(txn_, *key);
    if (!id.ok()) {
      return id.status();
    }
    return *id != 0;
  }

 private:
  Result<EntryId> find(std::string_view dn, EntryView* view) const {
    Result<std::string> key = dn_key_of(dn, core_.normalizer);
    if (!key.ok()) {
      return key.status();
    }
    if (detail::faults_injected(core_)) [[unlikely]] {
      NUMADIR_RETURN_IF_ERROR(detail::fault_for_read(core_, *key));
    }
    return detail::find_entry(core_, txn_, *key, view);
  }

  const DirectoryCore& core_;
  MDB_txn* const txn_;
};

// The outcome of a synchronous run(), handed from the writer thread to the waiting caller.
class Waiter {
 public:
  void set(Status status) {
    std::lock_guard lock(mu_);
    status_ = std::move(status);
    done_ = true;
    // Notified with mu_ held: the waiter cannot return (and destroy this) before the notify.
    done_cv_.notify_one();
  }
  Status wait() {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [this] { return done_; });
    return std::move(status_);
  }

 private:
  std::mutex mu_;
  std::condition_variable done_cv_;
  bool done_ = false;  // Guarded by mu_.
  Status status_;      // Guarded by mu_.
};

// Single writer: a relaxed load and store cannot lose an increment.
void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

}  // namespace

std::size_t UpdateJob::approximate_bytes() const {
  return std::visit(
      [](const auto& change) -> std::size_t {
        using T = std::decay_t<decltype(change)>;
        std::size_t bytes = 0;
        if constexpr (std::is_same_v<T, AddChange>) {
          bytes = change.entry.dn.size();
          for (const schema::EntryAttribute& attribute : change.entry.attributes) {
            bytes += attribute_bytes(attribute.description, attribute.values);
          }
        } else if constexpr (std::is_same_v<T, ModifyChange>) {
          bytes = change.dn.size();
          for (const Modification& modification : change.modifications) {
            bytes += attribute_bytes(modification.description, modification.values);
          }
        } else if constexpr (std::is_same_v<T, RenameChange>) {
          bytes =
              change.dn.size() + change.new_rdn.size() + change.new_superior.value_or("").size();
        } else if constexpr (std::is_same_v<T, ReplicaChange>) {
          bytes = change.cookie.value_or("").size();
          for (const ReplicaItem& item : change.items) {
            bytes += item.uuid.size() + item.entry.dn.size() + item.packed.size();
            if (item.prepared.has_value()) {
              bytes += item.prepared->encoded.size();
            }
            for (const schema::EntryAttribute& attribute : item.entry.attributes) {
              bytes += attribute_bytes(attribute.description, attribute.values);
            }
          }
        } else {
          bytes = change.dn.size();
        }
        return bytes;
      },
      change);
}

// Counters of the writer thread, on a line of their own (stats() readers share it rarely).
struct alignas(kCacheLineSize) Writer::Counters {
  std::atomic<std::uint64_t> jobs{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> commits{0};
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::uint64_t> largest_batch{0};
  std::array<std::atomic<std::uint64_t>, kCommitBuckets> commit_buckets{};
  std::atomic<std::uint64_t> commit_ns{0};
  std::array<std::atomic<std::uint64_t>, kBatchSizeBuckets> batch_size_buckets{};
  std::atomic<std::uint64_t> batched_jobs{0};
};

// The jobs of one batch and what became of them, reused from batch to batch.
// Owner: the writer thread.
struct Writer::Batch {
  std::vector<std::unique_ptr<UpdateJob>> jobs;
  std::vector<Status> outcomes;  // Per job: its own outcome (before the commit).
  // Per job: its records (one, but for a replica batch), when its outcome is ok.
  std::vector<std::vector<ChangeRecord>> changes;

  void reset(std::size_t n) {
    outcomes.assign(n, Status());
    changes.resize(n);
  }
  void clear() {
    jobs.clear();
    outcomes.clear();
  }
};

Writer::Writer(DirectoryCore& core) : core_(core), counters_(std::make_unique<Counters>()) {
  thread_ = std::thread([this] { main(); });
  thread_id_ = thread_.get_id();
}

Writer::~Writer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_.notify_one();
  thread_.join();
}

bool Writer::try_submit(std::unique_ptr<UpdateJob>& job) {
  NUMADIR_CHECK(job != nullptr, "Writer::try_submit: no job");
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= core_.options.writer_queue_jobs) {
      return false;
    }
    queue_.push_back(std::move(job));
  }
  work_.notify_one();
  return true;
}

void Writer::submit(std::unique_ptr<UpdateJob> job) {
  NUMADIR_CHECK(job != nullptr, "Writer::submit: no job");
  NUMADIR_CHECK(!on_writer_thread(),
                "Writer::submit on the writer thread (from a check, completion or change "
                "callback) would wait for itself");
  {
    std::unique_lock lock(mu_);
    room_.wait(lock, [this] { return queue_.size() < core_.options.writer_queue_jobs; });
    queue_.push_back(std::move(job));
  }
  work_.notify_one();
}

Status Writer::run(std::unique_ptr<UpdateJob> job) {
  NUMADIR_CHECK(!on_writer_thread(),
                "a synchronous update on the writer thread (from a check, completion or change "
                "callback) would wait for itself");
  NUMADIR_CHECK(job != nullptr && job->done == nullptr, "Writer::run: a job without completion");
  Waiter waiter;
  job->done = [&waiter](Status status) { waiter.set(std::move(status)); };
  submit(std::move(job));
  return waiter.wait();
}

WriterStats Writer::stats() const {
  WriterStats stats;
  stats.jobs = counters_->jobs.load(std::memory_order_relaxed);
  stats.failed = counters_->failed.load(std::memory_order_relaxed);
  stats.commits = counters_->commits.load(std::memory_order_relaxed);
  stats.batches = counters_->batches.load(std::memory_order_relaxed);
  stats.largest_batch = counters_->largest_batch.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kCommitBuckets; ++i) {
    stats.commit_buckets[i] = counters_->commit_buckets[i].load(std::memory_order_relaxed);
  }
  stats.commit_ns = counters_->commit_ns.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kBatchSizeBuckets; ++i) {
    stats.batch_size_buckets[i] = counters_->batch_size_buckets[i].load(std::memory_order_relaxed);
  }
  stats.batched_jobs = counters_->batched_jobs.load(std::memory_order_relaxed);
  return stats;
}

void Writer::main() {
  Batch batch;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      work_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) {
        return;  // Stopping, and every queued job has run.
      }
      // Every job waiting, up to the bounds (and at least one, whatever its size).
      std::size_t bytes = 0;
      while (!queue_.empty() && batch.jobs.size() < core_.options.writer_batch_jobs) {
        const std::size_t job_bytes = queue_.front()->approximate_bytes();
        if (!batch.jobs.empty() && bytes + job_bytes > core_.options.writer_batch_bytes) {
          break;
        }
        bytes += job_bytes;
        batch.jobs.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    room_.notify_all();
    run_batch(batch);
    batch.clear();
  }
}

namespace {

// Runs one job's check and change in `txn`; fills `changes` (cleared first) on success. An added
// entry's entryUUID comes from `uuids`.
Status run_job(DirectoryCore& core, UpdateJob& job, MDB_txn* txn, UuidGenerator& uuids,
               std::vector<ChangeRecord>& changes) {
  changes.clear();
  if (job.check) {
    const TxnWriteView view(core, txn);
    NUMADIR_RETURN_IF_ERROR(job.check(view));
  }
  // Stamped here, on the writer thread in job order: CSNs grow with the commit order.
  const Stamp stamp = detail::make_stamp(core, job.context);
  if (auto* replica = std::get_if<ReplicaChange>(&job.change)) {
    NUMADIR_RETURN_IF_ERROR(detail::apply_replica(core, txn, *replica, stamp, changes));
    return detail::record_changes(core, txn, changes, replica->cookie_csn, replica->refresh);
  }
  ChangeRecord* change = &changes.emplace_back();
  change->internal = job.context.internal;
  NUMADIR_RETURN_IF_ERROR(std::visit(
      [&](auto& op) -> Status {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, ReplicaChange>) {
          return internal_error("replica change outside apply_replica");
        } else if constexpr (std::is_same_v<T, AddChange>) {
          return detail::apply_add(core, txn, op.entry, op.internal_attributes, stamp, uuids,
                                   change);
        } else if constexpr (std::is_same_v<T, RemoveChange>) {
          return detail::apply_remove(core, txn, op.dn, stamp, change);
        } else if constexpr (std::is_same_v<T, ModifyChange>) {
          return detail::apply_modify(core, txn, op.dn, op.modifications, stamp, change);
        } else {
          std::optional<std::string_view> superior;
          if (op.new_superior.has_value()) {
            superior = *op.new_superior;
          }
          return detail::apply_rename(core, txn, op.dn, op.new_rdn, op.delete_old_rdn, superior,
                                      stamp, change);
        }
      },
      job.change));
  // The contextCSN and the session log, in the job's transaction: they stand or fall with it.
  return detail::record_changes(core, txn, changes, {});
}

}  // namespace

void Writer::run_batch(Batch& batch) {
  const std::size_t n = batch.jobs.size();
  batch.reset(n);
  bump(counters_->batches);
  if (n > counters_->largest_batch.load(std::memory_order_relaxed)) {
    counters_->largest_batch.store(n, std::memory_order_relaxed);
  }
  if (n > 0) {
    bump(counters_->batch_size_buckets[bucket_index(kBatchSizeBounds, n)]);
    bump(counters_->batched_jobs, n);
  }
  Status commit_status;
  if (n == 1 || core_.options.write_map) {
    // A transaction and a commit per job: nothing to batch, or (MDB_WRITEMAP) no nesting.
    for (std::size_t i = 0; i < n; ++i) {
      Status outcome;
      {
        MutexLock lock(core_.write_mu);
        Result<Txn> txn = Txn::begin(*core_.env, false);
        outcome = txn.status();
        if (outcome.ok()) {
          outcome = run_job(core_, *batch.jobs[i], txn->raw(), uuids_, batch.changes[i]);
        }
        if (outcome.ok()) {
          outcome = timed_commit(*txn);
          if (outcome.ok()) {
            bump(counters_->commits);
          }
        }
      }  // An uncommitted transaction was aborted on the way out.
      batch.outcomes[i] = std::move(outcome);
      finish_job(batch, i, Status());
    }
    return;
  }
  {
    MutexLock lock(core_.write_mu);
    Result<Txn> parent = Txn::begin(*core_.env, false);
    if (!parent.ok()) {
      commit_status = parent.status();
    } else {
      bool any = false;
      for (std::size_t i = 0; i < n; ++i) {
        Result<Txn> child = Txn::begin_nested(*core_.env, *parent);
        Status outcome = child.status();
        if (outcome.ok()) {
          outcome = run_job(core_, *batch.jobs[i], child->raw(), uuids_, batch.changes[i]);
        }
        if (outcome.ok()) {
          outcome = child->commit();  // Into the parent; LMDB aborts the child if it fails.
        }
        // A failed job's child is aborted when `child` goes: it leaves nothing behind.
        any = any || outcome.ok();
        batch.outcomes[i] = std::move(outcome);
      }
      if (any) {
        commit_status = timed_commit(*parent);
        if (commit_status.ok()) {
          bump(counters_->commits);
        }
      }  // Otherwise nothing to commit: the parent is aborted.
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    finish_job(batch, i, commit_status);
  }
}

Status Writer::timed_commit(Txn& txn) {
  const std::uint64_t start = now_ns();
  Status status = txn.commit();  // mdb_txn_commit: the pages written and, under kSync, fsynced.
  const std::uint64_t took = now_ns() - start;
  bump(counters_->commit_buckets[bucket_index(kCommitBoundsNs, took)]);
  bump(counters_->commit_ns, took);
  return status;
}

void Writer::finish_job(Batch& batch, std::size_t i, const Status& commit_status) {
  Status& outcome = batch.outcomes[i];
  if (outcome.ok() && !commit_status.ok()) {
    outcome = commit_status;  // Its change was in the transaction that failed to commit.
  }
  if (outcome.ok()) {
    for (ChangeRecord& change : batch.changes[i]) {
      feed_.publish(change);
    }
  } else {
    bump(counters_->failed);
  }
  bump(counters_->jobs);
  UpdateJob& job = *batch.jobs[i];
  if (job.done) {
    job.done(std::move(outcome));
  }
}

}  // namespace numadir::backend
