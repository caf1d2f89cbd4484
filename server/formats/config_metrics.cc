// server/formats/config_metrics.cc: the [metrics] section of numadir.toml (MetricsSettings,
// config.h): the endpoint's address, its TLS and client checks and its limits, with the rule
// that a metrics port is never an open door (an address beyond loopback needs TLS and a client
// certificate or a bearer token); and the readers of its listen address and token file that
// `numadir serve` uses too.
//
// Thread contract: as detail/config_toml.h; the thread parsing a config.
#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "server/formats/detail/config.h"
#include "server/formats/detail/config_toml.h"

namespace numadir::server {

Result<MetricsListen> parse_metrics_listen(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  MetricsListen listen;
  std::string_view port_text;
  if (text.starts_with('[')) {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return invalid_argument(quoted + " is not \"[IPv6]:port\" (e.g. \"[::1]:9330\")");
    }
    listen.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
    in6_addr address{};
    if (inet_pton(AF_INET6, listen.host.c_str(), &address) != 1) {
      return invalid_argument(quoted + ": \"" + listen.host + "\" is not an IPv6 address");
    }
    listen.ipv6 = true;
    listen.loopback = IN6_IS_ADDR_LOOPBACK(&address);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return invalid_argument(quoted + " is not \"host:port\" (e.g. \"127.0.0.1:9330\")");
    }
    listen.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
    in_addr address{};
    if (listen.host == "localhost") {
      listen.loopback = true;
    } else if (listen.host.find(':') != std::string::npos) {
      return invalid_argument(quoted + ": an IPv6 address goes in brackets (\"[::1]:9330\")");
    } else if (inet_pton(AF_INET, listen.host.c_str(), &address) == 1) {
      listen.loopback = (ntohl(address.s_addr) >> 24) == 127;
    } else {
      return invalid_argument(quoted + ": the host must be an IP address or \"localhost\"");
    }
  }
  std::uint32_t port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || error != std::errc() || end != port_text.data() + port_text.size() ||
      port < 1 || port > 65535) {
    return invalid_argument(quoted + ": the port must be a number from 1 to 65535");
  }
  listen.port = static_cast<std::uint16_t>(port);
  return listen;
}

Result<std::string> read_bearer_token(const std::filesystem::path& path, bool* shared) {
  const std::string name = path.string();
  // O_NONBLOCK: a FIFO named by mistake (or by the config fuzzer) must not hang the parse; it
  // is refused just below, as anything but a regular file is.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int error = errno;
    return Status(StatusCode::kIo, name + ": cannot be read (" + std::strerror(error) + ")");
  }
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status(StatusCode::kIo, name + ": not a regular file");
  }
  if (shared != nullptr) {
    *shared = (info.st_mode & 077) != 0;
  }
  std::string token;
  char buffer[512];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      return Status(StatusCode::kIo, name + ": cannot be read (" + std::strerror(error) + ")");
    }
    if (got == 0) {
      break;
    }
    token.append(buffer, static_cast<std::size_t>(got));
    if (token.size() > 4096) {
      ::close(fd);
      return invalid_argument(name + ": more than 4096 bytes: not a bearer token");
    }
  }
  ::close(fd);
  // The file's final newline (an editor's, or echo's) is not part of the token.
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ' ||
                            token.back() == '\t')) {
    token.pop_back();
  }
  if (token.empty()) {
    return invalid_argument(name + ": empty (the file must hold the token)");
  }
  // RFC 6750 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
  for (const char c : token) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' ||
                    c == '=';
    if (!ok) {
      return invalid_argument(name +
                              ": the token may hold only letters, digits and -._~+/= "
                              "(RFC 6750's b64token)");
    }
  }
  return token;
}

namespace detail {

void parse_metrics(const toml::table& table, const std::filesystem::path& base_dir, Config& config,
                   Problems& problems) {
  constexpr std::string_view kPrefix = "metrics";
  check_keys(table, kPrefix,
             {"listen", "tls", "client_certificate", "bearer_token_file", "max_connections",
              "request_timeout"},
             problems);
  MetricsSettings& metrics = config.metrics;
  std::optional<MetricsListen> listen;
  if (get_string(table, kPrefix, "listen", metrics.listen, problems) && !metrics.listen.empty()) {
    Result<MetricsListen> parsed = parse_metrics_listen(metrics.listen);
    if (parsed.ok()) {
      listen = *parsed;
    } else {
      problems.add("metrics.listen", parsed.status().message());
    }
  }
  get_bool(table, kPrefix, "tls", metrics.tls, problems);
  get_bool(table, kPrefix, "client_certificate", metrics.client_certificate, problems);
  std::string text;
  bool token_given = false;
  if (get_string(table, kPrefix, "bearer_token_file", text, problems) && !text.empty()) {
    const std::filesystem::path value(text);
    metrics.bearer_token_file = value.is_absolute() ? value : base_dir / value;
    token_given = true;
  }
  if (std::uint64_t number = 0;
      get_count(table, kPrefix, "max_connections", 4096, number, problems)) {
    if (number == 0) {
      problems.add("metrics.max_connections", "must be an integer from 1 to 4096");
    } else {
      metrics.max_connections = static_cast<std::uint32_t>(number);
    }
  }
  if (std::uint64_t number = 0;
      get_count(table, kPrefix, "request_timeout", 3600, number, problems)) {
    if (number == 0) {
      problems.add("metrics.request_timeout", "must be an integer from 1 to 3600 (seconds)");
    } else {
      metrics.request_timeout_s = static_cast<std::uint32_t>(number);
    }
  }

  if (!metrics.enabled()) {
    for (const char* name :
         {"tls", "client_certificate", "bearer_token_file", "max_connections", "request_timeout"}) {
      if (table.contains(name)) {
        problems.warn(std::string(kPrefix) + "." + name,
                      "ignored: metrics.listen is not set, so there is no metrics endpoint");
      }
    }
    return;
  }
  if (metrics.tls && !config.tls.has_value()) {
    problems.add("metrics.tls", "needs a [tls] section (its certificate and key)");
  }
  if (metrics.client_certificate) {
    if (!metrics.tls) {
      problems.add("metrics.client_certificate", "needs metrics.tls = true");
    } else if (config.tls.has_value() && config.tls->ca_file.empty() &&
               config.tls->ca_dir.empty()) {
      problems.add("metrics.client_certificate",
                   "needs tls.ca_file or tls.ca_dir (the CAs client certificates are verified "
                   "against)");
    }
  }
  if (token_given) {
    bool shared = false;
    Result<std::string> token = read_bearer_token(metrics.bearer_token_file, &shared);
    if (!token.ok()) {
      problems.add("metrics.bearer_token_file", token.status().message());
    } else if (shared) {
      problems.warn(
          "metrics.bearer_token_file",
          metrics.bearer_token_file.string() + " can be read by its group or others: chmod 600 it");
    }
  }
  if (listen.has_value() && !listen->loopback &&
      !(metrics.tls && (metrics.client_certificate || token_given))) {
    problems.add("metrics.listen",
                 "\"" + metrics.listen +
                     "\" is not a loopback address: it needs metrics.tls = true and "
                     "metrics.client_certificate = true or a metrics.bearer_token_file (a "
                     "metrics port is never an open door)");
  }
}

}  // namespace detail
}  // namespace numadir::server
