// The small LDAP client (server/commands/ldap_client.h) and `numadir stats` (run_stats) against a
// real frontend on a loopback port serving an OperationHandler with a monitor.
#include "server/commands/ldap_client.h"

#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "listener/frontend.h"
#include "server/commands/commands.h"
#include "server/monitoring/monitor.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

// A handler with a monitor behind a running frontend (one listener, two workers).
class RunningServer {
 public:
  RunningServer() : monitor_("numadir test"), fixture_(options(monitor_)) {
    listener::FrontendOptions frontend_options;
    frontend_options.urls.push_back(listener::ListenUrl{"ldap", "127.0.0.1", 0});
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
  static HandlerOptions options(const Monitor& monitor) {
    HandlerOptions options = default_handler_options();
    options.monitor = &monitor;
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
  for (std::string_view url : {"ldaps://127.0.0.1", "http://x", "ldap://[::1", "ldap://h:0",
                               "ldap://h:70000", "ldap://h:12x"}) {
    INFO(url);
    CHECK(LdapClient::connect(url).status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(LdapClient::connect("ldap://127.0.0.1:1").status().code() == StatusCode::kIo);
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
}

}  // namespace
}  // namespace numadir::server::testing
