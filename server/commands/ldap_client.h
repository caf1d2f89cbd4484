// server/commands/ldap_client.h: a minimal blocking LDAPv3 client over one TCP or Unix-domain
// socket connection (server/client/ldap_connection.h): a simple bind, a SASL EXTERNAL bind, Who
// am I? and a search that collects its entries. What `numadir stats` reads cn=Monitor with; not
// a general client (no referrals, no TLS, one operation at a time).
//
// Thread contract: owned and used by one thread; the destructor closes the connection.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "listener/wire/ldap_message.h"
#include "schema/entry.h"
#include "server/client/ldap_connection.h"

namespace numadir::server {

class LdapClient {
 public:
  // Connects to `url`: ldap://HOST[:PORT] (port 389 by default; HOST a name or an address,
  // an IPv6 address in brackets; none: 127.0.0.1), or a Unix-domain socket as
  // ldapi:///PATH, ldapi://%2FPATH or ldapi:// (server/client/ldap_url.h). Every later send
  // or receive waits at most `timeout_ms`.
  // Errors: kInvalidArgument for a URL of another form (ldaps:// included: no TLS yet); kIo
  //   naming the URL when the host does not resolve or no address accepts the connection;
  //   for ldapi: kNotFound "<url>: no such socket (No such file or directory): is a numadir
  //   serve listening there?", kIo "<url>: <the system's reason>" (Permission denied, ...).
  static Result<std::unique_ptr<LdapClient>> connect(std::string_view url, int timeout_ms = 10000);
  LdapClient(const LdapClient&) = delete;
  LdapClient& operator=(const LdapClient&) = delete;

  // A simple bind. Errors: kInvalidArgument with the result code and diagnostic when the server
  //   refuses it; kIo when the connection fails or times out; kMalformed for an answer that
  //   does not decode.
  Status simple_bind(std::string_view dn, std::string_view password);

  // A SASL EXTERNAL bind (RFC 4422 appendix A) with no authorization identity: over ldapi://
  // the server takes the identity from the socket's peer credentials.
  // Errors: kInvalidArgument "SASL EXTERNAL bind refused: <code and diagnostic>"; kIo and
  //   kMalformed as simple_bind.
  Status sasl_external_bind();

  // Returns: the Who am I? answer (RFC 4532): "dn:<DN>", or "" when anonymous.
  // Errors: kInvalidArgument "Who am I? refused: ..."; kIo and kMalformed as simple_bind.
  Result<std::string> who_am_i();

  // Returns: the entries a search finds, each with its attributes and values as sent.
  // Errors: kNoSuchObject when the server answers noSuchObject (32); kInvalidArgument for a
  //   filter that does not parse or another result code (named in the message); kIo and
  //   kMalformed as simple_bind.
  Result<std::vector<schema::Entry>> search(std::string_view base,
                                            listener::wire::SearchScope scope,
                                            std::string_view filter,
                                            const std::vector<std::string_view>& attributes);

 private:
  // Sends `request` (a BindRequest) and waits for its response.
  // Errors: kInvalidArgument "<what> refused: ..." for any result but success; kIo, kMalformed.
  Status bind(listener::wire::LdapMessage& request, std::string_view what);

  LdapClient(std::unique_ptr<LdapConnection> connection, int timeout_ms)
      : connection_(std::move(connection)), timeout_ms_(timeout_ms) {}

  const std::unique_ptr<LdapConnection> connection_;
  const int timeout_ms_;
};

}  // namespace numadir::server
