#include "perf/auth_stats.h"

#include <algorithm>

namespace numadir::perf {
namespace {

std::uint64_t load_relaxed(const std::uint64_t& counter) {
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(counter))
      .load(std::memory_order_relaxed);
}

}  // namespace

std::string_view auth_error_name(AuthError kind) {
  switch (kind) {
    case AuthError::kLdapResult:
      return "ldap_result";
    case AuthError::kNoEntry:
      return "no_entry";
    case AuthError::kMultipleEntries:
      return "multiple_entries";
    case AuthError::kConnectFailed:
      return "connect_failed";
    case AuthError::kConnectionDropped:
      return "connection_dropped";
    case AuthError::kProtocolError:
      return "protocol_error";
    case AuthError::kTlsFailed:
      return "tls_failed";
    case AuthError::kWrongPasswordAccepted:
      return "wrong_password_accepted";
    case AuthError::kTimeout:
      return "timeout";
  }
  return "unknown";
}

void AuthTotals::add_live(const WorkerStats& live) {
  auths += load_relaxed(live.auths);
  wrong_password_binds += load_relaxed(live.wrong_password_binds);
  wrong_password_refused += load_relaxed(live.wrong_password_refused);
  tls_handshakes += load_relaxed(live.tls_handshakes);
  tls_resumed += load_relaxed(live.tls_resumed);
  failovers += load_relaxed(live.failovers);
  for (std::size_t i = 0; i < errors.size(); ++i) {
    errors[i] += load_relaxed(live.errors[i]);
  }
  for (std::size_t i = 0; i < result_codes.size(); ++i) {
    result_codes[i] += load_relaxed(live.result_codes[i]);
  }
  for (std::size_t i = 0; i < kMaxServers; ++i) {
    server_auths[i] += load_relaxed(live.server_auths[i]);
    server_failovers[i] += load_relaxed(live.server_failovers[i]);
  }
  LatencyHistogram copy;
  copy.load_from(live.latency);
  latency.merge(copy);
}

void AuthTotals::add(const AuthTotals& other) {
  auths += other.auths;
  wrong_password_binds += other.wrong_password_binds;
  wrong_password_refused += other.wrong_password_refused;
  tls_handshakes += other.tls_handshakes;
  tls_resumed += other.tls_resumed;
  failovers += other.failovers;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    errors[i] += other.errors[i];
  }
  for (std::size_t i = 0; i < result_codes.size(); ++i) {
    result_codes[i] += other.result_codes[i];
  }
  for (std::size_t i = 0; i < kMaxServers; ++i) {
    server_auths[i] += other.server_auths[i];
    server_failovers[i] += other.server_failovers[i];
  }
  latency.merge(other.latency);
}

void AuthTotals::subtract(const AuthTotals& earlier) {
  auths -= std::min(auths, earlier.auths);
  wrong_password_binds -= std::min(wrong_password_binds, earlier.wrong_password_binds);
  wrong_password_refused -= std::min(wrong_password_refused, earlier.wrong_password_refused);
  tls_handshakes -= std::min(tls_handshakes, earlier.tls_handshakes);
  tls_resumed -= std::min(tls_resumed, earlier.tls_resumed);
  failovers -= std::min(failovers, earlier.failovers);
  for (std::size_t i = 0; i < errors.size(); ++i) {
    errors[i] -= std::min(errors[i], earlier.errors[i]);
  }
  for (std::size_t i = 0; i < result_codes.size(); ++i) {
    result_codes[i] -= std::min(result_codes[i], earlier.result_codes[i]);
  }
  for (std::size_t i = 0; i < kMaxServers; ++i) {
    server_auths[i] -= std::min(server_auths[i], earlier.server_auths[i]);
    server_failovers[i] -= std::min(server_failovers[i], earlier.server_failovers[i]);
  }
  latency.subtract(earlier.latency);
}

std::uint64_t AuthTotals::error_total() const {
  std::uint64_t total = 0;
  for (std::uint64_t count : errors) {
    total += count;
  }
  return total;
}

}  // namespace numadir::perf
