// backend/entry_codec.cc: the compact entry form.
#include "backend/entry_codec.h"

#include <algorithm>

namespace numadir::backend {
namespace {

void put_varint(std::string& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

std::size_t varint_size(std::uint64_t value) {
  std::size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// get_varint for any length (up to ten bytes).
bool get_long_varint(std::string_view& in, std::uint64_t* value) {
  std::uint64_t result = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (in.empty()) {
      return false;
    }
    const auto byte = static_cast<std::uint8_t>(in.front());
    in.remove_prefix(1);
    if (shift == 63 && byte > 1) {
      return false;
    }
    result |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

// Reads a varint from the front of `in`. Returns: false when truncated or over 64 bits.
inline bool get_varint(std::string_view& in, std::uint64_t* value) {
  // Most varints here (lengths of names and values, value counts) fit one byte.
  if (!in.empty() && static_cast<std::uint8_t>(in.front()) < 0x80) {
    *value = static_cast<std::uint8_t>(in.front());
    in.remove_prefix(1);
    return true;
  }
  return get_long_varint(in, value);
}

// Reads a length-prefixed byte string from the front of `in`.
bool get_bytes(std::string_view& in, std::string_view* bytes) {
  std::uint64_t length = 0;
  if (!get_varint(in, &length) || length > in.size()) {
    return false;
  }
  *bytes = in.substr(0, static_cast<std::size_t>(length));
  in.remove_prefix(static_cast<std::size_t>(length));
  return true;
}

void put_bytes(std::string& out, std::string_view bytes) {
  put_varint(out, bytes.size());
  out.append(bytes);
}

Status corrupt(std::string_view what) {
  return Status(StatusCode::kStorage, "corrupt entry: " + std::string(what));
}

}  // namespace

void encode_entry(const EntryHeader& header, std::span<const schema::EntryAttribute> attributes,
                  std::string& out) {
  out.clear();
  out.push_back(static_cast<char>(kEntryFormatVersion));
  put_varint(out, header.parent_id);
  put_bytes(out, header.dn);
  put_bytes(out, header.dn_key);
  put_varint(out, attributes.size());
  for (const schema::EntryAttribute& attribute : attributes) {
    put_bytes(out, attribute.description);
    std::size_t body = varint_size(attribute.values.size());
    for (const std::string& value : attribute.values) {
      body += varint_size(value.size()) + value.size();
    }
    put_varint(out, body);
    put_varint(out, attribute.values.size());
    for (const std::string& value : attribute.values) {
      put_bytes(out, value);
    }
  }
}

void set_encoded_parent(std::string_view encoded, EntryId parent_id, std::string& out) {
  // The version byte, then parent id 0 as a one-byte varint.
  out.clear();
  out.push_back(encoded[0]);
  put_varint(out, parent_id);
  out.append(encoded.substr(2));
}

void reencode_entry(const EntryView& view, const EntryHeader& header, std::string& out) {
  out.clear();
  out.push_back(static_cast<char>(kEntryFormatVersion));
  put_varint(out, header.parent_id);
  put_bytes(out, header.dn);
  put_bytes(out, header.dn_key);
  put_varint(out, view.attribute_count_);
  out.append(view.attributes_);
}

bool ValueReader::next(std::string_view* value) {
  if (left_ == 0) {
    return false;
  }
  if (!get_bytes(rest_, value)) {
    corrupt_ = true;
    left_ = 0;
    return false;
  }
  --left_;
  return true;
}

bool AttributeReader::next(AttributeView* attribute) {
  if (left_ == 0) {
    return false;
  }
  std::string_view body;
  if (!read_block(attribute, &body) || !open_values(body, attribute)) {
    return fail();
  }
  --left_;
  return true;
}

bool AttributeReader::next_of(std::span<const std::string_view> types, AttributeView* attribute) {
  for (; left_ > 0; --left_) {
    std::string_view body;
    if (!read_block(attribute, &body)) {
      return fail();
    }
    if (std::find(types.begin(), types.end(), description_type(attribute->description)) ==
        types.end()) {
      continue;
    }
    if (!open_values(body, attribute)) {
      return fail();
    }
    --left_;
    return true;
  }
  return false;
}

bool AttributeReader::read_block(AttributeView* attribute, std::string_view* body) {
  return get_bytes(rest_, &attribute->description) && get_bytes(rest_, body);
}

bool AttributeReader::open_values(std::string_view body, AttributeView* attribute) {
  std::uint64_t count = 0;
  if (!get_varint(body, &count) || count > body.size()) {
    return false;
  }
  attribute->type = description_type(attribute->description);
  attribute->values = ValueReader(body, count);
  return true;
}

bool AttributeReader::fail() {
  corrupt_ = true;
  left_ = 0;
  return false;
}

Result<EntryView> EntryView::parse(std::string_view bytes) {
  EntryView view;
  if (bytes.empty() || static_cast<std::uint8_t>(bytes.front()) != kEntryFormatVersion) {
    return corrupt("unknown format version");
  }
  bytes.remove_prefix(1);
  if (!get_varint(bytes, &view.header_.parent_id) || !get_bytes(bytes, &view.header_.dn) ||
      !get_bytes(bytes, &view.header_.dn_key) || !get_varint(bytes, &view.attribute_count_) ||
      view.attribute_count_ > bytes.size()) {
    return corrupt("bad header");
  }
  view.attributes_ = bytes;
  return view;
}

Result<bool> EntryView::find(std::string_view description, AttributeView* out) const {
  AttributeReader reader = attributes();
  while (reader.next(out)) {
    if (out->description == description) {
      return true;
    }
  }
  if (reader.corrupt()) {
    return corrupt("bad attribute");
  }
  return false;
}

Status EntryView::decode_attributes(std::vector<schema::EntryAttribute>* out) const {
  AttributeReader reader = attributes();
  AttributeView attribute;
  out->reserve(out->size() + static_cast<std::size_t>(attribute_count_));
  while (reader.next(&attribute)) {
    schema::EntryAttribute& decoded = out->emplace_back();
    decoded.description.assign(attribute.description);
    decoded.values.reserve(static_cast<std::size_t>(attribute.values.size()));
    std::string_view value;
    while (attribute.values.next(&value)) {
      decoded.values.emplace_back(value);
    }
    if (attribute.values.corrupt()) {
      return corrupt("bad value");
    }
  }
  if (reader.corrupt()) {
    return corrupt("bad attribute");
  }
  return Status();
}

Status EntryView::decode(schema::Entry* out) const {
  out->dn.assign(header_.dn);
  out->attributes.clear();
  return decode_attributes(&out->attributes);
}

}  // namespace numadir::backend
