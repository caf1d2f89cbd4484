// backend/filter_eval.cc: filter compilation and three-valued evaluation.
#include "backend/filter_eval.h"

#include "schema/dn.h"
#include "schema/matching_rule.h"

namespace numadir::backend {
namespace {

using schema::FilterKind;

// Returns: whether extensible rule `rule` can be applied to values of `info`'s type.
bool rule_usable(const schema::MatchingRule* rule, const AttributeInfo& info) {
  const schema::AttributeType& type = *info.type;
  if (rule == type.equality || rule == type.ordering || rule == type.substrings) {
    return true;
  }
  return type.syntax != nullptr && rule->syntax_oid == type.syntax->oid;
}

bool normalize_piece(const schema::MatchingRule& rule, std::string_view piece,
                     schema::SubstringPosition position, std::string& out) {
  if (rule.normalize_piece != nullptr) {
    return rule.normalize_piece(piece, position, out);
  }
  return rule.normalize(piece, out);
}

Tri negate(Tri value) {
  switch (value) {
    case Tri::kTrue:
      return Tri::kFalse;
    case Tri::kFalse:
      return Tri::kTrue;
    case Tri::kUndefined:
      return Tri::kUndefined;
  }
  return Tri::kUndefined;
}

}  // namespace

void CompiledFilter::compile(const schema::Filter& filter, const AttributeCatalog& catalog,
                             const OperationalTypes& types) {
  catalog_ = &catalog;
  nodes_.clear();
  nodes_.resize(filter.size());
  for (std::uint32_t i = 0; i < filter.size(); ++i) {
    CompiledNode& node = nodes_[i];
    node.kind = filter.node(i).kind;
    node.end = filter.node(i).end;
    switch (node.kind) {
      case FilterKind::kAnd:
      case FilterKind::kOr:
      case FilterKind::kNot:
      case FilterKind::kSubInitial:
      case FilterKind::kSubAny:
      case FilterKind::kSubFinal:
        break;
      default:
        compile_item(filter, i, node, types);
        break;
    }
  }
}

void CompiledFilter::compile_item(const schema::Filter& filter, std::uint32_t index,
                                  CompiledNode& node, const OperationalTypes& types) {
  const schema::FilterNode& item = filter.node(index);
  auto set_constant = [&node](Tri value) {
    node.constant = true;
    node.constant_value = value;
  };
  if (!item.attribute.empty()) {
    Result<std::string> description = catalog_->canonical_description(item.attribute);
    node.attribute = description.ok() ? catalog_->resolve(description_type(*description)) : nullptr;
    if (node.attribute == nullptr) {
      set_constant(item.kind == FilterKind::kPresent ? Tri::kFalse : Tri::kUndefined);
      return;
    }
    node.options = std::string(description_options(*description));
    node.computed = types.computed(node.attribute);
  }
  const schema::AttributeType* type = node.attribute != nullptr ? node.attribute->type : nullptr;
  switch (item.kind) {
    case FilterKind::kPresent:
      return;
    case FilterKind::kEquality:
    case FilterKind::kApprox:
      node.rule = type->equality;
      break;
    case FilterKind::kGreaterOrEqual:
    case FilterKind::kLessOrEqual:
      node.rule = type->ordering;
      break;
    case FilterKind::kSubstrings:
      node.rule = type->substrings;
      break;
    case FilterKind::kExtensible:
      node.dn_attributes = item.dn_attributes;
      if (!item.matching_rule.empty()) {
        node.rule = schema::find_matching_rule(item.matching_rule);
        if (node.rule != nullptr && node.attribute != nullptr &&
            !rule_usable(node.rule, *node.attribute)) {
          node.rule = nullptr;
        }
      } else if (type != nullptr) {
        node.rule = type->equality;
      }
      if (node.rule != nullptr && node.rule->use == schema::MatchingRuleUse::kSubstrings) {
        node.rule = nullptr;  // A substrings rule has no whole-value assertion.
      }
      break;
    default:
      return;
  }
  if (node.rule == nullptr) {
    set_constant(Tri::kUndefined);
    return;
  }
  if (item.kind != FilterKind::kSubstrings) {
    if (!catalog_->normalize(*node.rule, item.value, node.assertion)) {
      set_constant(Tri::kUndefined);
    } else if ((item.kind == FilterKind::kEquality || item.kind == FilterKind::kApprox) &&
               node.attribute == catalog_->object_class()) {
      node.subclasses = catalog_->object_subclass_oids(node.assertion);
    }
    return;
  }
  std::string piece;
  for (std::uint32_t c = index + 1; c < item.end; ++c) {
    const schema::FilterNode& part = filter.node(c);
    schema::SubstringPosition position = schema::SubstringPosition::kAny;
    if (part.kind == FilterKind::kSubInitial) {
      position = schema::SubstringPosition::kInitial;
    } else if (part.kind == FilterKind::kSubFinal) {
      position = schema::SubstringPosition::kFinal;
    }
    if (!normalize_piece(*node.rule, part.value, position, piece)) {
      set_constant(Tri::kUndefined);
      return;
    }
    if (position == schema::SubstringPosition::kInitial) {
      node.has_initial = true;
      node.initial = piece;
    } else if (position == schema::SubstringPosition::kFinal) {
      node.has_final = true;
      node.final_piece = piece;
    } else {
      node.any.push_back(piece);
    }
  }
}

Tri FilterEvaluator::evaluate(const CompiledFilter& filter, const EntryView& entry,
                              const ComputedSource* computed, Status* error) {
  filter_ = &filter;
  entry_ = &entry;
  computed_ = computed;
  error_ = error;
  if (filter.nodes().empty()) {
    return Tri::kUndefined;
  }
  return eval(0);
}

Tri FilterEvaluator::eval(std::uint32_t index) {
  const CompiledNode& node = filter_->node(index);
  switch (node.kind) {
    case FilterKind::kAnd: {
      Tri result = Tri::kTrue;
      for (std::uint32_t c = index + 1; c < node.end; c = filter_->node(c).end) {
        const Tri value = eval(c);
        if (value == Tri::kFalse) {
          return Tri::kFalse;
        }
        if (value == Tri::kUndefined) {
          result = Tri::kUndefined;
        }
      }
      return result;
    }
    case FilterKind::kOr: {
      Tri result = Tri::kFalse;
      for (std::uint32_t c = index + 1; c < node.end; c = filter_->node(c).end) {
        const Tri value = eval(c);
        if (value == Tri::kTrue) {
          return Tri::kTrue;
        }
        if (value == Tri::kUndefined) {
          result = Tri::kUndefined;
        }
      }
      return result;
    }
    case FilterKind::kNot:
      return index + 1 < node.end ? negate(eval(index + 1)) : Tri::kUndefined;
    default:
      return eval_item(node);
  }
}

bool FilterEvaluator::value_matches(const CompiledNode& node, std::string_view value) {
  if (!filter_->catalog().normalize(*node.rule, value, scratch_)) {
    return false;
  }
  switch (node.kind) {
    case FilterKind::kGreaterOrEqual:
      return std::string_view(scratch_) >= std::string_view(node.assertion);
    case FilterKind::kLessOrEqual:
      return std::string_view(scratch_) <= std::string_view(node.assertion);
    case FilterKind::kSubstrings:
      return schema::substrings_match(scratch_, node.has_initial ? node.initial : std::string(),
                                      node.any, node.has_final ? node.final_piece : std::string());
    default:
      return object_class_value_matches(scratch_, node.assertion, node.subclasses);
  }
}

Tri FilterEvaluator::eval_item(const CompiledNode& node) {
  if (node.constant) {
    return node.constant_value;
  }
  const bool typeless = node.attribute == nullptr;
  const Tri stored = typeless ? eval_typeless(node) : eval_typed(node);
  if (stored != Tri::kFalse || node.kind != FilterKind::kExtensible || !node.dn_attributes) {
    return stored;
  }
  return eval_dn_attributes(node);
}

Tri FilterEvaluator::eval_typed(const CompiledNode& node) {
  const bool presence = node.kind == FilterKind::kPresent;
  AttributeReader reader = entry_->attributes();
  AttributeView attribute;
  while (reader.next(&attribute)) {
    if (!node.attribute->covers(attribute.type) ||
        !options_cover(description_options(attribute.description), node.options)) {
      continue;
    }
    if (presence && attribute.values.size() > 0) {
      return Tri::kTrue;
    }
    std::string_view value;
    while (!presence && attribute.values.next(&value)) {
      if (value_matches(node, value)) {
        return Tri::kTrue;
      }
    }
    if (attribute.values.corrupt()) {
      *error_ = Status(StatusCode::kStorage, "corrupt entry: bad value");
      return Tri::kUndefined;
    }
  }
  if (reader.corrupt()) {
    *error_ = Status(StatusCode::kStorage, "corrupt entry: bad attribute");
    return Tri::kUndefined;
  }
  if (node.computed != ComputedAttribute::kNone && computed_ != nullptr && node.options.empty()) {
    computed_values_.clear();
    if (Status status = computed_->computed_values(node.computed, &computed_values_);
        !status.ok()) {
      *error_ = std::move(status);
      return Tri::kUndefined;
    }
    for (const std::string& value : computed_values_) {
      if (presence || value_matches(node, value)) {
        return Tri::kTrue;
      }
    }
  }
  return Tri::kFalse;
}

Tri FilterEvaluator::eval_typeless(const CompiledNode& node) {
  const AttributeCatalog& catalog = filter_->catalog();
  AttributeReader reader = entry_->attributes();
  AttributeView attribute;
  while (reader.next(&attribute)) {
    const AttributeInfo* info = catalog.by_canonical(attribute.type);
    if (info == nullptr || !rule_usable(node.rule, *info)) {
      continue;
    }
    std::string_view value;
    while (attribute.values.next(&value)) {
      if (value_matches(node, value)) {
        return Tri::kTrue;
      }
    }
    if (attribute.values.corrupt()) {
      *error_ = Status(StatusCode::kStorage, "corrupt entry: bad value");
      return Tri::kUndefined;
    }
  }
  if (reader.corrupt()) {
    *error_ = Status(StatusCode::kStorage, "corrupt entry: bad attribute");
    return Tri::kUndefined;
  }
  return Tri::kFalse;
}

Tri FilterEvaluator::eval_dn_attributes(const CompiledNode& node) {
  const AttributeCatalog& catalog = filter_->catalog();
  Result<schema::Dn> dn = schema::Dn::parse(entry_->dn());
  if (!dn.ok()) {
    *error_ = Status(StatusCode::kStorage, "corrupt entry: stored DN does not parse");
    return Tri::kUndefined;
  }
  for (std::size_t r = 0; r < dn->rdn_count(); ++r) {
    for (const schema::Ava& ava : dn->rdn(r)) {
      const AttributeInfo* info = catalog.resolve(ava.type);
      if (ava.hex_form || info == nullptr) {
        continue;
      }
      if (node.attribute != nullptr ? !node.attribute->covers(info->name)
                                    : !rule_usable(node.rule, *info)) {
        continue;
      }
      if (value_matches(node, ava.value)) {
        return Tri::kTrue;
      }
    }
  }
  return Tri::kFalse;
}

}  // namespace numadir::backend
