// server/monitoring/log_file.cc: see log_file.h.
#include "server/monitoring/log_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace numadir::server {
namespace {

Status errno_status(const std::filesystem::path& path, std::string_view what) {
  return Status(StatusCode::kIo,
                path.string() + ": " + std::string(what) + ": " + std::strerror(errno));
}

Result<int> open_file(const std::filesystem::path& path) {
  if (path == "-") {
    return dup(STDERR_FILENO);
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    return errno_status(path, "cannot be opened for appending");
  }
  return fd;
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;  // A full or broken disk: the log loses these lines, the server goes on.
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

Result<std::unique_ptr<LogFile>> LogFile::open(const std::filesystem::path& path) {
  Result<int> fd = open_file(path);
  if (!fd.ok()) {
    return fd.status();
  }
  std::unique_ptr<LogFile> log(new LogFile(path, *fd));
  log->writer_ = std::thread([raw = log.get()] { raw->run(); });
  pthread_setname_np(log->writer_.native_handle(), "log-write");
  return log;
}

LogFile::LogFile(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}

LogFile::~LogFile() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
  ::close(fd_);
}

void LogFile::append(std::string_view lines) {
  std::string copy(lines);
  append_taking(copy);
}

void LogFile::append_taking(std::string& lines) {
  bool was_empty = false;
  {
    std::lock_guard lock(mu_);
    if (pending_.size() + lines.size() > kMaxBufferedBytes) {
      std::uint64_t count = 0;
      for (const char c : lines) {
        count += c == '\n' ? 1 : 0;
      }
      dropped_.fetch_add(count, std::memory_order_relaxed);
      lines.clear();
      return;
    }
    was_empty = pending_.empty();
    if (was_empty) {
      pending_.swap(lines);
    } else {
      pending_.append(lines);
    }
    ++appended_;
  }
  lines.clear();
  if (was_empty) {
    wake_.notify_one();
  }
}

Status LogFile::reopen() {
  Result<int> fd = open_file(path_);
  if (!fd.ok()) {
    return fd.status();
  }
  int old = -1;
  {
    std::lock_guard lock(mu_);
    old = fd_;
    fd_ = *fd;
  }
  // The writer may still be writing a batch to the old descriptor: it holds its own copy of
  // the number, and closing it here would let a new file reuse the number under it. Closing
  // after the next batch completes is enough: flush() waits for that.
  flush();
  ::close(old);
  return Status();
}

void LogFile::flush() {
  std::unique_lock lock(mu_);
  const std::uint64_t target = appended_;
  wake_.notify_one();
  written_.wait(lock, [&] { return completed_ >= target || stopping_; });
}

void LogFile::run() {
  std::string batch;
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return !pending_.empty() || stopping_; });
    if (pending_.empty() && stopping_) {
      return;
    }
    batch.swap(pending_);
    pending_.clear();
    const std::uint64_t batch_end = appended_;
    const int fd = fd_;
    lock.unlock();
    write_all(fd, batch);  // Never under the lock: appenders go on meanwhile.
    batch.clear();
    lock.lock();
    completed_ = batch_end;
    written_.notify_all();
  }
}

}  // namespace numadir::server
