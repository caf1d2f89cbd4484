// backend/directory.cc: Directory::open, the thin public methods, and the read helpers shared
// by search and get.
#include "backend/directory.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <system_error>

#include "backend/detail/change_state.h"
#include "backend/detail/directory_core.h"
#include "backend/detail/writer.h"
#include "base/check.h"

namespace numadir::backend {

using detail::DirectoryCore;
using detail::ReadState;

struct Directory::Impl : DirectoryCore {
  using DirectoryCore::DirectoryCore;
  // Started last by open(); destroyed first (a member of the derived struct), so it has run
  // every queued job before the environment closes.
  std::unique_ptr<Writer> writer;
  bool created = false;  // open() made the database (Directory::created).
};

struct ReadTxn::State : ReadState {};

ReadTxn::~ReadTxn() = default;

namespace {

// LMDB's data file in an environment's directory.
constexpr std::string_view kDataFile = "data.mdb";

// Opens every database and checks or initializes the meta records.
Status open_databases(DirectoryCore& core, OpenMode mode) {
  Result<Txn> txn = Txn::begin(*core.env, false);
  if (!txn.ok()) {
    return txn.status();
  }
  MDB_txn* t = txn->raw();
  const unsigned dup_ids = MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP;
  Result<MDB_dbi> id2entry = open_dbi(t, "id2entry", MDB_CREATE | MDB_INTEGERKEY);
  Result<MDB_dbi> dn2id = open_dbi(t, "dn2id", MDB_CREATE);
  Result<MDB_dbi> children = open_dbi(t, "children", MDB_CREATE | MDB_INTEGERKEY | dup_ids);
  Result<MDB_dbi> meta = open_dbi(t, "meta", MDB_CREATE);
  for (const Status& status :
       {id2entry.status(), dn2id.status(), children.status(), meta.status()}) {
    NUMADIR_RETURN_IF_ERROR(status);
  }
  core.id2entry = *id2entry;
  core.meta = *meta;
  core.dns = DnIndex(*dn2id, *children, max_key_bytes(*core.env));

  std::string_view value;
  Result<bool> found = db_get(t, core.meta, detail::kMetaFormat, &value);
  NUMADIR_RETURN_IF_ERROR(found.status());
  if (!*found) {
    const std::uint32_t version = detail::kFormatVersion;
    const std::string_view bytes(reinterpret_cast<const char*>(&version), sizeof version);
    NUMADIR_RETURN_IF_ERROR(db_put(t, core.meta, detail::kMetaFormat, bytes, 0).status());
    NUMADIR_RETURN_IF_ERROR(db_put(t, core.meta, detail::kMetaSuffix, core.suffix_key, 0).status());
    NUMADIR_RETURN_IF_ERROR(detail::store_next_id(core, t, 1));
  } else {
    std::uint32_t version = 0;
    if (value.size() == sizeof version) {
      std::memcpy(&version, value.data(), sizeof version);
    }
    if (version != detail::kFormatVersion) {
      return Status(StatusCode::kStorage, "database format version " + std::to_string(version) +
                                              " is not supported (expected " +
                                              std::to_string(detail::kFormatVersion) + ")");
    }
    found = db_get(t, core.meta, detail::kMetaSuffix, &value);
    NUMADIR_RETURN_IF_ERROR(found.status());
    if (*found && value != core.suffix_key) {
      return invalid_argument("suffix " + core.options.suffix +
                              " differs from the suffix the database was created with");
    }
  }

  Result<std::uint64_t> entries = db_entries(t, core.id2entry);
  NUMADIR_RETURN_IF_ERROR(entries.status());
  for (std::uint32_t slot = 0; slot < core.indexes.indexes().size(); ++slot) {
    Index& index = core.indexes.indexes()[slot];
    Result<MDB_dbi> dbi = open_dbi(t, index.db_name.c_str(), MDB_CREATE | dup_ids);
    NUMADIR_RETURN_IF_ERROR(dbi.status());
    index.dbi = *dbi;
    const std::string marker = std::string(detail::kMetaIndexPrefix) + index.db_name;
    found = db_get(t, core.meta, marker, nullptr);
    NUMADIR_RETURN_IF_ERROR(found.status());
    if (*found) {
      core.indexes.set_ready_since(slot, 0);
    } else if (*entries == 0) {
      NUMADIR_RETURN_IF_ERROR(db_drop(t, index.dbi, false));
      NUMADIR_RETURN_IF_ERROR(db_put(t, core.meta, marker, "1", 0).status());
      core.indexes.set_ready_since(slot, 0);
    } else {
      // Maintained from now on, but unusable for candidates until rebuild_indexes().
      NUMADIR_RETURN_IF_ERROR(db_drop(t, index.dbi, false));
      std::fprintf(stderr, "numadir: index %s is new and not built: run an index rebuild\n",
                   index.db_name.c_str());
    }
  }
  // Forget indexes no longer configured, so that configuring one again finds it unbuilt.
  std::vector<std::string> stale;
  {
    Result<Cursor> cursor = Cursor::open(t, core.meta);
    NUMADIR_RETURN_IF_ERROR(cursor.status());
    std::string_view key = detail::kMetaIndexPrefix;
    Result<bool> at = cursor->get(MDB_SET_RANGE, &key, &value);
    while (at.ok() && *at && key.starts_with(detail::kMetaIndexPrefix)) {
      const std::string_view name = key.substr(detail::kMetaIndexPrefix.size());
      bool configured = false;
      for (const Index& index : core.indexes.indexes()) {
        configured = configured || index.db_name == name;
      }
      if (!configured) {
        stale.emplace_back(key);
      }
      at = cursor->get(MDB_NEXT, &key, &value);
    }
    NUMADIR_RETURN_IF_ERROR(at.status());
  }
  for (const std::string& marker : stale) {
    NUMADIR_RETURN_IF_ERROR(db_del(t, core.meta, marker, nullptr).status());
    const std::string name = marker.substr(detail::kMetaIndexPrefix.size());
    Result<MDB_dbi> dbi = open_dbi(t, name.c_str(), 0);
    if (dbi.ok()) {
      NUMADIR_RETURN_IF_ERROR(db_drop(t, *dbi, true));
    }
  }
  NUMADIR_RETURN_IF_ERROR(detail::open_change_state(core, t, mode));
  return txn->commit();
}

}  // namespace

Result<std::unique_ptr<Directory>> Directory::open(const schema::Schema& schema,
                                                   const DirectoryOptions& options, OpenMode mode) {
  if (options.server_id > kMaxServerId) {
    return invalid_argument("server_id " + std::to_string(options.server_id) +
                            " is out of range: a CSN's server id is 0 to 4095");
  }
  if (options.writer_queue_jobs == 0 || options.writer_batch_jobs == 0) {
    return invalid_argument("the writer's queue and batches must hold at least one job");
  }
  auto impl = std::make_unique<Impl>(schema, options);
  Result<schema::Dn> suffix = schema::Dn::parse(options.suffix);
  if (!suffix.ok() || suffix->is_root()) {
    return invalid_argument("suffix '" + options.suffix + "' is not a non-empty DN" +
                            (suffix.ok() ? std::string() : ": " + suffix.status().message()));
  }
  impl->suffix_key = dn_key(*suffix, impl->normalizer);
  Result<IndexSet> indexes = IndexSet::configure(impl->catalog, options.indexes);
  if (!indexes.ok()) {
    return indexes.status();
  }
  impl->indexes = std::move(*indexes);

  // LMDB makes data.mdb (and lock.mdb) in any directory it opens: whether one was there is
  // known only before.
  std::error_code error;
  const bool present = std::filesystem::exists(options.path / kDataFile, error);
  if (error) {  // Not ENOENT: e.g. a directory on the way that may not be searched.
    return Status(StatusCode::kStorage, options.path.string() + ": " + error.message());
  }
  if (!present && mode == OpenMode::kMustExist) {
    return Status(StatusCode::kNotFound, "no database in " + options.path.string());
  }
  if (!present) {
    std::filesystem::create_directories(options.path, error);
    if (error) {
      return Status(StatusCode::kStorage,
                    "creating " + options.path.string() + ": " + error.message());
    }
  }
  impl->created = !present;
  EnvOptions env_options;
  env_options.path = options.path;
  env_options.map_size_bytes = options.map_size_bytes;
  env_options.max_readers = options.max_readers;
  env_options.max_dbs = static_cast<std::uint32_t>(8 + impl->indexes.indexes().size() + 64);
  env_options.no_sync = options.durability == Durability::kNoSync;
  env_options.write_map = options.write_map;
  Result<std::unique_ptr<Env>> env = Env::open(env_options);
  if (!env.ok()) {
    return env.status();
  }
  impl->env = std::move(*env);
  NUMADIR_RETURN_IF_ERROR(open_databases(*impl, mode));
  impl->writer = std::make_unique<Writer>(*impl);
  return std::unique_ptr<Directory>(new Directory(std::move(impl)));
}

Directory::Directory(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Directory::~Directory() = default;

bool Directory::created() const { return impl_->created; }
const schema::Schema& Directory::schema() const { return impl_->schema; }
const DirectoryOptions& Directory::options() const { return impl_->options; }
const SchemaDnNormalizer& Directory::dn_normalizer() const { return impl_->normalizer; }

void Directory::set_notices(std::function<void(std::string_view)> sink) {
  MutexLock lock(impl_->log_mu);
  impl_->notices = std::move(sink);
}

std::unique_ptr<ReadTxn> Directory::begin_read() const {
  std::unique_ptr<ReadTxn> txn(new ReadTxn());
  txn->state_ = std::make_unique<ReadTxn::State>();
  return txn;
}

void Directory::pin_snapshot(ReadTxn& txn) const {
  NUMADIR_CHECK(txn.state_->txn != nullptr, "pin_snapshot outside a read");
  txn.state_->pinned = true;
}

Result<schema::Entry> Directory::get(ReadTxn& txn, std::string_view dn) const {
  return detail::run_get(*impl_, *txn.state_, dn);
}

Status Directory::lookup(ReadTxn& txn, std::string_view dn,
                         const std::function<void(const EntryRef&)>& on_entry) const {
  return detail::run_lookup(*impl_, *txn.state_, dn, on_entry);
}

Status Directory::lookup_normalized(ReadTxn& txn, std::string_view ndn,
                                    const std::function<void(const EntryRef&)>& on_entry) const {
  return detail::run_lookup_normalized(*impl_, *txn.state_, ndn, on_entry);
}

Status Directory::lookup_id(ReadTxn& txn, std::uint64_t id,
                            const std::function<void(const EntryRef&)>& on_entry) const {
  return detail::run_lookup_id(*impl_, *txn.state_, id, on_entry);
}

Status Directory::search(ReadTxn& txn, const SearchSpec& spec,
                         const std::function<bool(const EntryRef&)>& on_entry) const {
  return detail::run_search(*impl_, *txn.state_, spec, on_entry);
}

namespace {

std::unique_ptr<UpdateJob> make_job(const UpdateContext& context) {
  auto job = std::make_unique<UpdateJob>();
  job->context = context;
  return job;
}

}  // namespace

Status Directory::add(const schema::Entry& entry, const UpdateContext& context) {
  std::unique_ptr<UpdateJob> job = make_job(context);
  job->change = AddChange{entry, {}};
  return impl_->writer->run(std::move(job));
}

Status Directory::remove(std::string_view dn, const UpdateContext& context) {
  std::unique_ptr<UpdateJob> job = make_job(context);
  job->change = RemoveChange{std::string(dn)};
  return impl_->writer->run(std::move(job));
}

Status Directory::modify(std::string_view dn, std::span<const Modification> modifications,
                         const UpdateContext& context) {
  std::unique_ptr<UpdateJob> job = make_job(context);
  job->change = ModifyChange{std::string(dn), {modifications.begin(), modifications.end()}};
  return impl_->writer->run(std::move(job));
}

Status Directory::rename(std::string_view dn, std::string_view new_rdn, bool delete_old_rdn,
                         std::optional<std::string_view> new_superior,
                         const UpdateContext& context) {
  std::unique_ptr<UpdateJob> job = make_job(context);
  RenameChange change{std::string(dn), std::string(new_rdn), delete_old_rdn, std::nullopt};
  if (new_superior.has_value()) {
    change.new_superior = std::string(*new_superior);
  }
  job->change = std::move(change);
  return impl_->writer->run(std::move(job));
}

bool Directory::try_submit_update(std::unique_ptr<UpdateJob>& job) {
  return impl_->writer->try_submit(job);
}

void Directory::submit_update(std::unique_ptr<UpdateJob> job) {
  impl_->writer->submit(std::move(job));
}

Status Directory::run_update(std::unique_ptr<UpdateJob> job) {
  return impl_->writer->run(std::move(job));
}

WriterStats Directory::writer_stats() const { return impl_->writer->stats(); }
bool Directory::on_writer_thread() const { return impl_->writer->on_writer_thread(); }
ChangeFeed& Directory::change_feed() { return impl_->writer->feed(); }

std::unique_ptr<ChangeSubscription> Directory::subscribe_changes(ChangeCallback callback) {
  return impl_->writer->feed().subscribe(std::move(callback));
}

Result<std::unique_ptr<Directory::Importer>> Directory::begin_import(const UpdateContext& context) {
  return detail::run_begin_import(*impl_, context);
}

Result<std::unique_ptr<Directory::BulkImporter>> Directory::begin_bulk_import(
    const UpdateContext& context, const BulkImportOptions& options) {
  return detail::run_begin_bulk_import(*impl_, context, options);
}

Status Directory::export_entries(const std::function<bool(const schema::Entry&)>& on_entry) const {
  return detail::run_export(*impl_, on_entry);
}

Status Directory::rebuild_indexes() { return detail::run_rebuild_indexes(*impl_); }
Status Directory::verify_indexes() const { return detail::run_verify_indexes(*impl_); }
Result<std::uint64_t> Directory::entry_count() const { return detail::run_entry_count(*impl_); }

Status Directory::prepare_replica(ReplicaChange& change) const {
  return detail::run_prepare_replica(*impl_, change);
}

Result<std::optional<std::string>> Directory::replica_cookie(std::uint32_t rid) const {
  return detail::run_replica_cookie(*impl_, rid);
}

Result<std::string> Directory::context_csn(ReadTxn& txn) const {
  ReadState& state = *txn.state_;
  const detail::ReadScope scope(*impl_, state);
  if (!scope.status().ok()) {
    return scope.status();
  }
  return detail::load_context_csn(*impl_, state.txn);
}

Result<Directory::SessionLogChanges> Directory::session_log_since(ReadTxn& txn,
                                                                  std::string_view csn) const {
  ReadState& state = *txn.state_;
  const detail::ReadScope scope(*impl_, state);
  if (!scope.status().ok()) {
    return scope.status();
  }
  return detail::read_session_log(*impl_, state.txn, csn);
}

Status Directory::inject_faults_for_test(const FaultInjection& faults) {
  const detail::FaultSet* injected = nullptr;
  if (!faults.failing_reads.empty()) {
    auto set = std::make_unique<detail::FaultSet>();
    set->message = faults.message;
    for (const std::string& dn : faults.failing_reads) {
      Result<std::string> key = dn_key_of(dn, impl_->normalizer);
      if (!key.ok()) {
        return key.status();
      }
      set->keys.push_back(std::move(*key));
    }
    injected = set.get();
    MutexLock lock(impl_->faults_mu);
    impl_->fault_sets.push_back(std::move(set));
  }
  // Release: a read that loads the pointer sees the set's contents.
  impl_->faults.store(injected, std::memory_order_release);
  return Status();
}

namespace detail {

ReadScope::ReadScope(const DirectoryCore& core, ReadState& state) : state_(state) {
  if (state.pinned || state.in_read) {
    return;  // Live since the read that pinned it, or that is under way; cursors bound to it.
  }
  if (state.txn == nullptr) {
    Result<MDB_txn*> txn = begin_raw_read_txn(*core.env);
    if (!txn.ok()) {
      status_ = txn.status();
      return;
    }
    state.txn = *txn;
  } else {
    status_ = renew_read_txn(state.txn);
    if (!status_.ok()) {
      return;
    }
  }
  state.cursors.bind(state.txn);
  state.in_read = true;
  outer_ = true;
}

ReadScope::~ReadScope() {
  if (!outer_) {
    return;
  }
  state_.in_read = false;
  if (!state_.pinned) {
    reset_read_txn(state_.txn);
  }
}

Result<bool> read_entry(const DirectoryCore& core, MDB_txn* txn, EntryId id, EntryView* view) {
  std::string_view bytes;
  Result<bool> found = db_get(txn, core.id2entry, id_bytes(id), &bytes);
  if (!found.ok() || !*found) {
    return found;
  }
  Result<EntryView> parsed = EntryView::parse(bytes);
  if (!parsed.ok()) {
    return Status(StatusCode::kStorage,
                  "id2entry " + std::to_string(id) + ": " + parsed.status().message());
  }
  *view = *parsed;
  return true;
}

Result<std::string> matched_dn(const DirectoryCore& core, MDB_txn* txn, std::string_view key) {
  EntryId id = 0;
  Result<std::string_view> ancestor = core.dns.longest_existing(txn, key, &id);
  if (!ancestor.ok()) {
    return ancestor.status();
  }
  if (id == 0) {
    return std::string();
  }
  EntryView view;
  Result<bool> found = read_entry(core, txn, id, &view);
  if (!found.ok()) {
    return found.status();
  }
  return *found ? std::string(view.dn()) : std::string();
}

Status StoredComputed::computed_values(ComputedAttribute which,
                                       std::vector<std::string>* out) const {
  switch (which) {
    case ComputedAttribute::kNone:
      return Status();
    case ComputedAttribute::kEntryDn:
      out->emplace_back(view_.dn());
      return Status();
    case ComputedAttribute::kSubschemaSubentry:
      out->emplace_back(kSubschemaDn);
      return Status();
    case ComputedAttribute::kContextCsn: {
      if (view_.dn_key() != core_.suffix_key) {
        return Status();  // The naming context's attribute: the suffix entry's only.
      }
      Result<Cursor*> meta = cursors_.get(core_.meta, kMetaCursor);
      if (!meta.ok()) {
        return meta.status();
      }
      std::string_view key = kMetaContextCsn;
      std::string_view value;
      Result<bool> found = (*meta)->get(MDB_SET_KEY, &key, &value);
      if (!found.ok()) {
        return found.status();
      }
      if (*found && !value.empty()) {
        out->emplace_back(value);
      }
      return Status();
    }
    case ComputedAttribute::kHasSubordinates:
    case ComputedAttribute::kNumSubordinates:
      break;
  }
  // Its own cursor: a one-level scan may be walking the children database at the same time.
  Result<Cursor*> cursor = cursors_.get(core_.dns.children(), kChildCountCursor);
  if (!cursor.ok()) {
    return cursor.status();
  }
  Result<std::uint64_t> count = core_.dns.child_count(**cursor, id_);
  if (!count.ok()) {
    return count.status();
  }
  if (which == ComputedAttribute::kHasSubordinates) {
    out->emplace_back(*count > 0 ? "TRUE" : "FALSE");
  } else {
    out->push_back(std::to_string(*count));
  }
  return Status();
}

Status materialize_entry(const DirectoryCore& core, CursorCache& cursors, EntryId id,
                         const EntryView& view, schema::Entry* out) {
  NUMADIR_RETURN_IF_ERROR(view.decode(out));
  const StoredComputed computed(core, cursors, id, view);
  const std::pair<const AttributeInfo*, ComputedAttribute> extra[] = {
      {core.op_types.entry_dn, ComputedAttribute::kEntryDn},
      {core.op_types.has_subordinates, ComputedAttribute::kHasSubordinates},
      {core.op_types.num_subordinates, ComputedAttribute::kNumSubordinates},
      {core.op_types.subschema_subentry, ComputedAttribute::kSubschemaSubentry},
      {core.op_types.context_csn, ComputedAttribute::kContextCsn},
  };
  for (const auto& [info, which] : extra) {
    if (info == nullptr) {
      continue;
    }
    schema::EntryAttribute attribute;
    attribute.description = std::string(info->name);
    NUMADIR_RETURN_IF_ERROR(computed.computed_values(which, &attribute.values));
    if (!attribute.values.empty()) {  // contextCSN: the suffix entry's only.
      out->attributes.push_back(std::move(attribute));
    }
  }
  return Status();
}

void note_unindexed(const DirectoryCore& core, const UnindexedItem& item) {
  // As database.indexes spells the kind.
  const std::string_view kind =
      item.kind == IndexKind::kOrdering ? "ordering" : index_kind_name(item.kind);
  std::string key(item.attribute);
  key += ' ';
  key += kind;
  MutexLock lock(core.log_mu);
  if (std::find(core.logged_unindexed.begin(), core.logged_unindexed.end(), key) !=
      core.logged_unindexed.end()) {
    return;
  }
  core.logged_unindexed.push_back(key);
  std::string text = "unindexed search: ";
  text.append(item.attribute).append(" has no ").append(kind);
  text.append(" index, so a search with this filter item scans its scope (add \"");
  text.append(kind).append("\" to ").append(item.attribute).append(" in database.indexes)");
  if (core.notices) {
    core.notices(text);
    return;
  }
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  std::fprintf(stderr, "%s numadir: %s\n", stamp, text.c_str());
}

}  // namespace detail
}  // namespace numadir::backend
