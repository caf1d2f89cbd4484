// libFuzzer target for stored userPassword values: verify_password parses the stored value
// ({SCHEME} prefix, base64, PBKDF2 and argon2 strings, crypt(3) settings) from untrusted data,
// since users may set pre-hashed values. Costs are capped low so that each input runs fast.
// Properties: password_cost_excess() finds a cost over the ceilings exactly when verifying
// refuses the value with kLimitExceeded, a fresh {SSHA} hash of the input verifies, and the
// stored value's base64 (the digests' payload), when it decodes in either alphabet, decodes to
// as many bytes as its digits carry and round-trips through the encoder.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/detail/password_scheme.h"
#include "backend/password_scheme.h"

using numadir::backend::PasswordScheme;
using numadir::backend::VerifyPolicy;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The first line is the password, the rest the stored value.
  const std::size_t newline = input.find('\n');
  const std::string_view password = input.substr(0, newline);
  const std::string_view stored =
      newline == std::string_view::npos ? std::string_view() : input.substr(newline + 1);

  VerifyPolicy policy;
  policy.allow_cleartext = true;
  policy.limits.max_pbkdf2_iterations = 64;
  policy.limits.max_argon2_memory_kib = 64;
  policy.limits.max_argon2_iterations = 2;
  policy.limits.max_argon2_parallelism = 2;
  policy.limits.max_sha_crypt_rounds = 2000;
  policy.limits.max_bcrypt_cost = 4;
  auto result = numadir::backend::verify_password(password, stored, policy);
  // The cost is read by verify's own parsers: a value is over a ceiling exactly when verifying
  // refuses it as such (before any hashing).
  const bool over = numadir::backend::password_cost_excess(stored, policy.limits).has_value();
  if (over != (!result.ok() && result.status().code() == numadir::StatusCode::kLimitExceeded)) {
    __builtin_trap();
  }

  namespace detail = numadir::backend::detail;
  for (const auto alphabet :
       {detail::Base64Alphabet::kStandard, detail::Base64Alphabet::kAdapted}) {
    std::string decoded;
    if (!detail::base64_decode(stored, alphabet, &decoded)) {
      continue;
    }
    std::size_t digits = stored.size();
    while (digits > 0 && stored[digits - 1] == '=') {
      --digits;
    }
    std::string again;
    if (decoded.size() != digits * 6 / 8 ||
        detail::base64_encode(decoded, alphabet, false).size() != digits ||
        !detail::base64_decode(detail::base64_encode(decoded, alphabet, true), alphabet, &again) ||
        again != decoded) {
      __builtin_trap();
    }
  }

  auto hashed = numadir::backend::hash_password(password, PasswordScheme::kSsha1);
  if (!hashed.ok()) {
    __builtin_trap();
  }
  auto verified = numadir::backend::verify_password(password, *hashed, policy);
  if (!verified.ok() || !*verified) {
    __builtin_trap();
  }
  return 0;
}
