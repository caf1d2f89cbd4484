// perf/floor_server.h: FloorServer, the ceiling of the request path: an LDAP responder with no
// storage and no checks. Every SearchRequest gets one SearchResultEntry, DN
// "uid=<value>,<base>" when the filter is an equality match (else "uid=floor,<base>"), no
// attributes, then SearchResultDone success; every BindRequest gets success; UnbindRequest
// closes; Abandon is ignored; any other request gets its response with unwillingToPerform. A PDU
// that does not decode gets a Notice of Disconnection and a close.
//
// Like the real listener it runs N threads, each with its own SO_REUSEPORT socket and epoll,
// and a connection lives on the thread that accepted it.
//
// Thread contract: open(), start(), stop() and the destructor from one controlling thread.
// start() spawns the threads, which own their sockets, epoll and connections; stop() wakes them
// through an eventfd and joins them. port() may be called from any thread after open().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace numadir::perf {

struct FloorServerConfig {
  std::string host = "127.0.0.1";  // An IPv4 address.
  std::uint16_t port = 0;          // 0: the kernel picks one (see port()).
  int threads = 1;
};

class FloorServer {
 public:
  // Creates and binds the listening sockets (one per thread, all on one port).
  // Errors: kInvalidArgument for a host that is not an IPv4 address or threads < 1; kIo (with
  //   strerror text) when a socket cannot be created, bound or listened on.
  static Result<std::unique_ptr<FloorServer>> open(const FloorServerConfig& config);

  FloorServer(const FloorServer&) = delete;
  FloorServer& operator=(const FloorServer&) = delete;
  ~FloorServer();  // Stops the threads if running, then closes every socket.

  std::uint16_t port() const { return port_; }
  // Starts the threads. Requires: not started.
  void start();
  // Wakes the threads and joins them; connections are closed. Idempotent.
  void stop();

 private:
  struct Loop;
  FloorServer() = default;
  static void run_loop(Loop& loop, int stop_fd);

  std::uint16_t port_ = 0;
  int stop_fd_ = -1;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::vector<std::thread> threads_;
};

}  // namespace numadir::perf
