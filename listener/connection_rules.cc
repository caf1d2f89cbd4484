// listener/connection_rules.cc: see connection_rules.h.
#include "listener/connection_rules.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "listener/listener_shared.h"
#include "listener/request.h"
#include "listener/wire/framing.h"
#include "listener/wire/message_encoder.h"

namespace numadir::listener {

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ConnectionRules::ConnectionRules(const ListenerShared& shared, threadpool::TaskPool& pool,
                                 ListenerCounters& counters)
    : shared_(shared), pool_(pool), counters_(counters) {}

PumpResult ConnectionRules::pump(OwnedConnection& connection, RequestCaches& caches) {
  for (;;) {
    if (connection.closing) {
      return PumpResult::kClose;  // The listener finishes the close once nothing holds it.
    }
    if (connection.shared.output_paused()) {
      return PumpResult::kIdle;  // Past its output bound: nothing starts until it drains.
    }
    const StartResult held = start_held(connection);
    if (held == StartResult::kStarted && !route_input(connection, caches)) {
      return PumpResult::kClose;
    }
    if (connection.held.empty()) {
      connection.shared.unwatch_operations();
      connection.reading_paused = false;
      return PumpResult::kIdle;
    }
    connection.reading_paused = true;  // Backpressure until the held requests start.
    if (held == StartResult::kPoolFull) {
      return PumpResult::kPoolFull;
    }
    if (!may_start_held(connection)) {
      return PumpResult::kIdle;
    }
  }
}

ConnectionRules::StartResult ConnectionRules::start_held(OwnedConnection& connection) {
  while (!connection.held.empty()) {
    const StartResult result = try_start(connection, connection.held.front());
    if (result != StartResult::kStarted) {
      return result;
    }
    connection.held.erase(connection.held.begin());  // At most the outstanding limit.
  }
  return StartResult::kStarted;
}

bool ConnectionRules::may_start_held(OwnedConnection& connection) {
  // Waits for a worker or an open operation to release the connection, unless one did while
  // this looked.
  const std::uint64_t ops = connection.shared.watch_operations();
  const bool bind_waits = connection.bind_running && ops > 0;
  const bool front_is_bind =
      connection.held.front()->message().op == wire::ProtocolOp::kBindRequest;
  return !(bind_waits || (front_is_bind && ops > 0) ||
           ops >= shared_.limits.max_outstanding_per_connection);
}

bool ConnectionRules::route_input(OwnedConnection& connection, RequestCaches& caches) {
  std::size_t consumed = 0;
  const std::string_view input = connection.input;
  bool open = true;
  std::int64_t unstamped_ns = 0;
  while (consumed < input.size()) {
    if (connection.held.size() >= shared_.limits.max_outstanding_per_connection) {
      break;  // Enough waiting: the rest stays unread until these start.
    }
    const std::string_view rest = input.substr(consumed);
    const wire::Frame frame = wire::frame_pdu(rest, shared_.limits.max_pdu_bytes);
    if (frame.state == wire::FrameState::kNeedMore) {
      break;
    }
    if (frame.state != wire::FrameState::kComplete) {
      protocol_error(connection, frame.error);
      open = false;
      break;
    }
    std::int64_t received_ns = 0;
    if (shared_.stamp_requests) {
      received_ns = connection.input_stamps.stamp_of(consumed + frame.pdu_bytes);
      if (received_ns == 0) {
        // Not stamped as it was read (plaintext TLS gave beside a StartTLS response): now, once.
        received_ns = unstamped_ns != 0
                          ? unstamped_ns
                          : (unstamped_ns = static_cast<std::int64_t>(threadpool::steady_ns()));
      }
    }
    OwnedRequest request =
        Request::make(caches, connection.shared, *shared_.handler, rest.substr(0, frame.pdu_bytes),
                      connection.requests_read++, received_ns);
    consumed += frame.pdu_bytes;
    if (const Status decoded = request->decode({}); !decoded.ok()) {
      protocol_error(connection, decoded.message());
      open = false;
      break;
    }
    const wire::LdapMessage& message = request->message();
    if (message.op == wire::ProtocolOp::kUnbindRequest ||
        message.op == wire::ProtocolOp::kAbandonRequest) {
      shared_.handler->notice(message, connection.shared.session(), request->origin(), nullptr);
    }
    if (message.op == wire::ProtocolOp::kUnbindRequest) {
      connection.shared.abandon_all();  // Ends its open operations too; the listener closes.
      connection.decide_close(CloseReason::kUnbind);
      open = false;
      break;
    }
    if (message.op == wire::ProtocolOp::kAbandonRequest) {
      abandon(connection, message.abandon_id);
      continue;
    }
    if (message.op == wire::ProtocolOp::kExtendedRequest &&
        message.extended.name == wire::kStartTlsOid && shared_.tls != nullptr) {
      threadpool::owner_add(counters_.requests);
      start_tls(connection, *request);
      if (connection.shared.tls_started()) {
        // Whatever the client sent after the request is already TLS.
        std::string rest_bytes(input.substr(consumed));
        connection.input.clear();
        connection.input_stamps.clear();
        if (rest_bytes.empty()) {
          return true;
        }
        const std::optional<CloseReason> end = tls_input(connection, rest_bytes);
        if (end.has_value()) {
          connection.decide_close(*end);
        }
        return !end.has_value();
      }
      continue;
    }
    if (wire::protocol_op_info(message.op).kind != wire::OpKind::kRequest) {
      protocol_error(connection,
                     "a client sent " + std::string(wire::protocol_op_name(message.op)));
      open = false;
      break;
    }
    threadpool::owner_add(counters_.requests);
    if (connection.held.empty() && try_start(connection, request) == StartResult::kStarted) {
      continue;
    }
    connection.held.push_back(std::move(request));
  }
  connection.input.erase(0, consumed);
  connection.input_stamps.consumed(consumed);
  if (connection.input.empty()) {
    Connection::release_if_large(connection.input);
  }
  return open;
}

ConnectionRules::StartResult ConnectionRules::try_start(OwnedConnection& connection,
                                                        OwnedRequest& request) {
  const std::uint64_t ops = connection.shared.operations();
  if (connection.bind_running) {
    if (ops > 0) {
      return StartResult::kWait;  // Nothing runs beside a bind (RFC 4511 §4.2.1).
    }
    connection.bind_running = false;
  }
  const bool bind = request->message().op == wire::ProtocolOp::kBindRequest;
  if ((bind && ops > 0) || ops >= shared_.limits.max_outstanding_per_connection) {
    return StartResult::kWait;
  }
  const std::int32_t message_id = request->message().message_id;
  connection.shared.begin_operation(message_id);
  request->start();
  // The pool owns it once it took it, and retires it into the caches of the thread that ran it.
  std::unique_ptr<threadpool::Task> task(request.release());
  if (!pool_.try_submit(task)) {
    request.reset(static_cast<Request*>(task.release()));  // Still the listener's to drop.
    request->cancel_start();
    connection.shared.cancel_operation(message_id);
    threadpool::owner_add(counters_.submit_refused);
    return StartResult::kPoolFull;
  }
  connection.bind_running = bind;
  if (bind) {
    connection.bind_message_id = message_id;
  }
  return StartResult::kStarted;
}

void ConnectionRules::abandon(OwnedConnection& connection, std::int32_t target) {
  // As slapd's do_abandon: ID 0 names no request (RFC 4511 §4.1.1.1), so nothing is looked up,
  // even when a client sent a request with ID 0 (which is answered like any other).
  if (target == wire::kUnsolicitedMessageId) {
    return;
  }
  // A bind cannot be abandoned (RFC 4511 §4.11): one not yet run would otherwise never answer.
  // While bind_running_ and anything is outstanding, the bind is what is outstanding.
  if (connection.bind_running && connection.shared.operations() > 0 &&
      connection.bind_message_id == target) {
    return;
  }
  // An ID a client reused while it was in use may name a running or open operation and a held
  // one: the outstanding one goes first, as in slapd.
  if (connection.shared.abandon(target)) {
    return;  // Running, or open: an open one ends here.
  }
  auto held =
      std::find_if(connection.held.begin(), connection.held.end(),
                   [target](const OwnedRequest& r) { return r->message().message_id == target; });
  if (held != connection.held.end()) {
    shared_.handler->not_run((*held)->message(), connection.shared.session(), (*held)->origin());
    connection.held.erase(held);  // Never started: it just goes.
  }
}

void ConnectionRules::protocol_error(OwnedConnection& connection, std::string_view why) {
  wire::LdapMessage notice;
  notice.reset(wire::kUnsolicitedMessageId, wire::ProtocolOp::kExtendedResponse);
  notice.result.code = wire::ResultCode::kProtocolError;
  notice.result.diagnostic_message = why;
  notice.extended.name = wire::kNoticeOfDisconnectionOid;
  wire::BerWriter writer;
  wire::encode_message(notice, writer);
  connection.shared.send_bytes(writer.view());
  connection.decide_close(CloseReason::kProtocolError);
}

void ConnectionRules::begin_tls(OwnedConnection& connection, std::unique_ptr<TlsChannel> channel,
                                std::int64_t now_ms) {
  connection.shared.start_tls(std::move(channel));
  connection.handshake_deadline_ms =
      now_ms + std::int64_t{1000} * shared_.tls->settings().handshake_timeout_s;
  ++handshakes_;
}

void ConnectionRules::forget_handshake(OwnedConnection& connection) {
  if (connection.handshake_deadline_ms != 0) {
    connection.handshake_deadline_ms = 0;
    --handshakes_;
  }
}

std::optional<CloseReason> ConnectionRules::tls_input(OwnedConnection& connection,
                                                      std::string_view cipher) {
  const TlsChannel::InputResult result = connection.shared.tls_input(cipher, connection.input);
  if (connection.handshake_deadline_ms != 0 && connection.shared.tls_handshake_done()) {
    forget_handshake(connection);
    shared_.handler->tls_established(connection.shared.session(), connection.shared.tls_peer());
  }
  if (result == TlsChannel::InputResult::kFailed) {
    std::fprintf(stderr, "numadir: conn=%llu: TLS: %s\n",
                 static_cast<unsigned long long>(connection.shared.id()),
                 connection.shared.tls_error().c_str());
  }
  switch (result) {
    case TlsChannel::InputResult::kOk:
      return std::nullopt;
    case TlsChannel::InputResult::kClosed:
      return CloseReason::kClient;
    case TlsChannel::InputResult::kFailed:
      break;
  }
  return CloseReason::kTlsFailure;
}

void ConnectionRules::start_tls(OwnedConnection& connection, const Request& start) {
  const wire::LdapMessage& request = start.message();
  wire::LdapMessage response;
  response.reset(request.message_id, wire::ProtocolOp::kExtendedResponse);
  response.extended.name = wire::kStartTlsOid;
  SSL* ssl = nullptr;
  if (connection.shared.tls_started()) {
    response.result.code = wire::ResultCode::kOperationsError;
    response.result.diagnostic_message = "TLS already started";
  } else if (connection.shared.operations() > 0 || !connection.held.empty()) {
    response.result.code = wire::ResultCode::kOperationsError;
    response.result.diagnostic_message = "other operations are outstanding";
  } else if ((ssl = shared_.tls->new_ssl()) == nullptr) {
    response.result.code = wire::ResultCode::kUnavailable;
    response.result.diagnostic_message = "TLS is not available";
  }
  wire::BerWriter writer;
  wire::encode_message(response, writer);
  // In plaintext: TLS starts with the first byte after this response (RFC 4511 §4.14.2).
  connection.shared.send_bytes(writer.view());
  shared_.handler->notice(request, connection.shared.session(), start.origin(), &response);
  if (ssl != nullptr) {
    begin_tls(connection, std::make_unique<TlsChannel>(ssl), steady_ms());
  }
}

std::optional<CloseReason> ConnectionRules::expired(const OwnedConnection& connection,
                                                    std::int64_t now_ms) const {
  if (connection.closing) {
    return std::nullopt;
  }
  if (connection.handshake_deadline_ms != 0 && now_ms >= connection.handshake_deadline_ms) {
    return CloseReason::kTlsFailure;
  }
  const std::int64_t idle_limit_ms = std::int64_t{1000} * shared_.limits.idle_timeout_s;
  if (idle_limit_ms != 0 && connection.held.empty() && connection.shared.operations() == 0 &&
      now_ms - connection.last_read_ms >= idle_limit_ms) {
    return CloseReason::kIdleTimeout;
  }
  return std::nullopt;
}

bool ConnectionRules::write_expired(OwnedConnection& connection, std::int64_t now_ms) const {
  const std::int64_t limit_ms = std::int64_t{1000} * shared_.limits.write_timeout_s;
  if (connection.closing || limit_ms == 0 || !connection.want_output) {
    return false;
  }
  if (const std::uint64_t written = connection.shared.bytes_written();
      written != connection.written_seen) {
    connection.written_seen = written;  // The client read some: the clock starts again.
    connection.output_stalled_since_ms = now_ms;
    return false;
  }
  if (now_ms - connection.output_stalled_since_ms < limit_ms) {
    return false;
  }
  std::fprintf(stderr,
               "numadir: conn=%llu peer=%s: closed: the client read nothing for %u s "
               "(limits.write_timeout) with %zu bytes waiting\n",
               static_cast<unsigned long long>(connection.shared.id()),
               connection.shared.info().peer.c_str(), shared_.limits.write_timeout_s,
               connection.shared.queued_bytes());
  return true;
}

}  // namespace numadir::listener
