// listener/owned_connection.h: a connection as the listener thread that accepted it holds it:
// the Connection it shares with the workers and open operations (listener/connection.h), and
// what only that thread touches of it: the bytes read and not yet framed, the requests held
// back until the per-connection rules let them start, and the state of the rules
// (listener/connection_rules.h), the backpressure and the timers.
//
// Thread contract: created, used and destroyed by its listener thread only; of it, other threads
// reach only `shared`, through the references the requests and open operations hold. The
// listener destroys it once shared.refs() == 1 (its own reference alone): the held requests go
// first (they never started, so they hold no reference; they go back to the listener's caches),
// then the Connection and its socket.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "listener/connection.h"
#include "listener/frontend_snapshot.h"
#include "listener/input_stamps.h"
#include "listener/request.h"
#include "listener/request_handler.h"

namespace numadir::listener {

struct OwnedConnection {
  // Owner thread: the calling thread becomes the owner (of `shared` too).
  OwnedConnection(int fd, ConnectionInfo info, ConnectionNotifier& owner)
      : shared(fd, std::move(info), owner) {}
  OwnedConnection(const OwnedConnection&) = delete;
  OwnedConnection& operator=(const OwnedConnection&) = delete;

  // Decides why it closes, once (the first reason given wins).
  void decide_close(CloseReason reason) {
    if (!close_reason.has_value()) {
      close_reason = reason;
    }
  }

  Connection shared;  // Its own contract (listener/connection.h).
  // Everything below: Owner: the listener thread.
  std::string input;  // Bytes read, not yet framed.
  // With FrontendOptions::stamp_requests: when the whole PDUs in `input` were read.
  InputStamps input_stamps;
  // Waiting for their turn, oldest first (at most max_outstanding_per_connection: a vector,
  // which unlike a deque allocates nothing until a request waits).
  std::vector<OwnedRequest> held;
  std::uint64_t requests_read = 0;  // RequestOrigin::number's next.
  bool bind_running = false;
  std::int32_t bind_message_id = 0;  // The last bind started.
  bool closing = false;
  // Why it closes, decided once (decide_close): by the rules when they ask for the close
  // (Unbind, a protocol error, TLS), else by the listener as it begins the close. Counted
  // (ListenerSnapshot::closed) when the connection is destroyed.
  std::optional<CloseReason> close_reason;
  bool want_output = false;     // EPOLLOUT registered.
  bool reading_paused = false;  // Backpressure: requests are held.
  // Steady clock: since when the output has waited for the socket without progress
  // (want_output), and the shared.bytes_written() seen then.
  std::int64_t output_stalled_since_ms = 0;
  std::uint64_t written_seen = 0;
  std::int64_t last_read_ms = 0;  // Steady clock, for idle_timeout.
  // Steady clock: the TLS handshake must be done by then (0: none pending).
  std::int64_t handshake_deadline_ms = 0;
};

}  // namespace numadir::listener
