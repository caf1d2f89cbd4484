// server/replication/sync_provider_status.h: what the replication provider (RFC 4533 syncprov)
// tells of each consumer attached to it, for cn=Monitor and `numadir stats`.
//
// Thread contract: values, copied out of the provider at one moment (SyncProvider::status).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace numadir::server::replication {

// One sync search being served (a consumer's refreshOnly or refreshAndPersist search).
struct ProviderConsumerStatus {
  std::uint64_t connection_id = 0;  // conn= of the access log.
  std::int32_t message_id = 0;      // The sync search's message ID on that connection.
  std::string peer;                 // "IP:port", or "PATH=<socket>" for ldapi://.
  std::string identity;             // The bound DN ("" anonymous).
  int rid = -1;                     // The rid of the consumer's cookie; -1 when it sent none.
  bool persist = false;             // refreshAndPersist (else refreshOnly).
  bool refreshing = true;           // In its refresh phase (else persisting).
  std::string base;                 // The search base as the consumer sent it.
  std::uint64_t entries_sent = 0;   // Refresh: entries sent (with content or as present).
  std::uint64_t changes_sent = 0;   // Persist: changes sent.
  std::uint64_t queue_depth = 0;    // Persist: changes waiting to be sent.
  std::uint64_t queue_capacity = 0;
  std::chrono::system_clock::time_point since;  // When the sync search began.
  std::string last_csn;                         // The CSN of the last cookie sent ("" none yet).
  // How far the consumer is behind: the time of the provider's contextCSN less the time of
  // last_csn, in milliseconds (0 when it is up to date or nothing was sent).
  std::uint64_t lag_ms = 0;
};

struct ProviderStatus {
  bool enabled = false;
  std::uint64_t session_log_entries = 0;  // [replication.provider] sessionlog.
  std::string context_csn;
  std::uint64_t searches_served = 0;  // Sync searches begun since the start.
  // Sync searches refused for their cookie (unwillingToPerform, as slapd: newer than this
  // provider's state, or state while it has none). numadir never sends e-syncRefreshRequired: a
  // cookie the session log does not cover gets a present phase.
  std::uint64_t refused = 0;
  std::uint64_t fell_behind = 0;  // Persist searches ended for a full queue.
  std::vector<ProviderConsumerStatus> consumers;
};

}  // namespace numadir::server::replication
