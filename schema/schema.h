// schema/schema.h: the loaded schema: attribute types and object classes from RFC 4512 schema
// files (OpenLDAP `.schema` form or LDIF `cn=schema` form) over the built-in syntaxes and
// matching rules, and the object-class rules an entry must follow.
//
// Thread contract: built once at startup by load(); immutable afterwards, so any thread may call
// its const methods. Element pointers stay valid as long as the Schema (also across moves).
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "schema/attribute_type.h"
#include "schema/entry.h"
#include "schema/object_class.h"

namespace numadir::schema {

namespace detail {
struct SchemaData;  // What a Schema holds: schema/detail/schema_data.h.
}  // namespace detail

// The schema files shipped in schema/files/, in load order (core first).
std::vector<std::filesystem::path> shipped_schema_files();

// Storage Schema::check_entry reuses from one entry to the next: a thread that checks many
// entries (an import's, a replica's batches) holds one, and its checks then allocate next to
// nothing where each would otherwise take a few allocations per attribute.
// Thread contract: used by one thread at a time.
class EntryCheckScratch {
 public:
  EntryCheckScratch();
  ~EntryCheckScratch();
  EntryCheckScratch(const EntryCheckScratch&) = delete;
  EntryCheckScratch& operator=(const EntryCheckScratch&) = delete;

  struct Storage;  // Defined where the check is (schema_check.cc).
  // Returns: the storage, made on first use (an unused scratch allocates nothing).
  Storage& storage();

 private:
  std::unique_ptr<Storage> storage_;
};

class Schema {
 public:
  Schema(Schema&&) noexcept;
  Schema& operator=(Schema&&) noexcept;
  Schema(const Schema&) = delete;
  Schema& operator=(const Schema&) = delete;
  ~Schema();

  // Loads `files` in order. Each may use what earlier files defined.
  // Errors: kInvalidArgument naming "file:line: problem" for a file that cannot be read, a
  //   definition that does not parse, an unknown superior / syntax / matching rule / attribute,
  //   a duplicate OID or name, or a cycle.
  static Result<Schema> load(std::span<const std::filesystem::path> files);
  // Loads the shipped files, then `extra` (the admin's own) in order.
  static Result<Schema> load_default(std::span<const std::filesystem::path> extra = {});
  // Loads definitions given as text (for tests); `origin` names it in errors.
  static Result<Schema> load_text(std::string_view text, std::string_view origin = "<text>");

  // Lookups by name or numeric OID, case-insensitive. Attribute descriptions with options must
  // be split first (split_description). Return nullptr when unknown.
  const AttributeType* attribute_type(std::string_view name_or_oid) const;
  const ObjectClass* object_class(std::string_view name_or_oid) const;

  std::span<const AttributeType* const> attribute_types() const;
  std::span<const ObjectClass* const> object_classes() const;

  // Checks a complete entry against the schema, as slapd does for an add or for the result of
  // a modify or rename: every attribute type known (kUndefinedAttributeType); every value valid
  // for its syntax, and every objectClass value a class the schema knows (kInvalidAttributeSyntax,
  // as slapd's "objectClass: value #N invalid per syntax"); no value twice under the equality
  // rule (kAttributeOrValueExists, as slapd's "value #N provided more than once"); single-value
  // respected (kConstraintViolation); objectClass present, exactly one structural chain
  // (kObjectClassViolation); every MUST present and nothing outside MUST/MAY
  // of its classes unless extensibleObject (kObjectClassViolation); the RDN's values present in
  // the entry (kNamingViolation). The message names the attribute or class at fault; values
  // are numbered from 0, as slapd numbers them. Also: an attribute with no values is
  // kConstraintViolation, an attribute option with other than letters, digits and '-' is
  // kUndefinedAttributeType, and a DN that does not parse is kInvalidDnSyntax.
  Status check_entry(const Entry& entry) const;
  // As above; on success also sets *structural to structural_class(entry), found by the same
  // pass.
  Status check_entry(const Entry& entry, const ObjectClass** structural) const;
  // As above, with storage reused from the checks made with `scratch` before.
  Status check_entry(const Entry& entry, const ObjectClass** structural,
                     EntryCheckScratch& scratch) const;

  // Returns: the structural object class of `entry` (the most specific of its structural
  // chain), or nullptr if it has none or several chains.
  const ObjectClass* structural_class(const Entry& entry) const;

 private:
  explicit Schema(std::unique_ptr<detail::SchemaData> impl);
  std::unique_ptr<detail::SchemaData> impl_;
};

}  // namespace numadir::schema
