// Tests for backend/directory.h on several threads: readers seeing every acknowledged add while
// a writer adds, and updates from several threads serialized.
#include "backend/directory.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/backend/backend_test_util.h"
#include "tests/backend/directory_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

TEST_CASE("Directory: readers on several threads see every acknowledged add") {
  TempDir dir;
  DirectoryOptions options = test_options(dir.path());
  options.durability = Durability::kNoSync;
  auto directory = open_directory(options);
  add_base_tree(*directory);
  constexpr int kAdds = 300;
  constexpr int kReaders = 3;
  std::atomic<int> acknowledged{0};  // Written by the writer after each add returns (release).
  std::atomic<bool> failed{false};
  std::latch start(kReaders + 1);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&] {
      auto txn = directory->begin_read();
      const schema::Filter all = parse_filter("(objectClass=inetOrgPerson)");
      start.arrive_and_wait();
      int last = 0;
      while (true) {
        const int floor = acknowledged.load(std::memory_order_acquire);
        int seen = 0;
        const SearchSpec spec{kPeople, Scope::kOneLevel, &all, 0, std::nullopt, std::nullopt};
        const Status status = directory->search(*txn, spec, [&](const EntryRef&) {
          ++seen;
          return true;
        });
        // Each search sees at least what was acknowledged before it began, never less than
        // the previous one, and a single user lookup agrees.
        if (!status.ok() || seen < floor || seen < last ||
            (floor > 0 && !directory->get(*txn, user_dn(floor - 1)).ok())) {
          failed = true;
        }
        last = seen;
        if (floor == kAdds) {
          break;
        }
      }
    });
  }
  start.arrive_and_wait();
  for (int n = 0; n < kAdds; ++n) {
    require_ok(directory->add(user(n), {}));
    acknowledged.store(n + 1, std::memory_order_release);
  }
  for (std::thread& reader : readers) {
    reader.join();
  }
  CHECK_FALSE(failed.load());
  require_ok(directory->verify_indexes());
}

TEST_CASE("Directory: updates from several threads are serialized") {
  TempDir dir;
  DirectoryOptions options = test_options(dir.path());
  options.durability = Durability::kNoSync;
  auto directory = open_directory(options);
  add_base_tree(*directory);
  constexpr int kThreads = 4;
  constexpr int kEach = 40;
  std::latch start(kThreads);
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kEach; ++i) {
        const int n = t * 1000 + i;
        if (!directory->add(user(n), {}).ok()) {
          ++failures;
        }
        const std::vector<Modification> mods{{ModificationKind::kAdd, "mail", {"m@x.org"}}};
        if (!directory->modify(user_dn(n), mods, {}).ok()) {
          ++failures;
        }
        if (i % 3 == 0 && !directory->remove(user_dn(n), {}).ok()) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& writer : writers) {
    writer.join();
  }
  CHECK(failures.load() == 0);
  CHECK(directory->entry_count().value() == 3 + kThreads * (kEach - (kEach + 2) / 3));
  require_ok(directory->verify_indexes());
}

}  // namespace
}  // namespace numadir::backend
