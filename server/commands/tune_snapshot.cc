// server/commands/tune_snapshot.cc: see tune_snapshot.h.
#include "server/commands/tune_snapshot.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include "backend/directory.h"
#include "backend/password_scheme.h"
#include "server/commands/database_lock.h"
#include "server/commands/opened_directory.h"

namespace numadir::server {
namespace {

std::string expand(std::string_view template_text, std::uint64_t number) {
  std::string out;
  for (std::size_t i = 0; i < template_text.size(); ++i) {
    if (template_text.substr(i, 2) == "%d") {
      out += std::to_string(number);
      ++i;
    } else if (template_text.substr(i, 2) == "%%") {
      out += '%';
      ++i;
    } else {
      out += template_text[i];
    }
  }
  return out;
}

// Hashes every user's password (`password_template`) with `scheme`, on as many threads as
// there are CPUs. Errors: the first hash_password error.
Result<std::vector<std::string>> hash_passwords(std::uint64_t users,
                                                const std::string& password_template,
                                                backend::PasswordScheme scheme) {
  if (backend::password_scheme_costly(scheme)) {
    Result<std::string> hash = backend::hash_password(password_template, scheme);
    if (!hash.ok()) {
      return Status(hash.status().code(),
                    "hashing the test users' password: " + hash.status().message());
    }
    return std::vector<std::string>(users, *hash);
  }
  std::vector<std::string> hashes(users);
  std::vector<Status> failures(users);
  std::atomic<std::uint64_t> next{0};
  const unsigned threads = std::max(
      1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(users)));
  std::vector<std::thread> running;
  for (unsigned t = 0; t < threads; ++t) {
    running.emplace_back([&] {
      // Relaxed: each index is taken once; the join publishes the results.
      for (std::uint64_t i = next.fetch_add(1, std::memory_order_relaxed); i < users;
           i = next.fetch_add(1, std::memory_order_relaxed)) {
        Result<std::string> hash = backend::hash_password(expand(password_template, i), scheme);
        if (hash.ok()) {
          hashes[i] = std::move(*hash);
        } else {
          failures[i] = hash.status();
        }
      }
    });
  }
  for (std::thread& thread : running) {
    thread.join();
  }
  for (const Status& failure : failures) {
    if (!failure.ok()) {
      return Status(failure.code(), "hashing the test users' passwords: " + failure.message());
    }
  }
  return hashes;
}

}  // namespace

std::string tune_users_base(const Config& config) {
  return std::string(kTuneUsersRdn) + "," + config.database.suffix;
}

std::string tune_filter_template() { return "(uid=tune-%d)"; }

std::string tune_bind_dn_template(const Config& config) {
  std::string base;
  for (const char c : tune_users_base(config)) {
    base += c;
    if (c == '%') {
      base += '%';
    }
  }
  return "uid=tune-%d," + base;
}

std::string tune_password_template(const Config& config) {
  return backend::password_scheme_costly(config.default_password_scheme) ? "tune-password"
                                                                         : "tune-password-%d";
}

Status check_tune_database(const Config& config) {
  const std::filesystem::path& database = config.database.path;
  std::error_code ec;
  if (!std::filesystem::is_directory(database, ec)) {
    return Status(StatusCode::kNotFound, "database " + database.string() + ": no such directory");
  }
  if (!std::filesystem::exists(database / "data.mdb", ec)) {
    return Status(StatusCode::kNotFound, "database " + database.string() +
                                             ": no data.mdb in it (import the directory first)");
  }
  Result<std::optional<pid_t>> holder = database_lock_holder(database);
  if (!holder.ok()) {
    return holder.status();
  }
  if (holder->has_value()) {
    return Status(
        StatusCode::kAlreadyExists,
        "database " + database.string() + " is in use by numadir serve (" +
            (**holder > 0 ? "pid " + std::to_string(**holder) : std::string("pid unknown")) +
            "): stop it first (tune measures on this machine's CPUs, and would measure "
            "it too)");
  }
  return Status();
}

Status make_tune_snapshot(const Config& config, const std::filesystem::path& snapshot,
                          std::uint64_t users) {
  const std::string database = "database " + config.database.path.string() + ": ";
  if (Status copied = backend::copy_directory_snapshot(config.database.path, snapshot);
      !copied.ok()) {
    return Status(copied.code(), database + copied.message());
  }
  Result<std::vector<std::string>> hashes =
      hash_passwords(users, tune_password_template(config), config.default_password_scheme);
  if (!hashes.ok()) {
    return hashes.status();
  }
  Result<std::unique_ptr<schema::Schema>> schema = load_schema(config);
  if (!schema.ok()) {
    return schema.status();
  }
  backend::DirectoryOptions options = config.database;
  options.path = snapshot;
  options.durability = backend::Durability::kNoSync;  // A copy thrown away at the end.
  Result<std::unique_ptr<backend::Directory>> directory =
      backend::Directory::open(**schema, options, backend::OpenMode::kMustExist);
  if (!directory.ok()) {
    return Status(directory.status().code(),
                  "the snapshot " + snapshot.string() + ": " + directory.status().message());
  }
  const std::string base = tune_users_base(config);
  schema::Entry unit{base,
                     {{"objectClass", {"top", "organizationalUnit"}}, {"ou", {"numadir-tune"}}}};
  if (Status added = (*directory)->add(unit, {}); !added.ok()) {
    if (added.code() == StatusCode::kNoSuchObject) {
      return Status(added.code(), database + "has no entry " + config.database.suffix +
                                      " (database.suffix) to add the test users under");
    }
    return Status(added.code(), "adding " + base + " to the snapshot: " + added.message());
  }
  for (std::uint64_t i = 0; i < users; ++i) {
    const std::string uid = "tune-" + std::to_string(i);
    schema::Entry user{"uid=" + uid + "," + base,
                       {{"objectClass", {"top", "person", "organizationalPerson", "inetOrgPerson"}},
                        {"uid", {uid}},
                        {"cn", {"numadir tune user " + std::to_string(i)}},
                        {"sn", {"tune"}},
                        {"userPassword", {std::move((*hashes)[i])}}}};
    if (Status added = (*directory)->add(user, {}); !added.ok()) {
      return Status(added.code(), "adding " + user.dn + " to the snapshot: " + added.message());
    }
  }
  return Status();
}

}  // namespace numadir::server
