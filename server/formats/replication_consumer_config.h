// server/formats/replication_consumer_config.h: one [[replication.consumer]] table of
// numadir.toml, a provider this server replicates from over RFC 4533 (syncrepl), with the keys
// of slapd's `syncrepl` directive (slapd.conf(5)); parsed and checked by
// server/formats/config_replication.cc, its files and DNs by compile_server_config
// (server/commands/server_config.h); `check-config --online` reaches each provider with them
// (server/replication/provider_check.h).
//
//   [[replication.consumer]]
//   rid = 1                                  # 1..999, unique
//   provider = "ldaps://ldap1.example.com"   # ldap:// or ldaps://, HOST[:PORT]
//   starttls = "no"                          # no | yes (fall back to clear text) | critical
//   searchbase = "dc=example,dc=com"         # the database suffix or under it
//   scope = "sub"                            # sub | one | base
//   filter = "(objectClass=*)"
//   attrs = ["*", "+"]
//   type = "refreshAndPersist"               # or "refreshOnly" (then every `interval`)
//   interval = "01:00:00:00"                 # dd:hh:mm:ss (or seconds); refreshOnly only
//   method = "simple"                        # simple | external
//   binddn = "cn=replicator,dc=example,dc=com"
//   credentials_file = "replicator.pw"       # its password (mode 0600)
//   certificate = "client.crt"               # client certificate and key (external)
//   key = "client.key"
//   ca_file = "ca.crt"                       # CAs for the provider (required with TLS ...
//   tls_verify = true                        # ... unless false: no verification at all)
//   retry = "60 +"                           # "interval count" pairs; "+": forever
//   keepalive = ""                           # "idle:probes:interval" seconds; "": off
//   timeout_ms = 10000                       # an answer to bind, StartTLS, a check's search
//   network_timeout_ms = 10000               # TCP connect and TLS handshake
//   persist_batch_ms = 10                    # a persist change waits for others to share
//                                            # its commit (0: each committed on its own)
//   schemachecking = false                   # check the provider's entries against this
//                                            # schema too (slapd's syncrepl option; off)
//   max_pdu_size = "16MiB"                   # the largest message taken from the provider
//   updateref = "ldap://ldap1.example.com"   # where writes are referred (default: provider)
//
// Thread contract: values; parsed once at startup, immutable afterwards.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "listener/wire/ldap_message.h"
#include "server/client/ldap_url.h"
#include "server/client/tcp_keepalive.h"

namespace numadir::server {

enum class StartTlsMode : std::uint8_t {
  kNo,        // No StartTLS (an ldaps:// provider has TLS from the first byte).
  kYes,       // Try it; a provider that refuses it is used in the clear (slapd's starttls=yes).
  kCritical,  // Require it: a refusal fails the connection.
};

enum class ReplicationType : std::uint8_t { kRefreshAndPersist, kRefreshOnly };

enum class ReplicationBind : std::uint8_t {
  kSimple,    // binddn and the password of credentials_file.
  kExternal,  // SASL EXTERNAL: the TLS client certificate is the identity.
};

// One step of the retry schedule: wait interval_s between tries, `count` times (or forever).
struct RetryStep {
  std::uint32_t interval_s = 60;
  std::uint32_t count = 0;  // Unused when forever.
  bool forever = false;

  friend bool operator==(const RetryStep&, const RetryStep&) = default;
};

struct ReplicationConsumerConfig {
  std::string origin;  // "replication.consumer[0]": what messages name it by.
  int rid = 0;
  LdapUrl provider;
  std::string provider_text;  // As written, for messages and updateref's default.
  StartTlsMode starttls = StartTlsMode::kNo;
  std::string searchbase;
  listener::wire::SearchScope scope = listener::wire::SearchScope::kWholeSubtree;
  std::string filter = "(objectClass=*)";
  std::vector<std::string> attrs = {"*", "+"};
  ReplicationType type = ReplicationType::kRefreshAndPersist;
  std::uint64_t interval_s = 86400;  // refreshOnly: the pause between refreshes.
  ReplicationBind method = ReplicationBind::kSimple;
  std::string binddn;
  std::filesystem::path credentials_file;
  // The password read from credentials_file (less its trailing newline) by
  // compile_server_config; empty in a Config from parse_config alone.
  std::string credentials;
  std::filesystem::path certificate;  // Client certificate (PEM); with key.
  std::filesystem::path key;
  std::filesystem::path ca_file;  // CAs the provider's certificate must chain to.
  bool tls_verify = true;
  std::vector<RetryStep> retry = {RetryStep{60, 0, true}};
  TcpKeepalive keepalive;  // Off by default.
  std::uint32_t timeout_ms = 10000;
  std::uint32_t network_timeout_ms = 10000;
  // The persist phase: the longest a change received waits for the next ones to share its
  // commit (one flush for several under durability "sync"). 0: each change on its own.
  std::uint32_t persist_batch_ms = 10;
  // Whether each entry the provider sends is checked against this server's schema before it
  // is stored (a violation stops replication until the schemas agree). false, slapd's default:
  // the provider checked it; its attribute types must still be known here.
  bool schemachecking = false;
  std::size_t max_pdu_bytes = 16 * 1024 * 1024;
  LdapUrl updateref;  // Default: the provider.

  // Whether the connection uses TLS: ldaps://, or StartTLS (yes or critical).
  bool uses_tls() const { return provider.tls() || starttls != StartTlsMode::kNo; }
};

// Parses slapd's syncrepl interval: "dd:hh:mm:ss" (hh < 24, mm and ss < 60; dd any number of
// digits) or a plain number of seconds. Returns: the seconds.
// Errors: kInvalidArgument naming the field at fault; 0 seconds is refused.
Result<std::uint64_t> parse_sync_interval(std::string_view text);

// Parses slapd's retry schedule: pairs "<interval seconds> <count>" separated by spaces, the
// last count possibly "+" (forever), e.g. "5 10 60 +": every 5 s ten times, then every minute
// for ever. Errors: kInvalidArgument (an odd number of fields, a "+" before the last pair, an
// interval or count that is 0 or not a number, an empty schedule).
Result<std::vector<RetryStep>> parse_retry_schedule(std::string_view text);

}  // namespace numadir::server
