// Tests for the [[replication.consumer]] tables of numadir.toml
// (server/formats/config_replication.cc): the defaults, every key read, each key's bad values
// refused with its full key, and slapd's interval and retry syntaxes on their own.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "server/formats/config.h"
#include "server/formats/replication_consumer_config.h"

namespace numadir::server {
namespace {

constexpr const char* kReplicationDatabase = R"(
[database]
path = "db"
suffix = "dc=example,dc=com"
)";

// A consumer with only the required keys, before `extra` keys.
std::string consumer(const std::string& extra, const std::string& provider = "ldap://ldap1:389") {
  return "[[replication.consumer]]\nrid = 1\nprovider = \"" + provider +
         "\"\nsearchbase = \"dc=example,dc=com\"\nbinddn = \"cn=repl,dc=example,dc=com\"\n"
         "credentials_file = \"repl.pw\"\n" +
         extra;
}

Result<Config> parse_replication(const std::string& replication) {
  return parse_config(std::string(kReplicationDatabase) + replication, "test.toml", "/etc/nd");
}

std::string replication_error_of(const std::string& replication) {
  auto config = parse_replication(replication);
  return config.ok() ? std::string() : config.status().message();
}

TEST_CASE("Config replication: a consumer with the required keys gets slapd's defaults") {
  auto config = parse_replication(consumer(""));
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  REQUIRE(config->replication_consumers.size() == 1);
  const ReplicationConsumerConfig& c = config->replication_consumers[0];
  CHECK(c.origin == "replication.consumer[0]");
  CHECK(c.rid == 1);
  CHECK(c.provider.scheme == "ldap");
  CHECK(c.provider.host == "ldap1");
  CHECK(c.provider.port == 389);
  CHECK(c.provider_text == "ldap://ldap1:389");
  CHECK(c.starttls == StartTlsMode::kNo);
  CHECK_FALSE(c.uses_tls());
  CHECK(c.searchbase == "dc=example,dc=com");
  CHECK(c.scope == listener::wire::SearchScope::kWholeSubtree);
  CHECK(c.filter == "(objectClass=*)");
  CHECK(c.attrs == std::vector<std::string>{"*", "+"});
  CHECK(c.type == ReplicationType::kRefreshAndPersist);
  CHECK(c.interval_s == 86400);
  CHECK(c.method == ReplicationBind::kSimple);
  CHECK(c.binddn == "cn=repl,dc=example,dc=com");
  CHECK(c.credentials_file == "/etc/nd/repl.pw");
  CHECK(c.credentials.empty());  // Read by compile_server_config, not by the parser.
  CHECK(c.ca_file.empty());
  CHECK(c.tls_verify);
  CHECK(c.retry == std::vector<RetryStep>{RetryStep{60, 0, true}});
  CHECK_FALSE(c.keepalive.enabled());
  CHECK(c.timeout_ms == 10000);
  CHECK(c.network_timeout_ms == 10000);
  CHECK(c.persist_batch_ms == 10);
  CHECK_FALSE(c.schemachecking);  // slapd's syncrepl default.
  CHECK(c.max_pdu_bytes == 16u * 1024 * 1024);
  CHECK(c.updateref.to_string() == "ldap://ldap1:389");

  auto none = parse_replication("");
  REQUIRE(none.ok());
  CHECK(none->replication_consumers.empty());
}

TEST_CASE("Config replication: every key is read") {
  auto config = parse_replication(R"toml(
[[replication.consumer]]
rid = 7
provider = "LDAP://[::1]:3389/"
starttls = "critical"
searchbase = "ou=people,dc=example,dc=com"
scope = "one"
filter = "(objectClass=inetOrgPerson)"
attrs = ["cn", "uid", "userPassword;binary", "@posixAccount", "1.1"]
type = "refreshOnly"
interval = "00:01:30:05"
method = "external"
certificate = "client.crt"
key = "/etc/ssl/client.key"
ca_file = "ca.crt"
tls_verify = true
retry = "5 10 300 +"
keepalive = "240:10:30"
timeout_ms = 2500
network_timeout_ms = 1500
persist_batch_ms = 0
schemachecking = true
max_pdu_size = "64MiB"
updateref = "ldaps://master.example.com"

[[replication.consumer]]
rid = 8
provider = "ldaps://ldap2.example.com"
searchbase = "dc=example,dc=com"
scope = "base"
type = "refreshOnly"
interval = 600
binddn = "cn=repl,dc=example,dc=com"
credentials_file = "/run/secrets/repl"
tls_verify = false
retry = "60 3"
)toml");
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  REQUIRE(config->replication_consumers.size() == 2);
  const ReplicationConsumerConfig& a = config->replication_consumers[0];
  CHECK(a.rid == 7);
  CHECK(a.provider.to_string() == "ldap://[::1]:3389");
  CHECK(a.starttls == StartTlsMode::kCritical);
  CHECK(a.uses_tls());
  CHECK(a.searchbase == "ou=people,dc=example,dc=com");
  CHECK(a.scope == listener::wire::SearchScope::kSingleLevel);
  CHECK(a.filter == "(objectClass=inetOrgPerson)");
  CHECK(a.attrs.size() == 5);
  CHECK(a.type == ReplicationType::kRefreshOnly);
  CHECK(a.interval_s == 3600 + 30 * 60 + 5);
  CHECK(a.method == ReplicationBind::kExternal);
  CHECK(a.binddn.empty());
  CHECK(a.certificate == "/etc/nd/client.crt");
  CHECK(a.key == "/etc/ssl/client.key");
  CHECK(a.ca_file == "/etc/nd/ca.crt");
  CHECK(a.retry == std::vector<RetryStep>{RetryStep{5, 10, false}, RetryStep{300, 0, true}});
  CHECK(a.keepalive == TcpKeepalive{240, 10, 30});
  CHECK(a.timeout_ms == 2500);
  CHECK(a.network_timeout_ms == 1500);
  CHECK(a.persist_batch_ms == 0);
  CHECK(a.schemachecking);
  CHECK(a.max_pdu_bytes == 64u * 1024 * 1024);
  CHECK(a.updateref.to_string() == "ldaps://master.example.com:636");

  const ReplicationConsumerConfig& b = config->replication_consumers[1];
  CHECK(b.origin == "replication.consumer[1]");
  CHECK(b.provider.port == 636);
  CHECK(b.uses_tls());
  CHECK_FALSE(b.tls_verify);
  CHECK(b.ca_file.empty());
  CHECK(b.scope == listener::wire::SearchScope::kBaseObject);
  CHECK(b.interval_s == 600);
  CHECK(b.credentials_file == "/run/secrets/repl");
  CHECK(b.retry == std::vector<RetryStep>{RetryStep{60, 3, false}});
  CHECK(b.updateref.to_string() == "ldaps://ldap2.example.com:636");
}

TEST_CASE("Config replication: the table and its array are checked") {
  CHECK(replication_error_of("[replication]\nconsumers = 1\n") ==
        "test.toml: replication.consumers: unknown key");
  CHECK(
      parse_config("replication = 1\n" + std::string(kReplicationDatabase), "test.toml", "/etc/nd")
          .status()
          .message() == "test.toml: replication: must be a table");
  CHECK(replication_error_of("[replication]\nconsumer = 1\n") ==
        "test.toml: replication.consumer: must be an array of tables ([[replication.consumer]])");
  CHECK(replication_error_of("[replication.consumer]\nrid = 1\n") ==
        "test.toml: replication.consumer: must be an array of tables ([[replication.consumer]])");
  CHECK(replication_error_of(consumer("colour = \"blue\"\n")) ==
        "test.toml: replication.consumer[0].colour: unknown key");
}

TEST_CASE("Config replication: rid and provider mistakes name their key") {
  const std::string base =
      "searchbase = \"dc=example,dc=com\"\nbinddn = \"cn=r,dc=example,dc=com\"\n"
      "credentials_file = \"pw\"\n";
  CHECK(replication_error_of("[[replication.consumer]]\nprovider = \"ldap://h\"\n" + base) ==
        "test.toml: replication.consumer[0].rid: missing (a number from 1 to 999 naming this "
        "consumer)");
  for (const char* rid : {"0", "1000", "-1", "\"1\"", "1.5"}) {
    CAPTURE(rid);
    CHECK(replication_error_of("[[replication.consumer]]\nrid = " + std::string(rid) +
                               "\nprovider = \"ldap://h\"\n" + base) ==
          "test.toml: replication.consumer[0].rid: must be an integer from 1 to 999");
  }
  CHECK(replication_error_of(consumer("") + consumer("")) ==
        "test.toml: replication.consumer[1].rid: 1 is replication.consumer[0]'s rid already");
  CHECK(replication_error_of("[[replication.consumer]]\nrid = 1\n" + base) ==
        "test.toml: replication.consumer[0].provider: missing (ldap://HOST[:PORT], "
        "ldaps://HOST[:PORT] or ldapi://PATH)");
  CHECK(replication_error_of(consumer("", "http://h")) ==
        "test.toml: replication.consumer[0].provider: \"http://h\": unsupported scheme \"http\" "
        "(must be ldap://HOST[:PORT], ldaps://HOST[:PORT] or ldapi://PATH)");
  CHECK(replication_error_of(consumer("", "ldapi://run/slapd/ldapi")) ==
        "test.toml: replication.consumer[0].provider: \"ldapi://run/slapd/ldapi\": the socket "
        "path must be absolute (ldapi:///run/numadir/ldapi or ldapi://%2Frun%2Fnumadir%2Fldapi)");
  CHECK(replication_error_of(consumer("", "ldap://")) ==
        "test.toml: replication.consumer[0].provider: \"ldap://\" needs a host");
  CHECK(replication_error_of(consumer("", "ldap://h:0")) ==
        "test.toml: replication.consumer[0].provider: \"ldap://h:0\": bad port \"0\" (1 to "
        "65535)");
  CHECK(replication_error_of(consumer("", "ldap://h/dc=example,dc=com"))
            .starts_with("test.toml: replication.consumer[0].provider: "
                         "\"ldap://h/dc=example,dc=com\": only a host "
                         "and a port"));
  CHECK(replication_error_of(consumer("", "ldap://::1:389")) ==
        "test.toml: replication.consumer[0].provider: \"ldap://::1:389\": an IPv6 address goes in "
        "brackets: ldap://[::1]:389");
  CHECK(replication_error_of("[[replication.consumer]]\nrid = 1\nprovider = 389\n" + base) ==
        "test.toml: replication.consumer[0].provider: must be a string");
}

TEST_CASE("Config replication: an ldapi provider is a local socket without TLS") {
  for (const char* text : {"ldapi://%2Frun%2Fslapd%2Fldapi", "ldapi:///run/slapd/ldapi"}) {
    CAPTURE(text);
    auto config = parse_replication(consumer("", text));
    REQUIRE_MESSAGE(config.ok(), config.status().to_string());
    const ReplicationConsumerConfig& c = config->replication_consumers[0];
    CHECK(c.provider.is_local());
    CHECK(c.provider.path == "/run/slapd/ldapi");
    CHECK_FALSE(c.uses_tls());
    CHECK(c.updateref.to_string() == "ldapi://%2Frun%2Fslapd%2Fldapi");
  }
  const std::string local = "ldapi:///run/slapd/ldapi";
  CHECK(replication_error_of(consumer("starttls = \"critical\"\nca_file = \"ca\"\n", local)) ==
        "test.toml: replication.consumer[0].starttls: not with an ldapi:// provider (a local "
        "socket)");
  CHECK(replication_error_of("[[replication.consumer]]\nrid = 1\nprovider = \"" + local +
                             "\"\nsearchbase = \"dc=example,dc=com\"\nmethod = \"external\"\n") ==
        "test.toml: replication.consumer[0].method: \"external\" is not supported with an "
        "ldapi:// provider (it binds with a TLS client certificate): use method = \"simple\"");
  CHECK(replication_error_of(consumer("updateref = \"ldapi://\"\n")).empty());
}

TEST_CASE("Config replication: starttls") {
  auto config = parse_replication(consumer("starttls = \"yes\"\nca_file = \"ca.crt\"\n"));
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  CHECK(config->replication_consumers[0].starttls == StartTlsMode::kYes);
  CHECK(config->replication_consumers[0].uses_tls());
  CHECK(replication_error_of(consumer("starttls = \"maybe\"\n")) ==
        "test.toml: replication.consumer[0].starttls: must be \"no\", \"yes\" or \"critical\"");
  CHECK(replication_error_of(consumer("starttls = \"yes\"\nca_file = \"ca\"\n", "ldaps://h")) ==
        "test.toml: replication.consumer[0].starttls: not with an ldaps:// provider (it has TLS "
        "from the first byte)");
  // "no" with ldaps:// says what is true.
  CHECK(
      replication_error_of(consumer("starttls = \"no\"\nca_file = \"ca\"\n", "ldaps://h")).empty());
}

TEST_CASE("Config replication: what to replicate") {
  CHECK(replication_error_of("[[replication.consumer]]\nrid = 1\nprovider = \"ldap://h\"\nbinddn = "
                             "\"cn=r\"\ncredentials_file = \"pw\"\n") ==
        "test.toml: replication.consumer[0].searchbase: missing (the database suffix or a DN "
        "under it)");
  CHECK(
      replication_error_of(consumer("").replace(consumer("").find("dc=example,dc=com"), 17, "")) ==
      "test.toml: replication.consumer[0].searchbase: must not be empty (the database suffix "
      "or under it)");
  CHECK(replication_error_of(
            consumer("").replace(consumer("").find("dc=example,dc=com"), 17, "dc=x,,dc=y"))
            .starts_with("test.toml: replication.consumer[0].searchbase: DN: offset"));
  CHECK(replication_error_of(consumer("scope = \"subtree\"\n")) ==
        "test.toml: replication.consumer[0].scope: must be \"sub\", \"one\" or \"base\"");
  CHECK(replication_error_of(consumer("filter = \"(objectClass=*\"\n"))
            .starts_with("test.toml: replication.consumer[0].filter: "));
  CHECK(replication_error_of(consumer("filter = \"uid=x\"\n"))
            .empty());  // RFC 4515 allows no parentheses.
  CHECK(replication_error_of(consumer("attrs = []\n")) ==
        "test.toml: replication.consumer[0].attrs: must name at least one attribute (default "
        "[\"*\", \"+\"])");
  CHECK(replication_error_of(consumer("attrs = [\"cn\", \"user password\"]\n")) ==
        "test.toml: replication.consumer[0].attrs: \"user password\" is not an attribute "
        "description, \"*\", \"+\" or \"@objectClass\"");
  CHECK(replication_error_of(consumer("attrs = \"cn\"\n")) ==
        "test.toml: replication.consumer[0].attrs: must be an array of strings");
}

TEST_CASE("Config replication: type and interval") {
  CHECK(replication_error_of(consumer("type = \"persist\"\n")) ==
        "test.toml: replication.consumer[0].type: must be \"refreshAndPersist\" or "
        "\"refreshOnly\"");
  CHECK(replication_error_of(consumer("interval = \"00:00:05:00\"\n")) ==
        "test.toml: replication.consumer[0].interval: only with type = \"refreshOnly\" "
        "(refreshAndPersist hears of each change as it happens)");
  const std::string only = "type = \"refreshOnly\"\n";
  CHECK(replication_error_of(consumer(only + "interval = \"00:00:00:00\"\n")) ==
        "test.toml: replication.consumer[0].interval: \"00:00:00:00\" must be more than 0 "
        "seconds");
  CHECK(replication_error_of(consumer(only + "interval = \"00:24:00:00\"\n")) ==
        "test.toml: replication.consumer[0].interval: \"00:24:00:00\": hours must be a number "
        "from 0 to 23");
  CHECK(replication_error_of(consumer(only + "interval = 0\n")) ==
        "test.toml: replication.consumer[0].interval: must be from 1 to 4294967295 seconds");
  CHECK(replication_error_of(consumer(only + "interval = true\n")) ==
        "test.toml: replication.consumer[0].interval: must be \"dd:hh:mm:ss\" or seconds");
}

TEST_CASE("Config replication: method and its identity") {
  const std::string head =
      "[[replication.consumer]]\nrid = 1\nprovider = \"ldap://h\"\n"
      "searchbase = \"dc=example,dc=com\"\n";
  CHECK(replication_error_of(head + "credentials_file = \"pw\"\n") ==
        "test.toml: replication.consumer[0].binddn: missing (method = \"simple\" binds as this "
        "DN)");
  CHECK(replication_error_of(head + "binddn = \"cn=r\"\n") ==
        "test.toml: replication.consumer[0].credentials_file: missing (a file holding binddn's "
        "password, mode 0600)");
  CHECK(replication_error_of(head + "binddn = \"\"\ncredentials_file = \"pw\"\n") ==
        "test.toml: replication.consumer[0].binddn: must not be empty (an anonymous consumer "
        "reads too little)");
  CHECK(replication_error_of(head + "binddn = \"cn\"\ncredentials_file = \"pw\"\n")
            .starts_with("test.toml: replication.consumer[0].binddn: DN: offset"));
  CHECK(replication_error_of(head + "binddn = \"cn=r\"\ncredentials_file = \"\"\n") ==
        "test.toml: replication.consumer[0].credentials_file: must not be empty");
  CHECK(replication_error_of(consumer("method = \"sasl\"\n")) ==
        "test.toml: replication.consumer[0].method: must be \"simple\" or \"external\"");

  const std::string external =
      "[[replication.consumer]]\nrid = 1\nprovider = \"ldaps://h\"\n"
      "searchbase = \"dc=example,dc=com\"\nmethod = \"external\"\n"
      "ca_file = \"ca\"\n";
  CHECK(replication_error_of(external + "certificate = \"c\"\nkey = \"k\"\n").empty());
  CHECK(replication_error_of(external) ==
        "test.toml: replication.consumer[0].certificate: missing (method = \"external\" binds "
        "with a client certificate)");
  CHECK(replication_error_of(external + "certificate = \"c\"\n") ==
        "test.toml: replication.consumer[0].key: missing (certificate and key go together)");
  CHECK(replication_error_of(external + "key = \"k\"\n") ==
        "test.toml: replication.consumer[0].certificate: missing (certificate and key go "
        "together)");
  CHECK(replication_error_of(external + "certificate = \"c\"\nkey = \"k\"\nbinddn = \"cn=r\"\n") ==
        "test.toml: replication.consumer[0].binddn: not with method = \"external\" (the "
        "certificate is the identity)");
  CHECK(replication_error_of(external +
                             "certificate = \"c\"\nkey = \"k\"\ncredentials_file = \"pw\"\n") ==
        "test.toml: replication.consumer[0].credentials_file: not with method = \"external\" "
        "(the certificate is the identity)");
  std::string clear = external;
  clear.replace(clear.find("ldaps://"), 8, "ldap://");
  CHECK(replication_error_of(clear + "certificate = \"c\"\nkey = \"k\"\nstarttls = \"yes\"\n") ==
        "test.toml: replication.consumer[0].method: \"external\" needs TLS: an ldaps:// provider "
        "or starttls = \"critical\"");
  CHECK(replication_error_of(clear + "certificate = \"c\"\nkey = \"k\"\nstarttls = \"critical\"\n")
            .empty());
}

TEST_CASE("Config replication: the TLS keys") {
  CHECK(replication_error_of(consumer("", "ldaps://h")) ==
        "test.toml: replication.consumer[0].ca_file: missing (the CAs to verify the provider's "
        "certificate with; or tls_verify = false, which checks nothing)");
  CHECK(replication_error_of(consumer("starttls = \"critical\"\n")) ==
        "test.toml: replication.consumer[0].ca_file: missing (the CAs to verify the provider's "
        "certificate with; or tls_verify = false, which checks nothing)");
  CHECK(replication_error_of(consumer("tls_verify = false\n", "ldaps://h")).empty());
  CHECK(replication_error_of(consumer("tls_verify = \"no\"\n", "ldaps://h")) ==
        "test.toml: replication.consumer[0].tls_verify: must be true or false");
  for (const char* key : {"ca_file = \"ca\"", "tls_verify = true",
                          "certificate = \"c\"\nkey = "
                          "\"k\""}) {
    CAPTURE(key);
    const std::string name = std::string(key).substr(0, std::string(key).find(' '));
    CHECK(replication_error_of(consumer(std::string(key) + "\n")) ==
          "test.toml: replication.consumer[0]." + name +
              ": set, but the provider is reached without TLS (an ldap:// provider with "
              "starttls = \"no\")");
  }
  // A client certificate with a simple bind is presented to the provider.
  CHECK(replication_error_of(
            consumer("certificate = \"c\"\nkey = \"k\"\nca_file = \"ca\"\n", "ldaps://h"))
            .empty());
}

TEST_CASE("Config replication: retry keepalive timeouts and sizes") {
  CHECK(replication_error_of(consumer("retry = \"60\"\n")) ==
        "test.toml: replication.consumer[0].retry: \"60\" must be pairs of \"<interval seconds> "
        "<count or +>\", e.g. \"5 10 60 +\"");
  CHECK(replication_error_of(consumer("retry = \"60 + 5 10\"\n")) ==
        "test.toml: replication.consumer[0].retry: \"60 + 5 10\": \"+\" (forever) must be the "
        "last count");
  CHECK(replication_error_of(consumer("keepalive = \"240:10\"\n")) ==
        "test.toml: replication.consumer[0].keepalive: \"240:10\" must be \"idle:probes:interval\" "
        "(e.g. \"240:10:30\")");
  CHECK(replication_error_of(consumer("keepalive = \"\"\n")).empty());
  for (const char* key : {"timeout_ms", "network_timeout_ms"}) {
    CAPTURE(key);
    for (const char* value : {"0", "3600001", "\"10s\""}) {
      CHECK(replication_error_of(consumer(std::string(key) + " = " + value + "\n")) ==
            "test.toml: replication.consumer[0]." + std::string(key) +
                ": must be an integer from 1 to 3600000 (ms)");
    }
  }
  for (const char* value : {"-1", "1001", "\"10ms\""}) {
    CHECK(replication_error_of(consumer(std::string("persist_batch_ms = ") + value + "\n")) ==
          "test.toml: replication.consumer[0].persist_batch_ms: must be an integer from 0 to "
          "1000 (ms)");
  }
  CHECK(replication_error_of(consumer("persist_batch_ms = 1000\n")).empty());
  CHECK(replication_error_of(consumer("schemachecking = \"on\"\n")) ==
        "test.toml: replication.consumer[0].schemachecking: must be true or false");
  CHECK(replication_error_of(consumer("max_pdu_size = \"512\"\n")) ==
        "test.toml: replication.consumer[0].max_pdu_size: must be from 1KiB to 2GiB");
  CHECK(
      replication_error_of(consumer("max_pdu_size = \"lots\"\n"))
          .starts_with("test.toml: replication.consumer[0].max_pdu_size: \"lots\" is not a size"));
  CHECK(replication_error_of(consumer("updateref = \"ftp://h\"\n"))
            .starts_with("test.toml: replication.consumer[0].updateref: \"ftp://h\": unsupported "
                         "scheme"));
  CHECK(replication_error_of(consumer("updateref = \"ldap://:389\"\n")) ==
        "test.toml: replication.consumer[0].updateref: \"ldap://:389\" needs a host");
}

TEST_CASE("Config replication: the config fuzz target's seed with every key parses") {
  const std::string path =
      std::string(NUMADIR_TEST_DATA_DIR) + "/../fuzz/corpus/config/replication.toml";
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto config = parse_config(text, "replication.toml", "/etc/nd");
  REQUIRE_MESSAGE(config.ok(), config.status().to_string());
  REQUIRE(config->replication_consumers.size() == 2);
  CHECK(config->replication_consumers[0].keepalive.enabled());
  CHECK(config->replication_consumers[1].method == ReplicationBind::kExternal);
  CHECK(config->replication_provider.enabled);
  CHECK(config->replication_provider.max_consumers == 8);
  CHECK(config->database.session_log_entries == 500);
}

TEST_CASE("Config replication: slapd's interval syntax") {
  CHECK(*parse_sync_interval("01:00:00:00") == 86400);
  CHECK(*parse_sync_interval("00:00:00:01") == 1);
  CHECK(*parse_sync_interval("365:23:59:59") == 365 * 86400 + 86399);
  CHECK(*parse_sync_interval("3600") == 3600);
  for (const char* bad : {"", "0", "1:2:3", "1:2:3:4:5", "00:00:60:00", "00:00:00:60", "a:00:00:00",
                          "00:00:00:", "-1:00:00:00", "49711:00:00:00", "4294967296", " 60"}) {
    CAPTURE(bad);
    CHECK(parse_sync_interval(bad).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("Config replication: slapd's retry schedule") {
  CHECK(*parse_retry_schedule("60 +") == std::vector<RetryStep>{RetryStep{60, 0, true}});
  CHECK(*parse_retry_schedule("  5 10   60 + ") ==
        std::vector<RetryStep>{RetryStep{5, 10, false}, RetryStep{60, 0, true}});
  CHECK(*parse_retry_schedule("30 2 3600 1") ==
        std::vector<RetryStep>{RetryStep{30, 2, false}, RetryStep{3600, 1, false}});
  for (const char* bad : {"", " ", "60", "+ 60", "0 +", "60 0", "60 x", "60 + 5 10", "5 10 60",
                          "99999999999 +", "60 ++"}) {
    CAPTURE(bad);
    CHECK(parse_retry_schedule(bad).status().code() == StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace numadir::server
