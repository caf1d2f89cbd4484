// listener/listener.h: one listener thread: its own SO_REUSEPORT socket per listen URL and its
// own epoll; it accepts connections and owns them, reads until EAGAIN, frames and decodes PDUs,
// applies the per-connection rules (bind exclusivity, unbind, abandon, outstanding limits) and
// hands requests to the worker pool. Idle, it sleeps in epoll_wait with no timeout.
//
// Thread contract: constructed, started and stopped by the controlling thread; everything else
// of it runs on its own thread, except notify(), which any thread may call.
#pragma once

#include <atomic>
#include <boost/lockfree/queue.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/cache_line.h"
#include "listener/connection.h"
#include "listener/request_handler.h"
#include "listener/tls.h"
#include "threadpool/thread_counters.h"
#include "threadpool/worker_pool.h"

namespace numadir::listener {

struct ListenerLimits {
  std::size_t max_pdu_bytes = 4 * 1024 * 1024;
  std::uint32_t max_outstanding_per_connection = 64;
  // A connection with nothing outstanding and nothing read for this long is closed (slapd's
  // idletimeout). 0: never. When set, each listener wakes once a second to look.
  std::uint32_t idle_timeout_s = 0;
  std::size_t max_connections = 4096;  // For the whole server.
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
  std::atomic<std::int32_t> tid{0};      // The listener thread's OS id, 0 before it runs.
};

// What every listener of one server shares.
struct ListenerShared {
  RequestHandler* handler = nullptr;
  TlsContext* tls = nullptr;  // nullptr: no TLS (StartTLS goes to the handler, which refuses).
  // Per listen URL, in the order of every listener's sockets: TLS from the first byte (ldaps).
  std::vector<bool> tls_urls;
  ListenerLimits limits;
  // After each batch of events, before it would sleep, a listener runs one queued read of its
  // pool itself (TaskPool::try_help) instead of leaving it to a worker: no wake-up and, on a
  // PU it shares with a worker, no context switch per request. While it runs one, its own
  // connections wait to be read.
  bool help_pool = false;
  std::atomic<std::uint64_t> next_connection_id{1};
  std::atomic<std::uint64_t> connections{0};
};

class Request;

class Listener {
 public:
  // Takes ownership of `listen_fds` (bound, listening, non-blocking sockets). Requests go to
  // `pool` (its NUMA node's); the thread pins itself to PU `pin` when given.
  Listener(std::string name, std::vector<int> listen_fds, ListenerShared& shared,
           threadpool::TaskPool& pool, std::optional<unsigned> pin);
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener();  // Requires: stopped (or never started).

  void start();
  // Stops accepting and reading, lets the requests already taken finish and write their
  // responses, closes every connection and joins the thread.
  void stop();

  // Any thread: asks the listener to look at connection `id` again (a worker released it while
  // the listener watched, or its output blocked or failed). Never blocks.
  void notify(std::uint64_t connection_id);

  // Any thread, while the listener lives.
  const ListenerCounters& counters() const { return counters_; }
  const std::string& name() const { return name_; }

 private:
  void run();
  void accept_all(int listen_fd, bool tls);
  // Feeds what was read to the connection's TLS; tells the handler when the handshake ends.
  // Returns: false when the connection is to be closed (a TLS failure or close_notify).
  bool on_tls_input(Connection& connection, std::string_view cipher);
  // Answers a StartTLS request (RFC 4511 §4.14) and starts TLS when it may.
  void start_tls(Connection& connection, const wire::LdapMessage& request);
  void close_stalled_handshakes(std::int64_t now_ms);
  void on_readable(Connection& connection);
  // Starts or holds what the connection has read, as far as its rules allow; watches the
  // connection when it waits for workers.
  void pump(Connection& connection);
  // Frames, decodes and routes the PDUs in connection.input_. Returns false once the
  // connection is closing.
  bool route_input(Connection& connection);
  enum class StartResult : std::uint8_t { kStarted, kWait, kPoolFull };
  // Hands `request` to the pool if the connection's rules allow it now (a bind only with
  // nothing outstanding, nothing while a bind runs, at most max_outstanding_per_connection).
  // On kStarted `request` is left empty; otherwise the caller keeps it.
  StartResult try_start(Connection& connection, std::unique_ptr<Request>& request);
  // Sends a Notice of Disconnection (protocolError) and closes.
  void protocol_error(Connection& connection, std::string_view why);
  // Stops reading and marks what is outstanding abandoned; the connection is destroyed (and
  // its fd closed) once no worker holds it.
  void begin_close(Connection& connection);
  void set_interest(Connection& connection);
  void drain_mailbox();
  // Closes the connections idle longer than limits.idle_timeout_s.
  void close_idle(std::int64_t now_ms);
  void on_notified(std::uint64_t connection_id);
  void wake();

  const std::string name_;
  const std::vector<int> listen_fds_;
  ListenerShared& shared_;
  threadpool::TaskPool& pool_;
  const std::optional<unsigned> pin_;
  int epoll_fd_ = -1;
  int event_fd_ = -1;
  int spare_fd_ = -1;  // Closed to accept-and-drop a connection when fds run out (EMFILE).
  std::thread thread_;
  ListenerCounters counters_;
  // Owner: the listener thread.
  std::unordered_map<std::uint64_t, std::unique_ptr<Connection>> connections_;
  std::unique_ptr<char[]> read_buffer_;                 // Owner: the listener thread.
  std::vector<std::unique_ptr<Connection>> graveyard_;  // Closed: destroyed after the events.
  std::vector<std::uint64_t> stalled_;  // Connections whose request the full pool refused.
  bool draining_ = false;               // Stopping: no accepts, no reads.
  std::int64_t next_idle_check_ms_ = 0;
  std::size_t handshakes_ = 0;  // Connections whose TLS handshake is in progress.
  // Shared: connection ids from notify(). When it is full, rescan_ asks for a look at every
  // connection instead.
  boost::lockfree::queue<std::uint64_t, boost::lockfree::fixed_sized<true>> mailbox_{65000};
  std::atomic<bool> rescan_{false};
  // True while the thread is (about to be) in epoll_wait: notify() then writes event_fd_.
  alignas(kCacheLineSize) std::atomic<bool> sleeping_{false};
  std::atomic<bool> stop_requested_{false};
};

}  // namespace numadir::listener
