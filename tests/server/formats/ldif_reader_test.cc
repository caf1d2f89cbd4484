// Tests for server/formats/ldif_reader.h: every RFC 2849 content construct, every rejection (with
// its line number), the sources, progress counters, resuming after a bad record, and streaming a
// large input with bounded memory.
#include "server/formats/ldif_reader.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>
#include "tests/server/formats/entry_builder.h"

namespace numadir::server {
namespace {

using schema::Entry;
using schema::EntryAttribute;

// Reads every record of `text`; fails the test on any error.
std::vector<Entry> read_all(std::string_view text, LdifReaderOptions options = {}) {
  LdifReader reader(text, options);
  std::vector<Entry> entries;
  Entry entry;
  for (;;) {
    Result<bool> more = reader.next(entry);
    REQUIRE_MESSAGE(more.ok(), more.status().to_string());
    if (!*more) {
      break;
    }
    entries.push_back(entry);
  }
  CHECK(reader.records_read() == entries.size());
  CHECK(reader.bytes_consumed() == text.size());
  return entries;
}

Entry read_one(std::string_view text, LdifReaderOptions options = {}) {
  std::vector<Entry> entries = read_all(text, options);
  REQUIRE(entries.size() == 1);
  return entries[0];
}

// Reads `text` up to its first error and checks it: `code`, a message starting "line <line>"
// and containing `fragment`.
void check_error(std::string_view text, StatusCode code, std::uint64_t line,
                 std::string_view fragment, LdifReaderOptions options = {}) {
  const std::string shown(text);
  INFO("input: ", shown);
  LdifReader reader(text, options);
  Entry entry;
  for (;;) {
    Result<bool> more = reader.next(entry);
    if (!more.ok()) {
      const Status status = more.status();
      INFO("message: ", status.message());
      CHECK(status.code() == code);
      CHECK((status.message().starts_with("line " + std::to_string(line) + ":") ||
             status.message().starts_with("line " + std::to_string(line) + " (")));
      CHECK(status.message().find(fragment) != std::string::npos);
      return;
    }
    REQUIRE_MESSAGE(*more, "no error before the end of the input");
  }
}

using testing::make_entry;

TEST_CASE("LdifReader: reads a record and gathers the values of each attribute") {
  const Entry entry = read_one(
      "dn: uid=jdoe,ou=people,dc=example,dc=com\n"
      "objectClass: top\n"
      "objectClass: inetOrgPerson\n"
      "uid: jdoe\n"
      "cn: John Doe\n"
      "OBJECTCLASS: person\n"
      "sn: Doe\n");
  CHECK(entry == make_entry("uid=jdoe,ou=people,dc=example,dc=com",
                            {{"objectClass", {"top", "inetOrgPerson", "person"}},
                             {"uid", {"jdoe"}},
                             {"cn", {"John Doe"}},
                             {"sn", {"Doe"}}}));
}

TEST_CASE("LdifReader: empty input and blank lines only give no record") {
  CHECK(read_all("").empty());
  CHECK(read_all("\n\n\r\n").empty());
  CHECK(read_all("# only a comment\n").empty());
  CHECK(read_all("version: 1\n").empty());
}

TEST_CASE("LdifReader: records are separated by one or more blank lines") {
  const std::vector<Entry> entries = read_all(
      "\n\n"
      "dn: dc=a\n"
      "dc: a\n"
      "\n"
      "dn: dc=b\n"
      "dc: b\n"
      "\n\n\n"
      "dn: dc=c\n"
      "dc: c");  // No line end at the end of the input.
  REQUIRE(entries.size() == 3);
  CHECK(entries[0] == make_entry("dc=a", {{"dc", {"a"}}}));
  CHECK(entries[1] == make_entry("dc=b", {{"dc", {"b"}}}));
  CHECK(entries[2] == make_entry("dc=c", {{"dc", {"c"}}}));
}

TEST_CASE("LdifReader: a record may hold only its dn") {
  CHECK(read_one("dn: dc=example\n\n") == make_entry("dc=example", {}));
}

TEST_CASE("LdifReader: version 1 is accepted as the first line") {
  SUBCASE("then a blank line") { CHECK(read_one("version: 1\n\ndn: dc=a\n").dn == "dc=a"); }
  SUBCASE("directly followed by the first record") {
    CHECK(read_one("version: 1\ndn: dc=a\n").dn == "dc=a");
  }
  SUBCASE("after comments and blank lines") {
    CHECK(read_one("# export\n\nVersion:   1\n\ndn: dc=a\n").dn == "dc=a");
  }
}

TEST_CASE("LdifReader: a version other than 1 is refused for good") {
  LdifReader reader("version: 2\n\ndn: dc=a\n");
  Entry entry;
  Result<bool> first = reader.next(entry);
  REQUIRE_FALSE(first.ok());
  CHECK(first.status().code() == StatusCode::kUnsupported);
  CHECK(first.status().message() == "line 1: unsupported LDIF version '2' (only 'version: 1')");
  Result<bool> again = reader.next(entry);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status() == first.status());
}

TEST_CASE("LdifReader: version is refused after the first line") {
  check_error("dn: dc=a\n\nversion: 1\n", StatusCode::kMalformed, 3,
              "'version:' is only allowed as the first line");
}

TEST_CASE("LdifReader: comments are skipped anywhere and may be folded") {
  const std::vector<Entry> entries = read_all(
      "# a comment before the version\n"
      "version: 1\n"
      "# a folded comment\n"
      " that goes on: here\n"
      "\n"
      "# comment before the record\n"
      "dn: dc=a\n"
      "# comment inside the record\n"
      "dc: a\n"
      "#folded\n"
      " dc: not-a-value\n"
      "description: d\n"
      "\n"
      "#\n");
  REQUIRE(entries.size() == 1);
  CHECK(entries[0] == make_entry("dc=a", {{"dc", {"a"}}, {"description", {"d"}}}));
}

TEST_CASE("LdifReader: folded lines are joined without the leading space") {
  SUBCASE("a folded value") {
    const Entry entry = read_one("dn: dc=a\ndescription: first part\n  and  second\n part\n");
    CHECK(entry.attributes[0].values[0] == "first part and  secondpart");
  }
  SUBCASE("a folded dn") {
    CHECK(read_one("dn: uid=jdoe,ou=peo\n ple,dc=example\n").dn == "uid=jdoe,ou=people,dc=example");
  }
  SUBCASE("a fold inside the attribute description") {
    CHECK(read_one("dn: dc=a\ndesc\n ription: x\n") ==
          make_entry("dc=a", {{"description", {"x"}}}));
  }
  SUBCASE("a folded base64 value") {
    CHECK(read_one("dn: dc=a\ncn:: SGVsbG8sI\n HdvcmxkIQ==\n").attributes[0].values[0] ==
          "Hello, world!");
  }
  SUBCASE("an empty continuation line") {
    CHECK(read_one("dn: dc=a\ncn: ab\n \n c\n").attributes[0].values[0] == "abc");
  }
  SUBCASE("CRLF line ends") {
    CHECK(read_one("dn: dc=a\r\ncn: ab\r\n c\r\n\r\n").attributes[0].values[0] == "abc");
  }
}

TEST_CASE("LdifReader: CRLF and LF line ends may be mixed") {
  const std::vector<Entry> entries =
      read_all("version: 1\r\n\r\ndn: dc=a\r\ncn: a\r\n\r\ndn: dc=b\ncn: b\n\r\ndn: dc=c\r\n");
  REQUIRE(entries.size() == 3);
  CHECK(entries[0] == make_entry("dc=a", {{"cn", {"a"}}}));
  CHECK(entries[1] == make_entry("dc=b", {{"cn", {"b"}}}));
  CHECK(entries[2] == make_entry("dc=c", {}));
}

TEST_CASE("LdifReader: base64 dn and values are decoded") {
  const Entry entry = read_one(
      "dn:: Y249SsO8cmdlbixkYz1leGFtcGxl\n"
      "cn:: SsO8cmdlbg==\n"
      "cn:: IGxlYWRpbmcgc3BhY2U=\n"
      "jpegPhoto:: AAEC/w==\n"
      "description::\n"
      "description::   \n");
  CHECK(entry == make_entry("cn=J\xc3\xbcrgen,dc=example",
                            {{"cn", {"J\xc3\xbcrgen", " leading space"}},
                             {"jpegPhoto", {std::string("\x00\x01\x02\xff", 4)}},
                             {"description", {"", ""}}}));
}

TEST_CASE("LdifReader: empty values and spaces after the colon") {
  const Entry entry = read_one("dn:\ndescription:\ndescription: \ncn:    spaced out  \n");
  CHECK(entry == make_entry("", {{"description", {"", ""}}, {"cn", {"spaced out  "}}}));
}

TEST_CASE("LdifReader: attribute descriptions with options and OIDs") {
  const Entry entry =
      read_one("dn: dc=a\ncn;lang-en: Car\ncn;lang-fr: Voiture\n2.5.4.3: oid\nCN;LANG-EN: Auto\n");
  CHECK(entry == make_entry("dc=a", {{"cn;lang-en", {"Car", "Auto"}},
                                     {"cn;lang-fr", {"Voiture"}},
                                     {"2.5.4.3", {"oid"}}}));
}

TEST_CASE("LdifReader: plain values may hold UTF-8 and SAFE-CHAR controls") {
  const Entry entry = read_one(
      "dn: cn=\xe5\xb1\xb1\xe7\x94\xb0,dc=example\n"
      "cn: \xe5\xb1\xb1\xe7\x94\xb0 \xf0\x9f\x98\x80\n"
      "description: tab\there: colon < and #hash\n");
  CHECK(entry.dn == "cn=\xe5\xb1\xb1\xe7\x94\xb0,dc=example");
  CHECK(entry.attributes[0].values[0] == "\xe5\xb1\xb1\xe7\x94\xb0 \xf0\x9f\x98\x80");
  CHECK(entry.attributes[1].values[0] == "tab\there: colon < and #hash");
}

TEST_CASE("LdifReader: an ldapsearch style dump is read") {
  // As `ldapsearch -L -x -b dc=example,dc=com` prints it: comments, version, base64 for
  // userPassword and non-ASCII, folding at 78 columns, the trailing result comments.
  const std::string dump =
      "# extended LDIF\n"
      "#\n"
      "# LDAPv3\n"
      "# base <dc=example,dc=com> with scope subtree\n"
      "# filter: (objectclass=*)\n"
      "# requesting: ALL\n"
      "#\n"
      "\n"
      "version: 1\n"
      "\n"
      "# example.com\n"
      "dn: dc=example,dc=com\n"
      "objectClass: top\n"
      "objectClass: dcObject\n"
      "objectClass: organization\n"
      "o: Example Inc.\n"
      "dc: example\n"
      "structuralObjectClass: organization\n"
      "entryUUID: 5ea6a4a8-4f5f-103e-8a0e-1d3b7e0a8d3c\n"
      "creatorsName: cn=admin,dc=example,dc=com\n"
      "createTimestamp: 20240101120000Z\n"
      "entryCSN: 20240101120000.123456Z#000000#000#000000\n"
      "modifiersName: cn=admin,dc=example,dc=com\n"
      "modifyTimestamp: 20240101120000Z\n"
      "\n"
      "# j\xc3\xbcrgen, people, example.com\n"
      "dn:: dWlkPWrDvHJnZW4sb3U9cGVvcGxlLGRjPWV4YW1wbGUsZGM9Y29t\n"
      "objectClass: inetOrgPerson\n"
      "objectClass: posixAccount\n"
      "uid:: asO8cmdlbg==\n"
      "cn:: SsO8cmdlbiBNw7xsbGVy\n"
      "sn:: TcO8bGxlcg==\n"
      "uidNumber: 10001\n"
      "gidNumber: 10001\n"
      "homeDirectory: /home/juergen\n"
      "loginShell: /bin/bash\n"
      "userPassword:: e1NTSEF9V2pMYTBQRjd2SnVOQ1l4bm5jOGZ5ZGJhQmZOTWxyN2xjUjZvTGc9PQ=\n"
      " =\n"
      "description: A rather long description that does not fit on one line and so \n"
      " it is folded by the server at seventy-eight columns, as slapcat does it.\n"
      "\n"
      "# search result\n"
      "# search: 2\n"
      "# result: 0 Success\n"
      "\n"
      "# numResponses: 3\n"
      "# numEntries: 2\n";
  const std::vector<Entry> entries = read_all(dump);
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].dn == "dc=example,dc=com");
  CHECK(entries[0].attributes.size() == 10);
  CHECK(entries[0].attributes[0] ==
        EntryAttribute{"objectClass", {"top", "dcObject", "organization"}});
  CHECK(entries[0].attributes[7] ==
        EntryAttribute{"entryCSN", {"20240101120000.123456Z#000000#000#000000"}});
  const Entry& person = entries[1];
  CHECK(person.dn == "uid=j\xc3\xbcrgen,ou=people,dc=example,dc=com");
  CHECK(person.attributes[2] == EntryAttribute{"cn", {"J\xc3\xbcrgen M\xc3\xbcller"}});
  CHECK(person.attributes[8] ==
        EntryAttribute{"userPassword", {"{SSHA}WjLa0PF7vJuNCYxnnc8fydbaBfNMlr7lcR6oLg=="}});
  CHECK(person.attributes[9].values[0] ==
        "A rather long description that does not fit on one line and so it is folded by the "
        "server at seventy-eight columns, as slapcat does it.");
}

// ---- errors ----

TEST_CASE("LdifReader: a line without a colon is refused") {
  check_error("dn: dc=a\ncn: a\nthis line has no colon\n", StatusCode::kMalformed, 3,
              "missing ':' after the attribute description");
  check_error("dn dc=a\n", StatusCode::kMalformed, 1, "missing ':'");
}

TEST_CASE("LdifReader: the record context is named in errors after its first line") {
  LdifReader reader("dn: dc=a\n\ndn: dc=b\ncn: b\nbroken\n");
  Entry entry;
  REQUIRE(*reader.next(entry));
  Result<bool> failed = reader.next(entry);
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.status().message().starts_with("line 5 (record at line 3): missing ':'"));
  CHECK(reader.record_line() == 3);
}

TEST_CASE("LdifReader: invalid base64 is refused") {
  SUBCASE("a character outside the alphabet") {
    check_error("dn: dc=a\ncn:: Zm9v!mFy\n", StatusCode::kMalformed, 2,
                "bad base64 in the value of 'cn': invalid base64 character '!' at offset 4");
  }
  SUBCASE("a length that is not a multiple of 4") {
    check_error("dn: dc=a\ncn:: Zm9vY\n", StatusCode::kMalformed, 2, "not a multiple of 4");
  }
  SUBCASE("padding in the middle") {
    check_error("dn: dc=a\ncn:: Zg==Zm9v\n", StatusCode::kMalformed, 2, "misplaced base64 padding");
  }
  SUBCASE("bad padding in the last group") {
    check_error("dn: dc=a\ncn:: Zm9vZ=9v\n", StatusCode::kMalformed, 2, "misplaced base64 padding");
  }
  SUBCASE("a trailing space") {
    check_error("dn: dc=a\ncn:: Zm9v \n", StatusCode::kMalformed, 2, "not a multiple of 4");
  }
  SUBCASE("in the dn") {
    check_error("dn:: !!!!\n", StatusCode::kMalformed, 1, "bad base64 in the value of 'dn'");
  }
}

TEST_CASE("LdifReader: a record must start with its dn") {
  SUBCASE("missing dn") {
    check_error("cn: a\nsn: b\n", StatusCode::kMalformed, 1,
                "record does not start with 'dn:' (found 'cn')");
  }
  SUBCASE("dn not first") {
    check_error("dn: dc=a\n\nobjectClass: top\ndn: dc=b\n", StatusCode::kMalformed, 3,
                "record does not start with 'dn:' (found 'objectClass')");
  }
  SUBCASE("a second dn in one record") {
    check_error("dn: dc=a\ncn: a\ndn: dc=b\n", StatusCode::kMalformed, 3,
                "a second 'dn:' in one record");
  }
}

TEST_CASE("LdifReader: invalid attribute descriptions are refused") {
  for (const std::string_view bad : {"c n", "cn_x", "-cn", "1.2.", "1..2", "1.2a", "cn;", "cn;;x",
                                     "cn;a_b", "cn ", "\xc3\xa9t\xc3\xa9"}) {
    const std::string text = "dn: dc=a\n" + std::string(bad) + ": v\n";
    check_error(text, StatusCode::kMalformed, 2, "invalid attribute description");
  }
  check_error("dn: dc=a\n: v\n", StatusCode::kMalformed, 2, "empty attribute description");
  check_error("d n: dc=a\n", StatusCode::kMalformed, 1, "invalid attribute description 'd n'");
}

TEST_CASE("LdifReader: a continuation line with nothing to continue is refused") {
  check_error(" dn: dc=a\n", StatusCode::kMalformed, 1, "no line to continue");
  check_error("dn: dc=a\n\n continued\n", StatusCode::kMalformed, 3, "no line to continue");
}

TEST_CASE("LdifReader: input that ends inside a folded line is refused") {
  check_error("dn: dc=a\ncn: abc\n ", StatusCode::kMalformed, 3,
              "the input ends inside a folded line");
}

TEST_CASE("LdifReader: plain values that break SAFE-STRING are refused") {
  SUBCASE("starting with a colon") {
    check_error("dn: dc=a\ncn: :x\n", StatusCode::kMalformed, 2,
                "a plain value must not start with ':'");
  }
  SUBCASE("starting with '<'") {
    check_error("dn: dc=a\ncn:  <x\n", StatusCode::kMalformed, 2,
                "a plain value must not start with '<'");
  }
  SUBCASE("holding NUL") {
    check_error(std::string_view("dn: dc=a\ncn: a\0b\n", 17), StatusCode::kMalformed, 2,
                "must not contain NUL");
  }
  SUBCASE("holding CR") {
    check_error("dn: dc=a\ncn: a\rb\n", StatusCode::kMalformed, 2, "must not contain CR");
  }
  SUBCASE("invalid UTF-8") {
    check_error("dn: dc=a\ncn: caf\xe9\n", StatusCode::kMalformed, 2,
                "invalid UTF-8 at offset 3 of a plain value");
    check_error("dn: dc=a\ncn: \xc0\xaf\n", StatusCode::kMalformed, 2, "invalid UTF-8");
    check_error("dn: dc=a\ncn: \xed\xa0\x80\n", StatusCode::kMalformed, 2, "invalid UTF-8");
    check_error("dn: caf\xe9\n", StatusCode::kMalformed, 1, "invalid UTF-8");
  }
  SUBCASE("a base64 dn that is not UTF-8") {
    check_error("dn:: Y2Fm6Q==\n", StatusCode::kMalformed, 1, "the base64 DN is not valid UTF-8");
  }
}

TEST_CASE("LdifReader: change records are refused with advice") {
  SUBCASE("changetype") {
    LdifReader reader("version: 1\n\ndn: cn=a,dc=example\nchangetype: modify\nreplace: cn\n");
    Entry entry;
    Result<bool> result = reader.next(entry);
    REQUIRE_FALSE(result.ok());
    CHECK(result.status().code() == StatusCode::kUnsupported);
    CHECK(result.status().message() ==
          "line 4 (record at line 3): change records (changetype: modify) are not supported by "
          "import; use ldapadd/ldapmodify against a running server");
  }
  SUBCASE("changetype add") {
    check_error("dn: dc=a\nchangeType: add\ncn: a\n", StatusCode::kUnsupported, 2,
                "change records (changetype: add) are not supported by import; use "
                "ldapadd/ldapmodify against a running server");
  }
  SUBCASE("control") {
    check_error("dn: dc=a\ncontrol: 1.2.840.113556.1.4.805 true\nchangetype: delete\n",
                StatusCode::kUnsupported, 2,
                "change records (control: ...) are not supported by import");
  }
}

TEST_CASE("LdifReader: URL values are refused unless file URLs are allowed") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ldif_reader_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path photo = dir / "photo 1.bin";
  {
    std::ofstream out(photo, std::ios::binary);
    out << std::string("\x00\xff\r\nbinary", 9);
  }
  const std::string url_line = "jpegPhoto:< file://" + dir.string() + "/photo%201.bin\n";

  SUBCASE("refused by default") {
    check_error("dn: dc=a\n" + url_line, StatusCode::kUnsupported, 2,
                "URL values (attr:< url) are not allowed");
  }
  SUBCASE("read when allowed") {
    const Entry entry = read_one("dn: dc=a\n" + url_line, {.allow_file_urls = true});
    CHECK(entry.attributes[0] ==
          EntryAttribute{"jpegPhoto", {std::string("\x00\xff\r\nbinary", 9)}});
    const std::string localhost = "dn: dc=a\ncn:<file://localhost" + photo.string() + "\n";
    CHECK(read_one(localhost, {.allow_file_urls = true}).attributes[0].values[0].size() == 9);
  }
  SUBCASE("other schemes and hosts are refused") {
    check_error("dn: dc=a\ncn:< http://example.com/x\n", StatusCode::kUnsupported, 2,
                "only file:// URLs", {.allow_file_urls = true});
    check_error("dn: dc=a\ncn:< file://otherhost/etc/passwd\n", StatusCode::kUnsupported, 2,
                "only local file:// URLs", {.allow_file_urls = true});
  }
  SUBCASE("a missing file") {
    check_error("dn: dc=a\ncn:< file://" + dir.string() + "/absent\n", StatusCode::kNotFound, 2,
                "cannot open", {.allow_file_urls = true});
  }
  SUBCASE("a file over the record limit") {
    const std::filesystem::path big = dir / "big.bin";
    {
      std::ofstream out(big, std::ios::binary);
      out << std::string(1000, 'b');
    }
    check_error("dn: dc=a\ncn:< file://" + big.string() + "\n", StatusCode::kLimitExceeded, 2,
                "longer than 300 bytes", {.max_record_bytes = 300, .allow_file_urls = true});
  }
  SUBCASE("never for the dn") {
    check_error("dn:< file://" + photo.string() + "\n", StatusCode::kMalformed, 1,
                "a DN cannot be given as a URL", {.allow_file_urls = true});
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("LdifReader: over-long lines and records are refused for good") {
  const LdifReaderOptions options{.max_record_bytes = 100, .read_chunk_bytes = 16};
  SUBCASE("one physical line") {
    const std::string text = "dn: dc=a\ndescription: " + std::string(200, 'x') + "\n";
    check_error(text, StatusCode::kLimitExceeded, 2, "line longer than max_record_bytes (100)",
                options);
  }
  SUBCASE("a folded line") {
    std::string text = "dn: dc=a\ndescription: x\n";
    for (int i = 0; i < 10; ++i) {
      text += " " + std::string(20, 'y') + "\n";
    }
    check_error(text, StatusCode::kLimitExceeded, 2, "folded line longer than", options);
  }
  SUBCASE("a record of many short lines") {
    std::string text = "dn: dc=a\n";
    for (int i = 0; i < 20; ++i) {
      text += "cn: value" + std::to_string(i) + "\n";
    }
    text += "\ndn: dc=b\n";
    check_error(text, StatusCode::kLimitExceeded, 10, "record longer than", options);
    LdifReader reader(text, options);
    Entry entry;
    CHECK_FALSE(reader.next(entry).ok());
    CHECK(reader.next(entry).status().code() == StatusCode::kLimitExceeded);
  }
  SUBCASE("a long line within the limit grows the buffer only as far as needed") {
    const std::string value(100 - 4, 'v');
    const std::string text = "dn: dc=a\r\ncn: " + value + "\r\n";
    const LdifReaderOptions small{.max_record_bytes = 120, .read_chunk_bytes = 8};
    LdifReader reader(text, small);
    Entry entry;
    REQUIRE(*reader.next(entry));
    CHECK(entry.attributes[0].values[0] == value);
    CHECK(reader.buffer_bytes_for_test() <= 123);
  }
}

TEST_CASE("LdifReader: after a bad record the next call resumes at the following record") {
  LdifReader reader(
      "dn: dc=a\n"
      "cn:: ###\n"
      "sn: skipped\n"
      "\n"
      "dn: dc=b\n"
      "changetype: delete\n"
      "\n"
      "dn: dc=c\n"
      "cn: c\n");
  Entry entry;
  Result<bool> first = reader.next(entry);
  REQUIRE_FALSE(first.ok());
  CHECK(first.status().message().starts_with("line 2 (record at line 1)"));
  Result<bool> second = reader.next(entry);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().message().starts_with("line 6 (record at line 5)"));
  Result<bool> third = reader.next(entry);
  REQUIRE(third.ok());
  REQUIRE(*third);
  CHECK(entry == make_entry("dc=c", {{"cn", {"c"}}}));
  CHECK(reader.record_line() == 8);
  CHECK(*reader.next(entry) == false);
  CHECK(reader.records_read() == 1);
}

// ---- sources, progress and memory ----

constexpr std::string_view kSample =
    "version: 1\r\n"
    "\r\n"
    "# first\n"
    "dn: dc=example,dc=com\n"
    "objectClass: top\n"
    "objectClass: domain\n"
    "dc: example\n"
    "description:: IHN0YXJ0cyB3aXRoIGEgc3BhY2U=\n"
    "\n"
    "dn: ou=people,dc=example,dc=com\r\n"
    "objectClass: organizationalUnit\r\n"
    "ou: people\r\n"
    "description: a long one that is folded across several physical lines of the\r\n"
    "  input, with a CRLF line end on each and a space kept at the start of this one\r\n"
    "\n\n";

std::vector<Entry> sample_entries() {
  return {make_entry("dc=example,dc=com", {{"objectClass", {"top", "domain"}},
                                           {"dc", {"example"}},
                                           {"description", {" starts with a space"}}}),
          make_entry("ou=people,dc=example,dc=com",
                     {{"objectClass", {"organizationalUnit"}},
                      {"ou", {"people"}},
                      {"description",
                       {"a long one that is folded across several physical lines of the input, "
                        "with a CRLF line end on each and a space kept at the start of this "
                        "one"}}})};
}

std::vector<Entry> drain(LdifReader& reader) {
  std::vector<Entry> entries;
  Entry entry;
  for (;;) {
    Result<bool> more = reader.next(entry);
    REQUIRE_MESSAGE(more.ok(), more.status().to_string());
    if (!*more) {
      return entries;
    }
    entries.push_back(entry);
  }
}

TEST_CASE("LdifReader: every source and buffer size gives the same records") {
  const std::vector<Entry> expected = sample_entries();
  SUBCASE("string") { CHECK(read_all(kSample) == expected); }
  SUBCASE("tiny read chunks through every buffer boundary") {
    for (std::size_t chunk = 1; chunk <= 40; ++chunk) {
      CAPTURE(chunk);
      CHECK(read_all(kSample, {.read_chunk_bytes = chunk}) == expected);
    }
  }
  SUBCASE("istream") {
    std::istringstream in{std::string(kSample)};
    LdifReader reader(in, {.read_chunk_bytes = 7});
    CHECK(drain(reader) == expected);
    CHECK(reader.bytes_consumed() == kSample.size());
    CHECK_FALSE(reader.input_size_bytes().has_value());
  }
  SUBCASE("FILE and descriptor and path") {
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("ldif_reader_source_" + std::to_string(getpid()));
    {
      std::ofstream out(path, std::ios::binary);
      out << kSample;
    }
    {
      std::FILE* file = std::fopen(path.c_str(), "rb");
      REQUIRE(file != nullptr);
      LdifReader reader(file);
      CHECK(drain(reader) == expected);
      CHECK(reader.input_size_bytes() == kSample.size());
      std::fclose(file);
    }
    {
      const int fd = ::open(path.c_str(), O_RDONLY);
      REQUIRE(fd >= 0);
      LdifReader reader(fd, {.read_chunk_bytes = 5});
      CHECK(drain(reader) == expected);
      ::close(fd);
    }
    {
      Result<std::unique_ptr<LdifReader>> reader = LdifReader::open_file(path.string());
      REQUIRE(reader.ok());
      CHECK(drain(**reader) == expected);
      CHECK((*reader)->bytes_consumed() == kSample.size());
      CHECK((*reader)->input_size_bytes() == kSample.size());
    }
    std::filesystem::remove(path);
    Result<std::unique_ptr<LdifReader>> missing = LdifReader::open_file(path.string());
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.status().code() == StatusCode::kIo);
    CHECK(missing.status().message().find(path.string()) != std::string::npos);
  }
}

TEST_CASE("LdifReader: progress counters follow the records") {
  LdifReader reader(kSample);
  CHECK(reader.input_size_bytes() == kSample.size());
  Entry entry;
  REQUIRE(*reader.next(entry));
  CHECK(reader.records_read() == 1);
  CHECK(reader.record_line() == 4);
  CHECK(reader.line_number() == 9);  // Through the blank line that ended the record.
  CHECK(reader.bytes_consumed() == kSample.find("dn: ou=people"));
  REQUIRE(*reader.next(entry));
  CHECK(reader.records_read() == 2);
  CHECK(reader.record_line() == 10);
  REQUIRE_FALSE(*reader.next(entry));
  CHECK(reader.bytes_consumed() == kSample.size());
  CHECK(reader.line_number() == 16);
}

TEST_CASE("LdifReader: the caller's Entry is refilled in place") {
  LdifReader reader(
      "dn: cn=first,dc=example\ncn: first-value-on-the-heap\nsn: a\nsn: b\n"
      "description: only here\n\n"
      "dn: cn=2nd,dc=example\ncn: second-value-heap\nsn: c\n");
  Entry entry;
  REQUIRE(*reader.next(entry));
  const char* dn_storage = entry.dn.data();
  const EntryAttribute* attributes_storage = entry.attributes.data();
  const char* cn_storage = entry.attributes[0].values[0].data();
  entry.dn.reserve(64);
  dn_storage = entry.dn.data();
  REQUIRE(*reader.next(entry));
  CHECK(entry == make_entry("cn=2nd,dc=example", {{"cn", {"second-value-heap"}}, {"sn", {"c"}}}));
  CHECK(entry.dn.data() == dn_storage);
  CHECK(entry.attributes.data() == attributes_storage);
  CHECK(entry.attributes[0].values[0].data() == cn_storage);
}

// A generated input, never held whole: `records` records of ~500 bytes each.
class GeneratedLdif : public std::streambuf {
 public:
  explicit GeneratedLdif(std::uint64_t records) : records_(records) {}
  std::uint64_t bytes_produced() const { return produced_; }

 protected:
  int_type underflow() override {
    if (next_ == records_) {
      return traits_type::eof();
    }
    const std::string n = std::to_string(next_++);
    chunk_ = "dn: uid=user" + n + ",ou=people,dc=example,dc=com\n" +
             "objectClass: top\nobjectClass: person\nobjectClass: inetOrgPerson\n" + "uid: user" +
             n + "\ncn: User " + n + "\nsn: " + n + "\n" + "mail: user" + n + "@example.com\n" +
             "userPassword:: e1NTSEF9V2pMYTBQRjd2SnVOQ1l4bm5jOGZ5ZGJhQmZOTWxyN2xjUjZvTGc9PQ==\n" +
             "description: " + std::string(200, static_cast<char>('a' + next_ % 26)) + "\n" +
             " folded tail\n\n";
    produced_ += chunk_.size();
    setg(chunk_.data(), chunk_.data(), chunk_.data() + chunk_.size());
    return traits_type::to_int_type(chunk_[0]);
  }

 private:
  const std::uint64_t records_;
  std::uint64_t next_ = 0;
  std::uint64_t produced_ = 0;
  std::string chunk_;
};

TEST_CASE("LdifReader: a 50 MB stream is read with bounded memory") {
  constexpr std::uint64_t kRecords = 110'000;  // ~52 MB.
  GeneratedLdif source(kRecords);
  std::istream in(&source);
  const LdifReaderOptions options{.read_chunk_bytes = 256 * 1024};
  LdifReader reader(in, options);
  Entry entry;
  std::uint64_t count = 0;
  std::size_t biggest_capacity = 0;
  const EntryAttribute* attributes_storage = nullptr;
  for (;;) {
    Result<bool> more = reader.next(entry);
    REQUIRE_MESSAGE(more.ok(), more.status().to_string());
    if (!*more) {
      break;
    }
    if (count == 0) {
      attributes_storage = entry.attributes.data();
    }
    // Spot checks rather than a CHECK per record: 110k records.
    if (count % 10'000 == 0) {
      const std::string n = std::to_string(count);
      REQUIRE(entry.dn == "uid=user" + n + ",ou=people,dc=example,dc=com");
      REQUIRE(entry.attributes.size() == 7);
      REQUIRE(entry.attributes[6].values[0].size() == 200 + 11);
    }
    REQUIRE(entry.attributes.data() == attributes_storage);  // The Entry is reused.
    biggest_capacity = std::max(biggest_capacity, reader.buffer_bytes_for_test());
    ++count;
  }
  CHECK(count == kRecords);
  CHECK(source.bytes_produced() > 50'000'000);
  CHECK(reader.bytes_consumed() == source.bytes_produced());
  CHECK(biggest_capacity == options.read_chunk_bytes);
}

TEST_CASE("LdifReader: is_valid_attribute_description follows RFC 2849") {
  for (const std::string_view good : {"cn", "CN", "x-custom-attr", "cn;lang-en", "cn;binary;x-1",
                                      "2.5.4.3", "2.5.4.3;lang-de", "1", "a1-"}) {
    CAPTURE(good);
    CHECK(is_valid_attribute_description(good));
  }
  for (const std::string_view bad :
       {"", "1cn", "-a", "c_n", "cn;", ";x", "1.", ".1", "1..2", "cn;x y", "cn:", "c\xc3\xa9"}) {
    CAPTURE(bad);
    CHECK_FALSE(is_valid_attribute_description(bad));
  }
}

}  // namespace
}  // namespace numadir::server
