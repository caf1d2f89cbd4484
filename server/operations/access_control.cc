// server/operations/access_control.cc: access rules, compiled once and evaluated per check (see the
// header).
#include "server/operations/access_control.h"

#include <algorithm>
#include <string>
#include <utility>

#include "schema/ascii.h"
#include "schema/filter.h"

namespace numadir::server {

namespace {

constexpr AccessMask kAllPrivileges = up_to(AccessLevel::kWrite);

// Returns: the normalized DN of the parent of normalized DN `ndn` ("" for a one-RDN DN). A
// normalized DN escapes every special character with a backslash, so the first comma not
// escaped ends the first RDN.
std::string_view parent_ndn(std::string_view ndn) {
  for (std::size_t i = 0; i < ndn.size(); ++i) {
    if (ndn[i] == '\\') {
      ++i;
    } else if (ndn[i] == ',') {
      return ndn.substr(i + 1);
    }
  }
  return {};
}

// Returns: whether normalized `ndn` is strictly below normalized `base` ("" is the root).
bool is_below(std::string_view ndn, std::string_view base) {
  if (ndn.size() <= base.size()) {
    return false;
  }
  std::string_view at = ndn;
  while (at.size() > base.size()) {
    at = parent_ndn(at);
  }
  return at == base;
}

}  // namespace

struct DnPattern {
  bool any = true;
  std::string ndn;
  DnScope scope = DnScope::kSubtree;

  bool matches(std::string_view candidate) const {
    if (any) {
      return true;
    }
    switch (scope) {
      case DnScope::kBase:
        return candidate == ndn;
      case DnScope::kOne:
        return !candidate.empty() && parent_ndn(candidate) == ndn;
      case DnScope::kSubtree:
        return candidate == ndn || is_below(candidate, ndn);
      case DnScope::kChildren:
        return is_below(candidate, ndn);
    }
    return false;
  }
};

struct Subject {
  enum class Kind : std::uint8_t { kAnyone, kAnonymous, kUsers, kSelf, kRootDn, kDn, kGroup };
  Kind kind = Kind::kAnyone;
  DnPattern dn;           // kDn.
  std::string group_ndn;  // kGroup.
  AccessMask access = 0;

  // Returns: whether the requester is one of this clause's subjects (kUnknown: its group could
  //   not be read).
  Membership matches(const Requester& who, std::string_view entry_ndn) const {
    const Identity& id = who.identity;
    switch (kind) {
      case Kind::kAnyone:
        return Membership::kMember;
      case Kind::kAnonymous:
        return member_if(id.anonymous());
      case Kind::kUsers:
        return member_if(!id.anonymous());
      case Kind::kSelf:
        return member_if(!id.ndn.empty() && id.ndn == entry_ndn);
      case Kind::kRootDn:
        return member_if(id.root);
      case Kind::kDn:
        return member_if(!id.ndn.empty() && dn.matches(id.ndn));
      case Kind::kGroup:
        if (id.ndn.empty() || who.groups == nullptr) {
          return Membership::kNotMember;
        }
        return who.groups->is_member(group_ndn, id.ndn);
    }
    return Membership::kNotMember;
  }

  static Membership member_if(bool member) {
    return member ? Membership::kMember : Membership::kNotMember;
  }
};

struct AccessControl::Rule {
  DnPattern dn;
  std::unique_ptr<backend::EntryFilter> filter;  // nullptr: every entry.
  bool all_attributes = true;
  std::vector<const schema::AttributeType*> types;
  bool entry = false;     // Names the `entry` pseudo-attribute.
  bool children = false;  // Names the `children` pseudo-attribute.
  std::vector<Subject> by;

  bool covers(const AccessAttribute& attribute) const {
    if (all_attributes) {
      return true;
    }
    switch (attribute.kind) {
      case AccessAttribute::Kind::kEntry:
        return entry;
      case AccessAttribute::Kind::kChildren:
        return children;
      case AccessAttribute::Kind::kType:
        return attribute.type != nullptr &&
               std::any_of(types.begin(), types.end(), [&](const schema::AttributeType* type) {
                 return attribute.type->is_subtype_of(*type);
               });
    }
    return false;
  }
};

Result<AccessMask> parse_access(std::string_view text) {
  static constexpr std::pair<std::string_view, AccessLevel> kLevels[] = {
      {"none", AccessLevel::kNone},     {"disclose", AccessLevel::kDisclose},
      {"auth", AccessLevel::kAuth},     {"compare", AccessLevel::kCompare},
      {"search", AccessLevel::kSearch}, {"read", AccessLevel::kRead},
      {"write", AccessLevel::kWrite},
  };
  for (const auto& [name, level] : kLevels) {
    if (schema::ascii_iequals(text, name)) {
      return up_to(level);
    }
  }
  if (!text.starts_with('=') || text.size() < 2) {
    return invalid_argument(
        "\"" + std::string(text) +
        "\" is not an access: use none, disclose, auth, compare, search, read, write, or = "
        "followed by privilege letters (w r s c x d), e.g. \"=wx\"");
  }
  AccessMask mask = 0;
  for (const char letter : text.substr(1)) {
    switch (letter) {
      case 'w':
        mask |= privilege(AccessLevel::kWrite);
        break;
      case 'r':
        mask |= privilege(AccessLevel::kRead);
        break;
      case 's':
        mask |= privilege(AccessLevel::kSearch);
        break;
      case 'c':
        mask |= privilege(AccessLevel::kCompare);
        break;
      case 'x':
        mask |= privilege(AccessLevel::kAuth);
        break;
      case 'd':
        mask |= privilege(AccessLevel::kDisclose);
        break;
      case '0':
        break;  // slapd's "=0": no privilege.
      default:
        return invalid_argument("\"" + std::string(text) + "\": '" + std::string(1, letter) +
                                "' is not a privilege letter (w r s c x d)");
    }
  }
  return mask;
}

Result<DnScope> parse_dn_scope(std::string_view text) {
  if (schema::ascii_iequals(text, "base")) {
    return DnScope::kBase;
  }
  if (schema::ascii_iequals(text, "one")) {
    return DnScope::kOne;
  }
  if (schema::ascii_iequals(text, "subtree")) {
    return DnScope::kSubtree;
  }
  if (schema::ascii_iequals(text, "children")) {
    return DnScope::kChildren;
  }
  return invalid_argument("\"" + std::string(text) +
                          "\" is not a scope: use base, one, subtree or children");
}

AccessControl::AccessControl(const schema::Schema& schema, bool default_policy)
    : user_password_(schema.attribute_type("userPassword")), default_(default_policy) {}

AccessControl::AccessControl(const schema::Schema& schema) : AccessControl(schema, true) {
  // access to attrs=userPassword by self =wx by * auth
  Rule password;
  password.all_attributes = false;
  if (user_password_ != nullptr) {
    password.types.push_back(user_password_);
  }
  password.by.push_back({Subject::Kind::kSelf,
                         {},
                         {},
                         privilege(AccessLevel::kWrite) | privilege(AccessLevel::kAuth)});
  password.by.push_back({Subject::Kind::kAnyone, {}, {}, up_to(AccessLevel::kAuth)});
  rules_.push_back(std::move(password));
  // access to attrs=children by * read
  Rule children;
  children.all_attributes = false;
  children.children = true;
  children.by.push_back({Subject::Kind::kAnyone, {}, {}, up_to(AccessLevel::kRead)});
  rules_.push_back(std::move(children));
  // access to * by self write by * read
  Rule rest;
  rest.by.push_back({Subject::Kind::kSelf, {}, {}, up_to(AccessLevel::kWrite)});
  rest.by.push_back({Subject::Kind::kAnyone, {}, {}, up_to(AccessLevel::kRead)});
  rules_.push_back(std::move(rest));
}

AccessControl::~AccessControl() = default;

Result<std::unique_ptr<AccessControl>> AccessControl::compile(
    const backend::AttributeCatalog& catalog, const std::vector<AccessRuleSpec>& specs,
    NormalizeFunction normalize, const void* context) {
  const schema::Schema& schema = catalog.schema();
  if (specs.empty()) {
    return std::make_unique<AccessControl>(schema);
  }
  std::unique_ptr<AccessControl> access(new AccessControl(schema, false));
  const auto problem = [](const AccessRuleSpec& spec, std::string_view key, std::string_view what) {
    return invalid_argument(spec.origin + "." + std::string(key) + ": " + std::string(what));
  };
  for (const AccessRuleSpec& spec : specs) {
    Rule rule;
    if (!spec.dn.empty()) {
      Result<std::string> ndn = normalize(context, spec.dn);
      if (!ndn.ok()) {
        return problem(spec, "dn", ndn.status().message());
      }
      rule.dn = DnPattern{false, std::move(*ndn), spec.scope};
    }
    if (!spec.filter.empty()) {
      Result<schema::Filter> filter = schema::Filter::parse(spec.filter);
      if (!filter.ok()) {
        return problem(spec, "filter", filter.status().message());
      }
      rule.filter = std::make_unique<backend::EntryFilter>(*filter, catalog);
      access->needs_entry_ = true;
    }
    rule.all_attributes = spec.attrs.empty();
    for (const std::string& name : spec.attrs) {
      if (schema::ascii_iequals(name, "entry")) {
        rule.entry = true;
      } else if (schema::ascii_iequals(name, "children")) {
        rule.children = true;
      } else if (const schema::AttributeType* type = schema.attribute_type(name); type != nullptr) {
        rule.types.push_back(type);
      } else {
        return problem(spec, "attrs", "\"" + name + "\" is not an attribute type of the schema");
      }
    }
    if (spec.by.empty()) {
      return problem(spec, "by", "needs at least one clause");
    }
    for (const AccessSubjectSpec& by : spec.by) {
      Subject subject;
      subject.access = by.access;
      if (!by.dn.empty()) {
        Result<std::string> ndn = normalize(context, by.dn);
        if (!ndn.ok()) {
          return problem(spec, "by.dn", ndn.status().message());
        }
        subject.kind = Subject::Kind::kDn;
        subject.dn = DnPattern{false, std::move(*ndn), by.dn_scope};
      } else if (!by.group.empty()) {
        Result<std::string> ndn = normalize(context, by.group);
        if (!ndn.ok()) {
          return problem(spec, "by.group", ndn.status().message());
        }
        subject.kind = Subject::Kind::kGroup;
        subject.group_ndn = std::move(*ndn);
        access->has_groups_ = true;
      } else if (by.who == "*") {
        subject.kind = Subject::Kind::kAnyone;
      } else if (schema::ascii_iequals(by.who, "anonymous")) {
        subject.kind = Subject::Kind::kAnonymous;
      } else if (schema::ascii_iequals(by.who, "users")) {
        subject.kind = Subject::Kind::kUsers;
      } else if (schema::ascii_iequals(by.who, "self")) {
        subject.kind = Subject::Kind::kSelf;
      } else if (schema::ascii_iequals(by.who, "rootdn")) {
        subject.kind = Subject::Kind::kRootDn;
      } else {
        return problem(spec, "by.who",
                       "\"" + by.who +
                           "\" is not a subject: use *, anonymous, users, self or "
                           "rootdn (or dn = \"...\", group = \"...\")");
      }
      rule.by.push_back(std::move(subject));
    }
    access->rules_.push_back(std::move(rule));
  }
  return access;
}

bool AccessControl::is_password(const schema::AttributeType* type) const {
  return type != nullptr && user_password_ != nullptr && type->is_subtype_of(*user_password_);
}

std::optional<AccessMask> AccessControl::privileges(const Requester& who, const AccessEntry& entry,
                                                    const AccessAttribute& attribute) const {
  if (who.identity.root) {
    return kAllPrivileges;
  }
  for (const Rule& rule : rules_) {
    if (!rule.covers(attribute) || !rule.dn.matches(entry.ndn)) {
      continue;
    }
    if (rule.filter != nullptr) {
      // Without the entry the rule's target cannot be decided: refuse rather than fall
      // through to a later, possibly more generous rule.
      if (entry.entry == nullptr) {
        return 0;
      }
      if (!rule.filter->matches(*entry.entry)) {
        continue;
      }
    }
    for (const Subject& subject : rule.by) {
      switch (subject.matches(who, entry.ndn)) {
        case Membership::kMember:
          return subject.access;
        case Membership::kNotMember:
          continue;
        case Membership::kUnknown:
          // The first matching clause decides, and this one might have matched: a later,
          // possibly more generous clause must not decide instead.
          return std::nullopt;
      }
    }
    return 0;  // slapd's implicit `by * none`.
  }
  return 0;
}

}  // namespace numadir::server
