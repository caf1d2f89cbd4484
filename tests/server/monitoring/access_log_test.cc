#include "server/monitoring/access_log.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "schema/filter.h"
#include "server/monitoring/logging_handler.h"

namespace numadir::server {
namespace {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::filesystem::path temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "numadir-log-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

TEST_CASE("AccessLog: appended lines reach the file and reopen follows a rotation") {
  const std::filesystem::path dir = temp_dir();
  const std::filesystem::path path = dir / "access.log";
  auto log = AccessLog::open(path);
  REQUIRE_MESSAGE(log.ok(), log.status().to_string());
  (*log)->append("first\n");
  (*log)->append("second\n");
  (*log)->flush();
  CHECK(read_file(path) == "first\nsecond\n");
  std::filesystem::rename(path, dir / "access.log.1");  // What logrotate does.
  REQUIRE((*log)->reopen().ok());
  (*log)->append("third\n");
  (*log)->flush();
  CHECK(read_file(dir / "access.log.1") == "first\nsecond\n");
  CHECK(read_file(path) == "third\n");
  CHECK((*log)->dropped() == 0);
  log->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("AccessLog: a file that cannot be opened is an error naming it") {
  auto log = AccessLog::open("/nonexistent-dir-numadir/access.log");
  REQUIRE_FALSE(log.ok());
  CHECK(log.status().message().find("/nonexistent-dir-numadir/access.log") != std::string::npos);
}

TEST_CASE("AccessLog: levels parse and a bad one is refused") {
  CHECK(*parse_log_level("off") == LogLevel::kOff);
  CHECK(*parse_log_level("stats") == LogLevel::kStats);
  CHECK(*parse_log_level("debug") == LogLevel::kDebug);
  CHECK_FALSE(parse_log_level("verbose").ok());
}

TEST_CASE("LoggingHandler: describes each kind of request") {
  LdapMessage bind;
  bind.reset(1, ProtocolOp::kBindRequest);
  bind.bind_request.name = "uid=a,dc=x";
  CHECK(describe_request(bind) == "BIND dn=\"uid=a,dc=x\" method=128");
  LdapMessage search;
  search.reset(2, ProtocolOp::kSearchRequest);
  search.search_request.base_object = "dc=x";
  search.search_request.scope = listener::wire::SearchScope::kWholeSubtree;
  search.search_request.filter = *schema::Filter::parse("(uid=a\"b)");
  search.search_request.attributes = {"1.1"};
  CHECK(describe_request(search) ==
        "SRCH base=\"dc=x\" scope=2 deref=0 filter=\"(uid=a\\\"b)\" attrs=\"1.1\"");
}

// The worker state Scripted makes: handle() counts the requests that came with one.
class ScriptedState : public threadpool::WorkerState {};

// An inner handler that answers a search with two entries and a bind with invalidCredentials.
class Scripted : public listener::RequestHandler {
 public:
  std::unique_ptr<listener::Session> open_session(const listener::ConnectionInfo&) override {
    return std::make_unique<listener::Session>();
  }
  std::unique_ptr<threadpool::WorkerState> make_worker_state() override {
    return std::make_unique<ScriptedState>();
  }
  void handle(const LdapMessage& request, listener::Session&, listener::ResponseSink& sink,
              threadpool::WorkerState& state) override {
    if (dynamic_cast<ScriptedState*>(&state) != nullptr) {
      ++with_own_state;
    }
    LdapMessage response;
    if (request.op == ProtocolOp::kSearchRequest) {
      for (const char* dn : {"uid=a,dc=x", "uid=b,dc=x"}) {
        response.reset(request.message_id, ProtocolOp::kSearchResultEntry);
        response.search_entry.object_name = dn;
        sink.send(response);
      }
      response.reset(request.message_id, ProtocolOp::kSearchResultDone);
    } else {
      response.reset(request.message_id, ProtocolOp::kBindResponse);
      response.result.code = listener::wire::ResultCode::kInvalidCredentials;
    }
    sink.send(response);
  }

  int with_own_state = 0;
};

class CountingSink : public listener::ResponseSink {
 public:
  void send(const LdapMessage&) override { ++sent; }
  bool abandoned() const override { return false; }
  int sent = 0;
};

TEST_CASE("LoggingHandler: logs the connection and each operation with its result") {
  const std::filesystem::path dir = temp_dir();
  auto log = AccessLog::open(dir / "access.log");
  REQUIRE(log.ok());
  Scripted inner;
  SUBCASE("stats") {
    LoggingHandler handler(inner, **log, LogLevel::kStats);
    listener::ConnectionInfo info;
    info.id = 7;
    info.peer = "127.0.0.1:5555";
    info.local_port = 389;
    auto session = handler.open_session(info);
    const std::unique_ptr<threadpool::WorkerState> state = handler.make_worker_state();
    LdapMessage search;
    search.reset(1, ProtocolOp::kSearchRequest);
    search.search_request.base_object = "dc=x";
    search.search_request.filter = *schema::Filter::parse("(uid=*)");
    CountingSink sink;
    handler.handle(search, *session, sink, *state);
    CHECK(sink.sent == 3);  // The client still gets everything.
    LdapMessage bind;
    bind.reset(2, ProtocolOp::kBindRequest);
    bind.bind_request.name = "uid=a,dc=x";
    handler.handle(bind, *session, sink, *state);
    CHECK(inner.with_own_state == 2);  // The inner handler's state, passed through.
    LdapMessage abandon;
    abandon.reset(3, ProtocolOp::kAbandonRequest);
    abandon.abandon_id = 1;
    handler.notice(abandon, *session);
    LdapMessage unbind;
    unbind.reset(4, ProtocolOp::kUnbindRequest);
    handler.notice(unbind, *session);
    session.reset();
    (*log)->flush();
    const std::string text = read_file(dir / "access.log");
    CAPTURE(text);
    CHECK(text.find("conn=7 ACCEPT from IP=127.0.0.1:5555 (port 389)\n") != std::string::npos);
    CHECK(text.find("conn=7 op=1 SRCH base=\"dc=x\" scope=0") != std::string::npos);
    CHECK(text.find("conn=7 op=1 SEARCH RESULT tag=101 err=0 nentries=2 etime=") !=
          std::string::npos);
    CHECK(text.find("conn=7 op=2 BIND dn=\"uid=a,dc=x\" method=128\n") != std::string::npos);
    CHECK(text.find("conn=7 op=2 RESULT tag=97 err=49 etime=") != std::string::npos);
    CHECK(text.find("conn=7 op=3 ABANDON msg=1\n") != std::string::npos);
    CHECK(text.find("conn=7 op=4 UNBIND\n") != std::string::npos);
    CHECK(text.find("conn=7 op=4 UNBIND\n") < text.find("conn=7 closed\n"));
    CHECK(text.find("conn=7 closed\n") != std::string::npos);
    CHECK(text.find("ENTRY") == std::string::npos);
  }
  SUBCASE("debug lists the entries") {
    LoggingHandler handler(inner, **log, LogLevel::kDebug);
    auto session = handler.open_session(listener::ConnectionInfo{});
    const std::unique_ptr<threadpool::WorkerState> state = handler.make_worker_state();
    LdapMessage search;
    search.reset(3, ProtocolOp::kSearchRequest);
    search.search_request.base_object = "dc=x";
    search.search_request.filter = *schema::Filter::parse("(uid=*)");
    CountingSink sink;
    handler.handle(search, *session, sink, *state);
    (*log)->flush();
    const std::string text = read_file(dir / "access.log");
    CAPTURE(text);
    CHECK(text.find("op=3 ENTRY dn=\"uid=a,dc=x\"\n") != std::string::npos);
    CHECK(text.find("op=3 ENTRY dn=\"uid=b,dc=x\"\n") != std::string::npos);
  }
  log->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace numadir::server
