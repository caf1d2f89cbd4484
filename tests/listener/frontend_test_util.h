// tests/listener/frontend_test_util.h: what the Frontend tests (frontend_test.cc,
// frontend_threads_test.cc) share: a fake RequestHandler whose behaviour each request picks by its
// base DN, a blocking test client over one loopback socket, and a Frontend started with them.
//   "gate"   waits for the test to open the gate, then answers (or sends nothing if abandoned);
//   other    answers one entry named after the base, then SearchResultDone.
// A bind checks that nothing else of its connection runs beside it. A delete (an update: never
// run by a helping listener) of "gate" waits at the same gate; any delete answers DelResponse.
// The handler records the OS thread that ran each message ID.
//
// Thread contract: FakeHandler is called by the Frontend's listener and worker threads, and
// read by the test thread (its counters are atomics, the rest is under its mutex). A Client
// belongs to the thread that made it. A Server is made and destroyed on the test thread.
#pragma once

#include "listener/frontend.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "schema/filter.h"
#include "tests/wait_until.h"
#include "threadpool/placement.h"
#include "threadpool/topology.h"

namespace numadir::listener::testing {

using wire::LdapMessage;
using wire::ProtocolOp;

class FakeSession : public Session {
 public:
  std::atomic<int> running{0};
};

class FakeHandler : public RequestHandler {
 public:
  std::unique_ptr<Session> open_session(const ConnectionInfo&) override {
    sessions_opened.fetch_add(1);
    return std::make_unique<FakeSession>();
  }

  void handle(const LdapMessage& request, Session& session, ResponseSink& sink) override {
    {
      std::lock_guard lock(mu_);
      ran_on_[request.message_id] = static_cast<std::int32_t>(::syscall(SYS_gettid));
    }
    auto& fake = static_cast<FakeSession&>(session);
    const int beside = fake.running.fetch_add(1);
    if (request.op == ProtocolOp::kBindRequest && beside != 0) {
      bind_violations.fetch_add(1);
    }
    LdapMessage response;
    if (request.op == ProtocolOp::kBindRequest) {
      response.reset(request.message_id, ProtocolOp::kBindResponse);
      sink.send(response);
    } else if (request.op == ProtocolOp::kDelRequest) {
      if (request.dn == "gate") {
        wait_for_gate();
      }
      response.reset(request.message_id, ProtocolOp::kDelResponse);
      sink.send(response);
    } else if (request.op == ProtocolOp::kSearchRequest) {
      const std::string_view base = request.search_request.base_object;
      if (base == "gate") {
        wait_for_gate();
      }
      if (!sink.abandoned()) {
        response.reset(request.message_id, ProtocolOp::kSearchResultEntry);
        response.search_entry.object_name = base;
        sink.send(response);
        response.reset(request.message_id, ProtocolOp::kSearchResultDone);
        sink.send(response);
      } else {
        abandoned_seen.fetch_add(1);
      }
    }
    fake.running.fetch_sub(1);
  }

  void wait_for_gate() {
    std::unique_lock lock(mu_);
    gate_waiters_++;
    arrived_.notify_all();
    opened_.wait(lock, [this] { return gate_open_; });
  }
  // Returns: the OS thread id that ran message `id` (of any connection), 0 if none did yet.
  std::int32_t ran_on(std::int32_t id) {
    std::lock_guard lock(mu_);
    const auto found = ran_on_.find(id);
    return found != ran_on_.end() ? found->second : 0;
  }

  // Blocks until `count` requests wait at the gate.
  void wait_at_gate(int count) {
    std::unique_lock lock(mu_);
    arrived_.wait(lock, [&] { return gate_waiters_ >= count; });
  }
  void open_gate() {
    std::lock_guard lock(mu_);
    gate_open_ = true;
    opened_.notify_all();
  }

  std::atomic<int> sessions_opened{0};
  std::atomic<int> bind_violations{0};
  std::atomic<int> abandoned_seen{0};

 private:
  std::mutex mu_;
  std::condition_variable arrived_;
  std::condition_variable opened_;
  int gate_waiters_ = 0;
  bool gate_open_ = false;
  std::map<std::int32_t, std::int32_t> ran_on_;  // Message ID -> OS thread id.
};

// A blocking test client over one socket.
class Client {
 public:
  explicit Client(std::uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  }
  ~Client() { close(); }
  void close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  void send_raw(std::string_view bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
    bytes_sent_ += bytes.size();
  }
  std::uint64_t bytes_sent() const { return bytes_sent_; }
  // Appends a request to `pending_` (sent by flush(), so several go in one write).
  void search(std::int32_t id, std::string_view base) {
    LdapMessage message;
    message.reset(id, ProtocolOp::kSearchRequest);
    message.search_request.base_object = base;
    message.search_request.filter = *schema::Filter::parse("(objectClass=*)");
    wire::encode_message(message, writer_);
  }
  void bind(std::int32_t id) {
    LdapMessage message;
    message.reset(id, ProtocolOp::kBindRequest);
    wire::encode_message(message, writer_);
  }
  void del(std::int32_t id, std::string_view dn) {
    LdapMessage message;
    message.reset(id, ProtocolOp::kDelRequest);
    message.dn = dn;
    wire::encode_message(message, writer_);
  }
  // Makes a receive() that waits longer than `seconds` fail instead of hanging the test.
  void set_receive_timeout(int seconds) {
    const timeval timeout{seconds, 0};
    REQUIRE(setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) == 0);
  }
  void abandon(std::int32_t id, std::int32_t target) {
    LdapMessage message;
    message.reset(id, ProtocolOp::kAbandonRequest);
    message.abandon_id = target;
    wire::encode_message(message, writer_);
  }
  void unbind(std::int32_t id) {
    LdapMessage message;
    message.reset(id, ProtocolOp::kUnbindRequest);
    wire::encode_message(message, writer_);
  }
  void flush() {
    send_raw(writer_.view());
    writer_.clear();
  }

  // Returns: the next response, or false at EOF.
  bool receive(LdapMessage& message) {
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
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) {
        return false;
      }
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  // Waits up to `timeout` for the server to close the connection. Returns: true at EOF or a
  // reset; false if it stayed open (bytes that came meanwhile are kept for receive()).
  bool closed_within(std::chrono::milliseconds timeout) {
    pollfd ready{fd_, POLLIN, 0};
    const int events = ::poll(&ready, 1, static_cast<int>(timeout.count()));
    REQUIRE(events >= 0);
    if (events == 0) {
      return false;
    }
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return false;
    }
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
  // Receives an entry and a done for `id`, checking the entry's name.
  void expect_search(std::int32_t id, std::string_view base) {
    LdapMessage message;
    REQUIRE(receive(message));
    CHECK(message.message_id == id);
    REQUIRE(message.op == ProtocolOp::kSearchResultEntry);
    CHECK(message.search_entry.object_name == base);
    REQUIRE(receive(message));
    CHECK(message.message_id == id);
    CHECK(message.op == ProtocolOp::kSearchResultDone);
  }

 private:
  int fd_ = -1;
  std::uint64_t bytes_sent_ = 0;
  wire::BerWriter writer_;
  std::string buffer_;
  std::string pdu_;
};

struct Server {
  explicit Server(FrontendOptions options = {}) {
    if (options.urls.empty()) {
      options.urls.push_back(ListenUrl{"ldap", "127.0.0.1", 0});
    }
    auto started = Frontend::start(options, handler);
    REQUIRE_MESSAGE(started.ok(), started.status().to_string());
    frontend = std::move(*started);
    port = frontend->bound_urls()[0].port;
  }
  FakeHandler handler;
  std::unique_ptr<Frontend> frontend;
  std::uint16_t port = 0;
};

}  // namespace numadir::listener::testing
