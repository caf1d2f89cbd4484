// backend/password_scheme.cc: scheme names, the split of a stored value into "{SCHEME}" and
// payload, and the dispatch to each family (password_digest.cc, password_argon2.cc,
// password_crypt.cc).
#include "backend/password_scheme.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backend/detail/password_scheme.h"
#include "base/status.h"

namespace numadir::backend {
namespace {

struct SchemeInfo {
  PasswordScheme scheme;
  std::string_view name;  // Canonical, with braces.
  bool writable;
};

// Indexed by PasswordScheme.
constexpr std::array<SchemeInfo, 16> kSchemes = {{
    {PasswordScheme::kCleartext, "{CLEARTEXT}", false},
    {PasswordScheme::kMd5, "{MD5}", false},
    {PasswordScheme::kSmd5, "{SMD5}", false},
    {PasswordScheme::kSha1, "{SHA}", false},
    {PasswordScheme::kSsha1, "{SSHA}", true},
    {PasswordScheme::kSha256, "{SHA256}", false},
    {PasswordScheme::kSsha256, "{SSHA256}", true},
    {PasswordScheme::kSha384, "{SHA384}", false},
    {PasswordScheme::kSsha384, "{SSHA384}", true},
    {PasswordScheme::kSha512, "{SHA512}", false},
    {PasswordScheme::kSsha512, "{SSHA512}", true},
    {PasswordScheme::kPbkdf2Sha1, "{PBKDF2-SHA1}", false},
    {PasswordScheme::kPbkdf2Sha256, "{PBKDF2-SHA256}", true},
    {PasswordScheme::kPbkdf2Sha512, "{PBKDF2-SHA512}", true},
    {PasswordScheme::kArgon2, "{ARGON2}", true},
    {PasswordScheme::kCrypt, "{CRYPT}", true},
}};

constexpr bool table_is_indexed_by_scheme() {
  for (std::size_t i = 0; i < kSchemes.size(); ++i) {
    if (static_cast<std::size_t>(kSchemes[i].scheme) != i) {
      return false;
    }
  }
  return true;
}
static_assert(table_is_indexed_by_scheme());

const SchemeInfo& info(PasswordScheme scheme) {
  const auto index = static_cast<std::size_t>(scheme);
  NUMADIR_CHECK(index < kSchemes.size(), "PasswordScheme out of range");
  return kSchemes[index];
}

bool equal_ignoring_ascii_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'a' && x <= 'z') {
      x = static_cast<char>(x - 'a' + 'A');
    }
    if (y >= 'a' && y <= 'z') {
      y = static_cast<char>(y - 'a' + 'A');
    }
    if (x != y) {
      return false;
    }
  }
  return true;
}

// `bare` is a name without braces.
std::optional<PasswordScheme> find_scheme(std::string_view bare) {
  // pw-pbkdf2 registers {PBKDF2} as an alias of {PBKDF2-SHA1}.
  if (equal_ignoring_ascii_case(bare, "PBKDF2")) {
    return PasswordScheme::kPbkdf2Sha1;
  }
  for (const SchemeInfo& scheme : kSchemes) {
    const std::string_view name = scheme.name.substr(1, scheme.name.size() - 2);
    if (equal_ignoring_ascii_case(bare, name)) {
      return scheme.scheme;
    }
  }
  return std::nullopt;
}

// A stored value split at its scheme prefix. Like slapd's lutil_passwd(): a value that starts
// with '{' and has a '}' after at least one character names a scheme; anything else, "{}x"
// included, is cleartext.
struct SplitValue {
  std::optional<std::string_view> scheme_name;  // Without braces; absent for cleartext.
  std::string_view payload;
};

SplitValue split_stored(std::string_view stored) {
  if (!stored.empty() && stored.front() == '{') {
    const std::size_t close = stored.find('}');
    if (close != std::string_view::npos && close >= 2) {
      return {stored.substr(1, close - 1), stored.substr(close + 1)};
    }
  }
  return {std::nullopt, stored};
}

Status unknown_scheme(std::string_view name) {
  // The name comes from the directory, not from a secret; still cap what we echo.
  constexpr std::size_t kMaxShown = 32;
  std::string shown(name.substr(0, kMaxShown));
  if (name.size() > kMaxShown) {
    shown += "...";
  }
  return unsupported("password: unknown storage scheme {" + shown + "}");
}

bool is_digest_family(PasswordScheme scheme) {
  return scheme != PasswordScheme::kArgon2 && scheme != PasswordScheme::kCrypt &&
         scheme != PasswordScheme::kCleartext;
}

}  // namespace

namespace detail {

Status cost_refused(PasswordScheme scheme, const CostExcess& excess) {
  return limit_exceeded("password: " + std::string(password_scheme_name(scheme)) + ": " +
                        describe_cost(excess.parameter, excess.value) + " is over the limit of " +
                        std::to_string(excess.limit));
}

}  // namespace detail

std::string_view password_scheme_name(PasswordScheme scheme) { return info(scheme).name; }

bool password_scheme_costly(PasswordScheme scheme) {
  switch (scheme) {
    case PasswordScheme::kPbkdf2Sha1:
    case PasswordScheme::kPbkdf2Sha256:
    case PasswordScheme::kPbkdf2Sha512:
    case PasswordScheme::kArgon2:
    case PasswordScheme::kCrypt:
      return true;
    default:
      return false;
  }
}

std::string describe_cost(CostParameter parameter, std::uint64_t value) {
  // UINT32_MAX + 1 stands for a number too large to keep (CostExcess::value).
  const std::string number = value > UINT32_MAX ? "over 4294967295" : std::to_string(value);
  switch (parameter) {
    case CostParameter::kPbkdf2Iterations:
      return "PBKDF2 iterations " + number;
    case CostParameter::kArgon2MemoryKib:
      return "argon2 memory " + number + " KiB";
    case CostParameter::kArgon2Iterations:
      return "argon2 iterations " + number;
    case CostParameter::kArgon2Parallelism:
      return "argon2 parallelism " + number;
    case CostParameter::kShaCryptRounds:
      return "sha-crypt rounds " + number;
    case CostParameter::kBcryptCost:
      return "bcrypt cost " + number;
  }
  return "cost " + number;
}

std::uint32_t cost_limit(const PasswordCostLimits& limits, CostParameter parameter) {
  switch (parameter) {
    case CostParameter::kPbkdf2Iterations:
      return limits.max_pbkdf2_iterations;
    case CostParameter::kArgon2MemoryKib:
      return limits.max_argon2_memory_kib;
    case CostParameter::kArgon2Iterations:
      return limits.max_argon2_iterations;
    case CostParameter::kArgon2Parallelism:
      return limits.max_argon2_parallelism;
    case CostParameter::kShaCryptRounds:
      return limits.max_sha_crypt_rounds;
    case CostParameter::kBcryptCost:
      return limits.max_bcrypt_cost;
  }
  return 0;
}

std::optional<CostExcess> password_cost_excess(std::string_view stored,
                                               const PasswordCostLimits& limits) {
  const SplitValue split = split_stored(stored);
  if (!split.scheme_name) {
    return std::nullopt;
  }
  const std::optional<PasswordScheme> scheme = find_scheme(*split.scheme_name);
  if (!scheme) {
    return std::nullopt;
  }
  switch (*scheme) {
    case PasswordScheme::kPbkdf2Sha1:
    case PasswordScheme::kPbkdf2Sha256:
    case PasswordScheme::kPbkdf2Sha512:
      return detail::pbkdf2_cost_excess(split.payload, limits);
    case PasswordScheme::kArgon2:
      return detail::argon2_cost_excess(split.payload, limits);
    case PasswordScheme::kCrypt:
      return detail::crypt_cost_excess(split.payload, limits);
    default:
      return std::nullopt;  // One digest: nothing to bound.
  }
}

Result<PasswordScheme> parse_password_scheme(std::string_view name) {
  std::string_view bare = name;
  if (bare.size() >= 2 && bare.front() == '{' && bare.back() == '}') {
    bare = bare.substr(1, bare.size() - 2);
  }
  if (std::optional<PasswordScheme> scheme = find_scheme(bare)) {
    return *scheme;
  }
  return invalid_argument("unknown password scheme \"" + std::string(name) +
                          "\" (expected e.g. SSHA512, PBKDF2-SHA512, ARGON2, CRYPT)");
}

bool password_scheme_writable(PasswordScheme scheme) { return info(scheme).writable; }

Result<PasswordScheme> stored_password_scheme(std::string_view stored) {
  const SplitValue split = split_stored(stored);
  if (!split.scheme_name) {
    return PasswordScheme::kCleartext;
  }
  if (std::optional<PasswordScheme> scheme = find_scheme(*split.scheme_name)) {
    return *scheme;
  }
  return unknown_scheme(*split.scheme_name);
}

Result<std::string> hash_password(std::string_view password, PasswordScheme scheme,
                                  const HashOptions& options) {
  if (!password_scheme_writable(scheme)) {
    return unsupported("password: " + std::string(password_scheme_name(scheme)) +
                       " is accepted for reading only; choose SSHA*, PBKDF2-SHA256/512, "
                       "ARGON2 or CRYPT to write");
  }
  switch (scheme) {
    case PasswordScheme::kArgon2:
      return detail::hash_argon2(password, options);
    case PasswordScheme::kCrypt:
      return detail::hash_crypt(password, options);
    default:
      return detail::hash_digest(password, scheme, options);
  }
}

Result<bool> verify_password(std::string_view password, std::string_view stored,
                             const VerifyPolicy& policy, PasswordScratch& scratch) {
  const SplitValue split = split_stored(stored);
  PasswordScheme scheme = PasswordScheme::kCleartext;
  if (split.scheme_name) {
    std::optional<PasswordScheme> found = find_scheme(*split.scheme_name);
    if (!found) {
      return unknown_scheme(*split.scheme_name);
    }
    scheme = *found;
  }
  if (scheme == PasswordScheme::kCleartext && !policy.allow_cleartext) {
    return unsupported(
        "password: the stored value is cleartext, which this server's policy "
        "does not accept");
  }
  if (scheme == PasswordScheme::kArgon2) {
    return detail::verify_argon2(password, split.payload, policy);
  }
  if (scheme == PasswordScheme::kCrypt) {
    return detail::verify_crypt(password, split.payload, policy);
  }
  NUMADIR_DCHECK(is_digest_family(scheme) || scheme == PasswordScheme::kCleartext,
                 "every other scheme is a digest");
  return detail::verify_digest(password, scheme, split.payload, policy, scratch);
}

Result<bool> verify_password(std::string_view password, std::string_view stored,
                             const VerifyPolicy& policy) {
  PasswordScratch scratch;
  return verify_password(password, stored, policy, scratch);
}

}  // namespace numadir::backend
