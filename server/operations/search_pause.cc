// server/operations/search_pause.cc: see search_pause.h.
#include "server/operations/search_pause.h"

#include <cstdio>
#include <functional>
#include <utility>

#include "listener/wire/ber_writer.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "server/operations/operation_access.h"

namespace numadir::server {

void PausedSearch::pause(const OperationContext& context,
                         const listener::wire::LdapMessage& request, const Identity& who,
                         ServerSession& session, const backend::SearchSpec& spec,
                         std::uint64_t size_limit, const SearchEntrySender::Progress& progress,
                         SearchPage::Saved page, std::unique_ptr<backend::ReadTxn> txn,
                         ResultSender& sender) {
  std::unique_ptr<listener::OpenOperation> open = sender.detach();
  if (open == nullptr) {
    // Only a sink with an output bound says it is not writable, and such a sink can keep an
    // operation open: reaching here is a bug, answered rather than left hanging.
    std::fprintf(stderr, "numadir: search (message %d): paused on a sink that cannot detach\n",
                 request.message_id);
    sender.send_result(OwnedResult::error(listener::wire::ResultCode::kOther, "internal error"));
    return;
  }
  std::shared_ptr<PausedSearch> paused(new PausedSearch(context, std::move(open), who, session));
  copy_request(request, paused->pdu_, paused->request_);
  paused->spec_ = spec;
  paused->spec_.filter = nullptr;
  paused->size_limit_ = size_limit;
  paused->progress_ = progress;
  paused->page_ = std::move(page);
  paused->txn_ = std::move(txn);
  paused->wait();
}

PausedSearch::PausedSearch(const OperationContext& context,
                           std::unique_ptr<listener::OpenOperation> open, const Identity& who,
                           ServerSession& session)
    : context_(context), open_(std::move(open)), who_(who), session_(session) {}

void copy_request(const listener::wire::LdapMessage& request, std::string& pdu,
                  listener::wire::LdapMessage& out) {
  listener::wire::BerWriter writer;
  listener::wire::encode_message(request, writer);
  pdu = std::string(writer.view());
  // It decoded once with the listener's limits; the depth bound is the decoder's default.
  const Status decoded = listener::wire::decode_message(pdu, out, {});
  NUMADIR_CHECK(decoded.ok(), "a request does not decode after encoding");
}

void PausedSearch::wait() {
  open_->set_on_writable([self = shared_from_this()](threadpool::WorkerState& state) {
    // The pool's worker states are the handler's (OperationHandler::make_worker_state).
    self->go_on(static_cast<ServerWorkerState&>(state));
  });
}

void PausedSearch::go_on(ServerWorkerState& state) {
  OpenOperationSink sink(*open_);
  ResultSender sender(request_, sink);
  if (sender.abandoned()) {
    return;  // Released with this object: the operation ends without a response.
  }
  const OperationAccess access(context_, state, who_);
  PagedRequest paged;
  (void)parse_paged(request_, paged);  // Parsed when the search began.
  SearchPage page(paged, session_);
  page.restore(page_);
  schema::Filter restricted;
  const schema::Filter& filter =
      restrict_typeless_items(request_.search_request.filter, who_.root, restricted);
  spec_.filter = &filter;
  spec_.resume_at = progress_.resume;  // Where it paused, if it can be told.
  // Paused before it handled an entry, it starts afresh in the worker's transaction.
  backend::ReadTxn& txn = txn_ != nullptr ? *txn_ : state.txn();
  SearchEntrySender entries(context_, access, state, request_, filter, size_limit_, page, sender,
                            txn, progress_);
  const Status status = context_.directory().search(txn, spec_, std::ref(entries));
  spec_.filter = nullptr;
  if (entries.paused()) {
    progress_ = entries.progress();
    if (entries.pinned() && txn_ == nullptr) {
      txn_ = state.take_txn();
    }
    wait();
    return;
  }
  send_search_done(status, entries, access, page, sender);
}

}  // namespace numadir::server
