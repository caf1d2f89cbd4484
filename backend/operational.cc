// backend/operational.cc: operational attribute types and value generators.
#include "backend/operational.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iterator>
#include <mutex>
#include <random>

namespace numadir::backend {
namespace {

std::tm utc(std::chrono::system_clock::time_point t, std::int64_t* micros) {
  const auto since = t.time_since_epoch();
  auto seconds = std::chrono::floor<std::chrono::seconds>(since);
  *micros = std::chrono::duration_cast<std::chrono::microseconds>(since - seconds).count();
  const std::time_t tt = static_cast<std::time_t>(seconds.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return tm;
}

// Process-wide CSN state: the last CSN's time (microseconds since the epoch) and count.
struct CsnState {
  std::mutex mu;
  std::int64_t last_micros = 0;  // Guarded by mu.
  std::uint32_t count = 0;       // Guarded by mu.
};

CsnState& csn_state() {
  static CsnState state;
  return state;
}

}  // namespace

OperationalTypes::OperationalTypes(const AttributeCatalog& catalog)
    : entry_uuid(catalog.resolve("entryUUID")),
      entry_csn(catalog.resolve("entryCSN")),
      create_timestamp(catalog.resolve("createTimestamp")),
      modify_timestamp(catalog.resolve("modifyTimestamp")),
      creators_name(catalog.resolve("creatorsName")),
      modifiers_name(catalog.resolve("modifiersName")),
      structural_object_class(catalog.resolve("structuralObjectClass")),
      object_class(catalog.resolve("objectClass")),
      entry_dn(catalog.resolve("entryDN")),
      has_subordinates(catalog.resolve("hasSubordinates")),
      num_subordinates(catalog.resolve("numSubordinates")),
      subschema_subentry(catalog.resolve("subschemaSubentry")),
      context_csn(catalog.resolve("contextCSN")) {}

ComputedAttribute OperationalTypes::computed(const AttributeInfo* info) const {
  if (info == nullptr) {
    return ComputedAttribute::kNone;
  }
  if (info == entry_dn) {
    return ComputedAttribute::kEntryDn;
  }
  if (info == has_subordinates) {
    return ComputedAttribute::kHasSubordinates;
  }
  if (info == num_subordinates) {
    return ComputedAttribute::kNumSubordinates;
  }
  if (info == subschema_subentry) {
    return ComputedAttribute::kSubschemaSubentry;
  }
  if (info == context_csn) {
    return ComputedAttribute::kContextCsn;
  }
  return ComputedAttribute::kNone;
}

namespace {

// Returns: a generator seeded with 256 kernel random bits.
std::mt19937_64 seeded_engine() {
  std::uint32_t seed[8];
  std::size_t got = 0;
  auto* bytes = reinterpret_cast<unsigned char*>(seed);
  while (got < sizeof seed) {
    const ssize_t n = getrandom(bytes + got, sizeof seed - got, 0);
    NUMADIR_CHECK(n > 0 || errno == EINTR, "getrandom failed: no randomness for entryUUID");
    got += n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  std::seed_seq sequence(std::begin(seed), std::end(seed));
  return std::mt19937_64(sequence);
}

}  // namespace

std::string UuidGenerator::make_uuid(std::chrono::system_clock::time_point now) {
  if (!engine_.has_value()) {
    engine_.emplace(seeded_engine());  // On first use: a thread that adds nothing pays nothing.
  }
  std::mt19937_64& engine = *engine_;
  const std::uint64_t random = engine();
  const auto now_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count()));
  constexpr std::uint32_t kCounterMax = 0xfff;
  if (now_ms > last_ms_) {
    last_ms_ = now_ms;
    // A new millisecond starts the counter at a random value in its lower half, as RFC 9562
    // §6.2 suggests: the UUIDs stay hard to guess and the counter has room to grow.
    counter_ = static_cast<std::uint32_t>(random >> 53) & (kCounterMax >> 1);
  } else if (counter_ < kCounterMax) {
    ++counter_;  // The same millisecond, or the clock went back: still after the last one.
  } else {
    ++last_ms_;  // Out of counter values: borrow the next millisecond.
    counter_ = 0;
  }
  const std::uint64_t unix_ms = last_ms_ & ((std::uint64_t{1} << 48) - 1);
  unsigned char bytes[16];
  for (int i = 0; i < 6; ++i) {
    bytes[i] = static_cast<unsigned char>(unix_ms >> (8 * (5 - i)));  // Big-endian.
  }
  bytes[6] = static_cast<unsigned char>(0x70 | (counter_ >> 8));  // Version 7.
  bytes[7] = static_cast<unsigned char>(counter_ & 0xff);
  const std::uint64_t low = engine();
  std::memcpy(bytes + 8, &low, sizeof low);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant.
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      out.push_back('-');
    }
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0f]);
  }
  return out;
}

std::string next_csn(std::chrono::system_clock::time_point now, std::uint32_t server_id) {
  std::int64_t micros_part = 0;
  const std::int64_t micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  std::int64_t use_micros = 0;
  std::uint32_t count = 0;
  {
    CsnState& state = csn_state();
    std::lock_guard<std::mutex> lock(state.mu);
    if (micros > state.last_micros) {
      state.last_micros = micros;
      state.count = 0;
    } else if (state.count < 0xffffff) {
      ++state.count;
    } else {
      ++state.last_micros;
      state.count = 0;
    }
    use_micros = state.last_micros;
    count = state.count;
  }
  const std::tm tm = utc(
      std::chrono::system_clock::time_point(std::chrono::microseconds(use_micros)), &micros_part);
  char buf[128];  // Room for any int the compiler assumes tm fields may hold.
  std::snprintf(buf, sizeof buf, "%04d%02d%02d%02d%02d%02d.%06lldZ#%06x#%03x#000000",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(micros_part), count, server_id & kMaxServerId);
  return buf;
}

namespace {

// Parses `digits` (all decimal) into `out`. Returns: false when one is not a digit.
bool parse_decimal(std::string_view digits, int* out) {
  int value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + (c - '0');
  }
  *out = value;
  return true;
}

}  // namespace

void observe_csn(std::string_view csn) {
  // "YYYYmmddHHMMSS.uuuuuuZ#cccccc#..."
  if (csn.size() < 30 || csn[14] != '.' || csn[21] != 'Z' || csn[22] != '#' || csn[29] != '#') {
    return;
  }
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, micros = 0;
  if (!parse_decimal(csn.substr(0, 4), &year) || !parse_decimal(csn.substr(4, 2), &month) ||
      !parse_decimal(csn.substr(6, 2), &day) || !parse_decimal(csn.substr(8, 2), &hour) ||
      !parse_decimal(csn.substr(10, 2), &minute) || !parse_decimal(csn.substr(12, 2), &second) ||
      !parse_decimal(csn.substr(15, 6), &micros)) {
    return;
  }
  std::uint32_t count = 0;
  for (const char c : csn.substr(23, 6)) {
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) {
      return;
    }
    count = count * 16 + static_cast<std::uint32_t>(digit);
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::int64_t at = static_cast<std::int64_t>(timegm(&tm)) * 1000000 + micros;
  // next_csn makes a system_clock time of it (nanoseconds: about the year 2262 at most); a day
  // short of that leaves room for the counts after it.
  constexpr std::int64_t kLatest =
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::system_clock::time_point::max().time_since_epoch())
          .count() -
      std::int64_t{86400} * 1000000;
  if (at > kLatest) {
    return;
  }
  CsnState& state = csn_state();
  std::lock_guard<std::mutex> lock(state.mu);
  // The next CSN is made after (last_micros, count): a later time, or the same with a greater
  // count, or (the count full) the next microsecond.
  if (at > state.last_micros) {
    state.last_micros = at;
    state.count = count;
  } else if (at == state.last_micros && count > state.count) {
    state.count = count;
  }
}

std::string generalized_time(std::chrono::system_clock::time_point t) {
  std::int64_t micros = 0;
  const std::tm tm = utc(t, &micros);
  char buf[128];
  std::snprintf(buf, sizeof buf, "%04d%02d%02d%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

void set_single(std::vector<schema::EntryAttribute>& attributes, const AttributeInfo* info,
                std::string_view value) {
  if (info == nullptr) {
    return;
  }
  for (schema::EntryAttribute& attribute : attributes) {
    if (attribute.description == info->name) {
      attribute.values.assign(1, std::string(value));
      return;
    }
  }
  attributes.push_back(schema::EntryAttribute{std::string(info->name), {std::string(value)}});
}

void add_if_missing(std::vector<schema::EntryAttribute>& attributes, const AttributeInfo* info,
                    std::string_view value) {
  if (info == nullptr) {
    return;
  }
  const bool present = std::any_of(attributes.begin(), attributes.end(), [&](const auto& a) {
    return a.description == info->name && !a.values.empty();
  });
  if (!present) {
    set_single(attributes, info, value);
  }
}

void stamp_new_entry(const OperationalTypes& types, const Stamp& stamp, std::string_view structural,
                     bool keep_existing, UuidGenerator& uuids,
                     std::vector<schema::EntryAttribute>& attributes) {
  auto put = keep_existing ? add_if_missing : set_single;
  if (types.entry_uuid != nullptr) {
    const bool has_uuid =
        keep_existing && std::any_of(attributes.begin(), attributes.end(), [&](const auto& a) {
          return a.description == types.entry_uuid->name && !a.values.empty();
        });
    if (!has_uuid) {
      set_single(attributes, types.entry_uuid, uuids.make_uuid());
    }
  }
  put(attributes, types.creators_name, stamp.actor_dn);
  put(attributes, types.create_timestamp, stamp.timestamp);
  put(attributes, types.modifiers_name, stamp.actor_dn);
  put(attributes, types.modify_timestamp, stamp.timestamp);
  put(attributes, types.entry_csn, stamp.csn);
  if (!structural.empty()) {
    put(attributes, types.structural_object_class, structural);
  }
}

void stamp_modified_entry(const OperationalTypes& types, const Stamp& stamp,
                          std::vector<schema::EntryAttribute>& attributes) {
  set_single(attributes, types.modifiers_name, stamp.actor_dn);
  set_single(attributes, types.modify_timestamp, stamp.timestamp);
  set_single(attributes, types.entry_csn, stamp.csn);
}

}  // namespace numadir::backend
