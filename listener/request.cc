// listener/request.cc: see request.h.
#include "listener/request.h"

#include "base/check.h"
#include "listener/detached_operation.h"
#include "listener/wire/message_encoder.h"

namespace numadir::listener {

Request::Request(Connection& connection, RequestHandler& handler, std::string_view pdu,
                 std::uint64_t number)
    : connection_(connection), handler_(handler), number_(number), pdu_(pdu) {}

Request::~Request() {
  if (started_) {
    connection_.release_from_worker();
  }
}

void Request::run(threadpool::WorkerState& state) {
  // The listener registered the operation (begin_operation) before handing it over, so an
  // Abandon read meanwhile finds it. One abandoned before it starts never runs.
  if (!connection_.is_abandoned(message_.message_id)) {
    handler_.handle(message_, *connection_.session_, *this, state);
  } else {
    handler_.not_run(message_, *connection_.session_, origin());
  }
  // Detached, the request still ends here (its handle() is over) and the open operation it left
  // counts on until it ends; out_ went to the socket when it detached.
  connection_.finish_operation(message_.message_id, out_.view());
  out_.clear();
}

bool Request::may_run_inline() const {
  switch (message_.op) {
    case wire::ProtocolOp::kSearchRequest:
    case wire::ProtocolOp::kCompareRequest:
    case wire::ProtocolOp::kBindRequest:
      return true;
    default:
      return false;  // Updates wait for the single writer; extended operations may write.
  }
}

void Request::send(const wire::LdapMessage& response) {
  NUMADIR_DCHECK(!detached_, "ResponseSink::send after detach");
  wire::encode_message(response, out_);
  if (out_.size() >= kFlushBytes) {
    connection_.send_bytes(out_.view());
    out_.clear();
  }
}

bool Request::abandoned() const { return connection_.is_abandoned(message_.message_id); }

std::unique_ptr<OpenOperation> Request::detach() {
  NUMADIR_DCHECK(!detached_, "ResponseSink::detach called twice");
  detached_ = true;
  // What was sent so far goes first: the open operation's messages queue behind it.
  if (out_.size() > 0) {
    connection_.send_bytes(out_.view());
    out_.clear();
  }
  return std::make_unique<DetachedOperation>(connection_, message_.message_id);
}

}  // namespace numadir::listener
