// server/monitoring/access_log.h: the access log, in the spirit of slapd's `stats` level: one line
// per connection opened and closed, per operation and per result, e.g.
//   2026-11-30T15:10:02.123456Z conn=3 op=1 SRCH base="ou=people,dc=example,dc=com" scope=2
//   filter="(uid=user7)" attrs="1.1" 2026-11-30T15:10:02.123502Z conn=3 op=1 SEARCH RESULT err=0
//   nentries=1 etime=0.000046
// Written asynchronously: operations append finished lines to a buffer under a short lock and
// a writer thread writes them out, so a slow disk never slows an auth; if the disk stalls past
// kMaxBufferedBytes, lines are dropped and counted ("... lines dropped") rather than blocking.
//
// Thread contract: open/close on the controlling thread; append() from any thread; reopen()
// from any thread (the server calls it on SIGHUP to follow log rotation).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "base/status.h"

namespace numadir::server {

enum class LogLevel : std::uint8_t {
  kOff,    // Nothing.
  kStats,  // Connections, operations and results (slapd's `stats`).
  kDebug,  // Also each entry a search returns (slapd's `stats2`-like detail).
};

// Errors: kInvalidArgument naming the accepted levels.
Result<LogLevel> parse_log_level(std::string_view text);

class AccessLog {
 public:
  static constexpr std::size_t kMaxBufferedBytes = 16 * 1024 * 1024;

  // Opens `path` for appending ("-" is standard error) and starts the writer thread.
  // Errors: kIo naming the file.
  static Result<std::unique_ptr<AccessLog>> open(const std::filesystem::path& path);
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;
  ~AccessLog();  // Writes what is buffered, then stops the writer.

  // Appends `lines` (each ending in '\n'). Never blocks on the disk.
  void append(std::string_view lines);
  // Reopens the file (after logrotate moved it). Errors: kIo; the old file stays in use.
  Status reopen();
  // Returns: lines dropped because the writer fell kMaxBufferedBytes behind.
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Blocks until everything appended so far is written (tests, shutdown).
  void flush();

 private:
  AccessLog(std::filesystem::path path, int fd);
  void run();

  const std::filesystem::path path_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable written_;
  int fd_;                       // Guarded by mu_ (swapped by reopen).
  std::string pending_;          // Guarded by mu_.
  std::uint64_t appended_ = 0;   // Guarded by mu_: batches appended.
  std::uint64_t completed_ = 0;  // Guarded by mu_: batches written.
  bool stopping_ = false;        // Guarded by mu_.
  std::atomic<std::uint64_t> dropped_{0};
  std::thread writer_;
};

// Returns: the current UTC time as "YYYY-MM-DDTHH:MM:SS.uuuuuuZ ".
std::string log_timestamp();

}  // namespace numadir::server
