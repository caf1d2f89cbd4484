// Tests for backend/detail/writer.h and backend/change_feed.h: group commit, checks inside the
// write transaction, failing jobs in a batch, the change feed's order and exactly-once delivery
// under many submitting threads, server ids in CSNs, and imports excluding the writer.

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <latch>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "backend/change_feed.h"
#include "backend/directory.h"
#include "backend/directory_update.h"
#include "backend/operational.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

std::string user_dn(const std::string& uid) { return "uid=" + uid + "," + kPeople; }

schema::Entry user(const std::string& uid) {
  return person_entry(user_dn(uid), uid, "User " + uid, "Surname");
}

std::unique_ptr<UpdateJob> add_job(schema::Entry entry) {
  auto job = std::make_unique<UpdateJob>();
  job->change = AddChange{std::move(entry), {}};
  return job;
}

std::unique_ptr<UpdateJob> describe_job(const std::string& dn, const std::string& text) {
  auto job = std::make_unique<UpdateJob>();
  job->change = ModifyChange{dn, {Modification{ModificationKind::kReplace, "description", {text}}}};
  return job;
}

// Holds the writer thread inside the check of a job of its own (a modify of ou=people) until
// release(): the jobs queued meanwhile are all waiting when the writer next takes a batch.
class WriterGate {
 public:
  explicit WriterGate(Directory& directory) {
    std::unique_ptr<UpdateJob> job = describe_job(kPeople, "gate");
    job->check = [this](const WriteView&) {
      entered_.count_down();
      release_.wait();
      return Status();
    };
    job->done = [this](Status status) {
      status_ = std::move(status);
      done_.count_down();
    };
    directory.submit_update(std::move(job));
    entered_.wait();
  }
  // Lets the writer go on, and waits until the gate's own job is complete.
  void release() {
    release_.count_down();
    done_.wait();
    require_ok(status_);
  }

 private:
  std::latch entered_{1};
  std::latch release_{1};
  std::latch done_{1};
  Status status_;  // Written by the writer thread before done_.
};

// Collects the outcomes of jobs submitted with done() (each slot written once, by the writer
// thread, before the latch counts it).
class Outcomes {
 public:
  explicit Outcomes(std::size_t jobs) : statuses_(jobs), done_(static_cast<std::ptrdiff_t>(jobs)) {}
  WriteCompletion done(std::size_t i) {
    return [this, i](Status status) {
      statuses_[i] = std::move(status);
      done_.count_down();
    };
  }
  const std::vector<Status>& wait() {
    done_.wait();
    return statuses_;
  }

 private:
  std::vector<Status> statuses_;
  std::latch done_;
};

// Records every change published, on the writer thread.
struct Recorder {
  std::vector<ChangeRecord> records;
  bool all_on_writer = true;
};

std::unique_ptr<ChangeSubscription> record_changes(Directory& directory, Recorder& recorder) {
  return directory.subscribe_changes([&directory, &recorder](const ChangeRecord& record) {
    recorder.all_on_writer = recorder.all_on_writer && directory.on_writer_thread();
    recorder.records.push_back(record);
  });
}

TEST_CASE("WriterStats: bucket_index puts a value in the first bucket whose bound holds it") {
  CHECK(bucket_index(kBatchSizeBounds, 1) == 0);
  CHECK(bucket_index(kBatchSizeBounds, 2) == 1);
  CHECK(bucket_index(kBatchSizeBounds, 3) == 2);
  CHECK(bucket_index(kBatchSizeBounds, 256) == 8);
  CHECK(bucket_index(kBatchSizeBounds, 257) == 9);  // +Inf
  CHECK(bucket_index(kCommitBoundsNs, 10'000) == 0);
  CHECK(bucket_index(kCommitBoundsNs, 10'001) == 1);
  CHECK(bucket_index(kCommitBoundsNs, 1'000'000'000) == 15);
  CHECK(bucket_index(kCommitBoundsNs, 1'000'000'001) == 16);
}

TEST_CASE("Writer: group commit commits the jobs waiting behind one transaction together") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  add_base_tree(*directory);
  const WriterStats before = directory->writer_stats();
  constexpr std::size_t kJobs = 100;
  Outcomes outcomes(kJobs);
  // Used by the completions only (on the writer thread): each sees its add committed.
  auto reader = directory->begin_read();
  std::vector<bool> visible(kJobs, false);
  {
    WriterGate gate(*directory);
    for (std::size_t i = 0; i < kJobs; ++i) {
      std::unique_ptr<UpdateJob> job = add_job(user("batch" + std::to_string(i)));
      job->done = [&, i, done = outcomes.done(i)](Status status) {
        visible[i] = directory->get(*reader, user_dn("batch" + std::to_string(i))).ok();
        done(std::move(status));
      };
      REQUIRE(directory->try_submit_update(job));
      CHECK(job == nullptr);
    }
    gate.release();
  }
  for (const Status& status : outcomes.wait()) {
    CHECK_MESSAGE(status.ok(), status.to_string());
  }
  CHECK(static_cast<std::size_t>(std::count(visible.begin(), visible.end(), true)) == kJobs);
  const WriterStats after = directory->writer_stats();
  CHECK(after.jobs - before.jobs == kJobs + 1);
  CHECK(after.failed == before.failed);
  // The gate's job alone, then the hundred in one transaction.
  CHECK(after.commits - before.commits == 2);
  CHECK(after.largest_batch == kJobs);
  // By size: the gate's job in le=1, the hundred in le=128; each commit timed once.
  CHECK(after.batch_size_buckets[0] - before.batch_size_buckets[0] == 1);
  CHECK(after.batch_size_buckets[7] - before.batch_size_buckets[7] == 1);
  CHECK(after.batched_jobs - before.batched_jobs == kJobs + 1);
  std::uint64_t timed = 0;
  for (std::size_t i = 0; i < kCommitBuckets; ++i) {
    timed += after.commit_buckets[i] - before.commit_buckets[i];
  }
  CHECK(timed == 2);
  CHECK(after.commit_ns > before.commit_ns);
  CHECK(directory->entry_count().value() == 3 + kJobs);
  require_ok(directory->verify_indexes());
}

TEST_CASE("Writer: a check sees what an earlier job of the same batch wrote") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  add_base_tree(*directory);
  Outcomes outcomes(2);
  Result<bool> seen_before = false;
  Result<bool> seen_parent = false;
  std::string looked_up;
  Status got;
  {
    WriterGate gate(*directory);
    std::unique_ptr<UpdateJob> first = add_job(user("early"));
    first->done = outcomes.done(0);
    std::unique_ptr<UpdateJob> second = describe_job(user_dn("early"), "seen");
    second->check = [&](const WriteView& view) {
      seen_before = view.exists(user_dn("early"));
      seen_parent = view.exists(kPeople);
      NUMADIR_RETURN_IF_ERROR(
          view.lookup(user_dn("early"), [&](const EntryRef& entry) { looked_up = entry.dn(); }));
      Result<schema::Entry> entry = view.get(user_dn("early"));
      got = entry.status();
      if (entry.ok() && values_of(*entry, "uid") != std::vector<std::string>{"early"}) {
        got = Status(StatusCode::kInternal, "wrong entry");
      }
      return Status();
    };
    second->done = outcomes.done(1);
    REQUIRE(directory->try_submit_update(first));
    REQUIRE(directory->try_submit_update(second));
    gate.release();
  }
  for (const Status& status : outcomes.wait()) {
    CHECK_MESSAGE(status.ok(), status.to_string());
  }
  REQUIRE(seen_before.ok());
  CHECK(*seen_before);
  REQUIRE(seen_parent.ok());
  CHECK(*seen_parent);
  CHECK(looked_up == user_dn("early"));
  CHECK_MESSAGE(got.ok(), got.to_string());
  auto txn = directory->begin_read();
  Result<schema::Entry> entry = directory->get(*txn, user_dn("early"));
  REQUIRE(entry.ok());
  CHECK(values_of(*entry, "description") == std::vector<std::string>{"seen"});
}

TEST_CASE("Writer: a failing job of a batch leaves nothing and undoes no other job") {
  TempDir dir;
  DirectoryOptions options = test_options(dir.path());
  SUBCASE("nested transactions") {}
  SUBCASE("write_map: a transaction per job") { options.write_map = true; }
  auto directory = open_directory(options);
  add_base_tree(*directory);
  Recorder recorder;
  auto subscription = record_changes(*directory, recorder);
  const WriterStats before = directory->writer_stats();
  std::vector<std::unique_ptr<UpdateJob>> jobs;
  jobs.push_back(add_job(user("kept1")));
  jobs.push_back(add_job(user("kept1")));  // Duplicate.
  jobs.push_back(add_job(person_entry("uid=orphan,ou=missing," + std::string(kSuffix), "orphan",
                                      "Orphan", "Nobody")));  // Missing parent.
  jobs.push_back(add_job(user("refused")));
  jobs.back()->check = [](const WriteView&) {
    return Status(StatusCode::kUnwillingToPerform, "refused by its check");
  };
  jobs.push_back(add_job(user("kept2")));
  jobs.push_back(describe_job(user_dn("kept2"), "changed"));  // Sees kept2, just added.
  Outcomes outcomes(jobs.size());
  {
    WriterGate gate(*directory);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      jobs[i]->done = outcomes.done(i);
      REQUIRE(directory->try_submit_update(jobs[i]));
    }
    gate.release();
  }
  const std::vector<Status>& statuses = outcomes.wait();
  CHECK(statuses[0].ok());
  CHECK(statuses[1].code() == StatusCode::kEntryAlreadyExists);
  CHECK(statuses[2].code() == StatusCode::kNoSuchObject);
  CHECK(statuses[3].code() == StatusCode::kUnwillingToPerform);
  CHECK(statuses[3].message() == "refused by its check");
  CHECK(statuses[4].ok());
  CHECK(statuses[5].ok());

  const WriterStats after = directory->writer_stats();
  CHECK(after.failed - before.failed == 3);
  CHECK(after.commits - before.commits == (options.write_map ? 1 + 3 : 1 + 1));
  auto txn = directory->begin_read();
  CHECK(directory->get(*txn, user_dn("kept1")).ok());
  CHECK(directory->get(*txn, user_dn("refused")).status().code() == StatusCode::kNoSuchObject);
  CHECK(directory->entry_count().value() == 3 + 2);
  require_ok(directory->verify_indexes());

  // The gate's modify, then the three changes that committed, in job order.
  REQUIRE(recorder.records.size() == 4);
  CHECK(recorder.all_on_writer);
  CHECK(recorder.records[0].dn == kPeople);
  CHECK(recorder.records[1].kind == ChangeKind::kAdd);
  CHECK(recorder.records[1].dn == user_dn("kept1"));
  CHECK(recorder.records[2].kind == ChangeKind::kAdd);
  CHECK(recorder.records[2].dn == user_dn("kept2"));
  CHECK(recorder.records[3].kind == ChangeKind::kModify);
  CHECK(recorder.records[3].dn == user_dn("kept2"));
  CHECK(recorder.records[3].entry_id == recorder.records[2].entry_id);
  for (std::size_t i = 0; i < recorder.records.size(); ++i) {
    CHECK(recorder.records[i].sequence == subscription->start_sequence() + 1 + i);
  }
}

TEST_CASE("ChangeFeed: records name each kind of change with its entry and CSN") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  add_base_tree(*directory);
  Recorder recorder;
  auto subscription = record_changes(*directory, recorder);
  require_ok(directory->add(user("alice"), {}));
  const std::vector<Modification> change{{ModificationKind::kReplace, "description", {"x"}}};
  require_ok(directory->modify(user_dn("alice"), change, {}));
  require_ok(directory->rename(user_dn("alice"), "uid=alicia", true, std::nullopt, {}));
  CHECK(directory->remove(user_dn("alice"), {}).code() == StatusCode::kNoSuchObject);
  require_ok(directory->remove(user_dn("alicia"), {}));
  REQUIRE(recorder.records.size() == 4);
  const ChangeKind kinds[] = {ChangeKind::kAdd, ChangeKind::kModify, ChangeKind::kRename,
                              ChangeKind::kDelete};
  const std::string dns[] = {user_dn("alice"), user_dn("alice"), user_dn("alice"),
                             user_dn("alicia")};
  for (std::size_t i = 0; i < 4; ++i) {
    const ChangeRecord& record = recorder.records[i];
    CHECK(record.kind == kinds[i]);
    CHECK(record.dn == dns[i]);
    CHECK(record.entry_id == recorder.records[0].entry_id);
    CHECK(record.new_dn == (i == 2 ? user_dn("alicia") : ""));
    CHECK(record.csn.size() == std::string("20240101000000.000000Z#000000#000#000000").size());
    if (i > 0) {
      CHECK(record.csn > recorder.records[i - 1].csn);
      CHECK(record.sequence == recorder.records[i - 1].sequence + 1);
    }
  }
  CHECK(std::string(change_kind_name(ChangeKind::kRename)) == "rename");
}

TEST_CASE("ChangeFeed: many submitting threads see each committed change once in commit order") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  add_base_tree(*directory);
  Recorder recorder;
  auto subscription = record_changes(*directory, recorder);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 120;
  const unsigned seed = 20240611;
  MESSAGE("seed ", seed);

  // What each job is expected to do: its kind and DN if it commits, or that it fails.
  struct Expect {
    bool ok;
    ChangeKind kind;
    std::string dn;
  };
  std::vector<Expect> expected(kThreads * kPerThread);
  Outcomes outcomes(expected.size());
  std::vector<std::size_t> committed_order;  // Job numbers, as their completions ran.
  std::vector<std::thread> threads;
  std::atomic<bool> all_on_writer{true};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(seed + static_cast<unsigned>(t));
      int added = 0;  // uid=t-0 .. t-(added-1) are (or will be) there.
      for (int i = 0; i < kPerThread; ++i) {
        const std::size_t number = static_cast<std::size_t>(t * kPerThread + i);
        const std::string mine = std::to_string(t) + "-" + std::to_string(added);
        std::unique_ptr<UpdateJob> job;
        Expect& expect = expected[number];
        switch (added == 0 ? 0 : rng() % 5) {
          case 0:
          case 1:
            job = add_job(user(mine));
            expect = {true, ChangeKind::kAdd, user_dn(mine)};
            ++added;
            break;
          case 2: {  // Duplicate of an earlier add.
            const std::string again = std::to_string(t) + "-" + std::to_string(rng() % added);
            job = add_job(user(again));
            expect = {false, ChangeKind::kAdd, ""};
            break;
          }
          case 3: {  // A modify, refused by its check half the time.
            const std::string dn = user_dn(std::to_string(t) + "-" + std::to_string(added - 1));
            job = describe_job(dn, "job " + std::to_string(number));
            const bool refuse = rng() % 2 == 0;
            job->check = [dn, refuse](const WriteView& view) -> Status {
              Result<bool> there = view.exists(dn);
              if (!there.ok() || !*there) {
                return Status(StatusCode::kInternal, "the entry an earlier job added is missing");
              }
              return refuse ? Status(StatusCode::kUnwillingToPerform, "refused") : Status();
            };
            expect = {!refuse, ChangeKind::kModify, dn};
            break;
          }
          default:  // A missing parent.
            job = add_job(person_entry("uid=" + mine + ",ou=nowhere," + std::string(kSuffix), mine,
                                       "X", "Y"));
            expect = {false, ChangeKind::kAdd, ""};
            break;
        }
        job->done = [&, number, done = outcomes.done(number)](Status status) {
          all_on_writer = all_on_writer && directory->on_writer_thread();
          if (status.ok()) {
            committed_order.push_back(number);
          }
          done(std::move(status));
        };
        directory->submit_update(std::move(job));
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  const std::vector<Status>& statuses = outcomes.wait();
  std::size_t committed = 0;
  for (std::size_t number = 0; number < expected.size(); ++number) {
    CHECK_MESSAGE(statuses[number].ok() == expected[number].ok, "job ", number, ": ",
                  statuses[number].to_string());
    committed += expected[number].ok ? 1 : 0;
  }
  CHECK(all_on_writer);
  CHECK(recorder.all_on_writer);
  // Exactly the committed jobs, each once, in the order their completions ran.
  REQUIRE(recorder.records.size() == committed);
  REQUIRE(committed_order.size() == committed);
  std::vector<std::size_t> last_of_thread(kThreads, 0);
  for (std::size_t i = 0; i < committed; ++i) {
    const ChangeRecord& record = recorder.records[i];
    const Expect& expect = expected[committed_order[i]];
    CHECK(record.sequence == subscription->start_sequence() + 1 + i);
    CHECK(record.kind == expect.kind);
    CHECK(record.dn == expect.dn);
    if (i > 0) {
      CHECK(record.csn > recorder.records[i - 1].csn);
    }
    // Each thread's jobs commit in the order it submitted them.
    const std::size_t thread = committed_order[i] / kPerThread;
    CHECK(committed_order[i] + 1 > last_of_thread[thread]);
    last_of_thread[thread] = committed_order[i] + 1;
  }
  const WriterStats stats = directory->writer_stats();
  MESSAGE(stats.jobs, " jobs in ", stats.batches, " batches, ", stats.commits,
          " commits, largest batch ", stats.largest_batch);
  require_ok(directory->verify_indexes());
}

TEST_CASE("ChangeFeed: a subscription sees nothing once destroyed even from its own callback") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  add_base_tree(*directory);
  int kept_calls = 0;
  int dropped_calls = 0;
  int self_calls = 0;
  auto kept = directory->subscribe_changes([&](const ChangeRecord&) { ++kept_calls; });
  auto dropped = directory->subscribe_changes([&](const ChangeRecord&) { ++dropped_calls; });
  std::unique_ptr<ChangeSubscription> self;
  std::unique_ptr<ChangeSubscription> late;
  int late_calls = 0;
  self = directory->subscribe_changes([&](const ChangeRecord&) {
    ++self_calls;
    self.reset();  // Unsubscribes from inside its own delivery...
    late = directory->subscribe_changes([&](const ChangeRecord&) { ++late_calls; });  // ...and
  });  // subscribes another, which starts with the next change.
  require_ok(directory->add(user("one"), {}));
  dropped.reset();
  require_ok(directory->add(user("two"), {}));
  CHECK(kept_calls == 2);
  CHECK(dropped_calls == 1);
  CHECK(self_calls == 1);
  CHECK(self == nullptr);
  REQUIRE(late != nullptr);
  CHECK(late_calls == 1);
  CHECK(late->start_sequence() + 1 == directory->change_feed().last_sequence());
}

TEST_CASE("Directory: CSNs carry the configured server id") {
  TempDir dir;
  DirectoryOptions options = test_options(dir.path());
  options.server_id = 0xabc;
  auto directory = open_directory(options);
  Recorder recorder;
  auto subscription = record_changes(*directory, recorder);
  add_base_tree(*directory);
  auto txn = directory->begin_read();
  Result<schema::Entry> entry = directory->get(*txn, kPeople);
  REQUIRE(entry.ok());
  const std::vector<std::string> csn = values_of(*entry, "entryCSN");
  REQUIRE(csn.size() == 1);
  CHECK(csn[0].ends_with("#abc#000000"));
  REQUIRE(recorder.records.size() == 3);
  CHECK(recorder.records[1].csn == csn[0]);
  CHECK(next_csn(std::chrono::system_clock::now(), kMaxServerId).ends_with("#fff#000000"));

  TempDir other;
  DirectoryOptions bad = test_options(other.path());
  bad.server_id = kMaxServerId + 1;
  Result<std::unique_ptr<Directory>> refused =
      Directory::open(test_schema(), bad, OpenMode::kCreate);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK(refused.status().message().find("server_id 4096") != std::string::npos);
}

TEST_CASE("Writer: an update queued during an import runs after it and sees its entries") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  Result<std::unique_ptr<Directory::Importer>> importer = directory->begin_import({});
  REQUIRE(importer.ok());
  require_ok((*importer)->add(domain_entry(std::string(kSuffix), "example")));
  require_ok((*importer)->add(ou_entry(kPeople, "people")));
  Outcomes outcomes(1);
  std::unique_ptr<UpdateJob> job = add_job(user("after"));
  job->done = outcomes.done(0);
  REQUIRE(directory->try_submit_update(job));
  require_ok((*importer)->finish());
  importer->reset();  // Releases the writer mutex: the job runs now.
  require_ok(outcomes.wait()[0]);
  CHECK(directory->entry_count().value() == 3);
}

TEST_CASE("Writer: try_submit refuses past the queue bound and the caller keeps the job") {
  TempDir dir;
  DirectoryOptions options = test_options(dir.path());
  options.writer_queue_jobs = 2;
  auto directory = open_directory(options);
  add_base_tree(*directory);
  Outcomes outcomes(2);
  std::unique_ptr<UpdateJob> refused = add_job(user("third"));
  {
    WriterGate gate(*directory);  // Its job is taken: the queue is empty again.
    for (std::size_t i = 0; i < 2; ++i) {
      std::unique_ptr<UpdateJob> job = add_job(user("q" + std::to_string(i)));
      job->done = outcomes.done(i);
      REQUIRE(directory->try_submit_update(job));
    }
    CHECK_FALSE(directory->try_submit_update(refused));
    CHECK(refused != nullptr);
    gate.release();
  }
  for (const Status& status : outcomes.wait()) {
    CHECK(status.ok());
  }
  CHECK(directory->try_submit_update(refused));
}

}  // namespace
}  // namespace numadir::backend
