// server/replication/sync_protocol.cc: see sync_protocol.h.
#include "server/replication/sync_protocol.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>

#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"
#include "schema/ascii.h"

namespace numadir::server::replication {

namespace ber = listener::wire::ber;
using listener::wire::BerError;
using listener::wire::BerReader;
using listener::wire::BerWriter;

namespace {

// The values are shallow: a SEQUENCE, and in syncIdSet a SET inside it.
constexpr std::uint32_t kDepthBudget = 3;

Status bad(std::string_view what, const BerError& error) {
  std::string message(what);
  if (error.failed()) {
    message += ": ";
    message += error.what;
    message += " at byte ";
    message += std::to_string(error.offset);
  }
  return malformed(std::move(message));
}

bool read_uuid(BerReader& reader, SyncUuid& uuid) {
  std::string_view octets;
  if (!reader.read_octets(ber::kOctetString, octets)) {
    return false;
  }
  if (octets.size() != uuid.size()) {
    return reader.fail("syncUUID is not 16 octets");
  }
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    uuid[i] = static_cast<std::uint8_t>(octets[i]);
  }
  return true;
}

// Reads an optional syncCookie (OCTET STRING) if it comes next.
bool read_optional_cookie(BerReader& reader, std::optional<std::string_view>& cookie) {
  std::uint8_t tag = 0;
  if (reader.peek_tag(tag) && tag == ber::kOctetString) {
    std::string_view value;
    if (!reader.read_octets(ber::kOctetString, value)) {
      return false;
    }
    cookie = value;
  }
  return true;
}

// Reads an optional BOOLEAN if it comes next; `value` keeps its default otherwise.
bool read_optional_boolean(BerReader& reader, bool& value) {
  std::uint8_t tag = 0;
  if (reader.peek_tag(tag) && tag == ber::kBoolean) {
    return reader.read_boolean(ber::kBoolean, value);
  }
  return true;
}

// Returns: the number `text` spells in `base`, within [0, max], or nullopt.
std::optional<int> parse_number(std::string_view text, int base, int max) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0 ||
      value > max) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::string encode_sync_request(SyncMode mode, std::string_view cookie, bool reload_hint) {
  BerWriter writer;
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kEnumerated, static_cast<std::int64_t>(mode));
  if (!cookie.empty()) {
    writer.write_octets(ber::kOctetString, cookie);
  }
  if (reload_hint) {
    writer.write_boolean(ber::kBoolean, true);
  }
  writer.end();
  return std::string(writer.view());
}

Result<SyncRequest> decode_sync_request(std::string_view value) {
  BerError error;
  BerReader outer(value, error, kDepthBudget);
  BerReader sequence = outer.enter(ber::kSequence);
  SyncRequest request;
  std::int64_t mode = 0;
  if (!sequence.read_integer(ber::kEnumerated, 0, 3, mode) ||
      !read_optional_cookie(sequence, request.cookie) ||
      !read_optional_boolean(sequence, request.reload_hint) || !sequence.expect_end() ||
      !outer.expect_end()) {
    return bad("Sync Request control value is malformed", error);
  }
  if (mode != static_cast<std::int64_t>(SyncMode::kRefreshOnly) &&
      mode != static_cast<std::int64_t>(SyncMode::kRefreshAndPersist)) {
    return malformed("Sync Request control mode " + std::to_string(mode) +
                     " is neither refreshOnly (1) nor refreshAndPersist (3)");
  }
  request.mode = static_cast<SyncMode>(mode);
  return request;
}

std::string encode_sync_state(SyncStateKind state, const SyncUuid& uuid,
                              std::optional<std::string_view> cookie) {
  BerWriter writer;
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kEnumerated, static_cast<std::int64_t>(state));
  writer.write_octets(ber::kOctetString,
                      std::string_view(reinterpret_cast<const char*>(uuid.data()), uuid.size()));
  if (cookie.has_value()) {
    writer.write_octets(ber::kOctetString, *cookie);
  }
  writer.end();
  return std::string(writer.view());
}

std::string encode_sync_done(std::optional<std::string_view> cookie, bool refresh_deletes) {
  BerWriter writer;
  writer.begin(ber::kSequence);
  if (cookie.has_value()) {
    writer.write_octets(ber::kOctetString, *cookie);
  }
  if (refresh_deletes) {
    writer.write_boolean(ber::kBoolean, true);
  }
  writer.end();
  return std::string(writer.view());
}

std::string encode_sync_info_new_cookie(std::string_view cookie) {
  BerWriter writer;
  writer.write_octets(ber::context(0), cookie);
  return std::string(writer.view());
}

std::string encode_sync_info_refresh(SyncInfoKind kind, std::optional<std::string_view> cookie,
                                     bool refresh_done) {
  BerWriter writer;
  writer.begin(kind == SyncInfoKind::kRefreshDelete ? ber::context_constructed(1)
                                                    : ber::context_constructed(2));
  if (cookie.has_value()) {
    writer.write_octets(ber::kOctetString, *cookie);
  }
  if (!refresh_done) {
    writer.write_boolean(ber::kBoolean, false);
  }
  writer.end();
  return std::string(writer.view());
}

std::string encode_sync_info_id_set(std::optional<std::string_view> cookie, bool refresh_deletes,
                                    std::span<const SyncUuid> uuids) {
  BerWriter writer;
  writer.begin(ber::context_constructed(3));
  if (cookie.has_value()) {
    writer.write_octets(ber::kOctetString, *cookie);
  }
  if (refresh_deletes) {
    writer.write_boolean(ber::kBoolean, true);
  }
  writer.begin(ber::kSet);
  for (const SyncUuid& uuid : uuids) {
    writer.write_octets(ber::kOctetString,
                        std::string_view(reinterpret_cast<const char*>(uuid.data()), uuid.size()));
  }
  writer.end();
  writer.end();
  return std::string(writer.view());
}

Result<SyncState> decode_sync_state(std::string_view value) {
  BerError error;
  BerReader outer(value, error, kDepthBudget);
  BerReader sequence = outer.enter(ber::kSequence);
  SyncState state;
  std::int64_t kind = 0;
  if (!sequence.read_integer(ber::kEnumerated, 0, 3, kind) || !read_uuid(sequence, state.uuid) ||
      !read_optional_cookie(sequence, state.cookie) || !sequence.expect_end() ||
      !outer.expect_end()) {
    return bad("Sync State control value is malformed", error);
  }
  state.state = static_cast<SyncStateKind>(kind);
  return state;
}

Result<SyncDone> decode_sync_done(std::string_view value) {
  SyncDone done;
  if (value.empty()) {
    return done;
  }
  BerError error;
  BerReader outer(value, error, kDepthBudget);
  BerReader sequence = outer.enter(ber::kSequence);
  if (!read_optional_cookie(sequence, done.cookie) ||
      !read_optional_boolean(sequence, done.refresh_deletes) || !sequence.expect_end() ||
      !outer.expect_end()) {
    return bad("Sync Done control value is malformed", error);
  }
  return done;
}

Result<SyncInfo> decode_sync_info(std::string_view value) {
  BerError error;
  BerReader outer(value, error, kDepthBudget);
  SyncInfo info;
  std::uint8_t tag = 0;
  if (!outer.peek_tag(tag)) {
    return malformed("Sync Info message value is empty");
  }
  bool ok = false;
  if (tag == ber::context(0)) {
    std::string_view cookie;
    ok = outer.read_octets(ber::context(0), cookie);
    info.kind = SyncInfoKind::kNewCookie;
    info.cookie = cookie;
  } else if (tag == ber::context_constructed(1) || tag == ber::context_constructed(2)) {
    info.kind = tag == ber::context_constructed(1) ? SyncInfoKind::kRefreshDelete
                                                   : SyncInfoKind::kRefreshPresent;
    BerReader phase = outer.enter(tag);
    ok = read_optional_cookie(phase, info.cookie) &&
         read_optional_boolean(phase, info.refresh_done) && phase.expect_end();
  } else if (tag == ber::context_constructed(3)) {
    info.kind = SyncInfoKind::kSyncIdSet;
    BerReader set = outer.enter(tag);
    ok = read_optional_cookie(set, info.cookie) && read_optional_boolean(set, info.refresh_deletes);
    if (ok) {
      BerReader uuids = set.enter(ber::kSet);
      while (ok && !uuids.failed() && !uuids.at_end()) {
        ok = read_uuid(uuids, info.uuids.emplace_back());
      }
      ok = ok && !uuids.failed() && set.expect_end();
    }
  } else {
    return malformed(
        "Sync Info message value is not one of newcookie, refreshDelete, "
        "refreshPresent, syncIdSet (tag " +
        std::to_string(tag) + ")");
  }
  if (!ok || !outer.expect_end()) {
    return bad("Sync Info message value is malformed", error);
  }
  return info;
}

std::string format_uuid(const SyncUuid& uuid) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  text.reserve(36);
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      text += '-';
    }
    text += kDigits[uuid[i] >> 4];
    text += kDigits[uuid[i] & 0xf];
  }
  return text;
}

std::optional<SyncUuid> parse_uuid(std::string_view text) {
  const bool dashed = text.size() == 36;
  if (!dashed && text.size() != 32) {
    return std::nullopt;
  }
  SyncUuid uuid{};
  std::size_t pos = 0;
  for (std::size_t i = 0; i < uuid.size(); ++i) {
    if (dashed && (i == 4 || i == 6 || i == 8 || i == 10)) {
      if (text[pos] != '-') {
        return std::nullopt;
      }
      ++pos;
    }
    const int high = schema::ascii_hex_value(text[pos]);
    const int low = schema::ascii_hex_value(text[pos + 1]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    uuid[i] = static_cast<std::uint8_t>(high << 4 | low);
    pos += 2;
  }
  return uuid;
}

Result<SyncCookie> parse_sync_cookie(std::string_view text) {
  SyncCookie cookie;
  bool seen_csn = false;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view field = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t equals = field.find('=');
    if (equals == std::string_view::npos) {
      return malformed("sync cookie field \"" + std::string(field) + "\" is not name=value");
    }
    const std::string_view name = field.substr(0, equals);
    const std::string_view value = field.substr(equals + 1);
    if (name == "rid" || name == "sid") {
      std::optional<int>& slot = name == "rid" ? cookie.rid : cookie.sid;
      if (slot.has_value()) {
        return malformed("sync cookie names " + std::string(name) + " twice");
      }
      slot = name == "rid" ? parse_number(value, 10, 999) : parse_number(value, 16, 0xfff);
      if (!slot.has_value()) {
        return malformed("sync cookie " + std::string(name) + " \"" + std::string(value) +
                         "\" is out of range");
      }
    } else if (name == "csn") {
      if (seen_csn) {
        return malformed("sync cookie names csn twice");
      }
      seen_csn = true;
      std::string_view csns = value;
      while (!csns.empty()) {
        const std::size_t semicolon = csns.find(';');
        if (semicolon != 0) {
          cookie.csns.push_back(csns.substr(0, semicolon));
        }
        csns =
            semicolon == std::string_view::npos ? std::string_view() : csns.substr(semicolon + 1);
      }
    } else if (name != "delcsn") {  // slapd 2.6 adds delcsn; a consumer has no use for it.
      return malformed("sync cookie has an unknown field \"" + std::string(name) + "\"");
    }
  }
  return cookie;
}

std::string compose_sync_cookie(std::optional<int> rid, std::uint32_t server_id,
                                std::string_view csn) {
  char head[32];
  int length = 0;
  if (rid.has_value()) {
    length = std::snprintf(head, sizeof(head), "rid=%03d", *rid);
  }
  if (server_id != 0) {
    length += std::snprintf(head + length, sizeof(head) - static_cast<std::size_t>(length),
                            "%ssid=%03x", length == 0 ? "" : ",", server_id);
  }
  std::string cookie(head, static_cast<std::size_t>(length));
  if (!csn.empty()) {
    if (!cookie.empty()) {
      cookie += ',';
    }
    cookie += "csn=";
    cookie += csn;
  }
  return cookie;
}

namespace {

constexpr std::string_view kCsnShape = "00000000000000.000000Z#xxxxxx#xxx#xxxxxx";

}  // namespace

bool is_csn(std::string_view text) {
  if (text.size() != kCsnShape.size()) {
    return false;
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (kCsnShape[i]) {
      case '0':
        if (std::isdigit(c) == 0) {
          return false;
        }
        break;
      case 'x':
        if (std::isxdigit(c) == 0) {
          return false;
        }
        break;
      default:
        if (c != static_cast<unsigned char>(kCsnShape[i])) {
          return false;
        }
    }
  }
  return true;
}

std::optional<std::uint32_t> csn_server_id(std::string_view csn) {
  if (!is_csn(csn)) {
    return std::nullopt;
  }
  const std::optional<int> sid = parse_number(csn.substr(30, 3), 16, 0xfff);
  if (!sid.has_value()) {
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(*sid);
}

std::optional<std::int64_t> csn_micros(std::string_view csn) {
  if (!is_csn(csn)) {
    return std::nullopt;
  }
  const auto number = [&](std::size_t pos, std::size_t n) {
    return *parse_number(csn.substr(pos, n), 10, 999999);
  };
  const int year = number(0, 4);
  const unsigned month = static_cast<unsigned>(number(4, 2));
  const unsigned day = static_cast<unsigned>(number(6, 2));
  const std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(month),
                                         std::chrono::day(day)};
  if (!date.ok()) {
    return std::nullopt;
  }
  const std::int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  const std::int64_t seconds =
      days * 86400 + number(8, 2) * 3600 + number(10, 2) * 60 + number(12, 2);
  return seconds * 1'000'000 + number(15, 6);
}

}  // namespace numadir::server::replication
