// Tests for the cost ceilings of backend/password_scheme.h: password_cost_excess() reads each
// scheme's cost fields with verify_password()'s parsers, the defaults admit what OpenLDAP's
// modules, slappasswd, passlib and numadir write by default, and a value over a ceiling is
// named with its parameter, value and limit and refused before any hashing.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <string_view>

#include "backend/password_scheme.h"

namespace numadir::backend {
namespace {

// A well-formed tail (16-byte salt, 32-byte hash) for argon2 values that are never hashed.
constexpr std::string_view kArgon2Tail =
    "$c29tZXNhbHRzb21lc2FsdA$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc";
// A well-formed tail (16-byte salt, 64-byte key) for PBKDF2-SHA512 values.
constexpr std::string_view kPbkdf2Tail =
    "$uEt6/HSZ1F12Twniv6DuTw$XelwTh/LPICgouYSFZJ3laPqG4soNTiPdxyB/3poAHaYaVDvFGTjay2SlsRgtUReIJ5T"
    "PoCbkG4toNcgRLzCkA";

std::string argon2(std::string_view params) {
  return "{ARGON2}$argon2id$v=19$" + std::string(params) + std::string(kArgon2Tail);
}

std::string pbkdf2(std::string_view iterations) {
  return "{PBKDF2-SHA512}" + std::string(iterations) + std::string(kPbkdf2Tail);
}

TEST_CASE("PasswordCost: the default ceilings admit what the usual tools write by default") {
  const PasswordCostLimits limits;
  const std::string written[] = {
      argon2("m=65536,t=2,p=1"),  // numadir, OpenLDAP's argon2 module on libsodium.
      "{ARGON2}$argon2i$v=19$m=4096,t=3,p=1" + std::string(kArgon2Tail),  // On libargon2.
      argon2("m=65536,t=3,p=4"),                          // argon2-cffi, RFC 9106's second choice.
      pbkdf2("10000"),                                    // pw-pbkdf2, numadir.
      pbkdf2("25000"),                                    // passlib's ldap_pbkdf2_sha512.
      "{PBKDF2-SHA256}29000" + std::string(kPbkdf2Tail),  // passlib's ldap_pbkdf2_sha256.
      "{CRYPT}$6$aSQhwwJmrSGttmGu$ogYXfcKfAEghD3SIAAMyhtyWMRUP7oE.rYtCKhw1s6q2CSf0FHKHbTSMuSt2K",
      "{CRYPT}$6$rounds=10000$TFcT53/YTHW7Fk/$Iw.pcwAmHMmKLbTPWl1l/fxQS/IO0A2a4AzCIZiZRrle9TFJE",
      "{CRYPT}$2b$05$zXj4lncx7qlOdkYxvWmGyOdIY.1Ku2YeixU8EpJ.NAsW7gnJdF2Ea",  // libxcrypt's cost.
      "{CRYPT}$y$j9T$s8.Uo9F.Tyme2.FK$HbvTF1qAv9KEYvbtTYKbG4kGVaGC2Kp..wgHtE9KOL.",
  };
  for (const std::string& value : written) {
    INFO("stored: ", value);
    CHECK_FALSE(password_cost_excess(value, limits).has_value());
  }
  // What numadir hashes with its default options verifies under the default policy.
  for (const PasswordScheme scheme : {PasswordScheme::kPbkdf2Sha256, PasswordScheme::kPbkdf2Sha512,
                                      PasswordScheme::kArgon2, PasswordScheme::kCrypt}) {
    Result<std::string> hashed = hash_password("secret", scheme);
    REQUIRE_MESSAGE(hashed.ok(), hashed.status().to_string());
    INFO("stored: ", *hashed);
    CHECK_FALSE(password_cost_excess(*hashed, limits).has_value());
    Result<bool> verified = verify_password("secret", *hashed);
    REQUIRE_MESSAGE(verified.ok(), verified.status().to_string());
    CHECK(*verified);
  }
}

TEST_CASE("PasswordCost: each parameter over its ceiling is named with its value and limit") {
  const PasswordCostLimits limits;
  struct Case {
    std::string stored;
    CostParameter parameter;
    std::uint64_t value;
    std::uint32_t limit;
    std::string_view described;
  };
  const Case cases[] = {
      {pbkdf2("10000000"), CostParameter::kPbkdf2Iterations, 10'000'000, 30'000,
       "PBKDF2 iterations 10000000"},
      {argon2("m=1048576,t=2,p=1"), CostParameter::kArgon2MemoryKib, 1'048'576, 65'536,
       "argon2 memory 1048576 KiB"},
      {argon2("m=65536,t=5,p=1"), CostParameter::kArgon2Iterations, 5, 4, "argon2 iterations 5"},
      {argon2("m=65536,t=2,p=8"), CostParameter::kArgon2Parallelism, 8, 4, "argon2 parallelism 8"},
      // Memory is looked at first: the first parameter over its ceiling is the one named.
      {argon2("m=1048576,t=64,p=16"), CostParameter::kArgon2MemoryKib, 1'048'576, 65'536,
       "argon2 memory 1048576 KiB"},
      {"{CRYPT}$6$rounds=50000$abcdefgh$xyz", CostParameter::kShaCryptRounds, 50'000, 10'000,
       "sha-crypt rounds 50000"},
      {"{CRYPT}$5$rounds=10001$abcdefgh$xyz", CostParameter::kShaCryptRounds, 10'001, 10'000,
       "sha-crypt rounds 10001"},
      {"{CRYPT}$2y$12$u94irsWe/AIs8pHsqfrcYu0DEkLS4wJ/8FxhxNXw8pkwRg2XZz7Oi",
       CostParameter::kBcryptCost, 12, 6, "bcrypt cost 12"},
      {"{CRYPT}$6$rounds=99999999999999999999$abcdefgh$xyz", CostParameter::kShaCryptRounds,
       std::uint64_t{UINT32_MAX} + 1, 10'000, "sha-crypt rounds over 4294967295"},
      {"{pbkdf2-sha256}2147483648" + std::string(kPbkdf2Tail), CostParameter::kPbkdf2Iterations,
       2'147'483'648, 30'000, "PBKDF2 iterations 2147483648"},
  };
  for (const Case& c : cases) {
    INFO("stored: ", c.stored);
    const std::optional<CostExcess> excess = password_cost_excess(c.stored, limits);
    REQUIRE(excess.has_value());
    CHECK(excess->parameter == c.parameter);
    CHECK(excess->value == c.value);
    CHECK(excess->limit == c.limit);
    CHECK(excess->limit == cost_limit(limits, c.parameter));
    CHECK(describe_cost(excess->parameter, excess->value) == c.described);
    // verify_password refuses it the same way, before any hashing (1 GiB of argon2 memory or 10
    // million iterations would take seconds; the answer is kLimitExceeded, not a mismatch).
    Result<bool> verified = verify_password("secret", c.stored);
    REQUIRE_FALSE(verified.ok());
    CHECK(verified.status().code() == StatusCode::kLimitExceeded);
    CHECK(verified.status().message().find(std::string(c.described) + " is over the limit of " +
                                           std::to_string(c.limit)) != std::string::npos);
  }
}

TEST_CASE("PasswordCost: a value at its ceiling passes and one above it does not") {
  PasswordCostLimits limits;
  limits.max_argon2_memory_kib = 4096;
  limits.max_pbkdf2_iterations = 1000;
  limits.max_bcrypt_cost = 10;
  CHECK_FALSE(password_cost_excess(argon2("m=4096,t=1,p=1"), limits).has_value());
  CHECK(password_cost_excess(argon2("m=4097,t=1,p=1"), limits).has_value());
  CHECK_FALSE(password_cost_excess(pbkdf2("1000"), limits).has_value());
  CHECK(password_cost_excess(pbkdf2("1001"), limits).has_value());
  CHECK_FALSE(password_cost_excess("{CRYPT}$2b$10$abc", limits).has_value());
  CHECK(password_cost_excess("{CRYPT}$2b$11$abc", limits).has_value());
}

TEST_CASE("PasswordCost: values whose cost cannot be read have no excess") {
  const PasswordCostLimits limits;
  const std::string values[] = {
      "{SSHA}jJ/M4rqPnDRtZqfPh5U+KJmYLcjlx+87",
      "{SHA512}vSsar3708Jvp9Szi2NWZZ02Bqp1qRCFpbcTZPdBhnWgs5WtNZKnvCXdhztmeD2cmW192CF5bDufKRpayrW",
      "plain cleartext",
      "{CLEARTEXT}secret",
      "{UNKNOWN}m=1048576,t=64,p=16",
      "{}x",
      // Malformed: verify_password refuses these without hashing them.
      "{ARGON2}$argon2id$v=19$m=1048576,t=2,p=1$not*base64$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8",
      "{ARGON2}$argon2id$v=19$m=1048576,t=2",
      "{PBKDF2-SHA512}10000000",
      "{PBKDF2-SHA512}ten$abc$def",
      // crypt(3) methods whose cost numadir does not decode.
      "{CRYPT}$y$jFT$s8.Uo9F.Tyme2.FK$HbvTF1qAv9KEYvbtTYKbG4kGVaGC2Kp..wgHtE9KOL.",
      "{CRYPT}$7$CU..../....Aw3N8fN6TbH4jiuIk5G8C0",
      "{CRYPT}$6$rounds=x$abc",
  };
  for (const std::string& value : values) {
    INFO("stored: ", value);
    CHECK_FALSE(password_cost_excess(value, limits).has_value());
  }
}

TEST_CASE("PasswordCost: the key derivations and crypt are the costly schemes") {
  for (const PasswordScheme scheme :
       {PasswordScheme::kPbkdf2Sha1, PasswordScheme::kPbkdf2Sha256, PasswordScheme::kPbkdf2Sha512,
        PasswordScheme::kArgon2, PasswordScheme::kCrypt}) {
    CHECK(password_scheme_costly(scheme));
  }
  for (const PasswordScheme scheme :
       {PasswordScheme::kCleartext, PasswordScheme::kMd5, PasswordScheme::kSmd5,
        PasswordScheme::kSha1, PasswordScheme::kSsha1, PasswordScheme::kSha256,
        PasswordScheme::kSsha256, PasswordScheme::kSha384, PasswordScheme::kSsha384,
        PasswordScheme::kSha512, PasswordScheme::kSsha512}) {
    CHECK_FALSE(password_scheme_costly(scheme));
  }
}

}  // namespace
}  // namespace numadir::backend
