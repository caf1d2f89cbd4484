// server/commands/child_process.cc: see child_process.h.
#include "server/commands/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace numadir::server {
namespace {

Status io_error(const std::string& what) {
  return Status(StatusCode::kIo, what + ": " + std::strerror(errno));
}

// In the child between fork and exec: only async-signal-safe calls. Reports an errno on
// `report` (close-on-exec: it closes unwritten when the exec succeeds) and exits.
[[noreturn]] void exec_child(const std::vector<char*>& argv, int out_fd, int err_fd, int report,
                             pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) {  // The parent died before prctl took effect.
    _exit(127);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD}) {
    ::signal(signal_number, SIG_DFL);
  }
  const int in_fd = ::open("/dev/null", O_RDONLY);
  if (in_fd < 0 || dup2(in_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
      dup2(err_fd, STDERR_FILENO) < 0) {
    const int error = errno;
    (void)!write(report, &error, sizeof error);
    _exit(127);
  }
  execv(argv[0], argv.data());
  const int error = errno;
  (void)!write(report, &error, sizeof error);
  _exit(127);
}

}  // namespace

Result<std::unique_ptr<ChildProcess>> ChildProcess::start(
    const std::vector<std::string>& argv, const std::filesystem::path& stderr_path) {
  if (argv.empty()) {
    return invalid_argument("no program to start");
  }
  const std::string& program = argv.front();
  std::vector<char*> args;
  for (const std::string& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  const int err_fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (err_fd < 0) {
    return io_error(stderr_path.string());
  }
  int out[2];
  int report[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    ::close(err_fd);
    return io_error("pipe for " + program);
  }
  if (pipe2(report, O_CLOEXEC) != 0) {
    ::close(err_fd);
    ::close(out[0]);
    ::close(out[1]);
    return io_error("pipe for " + program);
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    exec_child(args, out[1], err_fd, report[1], parent);
  }
  const int fork_error = errno;
  ::close(err_fd);
  ::close(out[1]);
  ::close(report[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(report[0]);
    errno = fork_error;
    return io_error("fork for " + program);
  }
  int exec_error = 0;
  ssize_t n = 0;
  do {
    n = read(report[0], &exec_error, sizeof exec_error);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == sizeof exec_error) {
    ::close(out[0]);
    int ignored = 0;
    while (waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
    errno = exec_error;
    return io_error(program);
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, out[0]));
}

ChildProcess::~ChildProcess() {
  if (!status_.has_value()) {
    kill(pid_, SIGKILL);
    int ignored = 0;
    while (waitpid(pid_, &ignored, 0) < 0 && errno == EINTR) {
    }
  }
  ::close(out_fd_);
}

Result<bool> ChildProcess::fill(Clock::time_point deadline, const Interrupted& interrupted) {
  for (;;) {
    if (interrupted && interrupted()) {
      return Status(StatusCode::kIo, "interrupted");
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      return Status(StatusCode::kTimeLimitExceeded, "timed out");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    pollfd wait{out_fd_, POLLIN, 0};
    const int ready = poll(&wait, 1, static_cast<int>(std::min<long long>(left.count() + 1, 100)));
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      return io_error("poll");
    }
    if (ready == 0) {
      continue;
    }
    char chunk[4096];
    const ssize_t n = read(out_fd_, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        continue;
      }
      return io_error("read");
    }
    if (n == 0) {
      return false;
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }
}

Result<std::string> ChildProcess::read_line(Clock::time_point deadline,
                                            const Interrupted& interrupted) {
  for (;;) {
    if (const std::size_t end = buffer_.find('\n'); end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 1);
      return line;
    }
    Result<bool> more = fill(deadline, interrupted);
    if (!more.ok()) {
      return more.status();
    }
    if (!*more) {
      return not_found("end of output");
    }
  }
}

Result<std::string> ChildProcess::read_all(Clock::time_point deadline,
                                           const Interrupted& interrupted) {
  for (;;) {
    Result<bool> more = fill(deadline, interrupted);
    if (!more.ok()) {
      return more.status();
    }
    if (!*more) {
      return std::exchange(buffer_, std::string());
    }
  }
}

void ChildProcess::signal(int signal_number) {
  if (!status_.has_value()) {
    kill(pid_, signal_number);
  }
}

int ChildProcess::wait(std::chrono::milliseconds grace) {
  if (status_.has_value()) {
    return *status_;
  }
  const auto deadline = Clock::now() + grace;
  // A pidfd becomes readable when the child ends: poll it with the time left. Without one
  // (kernels before 5.3) the wait polls waitpid every 10 ms.
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  bool killed = false;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (done < 0 && errno != EINTR) {
      status_ = 255;  // Not our child any more: nothing to wait for.
      break;
    }
    const auto now = Clock::now();
    if (!killed && now >= deadline) {
      kill(pid_, SIGKILL);
      killed = true;
    }
    const auto left = killed
                          ? std::chrono::milliseconds(100)
                          : std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    if (pidfd >= 0) {
      pollfd ended{pidfd, POLLIN, 0};
      poll(&ended, 1, static_cast<int>(left.count()) + 1);
    } else {
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(10)));
    }
  }
  if (pidfd >= 0) {
    ::close(pidfd);
  }
  return *status_;
}

std::optional<std::filesystem::path> find_program(const std::string& program) {
  const auto executable = [](const std::filesystem::path& path) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) {
    return executable(program) ? std::optional<std::filesystem::path>(program) : std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    if (!dir.empty() && executable(std::filesystem::path(dir) / program)) {
      return std::filesystem::path(dir) / program;
    }
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
  }
  return std::nullopt;
}

}  // namespace numadir::server
