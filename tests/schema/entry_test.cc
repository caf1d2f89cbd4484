// tests/schema/entry_test.cc: Entry lookups, attribute descriptions, and Schema::check_entry /
// structural_class over the shipped schema: a passing entry, then every violation with its
// exact StatusCode (the LDAP result code in the name) and slapd-like message.
//
// Thread contract: single-threaded doctest cases; the cases that add schema use their own temp
// dir.
#include "schema/entry.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/schema.h"
#include "tests/schema/shipped_schema.h"

namespace numadir::schema {
namespace {

using testing::shipped;

// The shipped schema plus `text` (OpenLDAP form), through a file in a fresh temp dir.
Schema shipped_plus(std::string_view text) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("numadir-entry-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / "extra.schema";
  {
    std::ofstream out(file, std::ios::binary);
    out << text;
  }
  const std::vector<std::filesystem::path> extra{file};
  Result<Schema> loaded = Schema::load_default(extra);
  std::filesystem::remove_all(dir);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().to_string());
  return std::move(loaded).value();
}

// A posix user as nslcd and SSSD expect one.
Entry posix_user() {
  return Entry{.dn = "uid=jdoe,ou=people,dc=example,dc=com",
               .attributes = {
                   {"objectClass",
                    {"top", "person", "organizationalPerson", "inetOrgPerson", "posixAccount",
                     "shadowAccount"}},
                   {"uid", {"jdoe"}},
                   {"cn", {"John Doe", "Johnny"}},
                   {"sn", {"Doe"}},
                   {"givenName", {"John"}},
                   {"mail", {"jdoe@example.com"}},
                   {"uidNumber", {"1000"}},
                   {"gidNumber", {"100"}},
                   {"homeDirectory", {"/home/jdoe"}},
                   {"loginShell", {"/bin/bash"}},
                   {"userPassword", {"{SSHA}c2VjcmV0c2FsdA=="}},
                   {"shadowLastChange", {"19500"}},
               }};
}

EntryAttribute& attribute(Entry& entry, std::string_view description) {
  EntryAttribute* found = entry.find(description);
  INFO("attribute: ", std::string(description));
  REQUIRE(found != nullptr);
  return *found;
}

void remove(Entry& entry, std::string_view description) {
  std::erase_if(entry.attributes,
                [&](const EntryAttribute& a) { return a.description == description; });
}

// Every entry these tests check goes through this one scratch too, one after another, as an
// import's thread checks its entries: the reused storage must not change any verdict.
EntryCheckScratch& shared_scratch() {
  static EntryCheckScratch scratch;
  return scratch;
}

// Returns: the check's status without a scratch, once it was found equal to the status and the
// structural class of the check with the shared scratch.
Status check_both_ways(const Entry& entry, const Schema& schema) {
  const ObjectClass* structural = nullptr;
  const Status status = schema.check_entry(entry, &structural);
  const ObjectClass* reused_structural = nullptr;
  const Status reused = schema.check_entry(entry, &reused_structural, shared_scratch());
  CHECK(reused.code() == status.code());
  CHECK(reused.message() == status.message());
  CHECK(reused_structural == structural);
  return status;
}

void check_ok(const Entry& entry, const Schema& schema = shipped()) {
  const Status status = check_both_ways(entry, schema);
  CHECK_MESSAGE(status.ok(), status.to_string());
}

void check_fails(const Entry& entry, StatusCode code, std::string_view message,
                 const Schema& schema = shipped()) {
  const Status status = check_both_ways(entry, schema);
  INFO("status: ", status.to_string());
  CHECK(status.code() == code);
  CHECK(status.message() == message);
}

TEST_CASE("Entry: find compares whole descriptions without regard to case") {
  Entry entry{.dn = "cn=x", .attributes = {{"cn", {"x"}}, {"cn;lang-en", {"y"}}}};
  REQUIRE(entry.find("CN") != nullptr);
  CHECK(entry.find("CN")->values == std::vector<std::string>{"x"});
  REQUIRE(entry.find("cn;LANG-EN") != nullptr);
  CHECK(entry.find("cn;LANG-EN")->values == std::vector<std::string>{"y"});
  CHECK(entry.find("cn;lang-de") == nullptr);
  CHECK(entry.find("c") == nullptr);
  entry.find("cn")->values.push_back("z");
  const Entry& view = entry;
  CHECK(view.find("cn")->values.size() == 2);
  CHECK(view.find("sn") == nullptr);
}

TEST_CASE("Entry: split_description separates the type from its options") {
  using Split = std::pair<std::string_view, std::string_view>;
  CHECK(split_description("cn") == Split{"cn", ""});
  CHECK(split_description("cn;lang-en") == Split{"cn", ";lang-en"});
  CHECK(split_description("userCertificate;binary;x-a") == Split{"userCertificate", ";binary;x-a"});
  CHECK(split_description("2.5.4.3;x") == Split{"2.5.4.3", ";x"});
  CHECK(split_description("") == Split{"", ""});
  CHECK(split_description(";x") == Split{"", ";x"});
}

TEST_CASE("Entry: a posix user passes") {
  const Entry entry = posix_user();
  check_ok(entry);
  const ObjectClass* structural = shipped().structural_class(entry);
  REQUIRE(structural != nullptr);
  CHECK(structural->primary_name() == "inetOrgPerson");
}

TEST_CASE("Entry: listing only the most specific class implies its superclasses") {
  Entry entry = posix_user();
  attribute(entry, "objectClass").values = {"inetOrgPerson", "posixAccount", "shadowAccount"};
  check_ok(entry);
  // Class names and OIDs in any case.
  attribute(entry, "objectClass").values = {"INETORGPERSON", "1.3.6.1.1.1.2.0", "shadowaccount"};
  check_ok(entry);
  CHECK(shipped().structural_class(entry) == shipped().object_class("inetOrgPerson"));
}

TEST_CASE("Entry: a missing MUST attribute is an objectClassViolation (65)") {
  Entry entry = posix_user();
  attribute(entry, "objectClass").values = {"inetOrgPerson", "posixAccount", "shadowAccount"};
  remove(entry, "sn");
  check_fails(entry, StatusCode::kObjectClassViolation,
              "object class 'inetOrgPerson' requires attribute 'sn'");
  entry = posix_user();
  remove(entry, "homeDirectory");
  check_fails(entry, StatusCode::kObjectClassViolation,
              "object class 'posixAccount' requires attribute 'homeDirectory'");
}

TEST_CASE("Entry: an attribute outside MUST and MAY is an objectClassViolation (65)") {
  Entry entry{.dn = "cn=John Doe,dc=example,dc=com",
              .attributes = {{"objectClass", {"person"}},
                             {"cn", {"John Doe"}},
                             {"sn", {"Doe"}},
                             {"mail;x-work", {"jdoe@example.com"}}}};
  check_fails(entry, StatusCode::kObjectClassViolation, "attribute 'mail;x-work' not allowed");
  entry.attributes.back().description = "uidNumber";
  entry.attributes.back().values = {"7"};
  check_fails(entry, StatusCode::kObjectClassViolation, "attribute 'uidNumber' not allowed");
}

TEST_CASE("Entry: an entry without a structural class is an objectClassViolation (65)") {
  const Entry entry{.dn = "uid=jdoe,dc=example,dc=com",
                    .attributes = {{"objectClass", {"top", "uidObject"}}, {"uid", {"jdoe"}}}};
  check_fails(entry, StatusCode::kObjectClassViolation, "no structural object class provided");
  CHECK(shipped().structural_class(entry) == nullptr);
}

TEST_CASE("Entry: two structural chains are an objectClassViolation (65)") {
  const Entry entry{
      .dn = "cn=printer,dc=example,dc=com",
      .attributes = {
          {"objectClass", {"person", "device"}}, {"cn", {"printer"}}, {"sn", {"Printer"}}}};
  check_fails(entry, StatusCode::kObjectClassViolation,
              "invalid structural object class chain (person/device)");
  CHECK(shipped().structural_class(entry) == nullptr);
}

TEST_CASE("Entry: a class derived from two structural chains joins them") {
  Entry entry{.dn = "o=Example,dc=example,dc=com",
              .attributes = {{"objectClass", {"organization", "organizationalUnit"}},
                             {"o", {"Example"}},
                             {"ou", {"Example"}}}};
  check_fails(entry, StatusCode::kObjectClassViolation,
              "invalid structural object class chain (organization/organizationalUnit)");
  attribute(entry, "objectClass").values.push_back("pilotOrganization");
  check_ok(entry);
  CHECK(shipped().structural_class(entry) == shipped().object_class("pilotOrganization"));
}

TEST_CASE("Entry: an unknown objectClass value is invalid per syntax as in slapd") {
  Entry entry = posix_user();
  const std::size_t position = attribute(entry, "objectClass").values.size();
  attribute(entry, "objectClass").values.push_back("nosuchClass");
  check_fails(entry, StatusCode::kInvalidAttributeSyntax,
              "objectClass: value #" + std::to_string(position) + " invalid per syntax");
  CHECK(shipped().structural_class(entry) == nullptr);
  // Known by name or by OID, in any case.
  entry = posix_user();
  attribute(entry, "objectClass").values[1] = "2.5.6.6";  // person
  attribute(entry, "objectClass").values[2] = "ORGANIZATIONALPERSON";
  check_ok(entry);
}

TEST_CASE("Entry: a missing objectClass is an objectClassViolation (65)") {
  Entry entry = posix_user();
  remove(entry, "objectClass");
  check_fails(entry, StatusCode::kObjectClassViolation, "no objectClass attribute");
  // objectClass with an option is not the objectClass attribute.
  entry = posix_user();
  attribute(entry, "objectClass").description = "objectClass;x-tag";
  check_fails(entry, StatusCode::kObjectClassViolation, "no objectClass attribute");
}

TEST_CASE("Entry: an abstract class needs a class derived from it") {
  const Schema schema = shipped_plus(
      "objectclass ( 1.3.6.1.4.1.55557.2.1 NAME 'exampleBase' SUP top ABSTRACT MAY description )\n"
      "objectclass ( 1.3.6.1.4.1.55557.2.2 NAME 'exampleThing' SUP exampleBase STRUCTURAL\n"
      "\tMUST cn )\n");
  Entry entry{.dn = "cn=x,dc=example,dc=com",
              .attributes = {{"objectClass", {"device", "exampleBase"}}, {"cn", {"x"}}}};
  check_fails(entry, StatusCode::kObjectClassViolation,
              "instantiation of abstract objectClass 'exampleBase' not allowed", schema);
  attribute(entry, "objectClass").values = {"exampleThing", "exampleBase", "top"};
  check_ok(entry, schema);
}

TEST_CASE("Entry: a subtype does not meet the MUST or MAY of its supertype") {
  // RFC 4512 §2.5.3: "MUST name" is met by name or name;x-tag, not by cn.
  const Schema schema = shipped_plus(
      "objectclass ( 1.3.6.1.4.1.55557.2.3 NAME 'exampleNamed' SUP top STRUCTURAL MUST name )\n");
  Entry entry{.dn = "name=x,dc=example,dc=com",
              .attributes = {{"objectClass", {"exampleNamed"}}, {"name", {"x"}}}};
  check_ok(entry, schema);
  entry.attributes.push_back({"cn", {"x"}});
  check_fails(entry, StatusCode::kObjectClassViolation, "attribute 'cn' not allowed", schema);
  entry.dn = "cn=x,dc=example,dc=com";
  remove(entry, "name");
  check_fails(entry, StatusCode::kObjectClassViolation,
              "object class 'exampleNamed' requires attribute 'name'", schema);
}

TEST_CASE("Entry: an undefined attribute type is undefinedAttributeType (17)") {
  Entry entry = posix_user();
  entry.attributes.push_back({"favoriteColour", {"blue"}});
  check_fails(entry, StatusCode::kUndefinedAttributeType,
              "favoriteColour: attribute type undefined");
  entry = posix_user();
  entry.attributes.push_back({"cn;lang_en", {"x"}});
  check_fails(entry, StatusCode::kUndefinedAttributeType,
              "cn;lang_en: attribute description contains inappropriate characters");
  entry = posix_user();
  entry.attributes.push_back({"cn;", {"x"}});
  check_fails(entry, StatusCode::kUndefinedAttributeType,
              "cn;: attribute description contains inappropriate characters");
}

TEST_CASE("Entry: a value invalid per syntax is invalidAttributeSyntax (21)") {
  Entry entry = posix_user();
  attribute(entry, "uidNumber").values = {"abc"};
  check_fails(entry, StatusCode::kInvalidAttributeSyntax, "uidNumber: value #0 invalid per syntax");
  const Entry group{
      .dn = "cn=staff,ou=groups,dc=example,dc=com",
      .attributes = {{"objectClass", {"groupOfNames"}},
                     {"cn", {"staff"}},
                     {"member", {"uid=jdoe,ou=people,dc=example,dc=com", "not a DN"}}}};
  check_fails(group, StatusCode::kInvalidAttributeSyntax, "member: value #1 invalid per syntax");
  entry = posix_user();
  attribute(entry, "mail").values = {"j\xc3\xb6rg@example.com"};  // IA5 String is ASCII.
  check_fails(entry, StatusCode::kInvalidAttributeSyntax, "mail: value #0 invalid per syntax");
}

TEST_CASE("Entry: two values of a single-value type are constraintViolation (19)") {
  Entry entry = posix_user();
  attribute(entry, "uidNumber").values = {"1000", "1001"};
  check_fails(entry, StatusCode::kConstraintViolation,
              "attribute 'uidNumber' cannot have multiple values");
  // Two attributes of one description count together.
  entry = posix_user();
  entry.attributes.push_back({"UIDNUMBER", {"1001"}});
  check_fails(entry, StatusCode::kConstraintViolation,
              "attribute 'uidNumber' cannot have multiple values");
  // Each description is single-valued on its own.
  entry = posix_user();
  entry.attributes.push_back({"displayName", {"John"}});
  entry.attributes.push_back({"displayName;lang-fr", {"Jean"}});
  check_ok(entry);
}

TEST_CASE("Entry: an attribute without values is constraintViolation (19)") {
  Entry entry = posix_user();
  entry.attributes.push_back({"description", {}});
  check_fails(entry, StatusCode::kConstraintViolation, "description: attribute has no values");
}

TEST_CASE("Entry: a value given twice is attributeOrValueExists (20)") {
  Entry entry = posix_user();
  attribute(entry, "cn").values = {"John Doe", "Johnny", "John Doe"};
  check_fails(entry, StatusCode::kAttributeOrValueExists, "cn: value #2 provided more than once");
  // caseIgnoreMatch: case and insignificant spaces do not make a value different.
  attribute(entry, "cn").values = {"John Doe", "  JOHN   doe "};
  check_fails(entry, StatusCode::kAttributeOrValueExists, "cn: value #1 provided more than once");
  // Options in another case and order are the same description.
  entry = posix_user();
  entry.attributes.push_back({"cn;lang-en;x-a", {"John"}});
  entry.attributes.push_back({"CN;X-A;LANG-EN", {"john"}});
  check_fails(entry, StatusCode::kAttributeOrValueExists,
              "cn;lang-en;x-a: value #1 provided more than once");
  // objectClass values compare by the class they name.
  entry = posix_user();
  attribute(entry, "objectClass").values = {"inetOrgPerson", "posixAccount", "2.5.6.6", "PERSON"};
  check_fails(entry, StatusCode::kAttributeOrValueExists,
              "objectClass: value #3 provided more than once");
}

TEST_CASE("Entry: values distinct under the equality rule are not duplicates") {
  const Entry group{.dn = "cn=staff,ou=groups,dc=example,dc=com",
                    .attributes = {{"objectClass", {"posixGroup"}},
                                   {"cn", {"staff"}},
                                   {"gidNumber", {"100"}},
                                   {"memberUid", {"jdoe", "JDOE"}}}};  // caseExactIA5Match.
  check_ok(group);
  Entry entry = posix_user();
  attribute(entry, "userPassword").values = {"secret", "SECRET"};  // octetStringMatch.
  check_ok(entry);
  entry.attributes.push_back({"cn;lang-en", {"John Doe"}});  // Another description.
  check_ok(entry);
}

TEST_CASE("Entry: an RDN value missing from the entry is namingViolation (64)") {
  Entry entry = posix_user();
  entry.dn = "uid=someone,ou=people,dc=example,dc=com";
  check_fails(entry, StatusCode::kNamingViolation,
              "value of naming attribute 'uid' is not present in entry");
  entry.dn = "uidNumber=1000,ou=people,dc=example,dc=com";
  check_ok(entry);
  entry.dn = "cn=John Doe+sn=Smith,ou=people,dc=example,dc=com";
  check_fails(entry, StatusCode::kNamingViolation,
              "value of naming attribute 'sn' is not present in entry");
  entry.dn = "colour=blue,ou=people,dc=example,dc=com";
  check_fails(entry, StatusCode::kNamingViolation, "naming attribute 'colour' is not defined");
  // A value held only with an option does not name the entry.
  entry = posix_user();
  entry.attributes.push_back({"title;lang-en", {"Boss"}});
  entry.dn = "title=Boss,ou=people,dc=example,dc=com";
  check_fails(entry, StatusCode::kNamingViolation,
              "value of naming attribute 'title' is not present in entry");
}

TEST_CASE("Entry: RDN values match under the equality rule") {
  Entry entry = posix_user();
  entry.dn = "UID=JDOE,ou=people,dc=example,dc=com";
  check_ok(entry);
  entry.dn = "cn=john   doe + 0.9.2342.19200300.100.1.1=jdoe,ou=people,dc=example,dc=com";
  check_ok(entry);
  entry.dn = "uid=#04046a646f65,ou=people,dc=example,dc=com";  // BER OCTET STRING "jdoe".
  check_ok(entry);
  entry.dn = "uid=#04046a646f66,ou=people,dc=example,dc=com";
  check_fails(entry, StatusCode::kNamingViolation,
              "value of naming attribute 'uid' is not present in entry");
}

TEST_CASE("Entry: a DN that does not parse is invalidDNSyntax (34)") {
  Entry entry = posix_user();
  entry.dn = "uid=jdoe,,dc=example";
  const Status status = shipped().check_entry(entry);
  CHECK(status.code() == StatusCode::kInvalidDnSyntax);
  CHECK(status.message().starts_with("DN: offset "));
}

TEST_CASE("Entry: extensibleObject permits any user attribute but keeps MUST") {
  Entry entry{.dn = "cn=John Doe,dc=example,dc=com",
              .attributes = {{"objectClass", {"person", "extensibleObject"}},
                             {"cn", {"John Doe"}},
                             {"sn", {"Doe"}},
                             {"uidNumber", {"1000"}},
                             {"host", {"alpha"}}}};
  check_ok(entry);
  remove(entry, "sn");
  check_fails(entry, StatusCode::kObjectClassViolation,
              "object class 'person' requires attribute 'sn'");
}

TEST_CASE("Entry: operational attributes are outside MUST and MAY but keep their syntax") {
  Entry entry = posix_user();
  entry.attributes.push_back({"createTimestamp", {"20240101120000Z"}});
  entry.attributes.push_back({"creatorsName", {"cn=admin,dc=example,dc=com"}});
  entry.attributes.push_back({"entryUUID", {"597ae2f6-16a6-1027-98f4-d28b5365dc14"}});
  entry.attributes.push_back({"structuralObjectClass", {"inetOrgPerson"}});
  check_ok(entry);
  attribute(entry, "createTimestamp").values = {"yesterday"};
  check_fails(entry, StatusCode::kInvalidAttributeSyntax,
              "createTimestamp: value #0 invalid per syntax");
}

TEST_CASE("Entry: values of a type with options count for MUST") {
  Entry entry{.dn = "sn=Doe,dc=example,dc=com",
              .attributes = {{"objectClass", {"person"}},
                             {"cn;lang-en", {"John Doe"}},
                             {"cn;lang-fr", {"Jean Doe"}},
                             {"sn", {"Doe"}}}};
  check_ok(entry);
}

TEST_CASE("Entry: alias and referral entries") {
  const Entry alias{.dn = "cn=bar,dc=example,dc=com",
                    .attributes = {{"objectClass", {"top", "alias", "extensibleObject"}},
                                   {"cn", {"bar"}},
                                   {"aliasedObjectName", {"cn=foo,dc=example,dc=com"}}}};
  check_ok(alias);
  const Entry referral{.dn = "dc=sub,dc=example,dc=net",
                       .attributes = {{"dc", {"sub"}},
                                      {"ref", {"ldap://b/dc=sub,dc=example,dc=net"}},
                                      {"objectClass", {"referral", "extensibleObject"}}}};
  check_ok(referral);
  CHECK(shipped().structural_class(referral) == shipped().object_class("referral"));
}

TEST_CASE("Entry: many values are checked in one pass") {
  // A client may send an attribute with very many values; duplicates are found by hashing the
  // normalized values, not by comparing every pair.
  Entry entry = posix_user();
  std::vector<std::string>& values = attribute(entry, "cn").values;
  values.clear();
  constexpr int kValues = 20000;
  for (int i = 0; i < kValues; ++i) {
    values.push_back("name " + std::to_string(i));
  }
  entry.dn = "cn=NAME 19999,ou=people,dc=example,dc=com";
  check_ok(entry);
  values.push_back("  Name   17 ");
  check_fails(entry, StatusCode::kAttributeOrValueExists,
              "cn: value #" + std::to_string(kValues) + " provided more than once");
}

TEST_CASE("Entry: many attributes are grouped and checked as a few are") {
  // Past a few attributes the checker switches from linear searches to hash tables; the
  // verdicts are the same.
  Entry entry = posix_user();
  for (int i = 0; i < 40; ++i) {
    entry.attributes.push_back({"cn;x-" + std::to_string(i), {"other " + std::to_string(i)}});
  }
  check_ok(entry);
  Entry repeated = entry;
  repeated.attributes.push_back({"CN;X-33", {"OTHER   33"}});
  check_fails(repeated, StatusCode::kAttributeOrValueExists,
              "cn;x-33: value #1 provided more than once");
  Entry outside = entry;
  outside.attributes.push_back({"dc", {"example"}});
  check_fails(outside, StatusCode::kObjectClassViolation, "attribute 'dc' not allowed");
  Entry missing = entry;
  remove(missing, "sn");
  check_fails(missing, StatusCode::kObjectClassViolation,
              "object class 'person' requires attribute 'sn'");
}

TEST_CASE("Entry: check_entry can return the structural class it finds") {
  Entry entry = posix_user();
  const ObjectClass* structural = nullptr;
  CHECK(shipped().check_entry(entry, &structural).ok());
  CHECK(structural == shipped().object_class("inetOrgPerson"));
  CHECK(structural == shipped().structural_class(entry));
  attribute(entry, "objectClass").values = {"top", "account", "posixAccount"};
  remove(entry, "sn");
  remove(entry, "givenName");
  remove(entry, "mail");
  remove(entry, "shadowLastChange");
  CHECK(shipped().check_entry(entry, &structural).ok());
  CHECK(structural == shipped().object_class("account"));
  remove(entry, "uid");
  CHECK_FALSE(shipped().check_entry(entry, &structural).ok());
}

TEST_CASE("Entry: structural_class reads the objectClass values in any order") {
  Entry entry = posix_user();
  attribute(entry, "objectClass").values = {"posixAccount", "inetOrgPerson", "person", "top"};
  CHECK(shipped().structural_class(entry) == shipped().object_class("inetOrgPerson"));
  attribute(entry, "objectClass").description = "objectClass;x-tag";
  CHECK(shipped().structural_class(entry) == nullptr);
  remove(entry, "objectClass;x-tag");
  CHECK(shipped().structural_class(entry) == nullptr);
}

TEST_CASE("Entry: checks run in slapd's order") {
  // An undefined type is reported before a missing MUST, a bad value before a second value
  // of a single-value type (an unknown objectClass is a bad value), that before the object
  // classes, and naming before MUST.
  Entry entry = posix_user();
  remove(entry, "sn");
  entry.attributes.push_back({"nosuch", {"x"}});
  CHECK(shipped().check_entry(entry).code() == StatusCode::kUndefinedAttributeType);
  entry = posix_user();
  attribute(entry, "uidNumber").values = {"1", "x"};
  CHECK(shipped().check_entry(entry).code() == StatusCode::kInvalidAttributeSyntax);
  entry = posix_user();
  attribute(entry, "uidNumber").values = {"1", "2"};
  attribute(entry, "objectClass").values = {"top"};  // No structural class.
  CHECK(shipped().check_entry(entry).code() == StatusCode::kConstraintViolation);
  // An unknown class is a bad value, found with the values.
  attribute(entry, "objectClass").values = {"nosuch"};
  CHECK(shipped().check_entry(entry).code() == StatusCode::kInvalidAttributeSyntax);
  entry = posix_user();
  entry.dn = "cn=Nobody,dc=example,dc=com";
  remove(entry, "sn");
  CHECK(shipped().check_entry(entry).code() == StatusCode::kNamingViolation);
}

}  // namespace
}  // namespace numadir::schema
