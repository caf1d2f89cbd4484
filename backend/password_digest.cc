// backend/password_digest.cc: the schemes built on OpenSSL digests. {SSHA*} and {SMD5} as slapd
// and its pw-sha2 module write them (base64 of digest(password + salt) followed by the salt,
// any salt length), the unsalted {SHA*} / {MD5}, {PBKDF2-*} as the pw-pbkdf2 module writes it,
// and the cleartext comparison.
//
// The bind path's digests use OpenSSL's one-shot low-level functions (MD5_Init, SHA1_Init, ...):
// OpenSSL 3.0's EVP_DigestInit_ex2 frees and allocates the provider's context on every call
// (3.0.19 does), which would be a heap allocation per bind. They are deprecated in 3.0, not
// removed; this file alone uses them.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/md5.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backend/detail/password_scheme.h"
#include "backend/password_scheme.h"
#include "base/status.h"

namespace numadir::backend::detail {
namespace {

enum class Digest : std::uint8_t { kMd5, kSha1, kSha256, kSha384, kSha512 };

struct DigestFamily {
  Digest digest;
  enum Kind : std::uint8_t { kPlain, kSalted, kPbkdf2 } kind;
};

DigestFamily family_of(PasswordScheme scheme) {
  switch (scheme) {
    case PasswordScheme::kMd5:
      return {Digest::kMd5, DigestFamily::kPlain};
    case PasswordScheme::kSmd5:
      return {Digest::kMd5, DigestFamily::kSalted};
    case PasswordScheme::kSha1:
      return {Digest::kSha1, DigestFamily::kPlain};
    case PasswordScheme::kSsha1:
      return {Digest::kSha1, DigestFamily::kSalted};
    case PasswordScheme::kSha256:
      return {Digest::kSha256, DigestFamily::kPlain};
    case PasswordScheme::kSsha256:
      return {Digest::kSha256, DigestFamily::kSalted};
    case PasswordScheme::kSha384:
      return {Digest::kSha384, DigestFamily::kPlain};
    case PasswordScheme::kSsha384:
      return {Digest::kSha384, DigestFamily::kSalted};
    case PasswordScheme::kSha512:
      return {Digest::kSha512, DigestFamily::kPlain};
    case PasswordScheme::kSsha512:
      return {Digest::kSha512, DigestFamily::kSalted};
    case PasswordScheme::kPbkdf2Sha1:
      return {Digest::kSha1, DigestFamily::kPbkdf2};
    case PasswordScheme::kPbkdf2Sha256:
      return {Digest::kSha256, DigestFamily::kPbkdf2};
    case PasswordScheme::kPbkdf2Sha512:
      return {Digest::kSha512, DigestFamily::kPbkdf2};
    case PasswordScheme::kCleartext:
    case PasswordScheme::kArgon2:
    case PasswordScheme::kCrypt:
      break;
  }
  NUMADIR_CHECK(false, "not a digest scheme");
  return {Digest::kSha256, DigestFamily::kPlain};
}

// The digests, fetched once. An explicit fetch spares each call OpenSSL 3's implicit fetch,
// which takes a lock on the shared method store: on the bind path that lock would be taken by
// every worker. The objects live until exit. A null entry is a digest the loaded providers lack
// (MD5 under FIPS).
const EVP_MD* md_of(Digest digest) {
  static const std::array<EVP_MD*, 5> kFetched = {
      EVP_MD_fetch(nullptr, "MD5", nullptr),    EVP_MD_fetch(nullptr, "SHA1", nullptr),
      EVP_MD_fetch(nullptr, "SHA256", nullptr), EVP_MD_fetch(nullptr, "SHA384", nullptr),
      EVP_MD_fetch(nullptr, "SHA512", nullptr),
  };
  return kFetched[static_cast<std::size_t>(digest)];
}

Status digest_unavailable(PasswordScheme scheme) {
  return internal_error("password: " + std::string(password_scheme_name(scheme)) +
                        ": OpenSSL has no implementation of its digest");
}

// digest(a + b) by one low-level digest context `Context`, into `buffer`. Returns the size.
template <typename Context, int (*Init)(Context*), int (*Update)(Context*, const void*, size_t),
          int (*Final)(unsigned char*, Context*)>
unsigned int low_level_two(std::string_view a, std::string_view b, unsigned char* buffer,
                           unsigned int size) {
  Context context;
  const bool ok = Init(&context) == 1 && Update(&context, a.data(), a.size()) == 1 &&
                  Update(&context, b.data(), b.size()) == 1 && Final(buffer, &context) == 1;
  OPENSSL_cleanse(&context, sizeof(context));
  return ok ? size : 0;
}

// digest(a + b) with no allocation, for md_of's digests. Returns the size written to `buffer`;
// 0 when `md` is none of them or the digest failed.
unsigned int digest_two_fast(const EVP_MD* md, std::string_view a, std::string_view b,
                             unsigned char* buffer) {
  switch (EVP_MD_get_type(md)) {
    case NID_sha1:
      return low_level_two<SHA_CTX, SHA1_Init, SHA1_Update, SHA1_Final>(a, b, buffer,
                                                                        SHA_DIGEST_LENGTH);
    case NID_sha256:
      return low_level_two<SHA256_CTX, SHA256_Init, SHA256_Update, SHA256_Final>(
          a, b, buffer, SHA256_DIGEST_LENGTH);
    case NID_sha384:
      return low_level_two<SHA512_CTX, SHA384_Init, SHA384_Update, SHA384_Final>(
          a, b, buffer, SHA384_DIGEST_LENGTH);
    case NID_sha512:
      return low_level_two<SHA512_CTX, SHA512_Init, SHA512_Update, SHA512_Final>(
          a, b, buffer, SHA512_DIGEST_LENGTH);
    case NID_md5:
      return low_level_two<MD5_CTX, MD5_Init, MD5_Update, MD5_Final>(a, b, buffer,
                                                                     MD5_DIGEST_LENGTH);
    default:
      return 0;
  }
}

// Writes digest(a + b) to `out` (replacing it). Returns false if OpenSSL fails.
bool digest_two(const EVP_MD* md, std::string_view a, std::string_view b, std::string* out) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> buffer;
  if (const unsigned int size = digest_two_fast(md, a, b, buffer.data()); size != 0) {
    out->assign(reinterpret_cast<const char*>(buffer.data()), size);
    OPENSSL_cleanse(buffer.data(), buffer.size());
    return true;
  }
  return false;
}

Status openssl_failed(PasswordScheme scheme) {
  return internal_error("password: " + std::string(password_scheme_name(scheme)) +
                        ": OpenSSL failed to compute the digest");
}

// pw-pbkdf2's salt, and the size its checker insists on.
constexpr std::size_t kPbkdf2SaltBytes = 16;
constexpr std::size_t kMinSaltBytes = 4;
constexpr std::size_t kMaxSaltBytes = 64;

bool pbkdf2(const EVP_MD* md, std::string_view password, std::string_view salt,
            std::uint32_t iterations, std::size_t size, std::string* out) {
  out->assign(size, '\0');
  return password.size() <= static_cast<std::size_t>(INT_MAX) &&
         salt.size() <= static_cast<std::size_t>(INT_MAX) &&
         iterations <= static_cast<std::uint32_t>(INT_MAX) &&
         PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                           reinterpret_cast<const unsigned char*>(salt.data()),
                           static_cast<int>(salt.size()), static_cast<int>(iterations), md,
                           static_cast<int>(size),
                           reinterpret_cast<unsigned char*>(out->data())) == 1;
}

// Parses the decimal iteration count of a PBKDF2 value: digits only, no sign, no spaces.
// Returns false when it is empty, not decimal, zero or over UINT32_MAX.
bool parse_iterations(std::string_view text, std::uint64_t* out) {
  if (text.empty() || text.size() > 10) {
    return false;
  }
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value == 0 || value > UINT32_MAX) {
    return false;
  }
  *out = value;
  return true;
}

// A PBKDF2 payload, "<iterations>$<ab64 salt>$<ab64 dk>", split; views into the payload.
struct Pbkdf2Fields {
  std::uint64_t iterations = 0;
  std::string_view salt;  // Still ab64.
  std::string_view hash;  // Still ab64.
};

// Splits `payload` and reads its iteration count; `name` is the scheme, for messages.
// Errors: kMalformed when the fields are not there or the count is not a number in 1..2^32-1.
Status parse_pbkdf2(std::string_view name, std::string_view payload, Pbkdf2Fields* out) {
  const std::size_t first = payload.find('$');
  const std::size_t second = first == std::string_view::npos ? first : payload.find('$', first + 1);
  if (second == std::string_view::npos || payload.find('$', second + 1) != std::string_view::npos) {
    return malformed("password: " + std::string(name) + ": expected <iterations>$<salt>$<hash>");
  }
  if (!parse_iterations(payload.substr(0, first), &out->iterations)) {
    return malformed("password: " + std::string(name) +
                     ": the iteration count is not a number in 1..2^32-1");
  }
  out->salt = payload.substr(first + 1, second - first - 1);
  out->hash = payload.substr(second + 1);
  return Status::ok_status();
}

// OpenSSL takes the count as an int: a larger one is over any ceiling.
std::optional<CostExcess> excess_of(const Pbkdf2Fields& fields, const PasswordCostLimits& limits) {
  const std::uint32_t limit =
      std::min(limits.max_pbkdf2_iterations, static_cast<std::uint32_t>(INT_MAX));
  if (fields.iterations > limit) {
    return CostExcess{CostParameter::kPbkdf2Iterations, fields.iterations, limit};
  }
  return std::nullopt;
}

Result<bool> verify_pbkdf2(std::string_view password, PasswordScheme scheme, const EVP_MD* md,
                           std::string_view payload, const VerifyPolicy& policy) {
  const std::string name(password_scheme_name(scheme));
  Pbkdf2Fields fields;
  NUMADIR_RETURN_IF_ERROR(parse_pbkdf2(name, payload, &fields));
  if (const std::optional<CostExcess> excess = excess_of(fields, policy.limits)) {
    return cost_refused(scheme, *excess);
  }
  std::string salt;
  std::string expected;
  if (!base64_decode(fields.salt, Base64Alphabet::kAdapted, &salt) ||
      !base64_decode(fields.hash, Base64Alphabet::kAdapted, &expected)) {
    return malformed("password: " + name + ": the salt or hash is not adapted base64");
  }
  if (salt.empty()) {
    return malformed("password: " + name + ": the salt is empty");
  }
  const auto digest_size = static_cast<std::size_t>(EVP_MD_get_size(md));
  if (expected.size() != digest_size) {
    return malformed("password: " + name + ": the hash is " + std::to_string(expected.size()) +
                     " bytes, not " + std::to_string(digest_size));
  }
  std::string actual;
  if (!pbkdf2(md, password, salt, static_cast<std::uint32_t>(fields.iterations), digest_size,
              &actual)) {
    return openssl_failed(scheme);
  }
  const bool match = equal_constant_time(actual, expected);
  wipe(&actual);
  return match;
}

}  // namespace

std::optional<CostExcess> pbkdf2_cost_excess(std::string_view payload,
                                             const PasswordCostLimits& limits) {
  Pbkdf2Fields fields;
  if (!parse_pbkdf2("{PBKDF2}", payload, &fields).ok()) {
    return std::nullopt;  // Malformed: verify_pbkdf2 refuses it without work.
  }
  return excess_of(fields, limits);
}

Result<std::string> hash_digest(std::string_view password, PasswordScheme scheme,
                                const HashOptions& options) {
  const DigestFamily family = family_of(scheme);
  const EVP_MD* md = md_of(family.digest);
  if (md == nullptr) {
    return digest_unavailable(scheme);
  }
  std::string out(password_scheme_name(scheme));
  std::string salt;
  std::string hash;
  if (family.kind == DigestFamily::kPbkdf2) {
    if (options.pbkdf2_iterations < 1 || options.pbkdf2_iterations > INT_MAX) {
      return invalid_argument("password: pbkdf2_iterations must be in 1..2^31-1");
    }
    NUMADIR_RETURN_IF_ERROR(random_bytes(kPbkdf2SaltBytes, &salt));
    if (!pbkdf2(md, password, salt, options.pbkdf2_iterations,
                static_cast<std::size_t>(EVP_MD_get_size(md)), &hash)) {
      return openssl_failed(scheme);
    }
    out += std::to_string(options.pbkdf2_iterations);
    out += '$';
    out += base64_encode(salt, Base64Alphabet::kAdapted, /*pad=*/false);
    out += '$';
    out += base64_encode(hash, Base64Alphabet::kAdapted, /*pad=*/false);
  } else {
    // Only the salted ones are writable; the dispatcher refuses the rest.
    NUMADIR_DCHECK(family.kind == DigestFamily::kSalted, "plain digests are read only");
    if (options.salt_bytes < kMinSaltBytes || options.salt_bytes > kMaxSaltBytes) {
      return invalid_argument("password: salt_bytes must be in 4..64");
    }
    NUMADIR_RETURN_IF_ERROR(random_bytes(options.salt_bytes, &salt));
    if (!digest_two(md, password, salt, &hash)) {
      return openssl_failed(scheme);
    }
    hash += salt;
    out += base64_encode(hash, Base64Alphabet::kStandard, /*pad=*/true);
  }
  wipe(&hash);
  return out;
}

Result<bool> verify_digest(std::string_view password, PasswordScheme scheme,
                           std::string_view payload, const VerifyPolicy& policy,
                           PasswordScratch& scratch) {
  if (scheme == PasswordScheme::kCleartext) {
    // Compare digests rather than the strings: constant time over content and length alike.
    std::string stored_digest;
    std::string given_digest;
    if (!digest_two(md_of(Digest::kSha256), payload, {}, &stored_digest) ||
        !digest_two(md_of(Digest::kSha256), password, {}, &given_digest)) {
      return openssl_failed(scheme);
    }
    return equal_constant_time(stored_digest, given_digest);
  }
  const DigestFamily family = family_of(scheme);
  const EVP_MD* md = md_of(family.digest);
  if (md == nullptr) {
    return digest_unavailable(scheme);
  }
  if (family.kind == DigestFamily::kPbkdf2) {
    return verify_pbkdf2(password, scheme, md, payload, policy);
  }
  const std::string name(password_scheme_name(scheme));
  // The decoded value and the digest of the password, in the caller's buffers (a bind
  // allocates nothing here); wiped, capacity kept, before the result is returned.
  std::string& decoded = scratch.decoded;
  std::string& actual = scratch.digest;
  struct Wipe {
    PasswordScratch& scratch;
    ~Wipe() {
      wipe(&scratch.decoded);
      wipe(&scratch.digest);
    }
  } wiped{scratch};
  if (!base64_decode(payload, Base64Alphabet::kStandard, &decoded)) {
    return malformed("password: " + name + ": the value is not base64");
  }
  const auto digest_size = static_cast<std::size_t>(EVP_MD_get_size(md));
  const std::string_view expected = std::string_view(decoded).substr(0, digest_size);
  std::string_view salt;
  if (family.kind == DigestFamily::kSalted) {
    if (decoded.size() <= digest_size) {
      return malformed("password: " + name + ": " + std::to_string(decoded.size()) +
                       " bytes is too short for a " + std::to_string(digest_size) +
                       "-byte digest and a salt");
    }
    salt = std::string_view(decoded).substr(digest_size);
  } else if (decoded.size() != digest_size) {
    return malformed("password: " + name + ": " + std::to_string(decoded.size()) +
                     " bytes is not a " + std::to_string(digest_size) + "-byte digest");
  }
  if (!digest_two(md, password, salt, &actual)) {
    return openssl_failed(scheme);
  }
  return equal_constant_time(actual, expected);
}

}  // namespace numadir::backend::detail
