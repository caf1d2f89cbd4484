// server/monitoring/log_file.h: the access log's file: finished lines are appended to a buffer
// under a short lock and a writer thread writes them out, so a slow disk never slows whoever
// appends; if the disk stalls past kMaxBufferedBytes, lines are dropped and counted rather than
// blocking. Reopened on SIGHUP to follow log rotation.
//
// Thread contract: open and destruction on the controlling thread; append(), reopen() and
// flush() from any thread.
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

class LogFile {
 public:
  static constexpr std::size_t kMaxBufferedBytes = 16 * 1024 * 1024;

  // Opens `path` for appending ("-" is standard error) and starts the writer thread.
  // Errors: kIo naming the file.
  static Result<std::unique_ptr<LogFile>> open(const std::filesystem::path& path);
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;
  ~LogFile();  // Writes what is buffered, then stops the writer.

  // Appends `lines` (each ending in '\n'). Never blocks on the disk.
  void append(std::string_view lines);
  // The same, taking `lines` (left empty, with some buffer's capacity): when nothing is pending
  // the buffers are swapped, not copied.
  void append_taking(std::string& lines);
  // Reopens the file (after logrotate moved it). Errors: kIo; the old file stays in use.
  Status reopen();
  // Returns: lines dropped because the writer fell kMaxBufferedBytes behind.
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Blocks until everything appended so far is written (tests, shutdown).
  void flush();

 private:
  LogFile(std::filesystem::path path, int fd);
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

}  // namespace numadir::server
