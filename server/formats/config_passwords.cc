// server/formats/config_passwords.cc: the [passwords] section of numadir.toml: the scheme
// numadir hashes cleartext passwords with, whether stored cleartext is accepted, the ceilings on
// what a stored value may cost to check (backend::PasswordCostLimits) and the password policy
// (server/operations/password_policy.h).
//
// Thread contract: as detail/config_toml.h; the thread parsing a config.
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/password_scheme.h"
#include "server/formats/detail/config.h"
#include "server/formats/detail/config_toml.h"
#include "server/operations/password_cost.h"

namespace numadir::server::detail {
namespace {

// One ceiling: its key, the range its scheme itself allows (a ceiling outside it is a mistake:
// below, nothing of the scheme could ever be checked; above, the scheme never reaches it), and
// where it lives in PasswordCostLimits.
struct CeilingKey {
  backend::CostParameter parameter;
  std::uint64_t min;
  std::uint64_t max;
  std::string_view range;  // Why these bounds.
  std::uint32_t backend::PasswordCostLimits::*field;
};

constexpr CeilingKey kCeilings[] = {
    {backend::CostParameter::kPbkdf2Iterations, 1, 2'147'483'647, "OpenSSL's range",
     &backend::PasswordCostLimits::max_pbkdf2_iterations},
    {backend::CostParameter::kArgon2MemoryKib, 8, 4'294'967'295, "libargon2's range",
     &backend::PasswordCostLimits::max_argon2_memory_kib},
    {backend::CostParameter::kArgon2Iterations, 1, 4'294'967'295, "libargon2's range",
     &backend::PasswordCostLimits::max_argon2_iterations},
    {backend::CostParameter::kArgon2Parallelism, 1, 16'777'215, "libargon2's range",
     &backend::PasswordCostLimits::max_argon2_parallelism},
    {backend::CostParameter::kShaCryptRounds, 1000, 999'999'999, "sha-crypt's range",
     &backend::PasswordCostLimits::max_sha_crypt_rounds},
    {backend::CostParameter::kBcryptCost, 4, 31, "bcrypt's range",
     &backend::PasswordCostLimits::max_bcrypt_cost},
};

// Returns: the cost `parameter` of what numadir itself writes with `scheme` (HashOptions'
//   defaults), or 0 when that scheme's values do not carry it.
std::uint64_t written_cost(backend::PasswordScheme scheme, backend::CostParameter parameter) {
  const backend::HashOptions written;
  switch (scheme) {
    case backend::PasswordScheme::kPbkdf2Sha256:
    case backend::PasswordScheme::kPbkdf2Sha512:
      return parameter == backend::CostParameter::kPbkdf2Iterations ? written.pbkdf2_iterations : 0;
    case backend::PasswordScheme::kArgon2:
      switch (parameter) {
        case backend::CostParameter::kArgon2MemoryKib:
          return written.argon2_memory_kib;
        case backend::CostParameter::kArgon2Iterations:
          return written.argon2_iterations;
        case backend::CostParameter::kArgon2Parallelism:
          return written.argon2_parallelism;
        default:
          return 0;
      }
    default:
      return 0;  // {CRYPT} writes $6$ without rounds= (or $y$): no ceiling applies.
  }
}

}  // namespace

void parse_passwords(const toml::table& table, Config& config, Problems& problems) {
  check_keys(
      table, "passwords",
      {"default_scheme", "allow_cleartext", "max_pbkdf2_iterations", "max_argon2_memory_kib",
       "max_argon2_iterations", "max_argon2_parallelism", "max_sha_crypt_rounds", "max_bcrypt_cost",
       "policy", "default_policy", "use_lockout", "failure_flush_ms", "clear_flush_ms"},
      problems);
  get_bool(table, "passwords", "policy", config.password_policy, problems);
  if (get_string(table, "passwords", "default_policy", config.default_policy_dn, problems)) {
    if (config.default_policy_dn.empty()) {
      problems.add("passwords.default_policy", "must name a pwdPolicy entry (a DN)");
    } else if (const toml::node* policy = table.get("policy");
               policy != nullptr && policy->is_boolean() && !policy->as_boolean()->get()) {
      problems.add("passwords.default_policy", "given with passwords.policy = false");
    } else {
      config.password_policy = true;
    }
  }
  get_bool(table, "passwords", "use_lockout", config.policy_use_lockout, problems);
  const auto milliseconds = [&](std::string_view key, std::int64_t max, std::uint32_t& out) {
    if (const toml::node* node = table.get(key); node != nullptr) {
      const auto* value = node->as_integer();
      if (value == nullptr || value->get() < 1 || value->get() > max) {
        problems.add("passwords." + std::string(key),
                     "must be an integer from 1 to " + std::to_string(max) + " (ms)");
      } else {
        out = static_cast<std::uint32_t>(value->get());
      }
    }
  };
  milliseconds("failure_flush_ms", 10'000, config.failure_flush_ms);
  milliseconds("clear_flush_ms", 3'600'000, config.clear_flush_ms);
  std::string scheme;
  if (get_string(table, "passwords", "default_scheme", scheme, problems)) {
    auto parsed_scheme = backend::parse_password_scheme(scheme);
    if (!parsed_scheme.ok()) {
      problems.add("passwords.default_scheme", parsed_scheme.status().message());
    } else if (!backend::password_scheme_writable(*parsed_scheme)) {
      problems.add("passwords.default_scheme",
                   "\"" + scheme + "\" can be read but not written; use e.g. SSHA512");
    } else {
      config.default_password_scheme = *parsed_scheme;
    }
  }
  get_bool(table, "passwords", "allow_cleartext", config.allow_cleartext_passwords, problems);
  for (const CeilingKey& ceiling : kCeilings) {
    const std::string_view full = cost_limit_key(ceiling.parameter);
    const std::string_view key = full.substr(full.find('.') + 1);
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      continue;
    }
    const auto* value = node->as_integer();
    if (value == nullptr || value->get() < 0 ||
        static_cast<std::uint64_t>(value->get()) < ceiling.min ||
        static_cast<std::uint64_t>(value->get()) > ceiling.max) {
      problems.add(full, "must be an integer from " + std::to_string(ceiling.min) + " to " +
                             std::to_string(ceiling.max) + " (" + std::string(ceiling.range) + ")");
      continue;
    }
    const auto ceiling_value = static_cast<std::uint64_t>(value->get());
    // A ceiling below what numadir writes itself would refuse, at every bind, the passwords it
    // hashes for Add, Modify and Password Modify.
    if (const std::uint64_t written =
            written_cost(config.default_password_scheme, ceiling.parameter);
        ceiling_value < written) {
      problems.add(full,
                   std::to_string(ceiling_value) + " is below the " +
                       backend::describe_cost(ceiling.parameter, written) +
                       " numadir writes with passwords.default_scheme = " +
                       std::string(backend::password_scheme_name(config.default_password_scheme)) +
                       ": binds would refuse the passwords it hashes");
      continue;
    }
    config.password_limits.*ceiling.field = static_cast<std::uint32_t>(ceiling_value);
  }
}

}  // namespace numadir::server::detail
