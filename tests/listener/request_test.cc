// Tests of where a Request's memory goes: back to the caches of the thread that ends it (the
// worker that retires it, or the listener that drops it), where the next request made from
// those caches finds it.
#include "listener/request.h"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>

#include "listener/request_worker_state.h"

namespace numadir::listener {
namespace {

class IgnoredNotices final : public ConnectionNotifier {
 public:
  void notify(std::uint64_t /*connection_id*/) override {}
};

class IdleHandler final : public RequestHandler {
 public:
  std::unique_ptr<Session> open_session(const ConnectionInfo&) override {
    return std::make_unique<Session>();
  }
  void handle(const wire::LdapMessage&, Session&, ResponseSink&,
              threadpool::WorkerState&) override {}
};

// A connection on one end of a socket pair (the Connection closes it; the test the other).
class SocketConnection {
 public:
  SocketConnection() {
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_) == 0);
    connection_ = std::make_unique<Connection>(fds_[0], ConnectionInfo{}, notices_);
  }
  SocketConnection(const SocketConnection&) = delete;
  SocketConnection& operator=(const SocketConnection&) = delete;
  ~SocketConnection() {
    connection_.reset();
    ::close(fds_[1]);
  }
  Connection& connection() { return *connection_; }

 private:
  IgnoredNotices notices_;
  int fds_[2] = {-1, -1};
  std::unique_ptr<Connection> connection_;
};

TEST_CASE("Request: one its listener drops is the listener's next request") {
  SocketConnection socket;
  IdleHandler handler;
  RequestWorkerState listener;
  OwnedRequest first =
      Request::make(listener.request_caches(), socket.connection(), handler, "first", 0);
  const void* const at = first.get();
  first.reset();  // Carried out by the listener, or dropped unrun.
  OwnedRequest second =
      Request::make(listener.request_caches(), socket.connection(), handler, "second", 1);
  CHECK(second.get() == at);
  CHECK(second->origin().pdu == "second");
  CHECK(second->origin().number == 1);
}

TEST_CASE("Request: one a worker retires goes to the worker's caches and not the listener's") {
  SocketConnection socket;
  IdleHandler handler;
  RequestWorkerState listener;
  RequestWorkerState worker;
  OwnedRequest request =
      Request::make(listener.request_caches(), socket.connection(), handler, "request", 0);
  const void* const at = request.get();
  std::unique_ptr<threadpool::Task> task(request.release());  // Handed to the pool.
  task.release()->retire(worker);
  OwnedRequest on_listener =
      Request::make(listener.request_caches(), socket.connection(), handler, "listener", 1);
  CHECK(on_listener.get() != at);
  OwnedRequest on_worker =
      Request::make(worker.request_caches(), socket.connection(), handler, "worker", 2);
  CHECK(on_worker.get() == at);
  CHECK(on_worker->origin().pdu == "worker");
}

}  // namespace
}  // namespace numadir::listener
