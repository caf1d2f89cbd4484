// server/commands/ldap_client.cc: see ldap_client.h.
#include "server/commands/ldap_client.h"

#include "server/client/ldap_url.h"
#include "server/operations/root_dse.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;

Result<std::unique_ptr<LdapClient>> LdapClient::connect(std::string_view url, int timeout_ms) {
  Result<LdapUrl> where = parse_ldap_url(url);
  if (!where.ok()) {
    return where.status();
  }
  if (where->tls()) {
    return invalid_argument("\"" + std::string(url) +
                            "\": the URL must be ldap://HOST[:PORT] or ldapi://PATH");
  }
  LdapConnectOptions options;
  options.connect_timeout_ms = timeout_ms;
  options.send_timeout_ms = timeout_ms;
  Result<std::unique_ptr<LdapConnection>> connection = LdapConnection::connect(*where, options);
  if (!connection.ok()) {
    std::string message = std::string(url) + ": " + connection.status().message();
    if (where->is_local() && connection.status().code() == StatusCode::kNotFound) {
      message += ": is a numadir serve listening there?";
    }
    return Status(connection.status().code(), std::move(message));
  }
  return std::unique_ptr<LdapClient>(new LdapClient(std::move(*connection), timeout_ms));
}

Status LdapClient::simple_bind(std::string_view dn, std::string_view password) {
  LdapMessage request;
  request.reset(0, ProtocolOp::kBindRequest);
  request.bind_request.name = dn;
  request.bind_request.simple_password = password;
  return bind(request, "bind");
}

Status LdapClient::sasl_external_bind() {
  LdapMessage request;
  request.reset(0, ProtocolOp::kBindRequest);
  request.bind_request.method = listener::wire::BindMethod::kSasl;
  request.bind_request.sasl_mechanism = "EXTERNAL";
  return bind(request, "SASL EXTERNAL bind");
}

Status LdapClient::bind(LdapMessage& request, std::string_view what) {
  LdapMessage response;
  NUMADIR_RETURN_IF_ERROR(
      connection_->exchange(request, ProtocolOp::kBindResponse, response, timeout_ms_));
  if (response.result.code != ResultCode::kSuccess) {
    return invalid_argument(std::string(what) +
                            " refused: " + describe_ldap_result(response.result));
  }
  return Status();
}

Result<std::string> LdapClient::who_am_i() {
  LdapMessage request;
  request.reset(0, ProtocolOp::kExtendedRequest);
  request.extended.name = kWhoAmIOid;
  LdapMessage response;
  NUMADIR_RETURN_IF_ERROR(
      connection_->exchange(request, ProtocolOp::kExtendedResponse, response, timeout_ms_));
  if (response.result.code != ResultCode::kSuccess) {
    return invalid_argument("Who am I? refused: " + describe_ldap_result(response.result));
  }
  return std::string(response.extended.value.value_or(std::string_view()));
}

Result<std::vector<schema::Entry>> LdapClient::search(
    std::string_view base, listener::wire::SearchScope scope, std::string_view filter,
    const std::vector<std::string_view>& attributes) {
  Result<schema::Filter> parsed = schema::Filter::parse(filter);
  if (!parsed.ok()) {
    return invalid_argument("filter " + std::string(filter) + ": " + parsed.status().message());
  }
  LdapMessage request;
  const std::int32_t id = connection_->next_message_id();
  request.reset(id, ProtocolOp::kSearchRequest);
  request.search_request.base_object = base;
  request.search_request.scope = scope;
  request.search_request.filter = std::move(*parsed);
  request.search_request.attributes = attributes;
  NUMADIR_RETURN_IF_ERROR(connection_->send(request));
  std::vector<schema::Entry> entries;
  LdapMessage response;
  for (;;) {
    NUMADIR_RETURN_IF_ERROR(connection_->receive(response, timeout_ms_));
    if (response.message_id != id) {
      if (!connection_->usable()) {
        return Status(StatusCode::kIo,
                      "the server disconnected: " + describe_ldap_result(response.result));
      }
      continue;  // Nothing of ours.
    }
    if (response.op == ProtocolOp::kSearchResultEntry) {
      schema::Entry entry;
      entry.dn = std::string(response.search_entry.object_name);
      const listener::wire::AttributeList& list = response.search_entry.attributes;
      for (const auto& attribute : list.attributes()) {
        schema::EntryAttribute copy{std::string(attribute.type), {}};
        for (std::string_view value : list.values(attribute)) {
          copy.values.emplace_back(value);
        }
        entry.attributes.push_back(std::move(copy));
      }
      entries.push_back(std::move(entry));
      continue;
    }
    if (response.op == ProtocolOp::kSearchResultReference) {
      continue;
    }
    if (response.op != ProtocolOp::kSearchResultDone) {
      return malformed("the server answered a search with " +
                       std::string(listener::wire::protocol_op_name(response.op)));
    }
    if (response.result.code == ResultCode::kNoSuchObject) {
      return Status(StatusCode::kNoSuchObject, std::string(base) + ": no such object");
    }
    if (response.result.code != ResultCode::kSuccess) {
      return invalid_argument("search of " + std::string(base) + ": " +
                              describe_ldap_result(response.result));
    }
    return entries;
  }
}

}  // namespace numadir::server
