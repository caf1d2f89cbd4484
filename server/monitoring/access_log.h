// server/monitoring/access_log.h: the access log, in the spirit of slapd's `stats` level: one line
// per connection opened and closed, per operation and per result (log_records.h shows them).
//
// What the request path pays: each thread that logs owns a LogWriter, a single-producer ring of
// records (log_records.h: times, ids, numbers and the few strings a line needs, copied as bytes);
// writing one is a copy into the ring, with no lock, no formatting and no allocation once the
// writer's scratch buffer has grown. The log's formatting thread drains every ring about every
// kBatchInterval while records come (sleeping otherwise, until a writer wakes it), orders what it
// drained by time, formats the lines and hands them to the LogFile in one batch; the LogFile's own
// thread writes them, so a slow disk never slows an operation. Past LogFile::kMaxBufferedBytes of
// unwritten lines, or a ring full because the formatting thread fell a whole ring behind, lines
// are dropped and counted (dropped()), never waited for; the log then says how many, in a line
// of its own. A ring half full makes the formatting thread drain at once.
//
// Order: records are ordered by the CLOCK_MONOTONIC time they carry; a batch formats only those
// older than the moment it began draining and keeps the rest for the next, so a record written
// after another was (on any thread) never comes out before it.
//
// Thread contract: open, destruction on the controlling thread; make_writer() from any thread, the
// writer then used by that thread only (or by a later one, after the first has handed it over
// with a happens-before, e.g. a join); write_shared(), message(), reopen(), flush(), dropped()
// from any thread.
#pragma once

#include <atomic>
#include <boost/lockfree/spsc_queue.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/status.h"
#include "listener/request_worker_state.h"
#include "server/monitoring/log_file.h"
#include "server/monitoring/log_records.h"
#include "server/monitoring/operation_metrics.h"

namespace numadir::server {

enum class LogLevel : std::uint8_t {
  kOff,    // Nothing.
  kStats,  // Connections, operations and results (slapd's `stats`).
  kDebug,  // Also each entry a search returns (slapd's `stats2`-like detail).
};

// Errors: kInvalidArgument naming the accepted levels.
Result<LogLevel> parse_log_level(std::string_view text);

class AccessLog;

// One thread's records on their way to the formatting thread. Made by AccessLog::make_writer,
// owned by the log.
class LogWriter {
 public:
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Queues `record` (its views need only live during the call). Never blocks; if the ring has
  //   no room for it, drops it and counts it.
  void write(const Record& record);

 private:
  friend class AccessLog;
  LogWriter(AccessLog& log, std::size_t ring_bytes) : log_(log), ring_(ring_bytes) {}

  AccessLog& log_;
  boost::lockfree::spsc_queue<char> ring_;  // Pushed by the owning thread, popped by the
                                            // formatting thread.
  std::string scratch_;                     // Owner: the writing thread.
  std::atomic<std::uint64_t> dropped_{0};   // Written by the writing thread only.
  std::atomic<bool> hurried_{false};        // Set by the writer, cleared by the formatting thread.
  // Set by the formatting thread before it sleeps, taken back by the writer as it wakes it;
  // true at first, for a writer made while the formatting thread sleeps.
  std::atomic<bool> asleep_{true};
};

// A worker state that carries what the monitoring decorators give each thread: its LogWriter
// (LoggingHandler::make_worker_state sets it; nullptr while the log is off) and its slot of the
// operation metrics (OperationHandler::make_worker_state; nullptr while metrics are off), beside
// the caches of the thread's requests (listener::RequestWorkerState). The server's states derive
// from it.
class LoggingWorkerState : public listener::RequestWorkerState {
 public:
  LogWriter* log_writer = nullptr;
  OperationMetrics::Slot* metrics_slot = nullptr;
};

class AccessLog {
 public:
  static constexpr std::size_t kRingBytes = 1024 * 1024;
  static constexpr std::chrono::milliseconds kBatchInterval{10};

  // Opens `path` for appending ("-" is standard error) and starts the formatting and writing
  // threads. Errors: kIo naming the file.
  // `ring_bytes`: each writer's ring (tests make it small).
  static Result<std::unique_ptr<AccessLog>> open(const std::filesystem::path& path,
                                                 LogFormat format = LogFormat::kText,
                                                 std::size_t ring_bytes = kRingBytes);
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;
  ~AccessLog();  // Formats and writes everything written so far, then stops its threads.

  // Returns: a new writer for the calling thread, valid as long as the log.
  LogWriter& make_writer();
  // Writes `record` through the log's shared writer, under a lock: for the few events of a
  //   thread that has no writer of its own (an operation finishing on the writer unit).
  void write_shared(const Record& record);
  // Writes a line of free text (a refused bind, a search scanning its scope) timestamped now,
  //   through the shared writer.
  void message(std::string_view text);
  // Reopens the file (after logrotate moved it). Errors: kIo; the old file stays in use.
  Status reopen() { return file_->reopen(); }
  // Returns: lines dropped (the file fell LogFile::kMaxBufferedBytes behind, or a ring filled).
  std::uint64_t dropped() const;
  // Blocks until every record written before the call is formatted and written.
  void flush();

 private:
  friend class LogWriter;
  AccessLog(std::unique_ptr<LogFile> file, LogFormat format, std::size_t ring_bytes);
  void run();
  // Formatting thread: moves what the rings hold into held_, then formats and hands to the file
  //   every held record older than `watermark`. Returns: whether any record was drained or is
  //   still held.
  bool drain(std::int64_t watermark);
  // Formatting thread: marks every writer's asleep_ and then returns whether every ring is empty
  //   (a record pushed after the mark wakes it).
  bool sleep_if_empty();
  // A writer that found asleep_ set after pushing: wakes the formatting thread.
  void wake();
  // A writer whose ring is half full: the formatting thread drains now, not at its next batch.
  void hurry();

  const std::size_t ring_bytes_;
  const std::unique_ptr<LogFile> file_;

  mutable std::mutex writers_mu_;
  std::vector<std::unique_ptr<LogWriter>> writers_;  // Guarded by writers_mu_.
  std::mutex shared_mu_;
  LogWriter* shared_ = nullptr;  // Guarded by shared_mu_ (the writer; the pointer is set once).

  std::mutex mu_;
  std::condition_variable wake_cv_;
  std::condition_variable flushed_cv_;
  bool woken_ = false;                 // Guarded by mu_: a writer woke the formatting thread.
  std::atomic<bool> hurry_{false};     // A ring is half full.
  bool stopping_ = false;              // Guarded by mu_.
  std::uint64_t flush_requested_ = 0;  // Guarded by mu_.
  std::uint64_t flush_done_ = 0;       // Guarded by mu_.

  // Owner: the formatting thread.
  LineFormatter formatter_;
  std::string held_;   // Records drained, not yet formatted (encode_record's bytes, back to back).
  std::string kept_;   // Scratch: the records a batch keeps for the next.
  std::string lines_;  // Scratch: a batch's lines.
  struct Held {
    std::int64_t time_ns;
    std::uint32_t at;
    std::uint32_t size;
  };
  std::vector<Held> order_;             // Scratch: held_'s records by time.
  std::uint64_t dropped_reported_ = 0;  // What the last "lines dropped" line counted to.

  std::thread thread_;  // The formatting thread.
};

}  // namespace numadir::server
