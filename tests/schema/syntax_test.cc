// Tests for schema/syntax.h: lookup, the table, and every validator with values it accepts and
// values it rejects.
#include "schema/syntax.h"

#include <doctest/doctest.h>

#include <initializer_list>
#include <set>
#include <string>
#include <string_view>

#include "schema/matching_rule.h"

namespace numadir::schema {
namespace {

using namespace std::string_view_literals;

constexpr std::string_view kPrefix = "1.3.6.1.4.1.1466.115.121.1.";

const Syntax& syntax(std::string_view oid) {
  const Syntax* s = find_syntax(oid);
  const std::string shown(oid);
  INFO("syntax: ", shown);
  REQUIRE(s != nullptr);
  return *s;
}

const Syntax& rfc4517(int n) { return syntax(std::string(kPrefix) + std::to_string(n)); }

void check_values(const Syntax& s, std::initializer_list<std::string_view> valid,
                  std::initializer_list<std::string_view> invalid) {
  INFO("syntax: ", std::string(s.description));
  for (std::string_view value : valid) {
    INFO("valid value: ", std::string(value));
    CHECK(s.validate(value));
  }
  for (std::string_view value : invalid) {
    INFO("invalid value: ", std::string(value));
    CHECK_FALSE(s.validate(value));
  }
}

TEST_CASE("Syntax: lookup by exact OID") {
  CHECK(rfc4517(15).description == "Directory String");
  CHECK(find_syntax("1.3.6.1.4.1.1466.115.121.1.999") == nullptr);
  CHECK(find_syntax("Directory String") == nullptr);
  CHECK(find_syntax("") == nullptr);
  CHECK(syntax("1.3.6.1.1.16.1").description == "UUID");
}

TEST_CASE("Syntax: the table is consistent") {
  std::set<std::string_view> oids;
  for (const Syntax& s : all_syntaxes()) {
    INFO("syntax: ", std::string(s.oid));
    CHECK(oids.insert(s.oid).second);
    CHECK(find_syntax(s.oid) == &s);
    CHECK_FALSE(s.description.empty());
    CHECK(static_cast<bool>(s.validate));
  }
  for (int n : {3,  5,  6,  7,  8,  9,  10, 11, 12, 14, 15, 16, 17, 21, 22, 23, 24, 25, 26, 27,
                28, 30, 31, 34, 35, 36, 37, 38, 39, 40, 41, 44, 49, 50, 51, 52, 53, 54, 58}) {
    CHECK(find_syntax(std::string(kPrefix) + std::to_string(n)) != nullptr);
  }
  for (std::string_view oid :
       {"1.3.6.1.1.16.1"sv, "1.3.6.1.1.1.0.0"sv, "1.3.6.1.1.1.0.1"sv, "1.3.6.1.4.1.4203.1.1.2"sv}) {
    CHECK(find_syntax(oid) != nullptr);
  }
}

TEST_CASE("Syntax: binary syntaxes accept any bytes and are not human-readable") {
  for (int n : {4, 5, 8, 9, 10, 23, 28, 49}) {
    const Syntax& s = rfc4517(n);
    INFO("syntax: ", std::string(s.description));
    CHECK_FALSE(s.human_readable);
    CHECK(s.validate(""));
    CHECK(s.validate("\x00\xFF\x80 binary"sv));
  }
  CHECK(rfc4517(40).validate("\x00\xFF"sv));  // Octet String
  CHECK(rfc4517(15).human_readable);
}

TEST_CASE("Syntax: Attribute Type Description") {
  check_values(rfc4517(3),
               {"( 2.5.4.3 NAME 'cn' SUP name )",
                "( 2.5.4.41 NAME 'name' EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch "
                "SYNTAX 1.3.6.1.4.1.1466.115.121.1.15{32768} )",
                "( 2.5.4.0 NAME 'objectClass' EQUALITY objectIdentifierMatch SYNTAX "
                "1.3.6.1.4.1.1466.115.121.1.38 )",
                "( 2.5.18.1 NAME 'createTimestamp' EQUALITY generalizedTimeMatch ORDERING "
                "generalizedTimeOrderingMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.24 SINGLE-VALUE "
                "NO-USER-MODIFICATION USAGE directoryOperation )",
                "( 2.5.4.3 NAME ( 'cn' 'commonName' ) DESC 'it\\27s \\5C ok' SUP name "
                "X-ORIGIN 'RFC 4519' X-MORE ( 'a' 'b' ) )",
                "(2.5.4.3 SUP name)", "( 1.2.3 SYNTAX 1.2.4 COLLECTIVE OBSOLETE )",
                "( 1.2.3 DESC 'Grüße' SUP x )"},
               {"", "2.5.4.3 NAME 'cn' SUP name", "( 2.5.4.3 NAME 'cn' )", "( cn SUP name )",
                "( 2.5.4.3 NAME 'cn' SUP name", "( 2.5.4.3 NAME cn SUP name )",
                "( 2.5.4.3 NAME 'cn' NAME 'x' SUP name )", "( 2.5.4.3 BOGUS SUP name )",
                "( 2.5.4.3 SUP name USAGE sometimes )", "( 2.5.4.3 SYNTAX 1.2{x} )",
                "( 2.5.4.3 DESC '' SUP name )", "( 2.5.4.3 DESC 'a\\41' SUP name )",
                "( 2.5.4.3 SUP name ) trailing", "( 2.5.4.3SUP name )", "( 02.5 SUP name )",
                "( 1.2.3 NAME 'a_b' SUP x )", "( 1.2.3 SUP x X-ORIGIN )", "( 1.2.3 SUP x \xFF )"});
}

TEST_CASE("Syntax: Object Class Description") {
  check_values(
      rfc4517(37),
      {"( 2.5.6.6 NAME 'person' SUP top STRUCTURAL MUST ( sn $ cn ) MAY ( userPassword $ "
       "telephoneNumber $ seeAlso $ description ) )",
       "( 2.5.6.0 NAME 'top' ABSTRACT MUST objectClass )",
       "( 1.2.3 AUXILIARY MAY ( a$b $ 2.5.4.3 ) )", "( 1.2.3 )", "( 1.2.3 SUP ( top $ person ) )"},
      {"( 1.2.3 ABSTRACT STRUCTURAL )", "( 1.2.3 MUST ( ) )", "( 1.2.3 MUST ( a b ) )",
       "( 1.2.3 MUST ( a $ ) )", "( 1.2.3 SYNTAX 1.2.3 )", "( person )"});
}

TEST_CASE("Syntax: Matching Rule and Matching Rule Use Descriptions") {
  check_values(rfc4517(30),
               {"( 2.5.13.2 NAME 'caseIgnoreMatch' SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 )",
                "( 1.2.3 OBSOLETE SYNTAX 1.2.4 X-ORIGIN 'x' )"},
               {"( 2.5.13.2 NAME 'caseIgnoreMatch' )", "( 2.5.13.2 SYNTAX directoryString )"});
  check_values(rfc4517(31),
               {"( 2.5.13.16 APPLIES ( givenName $ surname ) )",
                "( 2.5.13.0 NAME 'objectIdentifierMatch' APPLIES objectClass )"},
               {"( 2.5.13.16 )", "( 2.5.13.16 APPLIES )"});
}

TEST_CASE("Syntax: LDAP Syntax and Name Form Descriptions") {
  check_values(rfc4517(54),
               {"( 1.3.6.1.4.1.1466.115.121.1.15 DESC 'Directory String' )", "( 1.2.3 )",
                "( 1.2.3 DESC 'JPEG' X-NOT-HUMAN-READABLE 'TRUE' )"},
               {"( 1.2.3 NAME 'x' )", "( 1.2.3 DESC x )", "( 1.2.3 DESC 'a' DESC 'b' )"});
  check_values(rfc4517(35),
               {"( 2.5.15.3 NAME 'orgNameForm' OC organization MUST o )",
                "( 1.2.3 OC person MUST ( cn $ sn ) MAY uid )"},
               {"( 1.2.3 OC person )", "( 1.2.3 MUST cn )"});
}

TEST_CASE("Syntax: DIT Content Rule and DIT Structure Rule Descriptions") {
  check_values(rfc4517(16),
               {"( 2.5.6.4 DESC 'content rule for organization' NOT ( x121Address $ "
                "telexNumber ) )",
                "( 1.2.3 AUX ( a $ b ) MUST c MAY d )"},
               {"", "( 1.2.3 FORM x )", "( x )"});
  check_values(rfc4517(17),
               {"( 2 DESC 'organization structure rule' FORM 2.5.15.3 )",
                "( 10 NAME 'r' FORM orgNameForm SUP ( 1 2 ) )", "( 3 FORM x SUP 1 )"},
               {"( 2 DESC 'no form' )", "( 1.2 FORM x )", "( 01 FORM x )", "( 2 FORM x SUP a )"});
}

TEST_CASE("Syntax: Bit String and Boolean") {
  check_values(rfc4517(6), {"'0101111101'B", "''B", "'1'B"},
               {"", "0101", "'0102'B", "'01'b", "'01'", "'01'BB"});
  check_values(rfc4517(7), {"TRUE", "FALSE"}, {"", "true", "False", "1", "TRUE "});
}

TEST_CASE("Syntax: Country String and Delivery Method") {
  check_values(rfc4517(11), {"US", "de", "1A"}, {"", "U", "USA", "U!", "\u00C4X"});
  check_values(rfc4517(14), {"any", "telephone", "mhs $ telex", "g3fax$ia5 $ videotex", "ANY"},
               {"", "fax", "any $", "$ any", " any", "any ", "mhs telex"});
}

TEST_CASE("Syntax: Directory String") {
  check_values(rfc4517(15), {"a", "Babs Jensen", "Grüße", "\U0001F600", " "},
               {"", "bad\xFF", "\xC0\x80", "\xED\xA0\x80"});
}

TEST_CASE("Syntax: DN") {
  check_values(
      rfc4517(12),
      {"", "dc=example,dc=com", "UID=jsmith,DC=example,DC=net",
       "CN=Before\\0DAfter,DC=example,DC=com", "cn=a+sn=b,o=x", "1.3.6.1.4.1.1466.0=#04024869"},
      {"example.com", "cn", "cn=a,,o=x", "=a", "cn=a\\zz"});
}

TEST_CASE("Syntax: Enhanced Guide and Guide") {
  check_values(
      rfc4517(21),
      {"person#(sn$EQ)#oneLevel", "2.5.6.6 # (sn$EQ&cn$SUBSTR)|!?true # wholeSubtree",
       "person#sn$APPROX#baseobject", "person#?false#ONELEVEL"},
      {"", "person#sn$EQ", "person#sn$EQ#somewhere", "#sn$EQ#oneLevel", "person#sn$XX#oneLevel",
       "person#(sn$EQ#oneLevel", "person#sn$EQ#oneLevel#x", "person##oneLevel",
       "person#( sn$EQ )#oneLevel"});  // The criteria grammar has no spaces.
  check_values(rfc4517(25),
               {"person#sn$EQ", "sn$EQ", "(sn$EQ|cn$GE)&!uid$LE", "?true", "person#!(sn$SUBSTR)"},
               {"", "person#", "#sn$EQ", "sn", "sn$", "sn$EQ&", "(sn$EQ", "?maybe", "sn$EQ)"});
  // Deep nesting is refused rather than recursing without bound.
  CHECK_FALSE(rfc4517(25).validate(std::string(100000, '!') + "sn$EQ"));
  CHECK_FALSE(rfc4517(25).validate(std::string(100000, '(') + "sn$EQ"));
  CHECK(rfc4517(25).validate(std::string(10, '!') + "sn$EQ"));
}

TEST_CASE("Syntax: Facsimile Telephone Number and Fax") {
  check_values(rfc4517(22),
               {"+1 512 315 0280", "+1 512 315 0280$twoDimensional$fineResolution",
                "+61 3 9896 7801$b4Length$A3WIDTH$uncompressed"},
               {"", "+1 512$", "+1 512$colour", "\u00E9"});
  CHECK(rfc4517(23).validate("\x00\x01"sv));
}

TEST_CASE("Syntax: Generalized Time") {
  check_values(
      rfc4517(24),
      {"199412161032Z", "199412160532-0500", "20240229120000Z", "2024010203Z",
       "20240102030405.123Z", "20240102030405,5+01", "20161231235960Z", "2024010203.5-0130"},
      {"", "1994121610", "19941216103212", "20230229120000Z", "20241301000000Z", "20240100000000Z",
       "20240102250000Z", "20240102036000Z", "20240102030461Z", "20240102030405.Z",
       "20240102030405+2400", "2024010203040Z", "20240102030405z", "20240102030405Z "});
}

TEST_CASE("Syntax: IA5 String and Printable String") {
  check_values(rfc4517(26), {"", "user@example.com", "tab\tand\x7f"}, {"caf\u00E9", "\x80"});
  check_values(rfc4517(44), {"Babs Jensen", "(a)+,-./:=?'", "123"},
               {"", "a@b", "a!b", "a_b", "caf\u00E9", "a\tb"});
}

TEST_CASE("Syntax: INTEGER") {
  check_values(rfc4517(27), {"0", "1", "-1", "4711", "-123456789012345678901234567890"},
               {"", "-", "-0", "007", "+1", "1.5", " 1", "1 ", "abc", "0x10"});
}

TEST_CASE("Syntax: Name And Optional UID") {
  check_values(rfc4517(34),
               {"1.3.6.1.4.1.1466.0=#04024869,O=Test,C=GB#'0101'B", "cn=x,o=y", "cn=x,o=y#'1'B",
                "cn=x\\#'1'B", "cn=x#'2'B", ""},  // '2': no UID, so all DN; "": the root DN.
               {"garbage", "garbage#'01'B", "cn=x,,o=y#'01'B"});
}

TEST_CASE("Syntax: Numeric String") {
  check_values(rfc4517(36), {"15 079 672 281", "0", " "}, {"", "12a", "1-2", "\u0661"});
}

TEST_CASE("Syntax: OID") {
  check_values(rfc4517(38), {"1.2.3.4", "2.5.4.3", "cn", "inetOrgPerson", "x-abc", "a1"},
               {"", "1", "1.", ".1", "1..2", "1.02", "1a", "-x", "a_b", "a b", "1.2 "});
}

TEST_CASE("Syntax: Other Mailbox") {
  check_values(rfc4517(39), {"internet$user@example.com", "x400$", "smtp$a$b"},
               {"", "internet", "$user@example.com", "int_ernet$u", "internet$caf\u00E9"});
}

TEST_CASE("Syntax: Postal Address") {
  check_values(rfc4517(41),
               {"1234 Main St.$Anytown, CA 12345$USA",
                "\\241,000,000 Sweepstakes$PO Box 1000000$"
                "Anytown, CA 12345$USA",
                "back\\5cslash\\5C", "Grüße$Köln"},
               {"", "a$", "$a", "a$$b", "a\\b", "a\\2", "bad\xFF"});
}

TEST_CASE("Syntax: Substring Assertion") {
  check_values(rfc4517(58), {"*", "a*", "*a", "a*b", "*a*b*", "a\\2Ab*", "x\\5c*", "Grü*ße"},
               {"", "abc", "a**b", "a\\b*", "a\\2*", "bad\xFF*"});
}

TEST_CASE("Syntax: Telephone Number") {
  check_values(rfc4517(50), {"+1 512 305 0280", "(0)1234-5678", "555"},
               {"", "+1 512#305", "caf\u00E9", "1\t2"});
}

TEST_CASE("Syntax: Teletex Terminal Identifier and Telex Number") {
  check_values(rfc4517(51),
               {"ttx-id", "term$graphic:abc", "term$control:\x01\x02$misc:$private:a\\24b",
                "term$page:\xFF"},
               {"", "ter_m", "term$bogus:x", "term$graphic", "term$graphic:a\\b"});
  check_values(rfc4517(52), {"817379$ca$ATT EAST", "1$2$3"},
               {"", "817379", "817379$ca", "1$2$3$4", "1$$3", "1$2$a_b"});
}

TEST_CASE("Syntax: UTC Time") {
  check_values(rfc4517(53),
               {"9412161032Z", "9412161032", "941216103245Z", "9412161032-0500", "0002291200Z"},
               {"", "94121610", "9413161032Z", "9412321032Z", "9402301032Z", "9412162432Z",
                "9412161060Z", "9412161032+05", "9412161032ZZ", "941216103261Z"});
}

TEST_CASE("Syntax: UUID") {
  check_values(syntax("1.3.6.1.1.16.1"),
               {"597ae2f6-16a6-1027-98f4-abcdefabcdef", "597AE2F6-16A6-1027-98F4-ABCDEFABCDEF"},
               {"", "597ae2f616a6102798f4abcdefabcdef", "597ae2f6-16a6-1027-98f4-abcdefabcdeg",
                "597ae2f6-16a6-1027-98f4-abcdefabcde", "{597ae2f6-16a6-1027-98f4-abcdefabcdef}"});
}

TEST_CASE("Syntax: RFC 2307 netgroup triples and boot parameters") {
  check_values(syntax("1.3.6.1.1.1.0.0"),
               {"(host.example.com,user,domain)", "(,,)", "(-,jdoe,)", "(host,-,example.com)"},
               {"", "()", "(a,b)", "(a,b,c,d)", "a,b,c", "(a b,c,d)", "(a,b,c))"});
  check_values(syntax("1.3.6.1.1.1.0.1"),
               {"root=boot.example.com:/export/root/client", "swap=server:/swap"},
               {"", "root", "root=server", "=server:/p", "root=:/p",
                "root=server:", "root=ser ver:/p", "root=server:/a b"});
}

TEST_CASE("Syntax: authPassword") {
  check_values(syntax("1.3.6.1.4.1.4203.1.1.2"),
               {"MD5$dZ3jXb6Z$MKEyV0H2VAvcRjLtdPEFaQ==", " SHA1 $ abc $ def ", "X-ABC$$"},
               {"", "md5$a$b", "MD5$a", "MD5$a$b$c", "MD5$a b$c"});
}

TEST_CASE("Syntax: legacy RFC 2252 syntaxes") {
  check_values(rfc4517(32), {"NO-LISTS", "any-list", "PROFESSIONAL-LISTS"}, {"", "SOME-LISTS"});
  for (int n : {13, 19, 33, 42, 43}) {
    check_values(rfc4517(n), {"anything"}, {"", "bad\xFF"});
  }
}

TEST_CASE("Syntax: where a rule's normalize validates the syntax the two agree on every value") {
  const std::initializer_list<std::string_view> values = {"",
                                                          "cn=a,dc=example,dc=com",
                                                          "CN=A+uid=b,DC=x",
                                                          "cn=a,",
                                                          "=a",
                                                          "cn",
                                                          "cn=a\\",
                                                          "uid=u,dc=x#'0101'B",
                                                          "uid=u#'012'B",
                                                          "20261204120000Z",
                                                          "20261204120000.123+0100",
                                                          "20260230120000Z",
                                                          "2026120412",
                                                          "12345678-1234-1234-1234-123456789ABC",
                                                          "12345678-1234-1234-1234-123456789abg",
                                                          "12345678123412341234123456789abc",
                                                          "SHA256$c2FsdA==$aGFzaA==",
                                                          "SHA256$$",
                                                          "$"};
  int pairs = 0;
  for (const Syntax& syntax : all_syntaxes()) {
    for (const MatchingRule& rule : all_matching_rules()) {
      if (!normalize_validates(syntax, rule)) {
        continue;
      }
      ++pairs;
      for (const std::string_view value : values) {
        std::string normalized;
        CAPTURE(syntax.description);
        CAPTURE(rule.name);
        CAPTURE(value);
        CHECK(syntax.validate(value) == rule.normalize(value, normalized));
      }
    }
  }
  // DN, Generalized Time, UUID, Name And Optional UID, authPassword.
  CHECK(pairs == 5);
  // Other syntaxes keep their own validation (Directory String and caseIgnoreMatch).
  CHECK_FALSE(normalize_validates(*find_syntax("1.3.6.1.4.1.1466.115.121.1.15"),
                                  *find_matching_rule("caseIgnoreMatch")));
}

}  // namespace
}  // namespace numadir::schema
