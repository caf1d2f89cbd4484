// schema/syntax_description.cc: the validators of the RFC 4512 §4.1 description syntaxes
// (Attribute Type, Object Class, Matching Rule, Matching Rule Use, LDAP Syntax, DIT Content
// Rule, DIT Structure Rule and Name Form Description), one grammar-driven parser for all eight.
//
// Schema descriptions accept their clauses in any order (as OpenLDAP does), each at most once,
// and tab / CR / LF as well as SPACE between tokens; keywords compare case-insensitively.
//
// Thread contract: stateless functions over caller-owned values; any thread.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "schema/ascii.h"
#include "schema/detail/syntax_validators.h"
#include "schema/utf8.h"

namespace numadir::schema::detail {
namespace {

enum class Arg : std::uint8_t {
  kNone,
  kQdescrs,
  kQdstring,
  kOid,
  kOids,
  kNoidlen,
  kNumericoid,
  kUsage,
  kRuleids,
};

struct Clause {
  std::string_view keyword;
  Arg arg;
  bool required = false;
  std::uint8_t group = 0;  // Clauses of one non-zero group exclude each other.
};

struct DescriptionGrammar {
  bool ruleid_first;  // DIT structure rules start with a ruleid, the others with a numericoid.
  std::span<const Clause> clauses;
  bool sup_or_syntax;  // Attribute types: at least one of SUP and SYNTAX.
};

class DescriptionParser {
 public:
  explicit DescriptionParser(std::string_view text) : s_(text) {}

  bool parse(const DescriptionGrammar& grammar) {
    if (!is_valid_utf8(s_)) {
      return false;
    }
    skip_ws();
    if (!eat('(')) {
      return false;
    }
    skip_ws();
    if (grammar.ruleid_first ? !number() : !numericoid()) {
      return false;
    }
    std::uint32_t seen = 0;
    for (;;) {
      const std::size_t spaces = skip_ws();
      if (eat(')')) {
        break;
      }
      if (spaces == 0) {
        return false;
      }
      const std::string_view keyword =
          read_while([](char c) { return is_ascii_alpha(c) || c == '-' || c == '_'; });
      if (keyword.size() > 2 && (keyword[0] == 'X' || keyword[0] == 'x') && keyword[1] == '-') {
        if (skip_ws() == 0 || !qdstrings()) {
          return false;
        }
        continue;
      }
      std::size_t index = 0;
      while (index < grammar.clauses.size() &&
             !ascii_iequals(grammar.clauses[index].keyword, keyword)) {
        ++index;
      }
      if (index == grammar.clauses.size() || (seen & (1U << index)) != 0) {
        return false;
      }
      const Clause& clause = grammar.clauses[index];
      for (std::size_t other = 0; other < grammar.clauses.size(); ++other) {
        if ((seen & (1U << other)) != 0 && clause.group != 0 &&
            grammar.clauses[other].group == clause.group) {
          return false;
        }
      }
      seen |= 1U << index;
      if (clause.arg != Arg::kNone && (skip_ws() == 0 || !arg(clause.arg))) {
        return false;
      }
    }
    skip_ws();
    if (pos_ != s_.size()) {
      return false;
    }
    bool has_sup_or_syntax = false;
    for (std::size_t i = 0; i < grammar.clauses.size(); ++i) {
      const bool present = (seen & (1U << i)) != 0;
      if (grammar.clauses[i].required && !present) {
        return false;
      }
      if (present &&
          (grammar.clauses[i].keyword == "SUP" || grammar.clauses[i].keyword == "SYNTAX")) {
        has_sup_or_syntax = true;
      }
    }
    return !grammar.sup_or_syntax || has_sup_or_syntax;
  }

 private:
  static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

  std::size_t skip_ws() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_ws(s_[pos_])) {
      ++pos_;
    }
    return pos_ - start;
  }

  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  template <typename Pred>
  std::string_view read_while(Pred pred) {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && pred(s_[pos_])) {
      ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }

  bool numericoid() {
    return is_numericoid(read_while([](char c) { return is_ascii_digit(c) || c == '.'; }));
  }
  bool number() { return is_number(read_while(is_ascii_digit)); }
  bool oid() {
    return is_oid(read_while(
        [](char c) { return is_ascii_alpha(c) || is_ascii_digit(c) || c == '-' || c == '.'; }));
  }

  // A parenthesized list of `item`s separated by whitespace (or by '$' when `dollar`), or one
  // item alone. `allow_empty`: "( )" is accepted.
  template <typename Item>
  bool list(Item item, bool dollar, bool allow_empty) {
    if (!eat('(')) {
      return item();
    }
    skip_ws();
    if (eat(')')) {
      return allow_empty;
    }
    for (;;) {
      if (!item()) {
        return false;
      }
      const std::size_t spaces = skip_ws();
      if (eat(')')) {
        return true;
      }
      if (dollar) {
        if (!eat('$')) {
          return false;
        }
        skip_ws();
      } else if (spaces == 0) {
        return false;
      }
    }
  }

  bool qdescr() {
    return eat('\'') && is_descr(read_while([](char c) { return c != '\''; })) && eat('\'');
  }

  // qdstring: a non-empty dstring whose only escapes are \27 and \5C.
  bool qdstring() {
    if (!eat('\'')) {
      return false;
    }
    const std::string_view body = read_while([](char c) { return c != '\''; });
    return eat('\'') && !body.empty() && escapes_ok(body, "27");
  }

  bool qdstrings() {
    return list([this] { return qdstring(); }, false, true);
  }

  bool arg(Arg kind) {
    switch (kind) {
      case Arg::kNone:
        return true;
      case Arg::kQdescrs:
        return list([this] { return qdescr(); }, false, true);
      case Arg::kQdstring:
        return qdstring();
      case Arg::kOid:
        return oid();
      case Arg::kOids:
        return list([this] { return oid(); }, true, false);
      case Arg::kNoidlen:
        if (!numericoid()) {
          return false;
        }
        if (eat('{')) {
          return number() && eat('}');
        }
        return true;
      case Arg::kNumericoid:
        return numericoid();
      case Arg::kUsage: {
        static constexpr std::array<std::string_view, 4> kUsages = {
            "userApplications", "directoryOperation", "distributedOperation", "dSAOperation"};
        return is_one_of(read_while(is_ascii_alpha), kUsages);
      }
      case Arg::kRuleids:
        return list([this] { return number(); }, false, false);
    }
    return false;
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

constexpr Clause kName{"NAME", Arg::kQdescrs};
constexpr Clause kDesc{"DESC", Arg::kQdstring};
constexpr Clause kObsolete{"OBSOLETE", Arg::kNone};

constexpr std::array kAttributeTypeClauses = {
    kName,
    kDesc,
    kObsolete,
    Clause{"SUP", Arg::kOid},
    Clause{"EQUALITY", Arg::kOid},
    Clause{"ORDERING", Arg::kOid},
    Clause{"SUBSTR", Arg::kOid},
    Clause{"SYNTAX", Arg::kNoidlen},
    Clause{"SINGLE-VALUE", Arg::kNone},
    Clause{"COLLECTIVE", Arg::kNone},
    Clause{"NO-USER-MODIFICATION", Arg::kNone},
    Clause{"USAGE", Arg::kUsage},
};
constexpr std::array kObjectClassClauses = {
    kName,
    kDesc,
    kObsolete,
    Clause{"SUP", Arg::kOids},
    Clause{"ABSTRACT", Arg::kNone, false, 1},
    Clause{"STRUCTURAL", Arg::kNone, false, 1},
    Clause{"AUXILIARY", Arg::kNone, false, 1},
    Clause{"MUST", Arg::kOids},
    Clause{"MAY", Arg::kOids},
};
constexpr std::array kMatchingRuleClauses = {kName, kDesc, kObsolete,
                                             Clause{"SYNTAX", Arg::kNumericoid, true}};
constexpr std::array kMatchingRuleUseClauses = {kName, kDesc, kObsolete,
                                                Clause{"APPLIES", Arg::kOids, true}};
constexpr std::array kSyntaxDescriptionClauses = {kDesc};
constexpr std::array kDitContentRuleClauses = {
    kName,
    kDesc,
    kObsolete,
    Clause{"AUX", Arg::kOids},
    Clause{"MUST", Arg::kOids},
    Clause{"MAY", Arg::kOids},
    Clause{"NOT", Arg::kOids},
};
constexpr std::array kDitStructureRuleClauses = {
    kName, kDesc, kObsolete, Clause{"FORM", Arg::kOid, true}, Clause{"SUP", Arg::kRuleids}};
constexpr std::array kNameFormClauses = {
    kName,
    kDesc,
    kObsolete,
    Clause{"OC", Arg::kOid, true},
    Clause{"MUST", Arg::kOids, true},
    Clause{"MAY", Arg::kOids},
};

}  // namespace

bool attribute_type_description(std::string_view v) {
  return DescriptionParser(v).parse({false, kAttributeTypeClauses, true});
}
bool object_class_description(std::string_view v) {
  return DescriptionParser(v).parse({false, kObjectClassClauses, false});
}
bool matching_rule_description(std::string_view v) {
  return DescriptionParser(v).parse({false, kMatchingRuleClauses, false});
}
bool matching_rule_use_description(std::string_view v) {
  return DescriptionParser(v).parse({false, kMatchingRuleUseClauses, false});
}
bool ldap_syntax_description(std::string_view v) {
  return DescriptionParser(v).parse({false, kSyntaxDescriptionClauses, false});
}
bool dit_content_rule_description(std::string_view v) {
  return DescriptionParser(v).parse({false, kDitContentRuleClauses, false});
}
bool dit_structure_rule_description(std::string_view v) {
  return DescriptionParser(v).parse({true, kDitStructureRuleClauses, false});
}
bool name_form_description(std::string_view v) {
  return DescriptionParser(v).parse({false, kNameFormClauses, false});
}

}  // namespace numadir::schema::detail
