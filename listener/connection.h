// listener/connection.h: one client connection as its listener and the workers answering it
// share it: its socket, its Session, the operations it has open (OpenOperation), the abandon
// marks and the output. What only its listener thread touches (the input, the requests held
// back, the rules' and timers' state) is in OwnedConnection (listener/owned_connection.h),
// which holds the Connection.
//
// Thread contract: a Connection is created, read, closed and destroyed by the listener thread
// that accepted it (its "owner"; debug builds check the owner-only methods). Workers answering
// its requests and holders of its open operations use only the members marked "Shared": the
// output path (send_bytes), the abandon marks, the open-operation calls and the reference
// word; what they must tell the owner goes through its ConnectionNotifier. The listener closes
// fd_ and destroys the Connection only once no worker or open operation holds it (refs() == 1:
// only the listener's own reference left), so a reused fd never receives another connection's
// bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_annotations.h"
#include "listener/frontend_snapshot.h"
#include "listener/owner_thread.h"
#include "listener/request_handler.h"
#include "listener/tls.h"

namespace numadir::listener {

// What another thread tells the connection's owner: the one call a worker, a helper or the
// holder of an open operation needs. Implemented by the Listener.
class ConnectionNotifier {
 public:
  // Any thread: asks the owner to look at connection `connection_id` again (a reference or an
  //   operation went while it watched, an operation's end is due, or the output blocked or
  //   failed). Never blocks.
  virtual void notify(std::uint64_t connection_id) = 0;

 protected:
  ~ConnectionNotifier() = default;
};

// An open operation as its connection sees it (listener/detached_operation.h holds it). Every
// field is guarded by the connection's lock; state is also read without it (abandoned()).
struct OpenSlot {
  enum class State : std::uint8_t {
    kOpen,      // Outstanding: counted in Connection::operations().
    kFinished,  // By its holder: finish(), or released unfinished. on_end never runs.
    kEnded,     // By the owner: abandoned, unbound or closed. on_end runs once.
  };
  std::int32_t message_id = 0;
  std::atomic<State> state{State::kOpen};
  bool end_told = false;  // on_end was taken to be run.
  std::function<void()> on_end;
  // Set while the holder waits for the output to drain (OpenOperation::set_on_writable).
  std::function<void(threadpool::WorkerState&)> on_writable;
};

// What a connection's owner hands its pool once the output drained: an OpenSlot's on_writable.
using WritableResume = std::function<void(threadpool::WorkerState&)>;

class Connection {
 public:
  // What an idle connection keeps of each of its buffers (input, output, the writer's): an
  // auth's requests and responses fit, so steady auth traffic allocates nothing, and a
  // connection that once carried a large request or result does not hold its size as it idles.
  static constexpr std::size_t kIdleKeptBytes = 1024;
  // Frees `buffer` (empty) if it holds more than kIdleKeptBytes.
  static void release_if_large(std::string& buffer) {
    if (buffer.capacity() > kIdleKeptBytes) {
      std::string().swap(buffer);
    }
  }

  // Owner thread: the calling thread becomes the owner.
  Connection(int fd, ConnectionInfo info, ConnectionNotifier& owner);
  // Owner, before any output: the output bound (ListenerLimits::max_output_bytes). Default:
  // none.
  void set_output_bound(std::size_t bytes) {
    NUMADIR_DCHECK_OWNER(owner_thread_);
    output_bound_ = bytes;
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();  // Owner thread, with refs() == 1. Closes fd_.

  int fd() const { return fd_; }
  std::uint64_t id() const { return info_.id; }
  const ConnectionInfo& info() const { return info_; }

  // --- Shared: any thread holding a reference. ---

  // Appends response bytes in order and writes them now when the output is idle (the caller
  // becomes the writer); when the socket is full, the rest waits for the owner's EPOLLOUT.
  // Never refuses: the bound (set_output_bound) is for producers to check (writable()).
  void send_bytes(std::string_view bytes);
  // Returns: whether the bytes queued and not yet taken by the socket are within the bound.
  bool writable() const { return queued_bytes_.load(std::memory_order_relaxed) <= output_bound_; }
  // Returns: whether they are within half of it: paused producers and reading go on.
  bool drained() const {
    return queued_bytes_.load(std::memory_order_relaxed) <= output_bound_ / 2;
  }
  std::size_t queued_bytes() const { return queued_bytes_.load(std::memory_order_relaxed); }
  // Returns: every byte the socket has taken so far (the owner watches it for progress).
  std::uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }
  // Owner, on EPOLLOUT: writes what is pending. Returns true when all is written.
  bool flush_from_owner();

  // References: the owner's (1, until close) plus one per request taken by a worker and one per
  // open operation. The "watch" bit asks the thread that drops a reference to tell the owner
  // (ConnectionNotifier::notify), which then finishes closing the connection.
  void add_ref() { state_.fetch_add(kRefUnit, std::memory_order_relaxed); }
  // Owner: takes back a reference it added for a request the pool refused.
  void release_from_owner() {
    NUMADIR_DCHECK_OWNER(owner_thread_);
    state_.fetch_sub(kRefUnit, std::memory_order_seq_cst);
  }
  // Drops a worker's reference; tells the owner when it watches. The Connection may be
  // destroyed by the owner as soon as this returns: the caller must not touch it after.
  void release_from_worker();
  // Owner: sets the watch bit. Returns: the references held now.
  std::uint64_t watch();
  std::uint64_t refs() const { return state_.load(std::memory_order_seq_cst) >> 1; }

  // Operations outstanding (handed to a worker, last response not yet queued): what the
  // per-connection rules count. An operation ends when its last bytes are queued for the socket,
  // before they are written, so a client that reacts to a response never finds the operation
  // still outstanding. With the watch bit set, the worker that ends one tells the owner, which
  // then runs the requests it held back. An open operation counts until it ends (OpenOperation);
  // while the handle() that opened it runs, it counts twice (its request and itself).
  std::uint64_t operations() const { return ops_.load(std::memory_order_seq_cst) >> 1; }
  // Owner: sets the watch bit. Returns: the operations outstanding now.
  std::uint64_t watch_operations() {
    NUMADIR_DCHECK_OWNER(owner_thread_);
    return ops_.fetch_or(kWatchBit, std::memory_order_seq_cst) >> 1;
  }
  void unwatch_operations() {
    NUMADIR_DCHECK_OWNER(owner_thread_);
    ops_.fetch_and(~kWatchBit, std::memory_order_seq_cst);
  }

  // Abandon marks: AbandonRequest marks one message ID, Unbind / close mark everything. Owner:
  // both also end the open operations they mark, and run their on_end on the calling thread.
  // abandon() returns: whether an operation with that message ID was outstanding (running or
  // open); if not, nothing was marked.
  bool abandon(std::int32_t message_id);
  void abandon_all();
  bool is_abandoned(std::int32_t message_id) const;
  // Owner: registers an operation before a worker may run it (so an Abandon finds it).
  void begin_operation(std::int32_t message_id);
  // Owner: takes back an operation the pool refused.
  void cancel_operation(std::int32_t message_id);
  // Worker: queues the operation's last response bytes, ends the operation (telling the owner
  // if it watches) and writes them when the output is idle.
  void finish_operation(std::int32_t message_id, std::string_view last_bytes);

  // --- Open operations (Shared: the holder's thread, one call at a time per slot). ---

  // A worker running the request `slot.message_id` keeps it open: registers `slot`, takes a
  // reference for it and counts it as outstanding, unless it was abandoned already (then it is
  // born ended). Requires: the caller holds a reference (its Request's).
  void open_operation(OpenSlot& slot);
  // Queues `bytes` for the socket, unless the slot is no longer open.
  void send_open(OpenSlot& slot, std::string_view bytes);
  // Queues `last_bytes` and ends the slot's operation, unless it is no longer open.
  void finish_open(OpenSlot& slot, std::string_view last_bytes);
  // Sets `on_end`; when the slot ended already and its on_end was not run, asks the owner to run
  // it (run_due_ends).
  void set_on_end(OpenSlot& slot, std::function<void()> on_end);
  // The holder released the operation: ends it without a response if it is open, unregisters
  // the slot and drops its reference. The Connection may be destroyed by the owner as soon as
  // this returns: the caller must not touch it after.
  void close_open(OpenSlot& slot);
  // Owner: runs the on_end of every ended slot whose on_end was set after it ended.
  void run_due_ends();
  // Sets the slot's on_writable (OpenOperation::set_on_writable); tells the owner at once when
  // the output has drained already. Dropped (destroyed unlocked) if the slot is not open.
  void set_on_writable(OpenSlot& slot, WritableResume resume);
  // Owner: marks the output paused (output_paused_) if the queue is past the bound now.
  // Returns: whether it did. While it is marked, a writer that drains the queue tells the owner.
  bool pause_output();
  // Owner: clears the mark (the owner read drained()).
  void unpause_output();
  // Owner: when drained(), moves every open slot's on_writable into `out`, for the owner to
  // hand to its pool.
  void take_due_writables(std::vector<WritableResume>& out);

  bool output_failed() const { return output_failed_.load(std::memory_order_acquire); }
  // Owner, once output_failed(): why: kTlsFailure when TLS could not encrypt, kClient when the
  // peer was gone (EPIPE, ECONNRESET), kOther for another socket error.
  CloseReason output_failure() const;
  // Returns: true when the socket was full and the owner must write on EPOLLOUT.
  bool output_blocked() const;

  // --- TLS (owner thread only): responses are encrypted by whoever queues them. ---

  // Starts TLS: every byte queued after this is encrypted, every byte read is to be fed to
  // tls_input(). Bytes queued before (a StartTLS response) go out in plaintext, in order.
  void start_tls(std::unique_ptr<TlsChannel> channel);
  bool tls_started() const { return tls_started_; }
  // Feeds ciphertext read from the socket: appends the plaintext to `plain` (the owner's input
  // buffer, OwnedConnection::input) and sends what TLS has to send (handshake messages, alerts).
  TlsChannel::InputResult tls_input(std::string_view cipher, std::string& plain);
  // Returns: whether the handshake has finished; its peer (Requires: it has) and the failure.
  bool tls_handshake_done() const;
  TlsPeer tls_peer() const;
  std::string tls_error() const;

  // --- Owner thread only. ---

  // Owner, before any request of the connection starts: the server's state of it, which the
  // workers running its requests borrow (session()). Destroyed with the connection.
  void set_session(std::unique_ptr<Session> session) {
    NUMADIR_DCHECK_OWNER(owner_thread_);
    session_ = std::move(session);
  }
  // Any thread holding a reference, once set_session() was called.
  Session& session() const { return *session_; }
  // Owner: whether pause_output() marked the output paused (and unpause_output() did not clear
  // it since): nothing of the connection is read or started meanwhile.
  bool output_paused() const { return output_paused_; }

 private:
  static constexpr std::uint64_t kWatchBit = 1;
  static constexpr std::uint64_t kRefUnit = 2;

  // Writes `out_` until done or EAGAIN, as the single writer. Returns true when all is written.
  bool write_pending();
  // Appends response bytes to out_, encrypted once TLS has started; a TLS failure fails the
  // output.
  void append_output(std::string_view bytes) NUMADIR_REQUIRES(mu_);
  // Removes `message_id` from the running and abandoned lists.
  void forget_operation(std::int32_t message_id) NUMADIR_REQUIRES(mu_);
  // What queue_output made of the caller.
  enum class Queued : std::uint8_t {
    kQueued,  // The bytes wait in out_ (or were none): someone else writes them.
    kWriter,  // The bytes wait in out_ and the caller is the writer (write_as_writer).
    kDirect,  // Nothing waited: the caller is the writer of its bytes, not copied (write_direct).
  };
  // Queues `bytes` (none: nothing) and, if no one writes yet, makes the caller the writer.
  // Sets `crossed` when these bytes took the queue past the bound (the caller tells the owner).
  Queued queue_output(std::string_view bytes, bool& crossed) NUMADIR_REQUIRES(mu_);
  // After queueing, unlocked: tells the owner of a crossing, then writes as the writer.
  void after_queue(Queued queued, bool crossed, std::string_view bytes);
  // Writes `bytes` from the caller's buffer, as the writer; what the socket does not take goes to
  // the front of out_ for the owner's EPOLLOUT. Then writes what was queued meanwhile.
  void write_direct(std::string_view bytes);
  // The socket took `bytes` more of the queue (the writer only).
  void took(std::size_t bytes);
  // As the writer: sends `bytes` from `done` on. Returns: true when all are sent; false when
  // the socket took no more (send_errno_ says why). Counts what it took.
  bool send_from(std::string_view bytes, std::size_t& done);
  // As the writer, after send_from failed: keeps `rest` at the front of out_ for the owner's
  // EPOLLOUT when the socket was full, or fails the output.
  void keep_unsent(std::string_view rest) NUMADIR_REQUIRES(mu_);
  // The socket failed: nothing more goes out.
  void fail_output() NUMADIR_REQUIRES(mu_);
  // Writes as the writer; tells the owner when the socket blocked or failed.
  void write_as_writer();
  // Ends the open operations `message_id` names (nullopt: every one);
  // moves their on_end into `due`, for the caller to run once unlocked, and their on_writable
  // into `dropped`, for the caller to destroy once unlocked.
  // Returns: how many it ended.
  std::size_t end_open_locked(std::optional<std::int32_t> message_id,
                              std::vector<std::function<void()>>& due,
                              std::vector<WritableResume>& dropped) NUMADIR_REQUIRES(mu_);
  void run_ends(std::vector<std::function<void()>>& due);
  // One operation fewer; tells the owner when it watches. Requires: called once mu_ is released.
  void operation_ended(std::uint64_t before);

  const int fd_;  // Closed by the owner, and only once nothing else holds the connection.
  const ConnectionInfo info_;
  ConnectionNotifier& owner_;  // Any thread: outlives the connection.
  OwnerThread owner_thread_;   // Debug builds: the owner thread, for NUMADIR_DCHECK_OWNER.
  // Shared: references << 1 | watch bit (seq_cst: a worker's release and the owner's watch()
  // must see each other, so either the owner sees the last reference go or the worker sees the
  // watch bit and notifies).
  std::atomic<std::uint64_t> state_{kRefUnit};
  // Shared: outstanding operations << 1 | watch bit (seq_cst, as state_).
  std::atomic<std::uint64_t> ops_{0};
  // Shared: set by the owner (release), read by workers (acquire) before they take mu_.
  std::atomic<bool> abandon_all_{false};
  // Shared: abandoned_ids_.size(), written under mu_ (release) so that is_abandoned() skips the
  // lock while nothing is abandoned.
  std::atomic<std::uint32_t> abandoned_count_{0};
  // Shared: set once by the writer that failed (release); then nothing more is queued.
  std::atomic<bool> output_failed_{false};
  // Shared: bytes in out_ and in the writer's chunk not yet sent (relaxed: a producer's check
  // may be a message late). Grown under mu_, shrunk by the writer as the socket takes them.
  std::atomic<std::size_t> queued_bytes_{0};
  std::atomic<std::uint64_t> bytes_written_{0};  // Shared: written by the writer only.
  std::size_t output_bound_ = SIZE_MAX;          // Set by the owner before any output.
  mutable Mutex mu_;
  std::string out_ NUMADIR_GUARDED_BY(mu_);  // Bytes waiting to be written, in order.
  // Owner: the thread that set writing_ (one at a time); the bytes it is writing now.
  std::string writing_buffer_;
  int send_errno_ = 0;  // Owner: the writer. Why its last send stopped.
  // Why the output failed (output_failure()), set with output_failed_.
  CloseReason output_failure_ NUMADIR_GUARDED_BY(mu_) = CloseReason::kOther;
  bool writing_ NUMADIR_GUARDED_BY(mu_) = false;  // A thread is writing (or EPOLLOUT waits).
  bool blocked_ NUMADIR_GUARDED_BY(mu_) = false;  // The socket was full: the owner writes.
  std::vector<std::int32_t> running_ids_ NUMADIR_GUARDED_BY(mu_);
  std::vector<std::int32_t> abandoned_ids_ NUMADIR_GUARDED_BY(mu_);
  std::vector<OpenSlot*> open_ NUMADIR_GUARDED_BY(mu_);       // Registered, not yet released.
  std::size_t writable_waiters_ NUMADIR_GUARDED_BY(mu_) = 0;  // Slots with an on_writable.
  bool output_paused_mark_ NUMADIR_GUARDED_BY(mu_) = false;   // output_paused_, for writers.
  std::unique_ptr<TlsChannel> tls_ NUMADIR_GUARDED_BY(mu_);   // Set once by the owner.
  bool tls_started_ = false;  // Owner: listener. Whether tls_ is set (read without the lock).
  std::unique_ptr<Session> session_;  // Set once by the owner (set_session); workers borrow it.
  bool output_paused_ = false;        // Owner: listener. output_paused_mark_, read unlocked.
};

}  // namespace numadir::listener
