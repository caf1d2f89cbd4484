// Tests for server/formats/ldif_writer.h: the plain/base64 choice, folding as slapcat folds
// (checked against output of OpenLDAP 2.5.13 slapcat), options, errors, and the round trip through
// LdifReader on tricky values.
#include "server/formats/ldif_writer.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "schema/utf8.h"
#include "server/formats/ldif_reader.h"
#include "tests/server/formats/entry_builder.h"

namespace numadir::server {
namespace {

using schema::Entry;
using schema::EntryAttribute;

using testing::make_entry;

std::string format(const Entry& entry, const LdifWriterOptions& options = {}) {
  std::string out;
  const Status status = LdifWriter::append_record(entry, options, out);
  REQUIRE_MESSAGE(status.ok(), status.to_string());
  return out;
}

// The line written for one value of `description`.
std::string line_for(std::string_view description, std::string_view value,
                     const LdifWriterOptions& options = {}) {
  const std::string record =
      format(make_entry("dc=a", {{std::string(description), {std::string(value)}}}), options);
  const std::string prefix = "dn: dc=a\n";
  REQUIRE(record.starts_with(prefix));
  REQUIRE(record.ends_with("\n\n"));
  return record.substr(prefix.size(), record.size() - prefix.size() - 1);
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    lines.emplace_back(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  return lines;
}

Entry read_back(std::string_view text) {
  LdifReader reader(text);
  Entry entry;
  Result<bool> first = reader.next(entry);
  REQUIRE_MESSAGE(first.ok(), first.status().to_string());
  REQUIRE(*first);
  Entry ignored;
  Result<bool> end = reader.next(ignored);
  REQUIRE(end.ok());
  CHECK_FALSE(*end);
  return entry;
}

TEST_CASE("LdifWriter: writes dn then the values in entry order and a blank line") {
  const Entry entry =
      make_entry("uid=jdoe,ou=people,dc=example,dc=com", {{"objectClass", {"top", "inetOrgPerson"}},
                                                          {"uid", {"jdoe"}},
                                                          {"cn;lang-en", {"John Doe"}},
                                                          {"2.5.4.4", {"Doe"}}});
  CHECK(format(entry) ==
        "dn: uid=jdoe,ou=people,dc=example,dc=com\n"
        "objectClass: top\n"
        "objectClass: inetOrgPerson\n"
        "uid: jdoe\n"
        "cn;lang-en: John Doe\n"
        "2.5.4.4: Doe\n"
        "\n");
}

TEST_CASE("LdifWriter: values that are not safe plain ASCII are written in base64") {
  CHECK(line_for("cn", "plain: with colon < and # inside") ==
        "cn: plain: with colon < and # inside\n");
  CHECK(line_for("cn", " leading space") == "cn:: IGxlYWRpbmcgc3BhY2U=\n");
  CHECK(line_for("cn", "trailing space ") == "cn:: dHJhaWxpbmcgc3BhY2Ug\n");
  CHECK(line_for("cn", ":colon start") == "cn:: OmNvbG9uIHN0YXJ0\n");
  CHECK(line_for("cn", "<angle start") == "cn:: PGFuZ2xlIHN0YXJ0\n");
  CHECK(line_for("cn", "J\xc3\xbcrgen") == "cn:: SsO8cmdlbg==\n");
  CHECK(line_for("cn", "tab\there") == "cn:: dGFiCWhlcmU=\n");
  CHECK(line_for("cn", "line\nbreak") == "cn:: bGluZQpicmVhaw==\n");
  CHECK(line_for("cn", "cr\rhere") == "cn:: Y3INaGVyZQ==\n");
  CHECK(line_for("cn", std::string("nul\0", 4)) == "cn:: bnVsAA==\n");
  CHECK(line_for("cn", "del\x7f") == "cn:: ZGVsfw==\n");
  CHECK(line_for("cn", "\xff\xfe") == "cn:: //4=\n");
  CHECK(line_for("cn", "a") == "cn: a\n");
  CHECK(line_for("cn", "#") == "cn: #\n");
}

TEST_CASE("LdifWriter: an empty value is the description and a colon") {
  CHECK(line_for("description", "") == "description:\n");
  CHECK(format(make_entry("", {})) == "dn:\n\n");
}

TEST_CASE("LdifWriter: binary and userPassword values are always base64") {
  CHECK(line_for("userCertificate;binary", "abc") == "userCertificate;binary:: YWJj\n");
  CHECK(line_for("userCertificate;BINARY;x-y", "abc") == "userCertificate;BINARY;x-y:: YWJj\n");
  CHECK(line_for("userPassword", "{SSHA}abcdefgh") == "userPassword:: e1NTSEF9YWJjZGVmZ2g=\n");
  CHECK(line_for("USERPASSWORD;x-tag", "secret") == "USERPASSWORD;x-tag:: c2VjcmV0\n");
  CHECK(line_for("2.5.4.35", "secret") == "2.5.4.35:: c2VjcmV0\n");
  CHECK(line_for("userPassword", "secret", {.base64_passwords = false}) ==
        "userPassword: secret\n");
  CHECK(line_for("cn;binaryish", "abc") == "cn;binaryish: abc\n");
}

TEST_CASE("LdifWriter: the dn is base64 when it is not safe plain ASCII") {
  CHECK(format(make_entry("uid=j\xc3\xbcrgen,ou=people,dc=example,dc=com", {})) ==
        "dn:: dWlkPWrDvHJnZW4sb3U9cGVvcGxlLGRjPWV4YW1wbGUsZGM9Y29t\n\n");
  CHECK(format(make_entry(" cn=lead", {})) == "dn:: IGNuPWxlYWQ=\n\n");
}

TEST_CASE("LdifWriter: output matches slapcat byte for byte") {
  // From OpenLDAP 2.5.13 slapcat (default ldif_wrap) with operational attributes left out.
  const std::string kSlapcat =
      "dn: ou=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
      " aaaaaaaaaaaaaaaaaaa,dc=example,dc=com\n"
      "objectClass: organizationalUnit\n"
      "ou: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
      " aaaaaaaaaaaaaaaa\n"
      "\n"
      "dn:: dWlkPWrDvHJnZW4sb3U9cGVvcGxlLGRjPWV4YW1wbGUsZGM9Y29t\n"
      "objectClass: inetOrgPerson\n"
      "uid:: asO8cmdlbg==\n"
      "cn: J\n"
      "sn: M\n"
      "userPassword:: e1NTSEF9YWJjZGVmZ2g=\n"
      "description:: IGxlYWRpbmcgc3BhY2U=\n"
      "description:: OmNvbG9uIHN0YXJ0\n"
      "description:: PGFuZ2xlIHN0YXJ0\n"
      "description:: dHJhaWxpbmcgc3BhY2Ug\n"
      "description:: SsO8cmdlbiBNw7xsbGVy\n"
      "description:: dGFiCWhlcmU=\n"
      "description:: 5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw\n"
      " 5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx5\n"
      " 5Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5b\n"
      " Gx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55Sw5bGx55S\n"
      " w5bGx55Sw5bGx55Sw5bGx55Sw\n"
      "description: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
      "description: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
      " a\n"
      "description: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n"
      " bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n"
      " b\n"
      "description: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n"
      " bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\n"
      " bb\n"
      "jpegPhoto:: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMD\n"
      " EyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWp\n"
      " rbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOk\n"
      " paanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3\n"
      " t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==\n"
      "street: x\n"
      "\n";
  std::string yamada;
  for (int i = 0; i < 40; ++i) {
    yamada += "\xe5\xb1\xb1\xe7\x94\xb0";
  }
  std::string photo;
  for (int i = 0; i < 256; ++i) {
    photo += static_cast<char>(i);
  }
  const std::vector<Entry> entries = {
      make_entry("ou=" + std::string(90, 'a') + ",dc=example,dc=com",
                 {{"objectClass", {"organizationalUnit"}}, {"ou", {std::string(90, 'a')}}}),
      make_entry("uid=j\xc3\xbcrgen,ou=people,dc=example,dc=com",
                 {{"objectClass", {"inetOrgPerson"}},
                  {"uid", {"j\xc3\xbcrgen"}},
                  {"cn", {"J"}},
                  {"sn", {"M"}},
                  {"userPassword", {"{SSHA}abcdefgh"}},
                  {"description",
                   {" leading space", ":colon start", "<angle start", "trailing space ",
                    "J\xc3\xbcrgen M\xc3\xbcller", "tab\there", yamada, std::string(65, 'a'),
                    std::string(66, 'a'), std::string(143, 'b'), std::string(144, 'b')}},
                  {"jpegPhoto", {photo}},
                  {"street", {"x"}}})};
  std::ostringstream out;
  LdifWriter writer(out);
  for (const Entry& entry : entries) {
    REQUIRE(writer.write(entry).ok());
  }
  CHECK(out.str() == kSlapcat);
  CHECK(writer.records_written() == 2);
  CHECK(writer.bytes_written() == kSlapcat.size());

  LdifReader reader(kSlapcat);
  Entry read;
  for (const Entry& entry : entries) {
    REQUIRE(*reader.next(read));
    CHECK(read == entry);
  }
}

TEST_CASE("LdifWriter: no line passes the fold width") {
  std::string binary;
  for (int i = 0; i < 1000; ++i) {
    binary += static_cast<char>(i * 7);
  }
  const Entry entry = make_entry("cn=" + std::string(300, 'n') + ",dc=example",
                                 {{"description", {std::string(1000, 'd')}},
                                  {"jpegPhoto", {binary}},
                                  {"x-a-rather-long-attribute-name-for-testing", {"v"}}});
  for (const std::size_t wrap : {std::size_t{78}, std::size_t{76}, std::size_t{40}}) {
    CAPTURE(wrap);
    const std::string text = format(entry, {.wrap_columns = wrap});
    for (const std::string& line : lines_of(text)) {
      if (!line.starts_with("x-a-rather-long")) {
        CHECK(line.size() <= wrap);
      }
    }
    CHECK(read_back(text) == entry);
  }
}

TEST_CASE("LdifWriter: a description longer than the width is never split") {
  const std::string name = "x-" + std::string(90, 'n');
  const std::vector<std::string> lines = lines_of(line_for(name, "value"));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == name + ": ");
  CHECK(lines[1] == " value");
}

TEST_CASE("LdifWriter: wrap 0 never folds") {
  const std::string value(500, 'v');
  CHECK(line_for("description", value, {.wrap_columns = 0}) == "description: " + value + "\n");
  CHECK(lines_of(line_for("jpegPhoto", std::string(500, '\0'), {.wrap_columns = 0})).size() == 1);
}

TEST_CASE("LdifWriter: plain_utf8 writes readable UTF-8 and never splits a character") {
  const LdifWriterOptions options{.plain_utf8 = true};
  CHECK(line_for("cn", "J\xc3\xbcrgen M\xc3\xbcller", options) ==
        "cn: J\xc3\xbcrgen M\xc3\xbcller\n");
  CHECK(format(make_entry("cn=J\xc3\xbcrgen", {}), options) == "dn: cn=J\xc3\xbcrgen\n\n");
  // Still base64: invalid UTF-8, C1 controls, ASCII controls, the leading and trailing rules.
  CHECK(line_for("cn", "caf\xe9", options) == "cn:: Y2Fm6Q==\n");
  CHECK(line_for("cn", "c1\xc2\x85", options) == "cn:: YzHChQ==\n");
  CHECK(line_for("cn", "\xc3\xbc\t", options) == "cn:: w7wJ\n");
  CHECK(line_for("cn", " \xc3\xbc", options) == "cn:: IMO8\n");

  std::string yamada;
  for (int i = 0; i < 100; ++i) {
    yamada += "\xe5\xb1\xb1\xe7\x94\xb0\xf0\x9f\x98\x80";  // 山田😀
  }
  const std::string text = line_for("cn", yamada, options);
  for (const std::string& line : lines_of(text)) {
    CHECK(line.size() <= kLdifLineWidth);
    CHECK(schema::find_invalid_utf8(line) == std::string_view::npos);
  }
  CHECK(read_back("dn: dc=a\n" + text + "\n").attributes[0].values[0] == yamada);
}

TEST_CASE("LdifWriter: version header comes once before the first record") {
  std::ostringstream out;
  LdifWriter writer(out, {.version_header = true});
  REQUIRE(writer.write(make_entry("dc=a", {})).ok());
  REQUIRE(writer.write(make_entry("dc=b", {})).ok());
  const std::string text = out.str();
  CHECK(text == "version: 1\n\ndn: dc=a\n\ndn: dc=b\n\n");
  LdifReader reader(text);
  Entry entry;
  CHECK(*reader.next(entry));
  CHECK(*reader.next(entry));
  CHECK_FALSE(*reader.next(entry));
}

TEST_CASE("LdifWriter: an attribute without values writes nothing") {
  CHECK(format(make_entry("dc=a", {{"cn", {}}, {"sn", {"x"}}})) == "dn: dc=a\nsn: x\n\n");
}

TEST_CASE("LdifWriter: entries LDIF cannot carry are refused and nothing is written") {
  std::ostringstream out;
  LdifWriter writer(out);
  for (const Entry& bad :
       {make_entry("cn=caf\xe9", {}), make_entry("dc=a", {{"c n", {"x"}}}),
        make_entry("dc=a", {{"", {"x"}}}), make_entry("dc=a", {{"cn:", {"x"}}}),
        make_entry("dc=a", {{"cn\nsn", {"x"}}}), make_entry("dc=a", {{"dn", {"x"}}}),
        make_entry("dc=a", {{"changeType", {"add"}}}),
        make_entry("dc=a", {{"control", {"1.2.3"}}})}) {
    CAPTURE(bad.dn);
    const Status status = writer.write(bad);
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK(status.message().starts_with("LDIF export"));
  }
  CHECK(out.str().empty());
  CHECK(writer.records_written() == 0);
}

TEST_CASE("LdifWriter: a failing stream is an I/O error") {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  LdifWriter writer(out);
  const Status status = writer.write(make_entry("dc=a", {}));
  CHECK(status.code() == StatusCode::kIo);
}

TEST_CASE("LdifWriter: tricky values survive the round trip through LdifReader") {
  std::string all_bytes;
  for (int i = 0; i < 256; ++i) {
    all_bytes += static_cast<char>(i);
  }
  const Entry entry = make_entry(
      "cn=J\xc3\xbcrgen \\2C Jr.,ou=\xe5\xb1\xb1\xe7\x94\xb0,dc=example",
      {{"objectClass", {"top", "person"}},
       {"cn",
        {"J\xc3\xbcrgen", " leading", "trailing ", ":colon", "<angle", "", "#hash", "a:b<c",
         std::string(200, 'x'), std::string(1, '\0'), "\r\n", "  ", "multi\nline\ntext"}},
       {"jpegPhoto", {all_bytes, all_bytes + all_bytes}},
       {"description;lang-ja", {"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"}},
       {"userPassword", {"{CRYPT}$6$salt$hash"}},
       {"x-empty", {""}}});
  for (const LdifWriterOptions& options :
       {LdifWriterOptions{}, LdifWriterOptions{.wrap_columns = 0},
        LdifWriterOptions{.wrap_columns = 2}, LdifWriterOptions{.wrap_columns = 1},
        LdifWriterOptions{.plain_utf8 = true, .base64_passwords = false},
        LdifWriterOptions{.wrap_columns = 5, .plain_utf8 = true}}) {
    CAPTURE(options.wrap_columns);
    CAPTURE(options.plain_utf8);
    const std::string text = format(entry, options);
    CHECK(read_back(text) == entry);
  }
}

}  // namespace
}  // namespace numadir::server
