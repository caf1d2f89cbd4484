// tests/server/replication/provider_check_test.cc: `numadir check-config --online`'s check of a
// provider (server/replication/provider_check.h), and run_check_config with online = true,
// against a fake provider (fake_provider.h) that offers the Sync Request control or not and
// has the searchbase or not.
#include "server/replication/provider_check.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "server/commands/commands.h"
#include "server/replication/sync_protocol.h"
#include "tests/backend/backend_test_util.h"
#include "tests/server/replication/fake_provider.h"

namespace numadir::server::replication {
namespace {

using testing::FakeProvider;
using testing::FakeSession;
namespace wire = listener::wire;

struct ProviderShape {
  bool offers_sync = true;
  bool has_searchbase = true;
  wire::ResultCode bind = wire::ResultCode::kSuccess;
};

// What the fake provider saw.
struct Seen {
  std::string bind_name;
  std::vector<std::string> bases;
  std::vector<std::string> root_dse_attributes;
  bool unbound = false;
};

FakeProvider::Script provider_script(const ProviderShape& shape, Seen& seen) {
  return [shape, &seen](FakeSession& session) {
    wire::LdapMessage request;
    if (!session.read(request) || request.op != wire::ProtocolOp::kBindRequest) {
      return;
    }
    seen.bind_name = std::string(request.bind_request.name);
    session.answer(request.message_id, wire::ProtocolOp::kBindResponse, shape.bind);
    while (session.read(request)) {
      if (request.op == wire::ProtocolOp::kUnbindRequest) {
        seen.unbound = true;
        return;
      }
      if (request.op != wire::ProtocolOp::kSearchRequest) {
        return;
      }
      const std::string base(request.search_request.base_object);
      seen.bases.push_back(base);
      if (base.empty()) {
        for (std::string_view attribute : request.search_request.attributes) {
          seen.root_dse_attributes.emplace_back(attribute);
        }
      }
      wire::LdapMessage entry;
      entry.reset(request.message_id, wire::ProtocolOp::kSearchResultEntry);
      entry.search_entry.object_name = base;
      if (base.empty()) {
        entry.search_entry.attributes.add("supportedControl");
        entry.search_entry.attributes.add_value("1.3.6.1.4.1.4203.1.10.1");
        if (shape.offers_sync) {
          entry.search_entry.attributes.add_value(kSyncRequestOid);
        }
      }
      const bool found = base.empty() || shape.has_searchbase;
      if (found) {
        session.write(entry);
      }
      session.answer(request.message_id, wire::ProtocolOp::kSearchResultDone,
                     found ? wire::ResultCode::kSuccess : wire::ResultCode::kNoSuchObject);
    }
  };
}

ReplicationConsumerConfig consumer_of(const FakeProvider& provider) {
  ReplicationConsumerConfig consumer;
  consumer.origin = "replication.consumer[0]";
  consumer.rid = 3;
  consumer.provider = *parse_ldap_url(provider.url());
  consumer.searchbase = "ou=people,dc=example,dc=com";
  consumer.binddn = "cn=replicator,dc=example,dc=com";
  consumer.credentials = "pw";
  consumer.timeout_ms = 5000;
  return consumer;
}

TEST_CASE("check_provider: a provider with syncprov and the searchbase is ok") {
  Seen seen;
  FakeProvider provider(provider_script({}, seen));
  const ReplicationConsumerConfig consumer = consumer_of(provider);
  Result<ProviderCheck> check = check_provider(consumer);
  REQUIRE_MESSAGE(check.ok(), check.status().to_string());
  CHECK(check->url == provider.url());
  CHECK(check->offers_sync);
  CHECK(check->tls.empty());
  CHECK(describe_provider_check(consumer, *check) ==
        "replication.consumer rid=3: " + provider.url() +
            ": ok, offers the Sync Request control (in the clear, bound as "
            "cn=replicator,dc=example,dc=com, searchbase readable)");
  provider.join();
  CHECK(seen.bind_name == "cn=replicator,dc=example,dc=com");
  CHECK(seen.bases == std::vector<std::string>{"", "ou=people,dc=example,dc=com"});
  CHECK(seen.root_dse_attributes == std::vector<std::string>{"supportedControl"});
  CHECK(seen.unbound);
}

TEST_CASE("check_provider: a provider without the Sync Request control is named") {
  Seen seen;
  FakeProvider provider(provider_script({.offers_sync = false}, seen));
  const ReplicationConsumerConfig consumer = consumer_of(provider);
  Result<ProviderCheck> check = check_provider(consumer);
  REQUIRE_MESSAGE(check.ok(), check.status().to_string());
  CHECK_FALSE(check->offers_sync);
  CHECK(describe_provider_check(consumer, *check) ==
        "replication.consumer rid=3: " + provider.url() +
            ": the provider does not offer the Sync Request control (1.3.6.1.4.1.4203.1.9.1.1 "
            "is not in its root DSE's supportedControl): load the syncprov overlay on its "
            "database");
}

TEST_CASE("check_provider: a searchbase the provider lacks or hides is an error") {
  Seen seen;
  FakeProvider provider(provider_script({.has_searchbase = false}, seen));
  Result<ProviderCheck> check = check_provider(consumer_of(provider));
  REQUIRE_FALSE(check.ok());
  CHECK(check.status().code() == StatusCode::kNoSuchObject);
  CHECK(check.status().message() ==
        provider.url() +
            ": searchbase ou=people,dc=example,dc=com: no such object on the provider, or "
            "cn=replicator,dc=example,dc=com may not read it");
}

TEST_CASE("check_provider: a refused bind is an error") {
  Seen seen;
  FakeProvider provider(provider_script({.bind = wire::ResultCode::kInvalidCredentials}, seen));
  Result<ProviderCheck> check = check_provider(consumer_of(provider));
  REQUIRE_FALSE(check.ok());
  CHECK(check.status().message() ==
        provider.url() +
            ": bind as cn=replicator,dc=example,dc=com refused: invalidCredentials "
            "(49)");
}

// Runs check-config --online on a config with one consumer of `provider`.
int check_online(const FakeProvider& provider, std::string& out, std::string& err) {
  backend::testing::TempDir dir;
  const std::filesystem::path password = dir.path() / "repl.pw";
  std::ofstream(password) << "pw\n";
  std::filesystem::permissions(password, std::filesystem::perms::owner_read);
  // A database there, so that check-config has no note about database.path to print.
  std::filesystem::create_directory(dir.path() / "db");
  std::ofstream(dir.path() / "db" / "data.mdb");
  const std::filesystem::path config = dir.path() / "numadir.toml";
  std::ofstream(config) << "[database]\npath = \"db\"\nsuffix = \"dc=example,dc=com\"\n"
                           "[[replication.consumer]]\nrid = 3\nprovider = \""
                        << provider.url()
                        << "\"\nsearchbase = \"ou=people,dc=example,dc=com\"\n"
                           "binddn = \"cn=replicator,dc=example,dc=com\"\n"
                           "credentials_file = \"repl.pw\"\n";
  std::ostringstream out_stream;
  std::ostringstream err_stream;
  const int status = run_check_config(config, out_stream, err_stream, true);
  out = out_stream.str();
  err = err_stream.str();
  // The file names vary with the temporary directory: the tests compare past them.
  const std::string prefix = config.string() + ": ";
  for (std::string* text : {&out, &err}) {
    for (std::size_t at; (at = text->find(prefix)) != std::string::npos;) {
      text->replace(at, prefix.size(), "CONFIG: ");
    }
  }
  return status;
}

TEST_CASE("check-config --online: one line per consumer and the status") {
  std::string out;
  std::string err;
  SUBCASE("ok") {
    Seen seen;
    FakeProvider provider(provider_script({}, seen));
    CHECK(check_online(provider, out, err) == 0);
    CHECK(out == "replication.consumer rid=3: " + provider.url() +
                     ": ok, offers the Sync Request control (in the clear, bound as "
                     "cn=replicator,dc=example,dc=com, searchbase readable)\nCONFIG: ok\n");
    CHECK(err.empty());
    provider.join();
    CHECK(seen.bind_name == "cn=replicator,dc=example,dc=com");
  }
  SUBCASE("without the control") {
    Seen seen;
    FakeProvider provider(provider_script({.offers_sync = false}, seen));
    CHECK(check_online(provider, out, err) == 1);
    CHECK(out.empty());
    CHECK(err == "numadir: CONFIG: replication.consumer rid=3: " + provider.url() +
                     ": the provider does not offer the Sync Request control "
                     "(1.3.6.1.4.1.4203.1.9.1.1 is not in its root DSE's supportedControl): load "
                     "the syncprov overlay on its database\n");
  }
  SUBCASE("a wrong password") {
    Seen seen;
    FakeProvider provider(provider_script({.bind = wire::ResultCode::kInvalidCredentials}, seen));
    CHECK(check_online(provider, out, err) == 1);
    CHECK(err == "numadir: CONFIG: replication.consumer rid=3: " + provider.url() +
                     ": bind as cn=replicator,dc=example,dc=com refused: invalidCredentials "
                     "(49)\n");
  }
}

}  // namespace
}  // namespace numadir::server::replication
