// backend/search.cc: get and search: base lookup, candidates, scope scans, evaluation and
// streaming of EntryRefs that view LMDB memory.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "backend/candidates.h"
#include "backend/detail/directory_core.h"

namespace numadir::backend::detail {
namespace {

// A result entry: views the stored record; materialize() decodes it in full.
class StoredEntryRef : public EntryRef {
 public:
  StoredEntryRef(const DirectoryCore& core, CursorCache& cursors, EntryId id, const EntryView& view)
      : core_(core), cursors_(cursors), id_(id), view_(view) {}
  std::string_view dn() const override { return view_.dn(); }
  bool normalized_dn(std::string& out) const override {
    normalized_dn_from_key(view_.dn_key(), out);
    return true;
  }
  std::optional<SearchPoint> resume_point() const override {
    return SearchPoint{id_, std::string(view_.dn_key())};
  }
  schema::Entry materialize() const override {
    schema::Entry entry;
    if (Status status = materialize_entry(core_, cursors_, id_, view_, &entry); !status.ok()) {
      // The view parsed when it was read, so only a corrupt attribute area gets here; the
      // interface has no error path, so deliver what decoded.
      std::fprintf(stderr, "numadir: %s: %s\n", std::string(view_.dn()).c_str(),
                   status.to_string().c_str());
    }
    return entry;
  }
  void values_into(std::string_view description,
                   std::vector<std::string_view>& out) const override {
    out.clear();
    const AttributeInfo* info = nullptr;
    std::string canonical_options;  // The common case (no options) resolves without a copy.
    if (description.find(';') == std::string_view::npos) {
      info = core_.catalog.resolve(description);
    } else if (Result<std::string> canonical = core_.catalog.canonical_description(description);
               canonical.ok()) {
      info = core_.catalog.by_canonical(description_type(*canonical));
      canonical_options.assign(description_options(*canonical));
    }
    if (info == nullptr) {
      return;
    }
    const std::string_view options = canonical_options;
    AttributeReader reader = view_.attributes();
    AttributeView attribute;
    while (reader.next_of(info->subtype_names, &attribute)) {
      if (options_cover(description_options(attribute.description), options)) {
        std::string_view value;
        while (attribute.values.next(&value)) {
          out.push_back(value);
        }
      }
    }
  }
  void values_of_types(std::span<const std::string_view> types,
                       std::span<std::vector<std::string_view>> out) const override {
    // At most this many types in one pass (the password policy reads ten); more go one by one.
    constexpr std::size_t kMaxTypes = 16;
    if (types.size() > kMaxTypes) {
      EntryRef::values_of_types(types, out);
      return;
    }
    const AttributeInfo* infos[kMaxTypes];
    for (std::size_t i = 0; i < types.size(); ++i) {
      out[i].clear();
      infos[i] = core_.catalog.resolve(types[i]);
    }
    AttributeReader reader = view_.attributes();
    AttributeView attribute;
    while (reader.next(&attribute)) {
      for (std::size_t i = 0; i < types.size(); ++i) {
        if (infos[i] == nullptr || !infos[i]->covers(attribute.type) ||
            !options_cover(description_options(attribute.description), "")) {
          continue;
        }
        std::string_view value;
        AttributeView copy = attribute;
        while (copy.values.next(&value)) {
          out[i].push_back(value);
        }
      }
    }
  }

 private:
  const DirectoryCore& core_;
  CursorCache& cursors_;
  EntryId id_;
  const EntryView& view_;
};

class Searcher {
 public:
  Searcher(const DirectoryCore& core, ReadState& state, const SearchSpec& spec,
           const std::function<bool(const EntryRef&)>& on_entry)
      : core_(core), state_(state), spec_(spec), on_entry_(on_entry) {}

  Status run() {
    if (spec_.base != state_.last_base || state_.last_base.empty()) {
      Result<std::string> base_key = dn_key_of(spec_.base, core_.normalizer);
      if (!base_key.ok()) {
        return base_key.status();
      }
      state_.last_base = spec_.base;
      state_.last_base_key = std::move(*base_key);
      state_.last_base_id = 0;
    }
    base_key_ = state_.last_base_key;
    if (!key_in_subtree(base_key_, core_.suffix_key)) {
      return Status(StatusCode::kNoSuchObject, "");
    }
    const std::uint64_t snapshot = txn_id(state_.txn);
    Result<EntryId> base_id = state_.last_base_id != 0 && state_.last_base_txn == snapshot
                                  ? Result<EntryId>(state_.last_base_id)
                                  : core_.dns.find(state_.txn, base_key_);
    if (!base_id.ok()) {
      return base_id.status();
    }
    state_.last_base_id = *base_id;
    state_.last_base_txn = snapshot;
    if (*base_id == 0) {
      Result<std::string> matched = matched_dn(core_, state_.txn, base_key_);
      if (!matched.ok()) {
        return matched.status();
      }
      return Status(StatusCode::kNoSuchObject, std::move(*matched));
    }
    base_id_ = *base_id;
    state_.filter.compile(*spec_.filter, core_.catalog, core_.op_types);

    if (spec_.scope == Scope::kBase) {
      Result<bool> stop = visit(base_id_, nullptr);
      return stop.ok() ? finish_status_ : stop.status();
    }
    Candidates candidates;
    candidates.ids.swap(state_.candidates);  // Reuse the capacity of earlier searches.
    std::vector<UnindexedItem> unindexed;
    Status status = compute_candidates(state_.filter, core_.indexes, state_.cursors, snapshot,
                                       &candidates, &unindexed);
    if (candidates.all) {  // Only a scan is worth a note; a narrowed AND is fine.
      for (const UnindexedItem& item : unindexed) {
        note_unindexed(core_, item);
      }
    }
    if (status.ok()) {
      status = candidates.all ? scan_scope() : scan_candidates(candidates.ids);
    }
    state_.candidates.swap(candidates.ids);
    return status.ok() ? finish_status_ : status;
  }

 private:
  // Checks the deadline every few entries (a clock read per entry would show on the hot path).
  bool past_deadline() {
    if (!spec_.deadline.has_value() || (++visited_ & 15) != 1) {
      return false;
    }
    return std::chrono::steady_clock::now() >= *spec_.deadline;
  }

  // Evaluates and delivers one entry. `view`, if given, is the entry already read.
  // Returns: true to go on, false to stop (finish_status_ says why).
  Result<bool> visit(EntryId id, const EntryView* view) {
    if (past_deadline()) {
      finish_status_ = Status(StatusCode::kTimeLimitExceeded, "time limit exceeded");
      return false;
    }
    EntryView read;
    if (view == nullptr) {
      Result<bool> found = read_entry(core_, state_.txn, id, &read);
      if (!found.ok()) {
        return found.status();
      }
      if (!*found) {
        return Status(StatusCode::kStorage, "id " + std::to_string(id) + " is indexed but absent");
      }
      view = &read;
    }
    Status error;
    const StoredComputed computed(core_, state_.cursors, id, *view);
    const Tri value = state_.evaluator.evaluate(state_.filter, *view, &computed, &error);
    NUMADIR_RETURN_IF_ERROR(error);
    if (value != Tri::kTrue) {
      return true;
    }
    if (spec_.size_limit != 0 && delivered_ >= spec_.size_limit) {
      finish_status_ = Status(StatusCode::kSizeLimitExceeded, "size limit exceeded");
      return false;
    }
    ++delivered_;
    core_.dn_hints.put(view->dn_key(), id);  // A bind of this entry may follow.
    const StoredEntryRef ref(core_, state_.cursors, id, *view);
    return on_entry_(ref);
  }

  Status scan_candidates(const IdList& ids) {
    auto from = ids.begin();
    if (spec_.resume_at.has_value()) {
      // Candidates come in id order: those before the resumed entry were visited.
      from = std::lower_bound(ids.begin(), ids.end(), spec_.resume_at->id);
    }
    for (auto it = from; it != ids.end(); ++it) {
      const EntryId id = *it;
      EntryView view;
      Result<bool> found = read_entry(core_, state_.txn, id, &view);
      if (!found.ok()) {
        return found.status();
      }
      if (!*found || !in_scope(view)) {
        continue;
      }
      Result<bool> go_on = visit(id, &view);
      if (!go_on.ok()) {
        return go_on.status();
      }
      if (!*go_on) {
        return Status();
      }
    }
    return Status();
  }

  bool in_scope(const EntryView& view) const {
    switch (spec_.scope) {
      case Scope::kBase:
        return view.dn_key() == base_key_;
      case Scope::kOneLevel:
        return view.parent_id() == base_id_;
      case Scope::kSubtree:
        return key_in_subtree(view.dn_key(), base_key_);
      case Scope::kChildren:
        return key_is_below(view.dn_key(), base_key_);
    }
    return false;
  }

  Status scan_scope() {
    if (spec_.scope == Scope::kOneLevel) {
      Result<Cursor*> cursor = state_.cursors.get(core_.dns.children());
      if (!cursor.ok()) {
        return cursor.status();
      }
      ChildScan scan(**cursor, base_id_, spec_.resume_at.has_value() ? spec_.resume_at->id : 0);
      EntryId id = 0;
      Result<bool> more = scan.next(&id);
      while (more.ok() && *more) {
        Result<bool> go_on = visit(id, nullptr);
        if (!go_on.ok() || !*go_on) {
          return go_on.status();
        }
        more = scan.next(&id);
      }
      return more.status();
    }
    Result<Cursor*> cursor = state_.cursors.get(core_.dns.dn2id());
    if (!cursor.ok()) {
      return cursor.status();
    }
    SubtreeScan scan(**cursor, base_key_, spec_.scope == Scope::kSubtree,
                     spec_.resume_at.has_value() ? std::string_view(spec_.resume_at->dn_key)
                                                 : std::string_view());
    std::string_view key;
    EntryId id = 0;
    Result<bool> more = scan.next(&key, &id);
    while (more.ok() && *more) {
      Result<bool> go_on = visit(id, nullptr);
      if (!go_on.ok() || !*go_on) {
        return go_on.status();
      }
      more = scan.next(&key, &id);
    }
    return more.status();
  }

  const DirectoryCore& core_;
  ReadState& state_;
  const SearchSpec& spec_;
  const std::function<bool(const EntryRef&)>& on_entry_;
  std::string_view base_key_;
  EntryId base_id_ = 0;
  std::uint64_t delivered_ = 0;
  std::uint64_t visited_ = 0;
  Status finish_status_;
};

}  // namespace

Status run_search(const DirectoryCore& core, ReadState& state, const SearchSpec& spec,
                  const std::function<bool(const EntryRef&)>& on_entry) {
  if (spec.filter == nullptr || spec.filter->empty()) {
    return invalid_argument("search without a filter");
  }
  ReadScope scope(core, state);
  NUMADIR_RETURN_IF_ERROR(scope.status());
  return Searcher(core, state, spec, on_entry).run();
}

// Finds the entry whose dn key is state.key in the scope's transaction. Errors: as
// Directory::get.
Result<EntryId> find_keyed(const DirectoryCore& core, ReadState& state, EntryView* view) {
  const std::string& key = state.key;
  if (faults_injected(core)) [[unlikely]] {
    NUMADIR_RETURN_IF_ERROR(fault_for_read(core, key));
  }
  if (const EntryId hinted = core.dn_hints.get(key); hinted != 0) {
    // Accepted only if the entry stored under the id has exactly this key (dn_hints.h); a
    // failed read falls through to dn2id, which reports any storage error itself.
    if (Result<bool> found = read_entry(core, state.txn, hinted, view);
        found.ok() && *found && view->dn_key() == key) {
      return hinted;
    }
  }
  Result<EntryId> id = core.dns.find(state.txn, key);
  if (!id.ok()) {
    return id.status();
  }
  Result<bool> found = false;
  if (*id != 0) {
    found = read_entry(core, state.txn, *id, view);
    if (!found.ok()) {
      return found.status();
    }
  }
  if (!*found) {
    Result<std::string> matched = matched_dn(core, state.txn, key);
    if (!matched.ok()) {
      return matched.status();
    }
    return Status(StatusCode::kNoSuchObject, std::move(*matched));
  }
  core.dn_hints.put(key, *id);
  return *id;
}

// Finds the entry named `dn`. Errors: as Directory::get.
Result<EntryId> find_named(const DirectoryCore& core, ReadState& state, std::string_view dn,
                           EntryView* view) {
  NUMADIR_RETURN_IF_ERROR(dn_key_into(dn, core.normalizer, state.key, state.dn_scratch));
  return find_keyed(core, state, view);
}

Result<schema::Entry> run_get(const DirectoryCore& core, ReadState& state, std::string_view dn) {
  ReadScope scope(core, state);
  NUMADIR_RETURN_IF_ERROR(scope.status());
  EntryView view;
  Result<EntryId> id = find_named(core, state, dn, &view);
  if (!id.ok()) {
    return id.status();
  }
  schema::Entry entry;
  NUMADIR_RETURN_IF_ERROR(materialize_entry(core, state.cursors, *id, view, &entry));
  return entry;
}

void deliver_entry(const DirectoryCore& core, CursorCache& cursors, EntryId id,
                   const EntryView& view, const std::function<void(const EntryRef&)>& on_entry) {
  on_entry(StoredEntryRef(core, cursors, id, view));
}

Status run_lookup(const DirectoryCore& core, ReadState& state, std::string_view dn,
                  const std::function<void(const EntryRef&)>& on_entry) {
  ReadScope scope(core, state);
  NUMADIR_RETURN_IF_ERROR(scope.status());
  EntryView view;
  Result<EntryId> id = find_named(core, state, dn, &view);
  if (!id.ok()) {
    return id.status();
  }
  on_entry(StoredEntryRef(core, state.cursors, *id, view));
  return Status();
}

Status run_lookup_id(const DirectoryCore& core, ReadState& state, EntryId id,
                     const std::function<void(const EntryRef&)>& on_entry) {
  ReadScope scope(core, state);
  NUMADIR_RETURN_IF_ERROR(scope.status());
  EntryView view;
  Result<bool> found = read_entry(core, state.txn, id, &view);
  if (!found.ok()) {
    return found.status();
  }
  if (!*found) {
    return Status(StatusCode::kNoSuchObject, "");
  }
  on_entry(StoredEntryRef(core, state.cursors, id, view));
  return Status();
}

Status run_lookup_normalized(const DirectoryCore& core, ReadState& state, std::string_view ndn,
                             const std::function<void(const EntryRef&)>& on_entry) {
  ReadScope scope(core, state);
  NUMADIR_RETURN_IF_ERROR(scope.status());
  dn_key_from_normalized_into(ndn, state.key);
  EntryView view;
  Result<EntryId> id = find_keyed(core, state, &view);
  if (!id.ok()) {
    return id.status();
  }
  on_entry(StoredEntryRef(core, state.cursors, *id, view));
  return Status();
}

}  // namespace numadir::backend::detail
