// server/operations/access_control.h: who may do what to which entry and attribute: ordered access
// rules in the spirit of slapd's `access to <what> by <who> <access>`, from the config's [[access]]
// tables (server/formats/config.h), or the safe default policy when there are none.
//
// Evaluation, as slapd's: the rules are tried in order and the first whose target matches the
// entry and the attribute decides; within it, the first `by` clause matching the requester
// gives the privileges; no matching clause, or no matching rule, gives none. The rootdn always
// has every privilege (as slapd's rootdn).
//
// Targets: `dn` with a scope (base: that entry; one: its children; subtree: it and everything
// below; children: everything below, not itself), a `filter` the entry must match, and `attrs`:
// attribute types (their subtypes included) and the pseudo-attributes `entry` (the entry
// itself: needed to see it at all, to add, delete or rename it) and `children` (the right to
// add or remove entries below it). Leaving any out matches everything.
// Subjects: `*`, `anonymous`, `users` (any bound identity), `self` (the entry's own DN),
// `rootdn`, a DN (with a scope), or the members of a group (groupOfNames `member`,
// groupOfUniqueNames `uniqueMember`).
// Privileges, slapd's letters: w write, r read, s search, c compare, x auth, d disclose. A level
// grants itself and everything below (none < disclose < auth < compare < search < read <
// write); "=wx"-style sets grant exactly the letters given.
//
// The default policy (no [[access]] tables), in slapd's terms:
//   access to attrs=userPassword  by self =wx  by * auth
//   access to attrs=children      by * read
//   access to *                   by self write  by * read
// So userPassword is only ever used to authenticate: never returned by a search, never
// compared, not usable in a filter; its owner (and the rootdn) may replace it; only the rootdn
// adds, deletes or renames entries.
//
// Fail closed: a decision that needs a read which fails (a group entry a clause names, as
// GroupMembership reports it) is neither allowed nor denied but kFailed, which denies; callers
// end the operation with `other` (80) rather than fall through to a later, more generous clause.
//
// Thread contract: immutable after construction; any thread may call its const methods. A
// Requester belongs to the one operation that made it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/attribute_catalog.h"
#include "backend/entry_filter.h"
#include "base/status.h"
#include "schema/attribute_type.h"
#include "schema/entry.h"
#include "schema/schema.h"
#include "server/operations/server_session.h"

namespace numadir::server {

// Ordered: each level includes the ones below it (slapd's none < disclose < auth < compare <
// search < read < write).
enum class AccessLevel : std::uint8_t {
  kNone = 0,
  kDisclose,  // May learn that the entry or attribute exists (error codes may say so).
  kAuth,      // May use the attribute to authenticate (bind).
  kCompare,
  kSearch,  // May use it in a search filter.
  kRead,
  kWrite,
};

// A set of privileges: one bit per level above kNone (bit 1 << (level - 1)).
using AccessMask = std::uint8_t;

constexpr AccessMask privilege(AccessLevel level) {
  return level == AccessLevel::kNone
             ? AccessMask{0}
             : static_cast<AccessMask>(1u << (static_cast<unsigned>(level) - 1));
}
// Returns: `level` and every level below it.
constexpr AccessMask up_to(AccessLevel level) {
  return static_cast<AccessMask>((1u << static_cast<unsigned>(level)) - 1);
}

// Parses an access as the config writes it: a level name ("none", "disclose", "auth",
// "compare", "search", "read", "write") or "=" followed by privilege letters ("=wx").
// Errors: kInvalidArgument naming what is wrong.
Result<AccessMask> parse_access(std::string_view text);

// Where rule DNs apply, relative to the rule's DN.
enum class DnScope : std::uint8_t { kBase, kOne, kSubtree, kChildren };

// Errors: kInvalidArgument unless `text` is base, one, subtree or children.
Result<DnScope> parse_dn_scope(std::string_view text);

// One `by` clause as the config gives it (exactly one of who, dn, group is set).
struct AccessSubjectSpec {
  std::string who;  // "*", "anonymous", "users", "self" or "rootdn".
  std::string dn;
  DnScope dn_scope = DnScope::kBase;
  std::string group;  // The DN of a groupOfNames or groupOfUniqueNames entry.
  AccessMask access = 0;
};

// One [[access]] table as the config gives it; checked against the schema by
// AccessControl::create.
struct AccessRuleSpec {
  std::string origin;  // "access[2]": how error messages name it.
  std::string dn;      // Empty: every entry.
  DnScope scope = DnScope::kSubtree;
  std::string filter;              // Empty: every entry.
  std::vector<std::string> attrs;  // Empty: every attribute and both pseudo-attributes.
  std::vector<AccessSubjectSpec> by;
};

// The outcome of one access decision. kFailed: a read the decision needed failed, so the rules
// could not decide; it denies, and the operation answers `other` (80).
enum class AccessDecision : std::uint8_t { kAllowed, kDenied, kFailed };

// Whether an identity belongs to a set of identities (a group, a `by` clause's subject).
// kUnknown: it could not be told, because a read failed.
enum class Membership : std::uint8_t { kNotMember, kMember, kUnknown };

// Answers whether an identity belongs to a group. Implemented over the directory by the server,
// per operation (it may cache).
class GroupMembership {
 public:
  virtual ~GroupMembership() = default;
  // Returns: kMember if the entry `group_ndn` lists `member_ndn` in member or uniqueMember
  //   (both normalized DNs), kNotMember if it does not or the group does not exist, kUnknown if
  //   the group entry could not be read (a storage error).
  virtual Membership is_member(std::string_view group_ndn, std::string_view member_ndn) const = 0;
};

// Who asks: the bound identity, and how to resolve group clauses (nullptr: none match).
struct Requester {
  const Identity& identity;
  const GroupMembership* groups = nullptr;
};

// What is asked about: the entry's normalized DN and, when a rule's filter needs it, the entry
// (nullptr: not at hand; a filtered rule then does not match; see AccessControl::needs_entry).
struct AccessEntry {
  std::string_view ndn;
  const schema::Entry* entry = nullptr;
};

// What within the entry: an attribute type, or one of the pseudo-attributes.
struct AccessAttribute {
  enum class Kind : std::uint8_t { kType, kEntry, kChildren };
  Kind kind = Kind::kEntry;
  const schema::AttributeType* type = nullptr;  // kType only; nullptr: unknown to the schema.

  static AccessAttribute of(const schema::AttributeType* type) { return {Kind::kType, type}; }
  static AccessAttribute entry() { return {Kind::kEntry, nullptr}; }
  static AccessAttribute children() { return {Kind::kChildren, nullptr}; }
};

class AccessControl {
 public:
  // The default policy (see above). Requires: `schema` outlives this object.
  explicit AccessControl(const schema::Schema& schema);

  // Compiles `rules` (empty: the default policy): resolves attribute names, normalizes DNs
  // with `normalize_dn`, parses filters. Requires: `catalog` (and its schema) outlive it.
  // Errors: kInvalidArgument "<origin>.<key>: <problem>" for the first bad rule.
  template <typename NormalizeDn>
  static Result<std::unique_ptr<AccessControl>> create(const backend::AttributeCatalog& catalog,
                                                       const std::vector<AccessRuleSpec>& rules,
                                                       const NormalizeDn& normalize_dn);

  ~AccessControl();
  AccessControl(const AccessControl&) = delete;
  AccessControl& operator=(const AccessControl&) = delete;

  // Returns: the privileges `who` has on `attribute` of `entry`; nullopt when they cannot be
  //   decided: a group clause was reached, before any clause matched, whose membership is
  //   kUnknown.
  std::optional<AccessMask> privileges(const Requester& who, const AccessEntry& entry,
                                       const AccessAttribute& attribute) const;
  // Returns: whether `who` has privilege `level` on `attribute` of `entry` (kFailed when
  //   privileges() cannot decide).
  AccessDecision decide(const Requester& who, const AccessEntry& entry,
                        const AccessAttribute& attribute, AccessLevel level) const {
    const std::optional<AccessMask> mask = privileges(who, entry, attribute);
    if (!mask.has_value()) [[unlikely]] {
      return AccessDecision::kFailed;
    }
    return (*mask & privilege(level)) != 0 ? AccessDecision::kAllowed : AccessDecision::kDenied;
  }

  // Returns: true if some rule's target has a filter, so checks need the entry itself.
  bool needs_entry() const { return needs_entry_; }
  // Returns: true if some rule has a group clause.
  bool has_groups() const { return has_groups_; }
  // Returns: true for the built-in default policy, under which every entry is disclosed to
  //   everyone (so callers may skip disclosure checks).
  bool is_default() const { return default_; }

  // Returns: true if `type` is (a subtype of) userPassword.
  bool is_password(const schema::AttributeType* type) const;

 private:
  struct Rule;
  using NormalizeFunction = Result<std::string> (*)(const void*, std::string_view);

  AccessControl(const schema::Schema& schema, bool default_policy);
  static Result<std::unique_ptr<AccessControl>> compile(const backend::AttributeCatalog& catalog,
                                                        const std::vector<AccessRuleSpec>& rules,
                                                        NormalizeFunction normalize,
                                                        const void* context);

  const schema::AttributeType* const user_password_;  // nullptr if the schema lacks it.
  std::vector<Rule> rules_;
  bool default_ = true;
  bool needs_entry_ = false;
  bool has_groups_ = false;
};

template <typename NormalizeDn>
Result<std::unique_ptr<AccessControl>> AccessControl::create(
    const backend::AttributeCatalog& catalog, const std::vector<AccessRuleSpec>& rules,
    const NormalizeDn& normalize_dn) {
  return compile(
      catalog, rules,
      [](const void* context, std::string_view dn) -> Result<std::string> {
        return (*static_cast<const NormalizeDn*>(context))(dn);
      },
      &normalize_dn);
}

}  // namespace numadir::server
