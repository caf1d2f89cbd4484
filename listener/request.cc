// listener/request.cc: see request.h.
#include "listener/request.h"

#include <new>

#include "base/check.h"
#include "base/recycler.h"
#include "listener/detached_operation.h"
#include "listener/wire/message_encoder.h"

namespace numadir::listener {

// The memory of one Request (Request::make constructs it there).
struct alignas(Request) RequestStorage {
  std::byte bytes[sizeof(Request)];
};

namespace {

// Buffers grown past these are not recycled: a large request or result does not pin its size.
constexpr std::size_t kKeptPduBytes = 4 * 1024;
constexpr std::size_t kKeptOutBytes = 64 * 1024;
// Recycled objects kept beyond the threads' caches: about the requests in flight at a peak.
constexpr std::size_t kKeptRequests = 4096;

Recycler<RequestBuffers>& buffer_recycler() {
  static Recycler<RequestBuffers> recycler(kKeptRequests);
  return recycler;
}

Recycler<RequestStorage>& storage_recycler() {
  static Recycler<RequestStorage> recycler(kKeptRequests);
  return recycler;
}

// Keeps `buffers` for another request: in `cache` (the calling thread's) or, without one, in
// the depot. Buffers a large request or result grew (the decoded members may have grown with
// the PDU) are freed rather than kept: recycled ones keep the sizes steady traffic needs.
void keep_buffers(std::unique_ptr<RequestBuffers> buffers, Recycler<RequestBuffers>::Cache* cache) {
  if (buffers->pdu.capacity() > kKeptPduBytes || buffers->out.capacity() > kKeptOutBytes) {
    return;
  }
  buffers->pdu.clear();
  buffers->out.clear();
  if (cache != nullptr) {
    buffer_recycler().give(*cache, std::move(buffers));
  } else {
    buffer_recycler().give(std::move(buffers));
  }
}

}  // namespace

RequestCaches::RequestCaches() = default;
RequestCaches::~RequestCaches() = default;

void OwnedRequestDeleter::operator()(Request* request) const { request->end(*caches); }

OwnedRequest Request::make(RequestCaches& caches, Connection& connection, RequestHandler& handler,
                           std::string_view pdu, std::uint64_t number, std::int64_t received_ns) {
  std::byte* const storage = storage_recycler().take(caches.storage).release()->bytes;
  Request* const request =
      ::new (storage) Request(caches, connection, handler, pdu, number, received_ns);
  return OwnedRequest(request, OwnedRequestDeleter{&caches});
}

void Request::operator delete(void* pointer, std::size_t /*size*/) {
  storage_recycler().give(std::unique_ptr<RequestStorage>(static_cast<RequestStorage*>(pointer)));
}

Request::Request(RequestCaches& caches, Connection& connection, RequestHandler& handler,
                 std::string_view pdu, std::uint64_t number, std::int64_t received_ns)
    : connection_(connection),
      handler_(handler),
      number_(number),
      received_ns_(received_ns),
      buffers_(buffer_recycler().take(caches.buffers)) {
  buffers_->pdu.assign(pdu);
}

Request::~Request() {
  if (started_) {
    connection_.release_from_worker();
  }
  if (buffers_ != nullptr) {
    keep_buffers(std::move(buffers_), nullptr);  // Deleted, not ended: no thread's cache.
  }
}

void Request::end(RequestCaches& caches) {
  keep_buffers(std::move(buffers_), &caches.buffers);
  void* const storage = this;
  this->~Request();
  storage_recycler().give(caches.storage,
                          std::unique_ptr<RequestStorage>(static_cast<RequestStorage*>(storage)));
}

void Request::retire(threadpool::WorkerState& state) {
  NUMADIR_DCHECK(dynamic_cast<RequestWorkerState*>(&state) != nullptr,
                 "Request::retire: a worker state that is not a RequestWorkerState");
  end(static_cast<RequestWorkerState&>(state).request_caches());
}

void Request::run(threadpool::WorkerState& state) {
  // The listener registered the operation (begin_operation) before handing it over, so an
  // Abandon read meanwhile finds it. One abandoned before it starts never runs.
  const wire::LdapMessage& message = buffers_->message;
  if (!connection_.is_abandoned(message.message_id)) {
    handler_.handle(message, connection_.session(), *this, state);
  } else {
    handler_.not_run(message, connection_.session(), origin());
  }
  // Detached, the request still ends here (its handle() is over) and the open operation it left
  // counts on until it ends; the responses went to the socket when it detached.
  connection_.finish_operation(message.message_id, buffers_->out.view());
  buffers_->out.clear();
}

bool Request::may_run_inline() const {
  switch (buffers_->message.op) {
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
  wire::BerWriter& out = buffers_->out;
  wire::encode_message(response, out);
  if (out.size() >= kFlushBytes) {
    connection_.send_bytes(out.view());
    out.clear();
  }
}

bool Request::abandoned() const { return connection_.is_abandoned(buffers_->message.message_id); }

std::unique_ptr<OpenOperation> Request::detach() {
  NUMADIR_DCHECK(!detached_, "ResponseSink::detach called twice");
  detached_ = true;
  // What was sent so far goes first: the open operation's messages queue behind it.
  wire::BerWriter& out = buffers_->out;
  if (out.size() > 0) {
    connection_.send_bytes(out.view());
    out.clear();
  }
  return std::make_unique<DetachedOperation>(connection_, buffers_->message.message_id);
}

}  // namespace numadir::listener
