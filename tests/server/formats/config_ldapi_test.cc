// numadir.toml's ldapi:// and SASL EXTERNAL keys (server/formats/config.h): server.listen with
// ldapi URLs, server.ldapi_mode / ldapi_owner / ldapi_group, [[sasl.external_map]].
#include <doctest/doctest.h>

#include <string>

#include "server/formats/config.h"

namespace numadir::server {
namespace {

constexpr const char* kLdapiDatabase = R"(
[database]
path = "db"
suffix = "dc=example,dc=com"
)";

Result<Config> parse_ldapi(const std::string& text) {
  return parse_config(kLdapiDatabase + text, "test.toml", "/etc/nd");
}

std::string ldapi_error_of(const std::string& text) {
  auto config = parse_ldapi(text);
  return config.ok() ? std::string() : config.status().message();
}

TEST_CASE("Config: ldapi listen URLs and the socket's mode and owner and group") {
  auto config = parse_ldapi(R"(
[server]
listen = ["ldap://127.0.0.1:389", "ldapi://%2Frun%2Fnumadir%2Fldapi", "ldapi:///tmp/other"]
ldapi_mode = "0660"
ldapi_owner = "root"
ldapi_group = "0"
)");
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  REQUIRE(config->server.listen.size() == 3);
  CHECK(config->server.listen[1].is_local());
  CHECK(config->server.listen[1].path == "/run/numadir/ldapi");
  CHECK(config->server.listen[2].path == "/tmp/other");
  CHECK(config->server.ldapi_mode == 0660);
  CHECK(config->server.ldapi_owner == "root");
  CHECK(config->server.ldapi_group == "0");
}

TEST_CASE("Config: ldapi defaults") {
  auto config = parse_ldapi("[server]\nlisten = [\"ldapi://\"]\n");
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  CHECK(config->server.listen[0].path == "/run/numadir/ldapi");
  CHECK(config->server.ldapi_mode == 0666);
  CHECK(config->server.ldapi_owner.empty());
  CHECK(config->sasl_external_map.empty());
}

TEST_CASE("Config: [[sasl.external_map]] rules in file order") {
  auto config = parse_ldapi(R"(
[[sasl.external_map]]
match = "^gidNumber=0\\+uidNumber=0,cn=peercred,cn=external,cn=auth$"
dn = "cn=admin,dc=example,dc=com"
[[sasl.external_map]]
match = "^cn=([^,]+),o=example$"
dn = "uid=$1,ou=people,dc=example,dc=com"
)");
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  REQUIRE(config->sasl_external_map.size() == 2);
  CHECK(config->sasl_external_map[0].match ==
        "^gidNumber=0\\+uidNumber=0,cn=peercred,cn=external,cn=auth$");
  CHECK(config->sasl_external_map[0].dn == "cn=admin,dc=example,dc=com");
  CHECK(config->sasl_external_map[1].dn == "uid=$1,ou=people,dc=example,dc=com");
}

TEST_CASE("Config: ldapi and sasl mistakes name their key") {
  CHECK(ldapi_error_of("[server]\nlisten = [\"ldapi://run/x\"]\n").find("server.listen") !=
        std::string::npos);
  CHECK(ldapi_error_of("[server]\nldapi_mode = \"0999\"\n").find("server.ldapi_mode") !=
        std::string::npos);
  CHECK(ldapi_error_of("[server]\nldapi_mode = \"01777\"\n").find("server.ldapi_mode") !=
        std::string::npos);
  CHECK(ldapi_error_of("[server]\nldapi_mode = 438\n").find("server.ldapi_mode") !=
        std::string::npos);
  CHECK(
      ldapi_error_of("[[sasl.external_map]]\ndn = \"cn=x\"\n").find("sasl.external_map[0].match") !=
      std::string::npos);
  CHECK(ldapi_error_of("[[sasl.external_map]]\nmatch = \"x\"\n").find("sasl.external_map[0].dn") !=
        std::string::npos);
  CHECK(ldapi_error_of("[[sasl.external_map]]\nmatch = \"x\"\ndn = \"cn=x\"\nwho = \"y\"\n")
            .find("sasl.external_map[0]") != std::string::npos);
  CHECK(ldapi_error_of("[sasl]\nexternal_map = \"x\"\n").find("sasl.external_map") !=
        std::string::npos);
  CHECK(ldapi_error_of("[sasl]\nmechanisms = []\n").find("sasl.mechanisms") != std::string::npos);
}

}  // namespace
}  // namespace numadir::server
