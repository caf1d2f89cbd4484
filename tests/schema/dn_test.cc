// Tests for schema/dn.h: RFC 4514 parsing, printing, normalization and every rejection rule.
#include "schema/dn.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <utility>

namespace numadir::schema {
namespace {

using namespace std::string_view_literals;

Dn parse_dn_ok(std::string_view text) {
  Result<Dn> dn = Dn::parse(text);
  const std::string shown(text);  // INFO keeps a reference.
  INFO("input: ", shown);
  REQUIRE_MESSAGE(dn.ok(), dn.status().to_string());
  return std::move(dn).value();
}

// Checks that `text` is rejected with `code` and a message "DN: offset <offset>: ..." that
// contains `fragment`.
void check_rejected(std::string_view text, StatusCode code, std::size_t offset,
                    std::string_view fragment, const DnParseLimits& limits = {}) {
  const std::string shown(text);  // INFO keeps a reference.
  INFO("input: ", shown);
  Result<Dn> dn = Dn::parse(text, limits);
  REQUIRE_FALSE(dn.ok());
  const Status status = dn.status();
  const std::string& message = status.message();
  INFO("message: ", message);
  CHECK(status.code() == code);
  CHECK(message.starts_with("DN: offset " + std::to_string(offset) + ": "));
  CHECK(message.find(fragment) != std::string::npos);
}

void check_malformed(std::string_view text, std::size_t offset, std::string_view fragment) {
  check_rejected(text, StatusCode::kMalformed, offset, fragment);
}

TEST_CASE("Dn: parses a simple multi-RDN DN") {
  const Dn dn = parse_dn_ok("uid=user123,ou=people,dc=example,dc=com");
  CHECK_FALSE(dn.is_root());
  REQUIRE(dn.rdn_count() == 4);
  const std::string_view types[] = {"uid", "ou", "dc", "dc"};
  const std::string_view values[] = {"user123", "people", "example", "com"};
  for (std::size_t i = 0; i < 4; ++i) {
    REQUIRE(dn.rdn(i).size() == 1);
    CHECK(dn.rdn(i)[0].type == types[i]);
    CHECK(dn.rdn(i)[0].value == values[i]);
    CHECK_FALSE(dn.rdn(i)[0].hex_form);
  }
  CHECK(dn.to_string() == "uid=user123,ou=people,dc=example,dc=com");
}

TEST_CASE("Dn: the empty string and spaces-only are the root DN") {
  for (std::string_view text : {""sv, " "sv, "   "sv}) {
    const Dn dn = parse_dn_ok(text);
    CHECK(dn.is_root());
    CHECK(dn.rdn_count() == 0);
    CHECK(dn.to_string().empty());
    CHECK(dn.normalized().empty());
    CHECK(dn == Dn());
  }
  CHECK(Dn().is_root());
  CHECK(Dn().parent().is_root());
}

TEST_CASE("Dn: parses multi-valued RDNs") {
  SUBCASE("first RDN") {
    const Dn dn = parse_dn_ok("cn=John+sn=Doe+uid=jd,dc=example");
    REQUIRE(dn.rdn_count() == 2);
    REQUIRE(dn.rdn(0).size() == 3);
    CHECK(dn.rdn(0)[0] == Ava{"cn", "John", false});
    CHECK(dn.rdn(0)[1] == Ava{"sn", "Doe", false});
    CHECK(dn.rdn(0)[2] == Ava{"uid", "jd", false});
    REQUIRE(dn.rdn(1).size() == 1);
    CHECK(dn.rdn(1)[0] == Ava{"dc", "example", false});
    CHECK(dn.rdn_string(0) == "cn=John+sn=Doe+uid=jd");
    CHECK(dn.rdn_string(1) == "dc=example");
  }
  SUBCASE("middle and last RDNs") {
    const Dn dn = parse_dn_ok("a=1,b=2+c=3,d=4,e=5+f=6");
    REQUIRE(dn.rdn_count() == 4);
    CHECK(dn.rdn(0).size() == 1);
    REQUIRE(dn.rdn(1).size() == 2);
    CHECK(dn.rdn(1)[1] == Ava{"c", "3", false});
    CHECK(dn.rdn(2).size() == 1);
    CHECK(dn.rdn(2)[0] == Ava{"d", "4", false});
    REQUIRE(dn.rdn(3).size() == 2);
    CHECK(dn.rdn(3)[0] == Ava{"e", "5", false});
    CHECK(dn.rdn(3)[1] == Ava{"f", "6", false});
    CHECK(dn.to_string() == "a=1,b=2+c=3,d=4,e=5+f=6");
  }
  SUBCASE("same type twice") {
    const Dn dn = parse_dn_ok("cn=a+cn=b");
    REQUIRE(dn.rdn_count() == 1);
    CHECK(dn.rdn(0).size() == 2);
  }
}

TEST_CASE("Dn: unescapes every special character") {
  struct Case {
    std::string_view text;
    std::string_view value;
  };
  const Case cases[] = {
      {"cn=a\\ b", "a b"},   {"cn=a\\\"b", "a\"b"},   {"cn=a\\#b", "a#b"},  {"cn=a\\+b", "a+b"},
      {"cn=a\\,b", "a,b"},   {"cn=a\\;b", "a;b"},     {"cn=a\\<b", "a<b"},  {"cn=a\\=b", "a=b"},
      {"cn=a\\>b", "a>b"},   {"cn=a\\\\b", "a\\b"},   {"cn=\\#a", "#a"},    {"cn=\\,", ","},
      {"cn=a=b", "a=b"},     {"cn=a#b", "a#b"},       {"cn=a\\2Cb", "a,b"}, {"cn=a\\2cb", "a,b"},
      {"cn=\\41\\42", "AB"}, {"cn=a\\00b", "a\0b"sv},
  };
  for (const Case& c : cases) {
    SUBCASE(std::string(c.text).c_str()) {
      const Dn dn = parse_dn_ok(c.text);
      REQUIRE(dn.rdn_count() == 1);
      CHECK(dn.rdn(0)[0].value == c.value);
      CHECK_FALSE(dn.rdn(0)[0].hex_form);
    }
  }
}

TEST_CASE("Dn: hex-pair escapes may form multi-byte UTF-8") {
  SUBCASE("upper-case hex") {
    const Dn dn = parse_dn_ok("cn=Lu\\C4\\8Di\\C4\\87");
    CHECK(dn.rdn(0)[0].value == "Lu\xC4\x8Di\xC4\x87");  // "Lučić"
    CHECK(dn.to_string() == "cn=Lu\xC4\x8Di\xC4\x87");
  }
  SUBCASE("lower-case hex") { CHECK(parse_dn_ok("cn=\\c4\\8d").rdn(0)[0].value == "\xC4\x8D"); }
  SUBCASE("a sequence split between a raw byte and an escape") {
    CHECK(parse_dn_ok("cn=\xC4\\8D").rdn(0)[0].value == "\xC4\x8D");
  }
  SUBCASE("four-byte sequence") {
    CHECK(parse_dn_ok("cn=\\F0\\9F\\98\\80").rdn(0)[0].value == "\xF0\x9F\x98\x80");
  }
}

TEST_CASE("Dn: raw UTF-8 values") {
  CHECK(parse_dn_ok("cn=Lu\xC4\x8Di\xC4\x87").rdn(0)[0].value == "Lu\xC4\x8Di\xC4\x87");
  CHECK(parse_dn_ok("cn=\xE6\x97\xA5\xE6\x9C\xAC").rdn(0)[0].value == "\xE6\x97\xA5\xE6\x9C\xAC");
  CHECK(parse_dn_ok("cn=\xF0\x9F\x98\x80 x").rdn(0)[0].value == "\xF0\x9F\x98\x80 x");
  CHECK(parse_dn_ok("cn=\xEF\xBF\xBD").to_string() == "cn=\xEF\xBF\xBD");
}

TEST_CASE("Dn: #hex values keep the decoded bytes and hex_form") {
  SUBCASE("RFC 4514 example") {
    const Dn dn = parse_dn_ok("1.3.6.1.4.1.1466.0=#04024869,O=Test,C=GB");
    REQUIRE(dn.rdn_count() == 3);
    CHECK(dn.rdn(0)[0].type == "1.3.6.1.4.1.1466.0");
    CHECK(dn.rdn(0)[0].value == "\x04\x02Hi");
    CHECK(dn.rdn(0)[0].hex_form);
    CHECK(dn.to_string() == "1.3.6.1.4.1.1466.0=#04024869,O=Test,C=GB");
  }
  SUBCASE("mixed-case digits print in lower case") {
    const Dn dn = parse_dn_ok("cn=#0aFf");
    CHECK(dn.rdn(0)[0].value == "\x0a\xff");
    CHECK(dn.rdn(0)[0].hex_form);
    CHECK(dn.to_string() == "cn=#0aff");
  }
  SUBCASE("binary bytes are not checked as UTF-8") {
    CHECK(parse_dn_ok("cn=#ff00c0").rdn(0)[0].value == "\xff\x00\xc0"sv);
  }
  SUBCASE("spaces before separators") {
    const Dn dn = parse_dn_ok("cn = #04 , sn=#05  +  uid=x");
    REQUIRE(dn.rdn_count() == 2);
    CHECK(dn.rdn(0)[0] == Ava{"cn", "\x04", true});
    CHECK(dn.rdn(1)[0] == Ava{"sn", "\x05", true});
    CHECK(dn.rdn(1)[1] == Ava{"uid", "x", false});
  }
}

TEST_CASE("Dn: escaped leading and trailing spaces are kept and unescaped ones dropped") {
  CHECK(parse_dn_ok("cn=\\ a\\ ").rdn(0)[0].value == " a ");
  CHECK(parse_dn_ok("cn=  a  b  ").rdn(0)[0].value == "a  b");
  CHECK(parse_dn_ok("cn=a \\  ").rdn(0)[0].value == "a  ");
  CHECK(parse_dn_ok("cn=\\20a\\20").rdn(0)[0].value == " a ");
  CHECK(parse_dn_ok("cn=\\ ").rdn(0)[0].value == " ");
  CHECK(parse_dn_ok("cn=   ").rdn(0)[0].value.empty());
  CHECK(parse_dn_ok("cn=").rdn(0)[0].value.empty());
  CHECK(parse_dn_ok("cn=,dc=x").rdn(0)[0].value.empty());
}

TEST_CASE("Dn: spaces around separators are accepted") {
  const Dn expected = parse_dn_ok("cn=a,ou=b+sn=c,dc=d");
  SUBCASE("everywhere") { CHECK(parse_dn_ok("  cn = a , ou = b + sn = c ,dc=d  ") == expected); }
  SUBCASE("after separators only") { CHECK(parse_dn_ok("cn=a, ou=b+ sn=c, dc=d") == expected); }
  SUBCASE("around '=' only") { CHECK(parse_dn_ok("cn =a,ou= b+sn = c,dc  =  d") == expected); }
}

TEST_CASE("Dn: attribute types") {
  CHECK(parse_dn_ok("x-my-Attr2=v").rdn(0)[0].type == "x-my-Attr2");
  CHECK(parse_dn_ok("2.5.4.3=v").rdn(0)[0].type == "2.5.4.3");
  CHECK(parse_dn_ok("0.9.2342.19200300.100.1.1=v").rdn(0)[0].type == "0.9.2342.19200300.100.1.1");
  CHECK(parse_dn_ok("0=v").rdn(0)[0].type == "0");
  CHECK(parse_dn_ok("CN=v").rdn(0)[0].type == "CN");  // Kept as written.
}

TEST_CASE("Dn: to_string escapes what RFC 4514 requires") {
  struct Case {
    std::string_view text;
    std::string_view printed;
  };
  const Case cases[] = {
      {"cn=\\\"a\\+b\\,c\\;d\\<e\\>f\\\\g", "cn=\\\"a\\+b\\,c\\;d\\<e\\>f\\\\g"},
      {"cn=\\#a", "cn=\\#a"},            // Leading '#'.
      {"cn=a#b", "cn=a#b"},              // Inner '#' needs nothing.
      {"cn=\\ a b\\ ", "cn=\\ a b\\ "},  // Leading and trailing space.
      {"cn=\\ ", "cn=\\ "},              // One space is both.
      {"cn=a\\00b", "cn=a\\00b"},        // NUL.
      {"cn=a\\=b", "cn=a=b"},            // '=' needs no escape.
      {"cn=\\41\\2c", "cn=A\\,"},        // Hex pairs print in the shortest form.
      {"cn=\\C4\\8D", "cn=\xC4\x8D"},    // UTF-8 prints raw.
      {"cn=", "cn="},
  };
  for (const Case& c : cases) {
    const std::string shown(c.text);  // INFO keeps a reference.
    INFO("input: ", shown);
    CHECK(parse_dn_ok(c.text).to_string() == c.printed);
  }
}

TEST_CASE("Dn: to_string round-trips through parse") {
  const std::string_view cases[] = {
      "uid=jdoe,ou=People,dc=Example,dc=COM",
      "cn=John+sn=Doe,dc=x",
      "cn=\\\"a\\+b\\,c\\;d\\<e\\>f\\\\g,dc=x",
      "cn=\\ lead,sn=trail\\ ,o=\\#sharp",
      "cn=#04024869+2.5.4.3=#00",
      "cn=a\\00b\\00",
      "cn=Lu\\C4\\8Di\\C4\\87",
      "cn = spaced , dc = x",
      "cn=",
      "",
  };
  for (std::string_view text : cases) {
    const std::string shown(text);  // INFO keeps a reference.
    INFO("input: ", shown);
    const Dn dn = parse_dn_ok(text);
    const std::string printed = dn.to_string();
    const Dn again = parse_dn_ok(printed);
    CHECK(again == dn);
    CHECK(again.to_string() == printed);
  }
}

// Copies and moves of the Dn parsed from `text`; every check runs after the source is gone.
void check_copies_and_moves(std::string_view text) {
  const std::string shown(text);  // INFO keeps a reference.
  INFO("input: ", shown);
  const std::string printed = parse_dn_ok(text).to_string();
  Dn copy;
  {
    const Dn source = parse_dn_ok(text);
    copy = Dn(source);
  }
  CHECK(copy.to_string() == printed);

  Dn assigned = parse_dn_ok("x=y");
  {
    const Dn source = parse_dn_ok(text);
    assigned = source;
    CHECK(assigned == source);
  }
  CHECK(assigned.to_string() == printed);

  Dn source = parse_dn_ok(text);
  const Dn moved(std::move(source));
  CHECK(moved.to_string() == printed);
  CHECK(source.is_root());  // The moved-from state is documented.  // NOLINT

  Dn target = parse_dn_ok("x=y");
  {
    Dn temporary = parse_dn_ok(text);
    target = std::move(temporary);
  }
  CHECK(target.to_string() == printed);

  Dn self = parse_dn_ok(text);
  const Dn& alias = self;
  self = alias;
  CHECK(self.to_string() == printed);
  Dn& same = self;
  self = std::move(same);
  CHECK(self.to_string() == printed);
}

TEST_CASE("Dn: copies and moves keep the views valid") {
  // Short enough for the small-string buffer, which a move copies.
  check_copies_and_moves("a=b+c=d,e=f");
  // On the heap, which a move steals.
  check_copies_and_moves("uid=someone.with.a.long.name,ou=people,dc=x");
}

TEST_CASE("Dn: parent drops the leftmost RDN") {
  const Dn dn = parse_dn_ok("cn=John+sn=Doe,ou=People,dc=example+l=x,dc=com");
  const Dn p1 = dn.parent();
  CHECK(p1.to_string() == "ou=People,dc=example+l=x,dc=com");
  CHECK(p1 == parse_dn_ok("ou=People,dc=example+l=x,dc=com"));
  const Dn p2 = p1.parent();
  CHECK(p2 == parse_dn_ok("dc=example+l=x,dc=com"));
  REQUIRE(p2.rdn(0).size() == 2);
  CHECK(p2.rdn(0)[1] == Ava{"l", "x", false});
  const Dn p3 = p2.parent();
  CHECK(p3 == parse_dn_ok("dc=com"));  // No multi-valued RDN left.
  CHECK(p3.parent().is_root());
  CHECK(p3.parent().parent().is_root());
  CHECK(parse_dn_ok("uid=a,dc=b").parent() == parse_dn_ok("dc=b"));
}

TEST_CASE("Dn: equality is exact") {
  CHECK(parse_dn_ok("cn=a,dc=b") == parse_dn_ok("cn = a , dc = b"));
  CHECK_FALSE(parse_dn_ok("cn=a") == parse_dn_ok("CN=a"));
  CHECK_FALSE(parse_dn_ok("cn=a") == parse_dn_ok("cn=A"));
  CHECK_FALSE(parse_dn_ok("cn=#61") == parse_dn_ok("cn=a"));      // hex_form differs.
  CHECK_FALSE(parse_dn_ok("a=1+b=2") == parse_dn_ok("a=1,b=2"));  // Grouping differs.
  CHECK_FALSE(parse_dn_ok("a=1+b=2") == parse_dn_ok("b=2+a=1"));  // Order differs.
  CHECK_FALSE(parse_dn_ok("a=1,b=2") == parse_dn_ok("a=1"));
}

TEST_CASE("Dn: normalized folds case and insignificant spaces") {
  SUBCASE("differently written equivalent DNs") {
    const std::string a = parse_dn_ok("UID=JDoe, OU=People,DC=Example,DC=COM").normalized();
    const std::string b = parse_dn_ok("uid=jdoe,ou=people,dc=example,dc=com").normalized();
    CHECK(a == "uid=jdoe,ou=people,dc=example,dc=com");
    CHECK(a == b);
  }
  SUBCASE("spaces") {
    CHECK(parse_dn_ok("cn=  John    Q   Doe  ").normalized() == "cn=john q doe");
    CHECK(parse_dn_ok("cn=\\ \\ John\\  \\ Doe\\ ").normalized() == "cn=john doe");
    CHECK(parse_dn_ok("cn=\\ \\ ").normalized() == "cn=");
  }
  SUBCASE("numericoid types are kept, descr types lower-cased") {
    CHECK(parse_dn_ok("2.5.4.3=ABC,X-Attr-9=Q").normalized() == "2.5.4.3=abc,x-attr-9=q");
  }
  SUBCASE("non-ASCII passes through unchanged") {
    CHECK(parse_dn_ok("CN=\xC4\x8C"
                      "AJ")
              .normalized() ==
          "cn=\xC4\x8C"
          "aj");
  }
}

TEST_CASE("Dn: normalized sorts the AVAs of a multi-valued RDN") {
  CHECK(parse_dn_ok("SN=Doe+CN=John,DC=x").normalized() == "cn=john+sn=doe,dc=x");
  CHECK(parse_dn_ok("cn=b+cn=A").normalized() == "cn=a+cn=b");
  CHECK(parse_dn_ok("uid=x+2.5.4.3=y+cn=z").normalized() == "2.5.4.3=y+cn=z+uid=x");
  CHECK(parse_dn_ok("cn=#62+cn=b+cn=a").normalized() == "cn=a+cn=b+cn=#62");
  CHECK(parse_dn_ok("sn=Doe + cn=John").normalized() == parse_dn_ok("cn=JOHN+sn=DOE").normalized());
}

TEST_CASE("Dn: normalized keeps #hex values in lower-case hex") {
  CHECK(parse_dn_ok("CN=#04AB").normalized() == "cn=#04ab");
  CHECK(parse_dn_ok("1.3.6.1.4.1.1466.0=#04024869").normalized() == "1.3.6.1.4.1.1466.0=#04024869");
}

TEST_CASE("Dn: normalized output is a valid DN and normalization is idempotent") {
  const std::string_view cases[] = {
      "UID=JDoe, OU=People,DC=Example,DC=COM",
      "cn=\\#Hash\\,Comma\\+Plus\\;Semi  Two   Spaces",
      "cn=\\ ,sn=\\  a",
      "CN=John+SN=Doe+cn=a\\00B",
      "cn=#0A+cn=\\#0a",
      "cn=Lu\\C4\\8Di\\C4\\87",
      "cn=\\\"\\<\\>\\\\",
      "",
  };
  for (std::string_view text : cases) {
    const std::string shown(text);  // INFO keeps a reference.
    INFO("input: ", shown);
    const std::string once = parse_dn_ok(text).normalized();
    CHECK(parse_dn_ok(once).normalized() == once);
  }
  CHECK(parse_dn_ok("cn=\\#Hash\\,Comma").normalized() == "cn=\\#hash\\,comma");
  CHECK(parse_dn_ok("cn=\\  a").normalized() == "cn=a");
}

// Maps "commonName" to "cn" and upper-cases values, to show both hooks are used.
class TestNormalizer : public DnValueNormalizer {
 public:
  std::string normalize_type(std::string_view type) const override {
    std::string out = DnValueNormalizer::normalize_type(type);
    return out == "commonname" ? "cn" : out;
  }
  std::string normalize(std::string_view type, std::string_view value) const override {
    std::string out(type);
    out += ':';
    for (char c : value) {
      out += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    }
    return out;
  }
};

TEST_CASE("Dn: a DnValueNormalizer replaces the default rules") {
  const TestNormalizer normalizer;
  const Dn dn = parse_dn_ok("commonName=ab+SN=c d,DC=x,cn=#01");
  CHECK(dn.normalized(&normalizer) == "cn=cn:AB+sn=sn:C D,dc=dc:X,cn=#01");
  CHECK(dn.normalized() == "commonname=ab+sn=c d,dc=x,cn=#01");
}

TEST_CASE("Dn: parse_into reuses a Dn and gives what parse gives") {
  Dn dn;
  for (std::string_view text :
       {"uid=A Long Value With  Spaces  ,ou=People,dc=example,dc=com", "cn=a\\,b+sn=c", "cn=x",
        "cn=\\  a \\ ,dc=#0102", "", "cn=caf\xc3\xa9 ,dc=x"}) {
    CAPTURE(text);
    REQUIRE(Dn::parse_into(text, dn).ok());
    CHECK(dn == parse_dn_ok(text));
    CHECK(dn.to_string() == parse_dn_ok(text).to_string());
  }
  CHECK(Dn::parse_into("cn=a,,", dn).code() == StatusCode::kMalformed);
  CHECK(dn.is_root());
}

TEST_CASE("Dn: append_normalized appends what normalized returns") {
  const TestNormalizer normalizer;
  const Dn dn = parse_dn_ok("commonName=ab+SN=c d,DC=x,cn=#01");
  std::string out = "prefix:";
  dn.append_normalized(out, &normalizer);
  CHECK(out == "prefix:" + dn.normalized(&normalizer));
  out.clear();
  dn.append_normalized(out);
  CHECK(out == dn.normalized());
}

TEST_CASE("Dn: append_normalized_rdns gives each RDN range of the normalized form") {
  const TestNormalizer normalizer;
  const Dn dn = parse_dn_ok("commonName=ab+SN=c d,DC=x,cn=#01,O=Big\\, Inc.");
  for (const DnValueNormalizer* rules : {static_cast<const DnValueNormalizer*>(&normalizer),
                                         static_cast<const DnValueNormalizer*>(nullptr)}) {
    std::string joined;
    for (std::size_t i = 0; i < dn.rdn_count(); ++i) {
      if (i > 0) {
        joined += ',';
      }
      dn.append_normalized_rdns(joined, rules, i, i + 1);
    }
    CHECK(joined == dn.normalized(rules));
    std::string tail = "x";
    dn.append_normalized_rdns(tail, rules, 1, dn.rdn_count());
    CHECK(tail == "x" + dn.parent().normalized(rules));
    std::string none;
    dn.append_normalized_rdns(none, rules, 2, 2);
    CHECK(none.empty());
  }
}

TEST_CASE("Dn: ends_with compares the RDNs after the first exactly") {
  const Dn dn = parse_dn_ok("uid=a,ou=People,dc=example,dc=com");
  CHECK(dn.ends_with(parse_dn_ok("ou=People,dc=example,dc=com"), 1));
  CHECK(dn.ends_with(parse_dn_ok("dc=example,dc=com"), 2));
  CHECK(dn.ends_with(Dn(), 4));
  CHECK(dn.ends_with(dn, 0));
  CHECK_FALSE(dn.ends_with(parse_dn_ok("ou=people,dc=example,dc=com"), 1));  // Spelled otherwise.
  CHECK_FALSE(dn.ends_with(parse_dn_ok("ou=People,dc=example"), 1));
  CHECK_FALSE(dn.ends_with(parse_dn_ok("dc=example,dc=com"), 1));
  CHECK_FALSE(dn.ends_with(Dn(), 5));
  const Dn multi = parse_dn_ok("uid=a,cn=x+sn=y,dc=com");
  CHECK(multi.ends_with(parse_dn_ok("cn=x+sn=y,dc=com"), 1));
  CHECK_FALSE(multi.ends_with(parse_dn_ok("cn=x,dc=com"), 1));
  CHECK_FALSE(multi.ends_with(parse_dn_ok("cn=x,sn=y,dc=com"), 1));
  CHECK_FALSE(parse_dn_ok("uid=a,cn=#01").ends_with(parse_dn_ok("cn=\\01"), 1));
}

TEST_CASE("Dn: normalize_dn parses and normalizes") {
  Result<std::string> ndn = normalize_dn("UID=JDoe,DC=Example");
  REQUIRE(ndn.ok());
  CHECK(*ndn == "uid=jdoe,dc=example");
  Result<std::string> bad = normalize_dn("uid");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kMalformed);
  Result<std::string> long_dn = normalize_dn("cn=abcdef", DnParseLimits{.max_bytes = 4});
  REQUIRE_FALSE(long_dn.ok());
  CHECK(long_dn.status().code() == StatusCode::kLimitExceeded);
}

// One test per rejection rule.

TEST_CASE("Dn: rejects a missing '='") {
  check_malformed("cn", 2, "missing '='");
  check_malformed("cn foo", 3, "missing '='");
  check_malformed("cn,dc=x", 2, "missing '='");
  check_malformed("cn=a,dc", 7, "missing '='");
  check_malformed("cn+sn=x", 2, "missing '='");
}

TEST_CASE("Dn: rejects an empty attribute type") {
  check_malformed("=foo", 0, "empty attribute type");
  check_malformed("cn=a, =b", 6, "empty attribute type");
  check_malformed("cn=a+=b", 5, "empty attribute type");
}

TEST_CASE("Dn: rejects invalid characters in attribute types") {
  SUBCASE("descr") {
    check_malformed("c_n=a", 1, "invalid character '_' in attribute type");
    check_malformed("_cn=a", 0, "invalid character '_' in attribute type");
    check_malformed("-cn=a", 0, "invalid character '-' in attribute type");
    check_malformed("cn;lang-en=a", 2, "invalid character ';' in attribute type");
    check_malformed("c\xC3\xA9=a", 1, "invalid character byte 0xC3 in attribute type");
  }
  SUBCASE("numericoid") {
    check_malformed("1.2a=x", 3, "invalid character 'a' in attribute type");
    check_malformed("2cn=x", 1, "invalid character 'c' in attribute type");
    check_malformed("1.2-=x", 3, "invalid character '-' in attribute type");
  }
  SUBCASE("numericoid arcs") {
    check_malformed("01.2=x", 0, "leading zero");
    check_malformed("1.02=x", 2, "leading zero");
    check_malformed("1..2=x", 2, "expected a digit after '.'");
    check_malformed("1.=x", 2, "expected a digit after '.'");
    check_malformed("1.", 2, "expected a digit after '.'");
  }
}

TEST_CASE("Dn: rejects bad escapes") {
  check_malformed("cn=a\\", 4, "invalid escape");
  check_malformed("cn=\\4", 3, "invalid escape");
  check_malformed("cn=\\4g", 3, "invalid escape");
  check_malformed("cn=\\zz", 3, "invalid escape: '\\' followed by 'z'");
  check_malformed("cn=a\\_b", 4, "invalid escape");
  check_malformed("cn=\\\xC3\xA9", 3, "invalid escape");
}

TEST_CASE("Dn: rejects bad #hex values") {
  check_malformed("cn=#", 3, "without hex digits");
  check_malformed("cn=#,dc=x", 3, "without hex digits");
  check_malformed("cn=#123", 3, "odd number of hex digits");
  check_malformed("cn=#12zz", 6, "invalid character 'z' in '#' value");
  check_malformed("cn=#12;dc=x", 6, "invalid character ';' in '#' value");
  check_malformed("cn=#12 zz", 7, "expected ',' or '+' after a value");
}

TEST_CASE("Dn: rejects characters that must be escaped") {
  check_malformed("cn=a\"b", 4, "unescaped '\"'");
  check_malformed("cn=a;dc=b", 4, "unescaped ';'");
  check_malformed("cn=a;dc=b", 4, "separator");
  check_malformed("cn=a<b", 4, "unescaped '<'");
  check_malformed("cn=a>b", 4, "unescaped '>'");
}

TEST_CASE("Dn: rejects raw NUL bytes") {
  check_malformed("cn=a\0b"sv, 4, "NUL byte");
  check_malformed("\0"sv, 0, "invalid character byte 0x00 in attribute type");
}

TEST_CASE("Dn: rejects invalid UTF-8 in string values") {
  check_malformed("cn=\xFF", 3, "invalid UTF-8");
  check_malformed("cn=a\xC4", 5, "invalid UTF-8");             // Truncated at the end.
  check_malformed("cn=a\xC4,dc=x", 5, "invalid UTF-8");        // Truncated before ','.
  check_malformed("cn=\\C4\\41", 6, "invalid UTF-8");          // Bad continuation via escape.
  check_malformed("cn=\\C0\\80", 3, "invalid UTF-8");          // Overlong.
  check_malformed("cn=\xE0\x80\x80", 4, "invalid UTF-8");      // Overlong, three bytes.
  check_malformed("cn=\xF0\x80\x80\x80", 4, "invalid UTF-8");  // Overlong, four bytes.
  check_malformed("cn=\xF5\x80\x80\x80", 3, "invalid UTF-8");  // No such lead byte.
  check_malformed("cn=\x80", 3, "invalid UTF-8");              // Stray continuation byte.
  check_malformed("cn=\xED\xA0\x80", 4, "invalid UTF-8");      // Surrogate.
  check_malformed("cn=\xF4\x90\x80\x80", 4, "invalid UTF-8");  // Past U+10FFFF.
  check_malformed("cn=\xE6\x97 x", 5, "invalid UTF-8");        // Space inside a sequence.
}

TEST_CASE("Dn: rejects empty RDNs and AVAs") {
  check_malformed(",cn=a", 0, "empty RDN");
  check_malformed("cn=a,,dc=b", 5, "empty RDN");
  check_malformed("cn=a, ,dc=b", 6, "empty RDN");
  check_malformed("cn=a,", 4, "trailing ','");
  check_malformed("cn=a,  ", 4, "trailing ','");
  check_malformed("+cn=a", 0, "empty AVA");
  check_malformed("cn=a++sn=b", 5, "empty AVA");
  check_malformed("cn=a+", 4, "trailing '+'");
  check_malformed("cn=a+,dc=b", 5, "empty RDN");
}

TEST_CASE("Dn: limits") {
  SUBCASE("max_bytes") {
    const DnParseLimits limits{.max_bytes = 10, .max_rdns = 512};
    CHECK(Dn::parse("cn=abcdefg", limits).ok());  // Exactly 10 bytes.
    check_rejected("cn=abcdefgh", StatusCode::kLimitExceeded, 10, "longer than the limit", limits);
  }
  SUBCASE("max_rdns") {
    const DnParseLimits limits{.max_bytes = 8192, .max_rdns = 3};
    CHECK(Dn::parse("a=1,b=2,c=3+d=4", limits).ok());
    check_rejected("a=1,b=2,c=3,d=4", StatusCode::kLimitExceeded, 12, "more than 3 RDNs", limits);
  }
  SUBCASE("defaults") {
    std::string deep;
    for (int i = 0; i < 512; ++i) {
      deep += i == 0 ? "a=1" : ",a=1";
    }
    CHECK(Dn::parse(deep).ok());
    deep += ",a=1";
    check_rejected(deep, StatusCode::kLimitExceeded, deep.size() - 3, "more than 512 RDNs");
    const std::string huge = "cn=" + std::string(8190, 'x');
    check_rejected(huge, StatusCode::kLimitExceeded, 8192, "longer than the limit");
  }
}

TEST_CASE("Dn: first_rdn_separator finds the separator that ends the first RDN") {
  for (const std::string_view text :
       {"uid=a,ou=people,dc=x", "uid=a\\,b,dc=x", "uid=a\\\\,dc=x", "uid=a\\2C,dc=x",
        "cn=a+sn=b,dc=x", "uid=a ,dc=x", "uid=#04024869,dc=x", "dc=x", ""}) {
    CAPTURE(text);
    const std::size_t separator = first_rdn_separator(text);
    // The parsed first RDN is what comes before it, parsed alone.
    Result<Dn> whole = Dn::parse(text);
    REQUIRE(whole.ok());
    if (whole->rdn_count() <= 1) {
      CHECK(separator == text.size());
      continue;
    }
    REQUIRE(separator < text.size());
    CHECK(text[separator] == ',');
    Result<Dn> first = Dn::parse(text.substr(0, separator));
    REQUIRE(first.ok());
    REQUIRE(first->rdn_count() == 1);
    CHECK(first->rdn_string(0) == whole->rdn_string(0));
  }
}

}  // namespace
}  // namespace numadir::schema
