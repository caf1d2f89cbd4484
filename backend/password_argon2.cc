// backend/password_argon2.cc: {ARGON2}, as OpenLDAP's argon2 module writes it: the scheme
// prefix followed by the PHC string libargon2 and libsodium produce,
//   $argon2<i|d|id>$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash>
// with salt and hash in unpadded standard base64. "v=" may be absent (version 0x10, as the
// first libargon2 releases wrote). We parse the string ourselves rather than call
// argon2_verify(), so that a malformed value, a value over the policy's cost limits and a wrong
// password come back as three different answers, and the costs are checked before any work
// (by the same parser, argon2_cost_excess() for writes and binds that decide without hashing).
#include <argon2.h>

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

// OpenLDAP's module: 16-byte salt, 32-byte hash.
constexpr std::size_t kSaltBytes = 16;
constexpr std::size_t kHashBytes = 32;

struct Argon2Params {
  argon2_type type = Argon2_id;
  std::uint32_t version = ARGON2_VERSION_10;
  std::uint32_t memory_kib = 0;
  std::uint32_t iterations = 0;
  std::uint32_t parallelism = 0;
  std::string salt;
  std::string hash;
};

Status argon2_malformed(std::string_view what) {
  return malformed("password: {ARGON2}: " + std::string(what));
}

std::string_view type_name(argon2_type type) {
  switch (type) {
    case Argon2_d:
      return "argon2d";
    case Argon2_i:
      return "argon2i";
    case Argon2_id:
      return "argon2id";
  }
  return "argon2?";
}

// Consumes `prefix` from the front of `*text`. Returns whether it was there.
bool consume(std::string_view* text, std::string_view prefix) {
  if (!text->starts_with(prefix)) {
    return false;
  }
  text->remove_prefix(prefix.size());
  return true;
}

// Consumes "<key>=<decimal>" from the front of `*text` into `*out`. Decimal: 1 to 10 digits,
// fitting 32 bits.
bool consume_number(std::string_view* text, std::string_view key, std::uint32_t* out) {
  if (!consume(text, key) || !consume(text, "=")) {
    return false;
  }
  std::size_t digits = 0;
  std::uint64_t value = 0;
  while (digits < text->size() && (*text)[digits] >= '0' && (*text)[digits] <= '9') {
    value = value * 10 + static_cast<std::uint64_t>((*text)[digits] - '0');
    if (++digits > 10) {
      return false;
    }
  }
  if (digits == 0 || value > UINT32_MAX) {
    return false;
  }
  text->remove_prefix(digits);
  *out = static_cast<std::uint32_t>(value);
  return true;
}

Status parse(std::string_view text, Argon2Params* params) {
  if (consume(&text, "$argon2id$")) {
    params->type = Argon2_id;
  } else if (consume(&text, "$argon2i$")) {
    params->type = Argon2_i;
  } else if (consume(&text, "$argon2d$")) {
    params->type = Argon2_d;
  } else {
    return argon2_malformed("expected $argon2i$, $argon2d$ or $argon2id$");
  }
  if (text.starts_with("v=")) {
    if (!consume_number(&text, "v", &params->version) || !consume(&text, "$")) {
      return argon2_malformed("bad version field");
    }
    if (params->version != ARGON2_VERSION_10 && params->version != ARGON2_VERSION_13) {
      return argon2_malformed("unknown version " + std::to_string(params->version));
    }
  }
  if (!consume_number(&text, "m", &params->memory_kib) || !consume(&text, ",") ||
      !consume_number(&text, "t", &params->iterations) || !consume(&text, ",") ||
      !consume_number(&text, "p", &params->parallelism) || !consume(&text, "$")) {
    return argon2_malformed("expected m=<KiB>,t=<passes>,p=<lanes>");
  }
  const std::size_t dollar = text.find('$');
  if (dollar == std::string_view::npos) {
    return argon2_malformed("missing the hash");
  }
  if (!base64_decode(text.substr(0, dollar), Base64Alphabet::kStandard, &params->salt) ||
      !base64_decode(text.substr(dollar + 1), Base64Alphabet::kStandard, &params->hash)) {
    return argon2_malformed("the salt or hash is not base64");
  }
  // The minimums libargon2 enforces; checked here to answer kMalformed with a clear message.
  if (params->salt.size() < ARGON2_MIN_SALT_LENGTH) {
    return argon2_malformed("the salt is shorter than 8 bytes");
  }
  if (params->hash.size() < ARGON2_MIN_OUTLEN) {
    return argon2_malformed("the hash is shorter than 4 bytes");
  }
  if (params->iterations < ARGON2_MIN_TIME || params->parallelism < ARGON2_MIN_LANES ||
      params->parallelism > ARGON2_MAX_LANES ||
      params->memory_kib < 2 * ARGON2_SYNC_POINTS * params->parallelism) {
    return argon2_malformed("t, p or m is below libargon2's minimum (t >= 1, p >= 1, m >= 8p)");
  }
  return Status::ok_status();
}

// Runs Argon2 into `*out` (hash_size bytes). Returns the libargon2 code.
int compute(std::string_view password, const Argon2Params& params, std::size_t hash_size,
            std::string* out) {
  out->assign(hash_size, '\0');
  return argon2_hash(params.iterations, params.memory_kib, params.parallelism, password.data(),
                     password.size(), params.salt.data(), params.salt.size(), out->data(),
                     out->size(), nullptr, 0, params.type, params.version);
}

}  // namespace

Result<std::string> hash_argon2(std::string_view password, const HashOptions& options) {
  Argon2Params params;
  switch (options.argon2_variant) {
    case Argon2Variant::kArgon2d:
      params.type = Argon2_d;
      break;
    case Argon2Variant::kArgon2i:
      params.type = Argon2_i;
      break;
    case Argon2Variant::kArgon2id:
      params.type = Argon2_id;
      break;
  }
  params.version = ARGON2_VERSION_13;
  params.memory_kib = options.argon2_memory_kib;
  params.iterations = options.argon2_iterations;
  params.parallelism = options.argon2_parallelism;
  NUMADIR_RETURN_IF_ERROR(random_bytes(kSaltBytes, &params.salt));
  std::string hash;
  const int rc = compute(password, params, kHashBytes, &hash);
  if (rc == ARGON2_MEMORY_ALLOCATION_ERROR) {
    return internal_error(
        "password: {ARGON2}: out of memory for m=" + std::to_string(params.memory_kib) + " KiB");
  }
  if (rc != ARGON2_OK) {
    return invalid_argument("password: {ARGON2}: bad options: " +
                            std::string(argon2_error_message(rc)));
  }
  std::string out = "{ARGON2}$";
  out += type_name(params.type);
  out += "$v=" + std::to_string(params.version);
  out += "$m=" + std::to_string(params.memory_kib);
  out += ",t=" + std::to_string(params.iterations);
  out += ",p=" + std::to_string(params.parallelism);
  out += '$';
  out += base64_encode(params.salt, Base64Alphabet::kStandard, /*pad=*/false);
  out += '$';
  out += base64_encode(hash, Base64Alphabet::kStandard, /*pad=*/false);
  wipe(&hash);
  return out;
}

namespace {

std::optional<CostExcess> excess_of(const Argon2Params& params, const PasswordCostLimits& limits) {
  const struct {
    CostParameter parameter;
    std::uint32_t value;
  } costs[] = {{CostParameter::kArgon2MemoryKib, params.memory_kib},
               {CostParameter::kArgon2Iterations, params.iterations},
               {CostParameter::kArgon2Parallelism, params.parallelism}};
  for (const auto& cost : costs) {
    if (const std::uint32_t limit = cost_limit(limits, cost.parameter); cost.value > limit) {
      return CostExcess{cost.parameter, cost.value, limit};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<CostExcess> argon2_cost_excess(std::string_view payload,
                                             const PasswordCostLimits& limits) {
  Argon2Params params;
  if (!parse(payload, &params).ok()) {
    return std::nullopt;  // Malformed: verify_argon2 refuses it without work.
  }
  return excess_of(params, limits);
}

Result<bool> verify_argon2(std::string_view password, std::string_view payload,
                           const VerifyPolicy& policy) {
  Argon2Params params;
  NUMADIR_RETURN_IF_ERROR(parse(payload, &params));
  if (const std::optional<CostExcess> excess = excess_of(params, policy.limits)) {
    return cost_refused(PasswordScheme::kArgon2, *excess);
  }
  std::string actual;
  const int rc = compute(password, params, params.hash.size(), &actual);
  if (rc == ARGON2_MEMORY_ALLOCATION_ERROR) {
    return internal_error(
        "password: {ARGON2}: out of memory for m=" + std::to_string(params.memory_kib) + " KiB");
  }
  if (rc != ARGON2_OK) {
    return argon2_malformed(argon2_error_message(rc));
  }
  const bool match = equal_constant_time(actual, params.hash);
  wipe(&actual);
  return match;
}

}  // namespace numadir::backend::detail
