// server/client/tcp_keepalive.h: TCP keepalive for a client connection, in slapd's syncrepl
// form "idle:probes:interval" (seconds, count, seconds; e.g. "240:10:30"): after `idle` seconds
// without traffic the kernel sends up to `probes` probes `interval` seconds apart, and a peer that
// answers none is declared gone (the connection's next read fails).
//
// Thread contract: values; parse on any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace numadir::server {

struct TcpKeepalive {
  std::uint32_t idle_s = 0;  // 0: keepalive off (the other fields are then unused).
  std::uint32_t probes = 0;
  std::uint32_t interval_s = 0;

  bool enabled() const { return idle_s != 0; }
  friend bool operator==(const TcpKeepalive&, const TcpKeepalive&) = default;
};

// Linux's bounds for TCP_KEEPIDLE / TCP_KEEPINTVL (seconds) and TCP_KEEPCNT.
inline constexpr std::uint32_t kMaxKeepaliveSeconds = 32767;
inline constexpr std::uint32_t kMaxKeepaliveProbes = 127;

// Parses "idle:probes:interval"; "" is keepalive off.
// Errors: kInvalidArgument saying which field is wrong (each a decimal number from 1 to Linux's
//   bound: 32767 seconds, 127 probes).
Result<TcpKeepalive> parse_keepalive(std::string_view text);

}  // namespace numadir::server
