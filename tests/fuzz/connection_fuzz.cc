// libFuzzer target for a whole connection: a client's byte stream, written in pieces whose sizes
// the input picks, read by a real Listener (listener/listener.h) from one end of a socketpair,
// framed, decoded and put through the per-connection rules (listener/connection_rules.h: a bind
// runs alone, Abandon, Unbind, StartTLS with no TLS configured, at most
// max_outstanding_per_connection outstanding, requests held back, a full pool), to a fake
// RequestHandler that answers at once, or keeps the operation open (ResponseSink::detach) until
// the input finishes or releases it. So sequences of PDUs are fuzzed, not single messages.
//
// Everything runs on the fuzzing thread, so that a run is deterministic: the listener's rounds
// (Listener::run_round_for_test), the pool's tasks (ManualPool: a queue the input runs when it
// says) and the holder of the open operations.
//
// Input: byte 0 is n; then n control bytes; the rest is the client's stream. Each step takes
// the next control byte c (cyclically; n == 0: one step writes the whole stream and runs every
// task), writes the next bytes of the stream, runs one listener round, does what c says, runs
// another round and reads what the server wrote:
//   bits 0-4: write (bits + 1) bytes; bit 5: sixteen times as many;
//   bits 6-7: 0 nothing more; 1 run every queued task; 2 run the oldest task; 3 end the oldest
//             open operation: send an entry through it first if bit 1 is set, then finish it
//             if bit 0 is set, else release it unfinished.
// When the stream is written (or the server closed): every task is run and every open
// operation ended until nothing changes; then, if the connection is still open and the stream
// was whole PDUs, a last bind is sent and run out the same way; then the listener is stopped
// and drained.
// tests/fuzz/make_connection_corpus.py writes the seed corpus (tests/fuzz/corpus/connection/).
//
// Properties checked beyond "no crash, no sanitizer report, no leak":
//   - what the server writes frames into LDAPMessages that decode, each under a message ID
//     the handler was given, or a Notice of Disconnection under ID 0;
//   - a bind runs with nothing else of its connection outstanding (no task queued, no open
//     operation), and no more than max_outstanding_per_connection operations are ever
//     outstanding;
//   - nothing is held for ever: the last bind is answered (or the connection closes);
//   - the listener drains once stopped: the connection's session is destroyed.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "listener/listener.h"
#include "listener/request_handler.h"
#include "listener/request_worker_state.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "threadpool/worker_pool.h"

namespace {

using numadir::listener::ConnectionInfo;
using numadir::listener::Listener;
using numadir::listener::ListenerShared;
using numadir::listener::OpenOperation;
using numadir::listener::RequestHandler;
using numadir::listener::RequestWorkerState;
using numadir::listener::ResponseSink;
using numadir::listener::Session;
using numadir::listener::wire::LdapMessage;
using numadir::listener::wire::ProtocolOp;
using numadir::listener::wire::ResultCode;
using numadir::threadpool::Task;
using numadir::threadpool::WorkerPoolOptions;
using numadir::threadpool::WorkerState;

constexpr std::uint32_t kMaxOutstanding = 3;
constexpr std::size_t kPoolCapacity = 2;  // Below the limit, to fill it: room again at 1.
constexpr std::size_t kMaxPduBytes = 1024;
constexpr std::size_t kMailboxCapacity = 4;
constexpr int kMaxSteps = 4096;
constexpr int kMaxDrainRounds = 256;
constexpr std::int32_t kSentinelId = 2147483647;

// A pool whose tasks run only when the fuzzer says, on the fuzzing thread. Never started (no
// threads); everything of it runs on the fuzzing thread.
class ManualPool final : public numadir::threadpool::TaskPool {
 public:
  ManualPool() : TaskPool(manual_options()) {}

  void stop() override {}
  bool try_submit(std::unique_ptr<Task>& task) override {
    if (queue_.size() >= kPoolCapacity) {
      return false;
    }
    queue_.push_back(std::move(task));
    return true;
  }
  bool try_help(WorkerState&) override { return false; }
  std::size_t queue_depth() const override { return queue_.size(); }
  std::size_t queue_high_water() const override { return kPoolCapacity; }

  // Runs the oldest queued task, as a worker would. Returns: whether there was one.
  bool run_one() {
    if (queue_.empty()) {
      return false;
    }
    std::unique_ptr<Task> task = std::move(queue_.front());
    queue_.pop_front();
    took_task(queue_.size());  // Tells the listener when there is room again.
    task->run(state_);
    task.release()->retire(state_);
    return true;
  }

 private:
  static WorkerPoolOptions manual_options() {
    WorkerPoolOptions options;
    options.name = "fuzz";
    options.threads = 1;
    options.queue_capacity = kPoolCapacity;
    return options;
  }
  void run_worker(std::size_t) override { __builtin_trap(); }  // Never started.
  bool has_room() const override { return queue_.size() <= room_mark(); }

  std::deque<std::unique_ptr<Task>> queue_;
  RequestWorkerState state_;
};

class FuzzSession : public Session {
 public:
  explicit FuzzSession(int& live) : live_(live) { ++live_; }
  ~FuzzSession() override { --live_; }

 private:
  int& live_;
};

// Answers every request at once, except searches whose base starts with 'o' and updates, which
// it keeps open (as a persistent search and the writer's updates are) for the fuzzer to finish
// or release. Checks the bind and outstanding properties. Fuzzing thread only.
class FuzzHandler : public RequestHandler {
 public:
  explicit FuzzHandler(const ManualPool& pool) : pool_(pool) {}

  std::unique_ptr<Session> open_session(const ConnectionInfo&) override {
    return std::make_unique<FuzzSession>(live_sessions);
  }

  void handle(const LdapMessage& request, Session&, ResponseSink& sink, WorkerState&) override {
    handled_ids.insert(request.message_id);
    check_outstanding(1);  // This one counts too until it returns.
    LdapMessage response;
    switch (request.op) {
      case ProtocolOp::kBindRequest:
        if (pool_.queue_depth() != 0 || open_count() != 0) {
          __builtin_trap();  // Something of the connection outstanding beside a bind.
        }
        response.reset(request.message_id, ProtocolOp::kBindResponse);
        sink.send(response);
        return;
      case ProtocolOp::kSearchRequest:
        if (sink.abandoned()) {
          return;
        }
        response.reset(request.message_id, ProtocolOp::kSearchResultEntry);
        response.search_entry.object_name = request.search_request.base_object;
        sink.send(response);
        if (request.search_request.base_object.starts_with("o")) {
          keep(request.message_id, ProtocolOp::kSearchResultDone, sink);
          return;
        }
        response.reset(request.message_id, ProtocolOp::kSearchResultDone);
        sink.send(response);
        return;
      case ProtocolOp::kModifyRequest:
        keep(request.message_id, ProtocolOp::kModifyResponse, sink);
        return;
      case ProtocolOp::kAddRequest:
        keep(request.message_id, ProtocolOp::kAddResponse, sink);
        return;
      case ProtocolOp::kDelRequest:
        keep(request.message_id, ProtocolOp::kDelResponse, sink);
        return;
      case ProtocolOp::kModifyDnRequest:
        keep(request.message_id, ProtocolOp::kModifyDnResponse, sink);
        return;
      case ProtocolOp::kCompareRequest:
        response.reset(request.message_id, ProtocolOp::kCompareResponse);
        response.result.code = ResultCode::kCompareTrue;
        sink.send(response);
        return;
      case ProtocolOp::kExtendedRequest:
        // StartTLS too: with no TLS configured the listener leaves it to the handler, which
        // refuses it as the server does.
        response.reset(request.message_id, ProtocolOp::kExtendedResponse);
        response.result.code = ResultCode::kUnavailable;
        sink.send(response);
        return;
      default:
        __builtin_trap();  // The listener carries out Unbind and Abandon itself.
    }
  }

  // Sends an entry through the oldest open operation (unless `send` is false), then finishes
  // it (or, with `finish` false, releases it unfinished). Returns: whether there was one.
  bool end_oldest(bool send, bool finish) {
    if (open_.empty()) {
      return false;
    }
    const auto oldest = open_.begin();
    std::unique_ptr<OpenOperation> operation = std::move(oldest->second.operation);
    const std::int32_t id = oldest->second.message_id;
    const ProtocolOp done = oldest->second.done;
    open_.erase(oldest);
    if (send) {  // Even once abandoned, as a feeder that has not learnt it yet would.
      LdapMessage entry;
      entry.reset(id, ProtocolOp::kSearchResultEntry);
      entry.search_entry.object_name = "fed";
      operation->send(entry);
    }
    if (finish) {
      LdapMessage response;
      response.reset(id, done);
      operation->finish(response);
    }
    return true;  // `operation` released here.
  }
  std::size_t open_count() const {
    std::size_t count = 0;
    for (const auto& [key, open] : open_) {
      count += open.operation->abandoned() ? 0 : 1;
    }
    return count;
  }
  // Every operation queued, running (`running` of them) or open counts against the limit.
  void check_outstanding(std::size_t running) const {
    if (pool_.queue_depth() + open_count() + running > kMaxOutstanding) {
      __builtin_trap();
    }
  }

  std::set<std::int32_t> handled_ids;
  int live_sessions = 0;

 private:
  struct Open {
    std::int32_t message_id;
    ProtocolOp done;  // Its last response's op.
    std::unique_ptr<OpenOperation> operation;
  };

  void keep(std::int32_t id, ProtocolOp done, ResponseSink& sink) {
    std::unique_ptr<OpenOperation> operation = sink.detach();
    if (operation == nullptr) {
      __builtin_trap();  // The listener's sink keeps operations open.
    }
    const std::uint64_t key = next_key_++;
    OpenOperation& kept = *operation;
    open_.emplace(key, Open{id, done, std::move(operation)});
    // What a real feeder does: drops the operation when the listener ends it.
    kept.set_on_end([this, key] { open_.erase(key); });
  }

  const ManualPool& pool_;
  std::map<std::uint64_t, Open> open_;  // By key: the order they were kept in.
  std::uint64_t next_key_ = 0;
};

// The client's end of the socketpair: writes the stream, reads and checks what comes back.
class Client {
 public:
  Client(int fd, const FuzzHandler& handler) : fd_(fd), handler_(handler) {}
  ~Client() { close(); }

  // Returns: false once the server's end is closed (nothing more can be written).
  bool write(std::string_view bytes) {
    while (!bytes.empty() && fd_ >= 0) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        return false;  // EPIPE: closed. EAGAIN: the server does not read (reading paused).
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return fd_ >= 0;
  }
  // Reads what the server wrote (never blocks) and checks each complete message.
  void drain() {
    char chunk[16384];
    while (fd_ >= 0) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), MSG_DONTWAIT);
      if (n > 0) {
        received_.append(chunk, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) {
        continue;
      }
      server_closed_ = server_closed_ || n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
      break;
    }
    for (;;) {
      const numadir::listener::wire::Frame frame =
          numadir::listener::wire::frame_pdu(received_, std::size_t{1} << 24);
      if (frame.state == numadir::listener::wire::FrameState::kNeedMore) {
        return;
      }
      if (frame.state != numadir::listener::wire::FrameState::kComplete) {
        __builtin_trap();  // The server wrote something that is not an LDAPMessage.
      }
      const std::string pdu = received_.substr(0, frame.pdu_bytes);
      received_.erase(0, frame.pdu_bytes);
      if (!numadir::listener::wire::decode_message(pdu, message_).ok()) {
        __builtin_trap();
      }
      const bool notice =
          message_.message_id == 0 && message_.op == ProtocolOp::kExtendedResponse &&
          message_.extended.name == numadir::listener::wire::kNoticeOfDisconnectionOid;
      if (!notice && handler_.handled_ids.count(message_.message_id) == 0) {
        __builtin_trap();  // A response to a request the handler never saw.
      }
      notice_seen_ = notice_seen_ || notice;
      sentinel_answered_ = sentinel_answered_ || (message_.message_id == kSentinelId &&
                                                  message_.op == ProtocolOp::kBindResponse);
    }
  }
  // Returns: whether the server closed its end (EOF or a reset seen).
  bool server_closed() const { return server_closed_; }
  bool notice_seen() const { return notice_seen_; }
  bool sentinel_answered() const { return sentinel_answered_; }
  // Forgets a sentinel's answer seen so far (a request of the stream may have used its ID).
  void forget_sentinel() { sentinel_answered_ = false; }
  void close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

 private:
  int fd_;
  const FuzzHandler& handler_;
  std::string received_;
  LdapMessage message_;
  bool server_closed_ = false;
  bool notice_seen_ = false;
  bool sentinel_answered_ = false;
};

// Returns: whether `stream` is whole PDUs within the size limit, as the listener frames them.
bool whole_pdus(std::string_view stream) {
  while (!stream.empty()) {
    const numadir::listener::wire::Frame frame =
        numadir::listener::wire::frame_pdu(stream, kMaxPduBytes);
    if (frame.state != numadir::listener::wire::FrameState::kComplete) {
      return false;
    }
    stream.remove_prefix(frame.pdu_bytes);
  }
  return true;
}

// An anonymous BindRequest with message ID kSentinelId.
std::string sentinel_bind() {
  LdapMessage bind;
  bind.reset(kSentinelId, ProtocolOp::kBindRequest);
  numadir::listener::wire::BerWriter writer;
  numadir::listener::wire::encode_message(bind, writer);
  return std::string(writer.view());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::size_t control_count = std::min<std::size_t>(data[0], size - 1);
  const std::uint8_t* controls = data + 1;
  const std::string_view whole(reinterpret_cast<const char*>(data + 1 + control_count),
                               size - 1 - control_count);

  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    return 0;  // Out of descriptors: not the code under test.
  }
  ManualPool pool;
  FuzzHandler handler(pool);
  ListenerShared shared;
  shared.handler = &handler;
  shared.limits.max_pdu_bytes = kMaxPduBytes;
  shared.limits.max_outstanding_per_connection = kMaxOutstanding;
  shared.limits.max_connections = 1;
  {
    // A small mailbox: cheaper to make for every input, and full now and then (a rescan).
    Listener listener("fuzz", {}, shared, pool, std::nullopt, {}, kMailboxCapacity);
    Client client(fds[0], handler);
    listener.adopt_for_test(fds[1]);
    const auto round = [&] {
      listener.run_round_for_test();
      client.drain();
    };
    // Runs every task and ends every open operation, until nothing is left.
    const auto run_out = [&] {
      for (int i = 0; i < kMaxDrainRounds; ++i) {
        bool progress = false;
        while (pool.run_one()) {
          progress = true;
        }
        progress = handler.end_oldest((i & 2) != 0, (i & 1) != 0) || progress;
        round();
        if (!progress && pool.queue_depth() == 0) {
          return;
        }
      }
    };
    round();
    std::string_view stream = whole;
    bool writable = true;
    for (int step = 0; writable && !stream.empty() && step < kMaxSteps; ++step) {
      const std::uint8_t c = control_count == 0 ? 0x40 : controls[step % control_count];
      std::size_t length = control_count == 0 ? stream.size() : (c & 0x1f) + 1u;
      if ((c & 0x20) != 0) {
        length *= 16;
      }
      length = std::min(length, stream.size());
      writable = client.write(stream.substr(0, length));
      stream.remove_prefix(length);
      round();
      switch (c >> 6) {
        case 1:
          while (pool.run_one()) {
          }
          break;
        case 2:
          pool.run_one();
          break;
        case 3:
          handler.end_oldest((c & 2) != 0, (c & 1) != 0);
          break;
        default:
          break;
      }
      handler.check_outstanding(0);
      round();
    }
    run_out();
    // Liveness: a connection the server kept, fed whole PDUs, answers a bind sent last (a bind
    // waits for everything before it), unless it closes meanwhile.
    if (writable && stream.empty() && !client.server_closed() && !client.notice_seen() &&
        whole_pdus(whole)) {
      client.forget_sentinel();
      if (client.write(sentinel_bind())) {
        round();
        run_out();
        if (!client.sentinel_answered() && !client.server_closed()) {
          __builtin_trap();  // Requests held that nothing will start.
        }
      }
    }
    client.close();
    listener.stop();
    int rounds = 0;
    while (!listener.run_round_for_test()) {
      while (pool.run_one()) {
      }
      handler.end_oldest(false, false);
      if (++rounds > kMaxDrainRounds) {
        __builtin_trap();  // Stopped, and still holding its connection.
      }
    }
    if (handler.live_sessions != 0) {
      __builtin_trap();  // Drained, but its connection (and session) lives on.
    }
  }
  return 0;
}
