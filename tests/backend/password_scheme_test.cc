// Tests for backend/password_scheme.h: every scheme hashes and verifies its own values, values
// made by OpenLDAP's slappasswd (tests/data/passwords/, from tests/tools/make_password_fixtures.sh)
// and by independent implementations verify, and malformed values are refused without a crash.
#include "backend/password_scheme.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <latch>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/detail/password_scheme.h"

namespace numadir::backend {
namespace {

using namespace std::string_view_literals;

// Cheap argon2 costs for tests that are not about the defaults.
HashOptions cheap_options() {
  HashOptions options;
  options.argon2_memory_kib = 256;
  options.argon2_iterations = 1;
  options.pbkdf2_iterations = 1000;
  return options;
}

VerifyPolicy cleartext_allowed() {
  VerifyPolicy policy;
  policy.allow_cleartext = true;
  return policy;
}

// Verifies and requires an answer (not an error).
bool verifies(std::string_view password, std::string_view stored, const VerifyPolicy& policy = {}) {
  const std::string shown(stored);  // INFO keeps a reference.
  INFO("stored: ", shown);
  Result<bool> result = verify_password(password, stored, policy);
  REQUIRE_MESSAGE(result.ok(), result.status().to_string());
  return *result;
}

// Checks that verifying `stored` fails with `code` and a message holding `fragment`.
void check_refused(std::string_view stored, StatusCode code, std::string_view fragment = {},
                   const VerifyPolicy& policy = {}) {
  const std::string shown(stored);
  INFO("stored: ", shown);
  Result<bool> result = verify_password("secret", stored, policy);
  REQUIRE_FALSE(result.ok());
  const Status status = result.status();
  INFO("status: ", status.to_string());
  CHECK(status.code() == code);
  CHECK(status.message().find(fragment) != std::string::npos);
}

std::string hash_ok(std::string_view password, PasswordScheme scheme,
                    const HashOptions& options = cheap_options()) {
  Result<std::string> hashed = hash_password(password, scheme, options);
  REQUIRE_MESSAGE(hashed.ok(), hashed.status().to_string());
  return std::move(hashed).value();
}

constexpr std::array kAllSchemes = {
    PasswordScheme::kCleartext,    PasswordScheme::kMd5,          PasswordScheme::kSmd5,
    PasswordScheme::kSha1,         PasswordScheme::kSsha1,        PasswordScheme::kSha256,
    PasswordScheme::kSsha256,      PasswordScheme::kSha384,       PasswordScheme::kSsha384,
    PasswordScheme::kSha512,       PasswordScheme::kSsha512,      PasswordScheme::kPbkdf2Sha1,
    PasswordScheme::kPbkdf2Sha256, PasswordScheme::kPbkdf2Sha512, PasswordScheme::kArgon2,
    PasswordScheme::kCrypt,
};

struct Fixture {
  std::string scheme;
  std::string password;
  std::string stored;
  int line = 0;
};

std::vector<Fixture> load_fixtures(const std::string& name) {
  const std::string path = std::string(NUMADIR_TEST_DATA_DIR) + "/passwords/" + name;
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open ", path);
  std::vector<Fixture> fixtures;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line.front() == '#') {
      continue;
    }
    const std::size_t first = line.find('\t');
    const std::size_t second = line.find('\t', first + 1);
    REQUIRE_MESSAGE(second != std::string::npos, path, ":", number, ": expected 3 fields");
    fixtures.push_back({line.substr(0, first), line.substr(first + 1, second - first - 1),
                        line.substr(second + 1), number});
  }
  return fixtures;
}

// Returns: the first fixture of file `name` whose stored value starts with `prefix`.
Fixture find_fixture(const std::string& name, std::string_view prefix) {
  for (Fixture& fixture : load_fixtures(name)) {
    if (fixture.stored.starts_with(prefix)) {
      return fixture;
    }
  }
  FAIL("no fixture in ", name, " starts with ", std::string(prefix));
  return {};
}

void check_fixtures(const std::string& name, std::size_t min_count) {
  const std::vector<Fixture> fixtures = load_fixtures(name);
  CHECK(fixtures.size() >= min_count);
  for (const Fixture& fixture : fixtures) {
    INFO(name, ":", fixture.line, ": ", fixture.stored);
    Result<PasswordScheme> expected = parse_password_scheme(fixture.scheme);
    REQUIRE(expected.ok());
    Result<PasswordScheme> found = stored_password_scheme(fixture.stored);
    REQUIRE(found.ok());
    CHECK(*found == *expected);
    CHECK(verifies(fixture.password, fixture.stored));
    // A different first byte: also wrong for DES crypt, which reads only 8 bytes.
    CHECK_FALSE(verifies("not " + fixture.password, fixture.stored));
  }
}

TEST_CASE("PasswordScheme: every writable scheme hashes and then verifies") {
  for (PasswordScheme scheme : kAllSchemes) {
    if (!password_scheme_writable(scheme)) {
      continue;
    }
    INFO("scheme: ", password_scheme_name(scheme));
    // Default options: what a server writes unless configured otherwise.
    const std::string stored = hash_ok("s3cret pässword", scheme, HashOptions{});
    CHECK(stored.starts_with(password_scheme_name(scheme)));
    CHECK(verifies("s3cret pässword", stored));
    CHECK_FALSE(verifies("s3cret pässwore", stored));
    CHECK_FALSE(verifies("", stored));
    // A fresh salt every time.
    CHECK(hash_ok("s3cret pässword", scheme) != hash_ok("s3cret pässword", scheme));
  }
}

TEST_CASE("PasswordScheme: a reused scratch gives every check its answer and is left wiped") {
  PasswordScratch scratch;
  for (PasswordScheme scheme : kAllSchemes) {
    if (!password_scheme_writable(scheme)) {
      continue;
    }
    INFO("scheme: ", password_scheme_name(scheme));
    const std::string stored = hash_ok("s3cret", scheme, cheap_options());
    const VerifyPolicy policy;
    const Result<bool> match = verify_password("s3cret", stored, policy, scratch);
    REQUIRE(match.ok());
    CHECK(*match);
    CHECK(scratch.decoded.empty());
    CHECK(scratch.digest.empty());
    const Result<bool> other = verify_password("s3cre", stored, policy, scratch);
    REQUIRE(other.ok());
    CHECK_FALSE(*other);
  }
  // A refused value leaves it wiped too.
  CHECK(verify_password("secret", "{SSHA}!!!!", VerifyPolicy{}, scratch).status().code() ==
        StatusCode::kMalformed);
  CHECK(scratch.decoded.empty());
}

TEST_CASE("PasswordScheme: an empty password and a long one hash and verify") {
  const std::string long_password(511, 'x');  // libxcrypt's longest.
  for (PasswordScheme scheme : kAllSchemes) {
    if (!password_scheme_writable(scheme)) {
      continue;
    }
    INFO("scheme: ", password_scheme_name(scheme));
    CHECK(verifies("", hash_ok("", scheme)));
    CHECK(verifies(long_password, hash_ok(long_password, scheme)));
  }
}

TEST_CASE("PasswordScheme: new values follow OpenLDAP's layouts") {
  std::string decoded;
  SUBCASE("SSHA family: base64 of digest then salt") {
    for (auto [scheme, digest_bytes] :
         {std::pair{PasswordScheme::kSsha1, 20u}, std::pair{PasswordScheme::kSsha256, 32u},
          std::pair{PasswordScheme::kSsha384, 48u}, std::pair{PasswordScheme::kSsha512, 64u}}) {
      const std::string stored = hash_ok("secret", scheme);
      const std::string_view name = password_scheme_name(scheme);
      REQUIRE(detail::base64_decode(std::string_view(stored).substr(name.size()),
                                    detail::Base64Alphabet::kStandard, &decoded));
      CHECK(decoded.size() == digest_bytes + HashOptions{}.salt_bytes);
    }
    HashOptions options = cheap_options();
    options.salt_bytes = 4;  // slapd's own {SSHA} salt.
    const std::string stored = hash_ok("secret", PasswordScheme::kSsha1, options);
    REQUIRE(detail::base64_decode(std::string_view(stored).substr(6),
                                  detail::Base64Alphabet::kStandard, &decoded));
    CHECK(decoded.size() == 24);
    CHECK(stored.size() == "{SSHA}XPDkWLaTnfoI3NoX+Gpq65Mr2Tvs5lWe"sv.size());
  }
  SUBCASE("PBKDF2: iterations, adapted base64 salt of 16 bytes and digest-sized key") {
    const std::string stored = hash_ok("secret", PasswordScheme::kPbkdf2Sha512, HashOptions{});
    REQUIRE(stored.starts_with("{PBKDF2-SHA512}10000$"));
    const std::string_view rest = std::string_view(stored).substr(21);
    const std::size_t dollar = rest.find('$');
    REQUIRE(dollar != std::string_view::npos);
    CHECK(dollar == 22);                    // 16 bytes, unpadded.
    CHECK(rest.size() - dollar - 1 == 86);  // 64 bytes, unpadded.
    CHECK(stored.find_first_of("+=") == std::string::npos);
    CHECK(hash_ok("secret", PasswordScheme::kPbkdf2Sha256, HashOptions{})
              .starts_with("{PBKDF2-SHA256}10000$"));
  }
  SUBCASE("ARGON2: a PHC string with OpenLDAP's libsodium defaults") {
    const std::string stored = hash_ok("secret", PasswordScheme::kArgon2, HashOptions{});
    REQUIRE(stored.starts_with("{ARGON2}$argon2id$v=19$m=65536,t=2,p=1$"));
    const std::string_view rest = std::string_view(stored).substr(39);
    CHECK(rest.find('$') == 22);        // 16-byte salt.
    CHECK(rest.size() == 22 + 1 + 43);  // 32-byte hash.
    CHECK(rest.find('=') == std::string_view::npos);
  }
  SUBCASE("CRYPT: $6$ by default and $y$ on request") {
    const std::string sha512 = hash_ok("secret", PasswordScheme::kCrypt);
    CHECK(sha512.starts_with("{CRYPT}$6$"));
    CHECK(sha512.size() == "{CRYPT}$6$"sv.size() + 16 + 1 + 86);
    HashOptions options = cheap_options();
    options.crypt_method = CryptMethod::kYescrypt;
    const std::string yescrypt = hash_ok("secret", PasswordScheme::kCrypt, options);
    CHECK(yescrypt.starts_with("{CRYPT}$y$j9T$"));
    CHECK(verifies("secret", yescrypt));
  }
}

TEST_CASE("PasswordScheme: hash options set the costs written") {
  HashOptions options = cheap_options();
  SUBCASE("pbkdf2 iterations") {
    options.pbkdf2_iterations = 1234;
    const std::string stored = hash_ok("secret", PasswordScheme::kPbkdf2Sha256, options);
    CHECK(stored.starts_with("{PBKDF2-SHA256}1234$"));
    CHECK(verifies("secret", stored));
  }
  SUBCASE("argon2 variant and costs") {
    options.argon2_memory_kib = 512;
    options.argon2_iterations = 3;
    options.argon2_parallelism = 2;
    for (auto [variant, name] : {std::pair{Argon2Variant::kArgon2i, "argon2i"sv},
                                 std::pair{Argon2Variant::kArgon2d, "argon2d"sv},
                                 std::pair{Argon2Variant::kArgon2id, "argon2id"sv}}) {
      options.argon2_variant = variant;
      const std::string stored = hash_ok("secret", PasswordScheme::kArgon2, options);
      CHECK(stored.starts_with("{ARGON2}$" + std::string(name) + "$v=19$m=512,t=3,p=2$"));
      CHECK(verifies("secret", stored));
      CHECK_FALSE(verifies("secreT", stored));
    }
  }
  SUBCASE("sha-crypt rounds") {
    options.crypt_cost = 6000;
    const std::string stored = hash_ok("secret", PasswordScheme::kCrypt, options);
    CHECK(stored.starts_with("{CRYPT}$6$rounds=6000$"));
    CHECK(verifies("secret", stored));
  }
}

TEST_CASE("PasswordScheme: bad hash options are refused") {
  HashOptions options = cheap_options();
  PasswordScheme scheme = PasswordScheme::kSsha512;
  std::string password = "secret";
  SUBCASE("salt too short") { options.salt_bytes = 3; }
  SUBCASE("salt too long") { options.salt_bytes = 65; }
  SUBCASE("zero pbkdf2 iterations") {
    options.pbkdf2_iterations = 0;
    scheme = PasswordScheme::kPbkdf2Sha512;
  }
  SUBCASE("argon2 memory under 8 KiB per lane") {
    options.argon2_memory_kib = 4;
    scheme = PasswordScheme::kArgon2;
  }
  SUBCASE("zero argon2 passes") {
    options.argon2_iterations = 0;
    scheme = PasswordScheme::kArgon2;
  }
  SUBCASE("sha-crypt rounds under 1000 (libxcrypt would clamp them)") {
    options.crypt_cost = 999;
    scheme = PasswordScheme::kCrypt;
  }
  SUBCASE("sha-crypt rounds over 999999999") {
    options.crypt_cost = 1'000'000'000;
    scheme = PasswordScheme::kCrypt;
  }
  SUBCASE("yescrypt cost out of range") {
    options.crypt_method = CryptMethod::kYescrypt;
    options.crypt_cost = 12;
    scheme = PasswordScheme::kCrypt;
  }
  SUBCASE("a crypt password of 512 bytes") {
    password.assign(512, 'x');
    scheme = PasswordScheme::kCrypt;
  }
  SUBCASE("a NUL byte for crypt") {
    password = std::string("sec\0ret", 7);
    scheme = PasswordScheme::kCrypt;
  }
  Result<std::string> hashed = hash_password(password, scheme, options);
  REQUIRE_FALSE(hashed.ok());
  CHECK(hashed.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("PasswordScheme: read-only schemes are not written") {
  for (PasswordScheme scheme :
       {PasswordScheme::kCleartext, PasswordScheme::kMd5, PasswordScheme::kSmd5,
        PasswordScheme::kSha1, PasswordScheme::kSha256, PasswordScheme::kSha384,
        PasswordScheme::kSha512, PasswordScheme::kPbkdf2Sha1}) {
    INFO("scheme: ", password_scheme_name(scheme));
    CHECK_FALSE(password_scheme_writable(scheme));
    Result<std::string> hashed = hash_password("secret", scheme);
    REQUIRE_FALSE(hashed.ok());
    CHECK(hashed.status().code() == StatusCode::kUnsupported);
  }
}

TEST_CASE("PasswordScheme: values made by slappasswd verify") {
  check_fixtures("slappasswd.txt", 50);
}

TEST_CASE("PasswordScheme: values made by independent implementations verify") {
  check_fixtures("reference.txt", 30);
}

// Runs slappasswd with `args` (trusted, shell-quoted by the caller). Returns its output.
std::string run_slappasswd(const std::string& args) {
  const std::string command = "/usr/sbin/slappasswd -n " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  std::array<char, 256> buffer;
  std::size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), got);
  }
  const int status = pclose(pipe);
  INFO("command: ", command, "\noutput: ", output);
  REQUIRE(status == 0);
  return output;
}

TEST_CASE("PasswordScheme: live slappasswd output verifies") {
  if (access("/usr/sbin/slappasswd", X_OK) != 0) {
    MESSAGE("skipped: /usr/sbin/slappasswd is not installed (Debian package slapd)");
    return;
  }
  std::vector<std::string> runs = {"-h '{SSHA}' -s 'live secret'",
                                   "-h '{CRYPT}' -c '$6$%.16s' -s 'live secret'",
                                   "-h '{CRYPT}' -c '$y$j9T$%.16s' -s 'live secret'"};
  if (access("/usr/lib/ldap/pw-sha2.so", R_OK) == 0) {
    runs.push_back(
        "-o module-path=/usr/lib/ldap -o module-load=pw-sha2 -h '{SSHA512}' "
        "-s 'live secret'");
  } else {
    MESSAGE("not checked: /usr/lib/ldap/pw-sha2.so is missing");
  }
  if (access("/usr/lib/ldap/argon2.so", R_OK) == 0) {
    runs.push_back(
        "-o module-path=/usr/lib/ldap -o 'module-load=argon2 m=256 t=1 p=1' "
        "-h '{ARGON2}' -s 'live secret'");
  } else {
    MESSAGE("not checked: /usr/lib/ldap/argon2.so is missing");
  }
  for (const std::string& args : runs) {
    const std::string stored = run_slappasswd(args);
    INFO("slappasswd ", args, " -> ", stored);
    CHECK(verifies("live secret", stored));
    CHECK_FALSE(verifies("live secreT", stored));
  }
}

TEST_CASE("PasswordScheme: scheme names parse in any case with or without braces") {
  const std::vector<std::pair<std::string_view, PasswordScheme>> names = {
      {"ssha", PasswordScheme::kSsha1},
      {"{SSHA}", PasswordScheme::kSsha1},
      {"{sSha256}", PasswordScheme::kSsha256},
      {"SSHA512", PasswordScheme::kSsha512},
      {"sha", PasswordScheme::kSha1},
      {"argon2", PasswordScheme::kArgon2},
      {"{ARGON2}", PasswordScheme::kArgon2},
      {"pbkdf2", PasswordScheme::kPbkdf2Sha1},
      {"{PBKDF2-SHA1}", PasswordScheme::kPbkdf2Sha1},
      {"pbkdf2-sha512", PasswordScheme::kPbkdf2Sha512},
      {"crypt", PasswordScheme::kCrypt},
      {"{CLEARTEXT}", PasswordScheme::kCleartext},
      {"md5", PasswordScheme::kMd5},
      {"SMD5", PasswordScheme::kSmd5},
  };
  for (const auto& entry : names) {  // Not a structured binding: INFO captures it.
    INFO("name: ", std::string(entry.first));
    Result<PasswordScheme> parsed = parse_password_scheme(entry.first);
    REQUIRE(parsed.ok());
    CHECK(*parsed == entry.second);
  }
  for (PasswordScheme scheme : kAllSchemes) {
    Result<PasswordScheme> parsed = parse_password_scheme(password_scheme_name(scheme));
    REQUIRE(parsed.ok());
    CHECK(*parsed == scheme);
  }
  for (std::string_view bad : {""sv, "{}"sv, "foo"sv, "{SSHA"sv, "SSHA}"sv, "{{SSHA}}"sv, " ssha"sv,
                               "ssha1"sv, "pbkdf2-sha384"sv, "argon2id"sv}) {
    INFO("name: ", std::string(bad));
    Result<PasswordScheme> parsed = parse_password_scheme(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("PasswordScheme: stored values are identified by their prefix") {
  const std::vector<std::pair<std::string_view, PasswordScheme>> values = {
      {"{ssha}anything", PasswordScheme::kSsha1},
      {"{CRYPT}$6$x$y", PasswordScheme::kCrypt},
      {"{pbkdf2}1$a$b", PasswordScheme::kPbkdf2Sha1},
      {"secret", PasswordScheme::kCleartext},
      {"", PasswordScheme::kCleartext},
      {"{}secret", PasswordScheme::kCleartext},  // As slapd: no name, so no scheme.
      {"{secret", PasswordScheme::kCleartext},
      {"{CLEARTEXT}secret", PasswordScheme::kCleartext},
  };
  for (const auto& entry : values) {
    INFO("stored: ", std::string(entry.first));
    Result<PasswordScheme> found = stored_password_scheme(entry.first);
    REQUIRE(found.ok());
    CHECK(*found == entry.second);
  }
  Result<PasswordScheme> unknown = stored_password_scheme("{FOO}x");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == StatusCode::kUnsupported);
}

TEST_CASE("PasswordScheme: stored scheme prefixes are case-insensitive") {
  const std::string stored = hash_ok("secret", PasswordScheme::kSsha256);
  const std::string lower = "{ssha256}" + stored.substr(9);
  CHECK(verifies("secret", lower));
  CHECK(verifies("secret", "{sha}5en6G6MezRroT3XKqkdPOmY/BfQ="));
  CHECK(verifies("secret", "{Md5}Xr4ilOzQ4PCOq3aQ0qbuaQ=="));
}

TEST_CASE("PasswordScheme: cleartext is refused unless the policy allows it") {
  for (std::string_view stored :
       {"secret"sv, "{CLEARTEXT}secret"sv, "{cleartext}secret"sv, "{}secret"sv, ""sv}) {
    INFO("stored: ", std::string(stored));
    Result<bool> refused = verify_password("secret", stored);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kUnsupported);
    CHECK(refused.status().message().find("cleartext") != std::string::npos);
  }
  CHECK(verifies("secret", "secret", cleartext_allowed()));
  CHECK(verifies("secret", "{CLEARTEXT}secret", cleartext_allowed()));
  CHECK(verifies("{}secret", "{}secret", cleartext_allowed()));
  CHECK_FALSE(verifies("secret", "secreT", cleartext_allowed()));
  CHECK_FALSE(verifies("secret", "secret ", cleartext_allowed()));
  CHECK_FALSE(verifies("secret", "", cleartext_allowed()));
  CHECK(verifies("", "", cleartext_allowed()));
  // A hashed value is never compared as cleartext, even when cleartext is allowed.
  CHECK_FALSE(verifies("{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=", "{SHA}5en6G6MezRroT3XKqkdPOmY/BfQ=",
                       cleartext_allowed()));
}

TEST_CASE("PasswordScheme: an unknown scheme is unsupported") {
  check_refused("{FOO}x", StatusCode::kUnsupported, "{FOO}");
  check_refused("{SSHA1}x", StatusCode::kUnsupported, "{SSHA1}");
  check_refused("{K5KEY}user@REALM", StatusCode::kUnsupported, "{K5KEY}");
  check_refused("{SASL}user@realm", StatusCode::kUnsupported, "{SASL}");
  // Long names are cut in the message.
  const std::string long_name = "{" + std::string(500, 'A') + "}x";
  Result<bool> result = verify_password("secret", long_name);
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == StatusCode::kUnsupported);
  CHECK(result.status().message().size() < 100);
}

TEST_CASE("PasswordScheme: malformed salted and plain digests are rejected") {
  check_refused("{SSHA}!!!!", StatusCode::kMalformed, "not base64");
  check_refused("{SSHA}w9wio6gg9Poh06mLRIidZtL+o76Dx", StatusCode::kMalformed, "not base64");
  check_refused("{SSHA}w9wio6gg=Poh06mLRIidZtL+o76Dx1RA", StatusCode::kMalformed, "not base64");
  check_refused("{SSHA}w9wio6gg9Poh06mLRIidZtL+o76Dx1RA===", StatusCode::kMalformed, "not base64");
  check_refused("{SSHA} w9wio6gg9Poh06mLRIidZtL+o76Dx1RA", StatusCode::kMalformed, "not base64");
  check_refused("{SSHA512}AAAA_AAA", StatusCode::kMalformed, "not base64");
  // Exactly a SHA-1 digest: no room for a salt.
  check_refused("{SSHA}5en6G6MezRroT3XKqkdPOmY/BfQ=", StatusCode::kMalformed, "too short");
  check_refused("{SSHA}", StatusCode::kMalformed, "too short");
  check_refused("{SSHA256}K7gNU3sdo+OL0wNhqoVWhr3g6s1xYv72ol/pe/Unols=", StatusCode::kMalformed,
                "too short");
  check_refused("{SMD5}Xr4ilOzQ4PCOq3aQ0qbuaQ==", StatusCode::kMalformed, "too short");
  // Plain digests must be exactly their size.
  check_refused("{SHA}5en6G6MezRroT3XKqkdPOmY/BfQA", StatusCode::kMalformed, "not a 20-byte");
  check_refused("{SHA256}5en6G6MezRroT3XKqkdPOmY/BfQ=", StatusCode::kMalformed, "not a 32-byte");
  check_refused("{MD5}", StatusCode::kMalformed, "not a 16-byte");
  // A valid salted value, cut to half: still a digest and a salt, just the wrong ones.
  CHECK_FALSE(verifies("secret", "{SSHA}w9wio6gg9Poh06mLRIidZtL+o76Dx1RA"sv.substr(0, 34)));
}

TEST_CASE("PasswordScheme: malformed PBKDF2 values are rejected") {
  const std::string good =
      "{PBKDF2-SHA256}10000$f5Lw992/9m/sNJLkFaQg7g$jZdlMnZKKOMUsqQWh7W7lK7nizSD3u0Js/WOmK7U3N8";
  CHECK(verifies("secret", good));
  CHECK_FALSE(verifies("secreT", good));
  check_refused("{PBKDF2-SHA256}", StatusCode::kMalformed, "expected");
  check_refused("{PBKDF2-SHA256}10000", StatusCode::kMalformed, "expected");
  check_refused("{PBKDF2-SHA256}10000$f5Lw992/9m/sNJLkFaQg7g", StatusCode::kMalformed, "expected");
  check_refused(good + "$", StatusCode::kMalformed, "expected");
  for (std::string_view iterations :
       {""sv, "0"sv, "-1"sv, "+1"sv, " 1"sv, "1x"sv, "4294967296"sv, "99999999999"sv, "ten"sv}) {
    INFO("iterations: ", std::string(iterations));
    check_refused("{PBKDF2-SHA256}" + std::string(iterations) + good.substr(20),
                  StatusCode::kMalformed, "iteration count");
  }
  check_refused("{PBKDF2-SHA256}10000$f5Lw99*/9m/sNJLkFaQg7g" + good.substr(43),
                StatusCode::kMalformed, "adapted base64");
  check_refused("{PBKDF2-SHA256}10000$$" + good.substr(44), StatusCode::kMalformed,
                "salt is empty");
  check_refused("{PBKDF2-SHA256}10000$f5Lw992/9m/sNJLkFaQg7g$jZdlMnZKKOMUsqQWh7W7lK7nizSD3u0J",
                StatusCode::kMalformed, "not 32");
  // A SHA-512-sized key under a SHA-256 name.
  const std::string sha512 = find_fixture("reference.txt", "{PBKDF2-SHA512}").stored;
  check_refused("{PBKDF2-SHA256}" + sha512.substr(15), StatusCode::kMalformed, "not 32");
  // pw-pbkdf2 leaves a leading '+' as it is: it decodes like '.'.
  CHECK_FALSE(verifies("secret", "{PBKDF2-SHA256}1$+5Lw992/9m/sNJLkFaQg7g" + good.substr(43)));
}

TEST_CASE("PasswordScheme: PBKDF2 iterations over the policy's limit are refused") {
  const std::string stored = hash_ok("secret", PasswordScheme::kPbkdf2Sha512);
  VerifyPolicy policy;
  policy.limits.max_pbkdf2_iterations = 999;
  check_refused(stored, StatusCode::kLimitExceeded, "iterations", policy);
  policy.limits.max_pbkdf2_iterations = 1000;
  CHECK(verifies("secret", stored, policy));
  check_refused("{PBKDF2-SHA512}4294967295$f5Lw992/9m/sNJLkFaQg7g$AAAA", StatusCode::kLimitExceeded,
                "iterations");
}

// The m=256 argon2id reference vector for password "password".
constexpr std::string_view kArgon2Vector =
    "{ARGON2}$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc";

TEST_CASE("PasswordScheme: malformed argon2 values are rejected") {
  REQUIRE(verifies("password", kArgon2Vector));
  const std::string_view phc = kArgon2Vector.substr(8);
  const std::string tail = "$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc";
  check_refused("{ARGON2}", StatusCode::kMalformed, "expected $argon2i$");
  check_refused("{ARGON2}argon2id$v=19$m=256,t=2,p=2" + tail, StatusCode::kMalformed,
                "expected $argon2i$");
  check_refused("{ARGON2}$argon2x$v=19$m=256,t=2,p=2" + tail, StatusCode::kMalformed,
                "expected $argon2i$");
  check_refused("{ARGON2}$argon2ds$v=16$m=8,t=1,p=1$ICAgICAgICA$zgdykk9ZjN5VyrW0LxGw8LmrJ1Z6fqS",
                StatusCode::kMalformed, "expected $argon2i$");
  check_refused("{ARGON2}$argon2id$v=20$m=256,t=2,p=2" + tail, StatusCode::kMalformed,
                "unknown version");
  check_refused("{ARGON2}$argon2id$v=$m=256,t=2,p=2" + tail, StatusCode::kMalformed, "version");
  check_refused("{ARGON2}$argon2id$v=19$m=x,t=2,p=2" + tail, StatusCode::kMalformed, "m=");
  check_refused("{ARGON2}$argon2id$v=19$t=2,m=256,p=2" + tail, StatusCode::kMalformed, "m=");
  check_refused("{ARGON2}$argon2id$v=19$m=256,t=2" + tail, StatusCode::kMalformed, "m=");
  check_refused("{ARGON2}$argon2id$v=19$m=256,t=2,p=2,k=1" + tail, StatusCode::kMalformed, "m=");
  check_refused("{ARGON2}$argon2id$v=19$m=99999999999,t=2,p=2" + tail, StatusCode::kMalformed,
                "m=");
  check_refused("{ARGON2}$argon2id$v=19$m=256,t=0,p=2" + tail, StatusCode::kMalformed, "minimum");
  check_refused("{ARGON2}$argon2id$v=19$m=256,t=2,p=0" + tail, StatusCode::kMalformed, "minimum");
  check_refused("{ARGON2}$argon2id$v=19$m=8,t=2,p=2" + tail, StatusCode::kMalformed, "minimum");
  check_refused("{ARGON2}$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ", StatusCode::kMalformed,
                "missing the hash");
  check_refused("{ARGON2}$argon2id$v=19$m=256,t=2,p=2$c29tZQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f",
                StatusCode::kMalformed, "salt is shorter");
  check_refused("{ARGON2}$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8", StatusCode::kMalformed,
                "hash is shorter");
  check_refused("{ARGON2}$argon2id$v=19$m=256,t=2,p=2$c29tZX*hbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZ",
                StatusCode::kMalformed, "not base64");
  check_refused(std::string(kArgon2Vector) + "$", StatusCode::kMalformed, "not base64");
  // Every truncation is refused or simply does not match; none crashes or matches.
  for (std::size_t size = 0; size < phc.size(); ++size) {
    const std::string stored = "{ARGON2}" + std::string(phc.substr(0, size));
    INFO("stored: ", stored);
    Result<bool> result = verify_password("password", stored);
    if (result.ok()) {
      CHECK_FALSE(*result);
    } else {
      CHECK(result.status().code() == StatusCode::kMalformed);
    }
  }
}

TEST_CASE("PasswordScheme: argon2 values over the policy's limits are refused") {
  VerifyPolicy policy;
  SUBCASE("memory") { policy.limits.max_argon2_memory_kib = 255; }
  SUBCASE("passes") { policy.limits.max_argon2_iterations = 1; }
  SUBCASE("lanes") { policy.limits.max_argon2_parallelism = 1; }
  check_refused(kArgon2Vector, StatusCode::kLimitExceeded, "is over the limit of", policy);
}

TEST_CASE("PasswordScheme: an argon2 value asking for 4 TiB is refused before any work") {
  check_refused("{ARGON2}$argon2id$v=19$m=4294967295,t=2,p=1$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5",
                StatusCode::kLimitExceeded, "argon2 memory 4294967295 KiB");
  check_refused("{ARGON2}$argon2id$v=19$m=256,t=4294967295,p=1$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iD",
                StatusCode::kLimitExceeded, "argon2 iterations 4294967295");
}

TEST_CASE("PasswordScheme: malformed crypt values are rejected") {
  const std::string good =
      "{CRYPT}$6$tAXqPnez3zFMczai$Rl9vT2ylmadw57.A3Msj5AKhFn6vkdRk97jPVw2W.KFRTQKd7hunHkghhYRMQLfl"
      "Mz24CpXkFzztaM5SLXbaA/";
  CHECK(verifies("secret", good));
  CHECK_FALSE(verifies("secreT", good));
  // libxcrypt takes at most 511 bytes: a longer password is simply wrong.
  CHECK_FALSE(verifies(std::string(512, 'x'), good));
  check_refused("{CRYPT}", StatusCode::kMalformed, "empty");
  check_refused("{CRYPT}$6$saltsalt$!!!garbage", StatusCode::kMalformed, "does not accept");
  check_refused("{CRYPT}$6$saltsalt", StatusCode::kMalformed, "not a complete");
  check_refused("{CRYPT}$6$", StatusCode::kMalformed, "not a complete");
  check_refused(good + "x", StatusCode::kMalformed, "");
  check_refused(good.substr(0, good.size() - 1), StatusCode::kMalformed, "");
  check_refused("{CRYPT}$6", StatusCode::kMalformed, "does not accept");
  check_refused("{CRYPT}!$6$tAXqPnez3zFMczai$Rl9vT2yl", StatusCode::kMalformed, "does not accept");
  check_refused("{CRYPT}*", StatusCode::kMalformed, "does not accept");
  check_refused("{CRYPT}$2b$05$abc", StatusCode::kMalformed, "does not accept");
  check_refused("{CRYPT}$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8UB", StatusCode::kMalformed,
                "does not accept");
  check_refused("{CRYPT}zd", StatusCode::kMalformed, "not a complete");
  check_refused(std::string("{CRYPT}$6$ab\0cd$xyz", 19), StatusCode::kMalformed, "NUL");
  // Every truncation of a valid value is refused or does not match.
  for (std::size_t size = 7; size < good.size(); ++size) {
    const std::string stored = good.substr(0, size);
    INFO("stored: ", stored);
    Result<bool> result = verify_password("secret", stored);
    if (result.ok()) {
      CHECK_FALSE(*result);
    } else {
      CHECK(result.status().code() == StatusCode::kMalformed);
    }
  }
}

TEST_CASE("PasswordScheme: crypt costs over the policy's limits are refused") {
  check_refused("{CRYPT}$6$rounds=999999999$abcdefgh$xyz", StatusCode::kLimitExceeded, "rounds");
  check_refused("{CRYPT}$5$rounds=99999999999999999999$abcdefgh$xyz", StatusCode::kLimitExceeded,
                "rounds");
  check_refused("{CRYPT}$2b$31$u94irsWe/AIs8pHsqfrcYu0DEkLS4wJ/8FxhxNXw8pkwRg2XZz7Oi",
                StatusCode::kLimitExceeded, "bcrypt cost 31");
  VerifyPolicy policy;
  policy.limits.max_sha_crypt_rounds = 9999;
  const std::vector<Fixture> fixtures = load_fixtures("slappasswd.txt");
  bool found = false;
  for (const Fixture& fixture : fixtures) {
    if (fixture.stored.starts_with("{CRYPT}$6$rounds=10000$")) {
      check_refused(fixture.stored, StatusCode::kLimitExceeded, "rounds", policy);
      found = true;
    }
  }
  CHECK(found);
}

TEST_CASE("PasswordScheme: a password with a NUL byte never matches by its prefix") {
  const std::string with_nul("secret\0tail", 11);
  const std::vector<Fixture> fixtures = load_fixtures("slappasswd.txt");
  for (const Fixture& fixture : fixtures) {
    if (fixture.password == "secret") {
      INFO("stored: ", fixture.stored);
      CHECK_FALSE(verifies(with_nul, fixture.stored));
    }
  }
  // Schemes that hash bytes take the NUL as part of the password.
  for (PasswordScheme scheme :
       {PasswordScheme::kSsha512, PasswordScheme::kPbkdf2Sha256, PasswordScheme::kArgon2}) {
    const std::string stored = hash_ok(with_nul, scheme);
    CHECK(verifies(with_nul, stored));
    CHECK_FALSE(verifies("secret", stored));
  }
}

TEST_CASE("PasswordScheme: error messages never contain the password") {
  const std::string password = "Pa55w0rd-Never-Shown";
  for (std::string_view stored :
       {"{FOO}x"sv, "{SSHA}!!"sv, "{SSHA}"sv, "{PBKDF2-SHA256}1$$"sv, "{ARGON2}$argon2id$"sv,
        "{CRYPT}$6$x"sv, "{CRYPT}*"sv, "Pa55w0rd-Never-Shown"sv}) {
    Result<bool> result = verify_password(password, stored);
    REQUIRE_FALSE(result.ok());
    if (stored != password) {
      CHECK(result.status().message().find(password) == std::string::npos);
    } else {
      CHECK(result.status().message().find("Pa55") == std::string::npos);
    }
  }
}

TEST_CASE("PasswordScheme: digests are compared in constant time") {
  // Timing cannot be tested here; this checks the comparison every scheme goes through.
  CHECK(detail::equal_constant_time("", ""));
  CHECK(detail::equal_constant_time("abc", "abc"));
  CHECK_FALSE(detail::equal_constant_time("abc", "abd"));
  CHECK_FALSE(detail::equal_constant_time("abc", "bbc"));
  CHECK_FALSE(detail::equal_constant_time("abc", "abcd"));
  CHECK_FALSE(detail::equal_constant_time(std::string("a\0c", 3), std::string("a\0d", 3)));
  // A stored digest that differs from the right one only in its last byte does not verify.
  std::string decoded;
  REQUIRE(detail::base64_decode("5en6G6MezRroT3XKqkdPOmY/BfQ=", detail::Base64Alphabet::kStandard,
                                &decoded));
  decoded.back() = static_cast<char>(decoded.back() ^ 1);
  CHECK_FALSE(verifies(
      "secret", "{SHA}" + detail::base64_encode(decoded, detail::Base64Alphabet::kStandard, true)));
}

TEST_CASE("PasswordScheme: base64 codecs round trip and reject bad text") {
  std::mt19937 random(20240601);
  MESSAGE("seed 20240601");
  std::string decoded;
  for (std::size_t size = 0; size < 70; ++size) {
    std::string bytes(size, '\0');
    for (char& c : bytes) {
      c = static_cast<char>(random() & 0xFF);
    }
    for (auto alphabet : {detail::Base64Alphabet::kStandard, detail::Base64Alphabet::kAdapted}) {
      for (bool pad : {true, false}) {
        const std::string text = detail::base64_encode(bytes, alphabet, pad);
        CHECK(text.size() == (pad ? (size + 2) / 3 * 4 : (size * 4 + 2) / 3));
        REQUIRE(detail::base64_decode(text, alphabet, &decoded));
        CHECK(decoded == bytes);
      }
    }
  }
  using detail::Base64Alphabet;
  CHECK(detail::base64_encode("\xfb\xff", Base64Alphabet::kStandard, true) == "+/8=");
  CHECK(detail::base64_encode("\xfb\xff", Base64Alphabet::kAdapted, false) == "./8");
  CHECK(detail::base64_decode("+/8", Base64Alphabet::kAdapted, &decoded));
  CHECK(decoded == "\xfb\xff");
  CHECK(detail::base64_decode("./8", Base64Alphabet::kAdapted, &decoded));
  CHECK(decoded == "\xfb\xff");
  CHECK_FALSE(detail::base64_decode("./8", Base64Alphabet::kStandard, &decoded));
  // A character that is no digit, at any place of a text that decodes, is refused.
  const std::string good = detail::base64_encode("0123456789abcdefghij", Base64Alphabet::kStandard,
                                                 false);  // 27 digits: a last group of 3.
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (const char bad : {'.', '-', ' ', '\0', '\xff'}) {
      std::string text = good;
      text[at] = bad;
      CAPTURE(at);
      CHECK_FALSE(detail::base64_decode(text, Base64Alphabet::kStandard, &decoded));
      CHECK(decoded.empty());
    }
  }
  for (std::string_view bad : {"A"sv, "AAAAA"sv, "A==="sv, "AA=A"sv, "AA="sv, "AAA=="sv, "AA AA"sv,
                               "AA\nA"sv, "AA-_"sv, "===="sv}) {
    INFO("text: ", std::string(bad));
    CHECK_FALSE(detail::base64_decode(bad, Base64Alphabet::kStandard, &decoded));
  }
}

TEST_CASE("PasswordScheme: random stored values never crash") {
  constexpr std::uint32_t kSeed = 7;
  MESSAGE("seed ", kSeed);
  std::mt19937 random(kSeed);
  const std::vector<std::string> prefixes = {
      "{SSHA}",         "{SHA512}",   "{PBKDF2-SHA512}",
      "{PBKDF2}1$",     "{ARGON2}",   "{ARGON2}$argon2id$v=19$m=64,t=1,p=1$",
      "{CRYPT}",        "{CRYPT}$6$", "{CRYPT}$1$",
      "{CRYPT}$2b$04$", "{MD5}"};
  const std::string alphabet = "ABCDEFabcdef0123456789+/=.$,{}";
  for (int i = 0; i < 3000; ++i) {
    std::string stored = prefixes[random() % prefixes.size()];
    const std::size_t size = random() % 90;
    const bool binary = random() % 4 == 0;
    for (std::size_t j = 0; j < size; ++j) {
      stored += binary ? static_cast<char>(random() & 0xFF) : alphabet[random() % alphabet.size()];
    }
    Result<bool> result = verify_password("secret", stored);
    CHECK((!result.ok() || !*result));
  }
}

TEST_CASE("PasswordScheme: hashing and verifying on several threads at once") {
  constexpr int kThreads = 4;
  std::latch start(kThreads);
  std::array<int, kThreads> failures{};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&start, &failures, t] {
      start.arrive_and_wait();
      for (int i = 0; i < 10; ++i) {
        const std::string password = "thread " + std::to_string(t) + " round " + std::to_string(i);
        for (PasswordScheme scheme :
             {PasswordScheme::kSsha256, PasswordScheme::kCrypt, PasswordScheme::kArgon2}) {
          Result<std::string> stored = hash_password(password, scheme, cheap_options());
          if (!stored.ok()) {
            ++failures[t];
            continue;
          }
          Result<bool> right = verify_password(password, *stored);
          Result<bool> wrong = verify_password(password + "!", *stored);
          if (!right.ok() || !*right || !wrong.ok() || *wrong) {
            ++failures[t];
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (int t = 0; t < kThreads; ++t) {
    CHECK(failures[t] == 0);
  }
}

}  // namespace
}  // namespace numadir::backend
