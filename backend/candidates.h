// backend/candidates.h: candidate ids for a compiled filter from the attribute indexes. AND
// intersects its children's candidates, OR unions them, NOT (and anything without a usable,
// built index) stands for "every entry in scope". An objectClass equality item looks up the
// class and each of its subclasses (see CompiledNode::subclasses); (objectClass=*) stands for every
// entry in scope without an index (every entry has an objectClass). Items that can never be TRUE
// (an unknown attribute, an invalid assertion) have no candidates. Candidates are a superset of the
// matching entries: each one is still checked by full evaluation.
//
// Thread contract: runs on the thread that owns the read transaction behind `cursors`.
#pragma once

#include <string>
#include <vector>

#include "backend/attribute_index.h"
#include "backend/filter_eval.h"
#include "backend/lmdb_env.h"
#include "base/status.h"

namespace numadir::backend {

struct Candidates {
  bool all = true;  // No narrowing: scan the scope.
  IdList ids;       // When !all: sorted, unique.
};

// A filter item that found no usable index: the attribute's canonical name and the kind of
// index it needed (a presence item needs `pres` even where the attribute has `eq`).
struct UnindexedItem {
  std::string_view attribute;
  IndexKind kind = IndexKind::kEquality;
};

// Computes the candidates of `filter` in read transaction `txn_id` (only indexes built in its
// snapshot are used). `unindexed`, if given, receives each item that had no usable index.
// Errors: kStorage.
Status compute_candidates(const CompiledFilter& filter, const IndexSet& indexes,
                          CursorCache& cursors, std::uint64_t txn_id, Candidates* out,
                          std::vector<UnindexedItem>* unindexed);

}  // namespace numadir::backend
