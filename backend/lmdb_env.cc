// backend/lmdb_env.cc: LMDB wrappers; the one place LMDB return codes are translated.
#include "backend/lmdb_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>

namespace numadir::backend {
namespace {

MDB_val to_val(std::string_view bytes) {
  MDB_val val;
  val.mv_size = bytes.size();
  val.mv_data = const_cast<char*>(bytes.data());
  return val;
}

std::string_view from_val(const MDB_val& val) {
  return std::string_view(static_cast<const char*>(val.mv_data), val.mv_size);
}

}  // namespace

Status lmdb_status(int rc, std::string_view operation) {
  if (rc == MDB_SUCCESS) {
    return Status();
  }
  std::string message(operation);
  message += ": ";
  message += mdb_strerror(rc);
  return Status(StatusCode::kStorage, std::move(message));
}

Result<std::unique_ptr<Env>> Env::open(const EnvOptions& options) {
  MDB_env* env = nullptr;
  int rc = mdb_env_create(&env);
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_env_create");
  }
  rc = mdb_env_set_mapsize(env, static_cast<std::size_t>(options.map_size_bytes));
  if (rc == MDB_SUCCESS) {
    rc = mdb_env_set_maxreaders(env, options.max_readers);
  }
  if (rc == MDB_SUCCESS) {
    rc = mdb_env_set_maxdbs(env, options.max_dbs);
  }
  if (rc == MDB_SUCCESS) {
    unsigned flags = MDB_NOTLS;
    if (options.no_sync) {
      flags |= MDB_NOSYNC;
    }
    if (options.write_map) {
      flags |= MDB_WRITEMAP;
    }
    if (options.read_only) {
      flags |= MDB_RDONLY;
    }
    rc = mdb_env_open(env, options.path.c_str(), flags, 0600);
  }
  if (rc != MDB_SUCCESS) {
    mdb_env_close(env);
    return lmdb_status(rc, "opening LMDB environment " + options.path.string());
  }
  return std::unique_ptr<Env>(new Env(env, options.write_map));
}

Env::~Env() {
  if (write_map_) {
    shrink_data_file();
  }
  mdb_env_close(env_);
}

void Env::shrink_data_file() {
  // A write transaction holds the writer lock of every process: no one allocates pages past
  // the last one while the file is cut, and readers only touch pages of committed snapshots,
  // which all lie below it. The transaction writes nothing and is aborted.
  MDB_txn* txn = nullptr;
  if (mdb_txn_begin(env_, nullptr, 0, &txn) != MDB_SUCCESS) {
    return;
  }
  MDB_envinfo info;
  MDB_stat stat;
  mdb_filehandle_t fd;
  if (mdb_env_info(env_, &info) == MDB_SUCCESS && mdb_env_stat(env_, &stat) == MDB_SUCCESS &&
      mdb_env_get_fd(env_, &fd) == MDB_SUCCESS) {
    const off_t used = static_cast<off_t>(info.me_last_pgno + 1) * stat.ms_psize;
    struct stat file;
    // Best effort: a failed truncate leaves a larger file, as valid.
    if (fstat(fd, &file) == 0 && file.st_size > used && ftruncate(fd, used) != 0) {
      file.st_size = used;
    }
  }
  mdb_txn_abort(txn);
}

Status copy_env_compacted(const std::filesystem::path& source,
                          const std::filesystem::path& destination) {
  std::error_code error;
  if (!std::filesystem::exists(source / "data.mdb", error)) {
    return not_found("no LMDB data file (data.mdb) in " + source.string());
  }
  EnvOptions options;
  options.path = source;
  options.read_only = true;
  Result<std::unique_ptr<Env>> env = Env::open(options);
  if (!env.ok()) {
    return env.status();
  }
  return lmdb_status(mdb_env_copy2((*env)->raw(), destination.c_str(), MDB_CP_COMPACT),
                     "copying " + source.string() + " to " + destination.string());
}

Result<Txn> Txn::begin(const Env& env, bool read_only) {
  MDB_txn* txn = nullptr;
  const int rc = mdb_txn_begin(env.raw(), nullptr, read_only ? MDB_RDONLY : 0, &txn);
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_txn_begin");
  }
  return Txn(txn);
}

Result<Txn> Txn::begin_nested(const Env& env, Txn& parent) {
  MDB_txn* txn = nullptr;
  const int rc = mdb_txn_begin(env.raw(), parent.raw(), 0, &txn);
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_txn_begin (nested)");
  }
  return Txn(txn);
}

Txn& Txn::operator=(Txn&& other) noexcept {
  if (this != &other) {
    abort();
    txn_ = other.txn_;
    other.txn_ = nullptr;
  }
  return *this;
}

Status Txn::commit() {
  MDB_txn* txn = std::exchange(txn_, nullptr);
  if (txn == nullptr) {
    return Status(StatusCode::kInternal, "commit of a finished transaction");
  }
  return lmdb_status(mdb_txn_commit(txn), "mdb_txn_commit");
}

void Txn::abort() {
  if (txn_ != nullptr) {
    mdb_txn_abort(txn_);
    txn_ = nullptr;
  }
}

std::size_t max_key_bytes(const Env& env) {
  return static_cast<std::size_t>(mdb_env_get_maxkeysize(env.raw()));
}

Status renew_read_txn(MDB_txn* txn) { return lmdb_status(mdb_txn_renew(txn), "mdb_txn_renew"); }

void reset_read_txn(MDB_txn* txn) { mdb_txn_reset(txn); }

void abort_txn(MDB_txn* txn) { mdb_txn_abort(txn); }

std::uint64_t txn_id(MDB_txn* txn) { return static_cast<std::uint64_t>(mdb_txn_id(txn)); }

Result<MDB_txn*> begin_raw_read_txn(const Env& env) {
  MDB_txn* txn = nullptr;
  const int rc = mdb_txn_begin(env.raw(), nullptr, MDB_RDONLY, &txn);
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_txn_begin (read)");
  }
  return txn;
}

Result<MDB_dbi> open_dbi(MDB_txn* txn, const char* name, unsigned flags) {
  MDB_dbi dbi = 0;
  const int rc = mdb_dbi_open(txn, name, flags, &dbi);
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, std::string("mdb_dbi_open ") + name);
  }
  return dbi;
}

Result<bool> db_get(MDB_txn* txn, MDB_dbi dbi, std::string_view key, std::string_view* value) {
  MDB_val k = to_val(key);
  MDB_val v{};
  const int rc = mdb_get(txn, dbi, &k, &v);
  if (rc == MDB_NOTFOUND) {
    return false;
  }
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_get");
  }
  if (value != nullptr) {
    *value = from_val(v);
  }
  return true;
}

Result<bool> db_put(MDB_txn* txn, MDB_dbi dbi, std::string_view key, std::string_view value,
                    unsigned flags) {
  MDB_val k = to_val(key);
  MDB_val v = to_val(value);
  const int rc = mdb_put(txn, dbi, &k, &v, flags);
  if (rc == MDB_KEYEXIST) {
    return false;
  }
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_put");
  }
  return true;
}

Result<bool> db_del(MDB_txn* txn, MDB_dbi dbi, std::string_view key,
                    const std::string_view* value) {
  MDB_val k = to_val(key);
  MDB_val v{};
  if (value != nullptr) {
    v = to_val(*value);
  }
  const int rc = mdb_del(txn, dbi, &k, value != nullptr ? &v : nullptr);
  if (rc == MDB_NOTFOUND) {
    return false;
  }
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_del");
  }
  return true;
}

Status db_drop(MDB_txn* txn, MDB_dbi dbi, bool remove) {
  return lmdb_status(mdb_drop(txn, dbi, remove ? 1 : 0), "mdb_drop");
}

Result<std::uint64_t> db_entries(MDB_txn* txn, MDB_dbi dbi) {
  MDB_stat stat{};
  const int rc = mdb_stat(txn, dbi, &stat);
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_stat");
  }
  return static_cast<std::uint64_t>(stat.ms_entries);
}

Result<Cursor> Cursor::open(MDB_txn* txn, MDB_dbi dbi) {
  MDB_cursor* cursor = nullptr;
  const int rc = mdb_cursor_open(txn, dbi, &cursor);
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_cursor_open");
  }
  return Cursor(cursor);
}

Cursor& Cursor::operator=(Cursor&& other) noexcept {
  if (this != &other) {
    close();
    cursor_ = other.cursor_;
    other.cursor_ = nullptr;
  }
  return *this;
}

void Cursor::close() {
  if (cursor_ != nullptr) {
    mdb_cursor_close(cursor_);
    cursor_ = nullptr;
  }
}

Status Cursor::renew(MDB_txn* txn) {
  return lmdb_status(mdb_cursor_renew(txn, cursor_), "mdb_cursor_renew");
}

Result<bool> Cursor::get(MDB_cursor_op op, std::string_view* key, std::string_view* value) {
  MDB_val k{};
  MDB_val v{};
  if (key != nullptr) {
    k = to_val(*key);
  }
  if (value != nullptr) {
    v = to_val(*value);
  }
  const int rc = mdb_cursor_get(cursor_, &k, &v, op);
  if (rc == MDB_NOTFOUND) {
    return false;
  }
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_cursor_get");
  }
  if (key != nullptr) {
    *key = from_val(k);
  }
  if (value != nullptr) {
    *value = from_val(v);
  }
  return true;
}

Result<bool> Cursor::put(std::string_view key, std::string_view value, unsigned flags) {
  MDB_val k = to_val(key);
  MDB_val v = to_val(value);
  const int rc = mdb_cursor_put(cursor_, &k, &v, flags);
  if (rc == MDB_KEYEXIST) {
    return false;
  }
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_cursor_put");
  }
  return true;
}

Status Cursor::del(unsigned flags) {
  return lmdb_status(mdb_cursor_del(cursor_, flags), "mdb_cursor_del");
}

Result<std::uint64_t> Cursor::count() {
  std::size_t count = 0;
  const int rc = mdb_cursor_count(cursor_, &count);
  if (rc != MDB_SUCCESS) {
    return lmdb_status(rc, "mdb_cursor_count");
  }
  return static_cast<std::uint64_t>(count);
}

Result<Cursor*> CursorCache::get(MDB_dbi dbi, int purpose) {
  for (Slot& slot : slots_) {
    if (slot.dbi == dbi && slot.purpose == purpose) {
      if (slot.generation != generation_) {
        NUMADIR_RETURN_IF_ERROR(slot.cursor.renew(txn_));
        slot.generation = generation_;
      }
      return &slot.cursor;
    }
  }
  Result<Cursor> cursor = Cursor::open(txn_, dbi);
  if (!cursor.ok()) {
    return cursor.status();
  }
  slots_.push_back(Slot{dbi, purpose, std::move(*cursor), generation_});
  return &slots_.back().cursor;
}

}  // namespace numadir::backend
