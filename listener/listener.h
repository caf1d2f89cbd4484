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
#include "listener/connection_rules.h"
#include "listener/frontend_snapshot.h"
#include "listener/listener_shared.h"
#include "listener/owned_connection.h"
#include "listener/owner_thread.h"
#include "listener/request_handler.h"
#include "listener/request_worker_state.h"
#include "listener/tls.h"
#include "threadpool/node_memory.h"
#include "threadpool/thread_counters.h"
#include "threadpool/worker_pool.h"

namespace numadir::listener {

class Listener final : public ConnectionNotifier, private threadpool::RoomWaiter {
 public:
  // The notices (notify()) the mailbox holds before they fall back to a look at every
  // connection.
  static constexpr std::size_t kMailboxCapacity = 65000;

  // Takes ownership of `listen_fds` (bound, listening, non-blocking sockets, in listen URL
  // order; -1 for a URL this listener does not accept on: an ldapi:// one another listener has).
  // Requests go to `pool` (its NUMA node's), whose workers' states must be made by the handler
  // (shared.handler->make_worker_state(), Frontend's pool factory), as the listener's own is:
  // each thread retires the requests it ran into its state's caches. The thread pins itself to
  // PU `pin` when given, then binds its memory as `memory` says (when active), before it accepts:
  // the connections, their buffers and what the thread allocates come from its node. What the
  // constructor allocates (the mailbox, the read buffer) comes from the constructing thread's node
  // (Frontend builds a node's listeners with threadpool::build_on_node). A test may give a smaller
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
  // Makes the calling thread the listener's, with its state (made the first time).
  void claim_thread();
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
  void on_readable(OwnedConnection& connection);
  // The client ended the connection (EOF, close_notify) or it failed (a reset, TLS): reads what it
  // had buffered, then closes, for `reason` unless what it read decided otherwise (an Unbind).
  void close_after_input(OwnedConnection& connection, CloseReason reason);
  // Lets the rules start or hold what the connection read, and carries out what they ask.
  void pump(OwnedConnection& connection);
  // The pool refused `connection`'s request: retries once the pool says it has room.
  void wait_for_pool(OwnedConnection& connection);
  // Stops reading and ends what is outstanding; the connection is destroyed (and its fd closed)
  // once no worker or open operation holds it, and counted in counters_.closed under its
  // close_reason: `reason`, unless one was decided before (OwnedConnection::decide_close).
  void begin_close(OwnedConnection& connection, CloseReason reason);
  void set_interest(OwnedConnection& connection);
  // Sets connection.want_output (EPOLLOUT wanted: the socket was full), counting the
  // connections that wait, and starts the write timeout's clock.
  void set_want_output(OwnedConnection& connection, bool want);
  // The output drained to half its bound: hands the paused producers' on_writable to the pool
  // and, once unpaused, reads and pumps the connection again.
  void resume_output(OwnedConnection& connection);
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
  // handler's connection events, made by the handler on this thread (claim_thread()) and
  // destroyed by run() once every connection is closed. The requests the thread makes come from
  // its caches, and the ones it retires or drops go back there.
  std::unique_ptr<RequestWorkerState> state_;
  // The time this round's reads are stamped with (InputStamps), 0 until the round's first read.
  std::int64_t round_ns_ = 0;
  ConnectionRules rules_;  // Owner: listener thread.
  // Owner: listener thread.
  std::unordered_map<std::uint64_t, std::unique_ptr<OwnedConnection>> connections_;
  std::unique_ptr<char[]> read_buffer_;  // Owner: listener thread.
  // Owner: listener thread. The input buffer lent to a connection that has no partial request
  // while it reads (on_readable), so an idle connection holds none.
  std::string lent_input_;
  std::vector<std::unique_ptr<OwnedConnection>> graveyard_;  // Owner: listener thread. Closed ones,
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
