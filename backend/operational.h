// backend/operational.h: operational attributes: the ones stored and maintained on updates
// (entryUUID, entryCSN, createTimestamp, modifyTimestamp, creatorsName, modifiersName,
// structuralObjectClass) and the ones computed on read (hasSubordinates, numSubordinates,
// subschemaSubentry, entryDN, and contextCSN on the suffix entry); value generators for UUIDs,
// CSNs and timestamps.
//
// Only the attributes the loaded schema defines are written or computed; the canonical names
// come from the schema (OperationalTypes resolves them once at open).
//
// Thread contract: OperationalTypes is immutable after open. A UuidGenerator belongs to the one
// thread that stamps new entries with it. next_csn may be called from any thread (it serializes
// on a process-wide mutex so that CSNs are strictly increasing across every Directory of the
// process).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "backend/attribute_catalog.h"
#include "schema/entry.h"

namespace numadir::backend {

enum class ComputedAttribute : std::uint8_t {
  kNone,
  kEntryDn,
  kHasSubordinates,
  kNumSubordinates,
  kSubschemaSubentry,
  // The directory's contextCSN (Directory::context_csn), on the suffix entry only: kept in the
  // meta database, never in the entry, so that a write does not rewrite the suffix entry.
  kContextCsn,
};

inline constexpr std::string_view kSubschemaDn = "cn=Subschema";

// The schema's types for the operational attributes (nullptr where the schema lacks one).
struct OperationalTypes {
  explicit OperationalTypes(const AttributeCatalog& catalog);

  const AttributeInfo* entry_uuid;
  const AttributeInfo* entry_csn;
  const AttributeInfo* create_timestamp;
  const AttributeInfo* modify_timestamp;
  const AttributeInfo* creators_name;
  const AttributeInfo* modifiers_name;
  const AttributeInfo* structural_object_class;
  const AttributeInfo* object_class;
  const AttributeInfo* entry_dn;
  const AttributeInfo* has_subordinates;
  const AttributeInfo* num_subordinates;
  const AttributeInfo* subschema_subentry;
  const AttributeInfo* context_csn;

  // Returns: which computed attribute `info` is (kNone for any other).
  ComputedAttribute computed(const AttributeInfo* info) const;
};

// Makes the entryUUIDs of new entries: time-ordered UUIDs (version 7, RFC 9562), where slapd's
// are time-based (version 1), so that entries added together (an import, a burst of adds) get
// UUIDs that sort together. Every entryUUID eq index (this directory's and each replica's) then
// takes them almost as appends; random (version 4) UUIDs scattered each batch of a replica's
// refresh over every page of that index, all rewritten at each commit (perf/RESULTS.md,
// "Initial refresh, after the fixes"). UUIDs need uniqueness, not secrecy: a 64-bit generator
// seeded with 256 kernel random bits on its first UUID (OpenSSL's RAND_bytes per entry was 5% of
// an import) draws the random bits. One per thread that adds entries: the writer's, an
// importer's, each bulk import worker's (Owner: that thread). Only adds and imports draw from
// it, never a read.
class UuidGenerator {
 public:
  UuidGenerator() = default;
  UuidGenerator(const UuidGenerator&) = delete;
  UuidGenerator& operator=(const UuidGenerator&) = delete;

  // Returns: a version 7 UUID in RFC 4122 / RFC 4530 string form, lower-case hex, e.g.
  // "0193a4c2-5e1f-7a3b-9c4d-5e6f7a8b9c0d": `now` in Unix milliseconds (48 bits), then a
  // 12-bit counter (RFC 9562 §6.2, method 1) that keeps each generator's UUIDs strictly
  // increasing, in their string order too, however fast they come or if the clock steps back
  // (a counter that runs out within a millisecond moves on to the next one), then 62 random
  // bits.
  std::string make_uuid(std::chrono::system_clock::time_point now);
  std::string make_uuid() { return make_uuid(std::chrono::system_clock::now()); }

 private:
  std::optional<std::mt19937_64> engine_;  // Seeded by the first make_uuid().
  std::uint64_t last_ms_ = 0;              // The timestamp of the last UUID made.
  std::uint32_t counter_ = 0;              // Its counter (12 bits).
};

// The largest server id a CSN can carry (three hex digits, as OpenLDAP writes them).
inline constexpr std::uint32_t kMaxServerId = 0xfff;

// Returns: the next CSN, "YYYYmmddHHMMSS.uuuuuuZ#cccccc#sss#000000" (OpenLDAP's form: UTC time
// with microseconds, a hex change count, the server id `server_id` in three hex digits, mod 0),
// strictly greater than every CSN this process returned before even when `now` stands still or
// goes back. Requires: server_id <= kMaxServerId (Directory::open checks it).
std::string next_csn(std::chrono::system_clock::time_point now, std::uint32_t server_id = 0);

// Makes every later next_csn() of this process return a CSN greater than `csn` (a CSN of that
// form, e.g. a stored contextCSN or one a provider sent), even where the clock is behind it: a
// directory's own changes then always sort after what it has committed. A `csn` that does not
// parse as that form, or is later than the system clock can represent (about the year 2262:
// its successors could not be made), is ignored.
void observe_csn(std::string_view csn);

// Returns: `t` as GeneralizedTime in UTC with second precision, "YYYYmmddHHMMSSZ".
std::string generalized_time(std::chrono::system_clock::time_point t);

// What an update stamps into the entry.
struct Stamp {
  std::string actor_dn;
  std::string timestamp;  // generalized_time(now)
  std::string csn;        // next_csn(now)
};

// Sets (replacing) attribute `info` of `attributes` to the single `value`. No-op for a null
// `info`.
void set_single(std::vector<schema::EntryAttribute>& attributes, const AttributeInfo* info,
                std::string_view value);
// Adds `info` = `value` unless an attribute of that canonical description is present.
void add_if_missing(std::vector<schema::EntryAttribute>& attributes, const AttributeInfo* info,
                    std::string_view value);

// Stamps a new entry: entryUUID, creatorsName, createTimestamp, modifiersName,
// modifyTimestamp, entryCSN and structuralObjectClass (`structural`, the class's name). With
// `keep_existing` (import), values already present are kept. A new entryUUID comes from `uuids`.
void stamp_new_entry(const OperationalTypes& types, const Stamp& stamp, std::string_view structural,
                     bool keep_existing, UuidGenerator& uuids,
                     std::vector<schema::EntryAttribute>& attributes);
// Stamps a modified or renamed entry: modifiersName, modifyTimestamp, entryCSN.
void stamp_modified_entry(const OperationalTypes& types, const Stamp& stamp,
                          std::vector<schema::EntryAttribute>& attributes);

}  // namespace numadir::backend
