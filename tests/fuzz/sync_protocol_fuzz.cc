// libFuzzer target for what replication peers send each other (RFC 4533): what a provider sends
// a consumer (Sync State and Sync Done control values, Sync Info message values) and what a
// consumer sends a provider (the Sync Request control value), slapd's cookie, CSNs and entryUUID
// text. The first input byte picks the decoder, the rest is its input.
// Properties: nothing crashes; a decoded UUID formats to text that parses back to it; a decoded
// cookie and every CSN of a parsed cookie are views into the input; a decoded Sync Request
// encodes back to a value that decodes to the same request; a CSN's server id and time are
// known exactly when it is a CSN (but for an impossible date).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/replication/sync_protocol.h"

namespace replication = numadir::server::replication;

namespace {

void check_uuid(const replication::SyncUuid& uuid) {
  if (replication::parse_uuid(replication::format_uuid(uuid)) != uuid) {
    __builtin_trap();
  }
}

void check_inside(std::string_view part, std::string_view whole) {
  if (part.data() < whole.data() || part.data() + part.size() > whole.data() + whole.size()) {
    __builtin_trap();
  }
}

void check_cookie(const std::optional<std::string_view>& cookie, std::string_view input) {
  if (cookie.has_value()) {
    check_inside(*cookie, input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 7) {
    case 5:
      if (auto request = replication::decode_sync_request(input); request.ok()) {
        check_cookie(request->cookie, input);
        const std::string again = replication::encode_sync_request(
            request->mode, request->cookie.value_or(""), request->reload_hint);
        auto back = replication::decode_sync_request(again);
        if (!back.ok() || back->mode != request->mode ||
            back->reload_hint != request->reload_hint ||
            back->cookie.value_or("") != request->cookie.value_or("")) {
          __builtin_trap();
        }
      }
      break;
    case 6:
      if (replication::is_csn(input) != replication::csn_server_id(input).has_value()) {
        __builtin_trap();
      }
      if (!replication::is_csn(input) && replication::csn_micros(input).has_value()) {
        __builtin_trap();
      }
      break;
    case 0:
      if (auto state = replication::decode_sync_state(input); state.ok()) {
        check_uuid(state->uuid);
        check_cookie(state->cookie, input);
      }
      break;
    case 1:
      if (auto done = replication::decode_sync_done(input); done.ok()) {
        check_cookie(done->cookie, input);
      }
      break;
    case 2:
      if (auto info = replication::decode_sync_info(input); info.ok()) {
        check_cookie(info->cookie, input);
        for (const replication::SyncUuid& uuid : info->uuids) {
          check_uuid(uuid);
        }
      }
      break;
    case 3:
      if (auto cookie = replication::parse_sync_cookie(input); cookie.ok()) {
        for (std::string_view csn : cookie->csns) {
          check_inside(csn, input);
        }
      }
      break;
    default:
      if (auto uuid = replication::parse_uuid(input)) {
        check_uuid(*uuid);
      }
      break;
  }
  return 0;
}
