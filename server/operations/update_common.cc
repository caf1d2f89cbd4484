// server/operations/update_common.cc: see update_common.h.
#include "server/operations/update_common.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <utility>

#include "backend/directory.h"

namespace numadir::server {

using listener::wire::ResultCode;

namespace {

// Returns: whether `value` starts with "{CLEARTEXT}" in any case.
bool has_cleartext_prefix(std::string_view value) {
  constexpr std::string_view kPrefix = "{CLEARTEXT}";
  return value.size() >= kPrefix.size() &&
         std::equal(kPrefix.begin(), kPrefix.end(), value.begin(), [](char want, char have) {
           return want == (have >= 'a' && have <= 'z' ? static_cast<char>(have - 'a' + 'A') : have);
         });
}

}  // namespace

std::optional<ParsedName> parse_name(const OperationContext& context, std::string_view dn) {
  Result<schema::Dn> parsed = context.parse_dn(dn);
  if (!parsed.ok()) {
    return std::nullopt;
  }
  std::string ndn = parsed->normalized(&context.dn_normalizer());
  std::string parent_ndn = parsed->parent().normalized(&context.dn_normalizer());
  return ParsedName{std::move(*parsed), std::move(ndn), std::move(parent_ndn)};
}

OwnedResult invalid_dn() { return OwnedResult::error(ResultCode::kInvalidDnSyntax, "invalid DN"); }

Status no_parent_access() {
  return Status(StatusCode::kInsufficientAccessRights, "no write access to parent");
}

Status no_entry_access() {
  return Status(StatusCode::kInsufficientAccessRights, "no write access to entry");
}

Status no_attribute_access(const schema::AttributeType& type) {
  return Status(StatusCode::kInsufficientAccessRights,
                "no write access to attribute " + std::string(type.primary_name()));
}

OwnedResult update_referral(std::string_view updateref, std::string_view dn) {
  std::string url(updateref);
  const std::size_t scheme = url.find("://");
  const bool has_path =
      scheme != std::string::npos && url.find('/', scheme + 3) != std::string::npos;
  if (!dn.empty() && !has_path) {
    url += '/';
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (const char c : dn) {
      const auto byte = static_cast<unsigned char>(c);
      // RFC 4516: a DN in a URL keeps its RFC 4514 characters but those a URL reserves.
      if (std::isalnum(byte) != 0 ||
          std::string_view("=,+-._~;'()*!$&:@").find(c) != std::string_view::npos) {
        url += c;
      } else {
        url += '%';
        url += kHex[byte >> 4];
        url += kHex[byte & 0xf];
      }
    }
  }
  OwnedResult result = OwnedResult::error(ResultCode::kReferral, "");
  result.referrals.push_back(std::move(url));
  return result;
}

OwnedResult outside_naming_context() {
  return OwnedResult::error(ResultCode::kUnwillingToPerform, "no global superior knowledge");
}

OwnedResult password_hash_failed() {
  return OwnedResult::error(ResultCode::kOther, "password hash failed");
}

Status hash_cleartext_passwords(backend::PasswordScheme scheme, std::vector<std::string>& values) {
  for (std::string& value : values) {
    Result<backend::PasswordScheme> stored = backend::stored_password_scheme(value);
    if (!stored.ok() || *stored != backend::PasswordScheme::kCleartext) {
      continue;
    }
    std::string_view password = value;
    if (has_cleartext_prefix(password)) {
      password.remove_prefix(std::string_view("{CLEARTEXT}").size());
    }
    Result<std::string> hashed = backend::hash_password(password, scheme);
    if (!hashed.ok()) {
      return hashed.status();
    }
    value = std::move(*hashed);
  }
  return Status();
}

bool UpdateTarget::parse(ResultSender& sender) {
  name_ = parse_name(context_, dn_);
  if (!name_.has_value()) {
    sender.send_result(invalid_dn());
    return false;
  }
  return true;
}

bool UpdateTarget::check(ResultSender& sender) const {
  const std::string& ndn = name_->ndn;
  if (ndn.empty() || ndn == context_.subschema_ndn()) {
    sender.send_result(
        OwnedResult::error(ResultCode::kUnwillingToPerform,
                           "cannot " + std::string(verb_) +
                               (ndn.empty() ? " the root DSE" : " the subschema subentry")));
    return false;
  }
  if (!context_.in_naming_context(ndn)) {
    sender.send_result(outside_naming_context());
    return false;
  }
  if (const std::string* referral = context_.update_referral(ndn)) {
    sender.send_result(update_referral(*referral, dn_));
    return false;
  }
  return true;
}

Status UpdateTarget::may_write(const OperationAccess& access, std::string_view dn,
                               std::string_view ndn) {
  return access.status_of(
      access.may(ndn, access.entry_for_access(dn), AccessAttribute::entry(), AccessLevel::kWrite),
      [&] { return refused(access, dn, no_entry_access()); });
}

Status refused(const OperationAccess& access, std::string_view dn, Status denied) {
  // Whether the entry exists; a lookup, which decodes nothing of it.
  Status found = access.reader().lookup(dn, [](const backend::EntryRef&) {});
  if (found.code() == StatusCode::kNoSuchObject) {
    return found;
  }
  if (OperationAccess::is_read_failure(found)) {
    return access.fail(dn, found);
  }
  return denied;
}

namespace {

// The response of an update answered on the writer thread: the open operation, and what of the
// request the response needs (its views do not outlive handle()). Owned by the job's
// completion, so destroyed with the job: the operation is released, answered or not.
class OpenReply {
 public:
  OpenReply(std::unique_ptr<listener::OpenOperation> open,
            const listener::wire::LdapMessage& request, std::optional<std::string> response_value,
            std::function<void()> on_success)
      : open_(std::move(open)),
        response_value_(std::move(response_value)),
        on_success_(std::move(on_success)) {
    request_.message_id = request.message_id;
    request_.op = request.op;
  }
  void finish(const Status& status) {
    if (status.ok() && on_success_) {
      on_success_();
    }
    OpenOperationSink sink(*open_);
    ResultSender sender(request_, sink);
    sender.send_update_result(status, response_value_);
  }

 private:
  const std::unique_ptr<listener::OpenOperation> open_;
  const std::optional<std::string> response_value_;
  const std::function<void()> on_success_;
  listener::wire::LdapMessage request_;
};

}  // namespace

void run_update(const OperationContext& context, std::unique_ptr<backend::UpdateJob> job,
                ResultSender& sender, std::optional<std::string> response_value,
                std::function<void()> on_success) {
  backend::Directory& directory = context.directory();
  std::unique_ptr<listener::OpenOperation> open = sender.detach();
  if (open == nullptr) {
    const Status status = directory.run_update(std::move(job));
    if (status.ok() && on_success) {
      on_success();
    }
    sender.send_update_result(status, response_value);
    return;
  }
  auto reply = std::make_shared<OpenReply>(std::move(open), sender.request(),
                                           std::move(response_value), std::move(on_success));
  job->done = [reply](Status status) { reply->finish(status); };
  if (directory.try_submit_update(job)) {
    return;
  }
  // The writer's queue is full: wait for this one here (backpressure on the worker).
  job->done = nullptr;
  reply->finish(directory.run_update(std::move(job)));
}

}  // namespace numadir::server
