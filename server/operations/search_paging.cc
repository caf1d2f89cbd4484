// server/operations/search_paging.cc: see search_paging.h.
#include "server/operations/search_paging.h"

#include <cstdint>
#include <utility>

#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"
#include "server/operations/root_dse.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ResultCode;
using listener::wire::SearchRequest;
namespace ber = listener::wire::ber;

namespace {

std::string encode_cookie(std::uint64_t id) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>(id >> (8 * (7 - i)));
  }
  return out;
}

std::optional<std::uint64_t> decode_cookie(std::string_view cookie) {
  if (cookie.size() != 8) {
    return std::nullopt;
  }
  std::uint64_t id = 0;
  for (const char c : cookie) {
    id = (id << 8) | static_cast<std::uint8_t>(c);
  }
  return id;
}

// Returns: what identifies a search across its pages: every field of the request.
std::string search_signature(const SearchRequest& search) {
  std::string out(search.base_object);
  out += '\0';
  out += std::to_string(static_cast<int>(search.scope)) + ',' +
         std::to_string(static_cast<int>(search.deref_aliases)) + ',' +
         std::to_string(search.size_limit) + ',' + std::to_string(search.time_limit) + ',' +
         (search.types_only ? "1" : "0");
  out += '\0';
  out += search.filter.to_string();
  for (std::string_view attribute : search.attributes) {
    out += '\0';
    out += attribute;
  }
  return out;
}

}  // namespace

std::optional<OwnedResult> parse_paged(const LdapMessage& request, PagedRequest& paged) {
  for (const listener::wire::Control& control : request.controls) {
    if (control.type != kPagedResultsOid) {
      continue;
    }
    const OwnedResult bad = OwnedResult::error(ResultCode::kProtocolError,
                                               "paged results control could not be decoded");
    if (!control.value.has_value()) {
      return bad;
    }
    listener::wire::BerError error;
    listener::wire::BerReader outer(*control.value, error, 2);
    listener::wire::BerReader sequence = outer.enter(ber::kSequence);
    if (!sequence.read_integer(ber::kInteger, 0, INT32_MAX, paged.size) ||
        !sequence.read_octets(ber::kOctetString, paged.cookie) || !sequence.at_end() ||
        !outer.at_end()) {
      return bad;
    }
    paged.present = true;
  }
  return std::nullopt;
}

std::string paged_response_value(std::string_view cookie) {
  listener::wire::BerWriter writer;
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kInteger, 0);
  writer.write_octets(ber::kOctetString, cookie);
  writer.end();
  return std::string(writer.view());
}

void add_paged_control(ResultSender& sender, std::string_view cookie) {
  sender.add_response_control(kPagedResultsOid, false, paged_response_value(cookie));
}

bool SearchPage::resume(const SearchRequest& search, ResultSender& sender) {
  if (!paged_.present) {
    return true;
  }
  signature_ = search_signature(search);
  if (!paged_.cookie.empty()) {
    const std::optional<std::uint64_t> id = decode_cookie(paged_.cookie);
    std::optional<PagedPosition> position =
        id.has_value() ? session_.take_paged(*id) : std::nullopt;
    if (!position.has_value() || position->signature != signature_) {
      sender.send_result(
          OwnedResult::error(ResultCode::kProtocolError, "paged results cookie is invalid"));
      return false;
    }
    skip_ = position->returned;
  }
  if (paged_.size == 0) {
    // RFC 2696 §3: size 0 abandons the paged search (its position is already forgotten).
    add_paged_control(sender, "");
    sender.send_result(OwnedResult::success());
    return false;
  }
  return true;
}

void SearchPage::finish(bool page_full, std::uint64_t returned, ResultSender& sender) {
  if (!paged_.present) {
    return;
  }
  std::string cookie;
  if (page_full) {
    cookie = encode_cookie(session_.save_paged(PagedPosition{std::move(signature_), returned}));
  }
  add_paged_control(sender, cookie);
}

}  // namespace numadir::server
