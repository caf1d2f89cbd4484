// backend/modify.cc: the modify operation (RFC 4511 §4.6, RFC 4525 increment), inside the
// writer's transaction.
#include <algorithm>
#include <charconv>
#include <limits>

#include "backend/detail/change_state.h"
#include "backend/detail/directory_core.h"
#include "backend/detail/update_util.h"

namespace numadir::backend::detail {
namespace {

constexpr std::string_view kIntegerMatchOid = "2.5.13.14";

const char* kind_name(ModificationKind kind) {
  switch (kind) {
    case ModificationKind::kAdd:
      return "modify/add";
    case ModificationKind::kDelete:
      return "modify/delete";
    case ModificationKind::kReplace:
      return "modify/replace";
    case ModificationKind::kIncrement:
      return "modify/increment";
  }
  return "modify";
}

// Values compare under the equality rule when the type has one, else as bytes.
class ValueComparer {
 public:
  ValueComparer(const AttributeCatalog& catalog, const AttributeInfo& info)
      : catalog_(catalog), rule_(info.type->equality) {}

  // Returns: false when the rule rejects `value`.
  bool normalize(std::string_view value, std::string& out) const {
    if (rule_ == nullptr) {
      out.assign(value);
      return true;
    }
    return catalog_.normalize(*rule_, value, out);
  }

 private:
  const AttributeCatalog& catalog_;
  const schema::MatchingRule* rule_;
};

// Returns: the index of the value of `values` equal to `wanted` (normalized), or -1.
int find_value(const ValueComparer& comparer, const std::vector<std::string>& values,
               std::string_view wanted_normalized, std::string& scratch) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (comparer.normalize(values[i], scratch) && scratch == wanted_normalized) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool parse_integer(std::string_view text, std::int64_t* out) {
  if (!text.empty() && text.front() == '+') {
    return false;
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

using Attributes = std::vector<schema::EntryAttribute>;

Attributes::iterator find_attribute(Attributes& attributes, std::string_view description) {
  return std::find_if(attributes.begin(), attributes.end(), [&](const schema::EntryAttribute& a) {
    return a.description == description;
  });
}

Status apply_one(const AttributeCatalog& catalog, const Modification& modification,
                 Attributes& attributes) {
  const std::string what = std::string(kind_name(modification.kind)) + ": ";
  Result<std::string> description = catalog.canonical_description(modification.description);
  if (!description.ok()) {
    return description.status();
  }
  if (!modification.internal) {
    NUMADIR_RETURN_IF_ERROR(check_user_modifiable(catalog, *description));
  }
  const AttributeInfo& info = *catalog.resolve(description_type(*description));
  const ValueComparer comparer(catalog, info);
  auto attribute = find_attribute(attributes, *description);
  std::string wanted;
  std::string scratch;
  switch (modification.kind) {
    case ModificationKind::kAdd: {
      if (modification.values.empty()) {
        return Status(StatusCode::kMalformed,
                      what + modification.description + ": no values given");
      }
      if (attribute == attributes.end()) {
        attributes.push_back(schema::EntryAttribute{*description, {}});
        attribute = attributes.end() - 1;
      }
      for (std::size_t i = 0; i < modification.values.size(); ++i) {
        const std::string& value = modification.values[i];
        if (!comparer.normalize(value, wanted)) {
          return Status(StatusCode::kInvalidAttributeSyntax, what + modification.description +
                                                                 ": value #" + std::to_string(i) +
                                                                 " invalid per syntax");
        }
        if (find_value(comparer, attribute->values, wanted, scratch) >= 0) {
          return Status(StatusCode::kAttributeOrValueExists, what + modification.description +
                                                                 ": value #" + std::to_string(i) +
                                                                 " already exists");
        }
        attribute->values.push_back(value);
      }
      return Status();
    }
    case ModificationKind::kDelete: {
      if (attribute == attributes.end()) {
        return Status(StatusCode::kNoSuchAttribute,
                      what + modification.description + ": no such attribute");
      }
      if (modification.values.empty()) {
        attributes.erase(attribute);
        return Status();
      }
      for (std::size_t i = 0; i < modification.values.size(); ++i) {
        const int found = comparer.normalize(modification.values[i], wanted)
                              ? find_value(comparer, attribute->values, wanted, scratch)
                              : -1;
        if (found < 0) {
          return Status(
              StatusCode::kNoSuchAttribute,
              what + modification.description + ": value #" + std::to_string(i) + " not found");
        }
        attribute->values.erase(attribute->values.begin() + found);
      }
      if (attribute->values.empty()) {
        attributes.erase(attribute);
      }
      return Status();
    }
    case ModificationKind::kReplace:
      if (modification.values.empty()) {
        if (attribute != attributes.end()) {
          attributes.erase(attribute);
        }
      } else if (attribute == attributes.end()) {
        attributes.push_back(schema::EntryAttribute{*description, modification.values});
      } else {
        attribute->values = modification.values;
      }
      return Status();
    case ModificationKind::kIncrement: {
      if (info.type->equality == nullptr || info.type->equality->oid != kIntegerMatchOid) {
        return Status(
            StatusCode::kConstraintViolation,
            what + modification.description + ": increment not supported for value syntax");
      }
      if (modification.values.size() != 1) {
        return Status(StatusCode::kConstraintViolation,
                      what + modification.description + ": exactly one value required");
      }
      std::int64_t delta = 0;
      if (!parse_integer(modification.values[0], &delta)) {
        return Status(StatusCode::kInvalidAttributeSyntax,
                      what + modification.description + ": invalid syntax");
      }
      if (attribute == attributes.end()) {
        return Status(StatusCode::kNoSuchAttribute,
                      what + modification.description + ": no such attribute");
      }
      for (std::string& value : attribute->values) {
        std::int64_t current = 0;
        std::int64_t sum = 0;
        if (!parse_integer(value, &current) || __builtin_add_overflow(current, delta, &sum)) {
          return Status(StatusCode::kConstraintViolation,
                        what + modification.description + ": value out of range");
        }
        value = std::to_string(sum);
      }
      return Status();
    }
  }
  return Status();
}

// Every AVA of the entry's RDN must still be a value of its attribute (without options).
Status check_rdn_kept(const DirectoryCore& core, const schema::Dn& dn, Attributes& attributes) {
  std::string wanted;
  std::string scratch;
  for (const schema::Ava& ava : dn.rdn(0)) {
    const AttributeInfo* info = core.catalog.resolve(ava.type);
    if (info == nullptr || ava.hex_form) {
      continue;  // Not representable as a value; the schema check decides.
    }
    const ValueComparer comparer(core.catalog, *info);
    auto attribute = find_attribute(attributes, info->name);
    if (attribute == attributes.end() || !comparer.normalize(ava.value, wanted) ||
        find_value(comparer, attribute->values, wanted, scratch) < 0) {
      return Status(StatusCode::kNotAllowedOnRdn,
                    std::string(info->name) + ": cannot remove a value of the RDN");
    }
  }
  return Status();
}

// Returns: true when every modification is internal, of an operational type, and neither it
//   nor the attributes every modify stamps (modifiersName, modifyTimestamp, entryCSN) is indexed.
bool internal_unindexed(const DirectoryCore& core, std::span<const Modification> modifications) {
  for (const Modification& modification : modifications) {
    const AttributeInfo* info =
        modification.internal ? core.catalog.resolve(description_type(modification.description))
                              : nullptr;
    if (info == nullptr || !info->type->operational() || core.indexes.indexes_type(info->name)) {
      return false;
    }
  }
  for (const AttributeInfo* stamped :
       {core.op_types.modifiers_name, core.op_types.modify_timestamp, core.op_types.entry_csn}) {
    if (stamped != nullptr && core.indexes.indexes_type(stamped->name)) {
      return false;
    }
  }
  return !modifications.empty();
}

}  // namespace

Status apply_modify(DirectoryCore& core, MDB_txn* t, std::string_view dn,
                    std::span<const Modification> modifications, const Stamp& stamp,
                    ChangeRecord* change) {
  Result<schema::Dn> parsed = schema::Dn::parse(dn);
  if (!parsed.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, parsed.status().message());
  }
  const std::string key = dn_key(*parsed, core.normalizer);
  EntryView view;
  Result<EntryId> id = find_entry(core, t, key, &view);
  if (!id.ok()) {
    return id.status();
  }
  schema::Entry entry;
  NUMADIR_RETURN_IF_ERROR(view.decode(&entry));
  const EntryId parent_id = view.parent_id();
  const std::string stored_key(view.dn_key());
  // The server's own bookkeeping (the password policy's failure state) on attributes no index
  // covers: the entry's indexes cannot change and its schema is not the client's to break, so
  // neither is recomputed (a password-guessing storm writes one of these per failed bind).
  const bool bookkeeping = internal_unindexed(core, modifications);
  IndexKeys before;
  if (!bookkeeping) {
    NUMADIR_RETURN_IF_ERROR(core.indexes.entry_keys(core.catalog, view, &before));
  }
  const schema::ObjectClass* old_structural = core.schema.structural_class(entry);

  for (const Modification& modification : modifications) {
    NUMADIR_RETURN_IF_ERROR(apply_one(core.catalog, modification, entry.attributes));
  }
  if (!parsed->is_root()) {
    Result<schema::Dn> stored_dn = schema::Dn::parse(entry.dn);
    if (stored_dn.ok() && !stored_dn->is_root()) {
      NUMADIR_RETURN_IF_ERROR(check_rdn_kept(core, *stored_dn, entry.attributes));
    }
  }
  if (!bookkeeping) {
    const schema::ObjectClass* new_structural = core.schema.structural_class(entry);
    if (new_structural != nullptr && old_structural != nullptr &&
        new_structural != old_structural) {
      return Status(StatusCode::kObjectClassModsProhibited,
                    "structural object class modification from '" +
                        std::string(old_structural->primary_name()) + "' to '" +
                        std::string(new_structural->primary_name()) + "' not allowed");
    }
    const schema::ObjectClass* structural = nullptr;
    NUMADIR_RETURN_IF_ERROR(check_entry_schema(core, entry, &structural));
  }

  stamp_modified_entry(core.op_types, stamp, entry.attributes);
  if (!bookkeeping) {
    IndexKeys after;
    core.indexes.entry_keys(core.catalog, entry.attributes, &after);
    NUMADIR_RETURN_IF_ERROR(core.indexes.apply(t, *id, before, after));
  }
  std::string encoded;
  const EntryHeader header{parent_id, entry.dn, stored_key};
  NUMADIR_RETURN_IF_ERROR(put_entry(core, t, *id, header, entry.attributes, 0, encoded));
  change->kind = ChangeKind::kModify;
  change->entry_id = *id;
  change->dn = std::move(entry.dn);
  change->csn = stamp.csn;
  change->entry_uuid.assign(entry_uuid_of(core, entry.attributes));
  return Status();
}

}  // namespace numadir::backend::detail
