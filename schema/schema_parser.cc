// schema/schema_parser.cc: RFC 4512 §4.1 descriptions, their printed form and OID macros. The
// file forms are in schema/schema_file_parser.cc.
#include "schema/schema_parser.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "schema/ascii.h"
#include "schema/detail/schema_parser.h"
#include "schema/oid.h"
#include "schema/utf8.h"

namespace numadir::schema {
namespace {

constexpr char kHexUpper[] = "0123456789ABCDEF";

std::string upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), ascii_upper);
  return out;
}

// RFC 4512 `xstring`: "X" HYPHEN 1*( ALPHA / HYPHEN / USCORE ); "x-" accepted too.
bool is_xstring(std::string_view text) {
  if (text.size() < 3 || (text[0] != 'X' && text[0] != 'x') || text[1] != '-') {
    return false;
  }
  return std::all_of(text.begin() + 2, text.end(),
                     [](char c) { return is_ascii_alpha(c) || c == '-' || c == '_'; });
}

// Returns: "'x'" for printable ASCII, a readable name otherwise, for error messages.
std::string describe_char(unsigned char c) {
  if (c > ' ' && c < 0x7f) {
    return std::string{'\'', static_cast<char>(c), '\''};
  }
  if (c == ' ' || c == '\t') {
    return "whitespace";
  }
  if (c == '\n' || c == '\r') {
    return "end of line";
  }
  return std::string("byte 0x") + kHexUpper[c >> 4] + kHexUpper[c & 0xf];
}

// Quotes `text` for an error message, cut to a readable length.
std::string excerpt_in_quotes(std::string_view text) {
  constexpr std::size_t kMax = 64;
  std::string out = "'";
  if (text.size() > kMax) {
    out += text.substr(0, kMax);
    out += "...";
  } else {
    out += text;
  }
  out += '\'';
  return out;
}

using detail::ParseError;

// Reads one description. Every read_* method returns false after recording the error.
class DescriptionParser {
 public:
  DescriptionParser(std::string_view text, const OidMacros* macros)
      : text_(text), macros_(macros) {}

  const ParseError& error() const { return error_; }

  // Reads "( <numericoid>" and then every "KEYWORD value" up to the closing ')', calling
  // on_keyword(KEYWORD upper-cased, its offset) for each keyword that is not an extension.
  // on_keyword returns false after recording an error (unknown_keyword() for one it does not
  // know).
  template <typename OnKeyword>
  bool parse(std::string& oid, std::vector<SchemaExtension>& extensions, OnKeyword&& on_keyword) {
    skip_space();
    if (!expect('(', "'(' opening the definition")) {
      return false;
    }
    skip_space();
    if (!read_element_oid(oid)) {
      return false;
    }
    std::vector<std::string> seen;
    while (true) {
      skip_space();
      if (at_end()) {
        return fail(pos_, "missing ')' at the end of the definition");
      }
      if (peek() == ')') {
        ++pos_;
        skip_space();
        if (!at_end()) {
          return fail(pos_, "unexpected text after the closing ')'");
        }
        return true;
      }
      const std::size_t keyword_at = pos_;
      const std::string_view keyword = word();
      if (keyword.empty()) {
        return fail(pos_, "unexpected " + describe_char(peek()) + " where a keyword belongs");
      }
      if (keyword.size() >= 2 && (keyword[0] == 'X' || keyword[0] == 'x') && keyword[1] == '-') {
        if (!is_xstring(keyword)) {
          return fail(keyword_at, "invalid extension name " + excerpt_in_quotes(keyword));
        }
        SchemaExtension extension{.name = std::string(keyword), .values = {}};
        if (!read_qdstrings(extension.values)) {
          return false;
        }
        extensions.push_back(std::move(extension));
        continue;
      }
      std::string name = upper(keyword);
      if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
        return fail(keyword_at, name + " given twice");
      }
      seen.push_back(name);
      if (!on_keyword(name, keyword_at)) {
        return false;
      }
    }
  }

  bool unknown_keyword(std::string_view keyword, std::size_t offset) {
    return fail(offset, "unknown keyword " + excerpt_in_quotes(keyword));
  }

  bool fail(std::size_t offset, std::string problem) {
    error_.offset = offset;
    error_.problem = std::move(problem);
    return false;
  }

  // NAME qdescrs.
  bool read_qdescrs(std::vector<std::string>& out) {
    skip_space();
    if (peek() != '(') {
      return read_qdescr(out);
    }
    ++pos_;
    while (true) {
      skip_space();
      if (at_end()) {
        return fail(pos_, "missing ')' closing the list of names");
      }
      if (peek() == ')') {
        ++pos_;
        return true;
      }
      if (!read_qdescr(out)) {
        return false;
      }
    }
  }

  // DESC qdstring.
  bool read_single_qdstring(std::string& out) {
    skip_space();
    if (peek() != '\'') {
      return fail(pos_, "expected a quoted string, found " + describe_at(pos_));
    }
    return read_qdstring(out);
  }

  // Extension values: qdstring / ( LPAREN WSP qdstringlist WSP RPAREN ).
  bool read_qdstrings(std::vector<std::string>& out) {
    skip_space();
    if (peek() != '(') {
      std::string value;
      if (!read_single_qdstring(value)) {
        return false;
      }
      out.push_back(std::move(value));
      return true;
    }
    ++pos_;
    while (true) {
      skip_space();
      if (at_end()) {
        return fail(pos_, "missing ')' closing the list of strings");
      }
      if (peek() == ')') {
        ++pos_;
        return true;
      }
      std::string value;
      if (!read_single_qdstring(value)) {
        return false;
      }
      out.push_back(std::move(value));
    }
  }

  // A reference (SUP, EQUALITY, MUST, ...): a descr or a numeric OID, quoted or not; with
  // macros, also "NAME:suffix".
  bool read_oid(std::string& out) {
    skip_space();
    const std::size_t at = pos_;
    std::string text;
    if (!read_oid_text(text)) {
      return false;
    }
    if (is_descr(text) || is_numericoid(text)) {
      out = std::move(text);
      return true;
    }
    if (text.find(':') != std::string::npos && macros_ != nullptr) {
      return expand(text, at, out);
    }
    return fail(at, "expected a name or a numeric OID, found " + excerpt_in_quotes(text));
  }

  // oids = oid / ( LPAREN WSP oidlist WSP RPAREN ); oidlist = oid *( WSP DOLLAR WSP oid ).
  bool read_oids(std::vector<std::string>& out) {
    skip_space();
    if (peek() != '(') {
      std::string oid;
      if (!read_oid(oid)) {
        return false;
      }
      out.push_back(std::move(oid));
      return true;
    }
    ++pos_;
    skip_space();
    if (peek() == ')') {
      return fail(pos_, "empty list");
    }
    while (true) {
      std::string oid;
      if (!read_oid(oid)) {
        return false;
      }
      out.push_back(std::move(oid));
      skip_space();
      if (at_end()) {
        return fail(pos_, "missing ')' closing the list");
      }
      if (peek() == ')') {
        ++pos_;
        return true;
      }
      if (peek() != '$') {
        return fail(pos_, "expected '$' or ')' in the list, found " + describe_at(pos_));
      }
      ++pos_;
    }
  }

  // SYNTAX noidlen: numericoid [ "{" len "}" ], the OID possibly a macro reference or quoted.
  bool read_noidlen(std::string& oid, std::uint32_t& length) {
    skip_space();
    const std::size_t at = pos_;
    std::string text;
    if (peek() == '\'') {
      // slapd accepts SYNTAX '1.2.3{64}'; read the whole quoted text and split it here.
      std::string inside;
      if (!read_qdstring(inside)) {
        return false;
      }
      const std::size_t brace = inside.find('{');
      if (brace != std::string::npos) {
        if (inside.back() != '}') {
          return fail(at, "bad length in SYNTAX " + excerpt_in_quotes(inside));
        }
        if (!parse_length(inside.substr(brace + 1, inside.size() - brace - 2), at, length)) {
          return false;
        }
        inside.resize(brace);
      }
      text = std::move(inside);
    } else {
      text = std::string(word());
      if (peek() == '{') {
        const std::size_t open = pos_;
        const std::size_t close = text_.find('}', open);
        if (close == std::string_view::npos) {
          return fail(open, "missing '}' after the SYNTAX length");
        }
        if (!parse_length(text_.substr(open + 1, close - open - 1), open + 1, length)) {
          return false;
        }
        pos_ = close + 1;
      }
    }
    return to_numeric(text, at, "SYNTAX", oid);
  }

  // A numeric OID where RFC 4512 wants `numericoid` (SYNTAX of a matching rule).
  bool read_numeric_oid(std::string& out, std::string_view what) {
    skip_space();
    const std::size_t at = pos_;
    std::string text;
    if (!read_oid_text(text)) {
      return false;
    }
    return to_numeric(text, at, what, out);
  }

  // USAGE usage.
  bool read_usage(AttributeUsage& usage) {
    skip_space();
    const std::size_t at = pos_;
    const std::string value = ascii_lowered(word());
    if (value == "userapplications") {
      usage = AttributeUsage::kUserApplications;
    } else if (value == "directoryoperation") {
      usage = AttributeUsage::kDirectoryOperation;
    } else if (value == "distributedoperation") {
      usage = AttributeUsage::kDistributedOperation;
    } else if (value == "dsaoperation") {
      usage = AttributeUsage::kDsaOperation;
    } else {
      return fail(at,
                  "unknown USAGE " + excerpt_in_quotes(value.empty() ? describe_at(at) : value));
    }
    return true;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  unsigned char peek() const { return at_end() ? '\0' : static_cast<unsigned char>(text_[pos_]); }
  std::string describe_at(std::size_t offset) const {
    return offset >= text_.size() ? std::string("the end of the definition")
                                  : describe_char(static_cast<unsigned char>(text_[offset]));
  }

  void skip_space() {
    while (!at_end() && detail::is_schema_space(peek())) {
      ++pos_;
    }
  }

  bool expect(char c, std::string_view what) {
    if (peek() != static_cast<unsigned char>(c) || at_end()) {
      return fail(pos_, "expected " + std::string(what) + ", found " + describe_at(pos_));
    }
    ++pos_;
    return true;
  }

  // A bare word: everything up to whitespace or one of ( ) ' $ { }.
  std::string_view word() {
    const std::size_t start = pos_;
    while (!at_end()) {
      const unsigned char c = peek();
      if (detail::is_schema_space(c) || c == '(' || c == ')' || c == '\'' || c == '$' || c == '{' ||
          c == '}') {
        break;
      }
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  // The element's own OID: numeric, or a macro reference when macros are given.
  bool read_element_oid(std::string& out) {
    const std::size_t at = pos_;
    std::string text;
    if (!read_oid_text(text)) {
      return false;
    }
    return to_numeric(text, at, "the definition", out);
  }

  bool read_oid_text(std::string& out) {
    const std::size_t at = pos_;
    if (peek() == '\'') {
      return read_qdstring(out);
    }
    out = std::string(word());
    if (out.empty()) {
      return fail(at, "expected an OID, found " + describe_at(at));
    }
    return true;
  }

  bool to_numeric(const std::string& text, std::size_t at, std::string_view what,
                  std::string& out) {
    if (is_numericoid(text)) {
      out = text;
      return true;
    }
    if (macros_ != nullptr && !text.empty() && is_ascii_alpha(text.front())) {
      return expand(text, at, out);
    }
    return fail(at, std::string(what) + " needs a numeric OID, found " + excerpt_in_quotes(text));
  }

  bool expand(const std::string& text, std::size_t at, std::string& out) {
    Result<std::string> expanded = macros_->expand(text);
    if (!expanded.ok()) {
      return fail(at, expanded.status().message());
    }
    out = std::move(expanded).value();
    return true;
  }

  bool parse_length(std::string_view digits, std::size_t at, std::uint32_t& length) {
    if (digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return is_ascii_digit(c); })) {
      return fail(at, "bad SYNTAX length " + excerpt_in_quotes(digits));
    }
    std::uint64_t value = 0;
    for (const char c : digits) {
      value = value * 10 + static_cast<std::uint64_t>(c - '0');
      if (value > std::numeric_limits<std::uint32_t>::max()) {
        return fail(at, "SYNTAX length " + excerpt_in_quotes(digits) + " is too large");
      }
    }
    length = static_cast<std::uint32_t>(value);
    return true;
  }

  bool read_qdescr(std::vector<std::string>& out) {
    const std::size_t at = pos_;
    if (peek() != '\'') {
      return fail(at, "expected a quoted name, found " + describe_at(at));
    }
    std::string name;
    if (!read_qdstring(name)) {
      return false;
    }
    if (!is_descr(name)) {
      return fail(at + 1, "invalid name " + excerpt_in_quotes(name) +
                              " (a letter, then letters, digits and hyphens)");
    }
    out.push_back(std::move(name));
    return true;
  }

  // qdstring = SQUOTE dstring SQUOTE, with \27 and \5C (any \XX hex pair, in fact) escapes.
  // Requires: peek() == '\''.
  bool read_qdstring(std::string& out) {
    const std::size_t start = pos_;
    ++pos_;
    out.clear();
    while (true) {
      if (at_end()) {
        return fail(start, "unterminated quoted string");
      }
      const unsigned char c = peek();
      if (c == '\'') {
        ++pos_;
        break;
      }
      if (c == '\\') {
        if (pos_ + 2 >= text_.size()) {
          return fail(pos_, "bad escape at the end of a string");
        }
        const int high = ascii_hex_value(static_cast<unsigned char>(text_[pos_ + 1]));
        const int low = ascii_hex_value(static_cast<unsigned char>(text_[pos_ + 2]));
        if (high < 0 || low < 0) {
          return fail(pos_, "bad escape in a string (only \\27 for ' and \\5C for \\)");
        }
        out += static_cast<char>(high * 16 + low);
        pos_ += 3;
        continue;
      }
      out += static_cast<char>(c);
      ++pos_;
    }
    if (!is_valid_utf8(out)) {
      return fail(start, "invalid UTF-8 in a string");
    }
    return true;
  }

  std::string_view text_;
  const OidMacros* macros_;
  std::size_t pos_ = 0;
  ParseError error_;
};

// Parses a description with the clauses every kind has, NAME, DESC and (when Description has
// the field) OBSOLETE, and those `clause(p, keyword, offset)` reads; `clause` ends with
// p.unknown_keyword for any other keyword.
template <typename Description, typename Clause>
bool parse_description(std::string_view text, const OidMacros* macros, Description& out,
                       ParseError& error, Clause clause) {
  DescriptionParser p(text, macros);
  const bool ok = p.parse(out.oid, out.extensions, [&](const std::string& keyword, std::size_t at) {
    if (keyword == "NAME") {
      return p.read_qdescrs(out.names);
    }
    if (keyword == "DESC") {
      return p.read_single_qdstring(out.description);
    }
    if constexpr (requires { out.obsolete; }) {
      if (keyword == "OBSOLETE") {
        out.obsolete = true;
        return true;
      }
    }
    return clause(p, keyword, at);
  });
  if (!ok) {
    error = p.error();
  }
  return ok;
}

Status offset_error(const ParseError& error) {
  return malformed("offset " + std::to_string(error.offset) + ": " + error.problem);
}

template <typename Description>
Result<Description> parse_alone(std::string_view text, const OidMacros* macros,
                                bool (*impl)(std::string_view, const OidMacros*, Description&,
                                             ParseError&)) {
  Description out;
  ParseError error;
  if (!impl(text, macros, out, error)) {
    return offset_error(error);
  }
  return out;
}

}  // namespace

namespace detail {

bool parse_attribute_type(std::string_view text, const OidMacros* macros,
                          AttributeTypeDescription& out, ParseError& error) {
  return parse_description(text, macros, out, error,
                           [&](DescriptionParser& p, const std::string& keyword, std::size_t at) {
                             if (keyword == "SUP") {
                               return p.read_oid(out.superior);
                             }
                             if (keyword == "EQUALITY") {
                               return p.read_oid(out.equality);
                             }
                             if (keyword == "ORDERING") {
                               return p.read_oid(out.ordering);
                             }
                             if (keyword == "SUBSTR") {
                               return p.read_oid(out.substrings);
                             }
                             if (keyword == "SYNTAX") {
                               return p.read_noidlen(out.syntax, out.syntax_length);
                             }
                             if (keyword == "SINGLE-VALUE") {
                               out.single_value = true;
                               return true;
                             }
                             if (keyword == "COLLECTIVE") {
                               out.collective = true;
                               return true;
                             }
                             if (keyword == "NO-USER-MODIFICATION") {
                               out.no_user_modification = true;
                               return true;
                             }
                             if (keyword == "USAGE") {
                               return p.read_usage(out.usage);
                             }
                             return p.unknown_keyword(keyword, at);
                           });
}

bool parse_object_class(std::string_view text, const OidMacros* macros, ObjectClassDescription& out,
                        ParseError& error) {
  bool kind_given = false;
  return parse_description(
      text, macros, out, error,
      [&](DescriptionParser& p, const std::string& keyword, std::size_t at) {
        if (keyword == "SUP") {
          return p.read_oids(out.superiors);
        }
        if (keyword == "ABSTRACT" || keyword == "STRUCTURAL" || keyword == "AUXILIARY") {
          if (kind_given) {
            return p.fail(at, "more than one of ABSTRACT, STRUCTURAL and AUXILIARY");
          }
          kind_given = true;
          out.kind = keyword == "ABSTRACT"     ? ObjectClassKind::kAbstract
                     : keyword == "STRUCTURAL" ? ObjectClassKind::kStructural
                                               : ObjectClassKind::kAuxiliary;
          return true;
        }
        if (keyword == "MUST") {
          return p.read_oids(out.must);
        }
        if (keyword == "MAY") {
          return p.read_oids(out.may);
        }
        return p.unknown_keyword(keyword, at);
      });
}

bool parse_syntax(std::string_view text, const OidMacros* macros, SyntaxDescription& out,
                  ParseError& error) {
  return parse_description(text, macros, out, error,
                           [&](DescriptionParser& p, const std::string& keyword, std::size_t at) {
                             return p.unknown_keyword(keyword, at);
                           });
}

bool parse_matching_rule(std::string_view text, const OidMacros* macros,
                         MatchingRuleDescription& out, ParseError& error) {
  bool has_syntax = false;
  if (!parse_description(text, macros, out, error,
                         [&](DescriptionParser& p, const std::string& keyword, std::size_t at) {
                           if (keyword == "SYNTAX") {
                             has_syntax = true;
                             return p.read_numeric_oid(out.syntax, "SYNTAX");
                           }
                           return p.unknown_keyword(keyword, at);
                         })) {
    return false;
  }
  if (!has_syntax) {
    error = ParseError{text.size(), "a matching rule needs SYNTAX"};
    return false;
  }
  return true;
}

}  // namespace detail

// ----- OidMacros -----

Status OidMacros::define(std::string_view name, std::string_view oid) {
  if (!is_descr(name)) {
    return malformed("invalid objectidentifier name " + excerpt_in_quotes(name));
  }
  Result<std::string> value = expand(oid);
  if (!value.ok()) {
    return value.status();
  }
  auto [it, inserted] = oids_.emplace(ascii_lowered(name), *value);
  if (!inserted && it->second != *value) {
    return Status(StatusCode::kAlreadyExists, "objectidentifier " + excerpt_in_quotes(name) +
                                                  " already stands for " + it->second);
  }
  return Status();
}

Result<std::string> OidMacros::expand(std::string_view text) const {
  if (is_numericoid(text)) {
    return std::string(text);
  }
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  if (!is_descr(name)) {
    return malformed("expected a numeric OID or an OID macro, found " + excerpt_in_quotes(text));
  }
  const auto it = oids_.find(ascii_lowered(name));
  if (it == oids_.end()) {
    return malformed("unknown OID macro " + excerpt_in_quotes(name));
  }
  if (colon == std::string_view::npos) {
    return it->second;
  }
  const std::string_view suffix = text.substr(colon + 1);
  std::string result = it->second + "." + std::string(suffix);
  if (suffix.empty() || !is_numericoid(result)) {
    return malformed("bad OID suffix in " + excerpt_in_quotes(text));
  }
  return result;
}

// ----- Single descriptions -----

Result<AttributeTypeDescription> parse_attribute_type(std::string_view text,
                                                      const OidMacros* macros) {
  return parse_alone<AttributeTypeDescription>(text, macros, detail::parse_attribute_type);
}

Result<ObjectClassDescription> parse_object_class(std::string_view text, const OidMacros* macros) {
  return parse_alone<ObjectClassDescription>(text, macros, detail::parse_object_class);
}

Result<SyntaxDescription> parse_syntax(std::string_view text, const OidMacros* macros) {
  return parse_alone<SyntaxDescription>(text, macros, detail::parse_syntax);
}

Result<MatchingRuleDescription> parse_matching_rule(std::string_view text,
                                                    const OidMacros* macros) {
  return parse_alone<MatchingRuleDescription>(text, macros, detail::parse_matching_rule);
}

}  // namespace numadir::schema
