// perf/floor_server_main.cc: the `floor-server` program, a canned LDAP responder (see
// perf/floor_server.h) for measuring the ceiling of the request path.
//
//   floor-server --listen 127.0.0.1:0 --threads 4
//
// Prints "listening on HOST:PORT" as its first line (flushed), so scripts can read the port;
// exits 0 on SIGTERM / SIGINT, 2 on a usage error, 1 when it cannot listen.
//
// Thread contract: the main thread parses options, starts the server's threads (SIGTERM and
// SIGINT blocked in all of them) and waits for a signal with sigwait, then stops the server.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <string>

#include "perf/floor_server.h"

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0";
  int threads = 1;
  CLI::App app{"floor-server: canned LDAP answers, the ceiling of the request path"};
  app.add_option("--listen", listen, "IPv4 address:port (port 0 = any free port)")
      ->capture_default_str();
  app.add_option("--threads", threads, "listener threads, each with its own socket")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : 2;
  }
  numadir::perf::FloorServerConfig config;
  config.threads = threads;
  const std::size_t colon = listen.rfind(':');
  unsigned port = 0;
  const char* port_end = listen.data() + listen.size();
  if (colon == std::string::npos ||
      std::from_chars(listen.data() + colon + 1, port_end, port).ptr != port_end ||
      colon + 1 == listen.size() || port > 65535) {
    std::fprintf(stderr, "floor-server: --listen wants HOST:PORT, got '%s'\n", listen.c_str());
    return 2;
  }
  config.host = listen.substr(0, colon);
  config.port = static_cast<std::uint16_t>(port);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // Inherited by the server's threads.

  auto server = numadir::perf::FloorServer::open(config);
  if (!server.ok()) {
    std::fprintf(stderr, "floor-server: %s\n", server.status().message().c_str());
    return server.status().code() == numadir::StatusCode::kInvalidArgument ? 2 : 1;
  }
  (*server)->start();
  std::printf("listening on %s:%u\n", config.host.c_str(), (*server)->port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&signals, &signal);
  (*server)->stop();
  return 0;
}
