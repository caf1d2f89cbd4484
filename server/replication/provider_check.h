// server/replication/provider_check.h: `numadir check-config --online` for one
// [[replication.consumer]]: reach the provider as the consumer will (connect, TLS, bind), read
// its root DSE's supportedControl for the Sync Request control (RFC 4533), and check that the
// bind identity can read searchbase (a base search).
//
// Thread contract: a blocking function of its arguments; any thread (check-config's main one).
#pragma once

#include <string>

#include "base/status.h"
#include "server/formats/replication_consumer_config.h"

namespace numadir::server::replication {

struct ProviderCheck {
  std::string url;               // The provider, as connections name it.
  std::string tls;               // "TLSv1.3" (via StartTLS or ldaps://), or "" in the clear.
  std::string starttls_refusal;  // starttls = "yes" and refused: why (then in the clear).
  bool offers_sync = false;      // The root DSE lists 1.3.6.1.4.1.4203.1.9.1.1.
};

// Returns: what the check found; ok with offers_sync false when everything but the control is
//   fine (the caller decides that this fails).
// Errors: each "<provider URL>: <reason>": ProviderConnection::connect's and bind's;
//   kNoSuchObject "searchbase <dn>: no such object on the provider (or hidden from <identity>)";
//   kInvalidArgument for another result of either search; kIo, kMalformed as receive.
Result<ProviderCheck> check_provider(const ReplicationConsumerConfig& consumer);

// Returns: the line check-config prints for `check`: "replication.consumer rid=1:
//   ldap://host:389: ok, offers the Sync Request control (...)", or the error line for a
//   provider without the control.
std::string describe_provider_check(const ReplicationConsumerConfig& consumer,
                                    const ProviderCheck& check);

}  // namespace numadir::server::replication
