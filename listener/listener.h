// listener/listener.h: one listener thread: its own SO_REUSEPORT socket per listen URL and its
// own epoll; it accepts connections and owns them, reads until EAGAIN, and lets its
// ConnectionRules (listener/connection_rules.h) frame, decode and start what was read. Idle, it
// sleeps in epoll_wait with no timeout (or until its once-a-second timer, when idle timeouts or
// TLS handshakes are to be watched); a pool that refused a request wakes it once it has room.
//
// Thread contract: started and stopped by the controlling thread, and constructed by it or by a
// thread it joins before it starts the listener (Frontend builds a node's on a thread of that
// node: threadpool::build_on_node); everything else of it runs on its own thread (debug builds
// check), except notify() and the pool's on_room(), which any thread may call.
#pragma once

#include <sys/epoll.h>

#include <array>
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
#include "listener/connection_rules.h"
#include "listener/frontend_snapshot.h"
#include "listener/owner_thread.h"
#include "listener/request_handler.h"
#include "listener/tls.h"
#include "threadpool/node_memory.h"
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
  // clock read per read that completed a PDU (Connection::input_stamps_). Off: none.
  bool stamp_requests = false;
  std::atomic<std::uint64_t> next_connection_id{1};
  // Connections open or being set up, in every listener: a slot is taken by one compare-and-
  // swap before a connection is set up and given back when it closes, so it never passes
  // limits.max_connections (relaxed: nothing else is ordered by it).
  std::atomic<std::uint64_t> connections{0};
};

class Listener final : public ConnectionNotifier, private threadpool::RoomWaiter {
 public:
  // The notices (notify()) the mailbox holds before they fall back to a look at every
  // connection.
  static constexpr std::size_t kMailboxCapacity = 65000;

  // Takes ownership of `listen_fds` (bound, listening, non-blocking sockets, in listen URL
  // order; -1 for a URL this listener does not accept on: an ldapi:// one another listener has).
  // Requests go to `pool` (its NUMA node's); the thread pins itself to PU `pin` when given, then
  // binds its memory as `memory` says (when active), before it accepts: the connections, their
  // buffers and what the thread allocates come from its node. What the constructor allocates (the
  // mailbox, the read buffer) comes from the constructing thread's node (Frontend builds a
  // node's listeners with threadpool::build_on_node). A test may give a smaller
  // `mailbox_capacity` (its memory is allocated up front).
  // Requires: 0 < mailbox_capacity <= kMailboxCapacity.
  Listener(std::string name, std::vector<int> listen_fds, ListenerShared& shared,
           threadpool::TaskPool& pool, std::optional<unsigned> pin, threadpool::NodeBinding memory,
           std::size_t mailbox_capacity = kMailboxCapacity);
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener();  // Requires: stopped (or never started).

  void start();
  // Stops accepting and reading, lets the requests already taken finish and write their
  // responses, ends the open operations (their on_end runs), waits until every one of them is
  // released, closes every connection and joins the thread.
  void stop();

  // Any thread: asks the listener to look at connection `id` again (a worker or an open
  // operation released it while the listener watched, an open operation's end is due, or its
  // output blocked or failed). Never blocks.
  void notify(std::uint64_t connection_id) override;

  // Test seams, for the connection fuzz target (tests/fuzz/connection_fuzz.cc), which drives a
  // listener that was never started on a thread of its own: the calling thread becomes the
  // listener's thread, and the calls above stay as they are (stop() asks the next rounds to
  // drain). Never together with start().
  //
  // Takes `fd`, a connected non-blocking socket, as a connection accepted on a plain ldap://
  // URL: counted against max_connections (beyond it refused and closed) and read from the next
  // round on.
  void adopt_for_test(int fd);
  // Runs one round of the event loop without sleeping: the events ready now, what other threads
  // asked for (notify(), the pool's room), the timers that are due.
  // Returns: true once stop() was called and every connection is closed.
  bool run_round_for_test();

  // Any thread, while the listener lives.
  const ListenerCounters& counters() const { return counters_; }
  const std::string& name() const { return name_; }

 private:
  // The loop (run()) and its steps, in the order it takes them.
  void run();
  // One round: waits up to `timeout_ms` for events (-1: no limit), dispatches them, runs the
  // notices, the timers and one task for the pool. Returns: whether it ran a task.
  bool run_round(int timeout_ms);
  // Starts draining on a stop request. Returns: true once stopped and every connection closed.
  bool stopped();
  // Returns: how long epoll_wait may sleep: 0 when a notice came meanwhile, else until the next
  //   timer (-1: none). Marks the thread sleeping (sleeping_) when it may.
  int sleep_timeout_ms();
  void dispatch(const epoll_event& event);
  // Runs what other threads asked for: notify() (the mailbox or a rescan) and on_room().
  void run_notices();
  // Once a second while wanted: closes the connections whose idle time or TLS handshake ran out.
  void run_timers();
  // With nothing left to read, runs one queued task of the pool (ListenerShared::help_pool).
  // Returns: whether it ran one.
  bool help_pool();

  // Accepts what waits on listen_fds_[index] (listen URL `index`).
  void accept_all(std::size_t index);
  // Takes a slot of max_connections for a connection being accepted. Returns: false when every
  // slot is taken (the caller refuses the connection).
  bool reserve_connection();
  // Gives back a slot (the connection closed, or failed before it opened).
  void release_connection();
  // Makes a connection of the accepted socket `fd` from `peer`, in the slot the caller reserved
  // (given back if it fails: then `fd` is closed). `local`: accepted on an ldapi:// socket, with
  // the peer's credentials when the kernel gave them.
  void open_connection(int fd, std::string peer, bool tls, bool local = false,
                       std::optional<PeerCredentials> credentials = std::nullopt);
  void on_readable(Connection& connection);
  // The client ended the connection (EOF, close_notify) or it failed (a reset, TLS): reads what it
  // had buffered, then closes, for `reason` unless what it read decided otherwise (an Unbind).
  void close_after_input(Connection& connection, CloseReason reason);
  // Lets the rules start or hold what the connection read, and carries out what they ask.
  void pump(Connection& connection);
  // The pool refused `connection`'s request: retries once the pool says it has room.
  void wait_for_pool(Connection& connection);
  // Stops reading and ends what is outstanding; the connection is destroyed (and its fd closed)
  // once no worker or open operation holds it, and counted in counters_.closed under its
  // close_reason_: `reason`, unless one was decided before (Connection::decide_close).
  void begin_close(Connection& connection, CloseReason reason);
  void set_interest(Connection& connection);
  // Sets connection.want_output_ (EPOLLOUT wanted: the socket was full), counting the
  // connections that wait, and starts the write timeout's clock.
  void set_want_output(Connection& connection, bool want);
  // The output drained to half its bound: hands the paused producers' on_writable to the pool
  // and, once unpaused, reads and pumps the connection again.
  void resume_output(Connection& connection);
  void on_notified(std::uint64_t connection_id);
  // The pool has room again (threadpool::RoomWaiter): any thread, under the pool's lock.
  void on_room() override;
  bool timers_wanted() const;
  void wake_if_sleeping();
  void wake();

  // Immutable after construction, read by any thread: name_, pin_, memory_, the fds (listen_fds_
  // are closed by the listener thread when it drains, by the destructor if it never ran; event_fd_
  // is written by any thread, wake(), and read by the listener thread), and the shared parts
  // (ListenerShared is immutable but for its atomics; the pool is thread-safe).
  const std::string name_;
  const std::vector<int> listen_fds_;
  ListenerShared& shared_;
  threadpool::TaskPool& pool_;
  const std::optional<unsigned> pin_;
  const threadpool::NodeBinding memory_;
  const int epoll_fd_;
  const int event_fd_;
  int spare_fd_ = -1;   // Owner: listener thread. Closed to accept-and-drop when fds run out.
  std::thread thread_;  // Owner: the controlling thread.
  ListenerCounters counters_;  // Written by the listener thread only, read by any.
  OwnerThread owner_thread_;   // Claimed by the listener thread when it runs.
  // Owner: listener thread. The WorkerState of the tasks it runs for its pool and of the
  // handler's connection events, made and destroyed by run().
  std::unique_ptr<threadpool::WorkerState> state_;
  ConnectionRules rules_;  // Owner: listener thread.
  // Owner: listener thread.
  std::unordered_map<std::uint64_t, std::unique_ptr<Connection>> connections_;
  std::unique_ptr<char[]> read_buffer_;  // Owner: listener thread.
  // Owner: listener thread. The input buffer lent to a connection that has no partial request
  // while it reads (on_readable), so an idle connection holds none.
  std::string lent_input_;
  std::vector<std::unique_ptr<Connection>> graveyard_;  // Owner: listener thread. Closed ones,
                                                        // destroyed after the events.
  // Owner: listener thread. Connections whose request the full pool refused, retried when the
  // pool has room; waiting_for_room_: registered with it (notify_when_room), not yet told.
  std::vector<std::uint64_t> stalled_;
  bool waiting_for_room_ = false;
  // Owner: listener thread. Paused producers to resume (ResumeTask) that the full pool refused.
  std::vector<std::unique_ptr<threadpool::Task>> pending_resumes_;
  std::size_t output_waiting_ = 0;  // Owner: listener thread. Connections with want_output_.
  bool draining_ = false;           // Owner: listener thread. Stopping: no accepts, no reads.
  std::int64_t next_timer_ms_ = 0;  // Owner: listener thread. Steady clock.
  // Shared: connection ids from notify(). When it is full, rescan_ asks for a look at every
  // connection instead.
  boost::lockfree::queue<std::uint64_t, boost::lockfree::fixed_sized<true>> mailbox_;
  std::atomic<bool> rescan_{false};
  // Shared: set by on_room() (seq_cst, as the mailbox), taken by the listener thread.
  std::atomic<bool> pool_room_{false};
  // True while the thread is (about to be) in epoll_wait: notify() and on_room() then write
  // event_fd_.
  alignas(kCacheLineSize) std::atomic<bool> sleeping_{false};
  std::atomic<bool> stop_requested_{false};  // Shared: set by stop(), read by the loop.
};

}  // namespace numadir::listener
