// listener/request.h: one decoded request of a connection, on its way from the listener to a
// worker: the PDU's bytes (the decoded message views into them), the connection it came on,
// and the response buffer the handler's results are encoded into.
//
// Thread contract: created and decoded by the connection's listener thread; run() and the
// destructor on the thread that took it from the pool: a worker, or a listener helping the pool
// (any node listener, not only the connection's own), or the listener for a request dropped
// unrun. A started Request holds a reference to its Connection until it is destroyed. An
// operation the handler keeps open (detach()) holds a reference of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "listener/connection.h"
#include "listener/request_handler.h"
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

class Request final : public threadpool::Task, private ResponseSink {
 public:
  // A request's own storage comes from a recycler too (the object is made for each PDU).
  static void* operator new(std::size_t size);
  static void operator delete(void* pointer, std::size_t size);

  // `number`: the request's on its connection (RequestOrigin::number); `received_ns`: when its
  // bytes were read (RequestOrigin::received_ns; 0 unless stamped).
  Request(Connection& connection, RequestHandler& handler, std::string_view pdu,
          std::uint64_t number, std::int64_t received_ns = 0);
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  // Drops the connection reference of a started request (telling the owner if it watches);
  // gives the buffers back.
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
  // Searches, compares and binds: reads that never wait for the writer or the disk. A bind run
  // inline that meets a costly stored password detaches and hands the hash to a worker
  // (WorkerState::helping(); server/operations/bind_operation.h), so none runs on a listener.
  bool may_run_inline() const override;

 private:
  // Responses bigger than this go to the socket while the handler is still producing them.
  static constexpr std::size_t kFlushBytes = 64 * 1024;

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
  std::unique_ptr<RequestBuffers> buffers_;
};

}  // namespace numadir::listener
