#include "perf/floor_server.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"

namespace numadir::perf {
namespace {

namespace wire = listener::wire;

// A blocking client: sends PDUs and reads them back one at a time.
class TestClient {
 public:
  explicit TestClient(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
    // Never hang the test on a server that does not answer.
    timeval timeout{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~TestClient() { ::close(fd_); }

  bool connected() const { return connected_; }
  void send(const wire::LdapMessage& message) {
    wire::BerWriter writer;
    wire::encode_message(message, writer);
    REQUIRE(::send(fd_, writer.view().data(), writer.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(writer.size()));
  }
  void send_raw(std::string_view bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }
  // Returns: false at end of stream (or on a timeout).
  bool receive(wire::LdapMessage& message) {
    for (;;) {
      const wire::Frame frame = wire::frame_pdu(buffer_);
      if (frame.state == wire::FrameState::kComplete) {
        pdu_ = buffer_.substr(0, frame.pdu_bytes);
        buffer_.erase(0, frame.pdu_bytes);
        REQUIRE(wire::decode_message(pdu_, message).ok());
        return true;
      }
      REQUIRE(frame.state == wire::FrameState::kNeedMore);
      char chunk[4096];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) {
        return false;
      }
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
  std::string pdu_;  // The last PDU received: the message's views point here.
};

TEST_CASE("FloorServer: answers the auth cycle and refuses other operations") {
  FloorServerConfig config;
  config.threads = 2;
  auto server = FloorServer::open(config);
  REQUIRE(server.ok());
  REQUIRE((*server)->port() != 0);
  (*server)->start();
  TestClient client((*server)->port());
  REQUIRE(client.connected());

  wire::LdapMessage request;
  request.reset(1, wire::ProtocolOp::kSearchRequest);
  request.search_request.base_object = "ou=people,dc=example,dc=com";
  request.search_request.scope = wire::SearchScope::kWholeSubtree;
  request.search_request.filter.add_leaf(schema::FilterKind::kEquality, "uid", "user7");
  request.search_request.attributes.push_back("1.1");
  client.send(request);
  wire::LdapMessage response;
  REQUIRE(client.receive(response));
  CHECK(response.message_id == 1);
  REQUIRE(response.op == wire::ProtocolOp::kSearchResultEntry);
  CHECK(response.search_entry.object_name == "uid=user7,ou=people,dc=example,dc=com");
  CHECK(response.search_entry.attributes.empty());
  REQUIRE(client.receive(response));
  CHECK(response.op == wire::ProtocolOp::kSearchResultDone);
  CHECK(response.result.code == wire::ResultCode::kSuccess);

  request.reset(2, wire::ProtocolOp::kBindRequest);
  request.bind_request.name = "uid=user7,ou=people,dc=example,dc=com";
  request.bind_request.simple_password = "password7";
  client.send(request);
  REQUIRE(client.receive(response));
  CHECK(response.message_id == 2);
  CHECK(response.op == wire::ProtocolOp::kBindResponse);
  CHECK(response.result.code == wire::ResultCode::kSuccess);

  request.reset(3, wire::ProtocolOp::kDelRequest);
  request.dn = "uid=user7,ou=people,dc=example,dc=com";
  client.send(request);
  REQUIRE(client.receive(response));
  CHECK(response.message_id == 3);
  CHECK(response.op == wire::ProtocolOp::kDelResponse);
  CHECK(response.result.code == wire::ResultCode::kUnwillingToPerform);

  request.reset(4, wire::ProtocolOp::kUnbindRequest);
  client.send(request);
  CHECK_FALSE(client.receive(response));  // Closed.
  (*server)->stop();
}

TEST_CASE("FloorServer: a malformed PDU gets a notice of disconnection") {
  auto server = FloorServer::open(FloorServerConfig{});
  REQUIRE(server.ok());
  (*server)->start();
  TestClient client((*server)->port());
  REQUIRE(client.connected());
  client.send_raw(std::string_view("\x30\x03\x02\x01\x01", 5));  // No protocolOp.
  wire::LdapMessage response;
  REQUIRE(client.receive(response));
  CHECK(response.message_id == wire::kUnsolicitedMessageId);
  CHECK(response.op == wire::ProtocolOp::kExtendedResponse);
  CHECK(response.result.code == wire::ResultCode::kProtocolError);
  CHECK(response.extended.name == wire::kNoticeOfDisconnectionOid);
  CHECK_FALSE(client.receive(response));
}

TEST_CASE("FloorServer: bad configurations are errors") {
  FloorServerConfig config;
  config.host = "localhost";  // Not an IPv4 literal.
  CHECK(FloorServer::open(config).status().code() == StatusCode::kInvalidArgument);
  config.host = "127.0.0.1";
  config.threads = 0;
  CHECK(FloorServer::open(config).status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace numadir::perf
