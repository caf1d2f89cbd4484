// Crash durability: a child process adds entries and reports each acknowledged add on a pipe
// (after the synchronous add returns, or from the writer's completion of a queued add); the
// parent SIGKILLs it mid-stream, then reopens the environment and checks that every
// acknowledged entry is there and the indexes are consistent.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "backend/directory.h"
#include "backend/directory_update.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

// The child: adds users until killed, writing "<dn>\n" after each acknowledged add.
[[noreturn]] void run_writer(const DirectoryOptions& options, int out_fd) {
  Result<std::unique_ptr<Directory>> directory =
      Directory::open(test_schema(), options, OpenMode::kCreate);
  if (!directory.ok()) {
    _exit(2);
  }
  for (int n = 0; n < 1'000'000; ++n) {
    const std::string dn = "uid=crash" + std::to_string(n) + "," + kPeople;
    schema::Entry entry = person_entry(dn, "crash" + std::to_string(n), "Crash Test", "Dummy");
    if (!(*directory)->add(entry, {}).ok()) {
      _exit(3);
    }
    const std::string line = dn + "\n";
    if (write(out_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      _exit(4);
    }
  }
  _exit(0);
}

// The child: four threads queue adds to the writer without waiting; each completion (on the
// writer thread) writes "<dn>\n" once the add is reported committed.
[[noreturn]] void run_async_writers(const DirectoryOptions& options, int out_fd) {
  Result<std::unique_ptr<Directory>> directory =
      Directory::open(test_schema(), options, OpenMode::kCreate);
  if (!directory.ok()) {
    _exit(2);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < 1'000'000; ++n) {
        const std::string uid = "async" + std::to_string(t) + "-" + std::to_string(n);
        auto job = std::make_unique<UpdateJob>();
        job->change =
            AddChange{person_entry("uid=" + uid + "," + kPeople, uid, "Async", "Add"), {}};
        job->done = [out_fd, dn = "uid=" + uid + "," + kPeople](Status status) {
          if (!status.ok()) {
            _exit(3);
          }
          const std::string line = dn + "\n";
          if (write(out_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
            _exit(4);
          }
        };
        (*directory)->submit_update(std::move(job));
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  _exit(0);
}

TEST_CASE("Durability: every acknowledged add survives SIGKILL") {
  DirectoryOptions options;
  SUBCASE("sync") {}
  SUBCASE("nosync survives a process crash too") { options.durability = Durability::kNoSync; }
  TempDir dir;
  bool async = false;
  SUBCASE("adds queued from four threads, acknowledged by their completions") { async = true; }
  const Durability durability = options.durability;
  options = test_options(dir.path());
  options.durability = durability;
  {
    auto directory = open_directory(options);
    add_base_tree(*directory);
  }
  (void)test_schema();  // Loaded before fork, so the child does not parse files.

  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(fds[0]);
    if (async) {
      run_async_writers(options, fds[1]);
    }
    run_writer(options, fds[1]);
  }
  close(fds[1]);

  // Read acknowledgements until enough have arrived, then kill mid-stream.
  std::string buffer;
  std::vector<std::string> acknowledged;
  char chunk[4096];
  const std::size_t kill_after = 40;
  bool killed = false;
  while (true) {
    const ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;  // EOF: the child is gone and every line it wrote has been read.
    }
    buffer.append(chunk, static_cast<std::size_t>(n));
    std::size_t end;
    while ((end = buffer.find('\n')) != std::string::npos) {
      acknowledged.push_back(buffer.substr(0, end));
      buffer.erase(0, end + 1);
    }
    if (!killed && acknowledged.size() >= kill_after) {
      REQUIRE(kill(child, SIGKILL) == 0);
      killed = true;
    }
  }
  close(fds[0]);
  int wait_status = 0;
  REQUIRE(waitpid(child, &wait_status, 0) == child);
  REQUIRE_MESSAGE(WIFSIGNALED(wait_status), "the writer exited with ", WEXITSTATUS(wait_status));
  CHECK(WTERMSIG(wait_status) == SIGKILL);
  MESSAGE(acknowledged.size(), " adds acknowledged before the kill");

  auto directory = open_directory(options);
  require_ok(directory->verify_indexes());
  auto txn = directory->begin_read();
  for (const std::string& dn : acknowledged) {
    CHECK_MESSAGE(directory->get(*txn, dn).ok(), dn);
  }
  const std::uint64_t count = directory->entry_count().value();
  CHECK(count >= acknowledged.size() + 3);
  // At most one add committed but not reported, or one batch's worth when queued.
  CHECK(count <= acknowledged.size() + 3 + (async ? options.writer_batch_jobs : 1));
  // The directory takes updates again after the crash.
  require_ok(directory->add(person_entry("uid=after," + kPeople, "after", "After", "Crash"), {}));
  require_ok(directory->verify_indexes());
}

}  // namespace
}  // namespace numadir::backend
