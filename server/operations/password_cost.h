// server/operations/password_cost.h: the server's side of the ceilings on what a stored password
// may cost to check (backend::PasswordCostLimits, set by the [passwords] max_* keys): the config
// key of each ceiling, the diagnostic naming a value over one, and the check of the
// userPassword values an Add, a Modify, a Password Modify or `numadir import` would store.
//
// Thread contract: functions of their arguments, any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "backend/password_scheme.h"
#include "base/status.h"

namespace numadir::server {

// Returns: the config key of the ceiling on `parameter`, e.g. "passwords.max_argon2_memory_kib".
//   The view is static.
std::string_view cost_limit_key(backend::CostParameter parameter);

// Returns: e.g. "argon2 memory 1048576 KiB over passwords.max_argon2_memory_kib (65536)".
std::string describe_cost_excess(const backend::CostExcess& excess);

// Checks the userPassword values to be stored: each value's cost parameters are read from the
// value (nothing is hashed) and compared with `limits`. Values of schemes without a cost
// parameter, of crypt(3) methods whose cost numadir does not read, of unknown schemes, and
// malformed ones pass: they are stored as they are (binds refuse what they cannot check).
// Errors: kConstraintViolation "userPassword: <describe_cost_excess()>" for the first value over
//   a ceiling.
Status check_password_costs(std::span<const std::string> values,
                            const backend::PasswordCostLimits& limits);

}  // namespace numadir::server
