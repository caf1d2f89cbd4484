// server/operations/update_common.h: what Add, Modify, Delete and Modify DN share: the wire
// request's names checked as slapd's frontend checks them, their results, and the hashing of
// cleartext userPassword values an update writes. Delete and Modify DN check the entry they
// remove or rename the same way first (UpdateTarget), and the write access to it last.
//
// Thread contract: functions of their arguments; an UpdateTarget belongs to the one operation
// that made it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
OwnedResult no_parent_access();
OwnedResult no_entry_access();
OwnedResult no_attribute_access(const schema::AttributeType& type);
OwnedResult outside_naming_context();
OwnedResult password_hash_failed();

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
  // Returns: whether `access`'s requester may write the entry itself; false after sending
  //   the refusal (noSuchObject instead when the entry does not exist, as slapd answers).
  bool may_write(const OperationAccess& access, ServerWorkerState& state,
                 ResultSender& sender) const;

  std::string_view dn() const { return dn_; }
  // Requires: parse() succeeded.
  const ParsedName& name() const { return *name_; }

 private:
  const OperationContext& context_;
  const std::string_view dn_;
  const std::string_view verb_;
  std::optional<ParsedName> name_;
};

// Sends `denied` for an update of the entry `dn` that access control refuses, or noSuchObject
// when the entry does not exist (ResultSender::send_denied).
void send_denied(const OperationContext& context, ServerWorkerState& state, std::string_view dn,
                 const OwnedResult& denied, ResultSender& sender);

}  // namespace numadir::server
