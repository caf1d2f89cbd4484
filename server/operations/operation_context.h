// server/operations/operation_context.h: what every operation handler shares, built once when the
// server starts: the directory, its schema and attribute catalog, the compiled access rules, the
// options, the root DSE and subschema entries and the DNs the handlers compare against (rootdn,
// cn=Subschema, cn=Monitor, the suffix), with the DN parsing and normalization every operation
// uses. HandlerOptions, the server's settings for the handlers, is declared here too.
//
// Thread contract: an OperationContext is immutable after construction; any number of workers
// use it at once. Helpers that reuse buffers take the calling worker's DnScratch (kept in its
// ServerWorkerState), never per-thread globals. The Directory must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/attribute_catalog.h"
#include "backend/directory.h"
#include "backend/password_scheme.h"
#include "base/status.h"
#include "schema/dn.h"
#include "schema/entry.h"
#include "server/operations/access_control.h"

namespace numadir::server {

class AccessLog;
class ExternalMapRules;
class Monitor;
class OperationMetrics;
class SyncSearchService;

struct HandlerOptions {
  std::string root_dn;        // Empty: no rootdn.
  std::string root_password;  // A userPassword-style value ({SSHA}..., or cleartext if allowed).
  // Cleartext userPassword values: checked by binds, and stored as sent by Add and Modify, only
  // when allowed; otherwise Add and Modify hash them with default_password_scheme, which the
  // Password Modify operation uses too.
  bool allow_cleartext_passwords = false;
  backend::PasswordScheme default_password_scheme = backend::PasswordScheme::kSsha512;
  // Ceilings on what a stored userPassword value may cost to check ([passwords] max_*): a value
  // over one is refused by Add, Modify and Password Modify (constraintViolation), and a bind
  // meeting one refuses it without hashing it (invalidCredentials).
  backend::PasswordCostLimits password_limits;
  // Where a bind that refused a stored value over a ceiling says so, one line per bind: the
  // access log when it is on (outliving the handler), otherwise (nullptr) standard error.
  AccessLog* refusal_log = nullptr;
  bool allow_unauthenticated_bind = false;  // RFC 4513 §5.1.2; default: refuse with 53.
  // Server-side limits per identity class (0 = none), like slapd's `limits`. The client's own
  // limits apply on top (the smaller one wins); the rootdn has no time limit of the server's.
  std::uint64_t size_limit_anonymous = 500, size_limit_users = 500, size_limit_root = 0;
  // Anonymous and users, a paged search over all its pages (slapd's size.prtotal): nullopt,
  // the size limit above; 0, none (NSS and PAM daemons enumerate a directory in pages).
  std::optional<std::uint64_t> size_limit_paged;
  std::uint32_t time_limit_s = 3600;
  std::string vendor_version;  // e.g. "numadir 0.1.0"; vendorVersion of the root DSE.
  // cn=Monitor's data (server/monitoring/monitor.h), outliving the handler; nullptr: no cn=Monitor.
  const Monitor* monitor = nullptr;
  // The metrics endpoint's latencies and results (server/monitoring/operation_metrics.h),
  // outliving the handler: each worker state gets a slot of them and every operation is
  // measured (OperationMeter); nullptr: metrics off, nothing measured.
  OperationMetrics* metrics = nullptr;
  // TLS is configured (ldaps:// or StartTLS): the root DSE lists StartTLS and SASL EXTERNAL.
  bool tls = false;
  // SASL EXTERNAL: the identity's DN from the client certificate's subject (expand_external_map).
  std::string external_map = "{subject}";
  // An ldapi:// listener is configured: the root DSE lists SASL EXTERNAL (peer credentials).
  bool ldapi = false;
  // [[sasl.external_map]]: applied to both EXTERNAL identities (external_map.h), outliving the
  // handler; nullptr: none (each identity binds as itself).
  const ExternalMapRules* external_rules = nullptr;
  // RFC 4513 §5.1.3: a simple bind with a password over a connection without TLS gets
  // confidentialityRequired (13). ldapi:// connections count as confidential (slapd gives them
  // its local SSF, 71).
  bool simple_bind_requires_tls = false;
  // The compiled [[access]] rules (OperationContext::compile_access_rules, against the
  // directory's schema), outliving the handler; nullptr: the default policy.
  const AccessControl* access = nullptr;
  // The password policy (server/operations/password_policy.h): enforced when set ([passwords]
  // policy, implied by default_policy); the policy of entries without pwdPolicySubentry (empty:
  // none); whether a bind refused for a locked account tells the client so in the control
  // (slapd's ppolicy_use_lockout); how often failed binds are written (FailureTable).
  bool password_policy = false;
  std::string default_policy_dn;
  bool policy_use_lockout = false;
  std::uint32_t failure_flush_ms = 100;
  std::uint32_t clear_flush_ms = 10'000;  // How late a success's clearing of failures is written.
  // Content a replication consumer keeps ([[replication.consumer]]): no client writes there,
  // the rootdn included; an update gets a referral (10) to `updateref`, as slapd's consumers
  // answer.
  struct ReplicatedArea {
    std::string base_dn;
    std::string updateref;  // An LDAP URL (the provider's, unless configured).
  };
  std::vector<ReplicatedArea> replicated;
  // The replication provider ([replication.provider], server/operations/sync_search.h),
  // outliving the handler; nullptr: none (a Sync Request control is then an unknown control).
  SyncSearchService* sync = nullptr;
};

// The DN parser's buffers and the memos of OperationContext::normalize_dn_into and
// normalize_dn_cached. Owner: the worker whose ServerWorkerState holds it.
struct DnScratch {
  schema::Dn parsed;  // Its buffers keep their capacity across calls.
  // The last parent normalized: a DN under the same parent, spelled the same way (binds under
  // ou=people,...), normalizes and checks its first RDN only.
  bool has_parent = false;
  schema::Dn parent;  // As parsed: checked, spelled as the DN that brought it.
  std::string parent_ndn;
  // The parent's text as that DN wrote it (after its first RDN's ','): a DN that is one RDN,
  // a ',' and these bytes parses its first RDN alone.
  std::string parent_text;
  // The last DN normalize_dn_cached normalized (a worker serving auth searches sees the same
  // base again and again).
  bool has_cached = false;
  std::string cached_dn;
  std::string cached_ndn;
};

// Returns: true if normalized DN `ndn` is `base_ndn` or lies below it (a suffix of whole RDNs).
//   The root DN "" is below nothing; `base_ndn` "" holds only itself.
bool ndn_at_or_below(std::string_view ndn, std::string_view base_ndn);

// Errors: kInvalidDnSyntax when an attribute type of RDNs [first, end) of `dn` is not in
//   `schema` or a value (but '#' hex ones) is not valid for its type's syntax. (What
//   OperationContext::parse_dn checks; the access rules' DNs are checked the same way.)
Status check_dn_rdns(const schema::Schema& schema, const schema::Dn& dn, std::size_t first,
                     std::size_t end);
// Returns: `dn` parsed, every RDN checked by check_dn_rdns. Errors: kInvalidDnSyntax.
Result<schema::Dn> parse_checked_dn(const schema::Schema& schema, std::string_view dn);

class OperationContext {
 public:
  // Requires: `directory` outlives the context, and options.access (when given) was compiled
  // against its schema and outlives it too. A root_dn that does not pass parse_dn is ignored
  // (no rootdn); the config check (server/commands/server_config.h) refuses it before this is
  // built.
  OperationContext(backend::Directory& directory, HandlerOptions options);
  ~OperationContext();
  OperationContext(const OperationContext&) = delete;
  OperationContext& operator=(const OperationContext&) = delete;

  // Compiles `rules` (empty: the default policy) against `catalog`'s schema, their DNs checked
  // and normalized as every operation's DNs are (parse_dn, then the schema's equality rules),
  // so that a rule DN means the same entry as the same DN in a request.
  // Requires: `catalog` (and its schema) outlive the result.
  // Errors: kInvalidArgument "<origin>.<key>: <problem>" for the first rule that does not
  //   compile (an unknown attribute, a bad DN or filter).
  static Result<std::unique_ptr<AccessControl>> compile_access_rules(
      const backend::AttributeCatalog& catalog, const std::vector<AccessRuleSpec>& rules);

  // The directory (updates go through it: the context is immutable, the directory is not).
  backend::Directory& directory() const { return directory_; }
  const schema::Schema& schema() const { return directory_.schema(); }
  const backend::AttributeCatalog& catalog() const { return catalog_; }
  // The directory's own DN normalizer: DNs normalized with it may be looked up as they are.
  const schema::DnValueNormalizer& dn_normalizer() const { return dn_normalizer_; }
  const AccessControl& access() const { return access_; }
  const HandlerOptions& options() const { return options_; }
  const backend::VerifyPolicy& verify_policy() const { return verify_policy_; }
  // nullptr if the schema lacks userPassword.
  const schema::AttributeType* user_password_type() const { return user_password_type_; }
  // Returns: true if normalized DN `ndn` is the configured rootdn's.
  bool is_root_ndn(std::string_view ndn) const { return !root_ndn_.empty() && ndn == root_ndn_; }
  const schema::Entry& root_dse() const { return root_dse_; }
  const schema::Entry& subschema() const { return subschema_; }
  const std::string& subschema_ndn() const { return subschema_ndn_; }
  // Normalized cn=Monitor; empty when it could not be normalized (no monitor then).
  const std::string& monitor_ndn() const { return monitor_ndn_; }

  // Returns: `dn` parsed and checked as slapd's DN normalizer checks it: every attribute type
  //   known to the schema, every value (but '#' hex ones) valid for its type's syntax.
  // Errors: kInvalidDnSyntax when it does not parse or fails those checks.
  Result<schema::Dn> parse_dn(std::string_view dn) const;
  // Returns: the normalized form of `dn` (the schema's equality rules; what identities and
  //   rootdn are compared by). Errors: as parse_dn.
  Result<std::string> normalize_dn(std::string_view dn) const;
  // As normalize_dn, writing the normalized form to `out` (replacing its contents, reusing its
  // capacity) and parsing through `scratch`, whose parent memo it consults and refills:
  // allocates nothing once warm. Errors: as parse_dn; `out` is then unspecified.
  Status normalize_dn_into(std::string_view dn, std::string& out, DnScratch& scratch) const;
  // Returns: normalize_dn(dn) from `scratch`'s one-entry cache, refilled on a miss. The view
  //   lives until the next normalize_dn_cached with `scratch`. Errors: as parse_dn (failures
  //   are not cached).
  Result<std::string_view> normalize_dn_cached(std::string_view dn, DnScratch& scratch) const;
  // Errors: kInvalidDnSyntax when an attribute type of `dn` is not in the schema or a value
  //   (but '#' hex ones) is not valid for its type's syntax.
  Status check_dn(const schema::Dn& dn) const { return check_rdns(dn, 0, dn.rdn_count()); }
  // As check_dn, for RDNs [first, end) of `dn` only.
  Status check_rdns(const schema::Dn& dn, std::size_t first, std::size_t end) const {
    return check_dn_rdns(directory_.schema(), dn, first, end);
  }
  // Returns: true if normalized DN `ndn` is the suffix or lies below it (the directory holds it).
  bool in_naming_context(std::string_view ndn) const;
  // Returns: the update referral (ReplicatedArea::updateref) of the replicated content holding
  //   normalized DN `ndn`, or nullptr when clients may write there.
  const std::string* update_referral(std::string_view ndn) const;
  // Returns: the schema type of an attribute description's type part, or nullptr.
  const schema::AttributeType* attribute_type(std::string_view description) const;

 private:
  backend::Directory& directory_;
  const HandlerOptions options_;
  const backend::AttributeCatalog catalog_;
  const schema::DnValueNormalizer& dn_normalizer_;
  const backend::VerifyPolicy verify_policy_;
  const schema::AttributeType* const user_password_type_;
  const std::string root_ndn_;  // Empty: no rootdn.
  const schema::Entry root_dse_;
  const schema::Entry subschema_;
  const std::string subschema_ndn_;
  const std::string suffix_ndn_;  // Empty: the suffix did not parse (everything is inside).
  const std::string monitor_ndn_;
  // options_.replicated with each base normalized (those that do not normalize dropped: the
  // config check refuses them).
  const std::vector<std::pair<std::string, std::string>> replicated_ndns_;
  const std::unique_ptr<const AccessControl> default_access_;  // Without options.access only.
  const AccessControl& access_;
};

}  // namespace numadir::server
