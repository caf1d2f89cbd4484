// tests/server/replication/sync_session_test.cc: RFC 4533's refresh and persist phases as
// SyncSession turns them into batches, and those batches applied to a real directory.
#include "server/replication/sync_session.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backend/directory.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::server::replication {
namespace {

using backend::ReplicaItem;
using listener::wire::AttributeList;

SyncUuid uuid(int n) {
  SyncUuid id{};
  id[0] = 0x10;
  id[15] = static_cast<std::uint8_t>(n);
  return id;
}

SyncState state(SyncStateKind kind, int n, std::optional<std::string_view> cookie = {}) {
  SyncState s;
  s.state = kind;
  s.uuid = uuid(n);
  s.cookie = cookie;
  return s;
}

// The attributes of a user entry as a provider sends them.
struct Sent {
  explicit Sent(int n, std::string cn_value = "")
      : uid("user" + std::to_string(n)),
        cn(cn_value.empty() ? "User " + std::to_string(n) : std::move(cn_value)) {
    attributes.add("objectClass");
    attributes.add_value("inetOrgPerson");
    attributes.add("uid");
    attributes.add_value(uid);
    attributes.add("cn");
    attributes.add_value(cn);
    attributes.add("sn");
    attributes.add_value("Surname");
    attributes.add("entryCSN");
    attributes.add_value("20261203120000.000000Z#000000#001#000000");
  }
  Sent(const Sent&) = delete;  // `attributes` views the strings.
  Sent& operator=(const Sent&) = delete;
  const std::string uid;
  const std::string cn;
  AttributeList attributes;
};

std::string user_dn(int n) {
  return "uid=user" + std::to_string(n) + ",ou=people," + std::string(backend::testing::kSuffix);
}

SyncScope suffix_scope() { return SyncScope{std::string(backend::testing::kSuffix)}; }

SyncInfo info(SyncInfoKind kind, std::optional<std::string_view> cookie = {},
              bool refresh_done = true) {
  SyncInfo i;
  i.kind = kind;
  i.cookie = cookie;
  i.refresh_done = refresh_done;
  return i;
}

void require_ok(const Status& status) { REQUIRE_MESSAGE(status.ok(), status.to_string()); }

TEST_CASE("Sync session: a refresh without a cookie ends with a prune and its cookie") {
  SyncSession session(1, suffix_scope(), SyncMode::kRefreshOnly, true, 100);
  CHECK_FALSE(session.take_batch().has_value());
  for (int n = 1; n <= 3; ++n) {
    Sent sent(n);
    require_ok(session.on_entry(user_dn(n), sent.attributes, state(SyncStateKind::kAdd, n)));
  }
  SyncDone done;
  done.cookie = "rid=001,csn=A";
  done.refresh_deletes = true;  // As slapd ends a refresh sent without a cookie.
  require_ok(session.on_done(done));
  CHECK(session.phase() == SyncPhase::kDone);
  CHECK(session.entries_received() == 3);
  CHECK(session.last_cookie() == "rid=001,csn=A");

  std::optional<backend::ReplicaChange> batch = session.take_batch();
  REQUIRE(batch.has_value());
  CHECK(batch->rid == 1);
  REQUIRE(batch->items.size() == 3);
  CHECK(batch->items[0].kind == ReplicaItem::Kind::kUpsert);
  CHECK(batch->items[0].uuid == format_uuid(uuid(1)));
  CHECK(batch->items[0].entry.dn == user_dn(1));
  // The attributes come packed, as received.
  CHECK(batch->items[0].entry.attributes.empty());
  std::vector<schema::EntryAttribute> attributes;
  backend::unpack_replica_attributes(batch->items[0].packed, attributes);
  REQUIRE(attributes.size() == 5);
  CHECK(attributes[1].description == "uid");
  CHECK(attributes[1].values == std::vector<std::string>{"user1"});
  REQUIRE(batch->prune.has_value());
  CHECK(batch->prune->base == backend::testing::kSuffix);
  CHECK(batch->prune->keep.size() == 3);
  CHECK(std::is_sorted(batch->prune->keep.begin(), batch->prune->keep.end()));
  CHECK(batch->cookie == "rid=001,csn=A");
  CHECK_FALSE(session.take_batch().has_value());

  Sent late(4);
  CHECK(session.on_entry(user_dn(4), late.attributes, state(SyncStateKind::kAdd, 4)).code() ==
        StatusCode::kMalformed);
  CHECK(session.on_done(done).code() == StatusCode::kMalformed);
}

TEST_CASE("Sync session: a refresh into an empty scope prunes nothing") {
  // Both ways a refresh's present phase ends: a Sync Done, a refreshPresent Sync Info.
  for (const bool by_info : {false, true}) {
    CAPTURE(by_info);
    SyncSession session(1, suffix_scope(), SyncMode::kRefreshAndPersist, true, 100);
    session.set_scope_empty();
    for (int n = 1; n <= 3; ++n) {
      Sent sent(n);
      require_ok(session.on_entry(user_dn(n), sent.attributes, state(SyncStateKind::kAdd, n)));
    }
    if (by_info) {
      require_ok(session.on_info(info(SyncInfoKind::kRefreshPresent, "rid=001,csn=B")));
      CHECK(session.phase() == SyncPhase::kPersist);
    } else {
      SyncDone done;
      done.cookie = "rid=001,csn=B";
      done.refresh_deletes = true;
      require_ok(session.on_done(done));
    }
    std::optional<backend::ReplicaChange> batch = session.take_batch();
    REQUIRE(batch.has_value());
    CHECK(batch->items.size() == 3);
    CHECK_FALSE(batch->prune.has_value());
    CHECK(batch->cookie == "rid=001,csn=B");
  }
}

TEST_CASE("Sync session: refreshAndPersist with a present phase and then persisted changes") {
  SyncSession session(2, suffix_scope(), SyncMode::kRefreshAndPersist, false, 100);
  Sent one(1);
  require_ok(session.on_entry(user_dn(1), one.attributes, state(SyncStateKind::kModify, 1)));
  require_ok(session.on_entry(user_dn(2), AttributeList(), state(SyncStateKind::kPresent, 2)));
  SyncInfo ids;
  ids.kind = SyncInfoKind::kSyncIdSet;
  ids.uuids = {uuid(3), uuid(4)};
  require_ok(session.on_info(ids));
  require_ok(session.on_info(info(SyncInfoKind::kRefreshPresent, "rid=002,csn=B")));
  CHECK(session.phase() == SyncPhase::kPersist);

  std::optional<backend::ReplicaChange> refresh = session.take_batch();
  REQUIRE(refresh.has_value());
  CHECK(refresh->items.size() == 1);  // Present entries are only named.
  REQUIRE(refresh->prune.has_value());
  CHECK(refresh->prune->keep == std::vector<std::string>{format_uuid(uuid(1)), format_uuid(uuid(2)),
                                                         format_uuid(uuid(3)),
                                                         format_uuid(uuid(4))});
  CHECK(refresh->cookie == "rid=002,csn=B");
  CHECK(refresh->refresh);  // Its entry's CSN does not advance the contextCSN: the cookie does.

  Sent changed(3);
  require_ok(session.on_entry(user_dn(3), changed.attributes,
                              state(SyncStateKind::kModify, 3, "rid=002,csn=C")));
  require_ok(session.on_entry(user_dn(4), AttributeList(),
                              state(SyncStateKind::kDelete, 4, "rid=002,csn=D")));
  std::optional<backend::ReplicaChange> persisted = session.take_batch();
  REQUIRE(persisted.has_value());
  REQUIRE(persisted->items.size() == 2);
  CHECK(persisted->items[1].kind == ReplicaItem::Kind::kDelete);
  CHECK_FALSE(persisted->prune.has_value());
  CHECK_FALSE(persisted->skip_missing_deletes);  // A persisted delete of nothing is an error.
  CHECK_FALSE(persisted->refresh);
  CHECK(persisted->cookie == "rid=002,csn=D");

  CHECK(session.on_entry(user_dn(2), AttributeList(), state(SyncStateKind::kPresent, 2)).code() ==
        StatusCode::kMalformed);
  CHECK(session.on_info(info(SyncInfoKind::kRefreshPresent)).code() == StatusCode::kMalformed);
  require_ok(session.on_info(info(SyncInfoKind::kNewCookie, "rid=002,csn=E")));
  CHECK(session.take_batch()->cookie == "rid=002,csn=E");
}

TEST_CASE("Sync session: a delete phase names its deletes and prunes nothing") {
  SyncSession session(3, suffix_scope(), SyncMode::kRefreshAndPersist, false, 100);
  Sent one(1);
  require_ok(session.on_entry(user_dn(1), one.attributes, state(SyncStateKind::kAdd, 1)));
  SyncInfo ids;
  ids.kind = SyncInfoKind::kSyncIdSet;
  ids.refresh_deletes = true;
  ids.uuids = {uuid(5), uuid(6)};
  require_ok(session.on_info(ids));
  require_ok(session.on_info(info(SyncInfoKind::kRefreshDelete, "rid=003,csn=F")));
  std::optional<backend::ReplicaChange> batch = session.take_batch();
  REQUIRE(batch.has_value());
  REQUIRE(batch->items.size() == 3);
  CHECK(batch->items[1].kind == ReplicaItem::Kind::kDelete);
  CHECK(batch->items[2].uuid == format_uuid(uuid(6)));
  CHECK_FALSE(batch->prune.has_value());
  CHECK(batch->skip_missing_deletes);  // A refresh may repeat what was applied before.
  CHECK(session.deletes_received() == 2);
}

TEST_CASE("Sync session: a reload ended as a delete phase still prunes") {
  SyncSession session(3, suffix_scope(), SyncMode::kRefreshAndPersist, true, 100);
  Sent one(1);
  require_ok(session.on_entry(user_dn(1), one.attributes, state(SyncStateKind::kAdd, 1)));
  require_ok(session.on_info(info(SyncInfoKind::kRefreshDelete, "rid=003,csn=F")));
  std::optional<backend::ReplicaChange> batch = session.take_batch();
  REQUIRE(batch.has_value());
  REQUIRE(batch->prune.has_value());
  CHECK(batch->prune->keep == std::vector<std::string>{format_uuid(uuid(1))});
}

TEST_CASE("Sync session: a present phase then a delete phase") {
  SyncSession session(3, suffix_scope(), SyncMode::kRefreshOnly, false, 100);
  require_ok(session.on_entry(user_dn(1), AttributeList(), state(SyncStateKind::kPresent, 1)));
  require_ok(session.on_info(info(SyncInfoKind::kRefreshPresent, {}, /*refresh_done=*/false)));
  CHECK(session.phase() == SyncPhase::kRefresh);
  require_ok(session.on_entry(user_dn(2), AttributeList(), state(SyncStateKind::kDelete, 2)));
  SyncDone done;
  done.refresh_deletes = true;
  done.cookie = "rid=003,csn=G";
  require_ok(session.on_done(done));
  std::optional<backend::ReplicaChange> batch = session.take_batch();
  REQUIRE(batch.has_value());
  REQUIRE(batch->prune.has_value());
  CHECK(batch->prune->keep == std::vector<std::string>{format_uuid(uuid(1))});
  REQUIRE(batch->items.size() == 1);
  CHECK(batch->items[0].kind == ReplicaItem::Kind::kDelete);
}

TEST_CASE("Sync session: batches of a long refresh carry no cookie until its end") {
  SyncSession session(4, suffix_scope(), SyncMode::kRefreshOnly, true, 2);
  std::vector<backend::ReplicaChange> batches;
  for (int n = 1; n <= 5; ++n) {
    Sent sent(n);
    require_ok(session.on_entry(user_dn(n), sent.attributes, state(SyncStateKind::kAdd, n)));
    if (session.batch_full()) {
      batches.push_back(*session.take_batch());
    }
  }
  SyncDone done;
  done.cookie = "rid=004,csn=H";
  require_ok(session.on_done(done));
  batches.push_back(*session.take_batch());
  REQUIRE(batches.size() == 3);
  CHECK_FALSE(batches[0].cookie.has_value());
  CHECK_FALSE(batches[0].prune.has_value());
  CHECK(batches[2].items.size() == 1);
  CHECK(batches[2].cookie == "rid=004,csn=H");
  REQUIRE(batches[2].prune.has_value());
  CHECK(batches[2].prune->keep.size() == 5);  // The earlier batches' entries are named too.
  for (const backend::ReplicaChange& batch : batches) {
    CHECK(batch.refresh);  // The refresh's entries: only the cookie advances the contextCSN.
  }
  // A batch of nothing but a cookie is no refresh's.
  SyncSession persist(4, suffix_scope(), SyncMode::kRefreshAndPersist, true, 2);
  require_ok(persist.on_info(info(SyncInfoKind::kRefreshDelete, "rid=004,csn=I")));
  CHECK_FALSE(persist.take_batch()->refresh);
}

TEST_CASE("Sync session: a batch of large entries is full at kBatchBytes whatever its count") {
  SyncSession session(1, suffix_scope(), SyncMode::kRefreshOnly, true, 1000);
  const std::string photo(std::size_t{1} << 20, 'p');  // 1 MiB.
  int sent = 0;
  while (!session.batch_full()) {
    REQUIRE(sent < 100);
    ++sent;
    Sent entry(sent);
    entry.attributes.add("jpegPhoto");
    entry.attributes.add_value(photo);
    require_ok(session.on_entry(user_dn(sent), entry.attributes, state(SyncStateKind::kAdd, sent)));
  }
  // Full after the entry that took it to 8 MiB: the 8th of 1 MiB and a little more.
  CHECK(sent == static_cast<int>(SyncSession::kBatchBytes >> 20));
  std::optional<backend::ReplicaChange> batch = session.take_batch();
  REQUIRE(batch.has_value());
  CHECK(batch->items.size() == static_cast<std::size_t>(sent));
  CHECK_FALSE(session.batch_full());  // A new batch starts empty.
}

TEST_CASE("Sync session: a batch carries the greatest CSN of its cookie") {
  SyncSession session(5, suffix_scope(), SyncMode::kRefreshAndPersist, false, 100);
  require_ok(session.on_info(info(SyncInfoKind::kRefreshDelete, "rid=005,csn=B")));
  std::optional<backend::ReplicaChange> batch = session.take_batch();
  REQUIRE(batch.has_value());
  CHECK(batch->cookie_csn == "B");
  // A cookie of several CSNs (one per server id): the greatest, wherever it is.
  require_ok(session.on_entry(user_dn(4), AttributeList(),
                              state(SyncStateKind::kDelete, 4, "rid=005,csn=C;E;D")));
  batch = session.take_batch();
  REQUIRE(batch.has_value());
  CHECK(batch->cookie_csn == "E");
  // A batch without a cookie has no cookie CSN, whatever the batch before had.
  require_ok(session.on_entry(user_dn(5), AttributeList(), state(SyncStateKind::kDelete, 5)));
  batch = session.take_batch();
  REQUIRE(batch.has_value());
  CHECK_FALSE(batch->cookie.has_value());
  CHECK(batch->cookie_csn.empty());
}

TEST_CASE("Sync session: cookies of another rid or that do not parse are refused") {
  SyncSession session(5, suffix_scope(), SyncMode::kRefreshAndPersist, false, 100);
  const Status other = session.on_info(info(SyncInfoKind::kNewCookie, "rid=006,csn=I"));
  CHECK(other.code() == StatusCode::kMalformed);
  CHECK(other.message().find("rid 6") != std::string::npos);
  CHECK(session.on_info(info(SyncInfoKind::kNewCookie, "rid=5,oops")).code() ==
        StatusCode::kMalformed);
  Sent sent(1);
  CHECK(session.on_entry(user_dn(1), sent.attributes, state(SyncStateKind::kAdd, 1, "sid=xyz"))
            .code() == StatusCode::kMalformed);
  require_ok(session.on_info(info(SyncInfoKind::kNewCookie, "rid=005,csn=J")));
  require_ok(session.on_info(info(SyncInfoKind::kNewCookie, "csn=K")));  // No rid: accepted.
}

// The batches a session makes, applied by the directory's writer: the UUID text the session
// writes is the one the entryUUID index finds again.
TEST_CASE("Sync session: its batches applied to a directory") {
  using namespace backend::testing;
  TempDir dir;
  std::vector<backend::IndexSpec> indexes = default_indexes();
  indexes.push_back(backend::IndexSpec{"entryUUID", true, false, false, false});
  std::unique_ptr<backend::Directory> directory = open_directory(test_options(dir.path(), indexes));
  const auto apply = [&](backend::ReplicaChange change) {
    auto job = std::make_unique<backend::UpdateJob>();
    job->change = std::move(change);
    return directory->run_update(std::move(job));
  };
  AttributeList domain;
  domain.add("objectClass");
  domain.add_value("domain");
  domain.add("dc");
  domain.add_value("example");
  AttributeList people;
  people.add("objectClass");
  people.add_value("organizationalUnit");
  people.add("ou");
  people.add_value("people");

  {
    SyncSession first(1, suffix_scope(), SyncMode::kRefreshOnly, true, 100);
    require_ok(first.on_entry(kSuffix, domain, state(SyncStateKind::kAdd, 100)));
    require_ok(first.on_entry("ou=people," + std::string(kSuffix), people,
                              state(SyncStateKind::kAdd, 101)));
    for (int n = 1; n <= 3; ++n) {
      Sent sent(n);  // The session copies what it keeps.
      require_ok(first.on_entry(user_dn(n), sent.attributes, state(SyncStateKind::kAdd, n)));
    }
    SyncDone done;
    done.cookie = "rid=001,csn=1";
    require_ok(first.on_done(done));
    require_ok(apply(*first.take_batch()));
  }
  // A later refresh: user2 unchanged (present), user3 gone, user1 modified, user4 new.
  {
    SyncSession second(1, suffix_scope(), SyncMode::kRefreshOnly, false, 100);
    for (int present : {100, 101, 2}) {
      require_ok(second.on_entry("", AttributeList(), state(SyncStateKind::kPresent, present)));
    }
    Sent one(1, "Changed");
    Sent four(4);
    require_ok(second.on_entry(user_dn(1), one.attributes, state(SyncStateKind::kModify, 1)));
    require_ok(second.on_entry(user_dn(4), four.attributes, state(SyncStateKind::kAdd, 4)));
    SyncDone done;
    done.cookie = "rid=001,csn=2";
    require_ok(second.on_done(done));
    require_ok(apply(*second.take_batch()));
  }
  auto txn = directory->begin_read();
  CHECK(directory->get(*txn, user_dn(2)).ok());
  CHECK_FALSE(directory->get(*txn, user_dn(3)).ok());
  CHECK(directory->get(*txn, user_dn(4)).ok());
  CHECK(values_of(*directory->get(*txn, user_dn(1)), "cn") == std::vector<std::string>{"Changed"});
  CHECK(values_of(*directory->get(*txn, user_dn(1)), "entryUUID") ==
        std::vector<std::string>{format_uuid(uuid(1))});
  CHECK(directory->replica_cookie(1)->value_or("") == "rid=001,csn=2");
  CHECK(directory->verify_indexes().ok());
}

}  // namespace
}  // namespace numadir::server::replication
