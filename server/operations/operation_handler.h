// server/operations/operation_handler.h: the server's operation handlers: every LDAP operation (RFC
// 4511, 4513, 4532, 3062, 2696) carried out against a backend::Directory, behind the listener's
// RequestHandler seam. Network-independent: a request comes in as a decoded LdapMessage and its
// responses go out through a ResponseSink.
//
// What it does, in slapd's manner where the RFCs leave room: simple bind (rootdn, or an entry's
// userPassword; every failure the same invalidCredentials), search (root DSE, cn=Subschema,
// the directory; attribute selection, size and time limits, paged results), compare, add,
// modify, delete, modify DN, and the WhoAmI, Password Modify and StartTLS extended operations.
// Access is decided by AccessControl (server/operations/access_control.h); Status codes become LDAP
// results in server/operations/result_codes.h only.
//
// Thread contract: constructed on the main thread before the listener starts; after that
// open_session() and handle() may be called from any number of threads at once: the handler's
// own state is immutable except the registry of read transactions, which a mutex guards. Each
// worker thread gets its own backend::ReadTxn the first time it runs an operation here, and
// reuses it for every later one (a thread_local cache keyed by this handler's unique id); the
// handler owns those transactions and closes them when it is destroyed. Destroy the handler
// only after the listener has stopped calling it, and before the Directory (which must outlive
// the handler and every Session it opened).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/attribute_catalog.h"
#include "backend/directory.h"
#include "backend/dn_index.h"
#include "backend/password_scheme.h"
#include "base/status.h"
#include "base/thread_annotations.h"
#include "listener/request_handler.h"
#include "listener/wire/ldap_message.h"
#include "schema/dn.h"
#include "schema/entry.h"
#include "server/monitoring/monitor.h"
#include "server/monitoring/operation_counters.h"
#include "server/operations/access_control.h"
#include "server/operations/result_codes.h"
#include "server/operations/server_session.h"

namespace numadir::server {

struct HandlerOptions {
  std::string root_dn;        // Empty: no rootdn.
  std::string root_password;  // A userPassword-style value ({SSHA}..., or cleartext if allowed).
  // Cleartext userPassword values: checked by binds, and stored as sent by Add and Modify, only
  // when allowed; otherwise Add and Modify hash them with default_password_scheme, which the
  // Password Modify operation uses too.
  bool allow_cleartext_passwords = false;
  backend::PasswordScheme default_password_scheme = backend::PasswordScheme::kSsha512;
  bool allow_unauthenticated_bind = false;  // RFC 4513 §5.1.2; default: refuse with 53.
  // Server-side limits per identity class (0 = none), like slapd's `limits`. The client's own
  // limits apply on top (the smaller one wins); the rootdn has no time limit of the server's.
  std::uint64_t size_limit_anonymous = 500, size_limit_users = 500, size_limit_root = 0;
  std::uint32_t time_limit_s = 3600;
  std::string vendor_version;  // e.g. "numadir 0.1.0"; vendorVersion of the root DSE.
  // cn=Monitor's data (server/monitoring/monitor.h), outliving the handler; nullptr: no cn=Monitor.
  const Monitor* monitor = nullptr;
  // TLS is configured (ldaps:// or StartTLS): the root DSE lists StartTLS and SASL EXTERNAL.
  bool tls = false;
  // SASL EXTERNAL: the identity's DN from the client certificate's subject (expand_external_map).
  std::string external_map = "{subject}";
  // RFC 4513 §5.1.3: a simple bind with a password over a connection without TLS gets
  // confidentialityRequired (13).
  bool simple_bind_requires_tls = false;
  // The config's [[access]] rules (server/operations/access_control.h); empty: the default policy.
  std::vector<AccessRuleSpec> access_rules;
};

class OperationHandler final : public listener::RequestHandler {
 public:
  // Requires: `directory` outlives this handler. A root_dn that does not parse as a DN is
  // ignored (no rootdn); the config check reports it before this is built.
  // Rules of options.access_rules that do not compile (check_access_rules says why) leave a
  // policy under which only the rootdn may do anything.
  OperationHandler(backend::Directory& directory, HandlerOptions options);
  ~OperationHandler() override;
  OperationHandler(const OperationHandler&) = delete;
  OperationHandler& operator=(const OperationHandler&) = delete;

  // Errors: kInvalidArgument naming the first of `rules` that does not compile against `schema`
  //   (an unknown attribute, a bad DN or filter).
  static Status check_access_rules(const schema::Schema& schema,
                                   const std::vector<AccessRuleSpec>& rules);

  // Returns: a ServerSession, bound anonymously.
  std::unique_ptr<listener::Session> open_session(const listener::ConnectionInfo& info) override;
  // Runs `request` and sends its responses through `sink`, each with the request's message ID.
  // Requires: `session` came from this handler's open_session(). Never throws: every failure
  // is an LDAP result. Requests that have no response (responses sent by a confused client)
  // are dropped.
  void handle(const listener::wire::LdapMessage& request, listener::Session& session,
              listener::ResponseSink& sink, threadpool::WorkerState& state) override;
  // Records the connection's TLS (and client certificate) in its ServerSession.
  void tls_established(listener::Session& session, const listener::TlsPeer& peer) override;
  // Returns: the operations handle() ran so far, by kind, and the successful binds.
  OperationTotals operation_totals() const;

 private:
  void bind(const listener::wire::LdapMessage& request, ServerSession& session,
            listener::ResponseSink& sink) const;
  void bind_external(const listener::wire::LdapMessage& request, ServerSession& session,
                     listener::ResponseSink& sink) const;
  void search(const listener::wire::LdapMessage& request, ServerSession& session,
              listener::ResponseSink& sink) const;
  void compare(const listener::wire::LdapMessage& request, const Identity& who,
               listener::ResponseSink& sink) const;
  void add(const listener::wire::LdapMessage& request, const Identity& who,
           listener::ResponseSink& sink) const;
  void modify(const listener::wire::LdapMessage& request, const Identity& who,
              listener::ResponseSink& sink) const;
  void remove(const listener::wire::LdapMessage& request, const Identity& who,
              listener::ResponseSink& sink) const;
  void rename(const listener::wire::LdapMessage& request, const Identity& who,
              listener::ResponseSink& sink) const;
  void extended(const listener::wire::LdapMessage& request, ServerSession& session,
                listener::ResponseSink& sink) const;
  void password_modify(const listener::wire::LdapMessage& request, const Identity& who,
                       listener::ResponseSink& sink) const;

  // Searches below cn=Monitor (monitor_search.cc): answers and returns true when `base_ndn`
  // is cn=Monitor or below it and the handler has a monitor (noSuchObject unless `who` is the
  // rootdn); returns false otherwise.
  bool search_monitor(const listener::wire::LdapMessage& request, const Identity& who,
                      std::string_view base_ndn, listener::ResponseSink& sink) const;

  // Search helpers (search_operation.cc).
  // Sends the entries of a search of the root DSE or cn=Subschema; returns false if `base_ndn`
  // is neither.
  bool search_special(const listener::wire::LdapMessage& request, const Requester& who,
                      std::string_view base_ndn, listener::ResponseSink& sink) const;

  // Access checks (operation_handler.cc).
  // Group membership read from the directory for one operation, each answer cached.
  class DirectoryGroups final : public GroupMembership {
   public:
    explicit DirectoryGroups(const OperationHandler& handler) : handler_(handler) {}
    bool is_member(std::string_view group_ndn, std::string_view member_ndn) const override;

   private:
    const OperationHandler& handler_;
    mutable std::vector<std::pair<std::string, bool>> answers_;  // Keyed by group ndn.
  };
  // Returns: `who` as a Requester whose group clauses read `groups`.
  Requester requester(const Identity& who, const DirectoryGroups& groups) const {
    return Requester{who, access_->has_groups() ? &groups : nullptr};
  }
  // Returns: the stored entry `dn`, when the access rules need entries to decide (filters);
  //   nullopt otherwise or when it cannot be read.
  std::optional<schema::Entry> entry_for_access(std::string_view dn) const;
  // Returns: whether `who` has privilege `level` on `attribute` of the entry named `ndn`
  //   (`entry`: its content, when entry_for_access gave it).
  bool may(const Requester& who, std::string_view ndn, const std::optional<schema::Entry>& entry,
           const AccessAttribute& attribute, AccessLevel level) const {
    return access_->allows(who, AccessEntry{ndn, entry.has_value() ? &*entry : nullptr}, attribute,
                           level);
  }
  // Returns: whether `who` may add or remove entries below the entry `parent_ndn`.
  bool may_write_children(const Requester& who, std::string_view parent_ndn) const;
  // Returns: whether `who` may learn that the entry `dn` exists (for an answer that would name
  //   it: a result's matchedDN, noSuchObject versus another error).
  bool discloses(const Requester& who, std::string_view dn) const;

  // Returns: the calling thread's read transaction for this handler's directory.
  backend::ReadTxn& read_txn() const;
  // Returns: a second read transaction of the calling thread, for reads made while the first
  //   one is in use (group lookups during a search).
  backend::ReadTxn& side_read_txn() const;
  backend::ReadTxn& cached_read_txn(std::uint64_t key) const;
  // Returns: `dn` parsed and checked as slapd's DN normalizer checks it: every attribute type
  //   known to the schema, every value (but '#' hex ones) valid for its type's syntax.
  // Errors: kInvalidDnSyntax when it does not parse or fails those checks.
  Result<schema::Dn> parse_dn(std::string_view dn) const;
  // Returns: the normalized form of `dn` (the schema's equality rules; what identities and
  //   rootdn are compared by). Errors: as parse_dn.
  Result<std::string> normalize_dn(std::string_view dn) const;
  // As normalize_dn, writing the normalized form to `out` (replacing its contents, reusing its
  // capacity; parsing through a per-thread Dn): allocates nothing once warm. The last parent
  // normalized is kept per thread: a DN under the same parent, spelled the same way (binds
  // under ou=people,...), normalizes and checks its first RDN only.
  // Errors: as parse_dn; `out` is then unspecified.
  Status normalize_dn_into(std::string_view dn, std::string& out) const;
  // Returns: normalize_dn(dn) from a one-entry per-thread cache (a worker serving auth searches
  //   sees the same base again and again). The view lives until the calling thread's next
  //   call. Errors: as parse_dn (failures are not cached).
  Result<std::string_view> normalize_dn_cached(std::string_view dn) const;
  // Errors: kInvalidDnSyntax when an attribute type of `dn` is not in the schema or a value
  //   (but '#' hex ones) is not valid for its type's syntax.
  Status check_dn(const schema::Dn& dn) const { return check_rdns(dn, 0, dn.rdn_count()); }
  // As check_dn, for RDNs [first, end) of `dn` only.
  Status check_rdns(const schema::Dn& dn, std::size_t first, std::size_t end) const;
  // Returns: true if `dn` is the suffix or lies below it (the directory holds it).
  bool in_naming_context(const schema::Dn& dn) const;
  // Returns: the schema type of an attribute description's type part, or nullptr.
  const schema::AttributeType* attribute_type(std::string_view description) const;

  // Sends the response `request` calls for (BindResponse for a BindRequest, ...) with `result`.
  void send_result(const listener::wire::LdapMessage& request, const OwnedResult& result,
                   listener::ResponseSink& sink) const;
  // Sends an ExtendedResponse with `result` and, when given, responseValue `value`.
  void send_extended(const listener::wire::LdapMessage& request, const OwnedResult& result,
                     std::optional<std::string_view> value, listener::ResponseSink& sink) const;
  // Sends the result for a failed Status (logging storage and internal errors once).
  void send_status(const listener::wire::LdapMessage& request, const Status& status,
                   listener::ResponseSink& sink) const;
  // Sends `denied` for an update of entry `dn` that access control refuses, or noSuchObject
  // (with its matchedDN) when `dn` does not exist: as slapd, which finds the entry first.
  void send_denied(const listener::wire::LdapMessage& request, std::string_view dn,
                   const OwnedResult& denied, listener::ResponseSink& sink) const;
  // Sends success for an ok `status`, else as send_status (the end of every update).
  void send_update_result(const listener::wire::LdapMessage& request, const Status& status,
                          listener::ResponseSink& sink) const;

  backend::Directory& directory_;
  const HandlerOptions options_;
  const backend::AttributeCatalog catalog_;
  const backend::SchemaDnNormalizer dn_normalizer_;
  std::unique_ptr<const AccessControl> access_;  // Set in the constructor; never null.
  const backend::VerifyPolicy verify_policy_;
  const schema::AttributeType* const user_password_type_;  // nullptr if the schema lacks it.
  std::string root_ndn_;  // Set in the constructor, then immutable; empty: no rootdn.
  const schema::Entry root_dse_;
  const schema::Entry subschema_;
  const std::string subschema_ndn_;
  std::string suffix_key_;   // backend::dn_key of the suffix; set in the constructor.
  std::string monitor_ndn_;  // Normalized kMonitorDn; set in the constructor.
  mutable OperationCounters operation_counters_;  // Per thread; counting never contends.

  const std::uint64_t txn_key_;  // Unique per handler for the process's life.
  mutable Mutex txns_mu_;
  mutable std::vector<std::unique_ptr<backend::ReadTxn>> txns_ NUMADIR_GUARDED_BY(txns_mu_);
};

}  // namespace numadir::server
