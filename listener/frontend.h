// listener/frontend.h: the server's network side, assembled: the listen sockets (one
// SO_REUSEPORT socket per listener thread and listen URL), the listener threads and the worker
// pool that runs the handler.
//
// Thread contract: start/stop/destroy on one controlling thread (the server's main thread).
// snapshot() may also be called from any thread (a worker running a monitor search) until
// stop() begins. The RequestHandler must outlive the Frontend.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "listener/frontend_snapshot.h"
#include "listener/listen_socket.h"
#include "listener/listen_url.h"
#include "listener/listener.h"
#include "listener/request_handler.h"
#include "threadpool/locked_queue_pool.h"
#include "threadpool/node_memory.h"
#include "threadpool/placement.h"
#include "threadpool/worker_pool.h"

namespace numadir::listener {

enum class Dispatcher : std::uint8_t {
  kPerCpu,  // Listener threads, each with its own sockets, into the lock-free pool.
  kSingle,  // The classic design: one listener, one mutex + condvar queue, unpinned workers.
};

struct FrontendOptions {
  std::vector<ListenUrl> urls;
  Dispatcher dispatcher = Dispatcher::kPerCpu;
  // kPerCpu with a plan: per NUMA node of the plan, its listeners and a pool of its workers,
  // each thread pinned as planned; a node's listeners submit to its own pool. With several
  // nodes, a connection goes to a listener of the node whose CPU received it (plan.cpu_nodes,
  // a reuseport BPF program; the kernel's hash where it refuses, said on standard error).
  // refuse_steering_for_test makes the program's attachment fail as a kernel's refusal would.
  std::optional<threadpool::PlacementPlan> plan;
  bool refuse_steering_for_test = false;
  // kPerCpu with a pinned plan: how each node's memory is kept on it (threadpool/node_memory.h).
  // Its pool (queues, slots, counters) and its Listener objects are constructed on a short-lived
  // thread pinned to the node's PUs and bound to its memory; each of its workers binds once
  // pinned, before it makes its WorkerState, and each of its listeners before it accepts.
  // nullptr: this machine's (threadpool::machine_node_memory(), hwloc). An unpinned plan, no
  // plan and kSingle bind nothing: their threads float, so no node is theirs.
  // Requires: it outlives the Frontend.
  threadpool::NodeMemory* node_memory = nullptr;
  // Without a plan (and always for kSingle): these counts, one pool, nothing pinned.
  std::size_t listeners = 1;  // Listener threads (kSingle: always 1).
  std::size_t workers = 2;    // Worker threads.
  std::size_t queue_capacity = 4096;
  ListenerLimits limits;
  // kPerCpu: listeners run queued reads themselves before they sleep (ListenerShared::help_pool).
  bool listeners_help = false;
  // TLS for ldaps:// URLs and StartTLS; nullptr: none (an ldaps:// URL is then an error).
  // Requires: it outlives the Frontend.
  TlsContext* tls = nullptr;
  // How ldapi:// socket files are made (mode, owner, group).
  UnixSocketOptions unix_socket;
  // Stamps each request with when its bytes were read (RequestOrigin::received_ns), for the
  // latency histograms ([metrics]); off, the listeners read no clock for it.
  bool stamp_requests = false;
};

class Frontend {
 public:
  // Binds every URL (port 0: the kernel picks, the same port for every listener), starts the
  // pool and the listeners. An address another process (or another URL of this server)
  // listens on is refused (listener/listen_socket.h); an ldapi:// socket file is made, a stale
  // one replaced.
  // Errors: kInvalidArgument for counts out of range; kAlreadyExists naming the URL (and the
  //   process holding it, where /proc tells) for an address in use; kIo naming the URL and
  //   errno's text when a socket cannot be created, bound or listened on.
  static Result<std::unique_ptr<Frontend>> start(const FrontendOptions& options,
                                                 RequestHandler& handler);
  Frontend(const Frontend&) = delete;
  Frontend& operator=(const Frontend&) = delete;
  ~Frontend();  // Stops.

  // Returns: the URLs as bound (ports resolved).
  const std::vector<ListenUrl>& bound_urls() const { return bound_urls_; }
  // Stops accepting and reading, lets started requests finish, ends the open operations (their
  // on_end runs) and waits until their holders released them, closes every connection, then
  // stops the workers, and removes the ldapi:// socket files it made (if still its own).
  // Idempotent.
  void stop();

  std::size_t listener_count() const { return listeners_.size(); }
  const Listener& listener(std::size_t i) const { return *listeners_[i]; }
  std::size_t pool_count() const { return pools_.size(); }
  const threadpool::TaskPool& pool(std::size_t i) const { return *pools_[i]; }

  // Returns: every listener's, worker's and pool's counters, read now. Reads only atomics
  //   (and, for the single dispatcher, its queue's lock for the depth): never slows a request.
  FrontendSnapshot snapshot() const;

 private:
  Frontend() = default;
  // Removes the ldapi:// socket files still this server's (a failure: a line on stderr).
  void remove_unix_sockets();

  std::vector<ListenUrl> bound_urls_;
  std::vector<ListenSockets> sockets_;  // Per URL, what was bound (fds handed on, not kept).
  ListenerShared shared_;
  std::vector<std::unique_ptr<threadpool::TaskPool>> pools_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::size_t> listener_pool_;  // listener_pool_[i]: the pool listener i feeds.
  std::vector<std::string> pool_names_;
  Dispatcher dispatcher_ = Dispatcher::kPerCpu;
  bool steered_ = false;  // Connections are steered by CPU (steer_connections).
  bool stopped_ = false;
};

}  // namespace numadir::listener
