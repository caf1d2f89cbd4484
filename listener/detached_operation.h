// listener/detached_operation.h: DetachedOperation, the listener's OpenOperation: what
// Request::detach() hands a handler that keeps its operation open past handle().
//
// send() queues whatever it is given; writable() compares the connection's queued bytes with
// its output bound, and set_on_writable() keeps its callback in the OpenSlot beside on_end,
// for the owner to hand to its pool once the output drained ("Output backpressure" in
// request_handler.h).
//
// Thread contract: as OpenOperation (listener/request_handler.h): its holder calls it from any
// thread, one call at a time, and destroys it on any thread. It holds a reference to its
// Connection from construction to destruction, so the connection outlives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "listener/connection.h"
#include "listener/request_handler.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/ldap_message.h"

namespace numadir::listener {

class DetachedOperation final : public OpenOperation {
 public:
  // Registers the operation of request `message_id` on `connection` (Connection::open_operation).
  // Requires: the caller holds a reference to `connection` (the request being handled).
  DetachedOperation(Connection& connection, std::int32_t message_id);
  DetachedOperation(const DetachedOperation&) = delete;
  DetachedOperation& operator=(const DetachedOperation&) = delete;
  ~DetachedOperation() override;

  void send(const wire::LdapMessage& message) override;
  void finish(const wire::LdapMessage& last_message) override;
  bool abandoned() const override;
  void set_on_end(std::function<void()> on_end) override;
  bool writable() const override;
  void set_on_writable(std::function<void(threadpool::WorkerState&)> resume) override;
  void set_gather_bytes(std::size_t bytes) override;

 private:
  // Queues what out_ gathered, if anything.
  void send_gathered();

  Connection& connection_;
  OpenSlot slot_;  // Guarded by the connection's lock (OpenSlot).
  // Owner: the holder's thread of the moment (one call at a time); the encoded messages not
  // queued yet (one, or those gathered).
  wire::BerWriter out_;
  std::size_t gather_bytes_ = 0;  // Owner: the holder. set_gather_bytes().
  bool finished_ = false;         // Owner: the holder. finish() was called.
};

}  // namespace numadir::listener
