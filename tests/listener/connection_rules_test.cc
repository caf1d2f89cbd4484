// Tests of the per-connection rules (listener/connection_rules.h) that concern message IDs, over
// real loopback sockets with the fake handler of frontend_test_util.h: what a client that
// sends ID 0, reuses an ID still in use, or abandons a bind gets. The answers are slapd's (see
// docs/differences-from-slapd.md); tests/integration/differential_test.py compares them
// with slapd's own.
#include "listener/connection_rules.h"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <tuple>

#include "tests/listener/frontend_test_util.h"

namespace numadir::listener {
namespace {

using testing::Client;
using testing::eventually;
using testing::GateOpener;
using testing::Server;
using wire::LdapMessage;
using wire::ProtocolOp;

using Received = std::multiset<std::tuple<std::int32_t, ProtocolOp, std::string>>;

// Receives until the BindResponse of `bind_id`, which comes last since a bind waits for
// everything outstanding. Returns: each message before it as (message ID, op, entry name).
Received receive_until_bind(Client& client, std::int32_t bind_id) {
  Received received;
  LdapMessage message;
  for (;;) {
    REQUIRE(client.receive(message));
    if (message.message_id == bind_id && message.op == ProtocolOp::kBindResponse) {
      return received;
    }
    const bool entry = message.op == ProtocolOp::kSearchResultEntry;
    received.emplace(message.message_id, message.op,
                     entry ? std::string(message.search_entry.object_name) : std::string());
  }
}

TEST_CASE("ConnectionRules: a request with message ID 0 is answered with ID 0") {
  Server server;
  Client client(server.port);
  client.search(0, "zero");
  client.flush();
  client.expect_search(0, "zero");
  client.search(1, "next");
  client.flush();
  client.expect_search(1, "next");
}

// While the listener holds requests it reads no further, so what it is to route while one is
// held goes in the same write as that one.

TEST_CASE("ConnectionRules: an AbandonRequest for message ID 0 abandons nothing") {
  Server server;
  GateOpener opener{server.handler};
  Client client(server.port);
  client.bind(1, "gate");
  client.search(0, "held");  // Held: the bind runs alone, and it waits at the gate.
  client.abandon(2, 0);
  client.search(3, "after");
  client.bind(4);
  client.flush();
  server.handler.wait_at_gate(1);
  REQUIRE(eventually([&] { return server.handler.notices.load() == 1; }));  // Noticed.
  server.handler.open_gate();
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.message_id == 1);
  CHECK(message.op == ProtocolOp::kBindResponse);
  const Received expected = {{0, ProtocolOp::kSearchResultEntry, "held"},
                             {0, ProtocolOp::kSearchResultDone, ""},
                             {3, ProtocolOp::kSearchResultEntry, "after"},
                             {3, ProtocolOp::kSearchResultDone, ""}};
  CHECK(receive_until_bind(client, 4) == expected);
}

TEST_CASE("ConnectionRules: an AbandonRequest for a bind not yet run leaves it to answer") {
  FrontendOptions options;
  options.workers = 1;
  Server server(options);
  GateOpener opener{server.handler};
  Client busy(server.port);
  busy.search(1, "gate");  // Holds the only worker.
  busy.flush();
  server.handler.wait_at_gate(1);
  Client client(server.port);
  client.bind(1);  // Queued in the pool behind the gate: started, not run.
  client.abandon(2, 1);
  client.search(3, "after");
  client.flush();
  REQUIRE(eventually([&] { return server.handler.notices.load() == 1; }));
  server.handler.open_gate();
  busy.expect_search(1, "gate");
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.message_id == 1);
  CHECK(message.op == ProtocolOp::kBindResponse);  // RFC 4511 §4.11: binds cannot be abandoned.
  client.expect_search(3, "after");
}

TEST_CASE("ConnectionRules: requests reusing a message ID still in use are each answered") {
  Server server;
  GateOpener opener{server.handler};
  Client client(server.port);
  client.search(5, "gate");
  client.search(5, "second");  // Runs beside the first, on the other worker.
  client.flush();
  server.handler.wait_at_gate(1);
  client.expect_search(5, "second");
  server.handler.open_gate();
  client.expect_search(5, "gate");
  client.bind(6, "x");
  client.search(6, "behind the bind");  // The bind's ID, while the bind is outstanding.
  client.flush();
  LdapMessage message;
  REQUIRE(client.receive(message));
  CHECK(message.message_id == 6);
  CHECK(message.op == ProtocolOp::kBindResponse);
  client.expect_search(6, "behind the bind");
}

TEST_CASE("ConnectionRules: an AbandonRequest for a reused message ID abandons the running one") {
  FrontendOptions options;
  options.limits.max_outstanding_per_connection = 2;
  Server server(options);
  GateOpener opener{server.handler};
  Client client(server.port);
  // Search 8 stays open (outstanding) until the test finishes it, so the held search 5 can
  // start only once the running search 5 has ended: the two never run at once (an abandon mark
  // is by message ID and would end both).
  client.search(8, "open");
  client.search(5, "gate");
  client.flush();
  REQUIRE(server.handler.feeder.wait_kept(8));
  server.handler.wait_at_gate(1);  // Search 5 running, on a worker.
  client.search(5, "held");        // Held: two outstanding at most.
  client.abandon(6, 5);
  // notice() comes just before the listener carries an Abandon out: the second one's notice
  // tells the test the first is carried out (an abandon of ID 99 abandons nothing).
  client.abandon(9, 99);
  client.bind(7);
  client.flush();
  REQUIRE(eventually([&] { return server.handler.notices.load() == 2; }));
  server.handler.open_gate();
  // The held search 5 runs once the running one has ended; then search 8 is finished.
  LdapMessage message;
  REQUIRE(client.receive(message));  // Search 8's entry sent before it was kept open.
  CHECK(message.message_id == 8);
  client.expect_search(5, "held");
  REQUIRE(server.handler.feeder.finish(8));
  // The running search 5 saw the abandon and sent nothing.
  const Received expected = {{8, ProtocolOp::kSearchResultDone, ""}};
  CHECK(receive_until_bind(client, 7) == expected);
  CHECK(server.handler.abandoned_seen == 1);
}

}  // namespace
}  // namespace numadir::listener
