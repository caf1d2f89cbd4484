// OperationContext::normalize_dn_into (server/operations/operation_context.h) with a warm memo:
// a DN that is one RDN, a ',' and the text of the last parent parses its first RDN alone, and
// every DN, whatever the memo holds, normalizes (or fails, with the same message) as it does
// through a fresh scratch.
#include "server/operations/operation_context.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server {
namespace {

using namespace testing;

struct Normalized {
  Status status;
  std::string ndn;
};

Normalized normalize(const OperationContext& context, std::string_view dn, DnScratch& scratch) {
  Normalized result;
  result.status = context.normalize_dn_into(dn, result.ndn, scratch);
  if (!result.status.ok()) {
    result.ndn.clear();
  }
  return result;
}

// The same outcome as a fresh scratch gives, with `warm` after it has seen `dn`'s siblings.
void check_as_fresh(const OperationContext& context, std::string_view dn, DnScratch& warm) {
  CAPTURE(dn);
  DnScratch fresh;
  const Normalized expected = normalize(context, dn, fresh);
  const Normalized got = normalize(context, dn, warm);
  CHECK(got.status.code() == expected.status.code());
  CHECK(got.status.message() == expected.status.message());
  CHECK(got.ndn == expected.ndn);
}

TEST_CASE("operation context: a DN under the remembered parent parses its first RDN alone") {
  HandlerFixture fixture;
  const OperationContext context(fixture.directory(), default_handler_options());
  DnScratch scratch;
  const Normalized first = normalize(context, "uid=user1,ou=people,dc=example,dc=com", scratch);
  REQUIRE(first.status.ok());
  CHECK(first.ndn == "uid=user1,ou=people,dc=example,dc=com");
  CHECK(scratch.parsed.rdn_count() == 4);  // The whole DN: nothing was remembered yet.

  const Normalized second = normalize(context, "UID=User2 ,ou=people,dc=example,dc=com", scratch);
  REQUIRE(second.status.ok());
  CHECK(second.ndn == "uid=user2,ou=people,dc=example,dc=com");
  CHECK(scratch.parsed.rdn_count() == 1);  // Only the first RDN was parsed.

  // The same parent spelled otherwise parses whole.
  const Normalized third = normalize(context, "uid=user3,ou=People,dc=example,dc=com", scratch);
  REQUIRE(third.status.ok());
  CHECK(third.ndn == "uid=user3,ou=people,dc=example,dc=com");
  CHECK(scratch.parsed.rdn_count() == 4);
}

TEST_CASE("operation context: a warm DN memo normalizes every DN as a fresh one does") {
  HandlerFixture fixture;
  const OperationContext context(fixture.directory(), default_handler_options());
  const std::vector<std::string_view> dns = {
      "uid=user1,ou=people,dc=example,dc=com",
      "uid=a\\,b,ou=people,dc=example,dc=com",      // An escaped ',' in the first RDN.
      "uid=a\\,ou=people,dc=example,dc=com",        // ... which makes the parent another.
      "uid=a\\\\,ou=people,dc=example,dc=com",      // An escaped '\', then the separator.
      "uid=a\\2C,ou=people,dc=example,dc=com",      // A hex-escaped ','.
      "uid=a\\ ,ou=people,dc=example,dc=com",       // An escaped trailing space, kept.
      "uid= a  b ,ou=people,dc=example,dc=com",     // Spaces dropped and collapsed.
      "cn=A+sn=B,ou=people,dc=example,dc=com",      // A multi-valued RDN.
      "uid=#04024869,ou=people,dc=example,dc=com",  // A hex-form value.
      "uid=a,ou=x,ou=people,dc=example,dc=com",     // Two RDNs above the parent.
      ",ou=people,dc=example,dc=com",               // An empty first RDN.
      "=a,ou=people,dc=example,dc=com",             // No type.
      "uid=a\"b,ou=people,dc=example,dc=com",       // An unescaped '"'.
      "uid=a\\,ou=people,dc=example,dc=com\\",      // A trailing lone '\'.
      "nosuchtype=a,ou=people,dc=example,dc=com",   // A type the schema lacks.
      "uid=a, ou=people,dc=example,dc=com",         // A space after the separator.
      "uid=b, ou=people,dc=example,dc=com",         // ... the same parent text again.
      "uid=a,ou=people,dc=example,dc=com",          // ... and without it.
      "dc=com",
      "",
  };
  // Each DN after each other one, so that every memo meets every DN.
  for (std::string_view before : dns) {
    for (std::string_view dn : dns) {
      DnScratch warm;
      (void)normalize(context, before, warm);
      (void)normalize(context, "uid=warm,ou=people,dc=example,dc=com", warm);
      check_as_fresh(context, dn, warm);
      (void)normalize(context, before, warm);
      check_as_fresh(context, dn, warm);
    }
  }
}

}  // namespace
}  // namespace numadir::server
