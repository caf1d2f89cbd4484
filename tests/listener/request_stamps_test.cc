// Requests stamped with when the listener read them (FrontendOptions::stamp_requests,
// RequestOrigin::received_ns), over real loopback sockets: what handle(), notice() and not_run()
// are given, for requests started at once, held behind a bind and left unread past the
// outstanding limit; and 0 with stamping off.
#include <doctest/doctest.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "listener/frontend.h"
#include "tests/listener/frontend_test_util.h"
#include "threadpool/thread_counters.h"

namespace numadir::listener {
namespace {

using testing::Client;
using testing::eventually;
using wire::LdapMessage;
using wire::ProtocolOp;

std::int64_t now_ns() { return static_cast<std::int64_t>(threadpool::steady_ns()); }

// Records, by message ID, the origin's received_ns that handle(), notice() and not_run() were
// given, and a clock read at the start of handle(). A bind named "gate" and a search of base
// "gate" wait for the test; searches answer an entry and a done, binds a BindResponse.
class StampHandler : public RequestHandler {
 public:
  struct Seen {
    std::int64_t received_ns = -1;
    std::int64_t handled_ns = 0;  // handle() only.
  };

  std::unique_ptr<Session> open_session(const ConnectionInfo&) override {
    return std::make_unique<Session>();
  }
  void handle(const LdapMessage& request, Session&, ResponseSink& sink,
              threadpool::WorkerState&) override {
    const std::int64_t handled = now_ns();
    {
      std::lock_guard lock(mu_);
      handled_[request.message_id] = Seen{sink.origin().received_ns, handled};
      changed_.notify_all();
    }
    LdapMessage response;
    if (request.op == ProtocolOp::kBindRequest) {
      if (request.bind_request.name == "gate") {
        wait_for_gate();
      }
      response.reset(request.message_id, ProtocolOp::kBindResponse);
      sink.send(response);
      return;
    }
    if (request.op != ProtocolOp::kSearchRequest) {
      return;
    }
    const std::string_view base = request.search_request.base_object;
    if (base == "gate") {
      wait_for_gate();
    }
    response.reset(request.message_id, ProtocolOp::kSearchResultEntry);
    response.search_entry.object_name = base;
    sink.send(response);
    response.reset(request.message_id, ProtocolOp::kSearchResultDone);
    sink.send(response);
  }
  void notice(const LdapMessage& request, Session&, const RequestOrigin& origin,
              const LdapMessage*) override {
    std::lock_guard lock(mu_);
    noticed_[request.message_id] = Seen{origin.received_ns, 0};
    changed_.notify_all();
  }
  void not_run(const LdapMessage& request, Session&, const RequestOrigin& origin) override {
    std::lock_guard lock(mu_);
    not_run_[request.message_id] = Seen{origin.received_ns, 0};
    changed_.notify_all();
  }

  // Each blocks (30 s at most) until message `id` was seen there; received_ns -1 if not.
  Seen handled(std::int32_t id) { return wait_for(handled_, id); }
  Seen noticed(std::int32_t id) { return wait_for(noticed_, id); }
  Seen dropped(std::int32_t id) { return wait_for(not_run_, id); }

  void wait_at_gate() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [this] { return waiting_ > 0; });
  }
  void open_gate() {
    std::lock_guard lock(mu_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  void wait_for_gate() {
    std::unique_lock lock(mu_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
  }
  Seen wait_for(const std::map<std::int32_t, Seen>& seen, std::int32_t id) {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(30), [&] { return seen.count(id) > 0; });
    const auto found = seen.find(id);
    return found != seen.end() ? found->second : Seen{};
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::int32_t, Seen> handled_, noticed_, not_run_;
  int waiting_ = 0;
  bool open_ = false;
};

using StampServer = testing::Server<StampHandler>;

struct GateOpener {
  StampHandler& handler;
  ~GateOpener() { handler.open_gate(); }
};

FrontendOptions stamping() {
  FrontendOptions options;
  options.stamp_requests = true;
  return options;
}

// Receives the entry and done of each search in `ids`, in any order across them.
void expect_searches(Client& client, std::size_t count) {
  LdapMessage message;
  std::size_t done = 0;
  while (done < count) {
    REQUIRE(client.receive(message));
    done += message.op == ProtocolOp::kSearchResultDone ? 1 : 0;
  }
}

TEST_CASE("Request stamps: the requests of one read carry its time taken before handle()") {
  StampServer server(stamping());
  Client client(server.port);
  client.set_receive_timeout(20);
  const std::int64_t before = now_ns();
  client.search(1, "a");
  client.search(2, "b");
  client.flush();  // One write: one read.
  expect_searches(client, 2);
  const StampHandler::Seen one = server.handler.handled(1);
  const StampHandler::Seen two = server.handler.handled(2);
  CHECK(one.received_ns >= before);
  CHECK(one.received_ns <= one.handled_ns);
  CHECK(two.received_ns == one.received_ns);
  CHECK(two.received_ns <= two.handled_ns);
  // A later read: a later time, and the Unbind's notice carries it.
  const std::int64_t later = now_ns();
  client.search(3, "c");
  client.flush();
  expect_searches(client, 1);
  CHECK(server.handler.handled(3).received_ns >= later);
  client.unbind(4);
  client.flush();
  CHECK(server.handler.noticed(4).received_ns >= server.handler.handled(3).received_ns);
}

TEST_CASE("Request stamps: requests held behind a bind keep their read time") {
  StampServer server(stamping());
  const GateOpener opener{server.handler};
  Client client(server.port);
  client.set_receive_timeout(20);
  client.bind(1, "gate");
  client.search(2, "dropped");
  client.abandon(3, 2);  // Drops search 2 while it is held (not_run).
  client.search(4, "held");
  client.flush();
  server.handler.wait_at_gate();
  const std::int64_t opened = now_ns();
  server.handler.open_gate();
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.op == ProtocolOp::kBindResponse);
  client.expect_search(4, "held");
  const std::int64_t read = server.handler.handled(1).received_ns;
  CHECK(read > 0);
  CHECK(read < opened);
  CHECK(server.handler.dropped(2).received_ns == read);
  CHECK(server.handler.noticed(3).received_ns == read);
  CHECK(server.handler.handled(4).received_ns == read);  // Not when it started.
}

TEST_CASE("Request stamps: requests left unread past the outstanding limit keep their read time") {
  FrontendOptions options = stamping();
  options.limits.max_outstanding_per_connection = 1;
  StampServer server(options);
  const GateOpener opener{server.handler};
  Client client(server.port);
  client.set_receive_timeout(20);
  client.search(1, "gate");
  for (std::int32_t id = 2; id <= 5; ++id) {
    client.search(id, "s" + std::to_string(id));  // 2 held; 3 to 5 framed only once 1 is done.
  }
  client.flush();
  server.handler.wait_at_gate();
  const std::int64_t opened = now_ns();
  server.handler.open_gate();
  expect_searches(client, 5);
  const std::int64_t read = server.handler.handled(1).received_ns;
  CHECK(read > 0);
  CHECK(read < opened);
  for (std::int32_t id = 2; id <= 5; ++id) {
    INFO("message ", id);
    const StampHandler::Seen seen = server.handler.handled(id);
    CHECK(seen.received_ns == read);
    CHECK(seen.handled_ns > opened);
  }
}

TEST_CASE("Request stamps: when off every origin carries 0") {
  StampServer server;
  const GateOpener opener{server.handler};
  Client client(server.port);
  client.set_receive_timeout(20);
  client.bind(1, "gate");
  client.search(2, "dropped");
  client.abandon(3, 2);
  client.search(4, "held");
  client.flush();
  server.handler.wait_at_gate();
  server.handler.open_gate();
  LdapMessage message;
  REQUIRE(client.receive(message));
  client.expect_search(4, "held");
  client.unbind(5);
  client.flush();
  CHECK(server.handler.handled(1).received_ns == 0);
  CHECK(server.handler.dropped(2).received_ns == 0);
  CHECK(server.handler.noticed(3).received_ns == 0);
  CHECK(server.handler.handled(4).received_ns == 0);
  CHECK(server.handler.noticed(5).received_ns == 0);
}

}  // namespace
}  // namespace numadir::listener
