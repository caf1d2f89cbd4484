// perf/auth_workload.h: AuthWorkload, what authrate asks of the server: the user range and how
// users are drawn from it (uniform or a hot set), the search filter, bind DN and password
// templates ("%d" stands for the user number), which auths bind with a wrong password
// (--wrong-percent), the ModifyRequest of modify mode, and the free functions that parse and
// expand those option values.
//
// Thread contract: an AuthWorkload is immutable after create(); any thread may call its const
// methods at once, each with its own Rng and output buffers.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "listener/wire/ldap_message.h"
#include "schema/filter.h"

namespace numadir::perf {

using Rng = std::mt19937_64;

// Appends `text` to `out` with every "%d" replaced by `number` in decimal and "%%" by "%".
// Never allocates when `out` has the capacity.
void expand_template(std::string_view text, std::uint64_t number, std::string& out);

// A wrong password is the user's right one with this suffix (so it is never the right one).
inline constexpr std::string_view kWrongPasswordSuffix = "-wrong";

// The attribute modify mode replaces.
inline constexpr std::string_view kModifyAttribute = "description";

// `--hot X:Y`: X% of auths go to the first Y% of the user range.
struct HotSet {
  double auth_percent = 0;  // 0: no hot set (uniform).
  double user_percent = 100;
};
// Parses "X:Y" with 0 < X <= 100 and 0 < Y <= 100.
// Errors: kInvalidArgument naming what is wrong.
Result<HotSet> parse_hot_set(std::string_view text);

// `-H ldap://host:port` or `-H ldaps://host:port`.
struct LdapUrl {
  std::string host;
  std::uint16_t port = 389;  // 636 for ldaps:// without a port.
  bool ldaps = false;        // TLS from the first byte.
};
// Parses "ldap://host[:port][/]" or "ldaps://host[:port][/]" (host may be an [IPv6] literal).
// Errors: kUnsupported for other schemes (ldapi://, ...); kInvalidArgument for anything
//   malformed.
Result<LdapUrl> parse_ldap_url(std::string_view url);

struct WorkloadOptions {
  std::string base = "ou=people,dc=example,dc=com";
  std::string filter_template = "(uid=user%d)";
  std::string password_template = "password%d";
  std::vector<std::string> passwords;  // From --password-file; non-empty replaces the template.
  std::string bind_dn_template;        // Empty: "uid=user%d,<base>".
  // Modify mode: each connection binds once as modify_bind_dn (-D) with modify_bind_password
  // (-w, taken as given), then modifies users (DN: bind_dn_template).
  std::string modify_bind_dn;
  std::string modify_bind_password;
  std::vector<std::string> attributes = {"1.1"};
  std::uint64_t first_user = 0;
  std::uint64_t last_user = 999;
  HotSet hot;
  // --wrong-percent: the share of auths, in [0, 100], that bind with wrong_password().
  double wrong_percent = 0;
};

class AuthWorkload {
 public:
  // Errors: kInvalidArgument for an empty or reversed user range, a filter template that does
  //   not parse (with its parser's message), a password file with fewer lines than users, or
  //   a wrong_percent outside [0, 100].
  static Result<AuthWorkload> create(WorkloadOptions options);

  AuthWorkload(AuthWorkload&&) noexcept = default;
  AuthWorkload& operator=(AuthWorkload&&) noexcept = default;

  // Returns: a user number in [first_user, last_user], drawn per the hot set.
  std::uint64_t pick_user(Rng& rng) const;

  // Returns: true for an auth that is to bind with a wrong password, drawn from `rng` with
  //   probability wrong_percent / 100. Draws nothing at 0 or 100, so that without
  //   --wrong-percent the users drawn are those of a run before the option existed.
  bool pick_wrong_password(Rng& rng) const;

  // Rebuilds `filter` as the filter template for `user`. `scratch` holds the expanded strings
  // the filter's nodes point to: both must outlive the use of `filter`. Allocates only until
  // `filter` and `scratch` have grown to their steady size.
  void build_filter(std::uint64_t user, schema::Filter& filter,
                    std::vector<std::string>& scratch) const;
  // Replaces `out` with the password of `user`.
  void password(std::uint64_t user, std::string& out) const;
  // Replaces `out` with a password of `user` that is not the right one: password() followed by
  // kWrongPasswordSuffix.
  void wrong_password(std::uint64_t user, std::string& out) const;
  // Replaces `out` with the bind DN of `user` (bind-only mode; the entry modify mode changes).
  void bind_dn(std::uint64_t user, std::string& out) const;
  // Makes `request` (reset to `message_id`) the modify mode's ModifyRequest: replace
  // description of `user`'s entry with a value naming `user` and `serial` (so that each
  // modification writes something new). `dn` and `value` receive the strings the message
  // points to: both must outlive its encoding. Allocates only until they have grown.
  void build_modify(std::int32_t message_id, std::uint64_t user, std::uint64_t serial,
                    listener::wire::LdapMessage& request, std::string& dn,
                    std::string& value) const;

  const WorkloadOptions& options() const { return options_; }
  std::uint64_t user_count() const { return options_.last_user - options_.first_user + 1; }

 private:
  AuthWorkload(WorkloadOptions options, schema::Filter filter)
      : options_(std::move(options)), filter_(std::move(filter)) {}

  WorkloadOptions options_;
  schema::Filter filter_;  // The parsed template; "%d" still in its strings.
};

}  // namespace numadir::perf
