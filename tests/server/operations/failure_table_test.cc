// tests/server/operations/failure_table_test.cc: FailureTable over a real Directory: exact counting
// under concurrent failures, the lock written before it is reported, batched writes, and the
// stored state winning after someone else's update.
#include "server/operations/failure_table.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/directory_update.h"
#include "tests/backend/backend_test_util.h"
#include "tests/wait_until.h"

namespace numadir::server {
namespace {

using backend::testing::open_directory;
using backend::testing::person_entry;
using backend::testing::require_ok;
using backend::testing::TempDir;
using backend::testing::test_options;

const std::string kUser = "uid=guess,ou=people,dc=example,dc=com";

// A directory with one user, and a table over it (the DN is already normalized).
struct Fixture {
  Fixture() : directory(open_directory(test_options(dir.path()))) {
    backend::testing::add_base_tree(*directory);
    require_ok(directory->add(person_entry(kUser, "guess", "Guess", "Who"), {}));
    table = std::make_unique<FailureTable>(
        *directory, std::chrono::milliseconds(20), std::chrono::milliseconds(20),
        [](std::string_view dn) { return std::optional<std::string>(std::string(dn)); });
  }
  // The user's state as stored.
  PasswordState stored() {
    std::unique_ptr<backend::ReadTxn> txn = directory->begin_read();
    PasswordState state;
    require_ok(directory->lookup(*txn, kUser, [&](const backend::EntryRef& entry) {
      state = PasswordState::from_entry(entry);
      state.history.clear();
    }));
    return state;
  }

  TempDir dir;
  std::unique_ptr<backend::Directory> directory;
  std::unique_ptr<FailureTable> table;
};

PasswordPolicy lockout_policy(std::int64_t max_failure) {
  PasswordPolicy policy;
  policy.lockout = true;
  policy.max_failure = max_failure;
  policy.max_recorded_failure = max_failure;
  return policy;
}

TEST_CASE("FailureTable: concurrent failures lock after exactly pwdMaxFailure") {
  Fixture fixture;
  const PasswordPolicy policy = lockout_policy(5);
  const PasswordState stored = fixture.stored();
  std::atomic<int> counted{0};
  std::atomic<int> refused_locked{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        switch (fixture.table->record_failure(kUser, kUser, stored, policy, now_micros())) {
          case FailureTable::Failure::kCounted:
            counted.fetch_add(1);
            break;
          case FailureTable::Failure::kLocked:
            refused_locked.fetch_add(1);
            break;
          case FailureTable::Failure::kNotRecorded:
            FAIL("a policy with pwdMaxFailure records failures");
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  CHECK(counted.load() == 5);
  CHECK(refused_locked.load() == 400 - 5);
  CHECK(fixture.table->stats().lockouts == 1);  // One account locked once, by the fifth.
  // The lock reaches storage; a waiter hears of it once it has.
  std::atomic<int> durable{-1};
  fixture.table->when_lock_durable(kUser, [&](bool is_durable) { durable = is_durable ? 1 : 0; });
  REQUIRE(numadir::testing::wait_until([&] { return durable.load() != -1; }));
  CHECK(durable.load() == 1);
  const PasswordState after = fixture.stored();
  CHECK(after.locked.has_value());
  CHECK(after.failures.size() == 5);
}

TEST_CASE("FailureTable: a lock is reported only once the writer has committed it") {
  Fixture fixture;
  const PasswordPolicy policy = lockout_policy(1);
  // Stall the writer: a job whose check waits for the test.
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  bool stalled = false;
  auto stall = std::make_unique<backend::UpdateJob>();
  stall->change = backend::ModifyChange{
      kUser, {{backend::ModificationKind::kReplace, "description", {"stalled"}, false}}};
  stall->check = [&](const backend::WriteView&) {
    std::unique_lock lock(mu);
    stalled = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return Status();
  };
  REQUIRE(fixture.directory->try_submit_update(stall));
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return stalled; });
  }
  CHECK(fixture.table->record_failure(kUser, kUser, fixture.stored(), policy, now_micros()) ==
        FailureTable::Failure::kCounted);
  PasswordState state;
  bool durable = true;
  REQUIRE(fixture.table->overlay(kUser, state, durable));
  CHECK(state.locked.has_value());
  CHECK_FALSE(durable);
  std::atomic<int> answer{-1};
  fixture.table->when_lock_durable(kUser, [&](bool is_durable) { answer = is_durable ? 1 : 0; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(answer.load() == -1);  // The lock's write waits behind the stalled job.
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  REQUIRE(numadir::testing::wait_until([&] { return answer.load() != -1; }));
  CHECK(answer.load() == 1);
  CHECK(fixture.stored().locked.has_value());
}

TEST_CASE("FailureTable: failures are written in batches and a success clears them") {
  Fixture fixture;
  const PasswordPolicy policy = lockout_policy(10);
  for (int i = 0; i < 3; ++i) {
    CHECK(fixture.table->record_failure(kUser, kUser, fixture.stored(), policy, now_micros()) ==
          FailureTable::Failure::kCounted);
  }
  fixture.table->flush_now();
  CHECK(fixture.stored().failures.size() == 3);
  const std::uint64_t flushes = fixture.table->stats().flushes;
  CHECK(flushes >= 1);
  CHECK(flushes <= 3);
  CHECK_FALSE(fixture.table->record_success(kUser, kUser, fixture.stored(), policy, now_micros()));
  fixture.table->flush_now();
  CHECK(fixture.stored().failures.empty());
  // A user with nothing to clear costs no record and no write.
  const std::uint64_t before = fixture.table->stats().flushes;
  CHECK_FALSE(fixture.table->record_success("uid=other", "uid=other", PasswordState{}, policy,
                                            now_micros()));
  fixture.table->flush_now();
  CHECK(fixture.table->stats().flushes == before);
}

TEST_CASE("FailureTable: an administrator's unlock wins over the table") {
  Fixture fixture;
  const PasswordPolicy policy = lockout_policy(2);
  for (int i = 0; i < 2; ++i) {
    fixture.table->record_failure(kUser, kUser, fixture.stored(), policy, now_micros());
  }
  fixture.table->flush_now();
  REQUIRE(fixture.stored().locked.has_value());
  // The rootdn removes the lock and the failures (an update that is not the table's).
  require_ok(fixture.directory->modify(
      kUser,
      std::vector<backend::Modification>{
          {backend::ModificationKind::kDelete, "pwdAccountLockedTime", {}, false},
          {backend::ModificationKind::kReplace, "pwdFailureTime", {}, true}},
      {}));
  REQUIRE(numadir::testing::wait_until([&] {
    PasswordState state = fixture.stored();
    bool durable = false;
    return !fixture.table->overlay(kUser, state, durable);
  }));
  CHECK(fixture.table->record_failure(kUser, kUser, fixture.stored(), policy, now_micros()) ==
        FailureTable::Failure::kCounted);
}

TEST_CASE("FailureTable: a policy that records nothing keeps nothing") {
  Fixture fixture;
  PasswordPolicy policy;  // pwdMaxFailure 0, pwdMaxRecordedFailure 0.
  CHECK(fixture.table->record_failure(kUser, kUser, fixture.stored(), policy, now_micros()) ==
        FailureTable::Failure::kNotRecorded);
  CHECK(fixture.table->stats().records == 0);
}

}  // namespace
}  // namespace numadir::server
