// perf/auth_worker.h: AuthWorker, one authrate thread: its own epoll loop over its own
// non-blocking connections, each auth a small state machine (search sent -> entry / done ->
// bind sent -> response), closed loop (each slot starts its next auth when one ends) or open
// loop at a fixed rate (latency from the intended send time, so a slow server is not hidden by
// the generator waiting for it).
//
// A slot is one auth in flight: one connection, or two in split mode (search on one, bind on
// the other, as slapd-auth and UnboundID's authrate do). In modify mode a slot is one
// modification in flight on a connection that bound once when it opened. Failures are counted,
// never fatal: a dropped connection is reopened, a refused connect, refused StartTLS or failed TLS
// handshake retried after kConnectRetryMs.
//
// Several servers (WorkerConfig::servers, see auth_servers.h): each connection has its server,
// ServerList::initial() of its number over the run (round-robin), so one worker drives
// connections to several servers. When its server fails (refused connect, reset or closed
// connection, Notice of Disconnection, failed TLS handshake, WorkerConfig::timeout_ms) the
// auth in flight is counted as an error of its kind, as with one server, and the connection
// moves to ServerList::next() (a failover, counted from the server it leaves) and stays
// there; the next server is tried at once, and only a full round of failures in a row waits
// kConnectRetryMs. An auth is counted for the server of the connection that completed it (in
// split mode, the bind's). With --tls-resume a connection that moves forgets its session (it
// was the other server's).
//
// With WorkloadOptions::wrong_percent, each auth of a mode that binds (same, split, bind-only)
// is drawn from the worker's seeded Rng to bind with a wrong password or not. A wrong-password
// bind answered invalidCredentials completes its auth as expected (counted in auths and in
// wrong_password_refused); one answered success is an error (kWrongPasswordAccepted), one
// answered any other code an error under that code, as for a right password.
//
// With TLS (WorkerConfig::tls) each new connection first does StartTLS (if asked) and the TLS
// handshake, non-blocking like everything else (SSL_connect / SSL_read / SSL_write retried on
// the readiness they want), before its first request; with --tls-resume a slot's connection
// offers the session of its previous one. On a persistent connection an auth allocates nothing
// here, in the clear or over TLS; OpenSSL 3.0's record layer itself makes a few small
// allocations per record.
//
// auth_worker.cc holds the loop and the auth state machine, auth_worker_io.cc the sockets, reads
// and writes, auth_worker_tls.cc StartTLS and the handshake; the per-slot state they share is in
// perf/detail/auth_worker.h.
//
// Thread contract: construct on any thread, then run() on exactly one thread, which owns every
// member (connections, buffers, messages) until run() returns; `stats` is written only by that
// thread (see auth_stats.h for who reads it). run() returns once the stop eventfd is readable;
// destroy the worker after run() has returned. The AuthWorkload must outlive the worker.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "perf/auth_servers.h"
#include "perf/auth_stats.h"
#include "perf/auth_workload.h"
#include "perf/tls_client.h"

namespace numadir::perf {

// kModify: no auth cycle; each connection binds once (WorkloadOptions::modify_bind_dn) and
// each operation is a ModifyRequest (AuthWorkload::build_modify), counted as an auth is.
enum class AuthMode : std::uint8_t { kSame, kSplit, kBindOnly, kSearchOnly, kModify };
// Returns: "same", "split", "bind-only", "search-only" or "modify".
std::string_view auth_mode_name(AuthMode mode);
// Errors: kInvalidArgument for any other name.
Result<AuthMode> parse_auth_mode(std::string_view name);

// After a failed connect on every server in turn (one server: after each failed connect), a
// slot waits this long before trying again (no spinning on servers that are down).
inline constexpr std::int64_t kConnectRetryMs = 100;

struct WorkerConfig {
  const AuthWorkload* workload = nullptr;  // Required; outlives the worker.
  // Required; outlives the worker. The servers, each with its address and TLS (ldaps or
  // StartTLS; nullptr: in the clear).
  const ServerList* servers = nullptr;
  // The run-wide number of this worker's first connection (the next worker's is this plus
  // this worker's connections): connection first_connection + k starts on
  // servers->initial(first_connection + k), k = slot (2 * slot + place in split mode).
  int first_connection = 0;
  // A connection not open (connect, StartTLS, handshake), or a request not answered, within
  // this time is dropped as kTimeout (and fails over). 0: no limit. Checked every
  // timeout_ms / 4 (at least 1 ms, at most 250 ms), so a timeout fires up to that late.
  std::int64_t timeout_ms = 0;
  AuthMode mode = AuthMode::kSame;
  int slots = 1;            // Auths in flight (connections: slots, or 2 * slots in split mode).
  bool reconnect = false;   // New connection(s) for every auth.
  double rate_per_sec = 0;  // This worker's open-loop rate; 0 = closed loop.
  std::int64_t rate_start_ns = 0;  // CLOCK_MONOTONIC time of this worker's first intended auth.
  std::uint64_t seed = 1;
  int stop_fd = -1;  // An eventfd (owned by the caller); readable = return from run().
};

// Returns: CLOCK_MONOTONIC now, in nanoseconds.
std::int64_t monotonic_ns();

class AuthWorker {
 public:
  AuthWorker(WorkerConfig config, WorkerStats& stats);
  AuthWorker(const AuthWorker&) = delete;
  AuthWorker& operator=(const AuthWorker&) = delete;
  ~AuthWorker();

  // Runs the loop until the stop eventfd is readable, then closes every connection.
  // Errors: kIo if epoll or timerfd cannot be created (nothing ran).
  Status run();

 private:
  struct Connection;
  struct Slot;

  static std::uint64_t event_tag(const Connection& conn);
  void open_connection(Connection& conn);
  void close_connection(Connection& conn, bool send_unbind);
  void on_event(Connection& conn, std::uint32_t events);
  void on_connected(Connection& conn);
  // The connection is ready for requests: sends the waiting one, if any.
  void connection_ready(Connection& conn);
  // TLS (auth_worker_tls.cc): after the TCP connect, StartTLS or the handshake.
  void start_tls(Connection& conn);
  void on_start_tls_answer(Connection& conn);
  void begin_handshake(Connection& conn);
  void continue_handshake(Connection& conn);
  // Reads into conn.input from the socket or through TLS. Returns: the bytes read; 0 when
  // nothing is there yet; -1 when the connection was dropped (already counted).
  ssize_t read_some(Connection& conn);
  void on_readable(Connection& conn);
  void on_message(Connection& conn);
  void flush(Connection& conn);
  void update_events(Connection& conn);

  // Modify mode: the answer to the connection's bind; sends the slot's modification.
  void on_modify_bind(Slot& slot, Connection& conn, listener::wire::ResultCode code);
  // The answer to a bind made with a wrong password (--wrong-percent).
  void on_wrong_password_answer(Slot& slot, listener::wire::ResultCode code);
  // Sets slot.password for its bind: the user's, or a wrong one when the auth was drawn so.
  void set_bind_password(Slot& slot);
  static std::size_t slot_index(const Slot& slot);
  void start_auth(Slot& slot, std::int64_t intended_ns);
  void advance(Slot& slot);
  void send_request(Slot& slot, Connection& conn);
  void complete_auth(Slot& slot);
  void fail_auth(Slot& slot, std::int32_t result_code);
  // Counts `kind`, closes `conn` and, if it carried the slot's auth, abandons that auth and
  // defers the slot's next one by `delay_ns`.
  void drop(Connection& conn, AuthError kind, std::int64_t delay_ns);
  // As drop(), counting a result code (a refused StartTLS) instead of a kind.
  void drop_with_code(Connection& conn, std::int32_t result_code, std::int64_t delay_ns);
  void abandon_slot_of(Connection& conn, std::int64_t delay_ns);
  // After a failure of conn's server (already closed): moves it to the next server, counting
  // the failover. Returns: the delay before the slot's next try, from `delay_ns` (today's
  // delay for the failure) and the failures in a row (ServerList::retry_delay_ns).
  std::int64_t fail_over(Connection& conn, std::int64_t delay_ns);
  const ServerTarget& server_of(const Connection& conn) const;
  // --timeout: drops the connections whose deadline has passed.
  void expire_timeouts(std::int64_t now_ns);
  void next_auth(Slot& slot);
  void defer(Slot& slot, std::int64_t at_ns);
  void run_timers(std::int64_t now_ns);
  void arm_timer();
  Connection& phase_connection(Slot& slot);

  const WorkerConfig config_;
  WorkerStats& stats_;
  Rng rng_;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  std::int64_t armed_ns_ = 0;        // The timerfd's deadline; 0 = disarmed.
  std::int64_t timeout_ns_ = 0;      // WorkerConfig::timeout_ms; 0 = none.
  std::int64_t sweep_every_ns_ = 0;  // With a timeout: between expire_timeouts() runs.
  std::int64_t next_sweep_ns_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> idle_;       // Open loop: slots waiting for the next intended send time.
  std::vector<Slot*> deferred_;   // Slots waiting for their retry_ns.
  std::int64_t interval_ns_ = 0;  // Open loop: between intended sends.
  std::uint64_t started_ = 0;     // Open loop: auths started (numbered from 0).
  std::uint64_t due_ = 0;         // Open loop: auths whose intended time has come.
  std::uint64_t modifies_ = 0;    // Modify mode: requests sent (each writes a new value).
  // By slot_index(): whether the slot's current auth binds with a wrong password. (Per-slot
  // state; it could as well be a field of Slot, in perf/detail/auth_worker.h.)
  std::vector<std::uint8_t> wrong_password_;
  // By a connection's tag_base (slot index << 1 | place): the server it uses and its failover
  // and timeout state. (Per-connection state; it could as well be fields of Connection.)
  struct Route {
    std::uint8_t server = 0;            // Index in WorkerConfig::servers.
    std::uint32_t failures_in_row = 0;  // Server failures since it was last ready.
    std::int64_t deadline_ns = 0;       // --timeout: to be open, or answered, by then.
  };
  std::vector<Route> routes_;
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;  // Request and response messages, reused.
};

}  // namespace numadir::perf
