// server/replication/provider_check.cc: see provider_check.h.
#include "server/replication/provider_check.h"

#include "schema/ascii.h"
#include "server/client/ldap_connection.h"
#include "server/replication/provider_connection.h"
#include "server/replication/sync_protocol.h"

namespace numadir::server::replication {

namespace wire = listener::wire;

namespace {

// Runs a base search of `base` for `attribute` and collects the values of `attribute` in the
// entries it returns. Returns: the number of entries. Errors: each "<url>: <what>: <reason>"
// for a result other than success (kNoSuchObject for noSuchObject, else kInvalidArgument);
// the connection's ("<url>: <reason>").
Result<std::size_t> base_search(ProviderConnection& provider, std::string_view base,
                                std::string_view what, std::string_view attribute,
                                std::vector<std::string>& values) {
  const std::vector<std::string_view> attributes = {attribute};
  Result<std::int32_t> id =
      provider.send_search(base, wire::SearchScope::kBaseObject, "(objectClass=*)", attributes, {});
  if (!id.ok()) {
    return id.status();
  }
  const int timeout_ms = static_cast<int>(provider.consumer().timeout_ms);
  wire::LdapMessage message;
  std::size_t entries = 0;
  for (;;) {
    if (Status received = provider.receive(message, timeout_ms); !received.ok()) {
      return received;
    }
    if (message.message_id != *id) {
      if (!provider.usable()) {
        return Status(StatusCode::kIo, provider.url() + ": the server disconnected: " +
                                           describe_ldap_result(message.result));
      }
      continue;
    }
    switch (message.op) {
      case wire::ProtocolOp::kSearchResultEntry: {
        ++entries;
        const wire::AttributeList& list = message.search_entry.attributes;
        for (const auto& found : list.attributes()) {
          if (schema::ascii_iequals(found.type, attribute)) {
            for (std::string_view value : list.values(found)) {
              values.emplace_back(value);
            }
          }
        }
        continue;
      }
      case wire::ProtocolOp::kSearchResultReference:
        continue;
      case wire::ProtocolOp::kSearchResultDone:
        if (message.result.code == wire::ResultCode::kSuccess) {
          return entries;
        }
        return Status(message.result.code == wire::ResultCode::kNoSuchObject
                          ? StatusCode::kNoSuchObject
                          : StatusCode::kInvalidArgument,
                      provider.url() + ": " + std::string(what) + ": " +
                          describe_ldap_result(message.result));
      default:
        return malformed(provider.url() + ": a search answered with " +
                         std::string(wire::protocol_op_name(message.op)));
    }
  }
}

std::string identity_of(const ReplicationConsumerConfig& consumer) {
  return consumer.method == ReplicationBind::kExternal ? std::string("the client certificate")
                                                       : consumer.binddn;
}

}  // namespace

Result<ProviderCheck> check_provider(const ReplicationConsumerConfig& consumer) {
  Result<std::unique_ptr<ProviderConnection>> connected = ProviderConnection::connect(consumer);
  if (!connected.ok()) {
    return connected.status();
  }
  ProviderConnection& provider = **connected;
  ProviderCheck check;
  check.url = provider.url();
  check.tls = provider.tls_version();
  check.starttls_refusal = provider.starttls_refusal();
  if (Status bound = provider.bind(); !bound.ok()) {
    return bound;
  }
  std::vector<std::string> controls;
  if (Result<std::size_t> read =
          base_search(provider, "", "root DSE", "supportedControl", controls);
      !read.ok()) {
    return read.status();
  }
  for (const std::string& oid : controls) {
    check.offers_sync = check.offers_sync || oid == kSyncRequestOid;
  }
  const std::string what = "searchbase " + consumer.searchbase;
  std::vector<std::string> unused;
  Result<std::size_t> base = base_search(provider, consumer.searchbase, what, "1.1", unused);
  if (!base.ok() && base.status().code() != StatusCode::kNoSuchObject) {
    return base.status();
  }
  if (!base.ok() || *base == 0) {
    // slapd answers noSuchObject for an entry the identity may not see, too.
    return Status(StatusCode::kNoSuchObject, provider.url() + ": " + what +
                                                 ": no such object on the provider, or " +
                                                 identity_of(consumer) + " may not read it");
  }
  if (Status unbound = provider.unbind(); !unbound.ok()) {
    return unbound;
  }
  return check;
}

std::string describe_provider_check(const ReplicationConsumerConfig& consumer,
                                    const ProviderCheck& check) {
  const std::string head =
      "replication.consumer rid=" + std::to_string(consumer.rid) + ": " + check.url + ": ";
  if (!check.offers_sync) {
    return head + "the provider does not offer the Sync Request control (" +
           std::string(kSyncRequestOid) +
           " is not in its root DSE's supportedControl): load the syncprov overlay on its "
           "database";
  }
  std::string how;
  if (!check.tls.empty()) {
    how = check.tls + (consumer.provider.tls() ? "" : " after StartTLS");
  } else if (!check.starttls_refusal.empty()) {
    how = "in the clear: StartTLS refused (" + check.starttls_refusal + ")";
  } else {
    how = "in the clear";
  }
  return head + "ok, offers the Sync Request control (" + how + ", bound as " +
         identity_of(consumer) + ", searchbase readable)";
}

}  // namespace numadir::server::replication
