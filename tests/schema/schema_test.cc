// tests/schema/schema_test.cc: loading schema files into a Schema: the shipped files and what
// they define, admin files in both forms, every load error, and agreement with OpenLDAP's own
// schema for the same OIDs.
//
// Thread contract: single-threaded doctest cases; each file-writing case uses its own temp dir.
#include "schema/schema.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/matching_rule.h"
#include "schema/schema_parser.h"
#include "schema/syntax.h"
#include "tests/schema/shipped_schema.h"

namespace numadir::schema {
namespace {

constexpr std::string_view kDirectoryString = "1.3.6.1.4.1.1466.115.121.1.15";
constexpr std::string_view kInteger = "1.3.6.1.4.1.1466.115.121.1.27";

// A fresh directory under the system temp dir, removed with its contents at the end.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("numadir-schema-test-" + std::to_string(::getpid()) + "-" +
             std::to_string(counter.fetch_add(1)));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  std::filesystem::path write(std::string_view name, std::string_view text) const {
    const std::filesystem::path file = path_ / name;
    std::ofstream out(file, std::ios::binary);
    out << text;
    return file;
  }

 private:
  std::filesystem::path path_;
};

using testing::shipped;

const AttributeType& type_of(const Schema& schema, std::string_view name) {
  const AttributeType* type = schema.attribute_type(name);
  INFO("attribute type: ", std::string(name));
  REQUIRE(type != nullptr);
  return *type;
}

const ObjectClass& class_of(const Schema& schema, std::string_view name) {
  const ObjectClass* object_class = schema.object_class(name);
  INFO("object class: ", std::string(name));
  REQUIRE(object_class != nullptr);
  return *object_class;
}

std::vector<std::string> names_of(const std::vector<const AttributeType*>& types) {
  std::vector<std::string> names;
  for (const AttributeType* type : types) {
    names.emplace_back(type->primary_name());
  }
  return names;
}

// Checks that load_text(text, "t") fails with kInvalidArgument and exactly `message`.
void load_rejects(std::string_view text, std::string_view message) {
  Result<Schema> loaded = Schema::load_text(text, "t");
  INFO("text: ", std::string(text));
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().code() == StatusCode::kInvalidArgument);
  CHECK(loaded.status().message() == message);
}

// A minimal base for texts that need top and a string syntax.
constexpr std::string_view kBase =
    "attributetype ( 2.5.4.0 NAME 'objectClass' EQUALITY objectIdentifierMatch\n"
    "\tSYNTAX 1.3.6.1.4.1.1466.115.121.1.38 )\n"
    "objectclass ( 2.5.6.0 NAME 'top' ABSTRACT MUST objectClass )\n";

TEST_CASE("Schema: the shipped files load") {
  const std::vector<std::filesystem::path> files = shipped_schema_files();
  REQUIRE(files.size() == 7);
  CHECK(files.front().filename() == "core.schema");
  for (const std::filesystem::path& file : files) {
    CHECK_MESSAGE(std::filesystem::exists(file), file.string());
  }
  const Schema& schema = shipped();
  CHECK(schema.attribute_types().size() > 150);
  CHECK(schema.object_classes().size() > 50);
  for (const AttributeType* type : schema.attribute_types()) {
    INFO("attribute type: ", type->oid);
    CHECK(type->syntax != nullptr);
    CHECK_FALSE(type->names.empty());
    CHECK(type->source.find(".schema:") != std::string::npos);
  }
}

TEST_CASE("Schema: cn inherits its rules and syntax from name") {
  const Schema& schema = shipped();
  const AttributeType& cn = type_of(schema, "cn");
  const AttributeType& name = type_of(schema, "name");
  CHECK(cn.oid == "2.5.4.3");
  CHECK(cn.names == std::vector<std::string>{"cn", "commonName"});
  CHECK(cn.superior == &name);
  REQUIRE(cn.equality != nullptr);
  CHECK(cn.equality->name == "caseIgnoreMatch");
  REQUIRE(cn.substrings != nullptr);
  CHECK(cn.substrings->name == "caseIgnoreSubstringsMatch");
  CHECK(cn.ordering == nullptr);
  REQUIRE(cn.syntax != nullptr);
  CHECK(cn.syntax->oid == kDirectoryString);
  CHECK(cn.is_subtype_of(name));
  CHECK_FALSE(name.is_subtype_of(cn));
  CHECK_FALSE(cn.operational());
  CHECK(cn.definition ==
        "( 2.5.4.3 NAME ( 'cn' 'commonName' ) "
        "DESC 'RFC4519: common names of an object' SUP name )");
  // A subtype's own rule wins over the inherited one.
  const AttributeType& c = type_of(schema, "c");
  CHECK(c.superior == &name);
  CHECK(c.syntax->oid == "1.3.6.1.4.1.1466.115.121.1.11");
  CHECK(c.single_value);
}

TEST_CASE("Schema: uidNumber is a single-valued integer") {
  const AttributeType& uid_number = type_of(shipped(), "uidNumber");
  CHECK(uid_number.oid == "1.3.6.1.1.1.1.0");
  CHECK(uid_number.single_value);
  REQUIRE(uid_number.syntax != nullptr);
  CHECK(uid_number.syntax->oid == kInteger);
  REQUIRE(uid_number.equality != nullptr);
  CHECK(uid_number.equality->name == "integerMatch");
  REQUIRE(uid_number.ordering != nullptr);
  CHECK(uid_number.ordering->name == "integerOrderingMatch");
  // The macro of nis.schema is expanded in what is published.
  CHECK(uid_number.definition.starts_with("( 1.3.6.1.1.1.1.0 NAME 'uidNumber' "));
  CHECK(uid_number.source.find("nis.schema:") != std::string::npos);
}

TEST_CASE("Schema: inetOrgPerson derives from organizationalPerson and closes over its superiors") {
  const Schema& schema = shipped();
  const ObjectClass& inet = class_of(schema, "inetOrgPerson");
  const ObjectClass& organizational = class_of(schema, "organizationalPerson");
  const ObjectClass& person = class_of(schema, "person");
  const ObjectClass& top = class_of(schema, "top");
  CHECK(inet.kind == ObjectClassKind::kStructural);
  REQUIRE(inet.superiors.size() == 1);
  CHECK(inet.superiors.front() == &organizational);
  CHECK(inet.must.empty());
  CHECK(names_of(inet.all_must) == std::vector<std::string>{"sn", "cn", "objectClass"});
  const auto may = names_of(inet.all_may);
  for (const char* name : {"uid", "mail", "displayName", "title", "userPassword", "telephoneNumber",
                           "description", "x500UniqueIdentifier"}) {
    CHECK_MESSAGE(std::find(may.begin(), may.end(), name) != may.end(), name);
  }
  // No type is both required and allowed; no type appears twice.
  for (const AttributeType* type : inet.all_must) {
    CHECK(std::find(inet.all_may.begin(), inet.all_may.end(), type) == inet.all_may.end());
  }
  CHECK(std::set<const AttributeType*>(inet.all_may.begin(), inet.all_may.end()).size() ==
        inet.all_may.size());
  CHECK(inet.is_subclass_of(person));
  CHECK(inet.is_subclass_of(top));
  CHECK(inet.is_subclass_of(inet));
  CHECK_FALSE(person.is_subclass_of(inet));
}

TEST_CASE("Schema: posixAccount is auxiliary with the RFC 2307 MUST list") {
  const ObjectClass& posix = class_of(shipped(), "posixAccount");
  CHECK(posix.oid == "1.3.6.1.1.1.2.0");
  CHECK(posix.kind == ObjectClassKind::kAuxiliary);
  CHECK(names_of(posix.must) ==
        std::vector<std::string>{"cn", "uid", "uidNumber", "gidNumber", "homeDirectory"});
  CHECK(names_of(posix.may) ==
        std::vector<std::string>{"userPassword", "loginShell", "gecos", "description"});
  const ObjectClass& group = class_of(shipped(), "posixGroup");
  CHECK(group.kind == ObjectClassKind::kStructural);
  const ObjectClass& shadow = class_of(shipped(), "shadowAccount");
  CHECK(shadow.kind == ObjectClassKind::kAuxiliary);
  CHECK(class_of(shipped(), "ipService").kind == ObjectClassKind::kStructural);
}

TEST_CASE("Schema: the system classes exist in the shipped files") {
  const Schema& schema = shipped();
  const ObjectClass& top = class_of(schema, "top");
  CHECK(top.kind == ObjectClassKind::kAbstract);
  CHECK(names_of(top.must) == std::vector<std::string>{"objectClass"});
  CHECK(class_of(schema, "extensibleObject").kind == ObjectClassKind::kAuxiliary);
  CHECK(class_of(schema, "subschema").kind == ObjectClassKind::kAuxiliary);
  CHECK(class_of(schema, "subschema").is_subclass_of(top));  // Implicitly, as in slapd.
  CHECK(names_of(class_of(schema, "alias").must) == std::vector<std::string>{"aliasedObjectName"});
  CHECK(names_of(class_of(schema, "referral").must) == std::vector<std::string>{"ref"});
  CHECK(type_of(schema, "ref").usage == AttributeUsage::kDistributedOperation);
  const AttributeType& object_class = type_of(schema, "objectClass");
  CHECK(object_class.oid == "2.5.4.0");
  CHECK(object_class.equality->name == "objectIdentifierMatch");
}

TEST_CASE("Schema: lookups ignore case and accept numeric OIDs") {
  const Schema& schema = shipped();
  const AttributeType* cn = schema.attribute_type("cn");
  REQUIRE(cn != nullptr);
  CHECK(schema.attribute_type("CN") == cn);
  CHECK(schema.attribute_type("commonName") == cn);
  CHECK(schema.attribute_type("COMMONNAME") == cn);
  CHECK(schema.attribute_type("2.5.4.3") == cn);
  CHECK(schema.attribute_type("cn;lang-en") == nullptr);  // Options are split off first.
  CHECK(schema.attribute_type("nosuch") == nullptr);
  CHECK(schema.attribute_type("") == nullptr);
  CHECK(schema.object_class("INETORGPERSON") == schema.object_class("2.16.840.1.113730.3.2.2"));
  CHECK(schema.object_class("cn") == nullptr);  // Separate namespaces.
  CHECK(schema.attribute_type("person") == nullptr);
}

TEST_CASE("Schema: operational attributes") {
  const Schema& schema = shipped();
  const AttributeType& created = type_of(schema, "createTimestamp");
  CHECK(created.usage == AttributeUsage::kDirectoryOperation);
  CHECK(created.operational());
  CHECK(created.no_user_modification);
  CHECK(created.single_value);
  CHECK(created.ordering->name == "generalizedTimeOrderingMatch");
  CHECK(type_of(schema, "namingContexts").usage == AttributeUsage::kDsaOperation);
  const AttributeType& uuid = type_of(schema, "entryUUID");
  CHECK(uuid.syntax->oid == "1.3.6.1.1.16.1");
  CHECK(uuid.equality->name == "uuidMatch");
  for (const char* name : {"entryDN", "hasSubordinates", "numSubordinates", "subschemaSubentry",
                           "structuralObjectClass", "creatorsName", "modifiersName",
                           "modifyTimestamp", "vendorName", "contextCSN"}) {
    CHECK_MESSAGE(type_of(schema, name).operational(), name);
  }
  // entryCSN's syntax is defined in operational.schema as an X-SUBST of IA5 String.
  const AttributeType& csn = type_of(schema, "entryCSN");
  REQUIRE(csn.syntax != nullptr);
  CHECK(csn.syntax->oid == "1.3.6.1.4.1.4203.666.11.2.1");
  CHECK(csn.syntax->description == "CSNs");
  CHECK(csn.syntax_length == 64);
  CHECK(csn.syntax->validate("20240101120000.000000Z#000000#000#000000"));
  CHECK_FALSE(csn.syntax->validate("caf\xc3\xa9"));
}

TEST_CASE("Schema: element pointers survive moves of the Schema") {
  Result<Schema> loaded = Schema::load_default();
  REQUIRE(loaded.ok());
  Schema first = std::move(loaded).value();
  const AttributeType* cn = first.attribute_type("cn");
  const ObjectClass* person = first.object_class("person");
  REQUIRE(cn != nullptr);
  REQUIRE(person != nullptr);
  Schema second = std::move(first);
  CHECK(second.attribute_type("cn") == cn);
  CHECK(second.object_class("person") == person);
  CHECK(cn->superior == second.attribute_type("name"));
  Result<Schema> other = Schema::load_text(kBase);
  REQUIRE(other.ok());
  Schema third = std::move(other).value();
  third = std::move(second);
  CHECK(third.attribute_type("commonName") == cn);
  CHECK(third.attribute_types().size() == shipped().attribute_types().size());
}

TEST_CASE("Schema: an admin file with objectidentifier macros loads after the shipped files") {
  TempDir dir;
  const std::filesystem::path file =
      dir.write("local.schema",
                "# Example Corp.\n"
                "objectidentifier exampleOID 1.3.6.1.4.1.55555\n"
                "objectidentifier exampleAttrs exampleOID:1\n"
                "objectidentifier exampleClasses exampleOID:2\n"
                "\n"
                "attributetype ( exampleAttrs:1 NAME 'badgeNumber'\n"
                "\tEQUALITY integerMatch\n"
                "\tSYNTAX 1.3.6.1.4.1.1466.115.121.1.27\n"
                "\tSINGLE-VALUE )\n"
                "attributetype ( exampleAttrs:2 NAME 'nickName'\n"
                "\tSUP name )\n"
                "objectclass ( exampleClasses:1 NAME 'examplePerson'\n"
                "\tSUP inetOrgPerson STRUCTURAL\n"
                "\tMUST badgeNumber\n"
                "\tMAY nickName )\n");
  const std::vector<std::filesystem::path> extra{file};
  Result<Schema> loaded = Schema::load_default(extra);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().to_string());
  const AttributeType& badge = type_of(*loaded, "badgeNumber");
  CHECK(badge.oid == "1.3.6.1.4.1.55555.1.1");
  CHECK(badge.source == file.string() + ":6");
  CHECK(type_of(*loaded, "nickName").equality->name == "caseIgnoreMatch");
  const ObjectClass& example = class_of(*loaded, "examplePerson");
  CHECK(example.oid == "1.3.6.1.4.1.55555.2.1");
  CHECK(names_of(example.all_must) ==
        std::vector<std::string>{"badgeNumber", "sn", "cn", "objectClass"});
}

TEST_CASE("Schema: an LDIF cn=schema admin file loads") {
  TempDir dir;
  const std::filesystem::path file =
      dir.write("local.ldif",
                "dn: cn=local,cn=schema,cn=config\n"
                "objectClass: olcSchemaConfig\n"
                "cn: local\n"
                "olcObjectIdentifier: {0}localOID 1.3.6.1.4.1.55556\n"
                "olcAttributeTypes: {0}( localOID:1.1 NAME 'costCenter' DESC 'cost cente\n"
                " r' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.\n"
                " 1.4.1.1466.115.121.1.15 )\n"
                "olcObjectClasses: {0}( localOID:2.1 NAME 'costed' SUP top AUXILIARY\n"
                "  MUST costCenter )\n");
  const std::vector<std::filesystem::path> extra{file};
  Result<Schema> loaded = Schema::load_default(extra);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().to_string());
  const AttributeType& cost = type_of(*loaded, "costCenter");
  CHECK(cost.oid == "1.3.6.1.4.1.55556.1.1");
  CHECK(cost.description == "cost center");
  CHECK(cost.syntax->oid == kDirectoryString);
  CHECK(cost.source == file.string() + ":5");
  CHECK(class_of(*loaded, "costed").kind == ObjectClassKind::kAuxiliary);
}

TEST_CASE("Schema: definitions may refer forward within and across files") {
  TempDir dir;
  const std::filesystem::path first =
      dir.write("a.schema",
                "objectclass ( 1.9.2.1 NAME 'early' SUP top STRUCTURAL MUST late )\n"
                "attributetype ( 1.9.1.2 NAME 'child' SUP parent )\n");
  const std::filesystem::path second = dir.write(
      "b.schema", std::string(kBase) +
                      "attributetype ( 1.9.1.1 NAME 'parent' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 "
                      "EQUALITY caseExactMatch )\n"
                      "attributetype ( 1.9.1.3 NAME 'late' SUP child )\n");
  const std::vector<std::filesystem::path> files{first, second};
  Result<Schema> loaded = Schema::load(files);
  REQUIRE_MESSAGE(loaded.ok(), loaded.status().to_string());
  CHECK(type_of(*loaded, "late").equality->name == "caseExactMatch");
  CHECK(names_of(class_of(*loaded, "early").all_must) ==
        std::vector<std::string>{"late", "objectClass"});
}

TEST_CASE("Schema: syntax and matching rule definitions") {
  // A built-in syntax or rule is accepted as it is; an unknown rule is ignored.
  Result<Schema> accepted = Schema::load_text(
      "ldapsyntax ( 1.3.6.1.4.1.1466.115.121.1.15 DESC 'Directory String' )\n"
      "matchingrule ( 2.5.13.2 NAME 'caseIgnoreMatch' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n"
      "matchingrule ( 1.9.9 NAME 'madeUpMatch' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n");
  REQUIRE_MESSAGE(accepted.ok(), accepted.status().to_string());
  // X-SUBST registers a new syntax that validates like its substitute.
  Result<Schema> substituted = Schema::load_text(
      "ldapsyntax ( 1.9.5.1 DESC 'digits' X-SUBST '1.3.6.1.4.1.1466.115.121.1.27' )\n"
      "ldapsyntax ( 1.9.5.2 DESC 'digits again' X-SUBST '1.9.5.1' )\n"
      "attributetype ( 1.9.1.1 NAME 'count' SYNTAX 1.9.5.2 )\n");
  REQUIRE_MESSAGE(substituted.ok(), substituted.status().to_string());
  const AttributeType& count = type_of(*substituted, "count");
  CHECK(count.syntax->oid == "1.9.5.2");
  CHECK(count.syntax->description == "digits again");
  CHECK(count.syntax->validate("42"));
  CHECK_FALSE(count.syntax->validate("forty-two"));
  // Without X-SUBST an unknown syntax is not registered, and using it fails.
  load_rejects(
      "ldapsyntax ( 1.9.5.1 DESC 'mystery' )\n"
      "attributetype ( 1.9.1.1 NAME 'x' SYNTAX 1.9.5.1 )\n",
      "t:2: attribute type 'x': unknown syntax 1.9.5.1");
  load_rejects("ldapsyntax ( 1.9.5.1 X-SUBST '1.9.9.9' )\n",
               "t:1: syntax 1.9.5.1: X-SUBST must name one known syntax OID");
  load_rejects("ldapsyntax ( 1.9.5.1 X-SUBST ( '1.3.6.1.4.1.1466.115.121.1.15' '1.2' ) )\n",
               "t:1: syntax 1.9.5.1: X-SUBST must name one known syntax OID");
  load_rejects(
      "ldapsyntax ( 1.9.5.1 X-SUBST '1.3.6.1.4.1.1466.115.121.1.15' )\n"
      "ldapsyntax ( 1.9.5.1 X-SUBST '1.3.6.1.4.1.1466.115.121.1.26' )\n",
      "t:2: duplicate syntax 1.9.5.1");
}

TEST_CASE("Schema: every attribute type load error names the file and line") {
  constexpr std::string_view kSyntax = " SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n";
  const std::string a = "attributetype ( 1.9.1.1 NAME 'a'" + std::string(kSyntax);
  load_rejects(a + "attributetype ( 1.9.1.1 NAME 'b'" + std::string(kSyntax),
               "t:2: duplicate attribute type OID 1.9.1.1 (already defined at t:1)");
  load_rejects(a + "attributetype ( 1.9.1.2 NAME 'A'" + std::string(kSyntax),
               "t:2: duplicate attribute type name 'A' (already defined at t:1)");
  load_rejects("attributetype ( 1.9.1.1 NAME ( 'a' 'b' 'A' )" + std::string(kSyntax),
               "t:1: attribute type 1.9.1.1 lists the name 'A' twice");
  load_rejects("attributetype ( 1.9.1.1 NAME 'a' SUP nope )\n",
               "t:1: attribute type 'a': unknown superior 'nope'");
  load_rejects("\nattributetype ( 1.9.1.1 NAME 'a' )\n",
               "t:2: attribute type 'a': needs SYNTAX or SUP");
  load_rejects("attributetype ( 1.9.1.1 SYNTAX 1.9.9.9 )\n",
               "t:1: attribute type '1.9.1.1': unknown syntax 1.9.9.9");
  load_rejects("attributetype ( 1.9.1.1 NAME 'a' EQUALITY nopeMatch" + std::string(kSyntax),
               "t:1: attribute type 'a': unknown equality matching rule 'nopeMatch'");
  load_rejects("attributetype ( 1.9.1.1 NAME 'a' ORDERING caseIgnoreMatch" + std::string(kSyntax),
               "t:1: attribute type 'a': 'caseIgnoreMatch' cannot be the ordering rule (it is an "
               "equality rule)");
  load_rejects("attributetype ( 1.9.1.1 NAME 'a' EQUALITY 2.5.13.4" + std::string(kSyntax),
               "t:1: attribute type 'a': '2.5.13.4' cannot be the equality rule (it is a "
               "substrings rule)");
  load_rejects(
      "attributetype ( 1.9.1.1 NAME 'a' SUBSTR integerOrderingMatch" + std::string(kSyntax),
      "t:1: attribute type 'a': 'integerOrderingMatch' cannot be the substrings rule (it "
      "is an ordering rule)");
  load_rejects(
      "attributetype ( 1.9.1.1 NAME 'a' SUP c )\n"
      "attributetype ( 1.9.1.2 NAME 'b' SUP a )\n"
      "attributetype ( 1.9.1.3 NAME 'c' SUP b )\n",
      "t:1: attribute type 'a' is its own superior (through a -> c -> b -> a)");
  load_rejects("attributetype ( 1.9.1.1 NAME 'a' SUP a )\n",
               "t:1: attribute type 'a' is its own superior (through a -> a)");
  load_rejects(a + "attributetype ( 1.9.1.2 NAME 'b' SUP a USAGE directoryOperation )\n",
               "t:2: attribute type 'b': USAGE differs from that of its superior 'a'");
  load_rejects("attributetype ( 1.9.1.1 NAME 'a' COLLECTIVE" + std::string(kSyntax) +
                   "attributetype ( 1.9.1.2 NAME 'b' SUP a )\n",
               "t:2: attribute type 'b': must be COLLECTIVE as its superior 'a' is");
  load_rejects(
      "attributetype ( 1.9.1.1 NAME 'a' COLLECTIVE USAGE dSAOperation" + std::string(kSyntax),
      "t:1: attribute type 'a': COLLECTIVE requires USAGE userApplications");
  load_rejects("attributetype ( 1.9.1.1 NAME 'a' NO-USER-MODIFICATION" + std::string(kSyntax),
               "t:1: attribute type 'a': NO-USER-MODIFICATION requires an operational USAGE");
  // Parse errors come through with their line, as kInvalidArgument.
  load_rejects("# x\nattributetype ( 1.9.1.1 NAME 'a'\n\tSYNTAX 1.2.3 BOGUS )\n",
               "t:3: unknown keyword 'BOGUS'");
}

TEST_CASE("Schema: every object class load error names the file and line") {
  const std::string base(kBase);
  load_rejects(base + "objectclass ( 2.5.6.0 NAME 'other' )\n",
               "t:4: duplicate object class OID 2.5.6.0 (already defined at t:3)");
  load_rejects(base + "objectclass ( 1.9.2.1 NAME 'TOP' )\n",
               "t:4: duplicate object class name 'TOP' (already defined at t:3)");
  load_rejects(base + "objectclass ( 1.9.2.1 NAME 'x' SUP nope )\n",
               "t:4: object class 'x': unknown superior 'nope'");
  load_rejects(base + "objectclass ( 1.9.2.1 NAME 'x' SUP top MUST nope )\n",
               "t:4: object class 'x': MUST names unknown attribute type 'nope'");
  load_rejects(base + "objectclass ( 1.9.2.1 NAME 'x' SUP top MAY ( objectClass $ nope ) )\n",
               "t:4: object class 'x': MAY names unknown attribute type 'nope'");
  load_rejects(base +
                   "objectclass ( 1.9.2.1 NAME 'x' SUP ( top $ z ) )\n"
                   "objectclass ( 1.9.2.2 NAME 'y' SUP x )\n"
                   "objectclass ( 1.9.2.3 NAME 'z' SUP y )\n",
               "t:5: object class 'y': superior 'x' leads back to it (a cycle)");
  load_rejects(base +
                   "objectclass ( 1.9.2.1 NAME 'aux' SUP top AUXILIARY )\n"
                   "objectclass ( 1.9.2.2 NAME 's' SUP aux STRUCTURAL )\n",
               "t:5: structural object class 's' cannot have the auxiliary superior 'aux'");
  load_rejects(base +
                   "objectclass ( 1.9.2.1 NAME 's' SUP top )\n"
                   "objectclass ( 1.9.2.2 NAME 'aux' SUP s AUXILIARY )\n",
               "t:5: auxiliary object class 'aux' cannot have the structural superior 's'");
  load_rejects(base +
                   "objectclass ( 1.9.2.1 NAME 's' SUP top )\n"
                   "objectclass ( 1.9.2.2 NAME 'abs' SUP s ABSTRACT )\n",
               "t:5: abstract object class 'abs' cannot have the structural superior 's'");
}

TEST_CASE("Schema: a duplicate across files names both places") {
  TempDir dir;
  const std::filesystem::path file =
      dir.write("dup.schema", "\n\nattributetype ( 1.9.1.1 NAME 'cn' SUP name )\n");
  const std::vector<std::filesystem::path> extra{file};
  Result<Schema> loaded = Schema::load_default(extra);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().code() == StatusCode::kInvalidArgument);
  const std::string message = loaded.status().message();
  CHECK(message.starts_with(file.string() + ":3: duplicate attribute type name 'cn' "
                                            "(already defined at "));
  CHECK(message.find("core.schema:") != std::string::npos);
}

TEST_CASE("Schema: an unreadable file is an error naming it") {
  TempDir dir;
  const std::vector<std::filesystem::path> files{dir.write("exists.schema", ""),
                                                 "/nonexistent/numadir/x.schema"};
  Result<Schema> loaded = Schema::load(files);
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().code() == StatusCode::kInvalidArgument);
  CHECK(loaded.status().message() ==
        "/nonexistent/numadir/x.schema: cannot read: No such file or directory");
  const std::vector<std::filesystem::path> directory{std::filesystem::temp_directory_path()};
  Result<Schema> from_directory = Schema::load(directory);
  REQUIRE_FALSE(from_directory.ok());
  CHECK(from_directory.status().message() ==
        std::filesystem::temp_directory_path().string() + ": cannot read: it is a directory");
}

TEST_CASE("Schema: an empty schema holds nothing") {
  Result<Schema> empty = Schema::load_text("# nothing\n");
  REQUIRE(empty.ok());
  CHECK(empty->attribute_types().empty());
  CHECK(empty->object_classes().empty());
  CHECK(empty->attribute_type("cn") == nullptr);
  CHECK(empty->object_class("top") == nullptr);
  const Entry entry{.dn = "cn=x", .attributes = {{"cn", {"x"}}}};
  CHECK(empty->check_entry(entry).code() == StatusCode::kUndefinedAttributeType);
  CHECK(empty->structural_class(entry) == nullptr);
  const std::vector<std::filesystem::path> none;
  CHECK(Schema::load(none).ok());
}

// ----- Agreement with OpenLDAP -----

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; });
  return out;
}

std::set<std::string> lower_set(const std::vector<std::string>& names) {
  std::set<std::string> out;
  for (const std::string& name : names) {
    out.insert(lower(name));
  }
  return out;
}

std::set<const AttributeType*> resolve_types(const Schema& schema,
                                             const std::vector<std::string>& names) {
  std::set<const AttributeType*> out;
  for (const std::string& name : names) {
    const AttributeType* type = schema.attribute_type(name);
    INFO("attribute type: ", name);
    CHECK(type != nullptr);
    out.insert(type);
  }
  return out;
}

// Compares our element for each OpenLDAP definition of the same OID. `missing` lists the OIDs
// we do not ship; `no_equality` the ones whose equality rule is not built in.
void check_agreement(const Schema& ours, const SchemaFileContents& theirs,
                     const std::set<std::string>& missing,
                     const std::set<std::string>& no_equality) {
  for (const AttributeTypeDescription& d : theirs.attribute_types) {
    INFO("attribute type ", d.oid, " (", d.names.empty() ? "" : d.names.front(), ")");
    const AttributeType* type = ours.attribute_type(d.oid);
    if (missing.contains(d.oid)) {
      CHECK(type == nullptr);
      continue;
    }
    REQUIRE(type != nullptr);
    CHECK(lower_set(type->names) == lower_set(d.names));
    const AttributeType* superior = d.superior.empty() ? nullptr : ours.attribute_type(d.superior);
    CHECK(type->superior == superior);
    auto effective_rule = [&](const std::string& name,
                              const MatchingRule* inherited) -> const MatchingRule* {
      return name.empty() ? inherited : find_matching_rule(name);
    };
    if (!no_equality.contains(d.oid)) {
      CHECK(type->equality == effective_rule(d.equality, superior ? superior->equality : nullptr));
    }
    CHECK(type->ordering == effective_rule(d.ordering, superior ? superior->ordering : nullptr));
    CHECK(type->substrings ==
          effective_rule(d.substrings, superior ? superior->substrings : nullptr));
    const std::string syntax =
        d.syntax.empty() ? (superior ? std::string(superior->syntax->oid) : "") : d.syntax;
    CHECK(type->syntax->oid == syntax);
    CHECK(type->single_value == d.single_value);
    CHECK(type->collective == d.collective);
    CHECK(type->no_user_modification == d.no_user_modification);
    CHECK(type->usage == d.usage);
  }
  for (const ObjectClassDescription& d : theirs.object_classes) {
    INFO("object class ", d.oid, " (", d.names.empty() ? "" : d.names.front(), ")");
    const ObjectClass* object_class = ours.object_class(d.oid);
    if (missing.contains(d.oid)) {
      CHECK(object_class == nullptr);
      continue;
    }
    REQUIRE(object_class != nullptr);
    CHECK(lower_set(object_class->names) == lower_set(d.names));
    CHECK(object_class->kind == d.kind);
    std::set<const ObjectClass*> superiors;
    for (const std::string& name : d.superiors) {
      superiors.insert(ours.object_class(name));
    }
    CHECK(std::set<const ObjectClass*>(object_class->superiors.begin(),
                                       object_class->superiors.end()) == superiors);
    CHECK(std::set<const AttributeType*>(object_class->must.begin(), object_class->must.end()) ==
          resolve_types(ours, d.must));
    CHECK(std::set<const AttributeType*>(object_class->may.begin(), object_class->may.end()) ==
          resolve_types(ours, d.may));
  }
}

TEST_CASE("Schema: the shipped schema agrees with OpenLDAP's files for the same OIDs") {
  const std::filesystem::path dir = "/etc/ldap/schema";
  std::error_code error;
  if (!std::filesystem::exists(dir / "core.schema", error)) {
    MESSAGE("skipped: no ", dir.string());
    return;
  }
  // Not shipped: their matching rules (presentationAddressMatch, protocolInformationMatch) are
  // not built in. certificateExactMatch is not built in either.
  const std::set<std::string> missing = {"2.5.4.29", "2.5.4.48", "2.5.6.12", "2.5.6.13",
                                         "0.9.2342.19200300.100.4.21"};
  const std::set<std::string> no_equality = {"2.5.4.36", "2.5.4.37"};
  std::size_t compared = 0;
  for (const char* name : {"core.schema", "cosine.schema", "inetorgperson.schema", "nis.schema"}) {
    std::ifstream in(dir / name, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    OidMacros macros;
    Result<SchemaFileContents> theirs = parse_schema_file(text.str(), name, macros);
    REQUIRE_MESSAGE(theirs.ok(), theirs.status().to_string());
    check_agreement(shipped(), *theirs, missing, no_equality);
    compared += theirs->attribute_types.size() + theirs->object_classes.size();
  }
  MESSAGE("compared ", compared, " OpenLDAP definitions");
  CHECK(compared > 150);
}

// slapd builds these in (servers/slapd/schema_prep.c) rather than shipping them in a file;
// the texts are what slapd publishes in its subschema subentry.
TEST_CASE("Schema: the shipped schema agrees with slapd's built-in definitions") {
  OidMacros macros;
  Result<SchemaFileContents> slapd = parse_schema_file(
      "attributetype ( 2.5.4.0 NAME 'objectClass' EQUALITY objectIdentifierMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.38 )\n"
      "attributetype ( 2.5.21.9 NAME 'structuralObjectClass' EQUALITY objectIdentifierMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.38 SINGLE-VALUE NO-USER-MODIFICATION "
      "USAGE directoryOperation )\n"
      "attributetype ( 2.5.18.1 NAME 'createTimestamp' EQUALITY generalizedTimeMatch "
      "ORDERING generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE "
      "NO-USER-MODIFICATION USAGE directoryOperation )\n"
      "attributetype ( 2.5.18.4 NAME 'modifiersName' EQUALITY distinguishedNameMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE NO-USER-MODIFICATION "
      "USAGE directoryOperation )\n"
      "attributetype ( 2.5.18.9 NAME 'hasSubordinates' EQUALITY booleanMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.7 SINGLE-VALUE NO-USER-MODIFICATION "
      "USAGE directoryOperation )\n"
      "attributetype ( 2.5.18.10 NAME 'subschemaSubentry' EQUALITY distinguishedNameMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE NO-USER-MODIFICATION "
      "USAGE directoryOperation )\n"
      "attributetype ( 1.3.6.1.1.20 NAME 'entryDN' EQUALITY distinguishedNameMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE NO-USER-MODIFICATION "
      "USAGE directoryOperation )\n"
      "attributetype ( 1.3.6.1.1.16.4 NAME 'entryUUID' EQUALITY UUIDMatch "
      "ORDERING UUIDOrderingMatch SYNTAX 1.3.6.1.1.16.1 SINGLE-VALUE NO-USER-MODIFICATION "
      "USAGE directoryOperation )\n"
      "attributetype ( 1.3.6.1.4.1.4203.1.3.5 NAME 'supportedFeatures' "
      "EQUALITY objectIdentifierMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.38 USAGE dSAOperation )\n"
      "attributetype ( 2.5.21.1 NAME 'dITStructureRules' EQUALITY integerFirstComponentMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.17 USAGE directoryOperation )\n"
      "attributetype ( 2.5.4.1 NAME ( 'aliasedObjectName' 'aliasedEntryName' ) "
      "EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 SINGLE-VALUE )\n"
      "attributetype ( 2.16.840.1.113730.3.1.34 NAME 'ref' EQUALITY caseExactMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 USAGE distributedOperation )\n"
      "attributetype ( 1.3.6.1.1.4 NAME 'vendorName' EQUALITY caseExactMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE NO-USER-MODIFICATION "
      "USAGE dSAOperation )\n"
      "attributetype ( 2.5.4.49 NAME 'distinguishedName' EQUALITY distinguishedNameMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )\n"
      "attributetype ( 2.5.4.41 NAME 'name' EQUALITY caseIgnoreMatch "
      "SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{32768} )\n"
      "attributetype ( 2.5.4.3 NAME ( 'cn' 'commonName' ) SUP name )\n"
      "attributetype ( 0.9.2342.19200300.100.1.1 NAME ( 'uid' 'userid' ) "
      "EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{256} )\n"
      "attributetype ( 1.3.6.1.1.1.1.0 NAME 'uidNumber' EQUALITY integerMatch "
      "ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )\n"
      "attributetype ( 1.3.6.1.1.1.1.1 NAME 'gidNumber' EQUALITY integerMatch "
      "ORDERING integerOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )\n"
      "attributetype ( 2.5.4.35 NAME 'userPassword' EQUALITY octetStringMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.40{128} )\n"
      "attributetype ( 1.3.6.1.4.1.250.1.57 NAME 'labeledURI' EQUALITY caseExactMatch "
      "SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )\n"
      "attributetype ( 2.5.4.13 NAME 'description' EQUALITY caseIgnoreMatch "
      "SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{1024} )\n"
      "attributetype ( 2.5.4.34 NAME 'seeAlso' SUP distinguishedName )\n"
      "objectclass ( 2.5.6.0 NAME 'top' ABSTRACT MUST objectClass )\n"
      "objectclass ( 1.3.6.1.4.1.1466.101.120.111 NAME 'extensibleObject' SUP top AUXILIARY )\n"
      "objectclass ( 2.5.6.1 NAME 'alias' SUP top STRUCTURAL MUST aliasedObjectName )\n"
      "objectclass ( 2.16.840.1.113730.3.2.6 NAME 'referral' SUP top STRUCTURAL MUST ref )\n"
      "objectclass ( 2.5.20.1 NAME 'subschema' AUXILIARY MAY ( dITStructureRules $ nameForms $ "
      "dITContentRules $ objectClasses $ attributeTypes $ matchingRules $ matchingRuleUse ) )\n",
      "slapd", macros);
  REQUIRE_MESSAGE(slapd.ok(), slapd.status().to_string());
  check_agreement(shipped(), *slapd, {}, {});
}

// An admin's OpenLDAP schema files load on top of ours, unless they need a rule we lack.
TEST_CASE("Schema: OpenLDAP's other schema files load on top of the shipped ones") {
  const std::filesystem::path dir = "/etc/ldap/schema";
  std::error_code error;
  if (!std::filesystem::exists(dir / "misc.schema", error)) {
    MESSAGE("skipped: no ", dir.string());
    return;
  }
  for (const char* name :
       {"misc.schema", "misc.ldif", "java.schema", "corba.ldif", "duaconf.schema",
        "namedobject.ldif", "openldap.schema", "collective.schema", "msuser.ldif"}) {
    const std::vector<std::filesystem::path> extra{dir / name};
    Result<Schema> loaded = Schema::load_default(extra);
    INFO("file: ", name);
    CHECK_MESSAGE(loaded.ok(), loaded.status().to_string());
  }
  const std::vector<std::filesystem::path> dyngroup{dir / "dyngroup.schema"};
  Result<Schema> refused = Schema::load_default(dyngroup);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("unknown equality matching rule 'authzMatch'") !=
        std::string::npos);
}

}  // namespace
}  // namespace numadir::schema
