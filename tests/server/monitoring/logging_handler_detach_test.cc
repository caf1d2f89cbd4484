// LoggingHandler (server/monitoring/logging_handler.h) around an operation kept open
// (ResponseSink::detach): its RESULT line is written once, when it is finished, with its result.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "server/monitoring/access_log.h"
#include "server/monitoring/logging_handler.h"
#include "tests/read_file.h"

namespace numadir::server {
namespace {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;

using numadir::testing::read_file;

// The listener's side: counts what reaches the connection.
class CountingOpen final : public listener::OpenOperation {
 public:
  explicit CountingOpen(int& finished) : finished_(finished) {}
  void send(const LdapMessage&) override {}
  void finish(const LdapMessage&) override { ++finished_; }
  bool abandoned() const override { return false; }
  void set_on_end(std::function<void()>) override {}

 private:
  int& finished_;
};

class DetachableSink final : public listener::ResponseSink {
 public:
  void send(const LdapMessage&) override {}
  bool abandoned() const override { return false; }
  std::unique_ptr<listener::OpenOperation> detach() override {
    return std::make_unique<CountingOpen>(finished);
  }
  listener::RequestOrigin origin() const override { return {number, {}}; }
  int finished = 0;
  std::uint64_t number = 0;
};

// Keeps each request's operation open; the test finishes or drops it.
class Detaching final : public listener::RequestHandler {
 public:
  std::unique_ptr<listener::Session> open_session(const listener::ConnectionInfo&) override {
    return std::make_unique<listener::Session>();
  }
  std::unique_ptr<listener::RequestWorkerState> make_worker_state() override {
    return std::make_unique<LoggingWorkerState>();
  }
  void handle(const LdapMessage& request, listener::Session&, listener::ResponseSink& sink,
              threadpool::WorkerState&) override {
    message_id = request.message_id;
    open = sink.detach();
    REQUIRE(open != nullptr);
  }
  std::unique_ptr<listener::OpenOperation> open;
  std::int32_t message_id = 0;
};

TEST_CASE("LoggingHandler: a detached update logs its result when it finishes") {
  std::string pattern = (std::filesystem::temp_directory_path() / "numadir-log-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  const std::filesystem::path dir = pattern;
  auto log = AccessLog::open(dir / "access.log");
  REQUIRE(log.ok());
  Detaching inner;
  LoggingHandler handler(inner, **log, LogLevel::kStats);
  listener::ConnectionInfo info;
  info.id = 3;
  auto session = handler.open_session(info);
  const std::unique_ptr<threadpool::WorkerState> state = handler.make_worker_state();
  DetachableSink sink;
  LdapMessage modify;
  modify.reset(5, ProtocolOp::kModifyRequest);
  modify.modify_request.object = "uid=a,dc=x";
  handler.handle(modify, *session, sink, *state);
  (*log)->flush();
  CHECK(read_file(dir / "access.log").find("msgid=5 RESULT") == std::string::npos);  // Not yet.
  LdapMessage response;
  response.reset(5, ProtocolOp::kModifyResponse);
  response.result.code = ResultCode::kInsufficientAccessRights;
  response.result.diagnostic_message = "no write access to attribute description";
  inner.open->finish(response);
  CHECK(sink.finished == 1);
  inner.open.reset();  // Released after finishing: no second line.
  LdapMessage dropped;
  dropped.reset(6, ProtocolOp::kDelRequest);
  dropped.dn = "uid=b,dc=x";
  sink.number = 1;
  handler.handle(dropped, *session, sink, *state);
  inner.open.reset();  // Released unfinished.
  session.reset();
  (*log)->flush();
  const std::string text = read_file(dir / "access.log");
  CAPTURE(text);
  CHECK(text.find("conn=3 op=0 msgid=5 MOD dn=\"uid=a,dc=x\"\n") != std::string::npos);
  const std::size_t result = text.find("conn=3 op=0 msgid=5 RESULT tag=103 err=50 etime=");
  CHECK(result != std::string::npos);
  CHECK(text.find("text=\"no write access to attribute description\"", result) !=
        std::string::npos);
  CHECK(text.find("conn=3 op=0 msgid=5 RESULT", result + 1) == std::string::npos);
  CHECK(text.find("conn=3 op=1 msgid=6 ABANDONED etime=") != std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace numadir::server
