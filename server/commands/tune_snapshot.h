// server/commands/tune_snapshot.h: the directory numadir tune measures on: a compacted copy of
// the live database (backend::copy_directory_snapshot: the live files are only read) with test
// users added to the copy, under the config's suffix, through the directory's own write path,
// their passwords hashed with the config's passwords.default_scheme (so a bind costs what it
// will cost in production).
//
//   ou=numadir-tune,<suffix>                  organizationalUnit
//   uid=tune-<i>,ou=numadir-tune,<suffix>     inetOrgPerson, i = 0 .. users-1, userPassword:
//                                             the scheme's hash of tune_password_template()
//                                             with <i> for "%d"
//
// A costly scheme (PBKDF2, ARGON2, CRYPT: a hash takes milliseconds to a quarter second) gives
// every user the same password and one stored value, hashed once: a bind checks it at the same
// cost, and the copy is made in a second instead of minutes.
//
// Thread contract: called on the main thread of `numadir tune`, before any private server
// starts; it starts (and joins) threads of its own to hash the passwords and closes the copy's
// Directory before it returns.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "base/status.h"
#include "server/formats/config.h"

namespace numadir::server {

inline constexpr std::string_view kTuneUsersRdn = "ou=numadir-tune";

// Returns: the DN the test users are under ("ou=numadir-tune,<suffix>").
std::string tune_users_base(const Config& config);
// Returns: authrate's templates for the test users ("%d": the user number).
std::string tune_filter_template();                       // "(uid=tune-%d)"
std::string tune_bind_dn_template(const Config& config);  // "uid=tune-%d,<base>", '%' escaped
// "tune-password-%d"; "tune-password" for a costly default_scheme.
std::string tune_password_template(const Config& config);

// Checks that `config`'s database can be copied without disturbing anything: its directory is
// there with a data.mdb, and no numadir serve holds it (tune measures on this machine's CPUs,
// and would measure that server too). Nothing is created or written.
// Errors: kNotFound "database DIR: no such directory" or "database DIR: no data.mdb in it
//   (import the directory first)"; kAlreadyExists "database DIR is in use by numadir serve (pid
//   N): stop it first (...)" ("pid unknown" when the server has not written it yet); kIo from
//   database_lock_holder (database_lock.h).
Status check_tune_database(const Config& config);

// Copies `config`'s database into `snapshot` (an existing empty directory) and adds `users`
// test users to the copy.
// Errors: kNotFound / kStorage from the copy ("database DIR: ..."); kNoSuchObject when the
//   copy has no suffix entry to put the users under; the schema's, the hash's or the add's
//   error otherwise, each naming what failed.
Status make_tune_snapshot(const Config& config, const std::filesystem::path& snapshot,
                          std::uint64_t users);

}  // namespace numadir::server
