// listener/frontend.cc: see frontend.h.
#include "listener/frontend.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <set>
#include <utility>

namespace numadir::listener {

const char* close_reason_name(CloseReason reason) {
  switch (reason) {
    case CloseReason::kClient:
      return "client";
    case CloseReason::kUnbind:
      return "unbind";
    case CloseReason::kIdleTimeout:
      return "idle_timeout";
    case CloseReason::kWriteTimeout:
      return "write_timeout";
    case CloseReason::kProtocolError:
      return "protocol_error";
    case CloseReason::kTlsFailure:
      return "tls_failure";
    case CloseReason::kServerStop:
      return "server_stop";
    case CloseReason::kOther:
      break;
  }
  return "other";
}
namespace {

// Returns: for each CPU of `plan`, the index (in listener order, which is each listen URL's
//   reuseport group order) of the listener to serve a connection that CPU received: one of its
//   node's listeners, the node's CPUs taking them in turn. CPUs of a node without listeners are
//   left out.
std::vector<std::pair<unsigned, unsigned>> listener_of_cpu(
    const threadpool::PlacementPlan& plan, const std::vector<unsigned>& first_listener,
    const std::vector<unsigned>& listeners, const std::vector<unsigned>& nodes) {
  std::vector<std::pair<unsigned, unsigned>> out;
  std::vector<unsigned> taken(nodes.size(), 0);
  for (const threadpool::CpuNode& cpu : plan.cpu_nodes) {
    for (std::size_t p = 0; p < nodes.size(); ++p) {
      if (nodes[p] == cpu.node) {
        out.emplace_back(cpu.cpu, first_listener[p] + taken[p]++ % listeners[p]);
        break;
      }
    }
  }
  return out;
}

// Attaches to `fd`'s reuseport group a classic BPF program that picks the socket by the CPU
// that received the connection (SO_ATTACH_REUSEPORT_CBPF): a jump per CPU of `routes`; any other
// CPU returns an index past the group, for which the kernel falls back to its hash.
Status steer_by_cpu(int fd, const std::vector<std::pair<unsigned, unsigned>>& routes) {
  std::vector<sock_filter> code;
  code.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<__u32>(SKF_AD_OFF + SKF_AD_CPU)));
  for (const auto& [cpu, listener] : routes) {
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, cpu, 0, 1));
    code.push_back(BPF_STMT(BPF_RET | BPF_K, listener));
  }
  code.push_back(BPF_STMT(BPF_RET | BPF_K, 0xffffffffu));
  if (code.size() > BPF_MAXINSNS) {
    return Status(StatusCode::kUnsupported, "too many CPUs for a classic BPF program");
  }
  sock_fprog program{static_cast<unsigned short>(code.size()), code.data()};
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &program, sizeof(program)) != 0) {
    return errno_status("SO_ATTACH_REUSEPORT_CBPF");
  }
  return Status();
}

}  // namespace

namespace {

// One pool and the listeners that submit to it, as the Frontend will build them.
struct PoolLayout {
  std::string name;  // "node0", or "" without a plan.
  unsigned node = 0;
  threadpool::WorkerPoolOptions pool;
  std::vector<std::optional<unsigned>> listener_pins;
};

// With a plan of several nodes: each URL's connections go to a listener of the node whose CPU
// received them (steer_by_cpu); where the kernel refuses, to its hash, with a line saying so.
// Returns: whether every URL's connections are steered.
bool steer_connections(const FrontendOptions& options, const std::vector<PoolLayout>& pools,
                       const std::vector<std::vector<int>>& fds) {
  if (!options.plan.has_value() || pools.size() < 2 || fds.empty()) {
    return false;  // One node: every listener is the right one.
  }
  std::vector<unsigned> first_listener;
  std::vector<unsigned> listeners;
  std::vector<unsigned> nodes;
  unsigned next = 0;
  for (const PoolLayout& pool : pools) {
    first_listener.push_back(next);
    listeners.push_back(static_cast<unsigned>(pool.listener_pins.size()));
    nodes.push_back(pool.node);
    next += static_cast<unsigned>(pool.listener_pins.size());
  }
  const auto routes = listener_of_cpu(*options.plan, first_listener, listeners, nodes);
  bool all = true;
  for (std::size_t url = 0; url < fds[0].size(); ++url) {
    if (options.urls[url].is_local()) {
      continue;  // One socket, one listener: nothing to steer.
    }
    const Status steered =
        options.refuse_steering_for_test
            ? Status(StatusCode::kUnsupported, "SO_ATTACH_REUSEPORT_CBPF: refused (test)")
            : steer_by_cpu(fds[0][url], routes);
    if (!steered.ok()) {
      all = false;
      std::cerr << "numadir: " << options.urls[url].to_string()
                << ": connections reach listeners by the kernel's hash, not by the node that "
                   "received them: "
                << steered.message() << "\n";
    }
  }
  return all;
}

std::vector<PoolLayout> layout(const FrontendOptions& options) {
  std::vector<PoolLayout> pools;
  const bool single = options.dispatcher == Dispatcher::kSingle;
  if (!single && options.plan.has_value()) {
    for (const threadpool::NodePlan& node : options.plan->nodes) {
      if (node.listeners.empty() || node.workers.empty()) {
        continue;
      }
      PoolLayout pool;
      pool.name = "node" + std::to_string(node.node);
      pool.node = node.node;
      pool.pool.name = "worker-" + std::to_string(node.node);
      pool.pool.threads = node.workers.size();
      pool.pool.queue_capacity = options.queue_capacity;
      for (const threadpool::ThreadPlacement& worker : node.workers) {
        pool.pool.pins.push_back(worker.pu);
      }
      for (const threadpool::ThreadPlacement& listener : node.listeners) {
        pool.listener_pins.push_back(listener.pu);
      }
      if (options.plan->pinned) {
        // The node's memory is where its threads run: the PUs its workers and listeners pin to.
        std::set<unsigned> pus;
        for (const auto* threads : {&node.workers, &node.listeners}) {
          for (const threadpool::ThreadPlacement& thread : *threads) {
            if (thread.pu.has_value()) {
              pus.insert(*thread.pu);
            }
          }
        }
        pool.pool.memory.memory = options.node_memory != nullptr
                                      ? options.node_memory
                                      : &threadpool::machine_node_memory();
        pool.pool.memory.node = node.node;
        pool.pool.memory.pus.assign(pus.begin(), pus.end());
      }
      pools.push_back(std::move(pool));
    }
    return pools;
  }
  // No plan, or the classic design: one pool, nothing pinned, so no node and no binding.
  PoolLayout pool;
  pool.pool.threads = options.workers;
  pool.pool.queue_capacity = options.queue_capacity;
  pool.listener_pins.resize(single ? 1 : options.listeners);
  pools.push_back(std::move(pool));
  return pools;
}

}  // namespace

Result<std::unique_ptr<Frontend>> Frontend::start(const FrontendOptions& options,
                                                  RequestHandler& handler) {
  if (options.urls.empty()) {
    return invalid_argument("the server needs at least one listen URL");
  }
  if (options.queue_capacity == 0 ||
      options.queue_capacity > threadpool::BoundedQueue<threadpool::Task>::kMaxCapacity) {
    return invalid_argument(
        "queue capacity must be 1.." +
        std::to_string(threadpool::BoundedQueue<threadpool::Task>::kMaxCapacity));
  }
  for (const ListenUrl& url : options.urls) {
    if (url.scheme == "ldaps" && options.tls == nullptr) {
      return invalid_argument(url.to_string() + " needs TLS settings (a [tls] section)");
    }
  }
  const std::vector<PoolLayout> pools = layout(options);
  std::size_t listeners = 0;
  for (const PoolLayout& pool : pools) {
    if (pool.pool.threads == 0 || pool.listener_pins.empty()) {
      return invalid_argument("every pool needs at least one listener and one worker");
    }
    listeners += pool.listener_pins.size();
  }
  if (listeners == 0) {
    return invalid_argument("the placement plan has no listener");
  }
  std::unique_ptr<Frontend> frontend(new Frontend());
  // Sockets first: a port in use fails the start before any thread runs.
  std::vector<std::vector<int>> fds(listeners);
  auto close_all = [&fds] {
    for (auto& list : fds) {
      for (const int fd : list) {
        if (fd >= 0) {
          ::close(fd);
        }
      }
    }
  };
  for (const ListenUrl& url : options.urls) {
    // TCP: one SO_REUSEPORT socket per listener, the address this server's alone
    // (listen_socket.h). ldapi: one socket, accepted on by the first listener; the others hold
    // -1 in its place so that every listener's sockets stay in URL order.
    Result<ListenSockets> sockets = open_listen_sockets(url, listeners, options.unix_socket);
    if (!sockets.ok()) {
      close_all();
      frontend->remove_unix_sockets();
      return sockets.status();
    }
    for (std::size_t i = 0; i < listeners; ++i) {
      fds[i].push_back(i < sockets->fds.size() ? sockets->fds[i] : -1);
    }
    frontend->bound_urls_.push_back(sockets->bound);
    sockets->fds.clear();  // Owned by fds (then the listeners) from here.
    frontend->sockets_.push_back(std::move(*sockets));
  }
  frontend->steered_ = steer_connections(options, pools, fds);
  frontend->shared_.handler = &handler;
  frontend->shared_.tls = options.tls;
  for (const ListenUrl& url : options.urls) {
    frontend->shared_.tls_urls.push_back(url.scheme == "ldaps");
    frontend->shared_.local_paths.push_back(url.is_local() ? url.path : std::string());
  }
  frontend->shared_.limits = options.limits;
  frontend->shared_.stamp_requests = options.stamp_requests;
  // The classic design's listener only reads (LockedQueuePool::try_help never runs a task).
  frontend->shared_.help_pool = options.listeners_help && options.dispatcher == Dispatcher::kPerCpu;
  frontend->dispatcher_ = options.dispatcher;
  std::size_t next_listener = 0;
  for (const PoolLayout& layout : pools) {
    threadpool::WorkerPoolOptions pool_options = layout.pool;
    // Workers keep the handler's state for the requests they run, as each listener does (it
    // makes its own with the handler): the caches they retire requests into are in it.
    pool_options.make_worker_state = [&handler] { return handler.make_worker_state(); };
    std::unique_ptr<threadpool::TaskPool> pool;
    std::vector<std::unique_ptr<Listener>> listeners;
    // With a pinned plan, on a thread of the node with its memory bound there, so that the
    // pool's queues, slots and counters and the listeners' mailboxes and buffers are first
    // touched on their node; otherwise on this thread.
    threadpool::build_on_node(layout.pool.memory, [&] {
      if (options.dispatcher == Dispatcher::kSingle) {
        pool = std::make_unique<threadpool::LockedQueuePool>(std::move(pool_options));
      } else {
        pool = std::make_unique<threadpool::WorkerPool>(std::move(pool_options));
      }
      for (std::size_t i = 0; i < layout.listener_pins.size(); ++i) {
        const std::string name =
            "listener-" + (layout.name.empty() ? std::to_string(next_listener + i)
                                               : layout.name.substr(4) + "-" + std::to_string(i));
        listeners.push_back(
            std::make_unique<Listener>(name, std::move(fds[next_listener + i]), frontend->shared_,
                                       *pool, layout.listener_pins[i], layout.pool.memory));
      }
    });
    pool->start();
    for (auto& listener : listeners) {
      frontend->listeners_.push_back(std::move(listener));
      frontend->listener_pool_.push_back(frontend->pools_.size());
      ++next_listener;
    }
    frontend->pool_names_.push_back(
        layout.name.empty() ? "pool" + std::to_string(frontend->pools_.size()) : layout.name);
    frontend->pools_.push_back(std::move(pool));
  }
  for (auto& listener : frontend->listeners_) {
    listener->start();
  }
  return frontend;
}

FrontendSnapshot Frontend::snapshot() const {
  FrontendSnapshot out;
  out.dispatcher = dispatcher_ == Dispatcher::kSingle ? "single" : "percpu";
  out.steering = steered_ ? "cpu" : "hash";
  const std::uint64_t now_ns = threadpool::steady_ns();
  for (std::size_t p = 0; p < pools_.size(); ++p) {
    const threadpool::TaskPool& pool = *pools_[p];
    PoolSnapshot snapshot;
    snapshot.name = pool_names_[p];
    snapshot.queue_depth = pool.queue_depth();
    snapshot.queue_high_water = pool.queue_high_water();
    snapshot.queue_capacity = pool.options().queue_capacity;
    snapshot.workers = pool.threads();
    snapshot.lock = pool.lock_stats();
    for (std::size_t i = 0; i < pool.threads(); ++i) {
      const threadpool::WorkerCounters& counters = pool.counters(i);
      WorkerSnapshot worker;
      worker.name = pool.options().name + "-" + std::to_string(i);
      worker.pool = p;
      worker.tid = counters.tid.load(std::memory_order_relaxed);
      worker.requests = counters.tasks.load(std::memory_order_relaxed);
      worker.parks = counters.parks.load(std::memory_order_relaxed);
      worker.wakeups = counters.wakeups.load(std::memory_order_relaxed);
      worker.busy_ns = counters.busy_ns_at(now_ns);
      out.workers.push_back(std::move(worker));
    }
    out.pools.push_back(std::move(snapshot));
  }
  for (std::size_t i = 0; i < listeners_.size(); ++i) {
    const ListenerCounters& counters = listeners_[i]->counters();
    ListenerSnapshot listener;
    listener.name = listeners_[i]->name();
    listener.pool = listener_pool_[i];
    listener.tid = counters.tid.load(std::memory_order_relaxed);
    listener.connections = counters.open.load(std::memory_order_relaxed);
    listener.accepted = counters.accepted.load(std::memory_order_relaxed);
    listener.refused = counters.refused.load(std::memory_order_relaxed);
    listener.requests = counters.requests.load(std::memory_order_relaxed);
    listener.bytes_received = counters.bytes_received.load(std::memory_order_relaxed);
    listener.helped = counters.helped.load(std::memory_order_relaxed);
    listener.output_pauses = counters.output_pauses.load(std::memory_order_relaxed);
    for (std::size_t r = 0; r < kCloseReasons; ++r) {
      listener.closed[r] = counters.closed[r].load(std::memory_order_relaxed);
    }
    listener.submit_refused = counters.submit_refused.load(std::memory_order_relaxed);
    ++out.pools[listener.pool].listeners;
    out.listeners.push_back(std::move(listener));
  }
  return out;
}

Frontend::~Frontend() { stop(); }

void Frontend::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  for (auto& listener : listeners_) {
    listener->stop();
  }
  for (auto& pool : pools_) {
    pool->stop();
  }
  listeners_.clear();
  remove_unix_sockets();
}

void Frontend::remove_unix_sockets() {
  for (const ListenSockets& sockets : sockets_) {
    std::string error;
    if (!remove_unix_socket(sockets, error)) {
      std::cerr << "numadir: " << error << " (the next start removes it)\n";
    }
  }
  sockets_.clear();
}

}  // namespace numadir::listener
