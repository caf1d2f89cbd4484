// schema/filter.h: the search filter model (RFC 4511 §4.5.1.7) shared by the wire codec
// (listener/wire/filter_codec.h decodes BER into it) and the RFC 4515 string form
// (Filter::parse / Filter::to_string).
//
// A Filter is a flat preorder array of FilterNode: node 0 is the root, a node's children follow
// it, and `end` is the index one past its subtree, so the next sibling of node i is nodes[i].end.
// Substring filters keep their pieces as child nodes (kSubInitial / kSubAny / kSubFinal).
//
// Node strings are views. They point either into a buffer the caller owns (the PDU a decoder
// read, which must outlive the Filter) or into the Filter's own storage (store()), which lives
// as long as the Filter and does not move when the Filter is moved.
//
// Thread contract: a plain value owned by one thread at a time; const methods may be called from
// several threads at once. Move-only: copies would leave views into the source's storage.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace numadir::schema {

enum class FilterKind : std::uint8_t {
  kAnd,             // children: zero or more filters; (&) is absolute true (RFC 4526).
  kOr,              // children: zero or more filters; (|) is absolute false (RFC 4526).
  kNot,             // children: exactly one filter.
  kEquality,        // attribute=value
  kSubstrings,      // attribute; children: kSubInitial? kSubAny* kSubFinal?, at least one.
  kGreaterOrEqual,  // attribute>=value
  kLessOrEqual,     // attribute<=value
  kPresent,         // attribute=*
  kApprox,          // attribute~=value
  kExtensible,      // [attribute][:dn][:matching_rule]:=value
  kSubInitial,      // value: the initial piece of a kSubstrings parent.
  kSubAny,          // value: one "any" piece.
  kSubFinal,        // value: the final piece.
};

// Returns: a stable name such as "and" or "substrings" (for messages and debug output).
std::string_view filter_kind_name(FilterKind kind);

struct FilterNode {
  FilterKind kind;
  bool dn_attributes = false;      // kExtensible only: the ":dn" flag.
  std::uint32_t end = 0;           // One past the last node of this subtree.
  std::string_view attribute;      // Attribute description; empty = absent (kExtensible only).
  std::string_view value;          // Assertion value (raw bytes, unescaped).
  std::string_view matching_rule;  // kExtensible only; empty = absent.

  friend bool operator==(const FilterNode& a, const FilterNode& b) {
    return a.kind == b.kind && a.dn_attributes == b.dn_attributes && a.end == b.end &&
           a.attribute == b.attribute && a.value == b.value && a.matching_rule == b.matching_rule;
  }
};

struct FilterParseLimits {
  std::uint32_t max_depth = 64;      // Nesting of and/or/not.
  std::uint32_t max_nodes = 10'000;  // Nodes in the whole filter.
};

class Filter {
 public:
  Filter() = default;
  Filter(Filter&&) noexcept = default;
  Filter& operator=(Filter&&) noexcept = default;
  Filter(const Filter&) = delete;
  Filter& operator=(const Filter&) = delete;

  // Parses the RFC 4515 string form, e.g. "(&(uid=jdoe)(!(cn=a*b)))". Also accepts a bare item
  // without the outer parentheses ("uid=jdoe"), as ldapsearch does. Values are unescaped (\XX)
  // into the Filter's own storage; the result does not refer to `text`.
  // Errors: kMalformed naming the byte offset and the problem; kLimitExceeded past `limits`.
  static Result<Filter> parse(std::string_view text, const FilterParseLimits& limits = {});

  // Returns: the RFC 4515 string form. Values are escaped: '*', '(', ')', '\', NUL and any byte
  // that is not printable ASCII or part of valid UTF-8 become \XX.
  // Requires: !empty().
  std::string to_string() const;
  // Appends the same to `out` (no allocation once `out` has grown, for a filter without
  // and/or/not).
  void append_to(std::string& out) const;

  // Drops all nodes and stored bytes but keeps capacity, so a decoder can reuse the Filter
  // without allocating in steady state.
  void clear();

  bool empty() const { return nodes_.empty(); }
  std::span<const FilterNode> nodes() const { return nodes_; }
  const FilterNode& node(std::uint32_t index) const { return nodes_[index]; }
  std::uint32_t size() const { return static_cast<std::uint32_t>(nodes_.size()); }

  // Building, in preorder: open a node, add its children, close it. Every opened node must be
  // closed before to_string() or comparison. Returns: the new node's index. Inline: the wire
  // decoder builds a filter with these for every SearchRequest.
  std::uint32_t open(FilterKind kind, std::string_view attribute = {},
                     std::string_view value = {}) {
    const auto index = static_cast<std::uint32_t>(nodes_.size());
    FilterNode& node = nodes_.emplace_back();
    node.kind = kind;
    node.attribute = attribute;
    node.value = value;
    return index;
  }
  // Sets the extensible-match fields of node `index`.
  void set_extensible(std::uint32_t index, std::string_view matching_rule, bool dn_attributes) {
    nodes_[index].matching_rule = matching_rule;
    nodes_[index].dn_attributes = dn_attributes;
  }
  // Closes node `index`: its subtree ends at the current size.
  void close(std::uint32_t index) { nodes_[index].end = static_cast<std::uint32_t>(nodes_.size()); }
  // Convenience for a leaf: open and close at once.
  std::uint32_t add_leaf(FilterKind kind, std::string_view attribute = {},
                         std::string_view value = {}) {
    const std::uint32_t index = open(kind, attribute, value);
    close(index);
    return index;
  }

  // Copies `bytes` into storage owned by this Filter. Returns: a view that stays valid until
  // clear() or destruction (also across moves of the Filter).
  std::string_view store(std::string_view bytes);

  // Structural equality: same nodes with the same bytes (views may point to different memory).
  friend bool operator==(const Filter& a, const Filter& b) { return a.nodes_ == b.nodes_; }

 private:
  std::vector<FilterNode> nodes_;
  // Storage for bytes that are not views into a caller's buffer. Blocks never move.
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t block_used_ = 0;
  std::size_t block_size_ = 0;
};

}  // namespace numadir::schema
