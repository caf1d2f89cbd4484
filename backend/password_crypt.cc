// backend/password_crypt.cc: {CRYPT}, a crypt(3) hash as slapd's {CRYPT} scheme stores it,
// computed by libxcrypt's reentrant crypt_rn(). Reading takes whatever method libxcrypt
// supports ($1$ md5crypt, $5$/$6$ sha-crypt, $y$ yescrypt, $2b$ bcrypt, $7$ scrypt, DES, ...);
// writing makes $6$ or $y$ with a salt from crypt_gensalt_rn() fed by OpenSSL's CSPRNG.
//
// Cost limits: sha-crypt "rounds=" and the bcrypt cost are checked against PasswordCostLimits.
// yescrypt's and scrypt's encoded costs are not decoded, so not bounded here.
#include <crypt.h>
#include <openssl/crypto.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "backend/detail/password_scheme.h"
#include "backend/password_scheme.h"
#include "base/status.h"

namespace numadir::backend::detail {
namespace {

// Random bytes handed to crypt_gensalt_rn(): 16 is what $y$ asks for and more than the 12 that
// make $6$'s 16-character salt.
constexpr std::size_t kGensaltRandomBytes = 16;

Status crypt_malformed(std::string_view what) {
  return malformed("password: {CRYPT}: " + std::string(what));
}

// crypt_data is 32 KiB: too big for a worker's stack, so it lives on the heap, and it may hold
// password-derived state, so it is wiped before it is freed.
struct CryptDataDeleter {
  void operator()(crypt_data* data) const {
    OPENSSL_cleanse(data, sizeof(*data));
    delete data;
  }
};
using CryptData = std::unique_ptr<crypt_data, CryptDataDeleter>;

// Parses the decimal number at the front of `text`, up to `end` (a character that must follow
// it). Returns false when there are no digits or `end` is missing. Values over UINT32_MAX
// saturate: they are only compared with a limit.
bool leading_number(std::string_view text, char end, std::uint64_t* out) {
  std::size_t i = 0;
  std::uint64_t value = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
    if (value > UINT32_MAX) {
      value = static_cast<std::uint64_t>(UINT32_MAX) + 1;
    }
    ++i;
  }
  if (i == 0 || i >= text.size() || text[i] != end) {
    return false;
  }
  *out = value;
  return true;
}

}  // namespace

// A value whose cost field does not parse passes: libxcrypt then rejects it as malformed.
std::optional<CostExcess> crypt_cost_excess(std::string_view payload,
                                            const PasswordCostLimits& limits) {
  std::uint64_t cost = 0;
  if ((payload.starts_with("$5$rounds=") || payload.starts_with("$6$rounds=")) &&
      leading_number(payload.substr(10), '$', &cost) && cost > limits.max_sha_crypt_rounds) {
    return CostExcess{CostParameter::kShaCryptRounds, cost, limits.max_sha_crypt_rounds};
  }
  if ((payload.starts_with("$2a$") || payload.starts_with("$2b$") || payload.starts_with("$2x$") ||
       payload.starts_with("$2y$")) &&
      leading_number(payload.substr(4), '$', &cost) && cost > limits.max_bcrypt_cost) {
    return CostExcess{CostParameter::kBcryptCost, cost, limits.max_bcrypt_cost};
  }
  return std::nullopt;
}

Result<std::string> hash_crypt(std::string_view password, const HashOptions& options) {
  if (password.find('\0') != std::string_view::npos) {
    return invalid_argument("password: {CRYPT} cannot store a password that holds a NUL byte");
  }
  if (password.size() >= CRYPT_MAX_PASSPHRASE_SIZE) {
    return invalid_argument("password: {CRYPT} cannot store a password of 512 bytes or more");
  }
  const bool yescrypt = options.crypt_method == CryptMethod::kYescrypt;
  const char* prefix = yescrypt ? "$y$" : "$6$";
  // libxcrypt clamps sha-crypt rounds out of range without a word; refuse them instead.
  const unsigned long min_cost = yescrypt ? 1 : 1000;
  const unsigned long max_cost = yescrypt ? 11 : 999'999'999;
  if (options.crypt_cost != 0 && (options.crypt_cost < min_cost || options.crypt_cost > max_cost)) {
    return invalid_argument("password: {CRYPT}: crypt_cost must be 0 (the default) or in " +
                            std::to_string(min_cost) + ".." + std::to_string(max_cost) + " for " +
                            prefix);
  }
  std::string random;
  NUMADIR_RETURN_IF_ERROR(random_bytes(kGensaltRandomBytes, &random));
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  errno = 0;
  const char* made = crypt_gensalt_rn(prefix, options.crypt_cost, random.data(),
                                      static_cast<int>(random.size()), setting, sizeof(setting));
  wipe(&random);
  if (made == nullptr) {
    if (errno == EINVAL) {
      return invalid_argument("password: {CRYPT}: crypt_cost " +
                              std::to_string(options.crypt_cost) + " is out of range for " +
                              prefix);
    }
    return internal_error("password: {CRYPT}: crypt_gensalt_rn failed, errno " +
                          std::to_string(errno));
  }
  std::string phrase(password);  // NUL-terminated for crypt_rn.
  CryptData data(new crypt_data());
  errno = 0;
  const char* hashed = crypt_rn(phrase.c_str(), setting, data.get(), sizeof(crypt_data));
  wipe(&phrase);
  if (hashed == nullptr) {
    return internal_error("password: {CRYPT}: crypt_rn failed on a fresh setting, errno " +
                          std::to_string(errno));
  }
  return "{CRYPT}" + std::string(hashed);
}

Result<bool> verify_crypt(std::string_view password, std::string_view payload,
                          const VerifyPolicy& policy) {
  if (payload.empty()) {
    return crypt_malformed("the value is empty");
  }
  // Before anything else, as password_cost_excess() judges it.
  if (const std::optional<CostExcess> excess = crypt_cost_excess(payload, policy.limits)) {
    return cost_refused(PasswordScheme::kCrypt, *excess);
  }
  if (payload.find('\0') != std::string_view::npos) {
    return crypt_malformed("the value holds a NUL byte");
  }
  // crypt(3) reads a C string: a password with a NUL would be checked by its prefix alone.
  // No stored crypt hash can match such a password, so it is simply a wrong one. The same goes
  // for a password longer than libxcrypt takes (it would fail with ERANGE).
  if (password.find('\0') != std::string_view::npos ||
      password.size() >= CRYPT_MAX_PASSPHRASE_SIZE) {
    return false;
  }
  std::string phrase(password);
  const std::string setting(payload);
  CryptData data(new crypt_data());
  const char* hashed = crypt_rn(phrase.c_str(), setting.c_str(), data.get(), sizeof(crypt_data));
  wipe(&phrase);
  if (hashed == nullptr) {
    return crypt_malformed(
        "libcrypt does not accept the stored hash (unknown method or bad characters)");
  }
  // crypt_rn() hashes any valid *setting*; a stored value that is only a setting, or a hash
  // with extra characters, comes back with a different length and could never match.
  const std::string_view result(hashed);
  if (result.size() != setting.size()) {
    return crypt_malformed("the stored value is not a complete crypt(3) hash");
  }
  return equal_constant_time(result, setting);
}

}  // namespace numadir::backend::detail
