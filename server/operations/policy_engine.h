// server/operations/policy_engine.h: PolicyEngine, the password policy at run time ([passwords]
// policy = true, or a default_policy): which policy governs an entry (its pwdPolicySubentry,
// else the default), read from the directory and memoized per worker until a policy entry may
// have changed, whether a client is told that an account is locked (use_lockout, as slapd's
// ppolicy_use_lockout), and the in-memory lockout state (FailureTable).
//
// Thread contract: immutable but for the FailureTable (thread-safe) and the generation counter
// (atomic); any worker may call any function, each with its own PolicyMemo. Created by the
// OperationHandler after its OperationContext and destroyed before it (and before the
// Directory): its FailureTable flushes what is left then.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "backend/change_feed.h"
#include "backend/directory.h"
#include "backend/directory_update.h"
#include "listener/wire/ldap_message.h"
#include "server/operations/failure_table.h"
#include "server/operations/operation_context.h"
#include "server/operations/password_policy.h"
#include "server/operations/result_sender.h"

namespace numadir::server {

// Returns: whether `request` carries the Password Policy request control.
bool requests_policy_control(const listener::wire::LdapMessage& request);
// Adds the Password Policy response control saying `response` to `sender`'s next result.
void attach_policy_control(ResultSender& sender, const PolicyResponse& response);

// A worker's memo of the last policy it read. Owner: the worker whose ServerWorkerState holds it.
struct PolicyMemo {
  std::uint64_t generation = 0;  // 0: empty.
  std::string ndn;
  std::optional<PasswordPolicy> policy;  // nullopt: that entry applies no policy.
  std::string scratch_ndn;
};

class PolicyEngine {
 public:
  // Requires: `context` (and its Directory) outlive the engine; options.password_policy is set.
  explicit PolicyEngine(const OperationContext& context);
  PolicyEngine(const PolicyEngine&) = delete;
  PolicyEngine& operator=(const PolicyEngine&) = delete;
  ~PolicyEngine();

  // Returns: the policy that governs an entry whose pwdPolicySubentry is `subentry` (empty: it
  //   has none, so the default policy, if any), read in `txn`; nullopt when none applies (no
  //   default, or the policy entry is missing or invalid: as slapd, no policy then).
  std::optional<PasswordPolicy> policy_for(std::string_view subentry, backend::ReadTxn& txn,
                                           PolicyMemo& memo, DnScratch& dn) const;
  // As policy_for, reading through the write transaction of an update's check.
  std::optional<PasswordPolicy> policy_for(std::string_view subentry,
                                           const backend::WriteView& view) const;

  bool use_lockout() const { return use_lockout_; }
  FailureTable& failures() const { return *failures_; }

 private:
  // Returns: the normalized DN of the policy named `subentry` (or the default); empty if none.
  bool policy_ndn(std::string_view subentry, std::string& out, DnScratch& dn) const;

  const OperationContext& context_;
  const std::string default_ndn_;  // Empty: no default policy.
  const bool use_lockout_;
  // Bumped (release) by every committed update that is not the table's own: a memo of another
  // generation is read again (acquire). Starts at 1 so that a fresh memo (0) never matches.
  std::atomic<std::uint64_t> generation_{1};
  std::unique_ptr<backend::ChangeSubscription> subscription_;
  std::unique_ptr<FailureTable> failures_;
};

}  // namespace numadir::server
