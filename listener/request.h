// listener/request.h: one decoded request of a connection, on its way from the listener to a
// worker: the PDU's bytes (the decoded message views into them), the connection it came on,
// and the response buffer the handler's results are encoded into.
//
// A request's storage and buffers are recycled (base/recycler.h) through the caches of the
// thread that holds it (listener/request_worker_state.h): the listener makes it from its own
// state's caches; the thread that ran it retires it (Task::retire) into its state's; the
// listener drops one it carried out itself or never started back into its own.
//
// Thread contract: created and decoded by the connection's listener thread; run() and retire()
// on the thread that took it from the pool: a worker, or a listener helping the pool (any node
// listener, not only the connection's own); dropped (OwnedRequest) by the listener that made it.
// A started Request holds a reference to its Connection until it is destroyed. An operation the
// handler keeps open (detach()) holds a reference of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "listener/connection.h"
#include "listener/request_handler.h"
#include "listener/request_worker_state.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "threadpool/worker_pool.h"

namespace numadir::listener {

// What a request owns and grows: its PDU's bytes, the decoded message (views into them) and the
// encoded responses. Recycled (base/recycler.h) with the capacity they grew to, so steady
// traffic decodes and encodes without allocating.
struct RequestBuffers {
  std::string pdu;
  wire::LdapMessage message;
  wire::BerWriter out;
};

class Request;

// Drops a request its listener holds into `caches`, the listener's own, which it was made from.
struct OwnedRequestDeleter {
  RequestCaches* caches = nullptr;
  void operator()(Request* request) const;
};

// A request as the listener that made it holds it, from its decoding until it goes to the pool
// (released into a threadpool::Task, which the pool retires) or is dropped: one the listener
// carries out itself (Unbind, Abandon, StartTLS), that does not decode, or that is dropped unrun.
// Owner: the listener thread.
using OwnedRequest = std::unique_ptr<Request, OwnedRequestDeleter>;

class Request final : public threadpool::Task, private ResponseSink {
 public:
  // Returns: a request of `pdu` read on `connection`, its storage and buffers taken from
  //   `caches` (the calling listener's state's), to which it goes back if dropped.
  // `number`: the request's on its connection (RequestOrigin::number); `received_ns`: when its
  // bytes were read (RequestOrigin::received_ns; 0 unless stamped).
  static OwnedRequest make(RequestCaches& caches, Connection& connection, RequestHandler& handler,
                           std::string_view pdu, std::uint64_t number,
                           std::int64_t received_ns = 0);
  // A request's own storage comes from a recycler too (the object is made for each PDU): only
  // make() makes one. One deleted rather than retired or dropped (queued in a pool destroyed
  // before it ran) gives its storage and buffers straight to the recyclers' depots.
  static void* operator new(std::size_t size) = delete;
  static void operator delete(void* pointer, std::size_t size);

  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  // Drops the connection reference of a started request (telling the owner if it watches).
  ~Request() override;

  // Owner: the request is being handed to a worker: it takes a reference on the connection,
  // which a worker drops when done. cancel_start() undoes it when the pool refused the request.
  void start() {
    connection_.add_ref();
    started_ = true;
  }
  void cancel_start() {
    connection_.release_from_owner();
    started_ = false;
  }

  // Errors: kMalformed from the decoder.
  Status decode(const wire::DecodeLimits& limits) {
    return wire::decode_message(buffers_->pdu, buffers_->message, limits);
  }
  const wire::LdapMessage& message() const { return buffers_->message; }
  // Its number on the connection, its bytes and when they were read (also what its handler's
  // sink says).
  RequestOrigin origin() const override { return {number_, buffers_->pdu, received_ns_}; }

  // Worker (or helping listener): runs the handler with the thread's `state` and writes its
  // responses.
  void run(threadpool::WorkerState& state) override;
  // Worker (or helping listener), after run(): destroys the request, its storage and buffers
  // back into the caches of `state`. Requires: `state` is a RequestWorkerState (every state the
  // handler makes is one).
  void retire(threadpool::WorkerState& state) override;
  // Searches, compares and binds: reads that never wait for the writer or the disk. A bind run
  // inline that meets a costly stored password detaches and hands the hash to a worker
  // (WorkerState::helping(); server/operations/bind_operation.h), so none runs on a listener.
  bool may_run_inline() const override;

 private:
  // Responses bigger than this go to the socket while the handler is still producing them.
  static constexpr std::size_t kFlushBytes = 64 * 1024;

  friend struct OwnedRequestDeleter;

  Request(RequestCaches& caches, Connection& connection, RequestHandler& handler,
          std::string_view pdu, std::uint64_t number, std::int64_t received_ns);
  // Destroys the request, its storage and buffers back into `caches` (the calling thread's).
  void end(RequestCaches& caches);

  void send(const wire::LdapMessage& response) override;
  bool abandoned() const override;
  bool writable() const override { return connection_.writable(); }
  std::unique_ptr<OpenOperation> detach() override;

  Connection& connection_;
  RequestHandler& handler_;
  bool started_ = false;
  bool detached_ = false;  // The handler keeps the operation open (detach()).
  const std::uint64_t number_;
  const std::int64_t received_ns_;
  std::unique_ptr<RequestBuffers> buffers_;  // Given back by end(), or else by the destructor.
};

}  // namespace numadir::listener
