// server/replication/provider_connection.h: the replication consumer's connection to its
// provider (RFC 4533 over LDAPv3), made from one [[replication.consumer]]
// (server/formats/replication_consumer_config.h): TCP within network_timeout_ms, with the TCP
// keepalive the config asks for; TLS from the first byte for ldaps://, or after StartTLS
// (starttls = "yes": a provider that refuses it is used in the clear; "critical": the refusal
// fails), the provider's certificate verified against ca_file and the URL's host; a simple or
// SASL EXTERNAL bind; then searches whose messages (entries, references, intermediate
// responses, the done, extended responses such as a Notice of Disconnection) are read one at a
// time with their controls, abandon and unbind.
//
// Every error message starts with the provider's URL ("ldaps://ldap1:636: certificate verify
// failed: unable to get local issuer certificate"): it is what an admin reads in the log.
//
// Thread contract: owned and used by one thread (the consumer's); the destructor closes the
// connection without an unbind. It keeps its own copy of the ReplicationConsumerConfig.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "listener/wire/ldap_message.h"
#include "server/client/ldap_connection.h"
#include "server/formats/replication_consumer_config.h"

namespace numadir::server::replication {

class ProviderConnection {
 public:
  // Connects to consumer.provider and starts TLS as consumer.starttls and the scheme say; does
  // not bind. The TLS files (ca_file, certificate, key) are read anew, so a connection made
  // after they changed uses the new ones.
  // Errors, each "<provider URL>: <reason>":
  //   kInvalidArgument "<origin>.ca_file <path>: ..." (or certificate, key) for TLS files that
  //     do not load;
  //   kIo: the host does not resolve, no connection within network_timeout_ms, the connection
  //     refused, "certificate verify failed: <reason>", "TLS handshake failed: <reason>", no
  //     answer to StartTLS within timeout_ms, "StartTLS refused: <result>" with starttls =
  //     "critical";
  //   kMalformed: an answer to StartTLS that is not one.
  static Result<std::unique_ptr<ProviderConnection>> connect(
      const ReplicationConsumerConfig& consumer);
  ProviderConnection(const ProviderConnection&) = delete;
  ProviderConnection& operator=(const ProviderConnection&) = delete;

  // Binds as the config says: simple, as binddn with consumer.credentials; or SASL EXTERNAL.
  // Errors: as simple_bind / external_bind.
  Status bind();
  // A simple bind. Errors: kInvalidArgument "<url>: bind as <dn> refused: <result>" (e.g.
  //   invalidCredentials (49)); kIo, kMalformed as receive(); kIo when no answer comes within
  //   timeout_ms.
  Status simple_bind(std::string_view dn, std::string_view password);
  // A SASL EXTERNAL bind without an authorization identity: the TLS client certificate names
  // the identity. Errors: as simple_bind, "<url>: SASL EXTERNAL bind refused: <result>";
  //   kInvalidArgument "<url>: SASL EXTERNAL needs TLS" on a connection without it.
  Status external_bind();

  // Sends a search under a new message ID.
  // Returns: the message ID; its messages then come from receive().
  // Errors: kInvalidArgument "<url>: filter ...: <problem>" for a filter that does not parse;
  //   kIo as send.
  Result<std::int32_t> send_search(std::string_view base, listener::wire::SearchScope scope,
                                   std::string_view filter,
                                   const std::vector<std::string_view>& attributes,
                                   const std::vector<listener::wire::Control>& controls);

  // Reads the next message from the provider, its controls decoded, waiting at most
  // `timeout_ms` (< 0: without limit). `message` views the connection's buffer until the next
  // receive(). A Notice of Disconnection (message ID 0) is returned like any message and leaves
  // the connection unusable.
  // Errors: kIo "<url>: no message within N ms" (the connection stays usable: call again);
  //   kIo "<url>: the server closed the connection..." or a socket / TLS failure, kMalformed
  //   for bytes that are not an LDAP message, kLimitExceeded for one over max_pdu_size: the
  //   connection is then unusable.
  Status receive(listener::wire::LdapMessage& message, int timeout_ms);

  // Sends an AbandonRequest for `id` (no answer comes; messages of `id` may still arrive).
  // Errors: kIo as send.
  Status abandon(std::int32_t id);
  // Sends an UnbindRequest and closes the connection. Errors: kIo as send (it is closed anyway).
  Status unbind();

  bool usable() const { return connection_->usable(); }
  bool tls_active() const { return connection_->tls_active(); }
  // Returns: the TLS version in use ("TLSv1.3"), or "".
  std::string tls_version() const { return connection_->tls_version(); }
  // Returns: with starttls = "yes", why the provider refused StartTLS (the connection then goes
  //   on in the clear); empty otherwise.
  const std::string& starttls_refusal() const { return starttls_refusal_; }
  // Returns: the provider's URL, as messages name it ("ldap://ldap1.example.com:389").
  const std::string& url() const { return url_; }
  const ReplicationConsumerConfig& consumer() const { return consumer_; }

 private:
  ProviderConnection(const ReplicationConsumerConfig& consumer,
                     std::unique_ptr<LdapConnection> connection, std::string url)
      : consumer_(consumer), connection_(std::move(connection)), url_(std::move(url)) {}

  // Returns: `status` with its message prefixed by the URL.
  Status named(const Status& status) const;
  Status bind_request(listener::wire::LdapMessage& request, const std::string& what);

  const ReplicationConsumerConfig consumer_;
  const std::unique_ptr<LdapConnection> connection_;
  const std::string url_;
  std::string starttls_refusal_;
};

}  // namespace numadir::server::replication
