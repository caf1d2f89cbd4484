// Tests for schema/matching_rule.h: lookup, every built-in rule's normalizer (equality, ordering
// and substring contracts) and substrings_match.
#include "schema/matching_rule.h"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "schema/syntax.h"

namespace numadir::schema {
namespace {

using namespace std::string_view_literals;

const MatchingRule& rule(std::string_view name) {
  const MatchingRule* r = find_matching_rule(name);
  const std::string shown(name);
  INFO("rule: ", shown);
  REQUIRE(r != nullptr);
  return *r;
}

bool accepts(std::string_view name, std::string_view value) {
  std::string out;
  return rule(name).normalize(value, out);
}

std::string norm(std::string_view name, std::string_view value) {
  std::string out;
  const std::string shown(value);
  INFO("value: ", shown);
  REQUIRE(rule(name).normalize(value, out));
  return out;
}

bool equal(std::string_view name, std::string_view a, std::string_view b) {
  return norm(name, a) == norm(name, b);
}

// Checks that `sorted` is in strictly ascending order under rule `name`, pairwise.
void check_ascending(std::string_view name, const std::vector<std::string_view>& sorted) {
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    for (std::size_t j = i + 1; j < sorted.size(); ++j) {
      const std::string a(sorted[i]);
      const std::string b(sorted[j]);
      INFO(a, " < ", b);
      CHECK(norm(name, a) < norm(name, b));
    }
  }
}

// Evaluates a substring assertion "initial*any*...*final" (an empty initial / final: absent)
// against `value` under substrings rule `name`.
bool substrings(std::string_view name, std::string_view value, std::string_view initial,
                std::vector<std::string_view> any, std::string_view final) {
  const MatchingRule& r = rule(name);
  REQUIRE(static_cast<bool>(r.normalize_piece));
  std::string nvalue;
  REQUIRE(r.normalize(value, nvalue));
  std::string ninitial;
  std::string nfinal;
  if (!initial.empty()) {
    REQUIRE(r.normalize_piece(initial, SubstringPosition::kInitial, ninitial));
  }
  if (!final.empty()) {
    REQUIRE(r.normalize_piece(final, SubstringPosition::kFinal, nfinal));
  }
  std::vector<std::string> nany;
  for (std::string_view piece : any) {
    nany.emplace_back();
    REQUIRE(r.normalize_piece(piece, SubstringPosition::kAny, nany.back()));
  }
  return substrings_match(nvalue, ninitial, nany, nfinal);
}

TEST_CASE("MatchingRule: lookup by name or OID") {
  CHECK(find_matching_rule("caseIgnoreMatch") == find_matching_rule("2.5.13.2"));
  CHECK(find_matching_rule("CASEIGNOREMATCH") == find_matching_rule("2.5.13.2"));
  CHECK(find_matching_rule("caseignorematch")->oid == "2.5.13.2");
  CHECK(find_matching_rule("2.5.13.99") == nullptr);
  CHECK(find_matching_rule("noSuchMatch") == nullptr);
  CHECK(find_matching_rule("") == nullptr);
  CHECK(find_matching_rule("1.3.6.1.4.1.4203.1.2.1")->name == "caseExactIA5SubstringsMatch");
  CHECK(find_matching_rule("uuidOrderingMatch")->use == MatchingRuleUse::kOrdering);
}

TEST_CASE("MatchingRule: the table is consistent") {
  std::set<std::string_view> oids;
  std::set<std::string> names;
  for (const MatchingRule& r : all_matching_rules()) {
    INFO("rule: ", std::string(r.name));
    CHECK(oids.insert(r.oid).second);
    std::string lower;
    for (char c : r.name) {
      lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    CHECK(names.insert(lower).second);
    CHECK(find_matching_rule(r.oid) == &r);
    CHECK(find_matching_rule(r.name) == &r);
    CHECK(find_syntax(r.syntax_oid) != nullptr);
    CHECK(static_cast<bool>(r.normalize));
    const bool has_piece = r.normalize_piece != nullptr;
    CHECK(has_piece == (r.use == MatchingRuleUse::kSubstrings));
  }
  CHECK(all_matching_rules().size() >= 33);
}

TEST_CASE("MatchingRule: caseIgnoreMatch") {
  CHECK(equal("caseIgnoreMatch", "Babs Jensen", "  babs   JENSEN "));
  CHECK(equal("caseIgnoreMatch", "Straße", "STRASSE"));
  CHECK(equal("caseIgnoreMatch", "\uFB01sh", "FISH"));
  CHECK(equal("caseIgnoreMatch", "Soft\u00ADware", "software"));
  CHECK(equal("caseIgnoreMatch", "ΣΊΣΥΦΟΣ", "σίσυφος"));
  CHECK_FALSE(equal("caseIgnoreMatch", "Babs Jensen", "BabsJensen"));
  CHECK_FALSE(equal("caseIgnoreMatch", "\u0131", "i"));
  CHECK(norm("caseIgnoreMatch", "User4711") == "user4711");
  CHECK_FALSE(accepts("caseIgnoreMatch", "bad\xFF"));
  CHECK_FALSE(accepts("caseIgnoreMatch", "\uE000"));
}

TEST_CASE("MatchingRule: caseIgnoreOrderingMatch") {
  check_ascending("caseIgnoreOrderingMatch", {"", "a", "A b", "ab", "b", "Ba", "z", "é"});
  CHECK(equal("caseIgnoreOrderingMatch", "ABC", "abc"));
}

TEST_CASE("MatchingRule: caseIgnoreSubstringsMatch") {
  const auto sub = [](std::string_view value, std::string_view initial,
                      std::vector<std::string_view> any, std::string_view final) {
    return substrings("caseIgnoreSubstringsMatch", value, initial, std::move(any), final);
  };
  CHECK(sub("Babs Jensen", "babs", {}, ""));
  CHECK(sub("Babs Jensen", "", {}, "JENSEN"));
  CHECK(sub("Babs Jensen", "b", {"s j"}, "n"));
  CHECK(sub("Babs Jensen", "", {"BS", "EN"}, ""));
  CHECK_FALSE(sub("Babs Jensen", "jensen", {}, ""));
  CHECK_FALSE(sub("Babs Jensen", "", {"en", "bs"}, ""));
  CHECK(sub("Straße", "STRA", {}, "SSE"));
  SUBCASE("spaces at piece edges") {
    CHECK(sub("foo bar", "foo ", {}, ""));  // foo *
    CHECK(sub("foo bar", "", {}, " bar"));  // * bar
    CHECK(sub("foo bar", "foo ", {}, " bar"));
    CHECK(sub("foo    bar", "foo ", {}, "bar"));
    CHECK(sub("foo", "", {"o "}, ""));  // trailing spaces of a value are insignificant
    CHECK(sub("foo", "", {" f"}, ""));
    CHECK(sub("foo bar", "", {"o  b"}, ""));  // inner runs of the piece collapse as well
    CHECK_FALSE(sub("foobar", "", {"o b"}, ""));
    CHECK_FALSE(sub("foo bar", "foob", {}, ""));
    CHECK_FALSE(sub("foo", "foo", {}, "foo"));  // initial and final may not overlap
  }
  SUBCASE("pieces of only spaces match anything") {
    CHECK(sub("foo", "  ", {}, ""));
    CHECK(sub("foo", "", {" "}, ""));
    CHECK(sub("foo", "", {}, "   "));
    CHECK(sub("   ", " ", {}, " "));
  }
}

TEST_CASE("MatchingRule: caseExactMatch and its ordering and substrings rules") {
  CHECK(equal("caseExactMatch", "Babs  Jensen ", "Babs Jensen"));
  CHECK_FALSE(equal("caseExactMatch", "Babs Jensen", "babs jensen"));
  CHECK(equal("caseExactMatch", "\uFF21", "A"));
  check_ascending("caseExactOrderingMatch", {"A", "B", "a", "b"});
  CHECK(substrings("caseExactSubstringsMatch", "Babs Jensen", "Babs", {}, "Jensen"));
  CHECK_FALSE(substrings("caseExactSubstringsMatch", "Babs Jensen", "babs", {}, ""));
}

TEST_CASE("MatchingRule: numericString rules") {
  CHECK(equal("numericStringMatch", "123 456", "123456"));
  CHECK(equal("numericStringMatch", " 1 2 3 ", "123"));
  CHECK_FALSE(equal("numericStringMatch", "123", "1234"));
  CHECK_FALSE(accepts("numericStringMatch", "12a"));
  CHECK_FALSE(accepts("numericStringMatch", ""));
  check_ascending("numericStringOrderingMatch", {"1", "12", "2", "9 9"});
  CHECK(substrings("numericStringSubstringsMatch", "123 456", "12", {"3 4"}, "56"));
  CHECK_FALSE(substrings("numericStringSubstringsMatch", "123456", "2", {}, ""));
}

TEST_CASE("MatchingRule: caseIgnoreListMatch") {
  CHECK(equal("caseIgnoreListMatch", "1 Main St$Springfield", "1  MAIN st $springfield"));
  CHECK(equal("caseIgnoreListMatch", "a\\24b$c", "A\\24B$C"));
  CHECK_FALSE(equal("caseIgnoreListMatch", "a$b", "ab"));
  CHECK_FALSE(equal("caseIgnoreListMatch", "a\\24b", "a$b"));
  CHECK(norm("caseIgnoreListMatch", "A\\24B$C\\5cD") == "a\\24b$c\\5Cd");
  CHECK_FALSE(accepts("caseIgnoreListMatch", "a\\41"));
  const auto sub = [](std::string_view value, std::string_view initial,
                      std::vector<std::string_view> any, std::string_view final) {
    return substrings("caseIgnoreListSubstringsMatch", value, initial, std::move(any), final);
  };
  CHECK(sub("1 Main St$Springfield", "1 main", {}, "field"));
  CHECK(sub("1 Main St$Springfield", "", {"st", "spring"}, ""));
  CHECK_FALSE(sub("1 Main St$Springfield", "", {"stspring"}, ""));  // no match across lines
  CHECK_FALSE(sub("1 Main St$Springfield", "", {"st spring"}, ""));
}

TEST_CASE("MatchingRule: booleanMatch") {
  CHECK(norm("booleanMatch", "TRUE") == "TRUE");
  CHECK_FALSE(equal("booleanMatch", "TRUE", "FALSE"));
  CHECK_FALSE(accepts("booleanMatch", "true"));
  CHECK_FALSE(accepts("booleanMatch", "yes"));
  CHECK_FALSE(accepts("booleanMatch", ""));
}

TEST_CASE("MatchingRule: integerMatch and integerOrderingMatch") {
  CHECK(equal("integerMatch", "4711", "4711"));
  CHECK(equal("integerMatch", "007", "7"));
  CHECK(equal("integerMatch", "-0", "0"));
  CHECK_FALSE(equal("integerMatch", "12", "-12"));
  CHECK(norm("integerMatch", "0") == "0");
  CHECK(norm("integerMatch", "4711") == "1144711");
  CHECK(norm("integerMatch", "-4711") == "-855288");
  for (std::string_view bad : {""sv, "-"sv, "abc"sv, "1.5"sv, "+1"sv, " 1"sv, "1 "sv, "--1"sv}) {
    INFO("value: ", std::string(bad));
    CHECK_FALSE(accepts("integerMatch", bad));
  }
  check_ascending("integerOrderingMatch", {"-123456789012345678901234567890",
                                           "-10000000000",
                                           "-1000",
                                           "-999",
                                           "-100",
                                           "-10",
                                           "-9",
                                           "-2",
                                           "-1",
                                           "0",
                                           "1",
                                           "2",
                                           "9",
                                           "10",
                                           "99",
                                           "100",
                                           "999",
                                           "1000",
                                           "10000000000",
                                           "123456789012345678901234567890"});
}

TEST_CASE("MatchingRule: bitStringMatch") {
  CHECK(equal("bitStringMatch", "'0101'B", "'0101'B"));
  CHECK_FALSE(equal("bitStringMatch", "'0101'B", "'01010'B"));
  CHECK(accepts("bitStringMatch", "''B"));
  CHECK_FALSE(accepts("bitStringMatch", "'012'B"));
  CHECK_FALSE(accepts("bitStringMatch", "0101"));
}

TEST_CASE("MatchingRule: octetString rules compare bytes") {
  CHECK(equal("octetStringMatch", "\x00\xFF"sv, "\x00\xFF"sv));
  CHECK_FALSE(equal("octetStringMatch", "abc", "ABC"));
  check_ascending("octetStringOrderingMatch",
                  {""sv, "\x00"sv, "\x01"sv, "A"sv, "a"sv, "\x80"sv, "\xFF"sv, "\xFF\x00"sv});
}

TEST_CASE("MatchingRule: telephoneNumber rules ignore spaces and hyphens") {
  CHECK(equal("telephoneNumberMatch", "+1 555-123-4567", "+15551234567"));
  CHECK(equal("telephoneNumberMatch", "+1 555 EXT", "+1555ext"));
  CHECK_FALSE(equal("telephoneNumberMatch", "+1 555 1234", "+1 555 1235"));
  CHECK(substrings("telephoneNumberSubstringsMatch", "+1 555-123-4567", "+1555", {"1-2"}, "45 67"));
  CHECK_FALSE(substrings("telephoneNumberSubstringsMatch", "+1 555-123-4567", "555", {}, ""));
}

TEST_CASE("MatchingRule: distinguishedNameMatch") {
  CHECK(equal("distinguishedNameMatch", "UID=jdoe, OU=People,DC=Example,DC=com",
              "uid=JDOE,ou=people,dc=example,dc=com"));
  CHECK(equal("distinguishedNameMatch", "cn=Babs   Jensen,o=x", "cn=babs jensen,o=x"));
  CHECK(equal("distinguishedNameMatch", "cn=Straße,o=x", "CN=STRASSE,O=X"));
  CHECK(equal("distinguishedNameMatch", "cn=a+sn=b,o=x", "sn=B+cn=A,o=x"));
  CHECK(equal("distinguishedNameMatch", "", ""));
  CHECK_FALSE(equal("distinguishedNameMatch", "cn=a,o=x", "cn=a,o=y"));
  CHECK_FALSE(equal("distinguishedNameMatch", "cn=a,o=x", "o=x"));
  CHECK_FALSE(accepts("distinguishedNameMatch", "not a dn"));
  CHECK_FALSE(accepts("distinguishedNameMatch", "cn=a,,o=x"));
  const std::string once = norm("distinguishedNameMatch", "CN=Grüße  Aus, O=Köln");
  CHECK(once == "cn=grüsse aus,o=köln");
  CHECK(norm("distinguishedNameMatch", once) == once);
}

TEST_CASE("MatchingRule: uniqueMemberMatch") {
  CHECK(equal("uniqueMemberMatch", "CN=Babs,O=X#'0101'B", "cn=babs,o=x#'0101'B"));
  CHECK(equal("uniqueMemberMatch", "cn=Babs,o=x", "CN=BABS, O=X"));
  CHECK_FALSE(equal("uniqueMemberMatch", "cn=babs,o=x#'0101'B", "cn=babs,o=x"));
  CHECK_FALSE(equal("uniqueMemberMatch", "cn=babs,o=x#'0101'B", "cn=babs,o=x#'0110'B"));
  CHECK(norm("uniqueMemberMatch", "cn=A,o=X#'01'B") == "cn=a,o=x#'01'B");
  CHECK(norm("uniqueMemberMatch", "cn=x#'01'B") == "cn=x#'01'B");
  CHECK(norm("uniqueMemberMatch", "cn=x\\#'01'B") == "cn=x#'01'b");  // an escaped '#': all DN
  CHECK_FALSE(accepts("uniqueMemberMatch", "garbage#'01'B"));
}

TEST_CASE("MatchingRule: generalizedTimeMatch normalizes to UTC") {
  CHECK(norm("generalizedTimeMatch", "20240102030405Z") == "20240102030405");
  CHECK(norm("generalizedTimeMatch", "2024010203Z") == "20240102030000");
  CHECK(norm("generalizedTimeMatch", "202401020304Z") == "20240102030400");
  CHECK(norm("generalizedTimeMatch", "20240102030405.500Z") == "20240102030405.5");
  CHECK(norm("generalizedTimeMatch", "20240102030405,000Z") == "20240102030405");
  CHECK(norm("generalizedTimeMatch", "2024010203.5Z") == "20240102033000");
  CHECK(norm("generalizedTimeMatch", "2024010203.1234Z") == "20240102030724.24");
  CHECK(norm("generalizedTimeMatch", "202401020304.25Z") == "20240102030415");
  CHECK(norm("generalizedTimeMatch", "20240102030405+0130") == "20240102013405");
  CHECK(norm("generalizedTimeMatch", "20240102030405-02") == "20240102050405");
  CHECK(norm("generalizedTimeMatch", "20161231235960Z") == "20161231235960");  // leap second
  SUBCASE("offsets cross day, month and year boundaries") {
    CHECK(norm("generalizedTimeMatch", "20240101003000+0100") == "20231231233000");
    CHECK(norm("generalizedTimeMatch", "20231231233000-0100") == "20240101003000");
    CHECK(norm("generalizedTimeMatch", "20240301000000+0100") == "20240229230000");
    CHECK(norm("generalizedTimeMatch", "20230301000000+0100") == "20230228230000");
  }
  CHECK(equal("generalizedTimeMatch", "20240102030405Z", "20240102040405+0100"));
  CHECK(equal("generalizedTimeMatch", "199412161032Z", "199412160532-0500"));
  CHECK_FALSE(equal("generalizedTimeMatch", "20240102030405Z", "20240102030406Z"));
  for (std::string_view bad :
       {""sv, "2024"sv, "20240102"sv, "2024010203"sv, "20241302030405Z"sv, "20240230030405Z"sv,
        "20230229000000Z"sv, "20240102240000Z"sv, "20240102036000Z"sv, "20240102030461Z"sv,
        "20240102030405.Z"sv, "20240102030405+24"sv, "20240102030405+0160"sv, "20240102030405Zx"sv,
        "20240102030405 Z"sv, "2024010203040Z"sv, "00000101000000+0100"sv,
        "99991231235959-0100"sv}) {
    INFO("value: ", std::string(bad));
    CHECK_FALSE(accepts("generalizedTimeMatch", bad));
  }
}

TEST_CASE("MatchingRule: generalizedTimeOrderingMatch is chronological") {
  check_ascending("generalizedTimeOrderingMatch",
                  {"20000101000000+0100", "19991231235959Z", "20000101000000Z",
                   "20000101000000.001Z", "20000101000000.01Z", "20000101000000.5Z",
                   "20000101000000.55Z", "20000101000001Z", "200001010000.99Z", "2000010100.5Z",
                   "20000101003000.5Z", "20000101010000Z", "20161231235960Z", "20170101000000Z"});
}

TEST_CASE("MatchingRule: first-component rules") {
  SUBCASE("integerFirstComponentMatch") {
    CHECK(equal("integerFirstComponentMatch", "( 1 NAME 'rule' FORM x )", "1"));
    CHECK(equal("integerFirstComponentMatch", "(42 FORM x)", "42"));
    CHECK_FALSE(equal("integerFirstComponentMatch", "( 1 FORM x )", "2"));
    CHECK_FALSE(accepts("integerFirstComponentMatch", "( x )"));
  }
  SUBCASE("objectIdentifierFirstComponentMatch") {
    CHECK(
        equal("objectIdentifierFirstComponentMatch", "( 2.5.4.3 NAME 'cn' SUP name )", "2.5.4.3"));
    CHECK_FALSE(equal("objectIdentifierFirstComponentMatch", "( 2.5.4.3 NAME 'cn' )", "2.5.4.4"));
    CHECK_FALSE(accepts("objectIdentifierFirstComponentMatch", "( 'x y' )"));
  }
  SUBCASE("directoryStringFirstComponentMatch") {
    CHECK(equal("directoryStringFirstComponentMatch", "( 'Babs  Jensen' 2 )", "babs jensen"));
    CHECK(equal("directoryStringFirstComponentMatch", "( first second )", "FIRST"));
    CHECK_FALSE(equal("directoryStringFirstComponentMatch", "( first second )", "second"));
  }
}

TEST_CASE("MatchingRule: objectIdentifierMatch") {
  CHECK(equal("objectIdentifierMatch", "inetOrgPerson", "INETORGPERSON"));
  CHECK(norm("objectIdentifierMatch", "Person") == "person");
  CHECK(norm("objectIdentifierMatch", "2.5.6.6") == "2.5.6.6");
  CHECK_FALSE(equal("objectIdentifierMatch", "2.5.6.6", "2.5.6.7"));
  // Names and OIDs need the loaded schema to be matched with each other.
  CHECK_FALSE(equal("objectIdentifierMatch", "person", "2.5.6.6"));
  for (std::string_view bad :
       {""sv, "1"sv, "1.02"sv, "1..2"sv, "1.2."sv, "-x"sv, "a_b"sv, "2x"sv, "a b"sv}) {
    INFO("value: ", std::string(bad));
    CHECK_FALSE(accepts("objectIdentifierMatch", bad));
  }
}

TEST_CASE("MatchingRule: IA5 rules") {
  CHECK(equal("caseIgnoreIA5Match", "User@Example.COM", "user@example.com"));
  CHECK_FALSE(equal("caseExactIA5Match", "User@Example.COM", "user@example.com"));
  CHECK(equal("caseExactIA5Match", " a  b ", "a b"));
  CHECK_FALSE(accepts("caseIgnoreIA5Match", "caf\u00E9"));
  CHECK_FALSE(accepts("caseExactIA5Match", "caf\u00E9"));
  CHECK(substrings("caseIgnoreIA5SubstringsMatch", "User@Example.COM", "USER", {"@"}, ".com"));
  CHECK(substrings("caseExactIA5SubstringsMatch", "/home/jdoe", "/home/", {}, ""));
  CHECK_FALSE(substrings("caseExactIA5SubstringsMatch", "/home/jdoe", "/HOME/", {}, ""));
  std::string out;
  CHECK_FALSE(
      rule("caseIgnoreIA5SubstringsMatch").normalize_piece("\u00E9", SubstringPosition::kAny, out));
}

TEST_CASE("MatchingRule: uuid rules") {
  CHECK(equal("uuidMatch", "597AE2F6-16A6-1027-98F4-ABCDEFABCDEF",
              "597ae2f6-16a6-1027-98f4-abcdefabcdef"));
  CHECK_FALSE(accepts("uuidMatch", "597ae2f616a6102798f4abcdefabcdef"));
  CHECK_FALSE(accepts("uuidMatch", "597ae2f6-16a6-1027-98f4-abcdefabcdeg"));
  check_ascending("uuidOrderingMatch",
                  {"00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-00000000000A",
                   "9fffffff-0000-0000-0000-000000000000", "A0000000-0000-0000-0000-000000000000",
                   "ffffffff-ffff-ffff-ffff-ffffffffffff"});
}

TEST_CASE("MatchingRule: authPasswordExactMatch") {
  CHECK(equal("authPasswordExactMatch", "MD5 $ dZ3j $ Xb6Z", "MD5$dZ3j$Xb6Z"));
  CHECK_FALSE(equal("authPasswordExactMatch", "MD5$dZ3j$Xb6Z", "MD5$dZ3j$xb6Z"));
  CHECK_FALSE(accepts("authPasswordExactMatch", "md5$a$b"));  // schemes are upper case
  CHECK_FALSE(accepts("authPasswordExactMatch", "MD5$a"));
}

TEST_CASE("MatchingRule: substrings_match") {
  const std::vector<std::string> none;
  const std::vector<std::string> bc_d = {"bc", "d"};
  const std::vector<std::string> d_bc = {"d", "bc"};
  const std::vector<std::string> empty_piece = {""};
  CHECK(substrings_match("abcde", "a", none, "e"));
  CHECK(substrings_match("abcde", "", bc_d, ""));
  CHECK_FALSE(substrings_match("abcde", "", d_bc, ""));
  CHECK(substrings_match("abcde", "ab", bc_d, "") == false);  // "bc" may not reuse "b"
  CHECK(substrings_match("abcde", "", empty_piece, ""));
  CHECK_FALSE(substrings_match("aba", "ab", none, "ba"));
  CHECK(substrings_match("abba", "ab", none, "ba"));
  CHECK_FALSE(substrings_match("abc", "", bc_d, ""));
  CHECK_FALSE(substrings_match("", "a", none, ""));
}

}  // namespace
}  // namespace numadir::schema
