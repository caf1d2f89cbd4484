// perf/detail/auth_worker.h: the state AuthWorker keeps per slot and per connection, shared by
// its source files (auth_worker.cc: the loop and the auth state machine; auth_worker_io.cc:
// sockets, reads and writes; auth_worker_tls.cc: StartTLS and the TLS handshake). Private to
// perf/.
//
// Thread contract: every object here belongs to the AuthWorker's run() thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "listener/wire/ber_writer.h"
#include "listener/wire/ldap_message.h"
#include "perf/auth_worker.h"
#include "perf/detail/input_buffer.h"
#include "perf/tls_client.h"

namespace numadir::perf {

namespace detail {

inline constexpr std::size_t kInitialInputBytes = 16 * 1024;
inline constexpr std::int64_t kNsPerMs = 1'000'000;

}  // namespace detail

struct AuthWorker::Connection {
  // kConnecting -> [kStartTls: StartTLS sent ->] [kHandshaking: TLS ->] kOpen (requests).
  enum class State : std::uint8_t { kClosed, kConnecting, kStartTls, kHandshaking, kOpen };

  Slot* slot = nullptr;
  std::uint64_t tag_base = 0;    // Slot index and place, as in epoll_event.data.u64.
  std::uint32_t generation = 0;  // Bumped by every open.
  int fd = -1;
  State state = State::kClosed;
  bool want_write = false;        // EPOLLOUT is registered.
  bool tls_want_write = false;    // The handshake or an SSL_read waits for the socket's room.
  bool write_wants_read = false;  // An SSL_write waits for the socket's data.
  std::int32_t next_id = 1;       // The next request's message ID.
  std::int32_t pending_id = 0;    // The outstanding request's ID; 0 = none.
  bool bound = false;             // Modify mode: the connection's bind succeeded.
  detail::InputBuffer input;      // Allocated at the first open, kept across reopens.
  listener::wire::BerWriter output;
  std::size_t output_sent = 0;
  SSL* ssl = nullptr;  // Owned (SSL_free) while the socket is open over TLS.
  TlsSession session;  // --tls-resume: the last session of this place in the slot.
};

struct AuthWorker::Slot {
  enum class Phase : std::uint8_t { kSearch, kBind, kModify };

  Connection connections[2];  // [1] only in split mode (the bind connection).
  bool active = false;        // An auth is in progress.
  bool request_sent = false;  // The current phase's request is written (or queued).
  bool deferred = false;      // On deferred_, to run next_auth() at retry_ns.
  Phase phase = Phase::kSearch;
  std::uint64_t user = 0;
  std::int64_t start_ns = 0;
  std::uint32_t entries = 0;
  std::int64_t retry_ns = 0;
  std::string dn;  // The found entry's DN, the bind-only DN, or the modified entry's DN.
  std::string password;
  std::string value;  // Modify mode: the value written.
};

struct AuthWorker::Scratch {
  listener::wire::LdapMessage request;
  listener::wire::LdapMessage response;
  std::vector<std::string> filter_strings;
};

}  // namespace numadir::perf
