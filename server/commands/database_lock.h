// server/commands/database_lock.h: numadir.lock, the file in a database directory that tells
// whether a server has the database open. `numadir serve` holds an exclusive flock(2) on it for
// its whole life, with its pid written in it as text, so that a second serve on the same
// database refuses to start and `numadir tune` refuses to measure beside a live server, each
// naming the server's pid. The file stays when the server ends: the lock, not the file, says
// the database is in use (a file removed on exit would let a server starting meanwhile lock a
// file that the next one no longer sees).
//
// Thread contract: used on the main thread of a command. A DatabaseLock's descriptor is
// O_CLOEXEC (no child inherits the lock); the kernel releases the lock when the descriptor is
// closed (the destructor) or the process ends, however it ends.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string_view>

#include "base/status.h"

namespace numadir::server {

inline constexpr std::string_view kDatabaseLockFile = "numadir.lock";

class DatabaseLock {
 public:
  // Creates `directory`/numadir.lock (mode 0600) if missing, takes an exclusive non-blocking
  // flock on it and writes this process's pid into it.
  // Requires: `directory` exists.
  // Errors: kAlreadyExists "database DIR is in use by another numadir serve (pid N)" (or "pid
  //   unknown" when the holder has not written it yet) when another open file holds the lock;
  //   kIo "database DIR: numadir.lock: <strerror>" when the file cannot be opened, locked or
  //   written.
  static Result<DatabaseLock> acquire(const std::filesystem::path& directory);

  DatabaseLock(DatabaseLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DatabaseLock& operator=(DatabaseLock&& other) noexcept;
  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;
  ~DatabaseLock();  // Releases the lock; the file stays.

 private:
  explicit DatabaseLock(int fd) : fd_(fd) {}
  int fd_;
};

// Who holds `directory`/numadir.lock, found without creating or writing anything: the file is
// opened read-only and a shared lock tried (and dropped at once).
// Returns: nullopt when no process holds the lock (or there is no such file); otherwise the
//   pid written in the file, 0 when none is written yet.
// Errors: kIo "database DIR: numadir.lock: <strerror>" when the file is there but cannot be
//   opened or its lock tried.
Result<std::optional<pid_t>> database_lock_holder(const std::filesystem::path& directory);

}  // namespace numadir::server
