// backend/directory_read.h: what a read of the directory asks and is given (SearchSpec and its
// Scope, EntryRef, SessionLogChanges): part of directory.h's face, apart so that the files
// behind a Directory (detail/directory_core.h, the writer's WriteView) take them without the
// Directory class.
//
// Thread contract: SearchSpec and SessionLogChanges are plain values of the thread that made
// them. An EntryRef is valid only during the callback it is passed to, on that callback's thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/entry.h"
#include "schema/filter.h"

namespace numadir::backend {

enum class Scope : std::uint8_t { kBase, kOneLevel, kSubtree, kChildren };

// Where a search's scan stood: the entry it was at (EntryRef::resume_point), for a search that
// stopped there to go on from it (SearchSpec::resume_at) rather than from the start.
struct SearchPoint {
  std::uint64_t id = 0;  // The entry's id (the order of index candidates and of children).
  std::string dn_key;    // Its dn key (the order of a subtree scan).
};

struct SearchSpec {
  std::string base;  // A DN (any spelling; normalized by the Directory).
  Scope scope = Scope::kSubtree;
  const schema::Filter* filter = nullptr;  // Required.
  std::uint64_t size_limit = 0;            // 0 = none.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Starts the scan at this entry, which a search of the same spec delivered (and is not past)
  // in the same snapshot: the entries before it in the scan's order are not visited again, so
  // a search that pauses and goes on (in a pinned snapshot: Directory::pin_snapshot) costs what
  // it delivers, not what it delivered before too. Requires: that search's resume_point().
  std::optional<SearchPoint> resume_at;
};

// One search result, valid only during the callback (it may point into LMDB memory).
class EntryRef {
 public:
  virtual ~EntryRef() = default;
  virtual std::string_view dn() const = 0;  // As stored (the spelling it was added with).
  // Writes the normalized DN (schema::Dn::normalized with the directory's DN normalizer) to
  // `out` and returns true; false when this reference cannot tell it without normalizing dn()
  // (the default, for test fakes). The backend's references take it from the stored dn key.
  virtual bool normalized_dn(std::string& /*out*/) const { return false; }
  // Decodes the whole entry, operational attributes (stored and computed: hasSubordinates,
  // numSubordinates, subschemaSubentry, entryDN) included.
  virtual schema::Entry materialize() const = 0;
  // Returns: where the search delivering this entry stands, for SearchSpec::resume_at to start
  // a search again at this entry; nullopt when this reference cannot tell (the default, for
  // test fakes: then a search goes on by skipping what it was delivered before).
  virtual std::optional<SearchPoint> resume_point() const { return std::nullopt; }
  // Returns: the stored values of `description` (a type name or OID, optionally with options;
  // values of its subtypes included), in place: views valid only during the callback. Empty
  // for an unknown type or an absent attribute. (Added by the backend for bind: reading
  // userPassword this way decodes nothing else. The default is for test fakes.)
  // values_into() writes them to `out` (replacing its contents, keeping its capacity).
  std::vector<std::string_view> values(std::string_view description) const {
    std::vector<std::string_view> out;
    values_into(description, out);
    return out;
  }
  virtual void values_into(std::string_view description, std::vector<std::string_view>& out) const {
    (void)description;
    out.clear();
  }
  // As values_into for each of `types` (attribute type names or OIDs, without options) into the
  // vector of `out` at the same position, in one pass over the entry. Requires: `out` has at
  // least as many vectors as `types`. (The default calls values_into for each.)
  virtual void values_of_types(std::span<const std::string_view> types,
                               std::span<std::vector<std::string_view>> out) const {
    for (std::size_t i = 0; i < types.size(); ++i) {
      values_into(types[i], out[i]);
    }
  }
};

// What the session log knows of the changes committed after a CSN
// (Directory::session_log_since).
struct SessionLogChanges {
  // True when the log holds a record of every change committed after the CSN asked for:
  // then every entry added, modified or renamed since carries a greater entryCSN, and
  // `deleted` lists every entry deleted since. False when the log is off, or some of those
  // changes were trimmed from it (or happened before it began).
  bool covered = false;
  // Covered only: the entryUUIDs (string form) of the entries deleted after the CSN, in
  // commit order (an entry added and deleted since is listed too).
  std::vector<std::string> deleted;
  // Covered only: the entryUUIDs of the entries added, modified or renamed after the CSN and
  // not deleted after that, each once, in the order of its last such change (an entry can
  // be found by them, through an eq index on entryUUID, without a scan for entryCSN).
  std::vector<std::string> changed;
};

}  // namespace numadir::backend
