// numadir check-config (server/commands/check_config_command.cc): a config that parses but whose
// access rules name what the schema lacks, or a DN the operations' checks refuse, is refused with
// the rule and key, before anything starts; a rootpw the file shows to others is only a warning.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "server/commands/commands.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::server {
namespace {

constexpr const char* kDatabase = "[database]\npath = \"db\"\nsuffix = \"dc=example,dc=com\"\n";

// Runs check-config on `text`; returns its status, with its output in `out` and `err`.
int check_config(const std::string& text, std::string& out, std::string& err) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("numadir-check-config-" + std::to_string(getpid()) + ".toml");
  std::ofstream(path, std::ios::binary) << text;
  std::ostringstream out_stream;
  std::ostringstream err_stream;
  const int status = run_check_config(path, out_stream, err_stream);
  std::filesystem::remove(path);
  out = out_stream.str();
  err = err_stream.str();
  return status;
}

TEST_CASE("check-config: access rules are checked against the schema") {
  std::string out;
  std::string err;
  CHECK(check_config(std::string(kDatabase) +
                         "[[access]]\nattrs = [\"mail\", \"entry\"]\n"
                         "by = [{ group = \"cn=admins,dc=example,dc=com\", access = \"write\" }]\n",
                     out, err) == 0);
  CHECK(out.find(": ok") != std::string::npos);

  CHECK(check_config(std::string(kDatabase) +
                         "[[access]]\nby = [{ who = \"*\", access = \"read\" }]\n"
                         "[[access]]\nattrs = [\"noSuchAttr\"]\n"
                         "by = [{ who = \"*\", access = \"read\" }]\n",
                     out, err) == 1);
  CHECK(err.find("access[1].attrs: \"noSuchAttr\" is not an attribute type of the schema") !=
        std::string::npos);

  CHECK(check_config(std::string(kDatabase) +
                         "[[access]]\nby = [{ dn = \"noSuchType=x\", access = \"read\" }]\n",
                     out, err) == 1);
  CHECK(err.find("access[0].by.dn:") != std::string::npos);

  // Parses as a DN, but the value is no INTEGER: serve would refuse it, so check-config does.
  CHECK(check_config(std::string(kDatabase) +
                         "[[access]]\nby = [{ dn = \"uidNumber=abc,dc=example,dc=com\", access = "
                         "\"read\" }]\n",
                     out, err) == 1);
  CHECK(err.find("access[0].by.dn: DN: value of uidNumber invalid per syntax\n") !=
        std::string::npos);
  CHECK(out.empty());
}

TEST_CASE("check-config: a rootpw readable by others is a warning and the config is ok") {
  std::string out;
  std::string err;
  // check_config writes the file with the process umask; make it world-readable.
  const mode_t previous = umask(022);
  const int status = check_config(std::string(kDatabase) +
                                      "[server]\nrootdn = \"cn=admin,dc=example,dc=com\"\n"
                                      "rootpw = \"{SSHA}c2VjcmV0\"\n",
                                  out, err);
  umask(previous);
  CHECK(status == 0);
  CHECK(out.find(": ok") != std::string::npos);
  CHECK(err.find(": warning: ") != std::string::npos);
  CHECK(err.find("holds server.rootpw and is open to group or others (mode 0644)") !=
        std::string::npos);
}

TEST_CASE("check-config: TLS files are loaded as the server loads them") {
  std::string out;
  std::string err;
  CHECK(check_config(std::string(kDatabase) + "[tls]\ncertificate = \"/nonexistent/server.crt\"\n"
                                              "key = \"/nonexistent/server.key\"\n",
                     out, err) == 1);
  CHECK(err.find("tls.certificate /nonexistent/server.crt") != std::string::npos);
}

TEST_CASE("check-config: a database.path without a database is a note and nothing is created") {
  backend::testing::TempDir dir;
  const std::filesystem::path config = dir.path() / "numadir.toml";
  std::ofstream(config) << kDatabase;
  std::ostringstream out;
  std::ostringstream err;
  CHECK(run_check_config(config, out, err) == 0);
  CHECK(err.str().empty());
  const std::string db = (dir.path() / "db").string();
  CHECK(out.str() == config.string() + ":2: note: database.path: " + db +
                         ": no database there yet; numadir import creates one, numadir serve "
                         "creates an empty one\n" +
                         config.string() + ": ok\n");
  CHECK_FALSE(std::filesystem::exists(dir.path() / "db"));

  std::filesystem::create_directory(dir.path() / "db");
  std::ofstream(dir.path() / "db" / "data.mdb");
  std::ostringstream again;
  CHECK(run_check_config(config, again, err) == 0);
  CHECK(again.str() == config.string() + ": ok\n");
}

TEST_CASE("check-config: every mistake is listed with its line and the warnings too") {
  std::string out;
  std::string err;
  CHECK(check_config(std::string(kDatabase) + "[server]\n"                                 // 4
                                              "rootdn = \"cn=admin,dc=example,dc=com\"\n"  // 5
                                              "rootpw = \"secret\"\n"   // 6: cleartext
                                              "listeners = \"two\"\n"   // 7
                                              "[log]\n"                 // 8
                                              "level = \"verbose\"\n",  // 9
                     out, err) == 1);
  CHECK(out.empty());
  std::istringstream lines(err);
  std::vector<std::string> got;
  for (std::string line; std::getline(lines, line);) {
    got.push_back(line);
  }
  REQUIRE(got.size() == 3);
  CHECK(got[0].find(".toml:6: warning: server.rootpw: the rootdn can never bind") !=
        std::string::npos);
  CHECK(got[1].find(".toml:7: server.listeners: must be an integer") != std::string::npos);
  CHECK(got[2].find(".toml:9: log.level: ") != std::string::npos);
}

}  // namespace
}  // namespace numadir::server
