// tests/listener/frontend_test_util.h: what the listener's tests over real loopback sockets
// share: a fake RequestHandler whose behaviour each request picks by its base DN,
//   "gate"      waits for the test to open the gate, then answers (or sends nothing if
//               abandoned);
//   "open"      sends an entry "before", then keeps the operation open (ResponseSink::detach)
//               in its Feeder, which the test feeds from threads of its own;
//   "gate-open" waits at the gate, then does what "open" does;
//   other       answers one entry named after the base, then SearchResultDone;
// a blocking Client and a Server (a Frontend on 127.0.0.1, port 0, around a FakeHandler), and a
// plan of two emulated nodes (two_node_plan).
// A bind checks that nothing else of its connection runs beside it and that no operation is
// open; a bind with the name "gate" waits at the gate first. A delete (an update: never run by a
// helping listener) of "gate" waits at the same gate; any delete answers DelResponse. The handler
// records the OS thread that ran each message ID.
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "listener/frontend.h"
#include "listener/request_handler.h"
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
  explicit FakeSession(std::atomic<int>& closed) : closed_(closed) {}
  ~FakeSession() override { closed_.fetch_add(1); }  // When the listener destroys its connection.
  std::atomic<int> running{0};

 private:
  std::atomic<int>& closed_;
};

// The operations the fake handler keeps open (search base "open"), fed later by the test from
// threads of its own, as the writer feeds a persistent search. Any thread; each operation is
// called under mu_, so one call at a time. on_end records the thread it ran on and, with
// drop_on_end (the default, what a real feeder does), destroys the operation at once;
// otherwise the test releases it.
class Feeder {
 public:
  // An entry control (Entry Change Notification, RFC-less but common) and a done control
  // (Simple Paged Results, RFC 2696), to check that responses carry their controls.
  static constexpr std::string_view kEntryControl = "2.16.840.1.113730.3.4.7";
  static constexpr std::string_view kEntryControlValue =
      std::string_view("\x30\x03\x0a\x01\x01", 5);
  static constexpr std::string_view kDoneControl = "1.2.840.113556.1.4.319";
  static constexpr std::string_view kDoneControlValue =
      std::string_view("\x30\x05\x02\x01\x00\x04\x00", 7);
  static constexpr std::string_view kIntermediateName = "1.3.6.1.4.1.4203.1.9.1.4";
  static constexpr std::string_view kIntermediateValue = std::string_view("\xa3\x00", 2);

  std::atomic<bool> drop_on_end{true};

  // The handler keeps `operation` of request `id` open.
  void keep(std::int32_t id, std::unique_ptr<OpenOperation> operation) {
    std::lock_guard lock(mu_);
    OpenOperation& kept = *operation;
    ops_[id] = std::move(operation);
    open_.insert(id);
    kept_.insert(id);
    kept.set_on_end([this, id] { on_end(id); });
    changed_.notify_all();
  }
  // Sends an entry named `name` (with kEntryControl) through operation `id`, unless it was
  // dropped or abandoned. Returns: whether it was sent.
  bool send_entry(std::int32_t id, std::string_view name) {
    std::lock_guard lock(mu_);
    OpenOperation* operation = find(id);
    if (operation == nullptr || operation->abandoned()) {
      return false;
    }
    operation->send(entry(id, name));
    return true;
  }
  // Sends an entry through operation `id` even when it was abandoned, as a feeder that has not
  // learnt it yet would. Returns: whether the feeder still held it.
  bool send_entry_anyway(std::int32_t id, std::string_view name) {
    std::lock_guard lock(mu_);
    OpenOperation* operation = find(id);
    if (operation == nullptr) {
      return false;
    }
    operation->send(entry(id, name));
    return true;
  }
  // Makes operation `id` gather what it sends into writes of `bytes` (set_gather_bytes).
  bool gather(std::int32_t id, std::size_t bytes) {
    std::lock_guard lock(mu_);
    OpenOperation* operation = find(id);
    if (operation == nullptr) {
      return false;
    }
    operation->set_gather_bytes(bytes);
    return true;
  }
  // Sends an IntermediateResponse (kIntermediateName, kIntermediateValue) through `id`.
  bool send_intermediate(std::int32_t id) {
    std::lock_guard lock(mu_);
    OpenOperation* operation = find(id);
    if (operation == nullptr || operation->abandoned()) {
      return false;
    }
    wire::LdapMessage message;
    message.reset(id, wire::ProtocolOp::kIntermediateResponse);
    message.extended.name = kIntermediateName;
    message.extended.value = kIntermediateValue;
    operation->send(message);
    return true;
  }
  // Finishes `id` with a SearchResultDone (with kDoneControl) and drops it.
  bool finish(std::int32_t id) {
    std::lock_guard lock(mu_);
    OpenOperation* operation = find(id);
    if (operation == nullptr) {
      return false;
    }
    open_.erase(id);  // Before the response: a bind may start as soon as it is queued.
    wire::LdapMessage done;
    done.reset(id, wire::ProtocolOp::kSearchResultDone);
    done.controls.push_back(wire::Control{kDoneControl, false, kDoneControlValue});
    operation->finish(done);
    ops_.erase(id);
    return true;
  }
  // Drops `id` unfinished: it ends without a response, if the listener had not ended it.
  void release(std::int32_t id) {
    std::lock_guard lock(mu_);
    open_.erase(id);
    ops_.erase(id);
  }
  // Returns: whether operation `id` is held and the listener ended it.
  bool abandoned(std::int32_t id) {
    std::lock_guard lock(mu_);
    OpenOperation* operation = find(id);
    return operation != nullptr && operation->abandoned();
  }
  // Returns: how many operations are open: kept, and neither finished, released nor ended.
  std::size_t open_count() {
    std::lock_guard lock(mu_);
    return open_.size();
  }
  // Blocks (30 s at most) until operation `id` is kept. Returns: whether it was.
  bool wait_kept(std::int32_t id) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return kept_.count(id) > 0; });
  }
  // Blocks (30 s at most) until on_end of `id` ran. Returns: the OS thread it ran on, 0 if not.
  std::int32_t wait_ended(std::int32_t id) {
    std::unique_lock lock(mu_);
    changed_.wait_for(lock, std::chrono::seconds(30), [&] { return ended_on_.count(id) > 0; });
    const auto found = ended_on_.find(id);
    return found != ended_on_.end() ? found->second : 0;
  }
  // Returns: how many times on_end ran.
  std::size_t ends() {
    std::lock_guard lock(mu_);
    return end_calls_;
  }

 private:
  OpenOperation* find(std::int32_t id) {
    const auto found = ops_.find(id);
    return found != ops_.end() ? found->second.get() : nullptr;
  }
  wire::LdapMessage entry(std::int32_t id, std::string_view name) {
    wire::LdapMessage message;
    message.reset(id, wire::ProtocolOp::kSearchResultEntry);
    message.search_entry.object_name = name;
    message.controls.push_back(wire::Control{kEntryControl, false, kEntryControlValue});
    return message;
  }
  void on_end(std::int32_t id) {
    std::lock_guard lock(mu_);
    ++end_calls_;
    ended_on_[id] = static_cast<std::int32_t>(::syscall(SYS_gettid));
    open_.erase(id);
    if (drop_on_end.load()) {
      ops_.erase(id);  // Destroyed here, on the listener thread, under the feeder's lock.
    }
    changed_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::int32_t, std::unique_ptr<OpenOperation>> ops_;
  std::set<std::int32_t> open_;
  std::set<std::int32_t> kept_;
  std::map<std::int32_t, std::int32_t> ended_on_;  // Message ID -> OS thread of its on_end.
  std::size_t end_calls_ = 0;
};

// The worker state FakeHandler makes: the OS thread that made it.
class FakeState : public RequestWorkerState {
 public:
  const std::int32_t made_on = static_cast<std::int32_t>(::syscall(SYS_gettid));
};

class FakeHandler : public RequestHandler {
 public:
  std::unique_ptr<Session> open_session(const ConnectionInfo&) override {
    if (hold_sessions.load()) {
      wait_for_gate();  // On the accepting listener thread, in the middle of its accept.
    }
    sessions_opened.fetch_add(1);
    return std::make_unique<FakeSession>(sessions_closed);
  }

  std::unique_ptr<RequestWorkerState> make_worker_state() override {
    return std::make_unique<FakeState>();
  }

  void handle(const LdapMessage& request, Session& session, ResponseSink& sink,
              threadpool::WorkerState& state) override {
    {
      std::lock_guard lock(mu_);
      ran_on_[request.message_id] = static_cast<std::int32_t>(::syscall(SYS_gettid));
      state_made_on_[request.message_id] = dynamic_cast<FakeState&>(state).made_on;
    }
    auto& fake = static_cast<FakeSession&>(session);
    const int beside = fake.running.fetch_add(1);
    if (request.op == ProtocolOp::kBindRequest && (beside != 0 || feeder.open_count() != 0)) {
      bind_violations.fetch_add(1);
    }
    LdapMessage response;
    if (request.op == ProtocolOp::kBindRequest) {
      if (request.bind_request.name == "gate") {
        wait_for_gate();
      }
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
      if (base == "gate" || base == "gate-open") {
        wait_for_gate();
      }
      if (base == "open" || base == "gate-open") {
        // One entry through the sink (unless abandoned already), then the rest through the
        // open operation.
        if (!sink.abandoned()) {
          response.reset(request.message_id, ProtocolOp::kSearchResultEntry);
          response.search_entry.object_name = "before";
          sink.send(response);
        }
        std::unique_ptr<OpenOperation> operation = sink.detach();
        CHECK(operation != nullptr);  // On a worker: CHECK, as a REQUIRE would throw there.
        if (operation != nullptr) {
          feeder.keep(request.message_id, std::move(operation));
        }
      } else if (!sink.abandoned()) {
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

  // The listener thread tells of each Unbind and Abandon just before it carries it out.
  void notice(const LdapMessage&, Session&, const RequestOrigin&, const LdapMessage*) override {
    notices.fetch_add(1);
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

  // Returns: the OS thread id that made the worker state message `id` ran with, 0 if none yet.
  std::int32_t state_made_on(std::int32_t id) {
    std::lock_guard lock(mu_);
    const auto found = state_made_on_.find(id);
    return found != state_made_on_.end() ? found->second : 0;
  }

  // Returns: how many requests (or sessions) came to the gate so far.
  int at_gate() {
    std::lock_guard lock(mu_);
    return gate_waiters_;
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

  Feeder feeder;
  std::atomic<int> sessions_opened{0};
  std::atomic<int> sessions_closed{0};  // Connections destroyed.
  std::atomic<int> bind_violations{0};
  std::atomic<int> abandoned_seen{0};
  std::atomic<int> notices{0};             // Unbind and Abandon requests the listener carried out.
  std::atomic<bool> hold_sessions{false};  // open_session waits at the gate.

 private:
  std::mutex mu_;
  std::condition_variable arrived_;
  std::condition_variable opened_;
  int gate_waiters_ = 0;
  bool gate_open_ = false;
  std::map<std::int32_t, std::int32_t> ran_on_;         // Message ID -> OS thread id.
  std::map<std::int32_t, std::int32_t> state_made_on_;  // Message ID -> its state's maker.
};

// Opens the handler's gate when it goes out of scope: a failed REQUIRE still lets a worker held
// at the gate finish, so the server stops.
struct GateOpener {
  FakeHandler& handler;
  ~GateOpener() { handler.open_gate(); }
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
  // Over the Unix-domain socket at `path` (an ldapi:// listener).
  explicit Client(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof(address.sun_path));
    std::memcpy(address.sun_path, path.data(), path.size());
    REQUIRE(connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  }
  ~Client() { close(); }
  int fd() const { return fd_; }
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
  void bind(std::int32_t id, std::string_view name = {}) {
    LdapMessage message;
    message.reset(id, ProtocolOp::kBindRequest);
    message.bind_request.name = name;
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

// Returns: a plan of two emulated nodes ("numa:2 core:1 pu:1": a listener and a worker each)
//   mapped onto this machine (threads.topology in the server), pinned or not.
inline threadpool::PlacementPlan two_node_plan(bool pin = true) {
  auto emulated = threadpool::Topology::synthetic("numa:2 core:1 pu:1");
  auto machine = threadpool::Topology::detect();
  REQUIRE(emulated.ok());
  REQUIRE(machine.ok());
  threadpool::PlacementOptions placement;
  placement.pin = pin;
  auto planned = threadpool::plan_placement(*emulated, placement);
  REQUIRE(planned.ok());
  return threadpool::map_onto_machine(*std::move(planned), *emulated, *machine);
}

// A Frontend on a loopback port over a `Handler` (the fake one by default).
template <typename Handler = FakeHandler>
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
  Handler handler;
  std::unique_ptr<Frontend> frontend;
  std::uint16_t port = 0;
};

// Waits (bounded) until `done` holds; returns whether it did.
inline bool eventually(const std::function<bool()>& done) {
  return numadir::testing::wait_until(done);
}

}  // namespace numadir::listener::testing
