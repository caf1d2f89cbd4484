// backend/detail/writer.h: Writer, the directory's single writer: one thread that owns the write
// transaction of every update (add, remove, modify, rename, replicated batch), runs the queued
// UpdateJobs in batches (group commit) and publishes each committed change on the change feed.
// Private to backend/: others reach it through Directory (try_submit_update, submit_update,
// run_update, writer_stats, change_feed, on_writer_thread).
//
// A batch: the writer takes every job waiting (at most DirectoryOptions::writer_batch_jobs and
// about writer_batch_bytes), begins one write transaction and runs each job in a transaction
// nested in it: its check, then its change. A job that fails has its nested transaction
// aborted, so it leaves nothing and undoes no other job; a later job sees what the earlier ones
// wrote. Then one commit (one fsync under Durability::kSync) and, in job order, each committed
// change's record on the feed followed by the job's completion. A failed commit fails every job
// of the batch that had succeeded (nothing of them is published). With write_map (MDB_WRITEMAP
// forbids nested transactions) every job has a transaction and a commit of its own, as has a
// batch of one job.
//
// The writer holds DirectoryCore::write_mu from a batch's begin to its commit, as an Importer,
// a BulkImporter and rebuild_indexes do for their whole run: while one of those runs, the
// writer waits and the jobs queue.
//
// Thread contract: any thread may call try_submit, submit, run and stats; the Directory's
// synchronous updates call run. Checks, completions and change subscribers run on the writer
// thread, under the rules of directory_update.h (try_submit is the only submission allowed
// there; submit and run abort with a message). The Writer is created and destroyed by its
// Directory; its destructor runs every job still queued (so every completion is called) and
// joins the thread. No thread may submit once the Directory's destruction has begun.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "backend/change_feed.h"
#include "backend/directory_update.h"
#include "backend/operational.h"
#include "base/status.h"

namespace numadir::backend {

class Txn;  // backend/lmdb_env.h

namespace detail {
struct DirectoryCore;
}  // namespace detail

class Writer {
 public:
  // Starts the writer thread. Requires: `core` is open and outlives the Writer.
  explicit Writer(detail::DirectoryCore& core);
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;
  ~Writer();

  // Queues `job` without waiting. Returns: true, having taken it (`job` is left empty); false
  // when writer_queue_jobs jobs are already waiting (`job` stays with the caller: backpressure,
  // try again once a completion has run). Requires: `job` is non-null.
  [[nodiscard]] bool try_submit(std::unique_ptr<UpdateJob>& job);
  // Queues `job`, waiting while the queue is full. Requires: not on the writer thread.
  void submit(std::unique_ptr<UpdateJob> job);
  // Queues `job` (which must have no completion), waits for its outcome and returns it.
  // Requires: not on the writer thread (aborts with a message there).
  Status run(std::unique_ptr<UpdateJob> job);

  // The feed every committed change is published on.
  ChangeFeed& feed() { return feed_; }

  // Returns: a snapshot of the counters (each read relaxed: they may be mid-batch).
  WriterStats stats() const;

  // Returns: whether the calling thread is the writer thread.
  bool on_writer_thread() const { return std::this_thread::get_id() == thread_id_; }

 private:
  struct Counters;
  struct Batch;
  void main();
  void run_batch(Batch& batch);
  // Commits `txn`, counting the commit's duration. Returns: the commit's status.
  Status timed_commit(Txn& txn);
  // Publishes job `i`'s change if it and `commit_status` are ok, then calls its completion.
  void finish_job(Batch& batch, std::size_t i, const Status& commit_status);

  detail::DirectoryCore& core_;
  ChangeFeed feed_;

  // The queue: submitters append, the writer takes everything waiting at once (a batch) in
  // one lock hold. A mutex rather than a lock-free queue: taking the whole backlog in one
  // step is what group commit wants, and the rate of updates is bounded by the commits.
  std::mutex mu_;
  std::condition_variable work_;                  // Jobs queued, or stopping.
  std::condition_variable room_;                  // The queue dropped below its bound.
  std::deque<std::unique_ptr<UpdateJob>> queue_;  // Guarded by mu_.
  bool stopping_ = false;                         // Guarded by mu_.

  std::unique_ptr<Counters> counters_;  // Written by the writer thread only.
  UuidGenerator uuids_;                 // Owner: the writer thread (the entries it adds).
  std::thread thread_;
  std::thread::id thread_id_;  // Set by the constructor, before any job can be queued.
};

}  // namespace numadir::backend
