// server/replication/provider_connection.cc: see provider_connection.h.
#include "server/replication/provider_connection.h"

#include "server/client/tls_client_context.h"

namespace numadir::server::replication {

namespace wire = listener::wire;

Status ProviderConnection::named(const Status& status) const {
  if (status.ok()) {
    return status;
  }
  return Status(status.code(), url_ + ": " + status.message());
}

Result<std::unique_ptr<ProviderConnection>> ProviderConnection::connect(
    const ReplicationConsumerConfig& consumer) {
  const std::string url = consumer.provider.to_string();
  const auto named = [&url](const Status& status) {
    return Status(status.code(), url + ": " + status.message());
  };
  std::unique_ptr<TlsClientContext> tls;
  if (consumer.uses_tls()) {
    Result<std::unique_ptr<TlsClientContext>> created = TlsClientContext::create(TlsClientSettings{
        consumer.ca_file, consumer.tls_verify, consumer.certificate, consumer.key});
    if (!created.ok()) {
      return Status(created.status().code(),
                    url + ": " + consumer.origin + "." + created.status().message());
    }
    tls = std::move(*created);
  }
  LdapConnectOptions options;
  options.connect_timeout_ms = static_cast<int>(consumer.network_timeout_ms);
  options.send_timeout_ms = static_cast<int>(consumer.timeout_ms);
  options.max_pdu_bytes = consumer.max_pdu_bytes;
  options.keepalive = consumer.keepalive;
  Result<std::unique_ptr<LdapConnection>> connection =
      LdapConnection::connect(consumer.provider, options);
  if (!connection.ok()) {
    return named(connection.status());
  }
  std::unique_ptr<ProviderConnection> provider(
      new ProviderConnection(consumer, std::move(*connection), url));
  LdapConnection& link = *provider->connection_;
  const int handshake_ms = static_cast<int>(consumer.network_timeout_ms);
  if (consumer.provider.tls()) {
    if (Status started = link.start_tls(*tls, consumer.provider.host, handshake_ms);
        !started.ok()) {
      return named(started);
    }
  } else if (consumer.starttls != StartTlsMode::kNo) {
    wire::LdapMessage request;
    request.reset(0, wire::ProtocolOp::kExtendedRequest);
    request.extended.name = wire::kStartTlsOid;
    wire::LdapMessage response;
    if (Status answered = link.exchange(request, wire::ProtocolOp::kExtendedResponse, response,
                                        static_cast<int>(consumer.timeout_ms));
        !answered.ok()) {
      return Status(answered.code(), url + ": StartTLS: " + answered.message());
    }
    if (response.result.code != wire::ResultCode::kSuccess) {
      const std::string refusal = describe_ldap_result(response.result);
      if (consumer.starttls == StartTlsMode::kCritical) {
        return Status(StatusCode::kIo,
                      url + ": StartTLS refused: " + refusal + " (starttls = \"critical\")");
      }
      provider->starttls_refusal_ = refusal;  // "yes": go on in the clear, as slapd does.
    } else if (Status started = link.start_tls(*tls, consumer.provider.host, handshake_ms);
               !started.ok()) {
      return Status(started.code(), url + ": after StartTLS: " + started.message());
    }
  }
  return provider;
}

Status ProviderConnection::bind() {
  if (consumer_.method == ReplicationBind::kExternal) {
    return external_bind();
  }
  return simple_bind(consumer_.binddn, consumer_.credentials);
}

Status ProviderConnection::bind_request(wire::LdapMessage& request, const std::string& what) {
  wire::LdapMessage response;
  if (Status answered = connection_->exchange(request, wire::ProtocolOp::kBindResponse, response,
                                              static_cast<int>(consumer_.timeout_ms));
      !answered.ok()) {
    return Status(answered.code(), url_ + ": " + what + ": " + answered.message());
  }
  if (response.result.code != wire::ResultCode::kSuccess) {
    return invalid_argument(url_ + ": " + what +
                            " refused: " + describe_ldap_result(response.result));
  }
  return Status();
}

Status ProviderConnection::simple_bind(std::string_view dn, std::string_view password) {
  wire::LdapMessage request;
  request.reset(0, wire::ProtocolOp::kBindRequest);
  request.bind_request.name = dn;
  request.bind_request.method = wire::BindMethod::kSimple;
  request.bind_request.simple_password = password;
  return bind_request(request, "bind as " + std::string(dn));
}

Status ProviderConnection::external_bind() {
  if (!connection_->tls_active()) {
    return invalid_argument(url_ +
                            ": SASL EXTERNAL needs TLS (the client certificate is the "
                            "identity)");
  }
  wire::LdapMessage request;
  request.reset(0, wire::ProtocolOp::kBindRequest);
  request.bind_request.method = wire::BindMethod::kSasl;
  request.bind_request.sasl_mechanism = "EXTERNAL";
  return bind_request(request, "SASL EXTERNAL bind");
}

Result<std::int32_t> ProviderConnection::send_search(
    std::string_view base, wire::SearchScope scope, std::string_view filter,
    const std::vector<std::string_view>& attributes, const std::vector<wire::Control>& controls) {
  Result<schema::Filter> parsed = schema::Filter::parse(filter);
  if (!parsed.ok()) {
    return invalid_argument(url_ + ": filter " + std::string(filter) + ": " +
                            parsed.status().message());
  }
  wire::LdapMessage request;
  const std::int32_t id = connection_->next_message_id();
  request.reset(id, wire::ProtocolOp::kSearchRequest);
  request.search_request.base_object = base;
  request.search_request.scope = scope;
  request.search_request.filter = std::move(*parsed);
  request.search_request.attributes = attributes;
  request.controls = controls;
  if (Status sent = connection_->send(request); !sent.ok()) {
    return named(sent);
  }
  return id;
}

Status ProviderConnection::receive(wire::LdapMessage& message, int timeout_ms) {
  return named(connection_->receive(message, timeout_ms));
}

Status ProviderConnection::abandon(std::int32_t id) {
  wire::LdapMessage request;
  request.reset(connection_->next_message_id(), wire::ProtocolOp::kAbandonRequest);
  request.abandon_id = id;
  return named(connection_->send(request));
}

Status ProviderConnection::unbind() {
  Status sent;
  if (connection_->usable()) {
    wire::LdapMessage request;
    request.reset(connection_->next_message_id(), wire::ProtocolOp::kUnbindRequest);
    sent = named(connection_->send(request));
  }
  connection_->close();
  return sent;
}

}  // namespace numadir::server::replication
