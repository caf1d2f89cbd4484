// server/monitoring/logging_handler.cc: see logging_handler.h.
#include "server/monitoring/logging_handler.h"

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace numadir::server {
namespace {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;

// The connection's own session, wrapped: logs the close when the listener destroys it.
class LoggedSession final : public listener::Session {
 public:
  LoggedSession(std::unique_ptr<listener::Session> inner, std::uint64_t id, AccessLog& log)
      : inner_(std::move(inner)), id_(id), log_(log) {}
  ~LoggedSession() override {
    log_.append(log_timestamp() + "conn=" + std::to_string(id_) + " closed\n");
  }
  listener::Session& inner() { return *inner_; }
  std::uint64_t id() const { return id_; }

 private:
  std::unique_ptr<listener::Session> inner_;
  const std::uint64_t id_;
  AccessLog& log_;
};

void append_quoted(std::string& out, std::string_view value);

// One operation's part of the log: its request line, and what it sent (entries, the final
// result) until its result line is written. Owner: the thread running or finishing the operation.
class OperationRecord {
 public:
  OperationRecord(AccessLog& log, std::string prefix, std::string request_line, bool debug,
                  ProtocolOp op)
      : log_(log),
        prefix_(std::move(prefix)),
        lines_(std::move(request_line)),
        debug_(debug),
        op_(op),
        start_(std::chrono::steady_clock::now()) {}

  // Notes `response`, sent for the operation.
  void note(const LdapMessage& response) {
    if (response.op == ProtocolOp::kSearchResultEntry) {
      ++entries_;
      if (debug_) {
        entry_lines_ += " ENTRY dn=\"";
        entry_lines_ += response.search_entry.object_name;
        entry_lines_ += "\"\n";
      }
    } else if (listener::wire::has_ldap_result(response.op)) {
      result_code_ = static_cast<int>(response.result.code);
      text_ = std::string(response.result.diagnostic_message);
      tag_ = 0x60 | static_cast<int>(response.op);
    }
  }
  // Appends the request line, the entry lines and the result line (ABANDONED if no result was
  // noted), with the time since the record was made. Requires: called once.
  void write();

 private:
  AccessLog& log_;
  const std::string prefix_;
  std::string lines_;
  std::string entry_lines_;
  const bool debug_;
  const ProtocolOp op_;
  const std::chrono::steady_clock::time_point start_;
  int entries_ = 0;
  int result_code_ = -1;  // No result sent (abandoned).
  int tag_ = 0;
  std::string text_;
};

void OperationRecord::write() {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (!entry_lines_.empty()) {
    // Each " ENTRY ..." line gets the timestamp and prefix of the operation.
    std::size_t begin = 0;
    const std::string head = log_timestamp() + prefix_;
    while (begin < entry_lines_.size()) {
      const std::size_t end = entry_lines_.find('\n', begin);
      lines_ += head + entry_lines_.substr(begin + 1, end - begin);
      begin = end + 1;
    }
  }
  char result[96];
  if (result_code_ < 0) {
    std::snprintf(result, sizeof(result), "ABANDONED etime=%.6f", seconds);
  } else if (op_ == ProtocolOp::kSearchRequest) {
    std::snprintf(result, sizeof(result), "SEARCH RESULT tag=%d err=%d nentries=%d etime=%.6f",
                  tag_, result_code_, entries_, seconds);
  } else {
    std::snprintf(result, sizeof(result), "RESULT tag=%d err=%d etime=%.6f", tag_, result_code_,
                  seconds);
  }
  lines_ += log_timestamp() + prefix_ + result + " text=";
  append_quoted(lines_, text_);
  lines_ += "\n";
  log_.append(lines_);
}

// An operation kept open (ResponseSink::detach), wrapped: notes what it sends and writes its
// result line once, when it is finished or released unfinished (ABANDONED then). Thread
// contract: as OpenOperation's.
class WatchingOpenOperation final : public listener::OpenOperation {
 public:
  WatchingOpenOperation(std::unique_ptr<listener::OpenOperation> inner, OperationRecord record)
      : inner_(std::move(inner)), record_(std::move(record)) {}
  ~WatchingOpenOperation() override {
    if (!written_) {
      record_.write();
    }
  }
  void send(const LdapMessage& message) override {
    record_.note(message);
    inner_->send(message);
  }
  void finish(const LdapMessage& last_message) override {
    if (!inner_->abandoned()) {
      record_.note(last_message);  // Else it is dropped: the log says ABANDONED.
    }
    inner_->finish(last_message);
    written_ = true;
    record_.write();
  }
  bool abandoned() const override { return inner_->abandoned(); }
  void set_on_end(std::function<void()> on_end) override { inner_->set_on_end(std::move(on_end)); }
  bool writable() const override { return inner_->writable(); }
  void set_on_writable(std::function<void(threadpool::WorkerState&)> resume) override {
    inner_->set_on_writable(std::move(resume));
  }

 private:
  const std::unique_ptr<listener::OpenOperation> inner_;
  OperationRecord record_;
  bool written_ = false;
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
  std::unique_ptr<listener::OpenOperation> detach() override {
    std::unique_ptr<listener::OpenOperation> open = inner_.detach();
    if (open == nullptr) {
      return nullptr;
    }
    detached_ = true;
    return std::make_unique<WatchingOpenOperation>(std::move(open), std::move(record_));
  }
  // Returns: whether the operation was detached (its record went with it).
  bool detached() const { return detached_; }

 private:
  listener::ResponseSink& inner_;
  OperationRecord& record_;
  bool detached_ = false;
};

void append_quoted(std::string& out, std::string_view value) {
  out += '"';
  for (const char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    if (c == '\n' || c == '\r') {
      out += ' ';  // One log line per event, whatever the client sent.
      continue;
    }
    out += c;
  }
  out += '"';
}

}  // namespace

std::string describe_request(const LdapMessage& request) {
  std::string out;
  switch (request.op) {
    case ProtocolOp::kUnbindRequest:
      return "UNBIND";
    case ProtocolOp::kAbandonRequest:
      return "ABANDON msg=" + std::to_string(request.abandon_id);
    case ProtocolOp::kBindRequest:
      out = "BIND dn=";
      append_quoted(out, request.bind_request.name);
      if (request.bind_request.method == listener::wire::BindMethod::kSimple) {
        out += " method=128";
      } else if (request.bind_request.method == listener::wire::BindMethod::kUnsupported) {
        out += " method=" + std::to_string(request.bind_request.unsupported_tag);
      } else {
        out += " mech=";
        out += request.bind_request.sasl_mechanism;
      }
      break;
    case ProtocolOp::kSearchRequest: {
      const auto& search = request.search_request;
      out = "SRCH base=";
      append_quoted(out, search.base_object);
      out += " scope=" + std::to_string(static_cast<int>(search.scope)) +
             " deref=" + std::to_string(static_cast<int>(search.deref_aliases)) + " filter=";
      append_quoted(out, search.filter.to_string());
      std::string attrs;
      for (std::string_view attribute : search.attributes) {
        attrs += attrs.empty() ? "" : " ";
        attrs += attribute;
      }
      out += " attrs=";
      append_quoted(out, attrs.empty() ? "ALL" : attrs);
      break;
    }
    case ProtocolOp::kAddRequest:
      out = "ADD dn=";
      append_quoted(out, request.add_request.entry);
      break;
    case ProtocolOp::kDelRequest:
      out = "DEL dn=";
      append_quoted(out, request.dn);
      break;
    case ProtocolOp::kModifyRequest:
      out = "MOD dn=";
      append_quoted(out, request.modify_request.object);
      break;
    case ProtocolOp::kModifyDnRequest:
      out = "MODRDN dn=";
      append_quoted(out, request.modify_dn_request.entry);
      break;
    case ProtocolOp::kCompareRequest:
      out = "CMP dn=";
      append_quoted(out, request.compare_request.entry);
      out += " attr=";
      append_quoted(out, request.compare_request.attribute);
      break;
    case ProtocolOp::kExtendedRequest:
      out = "EXT oid=";
      append_quoted(out, request.extended.name.value_or(""));
      break;
    default:
      out = std::string(listener::wire::protocol_op_name(request.op));
      break;
  }
  return out;
}

std::unique_ptr<listener::Session> LoggingHandler::open_session(
    const listener::ConnectionInfo& info) {
  log_.append(log_timestamp() + "conn=" + std::to_string(info.id) + " ACCEPT from IP=" + info.peer +
              " (port " + std::to_string(info.local_port) + ")\n");
  return std::make_unique<LoggedSession>(inner_.open_session(info), info.id, log_);
}

void LoggingHandler::notice(const LdapMessage& request, listener::Session& session) {
  const auto& logged = static_cast<LoggedSession&>(session);
  log_.append(log_timestamp() + "conn=" + std::to_string(logged.id()) +
              " op=" + std::to_string(request.message_id) + " " + describe_request(request) + "\n");
}

void LoggingHandler::tls_established(listener::Session& session, const listener::TlsPeer& peer) {
  auto& logged = static_cast<LoggedSession&>(session);
  std::string line = log_timestamp() + "conn=" + std::to_string(logged.id()) +
                     " TLS established tls_proto=" + peer.protocol + " tls_cipher=" + peer.cipher +
                     (peer.resumed ? " resumed" : "");
  if (peer.has_certificate) {
    line += " peer=";
    append_quoted(line, peer.subject);
    line += peer.verified ? " verified" : " unverified";
  }
  log_.append(line + "\n");
  inner_.tls_established(logged.inner(), peer);
}

void LoggingHandler::handle(const LdapMessage& request, listener::Session& session,
                            listener::ResponseSink& sink, threadpool::WorkerState& state) {
  auto& logged = static_cast<LoggedSession&>(session);
  std::string prefix =
      "conn=" + std::to_string(logged.id()) + " op=" + std::to_string(request.message_id) + " ";
  std::string request_line = log_timestamp() + prefix + describe_request(request) + "\n";
  OperationRecord record(log_, std::move(prefix), std::move(request_line),
                         level_ == LogLevel::kDebug, request.op);
  WatchingSink watching(sink, record);
  inner_.handle(request, logged.inner(), watching, state);
  if (!watching.detached()) {
    record.write();
  }
}

}  // namespace numadir::server
