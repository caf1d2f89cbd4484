// listener/connection_rules.h: the per-connection rules of RFC 4511 and of numadir's limits,
// applied to what a connection has read: PDU framing and decoding, a bind that runs alone,
// Unbind, Abandon, StartTLS, at most max_outstanding_per_connection operations, the requests
// held back until they may start, the TLS handshake's deadline and the idle timeout. The rules
// decide and hand requests to the pool; the listener does the rest of the I/O they ask for
// (epoll interest, closing, waiting for room in the pool).
//
// Thread contract: one ConnectionRules per listener, used on that listener's thread only, on
// the connections it owns. Constructed and destroyed with its Listener.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "listener/frontend_snapshot.h"
#include "listener/owned_connection.h"
#include "listener/tls.h"
#include "listener/wire/ldap_message.h"
#include "threadpool/worker_pool.h"

namespace numadir::listener {

struct ListenerCounters;
struct ListenerShared;

// Returns: the steady clock in milliseconds: what OwnedConnection::last_read_ms and the handshake
//   deadlines hold.
std::int64_t steady_ms();

// What pump() asks of the listener.
enum class PumpResult : std::uint8_t {
  // Everything read was started, or is held until a worker or an open operation releases the
  // connection (it is watched: Connection::watch_operations, so the listener is told).
  kIdle,
  kPoolFull,  // The pool refused a request: pump again once the pool has room.
  kClose,     // Unbind, a protocol error (its notice queued) or a TLS failure: close it.
};

class ConnectionRules {
 public:
  // `shared`, `pool` and `counters` must outlive the rules (they are the listener's).
  ConnectionRules(const ListenerShared& shared, threadpool::TaskPool& pool,
                  ListenerCounters& counters);
  ConnectionRules(const ConnectionRules&) = delete;
  ConnectionRules& operator=(const ConnectionRules&) = delete;

  // Starts what `connection` has held and read as far as its rules allow, holds the rest, and
  // pauses reading it (connection.reading_paused) while requests are held: the caller updates
  // its epoll interest when that changed. The requests it makes come from `caches`, the
  // listener's (its state's), and the ones it drops go back there.
  PumpResult pump(OwnedConnection& connection, RequestCaches& caches);

  // Starts TLS on `connection` (ldaps://, or StartTLS): its handshake must be done by `now_ms`
  // + handshake_timeout_s.
  void begin_tls(OwnedConnection& connection, std::unique_ptr<TlsChannel> channel,
                 std::int64_t now_ms);
  // Feeds ciphertext read from the socket to the connection's TLS; tells the handler when the
  // handshake ends.
  // Returns: nullopt while the connection stays open; else why it is to be closed: kTlsFailure
  //   (a TLS failure, said on standard error) or kClient (close_notify).
  [[nodiscard]] std::optional<CloseReason> tls_input(OwnedConnection& connection,
                                                     std::string_view cipher);
  // The connection closes: a pending handshake of it no longer counts.
  void forget_handshake(OwnedConnection& connection);
  // Returns: connections whose TLS handshake is pending (each has a deadline).
  std::size_t handshakes() const { return handshakes_; }

  // Returns: whether `connection` is to be closed at `now_ms`, and why: kTlsFailure when its TLS
  //   handshake is overdue, kIdleTimeout when it has been idle (nothing outstanding or held,
  //   nothing read) for idle_timeout_s; nullopt when neither.
  std::optional<CloseReason> expired(const OwnedConnection& connection, std::int64_t now_ms) const;
  // Returns: whether `connection`'s output has waited for its socket for write_timeout_s with
  //   nothing taken (then it logs the close to standard error). Restarts the connection's clock
  //   when the socket took bytes since the last look.
  bool write_expired(OwnedConnection& connection, std::int64_t now_ms) const;

 private:
  enum class StartResult : std::uint8_t { kStarted, kWait, kPoolFull };

  // Starts the held requests in order, as far as the rules allow.
  // Returns: kStarted when none is left held.
  StartResult start_held(OwnedConnection& connection);
  // Returns: whether the front held request may start now that the operations are watched
  //   (one ended meanwhile); otherwise the connection's watch brings the listener back.
  bool may_start_held(OwnedConnection& connection);
  // Frames, decodes and routes the PDUs in connection.input, each stamped with when it was read
  // (ListenerShared::stamp_requests), as requests made from `caches`. Returns: false once the
  // connection is to close (why is decided on it: OwnedConnection::decide_close).
  bool route_input(OwnedConnection& connection, RequestCaches& caches);
  // Hands `request` to the pool if the connection's rules allow it now (a bind only with
  // nothing outstanding, nothing while a bind runs, at most max_outstanding_per_connection).
  // On kStarted `request` is left empty; otherwise the caller keeps it. A refusal of the pool
  // counts in counters_.submit_refused.
  StartResult try_start(OwnedConnection& connection, OwnedRequest& request);
  // Carries out an AbandonRequest for message ID `target` (RFC 4511 §4.11) as slapd does: ID 0
  // and a running bind are left alone; otherwise the running or open operation with that ID is
  // abandoned, or else the first held request with it is dropped unanswered.
  void abandon(OwnedConnection& connection, std::int32_t target);
  // Answers a StartTLS request (RFC 4511 §4.14) and starts TLS when it may.
  void start_tls(OwnedConnection& connection, const Request& request);
  // Queues a Notice of Disconnection (protocolError) and decides the close (kProtocolError); the
  // caller closes.
  void protocol_error(OwnedConnection& connection, std::string_view why);

  const ListenerShared& shared_;
  threadpool::TaskPool& pool_;
  ListenerCounters& counters_;  // Written by this thread only (owner_add).
  std::size_t handshakes_ = 0;  // Owner: the listener thread.
};

}  // namespace numadir::listener
