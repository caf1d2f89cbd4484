// server/operations/policy_engine.cc: see policy_engine.h.
#include "server/operations/policy_engine.h"

#include <cstdio>
#include <functional>

#include "backend/directory_update.h"

namespace numadir::server {

namespace {

std::string normalized_or_empty(const OperationContext& context, std::string_view dn) {
  if (dn.empty()) {
    return "";
  }
  Result<std::string> ndn = context.normalize_dn(dn);
  return ndn.ok() ? std::move(*ndn) : std::string();
}

// Returns: the policy of entry `entry`, or nullopt (logged) when a value is not a number.
std::optional<PasswordPolicy> read_policy(const backend::EntryRef& entry) {
  Result<PasswordPolicy> policy = PasswordPolicy::from_entry(entry);
  if (!policy.ok()) {
    std::fprintf(stderr, "numadir: %s: no password policy applied\n",
                 std::string(policy.status().message()).c_str());
    return std::nullopt;
  }
  return *policy;
}

}  // namespace

bool requests_policy_control(const listener::wire::LdapMessage& request) {
  for (const listener::wire::Control& control : request.controls) {
    if (control.type == kPasswordPolicyOid) {
      return true;
    }
  }
  return false;
}

void attach_policy_control(ResultSender& sender, const PolicyResponse& response) {
  sender.add_response_control(kPasswordPolicyOid, false, encode_policy_response(response));
}

PolicyEngine::PolicyEngine(const OperationContext& context)
    : context_(context),
      default_ndn_(normalized_or_empty(context, context.options().default_policy_dn)),
      use_lockout_(context.options().policy_use_lockout) {
  subscription_ = context_.directory().subscribe_changes([this](const backend::ChangeRecord& c) {
    if (!c.internal) {
      generation_.fetch_add(1, std::memory_order_release);
    }
  });
  failures_ = std::make_unique<FailureTable>(
      context_.directory(), std::chrono::milliseconds(context_.options().failure_flush_ms),
      std::chrono::milliseconds(context_.options().clear_flush_ms),
      [&context = context_](std::string_view dn) -> std::optional<std::string> {
        Result<std::string> ndn = context.normalize_dn(dn);
        return ndn.ok() ? std::optional<std::string>(std::move(*ndn)) : std::nullopt;
      });
}

PolicyEngine::~PolicyEngine() {
  failures_.reset();  // Flushes what is left while the writer runs.
  subscription_.reset();
}

bool PolicyEngine::policy_ndn(std::string_view subentry, std::string& out, DnScratch& dn) const {
  if (subentry.empty()) {
    out.assign(default_ndn_);
    return !out.empty();
  }
  if (!context_.normalize_dn_into(subentry, out, dn).ok()) {
    return false;  // Not a DN: as a missing policy entry, none applies.
  }
  return !out.empty();
}

std::optional<PasswordPolicy> PolicyEngine::policy_for(std::string_view subentry,
                                                       backend::ReadTxn& txn, PolicyMemo& memo,
                                                       DnScratch& dn) const {
  if (!policy_ndn(subentry, memo.scratch_ndn, dn)) {
    return std::nullopt;
  }
  const std::uint64_t generation = generation_.load(std::memory_order_acquire);
  if (memo.generation == generation && memo.ndn == memo.scratch_ndn) {
    return memo.policy;
  }
  std::optional<PasswordPolicy> policy;
  const auto on_entry = [&](const backend::EntryRef& entry) { policy = read_policy(entry); };
  const Status status =
      context_.directory().lookup_normalized(txn, memo.scratch_ndn, std::ref(on_entry));
  if (!status.ok() && status.code() != StatusCode::kNoSuchObject) {
    return std::nullopt;  // Not memoized: a storage failure may pass.
  }
  memo.generation = generation;
  memo.ndn.assign(memo.scratch_ndn);
  memo.policy = policy;
  return policy;
}

std::optional<PasswordPolicy> PolicyEngine::policy_for(std::string_view subentry,
                                                       const backend::WriteView& view) const {
  std::string ndn;
  DnScratch dn;
  if (!policy_ndn(subentry, ndn, dn)) {
    return std::nullopt;
  }
  std::optional<PasswordPolicy> policy;
  (void)view.lookup(ndn, [&](const backend::EntryRef& entry) { policy = read_policy(entry); });
  return policy;
}

}  // namespace numadir::server
