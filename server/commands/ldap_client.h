// server/commands/ldap_client.h: a minimal blocking LDAPv3 client over one TCP connection, on the
// server's own codec (listener/wire): a simple bind and a search that collects its entries.
// What `numadir stats` reads cn=Monitor with; not a general client (no referrals, no TLS, one
// operation at a time).
//
// Thread contract: owned and used by one thread; the destructor closes the connection.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/ldap_message.h"
#include "schema/entry.h"

namespace numadir::server {

class LdapClient {
 public:
  // Connects to `url`: ldap://HOST[:PORT] (port 389 by default; HOST a name or an address,
  // an IPv6 address in brackets). Every later send or receive waits at most `timeout_ms`.
  // Errors: kInvalidArgument for a URL of another form (ldaps:// included: no TLS yet); kIo
  //   naming the URL when the host does not resolve or no address accepts the connection.
  static Result<std::unique_ptr<LdapClient>> connect(std::string_view url, int timeout_ms = 10000);
  LdapClient(const LdapClient&) = delete;
  LdapClient& operator=(const LdapClient&) = delete;
  ~LdapClient();

  // A simple bind. Errors: kInvalidArgument with the result code and diagnostic when the server
  //   refuses it; kIo when the connection fails or times out; kMalformed for an answer that
  //   does not decode.
  Status simple_bind(std::string_view dn, std::string_view password);

  // Returns: the entries a search finds, each with its attributes and values as sent.
  // Errors: kNoSuchObject when the server answers noSuchObject (32); kInvalidArgument for a
  //   filter that does not parse or another result code (named in the message); kIo and
  //   kMalformed as simple_bind.
  Result<std::vector<schema::Entry>> search(std::string_view base,
                                            listener::wire::SearchScope scope,
                                            std::string_view filter,
                                            const std::vector<std::string_view>& attributes);

 private:
  explicit LdapClient(int fd) : fd_(fd) {}
  Status send(const listener::wire::LdapMessage& message);
  // Reads the next message into `message` (which views pdu_ until the next call).
  Status receive(listener::wire::LdapMessage& message);

  const int fd_;
  std::int32_t next_id_ = 1;
  listener::wire::BerWriter writer_;
  std::string buffer_;  // Bytes read and not yet framed.
  std::string pdu_;     // The last message received.
};

}  // namespace numadir::server
