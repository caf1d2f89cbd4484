// server/monitoring/http_request.h: an incremental parser of HTTP/1.1 request heads (RFC 9112),
// for the metrics endpoint (metrics_server.h): the request line and the headers that endpoint
// needs (Accept, Authorization, Connection, Host), as views into the caller's buffer. It takes
// no body: Transfer-Encoding is answered 501 and a non-zero Content-Length 400. The head is
// limited to kMaxHeadBytes (431 beyond).
//
// Use: append the bytes read to one buffer and call parse() with all of it after each read. A
// complete request says how many bytes it took (the rest is the next request, when pipelined);
// then reset() and erase those bytes before the next parse().
//
// Thread contract: a parser is owned by one thread (the metrics server's); the views it hands
// out point into the buffer given to parse() and live as long as that buffer is unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace numadir::server {

// What one request's head says. Every view points into the buffer given to parse(), but the
// target of an absolute-form request without a path ("GET http://host HTTP/1.1"): a static "/".
struct HttpRequest {
  std::string_view method;           // "GET", "HEAD", ... (case-sensitive, as RFC 9110 says)
  std::string_view target;           // The path, without its query: "/metrics"
  std::uint8_t minor = 1;            // HTTP/1.<minor>: 0 or 1.
  std::string_view accept;           // The first Accept header's value (empty when none).
  bool accepts_openmetrics = false;  // Some Accept value names application/openmetrics-text.
  std::string_view authorization;    // Authorization's value (empty when none).
  std::string_view host;             // Host's value (empty when none).
  // Whether the connection stays open after the answer: HTTP/1.1 unless "Connection: close";
  // HTTP/1.0 only with "Connection: keep-alive".
  bool keep_alive = true;
};

enum class HttpParseState : std::uint8_t {
  kNeedMore,  // The head is not all there yet: read more and call again.
  kComplete,  // A request: `consumed` bytes of the buffer were its head.
  kError,     // Malformed or refused: answer `status` and close the connection.
};

struct HttpParseResult {
  HttpParseState state = HttpParseState::kNeedMore;
  std::size_t consumed = 0;  // kComplete: the bytes the request took.
  // kError: 400 (malformed), 431 (head over kMaxHeadBytes), 501 (Transfer-Encoding), 505
  // (a version other than HTTP/1.0 and HTTP/1.1).
  int status = 0;
};

class HttpRequestParser {
 public:
  // The most bytes a request's head (request line, headers, blank line) may take: 8 KiB.
  static constexpr std::size_t kMaxHeadBytes = 8192;

  // Parses the request at the start of `buffer`, which holds every byte received since the
  // previous request (or the connection's start). Sets `out` only when complete. Allocates
  // nothing; each byte is scanned for the head's end once over the calls of one request.
  // Returns: as HttpParseResult says.
  HttpParseResult parse(std::string_view buffer, HttpRequest& out);

  // Forgets the request parsed, for the next one.
  void reset() { scanned_ = 0; }

 private:
  // Parses a whole head `head` (up to and including its blank line).
  static HttpParseResult parse_head(std::string_view head, HttpRequest& out);

  std::size_t scanned_ = 0;  // Bytes of the buffer already searched for the head's end.
};

}  // namespace numadir::server
