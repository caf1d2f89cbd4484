// perf/auth_stats.h: what authrate counts. WorkerStats are one worker thread's live counters
// (auths, latency histogram, errors by kind and by LDAP result code, the binds made with a
// wrong password on purpose and how many were refused as expected, failovers, and per server
// URL the auths completed there and the failovers away from it); AuthTotals is a copy of them
// (or of several merged) that the reporting thread takes and subtracts to get an interval or
// the measured window.
//
// Thread contract: a WorkerStats is written only by its worker thread (count_*), with relaxed
// atomic_ref stores, and may be read at any time by the reporting thread through
// AuthTotals::add_live(). Each WorkerStats is cache-line aligned so workers never share a line.
// An AuthTotals is a plain value owned by one thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "base/cache_line.h"
#include "perf/latency_histogram.h"

namespace numadir::perf {

// Why an auth did not succeed.
enum class AuthError : std::uint8_t {
  kLdapResult,             // The server answered a result code other than success (see by code).
  kNoEntry,                // The search found no entry.
  kMultipleEntries,        // The search found more than one entry.
  kConnectFailed,          // connect() failed (refused, unreachable, ...).
  kConnectionDropped,      // The server closed or reset the connection (or sent a notice).
  kProtocolError,          // A PDU that does not decode or does not answer the request.
  kTlsFailed,              // The TLS handshake failed (or no SSL object could be made).
  kWrongPasswordAccepted,  // --wrong-percent: the server accepted a wrong password.
  kTimeout,                // --timeout: no connection, or no answer, in time.
};
inline constexpr std::size_t kAuthErrorKinds = 9;
// Returns: a stable snake_case name, e.g. "no_entry".
std::string_view auth_error_name(AuthError kind);

// Result codes 0..254 are counted each on its own; any other in the last slot ("other").
inline constexpr std::size_t kResultCodeSlots = 256;
inline constexpr std::size_t kOtherResultCodeSlot = kResultCodeSlots - 1;

// The most server URLs (-H) one run drives; servers are counted by their index in the list.
inline constexpr std::size_t kMaxServers = 32;

struct alignas(kCacheLineSize) WorkerStats {
  // Thread: the owning worker only.
  // A completed auth, answered by server `server` (its index in the URL list).
  // Requires: server < kMaxServers.
  void count_auth(std::uint64_t latency_ns, std::size_t server = 0) {
    latency.record(latency_ns);
    bump(auths);
    bump(server_auths[server]);
  }
  void count_error(AuthError kind) { bump(errors[static_cast<std::size_t>(kind)]); }
  // Counts an kLdapResult error with its code.
  void count_result_code(std::int32_t code) {
    bump(result_codes[code >= 0 && code < static_cast<std::int32_t>(kOtherResultCodeSlot)
                          ? static_cast<std::size_t>(code)
                          : kOtherResultCodeSlot]);
    count_error(AuthError::kLdapResult);
  }
  // --wrong-percent: a bind made with a wrong password was answered (whatever the answer).
  void count_wrong_password_bind() { bump(wrong_password_binds); }
  // ... and the answer was invalidCredentials, as expected: the auth counts as completed.
  void count_wrong_password_refused(std::uint64_t latency_ns, std::size_t server = 0) {
    bump(wrong_password_refused);
    count_auth(latency_ns, server);
  }
  // A connection left server `from` for another after a failure there.
  void count_failover(std::size_t from) {
    bump(failovers);
    bump(server_failovers[from]);
  }
  // A completed TLS handshake; `resumed` when the server took the offered session.
  void count_tls_handshake(bool resumed) {
    bump(tls_handshakes);
    if (resumed) {
      bump(tls_resumed);
    }
  }

  LatencyHistogram latency;
  std::uint64_t auths = 0;  // Completed auths, those refused as expected included.
  std::uint64_t wrong_password_binds = 0;
  std::uint64_t wrong_password_refused = 0;  // Of wrong_password_binds; also in auths.
  std::uint64_t tls_handshakes = 0;
  std::uint64_t tls_resumed = 0;
  std::uint64_t failovers = 0;
  std::array<std::uint64_t, kAuthErrorKinds> errors{};
  std::array<std::uint64_t, kResultCodeSlots> result_codes{};
  // By server index: auths completed there (they sum to auths), failovers away from it (they
  // sum to failovers).
  std::array<std::uint64_t, kMaxServers> server_auths{};
  std::array<std::uint64_t, kMaxServers> server_failovers{};

 private:
  // Single writer: a relaxed load and store cannot lose an increment.
  static void bump(std::uint64_t& counter) {
    std::atomic_ref<std::uint64_t> ref(counter);
    ref.store(ref.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

struct AuthTotals {
  // Adds a copy of `live`, which its worker may be updating meanwhile.
  void add_live(const WorkerStats& live);
  void add(const AuthTotals& other);
  // Leaves what happened after `earlier`, an older total of the same workers.
  void subtract(const AuthTotals& earlier);
  std::uint64_t error_total() const;

  std::uint64_t auths = 0;
  std::uint64_t wrong_password_binds = 0;
  std::uint64_t wrong_password_refused = 0;
  std::uint64_t tls_handshakes = 0;
  std::uint64_t tls_resumed = 0;
  std::uint64_t failovers = 0;
  std::array<std::uint64_t, kAuthErrorKinds> errors{};
  std::array<std::uint64_t, kResultCodeSlots> result_codes{};
  std::array<std::uint64_t, kMaxServers> server_auths{};
  std::array<std::uint64_t, kMaxServers> server_failovers{};
  LatencyHistogram latency;
};

}  // namespace numadir::perf
