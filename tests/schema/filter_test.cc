// tests/schema/filter_test.cc: Filter model, builder, storage, RFC 4515 parser and printer.
//
// Thread contract: single-threaded doctest cases.
#include "schema/filter.h"

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace numadir::schema {
namespace {

using namespace std::string_view_literals;

Filter parse_filter_ok(std::string_view text, const FilterParseLimits& limits = {}) {
  Result<Filter> parsed = Filter::parse(text, limits);
  INFO("text: ", std::string(text));
  REQUIRE_MESSAGE(parsed.ok(), parsed.status().to_string());
  return std::move(*parsed);
}

struct Want {
  FilterKind kind;
  std::uint32_t end;
  std::string_view attribute = {};
  std::string_view value = {};
  std::string_view matching_rule = {};
  bool dn_attributes = false;
};

void check_nodes(const Filter& filter, std::initializer_list<Want> want) {
  REQUIRE(filter.size() == want.size());
  std::uint32_t i = 0;
  for (const Want& w : want) {
    const FilterNode& n = filter.node(i);
    INFO("node ", i);
    CHECK(filter_kind_name(n.kind) == filter_kind_name(w.kind));
    CHECK(n.end == w.end);
    CHECK(n.attribute == w.attribute);
    CHECK(n.value == w.value);
    CHECK(n.matching_rule == w.matching_rule);
    CHECK(n.dn_attributes == w.dn_attributes);
    ++i;
  }
}

// Checks that `text` fails with `code` and a message "filter: offset <offset>: ...".
void check_rejects(std::string_view text, StatusCode code, std::size_t offset,
                   const FilterParseLimits& limits = {}) {
  Result<Filter> parsed = Filter::parse(text, limits);
  INFO("text: ", std::string(text));
  REQUIRE_FALSE(parsed.ok());
  INFO("status: ", parsed.status().to_string());
  CHECK(parsed.status().code() == code);
  const std::string prefix = "filter: offset " + std::to_string(offset) + ": ";
  CHECK(parsed.status().message().rfind(prefix, 0) == 0);
}

std::string nested(std::string_view op, std::size_t depth, std::string_view leaf) {
  std::string text;
  for (std::size_t i = 0; i < depth; ++i) {
    text += '(';
    text += op;
  }
  text += leaf;
  text.append(depth, ')');
  return text;
}

TEST_CASE("Filter: filter_kind_name names every kind") {
  CHECK(filter_kind_name(FilterKind::kAnd) == "and");
  CHECK(filter_kind_name(FilterKind::kOr) == "or");
  CHECK(filter_kind_name(FilterKind::kNot) == "not");
  CHECK(filter_kind_name(FilterKind::kEquality) == "equality");
  CHECK(filter_kind_name(FilterKind::kSubstrings) == "substrings");
  CHECK(filter_kind_name(FilterKind::kGreaterOrEqual) == "greater_or_equal");
  CHECK(filter_kind_name(FilterKind::kLessOrEqual) == "less_or_equal");
  CHECK(filter_kind_name(FilterKind::kPresent) == "present");
  CHECK(filter_kind_name(FilterKind::kApprox) == "approx");
  CHECK(filter_kind_name(FilterKind::kExtensible) == "extensible");
  CHECK(filter_kind_name(FilterKind::kSubInitial) == "sub_initial");
  CHECK(filter_kind_name(FilterKind::kSubAny) == "sub_any");
  CHECK(filter_kind_name(FilterKind::kSubFinal) == "sub_final");
}

TEST_CASE("Filter: parses every simple item type") {
  SUBCASE("equality") {
    check_nodes(parse_filter_ok("(uid=jdoe)"), {{FilterKind::kEquality, 1, "uid", "jdoe"}});
  }
  SUBCASE("equality with an empty value") {
    check_nodes(parse_filter_ok("(cn=)"), {{FilterKind::kEquality, 1, "cn", ""}});
  }
  SUBCASE("equality keeps spaces and '=' in the value") {
    check_nodes(parse_filter_ok("(cn= a=b )"), {{FilterKind::kEquality, 1, "cn", " a=b "}});
  }
  SUBCASE("approx") {
    check_nodes(parse_filter_ok("(sn~=smith)"), {{FilterKind::kApprox, 1, "sn", "smith"}});
  }
  SUBCASE("greater or equal") {
    check_nodes(parse_filter_ok("(uidNumber>=1000)"),
                {{FilterKind::kGreaterOrEqual, 1, "uidNumber", "1000"}});
  }
  SUBCASE("less or equal") {
    check_nodes(parse_filter_ok("(uidNumber<=99)"),
                {{FilterKind::kLessOrEqual, 1, "uidNumber", "99"}});
  }
  SUBCASE("present") {
    check_nodes(parse_filter_ok("(objectClass=*)"), {{FilterKind::kPresent, 1, "objectClass"}});
  }
}

TEST_CASE("Filter: substrings keep their pieces as child nodes") {
  SUBCASE("initial") {
    check_nodes(parse_filter_ok("(cn=ab*)"),
                {{FilterKind::kSubstrings, 2, "cn"}, {FilterKind::kSubInitial, 2, "", "ab"}});
  }
  SUBCASE("final") {
    check_nodes(parse_filter_ok("(cn=*ef)"),
                {{FilterKind::kSubstrings, 2, "cn"}, {FilterKind::kSubFinal, 2, "", "ef"}});
  }
  SUBCASE("any") {
    check_nodes(parse_filter_ok("(cn=*cd*)"),
                {{FilterKind::kSubstrings, 2, "cn"}, {FilterKind::kSubAny, 2, "", "cd"}});
  }
  SUBCASE("initial, two any and final") {
    check_nodes(parse_filter_ok("(cn=ab*cd*ef*gh)"), {{FilterKind::kSubstrings, 5, "cn"},
                                                      {FilterKind::kSubInitial, 2, "", "ab"},
                                                      {FilterKind::kSubAny, 3, "", "cd"},
                                                      {FilterKind::kSubAny, 4, "", "ef"},
                                                      {FilterKind::kSubFinal, 5, "", "gh"}});
  }
  SUBCASE("initial and final") {
    check_nodes(parse_filter_ok("(cn=a*z)"), {{FilterKind::kSubstrings, 3, "cn"},
                                              {FilterKind::kSubInitial, 2, "", "a"},
                                              {FilterKind::kSubFinal, 3, "", "z"}});
  }
  SUBCASE("an escaped '*' is part of a piece, not a separator") {
    check_nodes(parse_filter_ok("(cn=a\\2a*b)"), {{FilterKind::kSubstrings, 3, "cn"},
                                                  {FilterKind::kSubInitial, 2, "", "a*"},
                                                  {FilterKind::kSubFinal, 3, "", "b"}});
  }
}

TEST_CASE("Filter: and/or/not nest in preorder with end indices") {
  const Filter f = parse_filter_ok("(&(a=b)(|(c=d)(!(e=f)))(g=h*i))");
  // 0 and [0,9)  1 a=b  2 or [2,6)  3 c=d  4 not [4,6)  5 e=f  6 substrings [6,9)  7 h  8 i
  check_nodes(f, {{FilterKind::kAnd, 9},
                  {FilterKind::kEquality, 2, "a", "b"},
                  {FilterKind::kOr, 6},
                  {FilterKind::kEquality, 4, "c", "d"},
                  {FilterKind::kNot, 6},
                  {FilterKind::kEquality, 6, "e", "f"},
                  {FilterKind::kSubstrings, 9, "g"},
                  {FilterKind::kSubInitial, 8, "", "h"},
                  {FilterKind::kSubFinal, 9, "", "i"}});
  // Walking siblings with `end`: the and's children start at 1, 2 and 6.
  std::vector<std::uint32_t> children;
  for (std::uint32_t i = 1; i < f.node(0).end; i = f.node(i).end) {
    children.push_back(i);
  }
  CHECK(children == std::vector<std::uint32_t>{1, 2, 6});
}

TEST_CASE("Filter: empty and/or are accepted (RFC 4526 absolute true/false)") {
  SUBCASE("and") { check_nodes(parse_filter_ok("(&)"), {{FilterKind::kAnd, 1}}); }
  SUBCASE("or") { check_nodes(parse_filter_ok("(|)"), {{FilterKind::kOr, 1}}); }
  SUBCASE("nested") {
    check_nodes(
        parse_filter_ok("(|(&)(!(|)))"),
        {{FilterKind::kOr, 4}, {FilterKind::kAnd, 2}, {FilterKind::kNot, 4}, {FilterKind::kOr, 4}});
  }
}

TEST_CASE("Filter: escapes are decoded into the value") {
  SUBCASE("star") {
    check_nodes(parse_filter_ok("(cn=\\2a)"), {{FilterKind::kEquality, 1, "cn", "*"}});
  }
  SUBCASE("parentheses") {
    check_nodes(parse_filter_ok("(cn=\\28x\\29)"), {{FilterKind::kEquality, 1, "cn", "(x)"}});
  }
  SUBCASE("backslash") {
    check_nodes(parse_filter_ok("(cn=a\\5cb)"), {{FilterKind::kEquality, 1, "cn", "a\\b"}});
  }
  SUBCASE("NUL") {
    check_nodes(parse_filter_ok("(cn=a\\00b)"), {{FilterKind::kEquality, 1, "cn", "a\0b"sv}});
  }
  SUBCASE("UTF-8 bytes") {
    check_nodes(parse_filter_ok("(sn=Lu\\c3\\a9)"),
                {{FilterKind::kEquality, 1, "sn", "Lu\xc3\xa9"}});
  }
  SUBCASE("upper-case hex digits") {
    check_nodes(parse_filter_ok("(cn=\\C3\\A9\\2A)"),
                {{FilterKind::kEquality, 1, "cn", "\xc3\xa9*"}});
  }
  SUBCASE("in every value position") {
    check_nodes(parse_filter_ok("(|(a~=\\28)(b>=\\29)(c<=\\5c)(d:=\\2a))"),
                {{FilterKind::kOr, 5},
                 {FilterKind::kApprox, 2, "a", "("},
                 {FilterKind::kGreaterOrEqual, 3, "b", ")"},
                 {FilterKind::kLessOrEqual, 4, "c", "\\"},
                 {FilterKind::kExtensible, 5, "d", "*"}});
  }
}

TEST_CASE("Filter: raw non-special bytes pass through as they are") {
  SUBCASE("UTF-8") {
    check_nodes(parse_filter_ok("(sn=Lu\xc3\xa9 \xe2\x82\xac)"),
                {{FilterKind::kEquality, 1, "sn", "Lu\xc3\xa9 \xe2\x82\xac"}});
  }
  SUBCASE("bytes that are not UTF-8, and controls") {
    check_nodes(parse_filter_ok("(sn=\xff\x01\x7f)"),
                {{FilterKind::kEquality, 1, "sn", "\xff\x01\x7f"}});
  }
}

TEST_CASE("Filter: attribute descriptions") {
  SUBCASE("one option") {
    check_nodes(parse_filter_ok("(cn;lang-en=Bob)"),
                {{FilterKind::kEquality, 1, "cn;lang-en", "Bob"}});
  }
  SUBCASE("several options") {
    check_nodes(parse_filter_ok("(cn;lang-en;x-2=*)"),
                {{FilterKind::kPresent, 1, "cn;lang-en;x-2"}});
  }
  SUBCASE("numeric OID") {
    check_nodes(parse_filter_ok("(2.5.4.3=x)"), {{FilterKind::kEquality, 1, "2.5.4.3", "x"}});
  }
  SUBCASE("numeric OID with a zero arc and an option") {
    check_nodes(parse_filter_ok("(0.10.0;binary>=x)"),
                {{FilterKind::kGreaterOrEqual, 1, "0.10.0;binary", "x"}});
  }
  SUBCASE("descr with digits and hyphens; case is kept") {
    check_nodes(parse_filter_ok("(x-Attr-2=v)"), {{FilterKind::kEquality, 1, "x-Attr-2", "v"}});
  }
}

TEST_CASE("Filter: extensible match variants") {
  SUBCASE("attribute and rule") {
    check_nodes(parse_filter_ok("(cn:2.5.13.5:=Fred)"),
                {{FilterKind::kExtensible, 1, "cn", "Fred", "2.5.13.5"}});
  }
  SUBCASE("attribute, dn and rule") {
    check_nodes(parse_filter_ok("(cn:dn:caseExactMatch:=x)"),
                {{FilterKind::kExtensible, 1, "cn", "x", "caseExactMatch", true}});
  }
  SUBCASE("attribute only") {
    check_nodes(parse_filter_ok("(o:=Acme)"), {{FilterKind::kExtensible, 1, "o", "Acme"}});
  }
  SUBCASE("attribute and dn; 'dn' is case-insensitive") {
    check_nodes(parse_filter_ok("(ou:DN:=People)"),
                {{FilterKind::kExtensible, 1, "ou", "People", "", true}});
  }
  SUBCASE("rule only") {
    check_nodes(parse_filter_ok("(:caseIgnoreMatch:=x)"),
                {{FilterKind::kExtensible, 1, "", "x", "caseIgnoreMatch"}});
  }
  SUBCASE("dn and rule without attribute") {
    check_nodes(parse_filter_ok("(:dn:2.4.6.8.10:=Dino)"),
                {{FilterKind::kExtensible, 1, "", "Dino", "2.4.6.8.10", true}});
  }
  SUBCASE("a rule named dn after :dn") {
    check_nodes(parse_filter_ok("(cn:dn:dn:=x)"),
                {{FilterKind::kExtensible, 1, "cn", "x", "dn", true}});
  }
  SUBCASE("empty value and an attribute with options") {
    check_nodes(parse_filter_ok("(cn;x:1.2:=)"), {{FilterKind::kExtensible, 1, "cn;x", "", "1.2"}});
  }
}

TEST_CASE("Filter: a bare item without parentheses is accepted at top level") {
  SUBCASE("equality") {
    check_nodes(parse_filter_ok("uid=jdoe"), {{FilterKind::kEquality, 1, "uid", "jdoe"}});
  }
  SUBCASE("present") {
    check_nodes(parse_filter_ok("objectClass=*"), {{FilterKind::kPresent, 1, "objectClass"}});
  }
  SUBCASE("substrings") {
    check_nodes(parse_filter_ok("cn=a*b"), {{FilterKind::kSubstrings, 3, "cn"},
                                            {FilterKind::kSubInitial, 2, "", "a"},
                                            {FilterKind::kSubFinal, 3, "", "b"}});
  }
  SUBCASE("extensible") {
    check_nodes(parse_filter_ok(":dn:rule:=x"),
                {{FilterKind::kExtensible, 1, "", "x", "rule", true}});
  }
  SUBCASE("printing adds the parentheses") {
    CHECK(parse_filter_ok("uid=jdoe").to_string() == "(uid=jdoe)");
  }
  SUBCASE("and/or/not need parentheses") {
    check_rejects("&(a=b)", StatusCode::kMalformed, 0);
    check_rejects("!(a=b)", StatusCode::kMalformed, 0);
  }
  SUBCASE("a ')' in a bare value") { check_rejects("uid=jdoe)", StatusCode::kMalformed, 8); }
}

TEST_CASE("Filter: to_string prints the canonical RFC 4515 form") {
  const char* const cases[][2] = {
      {"(&(a=b)(c=d))", "(&(a=b)(c=d))"},
      {"(a=*)", "(a=*)"},
      {"(cn=ab*cd*ef)", "(cn=ab*cd*ef)"},
      {"(cn=*cd*)", "(cn=*cd*)"},
      {"(cn=ab*)", "(cn=ab*)"},
      {"(cn=*ef)", "(cn=*ef)"},
      {"(cn:dn:2.5.13.5:=x)", "(cn:dn:2.5.13.5:=x)"},
      {"(:DN:caseExactMatch:=x)", "(:dn:caseExactMatch:=x)"},
      {"(o:=x)", "(o:=x)"},
      {"(&)", "(&)"},
      {"(|)", "(|)"},
      {"(!(a~=b))", "(!(a~=b))"},
      {"(|(a>=1)(b<=2))", "(|(a>=1)(b<=2))"},
      {"(cn=\\C3\\A9)", "(cn=\xc3\xa9)"},
      {"(cn=\\41)", "(cn=A)"},
      {"(&(|(&))(!(|)))", "(&(|(&))(!(|)))"},
  };
  for (const auto& c : cases) {
    INFO("input: ", c[0]);
    CHECK(parse_filter_ok(c[0]).to_string() == c[1]);
  }
}

TEST_CASE("Filter: to_string escapes what RFC 4515 requires in lower-case hex") {
  SUBCASE("specials") {
    CHECK(parse_filter_ok("(cn=\\2A\\28\\29\\5C\\00)").to_string() == "(cn=\\2a\\28\\29\\5c\\00)");
  }
  SUBCASE("controls and DEL") {
    CHECK(parse_filter_ok("(cn=\x01\x1f\x7f)").to_string() == "(cn=\\01\\1f\\7f)");
  }
  SUBCASE("invalid UTF-8: stray continuation, overlong, surrogate, truncated, above U+10FFFF") {
    CHECK(parse_filter_ok("(cn=\x80)").to_string() == "(cn=\\80)");
    CHECK(parse_filter_ok("(cn=\xc0\xaf)").to_string() == "(cn=\\c0\\af)");
    CHECK(parse_filter_ok("(cn=\xed\xa0\x80)").to_string() == "(cn=\\ed\\a0\\80)");
    CHECK(parse_filter_ok("(cn=\xe2\x82)").to_string() == "(cn=\\e2\\82)");
    CHECK(parse_filter_ok("(cn=\xf4\x90\x80\x80)").to_string() == "(cn=\\f4\\90\\80\\80)");
  }
  SUBCASE("valid UTF-8 of every length stays raw") {
    const std::string text = "(cn=\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf)";
    CHECK(parse_filter_ok(text).to_string() == text);
  }
  SUBCASE("substring pieces and extensible values") {
    CHECK(parse_filter_ok("(|(cn=\\2a*\\28*\\29)(cn:=\\5c))").to_string() ==
          "(|(cn=\\2a*\\28*\\29)(cn:=\\5c))");
  }
}

TEST_CASE("Filter: parse(to_string(f)) == f") {
  const char* const inputs[] = {
      "(uid=jdoe)",
      "uid=jdoe",
      "(&(objectClass=person)(|(uid=a)(mail=a@example.com))(!(cn=x*y*z)))",
      "(cn=\\2a\\28\\29\\5c\\00\\ff\\c3\\a9)",
      "(cn=\xc3\xa9\xff\xfe)",
      "(cn;lang-en:dn:2.5.13.5:=\\2a)",
      "(:dn:dn:=x)",
      "(&)",
      "(|(&)(!(|)))",
      "(a=*b*)",
      "(a>=)",
      "(a~= )",
  };
  for (const char* input : inputs) {
    INFO("input: ", input);
    const Filter f = parse_filter_ok(input);
    const std::string printed = f.to_string();
    const Filter again = parse_filter_ok(printed);
    CHECK(again == f);
    CHECK(again.to_string() == printed);
  }
}

TEST_CASE("Filter: the parsed Filter does not refer to the text") {
  std::string text = "(&(cn;x:dn:caseExactMatch:=ab)(sn=a*b*c)(uid=j\\64oe))";
  const Filter f = parse_filter_ok(text);
  const std::string printed = f.to_string();
  text.assign(text.size(), '#');
  CHECK(f.to_string() == printed);
  for (const FilterNode& n : f.nodes()) {
    for (std::string_view s : {n.attribute, n.value, n.matching_rule}) {
      if (!s.empty()) {
        CHECK_FALSE((s.data() >= text.data() && s.data() < text.data() + text.size()));
      }
    }
  }
}

TEST_CASE("Filter: stored views stay valid across moves of the Filter") {
  Filter f;
  std::vector<std::string> originals;
  std::vector<std::string_view> views;
  // Enough bytes, in sizes small and large, to need several blocks, one oversized.
  for (int i = 0; i < 300; ++i) {
    originals.push_back(std::string(static_cast<std::size_t>(1 + (i * 37) % 200), 'a' + i % 26));
  }
  originals.push_back(std::string(200'000, 'z'));
  for (const std::string& s : originals) {
    views.push_back(f.store(s));
    f.add_leaf(FilterKind::kEquality, "a", views.back());
  }
  CHECK(f.store("").empty());

  SUBCASE("move construction") {
    Filter moved = std::move(f);
    for (std::size_t i = 0; i < originals.size(); ++i) {
      CHECK(views[i] == originals[i]);
      CHECK(moved.node(static_cast<std::uint32_t>(i)).value.data() == views[i].data());
    }
  }
  SUBCASE("move assignment over a Filter with its own storage") {
    Filter target = parse_filter_ok("(cn=something*else)");
    target = std::move(f);
    for (std::size_t i = 0; i < originals.size(); ++i) {
      CHECK(views[i] == originals[i]);
    }
    CHECK(target.size() == originals.size());
  }
  SUBCASE("moving through Result<Filter>") {
    Result<Filter> wrapped(std::move(f));
    Filter out = std::move(*wrapped);
    for (std::size_t i = 0; i < originals.size(); ++i) {
      CHECK(views[i] == originals[i]);
    }
  }
  SUBCASE("a moved-from Filter can be cleared and reused") {
    Filter moved = std::move(f);
    f.clear();
    CHECK(f.empty());
    const std::string_view v = f.store("fresh");
    f.add_leaf(FilterKind::kPresent, v);
    CHECK(f.to_string() == "(fresh=*)");
    CHECK(views.front() == originals.front());
  }
}

TEST_CASE("Filter: clear() drops everything and the Filter can be reused") {
  Filter f = parse_filter_ok("(&(cn=ab*cd)(sn=x)(uid=y)(mail=z))");
  const FilterNode* const nodes_before = f.nodes().data();
  const char* const stored_before = f.node(2).value.data();  // "ab", the first bytes stored.
  f.clear();
  CHECK(f.empty());
  CHECK(f.size() == 0);

  SUBCASE("rebuilt with the builder, reusing node capacity and the storage block") {
    const std::uint32_t root = f.open(FilterKind::kOr);
    const std::string_view attr = f.store("cn");
    f.add_leaf(FilterKind::kEquality, attr, f.store("v"));
    f.close(root);
    CHECK(f.to_string() == "(|(cn=v))");
    CHECK(f.nodes().data() == nodes_before);
    CHECK(attr.data() == stored_before);
  }
  SUBCASE("cleared twice, then equal to a fresh parse") {
    f.clear();
    f.add_leaf(FilterKind::kEquality, f.store("uid"), f.store("jdoe"));
    CHECK(f == parse_filter_ok("(uid=jdoe)"));
  }
  SUBCASE("after several blocks, one block is kept and reused") {
    for (int i = 0; i < 50; ++i) {
      (void)f.store(std::string(100, 'x'));
    }
    f.clear();
    const std::string_view first = f.store("abc");
    f.clear();
    CHECK(f.store("def").data() == first.data());
  }
  SUBCASE("after an oversized block, storage still works") {
    (void)f.store(std::string(1 << 20, 'x'));
    f.clear();
    CHECK(f.store("abc") == "abc");
  }
}

TEST_CASE("Filter: the builder with views into a caller's buffer equals a parse") {
  // What a BER decoder does: views into the PDU, pieces as children, ends set by close().
  const std::string pdu = "uidjdoecnabcdcaseExactMatchsnx";
  const std::string_view buf = pdu;
  Filter f;
  const std::uint32_t root = f.open(FilterKind::kAnd);
  f.add_leaf(FilterKind::kEquality, buf.substr(0, 3), buf.substr(3, 4));
  const std::uint32_t sub = f.open(FilterKind::kSubstrings, buf.substr(7, 2));
  f.add_leaf(FilterKind::kSubInitial, {}, buf.substr(9, 2));
  f.add_leaf(FilterKind::kSubFinal, {}, buf.substr(11, 2));
  f.close(sub);
  const std::uint32_t ext = f.open(FilterKind::kExtensible, buf.substr(27, 2), buf.substr(29, 1));
  f.set_extensible(ext, buf.substr(13, 14), true);
  f.close(ext);
  f.close(root);
  CHECK(root == 0);
  CHECK(sub == 2);
  CHECK(ext == 5);
  CHECK(f.to_string() == "(&(uid=jdoe)(cn=ab*cd)(sn:dn:caseExactMatch:=x))");
  CHECK(f == parse_filter_ok("(&(uid=jdoe)(cn=ab*cd)(sn:dn:caseExactMatch:=x))"));
  CHECK_FALSE(f == parse_filter_ok("(&(uid=jdoe)(cn=ab*cd)(sn:caseExactMatch:=x))"));
  CHECK_FALSE(f == parse_filter_ok("(&(uid=jdoe)(cn=ab*cd))"));
}

TEST_CASE("Filter: rejects malformed input and names the offset") {
  const StatusCode bad = StatusCode::kMalformed;
  SUBCASE("empty text") { check_rejects("", bad, 0); }
  SUBCASE("unbalanced parentheses") {
    check_rejects("(&(a=b)", bad, 7);
    check_rejects("(a=b", bad, 4);
    check_rejects("(", bad, 1);
    check_rejects("(&", bad, 2);
    check_rejects("(!(a=b)", bad, 7);
  }
  SUBCASE("extra ')' is trailing data") { check_rejects("(a=b))", bad, 5); }
  SUBCASE("trailing data") {
    check_rejects("(a=b)x", bad, 5);
    check_rejects("(a=b)(c=d)", bad, 5);
    check_rejects("(&(a=b)) ", bad, 8);
  }
  SUBCASE("empty filter ()") {
    check_rejects("()", bad, 1);
    check_rejects("(&())", bad, 3);
  }
  SUBCASE("doubled parentheses") { check_rejects("((a=b))", bad, 1); }
  SUBCASE("junk between children") {
    check_rejects("(&(a=b) (c=d))", bad, 7);
    check_rejects("(|(a=b)x)", bad, 7);
    check_rejects("(&a=b)", bad, 2);
  }
  SUBCASE("missing or bad filter type") {
    check_rejects("(cn)", bad, 3);
    check_rejects("cn", bad, 2);
    check_rejects("(cn~x)", bad, 4);
    check_rejects("(cn>x)", bad, 4);
    check_rejects("(cn<)", bad, 4);
    check_rejects("(cn!=x)", bad, 3);
  }
  SUBCASE("bad escapes") {
    check_rejects("(cn=\\4)", bad, 4);
    check_rejects("(cn=\\zz)", bad, 4);
    check_rejects("(cn=a\\4g)", bad, 5);
    check_rejects("(cn=\\", bad, 4);
    check_rejects("(cn=\\4", bad, 4);
    check_rejects("(cn=*\\x1*)", bad, 5);
  }
  SUBCASE("bad attribute description characters") {
    check_rejects("(c_n=x)", bad, 2);
    check_rejects("(=x)", bad, 1);
    check_rejects("(-cn=x)", bad, 1);
    check_rejects("( cn=x)", bad, 1);
    check_rejects("(cn =x)", bad, 3);
    check_rejects("(c\xc3\xa9=x)", bad, 2);
  }
  SUBCASE("bad numeric OIDs") {
    check_rejects("(1.=x)", bad, 3);
    check_rejects("(1..2=x)", bad, 3);
    check_rejects("(1.02=x)", bad, 3);
    check_rejects("(01=x)", bad, 1);
    check_rejects("(2=x)", bad, 1);
    check_rejects("(cn:5:=x)", bad, 4);
    check_rejects("(1.2a=x)", bad, 4);
  }
  SUBCASE("bad attribute options") {
    check_rejects("(cn;=x)", bad, 4);
    check_rejects("(cn;a;=x)", bad, 6);
    check_rejects("(cn;a_b=x)", bad, 5);
  }
  SUBCASE("extensible without a rule or an attribute") {
    check_rejects("(:=x)", bad, 1);
    check_rejects("(:dn:=x)", bad, 1);
    check_rejects(":=x", bad, 0);
  }
  SUBCASE("malformed extensible") {
    check_rejects("(cn:rule=x)", bad, 8);
    check_rejects("(cn:1.2:1.3:=x)", bad, 4);
    check_rejects("(cn:dn:a:b:=x)", bad, 9);
    check_rejects("(cn::=x)", bad, 4);
    check_rejects("(cn:dn)", bad, 6);
    check_rejects("(cn:_:=x)", bad, 4);
    check_rejects("(:1.:=x)", bad, 4);
  }
  SUBCASE("not with other than one child") {
    check_rejects("(!(a=b)(c=d))", bad, 7);
    check_rejects("(!)", bad, 2);
  }
  SUBCASE("empty substring pieces from **") {
    check_rejects("(cn=**)", bad, 5);
    check_rejects("(cn=a**b)", bad, 6);
    check_rejects("(cn=*a**)", bad, 7);
    check_rejects("cn=**", bad, 4);
  }
  SUBCASE("unescaped '*' where no substring is allowed") {
    check_rejects("(cn>=a*)", bad, 6);
    check_rejects("(cn<=*)", bad, 5);
    check_rejects("(cn~=*)", bad, 5);
    check_rejects("(cn:=*)", bad, 5);
    check_rejects("(cn:dn:r:=a*b)", bad, 11);
  }
  SUBCASE("specials in values") {
    check_rejects("(cn=a(b)", bad, 5);
    check_rejects("(cn=a\0b)"sv, bad, 5);
    check_rejects("uid=a)b", bad, 5);
  }
}

TEST_CASE("Filter: the depth limit is enforced") {
  SUBCASE("the default allows 64 nested and/or/not, not 65") {
    CHECK(parse_filter_ok(nested("&", 64, "(a=b)")).size() == 65);
    check_rejects(nested("&", 65, "(a=b)"), StatusCode::kLimitExceeded, 128);
    check_rejects(nested("!", 65, "(a=b)"), StatusCode::kLimitExceeded, 128);
  }
  SUBCASE("a custom limit") {
    FilterParseLimits limits;
    limits.max_depth = 2;
    CHECK(parse_filter_ok("(&(|(a=b))(!(c=d)))", limits).size() == 5);
    check_rejects("(&(|(!(a=b))))", StatusCode::kLimitExceeded, 4, limits);
  }
  SUBCASE("zero allows items only") {
    FilterParseLimits limits;
    limits.max_depth = 0;
    CHECK(parse_filter_ok("(a=b)", limits).size() == 1);
    check_rejects("(&)", StatusCode::kLimitExceeded, 0, limits);
  }
  SUBCASE("very deep input within a large limit needs no native stack") {
    FilterParseLimits limits;
    limits.max_depth = 200'000;
    limits.max_nodes = 200'001;
    const std::string text = nested("!", 200'000, "(a=b)");
    const Filter f = parse_filter_ok(text, limits);
    CHECK(f.size() == 200'001);
    CHECK(f.node(0).end == 200'001);
    CHECK(f.to_string() == text);
  }
}

TEST_CASE("Filter: the node limit is enforced") {
  FilterParseLimits limits;
  limits.max_nodes = 3;
  SUBCASE("and/or/not and items count") {
    CHECK(parse_filter_ok("(&(a=b)(c=d))", limits).size() == 3);
    check_rejects("(&(a=b)(c=d)(e=f))", StatusCode::kLimitExceeded, 12, limits);
    check_rejects("(&(|(!(a=b))))", StatusCode::kLimitExceeded, 6, limits);
  }
  SUBCASE("substring pieces count") {
    CHECK(parse_filter_ok("(cn=a*b)", limits).size() == 3);
    check_rejects("(cn=a*b*c)", StatusCode::kLimitExceeded, 0, limits);
  }
  SUBCASE("the default allows 10000 nodes") {
    std::string text = "(|";
    for (int i = 0; i < 9'999; ++i) {
      text += "(a=b)";
    }
    CHECK(parse_filter_ok(text + ")").size() == 10'000);
    check_rejects(text + "(a=b))", StatusCode::kLimitExceeded, text.size());
  }
}

}  // namespace
}  // namespace numadir::schema
