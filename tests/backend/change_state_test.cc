// Tests for backend/change_state.cc and what a replication provider reads of the directory: the
// entryUUID of every change record (local and replicated), the contextCSN (each write's, in its
// transaction, across reopen, after imports, on the suffix entry and in exports, computed for a
// database made before it was kept) and the session log (covered or not, deletes in order,
// its bound, turned off and on, reopened, a corrupt record).
#include <doctest/doctest.h>
#include <lmdb.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <latch>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/change_feed.h"
#include "backend/directory.h"
#include "backend/directory_update.h"
#include "backend/operational.h"
#include "tests/backend/backend_test_util.h"
#include "tests/backend/directory_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

std::vector<IndexSpec> replica_indexes() {
  std::vector<IndexSpec> indexes = default_indexes();
  indexes.push_back(IndexSpec{"entryUUID", true, false, false, false});
  return indexes;
}

std::string uuid(int n) {
  char text[40];
  std::snprintf(text, sizeof text, "00000000-0000-4000-8000-%012d", n);
  return text;
}

// A CSN of the given second (0..59) of 2025-01-01 12:00 (server id 1): older than any this
// test process stamps, so an upstream's CSNs can be told from local ones.
std::string old_csn(int second, int count = 0) {
  char text[64];
  std::snprintf(text, sizeof text, "202501011200%02d.000000Z#%06x#001#000000", second, count);
  return text;
}

struct Harness {
  explicit Harness(std::uint64_t session_log_entries = 0,
                   std::vector<IndexSpec> indexes = replica_indexes()) {
    options = test_options(dir.path(), std::move(indexes));
    options.session_log_entries = session_log_entries;
    open();
  }
  ~Harness() {
    subscription.reset();
    if (directory != nullptr) {
      CHECK_MESSAGE(directory->verify_indexes().ok(), directory->verify_indexes().to_string());
    }
  }
  void open() {
    directory = open_directory(options);
    txn = directory->begin_read();
    subscription = directory->subscribe_changes(
        [this](const ChangeRecord& change) { records.push_back(change); });
  }
  void close() {
    subscription.reset();
    txn.reset();
    directory.reset();
  }
  void reopen() {
    close();
    open();
  }
  std::string context_csn() {
    Result<std::string> csn = directory->context_csn(*txn);
    REQUIRE_MESSAGE(csn.ok(), csn.status().to_string());
    return *csn;
  }
  Directory::SessionLogChanges since(std::string_view csn) {
    Result<Directory::SessionLogChanges> changes = directory->session_log_since(*txn, csn);
    REQUIRE_MESSAGE(changes.ok(), changes.status().to_string());
    return *changes;
  }
  schema::Entry get(std::string_view dn) {
    Result<schema::Entry> entry = directory->get(*txn, dn);
    REQUIRE_MESSAGE(entry.ok(), entry.status().to_string());
    return std::move(*entry);
  }
  std::string one(std::string_view dn, std::string_view description) {
    const std::vector<std::string> values = values_of(get(dn), description);
    REQUIRE_MESSAGE(values.size() == 1, dn, " ", description);
    return values[0];
  }
  std::string uuid_of(std::string_view dn) { return one(dn, "entryUUID"); }
  std::string csn_of(std::string_view dn) { return one(dn, "entryCSN"); }
  void describe(std::string_view dn, std::string text) {
    require_ok(
        directory->modify(dn, {{mod(ModificationKind::kReplace, "description", {text})}}, {}));
  }
  Status apply(std::vector<ReplicaItem> items, std::optional<std::string> cookie = std::nullopt,
               std::string cookie_csn = {}, bool refresh = false) {
    auto job = std::make_unique<UpdateJob>();
    ReplicaChange change;
    change.rid = 7;
    change.items = std::move(items);
    change.cookie = std::move(cookie);
    change.cookie_csn = std::move(cookie_csn);
    change.refresh = refresh;
    job->change = std::move(change);
    return directory->run_update(std::move(job));
  }

  TempDir dir;
  DirectoryOptions options;
  std::unique_ptr<Directory> directory;
  std::unique_ptr<ReadTxn> txn;
  std::unique_ptr<ChangeSubscription> subscription;
  std::vector<ChangeRecord> records;  // Written by the writer thread, read after each update.
};

ReplicaItem upsert(schema::Entry entry, int n, std::string csn) {
  ReplicaItem item;
  item.kind = ReplicaItem::Kind::kUpsert;
  item.uuid = uuid(n);
  item.entry = std::move(entry);
  item.entry.attributes.push_back({"entryCSN", {std::move(csn)}});
  return item;
}

ReplicaItem removal(int n) {
  ReplicaItem item;
  item.kind = ReplicaItem::Kind::kDelete;
  item.uuid = uuid(n);
  return item;
}

std::vector<schema::Entry> exported(const Directory& directory) {
  std::vector<schema::Entry> entries;
  require_ok(directory.export_entries([&](const schema::Entry& entry) {
    entries.push_back(entry);
    return true;
  }));
  return entries;
}

// Edits one database of a closed directory with raw LMDB calls.
void edit_database(const std::filesystem::path& path, const char* name,
                   const std::function<void(MDB_txn*, MDB_dbi)>& edit) {
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_set_maxdbs(env, 64) == 0);
  REQUIRE(mdb_env_set_mapsize(env, std::size_t{1} << 30) == 0);
  REQUIRE(mdb_env_open(env, path.c_str(), 0, 0600) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
  MDB_dbi dbi = 0;
  REQUIRE(mdb_dbi_open(txn, name, 0, &dbi) == 0);
  edit(txn, dbi);
  REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
}

MDB_val val(std::string_view bytes) {
  return MDB_val{bytes.size(), const_cast<char*>(bytes.data())};
}

TEST_CASE("ChangeState: old_csn makes ordered CSNs of the entryCSN form") {
  CHECK(old_csn(7) == "20250101120007.000000Z#000000#001#000000");
  CHECK(old_csn(7, 2) < old_csn(8));
  CHECK(old_csn(59) > old_csn(8, 0xff));
}

TEST_CASE("ChangeRecord: every kind of local change carries the entry's entryUUID") {
  Harness h;
  add_base_tree(*h.directory);
  require_ok(h.directory->add(user(1), {}));
  const std::string uuid1 = h.uuid_of(user_dn(1));
  h.describe(user_dn(1), "changed");
  require_ok(h.directory->rename(user_dn(1), "uid=renamed", false, kGroups, {}));
  const std::string renamed = "uid=renamed," + kGroups;
  CHECK(h.uuid_of(renamed) == uuid1);
  require_ok(h.directory->remove(renamed, {}));
  REQUIRE(h.records.size() == 3 + 4);
  const std::vector<ChangeKind> kinds = {ChangeKind::kAdd, ChangeKind::kModify, ChangeKind::kRename,
                                         ChangeKind::kDelete};
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const ChangeRecord& record = h.records[3 + i];
    CAPTURE(change_kind_name(record.kind));
    CHECK(record.kind == kinds[i]);
    CHECK(record.entry_uuid == uuid1);
  }
  // The base tree's own adds carry their own, distinct ones.
  CHECK(h.records[0].entry_uuid.size() == 36);
  CHECK(h.records[0].entry_uuid != h.records[1].entry_uuid);
}

TEST_CASE("ChangeRecord: a replicated batch's records carry entryUUIDs and the upstream's CSNs") {
  Harness h;
  require_ok(h.apply({upsert(domain_entry(std::string(kSuffix), "example"), 1, old_csn(1)),
                      upsert(ou_entry(kPeople, "people"), 2, old_csn(2)),
                      upsert(user(1), 3, old_csn(3)), upsert(user(2), 4, old_csn(4))},
                     "rid=007,csn=" + old_csn(5), old_csn(5)));
  REQUIRE(h.records.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(h.records[i].kind == ChangeKind::kAdd);
    CHECK(h.records[i].entry_uuid == uuid(i + 1));
    CHECK(h.records[i].csn == old_csn(i + 1));
  }
  // The cookie's CSN is greater than every entry's: the contextCSN is the upstream's, not a
  // local one.
  CHECK(h.context_csn() == old_csn(5));

  h.records.clear();
  // A modify, a move (its record, then the content replaced) and a delete.
  schema::Entry moved = user(1);
  moved.dn = "uid=user1," + kGroups;
  require_ok(
      h.apply({upsert(ou_entry(kGroups, "groups"), 5, old_csn(6)),
               upsert(person_entry(user_dn(2), "user2", "Changed", "Surname2"), 4, old_csn(7)),
               upsert(moved, 3, old_csn(8)), removal(4)},
              "rid=007,csn=" + old_csn(9), old_csn(9)));
  REQUIRE(h.records.size() == 5);
  CHECK(h.records[0].kind == ChangeKind::kAdd);
  CHECK(h.records[1].kind == ChangeKind::kModify);
  CHECK(h.records[1].entry_uuid == uuid(4));
  CHECK(h.records[1].csn == old_csn(7));
  CHECK(h.records[2].kind == ChangeKind::kRename);
  CHECK(h.records[2].entry_uuid == uuid(3));
  CHECK(h.records[2].csn == old_csn(8));
  CHECK(h.records[3].kind == ChangeKind::kModify);
  CHECK(h.records[3].entry_uuid == uuid(3));
  CHECK(h.records[4].kind == ChangeKind::kDelete);
  CHECK(h.records[4].entry_uuid == uuid(4));
  CHECK(h.records[4].csn == old_csn(9));  // A delete takes the batch's cookie CSN.
  CHECK(h.csn_of("uid=user1," + kGroups) == old_csn(8));
  CHECK(h.context_csn() == old_csn(9));
}

TEST_CASE("ContextCsn: a batch's greatest CSN counts whatever the order of its entries") {
  Harness h;
  // A refresh brings entries in tree order, not CSN order; no cookie CSN.
  require_ok(h.apply({upsert(domain_entry(std::string(kSuffix), "example"), 1, old_csn(30)),
                      upsert(ou_entry(kPeople, "people"), 2, old_csn(40)),
                      upsert(user(1), 3, old_csn(10))}));
  CHECK(h.context_csn() == old_csn(40));
  // A cookie CSN below the contextCSN does not take it back.
  require_ok(h.apply({}, "rid=007,csn=" + old_csn(20), old_csn(20)));
  CHECK(h.context_csn() == old_csn(40));
  // A batch of only a cookie advances it.
  require_ok(h.apply({}, "rid=007,csn=" + old_csn(50), old_csn(50)));
  CHECK(h.context_csn() == old_csn(50));
}

TEST_CASE("ContextCsn: a refresh's batches leave it until the cookie that ends the refresh") {
  Harness h(100);
  require_ok(h.apply({upsert(domain_entry(std::string(kSuffix), "example"), 1, old_csn(30))},
                     "rid=007,csn=" + old_csn(30), old_csn(30)));
  REQUIRE(h.context_csn() == old_csn(30));
  // The newest entry first, as a provider sending in tree order sends an import's groups: the
  // replica holds part of the refresh, so it shows the state of its last cookie still.
  require_ok(h.apply({upsert(ou_entry(kGroups, "groups"), 2, old_csn(50)),
                      upsert(ou_entry(kPeople, "people"), 3, old_csn(40))},
                     std::nullopt, {}, /*refresh=*/true));
  CHECK(h.context_csn() == old_csn(30));
  CHECK(h.csn_of(kGroups) == old_csn(50));  // The entries keep the provider's CSNs,
  REQUIRE(h.records.size() == 3);
  CHECK(h.records[1].csn == old_csn(50));  // and so do their change records.
  // A delete in the refresh takes the batch's cookie CSN, which covers it.
  require_ok(h.apply({removal(2)}, "rid=007,csn=" + old_csn(45), old_csn(45), true));
  CHECK(h.context_csn() == old_csn(45));
  // The refresh's last batch: its cookie says what the replica now holds.
  require_ok(
      h.apply({upsert(user(1), 4, old_csn(20))}, "rid=007,csn=" + old_csn(55), old_csn(55), true));
  CHECK(h.context_csn() == old_csn(55));
  // A consumer of this replica whose cookie was taken mid-refresh (old_csn(30)) is told what
  // came since.
  const Directory::SessionLogChanges since = h.since(old_csn(30));
  CHECK_FALSE(since.deleted.empty());
  // In the persist phase an entry's CSN advances it, cookie or not.
  require_ok(h.apply({upsert(ou_entry(kPeople, "people"), 3, old_csn(58))}));
  CHECK(h.context_csn() == old_csn(58));
}

TEST_CASE("ContextCsn: each write advances it to its CSN and it survives reopening") {
  Harness h;
  CHECK(h.context_csn().empty());
  add_base_tree(*h.directory);
  CHECK(h.context_csn() == h.csn_of(kGroups));
  require_ok(h.directory->add(user(1), {}));
  std::string last = h.context_csn();
  CHECK(last == h.csn_of(user_dn(1)));
  h.describe(user_dn(1), "one");
  CHECK(h.context_csn() > last);
  CHECK(h.context_csn() == h.csn_of(user_dn(1)));
  last = h.context_csn();
  require_ok(h.directory->rename(user_dn(1), "uid=user9", true, std::nullopt, {}));
  CHECK(h.context_csn() > last);
  CHECK(h.context_csn() == h.csn_of(user_dn(9)));
  last = h.context_csn();
  require_ok(h.directory->remove(user_dn(9), {}));
  CHECK(h.context_csn() > last);
  CHECK(h.context_csn() == h.records.back().csn);
  last = h.context_csn();
  // The server's own bookkeeping counts too.
  UpdateContext internal;
  internal.internal = true;
  require_ok(h.directory->modify(kPeople, {{mod(ModificationKind::kReplace, "description", {"x"})}},
                                 internal));
  CHECK(h.context_csn() > last);
  last = h.context_csn();
  h.reopen();
  CHECK(h.context_csn() == last);
}

TEST_CASE("ContextCsn: a failed job leaves it as it was") {
  Harness h;
  add_base_tree(*h.directory);
  const std::string before = h.context_csn();
  CHECK(h.directory->add(ou_entry(kPeople, "people"), {}).code() ==
        StatusCode::kEntryAlreadyExists);
  CHECK(h.directory->remove(user_dn(5), {}).code() == StatusCode::kNoSuchObject);
  CHECK(h.context_csn() == before);
  // A replicated batch refused whole (a delete of an entryUUID no entry has) leaves it too,
  // although its first item and its cookie would have advanced it.
  CHECK(h.apply({upsert(user(1), 3, "20991231000000.000000Z#000000#001#000000"), removal(99)},
                "rid=007,csn=20991231000001.000000Z#000000#001#000000",
                "20991231000001.000000Z#000000#001#000000")
            .code() == StatusCode::kNoSuchObject);
  CHECK(h.context_csn() == before);
}

// Jobs queued while the writer is held in a check of its own: they run as one batch.
class WriterGate {
 public:
  explicit WriterGate(Directory& directory) {
    auto job = std::make_unique<UpdateJob>();
    job->change = ModifyChange{kPeople, {mod(ModificationKind::kReplace, "description", {"g"})}};
    job->check = [this](const WriteView&) {
      entered_.count_down();
      release_.wait();
      return Status();
    };
    job->done = [this](Status) { done_.count_down(); };
    directory.submit_update(std::move(job));
    entered_.wait();
  }
  void release() {
    release_.count_down();
    done_.wait();
  }

 private:
  std::latch entered_{1};
  std::latch release_{1};
  std::latch done_{1};
};

TEST_CASE("ContextCsn: in a batch whose last job fails it is the last committed change's CSN") {
  Harness h(/*session_log_entries=*/100);
  add_base_tree(*h.directory);
  std::vector<Status> outcomes(3);
  std::latch done(3);
  {
    WriterGate gate(*h.directory);
    const std::vector<schema::Entry> adds = {user(1), user(2), user(1)};  // The last: a duplicate.
    for (std::size_t i = 0; i < adds.size(); ++i) {
      auto job = std::make_unique<UpdateJob>();
      job->change = AddChange{adds[i], {}};
      job->done = [&outcomes, &done, i](Status status) {
        outcomes[i] = std::move(status);
        done.count_down();
      };
      REQUIRE(h.directory->try_submit_update(job));
    }
    gate.release();
  }
  done.wait();
  CHECK(outcomes[0].ok());
  CHECK(outcomes[1].ok());
  CHECK(outcomes[2].code() == StatusCode::kEntryAlreadyExists);
  // The failed job's CSN, greater than every other, is nowhere.
  CHECK(h.context_csn() == h.csn_of(user_dn(2)));
  const std::string at_base = h.records[2].csn;
  const Directory::SessionLogChanges changes = h.since(at_base);
  CHECK(changes.covered);
  CHECK(changes.changed ==
        std::vector<std::string>{h.uuid_of(kPeople), h.uuid_of(user_dn(1)), h.uuid_of(user_dn(2))});
}

TEST_CASE("ContextCsn: this server's next CSNs sort after a stored one from the future") {
  Harness h;
  const std::string future = "20991231235959.000000Z#000005#001#000000";
  require_ok(h.apply({upsert(domain_entry(std::string(kSuffix), "example"), 1, future)}));
  h.reopen();
  CHECK(h.context_csn() == future);
  require_ok(h.directory->add(ou_entry(kPeople, "people"), {}));
  CHECK(h.csn_of(kPeople) > future);
  CHECK(h.context_csn() == h.csn_of(kPeople));
}

TEST_CASE("observe_csn: ignores what is not a CSN and a CSN past the end of the clock") {
  for (const char* bad :
       {"", "garbage", "20991231235959.000000Z#00000g#001#000000",
        "20991331235959.000000Z#000000#001#000000", "99991231235959.999999Z#ffffff#001#000000",
        "23000101000000.000000Z#000000#001#000000"}) {
    CAPTURE(bad);
    observe_csn(bad);
    const std::string next = next_csn(std::chrono::system_clock::time_point{}, 1);
    CHECK(next.size() == 40);
    CHECK(next < "2300");
  }
  // (Greater, not equal to the next count: another test of the process may have gone further.)
  const std::string observed = "21000101000000.000000Z#000007#001#000000";
  observe_csn(observed);
  CHECK(next_csn(std::chrono::system_clock::time_point{}, 1) > observed);
}

TEST_CASE("ContextCsn: the suffix entry shows it as a computed attribute and never stores it") {
  Harness h;
  add_base_tree(*h.directory);
  require_ok(h.directory->add(user(1), {}));
  const schema::Entry suffix_before = h.get(kSuffix);
  CHECK(values_of(suffix_before, "contextCSN") == std::vector<std::string>{h.context_csn()});
  CHECK(values_of(h.get(kPeople), "contextCSN").empty());
  h.describe(user_dn(1), "later");
  const schema::Entry suffix_after = h.get(kSuffix);
  CHECK(values_of(suffix_after, "contextCSN") == std::vector<std::string>{h.csn_of(user_dn(1))});
  // The write elsewhere did not rewrite the suffix entry.
  CHECK(values_of(suffix_after, "entryCSN") == values_of(suffix_before, "entryCSN"));
  // A filter on it sees it on the suffix entry only.
  SearchResult found = search(*h.directory, *h.txn, kSuffix, Scope::kSubtree, "(contextCSN=*)");
  CHECK(found.dns == std::vector<std::string>{std::string(kSuffix)});
  // Inside a search's callback it reads that search's snapshot.
  const schema::Filter filter = parse_filter("(objectClass=*)");
  SearchSpec spec;
  spec.base = std::string(kSuffix);
  spec.scope = Scope::kBase;
  spec.filter = &filter;
  std::string inside;
  require_ok(h.directory->search(*h.txn, spec, [&](const EntryRef&) {
    Result<std::string> csn = h.directory->context_csn(*h.txn);
    REQUIRE(csn.ok());
    inside = *csn;
    return true;
  }));
  CHECK(inside == h.context_csn());
}

TEST_CASE("ContextCsn: export writes it on the suffix entry and an import takes it up") {
  Harness h;
  add_base_tree(*h.directory);
  require_ok(h.directory->add(user(1), {}));
  const std::string context_csn = h.context_csn();
  const std::vector<schema::Entry> entries = exported(*h.directory);
  REQUIRE(entries.size() == 4);
  CHECK(entries[0].dn == kSuffix);
  CHECK(values_of(entries[0], "contextCSN") == std::vector<std::string>{context_csn});
  for (std::size_t i = 1; i < entries.size(); ++i) {
    CHECK(values_of(entries[i], "contextCSN").empty());
  }

  SUBCASE("Importer") {
    Harness copy;
    auto importer = copy.directory->begin_import({});
    REQUIRE(importer.ok());
    for (const schema::Entry& entry : entries) {
      require_ok((*importer)->add(entry));
    }
    require_ok((*importer)->finish());
    CHECK(copy.context_csn() == context_csn);
    CHECK(exported(*copy.directory) == entries);
  }
  SUBCASE("BulkImporter") {
    Harness copy;
    Directory::BulkImportOptions options;
    options.workers = 2;
    options.batch_entries = 2;
    auto importer = copy.directory->begin_bulk_import({}, options);
    REQUIRE(importer.ok());
    std::uint64_t tag = 0;
    for (schema::Entry entry : entries) {
      REQUIRE((*importer)->add(entry, ++tag));
    }
    require_ok((*importer)->finish());
    CHECK(copy.context_csn() == context_csn);
    CHECK(exported(*copy.directory) == entries);
  }
}

TEST_CASE("ContextCsn: an import sets it to the greatest CSN it stores") {
  std::vector<schema::Entry> entries = {domain_entry(std::string(kSuffix), "example"),
                                        ou_entry(kPeople, "people"), user(1), user(2)};
  std::string expected;
  std::string expected_suffix_csn;
  SUBCASE("entries without entryCSN: the last one generated") {}
  SUBCASE("entries with entryCSN: the greatest, wherever it is") {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      entries[i].attributes.push_back({"entryCSN", {old_csn(i == 1 ? 50 : 10 + int(i))}});
    }
    expected = old_csn(50);
  }
  SUBCASE("the suffix entry's contextCSN, when greater") {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      entries[i].attributes.push_back({"entryCSN", {old_csn(10 + int(i))}});
    }
    entries[0].attributes.push_back({"contextCSN", {old_csn(40), old_csn(55, 1)}});
    expected = old_csn(55, 1);
    expected_suffix_csn = old_csn(10);
  }
  for (const bool bulk : {false, true}) {
    CAPTURE(bulk);
    Harness h(/*session_log_entries=*/10);
    std::string want = expected;
    if (bulk) {
      auto importer = h.directory->begin_bulk_import({}, Directory::BulkImportOptions{});
      REQUIRE(importer.ok());
      std::uint64_t tag = 0;
      for (schema::Entry entry : entries) {
        REQUIRE((*importer)->add(entry, ++tag));
      }
      require_ok((*importer)->finish());
    } else {
      auto importer = h.directory->begin_import({});
      REQUIRE(importer.ok());
      for (const schema::Entry& entry : entries) {
        require_ok((*importer)->add(entry));
      }
      require_ok((*importer)->finish());
    }
    if (want.empty()) {
      want = h.csn_of(user_dn(2));  // Generated in input order: the last is the greatest.
      CHECK(want > h.csn_of(kSuffix));
    }
    CHECK(h.context_csn() == want);
    // Shown, single-valued, not stored in the entry (whose own entryCSN is kept).
    CHECK(values_of(h.get(kSuffix), "contextCSN") == std::vector<std::string>{want});
    if (!expected_suffix_csn.empty()) {
      CHECK(h.csn_of(kSuffix) == expected_suffix_csn);
    }
    // The session log begins at the import: a CSN before it is not covered, the import's is.
    CHECK_FALSE(h.since(old_csn(1)).covered);
    CHECK(h.since(want).covered);
    CHECK(h.since(want).changed.empty());
  }
}

TEST_CASE("ContextCsn: a database made before it was kept gets it from the greatest entryCSN") {
  Harness h;
  add_base_tree(*h.directory);
  require_ok(h.directory->add(user(1), {}));
  require_ok(h.directory->add(user(2), {}));
  h.describe(user_dn(1), "the latest");
  const std::string greatest = h.csn_of(user_dn(1));
  h.close();
  edit_database(h.dir.path(), "meta", [](MDB_txn* txn, MDB_dbi dbi) {
    MDB_val key = val("context_csn");
    REQUIRE(mdb_del(txn, dbi, &key, nullptr) == 0);
  });
  h.open();
  CHECK(h.context_csn() == greatest);
  // Writes go on from it, and it is stored as they advance it.
  h.describe(user_dn(2), "after");
  CHECK(h.context_csn() > greatest);
  const std::string after = h.context_csn();
  h.reopen();
  CHECK(h.context_csn() == after);
}

TEST_CASE("SessionLog: when off nothing is covered and nothing is kept") {
  Harness h(/*session_log_entries=*/0);
  add_base_tree(*h.directory);
  const std::string csn = h.context_csn();
  require_ok(h.directory->remove(kGroups, {}));
  CHECK_FALSE(h.since(csn).covered);
  CHECK(h.since(csn).deleted.empty());
}

TEST_CASE("SessionLog: a covered CSN gets the deletes after it in commit order") {
  Harness h(/*session_log_entries=*/100);
  add_base_tree(*h.directory);
  for (int i = 1; i <= 4; ++i) {
    require_ok(h.directory->add(user(i), {}));
  }
  std::vector<std::string> uuids(5);
  for (int i = 1; i <= 4; ++i) {
    uuids[i] = h.uuid_of(user_dn(i));
  }
  const std::string cookie = h.context_csn();
  CHECK(h.since(cookie).covered);
  CHECK(h.since(cookie).deleted.empty());
  CHECK(h.since(cookie).changed.empty());

  require_ok(h.directory->remove(user_dn(3), {}));
  h.describe(user_dn(2), "changed");
  require_ok(h.directory->remove(user_dn(1), {}));
  require_ok(h.directory->add(user(5), {}));
  h.describe(user_dn(4), "changed");
  require_ok(h.directory->remove(user_dn(5), {}));  // Added and deleted since.
  const std::string uuid5 = h.records[h.records.size() - 1].entry_uuid;
  h.describe(user_dn(2), "changed again");

  Directory::SessionLogChanges changes = h.since(cookie);
  CHECK(changes.covered);
  CHECK(changes.deleted == std::vector<std::string>{uuids[3], uuids[1], uuid5});
  // Each entry changed since and still there, once, in the order of its last change.
  CHECK(changes.changed == std::vector<std::string>{uuids[4], uuids[2]});

  // From a later cookie, only what came after it.
  const std::string later = h.records[h.records.size() - 4].csn;  // The add of user5.
  changes = h.since(later);
  CHECK(changes.covered);
  CHECK(changes.deleted == std::vector<std::string>{uuid5});
  CHECK(changes.changed == std::vector<std::string>{uuids[4], uuids[2]});
  // The newest cookie: nothing; a cookie from the future: covered, nothing (the caller judges).
  CHECK(h.since(h.context_csn()).deleted.empty());
  CHECK(h.since("20991231000000.000000Z#000000#000#000000").covered);

  // Reopened, it holds the same.
  h.reopen();
  changes = h.since(cookie);
  CHECK(changes.covered);
  CHECK(changes.deleted == std::vector<std::string>{uuids[3], uuids[1], uuid5});
}

TEST_CASE("SessionLog: keeps its bound and covers only from the greatest CSN it trimmed") {
  Harness h(/*session_log_entries=*/4);
  add_base_tree(*h.directory);  // 3 records.
  const std::string start = h.context_csn();
  for (int i = 1; i <= 3; ++i) {
    require_ok(h.directory->add(user(i), {}));
  }
  // 6 changes, 4 kept: the suffix's and ou=people's adds were trimmed. From ou=people's CSN on,
  // every change after is kept; before it, one (ou=people's add) is gone.
  CHECK_FALSE(h.since(h.records[0].csn).covered);
  CHECK(h.since(h.records[1].csn).covered);
  CHECK(h.since(start).covered);
  CHECK(h.since(start).changed.size() == 3);
  const std::string cookie = h.context_csn();
  require_ok(h.directory->remove(user_dn(1), {}));
  require_ok(h.directory->remove(user_dn(2), {}));
  Directory::SessionLogChanges changes = h.since(cookie);
  CHECK(changes.covered);
  CHECK(changes.deleted.size() == 2);
  // ou=groups' and user1's adds are trimmed now: only from user1's CSN on is covered.
  CHECK_FALSE(h.since(start).covered);
  CHECK(h.since(h.records[3].csn).covered);
  CHECK(h.since(h.records[3].csn).deleted.size() == 2);

  SUBCASE("a smaller bound at reopen trims at once") {
    h.options.session_log_entries = 1;
    h.reopen();
    CHECK_FALSE(h.since(cookie).covered);
    const Directory::SessionLogChanges last = h.since(h.records[h.records.size() - 2].csn);
    CHECK(last.covered);
    CHECK(last.deleted.size() == 1);
  }
  SUBCASE("a greater bound at reopen keeps what it has") {
    h.options.session_log_entries = 100;
    h.reopen();
    CHECK(h.since(cookie).covered);
    CHECK(h.since(cookie).deleted.size() == 2);
    CHECK_FALSE(h.since(start).covered);
  }
}

TEST_CASE("SessionLog: a larger log trims a few records at a time and never holds more") {
  Harness h(/*session_log_entries=*/32);  // Trimmed by 2 beyond the one it must.
  add_base_tree(*h.directory);
  for (int i = 1; i <= 97; ++i) {
    require_ok(h.directory->add(user(i), {}));
    const std::size_t n = h.records.size();
    // Holding K records covers the CSN of the (K+1)th newest change, and no older one: at most
    // 32 kept, the 34th newest is not covered; at least 30, the 31st is.
    if (n >= 34) {
      CHECK_FALSE(h.since(h.records[n - 34].csn).covered);
    }
    CHECK(h.since(h.records[n >= 31 ? n - 31 : 0].csn).covered);
  }
}

TEST_CASE("SessionLog: turned on over a database it covers only from then") {
  Harness h(/*session_log_entries=*/0);
  add_base_tree(*h.directory);
  require_ok(h.directory->add(user(1), {}));
  const std::string before = h.records[2].csn;
  const std::string on = h.context_csn();
  require_ok(h.directory->remove(user_dn(1), {}));  // Not logged: the log is off.
  const std::string off_delete = h.context_csn();
  h.options.session_log_entries = 10;
  h.reopen();
  CHECK_FALSE(h.since(before).covered);
  CHECK_FALSE(h.since(on).covered);
  CHECK(h.since(off_delete).covered);
  require_ok(h.directory->add(user(2), {}));
  const std::string uuid2 = h.uuid_of(user_dn(2));
  require_ok(h.directory->remove(user_dn(2), {}));
  CHECK(h.since(off_delete).deleted == std::vector<std::string>{uuid2});

  SUBCASE("turned off and on again, nothing of before is used") {
    h.options.session_log_entries = 0;
    h.reopen();
    CHECK_FALSE(h.since(off_delete).covered);
    h.options.session_log_entries = 10;
    h.reopen();
    CHECK_FALSE(h.since(off_delete).covered);
    CHECK(h.since(h.context_csn()).covered);
    CHECK(h.since(h.context_csn()).deleted.empty());
  }
  SUBCASE("an open that must find a database keeps the log as it is") {
    h.close();
    DirectoryOptions reader = h.options;
    reader.session_log_entries = 0;  // As a command that does not know the provider's settings.
    {
      Result<std::unique_ptr<Directory>> opened =
          Directory::open(test_schema(), reader, OpenMode::kMustExist);
      REQUIRE(opened.ok());
      auto txn = (*opened)->begin_read();
      Result<Directory::SessionLogChanges> changes = (*opened)->session_log_since(*txn, off_delete);
      REQUIRE(changes.ok());
      CHECK(changes->covered);
    }
    h.open();
    CHECK(h.since(off_delete).deleted == std::vector<std::string>{uuid2});
  }
}

TEST_CASE("SessionLog: a replicated delete that does not advance the contextCSN ends coverage") {
  Harness h(/*session_log_entries=*/10);
  require_ok(h.apply({upsert(domain_entry(std::string(kSuffix), "example"), 1, old_csn(1)),
                      upsert(ou_entry(kPeople, "people"), 2, old_csn(2)),
                      upsert(user(1), 3, old_csn(3)), upsert(user(2), 4, old_csn(4))}));
  const std::string at = h.context_csn();
  CHECK(at == old_csn(4));
  CHECK(h.since(old_csn(2)).covered);
  CHECK(h.since(old_csn(2)).changed == std::vector<std::string>{uuid(3), uuid(4)});
  // A delete in a batch without a cookie CSN: it takes the contextCSN as it stands, and a
  // consumer whose cookie is at that CSN cannot be told about it from the log.
  require_ok(h.apply({removal(3)}));
  CHECK(h.records.back().csn == at);
  CHECK_FALSE(h.since(at).covered);
  CHECK_FALSE(h.since(old_csn(2)).covered);
  // With the batch's cookie CSN, deletes are logged at it.
  require_ok(h.apply({removal(4)}, "rid=007,csn=" + old_csn(6), old_csn(6)));
  CHECK(h.records.back().csn == old_csn(6));
  CHECK(h.since(old_csn(5)).covered);
  CHECK(h.since(old_csn(5)).deleted == std::vector<std::string>{uuid(4)});
}

TEST_CASE("SessionLog: a corrupt record is a storage error") {
  Harness h(/*session_log_entries=*/10);
  add_base_tree(*h.directory);
  const std::string first = h.records[0].csn;
  h.close();
  edit_database(h.dir.path(), "session_log", [](MDB_txn* txn, MDB_dbi dbi) {
    MDB_cursor* cursor = nullptr;
    REQUIRE(mdb_cursor_open(txn, dbi, &cursor) == 0);
    MDB_val key{};
    MDB_val value{};
    REQUIRE(mdb_cursor_get(cursor, &key, &value, MDB_LAST) == 0);
    // The CSN's length says more bytes than the record has.
    std::string bad(static_cast<const char*>(value.mv_data), value.mv_size);
    bad[1] = static_cast<char>(0xff);
    bad.resize(10);
    MDB_val replacement = val(bad);
    REQUIRE(mdb_cursor_put(cursor, &key, &replacement, MDB_CURRENT) == 0);
    mdb_cursor_close(cursor);
  });
  h.open();
  Result<Directory::SessionLogChanges> changes = h.directory->session_log_since(*h.txn, first);
  CHECK(changes.status().code() == StatusCode::kStorage);
}

}  // namespace
}  // namespace numadir::backend
