// Tests for the lower backend layers: backend/entry_codec.h (compact form, lazy views, corrupt
// input), backend/dn_index.h (dn key layout), backend/attribute_index.h (key shapes, id-list
// set operations), backend/lmdb_env.h (point operations, absent results) and operational.h.
#include "backend/entry_codec.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "backend/attribute_index.h"
#include "backend/dn_index.h"
#include "backend/lmdb_env.h"
#include "backend/operational.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::backend {
namespace {

using namespace std::string_view_literals;
using namespace std::string_literals;

std::vector<schema::EntryAttribute> sample_attributes() {
  return {{"objectClass", {"top", "person"}},
          {"cn", {"John Doe", std::string("bin\0ary", 7)}},
          {"sn", {""}},
          {"description", {std::string(300, 'x')}}};
}

TEST_CASE("EntryCodec: round trip keeps the header and every attribute") {
  std::string bytes;
  const EntryHeader header{42, "cn=John Doe,dc=example", "dc=example\0cn=john doe"sv};
  encode_entry(header, sample_attributes(), bytes);
  Result<EntryView> view = EntryView::parse(bytes);
  REQUIRE(view.ok());
  CHECK(view->parent_id() == 42);
  CHECK(view->dn() == header.dn);
  CHECK(view->dn_key() == header.dn_key);
  CHECK(view->attribute_count() == 4);
  schema::Entry decoded;
  REQUIRE(view->decode(&decoded).ok());
  CHECK(decoded.dn == header.dn);
  CHECK(decoded.attributes == sample_attributes());
}

TEST_CASE("EntryCodec: the lazy view finds and skips attributes") {
  std::string bytes;
  encode_entry(EntryHeader{1, "dc=x", "dc=x"}, sample_attributes(), bytes);
  const EntryView view = EntryView::parse(bytes).value();
  AttributeView attribute;
  REQUIRE(view.find("cn", &attribute).value());
  CHECK(attribute.type == "cn");
  CHECK(attribute.values.size() == 2);
  std::string_view value;
  REQUIRE(attribute.values.next(&value));
  CHECK(value == "John Doe");
  REQUIRE(attribute.values.next(&value));
  CHECK(value == std::string_view("bin\0ary", 7));
  CHECK_FALSE(attribute.values.next(&value));
  CHECK_FALSE(view.find("mail", &attribute).value());
  CHECK(description_type("cn;lang-en") == "cn");
  CHECK(description_type("cn") == "cn");
}

TEST_CASE("EntryCodec: next_of steps to the attributes of the types asked for") {
  std::vector<schema::EntryAttribute> attributes = sample_attributes();
  attributes.push_back({"cnx", {"not cn"}});  // A name that starts with "cn".
  attributes.push_back({"cn;lang-de", {"Hans"}});
  attributes.push_back({"c", {"DE"}});  // A name "cn" starts with.
  std::string bytes;
  encode_entry(EntryHeader{1, "dc=x", "dc=x"}, attributes, bytes);
  const EntryView view = EntryView::parse(bytes).value();
  const auto found_by = [&](std::vector<std::string_view> types) {
    std::vector<std::string> found;
    AttributeReader reader = view.attributes();
    AttributeView attribute;
    while (reader.next_of(types, &attribute)) {
      std::string_view value;
      while (attribute.values.next(&value)) {
        found.push_back(std::string(attribute.description) + "=" + std::string(value));
      }
      CHECK(attribute.type == description_type(attribute.description));
    }
    CHECK_FALSE(reader.corrupt());
    return found;
  };
  CHECK(found_by({"cn"}) ==
        std::vector<std::string>{"cn=John Doe", "cn=bin\0ary"s, "cn;lang-de=Hans"});
  CHECK(found_by({"c"}) == std::vector<std::string>{"c=DE"});
  CHECK(found_by({"sn", "c"}) == std::vector<std::string>{"sn=", "c=DE"});
  CHECK(found_by({"mail"}).empty());
  CHECK(found_by({}).empty());
  // Every truncation ends the walk as corrupt or at a whole attribute, never past the bytes.
  for (std::size_t n = 1; n < bytes.size(); ++n) {
    Result<EntryView> cut = EntryView::parse(std::string_view(bytes.data(), n));
    if (!cut.ok()) {
      continue;
    }
    AttributeReader reader = cut->attributes();
    AttributeView attribute;
    const std::vector<std::string_view> types = {"cn", "c"};
    while (reader.next_of(types, &attribute)) {
      std::string_view value;
      while (attribute.values.next(&value)) {
      }
    }
    CHECK(reader.corrupt());
  }
}

TEST_CASE("EntryCodec: reencode changes the header and keeps the attribute bytes") {
  std::string bytes;
  encode_entry(EntryHeader{1, "cn=a,dc=x", "dc=x\0cn=a"sv}, sample_attributes(), bytes);
  const EntryView view = EntryView::parse(bytes).value();
  std::string moved;
  reencode_entry(view, EntryHeader{7, "cn=a,ou=y,dc=x", "dc=x\0ou=y\0cn=a"sv}, moved);
  const EntryView moved_view = EntryView::parse(moved).value();
  CHECK(moved_view.parent_id() == 7);
  CHECK(moved_view.dn() == "cn=a,ou=y,dc=x");
  schema::Entry decoded;
  REQUIRE(moved_view.decode(&decoded).ok());
  CHECK(decoded.attributes == sample_attributes());
}

TEST_CASE("EntryCodec: corrupt bytes are errors and never crashes") {
  std::string good;
  encode_entry(EntryHeader{1, "dc=x", "dc=x"}, sample_attributes(), good);
  SUBCASE("empty and unknown version") {
    CHECK(EntryView::parse("").status().code() == StatusCode::kStorage);
    std::string bad = good;
    bad[0] = 9;
    CHECK(EntryView::parse(bad).status().code() == StatusCode::kStorage);
  }
  SUBCASE("every truncation") {
    for (std::size_t n = 0; n < good.size(); ++n) {
      const std::string_view cut(good.data(), n);
      Result<EntryView> view = EntryView::parse(cut);
      if (!view.ok()) {
        CHECK(view.status().code() == StatusCode::kStorage);
        continue;
      }
      schema::Entry decoded;
      CHECK(view->decode(&decoded).code() == StatusCode::kStorage);
    }
  }
  SUBCASE("random byte flips") {
    const unsigned seed = 20261130;
    INFO("seed ", seed);
    std::mt19937 random(seed);
    for (int round = 0; round < 2000; ++round) {
      std::string bad = good;
      bad[random() % bad.size()] = static_cast<char>(random());
      Result<EntryView> view = EntryView::parse(bad);
      if (view.ok()) {
        schema::Entry decoded;
        (void)view->decode(&decoded);  // Any outcome but a crash or an overread (ASan).
        AttributeReader reader = view->attributes();
        AttributeView attribute;
        const std::vector<std::string_view> types = {"cn", "description"};
        while (reader.next_of(types, &attribute)) {  // The same, stepping over the others.
          std::string_view value;
          while (attribute.values.next(&value)) {
          }
        }
      }
    }
  }
  SUBCASE("an over-long varint") {
    std::string bad = "\x01";
    bad.append(11, '\xff');
    CHECK_FALSE(EntryView::parse(bad).ok());
  }
}

TEST_CASE("DnIndex: keys reverse the normalized RDNs") {
  const SchemaDnNormalizer normalizer(testing::test_schema());
  CHECK(dn_key_of("uid=JDoe,ou=People,dc=Example,dc=COM", normalizer).value() ==
        "dc=com\0dc=example\0ou=people\0uid=jdoe"sv);
  CHECK(dn_key_of("UserID=jdoe , DC=com", normalizer).value() == "dc=com\0uid=jdoe"sv);
  CHECK(dn_key_of("cn=a\\,b,dc=com", normalizer).value() == "dc=com\0cn=a\\,b"sv);
  CHECK(dn_key_of("cn=Doe+sn=X,dc=com", normalizer).value() == "dc=com\0cn=doe+sn=x"sv);
  CHECK(dn_key_of("", normalizer).value().empty());
  CHECK(dn_key_of("cn=a\\00b,dc=com", normalizer).value().find('\0') == 6);
  CHECK(dn_key_of("cn=,,", normalizer).status().code() == StatusCode::kInvalidDnSyntax);
  CHECK(dn_key_from_normalized("cn=a\\\\,dc=com") == "dc=com\0cn=a\\\\"sv);
}

TEST_CASE("DnIndex: normalized_dn_from_key inverts the key layout") {
  const SchemaDnNormalizer normalizer(testing::test_schema());
  std::string ndn = "left over";
  for (const std::string_view dn :
       {"uid=JDoe,ou=People,dc=Example,dc=COM", "cn=a\\,b,dc=com", "cn=Doe+sn=X,dc=com",
        "cn=a\\00b,dc=com", "dc=com", "cn=\\\\,ou=x\\+y,dc=com"}) {
    CAPTURE(dn);
    const std::string key = dn_key_of(dn, normalizer).value();
    normalized_dn_from_key(key, ndn);
    CHECK(ndn == schema::Dn::parse(dn).value().normalized(&normalizer));
    CHECK(dn_key_from_normalized(ndn) == key);
  }
  normalized_dn_from_key("", ndn);
  CHECK(ndn.empty());
}

TEST_CASE("DnIndex: dn_key_into keys like dn_key_of through the caller's scratch") {
  const SchemaDnNormalizer normalizer(testing::test_schema());
  std::string key = "left over";
  DnKeyScratch scratch;
  REQUIRE(dn_key_into("uid=JDoe,ou=People,dc=Example,dc=COM", normalizer, key, scratch).ok());
  CHECK(key == "dc=com\0dc=example\0ou=people\0uid=jdoe"sv);
  CHECK(scratch.ndn == "uid=jdoe,ou=people,dc=example,dc=com");
  CHECK(dn_key_into("cn=,,", normalizer, key, scratch).code() == StatusCode::kInvalidDnSyntax);
  CHECK(key.empty());
  REQUIRE(dn_key_into("uid=JDoe,dc=org", normalizer, key, scratch).ok());
  CHECK(key == "dc=org\0uid=jdoe"sv);
  REQUIRE(dn_key_into("", normalizer, key, scratch).ok());
  CHECK(key.empty());
}

TEST_CASE("DnIndex: dn_key_from_normalized_into replaces the key with the normalized DN's") {
  std::string key = "left over";
  dn_key_from_normalized_into("uid=jdoe,ou=people,dc=example,dc=com", key);
  CHECK(key == "dc=com\0dc=example\0ou=people\0uid=jdoe"sv);
  dn_key_from_normalized_into("cn=a\\,b,dc=com", key);
  CHECK(key == dn_key_from_normalized("cn=a\\,b,dc=com"));
  dn_key_from_normalized_into("", key);
  CHECK(key.empty());
}

TEST_CASE("DnIndex: subtree predicates follow the key layout") {
  const std::string base = "dc=com\0dc=example"s;
  CHECK(key_in_subtree(base, base));
  CHECK_FALSE(key_is_below(base, base));
  CHECK(key_is_below(base + "\0ou=x"s, base));
  CHECK_FALSE(key_in_subtree("dc=com\0dc=example2"s, base));
  CHECK_FALSE(key_in_subtree("dc=com"s, base));
  CHECK(parent_key(base + "\0ou=x"s) == base);
  CHECK(parent_key("dc=com").empty());
}

TEST_CASE("AttributeIndex: key shapes and id-list operations") {
  std::vector<std::string> keys;
  substring_keys("abcde", &keys);
  CHECK(keys == std::vector<std::string>{"Iabc", "Fcde", "Aabc", "Abcd", "Acde"});
  keys.clear();
  substring_keys("ab", &keys);
  CHECK(keys == std::vector<std::string>{"Iab", "Fab"});
  const std::string long_value(1000, 'q');
  const std::string eq = index_key(IndexKind::kEquality, long_value);
  CHECK(eq.size() == kMaxIndexKeyBytes);
  CHECK(eq != index_key(IndexKind::kEquality, long_value + "r"));
  CHECK(index_key(IndexKind::kOrdering, long_value) == long_value.substr(0, kMaxIndexKeyBytes));
  CHECK(index_key(IndexKind::kEquality, "short") == "short");
  IdList a{1, 3, 5, 7};
  intersect_ids(a, IdList{3, 4, 7, 9});
  CHECK(a == IdList{3, 7});
  union_ids(a, IdList{1, 7, 8});
  CHECK(a == IdList{1, 3, 7, 8});
}

TEST_CASE("LmdbEnv: absent keys are ordinary results and errors carry LMDB's text") {
  testing::TempDir dir;
  EnvOptions options;
  options.path = dir.path();
  options.map_size_bytes = 1 << 20;
  Result<std::unique_ptr<Env>> env = Env::open(options);
  REQUIRE(env.ok());
  Result<Txn> txn = Txn::begin(**env, false);
  REQUIRE(txn.ok());
  Result<MDB_dbi> dbi = open_dbi(txn->raw(), "t", MDB_CREATE);
  REQUIRE(dbi.ok());
  std::string_view value;
  CHECK(db_get(txn->raw(), *dbi, "k", &value).value() == false);
  CHECK(db_put(txn->raw(), *dbi, "k", "v", MDB_NOOVERWRITE).value() == true);
  CHECK(db_put(txn->raw(), *dbi, "k", "w", MDB_NOOVERWRITE).value() == false);
  CHECK(db_get(txn->raw(), *dbi, "k", &value).value() == true);
  CHECK(value == "v");
  CHECK(db_del(txn->raw(), *dbi, "k", nullptr).value() == true);
  CHECK(db_del(txn->raw(), *dbi, "k", nullptr).value() == false);
  const Status too_long = db_put(txn->raw(), *dbi, std::string(600, 'k'), "v", 0).status();
  CHECK(too_long.code() == StatusCode::kStorage);
  CHECK(too_long.message().find("mdb_put") != std::string::npos);
  CHECK(lmdb_status(MDB_MAP_FULL, "op").message() ==
        "op: " + std::string(mdb_strerror(MDB_MAP_FULL)));
  CHECK(lmdb_status(0, "op").ok());
  REQUIRE(txn->commit().ok());
  options.path = dir.path() / "missing" / "deeper";
  CHECK(Env::open(options).status().code() == StatusCode::kStorage);
}

TEST_CASE("Operational: separate UuidGenerators make distinct UUIDs") {
  UuidGenerator first;
  UuidGenerator second;
  std::vector<std::string> made;
  // The same millisecond for both: only their counters and random bits tell them apart.
  const auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1765000000000));
  for (int i = 0; i < 64; ++i) {
    made.push_back(first.make_uuid(t));
    made.push_back(second.make_uuid(t));
  }
  std::sort(made.begin(), made.end());
  CHECK(std::adjacent_find(made.begin(), made.end()) == made.end());
}

TEST_CASE("Operational: a UuidGenerator's UUIDs grow in the order it makes them") {
  UuidGenerator uuids;
  const auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1765000000000));
  std::vector<std::string> made;
  SUBCASE("within one millisecond, past the 4,096 values of its counter") {
    for (int i = 0; i < 5000; ++i) {
      made.push_back(uuids.make_uuid(t));
    }
  }
  SUBCASE("millisecond after millisecond") {
    for (int i = 0; i < 100; ++i) {
      made.push_back(uuids.make_uuid(t + std::chrono::milliseconds(i)));
    }
  }
  SUBCASE("when the clock goes back") {
    made.push_back(uuids.make_uuid(t));
    made.push_back(uuids.make_uuid(t - std::chrono::seconds(10)));
    made.push_back(uuids.make_uuid(t - std::chrono::seconds(20)));
    made.push_back(uuids.make_uuid(t));
  }
  CHECK(std::is_sorted(made.begin(), made.end()));
  CHECK(std::adjacent_find(made.begin(), made.end()) == made.end());
}

TEST_CASE("Operational: UUIDs CSNs and timestamps have their standard forms") {
  UuidGenerator uuids;
  // 2025-12-06T05:46:40.000Z = 0x019af232b200 ms since the epoch, in the first 48 bits.
  const auto at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1765000000000));
  const std::string uuid = uuids.make_uuid(at);
  REQUIRE(uuid.size() == 36);
  CHECK(uuid.substr(0, 13) == "019af232-b200");
  CHECK(uuid[14] == '7');
  CHECK(std::string_view("89ab").find(uuid[19]) != std::string_view::npos);
  CHECK(uuids.make_uuid() != uuid);
  CHECK(uuids.make_uuid(at) > uuid);
  // 2200-01-01: later than any time another test uses (the CSN clock is process-wide).
  const auto t = std::chrono::system_clock::time_point(std::chrono::seconds(7258118400) +
                                                       std::chrono::microseconds(123456));
  CHECK(generalized_time(t) == "22000101000000Z");
  CHECK(next_csn(t) == "22000101000000.123456Z#000000#000#000000");
  CHECK(next_csn(t) == "22000101000000.123456Z#000001#000#000000");
  CHECK(next_csn(t - std::chrono::hours(1)) == "22000101000000.123456Z#000002#000#000000");
}

}  // namespace
}  // namespace numadir::backend
