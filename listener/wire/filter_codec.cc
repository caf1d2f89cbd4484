#include "listener/wire/filter_codec.h"

#include <cstdint>

namespace numadir::listener::wire {
namespace {

using schema::Filter;
using schema::FilterKind;
using schema::FilterNode;

// Filter CHOICE tags.
constexpr std::uint8_t kAndTag = ber::context_constructed(0);
constexpr std::uint8_t kOrTag = ber::context_constructed(1);
constexpr std::uint8_t kNotTag = ber::context_constructed(2);
constexpr std::uint8_t kEqualityTag = ber::context_constructed(3);
constexpr std::uint8_t kSubstringsTag = ber::context_constructed(4);
constexpr std::uint8_t kGreaterOrEqualTag = ber::context_constructed(5);
constexpr std::uint8_t kLessOrEqualTag = ber::context_constructed(6);
constexpr std::uint8_t kPresentTag = ber::context(7);
constexpr std::uint8_t kApproxTag = ber::context_constructed(8);
constexpr std::uint8_t kExtensibleTag = ber::context_constructed(9);
// SubstringFilter pieces.
constexpr std::uint8_t kInitialTag = ber::context(0);
constexpr std::uint8_t kAnyTag = ber::context(1);
constexpr std::uint8_t kFinalTag = ber::context(2);
// MatchingRuleAssertion fields.
constexpr std::uint8_t kRuleTag = ber::context(1);
constexpr std::uint8_t kTypeTag = ber::context(2);
constexpr std::uint8_t kMatchValueTag = ber::context(3);
constexpr std::uint8_t kDnAttributesTag = ber::context(4);

bool decode_set(BerReader& reader, std::uint8_t tag, FilterKind kind, Filter& filter) {
  BerReader set = reader.enter(tag);
  if (set.failed()) {
    return false;
  }
  const std::uint32_t index = filter.open(kind);
  while (!set.at_end()) {
    if (!decode_filter(set, filter)) {
      return false;
    }
  }
  filter.close(index);
  return true;
}

bool decode_not(BerReader& reader, Filter& filter) {
  BerReader inner = reader.enter(kNotTag);
  if (inner.failed()) {
    return false;
  }
  const std::uint32_t index = filter.open(FilterKind::kNot);
  if (!decode_filter(inner, filter) || !inner.expect_end()) {
    return false;
  }
  filter.close(index);
  return true;
}

// AttributeValueAssertion ::= SEQUENCE { attributeDesc, assertionValue }
bool decode_assertion(BerReader& reader, std::uint8_t tag, FilterKind kind, Filter& filter) {
  BerReader ava = reader.enter(tag);
  std::string_view attribute;
  std::string_view value;
  if (!ava.read_octets(ber::kOctetString, attribute) ||
      !ava.read_octets(ber::kOctetString, value) || !ava.expect_end()) {
    return false;
  }
  filter.add_leaf(kind, attribute, value);
  return true;
}

// SubstringFilter ::= SEQUENCE { type, substrings SEQUENCE SIZE (1..MAX) OF CHOICE {
//   initial [0], any [1], final [2] } }  -- initial only first, final only last.
bool decode_substrings(BerReader& reader, Filter& filter) {
  BerReader substrings = reader.enter(kSubstringsTag);
  std::string_view attribute;
  if (!substrings.read_octets(ber::kOctetString, attribute)) {
    return false;
  }
  BerReader pieces = substrings.enter(ber::kSequence);
  if (!substrings.expect_end()) {
    return false;
  }
  const std::uint32_t index = filter.open(FilterKind::kSubstrings, attribute);
  std::uint32_t count = 0;
  bool seen_final = false;
  while (!pieces.at_end()) {
    std::uint8_t tag = 0;
    pieces.peek_tag(tag);
    FilterKind kind;
    if (tag == kInitialTag) {
      if (count != 0) {
        return pieces.fail("substring initial not first");
      }
      kind = FilterKind::kSubInitial;
    } else if (tag == kAnyTag) {
      kind = FilterKind::kSubAny;
    } else if (tag == kFinalTag) {
      kind = FilterKind::kSubFinal;
    } else {
      return pieces.fail("unknown substring choice");
    }
    if (seen_final) {
      return pieces.fail("substring after the final one");
    }
    std::string_view value;
    if (!pieces.read_octets(tag, value)) {
      return false;
    }
    filter.add_leaf(kind, {}, value);
    seen_final = kind == FilterKind::kSubFinal;
    ++count;
  }
  if (count == 0) {
    return pieces.fail("substring filter without substrings");
  }
  filter.close(index);
  return true;
}

// MatchingRuleAssertion ::= SEQUENCE { matchingRule [1] OPTIONAL, type [2] OPTIONAL,
//   matchValue [3], dnAttributes [4] BOOLEAN DEFAULT FALSE }
bool decode_extensible(BerReader& reader, Filter& filter) {
  BerReader assertion = reader.enter(kExtensibleTag);
  if (assertion.failed()) {
    return false;
  }
  std::string_view rule;
  std::string_view type;
  std::string_view value;
  bool dn_attributes = false;
  std::uint8_t tag = 0;
  if (assertion.peek_tag(tag) && tag == kRuleTag && !assertion.read_octets(kRuleTag, rule)) {
    return false;
  }
  if (assertion.peek_tag(tag) && tag == kTypeTag && !assertion.read_octets(kTypeTag, type)) {
    return false;
  }
  if (!assertion.read_octets(kMatchValueTag, value)) {
    return false;
  }
  if (assertion.peek_tag(tag) && tag == kDnAttributesTag &&
      !assertion.read_boolean(kDnAttributesTag, dn_attributes)) {
    return false;
  }
  if (!assertion.expect_end()) {
    return false;
  }
  if (rule.empty() && type.empty()) {
    return assertion.fail("extensible match without a matching rule or a type");
  }
  const std::uint32_t index = filter.add_leaf(FilterKind::kExtensible, type, value);
  filter.set_extensible(index, rule, dn_attributes);
  return true;
}

void encode_node(const Filter& filter, std::uint32_t index, BerWriter& writer);

void encode_children(const Filter& filter, std::uint32_t index, BerWriter& writer) {
  const FilterNode& node = filter.node(index);
  for (std::uint32_t child = index + 1; child < node.end; child = filter.node(child).end) {
    encode_node(filter, child, writer);
  }
}

void encode_assertion(std::uint8_t tag, const FilterNode& node, BerWriter& writer) {
  writer.begin(tag);
  writer.write_octets(ber::kOctetString, node.attribute);
  writer.write_octets(ber::kOctetString, node.value);
  writer.end();
}

void encode_node(const Filter& filter, std::uint32_t index, BerWriter& writer) {
  const FilterNode& node = filter.node(index);
  switch (node.kind) {
    case FilterKind::kAnd:
      writer.begin(kAndTag);
      encode_children(filter, index, writer);
      writer.end();
      return;
    case FilterKind::kOr:
      writer.begin(kOrTag);
      encode_children(filter, index, writer);
      writer.end();
      return;
    case FilterKind::kNot:
      writer.begin(kNotTag);
      encode_children(filter, index, writer);
      writer.end();
      return;
    case FilterKind::kEquality:
      encode_assertion(kEqualityTag, node, writer);
      return;
    case FilterKind::kGreaterOrEqual:
      encode_assertion(kGreaterOrEqualTag, node, writer);
      return;
    case FilterKind::kLessOrEqual:
      encode_assertion(kLessOrEqualTag, node, writer);
      return;
    case FilterKind::kApprox:
      encode_assertion(kApproxTag, node, writer);
      return;
    case FilterKind::kPresent:
      writer.write_octets(kPresentTag, node.attribute);
      return;
    case FilterKind::kSubstrings:
      writer.begin(kSubstringsTag);
      writer.write_octets(ber::kOctetString, node.attribute);
      writer.begin(ber::kSequence);
      encode_children(filter, index, writer);
      writer.end();
      writer.end();
      return;
    case FilterKind::kSubInitial:
      writer.write_octets(kInitialTag, node.value);
      return;
    case FilterKind::kSubAny:
      writer.write_octets(kAnyTag, node.value);
      return;
    case FilterKind::kSubFinal:
      writer.write_octets(kFinalTag, node.value);
      return;
    case FilterKind::kExtensible:
      writer.begin(kExtensibleTag);
      if (!node.matching_rule.empty()) {
        writer.write_octets(kRuleTag, node.matching_rule);
      }
      if (!node.attribute.empty()) {
        writer.write_octets(kTypeTag, node.attribute);
      }
      writer.write_octets(kMatchValueTag, node.value);
      if (node.dn_attributes) {
        writer.write_boolean(kDnAttributesTag, true);
      }
      writer.end();
      return;
  }
}

}  // namespace

bool decode_filter(BerReader& reader, Filter& filter) {
  std::uint8_t tag = 0;
  if (!reader.peek_tag(tag)) {
    return reader.fail("filter expected");
  }
  switch (tag) {
    case kAndTag:
      return decode_set(reader, tag, FilterKind::kAnd, filter);
    case kOrTag:
      return decode_set(reader, tag, FilterKind::kOr, filter);
    case kNotTag:
      return decode_not(reader, filter);
    case kEqualityTag:
      return decode_assertion(reader, tag, FilterKind::kEquality, filter);
    case kGreaterOrEqualTag:
      return decode_assertion(reader, tag, FilterKind::kGreaterOrEqual, filter);
    case kLessOrEqualTag:
      return decode_assertion(reader, tag, FilterKind::kLessOrEqual, filter);
    case kApproxTag:
      return decode_assertion(reader, tag, FilterKind::kApprox, filter);
    case kSubstringsTag:
      return decode_substrings(reader, filter);
    case kExtensibleTag:
      return decode_extensible(reader, filter);
    case kPresentTag: {
      std::string_view attribute;
      if (!reader.read_octets(kPresentTag, attribute)) {
        return false;
      }
      filter.add_leaf(FilterKind::kPresent, attribute);
      return true;
    }
    default:
      return reader.fail("unknown filter choice");
  }
}

void encode_filter(const Filter& filter, BerWriter& writer) { encode_node(filter, 0, writer); }

}  // namespace numadir::listener::wire
