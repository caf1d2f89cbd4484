// tests/server/replication/provider_connection_test.cc: the consumer's connection to its provider
// (server/replication/provider_connection.h) against a fake provider on a loopback socket
// (fake_provider.h): binds, a search whose entries, references, intermediate responses and done
// come back one at a time with their controls, timeouts that leave the connection usable, a PDU
// cut in the middle, bytes that are not LDAP, a PDU over the size limit, a Notice of
// Disconnection, and TLS (ldaps://, StartTLS yes / critical, certificate checks, a client
// certificate for SASL EXTERNAL) with a PKI made at test time.
#include "server/replication/provider_connection.h"

#include <doctest/doctest.h>

#include <future>
#include <string>
#include <vector>

#include "server/replication/sync_protocol.h"
#include "tests/listener/tls_test_util.h"
#include "tests/server/replication/fake_provider.h"

namespace numadir::server::replication {
namespace {

using testing::FakeProvider;
using testing::FakeSession;
namespace wire = listener::wire;

constexpr std::string_view kBindDn = "cn=replicator,dc=example,dc=com";
constexpr std::string_view kPassword = "s3cret";

// A consumer of `url` (parsed as the config does), simple bind as kBindDn.
ReplicationConsumerConfig consumer_of(const std::string& url) {
  ReplicationConsumerConfig consumer;
  consumer.origin = "replication.consumer[0]";
  consumer.rid = 1;
  Result<LdapUrl> parsed = parse_ldap_url(url);
  REQUIRE(parsed.ok());
  consumer.provider = *parsed;
  consumer.provider_text = url;
  consumer.searchbase = "dc=example,dc=com";
  consumer.binddn = std::string(kBindDn);
  consumer.credentials = std::string(kPassword);
  consumer.timeout_ms = 5000;
  consumer.network_timeout_ms = 5000;
  return consumer;
}

// The script's part of a simple bind: reads it, records the name and password, answers `code`.
void answer_bind(FakeSession& session, std::string& name, std::string& password,
                 wire::ResultCode code = wire::ResultCode::kSuccess) {
  wire::LdapMessage request;
  if (!session.read(request) || request.op != wire::ProtocolOp::kBindRequest) {
    return;
  }
  name = std::string(request.bind_request.name);
  password = std::string(request.bind_request.simple_password);
  session.answer(request.message_id, wire::ProtocolOp::kBindResponse, code,
                 code == wire::ResultCode::kSuccess ? "" : "bad password");
}

// One short-form TLV.
std::string short_tlv(std::uint8_t tag, const std::string& content) {
  REQUIRE(content.size() < 128);
  return std::string(1, static_cast<char>(tag)) +
         std::string(1, static_cast<char>(content.size())) + content;
}

const std::string kUuid("\x01\x23\x45\x67\x89\xab\xcd\xef\x10\x32\x54\x76\x98\xba\xdc\xfe", 16);
const std::string kProviderCookie = "rid=001,csn=20261203120000.000000Z#000000#000#000000";

TEST_CASE("ProviderConnection: binds and streams a search with its controls") {
  std::string bind_name;
  std::string bind_password;
  std::string base;
  wire::SearchScope scope = wire::SearchScope::kBaseObject;
  std::vector<std::string> attributes;
  std::vector<std::string> control_types;
  std::string control_value;
  bool control_critical = false;
  std::int32_t abandoned = 0;
  bool unbound = false;
  const std::string state_value = short_tlv(0x30, short_tlv(0x0a, "\x01") + short_tlv(0x04, kUuid));
  const std::string info_value = short_tlv(0x80, kProviderCookie);
  const std::string done_value = short_tlv(0x30, short_tlv(0x04, kProviderCookie));
  FakeProvider provider([&](FakeSession& session) {
    answer_bind(session, bind_name, bind_password);
    wire::LdapMessage request;
    if (!session.read(request) || request.op != wire::ProtocolOp::kSearchRequest) {
      return;
    }
    base = std::string(request.search_request.base_object);
    scope = request.search_request.scope;
    for (std::string_view attribute : request.search_request.attributes) {
      attributes.emplace_back(attribute);
    }
    for (const wire::Control& control : request.controls) {
      control_types.emplace_back(control.type);
      control_value = std::string(control.value.value_or(""));
      control_critical = control.criticality;
    }
    const std::int32_t id = request.message_id;
    wire::LdapMessage entry;
    entry.reset(id, wire::ProtocolOp::kSearchResultEntry);
    entry.search_entry.object_name = "uid=user1,ou=people,dc=example,dc=com";
    entry.search_entry.attributes.add("uid");
    entry.search_entry.attributes.add_value("user1");
    entry.controls.push_back({kSyncStateOid, false, state_value});
    session.write(entry);
    wire::LdapMessage reference;
    reference.reset(id, wire::ProtocolOp::kSearchResultReference);
    reference.uris.push_back("ldap://other.example.com/ou=elsewhere,dc=example,dc=com");
    session.write(reference);
    wire::LdapMessage info;
    info.reset(id, wire::ProtocolOp::kIntermediateResponse);
    info.extended.name = kSyncInfoOid;
    info.extended.value = info_value;
    session.write(info);
    wire::LdapMessage done;
    done.reset(id, wire::ProtocolOp::kSearchResultDone);
    done.controls.push_back({kSyncDoneOid, false, done_value});
    session.write(done);
    if (session.read(request) && request.op == wire::ProtocolOp::kAbandonRequest) {
      abandoned = request.abandon_id;
    }
    unbound = session.read(request) && request.op == wire::ProtocolOp::kUnbindRequest;
  });
  const ReplicationConsumerConfig consumer = consumer_of(provider.url());
  auto connection = ProviderConnection::connect(consumer);
  REQUIRE_MESSAGE(connection.ok(), connection.status().to_string());
  ProviderConnection& link = **connection;
  CHECK(link.url() == provider.url());
  CHECK_FALSE(link.tls_active());
  REQUIRE_MESSAGE(link.bind().ok(), "bind");
  const std::string request_value = encode_sync_request(SyncMode::kRefreshAndPersist, "", false);
  Result<std::int32_t> id =
      link.send_search(consumer.searchbase, consumer.scope, consumer.filter, {"*", "+"},
                       {wire::Control{kSyncRequestOid, true, request_value}});
  REQUIRE_MESSAGE(id.ok(), id.status().to_string());

  wire::LdapMessage message;
  REQUIRE(link.receive(message, 5000).ok());
  CHECK(message.message_id == *id);
  REQUIRE(message.op == wire::ProtocolOp::kSearchResultEntry);
  CHECK(message.search_entry.object_name == "uid=user1,ou=people,dc=example,dc=com");
  REQUIRE(message.controls.size() == 1);
  CHECK(message.controls[0].type == kSyncStateOid);
  REQUIRE(message.controls[0].value.has_value());
  Result<SyncState> state = decode_sync_state(*message.controls[0].value);
  REQUIRE_MESSAGE(state.ok(), state.status().to_string());
  CHECK(state->state == SyncStateKind::kAdd);

  REQUIRE(link.receive(message, 5000).ok());
  REQUIRE(message.op == wire::ProtocolOp::kSearchResultReference);
  REQUIRE(message.uris.size() == 1);
  CHECK(message.uris[0] == "ldap://other.example.com/ou=elsewhere,dc=example,dc=com");

  REQUIRE(link.receive(message, 5000).ok());
  REQUIRE(message.op == wire::ProtocolOp::kIntermediateResponse);
  CHECK(message.extended.name == kSyncInfoOid);
  Result<SyncInfo> info = decode_sync_info(message.extended.value.value_or(""));
  REQUIRE_MESSAGE(info.ok(), info.status().to_string());
  CHECK(info->kind == SyncInfoKind::kNewCookie);
  CHECK(info->cookie == kProviderCookie);

  REQUIRE(link.receive(message, 5000).ok());
  REQUIRE(message.op == wire::ProtocolOp::kSearchResultDone);
  CHECK(message.result.code == wire::ResultCode::kSuccess);
  REQUIRE(message.controls.size() == 1);
  CHECK(message.controls[0].type == kSyncDoneOid);
  Result<SyncDone> done = decode_sync_done(message.controls[0].value.value_or(""));
  REQUIRE(done.ok());
  CHECK(done->cookie == kProviderCookie);

  CHECK(link.abandon(*id).ok());
  CHECK(link.unbind().ok());
  CHECK_FALSE(link.usable());
  provider.join();
  CHECK(provider.script_thread() != std::this_thread::get_id());
  CHECK(bind_name == kBindDn);
  CHECK(bind_password == kPassword);
  CHECK(base == "dc=example,dc=com");
  CHECK(scope == wire::SearchScope::kWholeSubtree);
  CHECK(attributes == std::vector<std::string>{"*", "+"});
  CHECK(control_types == std::vector<std::string>{std::string(kSyncRequestOid)});
  CHECK(control_value == request_value);
  CHECK(control_critical);
  CHECK(abandoned == *id);
  CHECK(unbound);
}

TEST_CASE("ProviderConnection: a refused bind names the DN and the result") {
  std::string name;
  std::string password;
  FakeProvider provider([&](FakeSession& session) {
    answer_bind(session, name, password, wire::ResultCode::kInvalidCredentials);
  });
  auto connection = ProviderConnection::connect(consumer_of(provider.url()));
  REQUIRE(connection.ok());
  const Status bound = (*connection)->bind();
  CHECK(bound.code() == StatusCode::kInvalidArgument);
  CHECK(bound.message() == provider.url() + ": bind as " + std::string(kBindDn) +
                               " refused: invalidCredentials (49): bad password");
}

TEST_CASE("ProviderConnection: a silent provider times out and the connection stays usable") {
  std::promise<void> client_timed_out;
  std::future<void> timed_out = client_timed_out.get_future();
  FakeProvider provider([&](FakeSession& session) {
    wire::LdapMessage request;
    if (!session.read(request)) {
      return;
    }
    const std::int32_t id = request.message_id;
    // Half a PDU first: the part read must survive the timeout.
    wire::LdapMessage done;
    done.reset(id, wire::ProtocolOp::kSearchResultDone);
    wire::BerWriter writer;
    wire::encode_message(done, writer);
    const std::string bytes(writer.view());
    session.write_raw(bytes.substr(0, 3));
    timed_out.wait();
    session.write_raw(bytes.substr(3));
  });
  ReplicationConsumerConfig consumer = consumer_of(provider.url());
  auto connection = ProviderConnection::connect(consumer);
  REQUIRE(connection.ok());
  ProviderConnection& link = **connection;
  Result<std::int32_t> id = link.send_search("dc=example,dc=com", wire::SearchScope::kBaseObject,
                                             "(objectClass=*)", {"1.1"}, {});
  REQUIRE(id.ok());
  wire::LdapMessage message;
  const Status silent = link.receive(message, 50);
  CHECK(silent.code() == StatusCode::kIo);
  CHECK(silent.message() == provider.url() + ": no message within 50 ms");
  CHECK(link.usable());
  client_timed_out.set_value();
  const Status later = link.receive(message, 5000);
  REQUIRE_MESSAGE(later.ok(), later.to_string());
  CHECK(message.op == wire::ProtocolOp::kSearchResultDone);
  CHECK(message.message_id == *id);
}

TEST_CASE("ProviderConnection: a bind without an answer times out") {
  std::promise<void> finished;
  std::future<void> client_done = finished.get_future();
  FakeProvider provider([&](FakeSession& session) {
    wire::LdapMessage request;
    if (session.read(request)) {
      client_done.wait();  // Never answers.
    }
  });
  ReplicationConsumerConfig consumer = consumer_of(provider.url());
  consumer.timeout_ms = 100;
  auto connection = ProviderConnection::connect(consumer);
  REQUIRE(connection.ok());
  const Status bound = (*connection)->bind();
  finished.set_value();
  CHECK(bound.code() == StatusCode::kIo);
  CHECK(bound.message() ==
        provider.url() + ": bind as " + std::string(kBindDn) + ": no answer within 100 ms");
}

// What the client made of what the provider sent after a search (copied: the message itself
// views the connection's buffer).
struct Received {
  Status status;
  bool usable = true;
  std::string url;
  wire::ProtocolOp op = wire::ProtocolOp::kUnbindRequest;
  std::int32_t message_id = -1;
  std::string extended_name;
  wire::ResultCode code = wire::ResultCode::kSuccess;
};

Received receive_after_search(const FakeProvider::Script& reply, std::size_t max_pdu_bytes) {
  FakeProvider provider([&](FakeSession& session) {
    wire::LdapMessage request;
    if (session.read(request)) {
      reply(session);
    }
  });
  Received received;
  received.url = provider.url();
  ReplicationConsumerConfig consumer = consumer_of(provider.url());
  consumer.max_pdu_bytes = max_pdu_bytes;
  auto connection = ProviderConnection::connect(consumer);
  REQUIRE(connection.ok());
  REQUIRE((*connection)
              ->send_search("", wire::SearchScope::kBaseObject, "(objectClass=*)", {}, {})
              .ok());
  wire::LdapMessage message;
  received.status = (*connection)->receive(message, 5000);
  received.usable = (*connection)->usable();
  if (received.status.ok()) {
    received.op = message.op;
    received.message_id = message.message_id;
    received.extended_name = std::string(message.extended.name.value_or(""));
    received.code = message.result.code;
  }
  if (!received.usable) {
    // Nothing more comes from a connection that failed.
    const Status again = (*connection)->receive(message, 5000);
    CHECK(again.code() == StatusCode::kIo);
    CHECK(again.message() == received.url + ": the connection is closed");
  }
  return received;
}

TEST_CASE("ProviderConnection: a PDU cut in the middle or garbage leaves it unusable") {
  SUBCASE("closed in the middle of a message") {
    const Received got = receive_after_search(
        [](FakeSession& session) {
          wire::LdapMessage entry;
          entry.reset(2, wire::ProtocolOp::kSearchResultEntry);
          entry.search_entry.object_name = "dc=example,dc=com";
          wire::BerWriter writer;
          wire::encode_message(entry, writer);
          session.write_raw(writer.view().substr(0, writer.view().size() - 4));
          session.close();
        },
        1 << 20);
    CHECK(got.status.code() == StatusCode::kIo);
    CHECK(got.status.message().starts_with(
        got.url + ": the server closed the connection in the middle of a message ("));
    CHECK_FALSE(got.usable);
  }
  SUBCASE("closed between messages") {
    const Received got =
        receive_after_search([](FakeSession& session) { session.close(); }, 1 << 20);
    CHECK(got.status.code() == StatusCode::kIo);
    CHECK(got.status.message() == got.url + ": the server closed the connection");
    CHECK_FALSE(got.usable);
  }
  SUBCASE("not an LDAPMessage") {
    const Received got = receive_after_search(
        [](FakeSession& session) { session.write_raw("HTTP/1.1 400\r\n"); }, 1 << 20);
    CHECK(got.status.code() == StatusCode::kMalformed);
    CHECK(got.status.message().starts_with(
        got.url + ": the server sent something that is not an LDAP message: "));
    CHECK_FALSE(got.usable);
  }
  SUBCASE("a framed PDU that does not decode") {
    // SEQUENCE { INTEGER 2 } without a protocolOp.
    const Received got = receive_after_search(
        [](FakeSession& session) { session.write_raw(std::string("\x30\x03\x02\x01\x02", 5)); },
        1 << 20);
    CHECK(got.status.code() == StatusCode::kMalformed);
    CHECK(got.status.message().starts_with(got.url + ": LDAPMessage: offset "));
    CHECK_FALSE(got.usable);
  }
  SUBCASE("a PDU over max_pdu_size") {
    // A header announcing 1 MiB of content: refused before any of it is buffered.
    const Received got = receive_after_search(
        [](FakeSession& session) { session.write_raw(std::string("\x30\x83\x10\x00\x00", 5)); },
        64 * 1024);
    CHECK(got.status.code() == StatusCode::kLimitExceeded);
    CHECK(got.status.message() == got.url +
                                      ": the server sent a message of 1048581 bytes, over "
                                      "the limit of 65536");
    CHECK_FALSE(got.usable);
  }
}

TEST_CASE("ProviderConnection: a Notice of Disconnection is returned and ends the connection") {
  const Received got = receive_after_search(
      [](FakeSession& session) {
        wire::LdapMessage notice;
        notice.reset(wire::kUnsolicitedMessageId, wire::ProtocolOp::kExtendedResponse);
        notice.result.code = wire::ResultCode::kUnavailable;
        notice.result.diagnostic_message = "shutting down";
        notice.extended.name = wire::kNoticeOfDisconnectionOid;
        session.write(notice);
        session.close();
      },
      1 << 20);
  REQUIRE_MESSAGE(got.status.ok(), got.status.to_string());
  CHECK(got.message_id == 0);
  CHECK(got.op == wire::ProtocolOp::kExtendedResponse);
  CHECK(got.extended_name == wire::kNoticeOfDisconnectionOid);
  CHECK(got.code == wire::ResultCode::kUnavailable);
  CHECK_FALSE(got.usable);
}

TEST_CASE("ProviderConnection: a closed port and a bad filter are errors naming the URL") {
  int port = 0;
  {
    FakeProvider closed([](FakeSession&) {});
    port = closed.port();
    // Connect once so that the script ends, then the listening socket closes with it.
    auto first = ProviderConnection::connect(consumer_of(closed.url()));
    REQUIRE(first.ok());
  }
  const std::string url = "ldap://127.0.0.1:" + std::to_string(port);
  auto refused = ProviderConnection::connect(consumer_of(url));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kIo);
  CHECK(refused.status().message() == url + ": Connection refused");

  auto unresolved = ProviderConnection::connect(consumer_of("ldap://no-such-host.invalid"));
  REQUIRE_FALSE(unresolved.ok());
  CHECK(unresolved.status().code() == StatusCode::kIo);
  CHECK(unresolved.status().message().starts_with(
      "ldap://no-such-host.invalid:389: host \"no-such-host.invalid\" does not resolve: "));

  FakeProvider provider([](FakeSession& session) {
    wire::LdapMessage request;
    (void)session.read(request);
  });
  auto connection = ProviderConnection::connect(consumer_of(provider.url()));
  REQUIRE(connection.ok());
  Result<std::int32_t> id =
      (*connection)->send_search("", wire::SearchScope::kBaseObject, "(cn=x", {}, {});
  CHECK(id.status().code() == StatusCode::kInvalidArgument);
  CHECK(id.status().message().starts_with(provider.url() + ": filter (cn=x: "));
  CHECK((*connection)->unbind().ok());
}

// TLS: a PKI made at test time (tests/listener/tls_test_util.h), its server certificate for
// CN=localhost without SANs.
class TlsFixture {
 public:
  TlsFixture() {
    listener::testing::write_pem(pki_.path("client.crt"), pki_.client(), false);
    other_ca_ = listener::testing::make_certificate("Some Other CA", nullptr, -1, 3650);
    listener::testing::write_pem(pki_.path("other-ca.crt"), *other_ca_, false);
  }
  std::unique_ptr<listener::TlsContext> server(
      listener::ClientCertificates mode = listener::ClientCertificates::kNever) const {
    auto tls = listener::TlsContext::create(pki_.settings(mode));
    REQUIRE_MESSAGE(tls.ok(), tls.status().to_string());
    return std::move(*tls);
  }
  ReplicationConsumerConfig consumer(const std::string& url) const {
    ReplicationConsumerConfig consumer = consumer_of(url);
    consumer.ca_file = pki_.path("ca.crt");
    return consumer;
  }
  std::filesystem::path path(const std::string& name) const { return pki_.path(name); }

 private:
  listener::testing::Pki pki_;
  std::unique_ptr<listener::testing::KeyAndCertificate> other_ca_;
};

TEST_CASE("ProviderConnection: ldaps:// verifies the provider's certificate and its name") {
  TlsFixture pki;
  const auto tls = pki.server();
  std::string name;
  std::string password;
  FakeProvider provider([&](FakeSession& session) { answer_bind(session, name, password); },
                        tls.get());
  SUBCASE("the right CA and name") {
    auto connection = ProviderConnection::connect(pki.consumer(provider.url("ldaps", "localhost")));
    REQUIRE_MESSAGE(connection.ok(), connection.status().to_string());
    CHECK((*connection)->tls_active());
    CHECK((*connection)->tls_version().starts_with("TLSv1."));
    CHECK((*connection)->bind().ok());
    provider.join();
    CHECK(name == kBindDn);
  }
  SUBCASE("another CA") {
    ReplicationConsumerConfig consumer = pki.consumer(provider.url("ldaps", "localhost"));
    consumer.ca_file = pki.path("other-ca.crt");
    auto connection = ProviderConnection::connect(consumer);
    REQUIRE_FALSE(connection.ok());
    CHECK(connection.status().code() == StatusCode::kIo);
    CHECK(connection.status().message() ==
          provider.url("ldaps", "localhost") +
              ": certificate verify failed: unable to get local issuer certificate");
  }
  SUBCASE("a name the certificate does not carry") {
    auto connection = ProviderConnection::connect(pki.consumer(provider.url("ldaps")));
    REQUIRE_FALSE(connection.ok());
    CHECK(connection.status().message() ==
          provider.url("ldaps") + ": certificate verify failed: IP address mismatch");
  }
  SUBCASE("tls_verify = false checks nothing") {
    ReplicationConsumerConfig consumer = pki.consumer(provider.url("ldaps"));
    consumer.ca_file.clear();
    consumer.tls_verify = false;
    auto connection = ProviderConnection::connect(consumer);
    REQUIRE_MESSAGE(connection.ok(), connection.status().to_string());
    CHECK((*connection)->bind().ok());
  }
  SUBCASE("a CA file that does not load") {
    ReplicationConsumerConfig consumer = pki.consumer(provider.url("ldaps", "localhost"));
    consumer.ca_file = pki.path("missing.crt");
    auto connection = ProviderConnection::connect(consumer);
    REQUIRE_FALSE(connection.ok());
    CHECK(connection.status().code() == StatusCode::kInvalidArgument);
    CHECK(connection.status().message().starts_with(provider.url("ldaps", "localhost") +
                                                    ": replication.consumer[0].ca_file " +
                                                    pki.path("missing.crt").string() + ": "));
    // The provider's script waits for a connection that never comes: let it.
    auto unblock = ProviderConnection::connect(pki.consumer(provider.url("ldaps", "localhost")));
  }
}

TEST_CASE("ProviderConnection: an ldaps:// provider that speaks plain LDAP fails the handshake") {
  TlsFixture pki;
  FakeProvider provider([](FakeSession& session) {
    wire::LdapMessage request;
    (void)session.read(request);  // Reads the ClientHello as garbage.
    session.answer(1, wire::ProtocolOp::kBindResponse);
  });
  auto connection = ProviderConnection::connect(pki.consumer(provider.url("ldaps", "localhost")));
  REQUIRE_FALSE(connection.ok());
  CHECK(connection.status().code() == StatusCode::kIo);
  CHECK_MESSAGE(connection.status().message().starts_with(provider.url("ldaps", "localhost") +
                                                          ": TLS handshake failed: "),
                connection.status().message());
}

// A script that answers StartTLS with `code`, starts TLS on success and answers a bind.
FakeProvider::Script starttls_script(const listener::TlsContext& tls, wire::ResultCode code,
                                     bool& tls_for_bind, std::string& name) {
  return [&tls, code, &tls_for_bind, &name](FakeSession& session) {
    wire::LdapMessage request;
    if (!session.read(request) || request.op != wire::ProtocolOp::kExtendedRequest ||
        request.extended.name != wire::kStartTlsOid) {
      return;
    }
    wire::LdapMessage response;
    response.reset(request.message_id, wire::ProtocolOp::kExtendedResponse);
    response.result.code = code;
    response.result.diagnostic_message = code == wire::ResultCode::kSuccess ? "" : "no TLS here";
    session.write(response);
    if (code == wire::ResultCode::kSuccess && !session.start_tls(tls)) {
      return;
    }
    std::string password;
    answer_bind(session, name, password);
    tls_for_bind = session.tls_active();
  };
}

TEST_CASE("ProviderConnection: StartTLS yes and critical") {
  TlsFixture pki;
  const auto tls = pki.server();
  bool tls_for_bind = false;
  std::string name;
  SUBCASE("accepted: the bind goes over TLS") {
    FakeProvider provider(starttls_script(*tls, wire::ResultCode::kSuccess, tls_for_bind, name));
    ReplicationConsumerConfig consumer = pki.consumer(provider.url("ldap", "localhost"));
    consumer.starttls = StartTlsMode::kCritical;
    auto connection = ProviderConnection::connect(consumer);
    REQUIRE_MESSAGE(connection.ok(), connection.status().to_string());
    CHECK((*connection)->tls_active());
    CHECK((*connection)->starttls_refusal().empty());
    CHECK((*connection)->bind().ok());
    provider.join();
    CHECK(tls_for_bind);
    CHECK(name == kBindDn);
  }
  SUBCASE("refused with yes: the bind goes in the clear") {
    FakeProvider provider(
        starttls_script(*tls, wire::ResultCode::kUnavailable, tls_for_bind, name));
    ReplicationConsumerConfig consumer = pki.consumer(provider.url("ldap", "localhost"));
    consumer.starttls = StartTlsMode::kYes;
    auto connection = ProviderConnection::connect(consumer);
    REQUIRE_MESSAGE(connection.ok(), connection.status().to_string());
    CHECK_FALSE((*connection)->tls_active());
    CHECK((*connection)->starttls_refusal() == "unavailable (52): no TLS here");
    CHECK((*connection)->bind().ok());
    provider.join();
    CHECK_FALSE(tls_for_bind);
    CHECK(name == kBindDn);
  }
  SUBCASE("refused with critical: no connection") {
    FakeProvider provider(
        starttls_script(*tls, wire::ResultCode::kUnavailable, tls_for_bind, name));
    ReplicationConsumerConfig consumer = pki.consumer(provider.url("ldap", "localhost"));
    consumer.starttls = StartTlsMode::kCritical;
    auto connection = ProviderConnection::connect(consumer);
    REQUIRE_FALSE(connection.ok());
    CHECK(connection.status().code() == StatusCode::kIo);
    CHECK(connection.status().message() ==
          provider.url("ldap", "localhost") +
              ": StartTLS refused: unavailable (52): no TLS here (starttls = \"critical\")");
  }
  SUBCASE("accepted but the certificate does not verify") {
    FakeProvider provider(starttls_script(*tls, wire::ResultCode::kSuccess, tls_for_bind, name));
    ReplicationConsumerConfig consumer = pki.consumer(provider.url("ldap", "localhost"));
    consumer.starttls = StartTlsMode::kYes;
    consumer.ca_file = pki.path("other-ca.crt");
    auto connection = ProviderConnection::connect(consumer);
    REQUIRE_FALSE(connection.ok());
    CHECK(connection.status().message() ==
          provider.url("ldap", "localhost") +
              ": after StartTLS: certificate verify failed: unable to get local issuer "
              "certificate");
  }
}

TEST_CASE("ProviderConnection: SASL EXTERNAL binds with the client certificate") {
  TlsFixture pki;
  const auto tls = pki.server(listener::ClientCertificates::kDemand);
  bool had_certificate = false;
  std::string mechanism;
  bool credentials = true;
  FakeProvider provider(
      [&](FakeSession& session) {
        had_certificate = session.client_sent_certificate();
        wire::LdapMessage request;
        if (!session.read(request) || request.op != wire::ProtocolOp::kBindRequest) {
          return;
        }
        mechanism = std::string(request.bind_request.sasl_mechanism);
        credentials = request.bind_request.sasl_credentials.has_value();
        session.answer(request.message_id, wire::ProtocolOp::kBindResponse);
      },
      tls.get());
  ReplicationConsumerConfig consumer = pki.consumer(provider.url("ldaps", "localhost"));
  consumer.method = ReplicationBind::kExternal;
  consumer.binddn.clear();
  consumer.certificate = pki.path("client.crt");
  consumer.key = pki.path("client.key");
  auto connection = ProviderConnection::connect(consumer);
  REQUIRE_MESSAGE(connection.ok(), connection.status().to_string());
  const Status bound = (*connection)->bind();
  CHECK_MESSAGE(bound.ok(), bound.to_string());
  provider.join();
  CHECK(had_certificate);
  CHECK(mechanism == "EXTERNAL");
  CHECK_FALSE(credentials);
}

TEST_CASE("ProviderConnection: SASL EXTERNAL without TLS is refused before it is sent") {
  FakeProvider provider([](FakeSession& session) {
    wire::LdapMessage request;
    (void)session.read(request);
  });
  ReplicationConsumerConfig consumer = consumer_of(provider.url());
  consumer.method = ReplicationBind::kExternal;
  auto connection = ProviderConnection::connect(consumer);
  REQUIRE(connection.ok());
  const Status bound = (*connection)->bind();
  CHECK(bound.code() == StatusCode::kInvalidArgument);
  CHECK(bound.message() == provider.url() +
                               ": SASL EXTERNAL needs TLS (the client certificate is the "
                               "identity)");
}

}  // namespace
}  // namespace numadir::server::replication
