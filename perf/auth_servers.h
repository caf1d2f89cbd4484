// perf/auth_servers.h: the servers one authrate run drives (several -H URLs: a replicated set
// of read replicas, as nslcd and SSSD take a URI list), and the failover policy its
// connections follow: connection i starts on URL i mod n (skipping the URLs the preflight
// could not reach), a connection whose server fails (refused connect, reset or closed
// connection, Notice of Disconnection, failed TLS handshake, --timeout) moves to the next URL
// in the list and stays there (as nslcd and SSSD stay on the server that works), and only
// after a full round of failures, every usable URL once, does it wait before trying again.
//
// Thread contract: a ServerList is immutable after construction; any thread may call its const
// methods. split_url_list() is a function of its arguments.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "perf/auth_stats.h"
#include "perf/tls_client.h"

namespace numadir::perf {

// Splits the -H values (the option may be repeated, and each value may hold several URLs
// separated by spaces or commas, as OpenLDAP's tools accept) into one URL each, in order.
// Returns: the URLs, empty pieces dropped; duplicates are kept (each is its own server).
// Errors: kInvalidArgument when there is no URL at all or more than kMaxServers.
Result<std::vector<std::string>> split_url_list(const std::vector<std::string>& values);

// One server of the list.
struct ServerTarget {
  std::string url;  // As given; reports name the server by it.
  sockaddr_storage address{};
  socklen_t address_len = 0;       // 0: the name did not resolve; never connected to.
  const TlsClient* tls = nullptr;  // nullptr: in the clear. Outlives the list's users.
  // The preflight reached it. A connection never starts on a server that was not reached (it
  // takes the next one that was), but may fail over to it later.
  bool reachable_at_start = true;

  bool usable() const { return address_len > 0; }
};

class ServerList {
 public:
  // Requires: 1 <= servers.size() <= kMaxServers, and at least one server usable().
  explicit ServerList(std::vector<ServerTarget> servers);

  std::size_t size() const { return servers_.size(); }
  const ServerTarget& operator[](std::size_t index) const { return servers_[index]; }
  // Returns: how many servers are usable() (the length of a full round of failovers).
  std::size_t usable_count() const { return usable_count_; }

  // Returns: the server connection `connection_index` (numbered over the whole run) starts on:
  //   the first usable one reachable at start at or after index mod size(), else the first
  //   usable one at or after it.
  std::size_t initial(std::size_t connection_index) const;
  // Returns: the server a connection goes to after a failure on `failed`: the next usable one
  //   after it in the list, wrapping around (`failed` itself when it is the only usable one).
  std::size_t next(std::size_t failed) const;
  // Returns: how long a connection waits before its next try after its `failures_in_row`-th
  //   failure in a row (no successful open between them): `full_round_delay_ns` when that
  //   failure ends a full round of usable_count() failures, else 0 (the next server is tried
  //   at once). With one server every failure ends a round.
  // Requires: failures_in_row >= 1.
  std::int64_t retry_delay_ns(std::uint32_t failures_in_row,
                              std::int64_t full_round_delay_ns) const;

 private:
  const std::vector<ServerTarget> servers_;
  const std::size_t usable_count_;
};

}  // namespace numadir::perf
