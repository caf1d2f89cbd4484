// Tests of backend/entry_filter.h: the search evaluator applied to decoded entries, as the
// server uses it for the root DSE, cn=Subschema, cn=Monitor and access rules' filters.
#include "backend/entry_filter.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "tests/backend/backend_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

const AttributeCatalog& catalog() {
  static const AttributeCatalog* shared = new AttributeCatalog(test_schema());
  return *shared;
}

bool matches(std::string_view filter, const schema::Entry& entry) {
  const schema::Filter parsed = parse_filter(filter);
  return EntryFilter(parsed, catalog()).matches(entry);
}

// A root DSE as the server builds it: operational attributes, names as the schema spells them.
schema::Entry root_dse() {
  return make_entry("", {{"objectClass", {"top", "OpenLDAProotDSE"}},
                         {"namingContexts", {"dc=example,dc=com"}},
                         {"subschemaSubentry", {"cn=Subschema"}},
                         {"supportedLDAPVersion", {"3"}},
                         {"vendorName", {"numadir"}}});
}

schema::Entry person() {
  return make_entry("uid=jdoe,ou=people,dc=example,dc=com",
                    {{"objectClass", {"top", "person", "inetOrgPerson"}},
                     {"uid", {"jdoe"}},
                     {"cn", {"John Doe"}},
                     {"cn;lang-de", {"Johann Reh"}},
                     {"sn", {"Doe"}},
                     {"uidNumber", {"1007"}},
                     {"X-Unknown", {"ignored"}}});
}

TEST_CASE("EntryFilter: presence and equality use the schema's rules") {
  const schema::Entry entry = person();
  CHECK(matches("(objectClass=*)", entry));
  CHECK(matches("(UID=JDOE)", entry));
  CHECK(matches("(cn=john  doe)", entry));
  CHECK_FALSE(matches("(cn=jane doe)", entry));
  CHECK(matches("(uidNumber=1007)", entry));
  CHECK_FALSE(matches("(mail=*)", entry));
  SUBCASE("an attribute the schema does not know is ignored") {
    CHECK_FALSE(matches("(x-unknown=*)", entry));
    CHECK_FALSE(matches("(x-unknown=ignored)", entry));
  }
}

TEST_CASE("EntryFilter: objectClass equality matches the class's subclasses") {
  // inetOrgPerson derives from organizationalPerson (RFC 2798), which the entry does not list.
  CHECK(matches("(objectClass=organizationalPerson)", person()));
  CHECK(matches("(objectClass=inetorgperson)", person()));
  CHECK_FALSE(matches("(objectClass=groupOfNames)", person()));
}

TEST_CASE("EntryFilter: substrings ordering approximate and extensible items are evaluated") {
  const schema::Entry entry = person();
  CHECK(matches("(cn=Jo*)", entry));
  CHECK(matches("(cn=*hn D*)", entry));
  CHECK(matches("(cn=*doe)", entry));
  CHECK_FALSE(matches("(cn=*smith*)", entry));
  CHECK(matches("(uidNumber>=1000)", entry));
  CHECK_FALSE(matches("(uidNumber<=1000)", entry));
  CHECK(matches("(sn~=doe)", entry));  // Approximate is equality.
  CHECK(matches("(cn:caseExactMatch:=John Doe)", entry));
  CHECK_FALSE(matches("(cn:caseExactMatch:=john doe)", entry));
  CHECK(matches("(uid:dn:=jdoe)", entry));
  CHECK(matches("(ou:dn:=people)", entry));
  CHECK_FALSE(matches("(ou=people)", entry));
}

TEST_CASE("EntryFilter: options select tagged values") {
  const schema::Entry entry = person();
  CHECK(matches("(cn;lang-de=johann reh)", entry));
  CHECK_FALSE(matches("(cn;lang-de=john doe)", entry));
  CHECK(matches("(cn=johann reh)", entry));  // Untagged asks for every cn value.
}

TEST_CASE("EntryFilter: three-valued logic leaves Undefined items unmatched under not") {
  const schema::Entry entry = person();
  // An unknown type in an equality item is Undefined: neither it nor its negation matches.
  CHECK_FALSE(matches("(noSuchType=x)", entry));
  CHECK_FALSE(matches("(!(noSuchType=x))", entry));
  CHECK(matches("(|(noSuchType=x)(uid=jdoe))", entry));
  CHECK_FALSE(matches("(&(noSuchType=x)(uid=jdoe))", entry));
  CHECK(matches("(!(uid=someone))", entry));
  // A value the rule rejects is Undefined too.
  CHECK_FALSE(matches("(!(uidNumber=abc))", entry));
}

TEST_CASE("EntryFilter: the root DSE and the subschema entry match as slapd matches them") {
  const schema::Entry dse = root_dse();
  CHECK(matches("(objectClass=*)", dse));
  CHECK(matches("(objectClass=OpenLDAProotDSE)", dse));
  CHECK(matches("(objectClass~=top)", dse));  // No approximate rule: equality.
  CHECK(matches("(namingContexts=*)", dse));
  CHECK(matches("(vendorName=numadir)", dse));
  // objectClass has no substrings rule and namingContexts no rule at all (RFC 4512): Undefined.
  CHECK_FALSE(matches("(objectClass=*top*)", dse));
  CHECK_FALSE(matches("(!(objectClass=*top*))", dse));
  CHECK_FALSE(matches("(namingContexts=dc=example,dc=com)", dse));
  const schema::Entry subschema = make_entry(
      "cn=Subschema", {{"objectClass", {"top", "subentry", "subschema", "extensibleObject"}},
                       {"cn", {"Subschema"}}});
  CHECK(matches("(cn=sub*)", subschema));
  CHECK(matches("(cn=*SCHEMA)", subschema));
  CHECK(matches("(&(objectClass=subschema)(cn=*bsch*))", subschema));
  CHECK_FALSE(matches("(cn=*monitor*)", subschema));
}

TEST_CASE("EntryFilter: one scratch serves entry after entry") {
  const schema::Filter filter = parse_filter("(|(uid=jdoe)(objectClass=OpenLDAProotDSE))");
  const EntryFilter compiled(filter, catalog());
  EntryFilterScratch scratch;
  const schema::Entry entries[] = {person(), root_dse(),
                                   make_entry("cn=x", {{"objectClass", {"top", "device"}}})};
  CHECK(compiled.matches(entries[0], scratch));
  CHECK(compiled.matches(entries[1], scratch));
  CHECK_FALSE(compiled.matches(entries[2], scratch));
  CHECK(compiled.matches(entries[0], scratch));
}

}  // namespace
}  // namespace numadir::backend
