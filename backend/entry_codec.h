// backend/entry_codec.h: the compact binary form of an entry as id2entry stores it, and a lazy
// view over it that decodes only what an operation touches.
//
// Layout (every integer an unsigned LEB128 varint):
//   version (1) | parent id | len, DN as stored | len, dn2id key |
//   attribute count | attribute*
//   attribute = len, description | len of body | body
//   body      = value count | (len, value bytes)*
// The body length lets a reader skip an attribute without touching its values. Descriptions are
// stored canonical (the type's primary name, then its options lower-cased and sorted), so
// matching a type is a byte comparison.
//
// Thread contract: pure functions and plain values. A view points into the bytes it was made
// from (LMDB memory): it is valid only inside the transaction that read them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/lmdb_env.h"
#include "base/status.h"
#include "schema/entry.h"

namespace numadir::backend {

inline constexpr std::uint8_t kEntryFormatVersion = 1;

struct EntryHeader {
  EntryId parent_id = 0;    // 0 for the suffix entry.
  std::string_view dn;      // As stored (the spelling it was added or renamed with).
  std::string_view dn_key;  // Its dn2id key (see dn_index.h).
};

// Writes the encoded entry to `out` (replacing its contents, reusing its capacity).
void encode_entry(const EntryHeader& header, std::span<const schema::EntryAttribute> attributes,
                  std::string& out);

// Writes `encoded`, an entry encode_entry() wrote with parent id 0, to `out` (replacing its
// contents) with parent id `parent_id` instead: an import encodes entries before their parent's
// id is known. Requires: `encoded` starts with that header, and does not overlap `out`.
void set_encoded_parent(std::string_view encoded, EntryId parent_id, std::string& out);

// Writes `view`'s entry with a new header (DN, dn key, parent) and its attributes unchanged to
// `out` (replacing its contents), copying the attribute bytes without decoding them.
// Requires: `view` does not point into `out`.
class EntryView;
void reencode_entry(const EntryView& view, const EntryHeader& header, std::string& out);

// Returns: the type part of a description ("cn" of "cn;lang-en").
inline std::string_view description_type(std::string_view description) {
  return description.substr(0, description.find(';'));
}

// The values of one attribute, read one by one.
class ValueReader {
 public:
  ValueReader() = default;
  ValueReader(std::string_view body, std::uint64_t count) : rest_(body), left_(count) {}
  std::uint64_t size() const { return left_; }
  // Returns: false at the end, or when the bytes are corrupt (then corrupt() is true).
  bool next(std::string_view* value);
  bool corrupt() const { return corrupt_; }

 private:
  std::string_view rest_;
  std::uint64_t left_ = 0;
  bool corrupt_ = false;
};

struct AttributeView {
  std::string_view description;  // Canonical, e.g. "cn;lang-en".
  std::string_view type;         // description_type(description).
  ValueReader values;
};

// Walks the attributes of an entry in stored order.
class AttributeReader {
 public:
  AttributeReader() = default;
  AttributeReader(std::string_view attributes, std::uint64_t count)
      : rest_(attributes), left_(count) {}
  // Returns: false at the end, or when the bytes are corrupt (then corrupt() is true).
  bool next(AttributeView* attribute);
  // As next(), to the next attribute whose type is one of `types` (canonical names), stepping
  // over the others without looking into their values (an attribute's values are one
  // length-prefixed block).
  bool next_of(std::span<const std::string_view> types, AttributeView* attribute);
  bool corrupt() const { return corrupt_; }

 private:
  // Reads the next attribute's description and its values' block.
  bool read_block(AttributeView* attribute, std::string_view* body);
  // Sets `attribute`'s type and values from `body`. Returns: false when the block is corrupt.
  static bool open_values(std::string_view body, AttributeView* attribute);
  // Marks the bytes corrupt and ends the walk. Returns: false.
  bool fail();

  std::string_view rest_;
  std::uint64_t left_ = 0;
  bool corrupt_ = false;
};

// A lazy view of one encoded entry: parse() reads the header only.
class EntryView {
 public:
  EntryView() = default;
  // Errors: kStorage "corrupt entry" when the header does not parse or the version is unknown.
  // Returns a view into `bytes`.
  static Result<EntryView> parse(std::string_view bytes);

  const EntryHeader& header() const { return header_; }
  EntryId parent_id() const { return header_.parent_id; }
  std::string_view dn() const { return header_.dn; }
  std::string_view dn_key() const { return header_.dn_key; }
  std::uint64_t attribute_count() const { return attribute_count_; }
  AttributeReader attributes() const { return AttributeReader(attributes_, attribute_count_); }

  // Returns: the first attribute whose canonical description equals `description`, if any.
  // Errors: kStorage when the entry is corrupt.
  Result<bool> find(std::string_view description, AttributeView* out) const;

  // Decodes every attribute (appending to `out`). Errors: kStorage when corrupt.
  Status decode_attributes(std::vector<schema::EntryAttribute>* out) const;
  // Decodes the DN and every attribute into `out` (replacing it). Errors: kStorage.
  Status decode(schema::Entry* out) const;

 private:
  friend void reencode_entry(const EntryView& view, const EntryHeader& header, std::string& out);

  EntryHeader header_;
  std::uint64_t attribute_count_ = 0;
  std::string_view attributes_;
};

}  // namespace numadir::backend
