// server/commands/child_process.h: a program run by a command (numadir tune runs private
// servers, authrate and gnuplot): started with fork and exec, its standard input /dev/null, its
// standard output a pipe this side reads, its standard error a file; signals at their defaults
// and unblocked in it, and SIGKILL sent to it should this process die first (PR_SET_PDEATHSIG),
// so that no child outlives the command that started it.
//
// Thread contract: owned and used by one thread, which must be the only thread of its process
// while it starts one (fork). The destructor kills (SIGKILL) and reaps a child still running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace numadir::server {

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;
  // Polled every 100 ms while a read waits: returns true to give the wait up (an interrupt).
  using Interrupted = std::function<bool()>;

  // Starts the program at path argv[0] with arguments `argv`; its standard error goes to
  // `stderr_path` (created or truncated, mode 0600).
  // Errors: kIo naming the program for a failed pipe, fork or exec (an exec that fails is
  //   reported here: the child tells through a close-on-exec pipe), or an unwritable stderr_path.
  static Result<std::unique_ptr<ChildProcess>> start(const std::vector<std::string>& argv,
                                                     const std::filesystem::path& stderr_path);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // Returns: the next line of the child's standard output, without its newline.
  // Errors: kNotFound at end of output (the child closed it, usually by exiting);
  //   kTimeLimitExceeded past `deadline`; kIo "interrupted" when `interrupted` said so, and
  //   on a read error.
  Result<std::string> read_line(Clock::time_point deadline, const Interrupted& interrupted);
  // Returns: the rest of the child's standard output, up to its end.
  // Errors: as read_line, but for the end of output.
  Result<std::string> read_all(Clock::time_point deadline, const Interrupted& interrupted);

  // Sends `signal_number` to the child if it still runs.
  void signal(int signal_number);
  // Waits for the child to end; sends SIGKILL once `grace` has passed.
  // Returns: its exit status, or 128 + the signal that ended it.
  int wait(std::chrono::milliseconds grace);
  // SIGTERM, then wait(grace).
  int stop(std::chrono::milliseconds grace) {
    signal(SIGTERM);
    return wait(grace);
  }

 private:
  ChildProcess(pid_t pid, int out_fd) : pid_(pid), out_fd_(out_fd) {}
  // Fills buffer_ with more output; false at its end.
  Result<bool> fill(Clock::time_point deadline, const Interrupted& interrupted);

  pid_t pid_;
  int out_fd_;
  std::optional<int> status_;  // Set once reaped.
  std::string buffer_;         // Read and not yet returned.
};

// Returns: the path of `program` found in $PATH (or `program` itself when it has a '/'), if it
//   is an executable file; nullopt otherwise.
std::optional<std::filesystem::path> find_program(const std::string& program);

}  // namespace numadir::server
