// backend/lmdb_env.h: thin RAII wrappers over LMDB (environment, transactions, cursors, point
// operations). The one place where LMDB return codes become Status: lmdb_status(). MDB_NOTFOUND
// and MDB_KEYEXIST are ordinary outcomes here (a `false` result), never errors.
//
// Thread contract: an Env is opened once and shared; any thread may begin transactions on it
// (it is opened MDB_NOTLS, so a read transaction is not tied to the thread that began it, but
// one transaction and its cursors are used by one thread at a time). LMDB allows one write
// transaction at a time; callers serialize writers. Destroy an Env only after every Txn and
// Cursor on it is gone.
//
// Views: every std::string_view these functions return points into LMDB's memory map and is
// valid only until the transaction ends (commit, abort, reset) or, in a write transaction, until
// the next write to the same database.
#pragma once

#include <lmdb.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace numadir::backend {

using EntryId = std::uint64_t;
static_assert(sizeof(std::size_t) == sizeof(EntryId), "MDB_INTEGERKEY ids need a 64-bit size_t");

// The one translation of LMDB return codes. Returns: ok for MDB_SUCCESS; otherwise kStorage
// with "<operation>: <mdb_strerror text>" (MDB_MAP_FULL and MDB_READERS_FULL included).
Status lmdb_status(int rc, std::string_view operation);

// An id as the 8 native-endian bytes MDB_INTEGERKEY / MDB_INTEGERDUP expect. The view points
// into `id`, which must outlive it.
inline std::string_view id_bytes(const EntryId& id) {
  return std::string_view(reinterpret_cast<const char*>(&id), sizeof id);
}
// Returns: the id stored in `bytes`, or 0 when `bytes` is not 8 bytes long (0 is never an id).
inline EntryId load_id(std::string_view bytes) {
  EntryId id = 0;
  if (bytes.size() == sizeof id) {
    std::memcpy(&id, bytes.data(), sizeof id);
  }
  return id;
}

struct EnvOptions {
  std::filesystem::path path;  // A directory; must exist.
  std::uint64_t map_size_bytes = 0;
  std::uint32_t max_readers = 126;
  std::uint32_t max_dbs = 16;
  bool no_sync = false;  // MDB_NOSYNC.
  // MDB_WRITEMAP: a write transaction writes its pages straight into the memory map (no copy,
  // no dirty-page list to search or spill): for bulk loads. LMDB grows the data file to
  // map_size_bytes (sparse); the Env cuts it back to the pages in use when it closes.
  bool write_map = false;
  // MDB_RDONLY: no write transaction may begin and the data file is only read (LMDB still
  // takes a reader slot in the lock file). map_size_bytes 0 keeps the size the file records.
  bool read_only = false;
};

// An open LMDB environment (MDB_NOTLS). Non-copyable.
class Env {
 public:
  // Errors: kStorage (LMDB's text, naming the path).
  static Result<std::unique_ptr<Env>> open(const EnvOptions& options);
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  ~Env();

  MDB_env* raw() const { return env_; }

 private:
  Env(MDB_env* env, bool write_map) : env_(env), write_map_(write_map) {}
  // With write_map: truncates the data file to the pages in use, holding LMDB's writer lock so
  // that no other process extends the file meanwhile. Best effort: the file is valid either way.
  void shrink_data_file();

  MDB_env* env_;
  const bool write_map_;
};

// Copies the environment in directory `source` into directory `destination` (which must exist
// and hold no data.mdb), compacted (mdb_env_copy2 with MDB_CP_COMPACT: free pages left out),
// from one read transaction, so the copy is a consistent snapshot even while another process
// writes. `source` is opened MDB_RDONLY: its data file is only read.
// Errors: kNotFound when `source` holds no data.mdb; kStorage with LMDB's text (naming the
//   path) for anything else, e.g. a destination that already holds a data file.
Status copy_env_compacted(const std::filesystem::path& source,
                          const std::filesystem::path& destination);

// A transaction; aborted by the destructor unless committed. Move-only.
class Txn {
 public:
  // Errors: kStorage (e.g. MDB_READERS_FULL, MDB_MAP_RESIZED).
  static Result<Txn> begin(const Env& env, bool read_only);
  // Begins a write transaction nested in `parent` (a write transaction of the calling thread):
  // its commit hands its writes to the parent (no I/O), its abort drops them; the parent may
  // not be used until it ends. Not available in an MDB_WRITEMAP environment.
  // Errors: kStorage (e.g. MDB_INCOMPATIBLE with MDB_WRITEMAP, MDB_BAD_TXN).
  static Result<Txn> begin_nested(const Env& env, Txn& parent);
  Txn(Txn&& other) noexcept : txn_(other.txn_) { other.txn_ = nullptr; }
  Txn& operator=(Txn&& other) noexcept;
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  ~Txn() { abort(); }

  // Commits (a durable commit unless the Env is MDB_NOSYNC). The Txn is finished either way.
  // Errors: kStorage (e.g. MDB_MAP_FULL, an fsync failure).
  Status commit();
  void abort();
  MDB_txn* raw() const { return txn_; }

 private:
  explicit Txn(MDB_txn* txn) : txn_(txn) {}
  MDB_txn* txn_;
};

// Returns: the largest key LMDB accepts in this environment (511 with default builds).
std::size_t max_key_bytes(const Env& env);

// Read-transaction recycling for a long-lived MDB_NOTLS read txn (STYLE: one per worker).
// Errors: kStorage.
Status renew_read_txn(MDB_txn* txn);
void reset_read_txn(MDB_txn* txn);
void abort_txn(MDB_txn* txn);
// Returns: the transaction's id (a read txn: the last commit it sees; a write txn: the id its
// commit will have).
std::uint64_t txn_id(MDB_txn* txn);
// Begins a raw read-only transaction. Errors: kStorage.
Result<MDB_txn*> begin_raw_read_txn(const Env& env);

// Opens (creating if `flags` has MDB_CREATE) the named database. Call once at startup, inside a
// write transaction that is then committed. Errors: kStorage (MDB_DBS_FULL, flag mismatch...).
Result<MDB_dbi> open_dbi(MDB_txn* txn, const char* name, unsigned flags);

// Point operations. Results are `false` when the key (or key/value pair) is absent.
Result<bool> db_get(MDB_txn* txn, MDB_dbi dbi, std::string_view key, std::string_view* value);
// Errors: kStorage (MDB_MAP_FULL, MDB_BAD_VALSIZE for a key over the maximum key size...).
// Returns: false when flags hold MDB_NOOVERWRITE / MDB_NODUPDATA and the key / pair exists.
Result<bool> db_put(MDB_txn* txn, MDB_dbi dbi, std::string_view key, std::string_view value,
                    unsigned flags);
// Deletes `key` (all its duplicates when `value` is null) or the one key/value pair.
Result<bool> db_del(MDB_txn* txn, MDB_dbi dbi, std::string_view key, const std::string_view* value);
// Empties the database (and, with `remove`, deletes it and closes the handle).
Status db_drop(MDB_txn* txn, MDB_dbi dbi, bool remove);
// Returns: the number of key/data items in the database.
Result<std::uint64_t> db_entries(MDB_txn* txn, MDB_dbi dbi);

// A cursor on one database. Move-only; closed by the destructor (before its transaction ends
// for a write transaction; a read-only cursor may outlive a reset and be renew()ed).
class Cursor {
 public:
  // Errors: kStorage.
  static Result<Cursor> open(MDB_txn* txn, MDB_dbi dbi);
  Cursor() = default;
  Cursor(Cursor&& other) noexcept : cursor_(other.cursor_) { other.cursor_ = nullptr; }
  Cursor& operator=(Cursor&& other) noexcept;
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  ~Cursor() { close(); }

  bool is_open() const { return cursor_ != nullptr; }
  void close();
  // Rebinds a read-only cursor to a renewed read transaction. Errors: kStorage.
  Status renew(MDB_txn* txn);

  // Runs `op` (MDB_FIRST, MDB_NEXT, MDB_SET_RANGE with *key as input, MDB_GET_BOTH with *key
  // and *value as inputs...). Returns: false when there is no such item (MDB_NOTFOUND).
  Result<bool> get(MDB_cursor_op op, std::string_view* key, std::string_view* value);
  // Writes at the cursor. Returns: false for MDB_KEYEXIST (with MDB_NOOVERWRITE/NODUPDATA).
  Result<bool> put(std::string_view key, std::string_view value, unsigned flags);
  // Deletes the item at the cursor (MDB_NODUPDATA: every duplicate of its key).
  Status del(unsigned flags);
  // Returns: the number of duplicates of the current key.
  Result<std::uint64_t> count();

 private:
  explicit Cursor(MDB_cursor* cursor) : cursor_(cursor) {}
  MDB_cursor* cursor_ = nullptr;
};

// Read-only cursors of one long-lived read transaction, opened on first use and renewed
// (not reopened) after each reset/renew of the transaction. Never use it for a write
// transaction: LMDB frees a write transaction's cursors when it ends.
class CursorCache {
 public:
  CursorCache() = default;
  CursorCache(const CursorCache&) = delete;
  CursorCache& operator=(const CursorCache&) = delete;

  // Binds the cache to `txn` for the current operation (after begin or renew).
  void bind(MDB_txn* txn) {
    txn_ = txn;
    ++generation_;
  }
  // Drops every cursor (before the transaction is aborted for good).
  void close_all() { slots_.clear(); }
  // Returns: a cursor on `dbi` in the bound transaction; distinct `purpose`s get distinct
  // cursors (so a scan and a lookup on the same database do not move each other).
  // Errors: kStorage.
  Result<Cursor*> get(MDB_dbi dbi, int purpose = 0);

 private:
  struct Slot {
    MDB_dbi dbi;
    int purpose;
    Cursor cursor;
    std::uint64_t generation;
  };
  std::deque<Slot> slots_;  // A deque: push_back keeps earlier cursors in place.
  MDB_txn* txn_ = nullptr;
  std::uint64_t generation_ = 0;
};

}  // namespace numadir::backend
