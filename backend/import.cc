// backend/import.cc: the import stages (detail/import_stages.h), Importer (both stages
// on the caller's thread) and BulkImporter (a pipeline of worker threads and one
// writer thread).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "backend/detail/change_state.h"
#include "backend/detail/directory_core.h"
#include "backend/detail/import_stages.h"
#include "backend/detail/update_util.h"

namespace numadir::backend::detail {

Status canonicalize_in_place(const AttributeCatalog& catalog,
                             std::vector<schema::EntryAttribute>& attributes) {
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    schema::EntryAttribute& attribute = attributes[i];
    std::string with_options;
    std::string_view canonical;
    if (attribute.description.find(';') == std::string::npos) {
      const AttributeInfo* info = catalog.resolve(attribute.description);
      if (info == nullptr) {
        return catalog.canonical_description(attribute.description).status();
      }
      canonical = info->name;
    } else {
      Result<std::string> description = catalog.canonical_description(attribute.description);
      if (!description.ok()) {
        return description.status();
      }
      with_options = std::move(*description);
      canonical = with_options;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (attributes[j].description == canonical) {
        return Status(StatusCode::kAttributeOrValueExists,
                      "attribute '" + attribute.description + "' provided more than once");
      }
    }
    if (attribute.description != canonical) {
      attribute.description.assign(canonical);
    }
  }
  return Status();
}

namespace {

Status prepare(const DirectoryCore& core, ImportItem& item, PrepareScratch& scratch) {
  NUMADIR_RETURN_IF_ERROR(dn_key_into(item.entry.dn, core.normalizer, item.key, scratch.dn));
  if (!key_in_subtree(item.key, core.suffix_key)) {
    return Status(StatusCode::kNoSuchObject, "not under the suffix " + core.options.suffix);
  }
  NUMADIR_RETURN_IF_ERROR(canonicalize_in_place(core.catalog, item.entry.attributes));
  // contextCSN (slapcat writes it on the suffix entry) is the directory's, kept apart from the
  // entries: the suffix entry's value becomes the imported directory's contextCSN.
  item.context_csn.clear();
  if (core.op_types.context_csn != nullptr) {
    std::erase_if(item.entry.attributes, [&](const schema::EntryAttribute& attribute) {
      if (description_type(attribute.description) != core.op_types.context_csn->name) {
        return false;
      }
      if (item.key == core.suffix_key) {
        for (const std::string& value : attribute.values) {
          if (value > item.context_csn) {
            item.context_csn = value;
          }
        }
      }
      return true;
    });
  }
  scratch.stamp.csn.assign(item.csn);
  NUMADIR_RETURN_IF_ERROR(check_and_encode(core, scratch.stamp, item.entry, item.key, item.encoded,
                                           item.keys, scratch.check, scratch.uuids));
  item.csn.assign(entry_csn_of(core, item.entry.attributes));  // The LDIF's, where it had one.
  return Status();
}

}  // namespace

namespace {

// check_and_encode's half after the check: `structural` (may be null) stamped where the entry
// has no structuralObjectClass, with the other operational attributes it lacks.
void stamp_and_encode(const DirectoryCore& core, const Stamp& stamp,
                      const schema::ObjectClass* structural, schema::Entry& entry,
                      std::string_view key, std::string& encoded, IndexKeys& keys,
                      UuidGenerator& uuids) {
  stamp_new_entry(core.op_types, stamp,
                  structural != nullptr ? structural->primary_name() : std::string_view(),
                  /*keep_existing=*/true, uuids, entry.attributes);
  encode_entry(EntryHeader{0, entry.dn, key}, entry.attributes, encoded);
  keys.clear();
  core.indexes.entry_keys(core.catalog, entry.attributes, &keys);
}

}  // namespace

Status check_and_encode(const DirectoryCore& core, const Stamp& stamp, schema::Entry& entry,
                        std::string_view key, std::string& encoded, IndexKeys& keys,
                        schema::EntryCheckScratch& check, UuidGenerator& uuids) {
  const schema::ObjectClass* structural = nullptr;
  NUMADIR_RETURN_IF_ERROR(core.schema.check_entry(entry, &structural, check));
  stamp_and_encode(core, stamp, structural, entry, key, encoded, keys, uuids);
  return Status();
}

Status encode_unchecked(const DirectoryCore& core, const Stamp& stamp, schema::Entry& entry,
                        std::string_view key, std::string& encoded, IndexKeys& keys,
                        UuidGenerator& uuids) {
  bool has_structural = false;
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    if (attribute.values.empty()) {
      return Status(StatusCode::kConstraintViolation,
                    attribute.description + ": attribute has no values");
    }
    has_structural =
        has_structural || (core.op_types.structural_object_class != nullptr &&
                           attribute.description == core.op_types.structural_object_class->name);
  }
  const schema::ObjectClass* structural =
      has_structural ? nullptr : core.schema.structural_class(entry);
  stamp_and_encode(core, stamp, structural, entry, key, encoded, keys, uuids);
  return Status();
}

void prepare_import_item(const DirectoryCore& core, ImportItem& item, PrepareScratch& scratch) {
  item.status = prepare(core, item, scratch);
}

Status ImportWriter::open() {
  auto open_one = [this](MDB_dbi dbi, Cursor& out) {
    Result<Cursor> cursor = Cursor::open(txn_, dbi);
    if (!cursor.ok()) {
      return cursor.status();
    }
    out = std::move(*cursor);
    return Status();
  };
  NUMADIR_RETURN_IF_ERROR(open_one(core_.id2entry, id2entry_));
  NUMADIR_RETURN_IF_ERROR(open_one(core_.dns.dn2id(), dn2id_));
  NUMADIR_RETURN_IF_ERROR(open_one(core_.dns.children(), children_));
  const std::span<const Index> indexes = core_.indexes.indexes();
  indexes_.resize(indexes.size());
  for (std::size_t slot = 0; slot < indexes.size(); ++slot) {
    NUMADIR_RETURN_IF_ERROR(open_one(indexes[slot].dbi, indexes_[slot]));
  }
  return Status();
}

Status ImportWriter::store(const ImportItem& item, ImportFailure& failure) {
  Status status = item.status;
  if (status.ok()) {
    status = store(item.key, item.encoded, item.keys);
  }
  if (status.ok()) {
    keep_tag(item.tag);
    greatest_csn_ = std::max({greatest_csn_, item.csn, item.context_csn});
    return status;
  }
  describe_failure(item, std::move(status), failure);
  return failure.status;
}

void ImportWriter::keep_tag(std::uint64_t tag) {
  // Zigzag: a tag below the one before costs as little as one above it.
  const auto delta = static_cast<std::int64_t>(tag - last_tag_);
  std::uint64_t bits =
      (static_cast<std::uint64_t>(delta) << 1) ^ static_cast<std::uint64_t>(delta >> 63);
  while (bits >= 0x80) {
    tags_.push_back(static_cast<char>((bits & 0x7f) | 0x80));
    bits >>= 7;
  }
  tags_.push_back(static_cast<char>(bits));
  last_tag_ = tag;
  ++tags_kept_;
}

std::optional<std::uint64_t> ImportWriter::tag_of(EntryId id) const {
  if (id < first_id_ || id - first_id_ >= tags_kept_) {
    return std::nullopt;
  }
  const std::uint64_t wanted = id - first_id_;
  std::uint64_t tag = 0;
  std::size_t at = 0;
  for (std::uint64_t i = 0; i <= wanted; ++i) {
    std::uint64_t bits = 0;
    for (int shift = 0; at < tags_.size(); shift += 7) {
      const auto byte = static_cast<unsigned char>(tags_[at++]);
      bits |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) {
        break;
      }
    }
    tag += static_cast<std::uint64_t>(static_cast<std::int64_t>(bits >> 1) ^
                                      -static_cast<std::int64_t>(bits & 1));
  }
  return tag;
}

void ImportWriter::describe_failure(const ImportItem& item, Status status, ImportFailure& failure) {
  failure = ImportFailure{item.tag, item.entry.dn, Status(), std::nullopt, {}, {}};
  // Only the writer's own findings need more words: prepare's verdicts say what they mean.
  if (!item.status.ok()) {
    failure.status = std::move(status);
    return;
  }
  if (status.code() == StatusCode::kNoSuchObject) {
    // The parent as the entry spells it (the DN parsed when prepared), rather than the nearest
    // entry that exists, which is what an LDAP add's matchedDN names.
    Result<schema::Dn> dn = schema::Dn::parse(item.entry.dn);
    if (dn.ok()) {
      failure.missing_parent = dn->parent().to_string();
      status = Status(StatusCode::kNoSuchObject,
                      "parent entry " + failure.missing_parent + " is missing");
    }
  } else if (status.code() == StatusCode::kEntryAlreadyExists) {
    std::string message = "an entry with this DN is already stored";
    Result<EntryId> id = core_.dns.find(txn_, item.key);
    if (id.ok() && *id != 0) {
      failure.earlier_tag = tag_of(*id);
      EntryView view;
      Result<bool> found = read_entry(core_, txn_, *id, &view);
      if (found.ok() && *found) {
        failure.earlier_dn = std::string(view.dn());
        if (failure.earlier_dn != item.entry.dn) {
          message += " as " + failure.earlier_dn;
        }
      }
    }
    status = Status(StatusCode::kEntryAlreadyExists, std::move(message));
  }
  failure.status = std::move(status);
}

Status ImportWriter::store(std::string_view key, std::string_view encoded_entry,
                           const IndexKeys& keys) {
  // An entry that exists has its parent too (or is the suffix), so checking the parent first
  // and letting dn2id's put find the entry gives the result codes of Directory::add.
  EntryId parent_id = 0;
  if (key != core_.suffix_key) {
    const std::string_view parent = parent_key(key);
    if (last_parent_id_ != 0 && parent == last_parent_key_) {
      parent_id = last_parent_id_;
    } else {
      Result<EntryId> found = core_.dns.find(txn_, parent);
      NUMADIR_RETURN_IF_ERROR(found.status());
      if (*found == 0) {
        Result<std::string> matched = matched_dn(core_, txn_, key);
        NUMADIR_RETURN_IF_ERROR(matched.status());
        return Status(StatusCode::kNoSuchObject, std::move(*matched));
      }
      parent_id = *found;
      last_parent_key_.assign(parent);
      last_parent_id_ = parent_id;
    }
  }
  if (key.size() > core_.dns.max_key_bytes()) {
    return Status(StatusCode::kUnwillingToPerform,
                  "DN too long: its normalized form has " + std::to_string(key.size()) +
                      " bytes, the limit is " + std::to_string(core_.dns.max_key_bytes()));
  }
  const EntryId id = next_id_;
  const std::string_view id_value = id_bytes(id);
  Result<bool> put = dn2id_.put(key, id_value, MDB_NOOVERWRITE);
  NUMADIR_RETURN_IF_ERROR(put.status());
  if (!*put) {
    return Status(StatusCode::kEntryAlreadyExists, "entry already exists");
  }
  ++next_id_;
  std::string_view encoded = encoded_entry;
  if (parent_id != 0) {
    set_encoded_parent(encoded_entry, parent_id, with_parent_);
    encoded = with_parent_;
  }
  put = id2entry_.put(id_value, encoded, MDB_APPEND);
  NUMADIR_RETURN_IF_ERROR(put.status());
  if (!*put) {
    return internal_error("id2entry: id " + std::to_string(id) + " already used");
  }
  put = children_.put(id_bytes(parent_id), id_value, MDB_APPENDDUP);
  NUMADIR_RETURN_IF_ERROR(put.status());
  if (!*put) {
    return internal_error("children: id already listed under its parent");
  }
  for (const auto& [slot, index_key] : keys) {
    put = indexes_[slot].put(index_key, id_value, MDB_APPENDDUP);
    NUMADIR_RETURN_IF_ERROR(put.status());
    if (!*put && core_.indexes.built(slot)) {
      return internal_error(core_.indexes.index(slot).db_name + ": key/id pair already present");
    }
  }
  return Status();
}

namespace {

Stamp import_stamp(const UpdateContext& context, std::chrono::system_clock::time_point now) {
  return Stamp{context.actor_dn, generalized_time(now), std::string()};
}

struct ImportTxn {
  Txn txn;
  EntryId next_id;
};

// Begins the import's write transaction on the calling thread, which holds the writer mutex.
// Errors: kStorage; kInvalidArgument if the directory is not empty.
Result<ImportTxn> begin_import_txn(DirectoryCore& core) {
  Result<Txn> txn = Txn::begin(*core.env, false);
  if (!txn.ok()) {
    return txn.status();
  }
  Result<std::uint64_t> entries = db_entries(txn->raw(), core.id2entry);
  if (!entries.ok()) {
    return entries.status();
  }
  if (*entries != 0) {
    return invalid_argument("the directory holds " + std::to_string(*entries) +
                            (*entries == 1 ? " entry" : " entries") +
                            ": an import loads only into an empty one");
  }
  Result<EntryId> next_id = load_next_id(core, txn->raw());
  if (!next_id.ok()) {
    return next_id.status();
  }
  return ImportTxn{std::move(*txn), *next_id};
}

// Stores the next id and commits; the writer's cursors are closed first (LMDB frees a write
// transaction's cursors when it ends).
// The contextCSN becomes the greatest CSN imported (and the session log begins there).
Status commit_import(const DirectoryCore& core, Txn& txn, std::unique_ptr<ImportWriter>& writer) {
  const EntryId next_id = writer->next_id();
  const std::string context_csn = writer->greatest_csn();
  writer.reset();
  NUMADIR_RETURN_IF_ERROR(store_next_id(core, txn.raw(), next_id));
  NUMADIR_RETURN_IF_ERROR(reset_change_state(core, txn.raw(), context_csn));
  NUMADIR_RETURN_IF_ERROR(txn.commit());
  observe_csn(context_csn);
  return Status();
}

// Holds the writer mutex and one write transaction from begin to destruction; both stages run
// on the caller's thread.
class ImporterImpl : public Importer {
 public:
  ImporterImpl(DirectoryCore& core, Txn txn, EntryId next_id, const UpdateContext& context)
      : core_(core), txn_(std::move(txn)), now_(context.now.value_or(Clock::now())) {
    writer_ = std::make_unique<ImportWriter>(core_, txn_.raw(), next_id);
    scratch_.stamp = import_stamp(context, now_);
  }
  ImporterImpl(const ImporterImpl&) = delete;
  ImporterImpl& operator=(const ImporterImpl&) = delete;

  ~ImporterImpl() override NUMADIR_NO_THREAD_SAFETY_ANALYSIS {
    writer_.reset();
    txn_.abort();  // No-op after a successful finish().
    core_.write_mu.unlock();
  }

  Status open() { return writer_->open(); }

  Status add(const schema::Entry& entry) override {
    if (done_) {
      return invalid_argument("import already finished or failed");
    }
    item_.entry = entry;
    item_.csn = next_csn(now_, core_.options.server_id);
    prepare_import_item(core_, item_, scratch_);
    ImportFailure failure;
    Status status = writer_->store(item_, failure);
    if (!status.ok()) {
      done_ = true;
      writer_.reset();
      txn_.abort();
    }
    return status;
  }

  Status finish() override {
    if (done_) {
      return invalid_argument("import already finished or failed");
    }
    done_ = true;
    return commit_import(core_, txn_, writer_);
  }

 private:
  using Clock = std::chrono::system_clock;

  DirectoryCore& core_;
  Txn txn_;
  const Clock::time_point now_;
  std::unique_ptr<ImportWriter> writer_;  // Destroyed before txn_ ends.
  PrepareScratch scratch_;
  ImportItem item_;
  bool done_ = false;
};

// The pipeline: the caller fills batches of items (assigning CSNs in input order); worker
// threads prepare whole batches, in any order; the writer thread stores the batches in input
// order and hands them back for reuse. A bounded set of batches circulates, so memory stays
// bounded and a full pipeline makes add() wait.
class BulkImporterImpl : public BulkImporter {
 public:
  BulkImporterImpl(DirectoryCore& core, const UpdateContext& context,
                   const BulkImportOptions& options)
      : core_(core),
        now_(context.now.value_or(Clock::now())),
        stamp_(import_stamp(context, now_)),
        batch_entries_(std::max<std::size_t>(1, options.batch_entries)) {
    std::uint32_t workers = options.workers;
    if (workers == 0) {
      workers = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
    }
    const std::size_t batches = workers * std::max<std::size_t>(1, options.batches_per_worker) + 2;
    for (std::size_t i = 0; i < batches; ++i) {
      auto batch = std::make_unique<Batch>();
      batch->items.resize(batch_entries_);
      free_.push_back(batch.get());
      storage_.push_back(std::move(batch));
    }
    workers_count_ = workers;
  }
  BulkImporterImpl(const BulkImporterImpl&) = delete;
  BulkImporterImpl& operator=(const BulkImporterImpl&) = delete;

  ~BulkImporterImpl() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;  // Without finish(): the writer aborts.
    }
    wake_all();
    join();
  }

  // Starts the threads and waits until the writer has begun its transaction.
  // Errors: as begin_import_txn.
  Status start() {
    std::promise<Status> begun;
    std::future<Status> result = begun.get_future();
    writer_ = std::thread([this, &begun] { writer_main(begun); });
    Status status = result.get();
    if (!status.ok()) {
      writer_.join();
      return status;
    }
    for (std::uint32_t i = 0; i < workers_count_; ++i) {
      workers_.emplace_back([this] { worker_main(); });
    }
    return Status();
  }

  bool add(schema::Entry& entry, std::uint64_t tag) override {
    if (failed_.load(std::memory_order_acquire)) {
      return false;
    }
    if (filling_ == nullptr) {
      std::unique_lock lock(mu_);
      moved_.wait(lock, [&] { return !free_.empty() || stopping_; });
      if (stopping_) {
        return false;
      }
      filling_ = free_.back();
      free_.pop_back();
    }
    ImportItem& item = filling_->items[filling_->size++];
    std::swap(item.entry, entry);
    item.tag = tag;
    item.csn = next_csn(now_, core_.options.server_id);
    if (filling_->size == batch_entries_) {
      hand_over();
    }
    return !failed_.load(std::memory_order_acquire);
  }

  Status finish() override { return drain(true); }

  const ImportFailure* abort() override {
    (void)drain(false);
    return failure();
  }

  const ImportFailure* failure() const override {
    return failed_.load(std::memory_order_acquire) ? &failure_ : nullptr;
  }

 private:
  using Clock = std::chrono::system_clock;

  struct Batch {
    std::vector<ImportItem> items;  // batch_entries_ of them; [0, size) in use.
    std::size_t size = 0;
    std::uint64_t seq = 0;  // Input order.
  };

  // Hands over what is queued, waits until the writer is done, and returns its outcome.
  Status drain(bool commit) {
    if (filling_ != nullptr) {
      hand_over();
    }
    {
      std::lock_guard lock(mu_);
      input_done_ = true;
      commit_ = commit;
    }
    wake_all();
    join();
    std::lock_guard lock(mu_);
    return writer_result_;
  }

  void hand_over() {
    {
      std::lock_guard lock(mu_);
      filling_->seq = sealed_++;
      to_prepare_.push_back(filling_);
    }
    filling_ = nullptr;
    moved_.notify_all();
  }

  void wake_all() { moved_.notify_all(); }

  void join() {
    if (writer_.joinable()) {
      writer_.join();
    }
    for (std::thread& worker : workers_) {
      worker.join();
    }
    workers_.clear();
  }

  void worker_main() {
    PrepareScratch scratch{stamp_, {}, {}, {}};
    while (true) {
      Batch* batch = nullptr;
      {
        std::unique_lock lock(mu_);
        moved_.wait(lock, [&] { return !to_prepare_.empty() || stopping_ || input_done_; });
        if (stopping_ || to_prepare_.empty()) {
          return;  // Stopped, or the input is done and everything is prepared.
        }
        batch = to_prepare_.front();
        to_prepare_.pop_front();
      }
      for (std::size_t i = 0; i < batch->size; ++i) {
        prepare_import_item(core_, batch->items[i], scratch);
      }
      {
        std::lock_guard lock(mu_);
        prepared_.push_back(batch);
      }
      moved_.notify_all();
    }
  }

  // Takes the prepared batch that comes next in input order. Returns: nullptr when everything
  // is stored or the import is stopping.
  Batch* next_prepared(std::uint64_t seq) {
    std::unique_lock lock(mu_);
    Batch* found = nullptr;
    moved_.wait(lock, [&] {
      if (stopping_ || (input_done_ && seq == sealed_)) {
        return true;
      }
      auto it = std::find_if(prepared_.begin(), prepared_.end(),
                             [&](const Batch* b) { return b->seq == seq; });
      if (it == prepared_.end()) {
        return false;
      }
      found = *it;
      prepared_.erase(it);
      return true;
    });
    return stopping_ ? nullptr : found;
  }

  void recycle(Batch* batch) {
    batch->size = 0;
    {
      std::lock_guard lock(mu_);
      free_.push_back(batch);
    }
    moved_.notify_all();
  }

  // Stores the batches in input order and commits, or aborts at the first failed entry or when
  // abandoned.
  void writer_main(std::promise<Status>& begun) NUMADIR_NO_THREAD_SAFETY_ANALYSIS {
    // LMDB ties a write transaction to its thread: this one begins, uses and ends it, holding
    // the writer mutex throughout.
    MutexLock write_lock(core_.write_mu);
    Result<ImportTxn> import_txn = begin_import_txn(core_);
    std::unique_ptr<ImportWriter> writer;
    Status status = import_txn.status();
    if (status.ok()) {
      writer = std::make_unique<ImportWriter>(core_, import_txn->txn.raw(), import_txn->next_id);
      status = writer->open();
    }
    begun.set_value(status);  // `begun` may be gone from here on.
    if (!status.ok()) {
      return;  // The transaction is aborted and the mutex released on the way out.
    }
    std::uint64_t seq = 0;
    while (Batch* batch = next_prepared(seq)) {
      for (std::size_t i = 0; i < batch->size && status.ok(); ++i) {
        status = writer->store(batch->items[i], failure_);
        if (!status.ok()) {
          failed_.store(true, std::memory_order_release);
        }
      }
      recycle(batch);
      ++seq;
      if (!status.ok()) {
        break;
      }
    }
    bool commit = false;
    {
      std::lock_guard lock(mu_);
      commit = commit_ && !stopping_;
      stopping_ = true;  // Whatever happens next, the other threads are done.
    }
    moved_.notify_all();
    if (status.ok() && !commit) {
      status = invalid_argument("import abandoned");
    }
    if (status.ok()) {
      status = commit_import(core_, import_txn->txn, writer);
    } else {
      writer.reset();
      import_txn->txn.abort();
    }
    std::lock_guard lock(mu_);
    writer_result_ = status;
  }

  DirectoryCore& core_;
  const Clock::time_point now_;
  const Stamp stamp_;
  const std::size_t batch_entries_;
  std::uint32_t workers_count_ = 0;
  std::vector<std::unique_ptr<Batch>> storage_;

  std::mutex mu_;
  // Any change below: a batch freed, handed over or prepared, the input done, stopping.
  std::condition_variable moved_;
  std::vector<Batch*> free_;       // Guarded by mu_.
  std::deque<Batch*> to_prepare_;  // Guarded by mu_: in input order.
  std::vector<Batch*> prepared_;   // Guarded by mu_: any order.
  std::uint64_t sealed_ = 0;       // Guarded by mu_: batches handed over.
  bool input_done_ = false;        // Guarded by mu_: finish() or abort() was called.
  bool commit_ = false;            // Guarded by mu_: finish() was called.
  bool stopping_ = false;          // Guarded by mu_: an entry failed, or abandoned.
  Status writer_result_;           // Guarded by mu_: the commit's outcome.

  // Set (release) by the writer after it wrote failure_, which nobody writes after.
  std::atomic<bool> failed_{false};
  ImportFailure failure_;

  Batch* filling_ = nullptr;  // Owner: the caller's thread.
  std::vector<std::thread> workers_;
  std::thread writer_;
};

}  // namespace

Result<std::unique_ptr<Importer>> run_begin_import(
    DirectoryCore& core, const UpdateContext& context) NUMADIR_NO_THREAD_SAFETY_ANALYSIS {
  core.write_mu.lock();  // Released by the importer's destructor.
  Result<ImportTxn> txn = begin_import_txn(core);
  if (!txn.ok()) {
    core.write_mu.unlock();
    return txn.status();
  }
  auto importer = std::make_unique<ImporterImpl>(core, std::move(txn->txn), txn->next_id, context);
  NUMADIR_RETURN_IF_ERROR(importer->open());
  return std::unique_ptr<Importer>(std::move(importer));
}

Result<std::unique_ptr<BulkImporter>> run_begin_bulk_import(DirectoryCore& core,
                                                            const UpdateContext& context,
                                                            const BulkImportOptions& options) {
  auto importer = std::make_unique<BulkImporterImpl>(core, context, options);
  NUMADIR_RETURN_IF_ERROR(importer->start());
  return std::unique_ptr<BulkImporter>(std::move(importer));
}

}  // namespace numadir::backend::detail
