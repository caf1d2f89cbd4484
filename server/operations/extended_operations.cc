// server/operations/extended_operations.cc: the Extended operation (RFC 4511 §4.12): Who am I? (RFC
// 4532), Password Modify (RFC 3062) and StartTLS (RFC 4511 §4.14, refused until TLS is configured).
// Any other OID is a protocolError, as slapd answers it. Like slapd, responses carry no
// responseName for these operations.
#include <sys/random.h>

#include <cerrno>
#include <optional>
#include <string>

#include "backend/password_scheme.h"
#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"
#include "server/operations/operation_handler.h"
#include "server/operations/root_dse.h"

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

}  // namespace

void OperationHandler::extended(const LdapMessage& request, ServerSession& session,
                                listener::ResponseSink& sink) const {
  const std::string_view name = request.extended.name.value_or(std::string_view());
  if (name == kWhoAmIOid) {
    if (request.extended.value.has_value()) {
      send_extended(request,
                    OwnedResult::error(ResultCode::kProtocolError, "no request data expected"),
                    std::nullopt, sink);
      return;
    }
    const Identity who = session.identity();
    // RFC 4532 §2: the authzId, empty for anonymous.
    const std::string authz_id = who.anonymous() ? std::string() : "dn:" + who.dn;
    send_extended(request, OwnedResult::success(), authz_id, sink);
    return;
  }
  if (name == kPasswordModifyOid) {
    password_modify(request, session.identity(), sink);
    return;
  }
  if (name == kStartTlsOid) {
    send_extended(request, OwnedResult::error(ResultCode::kUnavailable, "Could not initialize TLS"),
                  std::nullopt, sink);
    return;
  }
  send_extended(request,
                OwnedResult::error(ResultCode::kProtocolError, "unsupported extended operation"),
                std::nullopt, sink);
}

void OperationHandler::password_modify(const LdapMessage& request, const Identity& who,
                                       listener::ResponseSink& sink) const {
  if (who.anonymous()) {
    send_extended(request,
                  OwnedResult::error(ResultCode::kStrongerAuthRequired,
                                     "only authenticated users may change passwords"),
                  std::nullopt, sink);
    return;
  }
  PasswdModifyRequest passwd;
  if (std::optional<OwnedResult> bad = parse_passwd_modify(request.extended.value, passwd);
      bad.has_value()) {
    send_extended(request, *bad, std::nullopt, sink);
    return;
  }
  // The target: the named entry, or the bound identity itself.
  std::string target_dn = who.dn;
  std::string target_ndn = who.ndn;
  if (passwd.user_identity.has_value() && !passwd.user_identity->empty()) {
    Result<std::string> ndn = normalize_dn(*passwd.user_identity);
    if (!ndn.ok()) {
      send_extended(request, OwnedResult::error(ResultCode::kInvalidDnSyntax, "Invalid DN"),
                    std::nullopt, sink);
      return;
    }
    target_dn = std::string(*passwd.user_identity);
    target_ndn = std::move(*ndn);
  }
  if (target_ndn.empty()) {
    send_extended(request,
                  OwnedResult::error(ResultCode::kUnwillingToPerform,
                                     "no password is associated with the Root DSE"),
                  std::nullopt, sink);
    return;
  }
  const DirectoryGroups groups(*this);
  if (!may(requester(who, groups), target_ndn, entry_for_access(target_dn),
           AccessAttribute::of(user_password_type_), AccessLevel::kWrite)) {
    send_extended(request, OwnedResult::error(ResultCode::kInsufficientAccessRights, ""),
                  std::nullopt, sink);
    return;
  }
  if (passwd.old_password.has_value()) {
    // As slapd: checked whenever given, whoever asks.
    bool matched = false;
    const Status status =
        directory_.lookup(read_txn(), target_dn, [&](const backend::EntryRef& entry) {
          for (std::string_view stored : entry.values("userPassword")) {
            Result<bool> verified =
                backend::verify_password(*passwd.old_password, stored, verify_policy_);
            if (verified.ok() && *verified) {
              matched = true;
              return;
            }
          }
        });
    if (!status.ok() || !matched) {
      send_extended(
          request,
          OwnedResult::error(ResultCode::kUnwillingToPerform, "unwilling to verify old password"),
          std::nullopt, sink);
      return;
    }
  }
  std::optional<std::string> generated;
  std::string_view new_password;
  if (passwd.new_password.has_value()) {
    new_password = *passwd.new_password;
  } else {
    generated = generate_password();
    if (!generated.has_value()) {
      send_extended(request, OwnedResult::error(ResultCode::kOther, "password generation failed"),
                    std::nullopt, sink);
      return;
    }
    new_password = *generated;
  }
  Result<std::string> hashed =
      backend::hash_password(new_password, options_.default_password_scheme);
  if (!hashed.ok()) {
    send_extended(request, OwnedResult::error(ResultCode::kOther, "password hash failed"),
                  std::nullopt, sink);
    return;
  }
  const backend::Modification replace{
      backend::ModificationKind::kReplace, "userPassword", {std::move(*hashed)}};
  const Status status = directory_.modify(target_dn, std::span(&replace, 1),
                                          backend::UpdateContext{who.dn, std::nullopt});
  if (!status.ok()) {
    send_status(request, status, sink);
    return;
  }
  if (!generated.has_value()) {
    send_extended(request, OwnedResult::success(), std::nullopt, sink);
    return;
  }
  // PasswdModifyResponseValue ::= SEQUENCE { genPasswd [0] OCTET STRING OPTIONAL }
  listener::wire::BerWriter writer;
  writer.begin(ber::kSequence);
  writer.write_octets(ber::context(0), *generated);
  writer.end();
  send_extended(request, OwnedResult::success(), writer.view(), sink);
}

}  // namespace numadir::server
