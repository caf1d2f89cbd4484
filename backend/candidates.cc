// backend/candidates.cc: index candidates for filters.
#include "backend/candidates.h"

#include <algorithm>

namespace numadir::backend {
namespace {

using schema::FilterKind;

// The 3-byte windows of a piece used for lookups: non-overlapping ones from the start, plus the
// last one. Enough to narrow well without a lookup per byte.
std::vector<std::string> piece_grams(std::string_view piece) {
  std::vector<std::string> grams;
  if (piece.size() < kSubstringGram) {
    return grams;
  }
  for (std::size_t i = 0; i + kSubstringGram <= piece.size(); i += kSubstringGram) {
    grams.push_back(kSubAny + std::string(piece.substr(i, kSubstringGram)));
  }
  grams.push_back(kSubAny + std::string(piece.substr(piece.size() - kSubstringGram)));
  return grams;
}

class Planner {
 public:
  Planner(const CompiledFilter& filter, const IndexSet& indexes, CursorCache& cursors,
          std::uint64_t txn_id, std::vector<UnindexedItem>* unindexed)
      : filter_(filter),
        indexes_(indexes),
        cursors_(cursors),
        txn_id_(txn_id),
        unindexed_(unindexed) {}

  Status plan(std::uint32_t index, Candidates* out) {
    const CompiledNode& node = filter_.node(index);
    switch (node.kind) {
      case FilterKind::kAnd:
        return plan_and(index, out);
      case FilterKind::kOr:
        return plan_or(index, out);
      case FilterKind::kNot:
        out->all = true;
        return Status();
      default:
        return plan_item(node, out);
    }
  }

 private:
  Status plan_and(std::uint32_t index, Candidates* out) {
    const CompiledNode& node = filter_.node(index);
    out->all = true;
    out->ids.clear();
    for (std::uint32_t c = index + 1; c < node.end; c = filter_.node(c).end) {
      Candidates child;
      NUMADIR_RETURN_IF_ERROR(plan(c, &child));
      if (child.all) {
        continue;
      }
      if (out->all) {
        out->all = false;
        out->ids.swap(child.ids);
      } else {
        intersect_ids(out->ids, child.ids);
      }
      if (out->ids.empty()) {
        return Status();
      }
    }
    return Status();
  }

  Status plan_or(std::uint32_t index, Candidates* out) {
    const CompiledNode& node = filter_.node(index);
    out->all = false;
    out->ids.clear();
    for (std::uint32_t c = index + 1; c < node.end; c = filter_.node(c).end) {
      Candidates child;
      NUMADIR_RETURN_IF_ERROR(plan(c, &child));
      if (child.all) {
        out->all = true;
        out->ids.clear();
        return Status();
      }
      union_ids(out->ids, child.ids);
    }
    return Status();
  }

  // Marks `out` as unnarrowed because `node`'s attribute has no usable index of `kind`.
  Status unindexed(const CompiledNode& node, IndexKind kind, Candidates* out) {
    out->all = true;
    if (unindexed_ != nullptr && node.attribute != nullptr &&
        node.computed == ComputedAttribute::kNone) {
      unindexed_->push_back({node.attribute->name, kind});
    }
    return Status();
  }

  Result<Cursor*> cursor(int slot) { return cursors_.get(indexes_.index(slot).dbi); }

  Status plan_item(const CompiledNode& node, Candidates* out) {
    out->ids.clear();
    if (node.constant) {
      // Never TRUE (compilation only folds items to FALSE or Undefined).
      out->all = node.constant_value == Tri::kTrue;
      return Status();
    }
    if (node.kind == FilterKind::kExtensible || node.computed != ComputedAttribute::kNone ||
        node.attribute == nullptr) {
      out->all = true;
      return Status();
    }
    IndexKind kind = IndexKind::kEquality;
    switch (node.kind) {
      case FilterKind::kPresent:
        if (node.attribute == filter_.catalog().object_class() && node.options.empty()) {
          // Every entry has an objectClass (the schema check sees to it): (objectClass=*),
          // ldapsearch's default filter, is "every entry in scope", as in slapd. A presence
          // index would list every id only to have them read one by one instead of a scan,
          // and its absence is nothing to note.
          out->all = true;
          return Status();
        }
        kind = IndexKind::kPresence;
        break;
      case FilterKind::kSubstrings:
        kind = IndexKind::kSubstrings;
        break;
      case FilterKind::kGreaterOrEqual:
      case FilterKind::kLessOrEqual:
        kind = IndexKind::kOrdering;
        break;
      default:
        break;
    }
    const int slot = indexes_.find_usable(*node.attribute, kind, node.rule, txn_id_);
    if (slot < 0) {
      return unindexed(node, kind, out);
    }
    Result<Cursor*> c = cursor(slot);
    if (!c.ok()) {
      return c.status();
    }
    out->all = false;
    switch (node.kind) {
      case FilterKind::kPresent:
        return ids_for_key(**c, kPresenceKey, &out->ids);
      case FilterKind::kGreaterOrEqual: {
        const std::string lower = index_key(kind, node.assertion);
        return ids_for_range(**c, &lower, nullptr, &out->ids);
      }
      case FilterKind::kLessOrEqual: {
        const std::string upper = index_key(kind, node.assertion);
        return ids_for_range(**c, nullptr, &upper, &out->ids);
      }
      case FilterKind::kSubstrings:
        return plan_substrings(node, **c, out);
      default:
        NUMADIR_RETURN_IF_ERROR(ids_for_key(**c, index_key(kind, node.assertion), &out->ids));
        // An objectClass item matches entries of the class's subclasses too, and those are
        // indexed under their own classes' keys.
        IdList more;
        for (std::string_view subclass : node.subclasses) {
          more.clear();
          NUMADIR_RETURN_IF_ERROR(ids_for_key(**c, index_key(kind, subclass), &more));
          if (!more.empty()) {
            union_ids(out->ids, more);
          }
        }
        return Status();
    }
  }

  Status plan_substrings(const CompiledNode& node, Cursor& cursor, Candidates* out) {
    bool narrowed = false;
    IdList ids;
    auto narrow = [&](IdList& more) {
      if (!narrowed) {
        out->ids.swap(more);
        narrowed = true;
      } else {
        intersect_ids(out->ids, more);
      }
    };
    auto lookup = [&](const std::string& key) -> Status {
      ids.clear();
      NUMADIR_RETURN_IF_ERROR(ids_for_key(cursor, key, &ids));
      narrow(ids);
      return Status();
    };
    if (node.has_initial && !node.initial.empty()) {
      const std::string_view piece = node.initial;
      if (piece.size() >= kSubstringGram) {
        NUMADIR_RETURN_IF_ERROR(lookup(kSubInitial + std::string(piece.substr(0, kSubstringGram))));
      } else {
        ids.clear();
        NUMADIR_RETURN_IF_ERROR(ids_for_prefix(cursor, kSubInitial + std::string(piece), &ids));
        narrow(ids);
      }
    }
    if (node.has_final && node.final_piece.size() >= kSubstringGram) {
      const std::string_view piece = node.final_piece;
      NUMADIR_RETURN_IF_ERROR(
          lookup(kSubFinal + std::string(piece.substr(piece.size() - kSubstringGram))));
    }
    std::vector<std::string_view> pieces(node.any.begin(), node.any.end());
    if (node.has_initial) {
      pieces.push_back(node.initial);
    }
    if (node.has_final) {
      pieces.push_back(node.final_piece);
    }
    for (std::string_view piece : pieces) {
      for (const std::string& gram : piece_grams(piece)) {
        if (narrowed && out->ids.empty()) {
          return Status();
        }
        NUMADIR_RETURN_IF_ERROR(lookup(gram));
      }
    }
    if (!narrowed) {
      out->all = true;  // Every piece under 3 bytes and no usable initial: scan.
      out->ids.clear();
    }
    return Status();
  }

  const CompiledFilter& filter_;
  const IndexSet& indexes_;
  CursorCache& cursors_;
  std::uint64_t txn_id_;
  std::vector<UnindexedItem>* unindexed_;
};

}  // namespace

Status compute_candidates(const CompiledFilter& filter, const IndexSet& indexes,
                          CursorCache& cursors, std::uint64_t txn_id, Candidates* out,
                          std::vector<UnindexedItem>* unindexed) {
  out->all = true;
  out->ids.clear();
  if (filter.nodes().empty()) {
    return Status();
  }
  return Planner(filter, indexes, cursors, txn_id, unindexed).plan(0, out);
}

}  // namespace numadir::backend
