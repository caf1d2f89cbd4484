// schema/schema.cc: loading schema files into a Schema: resolution of superiors, rules and
// syntaxes, closure of object classes, and the lookups. The entry checks are in
// schema/schema_check.cc.
#include "schema/schema.h"
#include "schema/detail/quoted.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "schema/ascii.h"
#include "schema/detail/schema_data.h"
#include "schema/matching_rule.h"
#include "schema/schema_parser.h"
#include "schema/syntax.h"

// The build passes the absolute path of schema/files; a bare compile (e.g. a fuzz target built
// by hand from the repository root) gets the relative one.
#ifndef NUMADIR_SCHEMA_DIR
#define NUMADIR_SCHEMA_DIR "schema/files"
#endif

namespace numadir::schema {
namespace {

using detail::kExtensibleObjectOid;
using detail::kObjectClassOid;
using detail::NameIndex;
using detail::SchemaData;

Status load_error(std::string message) { return invalid_argument(std::move(message)); }

template <typename T>
void append_unique(std::vector<T>& out, T item) {
  if (std::find(out.begin(), out.end(), item) == out.end()) {
    out.push_back(item);
  }
}

// Collects the definitions of every file, then resolves them into a Schema's SchemaData.
class SchemaBuilder {
 public:
  Status add_text(std::string_view text, std::string_view origin) {
    Result<SchemaFileContents> contents = parse_schema_file(text, origin, macros_);
    if (!contents.ok()) {
      return load_error(contents.status().message());
    }
    const std::string source_prefix = std::string(origin) + ":";
    for (AttributeTypeDescription& d : contents->attribute_types) {
      std::string source = source_prefix + std::to_string(d.line);
      attribute_types_.push_back({std::move(d), std::move(source), nullptr});
    }
    for (ObjectClassDescription& d : contents->object_classes) {
      std::string source = source_prefix + std::to_string(d.line);
      object_classes_.push_back({std::move(d), std::move(source), nullptr});
    }
    for (SyntaxDescription& d : contents->syntaxes) {
      std::string source = source_prefix + std::to_string(d.line);
      syntaxes_.push_back({std::move(d), std::move(source)});
    }
    // Matching rule descriptions are accepted and otherwise ignored: the rules are built in
    // (schema/matching_rule.h) and a file cannot add code.
    return Status();
  }

  Status add_file(const std::filesystem::path& path) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      return load_error(path.string() + ": cannot read: it is a directory");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return load_error(path.string() + ": cannot read: " + std::strerror(errno));
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
      return load_error(path.string() + ": cannot read: " + std::strerror(errno));
    }
    return add_text(text.str(), path.string());
  }

  // Resolves every definition collected into `out` (empty before).
  Status build(SchemaData& out) {
    impl_ = &out;
    NUMADIR_RETURN_IF_ERROR(build_syntaxes());
    NUMADIR_RETURN_IF_ERROR(register_attribute_types());
    NUMADIR_RETURN_IF_ERROR(resolve_attribute_types());
    NUMADIR_RETURN_IF_ERROR(register_object_classes());
    NUMADIR_RETURN_IF_ERROR(resolve_object_classes());
    impl_->object_class_type = find_attribute_type(kObjectClassOid);
    impl_->top = find_object_class(kTopOid);
    impl_->extensible_object = find_object_class(kExtensibleObjectOid);
    return Status();
  }

 private:
  struct PendingAttributeType {
    AttributeTypeDescription description;
    std::string source;
    AttributeType* type;
  };
  struct PendingObjectClass {
    ObjectClassDescription description;
    std::string source;
    ObjectClass* object_class;
  };
  struct PendingSyntax {
    SyntaxDescription description;
    std::string source;
  };

  const AttributeType* find_attribute_type(std::string_view name) const {
    const auto it = impl_->attribute_type_index.find(name);
    return it == impl_->attribute_type_index.end() ? nullptr : it->second;
  }
  const ObjectClass* find_object_class(std::string_view name) const {
    const auto it = impl_->object_class_index.find(name);
    return it == impl_->object_class_index.end() ? nullptr : it->second;
  }

  // A syntax definition for a built-in OID is accepted as is. One for another OID is registered
  // when its X-SUBST extension names a known syntax to validate with (OpenLDAP's mechanism);
  // otherwise it is not registered, and attribute types using it fail as "unknown syntax".
  Status build_syntaxes() {
    for (const PendingSyntax& pending : syntaxes_) {
      const SyntaxDescription& d = pending.description;
      if (find_syntax(d.oid) != nullptr) {
        continue;
      }
      const Syntax* substitute = nullptr;
      for (const SchemaExtension& extension : d.extensions) {
        if (ascii_lowered(extension.name) != "x-subst") {
          continue;
        }
        if (extension.values.size() != 1 ||
            (substitute = impl_->find_syntax_any(extension.values.front())) == nullptr) {
          return load_error(pending.source + ": syntax " + d.oid +
                            ": X-SUBST must name one known syntax OID");
        }
      }
      if (substitute == nullptr) {
        continue;
      }
      if (impl_->find_syntax_any(d.oid) != nullptr) {
        return load_error(pending.source + ": duplicate syntax " + d.oid);
      }
      auto alias = std::make_unique<SchemaData::SyntaxAlias>();
      alias->oid = d.oid;
      alias->description = d.description;
      alias->syntax = Syntax{.oid = alias->oid,
                             .description = alias->description,
                             .validate = substitute->validate,
                             .human_readable = substitute->human_readable};
      impl_->syntax_aliases.push_back(std::move(alias));
    }
    return Status();
  }

  template <typename Element, typename Pending>
  Status register_names(NameIndex<const Element*>& index,
                        std::unordered_map<const Element*, std::size_t>& position,
                        std::vector<Pending>& pending, std::string_view what,
                        const Element* element, std::size_t i) {
    const auto& d = pending[i].description;
    const auto source_of = [&](const Element* other) { return pending[position[other]].source; };
    const auto [it, inserted] = index.emplace(d.oid, element);
    if (!inserted) {
      return load_error(pending[i].source + ": duplicate " + std::string(what) + " OID " + d.oid +
                        " (already defined at " + source_of(it->second) + ")");
    }
    for (const std::string& name : d.names) {
      const auto [name_it, name_inserted] = index.emplace(name, element);
      if (!name_inserted) {
        if (name_it->second == element) {
          return load_error(pending[i].source + ": " + std::string(what) + " " + d.oid +
                            " lists the name " + detail::in_quotes(name) + " twice");
        }
        return load_error(pending[i].source + ": duplicate " + std::string(what) + " name " +
                          detail::in_quotes(name) + " (already defined at " +
                          source_of(name_it->second) + ")");
      }
    }
    return Status();
  }

  Status register_attribute_types() {
    for (std::size_t i = 0; i < attribute_types_.size(); ++i) {
      const AttributeTypeDescription& d = attribute_types_[i].description;
      auto type = std::make_unique<AttributeType>();
      type->oid = d.oid;
      type->names = d.names;
      type->description = d.description;
      type->obsolete = d.obsolete;
      type->syntax_length = d.syntax_length;
      type->single_value = d.single_value;
      type->collective = d.collective;
      type->no_user_modification = d.no_user_modification;
      type->usage = d.usage;
      type->definition = d.to_string();
      type->source = attribute_types_[i].source;
      attribute_types_[i].type = type.get();
      attribute_type_position_[type.get()] = i;
      NUMADIR_RETURN_IF_ERROR(register_names(impl_->attribute_type_index, attribute_type_position_,
                                             attribute_types_, "attribute type", type.get(), i));
      impl_->attribute_types.push_back(type.get());
      impl_->attribute_type_storage.push_back(std::move(type));
    }
    return Status();
  }

  // Resolves types superiors first. Walks each superior chain iteratively: a file may chain
  // thousands of types, and recursion would put that depth on the stack.
  Status resolve_attribute_types() {
    enum class State : std::uint8_t { kPending, kInChain, kDone };
    std::vector<State> state(attribute_types_.size(), State::kPending);
    std::vector<std::size_t> chain;
    for (std::size_t start = 0; start < attribute_types_.size(); ++start) {
      chain.clear();
      std::size_t i = start;
      while (state[i] != State::kDone) {
        if (state[i] == State::kInChain) {
          return load_error(attribute_types_[i].source + ": attribute type " +
                            detail::in_quotes(attribute_types_[i].type->primary_name()) +
                            " is its own superior (through " + chain_names(chain, i) + ")");
        }
        state[i] = State::kInChain;
        chain.push_back(i);
        const std::string& superior = attribute_types_[i].description.superior;
        if (superior.empty()) {
          break;
        }
        const AttributeType* found = find_attribute_type(superior);
        if (found == nullptr) {
          return load_error(attribute_types_[i].source + ": attribute type " +
                            detail::in_quotes(attribute_types_[i].type->primary_name()) +
                            ": unknown superior " + detail::in_quotes(superior));
        }
        i = attribute_type_position_[found];
      }
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        NUMADIR_RETURN_IF_ERROR(resolve_attribute_type(attribute_types_[*it]));
        state[*it] = State::kDone;
      }
    }
    return Status();
  }

  std::string chain_names(const std::vector<std::size_t>& chain, std::size_t repeated) const {
    std::string out;
    const auto first = std::find(chain.begin(), chain.end(), repeated);
    for (auto it = first; it != chain.end(); ++it) {
      out += std::string(attribute_types_[*it].type->primary_name()) + " -> ";
    }
    out += attribute_types_[repeated].type->primary_name();
    return out;
  }

  static std::string_view use_name(MatchingRuleUse use) {
    switch (use) {
      case MatchingRuleUse::kEquality:
        return "an equality";
      case MatchingRuleUse::kOrdering:
        return "an ordering";
      case MatchingRuleUse::kSubstrings:
        return "a substrings";
    }
    return "an equality";
  }

  Status resolve_rule(const PendingAttributeType& pending, const std::string& name,
                      MatchingRuleUse use, std::string_view keyword, const MatchingRule* inherited,
                      const MatchingRule*& out) {
    if (name.empty()) {
      out = inherited;
      return Status();
    }
    const MatchingRule* rule = find_matching_rule(name);
    const std::string prefix = pending.source + ": attribute type " +
                               detail::in_quotes(pending.type->primary_name()) + ": ";
    if (rule == nullptr) {
      return load_error(prefix + "unknown " + std::string(keyword) + " matching rule " +
                        detail::in_quotes(name));
    }
    if (rule->use != use) {
      return load_error(prefix + detail::in_quotes(name) + " cannot be the " +
                        std::string(keyword) + " rule (it is " + std::string(use_name(rule->use)) +
                        " rule)");
    }
    out = rule;
    return Status();
  }

  // Requires: the superior, if any, is resolved.
  Status resolve_attribute_type(PendingAttributeType& pending) {
    const AttributeTypeDescription& d = pending.description;
    AttributeType& type = *pending.type;
    const std::string prefix =
        pending.source + ": attribute type " + detail::in_quotes(type.primary_name()) + ": ";
    const AttributeType* superior = d.superior.empty() ? nullptr : find_attribute_type(d.superior);
    type.superior = superior;
    NUMADIR_RETURN_IF_ERROR(resolve_rule(pending, d.equality, MatchingRuleUse::kEquality,
                                         "equality", superior ? superior->equality : nullptr,
                                         type.equality));
    NUMADIR_RETURN_IF_ERROR(resolve_rule(pending, d.ordering, MatchingRuleUse::kOrdering,
                                         "ordering", superior ? superior->ordering : nullptr,
                                         type.ordering));
    NUMADIR_RETURN_IF_ERROR(resolve_rule(pending, d.substrings, MatchingRuleUse::kSubstrings,
                                         "substrings", superior ? superior->substrings : nullptr,
                                         type.substrings));
    if (!d.syntax.empty()) {
      type.syntax = impl_->find_syntax_any(d.syntax);
      if (type.syntax == nullptr) {
        return load_error(prefix + "unknown syntax " + d.syntax);
      }
    } else if (superior != nullptr) {
      type.syntax = superior->syntax;
      type.syntax_length = superior->syntax_length;
    } else {
      return load_error(prefix + "needs SYNTAX or SUP");
    }
    if (superior != nullptr && superior->usage != type.usage) {
      return load_error(prefix + "USAGE differs from that of its superior " +
                        detail::in_quotes(superior->primary_name()));
    }
    if (superior != nullptr && superior->collective && !type.collective) {
      return load_error(prefix + "must be COLLECTIVE as its superior " +
                        detail::in_quotes(superior->primary_name()) + " is");
    }
    if (type.collective && type.operational()) {
      return load_error(prefix + "COLLECTIVE requires USAGE userApplications");
    }
    if (type.no_user_modification && !type.operational()) {
      return load_error(prefix + "NO-USER-MODIFICATION requires an operational USAGE");
    }
    return Status();
  }

  Status register_object_classes() {
    for (std::size_t i = 0; i < object_classes_.size(); ++i) {
      const ObjectClassDescription& d = object_classes_[i].description;
      auto object_class = std::make_unique<ObjectClass>();
      object_class->oid = d.oid;
      object_class->names = d.names;
      object_class->description = d.description;
      object_class->obsolete = d.obsolete;
      object_class->kind = d.kind;
      object_class->definition = d.to_string();
      object_class->source = object_classes_[i].source;
      object_classes_[i].object_class = object_class.get();
      object_class_position_[object_class.get()] = i;
      NUMADIR_RETURN_IF_ERROR(register_names(impl_->object_class_index, object_class_position_,
                                             object_classes_, "object class", object_class.get(),
                                             i));
      impl_->object_classes.push_back(object_class.get());
      impl_->object_class_storage.push_back(std::move(object_class));
    }
    return Status();
  }

  // Resolves classes superiors first: an iterative depth-first walk of the superior graph
  // (several superiors per class), which finds unknown superiors and cycles.
  Status resolve_object_classes() {
    enum class State : std::uint8_t { kPending, kOnStack, kDone };
    std::vector<State> state(object_classes_.size(), State::kPending);
    struct Frame {
      std::size_t index;
      std::size_t next_superior;
    };
    std::vector<Frame> stack;
    for (std::size_t start = 0; start < object_classes_.size(); ++start) {
      if (state[start] != State::kPending) {
        continue;
      }
      state[start] = State::kOnStack;
      stack.push_back({start, 0});
      while (!stack.empty()) {
        const std::size_t i = stack.back().index;
        const std::vector<std::string>& superiors = object_classes_[i].description.superiors;
        if (stack.back().next_superior < superiors.size()) {
          const std::string& name = superiors[stack.back().next_superior++];
          const ObjectClass* found = find_object_class(name);
          if (found == nullptr) {
            return load_error(object_classes_[i].source + ": object class " +
                              detail::in_quotes(object_classes_[i].object_class->primary_name()) +
                              ": unknown superior " + detail::in_quotes(name));
          }
          const std::size_t j = object_class_position_[found];
          if (state[j] == State::kOnStack) {
            return load_error(object_classes_[i].source + ": object class " +
                              detail::in_quotes(object_classes_[i].object_class->primary_name()) +
                              ": superior " + detail::in_quotes(name) +
                              " leads back to it (a cycle)");
          }
          if (state[j] == State::kPending) {
            state[j] = State::kOnStack;
            stack.push_back({j, 0});
          }
          continue;
        }
        NUMADIR_RETURN_IF_ERROR(resolve_object_class(object_classes_[i]));
        state[i] = State::kDone;
        stack.pop_back();
      }
    }
    return Status();
  }

  static std::string_view kind_name(ObjectClassKind kind) {
    switch (kind) {
      case ObjectClassKind::kAbstract:
        return "abstract";
      case ObjectClassKind::kStructural:
        return "structural";
      case ObjectClassKind::kAuxiliary:
        return "auxiliary";
    }
    return "structural";
  }

  Status resolve_attribute_list(const PendingObjectClass& pending,
                                const std::vector<std::string>& names, std::string_view keyword,
                                std::vector<const AttributeType*>& out) {
    for (const std::string& name : names) {
      const AttributeType* type = find_attribute_type(name);
      if (type == nullptr) {
        return load_error(pending.source + ": object class " +
                          detail::in_quotes(pending.object_class->primary_name()) + ": " +
                          std::string(keyword) + " names unknown attribute type " +
                          detail::in_quotes(name));
      }
      append_unique(out, type);
    }
    return Status();
  }

  // Requires: every superior is resolved.
  Status resolve_object_class(PendingObjectClass& pending) {
    ObjectClass& object_class = *pending.object_class;
    const ObjectClassDescription& d = pending.description;
    for (const std::string& name : d.superiors) {
      const ObjectClass* superior = find_object_class(name);
      // RFC 4512 §2.4: abstract classes derive from abstract ones only; structural ones not
      // from auxiliary ones; auxiliary ones not from structural ones (slapd enforces the same).
      const bool allowed =
          superior->kind == ObjectClassKind::kAbstract ||
          (object_class.kind != ObjectClassKind::kAbstract && superior->kind == object_class.kind);
      if (!allowed) {
        return load_error(pending.source + ": " + std::string(kind_name(object_class.kind)) +
                          " object class " + detail::in_quotes(object_class.primary_name()) +
                          " cannot have the " + std::string(kind_name(superior->kind)) +
                          " superior " + detail::in_quotes(name));
      }
      append_unique(object_class.superiors, superior);
    }
    NUMADIR_RETURN_IF_ERROR(resolve_attribute_list(pending, d.must, "MUST", object_class.must));
    NUMADIR_RETURN_IF_ERROR(resolve_attribute_list(pending, d.may, "MAY", object_class.may));
    // The closure: own attributes first, then each superior's (already closed) sets.
    object_class.all_must = object_class.must;
    for (const ObjectClass* superior : object_class.superiors) {
      for (const AttributeType* type : superior->all_must) {
        append_unique(object_class.all_must, type);
      }
    }
    // A type both required and allowed is required (RFC 4512 §2.4).
    auto add_may = [&](const AttributeType* type) {
      if (std::find(object_class.all_must.begin(), object_class.all_must.end(), type) ==
          object_class.all_must.end()) {
        append_unique(object_class.all_may, type);
      }
    };
    std::for_each(object_class.may.begin(), object_class.may.end(), add_may);
    for (const ObjectClass* superior : object_class.superiors) {
      std::for_each(superior->all_may.begin(), superior->all_may.end(), add_may);
    }
    object_class.allowed = object_class.all_must;
    object_class.allowed.insert(object_class.allowed.end(), object_class.all_may.begin(),
                                object_class.all_may.end());
    std::sort(object_class.allowed.begin(), object_class.allowed.end(),
              std::less<const AttributeType*>());
    return Status();
  }

  OidMacros macros_;
  std::vector<PendingAttributeType> attribute_types_;
  std::vector<PendingObjectClass> object_classes_;
  std::vector<PendingSyntax> syntaxes_;
  std::unordered_map<const AttributeType*, std::size_t> attribute_type_position_;
  std::unordered_map<const ObjectClass*, std::size_t> object_class_position_;
  SchemaData* impl_ = nullptr;
};

}  // namespace

// ----- Loading -----

std::vector<std::filesystem::path> shipped_schema_files() {
  const std::filesystem::path dir(NUMADIR_SCHEMA_DIR);
  return {
      dir / "core.schema",          dir / "operational.schema", dir / "cosine.schema",
      dir / "inetorgperson.schema", dir / "nis.schema",
      dir / "ppolicy.schema",  // Password policy (server/operations/password_policy.h)
      dir / "monitor.schema",  // cn=Monitor (server/monitoring/monitor.h)
  };
}

Schema::Schema(std::unique_ptr<detail::SchemaData> impl) : impl_(std::move(impl)) {}
Schema::Schema(Schema&&) noexcept = default;
Schema& Schema::operator=(Schema&&) noexcept = default;
Schema::~Schema() = default;

Result<Schema> Schema::load(std::span<const std::filesystem::path> files) {
  SchemaBuilder builder;
  for (const std::filesystem::path& file : files) {
    NUMADIR_RETURN_IF_ERROR(builder.add_file(file));
  }
  auto impl = std::make_unique<detail::SchemaData>();
  NUMADIR_RETURN_IF_ERROR(builder.build(*impl));
  return Schema(std::move(impl));
}

Result<Schema> Schema::load_default(std::span<const std::filesystem::path> extra) {
  std::vector<std::filesystem::path> files = shipped_schema_files();
  files.insert(files.end(), extra.begin(), extra.end());
  return load(files);
}

Result<Schema> Schema::load_text(std::string_view text, std::string_view origin) {
  SchemaBuilder builder;
  NUMADIR_RETURN_IF_ERROR(builder.add_text(text, origin));
  auto impl = std::make_unique<detail::SchemaData>();
  NUMADIR_RETURN_IF_ERROR(builder.build(*impl));
  return Schema(std::move(impl));
}

// ----- Lookups -----

const AttributeType* Schema::attribute_type(std::string_view name_or_oid) const {
  const auto it = impl_->attribute_type_index.find(name_or_oid);
  return it == impl_->attribute_type_index.end() ? nullptr : it->second;
}

const ObjectClass* Schema::object_class(std::string_view name_or_oid) const {
  const auto it = impl_->object_class_index.find(name_or_oid);
  return it == impl_->object_class_index.end() ? nullptr : it->second;
}

std::span<const AttributeType* const> Schema::attribute_types() const {
  return impl_->attribute_types;
}

std::span<const ObjectClass* const> Schema::object_classes() const { return impl_->object_classes; }
}  // namespace numadir::schema
