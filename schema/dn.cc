// schema/dn.cc: Dn parsing (RFC 4514 §3), printing (§2) and normalization.
#include "schema/dn.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "base/check.h"
#include "schema/ascii.h"
#include "schema/utf8.h"

namespace numadir::schema {
namespace {

constexpr char kHexUpper[] = "0123456789ABCDEF";
constexpr char kHexLower[] = "0123456789abcdef";

// RFC 4514 `special`: the characters a '\' may escape directly.
bool is_special(unsigned char c) {
  switch (c) {
    case ' ':
    case '"':
    case '#':
    case '+':
    case ',':
    case ';':
    case '<':
    case '=':
    case '>':
    case '\\':
      return true;
    default:
      return false;
  }
}

// Returns: "'x'" for printable ASCII, "byte 0xNN" otherwise, for error messages.
std::string describe_byte(unsigned char c) {
  if (c > ' ' && c < 0x7f) {
    return std::string{'\'', static_cast<char>(c), '\''};
  }
  if (c == ' ') {
    return "space";
  }
  return std::string("byte 0x") + kHexUpper[c >> 4] + kHexUpper[c & 0xf];
}

Status malformed_at(std::size_t offset, std::string_view problem) {
  std::string message = "DN: offset ";
  message += std::to_string(offset);
  message += ": ";
  message += problem;
  return malformed(std::move(message));
}

Status limit_at(std::size_t offset, std::string_view problem) {
  std::string message = "DN: offset ";
  message += std::to_string(offset);
  message += ": ";
  message += problem;
  return limit_exceeded(std::move(message));
}

// Appends `value` in the RFC 4514 §2.4 string form (see Dn::to_string).
void append_value(std::string& out, std::string_view value, bool hex_form) {
  if (hex_form) {
    out += '#';
    for (unsigned char c : value) {
      out += kHexLower[c >> 4];
      out += kHexLower[c & 0xf];
    }
    return;
  }
  for (std::size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c >= 0x80) {
      const std::size_t length = utf8_sequence_length(value.substr(i));
      if (length > 0) {
        out.append(value.substr(i, length));
        i += length;
        continue;
      }
    }
    if (c == 0 || c >= 0x80) {
      out += '\\';
      out += kHexUpper[c >> 4];
      out += kHexUpper[c & 0xf];
    } else {
      const bool edge_special =
          (i == 0 && (c == ' ' || c == '#')) || (i + 1 == value.size() && c == ' ');
      const bool always_special =
          c == '"' || c == '+' || c == ',' || c == ';' || c == '<' || c == '>' || c == '\\';
      if (edge_special || always_special) {
        out += '\\';
      }
      out += static_cast<char>(c);
    }
    ++i;
  }
}

void append_ava(std::string& out, const Ava& ava) {
  out.append(ava.type);
  out += '=';
  append_value(out, ava.value, ava.hex_form);
}

// Appends the AVAs of one RDN in the RFC 4514 string form, joined by '+'.
void append_rdn(std::string& out, std::span<const Ava> avas) {
  for (std::size_t j = 0; j < avas.size(); ++j) {
    if (j > 0) {
      out += '+';
    }
    append_ava(out, avas[j]);
  }
}

void append_default_type(std::string& out, std::string_view type) {
  if (!type.empty() && is_ascii_digit(type[0])) {
    out.append(type);  // A numericoid has no case.
    return;
  }
  for (char c : type) {
    out += ascii_lower(c);
  }
}

// Appends `value` with RFC 4518 insignificant space handling and ASCII case folding.
void append_default_value(std::string& out, std::string_view value) {
  const std::size_t start = out.size();
  bool pending_space = false;
  for (char c : value) {
    if (c == ' ') {
      pending_space = out.size() > start;
      continue;
    }
    if (pending_space) {
      out += ' ';
      pending_space = false;
    }
    out += ascii_lower(c);
  }
}

struct NormalizedAva {
  std::string type;
  std::string value;
  bool hex_form = false;

  friend bool operator<(const NormalizedAva& a, const NormalizedAva& b) {
    if (a.type != b.type) {
      return a.type < b.type;
    }
    if (a.value != b.value) {
      return a.value < b.value;
    }
    return a.hex_form < b.hex_form;
  }
};

NormalizedAva normalize_ava(const Ava& ava, const DnValueNormalizer* normalizer) {
  NormalizedAva out;
  out.hex_form = ava.hex_form;
  if (normalizer != nullptr) {
    out.type = normalizer->normalize_type(ava.type);
  } else {
    append_default_type(out.type, ava.type);
  }
  if (ava.hex_form) {
    out.value = ava.value;
  } else if (normalizer != nullptr) {
    out.value = normalizer->normalize(out.type, ava.value);
  } else {
    append_default_value(out.value, ava.value);
  }
  return out;
}

}  // namespace

namespace detail {

// One parse of one string into a Dn. Appends types and values to dn.bytes_, which is reserved
// up front for the whole text (the unescaped form is never longer), so views made during the
// parse stay valid.
class DnParser {
 public:
  DnParser(std::string_view text, Dn& dn) : text_(text), dn_(dn) {}

  Status run(const DnParseLimits& limits) {
    if (text_.size() > limits.max_bytes) {
      return limit_at(limits.max_bytes,
                      "DN longer than the limit of " + std::to_string(limits.max_bytes) + " bytes");
    }
    skip_spaces();
    if (at_end()) {
      return Status();  // "" or only spaces: the root DN, as OpenLDAP reads it.
    }
    dn_.bytes_.reserve(text_.size());
    // Each AVA but the first follows a ',' or '+': an upper bound with one allocation.
    dn_.avas_.reserve(
        1 + static_cast<std::size_t>(std::count_if(text_.begin(), text_.end(),
                                                   [](char c) { return c == ',' || c == '+'; })));
    base_ = dn_.bytes_.data();
    std::size_t rdns = 0;
    for (;;) {
      if (++rdns > limits.max_rdns) {
        return limit_at(pos_, "more than " + std::to_string(limits.max_rdns) + " RDNs");
      }
      const std::size_t rdn_start = dn_.avas_.size();
      if (!dn_.rdn_starts_.empty()) {
        dn_.rdn_starts_.push_back(rdn_start);
      }
      for (;;) {
        NUMADIR_RETURN_IF_ERROR(parse_ava());
        skip_spaces();  // A string value already dropped them; a '#' value stops before them.
        if (at_end()) {
          return Status();
        }
        const std::size_t separator = pos_;
        const unsigned char c = peek();
        if (c == '+') {
          if (dn_.rdn_starts_.empty()) {
            // The first multi-valued RDN: every earlier one had a single AVA. There are no
            // more RDNs than AVAs, so one allocation serves the whole parse.
            dn_.rdn_starts_.reserve(dn_.avas_.capacity());
            for (std::size_t i = 0; i <= rdn_start; ++i) {
              dn_.rdn_starts_.push_back(i);
            }
          }
          ++pos_;
          skip_spaces();
          if (at_end()) {
            return malformed_at(separator, "trailing '+' (empty AVA)");
          }
          continue;
        }
        if (c == ',') {
          ++pos_;
          skip_spaces();
          if (at_end()) {
            return malformed_at(separator, "trailing ',' (empty RDN)");
          }
          break;
        }
        return malformed_at(pos_, "expected ',' or '+' after a value, found " + describe_byte(c));
      }
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  unsigned char peek() const { return static_cast<unsigned char>(text_[pos_]); }
  unsigned char at(std::size_t i) const { return static_cast<unsigned char>(text_[i]); }
  void skip_spaces() {
    while (!at_end() && peek() == ' ') {
      ++pos_;
    }
  }
  std::string_view view(std::size_t offset, std::size_t length) const {
    NUMADIR_DCHECK(dn_.bytes_.data() == base_, "DN bytes moved during the parse");
    return std::string_view(base_ + offset, length);
  }

  // Requires: !at_end().
  Status parse_ava() {
    const std::size_t type_offset = dn_.bytes_.size();
    NUMADIR_RETURN_IF_ERROR(parse_type());
    const std::size_t type_length = dn_.bytes_.size() - type_offset;
    if (!at_end()) {
      const unsigned char c = peek();
      if (c != ' ' && c != '=' && c != ',' && c != '+') {
        return malformed_at(pos_, "invalid character " + describe_byte(c) + " in attribute type");
      }
    }
    skip_spaces();
    if (at_end() || peek() != '=') {
      return malformed_at(pos_, "missing '=' after attribute type");
    }
    ++pos_;
    skip_spaces();
    const std::size_t value_offset = dn_.bytes_.size();
    const bool hex_form = !at_end() && peek() == '#';
    NUMADIR_RETURN_IF_ERROR(hex_form ? parse_hex_value() : parse_string_value());
    dn_.avas_.push_back(Ava{view(type_offset, type_length),
                            view(value_offset, dn_.bytes_.size() - value_offset), hex_form});
    return Status();
  }

  // attributeType = descr / numericoid (RFC 4512 §1.4). Requires: !at_end().
  Status parse_type() {
    const std::size_t start = pos_;
    const unsigned char first = peek();
    if (is_ascii_alpha(first)) {
      while (!at_end() && (is_ascii_alpha(peek()) || is_ascii_digit(peek()) || peek() == '-')) {
        ++pos_;
      }
    } else if (is_ascii_digit(first)) {
      for (;;) {
        if (at_end() || !is_ascii_digit(peek())) {
          return malformed_at(pos_, "expected a digit after '.' in numeric OID");
        }
        if (peek() == '0' && pos_ + 1 < text_.size() && is_ascii_digit(at(pos_ + 1))) {
          return malformed_at(pos_, "leading zero in numeric OID arc");
        }
        while (!at_end() && is_ascii_digit(peek())) {
          ++pos_;
        }
        if (at_end() || peek() != '.') {
          break;
        }
        ++pos_;
      }
    } else if (first == ',') {
      return malformed_at(pos_, "empty RDN");
    } else if (first == '+') {
      return malformed_at(pos_, "empty AVA");
    } else if (first == '=') {
      return malformed_at(pos_, "empty attribute type");
    } else {
      return malformed_at(pos_, "invalid character " + describe_byte(first) + " in attribute type");
    }
    dn_.bytes_.append(text_.substr(start, pos_ - start));
    return Status();
  }

  // hexstring = SHARP 1*hexpair. Requires: peek() == '#'.
  Status parse_hex_value() {
    const std::size_t sharp = pos_++;
    const std::size_t digits = pos_;
    while (!at_end() && ascii_hex_value(peek()) >= 0) {
      ++pos_;
    }
    if (!at_end() && peek() != ' ' && peek() != ',' && peek() != '+') {
      return malformed_at(pos_, "invalid character " + describe_byte(peek()) + " in '#' value");
    }
    const std::size_t count = pos_ - digits;
    if (count == 0) {
      return malformed_at(sharp, "'#' value without hex digits");
    }
    if (count % 2 != 0) {
      return malformed_at(sharp, "odd number of hex digits in '#' value");
    }
    for (std::size_t i = digits; i < pos_; i += 2) {
      dn_.bytes_ += static_cast<char>(ascii_hex_value(at(i)) * 16 + ascii_hex_value(at(i + 1)));
    }
    return Status();
  }

  // string (RFC 4514 §3), up to an unescaped ',' or '+' or the end. Leading spaces were
  // skipped by the caller; unescaped trailing spaces are dropped here.
  Status parse_string_value() {
    std::size_t keep = dn_.bytes_.size();  // End of the value without unescaped trailing spaces.
    Utf8Checker utf8;
    while (!at_end()) {
      if (utf8.complete() && is_plain(peek())) {
        // A run of plain ASCII bytes, copied at once: each is valid UTF-8 on its own (no
        // sequence is open), kept as it is, and ends the kept part unless it is a space.
        const std::size_t start = pos_;
        while (!at_end() && is_plain(peek())) {
          ++pos_;
        }
        const std::string_view run = text_.substr(start, pos_ - start);
        dn_.bytes_.append(run);
        const std::size_t last = run.find_last_not_of(' ');
        if (last != std::string_view::npos) {
          keep = dn_.bytes_.size() - run.size() + last + 1;
        }
        continue;
      }
      const std::size_t offset = pos_;
      const unsigned char c = peek();
      unsigned char byte = c;
      bool escaped = false;
      if (c == ',' || c == '+') {
        break;
      }
      if (c == '\\') {
        if (pos_ + 1 >= text_.size()) {
          return malformed_at(offset, "invalid escape: '\\' at the end of the DN");
        }
        const unsigned char next = at(pos_ + 1);
        if (is_special(next)) {
          byte = next;
          pos_ += 2;
        } else if (ascii_hex_value(next) >= 0) {
          if (pos_ + 2 >= text_.size() || ascii_hex_value(at(pos_ + 2)) < 0) {
            return malformed_at(offset, "invalid escape: '\\' needs two hex digits");
          }
          byte = static_cast<unsigned char>(ascii_hex_value(next) * 16 +
                                            ascii_hex_value(at(pos_ + 2)));
          pos_ += 3;
        } else {
          return malformed_at(offset, "invalid escape: '\\' followed by " + describe_byte(next));
        }
        escaped = true;
      } else if (c == 0) {
        return malformed_at(offset, "NUL byte in value (write it as \\00)");
      } else if (c == ';') {
        return malformed_at(offset,
                            "unescaped ';' in value (RFC 4514 no longer accepts ';' as an RDN "
                            "separator; write \\; for the character)");
      } else if (c == '"' || c == '<' || c == '>') {
        return malformed_at(offset, "unescaped " + describe_byte(c) + " in value");
      } else {
        ++pos_;
      }
      if (!utf8.feed(byte)) {
        return malformed_at(offset, "invalid UTF-8 in value");
      }
      dn_.bytes_ += static_cast<char>(byte);
      if (escaped || byte != ' ') {
        keep = dn_.bytes_.size();
      }
    }
    if (!utf8.complete()) {
      return malformed_at(pos_, "invalid UTF-8 in value (truncated sequence)");
    }
    dn_.bytes_.resize(keep);
    return Status();
  }

  // Returns: true for a byte a string value takes as it is: ASCII, and none of the bytes the
  // loop of parse_string_value handles (separators, escapes, and the ones it refuses).
  static bool is_plain(unsigned char c) {
    return c >= 0x20 && c < 0x80 && c != ',' && c != '+' && c != '\\' && c != ';' && c != '"' &&
           c != '<' && c != '>';
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  Dn& dn_;
  const char* base_ = nullptr;  // dn_.bytes_.data() after the reserve.
};

}  // namespace detail

std::string DnValueNormalizer::normalize_type(std::string_view type) const {
  std::string out;
  append_default_type(out, type);
  return out;
}

std::string DnValueNormalizer::default_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  append_default_value(out, value);
  return out;
}

void DnValueNormalizer::normalize_ava(std::string_view type, std::string_view value,
                                      std::string& type_out, std::string& value_out) const {
  type_out = normalize_type(type);
  value_out = normalize(type_out, value);
}

Dn::Dn(const Dn& other) : bytes_(other.bytes_), avas_(other.avas_), rdn_starts_(other.rdn_starts_) {
  rebase(other.bytes_.data());
}

Dn& Dn::operator=(const Dn& other) {
  if (this != &other) {
    bytes_ = other.bytes_;
    avas_ = other.avas_;
    rdn_starts_ = other.rdn_starts_;
    rebase(other.bytes_.data());
  }
  return *this;
}

Dn::Dn(Dn&& other) noexcept { *this = std::move(other); }

Dn& Dn::operator=(Dn&& other) noexcept {
  if (this != &other) {
    // A short string moves by copying its inline buffer, so the views must follow.
    const char* old_base = other.bytes_.data();
    bytes_ = std::move(other.bytes_);
    avas_ = std::move(other.avas_);
    rdn_starts_ = std::move(other.rdn_starts_);
    rebase(old_base);
    other.bytes_.clear();
    other.avas_.clear();
    other.rdn_starts_.clear();
  }
  return *this;
}

void Dn::rebase(const char* old_base) {
  const char* base = bytes_.data();
  if (base == old_base) {
    return;
  }
  for (Ava& ava : avas_) {
    ava.type = std::string_view(base + (ava.type.data() - old_base), ava.type.size());
    ava.value = std::string_view(base + (ava.value.data() - old_base), ava.value.size());
  }
}

Result<Dn> Dn::parse(std::string_view text, const DnParseLimits& limits) {
  Dn dn;
  NUMADIR_RETURN_IF_ERROR(detail::DnParser(text, dn).run(limits));
  return dn;
}

Status Dn::parse_into(std::string_view text, Dn& out, const DnParseLimits& limits) {
  out.bytes_.clear();
  out.avas_.clear();
  out.rdn_starts_.clear();
  Status status = detail::DnParser(text, out).run(limits);
  if (!status.ok()) {
    out.bytes_.clear();
    out.avas_.clear();
    out.rdn_starts_.clear();
  }
  return status;
}

std::span<const Ava> Dn::rdn(std::size_t index) const {
  NUMADIR_DCHECK(index < rdn_count(), "Dn::rdn index out of range");
  if (rdn_starts_.empty()) {
    return std::span<const Ava>(avas_).subspan(index, 1);
  }
  const std::size_t begin = rdn_starts_[index];
  const std::size_t end = index + 1 < rdn_starts_.size() ? rdn_starts_[index + 1] : avas_.size();
  return std::span<const Ava>(avas_).subspan(begin, end - begin);
}

std::string Dn::to_string() const {
  std::string out;
  out.reserve(bytes_.size() + 2 * avas_.size());
  for (std::size_t i = 0; i < rdn_count(); ++i) {
    if (i > 0) {
      out += ',';
    }
    append_rdn(out, rdn(i));
  }
  return out;
}

std::string Dn::rdn_string(std::size_t index) const {
  std::string out;
  append_rdn(out, rdn(index));
  return out;
}

Dn Dn::parent() const {
  Dn out;
  if (rdn_count() <= 1) {
    return out;
  }
  const std::size_t first = rdn_starts_.empty() ? 1 : rdn_starts_[1];
  const std::size_t byte_start = static_cast<std::size_t>(avas_[first].type.data() - bytes_.data());
  out.bytes_.assign(bytes_, byte_start);
  out.avas_.assign(avas_.begin() + static_cast<std::ptrdiff_t>(first), avas_.end());
  out.rebase(bytes_.data() + byte_start);
  if (!rdn_starts_.empty()) {
    out.rdn_starts_.reserve(rdn_starts_.size() - 1);
    for (std::size_t i = 1; i < rdn_starts_.size(); ++i) {
      out.rdn_starts_.push_back(rdn_starts_[i] - first);
    }
    // Keep the representation canonical (empty when all single-valued) so == stays simple.
    if (out.rdn_starts_.size() == out.avas_.size()) {
      out.rdn_starts_.clear();
    }
  }
  return out;
}

std::string Dn::normalized(const DnValueNormalizer* normalizer) const {
  std::string out;
  append_normalized(out, normalizer);
  return out;
}

void Dn::append_normalized(std::string& out, const DnValueNormalizer* normalizer) const {
  append_normalized_rdns(out, normalizer, 0, rdn_count());
}

bool Dn::ends_with(const Dn& other, std::size_t first) const {
  if (first > rdn_count() || rdn_count() - first != other.rdn_count()) {
    return false;
  }
  for (std::size_t i = 0; i < other.rdn_count(); ++i) {
    const std::span<const Ava> mine = rdn(first + i);
    const std::span<const Ava> theirs = other.rdn(i);
    if (!std::equal(mine.begin(), mine.end(), theirs.begin(), theirs.end())) {
      return false;
    }
  }
  return true;
}

void Dn::append_normalized_rdns(std::string& out, const DnValueNormalizer* normalizer,
                                std::size_t first, std::size_t end) const {
  out.reserve(out.size() + bytes_.size() + 2 * avas_.size());
  std::string scratch;  // One buffer for every single-valued RDN's folded value.
  std::string type_scratch;
  std::vector<NormalizedAva> sorted;
  for (std::size_t i = first; i < end; ++i) {
    if (i > first) {
      out += ',';
    }
    const std::span<const Ava> avas = rdn(i);
    if (avas.size() == 1 && normalizer == nullptr && !avas[0].hex_form) {
      // The common case, without per-AVA temporaries: the folded value needs a copy only
      // because escaping depends on its final first and last bytes.
      append_default_type(out, avas[0].type);
      out += '=';
      scratch.clear();
      append_default_value(scratch, avas[0].value);
      append_value(out, scratch, false);
      continue;
    }
    if (avas.size() == 1 && normalizer != nullptr) {
      // One AVA: nothing to sort, so no NormalizedAva (prints what normalize_ava and the loop
      // below would).
      if (avas[0].hex_form) {
        out += normalizer->normalize_type(avas[0].type);
        out += '=';
        append_value(out, avas[0].value, true);
      } else {
        normalizer->normalize_ava(avas[0].type, avas[0].value, type_scratch, scratch);
        out += type_scratch;
        out += '=';
        append_value(out, scratch, false);
      }
      continue;
    }
    sorted.clear();
    for (const Ava& ava : avas) {
      sorted.push_back(normalize_ava(ava, normalizer));
    }
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t j = 0; j < sorted.size(); ++j) {
      if (j > 0) {
        out += '+';
      }
      out += sorted[j].type;
      out += '=';
      append_value(out, sorted[j].value, sorted[j].hex_form);
    }
  }
}

std::size_t first_rdn_separator(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;  // The escaped byte (or the first of two hex digits, neither of them a ',').
    } else if (text[i] == ',') {
      return i;
    }
  }
  return text.size();
}

Result<std::string> normalize_dn(std::string_view text, const DnParseLimits& limits) {
  Result<Dn> dn = Dn::parse(text, limits);
  if (!dn.ok()) {
    return dn.status();
  }
  return dn->normalized();
}

}  // namespace numadir::schema
