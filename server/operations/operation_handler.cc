// server/operations/operation_handler.cc: construction, sessions, request dispatch and control
// checks, the per-thread read transactions, and sending results. The operations themselves live in
// bind_operation.cc, search_operation.cc, update_operations.cc and extended_operations.cc.
#include "server/operations/operation_handler.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <utility>

#include "schema/dn.h"
#include "server/operations/root_dse.h"
#include "server/operations/subschema.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;

namespace {

// Handler ids for the thread-local transaction cache. Never reused, so a cache entry left
// behind by a destroyed handler can never be mistaken for a live one's.
std::atomic<std::uint64_t> next_handler_key{1};  // Relaxed: only uniqueness matters.

struct CachedTxn {
  std::uint64_t key;
  backend::ReadTxn* txn;  // Owned by the handler with that key.
};
thread_local std::vector<CachedTxn> cached_txns;
// Marks the key of a handler's side transaction (handler keys never reach this bit).
constexpr std::uint64_t kSideTxnKey = std::uint64_t{1} << 63;

// Returns: the response operation answering `op`, or nullopt for operations that have none.
std::optional<ProtocolOp> response_op(ProtocolOp op) {
  switch (op) {
    case ProtocolOp::kBindRequest:
      return ProtocolOp::kBindResponse;
    case ProtocolOp::kSearchRequest:
      return ProtocolOp::kSearchResultDone;
    case ProtocolOp::kModifyRequest:
      return ProtocolOp::kModifyResponse;
    case ProtocolOp::kAddRequest:
      return ProtocolOp::kAddResponse;
    case ProtocolOp::kDelRequest:
      return ProtocolOp::kDelResponse;
    case ProtocolOp::kModifyDnRequest:
      return ProtocolOp::kModifyDnResponse;
    case ProtocolOp::kCompareRequest:
      return ProtocolOp::kCompareResponse;
    case ProtocolOp::kExtendedRequest:
      return ProtocolOp::kExtendedResponse;
    default:
      return std::nullopt;
  }
}

// Returns: an error result when a control of `request` cannot be honoured: an unknown critical
//   control, or a known one used where it does not apply while marked critical (RFC 4511
//   §4.1.11); nullopt when the operation may proceed. Non-critical unknown controls are ignored.
std::optional<OwnedResult> check_controls(const LdapMessage& request) {
  for (const listener::wire::Control& control : request.controls) {
    if (control.type == kManageDsaItOid) {
      if (control.value.has_value()) {
        return OwnedResult::error(ResultCode::kProtocolError,
                                  "manageDSAit control value not absent");
      }
      continue;
    }
    if (control.type == kPagedResultsOid && request.op == ProtocolOp::kSearchRequest) {
      continue;  // Decoded by search().
    }
    if (control.criticality) {
      return OwnedResult::error(ResultCode::kUnavailableCriticalExtension,
                                "critical extension is unavailable");
    }
  }
  return std::nullopt;
}

}  // namespace

OperationHandler::OperationHandler(backend::Directory& directory, HandlerOptions options)
    : directory_(directory),
      options_(std::move(options)),
      catalog_(directory.schema()),
      dn_normalizer_(directory.schema()),
      verify_policy_{.allow_cleartext = options_.allow_cleartext_passwords},
      user_password_type_(directory.schema().attribute_type("userPassword")),
      root_dse_(make_root_dse(
          RootDseOptions{directory.options().suffix, options_.vendor_version, options_.tls,
                         options_.monitor != nullptr ? std::string(kMonitorDn) : std::string()})),
      subschema_(make_subschema_entry(directory.schema(), std::chrono::system_clock::now())),
      subschema_ndn_(schema::Dn::parse(kSubschemaEntryDn)->normalized(&dn_normalizer_)),
      txn_key_(next_handler_key.fetch_add(1, std::memory_order_relaxed)) {
  if (Result<schema::Dn> suffix = schema::Dn::parse(directory.options().suffix); suffix.ok()) {
    suffix_key_ = backend::dn_key(*suffix, dn_normalizer_);
  }
  if (Result<std::string> ndn = normalize_dn(kMonitorDn); ndn.ok()) {
    monitor_ndn_ = std::move(*ndn);
  }
  if (!options_.root_dn.empty()) {
    if (Result<std::string> ndn = normalize_dn(options_.root_dn); ndn.ok()) {
      root_ndn_ = std::move(*ndn);
    }
  }
  Result<std::unique_ptr<AccessControl>> access = AccessControl::create(
      catalog_, options_.access_rules, [this](std::string_view dn) { return normalize_dn(dn); });
  if (access.ok()) {
    access_ = std::move(*access);
  } else {
    // Only the rootdn: a rule that does not compile must not open the directory wider.
    std::fprintf(stderr, "numadir: %s; only the rootdn has access\n",
                 access.status().message().c_str());
    const AccessRuleSpec nobody{"access[deny]",
                                "",
                                DnScope::kSubtree,
                                "",
                                {},
                                {AccessSubjectSpec{"*", "", DnScope::kBase, "", 0}}};
    access_ = std::move(*AccessControl::create(
        catalog_, {nobody}, [](std::string_view dn) { return schema::normalize_dn(dn); }));
  }
}

Status OperationHandler::check_access_rules(const schema::Schema& schema,
                                            const std::vector<AccessRuleSpec>& rules) {
  const backend::AttributeCatalog catalog(schema);
  const backend::SchemaDnNormalizer normalizer(schema);
  Result<std::unique_ptr<AccessControl>> access =
      AccessControl::create(catalog, rules, [&](std::string_view dn) -> Result<std::string> {
        Result<schema::Dn> parsed = schema::Dn::parse(dn);
        if (!parsed.ok()) {
          return parsed.status();
        }
        for (std::size_t i = 0; i < parsed->rdn_count(); ++i) {
          for (const schema::Ava& ava : parsed->rdn(i)) {
            if (schema.attribute_type(ava.type) == nullptr) {
              return invalid_argument("attribute type \"" + std::string(ava.type) +
                                      "\" of the DN is not in the schema");
            }
          }
        }
        return parsed->normalized(&normalizer);
      });
  return access.ok() ? Status() : access.status();
}

bool OperationHandler::DirectoryGroups::is_member(std::string_view group_ndn,
                                                  std::string_view member_ndn) const {
  for (const auto& [group, answer] : answers_) {
    if (group == group_ndn) {
      return answer;
    }
  }
  bool member = false;
  const auto on_entry = [&](const backend::EntryRef& entry) {
    for (const std::string_view attribute : {"member", "uniqueMember"}) {
      for (std::string_view value : entry.values(attribute)) {
        Result<std::string> ndn = handler_.normalize_dn(value);
        if (!ndn.ok() && attribute == "uniqueMember") {
          // Name and Optional UID (RFC 4517 3.3.21): "<dn>#'0101'B".
          if (const std::size_t hash = value.rfind("#'"); hash != std::string_view::npos) {
            ndn = handler_.normalize_dn(value.substr(0, hash));
          }
        }
        if (ndn.ok() && *ndn == member_ndn) {
          member = true;
          return;
        }
      }
    }
  };
  // The side transaction: a search may be holding the first one open around this check.
  (void)handler_.directory_.lookup(handler_.side_read_txn(), group_ndn, std::ref(on_entry));
  answers_.emplace_back(std::string(group_ndn), member);
  return member;
}

std::optional<schema::Entry> OperationHandler::entry_for_access(std::string_view dn) const {
  if (!access_->needs_entry()) {
    return std::nullopt;
  }
  Result<schema::Entry> entry = directory_.get(side_read_txn(), dn);
  if (!entry.ok()) {
    return std::nullopt;
  }
  return std::move(*entry);
}

bool OperationHandler::discloses(const Requester& who, std::string_view dn) const {
  if (access_->is_default() || who.identity.root) {
    return true;
  }
  Result<std::string> ndn = normalize_dn(dn);
  if (!ndn.ok()) {
    return false;
  }
  return may(who, *ndn, entry_for_access(dn), AccessAttribute::entry(), AccessLevel::kDisclose);
}

OperationHandler::~OperationHandler() = default;

void OperationHandler::tls_established(listener::Session& session, const listener::TlsPeer& peer) {
  static_cast<ServerSession&>(session).set_tls(peer);
}

std::unique_ptr<listener::Session> OperationHandler::open_session(
    const listener::ConnectionInfo& info) {
  return std::make_unique<ServerSession>(info);
}

void OperationHandler::handle(const LdapMessage& request, listener::Session& session,
                              listener::ResponseSink& sink, threadpool::WorkerState& /*state*/) {
  if (!response_op(request.op).has_value()) {
    return;  // Not a request we answer (the listener handles unbind and abandon).
  }
  operation_counters_.count(request.op);
  auto& server_session = static_cast<ServerSession&>(session);
  if (std::optional<OwnedResult> refused = check_controls(request); refused.has_value()) {
    if (request.op == ProtocolOp::kExtendedRequest) {
      send_extended(request, *refused, std::nullopt, sink);
    } else {
      send_result(request, *refused, sink);
    }
    return;
  }
  switch (request.op) {
    case ProtocolOp::kBindRequest:
      bind(request, server_session, sink);
      return;
    case ProtocolOp::kSearchRequest:
      search(request, server_session, sink);
      return;
    case ProtocolOp::kExtendedRequest:
      extended(request, server_session, sink);
      return;
    default:
      break;
  }
  const Identity who = server_session.identity();
  switch (request.op) {
    case ProtocolOp::kCompareRequest:
      compare(request, who, sink);
      return;
    case ProtocolOp::kAddRequest:
      add(request, who, sink);
      return;
    case ProtocolOp::kModifyRequest:
      modify(request, who, sink);
      return;
    case ProtocolOp::kDelRequest:
      remove(request, who, sink);
      return;
    case ProtocolOp::kModifyDnRequest:
      rename(request, who, sink);
      return;
    default:
      return;
  }
}

backend::ReadTxn& OperationHandler::read_txn() const { return cached_read_txn(txn_key_); }

backend::ReadTxn& OperationHandler::side_read_txn() const {
  return cached_read_txn(txn_key_ | kSideTxnKey);
}

backend::ReadTxn& OperationHandler::cached_read_txn(std::uint64_t key) const {
  for (const CachedTxn& cached : cached_txns) {
    if (cached.key == key) {
      return *cached.txn;
    }
  }
  std::unique_ptr<backend::ReadTxn> txn = directory_.begin_read();
  backend::ReadTxn* raw = txn.get();
  {
    MutexLock lock(txns_mu_);
    txns_.push_back(std::move(txn));
  }
  cached_txns.push_back(CachedTxn{key, raw});
  return *raw;
}

Status OperationHandler::check_rdns(const schema::Dn& dn, std::size_t first,
                                    std::size_t end) const {
  const schema::Schema& schema = directory_.schema();
  for (std::size_t i = first; i < end; ++i) {
    for (const schema::Ava& ava : dn.rdn(i)) {
      const schema::AttributeType* type = schema.attribute_type(ava.type);
      if (type == nullptr) {
        return Status(StatusCode::kInvalidDnSyntax,
                      "DN: undefined attribute type " + std::string(ava.type));
      }
      if (!ava.hex_form && type->syntax != nullptr && !type->syntax->validate(ava.value)) {
        return Status(StatusCode::kInvalidDnSyntax,
                      "DN: value of " + std::string(ava.type) + " invalid per syntax");
      }
    }
  }
  return Status();
}

Result<schema::Dn> OperationHandler::parse_dn(std::string_view dn) const {
  Result<schema::Dn> parsed = schema::Dn::parse(dn);
  if (!parsed.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, parsed.status().message());
  }
  NUMADIR_RETURN_IF_ERROR(check_dn(*parsed));
  return parsed;
}

Result<std::string> OperationHandler::normalize_dn(std::string_view dn) const {
  Result<schema::Dn> parsed = parse_dn(dn);
  if (!parsed.ok()) {
    return parsed.status();
  }
  return parsed->normalized(&dn_normalizer_);
}

Status OperationHandler::normalize_dn_into(std::string_view dn, std::string& out) const {
  thread_local schema::Dn parsed;  // Scratch: its buffers keep their capacity across calls.
  if (Status status = schema::Dn::parse_into(dn, parsed); !status.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, status.message());
  }
  struct Parent {
    std::uint64_t handler_key = 0;  // txn_key_ of the handler that filled it; 0: empty.
    schema::Dn dn;                  // As parsed: checked, spelled as the DN that brought it.
    std::string normalized;
  };
  thread_local Parent parent;
  const std::size_t rdns = parsed.rdn_count();
  const bool known_parent =
      rdns > 1 && parent.handler_key == txn_key_ && parsed.ends_with(parent.dn, 1);
  NUMADIR_RETURN_IF_ERROR(check_rdns(parsed, 0, known_parent ? 1 : rdns));
  out.clear();
  parsed.append_normalized_rdns(out, &dn_normalizer_, 0, std::min<std::size_t>(rdns, 1));
  if (known_parent) {
    out += ',';
    out += parent.normalized;
  } else if (rdns > 1) {
    out += ',';
    const std::size_t parent_start = out.size();
    parsed.append_normalized_rdns(out, &dn_normalizer_, 1, rdns);
    parent.handler_key = 0;
    parent.dn = parsed.parent();
    parent.normalized.assign(out, parent_start);
    parent.handler_key = txn_key_;
  }
  return Status();
}

Result<std::string_view> OperationHandler::normalize_dn_cached(std::string_view dn) const {
  struct Cached {
    std::uint64_t handler_key = 0;  // txn_key_ of the handler that filled it; 0: empty.
    std::string dn;
    std::string ndn;
  };
  thread_local Cached cached;
  if (cached.handler_key == txn_key_ && cached.dn == dn) {
    return std::string_view(cached.ndn);
  }
  cached.handler_key = 0;
  NUMADIR_RETURN_IF_ERROR(normalize_dn_into(dn, cached.ndn));
  cached.dn.assign(dn);
  cached.handler_key = txn_key_;
  return std::string_view(cached.ndn);
}

bool OperationHandler::in_naming_context(const schema::Dn& dn) const {
  if (suffix_key_.empty()) {
    return true;
  }
  const std::string key = backend::dn_key(dn, dn_normalizer_);
  return key == suffix_key_ || backend::key_is_below(key, suffix_key_);
}

const schema::AttributeType* OperationHandler::attribute_type(std::string_view description) const {
  const backend::AttributeInfo* info =
      catalog_.resolve(schema::split_description(description).first);
  return info != nullptr ? info->type : nullptr;
}

void OperationHandler::send_result(const LdapMessage& request, const OwnedResult& result,
                                   listener::ResponseSink& sink) const {
  const std::optional<ProtocolOp> op = response_op(request.op);
  if (!op.has_value()) {
    return;
  }
  LdapMessage response;
  response.message_id = request.message_id;
  response.op = *op;
  response.result.code = result.code;
  response.result.matched_dn = result.matched_dn;
  response.result.diagnostic_message = result.diagnostic;
  sink.send(response);
}

void OperationHandler::send_extended(const LdapMessage& request, const OwnedResult& result,
                                     std::optional<std::string_view> value,
                                     listener::ResponseSink& sink) const {
  LdapMessage response;
  response.message_id = request.message_id;
  response.op = ProtocolOp::kExtendedResponse;
  response.result.code = result.code;
  response.result.matched_dn = result.matched_dn;
  response.result.diagnostic_message = result.diagnostic;
  response.extended.value = value;
  sink.send(response);
}

void OperationHandler::send_status(const LdapMessage& request, const Status& status,
                                   listener::ResponseSink& sink) const {
  const OwnedResult result = result_from_status(status);
  if (result.code == ResultCode::kOther) {
    std::fprintf(stderr, "numadir: %s (message %d): %s\n",
                 std::string(listener::wire::protocol_op_name(request.op)).c_str(),
                 request.message_id, status.to_string().c_str());
  }
  if (request.op == ProtocolOp::kExtendedRequest) {
    send_extended(request, result, std::nullopt, sink);
  } else {
    send_result(request, result, sink);
  }
}

}  // namespace numadir::server
