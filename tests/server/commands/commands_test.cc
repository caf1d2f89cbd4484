// The numadir subcommands on real files: import (all or nothing), export, index, passwd.
#include "server/commands/commands.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "backend/password_scheme.h"
#include "server/commands/opened_directory.h"
#include "server/formats/config.h"

namespace numadir::server {
namespace {

constexpr const char* kBase = R"(dn: dc=example,dc=com
objectClass: dcObject
objectClass: organization
dc: example
o: Example

dn: ou=people,dc=example,dc=com
objectClass: organizationalUnit
ou: people

)";

std::string user(int i) {
  return "dn: uid=user" + std::to_string(i) +
         ",ou=people,dc=example,dc=com\nobjectClass: inetOrgPerson\nuid: user" + std::to_string(i) +
         "\ncn: User " + std::to_string(i) + "\nsn: Smith\n\n";
}

// A fresh directory with a config file in it.
class Workspace {
 public:
  Workspace() {
    dir_ = std::filesystem::temp_directory_path() /
           ("numadir-commands-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    write("numadir.toml",
          "[database]\npath = \"db\"\nsuffix = \"dc=example,dc=com\"\nmap_size = \"64MiB\"\n"
          "indexes = [\"objectClass eq\", \"uid eq\"]\n");
  }
  ~Workspace() { std::filesystem::remove_all(dir_); }

  std::filesystem::path path(const std::string& name) const { return dir_ / name; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  std::uint64_t entry_count() const {
    auto config = load_config(path("numadir.toml"));
    REQUIRE(config.ok());
    auto opened = open_directory(*config, backend::OpenMode::kMustExist);
    REQUIRE_MESSAGE(opened.ok(), opened.status().to_string());
    auto count = opened->directory->entry_count();
    REQUIRE(count.ok());
    return *count;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
};

int import_file(const Workspace& ws, const std::string& ldif, std::string& errors,
                bool allow_costly_hashes = false) {
  std::ostringstream out;
  std::ostringstream err;
  ImportOptions options;
  options.config = ws.path("numadir.toml");
  options.input = ws.path(ldif).string();
  options.progress = false;
  options.allow_costly_hashes = allow_costly_hashes;
  const int status = run_import(options, out, err);
  errors = err.str();
  return status;
}

TEST_CASE("Commands: import loads every entry and export writes them back") {
  Workspace ws;
  ws.write("users.ldif", std::string(kBase) + user(1) + user(2));
  std::string errors;
  REQUIRE_MESSAGE(import_file(ws, "users.ldif", errors) == 0, errors);
  CHECK(errors.find("import: 4 entries") != std::string::npos);
  CHECK(ws.entry_count() == 4);

  std::ostringstream out;
  std::ostringstream err;
  ExportOptions export_options;
  export_options.config = ws.path("numadir.toml");
  REQUIRE(run_export(export_options, out, err) == 0);
  const std::string exported = out.str();
  CHECK(exported.find("dn: uid=user2,ou=people,dc=example,dc=com\n") != std::string::npos);
  CHECK(exported.find("entryUUID: ") != std::string::npos);
  // Parents come before children.
  CHECK(exported.find("dn: dc=example,dc=com") < exported.find("dn: ou=people"));
  CHECK(exported.find("dn: ou=people") < exported.find("dn: uid=user1"));

  // The export imports into a fresh directory.
  Workspace again;
  again.write("export.ldif", exported);
  REQUIRE_MESSAGE(import_file(again, "export.ldif", errors) == 0, errors);
  CHECK(again.entry_count() == 4);

  IndexOptions index_options;
  index_options.config = ws.path("numadir.toml");
  index_options.verify = true;
  CHECK(run_index(index_options, out, err) == 0);
  index_options.verify = false;
  CHECK(run_index(index_options, out, err) == 0);
  index_options.verify = true;
  CHECK(run_index(index_options, out, err) == 0);
}

TEST_CASE("Commands: a bad record stops the import with its line and commits nothing") {
  Workspace ws;
  SUBCASE("malformed LDIF") {
    // Record 4 (user 2) starts on line 17; its base64 value, on line 18, is bad.
    ws.write("bad.ldif", std::string(kBase) + user(1) +
                             "dn: uid=user2,ou=people,dc=example,dc=com\ncn:: ***\n\n");
    std::string errors;
    CHECK(import_file(ws, "bad.ldif", errors) == 1);
    CHECK(errors.find("line 18 (record at line 17)") != std::string::npos);
    CHECK(errors.find("nothing was imported") != std::string::npos);
  }
  SUBCASE("schema violation") {
    ws.write("bad.ldif", std::string(kBase) + user(1) +
                             "dn: uid=user2,ou=people,dc=example,dc=com\n"
                             "objectClass: inetOrgPerson\nuid: user2\ncn: User 2\n\n");
    std::string errors;
    CHECK(import_file(ws, "bad.ldif", errors) == 1);
    CHECK(errors.find(":17: dn \"uid=user2,ou=people,dc=example,dc=com\": object class "
                      "violation") != std::string::npos);
    CHECK(errors.find("'sn'") != std::string::npos);
  }
  SUBCASE("a bad entry queued before a malformed record") {
    // Entries are checked on other threads while the LDIF is read on: the entry that failed
    // first in the input is the one reported.
    std::string ldif = std::string(kBase) + user(1) +
                       "dn: uid=user2,ou=people,dc=example,dc=com\n"
                       "objectClass: inetOrgPerson\nuid: user2\ncn: User 2\n\n";
    ldif += "dn: uid=user3,ou=people,dc=example,dc=com\ncn:: ***\n\n";
    ws.write("bad.ldif", ldif);
    std::string errors;
    CHECK(import_file(ws, "bad.ldif", errors) == 1);
    CHECK(errors.find(":17: dn \"uid=user2,ou=people,dc=example,dc=com\": object class "
                      "violation") != std::string::npos);
    CHECK(errors.find("line 22") == std::string::npos);
    CHECK(errors.find("nothing was imported") != std::string::npos);
  }
  SUBCASE("a missing parent") {
    ws.write("bad.ldif", std::string(kBase) + user(1) +
                             "dn: uid=x,ou=nowhere,dc=example,dc=com\nobjectClass: account\n"
                             "uid: x\n\n" +
                             user(2));
    std::string errors;
    CHECK(import_file(ws, "bad.ldif", errors) == 1);
    // The parent itself (as slapadd names it), not the nearest entry there is.
    CHECK(errors.find(":17: dn \"uid=x,ou=nowhere,dc=example,dc=com\": no such object: its "
                      "parent \"ou=nowhere,dc=example,dc=com\" is not in the LDIF before it "
                      "(parents come before their children)\n") != std::string::npos);
  }
  SUBCASE("a DN twice") {
    // user1 starts on line 11, user2 on 17, the second user1 on 23.
    ws.write("bad.ldif", std::string(kBase) + user(1) + user(2) + user(1));
    std::string errors;
    CHECK(import_file(ws, "bad.ldif", errors) == 1);
    CHECK(errors.find("bad.ldif:23: dn \"uid=user1,ou=people,dc=example,dc=com\": already at "
                      "line 11\n") != std::string::npos);
    CHECK(errors.find("nothing was imported") != std::string::npos);
  }
  SUBCASE("change record") {
    ws.write("bad.ldif", std::string(kBase) +
                             "dn: uid=x,ou=people,dc=example,dc=com\nchangetype: add\nuid: x\n\n");
    std::string errors;
    CHECK(import_file(ws, "bad.ldif", errors) == 1);
    CHECK(errors.find("change records") != std::string::npos);
  }
  CHECK(ws.entry_count() == 0);
}

TEST_CASE("Commands: a large import keeps its indexes consistent and its data file small") {
  Workspace ws;
  std::string ldif = kBase;
  for (int i = 0; i < 3000; ++i) {
    ldif += user(i);
  }
  ws.write("users.ldif", ldif);
  std::string errors;
  REQUIRE_MESSAGE(import_file(ws, "users.ldif", errors) == 0, errors);
  CHECK(errors.find("import: 3002 entries") != std::string::npos);
  CHECK(ws.entry_count() == 3002);
  std::ostringstream out;
  std::ostringstream err;
  IndexOptions index_options;
  index_options.config = ws.path("numadir.toml");
  index_options.verify = true;
  CHECK(run_index(index_options, out, err) == 0);
  // The import maps the database MDB_WRITEMAP, which grows the file to the map size (64 MiB);
  // closing cuts it back to the pages in use.
  CHECK(std::filesystem::file_size(ws.path("db") / "data.mdb") < (std::uintmax_t{16} << 20));
}

TEST_CASE("Commands: import refuses a missing file and a bad config with the reason") {
  Workspace ws;
  std::string errors;
  CHECK(import_file(ws, "absent.ldif", errors) == 1);
  CHECK(errors == "numadir import: cannot open LDIF file '" + ws.path("absent.ldif").string() +
                      "': No such file or directory\n");
  CHECK_FALSE(std::filesystem::exists(ws.path("db")));  // The input is opened first.
  std::filesystem::create_directory(ws.path("a-directory.ldif"));
  CHECK(import_file(ws, "a-directory.ldif", errors) == 1);
  CHECK(errors.find(ws.path("a-directory.ldif").string() +
                    ": read error on the input: Is a directory\n") != std::string::npos);

  ws.write("numadir.toml", "[database]\npath = \"db\"\n");
  ws.write("users.ldif", kBase);
  CHECK(import_file(ws, "users.ldif", errors) == 1);
  CHECK(errors.find("database.suffix: missing") != std::string::npos);
}

TEST_CASE("Commands: import refuses a database that holds entries naming its path") {
  Workspace ws;
  ws.write("users.ldif", std::string(kBase) + user(1));
  std::string errors;
  REQUIRE_MESSAGE(import_file(ws, "users.ldif", errors) == 0, errors);
  CHECK(import_file(ws, "users.ldif", errors) == 1);
  CHECK(errors == "numadir import: database.path " + ws.path("db").string() +
                      " already holds 3 entries: import loads only into an empty database; "
                      "move it away or point database.path elsewhere\n");
  CHECK(ws.entry_count() == 3);
}

TEST_CASE("Commands: export and index refuse a missing database and create nothing") {
  Workspace ws;
  const std::string expected = "database.path " + ws.path("db").string() +
                               ": no database there (numadir import creates one)\n";
  std::ostringstream out;
  std::ostringstream err;
  SUBCASE("export") {
    ExportOptions options;
    options.config = ws.path("numadir.toml");
    CHECK(run_export(options, out, err) == 1);
    CHECK(err.str() == "numadir export: " + expected);
  }
  SUBCASE("index") {
    IndexOptions options;
    options.config = ws.path("numadir.toml");
    CHECK(run_index(options, out, err) == 1);
    CHECK(err.str() == "numadir index: " + expected);
  }
  SUBCASE("index --verify, on an empty directory") {
    std::filesystem::create_directory(ws.path("db"));
    IndexOptions options;
    options.config = ws.path("numadir.toml");
    options.verify = true;
    CHECK(run_index(options, out, err) == 1);
    CHECK(err.str() == "numadir index: " + expected);
    CHECK(std::filesystem::is_empty(ws.path("db")));
    std::filesystem::remove(ws.path("db"));
  }
  CHECK(out.str().empty());
  CHECK_FALSE(std::filesystem::exists(ws.path("db")));
}

// A user entry with `password` as its userPassword value.
std::string user_with_password(int i, const std::string& password) {
  std::string entry = user(i);
  entry.insert(entry.size() - 1, "userPassword: " + password + "\n");
  return entry;
}

// 1 GiB of argon2 memory, 10 million PBKDF2 iterations: well-formed, never computed here.
const std::string kCostlyArgon2 =
    "{ARGON2}$argon2id$v=19$m=1048576,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$"
    "CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc";
const std::string kCostlyPbkdf2 =
    "{PBKDF2-SHA512}10000000$uEt6/HSZ1F12Twniv6DuTw$XelwTh/LPICgouYSFZJ3laPqG4soNTiPdxyB/3poAHaYa"
    "VDvFGTjay2SlsRgtUReIJ5TPoCbkG4toNcgRLzCkA";

TEST_CASE("Commands: import refuses a userPassword over a cost ceiling naming the entry") {
  Workspace ws;
  // user2's record starts on line 17.
  ws.write("costly.ldif", std::string(kBase) + user(1) + user_with_password(2, kCostlyArgon2) +
                              user_with_password(3, kCostlyPbkdf2));
  std::string errors;
  CHECK(import_file(ws, "costly.ldif", errors) == 1);
  CHECK_MESSAGE(errors.find("costly.ldif:17: dn \"uid=user2,ou=people,dc=example,dc=com\": "
                            "userPassword: argon2 memory 1048576 KiB over "
                            "passwords.max_argon2_memory_kib (65536)") != std::string::npos,
                errors);
  CHECK(errors.find("--allow-costly-hashes") != std::string::npos);
  CHECK(errors.find("nothing was imported") != std::string::npos);
  CHECK(ws.entry_count() == 0);
}

TEST_CASE("Commands: import keeps costly userPassword values when allowed and counts them") {
  Workspace ws;
  Result<std::string> usual = backend::hash_password("s3cret", backend::PasswordScheme::kArgon2);
  REQUIRE(usual.ok());
  ws.write("costly.ldif", std::string(kBase) + user_with_password(1, *usual) +
                              user_with_password(2, kCostlyArgon2) +
                              user_with_password(3, kCostlyPbkdf2));
  std::string errors;
  REQUIRE_MESSAGE(import_file(ws, "costly.ldif", errors, /*allow_costly_hashes=*/true) == 0,
                  errors);
  CHECK(ws.entry_count() == 5);
  CHECK_MESSAGE(errors.find("kept 2 userPassword value(s) over the [passwords] cost ceilings "
                            "(--allow-costly-hashes)") != std::string::npos,
                errors);
  // user2's record starts on line 18 (user1's has a userPassword line).
  CHECK(errors.find("costly.ldif:18: dn \"uid=user2,ou=people,dc=example,dc=com\"") !=
        std::string::npos);
}

TEST_CASE("Commands: import takes values within the ceilings and raised ceilings without a word") {
  Workspace ws;
  SUBCASE("within the defaults") {
    Result<std::string> usual = backend::hash_password("s3cret", backend::PasswordScheme::kArgon2);
    REQUIRE(usual.ok());
    ws.write("users.ldif", std::string(kBase) + user_with_password(1, *usual) +
                               user_with_password(2, "{SSHA}jJ/M4rqPnDRtZqfPh5U+KJmYLcjlx+87"));
  }
  SUBCASE("a ceiling raised in the config") {
    ws.write("numadir.toml",
             "[database]\npath = \"db\"\nsuffix = \"dc=example,dc=com\"\nmap_size = \"64MiB\"\n"
             "[passwords]\nmax_argon2_memory_kib = 1048576\n");
    ws.write("users.ldif", std::string(kBase) + user_with_password(1, kCostlyArgon2));
  }
  std::string errors;
  REQUIRE_MESSAGE(import_file(ws, "users.ldif", errors) == 0, errors);
  CHECK(errors.find("kept") == std::string::npos);
}

TEST_CASE("Commands: passwd prints a hash that verifies") {
  std::istringstream in;
  std::ostringstream out;
  std::ostringstream err;
  PasswdOptions options;
  options.secret = "s3cret";
  SUBCASE("default scheme") {}
  SUBCASE("slappasswd-style scheme name") { options.scheme = "{SSHA}"; }
  SUBCASE("argon2") { options.scheme = "ARGON2"; }
  SUBCASE("pbkdf2") { options.scheme = "PBKDF2-SHA512"; }
  SUBCASE("crypt") { options.scheme = "CRYPT"; }
  REQUIRE(run_passwd(options, in, out, err) == 0);
  std::string hash = out.str();
  REQUIRE(!hash.empty());
  hash.pop_back();  // The newline.
  // What numadir passwd writes by default is within the default cost ceilings.
  CHECK_FALSE(backend::password_cost_excess(hash, backend::PasswordCostLimits{}).has_value());
  auto verified = backend::verify_password("s3cret", hash);
  REQUIRE(verified.ok());
  CHECK(*verified);
  auto wrong = backend::verify_password("other", hash);
  REQUIRE(wrong.ok());
  CHECK_FALSE(*wrong);
}

TEST_CASE("Commands: passwd reads the password twice from input and refuses a mismatch") {
  std::ostringstream out;
  std::ostringstream err;
  PasswdOptions options;
  std::istringstream same("pw1\npw1\n");
  CHECK(run_passwd(options, same, out, err) == 0);
  std::istringstream different("pw1\npw2\n");
  CHECK(run_passwd(options, different, out, err) == 1);
  CHECK(err.str().find("do not match") != std::string::npos);
  options.scheme = "rot13";
  std::istringstream any("x\nx\n");
  CHECK(run_passwd(options, any, out, err) == 2);
}

TEST_CASE("Commands: topology prints the plan that server listeners and workers ask for") {
  Workspace workspace;
  const std::filesystem::path config = workspace.path("threads.toml");
  std::ofstream(config) << "[database]\npath = \"db\"\nsuffix = \"dc=example,dc=com\"\n"
                           "[server]\nlisteners = 1\nworkers = 1\n";
  TopologyOptions options;
  options.synthetic = "numa:2 core:4 pu:2";
  options.config = config;
  std::ostringstream out;
  std::ostringstream err;
  REQUIRE_MESSAGE(run_topology(options, out, err) == 0, err.str());
  CHECK_MESSAGE(out.str().find("pinned, 2 nodes, 2 listeners, 2 workers") != std::string::npos,
                out.str());
  CHECK(out.str().find("worker-1-0") != std::string::npos);
  CHECK(out.str().find("worker-0-1") == std::string::npos);

  options.config.reset();  // Auto: one worker per PU.
  std::ostringstream automatic;
  REQUIRE(run_topology(options, automatic, err) == 0);
  CHECK_MESSAGE(automatic.str().find("16 workers") != std::string::npos, automatic.str());
}

}  // namespace
}  // namespace numadir::server
