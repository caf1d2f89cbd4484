// server/monitoring/logging_handler.cc: see logging_handler.h.
#include "server/monitoring/logging_handler.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "listener/wire/ber_writer.h"
#include "listener/wire/message_encoder.h"
#include "schema/filter.h"
#include "server/monitoring/open_operation_decorator.h"

namespace numadir::server {
namespace {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;

// The connection's own session, wrapped: logs the close when the listener destroys it. Its
// events go through its listener's writer (nullptr: the log's shared one).
class LoggedSession final : public listener::Session {
 public:
  LoggedSession(std::unique_ptr<listener::Session> inner, std::uint64_t id, AccessLog& log,
                LogWriter* writer)
      : inner_(std::move(inner)), id_(id), log_(log), writer_(writer) {}
  ~LoggedSession() override {
    Record record;
    record.kind = RecordKind::kClosed;
    record.time_ns = monotonic_ns();
    record.conn = id_;
    write(record);
  }
  listener::Session& inner() { return *inner_; }
  std::uint64_t id() const { return id_; }
  LogWriter* writer() const { return writer_; }
  void write(const Record& record) {
    writer_ != nullptr ? writer_->write(record) : log_.write_shared(record);
  }

 private:
  std::unique_ptr<listener::Session> inner_;
  const std::uint64_t id_;
  AccessLog& log_;
  LogWriter* const writer_;
};

// Requests are logged as their bytes, decoded by the formatting thread; an add or a modify longer
// than this (large values), or a request whose bytes are unknown, as the bytes of the same
// request with only what its line shows (no values, credentials or controls), encoded on the spot.
constexpr std::size_t kMaxPduCopied = 4096;

void encode_reduced(const LdapMessage& request, listener::wire::BerWriter& writer) {
  LdapMessage reduced;
  reduced.reset(request.message_id, request.op);
  reduced.bind_request = request.bind_request;
  reduced.bind_request.simple_password = {};
  reduced.bind_request.sasl_credentials.reset();
  reduced.bind_request.unsupported_credentials = {};
  const auto& search = request.search_request;
  reduced.search_request.base_object = search.base_object;
  reduced.search_request.scope = search.scope;
  reduced.search_request.deref_aliases = search.deref_aliases;
  reduced.search_request.attributes = search.attributes;
  if (request.op == ProtocolOp::kSearchRequest) {
    if (auto parsed = schema::Filter::parse(search.filter.to_string()); parsed.ok()) {
      reduced.search_request.filter = std::move(*parsed);
    }
  }
  reduced.add_request.entry = request.add_request.entry;
  reduced.dn = request.dn;
  reduced.modify_request.object = request.modify_request.object;
  reduced.modify_dn_request = request.modify_dn_request;
  reduced.compare_request = request.compare_request;
  reduced.compare_request.value = {};
  reduced.extended.name = request.extended.name;
  reduced.abandon_id = request.abandon_id;
  listener::wire::encode_message(reduced, writer);
}

// One operation's records: its request, what it sent (entries, its result). Owner: the thread
// running or finishing the operation.
class OperationRecord {
 public:
  OperationRecord(AccessLog& log, LogWriter* writer, std::uint64_t conn,
                  const listener::RequestOrigin& origin, const LdapMessage& request, bool debug)
      : log_(log),
        writer_(writer),
        conn_(conn),
        op_(origin.number),
        msgid_(request.message_id),
        debug_(debug),
        search_(request.op == ProtocolOp::kSearchRequest),
        start_ns_(monotonic_ns()) {
    Record record = base(RecordKind::kRequest, start_ns_);
    listener::wire::BerWriter reduced;
    const bool with_values =
        request.op == ProtocolOp::kAddRequest || request.op == ProtocolOp::kModifyRequest;
    if (!origin.pdu.empty() && (!with_values || origin.pdu.size() <= kMaxPduCopied)) {
      record.strings[0] = origin.pdu;
    } else {
      encode_reduced(request, reduced);
      record.strings[0] = reduced.view();
    }
    write(record);
  }

  // Notes `response`, sent for the operation: an entry (a line of its own at level debug) or
  // the result (its line, now).
  void note(const LdapMessage& response) {
    if (response.op == ProtocolOp::kSearchResultEntry) {
      ++entries_;
      if (debug_) {
        Record record = base(RecordKind::kEntry, monotonic_ns());
        record.strings[0] = response.search_entry.object_name;
        write(record);
      }
    } else if (listener::wire::has_ldap_result(response.op)) {
      const std::int64_t now = monotonic_ns();
      Record record = base(RecordKind::kResult, now);
      record.numbers[0] = 0x60 | static_cast<int>(response.op);
      record.numbers[1] = static_cast<int>(response.result.code);
      record.numbers[2] = search_ ? entries_ : -1;
      record.numbers[3] = now - start_ns_;
      record.strings[0] = response.result.diagnostic_message;
      write(record);
      resulted_ = true;
    }
  }
  // Ends the record: an ABANDONED line if no result was sent. Requires: called once.
  void finish() {
    if (!resulted_) {
      const std::int64_t now = monotonic_ns();
      Record record = base(RecordKind::kAbandoned, now);
      record.numbers[3] = now - start_ns_;
      write(record);
    }
  }
  // The operation goes on elsewhere (detach): its records go through the shared writer.
  void detach() { writer_ = nullptr; }

 private:
  Record base(RecordKind kind, std::int64_t time_ns) const {
    Record record;
    record.kind = kind;
    record.time_ns = time_ns;
    record.conn = conn_;
    record.op = op_;
    record.msgid = msgid_;
    return record;
  }
  void write(const Record& record) {
    writer_ != nullptr ? writer_->write(record) : log_.write_shared(record);
  }

  AccessLog& log_;
  LogWriter* writer_;
  std::uint64_t conn_;
  std::uint64_t op_;
  std::int64_t msgid_;
  bool debug_;
  bool search_;
  std::int64_t start_ns_;
  std::int64_t entries_ = 0;
  bool resulted_ = false;
};

// An operation kept open (ResponseSink::detach), wrapped: notes what it sends and ends its
// record once, when it is finished or released unfinished (ABANDONED then). Thread contract:
// as OpenOperation's.
class WatchingOpenOperation final : public OpenOperationDecorator {
 public:
  WatchingOpenOperation(std::unique_ptr<listener::OpenOperation> inner, OperationRecord record)
      : OpenOperationDecorator(std::move(inner)), record_(record) {
    record_.detach();
  }
  ~WatchingOpenOperation() override {
    if (!finished_) {
      record_.finish();
    }
  }
  void send(const LdapMessage& message) override {
    record_.note(message);
    inner().send(message);
  }
  void finish(const LdapMessage& last_message) override {
    if (!inner().abandoned()) {
      record_.note(last_message);  // Else it is dropped: the log says ABANDONED.
    }
    inner().finish(last_message);
    finished_ = true;
    record_.finish();
  }

 private:
  OperationRecord record_;
  bool finished_ = false;
};

// Passes responses on, noting them in the operation's record; a detached operation takes the
// record with it.
class WatchingSink final : public listener::ResponseSink {
 public:
  WatchingSink(listener::ResponseSink& inner, OperationRecord& record)
      : inner_(inner), record_(record) {}
  void send(const LdapMessage& response) override {
    record_.note(response);
    inner_.send(response);
  }
  bool abandoned() const override { return inner_.abandoned(); }
  bool writable() const override { return inner_.writable(); }
  listener::RequestOrigin origin() const override { return inner_.origin(); }
  std::unique_ptr<listener::OpenOperation> detach() override {
    std::unique_ptr<listener::OpenOperation> open = inner_.detach();
    if (open == nullptr) {
      return nullptr;
    }
    detached_ = true;
    return std::make_unique<WatchingOpenOperation>(std::move(open), record_);
  }
  // Returns: whether the operation was detached (its record went with it).
  bool detached() const { return detached_; }

 private:
  listener::ResponseSink& inner_;
  OperationRecord& record_;
  bool detached_ = false;
};

}  // namespace

std::unique_ptr<listener::RequestWorkerState> LoggingHandler::make_worker_state() {
  std::unique_ptr<listener::RequestWorkerState> state = inner_.make_worker_state();
  auto* logging = dynamic_cast<LoggingWorkerState*>(state.get());
  NUMADIR_CHECK(logging != nullptr,
                "LoggingHandler: the inner handler's worker state has no LogWriter");
  logging->log_writer = &log_.make_writer();
  return state;
}

std::unique_ptr<listener::Session> LoggingHandler::open_session(
    const listener::ConnectionInfo& info) {
  // The listener's own state, when it has one made by this handler: its writer is the
  // connection's for what its listener logs.
  auto* listener_state = dynamic_cast<LoggingWorkerState*>(info.listener_state);
  auto session = std::make_unique<LoggedSession>(
      inner_.open_session(info), info.id, log_,
      listener_state != nullptr ? listener_state->log_writer : nullptr);
  Record record;
  record.kind = RecordKind::kAccept;
  record.time_ns = monotonic_ns();
  record.conn = info.id;
  record.numbers[0] = info.local_port;
  record.strings[0] = info.peer;
  session->write(record);
  return session;
}

void LoggingHandler::notice(const LdapMessage& request, listener::Session& session,
                            const listener::RequestOrigin& origin, const LdapMessage* response) {
  auto& logged = static_cast<LoggedSession&>(session);
  OperationRecord record(log_, logged.writer(), logged.id(), origin, request, false);
  if (response != nullptr) {
    record.note(*response);
  }
  inner_.notice(request, logged.inner(), origin, response);
}

void LoggingHandler::not_run(const LdapMessage& request, listener::Session& session,
                             const listener::RequestOrigin& origin) {
  auto& logged = static_cast<LoggedSession&>(session);
  // On a worker or the listener, whichever drops it: the shared writer serves both.
  OperationRecord record(log_, nullptr, logged.id(), origin, request, false);
  record.finish();
  inner_.not_run(request, logged.inner(), origin);
}

void LoggingHandler::tls_established(listener::Session& session, const listener::TlsPeer& peer) {
  auto& logged = static_cast<LoggedSession&>(session);
  Record record;
  record.kind = RecordKind::kTls;
  record.time_ns = monotonic_ns();
  record.conn = logged.id();
  record.strings[0] = peer.protocol;
  record.strings[1] = peer.cipher;
  record.strings[2] = peer.subject;
  record.numbers[0] = peer.resumed ? 1 : 0;
  record.numbers[1] = peer.has_certificate ? 1 : 0;
  record.numbers[2] = peer.verified ? 1 : 0;
  logged.write(record);
  inner_.tls_established(logged.inner(), peer);
}

void LoggingHandler::handle(const LdapMessage& request, listener::Session& session,
                            listener::ResponseSink& sink, threadpool::WorkerState& state) {
  auto& logged = static_cast<LoggedSession&>(session);
  NUMADIR_DCHECK(dynamic_cast<LoggingWorkerState*>(&state) != nullptr,
                 "LoggingHandler::handle: a worker state not made by make_worker_state");
  LogWriter* writer = static_cast<LoggingWorkerState&>(state).log_writer;
  OperationRecord record(log_, writer, logged.id(), sink.origin(), request,
                         level_ == LogLevel::kDebug);
  WatchingSink watching(sink, record);
  inner_.handle(request, logged.inner(), watching, state);
  if (!watching.detached()) {
    record.finish();
  }
}

}  // namespace numadir::server
