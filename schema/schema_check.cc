// schema/schema_check.cc: Schema::check_entry and Schema::structural_class, the checks slapd's
// entry_schema_check makes on an entry to add or the result of a modify or rename.
#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "schema/ascii.h"
#include "schema/detail/quoted.h"
#include "schema/detail/schema_data.h"
#include "schema/dn.h"
#include "schema/matching_rule.h"
#include "schema/schema.h"
#include "schema/syntax.h"

namespace numadir::schema {
namespace {

constexpr std::string_view kObjectIdentifierMatchOid = "2.5.13.0";

// The attributes of an entry that share one attribute type and one set of options.
struct AttributeGroup {
  const AttributeType* type;
  std::string options;           // Lower-cased, sorted, ';'-joined; "" for none.
  std::string_view description;  // As first written.
  std::vector<const std::string*> values;
  std::vector<std::string> normalized;  // Parallel to values; filled by check_values.
  // The objectClass group only: the class each value names, parallel to values (check_values).
  std::vector<const ObjectClass*> classes;
};

// Up to this many values of one group are searched linearly: an attribute's usual size, where
// hash tables cost more to build than they save. Larger ones get a hash table, so that a client
// sending many still costs linear time.
constexpr std::size_t kLinearLimit = 16;
// The same for an entry's groups (attribute descriptions): an entry with its operational
// attributes (a replica's, a slapcat export's) has 20 or more.
constexpr std::size_t kGroupLinearLimit = 64;
// check_allowed's lookups in the classes' lists, past which it builds one set instead.
constexpr std::size_t kAllowedLookups = 1024;

// Returns: the options of `options` (";lang-en;binary") in canonical form ("binary;lang-en"),
// or false if one is empty or has a character that is not a keychar.
bool canonical_options(std::string_view options, std::string& out) {
  out.clear();
  if (options.empty()) {
    return true;
  }
  std::vector<std::string> parts;
  options.remove_prefix(1);  // The leading ';'.
  while (true) {
    const std::size_t semicolon = options.find(';');
    const std::string_view part = options.substr(0, semicolon);
    if (part.empty() || !std::all_of(part.begin(), part.end(), is_keychar)) {
      return false;
    }
    parts.push_back(ascii_lowered(part));
    if (semicolon == std::string_view::npos) {
      break;
    }
    options.remove_prefix(semicolon + 1);
  }
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      out += ';';
    }
    out += parts[i];
  }
  return true;
}

// Decodes a hex-form RDN value (a BER encoding, RFC 4514 §2.4) to its contents octets when it
// is a single primitive TLV; otherwise returns it unchanged.
std::string_view ber_contents(std::string_view encoding) {
  if (encoding.size() < 2) {
    return encoding;
  }
  std::size_t length = static_cast<unsigned char>(encoding[1]);
  std::size_t header = 2;
  if (length & 0x80) {
    const std::size_t octets = length & 0x7f;
    if (octets == 0 || octets > 4 || encoding.size() < 2 + octets) {
      return encoding;
    }
    length = 0;
    for (std::size_t i = 0; i < octets; ++i) {
      length = (length << 8) | static_cast<unsigned char>(encoding[2 + i]);
    }
    header += octets;
  }
  if ((static_cast<unsigned char>(encoding[0]) & 0x20) != 0 || encoding.size() != header + length) {
    return encoding;
  }
  return encoding.substr(header);
}

}  // namespace

// What a check keeps for the next: its vectors' capacity, and its groups (their strings and
// vectors) as spares.
struct EntryCheckScratch::Storage {
  std::vector<AttributeGroup> groups;  // Empty between checks.
  std::vector<AttributeGroup> spares;
  std::vector<const ObjectClass*> classes;    // Empty between checks.
  std::vector<std::string_view> class_names;  // Empty between checks.
};

EntryCheckScratch::EntryCheckScratch() = default;
EntryCheckScratch::~EntryCheckScratch() = default;

EntryCheckScratch::Storage& EntryCheckScratch::storage() {
  if (storage_ == nullptr) {
    storage_ = std::make_unique<Storage>();
  }
  return *storage_;
}

namespace {

// Spares kept past a check, and the values a kept group may hold storage for: an entry with
// thousands of attributes or values leaves no more than this behind.
constexpr std::size_t kSpareGroups = 128;
constexpr std::size_t kSpareValues = 256;

// The entry checks, with access to the schema's internals.
class EntryChecker {
 public:
  // `storage`: what earlier checks left for reuse, taken back when this one ends; nullptr for a
  // check of its own.
  EntryChecker(const Schema& schema, const detail::SchemaData& impl, const Entry& entry,
               EntryCheckScratch::Storage* storage = nullptr)
      : schema_(schema), impl_(impl), entry_(entry), storage_(storage) {
    if (storage_ != nullptr) {
      groups_.swap(storage_->groups);
      classes_.swap(storage_->classes);
      class_names_.swap(storage_->class_names);
    }
  }
  EntryChecker(const EntryChecker&) = delete;
  EntryChecker& operator=(const EntryChecker&) = delete;
  ~EntryChecker() {
    if (storage_ == nullptr) {
      return;
    }
    for (AttributeGroup& group : groups_) {
      if (storage_->spares.size() == kSpareGroups) {
        break;
      }
      if (group.normalized.size() > kSpareValues) {
        std::vector<std::string>().swap(group.normalized);
        std::vector<const std::string*>().swap(group.values);
      }
      storage_->spares.push_back(std::move(group));
    }
    groups_.clear();
    classes_.clear();
    class_names_.clear();
    groups_.swap(storage_->groups);
    classes_.swap(storage_->classes);
    class_names_.swap(storage_->class_names);
  }

  // On success, *structural is what structural_class() returns.
  Status check(const ObjectClass** structural) {
    NUMADIR_RETURN_IF_ERROR(group_attributes());
    NUMADIR_RETURN_IF_ERROR(check_values());
    NUMADIR_RETURN_IF_ERROR(check_single_values());
    const AttributeGroup* object_classes =
        impl_.object_class_type == nullptr ? nullptr : find_group(impl_.object_class_type, "");
    if (object_classes == nullptr) {
      return status_error(StatusCode::kObjectClassViolation, "no objectClass attribute");
    }
    NUMADIR_RETURN_IF_ERROR(resolve_classes(object_classes->values, object_classes->classes));
    NUMADIR_RETURN_IF_ERROR(find_structural(structural));
    NUMADIR_RETURN_IF_ERROR(check_abstract_classes());
    NUMADIR_RETURN_IF_ERROR(check_naming());
    NUMADIR_RETURN_IF_ERROR(check_required());
    return check_allowed();
  }

  // Reads only the objectClass values: callers run it next to check() on every update.
  const ObjectClass* structural_class() {
    if (impl_.object_class_type == nullptr) {
      return nullptr;
    }
    std::vector<const std::string*> values;
    for (const EntryAttribute& attribute : entry_.attributes) {
      const auto [type_name, options] = split_description(attribute.description);
      if (options.empty() && schema_.attribute_type(type_name) == impl_.object_class_type) {
        for (const std::string& value : attribute.values) {
          values.push_back(&value);
        }
      }
    }
    if (values.empty() || !resolve_classes(values, {}).ok()) {
      return nullptr;
    }
    const ObjectClass* structural = nullptr;
    if (!find_structural(&structural).ok()) {
      return nullptr;
    }
    return structural;
  }

 private:
  // Resolves every attribute description and groups the values per (type, options).
  Status group_attributes() {
    std::string options;
    for (const EntryAttribute& attribute : entry_.attributes) {
      const auto [type_name, option_text] = split_description(attribute.description);
      const AttributeType* type = schema_.attribute_type(type_name);
      if (type == nullptr) {
        return status_error(StatusCode::kUndefinedAttributeType,
                            attribute.description + ": attribute type undefined");
      }
      if (!canonical_options(option_text, options)) {
        return status_error(
            StatusCode::kUndefinedAttributeType,
            attribute.description + ": attribute description contains inappropriate characters");
      }
      if (attribute.values.empty()) {
        return status_error(StatusCode::kConstraintViolation,
                            attribute.description + ": attribute has no values");
      }
      std::size_t index = group_of(type, options);
      if (index == kNoGroup) {
        index = groups_.size();
        if (storage_ == nullptr || storage_->spares.empty()) {
          groups_.emplace_back();
        } else {
          groups_.push_back(std::move(storage_->spares.back()));
          storage_->spares.pop_back();
        }
        AttributeGroup& added = groups_.back();
        added.type = type;
        added.options.assign(options);
        added.description = attribute.description;
        added.values.clear();
        added.classes.clear();  // normalized: sized by check_values.
        if (!group_index_.empty()) {
          group_index_.emplace(group_key(type, options), index);
        } else if (groups_.size() > kGroupLinearLimit) {
          for (std::size_t i = 0; i < groups_.size(); ++i) {
            group_index_.emplace(group_key(groups_[i].type, groups_[i].options), i);
          }
        }
      }
      AttributeGroup& group = groups_[index];
      for (const std::string& value : attribute.values) {
        group.values.push_back(&value);
      }
    }
    return Status();
  }

  static std::string group_key(const AttributeType* type, std::string_view options) {
    std::string key = type->oid;
    key += ';';
    key += options;
    return key;
  }

  static constexpr std::size_t kNoGroup = ~std::size_t{0};

  // Returns: the index in groups_ of the group of `type` with `options`, or kNoGroup.
  std::size_t group_of(const AttributeType* type, std::string_view options) const {
    if (group_index_.empty()) {
      for (std::size_t i = 0; i < groups_.size(); ++i) {
        if (groups_[i].type == type && groups_[i].options == options) {
          return i;
        }
      }
      return kNoGroup;
    }
    const auto it = group_index_.find(group_key(type, options));
    return it == group_index_.end() ? kNoGroup : it->second;
  }

  const AttributeGroup* find_group(const AttributeType* type, std::string_view options) const {
    const std::size_t index = group_of(type, options);
    return index == kNoGroup ? nullptr : &groups_[index];
  }

  // Writes the form values of `type` compare in: the equality rule's normalized form, or the
  // value itself for a type without one. Object identifiers that name a known element compare
  // as its numeric OID, as slapd normalizes them ("person" equals "2.5.6.6").
  bool normalize(const AttributeType& type, std::string_view value, std::string& out) const {
    if (type.equality == nullptr) {
      out.assign(value);
      return true;
    }
    if (type.equality->oid == kObjectIdentifierMatchOid) {
      if (const ObjectClass* object_class = schema_.object_class(value)) {
        out = object_class->oid;
        return true;
      }
      if (const AttributeType* attribute_type = schema_.attribute_type(value)) {
        out = attribute_type->oid;
        return true;
      }
    }
    return type.equality->normalize(value, out);
  }

  // Syntax of every value, and no value twice under the equality rule. Linear in the number
  // of values: a client may send many.
  Status check_values() {
    std::unordered_set<std::string_view> seen;
    for (AttributeGroup& group : groups_) {
      const AttributeType& type = *group.type;
      const bool object_class = &type == impl_.object_class_type;
      const bool hashed = group.values.size() > kLinearLimit;
      // A DN, a time, a UUID: the equality rule's normalize parses as the syntax does.
      const bool validated_by_normalize = type.syntax != nullptr && type.equality != nullptr &&
                                          normalize_validates(*type.syntax, *type.equality);
      // Sized once, so the views in `seen` stay valid.
      group.normalized.resize(group.values.size());
      if (object_class) {
        group.classes.resize(group.values.size());
      }
      seen.clear();
      for (std::size_t i = 0; i < group.values.size(); ++i) {
        const std::string& value = *group.values[i];
        bool valid =
            type.syntax == nullptr || validated_by_normalize || type.syntax->validate(value);
        if (valid && object_class) {
          // An objectClass value names a class the schema knows, or it is invalid per syntax:
          // slapd's objectClass pretty function rejects unknown classes. Its normalized form
          // is the class's OID, as normalize() gives it.
          const ObjectClass* named = schema_.object_class(value);
          valid = named != nullptr;
          if (valid) {
            group.classes[i] = named;
            group.normalized[i] = named->oid;
          }
        } else if (valid) {
          valid = normalize(type, value, group.normalized[i]);
        }
        if (!valid) {
          return status_error(StatusCode::kInvalidAttributeSyntax,
                              std::string(group.description) + ": value #" + std::to_string(i) +
                                  " invalid per syntax");
        }
        const std::string& normalized = group.normalized[i];
        const bool repeated =
            hashed ? !seen.insert(normalized).second
                   : std::find(group.normalized.begin(), group.normalized.begin() + i,
                               normalized) != group.normalized.begin() + i;
        if (repeated) {
          return status_error(StatusCode::kAttributeOrValueExists,
                              std::string(group.description) + ": value #" + std::to_string(i) +
                                  " provided more than once");
        }
      }
    }
    return Status();
  }

  Status check_single_values() {
    for (const AttributeGroup& group : groups_) {
      if (group.type->single_value && group.values.size() > 1) {
        return status_error(
            StatusCode::kConstraintViolation,
            "attribute " + detail::in_quotes(group.description) + " cannot have multiple values");
      }
    }
    return Status();
  }

  // Resolves objectClass values into classes_ (in value order, without repeats).
  // `known`: the classes check_values found for `values` (parallel), or empty.
  Status resolve_classes(const std::vector<const std::string*>& values,
                         std::span<const ObjectClass* const> known) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::string* value = values[i];
      const ObjectClass* object_class = known.empty() ? schema_.object_class(*value) : known[i];
      if (object_class == nullptr) {
        return status_error(StatusCode::kObjectClassViolation,
                            "unrecognized objectClass " + detail::in_quotes(*value));
      }
      if (std::find(classes_.begin(), classes_.end(), object_class) == classes_.end()) {
        classes_.push_back(object_class);
        class_names_.push_back(*value);
      }
    }
    return Status();
  }

  // slapd's structural_class(): the structural classes listed must form one superclass chain,
  // or be joined by a listed class that is a subclass of each of them (multiple inheritance).
  Status find_structural(const ObjectClass** out) {
    const ObjectClass* chain = nullptr;
    std::string_view chain_name;
    for (std::size_t i = 0; i < classes_.size(); ++i) {
      const ObjectClass* object_class = classes_[i];
      if (object_class->kind != ObjectClassKind::kStructural) {
        continue;
      }
      if (chain == nullptr || object_class->is_subclass_of(*chain)) {
        chain = object_class;
        chain_name = class_names_[i];
        continue;
      }
      if (chain->is_subclass_of(*object_class)) {
        continue;
      }
      const bool joined =
          std::any_of(classes_.begin() + i + 1, classes_.end(), [&](const ObjectClass* later) {
            return later->kind == ObjectClassKind::kStructural && later->is_subclass_of(*chain) &&
                   later->is_subclass_of(*object_class);
          });
      if (!joined) {
        return status_error(StatusCode::kObjectClassViolation,
                            "invalid structural object class chain (" + std::string(chain_name) +
                                "/" + std::string(class_names_[i]) + ")");
      }
    }
    if (chain == nullptr) {
      return status_error(StatusCode::kObjectClassViolation, "no structural object class provided");
    }
    *out = chain;
    return Status();
  }

  // RFC 4512 §2.4.1: an entry belongs to an abstract class only through a class derived
  // from it.
  Status check_abstract_classes() {
    for (std::size_t i = 0; i < classes_.size(); ++i) {
      const ObjectClass* object_class = classes_[i];
      if (object_class->kind != ObjectClassKind::kAbstract || object_class->oid == kTopOid) {
        continue;
      }
      const bool derived = std::any_of(classes_.begin(), classes_.end(), [&](const ObjectClass* c) {
        return c != object_class && c->is_subclass_of(*object_class);
      });
      if (!derived) {
        return status_error(StatusCode::kObjectClassViolation,
                            "instantiation of abstract objectClass " +
                                detail::in_quotes(class_names_[i]) + " not allowed");
      }
    }
    return Status();
  }

  // Every AVA of the RDN must be a value of its attribute (without options) in the entry.
  Status check_naming() {
    Result<Dn> dn = Dn::parse(entry_.dn);
    if (!dn.ok()) {
      return status_error(StatusCode::kInvalidDnSyntax, dn.status().message());
    }
    if (dn->is_root()) {
      return Status();
    }
    std::string normalized;
    for (const Ava& ava : dn->rdn(0)) {
      const AttributeType* type = schema_.attribute_type(ava.type);
      if (type == nullptr) {
        return status_error(StatusCode::kNamingViolation,
                            "naming attribute " + detail::in_quotes(ava.type) + " is not defined");
      }
      const std::string_view value = ava.hex_form ? ber_contents(ava.value) : ava.value;
      const AttributeGroup* group = find_group(type, "");
      const bool present = group != nullptr && normalize(*type, value, normalized) &&
                           std::find(group->normalized.begin(), group->normalized.end(),
                                     normalized) != group->normalized.end();
      if (!present) {
        return status_error(StatusCode::kNamingViolation, "value of naming attribute " +
                                                              detail::in_quotes(ava.type) +
                                                              " is not present in entry");
      }
    }
    return Status();
  }

  bool has_type(const AttributeType* type) const {
    return std::any_of(groups_.begin(), groups_.end(),
                       [&](const AttributeGroup& group) { return group.type == type; });
  }

  // RFC 4512 §2.5.3: a MUST is met by the type itself with any options, not by a subtype.
  Status check_required() {
    for (std::size_t i = 0; i < classes_.size(); ++i) {
      for (const AttributeType* type : classes_[i]->all_must) {
        if (!has_type(type)) {
          return status_error(StatusCode::kObjectClassViolation,
                              "object class " + detail::in_quotes(class_names_[i]) +
                                  " requires attribute " + detail::in_quotes(type->primary_name()));
        }
      }
    }
    return Status();
  }

  // Every user attribute must be in the MUST or MAY of a class of the entry ('top' included,
  // as every entry belongs to it), unless the entry is an extensibleObject. Each class's
  // sorted list answers in log time; only an entry whose classes times attributes is past
  // kAllowedLookups (a client sending hundreds of each) gathers the lists into one set first.
  Status check_allowed() {
    if (impl_.extensible_object != nullptr &&
        std::find(classes_.begin(), classes_.end(), impl_.extensible_object) != classes_.end()) {
      return Status();
    }
    std::unordered_set<const AttributeType*> allowed;
    const bool hashed = (classes_.size() + 1) * groups_.size() > kAllowedLookups;
    if (hashed) {
      auto allow = [&](const ObjectClass* object_class) {
        allowed.insert(object_class->allowed.begin(), object_class->allowed.end());
      };
      if (impl_.top != nullptr) {
        allow(impl_.top);
      }
      std::for_each(classes_.begin(), classes_.end(), allow);
    }
    for (const AttributeGroup& group : groups_) {
      if (group.type->operational()) {
        continue;
      }
      const bool is_allowed =
          hashed ? allowed.contains(group.type)
                 : (impl_.top != nullptr && impl_.top->allows(group.type)) ||
                       std::any_of(classes_.begin(), classes_.end(),
                                   [&](const ObjectClass* c) { return c->allows(group.type); });
      if (!is_allowed) {
        return status_error(StatusCode::kObjectClassViolation,
                            "attribute " + detail::in_quotes(group.description) + " not allowed");
      }
    }
    return Status();
  }

  const Schema& schema_;
  const detail::SchemaData& impl_;
  const Entry& entry_;
  EntryCheckScratch::Storage* const storage_;
  std::vector<AttributeGroup> groups_;
  std::unordered_map<std::string, std::size_t> group_index_;  // group_key() -> index in groups_.
  std::vector<const ObjectClass*> classes_;
  std::vector<std::string_view> class_names_;  // As written in the entry, parallel to classes_.
};

}  // namespace

Status Schema::check_entry(const Entry& entry) const {
  const ObjectClass* structural = nullptr;
  return check_entry(entry, &structural);
}

Status Schema::check_entry(const Entry& entry, const ObjectClass** structural) const {
  *structural = nullptr;
  return EntryChecker(*this, *impl_, entry).check(structural);
}

Status Schema::check_entry(const Entry& entry, const ObjectClass** structural,
                           EntryCheckScratch& scratch) const {
  *structural = nullptr;
  return EntryChecker(*this, *impl_, entry, &scratch.storage()).check(structural);
}

const ObjectClass* Schema::structural_class(const Entry& entry) const {
  return EntryChecker(*this, *impl_, entry).structural_class();
}

}  // namespace numadir::schema
