// backend/directory_options.h: how a Directory is opened (DirectoryOptions, its index specs, its
// durability and whether the open may create a database): part of directory.h's face, apart so
// that the files behind a Directory (detail/directory_core.h, the indexes) take the options
// without the Directory class.
//
// Thread contract: plain values, built by the caller of Directory::open and immutable afterwards
// (DirectoryCore keeps its own const copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace numadir::backend {

// Which index kinds an attribute has (slapd's `index cn eq,sub`).
struct IndexSpec {
  std::string attribute;  // A name or OID the schema knows.
  bool equality = false;
  bool presence = false;
  bool substrings = false;
  bool ordering = false;
};

enum class Durability {
  // Default: every committed write is fsync'ed before it is acknowledged; survives kill -9 and
  // power loss.
  kSync,
  // MDB_NOSYNC: commits are not flushed; a process crash loses nothing, an OS crash or power
  // loss may lose the last writes (the database stays consistent). Opt-in, for bulk loads.
  kNoSync,
};

// Whether Directory::open may make a database where there is none. Only the commands that
// write a directory (serve, import) create one: a command that reads a database (export, index)
// must not turn a misspelt path into an empty directory that looks like an empty database.
enum class OpenMode : std::uint8_t {
  // Creates options.path (and its parents) and an empty database in it when missing.
  kCreate,
  // Opens only a database that is there (options.path holding data.mdb); creates nothing, not
  // even the directory or LMDB's lock file, when it is not.
  kMustExist,
};

struct DirectoryOptions {
  std::filesystem::path path;  // A directory; see OpenMode for who creates it.
  std::uint64_t map_size_bytes = std::uint64_t{8} << 30;
  std::string suffix;  // The naming context, e.g. "dc=example,dc=com".
  std::vector<IndexSpec> indexes;
  Durability durability = Durability::kSync;
  // LMDB reader slots. Every thread that reads keeps one while it lives (its ReadTxn is reset,
  // not aborted, between operations): each worker and each listener that helps its pool, so a
  // large machine's auto plan (a worker per PU) needs hundreds. A slot is 64 bytes of lock
  // file; LMDB scans only the slots ever used.
  std::uint32_t max_readers = 4096;
  // LMDB's MDB_WRITEMAP, for a process that bulk-loads (numadir import): faster large write
  // transactions; commits stay as durable. Other processes may open the same directory without
  // it meanwhile.
  bool write_map = false;
  // The server id written into every CSN (entryCSN, change records), 0..4095 (kMaxServerId),
  // as OpenLDAP's serverID: replicas of one directory need distinct ids.
  std::uint32_t server_id = 0;
  // The writer's bounds: jobs waiting (Directory::try_submit_update refuses and
  // submit_update waits past it),
  // and the jobs and approximate bytes of one batch (one commit).
  std::size_t writer_queue_jobs = 4096;
  std::size_t writer_batch_jobs = 256;
  std::size_t writer_batch_bytes = std::size_t{16} << 20;
  // The session log (slapd's syncprov-sessionlog): the last this many changes (their CSN,
  // kind and entryUUID), kept in LMDB in the transaction of each change, for a replication
  // consumer to catch up on deletes without a present phase (session_log_since). 0: none (and
  // a log kept before is cleared: turned on again, it begins afresh). A smaller bound than the
  // log was kept with trims it at open. Applied by an open with OpenMode::kCreate; an open with
  // kMustExist (export, index) keeps the log as stored, with its stored bound.
  std::uint64_t session_log_entries = 0;
};

}  // namespace numadir::backend
