// Tests of the listener side (Frontend, Listener, Connection, Request) over real loopback
// sockets: the per-connection rules of RFC 4511 (pipelining, bind, abandon, unbind, malformed
// and oversized PDUs) and the limits (max connections, idle timeout), with the fake handler and
// client of frontend_test_util.h. Threads, placement and counters: frontend_threads_test.cc.
#include "listener/frontend.h"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/listener/frontend_test_util.h"

namespace numadir::listener {
namespace {

using testing::Client;
using testing::Server;
using wire::LdapMessage;
using wire::ProtocolOp;

TEST_CASE("Frontend: pipelined searches are each answered with their message ID") {
  Server server;
  Client client(server.port);
  for (int i = 1; i <= 50; ++i) {
    client.search(i, "cn=" + std::to_string(i));
  }
  client.flush();
  // Answers may come out of order across workers, but each entry is followed by its done.
  std::vector<int> answered(51, 0);
  LdapMessage message;
  for (int i = 0; i < 100; ++i) {
    REQUIRE(client.receive(message));
    REQUIRE(message.message_id >= 1);
    REQUIRE(message.message_id <= 50);
    if (message.op == ProtocolOp::kSearchResultEntry) {
      CHECK(message.search_entry.object_name == "cn=" + std::to_string(message.message_id));
    } else {
      CHECK(message.op == ProtocolOp::kSearchResultDone);
      ++answered[static_cast<std::size_t>(message.message_id)];
    }
  }
  for (int i = 1; i <= 50; ++i) {
    CHECK(answered[static_cast<std::size_t>(i)] == 1);
  }
}

TEST_CASE("Frontend: a bind waits for what is outstanding and nothing runs beside it") {
  Server server;
  Client client(server.port);
  client.search(1, "gate");
  client.bind(2);
  client.search(3, "after");
  client.flush();
  server.handler.wait_at_gate(1);
  server.handler.open_gate();
  client.expect_search(1, "gate");
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.message_id == 2);
  CHECK(message.op == ProtocolOp::kBindResponse);
  client.expect_search(3, "after");
  CHECK(server.handler.bind_violations == 0);
}

TEST_CASE("Frontend: an abandoned search sends nothing and the connection goes on") {
  Server server;
  Client client(server.port);
  client.search(1, "gate");
  client.flush();
  server.handler.wait_at_gate(1);  // Running: the abandon reaches it through sink.abandoned().
  client.abandon(2, 1);
  client.search(3, "quick");
  client.flush();
  // Search 3 answered: the listener read the abandon before it.
  client.expect_search(3, "quick");
  server.handler.open_gate();
  client.search(4, "later");
  client.flush();
  client.expect_search(4, "later");
  server.frontend->stop();
  CHECK(server.handler.abandoned_seen == 1);
}

TEST_CASE(
    "Frontend: a malformed PDU gets a Notice of Disconnection and only that connection closes") {
  Server server;
  Client bad(server.port);
  Client good(server.port);
  good.search(1, "first");
  good.flush();
  good.expect_search(1, "first");
  // A SEQUENCE holding an INTEGER message ID and then a tag no operation has.
  bad.send_raw(std::string("\x30\x05\x02\x01\x07\x7f\x00", 7));
  LdapMessage message;
  REQUIRE(bad.receive(message));
  CHECK(message.message_id == 0);
  CHECK(message.op == ProtocolOp::kExtendedResponse);
  CHECK(message.result.code == wire::ResultCode::kProtocolError);
  CHECK(message.extended.name == wire::kNoticeOfDisconnectionOid);
  CHECK_FALSE(bad.receive(message));  // Closed.
  good.search(2, "second");
  good.flush();
  good.expect_search(2, "second");
}

TEST_CASE("Frontend: garbage that is not an LDAPMessage gets a notice and a close") {
  Server server;
  Client bad(server.port);
  bad.send_raw("GET / HTTP/1.1\r\n\r\n");
  LdapMessage message;
  REQUIRE(bad.receive(message));
  CHECK(message.extended.name == wire::kNoticeOfDisconnectionOid);
  CHECK_FALSE(bad.receive(message));
}

TEST_CASE("Frontend: unbind closes the connection") {
  Server server;
  Client client(server.port);
  client.search(1, "x");
  client.flush();
  client.expect_search(1, "x");
  client.unbind(2);
  client.flush();
  LdapMessage message;
  CHECK_FALSE(client.receive(message));
}

TEST_CASE("Frontend: connections over max_connections are closed at once") {
  FrontendOptions options;
  options.limits.max_connections = 1;
  Server server(options);
  Client first(server.port);
  first.search(1, "one");
  first.flush();
  first.expect_search(1, "one");  // Accepted and counted.
  Client second(server.port);
  LdapMessage message;
  CHECK_FALSE(second.receive(message));
  first.search(2, "two");
  first.flush();
  first.expect_search(2, "two");
}

TEST_CASE("Frontend: a PDU over max_pdu_bytes gets a notice and a close") {
  FrontendOptions options;
  options.limits.max_pdu_bytes = 1024;
  Server server(options);
  Client client(server.port);
  const std::string huge("\x30\x82\x10\x00", 4);  // Announces 4096 bytes.
  client.send_raw(huge);
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.extended.name == wire::kNoticeOfDisconnectionOid);
  CHECK_FALSE(client.receive(message));
}

TEST_CASE("Frontend: a client gone in the middle of an operation leaves nothing behind") {
  Server server;
  {
    Client client(server.port);
    client.search(1, "gate");
    client.flush();
    server.handler.wait_at_gate(1);
  }  // Closed while its search waits.
  server.handler.open_gate();
  Client other(server.port);
  other.search(1, "still here");
  other.flush();
  other.expect_search(1, "still here");
  server.frontend->stop();  // Joins everything; ASan reports any leak.
}

TEST_CASE("Frontend: an idle connection is closed after idle_timeout and a busy one is not") {
  FrontendOptions options;
  options.limits.idle_timeout_s = 1;
  Server server(options);
  Client idle(server.port);
  Client busy(server.port);
  const auto idle_last_sent = std::chrono::steady_clock::now();
  idle.search(1, "once");
  idle.flush();
  idle.expect_search(1, "once");
  // The busy client asks again after each 200 ms it waits for the idle one to be closed, which
  // comes within about two seconds (the limit plus the once-a-second look). Both go through
  // the same looks; only the idle one may be closed.
  bool closed = false;
  std::int32_t id = 2;
  while (!closed && std::chrono::steady_clock::now() - idle_last_sent < std::chrono::seconds(20)) {
    busy.search(id, "again");
    busy.flush();
    busy.expect_search(id, "again");
    ++id;
    closed = idle.closed_within(std::chrono::milliseconds(200));
  }
  REQUIRE(closed);
  CHECK(std::chrono::steady_clock::now() - idle_last_sent >= std::chrono::seconds(1));
  busy.search(99, "still open");
  busy.flush();
  busy.expect_search(99, "still open");
}

TEST_CASE("Frontend: fewer connections than listeners are served") {
  FrontendOptions options;
  options.listeners = 4;
  Server server(options);
  Client client(server.port);
  client.search(1, "only");
  client.flush();
  client.expect_search(1, "only");
}

}  // namespace
}  // namespace numadir::listener
