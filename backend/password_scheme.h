// backend/password_scheme.h: password storage schemes for userPassword, written and read in the
// forms OpenLDAP uses, so that a directory can move between slapd and numadir with its hashes.
//
// A stored value is "{SCHEME}payload"; a value without a "{...}" prefix is cleartext, as in
// slapd. Schemes (names case-insensitive):
//   {SSHA} {SSHA256} {SSHA384} {SSHA512} {SMD5}   base64(digest(password + salt) + salt)
//   {SHA} {SHA256} {SHA384} {SHA512} {MD5}        base64(digest(password)); read only
//   {PBKDF2-SHA256} {PBKDF2-SHA512}               pw-pbkdf2: "<iterations>$<ab64 salt>$<ab64 dk>"
//   {PBKDF2-SHA1}, alias {PBKDF2}                 the same with SHA-1; read only
//   {ARGON2}                                      PHC string "$argon2id$v=19$m=..,t=..,p=..$s$h"
//   {CRYPT}                                       crypt(3) via libxcrypt: $1$ $5$ $6$ $y$ $2b$ ...
//   {CLEARTEXT} or no prefix                      cleartext; read only, and only when allowed
// "ab64" is pw-pbkdf2's adapted base64: '.' instead of '+', no '=' padding.
//
// Thread contract: free functions on plain values, safe to call from any number of threads at
// once. They keep no mutable state; the OpenSSL digests they use are fetched once, on first use,
// behind a thread-safe static. Work per call is bounded by HashOptions / VerifyPolicy (a value
// over its PasswordCostLimits is refused before any hashing), and
// {ARGON2} with parallelism p > 1 runs on p short-lived threads inside libargon2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace numadir::backend {

enum class PasswordScheme : std::uint8_t {
  kCleartext = 0,
  kMd5,
  kSmd5,
  kSha1,
  kSsha1,
  kSha256,
  kSsha256,
  kSha384,
  kSsha384,
  kSha512,
  kSsha512,
  kPbkdf2Sha1,
  kPbkdf2Sha256,
  kPbkdf2Sha512,
  kArgon2,
  kCrypt,
};

// Returns: the canonical prefix of `scheme`, e.g. "{SSHA512}", "{PBKDF2-SHA1}", "{CLEARTEXT}".
// The view is static.
std::string_view password_scheme_name(PasswordScheme scheme);

// Parses a scheme name as config and the command line spell it: with or without braces, any
// case, e.g. "ssha", "{SSHA256}", "Argon2", "pbkdf2-sha512", "crypt", "cleartext". "pbkdf2" is
// {PBKDF2-SHA1}, as in pw-pbkdf2.
// Errors: kInvalidArgument naming the text when it is no scheme we know.
Result<PasswordScheme> parse_password_scheme(std::string_view name);

// Returns: whether hash_password() writes `scheme`. The legacy ones (unsalted digests, {SMD5},
// {PBKDF2-SHA1}) and {CLEARTEXT} are only read.
bool password_scheme_writable(PasswordScheme scheme);

// Returns: the scheme of stored value `stored`, judged by its prefix alone (kCleartext when it
// has none); the payload is not checked. For deciding whether a value should be re-hashed.
// Errors: kUnsupported when the "{...}" prefix names no scheme we know.
Result<PasswordScheme> stored_password_scheme(std::string_view stored);

enum class Argon2Variant : std::uint8_t { kArgon2d = 0, kArgon2i = 1, kArgon2id = 2 };

// The crypt(3) method {CRYPT} writes.
enum class CryptMethod : std::uint8_t {
  kSha512,    // "$6$": in every libc's crypt, so the value also works on older slapd hosts.
  kYescrypt,  // "$y$": Debian's default for /etc/shadow; needs libxcrypt where it is read.
};

// Cost and salt of new hashes. Defaults follow OpenLDAP's modules except where a field says
// otherwise; salt and digest sizes not listed are fixed by the modules' formats (pw-pbkdf2:
// 16-byte salt, the only size its checker takes; argon2: 16-byte salt, 32-byte hash).
struct HashOptions {
  // {SSHA*} and {SMD5}. slapd writes 4 bytes and pw-sha2 8; both read any length, so we write
  // more. Requires: 4 <= salt_bytes <= 64.
  std::size_t salt_bytes = 16;
  // {PBKDF2-*}; pw-pbkdf2's default. Requires: >= 1.
  std::uint32_t pbkdf2_iterations = 10000;
  // {ARGON2}: argon2id, m=65536 KiB, t=2, p=1 as OpenLDAP's argon2 module built on libsodium
  // writes them (built on libargon2, as in Debian, it writes argon2i, m=4096, t=3, p=1).
  // Requires: what libargon2 accepts (t >= 1, 1 <= p, m >= 8 * p).
  Argon2Variant argon2_variant = Argon2Variant::kArgon2id;
  std::uint32_t argon2_memory_kib = 65536;
  std::uint32_t argon2_iterations = 2;
  std::uint32_t argon2_parallelism = 1;
  // {CRYPT}. crypt_cost 0 takes libxcrypt's default (5000 rounds for $6$; "j9T" for $y$).
  // Requires: crypt_cost 0, or 1000..999999999 rounds for $6$, or 1..11 for $y$.
  CryptMethod crypt_method = CryptMethod::kSha512;
  unsigned long crypt_cost = 0;
};

// Returns: whether checking a value of `scheme` costs more than one digest: {PBKDF2-*},
// {ARGON2} and {CRYPT} (key derivation and crypt(3), made to be slow). The digests ({SSHA*},
// {SHA*}, {SMD5}, {MD5}) and cleartext cost one digest, about a microsecond.
bool password_scheme_costly(PasswordScheme scheme);

// Ceilings on the work one stored value may ask of each check. A user may be able to set a
// pre-hashed userPassword for themselves, and every bind against that entry (anonymous, with
// any password) would pay what the value asks for; so each cost parameter a scheme encodes has
// a ceiling, just above what OpenLDAP's modules, slappasswd and `numadir passwd` write by
// default (the server's `[passwords]` keys set them; docs/passwords.md explains each default).
struct PasswordCostLimits {
  // {PBKDF2-*} iterations. pw-pbkdf2 and numadir write 10,000; passlib, whose ldap_pbkdf2_*
  // format pw-pbkdf2 shares, 25,000 (SHA-512) and 29,000 (SHA-256).
  std::uint32_t max_pbkdf2_iterations = 30'000;
  // {ARGON2} m (KiB), t and p. numadir and OpenLDAP's argon2 module on libsodium write
  // m=65536,t=2,p=1; on libargon2 (Debian) m=4096,t=3,p=1; argon2-cffi and RFC 9106's second
  // choice m=65536,t=3,p=4. The work is m * t whatever p; p is the threads libargon2 starts.
  std::uint32_t max_argon2_memory_kib = 65'536;
  std::uint32_t max_argon2_iterations = 4;
  std::uint32_t max_argon2_parallelism = 4;
  // {CRYPT} $5$ / $6$ "rounds=" (crypt(3)'s default, written without rounds=, is 5000).
  std::uint32_t max_sha_crypt_rounds = 10'000;
  // {CRYPT} $2a$ / $2b$ / $2x$ / $2y$ log2 cost (libxcrypt's default: 5; each step doubles it).
  std::uint32_t max_bcrypt_cost = 6;
};

// Buffers a password check reuses from one check to the next (the stored value decoded and the
// digest of the given password, for the salted and plain digests), so that a bind allocates
// nothing for its check once warm. Each check wipes them before it returns; they keep their
// capacity. Owned by the one thread that checks with it (a ServerWorkerState holds one).
struct PasswordScratch {
  PasswordScratch() = default;
  PasswordScratch(const PasswordScratch&) = delete;
  PasswordScratch& operator=(const PasswordScratch&) = delete;

  std::string decoded;
  std::string digest;
};

// What verify_password() accepts from a stored value.
struct VerifyPolicy {
  bool allow_cleartext = false;  // Stored values without a scheme, or {CLEARTEXT}.
  PasswordCostLimits limits;
};

// The cost parameters PasswordCostLimits bounds, one per field.
enum class CostParameter : std::uint8_t {
  kPbkdf2Iterations,
  kArgon2MemoryKib,
  kArgon2Iterations,
  kArgon2Parallelism,
  kShaCryptRounds,
  kBcryptCost,
};

// A cost parameter of a stored value over its ceiling.
struct CostExcess {
  CostParameter parameter = CostParameter::kPbkdf2Iterations;
  std::uint64_t value = 0;  // As stored; UINT32_MAX + 1 stands for anything larger.
  std::uint32_t limit = 0;  // The ceiling it is over.
};

// Returns: the parameter as messages name it, with its value and unit, e.g. "argon2 memory
// 1048576 KiB", "PBKDF2 iterations 10000000", "bcrypt cost 12".
std::string describe_cost(CostParameter parameter, std::uint64_t value);

// Returns: the ceiling of `limits` that bounds `parameter`.
std::uint32_t cost_limit(const PasswordCostLimits& limits, CostParameter parameter);

// Reads the cost parameters of stored value `stored` from the value alone, with the parsers
// verify_password() uses, and compares them with `limits`. Nothing is hashed.
// Returns: the first parameter over its ceiling (in the order of CostParameter); nullopt when
//   every one is within them, and for values whose cost cannot be read: schemes without a cost
//   parameter (the digests, cleartext, yescrypt and the other crypt(3) methods), unknown
//   schemes, and values too malformed to tell (verify_password() refuses those without work).
std::optional<CostExcess> password_cost_excess(std::string_view stored,
                                               const PasswordCostLimits& limits);

// Hashes `password` with `scheme` and a fresh random salt (OpenSSL RAND_bytes).
// Returns: the value to store, prefix included, e.g. "{SSHA512}base64...".
// Errors: kUnsupported when `scheme` is read only (see password_scheme_writable()).
// kInvalidArgument when an option is out of range (the message names it), or for {CRYPT} when
// `password` holds a NUL byte (crypt(3) would cut it there) or is 512 bytes or longer
// (libxcrypt's limit). kInternal when OpenSSL, libargon2 or libcrypt fail where they should not
// (no entropy, no memory, a digest missing under FIPS).
Result<std::string> hash_password(std::string_view password, PasswordScheme scheme,
                                  const HashOptions& options = {});

// Checks `password` against stored value `stored`. Reading is lenient where OpenLDAP's writers
// vary: any salt length for {SSHA*} / {SMD5} and {PBKDF2-*}, '+' as well as '.' in ab64, '='
// padding present or not, "v=" absent from an argon2 string. Digests are compared in constant time
// (CRYPTO_memcmp); cleartext is compared as SHA-256 digests, so neither content nor length
// leaks through timing.
// Returns: true if it matches, false if it does not (including a {CRYPT} value checked against
// a password that holds a NUL byte or is 512 bytes or longer: no crypt hash can match those).
// Errors: kUnsupported for an unknown "{SCHEME}", or a cleartext value while
// !policy.allow_cleartext. kMalformed when the payload does not follow its scheme's format:
// bad base64, too short to hold digest and salt, a PBKDF2 or argon2 string with missing or bad
// fields or sizes, a crypt(3) value libcrypt rejects or that is not a complete hash.
// kLimitExceeded, before any hashing, when the value asks for more work than `policy.limits`
// allow (password_cost_excess() tells which parameter). kInternal as for
// hash_password(). Messages name the scheme and never contain the password.
// `scratch`: the calling thread's buffers, reused (see PasswordScratch).
Result<bool> verify_password(std::string_view password, std::string_view stored,
                             const VerifyPolicy& policy, PasswordScratch& scratch);
// As above, with buffers of its own for this one check (so it may allocate): for the checks off
// the bind path (a password change, a command).
Result<bool> verify_password(std::string_view password, std::string_view stored,
                             const VerifyPolicy& policy = {});

}  // namespace numadir::backend
