// tests/server/operations/costly_values.h: userPassword values for the cost-ceiling tests:
// well-formed values over the default ceilings (never computed) and a costly scheme at a cost a
// test can afford.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "backend/password_scheme.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {

// Well-formed values whose costs are over the default ceilings; never computed here.
inline const std::string kArgon2GiB =
    "{ARGON2}$argon2id$v=19$m=1048576,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$"
    "CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc";
inline const std::string kPbkdf2TenMillion =
    "{PBKDF2-SHA512}10000000$uEt6/HSZ1F12Twniv6DuTw$XelwTh/LPICgouYSFZJ3laPqG4soNTiPdxyB/3poAHaYa"
    "VDvFGTjay2SlsRgtUReIJ5TPoCbkG4toNcgRLzCkA";

inline const std::string kCostlyUser = "uid=costly," + std::string(kPeople);

// A costly scheme ({PBKDF2-*}: never checked on a listener) at a cost a test can afford.
inline std::string cheap_pbkdf2(std::string_view password) {
  backend::HashOptions options;
  options.pbkdf2_iterations = 1000;
  Result<std::string> hashed =
      backend::hash_password(password, backend::PasswordScheme::kPbkdf2Sha256, options);
  REQUIRE(hashed.ok());
  return std::move(*hashed);
}

}  // namespace numadir::server::testing
