// compile_server_config (server/commands/server_config.h), the one compile check-config and serve
// share: what it compiles, every mistake it lists (rule DNs checked as operations check DNs),
// and the warning for a config file holding rootpw that group or others may open.
#include "server/commands/server_config.h"

#include <doctest/doctest.h>
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "backend/dn_normalizer.h"
#include "schema/dn.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::server {
namespace {

constexpr std::string_view kServerDatabase =
    "[database]\npath = \"db\"\nsuffix = \"dc=example,dc=com\"\n";
constexpr std::string_view kRoot =
    "[server]\nrootdn = \"cn=admin,dc=example,dc=com\"\nrootpw = \"{SSHA}c2VjcmV0\"\n";

// A config file in a fresh directory.
class ConfigFile {
 public:
  explicit ConfigFile(std::string_view text, std::filesystem::perms mode = kPrivate)
      : path_(dir_.path() / "numadir.toml") {
    std::ofstream(path_, std::ios::binary) << text;
    std::filesystem::permissions(path_, mode);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string named(std::string_view what) const {
    return path_.string() + ": " + std::string(what);
  }
  // Returns: "<path>:<line>: <what>", as a diagnostic's to_string() names it.
  std::string named(int line, std::string_view what) const {
    return path_.string() + ":" + std::to_string(line) + ": " + std::string(what);
  }

  static constexpr std::filesystem::perms kPrivate =
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;

 private:
  backend::testing::TempDir dir_;
  std::filesystem::path path_;
};

TEST_CASE("ServerConfig: a good config compiles into its schema and rules") {
  const ConfigFile file(std::string(kServerDatabase) + std::string(kRoot) +
                        "[[access]]\ndn = \"ou=people,dc=example,dc=com\"\n"
                        "filter = \"(objectClass=person)\"\n"
                        "by = [{ group = \"cn=admins,dc=example,dc=com\", access = \"write\" },\n"
                        "      { who = \"*\", access = \"read\" }]\n");
  const ServerConfigOutcome outcome = compile_server_config(file.path());
  REQUIRE(outcome.ok());
  CHECK(outcome.warnings.empty());
  REQUIRE(outcome.compiled != nullptr);
  const ServerConfig& compiled = *outcome.compiled;
  CHECK(compiled.config.database.suffix == "dc=example,dc=com");
  REQUIRE(compiled.schema != nullptr);
  CHECK(compiled.schema->attribute_type("uid") != nullptr);
  REQUIRE(compiled.access != nullptr);
  CHECK_FALSE(compiled.access->is_default());
  CHECK(compiled.access->needs_entry());
  CHECK(compiled.access->has_groups());
  CHECK(compiled.tls == nullptr);

  SUBCASE("without [[access]]: the default policy") {
    const ConfigFile plain(kServerDatabase);
    const ServerConfigOutcome defaults = compile_server_config(plain.path());
    REQUIRE(defaults.ok());
    CHECK(defaults.compiled->access->is_default());
  }
}

TEST_CASE("ServerConfig: rule DNs are normalized as the operations normalize DNs") {
  // access to dn.base="UID=User1,OU=People,DC=Example,DC=Com" by * read
  const ConfigFile file(std::string(kServerDatabase) +
                        "[[access]]\ndn = \"UID=User1,OU=People,DC=Example,DC=Com\"\n"
                        "scope = \"base\"\nby = [{ who = \"*\", access = \"read\" }]\n");
  const ServerConfigOutcome outcome = compile_server_config(file.path());
  REQUIRE(outcome.ok());
  const ServerConfig& compiled = *outcome.compiled;
  const backend::SchemaDnNormalizer normalizer(*compiled.schema);
  const std::string ndn =
      schema::Dn::parse("uid=user1,ou=people,dc=example,dc=com")->normalized(&normalizer);
  const Identity anonymous;
  CHECK(compiled.access->decide(Requester{anonymous}, AccessEntry{ndn}, AccessAttribute::entry(),
                                AccessLevel::kRead) == AccessDecision::kAllowed);
}

TEST_CASE("ServerConfig: a rule DN the operations' DN checks refuse does not compile") {
  std::string dn;
  std::string problem;
  SUBCASE("a value invalid for its syntax") {
    dn = "uidNumber=abc,dc=example,dc=com";
    problem = "DN: value of uidNumber invalid per syntax";
  }
  SUBCASE("a type the schema lacks") {
    dn = "noSuchType=x,dc=example,dc=com";
    problem = "DN: undefined attribute type noSuchType";
  }
  const ConfigFile file(std::string(kServerDatabase) + "[[access]]\nby = [{ dn = \"" + dn +
                        "\", access = \"read\" }]\n");
  const ServerConfigOutcome outcome = compile_server_config(file.path());
  CHECK(outcome.compiled == nullptr);
  REQUIRE(outcome.errors.size() == 1);
  CHECK(outcome.errors[0].to_string() == file.named(5, "access[0].by.dn: " + problem));
}

TEST_CASE("ServerConfig: every independent mistake is listed in order") {
  const ConfigFile file(
      std::string(kServerDatabase) + "indexes = [\"noSuchAttr eq\", \"uid eq\"]\n" +
      "[server]\nrootdn = \"noSuchType=admin,dc=example,dc=com\"\n" +
      "[[access]]\ndn = \"c=USA,dc=example,dc=com\"\n" +
      "by = [{ who = \"*\", access = \"read\" }]\n" +
      "[tls]\ncertificate = \"/nonexistent/server.crt\"\n" + "key = \"/nonexistent/server.key\"\n");
  const ServerConfigOutcome outcome = compile_server_config(file.path());
  CHECK(outcome.compiled == nullptr);
  REQUIRE(outcome.errors.size() == 4);
  CHECK(outcome.errors[0].to_string().starts_with(
      file.named(4, "database.indexes[0]: index on noSuchAttr")));
  CHECK(outcome.errors[1].to_string() ==
        file.named(6, "server.rootdn: DN: undefined attribute type noSuchType"));
  CHECK(outcome.errors[2].to_string() ==
        file.named(8, "access[0].dn: DN: value of c invalid per syntax"));
  CHECK(outcome.errors[3].to_string().starts_with(
      file.named(11, "tls.certificate /nonexistent/server.crt")));
}

TEST_CASE("ServerConfig: the thread plan is made on this machine's topology") {
  SUBCASE("percpu: planned") {
    const ConfigFile file(kServerDatabase);
    const ServerConfigOutcome outcome = compile_server_config(file.path());
    REQUIRE(outcome.ok());
    REQUIRE(outcome.compiled->plan.has_value());
    CHECK_FALSE(outcome.compiled->plan->nodes.empty());
  }
  SUBCASE("single: nothing to plan") {
    const ConfigFile file(std::string(kServerDatabase) + "[threads]\ndispatcher = \"single\"\n");
    const ServerConfigOutcome outcome = compile_server_config(file.path());
    REQUIRE(outcome.ok());
    CHECK_FALSE(outcome.compiled->plan.has_value());
  }
  SUBCASE("a node the machine lacks") {
    const ConfigFile file(std::string(kServerDatabase) + "[[threads.node]]\nid = 1000\n");
    const ServerConfigOutcome outcome = compile_server_config(file.path());
    REQUIRE(outcome.errors.size() == 1);
    CHECK(outcome.errors[0].key == "threads");
    CHECK(outcome.errors[0].to_string().starts_with(file.named(4, "threads: ")));
  }
}

TEST_CASE("ServerConfig: server.user and server.group are resolved") {
  const passwd* self = getpwuid(getuid());
  REQUIRE(self != nullptr);
  const std::string name = self->pw_name;
  const uid_t uid = self->pw_uid;
  const gid_t gid = self->pw_gid;
  SUBCASE("known names") {
    const ConfigFile file(std::string(kServerDatabase) + "[server]\nuser = \"" + name + "\"\n");
    const ServerConfigOutcome outcome = compile_server_config(file.path());
    REQUIRE(outcome.ok());
    CHECK(outcome.compiled->uid == uid);
    CHECK(outcome.compiled->gid == gid);
  }
  SUBCASE("none: nothing to switch to") {
    const ConfigFile file(kServerDatabase);
    const ServerConfigOutcome outcome = compile_server_config(file.path());
    REQUIRE(outcome.ok());
    CHECK_FALSE(outcome.compiled->uid.has_value());
    CHECK_FALSE(outcome.compiled->gid.has_value());
  }
  SUBCASE("unknown names") {
    const ConfigFile file(std::string(kServerDatabase) +
                          "[server]\nuser = \"no-such-user-numadir\"\n"
                          "group = \"no-such-group-numadir\"\n");
    const ServerConfigOutcome outcome = compile_server_config(file.path());
    REQUIRE(outcome.errors.size() == 2);
    CHECK(outcome.errors[0].to_string() ==
          file.named(5, "server.user: no user \"no-such-user-numadir\""));
    CHECK(outcome.errors[1].to_string() ==
          file.named(6, "server.group: no group \"no-such-group-numadir\""));
  }
}

TEST_CASE("ServerConfig: a file that does not parse stops the compile") {
  const ConfigFile file(std::string(kServerDatabase) + "[server]\nmax_conections = 10\n");
  const ServerConfigOutcome outcome = compile_server_config(file.path());
  CHECK(outcome.compiled == nullptr);
  REQUIRE(outcome.errors.size() == 1);
  CHECK(outcome.errors[0].to_string() == file.named(5, "server.max_conections: unknown key"));
}

TEST_CASE("ServerConfig: a rootpw that group or others may read is warned about") {
  using std::filesystem::perms;
  std::string text = std::string(kServerDatabase) + std::string(kRoot);
  perms mode = ConfigFile::kPrivate;
  std::string expected;
  SUBCASE("0644") {
    mode = mode | perms::group_read | perms::others_read;
    expected = "holds server.rootpw and is open to group or others (mode 0644): chmod 600 it";
  }
  SUBCASE("0640") {
    mode = mode | perms::group_read;
    expected = "holds server.rootpw and is open to group or others (mode 0640): chmod 600 it";
  }
  SUBCASE("0600: nothing to say") {}
  SUBCASE("0644 without a rootpw: nothing to say") {
    text = std::string(kServerDatabase);
    mode = mode | perms::group_read | perms::others_read;
  }
  const ConfigFile file(text, mode);
  const ServerConfigOutcome outcome = compile_server_config(file.path());
  CHECK(outcome.ok());  // A warning, not an error.
  if (expected.empty()) {
    CHECK(outcome.warnings.empty());
  } else {
    REQUIRE(outcome.warnings.size() == 1);
    CHECK(outcome.warnings[0].to_string() == file.named(expected));
  }
  std::ostringstream err;
  report_server_config(outcome, err);
  CHECK(err.str() == (expected.empty() ? "" : file.named("warning: " + expected) + "\n"));
}

TEST_CASE("ServerConfig: an [[access]] rule an earlier rule hides is a warning") {
  const std::string read_all = "by = [{ who = \"*\", access = \"read\" }]\n";
  struct Case {
    const char* name;
    std::string rules;
    bool hidden;
  };
  const Case cases[] = {
      {"everything first", "[[access]]\n" + read_all + "[[access]]\nattrs = [\"cn\"]\n" + read_all,
       true},
      {"a subtree first, a DN below it later",
       "[[access]]\ndn = \"dc=example,dc=com\"\n" + read_all +
           "[[access]]\ndn = \"OU=People,dc=example,dc=com\"\nscope = \"base\"\n" + read_all,
       true},
      {"the same attrs in another case",
       "[[access]]\nattrs = [\"userPassword\", \"cn\"]\n" + read_all +
           "[[access]]\nattrs = [\"USERPASSWORD\"]\n" + read_all,
       true},
      {"a filter first hides nothing",
       "[[access]]\nfilter = \"(objectClass=person)\"\n" + read_all + "[[access]]\n" + read_all,
       false},
      {"fewer attrs first hide nothing",
       "[[access]]\nattrs = [\"cn\"]\n" + read_all + "[[access]]\nattrs = [\"cn\", \"sn\"]\n" +
           read_all,
       false},
      {"a base first does not hide its subtree",
       "[[access]]\ndn = \"dc=example,dc=com\"\nscope = \"base\"\n" + read_all +
           "[[access]]\ndn = \"dc=example,dc=com\"\n" + read_all,
       false},
      {"children first does not hide the entry itself",
       "[[access]]\ndn = \"dc=example,dc=com\"\nscope = \"children\"\n" + read_all +
           "[[access]]\ndn = \"dc=example,dc=com\"\nscope = \"base\"\n" + read_all,
       false},
  };
  for (const Case& c : cases) {
    SUBCASE(c.name) {
      const ConfigFile file(std::string(kServerDatabase) + c.rules);
      const ServerConfigOutcome outcome = compile_server_config(file.path());
      REQUIRE_MESSAGE(outcome.ok(), outcome.errors[0].to_string());
      if (c.hidden) {
        REQUIRE(outcome.warnings.size() == 1);
        CHECK(outcome.warnings[0].key == "access[1]");
        CHECK(outcome.warnings[0].message.starts_with("never reached: access[0] comes first"));
        CHECK(outcome.warnings[0].line > 4);
      } else {
        CHECK(outcome.warnings.empty());
      }
    }
  }
}

TEST_CASE("ServerConfig: the report has a line per warning and per error") {
  ServerConfigOutcome outcome;
  outcome.warnings = {ConfigDiagnostic{"a.toml", 3, 0, "z", "careful"},
                      ConfigDiagnostic{"", 0, 0, "", "the machine's topology: none"}};
  outcome.errors = {ConfigDiagnostic{"a.toml", 7, 0, "x", "bad"},
                    ConfigDiagnostic{"a.toml", 0, 0, "y", "worse"},
                    ConfigDiagnostic{"a.toml", 2, 5, "", "expected a value"}};
  std::ostringstream err;
  report_server_config(outcome, err);
  CHECK(err.str() ==
        "a.toml:3: warning: z: careful\nnumadir: warning: the machine's topology: none\n"
        "a.toml:7: x: bad\na.toml: y: worse\na.toml:2:5: expected a value\n");
}

TEST_CASE("ServerConfig: threads.topology plans on the emulated nodes and pins onto this machine") {
  const ConfigFile file(std::string(kServerDatabase) + std::string(kRoot) +
                        "[threads]\ntopology = \"numa:2 core:1 pu:1\"\n");
  const ServerConfigOutcome outcome = compile_server_config(file.path());
  REQUIRE(outcome.ok());
  REQUIRE(outcome.warnings.size() == 1);
  CHECK(outcome.warnings[0].to_string() ==
        file.named(8,
                   "threads.topology: serving on the emulated topology \"numa:2 core:1 pu:1\" (2 "
                   "nodes), its PUs mapped onto this machine's: for tests and planning, not for "
                   "production"));
  REQUIRE(outcome.compiled->plan.has_value());
  const threadpool::PlacementPlan& plan = *outcome.compiled->plan;
  REQUIRE(plan.nodes.size() == 2);
  auto machine = threadpool::Topology::detect();
  REQUIRE(machine.ok());
  std::set<unsigned> allowed;
  for (const threadpool::ProcessingUnit& pu : machine->pus()) {
    allowed.insert(pu.os_index);
  }
  for (const threadpool::NodePlan& node : plan.nodes) {
    for (const threadpool::ThreadPlacement& thread : node.workers) {
      REQUIRE(thread.pu.has_value());
      CHECK(allowed.count(*thread.pu) == 1);
    }
  }
  const ConfigFile bad(std::string(kServerDatabase) + std::string(kRoot) +
                       "[threads]\ntopology = \"numa:two\"\n");
  const ServerConfigOutcome refused = compile_server_config(bad.path());
  REQUIRE(refused.errors.size() == 1);
  CHECK(refused.errors[0].to_string().rfind(bad.named(8, "threads.topology: hwloc rejects"), 0) ==
        0);
}

}  // namespace
}  // namespace numadir::server
