// server/operations/search_pause.h: PausedSearch, a directory search that stopped at its
// connection's output bound (listener/request_handler.h, "Output backpressure") and goes on once
// the client has read: it keeps the operation open (listener::OpenOperation), the request, the
// requester's identity and, once it has handled entries, the read transaction whose snapshot it
// pinned, and asks to be run again on a worker when the output has drained. Each run starts the
// backend search again in that snapshot, skips the entries handled before
// (SearchEntrySender::Progress: the same snapshot delivers the same entries in the same order,
// so none is lost or sent twice) and sends on, pausing again if the output fills up, or ends
// with the SearchResultDone. A search paused before its first entry holds no snapshot (the
// searches pipelined behind a full connection cost their request and nothing more) and starts
// afresh.
//
// Thread contract: pause() on the worker running the search; then the PausedSearch belongs to
// the callback it gave OpenOperation::set_on_writable: run on one worker at a time (the
// connection runs each callback once), destroyed with the callback, which the listener drops
// when the operation ends first (abandon, unbind, close). The OperationContext outlives it (the
// listener's stop waits for every open operation); the session does too (the open operation
// holds the connection that owns it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "backend/directory.h"
#include "listener/request_handler.h"
#include "listener/wire/ldap_message.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/search_entries.h"
#include "server/operations/search_paging.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

// Copies `request` into `out`, which views `pdu` (the request encoded again): an operation that
// goes on after handle() keeps its request this way (the listener's views live only during
// handle()).
void copy_request(const listener::wire::LdapMessage& request, std::string& pdu,
                  listener::wire::LdapMessage& out);

class PausedSearch : public std::enable_shared_from_this<PausedSearch> {
 public:
  // Pauses the search `request` of `who` on `session`: `spec` (its filter left out) as it ran,
  // `size_limit`, where it stands (`progress`, `page`), `txn` with its snapshot pinned (nullptr:
  // it handled no entry yet). Keeps the operation open through `sender` (detach) and waits for
  // the output to drain.
  static void pause(const OperationContext& context, const listener::wire::LdapMessage& request,
                    const Identity& who, ServerSession& session, const backend::SearchSpec& spec,
                    std::uint64_t size_limit, const SearchEntrySender::Progress& progress,
                    SearchPage::Saved page, std::unique_ptr<backend::ReadTxn> txn,
                    ResultSender& sender);

  PausedSearch(const PausedSearch&) = delete;
  PausedSearch& operator=(const PausedSearch&) = delete;

 private:
  PausedSearch(const OperationContext& context, std::unique_ptr<listener::OpenOperation> open,
               const Identity& who, ServerSession& session);
  // Asks the open operation to run go_on() once the output drained.
  void wait();
  // Goes on with the search on a worker with `state`.
  void go_on(ServerWorkerState& state);

  const OperationContext& context_;
  const std::unique_ptr<listener::OpenOperation> open_;
  const Identity who_;
  ServerSession& session_;
  std::string pdu_;                      // The request, encoded again.
  listener::wire::LdapMessage request_;  // Decoded from pdu_, which it views.
  backend::SearchSpec spec_;             // Its filter is set by each go_on().
  std::uint64_t size_limit_ = 0;
  SearchEntrySender::Progress progress_;
  SearchPage::Saved page_;
  std::unique_ptr<backend::ReadTxn> txn_;  // Pinned; nullptr until an entry was handled.
};

}  // namespace numadir::server
