// server/replication/sync_protocol.h: the values of RFC 4533's (LDAP Content Synchronization)
// controls and messages, as a consumer sends and reads them and as a provider reads and sends
// them, and slapd's cookie.
//
//   Sync Request control  1.3.6.1.4.1.4203.1.9.1.1  encode_sync_request / decode_sync_request
//   Sync State control    1.3.6.1.4.1.4203.1.9.1.2  decode_sync_state / encode_sync_state
//   Sync Done control     1.3.6.1.4.1.4203.1.9.1.3  decode_sync_done / encode_sync_done
//   Sync Info message     1.3.6.1.4.1.4203.1.9.1.4  decode_sync_info / encode_sync_info_*
//                                                   (an IntermediateResponse's responseValue)
//
// The peer is a remote server or client: every decoder takes any bytes and either fills its value
// or returns a kMalformed Status saying what was wrong (nothing is half-filled that a caller could
// act on: on an error the output is unspecified and must not be used). Decoded values are views
// into the caller's bytes and live as long as they do.
//
// Thread contract: free functions without state; any thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace numadir::server::replication {

inline constexpr std::string_view kSyncRequestOid = "1.3.6.1.4.1.4203.1.9.1.1";
inline constexpr std::string_view kSyncStateOid = "1.3.6.1.4.1.4203.1.9.1.2";
inline constexpr std::string_view kSyncDoneOid = "1.3.6.1.4.1.4203.1.9.1.3";
inline constexpr std::string_view kSyncInfoOid = "1.3.6.1.4.1.4203.1.9.1.4";
// The result code of e-syncRefreshRequired (RFC 4533 §2.6): the consumer must reload.
inline constexpr std::int32_t kSyncRefreshRequired = 4096;

// syncUUID: OCTET STRING (SIZE(16)), the entry's entryUUID in binary.
using SyncUuid = std::array<std::uint8_t, 16>;

enum class SyncMode : std::uint8_t { kRefreshOnly = 1, kRefreshAndPersist = 3 };

// Returns: the syncRequestValue (mode, the cookie if not empty, reloadHint if true).
std::string encode_sync_request(SyncMode mode, std::string_view cookie, bool reload_hint);

struct SyncRequest {
  SyncMode mode = SyncMode::kRefreshOnly;
  std::optional<std::string_view> cookie;
  bool reload_hint = false;
};

// Errors: kMalformed (not a syncRequestValue: a mode other than refreshOnly (1) and
// refreshAndPersist (3), bad BER, trailing data).
Result<SyncRequest> decode_sync_request(std::string_view value);

enum class SyncStateKind : std::uint8_t { kPresent = 0, kAdd = 1, kModify = 2, kDelete = 3 };

struct SyncState {
  SyncStateKind state = SyncStateKind::kPresent;
  SyncUuid uuid{};
  std::optional<std::string_view> cookie;
};

// Returns: the syncStateValue (state, entryUUID, the cookie when given).
std::string encode_sync_state(SyncStateKind state, const SyncUuid& uuid,
                              std::optional<std::string_view> cookie);

// Errors: kMalformed (not a syncStateValue: another state, a UUID not of 16 octets, trailing
// data, bad BER).
Result<SyncState> decode_sync_state(std::string_view value);

struct SyncDone {
  std::optional<std::string_view> cookie;
  bool refresh_deletes = false;
};

// Returns: the syncDoneValue (the cookie when given; refreshDeletes only when true, its
// default being false).
std::string encode_sync_done(std::optional<std::string_view> cookie, bool refresh_deletes);

// Errors: kMalformed. An absent value is read as an empty SEQUENCE (slapd always sends one; the
// RFC makes both fields optional).
Result<SyncDone> decode_sync_done(std::string_view value);

enum class SyncInfoKind : std::uint8_t {
  kNewCookie = 0,
  kRefreshDelete = 1,
  kRefreshPresent = 2,
  kSyncIdSet = 3,
};

struct SyncInfo {
  SyncInfoKind kind = SyncInfoKind::kNewCookie;
  std::optional<std::string_view> cookie;  // Always present for kNewCookie.
  bool refresh_done = true;                // kRefreshDelete, kRefreshPresent.
  bool refresh_deletes = false;            // kSyncIdSet.
  std::vector<SyncUuid> uuids;             // kSyncIdSet.
};

// Errors: kMalformed (an unknown choice, a UUID not of 16 octets, bad BER, trailing data).
Result<SyncInfo> decode_sync_info(std::string_view value);

// The syncInfoValues a provider sends: newcookie; refreshDelete or refreshPresent (the cookie
// when given, refreshDone only when false, its default being true); syncIdSet (the cookie when
// given, refreshDeletes only when true, the UUIDs).
std::string encode_sync_info_new_cookie(std::string_view cookie);
std::string encode_sync_info_refresh(SyncInfoKind kind, std::optional<std::string_view> cookie,
                                     bool refresh_done);
std::string encode_sync_info_id_set(std::optional<std::string_view> cookie, bool refresh_deletes,
                                    std::span<const SyncUuid> uuids);

// Returns: the UUID in entryUUID's string form (RFC 4530: 8-4-4-4-12 lower-case hex digits).
std::string format_uuid(const SyncUuid& uuid);
// Returns: the UUID of an entryUUID value (hex digits of either case, with or without the
// dashes at their places), or nullopt.
std::optional<SyncUuid> parse_uuid(std::string_view text);

// slapd's cookie: "rid=NNN[,sid=XXX][,csn=CSN[;CSN...]]", in any order after rid. The consumer
// stores the provider's cookie as sent; it reads it only to check it is its own (rid) and to show
// its CSNs.
struct SyncCookie {
  std::optional<int> rid;              // 0..999, as slapd's rid.
  std::optional<int> sid;              // 0..0xfff, hex in the text.
  std::vector<std::string_view> csns;  // Views into the text.
};

// Errors: kMalformed (a field not name=value, an unknown name, a rid or sid out of range, a
// field twice).
Result<SyncCookie> parse_sync_cookie(std::string_view text);

// Returns: the cookie a provider sends, in slapd's form: "rid=NNN,sid=SSS,csn=CSN" (rid in
// three decimal digits; sid in three hex digits, left out for server id 0, as slapd leaves it
// out for serverID 0), or "rid=NNN[,sid=SSS]" for an empty csn; without a rid (the consumer
// sent none) the rid is left out.
std::string compose_sync_cookie(std::optional<int> rid, std::uint32_t server_id,
                                std::string_view csn);

// Returns: whether `text` is a CSN in OpenLDAP's form, "YYYYmmddHHMMSS.uuuuuuZ#cccccc#sss#mmmmmm"
// (digits where the time is, hex digits in the counts and the server id).
bool is_csn(std::string_view text);
// Returns: the server id of CSN `csn` (is_csn), or nullopt.
std::optional<std::uint32_t> csn_server_id(std::string_view csn);
// Returns: the time of CSN `csn` (is_csn) in microseconds since the epoch, or nullopt.
std::optional<std::int64_t> csn_micros(std::string_view csn);

}  // namespace numadir::server::replication
