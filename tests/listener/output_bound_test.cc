// Output backpressure (listener/request_handler.h, "Output backpressure"): a connection's bound on
// queued response bytes, producers that pause at it without holding a worker and go on once the
// client reads (OpenOperation::set_on_writable), a connection not read while over it, and the
// write timeout. Over real loopback sockets, with a handler of its own: a search of base
// "stream" sends `sizeLimit` entries of about 1 KiB, pausing whenever the sink is not writable.
#include <doctest/doctest.h>
#include <sys/socket.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "tests/listener/frontend_test_util.h"

namespace numadir::listener {
namespace {

using testing::Client;
using testing::eventually;
using wire::LdapMessage;
using wire::ProtocolOp;

constexpr std::size_t kBound = 64 * 1024;

class StreamState final : public RequestWorkerState {};

// One streaming search: sends entries e0, e1, ... through the sink, then through its open
// operation once it paused. Owned by the on_writable callback while it waits.
struct Producer : std::enable_shared_from_this<Producer> {
  std::int32_t message_id = 0;
  std::int32_t next = 0;
  std::int32_t total = 0;
  std::unique_ptr<OpenOperation> open;
  std::atomic<int>* pauses = nullptr;
  std::atomic<int>* resumes_on_workers = nullptr;
  std::atomic<int>* destroyed = nullptr;
  ~Producer() { destroyed->fetch_add(1); }

  LdapMessage entry(std::int32_t index, std::string& name) const {
    name = "e" + std::to_string(index);
    LdapMessage message;
    message.reset(message_id, ProtocolOp::kSearchResultEntry);
    message.search_entry.object_name = name;
    message.search_entry.attributes.add("description");
    message.search_entry.attributes.add_value(std::string_view(kFiller));
    return message;
  }
  // Sends until done or not writable. Returns: true when it sent everything but the result.
  template <typename Sink>
  bool stream(Sink& sink) {
    std::string name;
    while (next < total) {
      if (!sink.writable()) {
        return false;
      }
      sink.send(entry(next++, name));
    }
    return true;
  }
  void wait() {
    pauses->fetch_add(1);
    open->set_on_writable([self = shared_from_this()](threadpool::WorkerState& state) {
      if (dynamic_cast<StreamState*>(&state) != nullptr) {
        self->resumes_on_workers->fetch_add(1);
      }
      self->go_on();
    });
  }
  void go_on() {
    if (open->abandoned()) {
      return;
    }
    if (!stream(*open)) {
      wait();
      return;
    }
    LdapMessage done;
    done.reset(message_id, ProtocolOp::kSearchResultDone);
    open->finish(done);
  }

  static constexpr char kFiller[] =
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
};

class StreamHandler final : public RequestHandler {
 public:
  std::unique_ptr<Session> open_session(const ConnectionInfo&) override {
    return std::make_unique<Session>();
  }
  std::unique_ptr<RequestWorkerState> make_worker_state() override {
    return std::make_unique<StreamState>();
  }
  void handle(const LdapMessage& request, Session&, ResponseSink& sink,
              threadpool::WorkerState&) override {
    LdapMessage response;
    if (request.op == ProtocolOp::kDelRequest) {
      deletes_run.fetch_add(1);
      response.reset(request.message_id, ProtocolOp::kDelResponse);
      sink.send(response);
      return;
    }
    if (request.op != ProtocolOp::kSearchRequest) {
      return;
    }
    auto producer = std::make_shared<Producer>();
    producer->message_id = request.message_id;
    producer->total = request.search_request.size_limit;
    producer->pauses = &pauses;
    producer->resumes_on_workers = &resumes_on_workers;
    producer->destroyed = &producers_destroyed;
    if (producer->stream(sink)) {
      response.reset(request.message_id, ProtocolOp::kSearchResultDone);
      sink.send(response);
      return;
    }
    producer->open = sink.detach();
    REQUIRE(producer->open != nullptr);
    producer->wait();
  }

  std::atomic<int> pauses{0};
  std::atomic<int> resumes_on_workers{0};
  std::atomic<int> producers_destroyed{0};
  std::atomic<int> deletes_run{0};
};

FrontendOptions bounded(std::uint32_t write_timeout_s = 0) {
  FrontendOptions options;
  options.limits.max_output_bytes = kBound;
  options.limits.write_timeout_s = write_timeout_s;
  return options;
}

using StreamServer = testing::Server<StreamHandler>;

// Sends a search of base "stream" for `entries` entries.
void stream_search(Client& client, std::int32_t id, std::int32_t entries) {
  LdapMessage message;
  message.reset(id, ProtocolOp::kSearchRequest);
  message.search_request.base_object = "stream";
  message.search_request.size_limit = entries;
  message.search_request.filter = *schema::Filter::parse("(objectClass=*)");
  wire::BerWriter writer;
  wire::encode_message(message, writer);
  client.send_raw(writer.view());
}

// Receives search `id`'s entries and result; checks they are e0 .. e<entries - 1> in order.
void expect_stream(Client& client, std::int32_t id, std::int32_t entries) {
  LdapMessage message;
  for (std::int32_t i = 0; i < entries; ++i) {
    REQUIRE(client.receive(message));
    REQUIRE(message.message_id == id);
    REQUIRE(message.op == ProtocolOp::kSearchResultEntry);
    REQUIRE(message.search_entry.object_name == "e" + std::to_string(i));
  }
  REQUIRE(client.receive(message));
  CHECK(message.op == ProtocolOp::kSearchResultDone);
}

// Total output well past what the loopback socket's buffers take, so the bound is reached.
constexpr std::int32_t kManyEntries = 30'000;  // About 30 MB.

TEST_CASE("Output bound: a producer pauses at the bound and goes on on a worker once read") {
  StreamServer server(bounded());
  Client client(server.port);
  client.set_receive_timeout(30);
  stream_search(client, 1, kManyEntries);
  REQUIRE(eventually([&] { return server.handler.pauses.load() >= 1; }));
  expect_stream(client, 1, kManyEntries);  // Every entry once, in order.
  CHECK(server.handler.resumes_on_workers.load() >= 1);
  CHECK(server.handler.resumes_on_workers.load() == server.handler.pauses.load());
  CHECK(eventually([&] { return server.handler.producers_destroyed.load() == 1; }));
}

TEST_CASE("Output bound: a connection over its bound starts nothing until it drains") {
  StreamServer server(bounded());
  Client client(server.port);
  client.set_receive_timeout(30);
  stream_search(client, 1, kManyEntries);
  REQUIRE(eventually([&] { return server.handler.pauses.load() >= 1; }));
  REQUIRE(
      eventually([&] { return server.frontend->snapshot().listeners.at(0).output_pauses > 0; }));
  client.del(2, "probe");
  client.flush();
  // The listener does not read a connection over its bound: the delete waits in the socket.
  CHECK(server.handler.deletes_run.load() == 0);
  // Once read below half the bound the connection is read again: the delete runs beside the
  // search, its response among the entries.
  LdapMessage message;
  std::int32_t next = 0;
  bool deleted = false;
  while (next < kManyEntries || !deleted) {
    REQUIRE(client.receive(message));
    if (message.message_id == 2) {
      CHECK(message.op == ProtocolOp::kDelResponse);
      deleted = true;
      continue;
    }
    REQUIRE(message.op == ProtocolOp::kSearchResultEntry);
    REQUIRE(message.search_entry.object_name == "e" + std::to_string(next++));
  }
  REQUIRE(client.receive(message));
  CHECK(message.op == ProtocolOp::kSearchResultDone);
  CHECK(server.handler.deletes_run.load() == 1);
}

TEST_CASE("Output bound: an abandoned paused producer is dropped without running") {
  StreamServer server(bounded());
  Client client(server.port);
  client.set_receive_timeout(30);
  stream_search(client, 1, kManyEntries);
  REQUIRE(eventually([&] { return server.handler.pauses.load() >= 1; }));
  client.abandon(2, 1);
  client.flush();
  // The listener reads the abandon only once the output drains below the bound; reading makes
  // it drain. The producer is then dropped (its callback destroyed) or sees the abandon.
  LdapMessage message;
  std::int32_t received = 0;
  while (client.receive(message) && message.op == ProtocolOp::kSearchResultEntry) {
    ++received;
    if (server.handler.producers_destroyed.load() == 1) {
      break;
    }
  }
  CHECK(eventually([&] { return server.handler.producers_destroyed.load() == 1; }));
  CHECK(received < kManyEntries);
}

TEST_CASE("Output bound: a client that reads nothing for the write timeout is closed") {
  StreamServer server(bounded(/*write_timeout_s=*/1));
  Client client(server.port);
  stream_search(client, 1, kManyEntries);
  REQUIRE(eventually([&] { return server.handler.pauses.load() >= 1; }));
  // Closed by the server: seen from its side (the client, reading nothing, would see the FIN
  // only behind the bytes its full buffer holds, and reading would be the progress that
  // restarts the clock).
  CHECK(eventually([&] { return server.handler.producers_destroyed.load() == 1; }));
  CHECK(eventually([&] { return server.frontend->snapshot().listeners.at(0).connections == 0; }));
  const ListenerSnapshot listener = server.frontend->snapshot().listeners.at(0);
  for (std::size_t r = 0; r < kCloseReasons; ++r) {  // Counted once, as a write timeout.
    INFO("reason ", close_reason_name(static_cast<CloseReason>(r)));
    CHECK(listener.closed[r] ==
          (r == static_cast<std::size_t>(CloseReason::kWriteTimeout) ? 1 : 0));
  }
}

}  // namespace
}  // namespace numadir::listener
