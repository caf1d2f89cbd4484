// server/commands/database_lock.cc: see database_lock.h.
#include "server/commands/database_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace numadir::server {
namespace {

std::string io_problem(const std::filesystem::path& directory, int error) {
  return "database " + directory.string() + ": " + std::string(kDatabaseLockFile) + ": " +
         std::strerror(error);
}

// Returns: the pid written in the lock file `fd`; 0 when none is (yet).
pid_t read_pid(int fd) {
  char text[32] = {};
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) {
    return 0;
  }
  const long pid = std::strtol(text, nullptr, 10);
  return pid > 0 ? static_cast<pid_t>(pid) : 0;
}

std::string pid_text(pid_t pid) { return pid > 0 ? "pid " + std::to_string(pid) : "pid unknown"; }

}  // namespace

Result<DatabaseLock> DatabaseLock::acquire(const std::filesystem::path& directory) {
  const std::filesystem::path path = directory / kDatabaseLockFile;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status(StatusCode::kIo, io_problem(directory, errno));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    Status status = error == EWOULDBLOCK ? Status(StatusCode::kAlreadyExists,
                                                  "database " + directory.string() +
                                                      " is in use by another numadir serve (" +
                                                      pid_text(read_pid(fd)) + ")")
                                         : Status(StatusCode::kIo, io_problem(directory, error));
    ::close(fd);
    return status;
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    ::close(fd);
    return Status(StatusCode::kIo, io_problem(directory, error));
  }
  return DatabaseLock(fd);
}

DatabaseLock& DatabaseLock::operator=(DatabaseLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DatabaseLock::~DatabaseLock() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

Result<std::optional<pid_t>> database_lock_holder(const std::filesystem::path& directory) {
  const std::filesystem::path path = directory / kDatabaseLockFile;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return std::optional<pid_t>();
    }
    return Status(StatusCode::kIo, io_problem(directory, errno));
  }
  std::optional<pid_t> holder;
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    flock(fd, LOCK_UN);
  } else if (errno == EWOULDBLOCK) {
    holder = read_pid(fd);
  } else {
    const int error = errno;
    ::close(fd);
    return Status(StatusCode::kIo, io_problem(directory, error));
  }
  ::close(fd);
  return holder;
}

}  // namespace numadir::server
