// tests/server/replication/consumer_test.cc: a Consumer (server/replication/consumer.h) on its
// own thread against a scripted provider (fake_provider.h), writing into a real directory: a
// refresh applied with its cookie and the state seen through status(); a provider that sends a
// malformed Sync State: the reason kept, nothing of the batch written, the consumer retrying.
// Under TSan this is the consumer's thread against the writer's and the test's.
#include "server/replication/consumer.h"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/directory.h"
#include "server/replication/sync_protocol.h"
#include "tests/backend/backend_test_util.h"
#include "tests/server/replication/fake_provider.h"

namespace numadir::server::replication::testing {
namespace {

constexpr std::string_view kSuffix = "dc=example,dc=com";
const std::string kCookie = "rid=001,csn=20261203120000.000000Z#000000#000#000000";

std::string tlv(std::uint8_t tag, const std::string& content) {
  REQUIRE(content.size() < 128);
  return std::string(1, static_cast<char>(tag)) +
         std::string(1, static_cast<char>(content.size())) + content;
}

std::string uuid_bytes(int n) {
  std::string uuid(16, '\x11');
  uuid[15] = static_cast<char>(n);
  return uuid;
}

std::string sync_state(int kind, int n) {
  return tlv(0x30, tlv(0x0a, std::string(1, static_cast<char>(kind))) + tlv(0x04, uuid_bytes(n)));
}

ReplicationConsumerConfig consumer_of(const std::string& url) {
  ReplicationConsumerConfig consumer;
  consumer.origin = "replication.consumer[0]";
  consumer.rid = 1;
  Result<LdapUrl> parsed = parse_ldap_url(url);
  REQUIRE(parsed.ok());
  consumer.provider = *parsed;
  consumer.provider_text = url;
  consumer.searchbase = std::string(kSuffix);
  consumer.binddn = "cn=replicator,dc=example,dc=com";
  consumer.credentials = "secret";
  // Short: the retry after the provider's one connection waits out a bind nobody answers.
  consumer.timeout_ms = 1000;
  consumer.network_timeout_ms = 5000;
  consumer.retry = {RetryStep{1, 0, true}};
  return consumer;
}

// The provider's side: answers the bind, reads the sync search, runs `send` with its message
// ID, then waits for the consumer to go (abandon, unbind or close).
void serve_sync(FakeSession& session, const std::function<void(std::int32_t)>& send,
                std::string& request_cookie) {
  wire::LdapMessage request;
  if (!session.read(request) || request.op != wire::ProtocolOp::kBindRequest) {
    return;
  }
  session.answer(request.message_id, wire::ProtocolOp::kBindResponse);
  if (!session.read(request) || request.op != wire::ProtocolOp::kSearchRequest) {
    return;
  }
  for (const wire::Control& control : request.controls) {
    if (control.type == kSyncRequestOid) {
      request_cookie = std::string(control.value.value_or(""));
    }
  }
  send(request.message_id);
  while (session.read(request)) {
  }
}

struct Entry {
  std::string dn;
  std::vector<std::pair<std::string, std::string>> attributes;
};

void send_entry(FakeSession& session, std::int32_t id, const Entry& entry,
                const std::string& state) {
  wire::LdapMessage message;
  message.reset(id, wire::ProtocolOp::kSearchResultEntry);
  message.search_entry.object_name = entry.dn;
  for (const auto& [type, value] : entry.attributes) {
    message.search_entry.attributes.add(type);
    message.search_entry.attributes.add_value(value);
  }
  message.controls.push_back({kSyncStateOid, false, state});
  session.write(message);
}

const std::vector<Entry>& tree() {
  static const std::vector<Entry> entries = {
      {std::string(kSuffix), {{"objectClass", "domain"}, {"dc", "example"}}},
      {"ou=people,dc=example,dc=com", {{"objectClass", "organizationalUnit"}, {"ou", "people"}}},
      {"uid=user1,ou=people,dc=example,dc=com",
       {{"objectClass", "inetOrgPerson"}, {"uid", "user1"}, {"cn", "User 1"}, {"sn", "One"}}},
  };
  return entries;
}

// A Sync Info IntermediateResponse whose value is `value`.
void send_sync_info(FakeSession& session, std::int32_t id, const std::string& value) {
  wire::LdapMessage info;
  info.reset(id, wire::ProtocolOp::kIntermediateResponse);
  info.extended.name = kSyncInfoOid;
  info.extended.value = value;
  session.write(info);
}

// The whole tree as added entries, then the end of the present phase with kCookie.
void send_refresh(FakeSession& session, std::int32_t id) {
  for (std::size_t i = 0; i < tree().size(); ++i) {
    send_entry(session, id, tree()[i], sync_state(1, static_cast<int>(i)));
  }
  send_sync_info(session, id, tlv(0xa2, tlv(0x04, kCookie)));
}

struct Replica {
  Replica() {
    std::vector<backend::IndexSpec> indexes = backend::testing::default_indexes();
    indexes.push_back(backend::IndexSpec{"entryUUID", true, false, false, false});
    directory =
        backend::testing::open_directory(backend::testing::test_options(dir.path(), indexes));
  }
  Consumer::Log log() {
    return [this](const std::string& line) {
      std::lock_guard lock(mu);
      lines.push_back(line);
    };
  }
  bool logged(std::string_view text) {
    std::lock_guard lock(mu);
    for (const std::string& line : lines) {
      if (line.find(text) != std::string::npos) {
        return true;
      }
    }
    return false;
  }
  bool has(std::string_view dn) {
    auto txn = directory->begin_read();
    return directory->get(*txn, dn).ok();
  }

  backend::testing::TempDir dir;
  std::unique_ptr<backend::Directory> directory;
  std::mutex mu;
  std::vector<std::string> lines;  // Guarded by mu (the consumer's thread writes).
};

// Waits (bounded, generously: this is not a timing test) until `done` holds.
bool eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

TEST_CASE("Consumer: a refresh is applied with its cookie and the consumer persists") {
  Replica replica;
  std::string request_cookie;
  FakeProvider provider([&](FakeSession& session) {
    serve_sync(
        session, [&](std::int32_t id) { send_refresh(session, id); }, request_cookie);
  });
  Consumer consumer(consumer_of(provider.url()), *replica.directory, replica.log());
  consumer.start();
  REQUIRE(eventually([&] { return consumer.status().cookie == kCookie; }));
  const ConsumerStatus status = consumer.status();
  CHECK(status.state == ConsumerState::kPersisting);
  CHECK(status.changes_applied == 3);
  CHECK(status.entries_received == 3);
  CHECK(status.connects == 1);
  CHECK(status.failures == 0);
  CHECK(replica.has("uid=user1,ou=people,dc=example,dc=com"));
  CHECK(replica.directory->replica_cookie(1)->value_or("") == kCookie);
  consumer.stop();
  provider.join();
  CHECK(consumer.status().state == ConsumerState::kStopped);
  // The first request carries the rid alone, as slapd's consumers send it.
  CHECK(request_cookie.find("rid=001") != std::string::npos);
  CHECK(request_cookie.find("csn=") == std::string::npos);
  CHECK(replica.logged("refreshing"));
  CHECK(replica.logged("persisting"));
}

// The persist phase's commits: changes that come within persist_batch_ms of the first one
// pending share its commit; with 0, each is committed once no other follows at once.
void check_persist_batches(std::uint32_t batch_ms, int gap_ms, bool one_commit) {
  CAPTURE(batch_ms);
  Replica replica;
  std::string request_cookie;
  std::atomic<bool> go{false};
  FakeProvider provider([&](FakeSession& session) {
    serve_sync(
        session,
        [&](std::int32_t id) {
          send_refresh(session, id);
          while (!go.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
          for (int n = 2; n <= 4; ++n) {
            const std::string dn = "uid=user" + std::to_string(n) + ",ou=people,dc=example,dc=com";
            send_entry(session, id,
                       {dn,
                        {{"objectClass", "inetOrgPerson"},
                         {"uid", "user" + std::to_string(n)},
                         {"cn", "User"},
                         {"sn", "N"}}},
                       sync_state(1, 10 + n));
            std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
          }
        },
        request_cookie);
  });
  ReplicationConsumerConfig config = consumer_of(provider.url());
  config.persist_batch_ms = batch_ms;
  Consumer consumer(config, *replica.directory, replica.log());
  consumer.start();
  REQUIRE(eventually([&] { return consumer.status().cookie == kCookie; }));
  REQUIRE(eventually([&] { return consumer.status().state == ConsumerState::kPersisting; }));
  const std::uint64_t batches = consumer.status().batches_applied;
  go.store(true);
  REQUIRE(eventually([&] { return consumer.status().changes_applied == 6; }));
  CHECK(replica.has("uid=user4,ou=people,dc=example,dc=com"));
  if (one_commit) {
    CHECK(consumer.status().batches_applied == batches + 1);
  } else {
    CHECK(consumer.status().batches_applied >= batches + 2);
  }
  consumer.stop();
  provider.join();
}

TEST_CASE("Consumer: persist changes within persist_batch_ms share one commit") {
  check_persist_batches(/*batch_ms=*/1000, /*gap_ms=*/40, /*one_commit=*/true);
  check_persist_batches(/*batch_ms=*/0, /*gap_ms=*/300, /*one_commit=*/false);
}

TEST_CASE("Consumer: a malformed Sync State drops the connection and writes nothing") {
  Replica replica;
  std::string request_cookie;
  FakeProvider provider([&](FakeSession& session) {
    serve_sync(
        session,
        [&](std::int32_t id) {
          send_entry(session, id, tree()[0], sync_state(1, 0));
          send_entry(session, id, tree()[1], tlv(0x30, tlv(0x0a, "\x01") + tlv(0x04, "short")));
        },
        request_cookie);
  });
  Consumer consumer(consumer_of(provider.url()), *replica.directory, replica.log());
  consumer.start();
  REQUIRE(eventually([&] { return consumer.status().failures >= 1; }));
  const ConsumerStatus status = consumer.status();
  CHECK(status.last_error.find("Sync State") != std::string::npos);
  CHECK(status.batches_applied == 0);
  CHECK_FALSE(replica.has(kSuffix));  // The good entry before it was pending, not written.
  CHECK_FALSE(replica.directory->replica_cookie(1)->has_value());
  // It retries on its schedule (the provider took one connection only: refused now).
  REQUIRE(eventually([&] { return consumer.status().failures >= 2; }));
  consumer.stop();
  provider.join();
  CHECK(replica.logged("waiting to retry"));
}

TEST_CASE("Consumer: a refresh's cookie is stored only once every batch before it is") {
  // One entry per batch, handed to the writer without waiting for the one before: the third,
  // whose parent does not exist, is refused by the writer, and the refresh's cookie must not be
  // stored whatever the batches after it did.
  Replica replica;
  std::string request_cookie;
  FakeProvider provider([&](FakeSession& session) {
    serve_sync(
        session,
        [&](std::int32_t id) {
          send_entry(session, id, tree()[0], sync_state(1, 0));
          send_entry(session, id, tree()[1], sync_state(1, 1));
          send_entry(session, id,
                     {"uid=orphan,ou=nowhere,dc=example,dc=com",
                      {{"objectClass", "inetOrgPerson"},
                       {"uid", "orphan"},
                       {"cn", "Orphan"},
                       {"sn", "Orphan"}}},
                     sync_state(1, 2));
          send_entry(session, id, tree()[2], sync_state(1, 3));
          send_sync_info(session, id, tlv(0xa2, tlv(0x04, kCookie)));
        },
        request_cookie);
  });
  Consumer consumer(consumer_of(provider.url()), *replica.directory, replica.log(),
                    /*batch_entries=*/1);
  consumer.start();
  REQUIRE(eventually([&] { return consumer.status().failures >= 1; }));
  consumer.stop();
  provider.join();
  const ConsumerStatus status = consumer.status();
  CAPTURE(status.last_error);
  CHECK(status.last_error.find("nothing of the batch was written") != std::string::npos);
  CHECK(replica.has(kSuffix));  // The batches before the refused one were committed.
  CHECK_FALSE(replica.has("uid=orphan,ou=nowhere,dc=example,dc=com"));
  CHECK_FALSE(replica.directory->replica_cookie(1)->has_value());
  CHECK(status.cookie.empty());
}

// After a refresh of the tree (committed with its cookie), the provider sends `bad` in the
// persist phase: the consumer must drop the connection with a reason naming it, and the
// directory keep exactly what it had.
void check_bad_persist_message(const std::function<void(FakeSession&, std::int32_t)>& bad,
                               std::string_view reason) {
  Replica replica;
  std::string request_cookie;
  FakeProvider provider([&](FakeSession& session) {
    serve_sync(
        session,
        [&](std::int32_t id) {
          send_refresh(session, id);
          // The refresh is committed before the bad message comes.
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          bad(session, id);
        },
        request_cookie);
  });
  Consumer consumer(consumer_of(provider.url()), *replica.directory, replica.log());
  consumer.start();
  REQUIRE(eventually([&] { return consumer.status().failures >= 1; }));
  const ConsumerStatus status = consumer.status();
  CAPTURE(status.last_error);
  CHECK(status.last_error.find(reason) != std::string::npos);
  CHECK(status.cookie == kCookie);
  CHECK(replica.directory->replica_cookie(1)->value_or("") == kCookie);
  CHECK(replica.has("uid=user1,ou=people,dc=example,dc=com"));  // Unchanged by the bad message.
  consumer.stop();
  provider.join();
}

TEST_CASE("Consumer: a provider's bad messages in the persist phase change nothing") {
  SUBCASE("a Sync Info value that does not decode") {
    check_bad_persist_message(
        [](FakeSession& session, std::int32_t id) { send_sync_info(session, id, tlv(0xa5, "")); },
        "Sync Info");
  }
  SUBCASE("a cookie of another rid") {
    check_bad_persist_message(
        [](FakeSession& session, std::int32_t id) {
          send_sync_info(session, id,
                         tlv(0x80, "rid=002,csn=20261203130000.000000Z#000000#000#000000"));
        },
        "rid 2");
  }
  SUBCASE("a delete of an entryUUID the replica does not have") {
    check_bad_persist_message(
        [](FakeSession& session, std::int32_t id) {
          send_entry(session, id, Entry{"uid=ghost,ou=people,dc=example,dc=com", {}},
                     sync_state(3, 99));
        },
        "no entry has entryUUID");
  }
  SUBCASE("an entry without its Sync State control") {
    check_bad_persist_message(
        [](FakeSession& session, std::int32_t id) {
          wire::LdapMessage entry;
          entry.reset(id, wire::ProtocolOp::kSearchResultEntry);
          entry.search_entry.object_name = "uid=user1,ou=people,dc=example,dc=com";
          session.write(entry);
        },
        "without a Sync State control");
  }
  SUBCASE("a message cut in the middle") {
    check_bad_persist_message(
        [](FakeSession& session, std::int32_t id) {
          wire::LdapMessage entry;
          entry.reset(id, wire::ProtocolOp::kSearchResultEntry);
          entry.search_entry.object_name = "uid=user1,ou=people,dc=example,dc=com";
          const std::string state = sync_state(2, 2);
          entry.controls.push_back({kSyncStateOid, false, state});
          wire::BerWriter writer;
          wire::encode_message(entry, writer);
          session.write_raw(writer.view().substr(0, writer.view().size() / 2));
          session.close();
        },
        "closed the connection");
  }
}

TEST_CASE("Consumer: e-syncRefreshRequired reloads without a cookie and prunes what is gone") {
  Replica replica;
  std::vector<std::string> request_cookies;  // Written by the provider's thread until join().
  int connection = 0;
  FakeProvider provider(
      [&](FakeSession& session) {
        std::string cookie;
        const int now = connection++;
        serve_sync(
            session,
            [&](std::int32_t id) {
              if (now == 0) {  // The first refresh: the whole tree and a cookie.
                for (std::size_t i = 0; i < tree().size(); ++i) {
                  send_entry(session, id, tree()[i], sync_state(1, static_cast<int>(i)));
                }
                wire::LdapMessage done;
                done.reset(id, wire::ProtocolOp::kSearchResultDone);
                const std::string value = tlv(0x30, tlv(0x04, kCookie));
                done.controls.push_back({kSyncDoneOid, false, value});
                session.write(done);
                return;
              }
              if (now == 1) {  // The stored cookie is too old: reload.
                session.answer(id, wire::ProtocolOp::kSearchResultDone,
                               static_cast<wire::ResultCode>(kSyncRefreshRequired));
                return;
              }
              // The reload: user1 is gone from the provider.
              for (std::size_t i = 0; i < 2; ++i) {
                send_entry(session, id, tree()[i], sync_state(1, static_cast<int>(i)));
              }
              wire::LdapMessage done;
              done.reset(id, wire::ProtocolOp::kSearchResultDone);
              const std::string value = tlv(0x30, tlv(0x04, kCookie + "9") + "\x01\x01\xff");
              done.controls.push_back({kSyncDoneOid, false, value});
              session.write(done);
            },
            cookie);
        request_cookies.push_back(cookie);
      },
      nullptr, 3);
  ReplicationConsumerConfig config = consumer_of(provider.url());
  config.type = ReplicationType::kRefreshOnly;
  config.interval_s = 1;
  Consumer consumer(config, *replica.directory, replica.log());
  consumer.start();
  REQUIRE(eventually([&] { return consumer.status().cookie == kCookie + "9"; }));
  CHECK(consumer.status().reloads == 1);
  CHECK(replica.has("ou=people,dc=example,dc=com"));
  CHECK_FALSE(replica.has("uid=user1,ou=people,dc=example,dc=com"));
  consumer.stop();
  provider.join();
  REQUIRE(request_cookies.size() == 3);
  CHECK(request_cookies[1].find(kCookie) != std::string::npos);  // The stored cookie.
  CHECK(request_cookies[2].find("csn=") == std::string::npos);   // The reload: none.
  CHECK(replica.logged("e-syncRefreshRequired"));
}

}  // namespace
}  // namespace numadir::server::replication::testing
