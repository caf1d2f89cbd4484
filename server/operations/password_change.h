// server/operations/password_change.h: the password policy applied to a change of userPassword
// (a Modify or the Password Modify extended operation), as slapd 2.5's ppolicy_modify does it:
// the checks, in slapd's order, then the policy state the change writes with it.
//
// The checks, for anyone but the rootdn (slapd: whoever has manage access to userPassword):
//   1. pwdAllowUserChange FALSE: the user may not change their own password (50,
//      passwordModNotAllowed). Only deleting it: nothing more is checked.
//   2. pwdSafeModify: the old password must be given (a Modify deleting the old value, or
//      Password Modify's oldPasswd) (50, mustSupplyOldPassword).
//   3. pwdMinAge, unless pwdReset: too soon after the last change (19, passwordTooYoung).
//   4. A Modify's deleted value is checked as a password against the stored one: wrong, 53
//      mustSupplyOldPassword; right, the stored value is what is deleted.
//   5. pwdCheckQuality (19, passwordTooShort, passwordTooLong, insufficientPasswordQuality).
//   6. pwdInHistory: the current password, then the last pwdInHistory - 1 of pwdHistory (19,
//      passwordInHistory).
// A change that passes (and every change by the rootdn) also writes: pwdChangedTime (now; gone
// when the password is deleted), pwdHistory (the old password appended, the oldest dropped past
// pwdInHistory), and removes pwdGraceUseTime, pwdAccountLockedTime and pwdFailureTime;
// pwdReset becomes TRUE when the rootdn changes the password under pwdMustChange, and is
// removed otherwise (unless the request sets it itself).
//
// These are decided on the worker, against its snapshot of the entry (hashing never runs on the
// writer thread); the writer's check then verifies that the entry's password state is still what
// the decision read (same_state), and refuses the change otherwise (the client tries again).
//
// Thread contract: immutable; decide() may be called by any number of workers at once.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/directory.h"
#include "backend/directory_update.h"
#include "server/operations/operation_context.h"
#include "server/operations/policy_engine.h"
#include "server/operations/result_codes.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

// What of a request the policy looks at.
struct PasswordChangeInput {
  struct PasswordMod {
    backend::ModificationKind kind = backend::ModificationKind::kReplace;
    std::vector<std::string_view> values;  // As sent (cleartext, or a hash).
  };
  // A Modify's modifications of userPassword in order; Password Modify: one replace with the
  // new password (cleartext).
  std::vector<PasswordMod> password_mods;
  bool password_modify = false;                  // The extended operation (its old password is
  std::optional<std::string_view> old_password;  // checked by the operation itself).
  bool sets_reset = false;                       // The request adds or replaces pwdReset itself.
  bool deletes_lock = false;                     // ... deletes pwdAccountLockedTime,
  bool deletes_failures = false;                 // ... pwdFailureTime,
  bool deletes_grace = false;                    // ... pwdGraceUseTime.
  bool touches_history = false;                  // ... modifies pwdHistory.
};

struct PasswordChangeDecision {
  std::optional<OwnedResult> refusal;  // Refused: answer this, with `error` in the control.
  PolicyError error = PolicyError::kNone;
  std::vector<backend::Modification> extra;  // Appended to the change (internal ones).
  // A Modify deleting the old password by its cleartext: the stored value it matched, which is
  // what the delete must name.
  std::optional<std::string> stored_old;
  // The entry's password state as read (same_state compares it in the write transaction);
  // empty: nothing to compare (no policy governs the entry).
  std::string state;
  bool changes_password = false;  // A policy-checked change of the password (lifts pwdMustChange).
};

class PasswordChangePolicy {
 public:
  // Requires: both outlive this object.
  PasswordChangePolicy(const OperationContext& context, const PolicyEngine& engine)
      : context_(context), engine_(engine) {}

  // Decides the change `input` of entry `dn` (normalized `ndn`) by `who`, reading the entry in
  // `state`'s snapshot. An entry that does not exist is left to the update (noSuchObject).
  PasswordChangeDecision decide(const Identity& who, std::string_view dn, std::string_view ndn,
                                const PasswordChangeInput& input, ServerWorkerState& state) const;

  // Returns: the password state of `entry` as decide() records it (its userPassword, pwdHistory,
  //   pwdChangedTime and pwdReset values).
  static std::string state_of(const backend::EntryRef& entry);
  // The writer's check: ok if the entry `dn` still has `expected` (a decision's state), else
  // kUnwillingToPerform. Errors: as WriteView::lookup.
  static Status same_state(const backend::WriteView& view, std::string_view dn,
                           const std::string& expected);

 private:
  const OperationContext& context_;
  const PolicyEngine& engine_;
};

// Fills `input` from a Modify request's modifications (userPassword ones and the policy state
// attributes it touches). Returns: whether the policy has anything to look at.
bool password_change_input(const OperationContext& context,
                           const listener::wire::ModifyRequest& modify, PasswordChangeInput& input);

}  // namespace numadir::server
