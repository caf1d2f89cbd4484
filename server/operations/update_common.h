// server/operations/update_common.h: what Add, Modify, Delete and Modify DN share: the wire
// request's names checked as slapd's frontend checks them, their results, the hashing of
// cleartext userPassword values an update writes, and run_update, which hands the update to the
// directory's writer. Delete and Modify DN check the entry they remove or rename the same way
// first (UpdateTarget), and the write access to it last.
//
// An update is checked in two steps: on the worker, what depends on the request alone (names,
// naming context, hashing); then, in the write transaction, in the job's check (WriteCheck), its
// access and the existence of what access depends on, read through the WriteView: nothing
// another update commits between the decision and the change can make it stale. A check refuses
// with kInsufficientAccessRights (message: the diagnostic) or the target's kNoSuchObject, which
// result_from_status maps to the results slapd sends, or, when a read the decision needed
// failed, with kAccessCheckFailed (`other`, 80: nothing is written; OperationAccess).
//
// Thread contract: functions of their arguments; an UpdateTarget belongs to the one operation
// that made it. A job's check runs on the writer thread and reads only what it captured (copies)
// and the OperationContext, which outlives every update: the listener's stop waits for every
// open operation, and with it for every queued job's completion.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/directory_update.h"
#include "backend/password_scheme.h"
#include "schema/dn.h"
#include "server/operations/operation_access.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_codes.h"
#include "server/operations/result_sender.h"

namespace numadir::server {

// A DN of a request, parsed, with its normalized form and its parent's.
struct ParsedName {
  schema::Dn dn;
  std::string ndn;
  std::string parent_ndn;
};

// Returns: `dn` parsed (OperationContext::parse_dn) with its normalized forms; nullopt if it
//   does not parse or fails the checks.
std::optional<ParsedName> parse_name(const OperationContext& context, std::string_view dn);

OwnedResult invalid_dn();
// The refusals of access control (kInsufficientAccessRights with slapd's diagnostics).
Status no_parent_access();
Status no_entry_access();
Status no_attribute_access(const schema::AttributeType& type);
OwnedResult outside_naming_context();
OwnedResult password_hash_failed();
// The referral an update of replicated content gets (OperationContext::update_referral): as
// slapd's consumers answer, `updateref` with the request's DN `dn` as its path (RFC 4516
// escaping), or `updateref` alone for an extended operation (`dn` empty) or when it names a DN.
OwnedResult update_referral(std::string_view updateref, std::string_view dn);

// Hashes each cleartext userPassword value in `values` (no "{SCHEME}" prefix, or {CLEARTEXT})
// with `scheme`: simple binds check cleartext values only where passwords.allow_cleartext is
// set, so one stored as sent could never be used. Values with another prefix, known or not,
// stay as sent (a hash made elsewhere, or a scheme this server cannot check).
// Errors: as backend::hash_password.
Status hash_cleartext_passwords(backend::PasswordScheme scheme, std::vector<std::string>& values);

// The entry a Delete or Modify DN changes, checked in slapd's order: parse() first, the
// operation's other names next, then check() and, once the parents are checked, may_write().
class UpdateTarget {
 public:
  // `verb` names the operation in refusals ("delete": "cannot delete the root DSE").
  UpdateTarget(const OperationContext& context, std::string_view dn, std::string_view verb)
      : context_(context), dn_(dn), verb_(verb) {}

  // Parses the entry's DN. Returns: false after sending invalidDNSyntax.
  bool parse(ResultSender& sender);
  // Refuses the root DSE and the subschema subentry (unwillingToPerform), and entries outside
  // the naming context. Returns: false after sending the refusal. Requires: parse() succeeded.
  bool check(ResultSender& sender) const;
  // Returns: ok if `access`'s requester may write the entry `dn` (normalized `ndn`) itself; else
  //   its refusal (refused()). For a check (a static: it outlives the UpdateTarget).
  static Status may_write(const OperationAccess& access, std::string_view dn, std::string_view ndn);

  std::string_view dn() const { return dn_; }
  // Requires: parse() succeeded.
  const ParsedName& name() const { return *name_; }

 private:
  const OperationContext& context_;
  const std::string_view dn_;
  const std::string_view verb_;
  std::optional<ParsedName> name_;
};

// Returns: `denied`, the refusal of an update of the entry `dn`, or the kNoSuchObject of looking
//   `dn` up through `access`'s reader when the entry does not exist (as slapd, which finds the
//   entry first), or access.fail()'s kAccessCheckFailed when that lookup fails.
Status refused(const OperationAccess& access, std::string_view dn, Status denied);

// Runs `job` (its check deciding access in the write transaction) and answers the request with
// its outcome (ResultSender::send_update_result). When the sink can keep the operation open
// (detach) and the writer's queue has room, the writer thread sends the response after the
// commit and this returns at once: no worker waits for the fsync, and the writer batches the
// updates of every connection. Otherwise it waits here for the outcome. An update whose
// operation is abandoned meanwhile is still carried out; its response is dropped.
// `response_value`: the responseValue of the ExtendedResponse sent on success (an extended
// operation's, e.g. Password Modify's genPasswd).
// Requires: `job` has no completion; no response control pending on `sender`.
// `on_success`: called once the update is committed, before the response is sent (on the writer
// thread or this one; it must be cheap and must not block).
void run_update(const OperationContext& context, std::unique_ptr<backend::UpdateJob> job,
                ResultSender& sender, std::optional<std::string> response_value = std::nullopt,
                std::function<void()> on_success = nullptr);

}  // namespace numadir::server
