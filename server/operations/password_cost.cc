// server/operations/password_cost.cc: see password_cost.h.
#include "server/operations/password_cost.h"

#include <optional>

namespace numadir::server {

std::string_view cost_limit_key(backend::CostParameter parameter) {
  switch (parameter) {
    case backend::CostParameter::kPbkdf2Iterations:
      return "passwords.max_pbkdf2_iterations";
    case backend::CostParameter::kArgon2MemoryKib:
      return "passwords.max_argon2_memory_kib";
    case backend::CostParameter::kArgon2Iterations:
      return "passwords.max_argon2_iterations";
    case backend::CostParameter::kArgon2Parallelism:
      return "passwords.max_argon2_parallelism";
    case backend::CostParameter::kShaCryptRounds:
      return "passwords.max_sha_crypt_rounds";
    case backend::CostParameter::kBcryptCost:
      return "passwords.max_bcrypt_cost";
  }
  return "passwords";
}

std::string describe_cost_excess(const backend::CostExcess& excess) {
  return backend::describe_cost(excess.parameter, excess.value) + " over " +
         std::string(cost_limit_key(excess.parameter)) + " (" + std::to_string(excess.limit) + ")";
}

Status check_password_costs(std::span<const std::string> values,
                            const backend::PasswordCostLimits& limits) {
  for (const std::string& value : values) {
    if (const std::optional<backend::CostExcess> excess =
            backend::password_cost_excess(value, limits)) {
      return Status(StatusCode::kConstraintViolation,
                    "userPassword: " + describe_cost_excess(*excess));
    }
  }
  return Status();
}

}  // namespace numadir::server
