// listener/frontend_snapshot.h: what Frontend::snapshot() returns: the counters of every
// listener, worker and pool read at one moment, as plain values (monitoring publishes them
// under cn=Monitor; `numadir stats` shows them).
//
// Thread contract: plain values, owned by whoever took the snapshot.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "threadpool/worker_pool.h"

namespace numadir::listener {

// Why a listener closed a connection (ListenerSnapshot::closed).
enum class CloseReason : std::uint8_t {
  kClient,         // The client closed it or reset it (EOF, ECONNRESET, EPIPE).
  kUnbind,         // An UnbindRequest.
  kIdleTimeout,    // limits.idle_timeout_s passed with nothing read.
  kWriteTimeout,   // limits.write_timeout_s passed with output pending and none taken.
  kProtocolError,  // A malformed PDU or a protocol error (a Notice of Disconnection sent).
  kTlsFailure,     // A failed or timed-out TLS handshake, or a TLS error later.
  kServerStop,     // The server stopped.
  kOther,          // Anything else (a socket error).
};
inline constexpr std::size_t kCloseReasons = 8;
// Returns: the reason's label, e.g. "idle_timeout" (as metrics and stats name it).
const char* close_reason_name(CloseReason reason);

struct ListenerSnapshot {
  std::string name;               // The thread's name, e.g. "listener-0-1".
  std::size_t pool = 0;           // Index into FrontendSnapshot::pools of the pool it submits to.
  std::int32_t tid = 0;           // OS thread id (/proc/self/task/<tid>); 0 before the thread ran.
  std::uint64_t connections = 0;  // Open now.
  std::uint64_t accepted = 0;     // Accepted since start.
  std::uint64_t refused = 0;      // Over max_connections, or out of file descriptors.
  std::uint64_t requests = 0;     // Requests decoded.
  std::uint64_t bytes_received = 0;
  std::uint64_t helped = 0;  // Requests it ran itself, helping its pool.
  // Times one of its connections passed its output bound and was paused (not read).
  std::uint64_t output_pauses = 0;
  // Connections closed, by CloseReason.
  std::array<std::uint64_t, kCloseReasons> closed{};
  // Requests its pool refused (queue full: backpressure, the request waited).
  std::uint64_t submit_refused = 0;
};

struct WorkerSnapshot {
  std::string name;            // The thread's name, e.g. "worker-0-3".
  std::size_t pool = 0;        // Index into FrontendSnapshot::pools.
  std::int32_t tid = 0;        // OS thread id; 0 before the thread ran.
  std::uint64_t requests = 0;  // Requests run.
  std::uint64_t parks = 0;     // Times it slept with nothing to do.
  std::uint64_t wakeups = 0;   // Times it woke.
  std::uint64_t busy_ns = 0;   // Time not parked since it started.
};

struct PoolSnapshot {
  std::string name;               // "node0" (per NUMA node), or "pool0" without a placement plan.
  std::uint64_t queue_depth = 0;  // Requests waiting for a worker now (approximate).
  std::uint64_t queue_high_water = 0;  // The most ever waiting at once.
  std::uint64_t queue_capacity = 0;
  std::size_t workers = 0;
  std::size_t listeners = 0;
  // The single dispatcher's queue mutex (TaskPool::LockStats); absent for a lock-free pool.
  std::optional<threadpool::TaskPool::LockStats> lock;
};

struct FrontendSnapshot {
  std::string dispatcher;  // "percpu" or "single".
  // How connections reach listeners: "cpu" (a listener of the node whose CPU received them) or
  // "hash" (the kernel's reuseport hash: one node, or the kernel refused the program).
  std::string steering;
  std::vector<ListenerSnapshot> listeners;
  std::vector<WorkerSnapshot> workers;  // Pool by pool, each pool's workers in order.
  std::vector<PoolSnapshot> pools;
};

}  // namespace numadir::listener
