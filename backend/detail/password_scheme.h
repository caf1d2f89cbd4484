// backend/detail/password_scheme.h: the pieces behind backend/password_scheme.h, private to
// backend/: base64 codecs, random bytes, constant-time comparison and one hash/verify pair per
// scheme family (password_digest.cc, password_argon2.cc, password_crypt.cc).
//
// Thread contract: as backend/password_scheme.h, every function may run on any thread at once.
// The per-family functions take `scheme` already checked by the dispatcher in
// password_scheme.cc: it is one of their family's, and writable for the hash_* ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backend/password_scheme.h"
#include "base/status.h"

namespace numadir::backend::detail {

enum class Base64Alphabet : std::uint8_t {
  kStandard,  // RFC 4648 §4: "+/".
  kAdapted,  // passlib's "ab64", pw-pbkdf2: "./" (decoding also takes '+', see password_base64.cc).
};

// Returns: `bytes` in base64, with '=' padding when `pad`.
std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet, bool pad);

// Decodes `text` into `*out` (replacing it). '=' padding is optional, but where present it must
// bring the length to a multiple of 4 and end the text. No whitespace.
// Returns: false when `text` is not base64 of `alphabet`; `*out` is then unspecified.
[[nodiscard]] bool base64_decode(std::string_view text, Base64Alphabet alphabet, std::string* out);

// Fills `out` with `size` bytes from OpenSSL's CSPRNG.
// Errors: kInternal when RAND_bytes fails (no entropy source).
[[nodiscard]] Status random_bytes(std::size_t size, std::string* out);

// Returns: whether a and b are equal, in time that depends only on their lengths (and returns
// false at once when the lengths differ: the lengths compared here are public, e.g. a digest
// size fixed by the scheme, or already checked against the stored value).
bool equal_constant_time(std::string_view a, std::string_view b);

// Overwrites `s` with zeros (not elided by the optimizer) and clears it.
void wipe(std::string* s);

// Returns: kLimitExceeded for a value of `scheme` whose cost parameter is over its ceiling,
// naming both: "password: {ARGON2}: argon2 memory 1048576 KiB is over the limit of 65536".
Status cost_refused(PasswordScheme scheme, const CostExcess& excess);

// Each family's part of password_cost_excess(), on the payload after the "{...}", read by the
// same parser as the family's verify_*() (which refuses with cost_refused() before hashing).
std::optional<CostExcess> pbkdf2_cost_excess(std::string_view payload,
                                             const PasswordCostLimits& limits);
std::optional<CostExcess> argon2_cost_excess(std::string_view payload,
                                             const PasswordCostLimits& limits);
std::optional<CostExcess> crypt_cost_excess(std::string_view payload,
                                            const PasswordCostLimits& limits);

// {SSHA*}, {SMD5}, {SHA*}, {MD5} and {PBKDF2-*} (OpenSSL). `payload` follows the "{...}".
Result<std::string> hash_digest(std::string_view password, PasswordScheme scheme,
                                const HashOptions& options);
// `scratch` holds the decoded value and the digest, wiped before it returns.
Result<bool> verify_digest(std::string_view password, PasswordScheme scheme,
                           std::string_view payload, const VerifyPolicy& policy,
                           PasswordScratch& scratch);

// {ARGON2} (libargon2).
Result<std::string> hash_argon2(std::string_view password, const HashOptions& options);
Result<bool> verify_argon2(std::string_view password, std::string_view payload,
                           const VerifyPolicy& policy);

// {CRYPT} (libcrypt, i.e. libxcrypt).
Result<std::string> hash_crypt(std::string_view password, const HashOptions& options);
Result<bool> verify_crypt(std::string_view password, std::string_view payload,
                          const VerifyPolicy& policy);

}  // namespace numadir::backend::detail
