// schema/filter.cc: the Filter model's storage and builder, the RFC 4515 parser and printer.
//
// The parser is iterative (an explicit stack of open and/or/not nodes), so neither input depth
// nor FilterParseLimits can make it use more native stack. The printer is iterative too, so it
// is safe on deep filters built by a decoder.
//
// Thread contract: as schema/filter.h. parse() touches only its arguments and the new Filter.
#include "schema/filter.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "schema/ascii.h"
#include "schema/utf8.h"

namespace numadir::schema {
namespace {

// store() blocks: the first is small (a typical filter stores a few dozen bytes), later ones
// double up to kMaxBlockBytes; a larger value gets a block of its own size.
constexpr std::size_t kFirstBlockBytes = 256;
constexpr std::size_t kMaxBlockBytes = 64 * 1024;

constexpr char kHexDigits[] = "0123456789abcdef";

// Appends `value` in RFC 4515 valueencoding: printable ASCII other than the specials and
// well-formed UTF-8 stay as they are; every other byte becomes \XX (lower-case hex).
void append_escaped(std::string& out, std::string_view value) {
  std::size_t i = 0;
  while (i < value.size()) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      const std::size_t length = utf8_sequence_length(value.substr(i));
      if (length != 0) {
        out.append(value.substr(i, length));
        i += length;
        continue;
      }
    } else if (c >= 0x20 && c <= 0x7E && c != '*' && c != '(' && c != ')' && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    out += '\\';
    out += kHexDigits[c >> 4];
    out += kHexDigits[c & 0x0F];
    ++i;
  }
}

// Appends the value part of a substrings filter, "[initial]*[any*]...[final]", from its pieces.
void append_substrings(std::string& out, std::span<const FilterNode> pieces) {
  bool ended_with_final = false;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const FilterNode& piece = pieces[k];
    // An initial piece is only meaningful first; anywhere else print it like an "any".
    if (!(piece.kind == FilterKind::kSubInitial && k == 0)) {
      out += '*';
    }
    append_escaped(out, piece.value);
    ended_with_final = piece.kind == FilterKind::kSubFinal;
  }
  if (!ended_with_final) {
    out += '*';
  }
}

// One RFC 4515 parse into a fresh Filter. Offsets in messages are 0-based byte offsets.
class Parser {
 public:
  Parser(std::string_view text, const FilterParseLimits& limits, Filter& out)
      : text_(text), limits_(limits), out_(out) {}

  Status parse();

 private:
  struct OpenNode {
    std::uint32_t index;
    FilterKind kind;
    std::uint32_t children;
  };

  bool at_end() const { return pos_ >= text_.size(); }
  unsigned char peek() const { return static_cast<unsigned char>(text_[pos_]); }

  // Returns: how the byte at `offset` reads in a message: "'x'", "byte 0x07" or "end of filter".
  std::string describe(std::size_t offset) const;
  Status error(std::size_t offset, std::string_view problem) const;
  // Errors: kLimitExceeded (naming filter_offset_) if `count` more nodes would pass the limit.
  Status check_node_room(std::size_t count) const;

  Status parse_item(bool bare);
  Status parse_oid(std::string_view what);
  Status parse_attribute_description();
  Status parse_equality_or_substrings(std::string_view attribute, bool bare);
  Status parse_extensible(std::string_view attribute, std::size_t item_offset, bool bare);
  Status scan_value(bool stars_allowed);
  Status finish_item(bool bare);

  const std::string_view text_;
  const FilterParseLimits& limits_;
  Filter& out_;
  std::size_t pos_ = 0;
  std::size_t filter_offset_ = 0;  // Where the filter being parsed starts: its '(' if any.
  std::vector<OpenNode> open_;
  std::string scratch_;                   // The value segment scan_value() just unescaped.
  std::vector<std::string_view> pieces_;  // Stored segments of an '=' value, split on '*'.
};

std::string Parser::describe(std::size_t offset) const {
  if (offset >= text_.size()) {
    return "end of filter";
  }
  const auto c = static_cast<unsigned char>(text_[offset]);
  if (c >= 0x20 && c < 0x7F) {
    return std::string("'") + static_cast<char>(c) + "'";
  }
  std::string out = "byte 0x";
  out += kHexDigits[c >> 4];
  out += kHexDigits[c & 0x0F];
  return out;
}

Status Parser::error(std::size_t offset, std::string_view problem) const {
  std::string message = "filter: offset " + std::to_string(offset) + ": ";
  message += problem;
  return malformed(std::move(message));
}

Status Parser::check_node_room(std::size_t count) const {
  if (static_cast<std::uint64_t>(out_.size()) + count > limits_.max_nodes) {
    return limit_exceeded("filter: offset " + std::to_string(filter_offset_) + ": more than " +
                          std::to_string(limits_.max_nodes) + " nodes");
  }
  return Status();
}

Status Parser::parse() {
  if (text_.empty()) {
    return error(0, "empty filter");
  }
  if (text_[0] != '(') {
    // A bare item, as ldapsearch accepts it: it runs to the end of the text.
    return parse_item(/*bare=*/true);
  }
  while (true) {
    // At the '(' that starts a filter.
    const std::size_t open_offset = pos_;
    filter_offset_ = pos_;
    ++pos_;
    const unsigned char c = at_end() ? '\0' : peek();
    if (!at_end() && (c == '&' || c == '|' || c == '!')) {
      if (open_.size() >= limits_.max_depth) {
        return limit_exceeded("filter: offset " + std::to_string(open_offset) +
                              ": and/or/not nested deeper than " +
                              std::to_string(limits_.max_depth));
      }
      NUMADIR_RETURN_IF_ERROR(check_node_room(1));
      const FilterKind kind =
          c == '&' ? FilterKind::kAnd : (c == '|' ? FilterKind::kOr : FilterKind::kNot);
      open_.push_back(OpenNode{out_.open(kind), kind, 0});
      ++pos_;
    } else {
      NUMADIR_RETURN_IF_ERROR(parse_item(/*bare=*/false));
      if (open_.empty()) {
        break;
      }
      ++open_.back().children;
    }
    // Close every and/or/not that ends here; stop at the '(' of the next child.
    while (!open_.empty()) {
      OpenNode& top = open_.back();
      if (at_end()) {
        return error(pos_, "expected '(' or ')', found end of filter");
      }
      if (peek() == ')') {
        if (top.kind == FilterKind::kNot && top.children != 1) {
          return error(pos_, "'!' needs exactly one filter");
        }
        out_.close(top.index);
        ++pos_;
        open_.pop_back();
        if (!open_.empty()) {
          ++open_.back().children;
        }
        continue;
      }
      if (peek() == '(') {
        if (top.kind == FilterKind::kNot && top.children != 0) {
          return error(pos_, "'!' takes exactly one filter, found a second");
        }
        break;
      }
      return error(pos_, "expected '(' or ')', found " + describe(pos_));
    }
    if (open_.empty()) {
      break;
    }
  }
  if (!at_end()) {
    return error(pos_, "trailing data after filter: " + describe(pos_));
  }
  return Status();
}

// Parses one item: at the first byte after its '(' (or of the text, when `bare`); consumes
// the closing ')' (or requires the end of the text, when `bare`).
Status Parser::parse_item(bool bare) {
  const std::size_t item_offset = pos_;
  if (at_end()) {
    return error(pos_, "expected a filter, found end of filter");
  }
  if (!bare && peek() == ')') {
    return error(pos_, "empty filter \"()\"");
  }
  std::string_view attribute;
  if (peek() != ':') {
    NUMADIR_RETURN_IF_ERROR(parse_attribute_description());
    attribute = text_.substr(item_offset, pos_ - item_offset);
  }
  if (at_end() || peek() == ')') {
    return error(pos_, "missing filter type ('=', '~=', '>=', '<=' or ':=') after attribute");
  }
  const unsigned char c = peek();
  if (c == '=') {
    ++pos_;
    return parse_equality_or_substrings(attribute, bare);
  }
  if (c == ':') {
    return parse_extensible(attribute, item_offset, bare);
  }
  if (c == '~' || c == '>' || c == '<') {
    if (pos_ + 1 >= text_.size() || text_[pos_ + 1] != '=') {
      return error(pos_ + 1, std::string("expected '=' after '") + static_cast<char>(c) + "'");
    }
    pos_ += 2;
    NUMADIR_RETURN_IF_ERROR(scan_value(/*stars_allowed=*/false));
    NUMADIR_RETURN_IF_ERROR(finish_item(bare));
    NUMADIR_RETURN_IF_ERROR(check_node_room(1));
    const FilterKind kind =
        c == '~' ? FilterKind::kApprox
                 : (c == '>' ? FilterKind::kGreaterOrEqual : FilterKind::kLessOrEqual);
    out_.add_leaf(kind, out_.store(attribute), out_.store(scratch_));
    return Status();
  }
  return error(pos_, "unexpected " + describe(pos_) + " in attribute description");
}

// oid = descr / numericoid (RFC 4512); descr = ALPHA *keychar; numericoid = number 1*("." number)
// with no leading zeros.
Status Parser::parse_oid(std::string_view what) {
  if (!at_end() && is_ascii_alpha(peek())) {
    while (!at_end() && is_keychar(peek())) {
      ++pos_;
    }
    return Status();
  }
  if (at_end() || !is_ascii_digit(peek())) {
    return error(pos_, "expected " + std::string(what) + ", found " + describe(pos_));
  }
  const std::size_t oid_offset = pos_;
  while (true) {
    const std::size_t number_offset = pos_;
    while (!at_end() && is_ascii_digit(peek())) {
      ++pos_;
    }
    if (text_[number_offset] == '0' && pos_ - number_offset > 1) {
      return error(number_offset, "leading zero in numeric OID");
    }
    if (at_end() || peek() != '.') {
      if (number_offset == oid_offset) {
        return error(oid_offset, "numeric OID needs at least two numbers, found one");
      }
      return Status();
    }
    ++pos_;
    if (at_end() || !is_ascii_digit(peek())) {
      return error(pos_, "expected a digit after '.' in numeric OID, found " + describe(pos_));
    }
  }
}

// attributedescription = attributetype *(";" option); option = 1*keychar (RFC 4512).
Status Parser::parse_attribute_description() {
  NUMADIR_RETURN_IF_ERROR(parse_oid("attribute description"));
  while (!at_end() && peek() == ';') {
    ++pos_;
    if (at_end() || !is_keychar(peek())) {
      return error(pos_, "expected an attribute option after ';', found " + describe(pos_));
    }
    while (!at_end() && is_keychar(peek())) {
      ++pos_;
    }
  }
  return Status();
}

// After "attr=": a plain value is equality, "*" alone is present, otherwise substrings.
Status Parser::parse_equality_or_substrings(std::string_view attribute, bool bare) {
  pieces_.clear();
  NUMADIR_RETURN_IF_ERROR(scan_value(/*stars_allowed=*/true));
  pieces_.push_back(out_.store(scratch_));
  while (!at_end() && peek() == '*') {
    if (pieces_.size() >= 2 && pieces_.back().empty()) {
      return error(pos_, "empty substring: consecutive '*'");
    }
    ++pos_;
    NUMADIR_RETURN_IF_ERROR(scan_value(/*stars_allowed=*/true));
    pieces_.push_back(out_.store(scratch_));
  }
  NUMADIR_RETURN_IF_ERROR(finish_item(bare));

  if (pieces_.size() == 1) {
    NUMADIR_RETURN_IF_ERROR(check_node_room(1));
    out_.add_leaf(FilterKind::kEquality, out_.store(attribute), pieces_[0]);
    return Status();
  }
  const std::string_view initial = pieces_.front();
  const std::string_view final_piece = pieces_.back();
  if (pieces_.size() == 2 && initial.empty() && final_piece.empty()) {
    NUMADIR_RETURN_IF_ERROR(check_node_room(1));
    out_.add_leaf(FilterKind::kPresent, out_.store(attribute));
    return Status();
  }
  const std::size_t any_count = pieces_.size() - 2;
  const std::size_t node_count =
      1 + any_count + (initial.empty() ? 0 : 1) + (final_piece.empty() ? 0 : 1);
  NUMADIR_RETURN_IF_ERROR(check_node_room(node_count));
  const std::uint32_t index = out_.open(FilterKind::kSubstrings, out_.store(attribute));
  if (!initial.empty()) {
    out_.add_leaf(FilterKind::kSubInitial, {}, initial);
  }
  for (std::size_t k = 1; k + 1 < pieces_.size(); ++k) {
    out_.add_leaf(FilterKind::kSubAny, {}, pieces_[k]);
  }
  if (!final_piece.empty()) {
    out_.add_leaf(FilterKind::kSubFinal, {}, final_piece);
  }
  out_.close(index);
  return Status();
}

// At the first ':' after the (possibly absent) attribute:
//   [":" dn] [":" rule] ":=" value, where "dn" is matched case-insensitively.
// One component is the dn flag if it reads "dn" and the rule otherwise; of two, the first must
// be "dn". Either the attribute or a rule must be present.
Status Parser::parse_extensible(std::string_view attribute, std::size_t item_offset, bool bare) {
  std::string_view components[2];
  std::size_t component_offsets[2] = {0, 0};
  std::size_t count = 0;
  while (true) {
    ++pos_;  // The ':'.
    if (!at_end() && peek() == '=') {
      ++pos_;
      break;
    }
    if (count == 2) {
      return error(pos_, "expected '=' after ':dn:rule:', found " + describe(pos_));
    }
    const std::size_t start = pos_;
    NUMADIR_RETURN_IF_ERROR(parse_oid("'dn', a matching rule or '=' after ':'"));
    component_offsets[count] = start;
    components[count++] = text_.substr(start, pos_ - start);
    if (at_end() || peek() != ':') {
      return error(pos_, "expected ':' or ':=', found " + describe(pos_));
    }
  }
  bool dn_attributes = false;
  std::string_view rule;
  if (count == 1) {
    if (ascii_iequals(components[0], "dn")) {
      dn_attributes = true;
    } else {
      rule = components[0];
    }
  } else if (count == 2) {
    if (!ascii_iequals(components[0], "dn")) {
      return error(component_offsets[0], "expected ':dn' before the matching rule");
    }
    dn_attributes = true;
    rule = components[1];
  }
  if (attribute.empty() && rule.empty()) {
    return error(item_offset, "extensible match needs an attribute or a matching rule");
  }
  NUMADIR_RETURN_IF_ERROR(scan_value(/*stars_allowed=*/false));
  NUMADIR_RETURN_IF_ERROR(finish_item(bare));
  NUMADIR_RETURN_IF_ERROR(check_node_room(1));
  const std::uint32_t index =
      out_.open(FilterKind::kExtensible, out_.store(attribute), out_.store(scratch_));
  out_.set_extensible(index, out_.store(rule), dn_attributes);
  out_.close(index);
  return Status();
}

// Unescapes one value segment into scratch_. Stops before ')', at the end, or before an
// unescaped '*' when `stars_allowed` (otherwise such a '*' is an error).
Status Parser::scan_value(bool stars_allowed) {
  scratch_.clear();
  while (!at_end()) {
    const unsigned char c = peek();
    switch (c) {
      case ')':
        return Status();
      case '*':
        if (stars_allowed) {
          return Status();
        }
        return error(pos_, "unescaped '*' in value (write \\2a)");
      case '(':
        return error(pos_, "unescaped '(' in value (write \\28)");
      case '\0':
        return error(pos_, "NUL byte in value (write \\00)");
      case '\\': {
        const int high = pos_ + 1 < text_.size() ? ascii_hex_value(text_[pos_ + 1]) : -1;
        const int low = pos_ + 2 < text_.size() ? ascii_hex_value(text_[pos_ + 2]) : -1;
        if (high < 0 || low < 0) {
          return error(pos_, "bad escape: '\\' must be followed by two hex digits");
        }
        scratch_ += static_cast<char>(high * 16 + low);
        pos_ += 3;
        break;
      }
      default:
        scratch_ += static_cast<char>(c);
        ++pos_;
        break;
    }
  }
  return Status();
}

Status Parser::finish_item(bool bare) {
  if (bare) {
    if (!at_end()) {
      return error(pos_, "unexpected ')' after a filter without parentheses");
    }
    return Status();
  }
  if (at_end()) {
    return error(pos_, "expected ')', found end of filter");
  }
  ++pos_;  // scan_value() stopped at the ')'.
  return Status();
}

}  // namespace

std::string_view filter_kind_name(FilterKind kind) {
  switch (kind) {
    case FilterKind::kAnd:
      return "and";
    case FilterKind::kOr:
      return "or";
    case FilterKind::kNot:
      return "not";
    case FilterKind::kEquality:
      return "equality";
    case FilterKind::kSubstrings:
      return "substrings";
    case FilterKind::kGreaterOrEqual:
      return "greater_or_equal";
    case FilterKind::kLessOrEqual:
      return "less_or_equal";
    case FilterKind::kPresent:
      return "present";
    case FilterKind::kApprox:
      return "approx";
    case FilterKind::kExtensible:
      return "extensible";
    case FilterKind::kSubInitial:
      return "sub_initial";
    case FilterKind::kSubAny:
      return "sub_any";
    case FilterKind::kSubFinal:
      return "sub_final";
  }
  return "unknown";
}

Result<Filter> Filter::parse(std::string_view text, const FilterParseLimits& limits) {
  Filter filter;
  Parser parser(text, limits, filter);
  Status status = parser.parse();
  if (!status.ok()) {
    return status;
  }
  return filter;
}

std::string Filter::to_string() const {
  std::string out;
  out.reserve(nodes_.size() * 16);
  append_to(out);
  return out;
}

void Filter::append_to(std::string& out) const {
  NUMADIR_DCHECK(!nodes_.empty(), "Filter::to_string on an empty filter");
  const std::uint32_t count = size();
  std::vector<std::uint32_t> open_ends;  // `end` of each and/or/not whose ')' is pending.
  std::uint32_t i = 0;
  while (i < count) {
    while (!open_ends.empty() && open_ends.back() <= i) {
      out += ')';
      open_ends.pop_back();
    }
    const FilterNode& n = nodes_[i];
    NUMADIR_DCHECK(n.end > i && n.end <= count, "Filter::to_string on an unclosed node");
    // Clamped so that a malformed tree still prints (something) and the loop always advances.
    const std::uint32_t end = std::clamp(n.end, i + 1, count);
    std::uint32_t next = end;
    out += '(';
    switch (n.kind) {
      case FilterKind::kAnd:
      case FilterKind::kOr:
      case FilterKind::kNot:
        out += n.kind == FilterKind::kAnd ? '&' : (n.kind == FilterKind::kOr ? '|' : '!');
        open_ends.push_back(end);
        next = i + 1;
        break;
      case FilterKind::kEquality:
      case FilterKind::kGreaterOrEqual:
      case FilterKind::kLessOrEqual:
      case FilterKind::kApprox:
        out += n.attribute;
        out += n.kind == FilterKind::kEquality
                   ? "="
                   : (n.kind == FilterKind::kGreaterOrEqual
                          ? ">="
                          : (n.kind == FilterKind::kLessOrEqual ? "<=" : "~="));
        append_escaped(out, n.value);
        out += ')';
        break;
      case FilterKind::kPresent:
        out += n.attribute;
        out += "=*)";
        break;
      case FilterKind::kSubstrings:
        out += n.attribute;
        out += '=';
        append_substrings(out, std::span<const FilterNode>(nodes_).subspan(i + 1, end - i - 1));
        out += ')';
        break;
      case FilterKind::kExtensible:
        out += n.attribute;
        if (n.dn_attributes) {
          out += ":dn";
        }
        if (!n.matching_rule.empty()) {
          out += ':';
          out += n.matching_rule;
        }
        out += ":=";
        append_escaped(out, n.value);
        out += ')';
        break;
      case FilterKind::kSubInitial:
      case FilterKind::kSubAny:
      case FilterKind::kSubFinal:
        // Only valid under kSubstrings; printed as a value so that a bad tree stays visible.
        append_escaped(out, n.value);
        out += ')';
        break;
    }
    i = next;
  }
  while (!open_ends.empty()) {
    out += ')';
    open_ends.pop_back();
  }
}

void Filter::clear() {
  nodes_.clear();
  // Keep the newest block (the largest of the doubling ones) unless it is an oversized one, so
  // a reused Filter reaches a steady state with a single block and no allocation.
  if (!blocks_.empty() && block_size_ <= kMaxBlockBytes) {
    std::swap(blocks_.front(), blocks_.back());
    blocks_.resize(1);
  } else {
    blocks_.clear();
    block_size_ = 0;
  }
  block_used_ = 0;
}

std::string_view Filter::store(std::string_view bytes) {
  if (bytes.empty()) {
    return {};
  }
  // blocks_ may be empty while block_size_ is stale (a moved-from Filter), hence both tests.
  if (blocks_.empty() || bytes.size() > block_size_ - block_used_) {
    std::size_t next =
        blocks_.empty() ? kFirstBlockBytes : std::min(block_size_ * 2, kMaxBlockBytes);
    next = std::max(next, bytes.size());
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(next));
    block_size_ = next;
    block_used_ = 0;
  }
  char* destination = blocks_.back().get() + block_used_;
  std::memcpy(destination, bytes.data(), bytes.size());
  block_used_ += bytes.size();
  return std::string_view(destination, bytes.size());
}

}  // namespace numadir::schema
