// The small LDAP client (server/commands/ldap_client.h) and `numadir stats` (run_stats) against a
// real frontend on a loopback port serving an OperationHandler with a monitor.
#include "server/commands/ldap_client.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "listener/frontend.h"
#include "server/commands/commands.h"
#include "server/monitoring/monitor.h"
#include "server/operations/external_map.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

// A handler with a monitor behind a running frontend (one listener, two workers); with
// `ldapi_path`, an ldapi:// listener there too, and with `rules`, SASL EXTERNAL's mapping.
class RunningServer {
 public:
  explicit RunningServer(const std::string& ldapi_path = "",
                         const ExternalMapRules* rules = nullptr)
      : monitor_("numadir test"), fixture_(options(monitor_, rules)) {
    listener::FrontendOptions frontend_options;
    frontend_options.urls.push_back(listener::ListenUrl{"ldap", "127.0.0.1", 0});
    if (!ldapi_path.empty()) {
      frontend_options.urls.push_back(listener::ListenUrl{"ldapi", "", 0, ldapi_path});
    }
    frontend_options.listeners = 1;
    frontend_options.workers = 2;
    auto started = listener::Frontend::start(frontend_options, fixture_.handler());
    REQUIRE_MESSAGE(started.ok(), started.status().to_string());
    frontend_ = std::move(*started);
    monitor_.attach([frontend = frontend_.get()] { return frontend->snapshot(); });
    url_ = "ldap://127.0.0.1:" + std::to_string(frontend_->bound_urls()[0].port);
  }
  ~RunningServer() {
    monitor_.detach();
    frontend_->stop();
  }
  const std::string& url() const { return url_; }

 private:
  static HandlerOptions options(const Monitor& monitor, const ExternalMapRules* rules) {
    HandlerOptions options = default_handler_options();
    options.monitor = &monitor;
    options.ldapi = true;
    options.external_rules = rules;
    return options;
  }

  Monitor monitor_;
  HandlerFixture fixture_;
  std::unique_ptr<listener::Frontend> frontend_;
  std::string url_;
};

TEST_CASE("LdapClient: binds and searches cn=Monitor of a running server") {
  RunningServer server;
  auto client = LdapClient::connect(server.url());
  REQUIRE_MESSAGE(client.ok(), client.status().to_string());
  SUBCASE("as the rootdn") {
    REQUIRE((*client)->simple_bind(kRootDn, kRootPassword).ok());
    auto entries = (*client)->search("cn=Workers,cn=Monitor", SearchScope::kSingleLevel,
                                     "(numadirRequests>=0)", {"numadirRequests"});
    REQUIRE_MESSAGE(entries.ok(), entries.status().to_string());
    REQUIRE(entries->size() == 2);
    CHECK((*entries)[0].dn == "cn=Worker 0,cn=Workers,cn=Monitor");
    REQUIRE((*entries)[0].attributes.size() == 1);
    CHECK((*entries)[0].attributes[0].description == "numadirRequests");
  }
  SUBCASE("anonymous") {
    auto entries = (*client)->search("cn=Monitor", SearchScope::kBaseObject, "(objectClass=*)", {});
    REQUIRE_FALSE(entries.ok());
    CHECK(entries.status().code() == StatusCode::kNoSuchObject);
  }
  SUBCASE("a wrong password") {
    const Status bound = (*client)->simple_bind(kRootDn, "wrong");
    CHECK(bound.code() == StatusCode::kInvalidArgument);
    CHECK(bound.message().find("49") != std::string::npos);
  }
  SUBCASE("a filter that does not parse") {
    CHECK((*client)->search("", SearchScope::kBaseObject, "(objectClass=*", {}).status().code() ==
          StatusCode::kInvalidArgument);
  }
}

TEST_CASE("LdapClient: URLs of another form and closed ports are errors") {
  for (std::string_view url :
       {"ldaps://127.0.0.1", "http://x", "ldap://[::1", "ldap://h:0", "ldap://h:70000",
        "ldap://h:12x", "ldapi://run/relative", "ldapi:///a%2"}) {
    INFO(url);
    CHECK(LdapClient::connect(url).status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(LdapClient::connect("ldap://127.0.0.1:1").status().code() == StatusCode::kIo);
}

// The peercred DN of this process, and a rule mapping it to the rootdn.
std::string own_peercred_dn() { return peercred_dn(getuid(), getgid()); }

std::unique_ptr<ExternalMapRules> own_identity_to_root() {
  std::string match = "^" + own_peercred_dn() + "$";
  match.replace(match.find('+'), 1, "\\+");
  auto rules = ExternalMapRules::compile(
      std::vector<ExternalMapRuleSpec>{ExternalMapRuleSpec{match, std::string(kRootDn)}});
  REQUIRE_MESSAGE(rules.ok(), rules.status().to_string());
  return std::move(*rules);
}

TEST_CASE("LdapClient: over ldapi SASL EXTERNAL binds as the peer credentials") {
  backend::testing::TempDir dir;
  const std::string path = (dir.path() / "ldapi").string();
  SUBCASE("unmapped: the peercred DN itself") {
    RunningServer server(path);
    // The plain path, and slapd's percent-encoded form.
    for (const std::string& url :
         {"ldapi://" + path, listener::ListenUrl{"ldapi", "", 0, path}.to_string()}) {
      CAPTURE(url);
      auto client = LdapClient::connect(url);
      REQUIRE_MESSAGE(client.ok(), client.status().to_string());
      REQUIRE((*client)->sasl_external_bind().ok());
      Result<std::string> who = (*client)->who_am_i();
      REQUIRE_MESSAGE(who.ok(), who.status().to_string());
      CHECK(*who == "dn:" + own_peercred_dn());
      CHECK((*client)
                ->search("cn=Monitor", SearchScope::kBaseObject, "(objectClass=*)", {})
                .status()
                .code() == StatusCode::kNoSuchObject);
    }
  }
  SUBCASE("mapped to the rootdn: cn=Monitor is there") {
    const auto rules = own_identity_to_root();
    RunningServer server(path, rules.get());
    auto client = LdapClient::connect("ldapi://" + path);
    REQUIRE_MESSAGE(client.ok(), client.status().to_string());
    REQUIRE((*client)->sasl_external_bind().ok());
    CHECK(*(*client)->who_am_i() == "dn:" + std::string(kRootDn));
    auto entries = (*client)->search("cn=Workers,cn=Monitor", SearchScope::kSingleLevel,
                                     "(objectClass=*)", {"numadirRequests"});
    REQUIRE_MESSAGE(entries.ok(), entries.status().to_string());
    CHECK(entries->size() == 2);
  }
  SUBCASE("over TCP EXTERNAL without TLS is refused") {
    RunningServer server(path);
    auto client = LdapClient::connect(server.url());
    REQUIRE(client.ok());
    const Status bound = (*client)->sasl_external_bind();
    CHECK(bound.code() == StatusCode::kInvalidArgument);
    CHECK(bound.message().starts_with("SASL EXTERNAL bind refused: "));
  }
}

TEST_CASE("LdapClient: a missing ldapi socket names the URL and asks for a server") {
  backend::testing::TempDir dir;
  const std::string url = "ldapi://" + (dir.path() / "typo").string();
  auto client = LdapClient::connect(url);
  REQUIRE_FALSE(client.ok());
  CHECK(client.status().code() == StatusCode::kNotFound);
  CHECK(client.status().message() == url +
                                         ": no such socket (No such file or directory): is a "
                                         "numadir serve listening there?");
}

TEST_CASE("run_stats: views of a running server with rates then exit") {
  RunningServer server;
  StatsOptions options;
  options.url = server.url();
  options.interval_s = 0.05;
  std::ostringstream out;
  std::ostringstream err;
  SUBCASE("two views as the rootdn") {
    options.bind_dn = std::string(kRootDn);
    options.password = std::string(kRootPassword);
    options.count = 2;
    REQUIRE_MESSAGE(run_stats(options, out, err) == 0, err.str());
    const std::string view = out.str();
    CHECK(view.find("numadir stats  " + server.url() + "  numadir test  percpu") == 0);
    CHECK(view.find("\nnumadir stats  ", 1) != std::string::npos);  // The second view.
    CHECK(view.find("auths/s ") != std::string::npos);
    CHECK(view.find("worker-1") != std::string::npos);
    CHECK(view.find("\x1b[") == std::string::npos);  // Not a terminal: no escape codes.
  }
  SUBCASE("on a terminal each view clears the screen") {
    options.bind_dn = std::string(kRootDn);
    options.password = std::string(kRootPassword);
    options.once = true;
    options.terminal = true;
    REQUIRE_MESSAGE(run_stats(options, out, err) == 0, err.str());
    CHECK(out.str().find("\x1b[H\x1b[2Jnumadir stats") == 0);
  }
  SUBCASE("anonymous: cn=Monitor is not there") {
    options.once = true;
    CHECK(run_stats(options, out, err) == 1);
    CHECK(err.str().find("no such object") != std::string::npos);
  }
  SUBCASE("a bad interval") {
    options.interval_s = 0;
    CHECK(run_stats(options, out, err) == 2);
  }
  SUBCASE("-Y EXTERNAL over ldap:// is a usage error") {
    options.sasl_mechanism = "EXTERNAL";
    options.once = true;
    CHECK(run_stats(options, out, err) == 2);
    CHECK(err.str() ==
          "numadir stats: -Y EXTERNAL needs an ldapi:// URL (e.g. -H "
          "ldapi:///run/numadir/ldapi), not " +
              server.url() + "\n");
  }
}

TEST_CASE("run_stats: -Y EXTERNAL over ldapi") {
  backend::testing::TempDir dir;
  const std::string path = (dir.path() / "ldapi").string();
  StatsOptions options;
  options.url = "ldapi://" + path;
  options.interval_s = 0.05;
  options.once = true;
  options.sasl_mechanism = "EXTERNAL";
  std::ostringstream out;
  std::ostringstream err;
  SUBCASE("mapped to the rootdn: a view") {
    const auto rules = own_identity_to_root();
    RunningServer server(path, rules.get());
    SUBCASE("EXTERNAL") {}
    SUBCASE("external, in lower case as ldapsearch takes it") {
      options.sasl_mechanism = "external";
    }
    REQUIRE_MESSAGE(run_stats(options, out, err) == 0, err.str());
    CHECK(out.str().find("numadir stats  " + options.url + "  numadir test  percpu") == 0);
    CHECK(out.str().find("worker-1") != std::string::npos);
  }
  SUBCASE("unmapped: cn=Monitor is for the rootdn, naming the identity") {
    RunningServer server(path);
    CHECK(run_stats(options, out, err) == 1);
    CHECK(err.str() == "numadir stats: " + options.url +
                           ": cn=Monitor: no such object (only the rootdn may read it; -Y "
                           "EXTERNAL bound as dn:" +
                           own_peercred_dn() +
                           ": map it to the rootdn with a [[sasl.external_map]] rule)\n");
  }
  SUBCASE("usage errors before any connection") {
    SUBCASE("another mechanism") {
      options.sasl_mechanism = "GSSAPI";
      CHECK(run_stats(options, out, err) == 2);
      CHECK(err.str() == "numadir stats: -Y GSSAPI: the only SASL mechanism is EXTERNAL\n");
    }
    SUBCASE("with -D, -w or -y") {
      SUBCASE("-D") { options.bind_dn = std::string(kRootDn); }
      SUBCASE("-w") { options.password = "secret"; }
      SUBCASE("-y") { options.password_file = "/nonexistent"; }
      CHECK(run_stats(options, out, err) == 2);
      CHECK(err.str() ==
            "numadir stats: -Y EXTERNAL takes no -D, -w or -y (the identity is this process's "
            "uid and gid)\n");
    }
    SUBCASE("over ldaps://") {
      options.url = "ldaps://127.0.0.1:1";
      CHECK(run_stats(options, out, err) == 2);
      CHECK(err.str().find("-Y EXTERNAL needs an ldapi:// URL") != std::string::npos);
    }
  }
  SUBCASE("no server: the socket path is named") {
    CHECK(run_stats(options, out, err) == 1);
    CHECK(err.str() == "numadir stats: " + options.url +
                           ": no such socket (No such file or directory): is a numadir serve "
                           "listening there?\n");
  }
}

}  // namespace
}  // namespace numadir::server::testing
