// server/monitoring/metrics_server.cc: the metrics endpoint's thread (metrics_server.h): a poll
// loop in the manner of Redis's ae.c, small enough to read in one sitting. Each connection reads
// one request head, answers it, and only then reads the next (a pipelined request waits in its
// buffer), so a connection holds at most one head (8 KiB) and one answer in memory.
//
// Thread contract: as metrics_server.h. Everything in Loop is owned by the metrics thread.
#include "server/monitoring/metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "server/monitoring/http_request.h"

namespace numadir::server {

// Written by the metrics thread only; relaxed: each is a count read on its own, with no other
// memory to order by it.
struct MetricsServer::Counters {
  std::atomic<std::uint64_t> scrapes{0};
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> connections_refused{0};
  std::atomic<std::uint64_t> timeouts{0};
  std::atomic<std::uint64_t> tls_failures{0};
  std::atomic<std::uint64_t> unauthorized{0};
  std::atomic<std::uint64_t> not_found{0};
  std::atomic<std::uint64_t> bad_method{0};
  std::atomic<std::uint64_t> bad_requests{0};

  static void add(std::atomic<std::uint64_t>& counter) {
    // Only the metrics thread writes: a load and a store, no locked read-modify-write.
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
};

namespace {

using Clock = std::chrono::steady_clock;

// The most bytes read at once, and the most a connection buffers unparsed: a head (8 KiB) and
// one read more, so a pipelined burst cannot grow it.
constexpr std::size_t kReadBytes = 4096;
constexpr std::size_t kMaxInputBytes = HttpRequestParser::kMaxHeadBytes + kReadBytes;

std::string errno_text(int error) { return std::strerror(error); }

std::string address_text(const std::string& host, std::uint16_t port) {
  return host.find(':') != std::string::npos ? "[" + host + "]:" + std::to_string(port)
                                             : host + ":" + std::to_string(port);
}

const char* reason_of(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

// The SHA-256 of `text`, so that tokens of different lengths compare in the same time.
void digest(std::string_view text, unsigned char (&out)[32]) {
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), out, &size, EVP_sha256(), nullptr);
}

}  // namespace

class MetricsServer::Loop {
 public:
  Loop(const MetricsServerOptions& options, int listen_fd, int wake_fd, listener::TlsContext* tls,
       MetricsRender render, Counters& counters)
      : options_(options),
        listen_fd_(listen_fd),
        wake_fd_(wake_fd),
        tls_(tls),
        render_(std::move(render)),
        counters_(counters),
        timeout_(std::chrono::milliseconds(options.request_timeout_ms)) {
    if (!options.bearer_token.empty()) {
      digest("Bearer " + options.bearer_token, expected_authorization_);
    }
  }
  ~Loop() {
    for (Client& client : clients_) {
      ::close(client.fd);
    }
  }

  void run();

 private:
  struct Client {
    int fd = -1;
    std::unique_ptr<listener::TlsChannel> tls;  // Null for plain HTTP.
    std::string input;                          // Plaintext received, not yet parsed.
    std::string output;                         // Bytes to send (ciphertext with TLS).
    std::size_t sent = 0;                       // Of output.
    HttpRequestParser parser;
    Clock::time_point deadline;  // For the request now arriving, or the answer being sent.
    bool close_after_output = false;
    bool answering = false;  // An answer is queued and not all sent.
    bool draining = false;   // Answered for the last time: reading and dropping until EOF.
    bool closed = false;     // To be removed at the end of this turn.
  };

  void accept_all();
  // Reads what the socket has. Marks the client closed on EOF or an error.
  void read_from(Client& client);
  // Answers the requests in the input, one at a time, while each answer is sent at once.
  void serve_input(Client& client);
  // Parses the next request and queues its answer. Returns: false when its head is not all
  // there yet.
  bool serve_one(Client& client);
  void write_to(Client& client);
  // Reads and drops what a client still sends after its last answer; closed at EOF.
  void drain(Client& client);
  // Queues a response (encrypted under TLS). `body` is sent only when `with_body`.
  void respond(Client& client, int status, std::string_view content_type, std::string_view body,
               bool with_body, std::string_view extra_headers, bool keep_alive);
  bool authorized(std::string_view authorization) const;

  const MetricsServerOptions& options_;
  const int listen_fd_;
  const int wake_fd_;
  listener::TlsContext* const tls_;
  const MetricsRender render_;
  Counters& counters_;
  const Clock::duration timeout_;
  unsigned char expected_authorization_[32] = {};
  std::vector<Client> clients_;
  std::vector<pollfd> polled_;
  std::string body_;   // The last rendering: reused, so a scrape allocates only when it grows.
  std::string plain_;  // A response's plaintext, before TLS.
  Clock::time_point accept_paused_until_;
  bool stopping_ = false;
};

void MetricsServer::Loop::run() {
  while (!stopping_) {
    polled_.clear();
    polled_.push_back({wake_fd_, POLLIN, 0});
    // Out of descriptors: the connection waits in the backlog, and the socket stays readable;
    // polled again only after a pause, so that the loop does not spin on it.
    const bool accepting = Clock::now() >= accept_paused_until_;
    polled_.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    Clock::time_point nearest = accepting ? Clock::time_point::max() : accept_paused_until_;
    for (const Client& client : clients_) {
      const bool writing = client.sent < client.output.size();
      polled_.push_back({client.fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0});
      nearest = std::min(nearest, client.deadline);
    }
    int wait_ms = -1;  // Nothing open: park until a connection or stop().
    if (nearest != Clock::time_point::max()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(nearest - Clock::now()).count();
      wait_ms = left < 0 ? 0 : static_cast<int>(left) + 1;
    }
    const int ready = ::poll(polled_.data(), polled_.size(), wait_ms);
    if (ready < 0) {
      NUMADIR_CHECK(errno == EINTR, "metrics: poll failed with valid arguments");
      continue;
    }
    if (polled_[0].revents != 0) {
      stopping_ = true;
      break;
    }
    // Clients first (their indexes match polled_[2..]), then the new ones.
    for (std::size_t i = 0; i < clients_.size(); ++i) {
      Client& client = clients_[i];
      const short events = polled_[i + 2].revents;
      if (client.sent < client.output.size()) {
        if (events != 0) {
          write_to(client);  // POLLERR / POLLHUP while writing: the write says what failed.
        }
      } else if (client.draining) {
        if (events != 0) {
          drain(client);
        }
      } else if (events != 0) {
        read_from(client);
        if (!client.closed && !client.output.empty()) {
          write_to(client);  // The TLS handshake's next flight.
        }
      }
      if (!client.closed && client.output.empty()) {
        serve_input(client);  // What arrived, or a pipelined request that waited.
      }
      // Checked whatever happened: a slowloris client sends often, but never a whole head.
      if (!client.closed && Clock::now() >= client.deadline) {
        if (!client.draining) {
          Counters::add(counters_.timeouts);
        }
        client.closed = true;
      }
    }
    std::erase_if(clients_, [](const Client& client) {
      if (client.closed) {
        ::close(client.fd);
      }
      return client.closed;
    });
    if (polled_[1].revents != 0) {
      accept_all();
    }
  }
}

void MetricsServer::Loop::accept_all() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && errno == EINTR) {
      continue;
    }
    if (fd < 0) {
      // EAGAIN: all taken. ECONNABORTED: gone already. EMFILE and the like: again in 100 ms.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    if (clients_.size() >= options_.max_connections) {
      Counters::add(counters_.connections_refused);
      ::close(fd);
      continue;
    }
    Client& client = clients_.emplace_back();
    client.fd = fd;
    client.deadline = Clock::now() + timeout_;
    if (tls_ != nullptr) {
      SSL* ssl = tls_->new_ssl();
      if (ssl == nullptr) {
        Counters::add(counters_.tls_failures);
        client.closed = true;  // Removed on the next turn.
        continue;
      }
      client.tls = std::make_unique<listener::TlsChannel>(ssl);
    }
    Counters::add(counters_.connections_accepted);
  }
}

void MetricsServer::Loop::read_from(Client& client) {
  char buffer[kReadBytes];
  const ssize_t got = ::recv(client.fd, buffer, sizeof(buffer), 0);
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    return;
  }
  if (got <= 0) {
    client.closed = true;
    return;
  }
  const std::string_view bytes(buffer, static_cast<std::size_t>(got));
  if (client.tls == nullptr) {
    client.input.append(bytes);
  } else {
    const listener::TlsChannel::InputResult result =
        client.tls->input(bytes, client.input, client.output);
    if (result == listener::TlsChannel::InputResult::kFailed) {
      Counters::add(counters_.tls_failures);
      client.close_after_output = true;  // Send the alert, if any, then close.
      if (client.output.empty()) {
        client.closed = true;
      }
      client.input.clear();
      return;
    }
    if (result == listener::TlsChannel::InputResult::kClosed) {
      client.closed = true;
      return;
    }
  }
}

void MetricsServer::Loop::serve_input(Client& client) {
  // One request at a time: the next is parsed once the answer to this one is all sent.
  while (!client.closed && !client.close_after_output && !client.draining &&
         client.output.empty()) {
    if (!serve_one(client)) {
      return;  // The head is not all there yet.
    }
  }
}

bool MetricsServer::Loop::serve_one(Client& client) {
  HttpRequest request;
  const HttpParseResult parsed = client.parser.parse(client.input, request);
  if (parsed.state == HttpParseState::kNeedMore) {
    if (client.input.size() > kMaxInputBytes) {  // Cannot happen: the parser says 431 first.
      client.closed = true;
    }
    return false;
  }
  if (parsed.state == HttpParseState::kError) {
    Counters::add(counters_.bad_requests);
    respond(client, parsed.status, "text/plain; charset=utf-8",
            std::string(reason_of(parsed.status)) + "\n", true, "", false);
    client.input.clear();
    return true;
  }
  const bool head = request.method == "HEAD";
  if (!options_.bearer_token.empty() && !authorized(request.authorization)) {
    Counters::add(counters_.unauthorized);
    respond(client, 401, "text/plain; charset=utf-8", "a bearer token is required\n", !head,
            "WWW-Authenticate: Bearer realm=\"numadir\"\r\n", request.keep_alive);
  } else if (request.target != "/metrics") {
    Counters::add(counters_.not_found);
    respond(client, 404, "text/plain; charset=utf-8", "not found: the metrics are at /metrics\n",
            !head, "", request.keep_alive);
  } else if (request.method != "GET" && !head) {
    Counters::add(counters_.bad_method);
    respond(client, 405, "text/plain; charset=utf-8", "only GET and HEAD\n", true,
            "Allow: GET, HEAD\r\n", request.keep_alive);
  } else {
    const ExpositionFormat format = request.accepts_openmetrics ? ExpositionFormat::kOpenMetrics
                                                                : ExpositionFormat::kPrometheusText;
    render_(format, body_);
    if (!head) {
      Counters::add(counters_.scrapes);
    }
    respond(client, 200, content_type(format), body_, !head, "", request.keep_alive);
  }
  client.input.erase(0, parsed.consumed);
  client.parser.reset();
  return true;
}

void MetricsServer::Loop::respond(Client& client, int status, std::string_view content_type,
                                  std::string_view body, bool with_body,
                                  std::string_view extra_headers, bool keep_alive) {
  plain_.clear();
  plain_.append("HTTP/1.1 ").append(std::to_string(status)).append(" ").append(reason_of(status));
  plain_.append("\r\nContent-Type: ").append(content_type);
  plain_.append("\r\nContent-Length: ").append(std::to_string(body.size()));
  plain_.append("\r\n").append(extra_headers);
  plain_.append(keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n");
  plain_.append("\r\n");
  if (with_body) {
    plain_.append(body);
  }
  if (client.tls == nullptr) {
    client.output.append(plain_);
  } else if (!client.tls->output(plain_, client.output).ok()) {
    Counters::add(counters_.tls_failures);
    client.closed = true;
    return;
  }
  client.close_after_output = !keep_alive;
  client.answering = true;
  client.deadline = Clock::now() + timeout_;  // For the answer to be taken.
  write_to(client);
}

void MetricsServer::Loop::write_to(Client& client) {
  while (client.sent < client.output.size()) {
    const ssize_t put = ::send(client.fd, client.output.data() + client.sent,
                               client.output.size() - client.sent, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) {
      continue;
    }
    if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;  // The rest when the socket says it can take more.
    }
    if (put < 0) {
      client.closed = true;
      return;
    }
    client.sent += static_cast<std::size_t>(put);
  }
  client.output.clear();
  client.sent = 0;
  if (client.close_after_output) {
    // A lingering close: closing with the client's bytes unread would send a reset, which can
    // destroy the answer before the client reads it (a 431 to a head still coming). So the
    // sending side is shut and what still arrives is read and dropped, until the client closes
    // or a short while passes.
    ::shutdown(client.fd, SHUT_WR);
    client.draining = true;
    client.deadline = Clock::now() + std::min(timeout_, Clock::duration(std::chrono::seconds(2)));
    return;
  }
  // An answer sent: the next request has its own time. (The TLS handshake's flights do not
  // count: the handshake and the first request share the time from accept.)
  if (client.answering) {
    client.answering = false;
    client.deadline = Clock::now() + timeout_;
  }
}

void MetricsServer::Loop::drain(Client& client) {
  char buffer[kReadBytes];
  const ssize_t got = ::recv(client.fd, buffer, sizeof(buffer), 0);
  if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    client.closed = true;
  }
}

bool MetricsServer::Loop::authorized(std::string_view authorization) const {
  unsigned char given[32];
  digest(authorization, given);
  return CRYPTO_memcmp(given, expected_authorization_, sizeof(given)) == 0;
}

Result<MetricsServerOptions> metrics_server_options(
    const MetricsSettings& metrics, const std::optional<listener::TlsSettings>& tls) {
  MetricsServerOptions options;
  Result<MetricsListen> listen = parse_metrics_listen(metrics.listen);
  if (!listen.ok()) {
    return invalid_argument("metrics.listen: " + listen.status().message());
  }
  options.host = listen->host;
  options.port = listen->port;
  if (metrics.tls) {
    if (!tls.has_value()) {
      return invalid_argument("metrics.tls: needs a [tls] section (its certificate and key)");
    }
    options.tls = *tls;
    options.tls->client_certificates = metrics.client_certificate
                                           ? listener::ClientCertificates::kDemand
                                           : listener::ClientCertificates::kNever;
  }
  if (!metrics.bearer_token_file.empty()) {
    Result<std::string> token = read_bearer_token(metrics.bearer_token_file);
    if (!token.ok()) {
      return Status(token.status().code(),
                    "metrics.bearer_token_file: " + token.status().message());
    }
    options.bearer_token = std::move(*token);
  }
  options.max_connections = metrics.max_connections;
  options.request_timeout_ms = metrics.request_timeout_s * 1000;
  return options;
}

MetricsServer::MetricsServer(const MetricsServerOptions& options, int listen_fd, int wake_fd,
                             std::uint16_t port, std::unique_ptr<listener::TlsContext> tls,
                             MetricsRender render)
    : options_(options),
      listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      port_(port),
      tls_(std::move(tls)),
      counters_(std::make_unique<Counters>()) {
  loop_ = std::make_unique<Loop>(options_, listen_fd_, wake_fd_, tls_.get(), std::move(render),
                                 *counters_);
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const MetricsServerOptions& options,
                                                            MetricsRender render) {
  const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  const std::string where = address_text(options.host, options.port);
  sockaddr_storage address{};
  socklen_t length = 0;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
      inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(options.port);
    length = sizeof(sockaddr_in);
  } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
             inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(options.port);
    length = sizeof(sockaddr_in6);
  } else {
    return invalid_argument("metrics.listen " + where + ": the host is not an IP address");
  }
  std::unique_ptr<listener::TlsContext> tls;
  if (options.tls.has_value()) {
    auto created = listener::TlsContext::create(*options.tls);
    if (!created.ok()) {
      return created.status();
    }
    tls = std::move(*created);
  }
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return Status(StatusCode::kIo, "metrics.listen " + where + ": socket: " + errno_text(errno));
  }
  const int on = 1;
  // SO_REUSEADDR (a restart binds at once past TIME_WAIT), never SO_REUSEPORT: a second server
  // on the same port is refused, not silently given half the scrapes.
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (address.ss_family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(fd, 64) != 0) {
    const int error = errno;
    ::close(fd);
    return Status(StatusCode::kIo, "metrics.listen " + where + ": " + errno_text(error));
  }
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  const std::uint16_t port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  const int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) {
    const int error = errno;
    ::close(fd);
    return Status(StatusCode::kIo, "metrics: eventfd: " + errno_text(error));
  }
  std::unique_ptr<MetricsServer> server(
      new MetricsServer(options, fd, wake, port, std::move(tls), std::move(render)));
  server->thread_ = std::thread([loop = server->loop_.get()] {
    pthread_setname_np(pthread_self(), "metrics");
    loop->run();
  });
  return server;
}

MetricsServer::~MetricsServer() { stop(); }

void MetricsServer::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof(one));
  if (thread_.joinable()) {
    thread_.join();
  }
  loop_.reset();  // Closes every connection.
  ::close(listen_fd_);
  ::close(wake_fd_);
}

std::string MetricsServer::url() const {
  return std::string(tls_ != nullptr ? "https://" : "http://") +
         address_text(options_.host, port_) + "/metrics";
}

Status MetricsServer::reload_tls() { return tls_ != nullptr ? tls_->reload() : Status(); }

MetricsServerStats MetricsServer::stats() const {
  const auto get = [](const std::atomic<std::uint64_t>& counter) {
    return counter.load(std::memory_order_relaxed);
  };
  MetricsServerStats stats;
  stats.scrapes = get(counters_->scrapes);
  stats.connections_accepted = get(counters_->connections_accepted);
  stats.connections_refused = get(counters_->connections_refused);
  stats.timeouts = get(counters_->timeouts);
  stats.tls_failures = get(counters_->tls_failures);
  stats.unauthorized = get(counters_->unauthorized);
  stats.not_found = get(counters_->not_found);
  stats.bad_method = get(counters_->bad_method);
  stats.bad_requests = get(counters_->bad_requests);
  return stats;
}

}  // namespace numadir::server
