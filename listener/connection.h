// listener/connection.h: one client connection: its socket, input buffer, the requests waiting
// for their turn, and the output shared with the workers that answer it.
//
// Thread contract: a Connection is created, read, closed and destroyed by the listener thread
// that accepted it (its "owner"). Workers answering its requests use only the members marked
// "Shared": the output path (send_bytes), the abandon marks, and the reference word. The
// listener closes fd_ and destroys the Connection only once no worker holds it (refs() == 1:
// only the listener's own reference left), so a reused fd never receives another connection's
// bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_annotations.h"
#include "listener/request_handler.h"
#include "listener/tls.h"

namespace numadir::listener {

class Listener;
class Request;

class Connection {
 public:
  Connection(int fd, ConnectionInfo info, Listener& owner);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();  // Owner thread, with refs() == 1. Closes fd_.

  int fd() const { return fd_; }
  std::uint64_t id() const { return info_.id; }
  const ConnectionInfo& info() const { return info_; }
  Listener& owner() const { return owner_; }

  // --- Shared: any thread holding a reference. ---

  // Appends response bytes in order and writes them now when the output is idle (the caller
  // becomes the writer); when the socket is full, the rest waits for the owner's EPOLLOUT.
  void send_bytes(std::string_view bytes);
  // Called by the owner on EPOLLOUT: writes what is pending. Returns true when all is written.
  bool flush_from_owner();

  // References: the owner's (1, until close) plus one per request taken by a worker. The
  // "watch" bit asks the worker that drops a reference to tell the owner (Listener::notify),
  // which then finishes closing the connection.
  void add_ref() { state_.fetch_add(kRefUnit, std::memory_order_relaxed); }
  // Owner: takes back a reference it added for a request the pool refused.
  void release_from_owner() { state_.fetch_sub(kRefUnit, std::memory_order_seq_cst); }
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
  // then runs the requests it held back.
  std::uint64_t operations() const { return ops_.load(std::memory_order_seq_cst) >> 1; }
  // Owner: sets the watch bit. Returns: the operations outstanding now.
  std::uint64_t watch_operations() {
    return ops_.fetch_or(kWatchBit, std::memory_order_seq_cst) >> 1;
  }
  void unwatch_operations() { ops_.fetch_and(~kWatchBit, std::memory_order_seq_cst); }

  // Abandon marks: AbandonRequest marks one message ID, Unbind / close mark everything.
  void abandon(std::int32_t message_id);
  void abandon_all() { abandon_all_.store(true, std::memory_order_release); }
  bool is_abandoned(std::int32_t message_id) const;
  // Owner: registers an operation before a worker may run it (so an Abandon finds it).
  void begin_operation(std::int32_t message_id);
  // Owner: takes back an operation the pool refused.
  void cancel_operation(std::int32_t message_id);
  // Worker: queues the operation's last response bytes, ends the operation (telling the owner
  // if it watches) and writes them when the output is idle.
  void finish_operation(std::int32_t message_id, std::string_view last_bytes);

  bool output_failed() const { return output_failed_.load(std::memory_order_acquire); }
  // Returns: true when the socket was full and the owner must write on EPOLLOUT.
  bool output_blocked() const;
  // Bytes written and waiting: a reader that does not read holds this much.
  std::size_t pending_output_bytes() const;

  // --- TLS (owner thread only): responses are encrypted by whoever queues them. ---

  // Starts TLS: every byte queued after this is encrypted, every byte read is to be fed to
  // tls_input(). Bytes queued before (a StartTLS response) go out in plaintext, in order.
  void start_tls(std::unique_ptr<TlsChannel> channel);
  bool tls_started() const { return tls_started_; }
  // Feeds ciphertext read from the socket: appends the plaintext to input_ and sends what TLS
  // has to send (handshake messages, alerts).
  TlsChannel::InputResult tls_input(std::string_view cipher);
  // Returns: whether the handshake has finished; its peer (Requires: it has) and the failure.
  bool tls_handshake_done() const;
  TlsPeer tls_peer() const;
  std::string tls_error() const;

  // --- Owner thread only. ---
  std::string input_;                          // Owner: listener. Bytes read, not yet framed.
  std::deque<std::unique_ptr<Request>> held_;  // Owner: listener. Waiting for their turn.
  std::unique_ptr<Session> session_;           // Owner: listener (workers borrow it).
  bool bind_running_ = false;                  // Owner: listener.
  bool closing_ = false;                       // Owner: listener.
  bool want_output_ = false;                   // Owner: listener. EPOLLOUT registered.
  bool reading_paused_ = false;                // Owner: listener. Backpressure.
  std::int64_t last_read_ms_ = 0;              // Owner: listener. Steady clock, for idle_timeout.
  // Owner: listener. Steady clock: the TLS handshake must be done by then (0: none pending).
  std::int64_t handshake_deadline_ms_ = 0;

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

  const int fd_;
  const ConnectionInfo info_;
  Listener& owner_;
  // Shared: references << 1 | watch bit (seq_cst: a worker's release and the owner's watch()
  // must see each other, so either the owner sees the last reference go or the worker sees the
  // watch bit and notifies).
  std::atomic<std::uint64_t> state_{kRefUnit};
  // Shared: outstanding operations << 1 | watch bit (seq_cst, as state_).
  std::atomic<std::uint64_t> ops_{0};
  std::atomic<bool> abandon_all_{false};
  std::atomic<std::uint32_t> abandoned_count_{0};
  std::atomic<bool> output_failed_{false};
  mutable Mutex mu_;
  std::string out_ NUMADIR_GUARDED_BY(mu_);  // Bytes waiting to be written, in order.
  // Owner: the thread that set writing_ (one at a time); the bytes it is writing now.
  std::string writing_buffer_;
  bool writing_ NUMADIR_GUARDED_BY(mu_) = false;  // A thread is writing (or EPOLLOUT waits).
  bool blocked_ NUMADIR_GUARDED_BY(mu_) = false;  // The socket was full: the owner writes.
  std::vector<std::int32_t> running_ids_ NUMADIR_GUARDED_BY(mu_);
  std::vector<std::int32_t> abandoned_ids_ NUMADIR_GUARDED_BY(mu_);
  std::unique_ptr<TlsChannel> tls_ NUMADIR_GUARDED_BY(mu_);  // Set once by the owner.
  bool tls_started_ = false;                                 // Owner: tls_ != nullptr.
};

}  // namespace numadir::listener
