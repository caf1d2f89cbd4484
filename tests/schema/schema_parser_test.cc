// tests/schema/schema_parser_test.cc: the RFC 4512 description parser, its printed form, OID
// macros, and the OpenLDAP and LDIF schema file forms, with every rejection and its position.
//
// Thread contract: single-threaded doctest cases.
#include "schema/schema_parser.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace numadir::schema {
namespace {

using Strings = std::vector<std::string>;

AttributeTypeDescription at_ok(std::string_view text, const OidMacros* macros = nullptr) {
  Result<AttributeTypeDescription> parsed = parse_attribute_type(text, macros);
  INFO("text: ", std::string(text));
  REQUIRE_MESSAGE(parsed.ok(), parsed.status().to_string());
  // The printed form parses back to the same description.
  Result<AttributeTypeDescription> again = parse_attribute_type(parsed->to_string());
  REQUIRE_MESSAGE(again.ok(), again.status().to_string());
  CHECK(*again == *parsed);
  return std::move(parsed).value();
}

ObjectClassDescription oc_ok(std::string_view text) {
  Result<ObjectClassDescription> parsed = parse_object_class(text);
  INFO("text: ", std::string(text));
  REQUIRE_MESSAGE(parsed.ok(), parsed.status().to_string());
  Result<ObjectClassDescription> again = parse_object_class(parsed->to_string());
  REQUIRE_MESSAGE(again.ok(), again.status().to_string());
  CHECK(*again == *parsed);
  return std::move(parsed).value();
}

// Checks that parse(text) fails with kMalformed "offset <offset>: ..." containing `fragment`.
template <typename Parse>
void check_rejects(Parse parse, std::string_view text, std::size_t offset,
                   std::string_view fragment) {
  const auto parsed = parse(text, nullptr);
  INFO("text: ", std::string(text));
  REQUIRE_FALSE(parsed.ok());
  const Status status = parsed.status();
  INFO("status: ", status.to_string());
  CHECK(status.code() == StatusCode::kMalformed);
  CHECK(status.message().starts_with("offset " + std::to_string(offset) + ": "));
  CHECK(status.message().find(fragment) != std::string::npos);
}

void at_rejects(std::string_view text, std::size_t offset, std::string_view fragment) {
  check_rejects(parse_attribute_type, text, offset, fragment);
}

void oc_rejects(std::string_view text, std::size_t offset, std::string_view fragment) {
  check_rejects(parse_object_class, text, offset, fragment);
}

SchemaFileContents file_ok(std::string_view text, OidMacros& macros) {
  Result<SchemaFileContents> parsed = parse_schema_file(text, "test.schema", macros);
  REQUIRE_MESSAGE(parsed.ok(), parsed.status().to_string());
  return std::move(parsed).value();
}

SchemaFileContents file_ok(std::string_view text) {
  OidMacros macros;
  return file_ok(text, macros);
}

// Checks that the file is rejected with kMalformed "test.schema:<line>: ..." containing
// `fragment`.
void file_rejects(std::string_view text, std::size_t line, std::string_view fragment) {
  OidMacros macros;
  Result<SchemaFileContents> parsed = parse_schema_file(text, "test.schema", macros);
  INFO("text: ", std::string(text));
  REQUIRE_FALSE(parsed.ok());
  const Status status = parsed.status();
  INFO("status: ", status.to_string());
  CHECK(status.code() == StatusCode::kMalformed);
  CHECK(status.message().starts_with("test.schema:" + std::to_string(line) + ": "));
  CHECK(status.message().find(fragment) != std::string::npos);
}

TEST_CASE("SchemaParser: an attribute type with every field") {
  const AttributeTypeDescription d = at_ok(
      "( 1.2.3.4 NAME ( 'fooBar' 'foo-bar2' ) DESC 'a \\27quoted\\27 \\5C thing' OBSOLETE "
      "SUP name EQUALITY caseIgnoreMatch ORDERING caseIgnoreOrderingMatch "
      "SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{64} SINGLE-VALUE "
      "COLLECTIVE NO-USER-MODIFICATION USAGE dSAOperation X-ORIGIN 'RFC 9999' "
      "X-Other_ext ( 'a' 'b' ) )");
  CHECK(d.oid == "1.2.3.4");
  CHECK(d.names == Strings{"fooBar", "foo-bar2"});
  CHECK(d.description == "a 'quoted' \\ thing");
  CHECK(d.obsolete);
  CHECK(d.superior == "name");
  CHECK(d.equality == "caseIgnoreMatch");
  CHECK(d.ordering == "caseIgnoreOrderingMatch");
  CHECK(d.substrings == "caseIgnoreSubstringsMatch");
  CHECK(d.syntax == "1.3.6.1.4.1.1466.115.121.1.15");
  CHECK(d.syntax_length == 64);
  CHECK(d.single_value);
  CHECK(d.collective);
  CHECK(d.no_user_modification);
  CHECK(d.usage == AttributeUsage::kDsaOperation);
  REQUIRE(d.extensions.size() == 2);
  CHECK(d.extensions[0] == SchemaExtension{"X-ORIGIN", {"RFC 9999"}});
  CHECK(d.extensions[1] == SchemaExtension{"X-Other_ext", {"a", "b"}});
  CHECK(d.line == 0);
  CHECK(d.to_string() ==
        "( 1.2.3.4 NAME ( 'fooBar' 'foo-bar2' ) DESC 'a \\27quoted\\27 \\5C thing' OBSOLETE "
        "SUP name EQUALITY caseIgnoreMatch ORDERING caseIgnoreOrderingMatch "
        "SUBSTR caseIgnoreSubstringsMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{64} "
        "SINGLE-VALUE COLLECTIVE NO-USER-MODIFICATION USAGE dSAOperation "
        "X-ORIGIN 'RFC 9999' X-Other_ext ( 'a' 'b' ) )");
}

TEST_CASE("SchemaParser: the minimal forms and the defaults") {
  const AttributeTypeDescription d = at_ok("( 2.5.4.3 NAME 'cn' SUP name )");
  CHECK(d.names == Strings{"cn"});
  CHECK(d.description.empty());
  CHECK_FALSE(d.obsolete);
  CHECK(d.syntax.empty());
  CHECK(d.syntax_length == 0);
  CHECK(d.usage == AttributeUsage::kUserApplications);
  CHECK(d.to_string() == "( 2.5.4.3 NAME 'cn' SUP name )");

  const AttributeTypeDescription bare = at_ok("(1.2.3 SYNTAX 1.2.4)");
  CHECK(bare.names.empty());
  CHECK(bare.to_string() == "( 1.2.3 SYNTAX 1.2.4 )");

  // An empty name list and an empty DESC print as nothing.
  const AttributeTypeDescription empty = at_ok("( 1.2.3 NAME ( ) DESC '' SYNTAX 1.2.4 )");
  CHECK(empty.names.empty());
  CHECK(empty.to_string() == "( 1.2.3 SYNTAX 1.2.4 )");
}

TEST_CASE("SchemaParser: keywords are case-insensitive and may come in any order") {
  const AttributeTypeDescription d = at_ok(
      "( 1.2.3 single-value syntax 1.2.4 name 'x' Usage DirectoryOperation "
      "no-user-modification equality integerMatch )");
  CHECK(d.single_value);
  CHECK(d.no_user_modification);
  CHECK(d.syntax == "1.2.4");
  CHECK(d.names == Strings{"x"});
  CHECK(d.usage == AttributeUsage::kDirectoryOperation);
  CHECK(d.equality == "integerMatch");
  // Printed in the RFC's order.
  CHECK(d.to_string() ==
        "( 1.2.3 NAME 'x' EQUALITY integerMatch SYNTAX 1.2.4 SINGLE-VALUE NO-USER-MODIFICATION "
        "USAGE directoryOperation )");
}

TEST_CASE("SchemaParser: every USAGE") {
  CHECK(at_ok("( 1.2 SYNTAX 1.3 USAGE userApplications )").usage ==
        AttributeUsage::kUserApplications);
  CHECK(at_ok("( 1.2 SYNTAX 1.3 USAGE directoryOperation )").usage ==
        AttributeUsage::kDirectoryOperation);
  CHECK(at_ok("( 1.2 SYNTAX 1.3 USAGE distributedOperation )").usage ==
        AttributeUsage::kDistributedOperation);
  CHECK(at_ok("( 1.2 SYNTAX 1.3 USAGE dSAOperation )").usage == AttributeUsage::kDsaOperation);
}

TEST_CASE("SchemaParser: whitespace of files and quoted OIDs as slapd accepts them") {
  const AttributeTypeDescription d = at_ok(
      "(\t1.2.3\n\tNAME\t'x'\r\n\tSUP 'name' EQUALITY '2.5.13.2'\n\tSYNTAX "
      "'1.3.6.1.4.1.1466.115.121.1.15{32}' )");
  CHECK(d.superior == "name");
  CHECK(d.equality == "2.5.13.2");
  CHECK(d.syntax == "1.3.6.1.4.1.1466.115.121.1.15");
  CHECK(d.syntax_length == 32);
  CHECK(at_ok("( 1.2.3 NAME'x'SYNTAX 1.2.4 )").names == Strings{"x"});
}

TEST_CASE("SchemaParser: strings hold UTF-8 and any hex escape") {
  const AttributeTypeDescription d =
      at_ok("( 1.2.3 DESC 'caf\xc3\xa9 \\41\\5c\\27' SYNTAX 1.2.4 X-A ( ) X-B '' )");
  CHECK(d.description == "caf\xc3\xa9 A\\'");
  REQUIRE(d.extensions.size() == 2);
  CHECK(d.extensions[0].values.empty());
  CHECK(d.extensions[1].values == Strings{""});
}

TEST_CASE("SchemaParser: an object class with every field") {
  const ObjectClassDescription d = oc_ok(
      "( 2.5.6.6 NAME 'person' DESC 'a human being' OBSOLETE SUP ( top $ 1.2.3 ) "
      "AUXILIARY MUST ( sn $ cn ) MAY ( userPassword $telephoneNumber$ seeAlso ) "
      "X-ORIGIN 'RFC 4519' )");
  CHECK(d.oid == "2.5.6.6");
  CHECK(d.names == Strings{"person"});
  CHECK(d.description == "a human being");
  CHECK(d.obsolete);
  CHECK(d.superiors == Strings{"top", "1.2.3"});
  CHECK(d.kind == ObjectClassKind::kAuxiliary);
  CHECK(d.must == Strings{"sn", "cn"});
  CHECK(d.may == Strings{"userPassword", "telephoneNumber", "seeAlso"});
  CHECK(d.to_string() ==
        "( 2.5.6.6 NAME 'person' DESC 'a human being' OBSOLETE SUP ( top $ 1.2.3 ) AUXILIARY "
        "MUST ( sn $ cn ) MAY ( userPassword $ telephoneNumber $ seeAlso ) "
        "X-ORIGIN 'RFC 4519' )");
}

TEST_CASE("SchemaParser: object class kinds and the STRUCTURAL default") {
  CHECK(oc_ok("( 2.5.6.0 NAME 'top' ABSTRACT MUST objectClass )").kind ==
        ObjectClassKind::kAbstract);
  CHECK(oc_ok("( 1.2.3 STRUCTURAL )").kind == ObjectClassKind::kStructural);
  const ObjectClassDescription d = oc_ok("( 1.2.3 NAME 'x' SUP top MUST cn )");
  CHECK(d.kind == ObjectClassKind::kStructural);
  CHECK(d.superiors == Strings{"top"});
  CHECK(d.must == Strings{"cn"});
  CHECK(d.to_string() == "( 1.2.3 NAME 'x' SUP top STRUCTURAL MUST cn )");
}

TEST_CASE("SchemaParser: syntax and matching rule descriptions") {
  Result<SyntaxDescription> syntax = parse_syntax(
      "( 1.3.6.1.4.1.1466.115.121.1.15 DESC 'Directory String' X-NOT-HUMAN-READABLE 'FALSE' )");
  REQUIRE_MESSAGE(syntax.ok(), syntax.status().to_string());
  CHECK(syntax->oid == "1.3.6.1.4.1.1466.115.121.1.15");
  CHECK(syntax->description == "Directory String");
  CHECK(syntax->extensions.size() == 1);
  CHECK(syntax->to_string() ==
        "( 1.3.6.1.4.1.1466.115.121.1.15 DESC 'Directory String' X-NOT-HUMAN-READABLE "
        "'FALSE' )");
  // slapd accepts NAME in a syntax description (OpenLDAP's pmi.schema uses it).
  Result<SyntaxDescription> named = parse_syntax("( 1.2.3 NAME 'x' X-SUBST '1.2.4' )");
  REQUIRE(named.ok());
  CHECK(named->names == Strings{"x"});

  Result<MatchingRuleDescription> rule = parse_matching_rule(
      "( 2.5.13.2 NAME 'caseIgnoreMatch' OBSOLETE SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )");
  REQUIRE_MESSAGE(rule.ok(), rule.status().to_string());
  CHECK(rule->names == Strings{"caseIgnoreMatch"});
  CHECK(rule->obsolete);
  CHECK(rule->syntax == "1.3.6.1.4.1.1466.115.121.1.15");
  CHECK(rule->to_string() ==
        "( 2.5.13.2 NAME 'caseIgnoreMatch' OBSOLETE SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )");

  check_rejects(parse_matching_rule, "( 2.5.13.2 NAME 'x' )", 21, "needs SYNTAX");
  check_rejects(parse_matching_rule, "( 2.5.13.2 SYNTAX name )", 18, "numeric OID");
  check_rejects(parse_syntax, "( 1.2.3 SUP x )", 8, "unknown keyword 'SUP'");
}

TEST_CASE("SchemaParser: every attribute type rejection with its offset") {
  at_rejects("", 0, "expected '(' opening the definition, found the end");
  at_rejects("  1.2.3 )", 2, "expected '('");
  at_rejects("( )", 2, "expected an OID");
  at_rejects("( cn SYNTAX 1.2 )", 2, "the definition needs a numeric OID, found 'cn'");
  at_rejects("( 1.02.3 SYNTAX 1.2 )", 2, "numeric OID");
  at_rejects("( 1 SYNTAX 1.2 )", 2, "numeric OID");
  at_rejects("( 1.2. SYNTAX 1.2 )", 2, "numeric OID");
  at_rejects("( 1.2.3 NAME 'x'", 16, "missing ')' at the end");
  at_rejects("( 1.2.3 NAME 'x' ) junk", 19, "unexpected text after the closing ')'");
  at_rejects("( 1.2.3 FOO 'x' )", 8, "unknown keyword 'FOO'");
  at_rejects("( 1.2.3 NAME 'x' name 'y' )", 17, "NAME given twice");
  at_rejects("( 1.2.3 $ )", 8, "unexpected '$' where a keyword belongs");
  at_rejects("( 1.2.3 NAME x )", 13, "expected a quoted name, found 'x'");
  at_rejects("( 1.2.3 NAME '1x' )", 14, "invalid name '1x'");
  at_rejects("( 1.2.3 NAME 'a_b' )", 14, "invalid name 'a_b'");
  at_rejects("( 1.2.3 NAME ( 'a' 'b' )", 24, "missing ')' at the end");
  at_rejects("( 1.2.3 NAME ( 'a' 'b'", 22, "missing ')' closing the list of names");
  at_rejects("( 1.2.3 DESC 'open )", 13, "unterminated quoted string");
  at_rejects("( 1.2.3 DESC 'a\\2' )", 15, "bad escape");
  at_rejects("( 1.2.3 DESC 'a\\zz' )", 15, "bad escape");
  at_rejects("( 1.2.3 DESC 'a\\", 15, "bad escape at the end");
  at_rejects("( 1.2.3 DESC '\xc3' )", 13, "invalid UTF-8");
  at_rejects("( 1.2.3 DESC '\xed\xa0\x80' )", 13, "invalid UTF-8");
  at_rejects("( 1.2.3 DESC '\xe0\x80\x80' )", 13, "invalid UTF-8");      // Overlong.
  at_rejects("( 1.2.3 DESC '\xf4\x90\x80\x80' )", 13, "invalid UTF-8");  // Past U+10FFFF.
  at_rejects("( 1.2.3 DESC x )", 13, "expected a quoted string, found 'x'");
  at_rejects("( 1.2.3 SUP )", 12, "expected an OID, found ')'");
  at_rejects("( 1.2.3 SUP a:b )", 12, "expected a name or a numeric OID, found 'a:b'");
  at_rejects("( 1.2.3 SYNTAX cn )", 15, "SYNTAX needs a numeric OID, found 'cn'");
  at_rejects("( 1.2.3 SYNTAX 1.2{x} )", 19, "bad SYNTAX length 'x'");
  at_rejects("( 1.2.3 SYNTAX 1.2{} )", 19, "bad SYNTAX length ''");
  at_rejects("( 1.2.3 SYNTAX 1.2{99999999999} )", 19, "too large");
  at_rejects("( 1.2.3 SYNTAX 1.2{64 )", 18, "missing '}'");
  at_rejects("( 1.2.3 SYNTAX '1.2{64' )", 15, "bad length in SYNTAX");
  at_rejects("( 1.2.3 SYNTAX 1.2 USAGE nobody )", 25, "unknown USAGE 'nobody'");
  at_rejects("( 1.2.3 SYNTAX 1.2 USAGE )", 25, "unknown USAGE");
  at_rejects("( 1.2.3 X- 'a' )", 8, "invalid extension name 'X-'");
  at_rejects("( 1.2.3 X-A.B 'a' )", 8, "invalid extension name");
  at_rejects("( 1.2.3 X-A b )", 12, "expected a quoted string, found 'b'");
  at_rejects("( 1.2.3 X-A ( 'a' ", 18, "missing ')' closing the list of strings");
}

TEST_CASE("SchemaParser: every object class rejection with its offset") {
  oc_rejects("( 1.2.3 SUP ( ) )", 14, "empty list");
  oc_rejects("( 1.2.3 MUST ( a b ) )", 17, "expected '$' or ')' in the list, found 'b'");
  oc_rejects("( 1.2.3 MUST ( a $ ) )", 19, "expected an OID, found ')'");
  oc_rejects("( 1.2.3 MAY ( a $ b ", 20, "missing ')' closing the list");
  oc_rejects("( 1.2.3 ABSTRACT AUXILIARY )", 17, "more than one of ABSTRACT");
  oc_rejects("( 1.2.3 STRUCTURAL STRUCTURAL )", 19, "STRUCTURAL given twice");
  oc_rejects("( 1.2.3 SYNTAX 1.2 )", 8, "unknown keyword 'SYNTAX'");
  oc_rejects("( 1.2.3 MUST 'a b' )", 13, "expected a name or a numeric OID, found 'a b'");
}

TEST_CASE("SchemaParser: OID macros expand names with and without suffixes") {
  OidMacros macros;
  CHECK(macros.empty());
  REQUIRE(macros.define("OLcfg", "1.3.6.1.4.1.4203.1.12.2").ok());
  REQUIRE(macros.define("OLcfgAt", "OLcfg:3").ok());
  CHECK_FALSE(macros.empty());
  CHECK(*macros.expand("1.2.3") == "1.2.3");
  CHECK(*macros.expand("OLcfg") == "1.3.6.1.4.1.4203.1.12.2");
  CHECK(*macros.expand("olcfgat:0.1") == "1.3.6.1.4.1.4203.1.12.2.3.0.1");
  CHECK(macros.define("olcfg", "1.3.6.1.4.1.4203.1.12.2").ok());  // The same value again.

  const Status redefined = macros.define("OLcfg", "1.2.3");
  CHECK(redefined.code() == StatusCode::kAlreadyExists);
  CHECK(redefined.message().find("already stands for 1.3.6.1.4.1.4203.1.12.2") !=
        std::string::npos);
  CHECK(macros.define("1abc", "1.2.3").code() == StatusCode::kMalformed);
  CHECK(macros.define("x", "nope:1").code() == StatusCode::kMalformed);
  CHECK(macros.expand("nope:1").status().message() == "unknown OID macro 'nope'");
  CHECK(macros.expand("OLcfg:").status().message() == "bad OID suffix in 'OLcfg:'");
  CHECK(macros.expand("OLcfg:01").status().message() == "bad OID suffix in 'OLcfg:01'");
  CHECK(macros.expand("OLcfg:1..2").status().code() == StatusCode::kMalformed);
  CHECK(macros.expand("1.2.").status().code() == StatusCode::kMalformed);

  // In a description: the element's OID and SYNTAX expand, and so does a reference with ':'.
  REQUIRE(macros.define("OMsDirectoryString", "1.3.6.1.4.1.1466.115.121.1.15").ok());
  const AttributeTypeDescription d =
      at_ok("( OLcfgAt:7 NAME 'x' SUP OLcfgAt:6 SYNTAX OMsDirectoryString{8} )", &macros);
  CHECK(d.oid == "1.3.6.1.4.1.4203.1.12.2.3.7");
  CHECK(d.superior == "1.3.6.1.4.1.4203.1.12.2.3.6");
  CHECK(d.syntax == "1.3.6.1.4.1.1466.115.121.1.15");
  CHECK(d.syntax_length == 8);
  Result<AttributeTypeDescription> unknown = parse_attribute_type("( Nope:1 SYNTAX 1.2 )", &macros);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message() == "offset 2: unknown OID macro 'Nope'");
}

TEST_CASE("SchemaParser: an OpenLDAP schema file with comments and continuation lines") {
  const SchemaFileContents good = file_ok(
      "# A comment\n"
      "#attributetype ( 9.9.9 NAME 'commentedOut'\n"
      "\tSYNTAX 1.2.3 )\n"
      "\n"
      "attributetype ( 1.2.3.1 NAME 'one'\n"
      "\tDESC 'first'\n"
      "\tSYNTAX 1.2.9 )\n"
      "  \t\n"
      "AttributeTypes\t( 1.2.3.2 NAME 'two' SUP one )\n"
      "objectclass ( 1.2.4.1 NAME 'klass'\n"
      "    SUP top AUXILIARY\n"
      "    MAY ( one $ two ) )\n"
      "OBJECTCLASSES ( 1.2.4.2 )\n"
      "ldapsyntax ( 1.2.5.1 DESC 'syn' )\n"
      "matchingrule ( 1.2.6.1 NAME 'rule' SYNTAX 1.2.5.1 )\n");
  REQUIRE(good.attribute_types.size() == 2);
  CHECK(good.attribute_types[0].oid == "1.2.3.1");
  CHECK(good.attribute_types[0].description == "first");
  CHECK(good.attribute_types[0].line == 5);
  CHECK(good.attribute_types[1].superior == "one");
  CHECK(good.attribute_types[1].line == 9);
  REQUIRE(good.object_classes.size() == 2);
  CHECK(good.object_classes[0].may == Strings{"one", "two"});
  CHECK(good.object_classes[0].line == 10);
  CHECK(good.object_classes[1].line == 13);
  REQUIRE(good.syntaxes.size() == 1);
  CHECK(good.syntaxes[0].line == 14);
  REQUIRE(good.matching_rules.size() == 1);
  CHECK(good.matching_rules[0].line == 15);
}

TEST_CASE("SchemaParser: a blank line ends a definition as in slapd") {
  file_rejects(
      "attributetype ( 1.2.3.1 NAME 'one'\n"
      "\tDESC 'first'\n"
      "\n"
      "\tSYNTAX 1.2.9 )\n",
      2, "missing ')' at the end of the definition");
}

TEST_CASE("SchemaParser: statements split as slapd's fp_getline splits them") {
  const SchemaFileContents contents = file_ok(
      "  attributetype ( 1.2.3.1 NAME 'indented'\n"  // After nothing: a statement of its own.
      "\tSYNTAX 1.2 )\n"
      "\n"
      "\t# An indented comment after an empty line\n"
      "\tstill the comment\n"
      "attributetype ( 1.2.3.2 NAME 'spaced'\n"
      "   \n"  // Whitespace only: a continuation, not an end.
      "\tSYNTAX 1.2 )\n"
      "attributetype ( 1.2.3.3 NAME 'joi\\\n"  // A backslash joins the next line as it is.
      "ned' SYNTAX 1.2\\\n"
      "\n"
      "  )\n");
  REQUIRE(contents.attribute_types.size() == 3);
  CHECK(contents.attribute_types[0].names == Strings{"indented"});
  CHECK(contents.attribute_types[0].line == 1);
  CHECK(contents.attribute_types[1].names == Strings{"spaced"});
  CHECK(contents.attribute_types[1].line == 6);
  CHECK(contents.attribute_types[2].names == Strings{"joined"});
  CHECK(contents.attribute_types[2].line == 9);
  // Errors name the line of the problem in joined lines too.
  file_rejects("attributetype ( 1.2.3 NAME 'x' \\\n\tSYNTAX 1.2 BAD )\n", 2,
               "unknown keyword 'BAD'");
}

TEST_CASE("SchemaParser: objectidentifier macros in a file") {
  OidMacros macros;
  const SchemaFileContents contents = file_ok(
      "objectidentifier myOID 1.3.6.1.4.1.99999\n"
      "objectIdentifier myAttrs myOID:1\n"
      "objectidentifier mySyntax 1.3.6.1.4.1.1466.115.121.1.15\n"
      "attributetype ( myAttrs:1 NAME 'myAttr' SYNTAX mySyntax{32} )\n"
      "objectclass ( myOID:2.1 NAME 'myClass' SUP top MAY myAttr )\n",
      macros);
  REQUIRE(contents.attribute_types.size() == 1);
  CHECK(contents.attribute_types[0].oid == "1.3.6.1.4.1.99999.1.1");
  CHECK(contents.attribute_types[0].syntax == "1.3.6.1.4.1.1466.115.121.1.15");
  CHECK(contents.attribute_types[0].syntax_length == 32);
  REQUIRE(contents.object_classes.size() == 1);
  CHECK(contents.object_classes[0].oid == "1.3.6.1.4.1.99999.2.1");
  // The macros carry over to the next file of a set.
  const SchemaFileContents next =
      file_ok("attributetype ( myAttrs:2 NAME 'other' SUP myAttr )\n", macros);
  CHECK(next.attribute_types[0].oid == "1.3.6.1.4.1.99999.1.2");

  file_rejects("objectidentifier onlyName\n", 1, "objectidentifier needs a name and an OID");
  file_rejects("objectidentifier a 1.2 extra\n", 1, "needs a name and an OID");
  file_rejects("objectidentifier a 1.2\nobjectidentifier a 1.3\n", 2, "already stands for 1.2");
  file_rejects("\nobjectidentifier a b:1\n", 2, "unknown OID macro 'b'");
  file_rejects("attributetype ( nope:1 NAME 'x' SYNTAX 1.2 )\n", 1, "unknown OID macro 'nope'");
}

TEST_CASE("SchemaParser: file errors name the line of the problem") {
  file_rejects(
      "# header\n"
      "attributetype ( 1.2.3 NAME 'x'\n"
      "\tEQUALITY caseIgnoreMatch\n"
      "\tSYNTAX 1.2.3{abc} )\n",
      4, "bad SYNTAX length 'abc'");
  file_rejects("attributetype ( 1.2.3\n  NAME 'x'\n  BOGUS )\n", 3, "unknown keyword 'BOGUS'");
  file_rejects("\n\nattribute ( 1.2.3 )\n", 3, "unknown keyword 'attribute'");
  file_rejects("attributetype ( 1.2.3 NAME 'x'\n\tSYNTAX 1.2\n", 2, "missing ')'");
  file_rejects("objectclass ( 1.2.3 MUST ( a b ) )\r\n", 1, "expected '$' or ')'");
  // CRLF line endings are fine.
  const SchemaFileContents crlf =
      file_ok("attributetype ( 1.2.3 NAME 'x'\r\n\tSYNTAX 1.2 )\r\n\r\nobjectclass ( 1.2.4 )\r\n");
  CHECK(crlf.attribute_types.size() == 1);
  CHECK(crlf.object_classes.size() == 1);
  CHECK(crlf.object_classes[0].line == 4);
}

TEST_CASE("SchemaParser: an LDIF cn=schema file") {
  OidMacros macros;
  const SchemaFileContents contents = file_ok(
      "# comment\n"
      "#  folded comment\n"
      "dn: cn=test,cn=schema,cn=config\n"
      "objectClass: olcSchemaConfig\n"
      "cn: test\n"
      "olcObjectIdentifier: {0}testOID 1.3.6.1.4.1.99998\n"
      "olcAttributeTypes: {0}( testOID:1.1 NAME 'testAttr' DESC 'folded\n"
      "  across lines' EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1\n"
      " .15 )\n"
      "olcAttributeTypes: {1}( testOID:1.2 NAME 'testAttr2' SUP testAttr )\n"
      "attributeTypes: ( 1.3.6.1.4.1.99998.1.3 NAME 'plain' SUP testAttr )\n"
      "olcAttributeTypes:: KCB0ZXN0T0lEOjEuNCBOQU1FICdiYXNlNjQnIFNVUCB0ZXN0QXR0ciAp\n"
      "olcObjectClasses: {0}( testOID:2.1 NAME 'testClass' SUP top AUXILIARY\n"
      "  MAY ( testAttr $ testAttr2 ) )\n"
      "objectClasses: ( 1.3.6.1.4.1.99998.2.2 NAME 'testClass2' )\n"
      "olcLdapSyntaxes: {0}( 1.3.6.1.4.1.99998.3.1 DESC 'syn' X-SUBST '1.2.3' )\n"
      "matchingRules: ( 1.3.6.1.4.1.99998.4.1 NAME 'rule' SYNTAX 1.2.3 )\n"
      "olcDitContentRules: {0}( whatever is ignored\n"
      "-\n"
      "\n"
      "dn: cn=other,cn=schema,cn=config\n"
      "olcAttributeTypes: ( 1.3.6.1.4.1.99998.1.5 NAME 'second' SUP name )\n",
      macros);
  REQUIRE(contents.attribute_types.size() == 5);
  const AttributeTypeDescription& first = contents.attribute_types[0];
  CHECK(first.oid == "1.3.6.1.4.1.99998.1.1");
  CHECK(first.description == "folded across lines");
  CHECK(first.syntax == "1.3.6.1.4.1.1466.115.121.1.15");
  CHECK(first.line == 7);
  CHECK(contents.attribute_types[1].oid == "1.3.6.1.4.1.99998.1.2");
  CHECK(contents.attribute_types[2].names == Strings{"plain"});
  CHECK(contents.attribute_types[3].oid == "1.3.6.1.4.1.99998.1.4");  // From base64.
  CHECK(contents.attribute_types[3].names == Strings{"base64"});
  CHECK(contents.attribute_types[3].line == 12);
  CHECK(contents.attribute_types[4].line == 22);
  REQUIRE(contents.object_classes.size() == 2);
  CHECK(contents.object_classes[0].may == Strings{"testAttr", "testAttr2"});
  CHECK(contents.object_classes[0].line == 13);
  REQUIRE(contents.syntaxes.size() == 1);
  CHECK(contents.syntaxes[0].line == 16);
  REQUIRE(contents.matching_rules.size() == 1);
}

TEST_CASE("SchemaParser: LDIF errors name the physical line") {
  file_rejects(
      "dn: cn=test,cn=schema,cn=config\n"
      "olcAttributeTypes: {0}( 1.2.3 NAME 'x' DESC 'folded'\n"
      "  SYNTAX 1.2\n"
      "  BOGUS )\n",
      4, "unknown keyword 'BOGUS'");
  file_rejects("dn: cn=x\nolcAttributeTypes:: !!!\n", 2, "invalid base64 value");
  file_rejects("dn: cn=x\nolcAttributeTypes:: KCA\n", 2, "invalid base64 value");
  file_rejects("dn: cn=x\nolcObjectClasses:< file:///x\n", 2, "URL values");
  file_rejects("dn: cn=x\nnot an attribute line\n", 2, "expected 'attribute: value'");
  file_rejects("dn: cn=x\nolcObjectIdentifier: {0}onlyName\n", 2, "needs a name and an OID");
  file_rejects("dn: cn=x\n\n  orphan continuation\n", 3, "continuation line");
  file_rejects("dn: cn=x\r\nolcAttributeTypes: ( 1.2.3 NAME 'x' SYNTAX 1.2 ) junk\r\n", 2,
               "unexpected text after the closing ')'");
}

// The LDIF files of Debian's slapd package (OpenLDAP's own schema) must parse.
TEST_CASE("SchemaParser: OpenLDAP's own schema files parse when installed") {
  const std::filesystem::path dir = "/etc/ldap/schema";
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    MESSAGE("skipped: no ", dir.string());
    return;
  }
  std::size_t parsed_files = 0;
  for (const auto& item : std::filesystem::directory_iterator(dir)) {
    const std::filesystem::path& path = item.path();
    const std::string extension = path.extension().string();
    // dsee.schema has a typo slapd cannot read either ("attributeype" at line 96); its LDIF
    // twin is correct.
    if ((extension != ".ldif" && extension != ".schema") || path.filename() == "dsee.schema") {
      continue;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    OidMacros macros;
    Result<SchemaFileContents> contents = parse_schema_file(text.str(), path.string(), macros);
    INFO("file: ", path.string());
    CHECK_MESSAGE(contents.ok(), contents.status().to_string());
    if (contents.ok()) {
      CHECK(contents->attribute_types.size() + contents->object_classes.size() > 0);
      ++parsed_files;
    }
  }
  MESSAGE("parsed ", parsed_files, " files of ", dir.string());
}

}  // namespace
}  // namespace numadir::schema
