// tests/server/replication/sync_protocol_test.cc: RFC 4533's control and message values, built
// here octet by octet (not with the project's BER writer), read back or refused.
#include "server/replication/sync_protocol.h"

#include <doctest/doctest.h>

#include <string>

namespace numadir::server::replication {
namespace {

// One short-form TLV (content under 128 octets).
std::string tlv(std::uint8_t tag, const std::string& content) {
  REQUIRE(content.size() < 128);
  return std::string(1, static_cast<char>(tag)) +
         std::string(1, static_cast<char>(content.size())) + content;
}

const std::string kUuidBytes("\x01\x23\x45\x67\x89\xab\xcd\xef\x10\x32\x54\x76\x98\xba\xdc\xfe",
                             16);
const char* const kUuidText = "01234567-89ab-cdef-1032-547698badcfe";
const std::string kCookie = "rid=001,csn=20261203120000.000000Z#000000#000#000000";
const std::string kTrue("\x01\x01\xff", 3);
const std::string kFalse("\x01\x01\x00", 3);

std::string enumerated(int value) { return tlv(0x0a, std::string(1, static_cast<char>(value))); }

TEST_CASE("Sync protocol: the Sync Request control value") {
  CHECK(encode_sync_request(SyncMode::kRefreshOnly, "", false) == tlv(0x30, enumerated(1)));
  CHECK(encode_sync_request(SyncMode::kRefreshAndPersist, kCookie, false) ==
        tlv(0x30, enumerated(3) + tlv(0x04, kCookie)));
  CHECK(encode_sync_request(SyncMode::kRefreshAndPersist, kCookie, true) ==
        tlv(0x30, enumerated(3) + tlv(0x04, kCookie) + kTrue));
}

TEST_CASE("Sync protocol: Sync State values") {
  for (int kind = 0; kind <= 3; ++kind) {
    CAPTURE(kind);
    Result<SyncState> state =
        decode_sync_state(tlv(0x30, enumerated(kind) + tlv(0x04, kUuidBytes)));
    REQUIRE(state.ok());
    CHECK(static_cast<int>(state->state) == kind);
    CHECK(format_uuid(state->uuid) == kUuidText);
    CHECK_FALSE(state->cookie.has_value());
  }
  // Decoded values are views: the encoded value outlives them.
  const std::string encoded = tlv(0x30, enumerated(1) + tlv(0x04, kUuidBytes) + tlv(0x04, kCookie));
  Result<SyncState> with_cookie = decode_sync_state(encoded);
  REQUIRE(with_cookie.ok());
  CHECK(with_cookie->cookie == kCookie);

  SUBCASE("refused") {
    const std::string bad[] = {
        "",
        tlv(0x30, ""),
        tlv(0x30, enumerated(4) + tlv(0x04, kUuidBytes)),                // No such state.
        tlv(0x30, enumerated(1) + tlv(0x04, kUuidBytes.substr(0, 15))),  // Short UUID.
        tlv(0x30, enumerated(1) + tlv(0x04, kUuidBytes + "x")),          // Long UUID.
        tlv(0x30, tlv(0x02, "\x01") + tlv(0x04, kUuidBytes)),            // INTEGER, not ENUM.
        tlv(0x30, enumerated(1) + tlv(0x04, kUuidBytes) + tlv(0x04, kCookie) + kTrue),
        tlv(0x30, enumerated(1) + tlv(0x04, kUuidBytes)) + "x",          // After the SEQUENCE.
        tlv(0x30, enumerated(1) + tlv(0x04, kUuidBytes)).substr(0, 10),  // Cut.
    };
    for (const std::string& value : bad) {
      CAPTURE(value);
      Result<SyncState> state = decode_sync_state(value);
      REQUIRE_FALSE(state.ok());
      CHECK(state.status().code() == StatusCode::kMalformed);
    }
  }
}

TEST_CASE("Sync protocol: Sync Done values") {
  Result<SyncDone> empty = decode_sync_done("");
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->cookie.has_value());
  CHECK_FALSE(empty->refresh_deletes);
  Result<SyncDone> bare = decode_sync_done(tlv(0x30, ""));
  REQUIRE(bare.ok());
  CHECK_FALSE(bare->refresh_deletes);
  const std::string full_value = tlv(0x30, tlv(0x04, kCookie) + kTrue);
  Result<SyncDone> full = decode_sync_done(full_value);
  REQUIRE(full.ok());
  CHECK(full->cookie == kCookie);
  CHECK(full->refresh_deletes);
  Result<SyncDone> deletes_only = decode_sync_done(tlv(0x30, kTrue));
  REQUIRE(deletes_only.ok());
  CHECK_FALSE(deletes_only->cookie.has_value());
  CHECK(deletes_only->refresh_deletes);

  CHECK_FALSE(decode_sync_done(tlv(0x30, kTrue + tlv(0x04, kCookie))).ok());  // Out of order.
  CHECK_FALSE(decode_sync_done(tlv(0x31, "")).ok());
  CHECK_FALSE(decode_sync_done(tlv(0x30, std::string("\x01\x01\x01", 3))).ok());  // TRUE not FF.
}

TEST_CASE("Sync protocol: each choice of Sync Info values") {
  const std::string new_cookie = tlv(0x80, kCookie);
  Result<SyncInfo> cookie = decode_sync_info(new_cookie);
  REQUIRE(cookie.ok());
  CHECK(cookie->kind == SyncInfoKind::kNewCookie);
  CHECK(cookie->cookie == kCookie);

  const std::string refresh_delete = tlv(0xa1, tlv(0x04, kCookie));
  Result<SyncInfo> deletes = decode_sync_info(refresh_delete);
  REQUIRE(deletes.ok());
  CHECK(deletes->kind == SyncInfoKind::kRefreshDelete);
  CHECK(deletes->cookie == kCookie);
  CHECK(deletes->refresh_done);  // DEFAULT TRUE.

  Result<SyncInfo> present = decode_sync_info(tlv(0xa2, kFalse));
  REQUIRE(present.ok());
  CHECK(present->kind == SyncInfoKind::kRefreshPresent);
  CHECK_FALSE(present->cookie.has_value());
  CHECK_FALSE(present->refresh_done);

  const std::string other_uuid(16, '\x7f');
  const std::string id_set = tlv(
      0xa3, tlv(0x04, kCookie) + kTrue + tlv(0x31, tlv(0x04, kUuidBytes) + tlv(0x04, other_uuid)));
  Result<SyncInfo> ids = decode_sync_info(id_set);
  REQUIRE(ids.ok());
  CHECK(ids->kind == SyncInfoKind::kSyncIdSet);
  CHECK(ids->cookie == kCookie);
  CHECK(ids->refresh_deletes);
  REQUIRE(ids->uuids.size() == 2);
  CHECK(format_uuid(ids->uuids[0]) == kUuidText);
  CHECK(format_uuid(ids->uuids[1]) == "7f7f7f7f-7f7f-7f7f-7f7f-7f7f7f7f7f7f");

  Result<SyncInfo> no_ids = decode_sync_info(tlv(0xa3, tlv(0x31, "")));
  REQUIRE(no_ids.ok());
  CHECK_FALSE(no_ids->refresh_deletes);  // DEFAULT FALSE.
  CHECK(no_ids->uuids.empty());
}

TEST_CASE("Sync protocol: malformed Sync Info values are refused") {
  const std::string bad[] = {
      "",
      tlv(0xa4, ""),                               // No fifth choice.
      tlv(0x04, kCookie),                          // Universal, not [0].
      tlv(0xa0, tlv(0x04, kCookie)),               // [0] constructed.
      tlv(0xa1, kTrue + tlv(0x04, kCookie)),       // Out of order.
      tlv(0xa3, tlv(0x04, kCookie)),               // syncIdSet without its SET.
      tlv(0xa3, tlv(0x31, tlv(0x04, "short"))),    // A UUID of 5 octets.
      tlv(0xa3, tlv(0x31, tlv(0x02, "\x01"))),     // Not an OCTET STRING.
      tlv(0xa3, tlv(0x31, "") + tlv(0x04, "")),    // After the SET.
      tlv(0x80, kCookie) + tlv(0x80, kCookie),     // Two values.
      tlv(0xa2, tlv(0x04, kCookie)).substr(0, 5),  // Cut.
  };
  for (const std::string& value : bad) {
    CAPTURE(value);
    Result<SyncInfo> info = decode_sync_info(value);
    REQUIRE_FALSE(info.ok());
    CHECK(info.status().code() == StatusCode::kMalformed);
    CHECK_FALSE(info.status().message().empty());
  }
}

TEST_CASE("Sync protocol: entryUUID text") {
  const std::optional<SyncUuid> uuid = parse_uuid(kUuidText);
  REQUIRE(uuid.has_value());
  CHECK(std::string(reinterpret_cast<const char*>(uuid->data()), 16) == kUuidBytes);
  CHECK(parse_uuid("01234567-89AB-CDEF-1032-547698BADCFE") == uuid);
  CHECK(parse_uuid("0123456789abcdef1032547698badcfe") == uuid);
  CHECK_FALSE(parse_uuid("01234567-89ab-cdef-1032-547698badcf").has_value());
  CHECK_FALSE(parse_uuid("01234567-89ab-cdef-1032+547698badcfe").has_value());
  CHECK_FALSE(parse_uuid("0123456g-89ab-cdef-1032-547698badcfe").has_value());
  CHECK_FALSE(parse_uuid("").has_value());
}

TEST_CASE("Sync protocol: slapd's cookies") {
  Result<SyncCookie> plain = parse_sync_cookie(kCookie);
  REQUIRE(plain.ok());
  CHECK(plain->rid == 1);
  CHECK_FALSE(plain->sid.has_value());
  REQUIRE(plain->csns.size() == 1);
  CHECK(plain->csns[0] == "20261203120000.000000Z#000000#000#000000");

  Result<SyncCookie> multi = parse_sync_cookie(
      "rid=123,sid=00a,csn=20261203120000.000000Z#000000#001#000000;"
      "20261203120001.000000Z#000000#002#000000");
  REQUIRE(multi.ok());
  CHECK(multi->rid == 123);
  CHECK(multi->sid == 10);
  CHECK(multi->csns.size() == 2);

  Result<SyncCookie> rid_only = parse_sync_cookie("rid=7");
  REQUIRE(rid_only.ok());
  CHECK(rid_only->rid == 7);
  CHECK(rid_only->csns.empty());
  CHECK(parse_sync_cookie("").ok());  // A provider with nothing yet sends no CSN.

  for (const char* bad : {"rid=1000", "rid=-1", "rid=", "rid=1,rid=2", "sid=1000", "rid=1,foo=2",
                          "rid", "rid=1,csn=a,csn=b", "rid=0x1"}) {
    CAPTURE(bad);
    Result<SyncCookie> cookie = parse_sync_cookie(bad);
    REQUIRE_FALSE(cookie.ok());
    CHECK(cookie.status().code() == StatusCode::kMalformed);
  }
}

TEST_CASE("a provider reads the Sync Request a consumer sends") {
  for (const bool hint : {false, true}) {
    const std::string value =
        encode_sync_request(SyncMode::kRefreshAndPersist, "rid=001,csn=x", hint);
    Result<SyncRequest> request = decode_sync_request(value);
    REQUIRE(request.ok());
    CHECK(request->mode == SyncMode::kRefreshAndPersist);
    REQUIRE(request->cookie.has_value());
    CHECK(*request->cookie == "rid=001,csn=x");
    CHECK(request->reload_hint == hint);
  }
  Result<SyncRequest> bare =
      decode_sync_request(encode_sync_request(SyncMode::kRefreshOnly, "", false));
  REQUIRE(bare.ok());
  CHECK(bare->mode == SyncMode::kRefreshOnly);
  CHECK_FALSE(bare->cookie.has_value());
  // Mode 2 is reserved (RFC 4533 §2.2), 0 is none; a missing mode, trailing bytes, not BER.
  for (const std::string& bad :
       {std::string("\x30\x03\x0a\x01\x02", 5), std::string("\x30\x03\x0a\x01\x00", 5),
        std::string("\x30\x00", 2), std::string("\x30\x03\x0a\x01\x01\x00", 6), std::string("x"),
        std::string()}) {
    Result<SyncRequest> request = decode_sync_request(bad);
    REQUIRE_FALSE(request.ok());
    CHECK(request.status().code() == StatusCode::kMalformed);
  }
}

TEST_CASE("what a provider sends decodes as a consumer reads it") {
  const SyncUuid uuid = *parse_uuid("3f2504e0-4f89-41d3-9a0c-0305e82c3301");
  // The decoded values view the encoded bytes: each is kept while its value is read.
  const std::string state_value = encode_sync_state(SyncStateKind::kDelete, uuid, "c");
  Result<SyncState> state = decode_sync_state(state_value);
  REQUIRE(state.ok());
  CHECK(state->state == SyncStateKind::kDelete);
  CHECK(state->uuid == uuid);
  CHECK(state->cookie == std::optional<std::string_view>("c"));
  Result<SyncState> bare =
      decode_sync_state(encode_sync_state(SyncStateKind::kAdd, uuid, std::nullopt));
  REQUIRE(bare.ok());
  CHECK_FALSE(bare->cookie.has_value());

  const std::string done_value = encode_sync_done("k", true);
  Result<SyncDone> done = decode_sync_done(done_value);
  REQUIRE(done.ok());
  CHECK(done->cookie == std::optional<std::string_view>("k"));
  CHECK(done->refresh_deletes);
  Result<SyncDone> presents = decode_sync_done(encode_sync_done(std::nullopt, false));
  REQUIRE(presents.ok());
  CHECK_FALSE(presents->refresh_deletes);
  CHECK_FALSE(presents->cookie.has_value());

  const std::string fresh_value = encode_sync_info_new_cookie("n");
  Result<SyncInfo> fresh = decode_sync_info(fresh_value);
  REQUIRE(fresh.ok());
  CHECK(fresh->kind == SyncInfoKind::kNewCookie);
  CHECK(fresh->cookie == std::optional<std::string_view>("n"));
  for (const SyncInfoKind kind : {SyncInfoKind::kRefreshDelete, SyncInfoKind::kRefreshPresent}) {
    for (const bool finished : {true, false}) {
      const std::string value = encode_sync_info_refresh(kind, "r", finished);
      Result<SyncInfo> info = decode_sync_info(value);
      REQUIRE(info.ok());
      CHECK(info->kind == kind);
      CHECK(info->refresh_done == finished);
      CHECK(info->cookie == std::optional<std::string_view>("r"));
    }
  }
  const std::vector<SyncUuid> uuids = {uuid, SyncUuid{}};
  Result<SyncInfo> set = decode_sync_info(encode_sync_info_id_set(std::nullopt, true, uuids));
  REQUIRE(set.ok());
  CHECK(set->kind == SyncInfoKind::kSyncIdSet);
  CHECK(set->refresh_deletes);
  CHECK(set->uuids == uuids);
}

TEST_CASE("a provider's cookie is slapd's") {
  const std::string csn = "20261206220000.123456Z#000000#001#000000";
  CHECK(compose_sync_cookie(1, 1, csn) == "rid=001,sid=001,csn=" + csn);
  CHECK(compose_sync_cookie(12, 0, csn) == "rid=012,csn=" + csn);  // No sid for server id 0.
  CHECK(compose_sync_cookie(std::nullopt, 0xabc, csn) == "sid=abc,csn=" + csn);
  CHECK(compose_sync_cookie(7, 2, "") == "rid=007,sid=002");
  const std::string composed = compose_sync_cookie(999, 0xfff, csn);  // The parse views it.
  Result<SyncCookie> back = parse_sync_cookie(composed);
  REQUIRE(back.ok());
  CHECK(back->rid == 999);
  CHECK(back->sid == 0xfff);
  REQUIRE(back->csns.size() == 1);
  CHECK(back->csns[0] == csn);
}

TEST_CASE("CSNs are recognised with their server id and time") {
  const std::string csn = "20261206220000.123456Z#00002a#00f#000000";
  CHECK(is_csn(csn));
  CHECK(csn_server_id(csn) == 15u);
  // 2026-12-06T22:00:00.123456Z.
  CHECK(csn_micros(csn) == std::int64_t{1796594400} * 1'000'000 + 123456);
  for (const char* bad :
       {"", "20261206220000.123456Z#00002a#00f#00000", "2026120622000x.123456Z#00002a#00f#000000",
        "20261206220000.123456Z#00002g#00f#000000", "20261206220000,123456Z#00002a#00f#000000"}) {
    CAPTURE(bad);
    CHECK_FALSE(is_csn(bad));
    CHECK_FALSE(csn_server_id(bad).has_value());
  }
  CHECK_FALSE(csn_micros("20261306220000.123456Z#00002a#00f#000000").has_value());  // Month 13.
}

}  // namespace
}  // namespace numadir::server::replication
