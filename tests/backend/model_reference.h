// tests/backend/model_reference.h: a straightforward in-memory reference of the directory for
// the randomized model test: a std::map of normalized DN -> entry (user attributes only), the
// update rules written out plainly, and its own recursive filter evaluation with the schema's
// matching rules. Nothing here uses backend code.
//
// Thread contract: test-thread only.
#pragma once

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "backend/directory.h"
#include "schema/dn.h"
#include "schema/filter.h"
#include "schema/matching_rule.h"
#include "schema/object_class.h"
#include "schema/schema.h"
#include "schema/syntax.h"

namespace numadir::backend::testing {

enum class Tv { kFalse, kTrue, kUndefined };

class Reference {
 public:
  // LMDB's default key size limit, which bounds the length of a normalized DN.
  static constexpr std::size_t kMaxKeyBytes = 511;

  struct RefEntry {
    std::string dn;                             // Stored spelling.
    std::vector<std::string> nrdns;             // Normalized RDNs, leftmost first.
    std::vector<schema::EntryAttribute> attrs;  // User attributes, canonical descriptions.
  };

  Reference(const schema::Schema& schema, std::string_view suffix)
      : schema_(schema), normalizer_(schema) {
    suffix_ = *nrdns_of(suffix);
  }

  const std::map<std::string, RefEntry>& entries() const { return entries_; }

  // The normalized key of `dn`, or nullopt if it does not parse.
  std::optional<std::string> key_of(std::string_view dn) const {
    auto rdns = nrdns_of(dn);
    if (!rdns) {
      return std::nullopt;
    }
    return join(*rdns, 0);
  }

  StatusCode add(const schema::Entry& entry) {
    auto rdns = nrdns_of(entry.dn);
    if (!rdns) {
      return StatusCode::kInvalidDnSyntax;
    }
    if (!in_suffix(*rdns)) {
      return StatusCode::kNoSuchObject;
    }
    RefEntry stored{entry.dn, *rdns, {}};
    for (const auto& attribute : entry.attributes) {
      auto description = canonical(attribute.description);
      if (!description) {
        return StatusCode::kUndefinedAttributeType;
      }
      for (const auto& seen : stored.attrs) {
        if (seen.description == *description) {
          return StatusCode::kAttributeOrValueExists;
        }
      }
      stored.attrs.push_back({*description, attribute.values});
    }
    for (const auto& attribute : stored.attrs) {
      if (type_of(attribute.description)->no_user_modification) {
        return StatusCode::kConstraintViolation;
      }
    }
    if (Status status = schema_.check_entry(as_entry(stored)); !status.ok()) {
      return status.code();
    }
    const std::string key = join(*rdns, 0);
    if (entries_.count(key) != 0) {
      return StatusCode::kEntryAlreadyExists;
    }
    if (rdns->size() > suffix_.size() && entries_.count(join(*rdns, 1)) == 0) {
      return StatusCode::kNoSuchObject;
    }
    if (key.size() > kMaxKeyBytes) {
      return StatusCode::kUnwillingToPerform;  // The dn2id key would not fit LMDB's key limit.
    }
    entries_[key] = std::move(stored);
    return StatusCode::kOk;
  }

  StatusCode remove(std::string_view dn) {
    auto key = key_of(dn);
    if (!key) {
      return StatusCode::kInvalidDnSyntax;
    }
    if (entries_.count(*key) == 0) {
      return StatusCode::kNoSuchObject;
    }
    if (has_children(*key)) {
      return StatusCode::kNotAllowedOnNonLeaf;
    }
    entries_.erase(*key);
    return StatusCode::kOk;
  }

  StatusCode modify(std::string_view dn, const std::vector<Modification>& mods) {
    auto key = key_of(dn);
    if (!key) {
      return StatusCode::kInvalidDnSyntax;
    }
    auto it = entries_.find(*key);
    if (it == entries_.end()) {
      return StatusCode::kNoSuchObject;
    }
    RefEntry changed = it->second;
    for (const Modification& mod : mods) {
      if (StatusCode code = apply(mod, changed.attrs); code != StatusCode::kOk) {
        return code;
      }
    }
    const schema::Dn parsed = *schema::Dn::parse(changed.dn);
    for (const schema::Ava& ava : parsed.rdn(0)) {
      const schema::AttributeType* type = schema_.attribute_type(ava.type);
      if (!has_value(changed.attrs, std::string(type->primary_name()), *type, ava.value)) {
        return StatusCode::kNotAllowedOnRdn;
      }
    }
    const auto* before = schema_.structural_class(as_entry(it->second));
    const auto* after = schema_.structural_class(as_entry(changed));
    if (before != nullptr && after != nullptr && before != after) {
      return StatusCode::kObjectClassModsProhibited;
    }
    if (Status status = schema_.check_entry(as_entry(changed)); !status.ok()) {
      return status.code();
    }
    it->second = std::move(changed);
    return StatusCode::kOk;
  }

  StatusCode rename(std::string_view dn, std::string_view new_rdn, bool delete_old,
                    std::optional<std::string_view> superior) {
    auto key = key_of(dn);
    auto rdn = schema::Dn::parse(new_rdn);
    if (!key || !rdn.ok() || rdn->rdn_count() != 1) {
      return StatusCode::kInvalidDnSyntax;
    }
    std::optional<std::vector<std::string>> superior_rdns;
    if (superior) {
      superior_rdns = nrdns_of(*superior);
      if (!superior_rdns) {
        return StatusCode::kInvalidDnSyntax;
      }
    }
    auto it = entries_.find(*key);
    if (it == entries_.end()) {
      return StatusCode::kNoSuchObject;
    }
    const RefEntry& old = it->second;
    if (old.nrdns.size() == suffix_.size()) {
      return StatusCode::kUnwillingToPerform;
    }
    std::vector<std::string> parent(old.nrdns.begin() + 1, old.nrdns.end());
    if (superior_rdns) {
      if (!in_suffix(*superior_rdns) || entries_.count(join(*superior_rdns, 0)) == 0) {
        return StatusCode::kNoSuchObject;
      }
      if (is_within(*superior_rdns, old.nrdns)) {
        return StatusCode::kUnwillingToPerform;
      }
      parent = *superior_rdns;
    }
    const RefEntry& parent_entry = entries_.at(join(parent, 0));
    std::vector<std::string> new_rdns{rdn_key(*rdn, 0)};
    new_rdns.insert(new_rdns.end(), parent.begin(), parent.end());
    const std::string new_key = join(new_rdns, 0);
    if (new_key != *key && entries_.count(new_key) != 0) {
      return StatusCode::kEntryAlreadyExists;
    }
    RefEntry moved = old;
    for (const schema::Ava& ava : rdn->rdn(0)) {
      const schema::AttributeType* type = schema_.attribute_type(ava.type);
      if (type == nullptr) {
        return StatusCode::kUndefinedAttributeType;
      }
      if (type->no_user_modification) {
        return StatusCode::kConstraintViolation;
      }
      const std::string name(type->primary_name());
      if (!has_value(moved.attrs, name, *type, ava.value)) {
        auto attribute = find(moved.attrs, name);
        if (attribute == moved.attrs.end()) {
          moved.attrs.push_back({name, {}});
          attribute = moved.attrs.end() - 1;
        }
        attribute->values.emplace_back(ava.value);
      }
    }
    const schema::Dn old_dn = *schema::Dn::parse(old.dn);
    if (delete_old) {
      for (const schema::Ava& ava : old_dn.rdn(0)) {
        const schema::AttributeType* type = schema_.attribute_type(ava.type);
        bool kept = false;
        for (const schema::Ava& new_ava : rdn->rdn(0)) {
          kept = kept || (schema_.attribute_type(new_ava.type) == type &&
                          same_value(*type, ava.value, new_ava.value));
        }
        if (!kept) {
          remove_value(moved.attrs, std::string(type->primary_name()), *type, ava.value);
        }
      }
    }
    moved.dn = rdn->rdn_string(0) + "," + parent_entry.dn;
    moved.nrdns = new_rdns;
    if (Status status = schema_.check_entry(as_entry(moved)); !status.ok()) {
      return status.code();
    }
    const auto* before = schema_.structural_class(as_entry(old));
    if (before != nullptr && schema_.structural_class(as_entry(moved)) != before) {
      return StatusCode::kObjectClassModsProhibited;
    }
    // Move the entry and its subtree, unless a key gets too long.
    const std::vector<std::string> old_rdns = old.nrdns;
    const std::size_t growth = new_key.size() - std::min(new_key.size(), key->size());
    for (const auto& [other_key, other] : entries_) {
      if (is_within(other.nrdns, old_rdns) && other_key.size() + growth > kMaxKeyBytes) {
        return StatusCode::kUnwillingToPerform;
      }
    }
    std::vector<RefEntry> subtree;
    for (auto e = entries_.begin(); e != entries_.end();) {
      if (e->first != *key && is_within(e->second.nrdns, old_rdns)) {
        RefEntry child = e->second;
        const std::size_t own = child.nrdns.size() - old_rdns.size();
        const schema::Dn child_dn = *schema::Dn::parse(child.dn);
        std::string text;
        for (std::size_t i = 0; i < own; ++i) {
          text += child_dn.rdn_string(i) + ",";
        }
        child.dn = text + moved.dn;
        child.nrdns.resize(own);
        child.nrdns.insert(child.nrdns.end(), new_rdns.begin(), new_rdns.end());
        subtree.push_back(std::move(child));
        e = entries_.erase(e);
      } else {
        ++e;
      }
    }
    entries_.erase(*key);
    entries_[new_key] = std::move(moved);
    for (RefEntry& child : subtree) {
      entries_[join(child.nrdns, 0)] = std::move(child);
    }
    return StatusCode::kOk;
  }

  // The keys of the entries matching `filter` in scope; the status is kNoSuchObject with the
  // matched DN when the base is missing.
  Status search(std::string_view base, Scope scope, const schema::Filter& filter,
                std::set<std::string>* keys) const {
    auto base_rdns = nrdns_of(base);
    if (!base_rdns) {
      return Status(StatusCode::kInvalidDnSyntax, "");
    }
    if (!in_suffix(*base_rdns)) {
      return Status(StatusCode::kNoSuchObject, "");
    }
    if (entries_.count(join(*base_rdns, 0)) == 0) {
      for (std::size_t skip = 1; skip < base_rdns->size(); ++skip) {
        auto ancestor = entries_.find(join(*base_rdns, skip));
        if (ancestor != entries_.end()) {
          return Status(StatusCode::kNoSuchObject, ancestor->second.dn);
        }
      }
      return Status(StatusCode::kNoSuchObject, "");
    }
    for (const auto& [key, entry] : entries_) {
      const std::size_t depth = entry.nrdns.size();
      const std::size_t base_depth = base_rdns->size();
      bool in_scope = is_within(entry.nrdns, *base_rdns);
      if (scope == Scope::kBase) {
        in_scope = in_scope && depth == base_depth;
      } else if (scope == Scope::kOneLevel) {
        in_scope = in_scope && depth == base_depth + 1;
      } else if (scope == Scope::kChildren) {
        in_scope = in_scope && depth > base_depth;
      }
      if (in_scope && eval(filter, 0, key, entry) == Tv::kTrue) {
        keys->insert(key);
      }
    }
    return Status();
  }

  // Canonical description: the primary name, options lower-cased, sorted and unique.
  std::optional<std::string> canonical(std::string_view description) const {
    const std::size_t semi = description.find(';');
    const schema::AttributeType* type = schema_.attribute_type(description.substr(0, semi));
    if (type == nullptr) {
      return std::nullopt;
    }
    std::string out(type->primary_name());
    std::set<std::string> options;
    while (semi != std::string_view::npos && !description.empty()) {
      description.remove_prefix(description.find(';') + 1);
      std::string option(description.substr(0, description.find(';')));
      std::transform(option.begin(), option.end(), option.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      options.insert(option);
      if (description.find(';') == std::string_view::npos) {
        break;
      }
    }
    for (const std::string& option : options) {
      out += ";" + option;
    }
    return out;
  }

 private:
  class Normalizer : public schema::DnValueNormalizer {
   public:
    explicit Normalizer(const schema::Schema& schema) : schema_(schema) {}
    std::string normalize_type(std::string_view type) const override {
      const schema::AttributeType* t = schema_.attribute_type(type);
      if (t == nullptr) {
        return DnValueNormalizer::normalize_type(type);
      }
      std::string out(t->primary_name());
      std::transform(out.begin(), out.end(), out.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return out;
    }
    std::string normalize(std::string_view type, std::string_view value) const override {
      const schema::AttributeType* t = schema_.attribute_type(type);
      std::string out;
      if (t != nullptr && t->equality != nullptr && t->equality->normalize(value, out)) {
        return out;
      }
      // Dn's default rule: spaces trimmed and collapsed, ASCII case folded.
      std::string folded;
      for (const char c : value) {
        if (c == ' ' && (folded.empty() || folded.back() == ' ')) {
          continue;
        }
        folded.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      }
      while (!folded.empty() && folded.back() == ' ') {
        folded.pop_back();
      }
      return folded;
    }

   private:
    const schema::Schema& schema_;
  };

  using Attrs = std::vector<schema::EntryAttribute>;

  static std::string join(const std::vector<std::string>& rdns, std::size_t skip) {
    std::string out;
    for (std::size_t i = skip; i < rdns.size(); ++i) {
      out += (i > skip ? "," : "") + rdns[i];
    }
    return out;
  }

  std::string rdn_key(const schema::Dn& dn, std::size_t i) const {
    return schema::Dn::parse(dn.rdn_string(i)).value().normalized(&normalizer_);
  }

  std::optional<std::vector<std::string>> nrdns_of(std::string_view text) const {
    auto dn = schema::Dn::parse(text);
    if (!dn.ok()) {
      return std::nullopt;
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < dn->rdn_count(); ++i) {
      out.push_back(rdn_key(*dn, i));
    }
    return out;
  }

  // True if `rdns` is `base` or below it.
  static bool is_within(const std::vector<std::string>& rdns,
                        const std::vector<std::string>& base) {
    return rdns.size() >= base.size() &&
           std::equal(base.begin(), base.end(), rdns.end() - static_cast<long>(base.size()));
  }
  bool in_suffix(const std::vector<std::string>& rdns) const { return is_within(rdns, suffix_); }

  bool has_children(const std::string& key) const {
    const RefEntry& entry = entries_.at(key);
    for (const auto& [other_key, other] : entries_) {
      if (other.nrdns.size() == entry.nrdns.size() + 1 && is_within(other.nrdns, entry.nrdns)) {
        return true;
      }
    }
    return false;
  }

  const schema::AttributeType* type_of(std::string_view description) const {
    return schema_.attribute_type(description.substr(0, description.find(';')));
  }

  static schema::Entry as_entry(const RefEntry& entry) {
    return schema::Entry{entry.dn, entry.attrs};
  }

  static Attrs::iterator find(Attrs& attrs, const std::string& description) {
    return std::find_if(attrs.begin(), attrs.end(),
                        [&](const auto& a) { return a.description == description; });
  }

  bool norm(const schema::AttributeType& type, std::string_view value, std::string& out) const {
    return norm_rule(type.equality, value, out);
  }
  bool norm_rule(const schema::MatchingRule* rule, std::string_view value, std::string& out) const {
    if (rule == nullptr) {
      out.assign(value);
      return true;
    }
    if (rule->oid == "2.5.13.0") {
      if (const auto* oc = schema_.object_class(value)) {
        out = oc->oid;
        return true;
      }
      if (const auto* at = schema_.attribute_type(value)) {
        out = at->oid;
        return true;
      }
    }
    return rule->normalize(value, out);
  }
  bool same_value(const schema::AttributeType& type, std::string_view a, std::string_view b) const {
    std::string x;
    std::string y;
    return norm(type, a, x) && norm(type, b, y) && x == y;
  }
  int index_of(const std::vector<std::string>& values, const schema::AttributeType& type,
               std::string_view value) const {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (same_value(type, values[i], value)) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }
  bool has_value(Attrs& attrs, const std::string& description, const schema::AttributeType& type,
                 std::string_view value) const {
    auto it = find(attrs, description);
    return it != attrs.end() && index_of(it->values, type, value) >= 0;
  }
  void remove_value(Attrs& attrs, const std::string& description, const schema::AttributeType& type,
                    std::string_view value) const {
    auto it = find(attrs, description);
    if (it == attrs.end()) {
      return;
    }
    const int i = index_of(it->values, type, value);
    if (i >= 0) {
      it->values.erase(it->values.begin() + i);
    }
    if (it->values.empty()) {
      attrs.erase(it);
    }
  }

  StatusCode apply(const Modification& mod, Attrs& attrs) const {
    auto description = canonical(mod.description);
    if (!description) {
      return StatusCode::kUndefinedAttributeType;
    }
    const schema::AttributeType& type = *type_of(*description);
    if (type.no_user_modification) {
      return StatusCode::kConstraintViolation;
    }
    auto it = find(attrs, *description);
    std::string scratch;
    switch (mod.kind) {
      case ModificationKind::kAdd:
        if (mod.values.empty()) {
          return StatusCode::kMalformed;
        }
        if (it == attrs.end()) {
          attrs.push_back({*description, {}});
          it = attrs.end() - 1;
        }
        for (const std::string& value : mod.values) {
          if (!norm(type, value, scratch)) {
            return StatusCode::kInvalidAttributeSyntax;
          }
          if (index_of(it->values, type, value) >= 0) {
            return StatusCode::kAttributeOrValueExists;
          }
          it->values.push_back(value);
        }
        return StatusCode::kOk;
      case ModificationKind::kDelete:
        if (it == attrs.end()) {
          return StatusCode::kNoSuchAttribute;
        }
        if (mod.values.empty()) {
          attrs.erase(it);
          return StatusCode::kOk;
        }
        for (const std::string& value : mod.values) {
          const int i = index_of(it->values, type, value);
          if (i < 0) {
            return StatusCode::kNoSuchAttribute;
          }
          it->values.erase(it->values.begin() + i);
        }
        if (it->values.empty()) {
          attrs.erase(it);
        }
        return StatusCode::kOk;
      case ModificationKind::kReplace:
        if (mod.values.empty()) {
          if (it != attrs.end()) {
            attrs.erase(it);
          }
        } else if (it == attrs.end()) {
          attrs.push_back({*description, mod.values});
        } else {
          it->values = mod.values;
        }
        return StatusCode::kOk;
      case ModificationKind::kIncrement: {
        if (type.equality == nullptr || type.equality->name != "integerMatch" ||
            mod.values.size() != 1) {
          return StatusCode::kConstraintViolation;
        }
        long long delta = 0;
        const std::string& d = mod.values[0];
        if (d.empty() || d[0] == '+' ||
            std::from_chars(d.data(), d.data() + d.size(), delta).ptr != d.data() + d.size()) {
          return StatusCode::kInvalidAttributeSyntax;
        }
        if (it == attrs.end()) {
          return StatusCode::kNoSuchAttribute;
        }
        for (std::string& value : it->values) {
          value = std::to_string(std::stoll(value) + delta);
        }
        return StatusCode::kOk;
      }
    }
    return StatusCode::kInternal;
  }

  // Filter evaluation (model_reference_filter.h).
  std::vector<std::string> values_for(const RefEntry& entry, const std::string& key,
                                      const schema::AttributeType& type,
                                      std::string_view options) const;
  Tv eval(const schema::Filter& filter, std::uint32_t i, const std::string& key,
          const RefEntry& entry) const;
  Tv eval_item(const schema::Filter& filter, std::uint32_t i, const std::string& key,
               const RefEntry& entry) const;
  bool usable(const schema::MatchingRule* rule, const schema::AttributeType& type) const;
  Tv eval_extensible(const schema::FilterNode& node, const schema::AttributeType* type,
                     const std::string& options, const std::string& key,
                     const RefEntry& entry) const;

  const schema::Schema& schema_;
  Normalizer normalizer_;
  std::vector<std::string> suffix_;
  std::map<std::string, RefEntry> entries_;
};

}  // namespace numadir::backend::testing

#include "tests/backend/model_reference_filter.h"  // IWYU pragma: export
