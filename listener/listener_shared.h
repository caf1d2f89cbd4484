// listener/listener_shared.h: what the listeners of one server share (ListenerShared, with its
// ListenerLimits) and what each listener counts (ListenerCounters): the parts of a listener its
// ConnectionRules (listener/connection_rules.h) read and write too.
//
// Thread contract: a ListenerShared is filled in by the controlling thread before the listeners
// start and immutable after, but for its atomics, which any listener thread updates. A
// ListenerCounters is written by its listener thread only and read by any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/cache_line.h"
#include "listener/frontend_snapshot.h"
#include "listener/request_handler.h"
#include "listener/tls.h"

namespace numadir::listener {

struct ListenerLimits {
  std::size_t max_pdu_bytes = 4 * 1024 * 1024;
  std::uint32_t max_outstanding_per_connection = 64;
  // A connection with nothing outstanding and nothing read for this long is closed (slapd's
  // idletimeout). 0: never. When set, each listener wakes once a second to look.
  std::uint32_t idle_timeout_s = 0;
  std::size_t max_connections = 4096;  // For the whole server.
  // Response bytes queued for one connection (not yet taken by its socket) past which the
  // connection is not read, no request of it starts and its producers pause (see "Output
  // backpressure" in request_handler.h); they go on once half of it has drained.
  std::size_t max_output_bytes = 1024 * 1024;
  // A connection whose output waits this long with nothing taken by its socket is closed and
  // logged (slapd's writetimeout). 0: no limit. While output waits, each listener wakes once a
  // second to look.
  std::uint32_t write_timeout_s = 60;
};

// Counters of one listener, on their own cache line: written by its thread only (with
// threadpool::owner_add, no locked instruction); read by anyone.
struct alignas(kCacheLineSize) ListenerCounters {
  std::atomic<std::uint64_t> accepted{0};  // Connections accepted and kept.
  std::atomic<std::uint64_t> open{0};      // Connections open now.
  std::atomic<std::uint64_t> requests{0};  // Requests decoded (unbind and abandon excluded).
  std::atomic<std::uint64_t> refused{0};   // Over max_connections, or accept failed (EMFILE).
  std::atomic<std::uint64_t> bytes_received{0};
  std::atomic<std::uint64_t> helped{0};  // Requests it ran itself (ListenerShared::help_pool).
  // Times a connection passed its output bound and stopped being read.
  std::atomic<std::uint64_t> output_pauses{0};
  // Connections closed, by CloseReason: each counted once, when it is destroyed (so accepted ==
  // open + the sum of these).
  std::array<std::atomic<std::uint64_t>, kCloseReasons> closed{};
  // Requests the pool refused (queue full: each refusal of a try_submit counts).
  std::atomic<std::uint64_t> submit_refused{0};
  std::atomic<std::int32_t> tid{0};  // The listener thread's OS id, 0 before it runs.
};

// What every listener of one server shares.
struct ListenerShared {
  RequestHandler* handler = nullptr;
  TlsContext* tls = nullptr;  // nullptr: no TLS (StartTLS goes to the handler, which refuses).
  // Per listen URL, in the order of every listener's sockets: TLS from the first byte (ldaps).
  std::vector<bool> tls_urls;
  // Per listen URL, in the same order: the ldapi:// socket path; empty for TCP.
  std::vector<std::string> local_paths;
  ListenerLimits limits;
  // After each batch of events, before it would sleep, a listener runs one queued read of its
  // pool itself (TaskPool::try_help) instead of leaving it to a worker: no wake-up and, on a
  // PU it shares with a worker, no context switch per request. While it runs one, its own
  // connections wait to be read.
  bool help_pool = false;
  // Stamps each request with when its bytes were read (FrontendOptions::stamp_requests): one
  // clock read per round of reads (OwnedConnection::input_stamps). Off: none.
  bool stamp_requests = false;
  std::atomic<std::uint64_t> next_connection_id{1};
  // Connections open or being set up, in every listener: a slot is taken by one compare-and-
  // swap before a connection is set up and given back when it closes, so it never passes
  // limits.max_connections (relaxed: nothing else is ordered by it).
  std::atomic<std::uint64_t> connections{0};
};

}  // namespace numadir::listener
