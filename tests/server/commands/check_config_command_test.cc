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

#include "server/commands/commands.h"

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
  CHECK(err.starts_with("numadir: warning: "));
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

}  // namespace
}  // namespace numadir::server
