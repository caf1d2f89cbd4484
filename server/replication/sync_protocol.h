// server/replication/sync_protocol.h: the values of RFC 4533's (LDAP Content Synchronization)
// controls and messages, as a consumer sends and reads them, and slapd's cookie.
//
//   Sync Request control  (sent)   1.3.6.1.4.1.4203.1.9.1.1  encode_sync_request
//   Sync State control    (read)   1.3.6.1.4.1.4203.1.9.1.2  decode_sync_state
//   Sync Done control     (read)   1.3.6.1.4.1.4203.1.9.1.3  decode_sync_done
//   Sync Info message     (read)   1.3.6.1.4.1.4203.1.9.1.4  decode_sync_info (an
//                                  IntermediateResponse's responseValue)
//
// A provider is a remote server: every decoder takes any bytes and either fills its value or
// returns a kMalformed Status saying what was wrong (nothing is half-filled that a caller could
// act on: on an error the output is unspecified and must not be used). Decoded values are views
// into the caller's bytes and live as long as they do.
//
// Thread contract: free functions without state; any thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
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

enum class SyncStateKind : std::uint8_t { kPresent = 0, kAdd = 1, kModify = 2, kDelete = 3 };

struct SyncState {
  SyncStateKind state = SyncStateKind::kPresent;
  SyncUuid uuid{};
  std::optional<std::string_view> cookie;
};

// Errors: kMalformed (not a syncStateValue: another state, a UUID not of 16 octets, trailing
// data, bad BER).
Result<SyncState> decode_sync_state(std::string_view value);

struct SyncDone {
  std::optional<std::string_view> cookie;
  bool refresh_deletes = false;
};

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

}  // namespace numadir::server::replication
