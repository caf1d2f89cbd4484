// tests/backend/model_reference_filter.h: the Reference's own filter evaluation (RFC 4511
// three-valued logic, written out plainly with the schema's matching rules). Included by
// model_reference.h; not for use on its own.
//
// Thread contract: test-thread only.
#pragma once

#include "tests/backend/model_reference.h"

namespace numadir::backend::testing {

inline std::vector<std::string> Reference::values_for(const RefEntry& entry, const std::string& key,
                                                      const schema::AttributeType& type,
                                                      std::string_view options) const {
  std::vector<std::string> out;
  for (const auto& attribute : entry.attrs) {
    const schema::AttributeType* t = type_of(attribute.description);
    const std::string_view desc = attribute.description;
    const std::string_view have =
        desc.find(';') == std::string_view::npos ? std::string_view() : desc.substr(desc.find(';'));
    bool options_ok = true;
    std::string_view want = options;
    while (!want.empty()) {
      want.remove_prefix(1);
      const std::string option(want.substr(0, want.find(';')));
      options_ok =
          options_ok && (std::string(have) + ";").find(";" + option + ";") != std::string::npos;
      want = want.find(';') == std::string_view::npos ? std::string_view()
                                                      : want.substr(want.find(';'));
    }
    if (t->is_subtype_of(type) && options_ok) {
      out.insert(out.end(), attribute.values.begin(), attribute.values.end());
    }
  }
  if (options.empty()) {
    if (type.primary_name() == "hasSubordinates") {
      out.push_back(has_children(key) ? "TRUE" : "FALSE");
    } else if (type.primary_name() == "entryDN") {
      out.push_back(entry.dn);
    }
  }
  return out;
}

inline Tv Reference::eval(const schema::Filter& filter, std::uint32_t i, const std::string& key,
                          const RefEntry& entry) const {
  const schema::FilterNode& node = filter.node(i);
  using K = schema::FilterKind;
  switch (node.kind) {
    case K::kAnd:
    case K::kOr: {
      const Tv stop = node.kind == K::kAnd ? Tv::kFalse : Tv::kTrue;
      Tv result = node.kind == K::kAnd ? Tv::kTrue : Tv::kFalse;
      for (std::uint32_t c = i + 1; c < node.end; c = filter.node(c).end) {
        const Tv v = eval(filter, c, key, entry);
        if (v == stop) {
          return stop;
        }
        if (v == Tv::kUndefined) {
          result = Tv::kUndefined;
        }
      }
      return result;
    }
    case K::kNot: {
      const Tv v = eval(filter, i + 1, key, entry);
      return v == Tv::kUndefined ? v : (v == Tv::kTrue ? Tv::kFalse : Tv::kTrue);
    }
    default:
      return eval_item(filter, i, key, entry);
  }
}

inline Tv Reference::eval_item(const schema::Filter& filter, std::uint32_t i,
                               const std::string& key, const RefEntry& entry) const {
  const schema::FilterNode& node = filter.node(i);
  using K = schema::FilterKind;
  const schema::AttributeType* type = nullptr;
  std::string options;
  if (!node.attribute.empty()) {
    auto description = canonical(node.attribute);
    if (!description) {
      return node.kind == K::kPresent ? Tv::kFalse : Tv::kUndefined;
    }
    type = type_of(*description);
    options = description->find(';') == std::string::npos
                  ? ""
                  : description->substr(description->find(';'));
  }
  if (node.kind == K::kPresent) {
    return values_for(entry, key, *type, options).empty() ? Tv::kFalse : Tv::kTrue;
  }
  if (node.kind == K::kExtensible) {
    return eval_extensible(node, type, options, key, entry);
  }
  const schema::MatchingRule* rule =
      node.kind == K::kSubstrings                                         ? type->substrings
      : (node.kind == K::kGreaterOrEqual || node.kind == K::kLessOrEqual) ? type->ordering
                                                                          : type->equality;
  if (rule == nullptr) {
    return Tv::kUndefined;
  }
  std::string assertion;
  std::string initial, final_piece;
  std::vector<std::string> any;
  if (node.kind == K::kSubstrings) {
    for (std::uint32_t c = i + 1; c < node.end; ++c) {
      const auto& part = filter.node(c);
      const auto position = part.kind == K::kSubInitial ? schema::SubstringPosition::kInitial
                            : part.kind == K::kSubFinal ? schema::SubstringPosition::kFinal
                                                        : schema::SubstringPosition::kAny;
      std::string piece;
      if (!rule->normalize_piece(part.value, position, piece)) {
        return Tv::kUndefined;
      }
      (part.kind == K::kSubInitial ? initial
       : part.kind == K::kSubFinal ? final_piece
                                   : any.emplace_back()) = piece;
    }
  } else if (!norm_rule(rule, node.value, assertion)) {
    return Tv::kUndefined;
  }
  for (const std::string& value : values_for(entry, key, *type, options)) {
    std::string normalized;
    if (!norm_rule(rule, value, normalized)) {
      continue;
    }
    bool match = false;
    switch (node.kind) {
      case K::kSubstrings:
        match = schema::substrings_match(normalized, initial, any, final_piece);
        break;
      case K::kGreaterOrEqual:
        match = normalized >= assertion;
        break;
      case K::kLessOrEqual:
        match = normalized <= assertion;
        break;
      default:
        match = normalized == assertion;
        // RFC 4512 §2.4.1: an entry belongs to the superclasses of its classes too.
        if (!match && type->primary_name() == "objectClass") {
          const schema::ObjectClass* have = schema_.object_class(normalized);
          const schema::ObjectClass* wanted = schema_.object_class(assertion);
          match = have != nullptr && wanted != nullptr && have->is_subclass_of(*wanted);
        }
    }
    if (match) {
      return Tv::kTrue;
    }
  }
  return Tv::kFalse;
}

inline bool Reference::usable(const schema::MatchingRule* rule,
                              const schema::AttributeType& type) const {
  return rule == type.equality || rule == type.ordering || rule == type.substrings ||
         (type.syntax != nullptr && rule->syntax_oid == type.syntax->oid);
}

inline Tv Reference::eval_extensible(const schema::FilterNode& node,
                                     const schema::AttributeType* type, const std::string& options,
                                     const std::string& key, const RefEntry& entry) const {
  const schema::MatchingRule* rule = node.matching_rule.empty()
                                         ? (type ? type->equality : nullptr)
                                         : schema::find_matching_rule(node.matching_rule);
  if (rule == nullptr || rule->use == schema::MatchingRuleUse::kSubstrings ||
      (type != nullptr && !usable(rule, *type))) {
    return Tv::kUndefined;
  }
  std::string assertion;
  if (!norm_rule(rule, node.value, assertion)) {
    return Tv::kUndefined;
  }
  auto matches = [&](std::string_view value) {
    std::string normalized;
    return norm_rule(rule, value, normalized) && normalized == assertion;
  };
  if (type != nullptr) {
    for (const std::string& value : values_for(entry, key, *type, options)) {
      if (matches(value)) {
        return Tv::kTrue;
      }
    }
  } else {
    for (const auto& attribute : entry.attrs) {
      if (usable(rule, *type_of(attribute.description))) {
        for (const std::string& value : attribute.values) {
          if (matches(value)) {
            return Tv::kTrue;
          }
        }
      }
    }
  }
  if (node.dn_attributes) {
    const schema::Dn dn = *schema::Dn::parse(entry.dn);
    for (std::size_t r = 0; r < dn.rdn_count(); ++r) {
      for (const schema::Ava& ava : dn.rdn(r)) {
        const schema::AttributeType* t = schema_.attribute_type(ava.type);
        if (t == nullptr || ava.hex_form) {
          continue;
        }
        if ((type != nullptr ? t->is_subtype_of(*type) : usable(rule, *t)) && matches(ava.value)) {
          return Tv::kTrue;
        }
      }
    }
  }
  return Tv::kFalse;
}

}  // namespace numadir::backend::testing
