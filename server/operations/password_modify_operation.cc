// server/operations/password_modify_operation.cc: see password_modify_operation.h.
#include "server/operations/password_modify_operation.h"

#include <sys/random.h>

#include <cerrno>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "backend/password_scheme.h"
#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"
#include "server/operations/operation_access.h"
#include "server/operations/password_change.h"
#include "server/operations/password_cost.h"
#include "server/operations/update_common.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ResultCode;
namespace ber = listener::wire::ber;

namespace {

// Length of a password the server makes up (slapd makes 8 characters; more is stronger and
// every client copes).
constexpr std::size_t kGeneratedPasswordLength = 12;

// Returns: a random password of letters and digits from getrandom(2), or nullopt if the kernel
//   gives no randomness.
std::optional<std::string> generate_password() {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  // Bytes at or above this are dropped so that every character is equally likely.
  constexpr unsigned kCutoff = 256 - 256 % kAlphabet.size();
  std::string out;
  unsigned char buffer[64];
  while (out.size() < kGeneratedPasswordLength) {
    const ssize_t got = getrandom(buffer, sizeof(buffer), 0);
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return std::nullopt;
    }
    for (ssize_t i = 0; i < got && out.size() < kGeneratedPasswordLength; ++i) {
      if (buffer[i] < kCutoff) {
        out += kAlphabet[buffer[i] % kAlphabet.size()];
      }
    }
  }
  return out;
}

// RFC 3062's PasswdModifyRequestValue, as views into the request.
struct PasswdModifyRequest {
  std::optional<std::string_view> user_identity;
  std::optional<std::string_view> old_password;
  std::optional<std::string_view> new_password;
};

// Decodes the request value (absent: every field absent). Errors as slapd's slap_passwd_parse.
std::optional<OwnedResult> parse_passwd_modify(const std::optional<std::string_view>& value,
                                               PasswdModifyRequest& out) {
  if (!value.has_value()) {
    return std::nullopt;
  }
  if (value->empty()) {
    return OwnedResult::error(ResultCode::kProtocolError, "empty request data field");
  }
  const OwnedResult decoding_error =
      OwnedResult::error(ResultCode::kProtocolError, "data decoding error");
  listener::wire::BerError error;
  listener::wire::BerReader outer(*value, error, 2);
  listener::wire::BerReader sequence = outer.enter(ber::kSequence);
  if (sequence.failed() || !outer.at_end()) {
    return decoding_error;
  }
  std::optional<std::string_view>* fields[] = {&out.user_identity, &out.old_password,
                                               &out.new_password};
  for (std::uint8_t number = 0; number < 3; ++number) {
    std::uint8_t tag = 0;
    if (!sequence.peek_tag(tag) || tag != ber::context(number)) {
      continue;
    }
    std::string_view field;
    if (!sequence.read_octets(tag, field)) {
      return decoding_error;
    }
    *fields[number] = field;
  }
  if (!sequence.at_end()) {
    return decoding_error;
  }
  if (out.old_password.has_value() && out.old_password->empty()) {
    return OwnedResult::error(ResultCode::kUnwillingToPerform, "old password value is empty");
  }
  if (out.new_password.has_value() && out.new_password->empty()) {
    return OwnedResult::error(ResultCode::kUnwillingToPerform, "new password value is empty");
  }
  return std::nullopt;
}

constexpr const char* kUnwillingToVerify = "unwilling to verify old password";

}  // namespace

void PasswordModifyOperation::run(const LdapMessage& request, ServerSession& session,
                                  ServerWorkerState& state, ResultSender& sender) const {
  const Identity who = session.identity();
  if (who.anonymous()) {
    sender.send_extended(OwnedResult::error(ResultCode::kStrongerAuthRequired,
                                            "only authenticated users may change passwords"),
                         std::nullopt);
    return;
  }
  PasswdModifyRequest passwd;
  if (std::optional<OwnedResult> bad = parse_passwd_modify(request.extended.value, passwd);
      bad.has_value()) {
    sender.send_extended(*bad, std::nullopt);
    return;
  }
  // The target: the named entry, or the bound identity itself.
  std::string target_dn = who.dn;
  std::string target_ndn = who.ndn;
  if (passwd.user_identity.has_value() && !passwd.user_identity->empty()) {
    Result<std::string> ndn = context_.normalize_dn(*passwd.user_identity);
    if (!ndn.ok()) {
      sender.send_extended(OwnedResult::error(ResultCode::kInvalidDnSyntax, "Invalid DN"),
                           std::nullopt);
      return;
    }
    target_dn = std::string(*passwd.user_identity);
    target_ndn = std::move(*ndn);
  }
  if (target_ndn.empty()) {
    sender.send_extended(OwnedResult::error(ResultCode::kUnwillingToPerform,
                                            "no password is associated with the Root DSE"),
                         std::nullopt);
    return;
  }
  if (const std::string* referral = context_.update_referral(target_ndn)) {
    sender.send_extended(update_referral(*referral, ""), std::nullopt);
    return;
  }
  // The old password is checked whenever given, whoever asks (as slapd), after access. Hashing
  // is the costly part, so it runs here on the worker, against the snapshot; the writer's check
  // then decides access and only compares the matched value with what is still stored.
  OldPassword old;
  if (passwd.old_password.has_value()) {
    old.given = true;
    old.matched = matching_password(target_dn, *passwd.old_password, state);
  }
  if (policy_ != nullptr && old.given && !old.matched.has_value()) {
    // As slapd: a wrong old password is refused before the policy looks at the change.
    sender.send_extended(OwnedResult::error(ResultCode::kUnwillingToPerform, kUnwillingToVerify),
                         std::nullopt);
    return;
  }
  std::optional<std::string> generated;
  if (!passwd.new_password.has_value()) {
    generated = generate_password();
    if (!generated.has_value()) {
      sender.send_extended(OwnedResult::error(ResultCode::kOther, "password generation failed"),
                           std::nullopt);
      return;
    }
  }
  const std::string_view new_password =
      generated.has_value() ? std::string_view(*generated) : *passwd.new_password;
  PasswordChangeDecision decision;
  if (policy_ != nullptr) {
    PasswordChangeInput input;
    input.password_modify = true;
    input.old_password = passwd.old_password;
    input.password_mods.push_back(
        PasswordChangeInput::PasswordMod{backend::ModificationKind::kReplace, {new_password}});
    decision =
        PasswordChangePolicy(context_, *policy_).decide(who, target_dn, target_ndn, input, state);
    if (decision.refusal.has_value()) {
      if (requests_policy_control(request)) {
        PolicyResponse response;
        response.error = decision.error;
        attach_policy_control(sender, response);
      }
      sender.send_extended(*decision.refusal, std::nullopt);
      return;
    }
  }
  Result<std::string> hashed =
      backend::hash_password(new_password, context_.options().default_password_scheme);
  if (!hashed.ok()) {
    sender.send_extended(OwnedResult::error(ResultCode::kOther, "password hash failed"),
                         std::nullopt);
    return;
  }
  // The new password is always hashed here (RFC 3062 sends it in the clear: a "{ARGON2}..."
  // newPasswd is hashed as any other), and the config keeps the default scheme's cost within
  // the ceilings; the value is checked all the same, as every userPassword value stored is.
  if (const Status costly = check_password_costs(std::span<const std::string>(&*hashed, 1),
                                                 context_.options().password_limits);
      !costly.ok()) {
    sender.send_status(costly);
    return;
  }
  auto job = std::make_unique<backend::UpdateJob>();
  job->context = backend::UpdateContext{who.dn, std::nullopt};
  job->check = [&context = context_, who, dn = target_dn, ndn = std::move(target_ndn),
                old = std::move(old),
                expected = std::move(decision.state)](const backend::WriteView& view) {
    NUMADIR_RETURN_IF_ERROR(may_store(context, ViewEntryReader(view), who, dn, ndn, old));
    return expected.empty() ? Status() : PasswordChangePolicy::same_state(view, dn, expected);
  };
  std::vector<backend::Modification> modifications;
  modifications.push_back(backend::Modification{
      backend::ModificationKind::kReplace, "userPassword", {std::move(*hashed)}});
  for (backend::Modification& extra : decision.extra) {
    modifications.push_back(std::move(extra));
  }
  job->change = backend::ModifyChange{std::move(target_dn), std::move(modifications)};
  std::optional<std::string> response_value;
  if (generated.has_value()) {
    // PasswdModifyResponseValue ::= SEQUENCE { genPasswd [0] OCTET STRING OPTIONAL }
    listener::wire::BerWriter writer;
    writer.begin(ber::kSequence);
    writer.write_octets(ber::context(0), *generated);
    writer.end();
    response_value = std::string(writer.view());
  }
  std::function<void()> on_success;
  if (decision.changes_password) {
    on_success = [&session] { session.lift_password_restriction(); };
  }
  run_update(context_, std::move(job), sender, std::move(response_value), std::move(on_success));
}

std::optional<std::string> PasswordModifyOperation::matching_password(
    std::string_view dn, std::string_view password, ServerWorkerState& state) const {
  std::optional<std::string> matched;
  const Status status =
      context_.directory().lookup(state.txn(), dn, [&](const backend::EntryRef& entry) {
        for (std::string_view stored : entry.values("userPassword")) {
          Result<bool> verified =
              backend::verify_password(password, stored, context_.verify_policy(), state.password);
          if (verified.ok() && *verified) {
            matched = std::string(stored);
            return;
          }
        }
      });
  return status.ok() ? matched : std::nullopt;
}

Status PasswordModifyOperation::may_store(const OperationContext& context,
                                          const EntryReader& reader, const Identity& who,
                                          std::string_view dn, std::string_view ndn,
                                          const OldPassword& old) {
  const OperationAccess access(context, reader, who);
  NUMADIR_RETURN_IF_ERROR(access.status_of(
      access.may(ndn, access.entry_for_access(dn),
                 AccessAttribute::of(context.user_password_type()), AccessLevel::kWrite),
      [] { return Status(StatusCode::kInsufficientAccessRights, ""); }));
  if (!old.given) {
    return Status();
  }
  if (!old.matched.has_value()) {
    return Status(StatusCode::kUnwillingToPerform, kUnwillingToVerify);
  }
  // The old password was verified against the snapshot; it still holds only if the value it
  // matched is still stored (a change since then refuses, as a wrong old password would).
  bool still_stored = false;
  const Status found = reader.lookup(dn, [&](const backend::EntryRef& entry) {
    for (std::string_view stored : entry.values("userPassword")) {
      still_stored = still_stored || stored == *old.matched;
    }
  });
  if (!found.ok() && found.code() != StatusCode::kNoSuchObject) {
    return found;
  }
  return still_stored ? Status() : Status(StatusCode::kUnwillingToPerform, kUnwillingToVerify);
}

}  // namespace numadir::server
