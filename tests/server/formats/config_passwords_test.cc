// Tests for the [passwords] section of numadir.toml (server/formats/config_passwords.cc): the
// cost ceilings, their defaults, and the values check-config refuses.
#include <doctest/doctest.h>

#include <string>

#include "backend/password_scheme.h"
#include "server/formats/config.h"

namespace numadir::server {
namespace {

constexpr const char* kPasswordsDatabase = R"(
[database]
path = "db"
suffix = "dc=example,dc=com"
)";

Result<Config> parse_passwords(const std::string& passwords) {
  return parse_config(std::string(kPasswordsDatabase) + "\n[passwords]\n" + passwords, "test.toml",
                      "/etc/nd");
}

std::string passwords_error_of(const std::string& passwords) {
  auto config = parse_passwords(passwords);
  return config.ok() ? std::string() : config.status().message();
}

TEST_CASE("Config passwords: the ceilings default to backend::PasswordCostLimits") {
  auto config = parse_passwords("");
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  const backend::PasswordCostLimits& limits = config->password_limits;
  CHECK(limits.max_pbkdf2_iterations == 30'000);
  CHECK(limits.max_argon2_memory_kib == 65'536);
  CHECK(limits.max_argon2_iterations == 4);
  CHECK(limits.max_argon2_parallelism == 4);
  CHECK(limits.max_sha_crypt_rounds == 10'000);
  CHECK(limits.max_bcrypt_cost == 6);
}

TEST_CASE("Config passwords: every ceiling is read") {
  auto config = parse_passwords(R"(
max_pbkdf2_iterations = 600000
max_argon2_memory_kib = 262144
max_argon2_iterations = 3
max_argon2_parallelism = 1
max_sha_crypt_rounds = 656000
max_bcrypt_cost = 12
)");
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  const backend::PasswordCostLimits& limits = config->password_limits;
  CHECK(limits.max_pbkdf2_iterations == 600'000);
  CHECK(limits.max_argon2_memory_kib == 262'144);
  CHECK(limits.max_argon2_iterations == 3);
  CHECK(limits.max_argon2_parallelism == 1);
  CHECK(limits.max_sha_crypt_rounds == 656'000);
  CHECK(limits.max_bcrypt_cost == 12);
}

TEST_CASE("Config passwords: nonsense ceilings are refused with their key and range") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"max_pbkdf2_iterations = 0",
       "passwords.max_pbkdf2_iterations: must be an integer from 1 to 2147483647 (OpenSSL's "
       "range)"},
      {"max_pbkdf2_iterations = 2147483648", "passwords.max_pbkdf2_iterations: must be"},
      {"max_pbkdf2_iterations = -5", "passwords.max_pbkdf2_iterations: must be"},
      {"max_pbkdf2_iterations = \"30000\"", "passwords.max_pbkdf2_iterations: must be"},
      {"max_argon2_memory_kib = 7",
       "passwords.max_argon2_memory_kib: must be an integer from 8 to 4294967295"},
      {"max_argon2_memory_kib = 4294967296", "passwords.max_argon2_memory_kib: must be"},
      {"max_argon2_iterations = 0", "passwords.max_argon2_iterations: must be an integer from 1"},
      {"max_argon2_parallelism = 16777216",
       "passwords.max_argon2_parallelism: must be an integer from 1 to 16777215"},
      {"max_sha_crypt_rounds = 999",
       "passwords.max_sha_crypt_rounds: must be an integer from 1000 to 999999999 (sha-crypt's "
       "range)"},
      {"max_bcrypt_cost = 3",
       "passwords.max_bcrypt_cost: must be an integer from 4 to 31 (bcrypt's range)"},
      {"max_bcrypt_cost = 32", "passwords.max_bcrypt_cost: must be"},
      {"max_bcrypt_cost = 1.5", "passwords.max_bcrypt_cost: must be"},
      {"max_scrypt_cost = 3", "passwords.max_scrypt_cost: unknown key"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const std::string error = passwords_error_of(c.text);
    CHECK(error.rfind("test.toml: ", 0) == 0);
    CHECK_MESSAGE(error.find(c.message) != std::string::npos, error);
  }
}

TEST_CASE("Config passwords: a ceiling below what numadir writes with the default scheme") {
  // The passwords numadir hashes (Add, Modify, Password Modify) must stay usable for binds.
  CHECK(passwords_error_of("default_scheme = \"ARGON2\"\nmax_argon2_memory_kib = 4096") ==
        "test.toml: passwords.max_argon2_memory_kib: 4096 is below the argon2 memory 65536 KiB "
        "numadir writes with passwords.default_scheme = {ARGON2}: binds would refuse the "
        "passwords it hashes");
  CHECK(passwords_error_of("default_scheme = \"ARGON2\"\nmax_argon2_iterations = 1")
            .find("passwords.max_argon2_iterations: 1 is below the argon2 iterations 2") !=
        std::string::npos);
  CHECK(passwords_error_of("default_scheme = \"PBKDF2-SHA512\"\nmax_pbkdf2_iterations = 9999")
            .find("passwords.max_pbkdf2_iterations: 9999 is below the PBKDF2 iterations 10000") !=
        std::string::npos);
  // With another default scheme the admin may set them as low as the schemes allow.
  auto config = parse_passwords("max_argon2_memory_kib = 4096\nmax_pbkdf2_iterations = 1000");
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  CHECK(config->password_limits.max_argon2_memory_kib == 4096);
  CHECK(parse_passwords("default_scheme = \"CRYPT\"\nmax_sha_crypt_rounds = 1000").ok());
}

TEST_CASE("Config passwords: a rootpw over a ceiling is refused") {
  const std::string server =
      "\n[server]\nrootdn = \"cn=admin,dc=example,dc=com\"\nrootpw = "
      "\"{ARGON2}$argon2id$v=19$m=1048576,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$CTFhFdXPJO1aFaMaO6Mm5c8y7"
      "cJHAph8ArZWb2GRPPc\"\n";
  const std::string error = passwords_error_of(server);
  CHECK_MESSAGE(error.find("test.toml: server.rootpw: argon2 memory 1048576 KiB over "
                           "passwords.max_argon2_memory_kib (65536)") != std::string::npos,
                error);
  CHECK(parse_passwords("max_argon2_memory_kib = 1048576" + server).ok());
}

}  // namespace
}  // namespace numadir::server
