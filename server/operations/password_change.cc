// server/operations/password_change.cc: see password_change.h.
#include "server/operations/password_change.h"

#include <algorithm>

#include "backend/password_scheme.h"

namespace numadir::server {

using listener::wire::ResultCode;

namespace {

using backend::Modification;
using backend::ModificationKind;

Modification internal_replace(std::string description, std::vector<std::string> values) {
  return Modification{ModificationKind::kReplace, std::move(description), std::move(values),
                      /*internal=*/true};
}

// What decide() reads of the target entry (copied: the snapshot's views end with the lookup).
struct TargetEntry {
  bool found = false;
  std::vector<std::string> passwords;
  std::vector<std::string> history;
  std::string subentry;
  std::optional<UnixMicros> changed;
  bool reset = false;
  bool has_grace = false, has_lock = false, has_failures = false;
  std::string state;
};

void append_counted(std::string& out, std::string_view value) {
  out += std::to_string(value.size());
  out += ':';
  out += value;
}

}  // namespace

std::string PasswordChangePolicy::state_of(const backend::EntryRef& entry) {
  std::string state;
  for (const char* name : {"userPassword", "pwdHistory", "pwdChangedTime", "pwdReset"}) {
    state += name;
    for (std::string_view value : entry.values(name)) {
      append_counted(state, value);
    }
    state += ';';
  }
  return state;
}

Status PasswordChangePolicy::same_state(const backend::WriteView& view, std::string_view dn,
                                        const std::string& expected) {
  std::string now;
  NUMADIR_RETURN_IF_ERROR(
      view.lookup(dn, [&](const backend::EntryRef& entry) { now = state_of(entry); }));
  if (now != expected) {
    return Status(StatusCode::kUnwillingToPerform,
                  "the password changed while this change was checked; try again");
  }
  return Status();
}

bool password_change_input(const OperationContext& context,
                           const listener::wire::ModifyRequest& modify,
                           PasswordChangeInput& input) {
  const auto attributes = modify.modifications.attributes();
  bool relevant = false;
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    const schema::AttributeType* type = context.attribute_type(attributes[i].type);
    if (type == nullptr) {
      continue;
    }
    const listener::wire::ModifyOperation operation =
        i < modify.operations.size() ? modify.operations[i]
                                     : listener::wire::ModifyOperation::kReplace;
    const bool deletes = operation == listener::wire::ModifyOperation::kDelete;
    const bool adds = operation == listener::wire::ModifyOperation::kAdd ||
                      operation == listener::wire::ModifyOperation::kReplace;
    if (type == context.user_password_type()) {
      PasswordChangeInput::PasswordMod mod;
      mod.kind = deletes                                              ? ModificationKind::kDelete
                 : operation == listener::wire::ModifyOperation::kAdd ? ModificationKind::kAdd
                                                                      : ModificationKind::kReplace;
      for (std::string_view value : modify.modifications.values(attributes[i])) {
        mod.values.push_back(value);
      }
      input.password_mods.push_back(std::move(mod));
      relevant = true;
      continue;
    }
    const std::string_view name = type->primary_name();
    if (name == "pwdReset" && adds) {
      input.sets_reset = true;
    } else if (name == "pwdAccountLockedTime" && deletes) {
      input.deletes_lock = true;
      relevant = true;
    } else if (name == "pwdFailureTime" && deletes) {
      input.deletes_failures = true;
    } else if (name == "pwdGraceUseTime" && deletes) {
      input.deletes_grace = true;
    } else if (name == "pwdHistory") {
      input.touches_history = true;
    }
  }
  return relevant;
}

namespace {

using History = std::vector<std::pair<UnixMicros, std::string>>;

// Reads what decide() needs of the entry `dn` in `state`'s snapshot into `target` (found stays
// false when there is no such entry). Returns: the lookup's status.
Status read_target(const OperationContext& context, std::string_view dn, ServerWorkerState& state,
                   TargetEntry& target) {
  return context.directory().lookup(state.txn(), dn, [&](const backend::EntryRef& entry) {
    target.found = true;
    for (std::string_view value : entry.values("userPassword")) {
      target.passwords.emplace_back(value);
    }
    for (std::string_view value : entry.values("pwdHistory")) {
      target.history.emplace_back(value);
    }
    const std::vector<std::string_view> subentry = entry.values("pwdPolicySubentry");
    if (!subentry.empty()) {
      target.subentry.assign(subentry.front());
    }
    const PasswordState stored = PasswordState::from_entry(entry);
    target.changed = stored.changed;
    target.reset = stored.reset;
    target.has_grace = stored.grace_uses > 0;
    target.has_lock = stored.locked.has_value() || stored.permanent_lock;
    target.has_failures = !entry.values("pwdFailureTime").empty();
    target.state = PasswordChangePolicy::state_of(entry);
  });
}

// The userPassword changes of one request: the value added (at most one, the policy allows one
// password) and the value deleted before it.
struct PasswordMods {
  const PasswordChangeInput::PasswordMod* add = nullptr;
  const PasswordChangeInput::PasswordMod* remove = nullptr;
  bool deletes_before_add = false;
  ModificationKind last_kind = ModificationKind::kReplace;
  bool several_added = false;  // More than one value added: refused.
};

PasswordMods password_mods_of(const PasswordChangeInput& input) {
  PasswordMods mods;
  for (const PasswordChangeInput::PasswordMod& mod : input.password_mods) {
    mods.last_kind = mod.kind;
    if (mod.kind == ModificationKind::kDelete && !mod.values.empty() && mods.remove == nullptr &&
        mods.add == nullptr) {
      mods.remove = &mod;
    }
    if (mod.kind != ModificationKind::kDelete && !mod.values.empty()) {
      if (mods.add != nullptr || mod.values.size() > 1) {
        mods.several_added = true;
        return mods;
      }
      mods.deletes_before_add = mods.remove != nullptr;
      mods.add = &mod;
    }
  }
  return mods;
}

// Returns: the entry's pwdHistory values, oldest first (malformed values are dropped, as slapd
//   does), each with its time.
History sorted_history(const std::vector<std::string>& values) {
  History history;
  for (const std::string& value : values) {
    if (const std::optional<HistoryItem> item = parse_history_value(value)) {
      history.emplace_back(item->time, value);
    }
  }
  std::stable_sort(history.begin(), history.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return history;
}

// A refusal of decide(): its result code, the password policy control's error and the text.
struct Refusal {
  ResultCode code;
  PolicyError error;
  std::string_view text;
};

// The checks of a change that adds a password, made by anyone but the rootdn, in slapd's order:
// who may change it, the old password given (and verified, for a Modify deleting it by its
// cleartext: then `stored_old` is the stored value it matched), the minimum age, the quality,
// the current password and the history. Returns: the refusal, or nullopt when none applies.
std::optional<Refusal> check_user_change(const PasswordPolicy& policy, const TargetEntry& target,
                                         const PasswordChangeInput& input, const PasswordMods& mods,
                                         const History& history,
                                         const backend::VerifyPolicy& verify, UnixMicros now,
                                         std::optional<std::string>& stored_old) {
  const bool old_given =
      mods.deletes_before_add || (input.password_modify && input.old_password.has_value());
  if (policy.safe_modify && !old_given) {
    return Refusal{ResultCode::kInsufficientAccessRights, PolicyError::kMustSupplyOldPassword,
                   "Must supply old password to be changed as well as new one"};
  }
  if (!target.reset && policy.min_age_s > 0 && target.changed.has_value() &&
      (now - *target.changed) / 1'000'000 < policy.min_age_s) {
    return Refusal{ResultCode::kConstraintViolation, PolicyError::kPasswordTooYoung,
                   "Password is too young to change"};
  }
  if (!target.passwords.empty() && mods.remove != nullptr && !input.password_modify) {
    const std::string_view old = mods.remove->values.front();
    for (const std::string& stored : target.passwords) {
      const Result<bool> verified = backend::verify_password(old, stored, verify);
      if (verified.ok() && *verified) {
        stored_old = stored;
        break;
      }
    }
    if (!stored_old.has_value()) {
      return Refusal{ResultCode::kUnwillingToPerform, PolicyError::kMustSupplyOldPassword,
                     "Must supply correct old password to change to new one"};
    }
  }
  const std::string_view password = mods.add->values.front();
  if (policy.check_quality > 0) {
    if (const PolicyError error = check_password_quality(password, policy);
        error != PolicyError::kNone) {
      return Refusal{ResultCode::kConstraintViolation, error,
                     "Password fails quality checking policy"};
    }
  }
  if (target.passwords.empty() || policy.in_history <= 0) {
    return std::nullopt;
  }
  for (const std::string& stored : target.passwords) {
    const Result<bool> verified = backend::verify_password(password, stored, verify);
    if (verified.ok() && *verified) {
      return Refusal{ResultCode::kConstraintViolation, PolicyError::kPasswordInHistory,
                     "Password is not being changed from existing value"};
    }
  }
  const std::size_t skip = history.size() > static_cast<std::size_t>(policy.in_history)
                               ? history.size() - static_cast<std::size_t>(policy.in_history)
                               : 0;
  for (std::size_t i = skip; i < history.size(); ++i) {
    const std::optional<HistoryItem> item = parse_history_value(history[i].second);
    const Result<bool> verified = backend::verify_password(password, item->password, verify);
    if (item->password == password || (verified.ok() && *verified)) {
      return Refusal{ResultCode::kConstraintViolation, PolicyError::kPasswordInHistory,
                     "Password is in history of old passwords"};
    }
  }
  return std::nullopt;
}

// The password state a change that passes writes with it: pwdChangedTime, the grace uses, lock
// and failures it lifts, pwdReset, and the history (`history` is consumed).
void add_state_changes(const PasswordPolicy& policy, const TargetEntry& target,
                       const PasswordChangeInput& input, bool admin, ModificationKind last_kind,
                       UnixMicros now, History& history, std::vector<Modification>& extra) {
  if (last_kind != ModificationKind::kDelete) {
    extra.push_back(internal_replace("pwdChangedTime", {format_generalized_time(now, false)}));
  } else if (target.changed.has_value()) {
    extra.push_back(internal_replace("pwdChangedTime", {}));
  }
  if (!input.deletes_grace && target.has_grace) {
    extra.push_back(internal_replace("pwdGraceUseTime", {}));
  }
  if (!input.deletes_lock && target.has_lock) {
    extra.push_back(internal_replace("pwdAccountLockedTime", {}));
  }
  if (!input.deletes_failures && target.has_failures) {
    extra.push_back(internal_replace("pwdFailureTime", {}));
  }
  if (!input.sets_reset) {
    if (policy.must_change && admin) {
      extra.push_back(internal_replace("pwdReset", {"TRUE"}));
    } else if (target.reset) {
      extra.push_back(internal_replace("pwdReset", {}));
    }
  }
  if (input.touches_history) {
    return;
  }
  if (policy.in_history == 0) {
    if (!history.empty()) {
      extra.push_back(internal_replace("pwdHistory", {}));
    }
    return;
  }
  const auto keep = static_cast<std::size_t>(policy.in_history - 1);
  std::vector<std::string> values;
  for (std::size_t i = history.size() > keep ? history.size() - keep : 0; i < history.size(); ++i) {
    values.push_back(std::move(history[i].second));
  }
  if (!target.passwords.empty()) {
    values.push_back(make_history_value(now, target.passwords.front()));
  }
  extra.push_back(internal_replace("pwdHistory", std::move(values)));
}

}  // namespace

PasswordChangeDecision PasswordChangePolicy::decide(const Identity& who, std::string_view dn,
                                                    std::string_view ndn,
                                                    const PasswordChangeInput& input,
                                                    ServerWorkerState& state) const {
  PasswordChangeDecision decision;
  TargetEntry target;
  if (const Status found = read_target(context_, dn, state, target); !found.ok() || !target.found) {
    return decision;  // The update itself answers (noSuchObject, or the storage error).
  }
  const std::optional<PasswordPolicy> policy =
      engine_.policy_for(target.subentry, state.txn(), state.policy_memo, state.dn);
  const auto refuse = [&](ResultCode code, PolicyError error, std::string_view text) {
    decision.refusal = OwnedResult::error(code, std::string(text));
    decision.error = error;
    return decision;
  };
  // ITS#8762, with or without a policy: an unlock removes the failures too.
  const auto unlock_drops_failures = [&] {
    if (input.deletes_lock && !input.deletes_failures && target.has_failures) {
      decision.extra.push_back(internal_replace("pwdFailureTime", {}));
    }
  };
  if (!policy.has_value() || input.password_mods.empty()) {
    unlock_drops_failures();
    return decision;
  }
  decision.state = target.state;

  const PasswordMods mods = password_mods_of(input);
  if (mods.several_added) {
    return refuse(ResultCode::kConstraintViolation, PolicyError::kNone,
                  "Password policy only allows one password value");
  }
  const bool admin = who.root;
  const UnixMicros now = now_micros();
  History history = sorted_history(target.history);
  if (!admin) {
    if (!policy->allow_user_change && ndn == who.ndn) {
      return refuse(ResultCode::kInsufficientAccessRights, PolicyError::kPasswordModNotAllowed,
                    "User alteration of password is not allowed");
    }
    if (mods.add == nullptr) {
      unlock_drops_failures();  // Only deleting: nothing more is checked or written.
      decision.state.clear();
      return decision;
    }
    if (const std::optional<Refusal> refusal =
            check_user_change(*policy, target, input, mods, history, context_.verify_policy(), now,
                              decision.stored_old)) {
      return refuse(refusal->code, refusal->error, refusal->text);
    }
  }

  // The change passes: the state it writes with it.
  decision.changes_password = true;
  add_state_changes(*policy, target, input, admin, mods.last_kind, now, history, decision.extra);
  return decision;
}

}  // namespace numadir::server
