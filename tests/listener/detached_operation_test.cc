// Tests of operations that stay open past handle() (ResponseSink::detach, OpenOperation,
// DetachedOperation) over real loopback sockets, with the fake handler of frontend_test_util.h:
// a search of base "open" sends an entry "before" and is kept in the handler's Feeder, which
// these tests drive from threads of their own.
#include "listener/detached_operation.h"

#include <doctest/doctest.h>
#include <sys/ioctl.h>

#include <cstdint>
#include <string>
#include <thread>

#include "tests/listener/frontend_test_util.h"

namespace numadir::listener {
namespace {

using testing::Client;
using testing::eventually;
using testing::Feeder;
using testing::Server;
using wire::LdapMessage;
using wire::ProtocolOp;

// Receives one message, checking its ID and op.
void expect(Client& client, std::int32_t id, ProtocolOp op, LdapMessage& message) {
  REQUIRE(client.receive(message));
  CHECK(message.message_id == id);
  REQUIRE(message.op == op);
}

// Receives the entry "before" that the handler sends through its sink before it detaches.
void expect_before(Client& client, std::int32_t id) {
  LdapMessage message;
  expect(client, id, ProtocolOp::kSearchResultEntry, message);
  CHECK(message.search_entry.object_name == "before");
  CHECK(message.controls.empty());
}

// Receives an entry the Feeder sent: `name`, with its entry control.
void expect_fed_entry(Client& client, std::int32_t id, std::string_view name) {
  LdapMessage message;
  expect(client, id, ProtocolOp::kSearchResultEntry, message);
  CHECK(message.search_entry.object_name == name);
  REQUIRE(message.controls.size() == 1);
  CHECK(message.controls[0].type == Feeder::kEntryControl);
  CHECK(message.controls[0].value == Feeder::kEntryControlValue);
}

std::int32_t listener_tid(Server<>& server) {
  return server.frontend->snapshot().listeners.at(0).tid;
}

std::uint64_t open_connections(Server<>& server) {
  return server.frontend->snapshot().listeners.at(0).connections;
}

// Starts search 1 of base "open" and waits until the handler keeps it open.
void open_search(Server<>& server, Client& client) {
  client.set_receive_timeout(20);  // A missing message fails the test instead of hanging it.
  client.search(1, "open");
  client.flush();
  REQUIRE(server.handler.feeder.wait_kept(1));
  expect_before(client, 1);
}

TEST_CASE("OpenOperation: an open search is fed later from another thread and then finished") {
  Server server;
  Client client(server.port);
  open_search(server, client);
  Feeder& feeder = server.handler.feeder;
  std::thread writer([&] {  // As the writer feeds a persistent search, after handle() returned.
    CHECK(feeder.send_entry(1, "cn=first"));
    CHECK(feeder.send_intermediate(1));
    CHECK(feeder.send_entry(1, "cn=second"));
    CHECK(feeder.finish(1));
  });
  writer.join();
  expect_fed_entry(client, 1, "cn=first");
  LdapMessage message;
  expect(client, 1, ProtocolOp::kIntermediateResponse, message);
  CHECK(message.extended.name == Feeder::kIntermediateName);
  CHECK(message.extended.value == Feeder::kIntermediateValue);
  CHECK(message.controls.empty());
  expect_fed_entry(client, 1, "cn=second");
  expect(client, 1, ProtocolOp::kSearchResultDone, message);
  REQUIRE(message.controls.size() == 1);
  CHECK(message.controls[0].type == Feeder::kDoneControl);
  CHECK(message.controls[0].value == Feeder::kDoneControlValue);
  client.search(2, "after");  // The connection goes on.
  client.flush();
  client.expect_search(2, "after");
  CHECK(feeder.ends() == 0);  // Finished by its holder: on_end never runs.
}

// Returns: the bytes waiting to be read on `client`'s socket (0 is what the tests check: a
// gathered message was not written at all).
int unread_bytes(Client& client) {
  int bytes = 0;
  REQUIRE(ioctl(client.fd(), FIONREAD, &bytes) == 0);
  return bytes;
}

TEST_CASE("OpenOperation: gathered messages go out together and in order when told") {
  Server server;
  Client client(server.port);
  open_search(server, client);
  Feeder& feeder = server.handler.feeder;
  REQUIRE(feeder.gather(1, 1 << 20));
  SUBCASE("when gathering stops") {
    CHECK(feeder.send_entry(1, "cn=first"));
    CHECK(feeder.send_intermediate(1));
    CHECK(unread_bytes(client) == 0);
    REQUIRE(feeder.gather(1, 0));
    expect_fed_entry(client, 1, "cn=first");
    LdapMessage message;
    expect(client, 1, ProtocolOp::kIntermediateResponse, message);
    CHECK(feeder.send_entry(1, "cn=second"));  // Not gathering: it goes at once.
    expect_fed_entry(client, 1, "cn=second");
    CHECK(feeder.finish(1));
    expect(client, 1, ProtocolOp::kSearchResultDone, message);
  }
  SUBCASE("with the result") {
    CHECK(feeder.send_entry(1, "cn=first"));
    CHECK(unread_bytes(client) == 0);
    CHECK(feeder.finish(1));
    expect_fed_entry(client, 1, "cn=first");
    LdapMessage message;
    expect(client, 1, ProtocolOp::kSearchResultDone, message);
  }
  SUBCASE("once they reach the size asked for") {
    REQUIRE(feeder.gather(1, 64));
    CHECK(feeder.send_entry(1, "cn=a"));  // Each entry with its control is about 50 bytes.
    CHECK(unread_bytes(client) == 0);
    CHECK(feeder.send_entry(1, "cn=b"));  // Past 64: both go, nothing else making them.
    expect_fed_entry(client, 1, "cn=a");
    expect_fed_entry(client, 1, "cn=b");
    CHECK(feeder.finish(1));
    LdapMessage message;
    expect(client, 1, ProtocolOp::kSearchResultDone, message);
  }
}

TEST_CASE("OpenOperation: a bind waits for an open operation to finish") {
  Server server;
  Client client(server.port);
  open_search(server, client);
  client.bind(2);
  client.flush();
  // The listener has read the bind: it holds it while search 1 is open.
  REQUIRE(eventually([&] { return server.frontend->snapshot().listeners[0].requests == 2; }));
  CHECK(server.handler.ran_on(2) == 0);
  std::thread writer([&] {
    CHECK(server.handler.feeder.send_entry(1, "cn=only"));
    CHECK(server.handler.feeder.finish(1));
  });
  writer.join();
  expect_fed_entry(client, 1, "cn=only");
  LdapMessage message;
  expect(client, 1, ProtocolOp::kSearchResultDone, message);
  expect(client, 2, ProtocolOp::kBindResponse, message);
  // The bind ran once the operation had finished (the handler checks at every bind).
  CHECK(server.handler.bind_violations == 0);
}

TEST_CASE("OpenOperation: an abandoned one runs on_end on the listener and sends nothing more") {
  Server server;
  Feeder& feeder = server.handler.feeder;
  feeder.drop_on_end = false;  // The feeder holds it after the end, to try sending through it.
  Client client(server.port);
  open_search(server, client);
  std::int32_t ended_on = 0;
  bool sent_after_end = true;
  bool held_after_end = false;
  std::thread writer([&] {
    CHECK(feeder.send_entry(1, "cn=first"));
    ended_on = feeder.wait_ended(1);
    sent_after_end = feeder.send_entry(1, "cn=late");         // The feeder sees it was abandoned.
    held_after_end = feeder.send_entry_anyway(1, "cn=late");  // One that did not look.
  });
  expect_fed_entry(client, 1, "cn=first");
  client.abandon(2, 1);
  client.flush();
  writer.join();
  CHECK(ended_on == listener_tid(server));
  CHECK_FALSE(sent_after_end);
  CHECK(held_after_end);
  CHECK(feeder.abandoned(1));
  // No longer outstanding, though its holder has not released it: a bind runs at once. Its
  // response is the next message: nothing more of search 1 went out.
  client.bind(3);
  client.search(4, "next");
  client.flush();
  LdapMessage message;
  expect(client, 3, ProtocolOp::kBindResponse, message);
  client.expect_search(4, "next");
  feeder.release(1);
  CHECK(feeder.ends() == 1);
  CHECK(server.handler.bind_violations == 0);
}

TEST_CASE("OpenOperation: a connection closed under one is destroyed once its holder released it") {
  Server server;
  Feeder& feeder = server.handler.feeder;
  feeder.drop_on_end = false;  // The test releases it, later.
  {
    Client client(server.port);
    open_search(server, client);
  }  // The client goes.
  CHECK(feeder.wait_ended(1) == listener_tid(server));
  CHECK(feeder.abandoned(1));
  // The listener goes on with other connections but keeps this one while the feeder holds it.
  Client other(server.port);
  other.search(1, "other");
  other.flush();
  other.expect_search(1, "other");
  CHECK(server.handler.sessions_closed == 0);
  CHECK(open_connections(server) == 2);
  std::thread holder([&] { feeder.release(1); });
  holder.join();
  CHECK(eventually([&] { return server.handler.sessions_closed == 1; }));
  CHECK(eventually([&] { return open_connections(server) == 1; }));
  CHECK(feeder.ends() == 1);
}

TEST_CASE("OpenOperation: one abandoned before it detached is born ended and its on_end runs") {
  Server server;
  const testing::GateOpener opener{server.handler};
  Client client(server.port);
  client.set_receive_timeout(20);
  client.search(1, "gate-open");
  client.flush();
  server.handler.wait_at_gate(1);
  client.abandon(2, 1);
  client.search(3, "quick");
  client.flush();
  client.expect_search(3, "quick");  // The abandon was read before it.
  server.handler.open_gate();        // Now it detaches, abandoned already.
  CHECK(server.handler.feeder.wait_ended(1) == listener_tid(server));
  client.search(4, "later");
  client.flush();
  client.expect_search(4, "later");  // Nothing of search 1 went out, not even "before".
  CHECK(server.handler.feeder.ends() == 1);
}

TEST_CASE("OpenOperation: released unfinished it ends without a response") {
  Server server;
  Client client(server.port);
  open_search(server, client);
  std::thread holder([&] { server.handler.feeder.release(1); });
  holder.join();
  client.bind(2);  // Runs: search 1 is no longer outstanding.
  client.flush();
  LdapMessage message;
  expect(client, 2, ProtocolOp::kBindResponse, message);  // No SearchResultDone before it.
  CHECK(server.handler.feeder.ends() == 0);
  CHECK(server.handler.bind_violations == 0);
}

TEST_CASE("OpenOperation: stopping the server ends it and waits for its holder") {
  Server server;
  Feeder& feeder = server.handler.feeder;
  bool drop_on_end = true;
  SUBCASE("the holder drops it in on_end") { drop_on_end = true; }
  SUBCASE("the holder drops it later on its own thread") { drop_on_end = false; }
  feeder.drop_on_end = drop_on_end;
  Client client(server.port);
  open_search(server, client);
  const std::int32_t listener = listener_tid(server);  // No snapshot once stop() began.
  std::thread stopper([&] { server.frontend->stop(); });
  CHECK(feeder.wait_ended(1) == listener);
  if (!drop_on_end) {
    CHECK(server.handler.sessions_closed == 0);  // stop() waits for the holder.
    feeder.release(1);
  }
  stopper.join();
  CHECK(server.handler.sessions_closed == 1);
  CHECK(feeder.ends() == 1);
  LdapMessage message;
  CHECK_FALSE(client.receive(message));  // Closed without a SearchResultDone.
}

}  // namespace
}  // namespace numadir::listener
