// server/client/tcp_keepalive.cc: see tcp_keepalive.h.
#include "server/client/tcp_keepalive.h"

#include <charconv>
#include <string>

namespace numadir::server {

Result<TcpKeepalive> parse_keepalive(std::string_view text) {
  TcpKeepalive out;
  if (text.empty()) {
    return out;
  }
  constexpr std::string_view kForm = "must be \"idle:probes:interval\" (e.g. \"240:10:30\")";
  std::uint32_t* const fields[] = {&out.idle_s, &out.probes, &out.interval_s};
  constexpr std::string_view kNames[] = {"idle", "probes", "interval"};
  constexpr std::uint32_t kMax[] = {kMaxKeepaliveSeconds, kMaxKeepaliveProbes,
                                    kMaxKeepaliveSeconds};
  std::string_view rest = text;
  for (std::size_t i = 0; i < 3; ++i) {
    const std::size_t colon = rest.find(':');
    if ((i < 2) == (colon == std::string_view::npos)) {
      return invalid_argument("\"" + std::string(text) + "\" " + std::string(kForm));
    }
    const std::string_view field = rest.substr(0, colon);
    std::uint32_t value = 0;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (field.empty() || error != std::errc() || end != field.data() + field.size() || value == 0 ||
        value > kMax[i]) {
      return invalid_argument("\"" + std::string(text) + "\": " + std::string(kNames[i]) +
                              " must be a number from 1 to " + std::to_string(kMax[i]));
    }
    *fields[i] = value;
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  return out;
}

}  // namespace numadir::server
