// AuthWorker's TLS steps for a new connection: the StartTLS extended operation (in the clear)
// and the non-blocking TLS handshake, after which the connection is ready for the auth.
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "base/check.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_encoder.h"
#include "perf/auth_worker.h"
#include "perf/detail/auth_worker.h"

namespace numadir::perf {

namespace wire = listener::wire;
using detail::kNsPerMs;

void AuthWorker::start_tls(Connection& conn) {
  if (server_of(conn).tls->options().mode != TlsMode::kStartTls) {
    begin_handshake(conn);
    return;
  }
  wire::LdapMessage& request = scratch_->request;
  const std::int32_t id = conn.next_id++;
  request.reset(id, wire::ProtocolOp::kExtendedRequest);
  request.extended.name = kStartTlsOid;
  wire::encode_message(request, conn.output);
  conn.pending_id = id;
  conn.state = Connection::State::kStartTls;
  flush(conn);
}

void AuthWorker::on_start_tls_answer(Connection& conn) {
  const wire::LdapMessage& answer = scratch_->response;
  if (answer.op != wire::ProtocolOp::kExtendedResponse || answer.message_id != conn.pending_id) {
    drop(conn, AuthError::kProtocolError, 0);
    return;
  }
  conn.pending_id = 0;
  if (answer.result.code != wire::ResultCode::kSuccess) {
    // Counted under its code; the slot tries a new connection later, as after a refused connect.
    drop_with_code(conn, static_cast<std::int32_t>(answer.result.code), kConnectRetryMs * kNsPerMs);
    return;
  }
  if (!conn.input.empty()) {
    // Bytes after the answer, before the handshake: nothing may come in the clear there.
    drop(conn, AuthError::kProtocolError, 0);
    return;
  }
  begin_handshake(conn);
}

void AuthWorker::begin_handshake(Connection& conn) {
  conn.ssl = server_of(conn).tls->new_connection(conn.fd, &conn.session);
  if (conn.ssl == nullptr) {
    drop(conn, AuthError::kTlsFailed, kConnectRetryMs * kNsPerMs);
    return;
  }
  conn.state = Connection::State::kHandshaking;
  continue_handshake(conn);
}

void AuthWorker::continue_handshake(Connection& conn) {
  const int rc = SSL_connect(conn.ssl);
  if (rc == 1) {
    stats_.count_tls_handshake(SSL_session_reused(conn.ssl) == 1);
    conn.tls_want_write = false;
    connection_ready(conn);
    return;
  }
  const int error = SSL_get_error(conn.ssl, rc);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
    conn.tls_want_write = error == SSL_ERROR_WANT_WRITE;
    update_events(conn);
    return;
  }
  // Verification failed, an alert, or the server closed: retried later on a new connection.
  // (authrate's probe before the run reports the reason once.)
  drop(conn, AuthError::kTlsFailed, kConnectRetryMs * kNsPerMs);
}

}  // namespace numadir::perf
