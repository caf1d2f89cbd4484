// AccessControl (server/access_control.h): the default policy.
#include "server/access_control.h"

#include <doctest/doctest.h>

#include "tests/backend/backend_test_util.h"

namespace numadir::server {
namespace {

constexpr std::string_view kAlice = "uid=alice,ou=people,dc=example,dc=com";
constexpr std::string_view kBob = "uid=bob,ou=people,dc=example,dc=com";

TEST_CASE("AccessControl: the default policy") {
  const schema::Schema& schema = backend::testing::test_schema();
  const AccessControl access(schema);
  const schema::AttributeType* password = schema.attribute_type("userPassword");
  const schema::AttributeType* cn = schema.attribute_type("cn");
  REQUIRE(password != nullptr);
  REQUIRE(cn != nullptr);
  const Identity anonymous;
  const Identity alice{std::string(kAlice), std::string(kAlice), false};
  const Identity root{"cn=admin,dc=example,dc=com", "cn=admin,dc=example,dc=com", true};

  SUBCASE("userPassword is for authentication only") {
    CHECK(access.level(anonymous, kAlice, password) == AccessLevel::kAuth);
    CHECK(access.level(alice, kAlice, password) == AccessLevel::kAuth);
    CHECK(access.level(alice, kBob, password) == AccessLevel::kAuth);
    CHECK(access.is_password(password));
    CHECK_FALSE(access.is_password(cn));
  }
  SUBCASE("userPassword is writable by its owner and the rootdn") {
    CHECK(access.may_write(alice, kAlice, password));
    CHECK_FALSE(access.may_write(alice, kBob, password));
    CHECK_FALSE(access.may_write(anonymous, kAlice, password));
    CHECK(access.may_write(root, kBob, password));
    CHECK(access.level(root, kBob, password) == AccessLevel::kWrite);
  }
  SUBCASE("everything else is readable by all and writable by self and the rootdn") {
    CHECK(access.level(anonymous, kAlice, cn) == AccessLevel::kRead);
    CHECK(access.level(alice, kBob, cn) == AccessLevel::kRead);
    CHECK(access.level(alice, kAlice, cn) == AccessLevel::kWrite);
    CHECK(access.level(alice, kAlice, nullptr) == AccessLevel::kWrite);
    CHECK(access.level(alice, kBob, nullptr) == AccessLevel::kRead);
    CHECK_FALSE(access.may_write(anonymous, kAlice, cn));
    CHECK(access.may_write(root, kAlice, cn));
  }
  SUBCASE("only the rootdn adds and removes entries") {
    CHECK(access.may_write_children(root, "ou=people,dc=example,dc=com"));
    CHECK_FALSE(access.may_write_children(alice, "ou=people,dc=example,dc=com"));
    CHECK_FALSE(access.may_write_children(alice, kAlice));
    CHECK_FALSE(access.may_write_children(anonymous, ""));
  }
}

}  // namespace
}  // namespace numadir::server
