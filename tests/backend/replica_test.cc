// Tests for backend/replica.cc: a replication consumer's batches (ReplicaChange) through the
// writer: entries stored as received and found again by entryUUID, renames and subtree moves,
// deletes, the present phase's prune, the cookie in the same transaction, and batches refused
// whole.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/change_feed.h"
#include "backend/directory.h"
#include "backend/directory_update.h"
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

// An entry as a provider sends it: with the operational attributes it keeps.
schema::Entry provided(schema::Entry entry, int n) {
  entry.attributes.push_back({"entryCSN", {"20261203120000.000000Z#000000#001#000000"}});
  entry.attributes.push_back({"createTimestamp", {"20200101000000Z"}});
  entry.attributes.push_back({"creatorsName", {"cn=provider," + std::string(kSuffix)}});
  entry.attributes.push_back({"modifyTimestamp", {"20200102000000Z"}});
  entry.attributes.push_back({"modifiersName", {"cn=provider," + std::string(kSuffix)}});
  (void)n;
  return entry;
}

ReplicaItem upsert(schema::Entry entry, int n) {
  ReplicaItem item;
  item.kind = ReplicaItem::Kind::kUpsert;
  item.uuid = uuid(n);
  item.entry = provided(std::move(entry), n);
  return item;
}

ReplicaItem remove(int n) {
  ReplicaItem item;
  item.kind = ReplicaItem::Kind::kDelete;
  item.uuid = uuid(n);
  return item;
}

struct ReplicaFixture {
  ReplicaFixture() : directory(open_directory(test_options(dir.path(), replica_indexes()))) {
    subscription = directory->subscribe_changes(
        [this](const ChangeRecord& change) { changes.push_back(change); });
    txn = directory->begin_read();
  }
  ~ReplicaFixture() {
    subscription.reset();
    CHECK_MESSAGE(directory->verify_indexes().ok(), directory->verify_indexes().to_string());
  }

  Status apply(std::vector<ReplicaItem> items, std::optional<std::string> cookie = std::nullopt,
               std::optional<ReplicaPrune> prune = std::nullopt) {
    auto job = std::make_unique<UpdateJob>();
    ReplicaChange change;
    change.rid = 7;
    change.items = std::move(items);
    change.cookie = std::move(cookie);
    change.prune = std::move(prune);
    change.check_schema = check_schema;
    if (pack) {
      for (ReplicaItem& item : change.items) {
        for (const schema::EntryAttribute& attribute : item.entry.attributes) {
          const std::vector<std::string_view> values(attribute.values.begin(),
                                                     attribute.values.end());
          pack_replica_attribute(item.packed, attribute.description, values);
        }
        item.entry.attributes.clear();
      }
    }
    if (prepare_ahead) {
      NUMADIR_RETURN_IF_ERROR(directory->prepare_replica(change));
    }
    job->change = std::move(change);
    return directory->run_update(std::move(job));
  }
  // The base tree and two people, as a refresh brings them: uuids 1 to 5.
  void refresh() {
    require_ok(
        apply({upsert(domain_entry(std::string(kSuffix), "example"), 1),
               upsert(ou_entry(kPeople, "people"), 2), upsert(user(1), 3), upsert(user(2), 4)},
              "rid=007,csn=1"));
  }
  bool exists(std::string_view dn) { return directory->get(*txn, dn).ok(); }
  schema::Entry get(std::string_view dn) {
    Result<schema::Entry> entry = directory->get(*txn, dn);
    REQUIRE_MESSAGE(entry.ok(), entry.status().to_string());
    return std::move(*entry);
  }
  std::optional<std::string> cookie() {
    Result<std::optional<std::string>> stored = directory->replica_cookie(7);
    REQUIRE(stored.ok());
    return *stored;
  }

  TempDir dir;
  std::unique_ptr<Directory> directory;
  std::unique_ptr<ReadTxn> txn;
  bool prepare_ahead = false;  // apply() prepares as a consumer does (Directory::prepare_replica).
  bool pack = false;           // apply() packs the upserts' attributes, as a consumer does.
  bool check_schema = true;    // ReplicaChange::check_schema of apply()'s batches.
  std::vector<ChangeRecord> changes;  // Written by the writer thread, read after run() returns.
  std::unique_ptr<ChangeSubscription> subscription;
};

TEST_CASE("Replica: entries are stored as the provider sent them") {
  ReplicaFixture f;
  CHECK_FALSE(f.cookie().has_value());
  f.refresh();
  CHECK(f.cookie() == "rid=007,csn=1");
  Result<std::optional<std::string>> other = f.directory->replica_cookie(8);
  REQUIRE(other.ok());
  CHECK_FALSE(other->has_value());

  const schema::Entry entry = f.get(user_dn(1));
  CHECK(values_of(entry, "entryUUID") == std::vector<std::string>{uuid(3)});
  CHECK(values_of(entry, "entryCSN") ==
        std::vector<std::string>{"20261203120000.000000Z#000000#001#000000"});
  CHECK(values_of(entry, "createTimestamp") == std::vector<std::string>{"20200101000000Z"});
  CHECK(values_of(entry, "creatorsName") ==
        std::vector<std::string>{"cn=provider," + std::string(kSuffix)});
  CHECK(values_of(entry, "structuralObjectClass") == std::vector<std::string>{"inetOrgPerson"});
  // Found by entryUUID through its index, as a client's search does.
  CHECK(search(*f.directory, *f.txn, kSuffix, Scope::kSubtree, "(entryUUID=" + uuid(4) + ")").dns ==
        std::vector<std::string>{user_dn(2)});
  CHECK(f.changes.size() == 4);
  CHECK(f.changes[2].kind == ChangeKind::kAdd);
}

TEST_CASE("Replica: attributes the server computes are not stored from the provider") {
  ReplicaFixture f;
  f.refresh();
  schema::Entry sent = user(1);
  sent.attributes.push_back({"entryDN", {"uid=user1,ou=people,dc=example,dc=com"}});
  sent.attributes.push_back({"hasSubordinates", {"FALSE"}});
  sent.attributes.push_back({"subschemaSubentry", {"cn=Subschema"}});
  sent.attributes.push_back({"numSubordinates", {"0"}});
  require_ok(f.apply({upsert(sent, 3)}));
  const schema::Entry entry = f.get(user_dn(1));
  // Each once, as this server computes it.
  CHECK(values_of(entry, "entryDN").size() == 1);
  CHECK(values_of(entry, "hasSubordinates") == std::vector<std::string>{"FALSE"});
  CHECK(values_of(entry, "subschemaSubentry").size() == 1);
  // A child added below it: the computed value follows, no stored FALSE beside it.
  schema::Entry child = ou_entry("ou=child," + user_dn(1), "child");
  require_ok(f.apply({upsert(child, 7)}));
  CHECK(values_of(f.get(user_dn(1)), "hasSubordinates") == std::vector<std::string>{"TRUE"});
}

TEST_CASE("Replica: an upsert of a known entryUUID replaces the entry in place") {
  ReplicaFixture f;
  f.refresh();
  schema::Entry changed = user(1);
  changed.attributes.erase(changed.attributes.begin() + 3);  // sn, as person_entry lays it out.
  REQUIRE(changed.attributes[2].description == "cn");
  changed.attributes[2].values = {"Renamed Person"};
  changed.attributes.push_back({"sn", {"Other"}});
  changed.attributes.push_back({"mail", {"user1@example.com"}});
  require_ok(f.apply({upsert(changed, 3)}, "rid=007,csn=2"));
  const schema::Entry entry = f.get(user_dn(1));
  CHECK(values_of(entry, "cn") == std::vector<std::string>{"Renamed Person"});
  CHECK(values_of(entry, "sn") == std::vector<std::string>{"Other"});
  CHECK(values_of(entry, "mail") == std::vector<std::string>{"user1@example.com"});
  CHECK(search(*f.directory, *f.txn, kSuffix, Scope::kSubtree, "(cn=User 1)").dns.empty());
  CHECK(search(*f.directory, *f.txn, kSuffix, Scope::kSubtree, "(cn=Renamed Person)").dns ==
        std::vector<std::string>{user_dn(1)});
  CHECK(f.cookie() == "rid=007,csn=2");
  CHECK(f.changes.back().kind == ChangeKind::kModify);
}

TEST_CASE("Replica: a moved entry brings its subtree to its new DN") {
  ReplicaFixture f;
  f.refresh();
  // ou=people (uuid 2) renamed to ou=staff on the provider: only it is sent.
  const std::string staff = "ou=staff," + std::string(kSuffix);
  require_ok(f.apply({upsert(ou_entry(staff, "staff"), 2)}));
  CHECK_FALSE(f.exists(kPeople));
  CHECK(f.exists(staff));
  CHECK(f.get("uid=user1," + staff).dn == "uid=user1," + staff);
  CHECK(values_of(f.get(staff), "ou") == std::vector<std::string>{"staff"});
  CHECK(values_of(f.get(staff), "entryUUID") == std::vector<std::string>{uuid(2)});

  // And a user moved under a new parent (newSuperior), added in the same batch.
  const std::string groups = "ou=groups," + std::string(kSuffix);
  schema::Entry moved = user(2);
  moved.dn = "uid=user2," + groups;
  require_ok(f.apply({upsert(ou_entry(groups, "groups"), 6), upsert(moved, 4)}));
  CHECK_FALSE(f.exists("uid=user2," + staff));
  CHECK(values_of(f.get("uid=user2," + groups), "entryUUID") == std::vector<std::string>{uuid(4)});
}

TEST_CASE("Replica: deletes by entryUUID") {
  ReplicaFixture f;
  f.refresh();
  require_ok(f.apply({remove(3)}, "rid=007,csn=3"));
  CHECK_FALSE(f.exists(user_dn(1)));
  CHECK(f.changes.back().kind == ChangeKind::kDelete);
  CHECK(f.apply({remove(2)}).code() == StatusCode::kNotAllowedOnNonLeaf);
  CHECK(f.exists(kPeople));
  CHECK(f.apply({remove(3)}).code() == StatusCode::kNoSuchObject);  // Already gone.
}

TEST_CASE("Replica: a refresh's batch may delete what is gone already") {
  ReplicaFixture f;
  f.refresh();
  auto job = std::make_unique<UpdateJob>();
  ReplicaChange change;
  change.rid = 7;
  change.items = {remove(99), remove(3)};
  change.skip_missing_deletes = true;
  change.cookie = "rid=007,csn=5";
  job->change = std::move(change);
  require_ok(f.directory->run_update(std::move(job)));
  CHECK_FALSE(f.exists(user_dn(1)));
  CHECK(f.cookie() == "rid=007,csn=5");
}

TEST_CASE("Replica: a batch with a bad change is refused whole and its cookie is not stored") {
  ReplicaFixture f;
  f.refresh();
  const std::size_t changes = f.changes.size();
  SUBCASE("an unknown entryUUID deleted") {
    const Status status = f.apply({upsert(user(5), 10), remove(99)}, "rid=007,csn=9");
    CHECK(status.code() == StatusCode::kNoSuchObject);
    CHECK(status.message().find(uuid(99)) != std::string::npos);
  }
  SUBCASE("an attribute type the replica's schema lacks") {
    schema::Entry odd = user(5);
    odd.attributes.push_back({"noSuchAttribute", {"x"}});
    const Status status = f.apply({upsert(user(6), 11), upsert(odd, 10)}, "rid=007,csn=9");
    CHECK(status.code() == StatusCode::kUndefinedAttributeType);
    CHECK(status.message().find("noSuchAttribute") != std::string::npos);
  }
  SUBCASE("an entry whose parent is missing") {
    schema::Entry orphan = user(5);
    orphan.dn = "uid=user5,ou=nowhere," + std::string(kSuffix);
    CHECK(f.apply({upsert(user(6), 11), upsert(orphan, 10)}, "rid=007,csn=9").code() ==
          StatusCode::kNoSuchObject);
  }
  CHECK_FALSE(f.exists(user_dn(5)));
  CHECK_FALSE(f.exists(user_dn(6)));
  CHECK(f.cookie() == "rid=007,csn=1");
  CHECK(f.changes.size() == changes);  // Nothing of the refused batch was published.
}

// A batch without the schema check (ReplicaChange::check_schema false), prepared ahead by the
// consumer or by the writer.
void check_unchecked_batch(bool prepare_ahead) {
  ReplicaFixture f;
  f.prepare_ahead = prepare_ahead;
  f.check_schema = false;
  f.refresh();
  // No sn (a MUST of person) and two values of the single-valued displayName: the schema
  // check refuses it, as the same batch with the check shows.
  schema::Entry odd = user(5);
  std::erase_if(odd.attributes, [](const auto& a) { return a.description == "sn"; });
  odd.attributes.push_back({"displayName", {"One", "Two"}});
  SUBCASE("stored as sent, its structural class found from its object classes") {
    require_ok(f.apply({upsert(odd, 10)}, "rid=007,csn=9"));
    const schema::Entry entry = f.get(user_dn(5));
    CHECK(values_of(entry, "sn").empty());
    CHECK(values_of(entry, "displayName") == std::vector<std::string>{"One", "Two"});
    CHECK(values_of(entry, "structuralObjectClass") == std::vector<std::string>{"inetOrgPerson"});
    CHECK(values_of(entry, "entryUUID") == std::vector<std::string>{uuid(10)});
    CHECK(f.cookie() == "rid=007,csn=9");
  }
  SUBCASE("the provider's structuralObjectClass kept") {
    schema::Entry sent = odd;
    sent.attributes.push_back({"structuralObjectClass", {"person"}});
    require_ok(f.apply({upsert(sent, 10)}, "rid=007,csn=9"));
    CHECK(values_of(f.get(user_dn(5)), "structuralObjectClass") ==
          std::vector<std::string>{"person"});
  }
  SUBCASE("refused with the check") {
    f.check_schema = true;
    const Status status = f.apply({upsert(odd, 10)}, "rid=007,csn=9");
    CHECK(status.code() == StatusCode::kConstraintViolation);  // The first fault it finds.
    CHECK(status.message().find("displayName") != std::string::npos);
    CHECK_FALSE(f.exists(user_dn(5)));
  }
  SUBCASE("an attribute type the replica's schema lacks is still refused") {
    odd.attributes.push_back({"noSuchAttribute", {"x"}});
    const Status status = f.apply({upsert(odd, 10)}, "rid=007,csn=9");
    CHECK(status.code() == StatusCode::kUndefinedAttributeType);
    CHECK(status.message().find("noSuchAttribute") != std::string::npos);
    CHECK_FALSE(f.exists(user_dn(5)));
  }
  SUBCASE("an attribute without values is still refused") {
    odd.attributes.push_back({"description", {}});
    const Status status = f.apply({upsert(odd, 10)}, "rid=007,csn=9");
    CHECK(status.code() == StatusCode::kConstraintViolation);
    CHECK(status.message().find("description") != std::string::npos);
    CHECK_FALSE(f.exists(user_dn(5)));
    CHECK(f.cookie() == "rid=007,csn=1");
  }
}

TEST_CASE("Replica: without the schema check an entry is stored as the provider sent it") {
  check_unchecked_batch(false);
}

TEST_CASE("Replica: without the schema check an entry prepared ahead is stored as sent") {
  check_unchecked_batch(true);
}

TEST_CASE("Replica: a batch prepared ahead is stored as the writer stores an unprepared one") {
  // Enough items that prepare_replica splits the batch over two threads.
  constexpr int kUsers = 150;
  ReplicaFixture plain;
  ReplicaFixture ahead;
  ahead.prepare_ahead = true;
  // Packed attributes, as a consumer sends them: prepared ahead, and by the writer.
  ReplicaFixture packed_ahead;
  packed_ahead.prepare_ahead = true;
  packed_ahead.pack = true;
  ReplicaFixture packed;
  packed.pack = true;
  for (ReplicaFixture* f : {&plain, &ahead, &packed_ahead, &packed}) {
    f->refresh();
    std::vector<ReplicaItem> batch;
    for (int n = 5; n < 5 + kUsers; ++n) {
      batch.push_back(upsert(user(n), 100 + n));
    }
    schema::Entry changed = user(1);
    changed.attributes.erase(changed.attributes.begin() + 3);  // sn, as person_entry lays it out.
    changed.attributes.push_back({"sn", {"Changed"}});
    batch.push_back(upsert(changed, 3));  // Replaced in place.
    schema::Entry moved = user(2);
    moved.dn = "uid=user2," + std::string(kSuffix);
    batch.push_back(upsert(moved, 4));  // Moved.
    batch.push_back(remove(105));       // user5, added above.
    require_ok(f->apply(std::move(batch), "rid=007,csn=2"));
    f->txn = f->directory->begin_read();
  }
  CHECK(ahead.cookie() == plain.cookie());
  std::vector<std::string> dns = {std::string(kSuffix), std::string(kPeople), user_dn(1),
                                  "uid=user2," + std::string(kSuffix)};
  for (int n = 6; n < 5 + kUsers; ++n) {
    dns.push_back(user_dn(n));
  }
  for (ReplicaFixture* f : {&ahead, &packed_ahead, &packed}) {
    CAPTURE(f->prepare_ahead);
    CAPTURE(f->pack);
    for (const std::string& dn : dns) {
      const schema::Entry expected = plain.get(dn);
      const schema::Entry got = f->get(dn);
      CHECK_MESSAGE(got.attributes == expected.attributes, dn);
    }
    CHECK_FALSE(f->exists(user_dn(5)));
    CHECK_FALSE(f->exists(user_dn(2)));
    CHECK(values_of(f->get(user_dn(1)), "sn") == std::vector<std::string>{"Changed"});
    CHECK(f->changes.size() == plain.changes.size());
  }
}

TEST_CASE("Replica: packed attributes unpack as they were into storage reused") {
  const std::vector<schema::EntryAttribute> first = {
      {"objectClass", {"top", "inetOrgPerson"}},
      {"cn", {"A name longer than the short string buffer", ""}},
      {"jpegPhoto", {std::string("\0\1\0binary", 9)}},
      {"description;lang-en", {}}};
  const std::vector<schema::EntryAttribute> second = {{"uid", {"u"}}};
  const auto pack = [](const std::vector<schema::EntryAttribute>& attributes) {
    std::string packed;
    for (const schema::EntryAttribute& attribute : attributes) {
      const std::vector<std::string_view> values(attribute.values.begin(), attribute.values.end());
      const std::size_t before = packed.size();
      pack_replica_attribute(packed, attribute.description, values);
      CHECK(packed.size() - before == packed_replica_attribute_size(attribute.description, values));
    }
    return packed;
  };
  std::vector<schema::EntryAttribute> out;
  unpack_replica_attributes(pack(first), out);
  CHECK(out == first);
  // A smaller entry into the same storage, then the first again.
  unpack_replica_attributes(pack(second), out);
  CHECK(out == second);
  unpack_replica_attributes(pack(first), out);
  CHECK(out == first);
  unpack_replica_attributes("", out);
  CHECK(out.empty());
}

TEST_CASE("Replica: prepare_replica refuses a batch with its first bad entry's error") {
  ReplicaFixture f;
  f.refresh();
  ReplicaChange change;
  change.rid = 7;
  for (int n = 5; n < 105; ++n) {
    change.items.push_back(upsert(user(n), 100 + n));
  }
  schema::Entry bad_dn = user(200);
  bad_dn.dn = "uid=user200,,";
  change.items[80].entry = bad_dn;  // In the second half: another thread prepares it.
  SUBCASE("the first in item order wins") {
    change.items[10].entry.attributes.push_back({"noSuchAttribute", {"x"}});
    const Status status = f.directory->prepare_replica(change);
    CHECK(status.code() == StatusCode::kUndefinedAttributeType);
    CHECK(status.message().find("noSuchAttribute") != std::string::npos);
  }
  SUBCASE("alone in the second half") {
    CHECK(f.directory->prepare_replica(change).code() == StatusCode::kInvalidDnSyntax);
  }
}

TEST_CASE("Replica: the present phase prunes what the provider did not name") {
  ReplicaFixture f;
  f.refresh();
  require_ok(f.apply({upsert(user(5), 5)}));
  ReplicaPrune prune;
  prune.base = std::string(kSuffix);
  prune.scope = Scope::kSubtree;
  SUBCASE("leaves") {
    prune.keep = {uuid(1), uuid(2), uuid(4)};  // user1 (3) and user5 (5) are gone.
    std::sort(prune.keep.begin(), prune.keep.end());
    require_ok(f.apply({}, "rid=007,csn=4", prune));
    CHECK_FALSE(f.exists(user_dn(1)));
    CHECK_FALSE(f.exists(user_dn(5)));
    CHECK(f.exists(user_dn(2)));
    CHECK(f.cookie() == "rid=007,csn=4");
  }
  SUBCASE("a parent not named stays while a child it holds is kept") {
    prune.keep = {uuid(1), uuid(3)};
    std::sort(prune.keep.begin(), prune.keep.end());
    require_ok(f.apply({}, std::nullopt, prune));
    CHECK(f.exists(user_dn(1)));
    CHECK(f.exists(kPeople));
    CHECK_FALSE(f.exists(user_dn(2)));
    CHECK_FALSE(f.exists(user_dn(5)));
  }
  SUBCASE("one level") {
    prune.base = kPeople;
    prune.scope = Scope::kOneLevel;
    prune.keep = {uuid(4)};
    require_ok(f.apply({}, std::nullopt, prune));
    CHECK(f.exists(kPeople));
    CHECK(f.exists(user_dn(2)));
    CHECK_FALSE(f.exists(user_dn(1)));
  }
}

TEST_CASE("Replica: without an eq index on entryUUID a batch is refused") {
  TempDir dir;
  std::unique_ptr<Directory> directory = open_directory(test_options(dir.path()));
  auto job = std::make_unique<UpdateJob>();
  ReplicaChange change;
  change.rid = 1;
  change.items.push_back(upsert(domain_entry(std::string(kSuffix), "example"), 1));
  job->change = std::move(change);
  const Status status = directory->run_update(std::move(job));
  CHECK(status.code() == StatusCode::kUnsupported);
  CHECK(status.message().find("entryUUID") != std::string::npos);
}

}  // namespace
}  // namespace numadir::backend
