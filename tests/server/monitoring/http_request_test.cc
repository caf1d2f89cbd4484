// Tests for the metrics endpoint's HTTP request parser (server/monitoring/http_request.h): a
// request whole and byte by byte, pipelined requests, the headers it reads (case-insensitive),
// keep-alive by version and Connection, and every bad input with the status it is answered.
#include "server/monitoring/http_request.h"

#include <doctest/doctest.h>

#include <string>

namespace numadir::server {
namespace {

HttpParseResult parse_all(std::string_view text, HttpRequest& out) {
  HttpRequestParser parser;
  return parser.parse(text, out);
}

int status_of(std::string_view text) {
  HttpRequest request;
  const HttpParseResult result = parse_all(text, request);
  return result.state == HttpParseState::kError ? result.status : 0;
}

TEST_CASE("HttpRequestParser: a Prometheus scrape") {
  const std::string text =
      "GET /metrics?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9330\r\nUser-Agent: Prometheus/2.42.0\r\n"
      "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n"
      "Accept-Encoding: gzip\r\nauthorization: Bearer abc\r\n\r\n";
  HttpRequest request;
  const HttpParseResult result = parse_all(text, request);
  REQUIRE(result.state == HttpParseState::kComplete);
  CHECK(result.consumed == text.size());
  CHECK(request.method == "GET");
  CHECK(request.target == "/metrics");
  CHECK(request.minor == 1);
  CHECK(request.host == "127.0.0.1:9330");
  CHECK(request.authorization == "Bearer abc");
  CHECK(request.accepts_openmetrics);
  CHECK(request.accept.starts_with("application/openmetrics-text"));
  CHECK(request.keep_alive);
}

TEST_CASE("HttpRequestParser: byte by byte it needs more until the blank line") {
  const std::string text = "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  HttpRequestParser parser;
  HttpRequest request;
  for (std::size_t n = 0; n < text.size(); ++n) {
    CAPTURE(n);
    REQUIRE(parser.parse(std::string_view(text).substr(0, n), request).state ==
            HttpParseState::kNeedMore);
  }
  const HttpParseResult result = parser.parse(text, request);
  REQUIRE(result.state == HttpParseState::kComplete);
  CHECK(result.consumed == text.size());
  CHECK(request.method == "HEAD");
  CHECK_FALSE(request.keep_alive);
  CHECK_FALSE(request.accepts_openmetrics);
}

TEST_CASE("HttpRequestParser: pipelined requests are taken one at a time") {
  const std::string first = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string second = "GET /b HTTP/1.0\nAccept: text/plain\n\n";
  std::string buffer = first + second + "GET /c";
  HttpRequestParser parser;
  HttpRequest request;
  HttpParseResult result = parser.parse(buffer, request);
  REQUIRE(result.state == HttpParseState::kComplete);
  CHECK(result.consumed == first.size());
  CHECK(request.target == "/a");
  parser.reset();
  buffer.erase(0, result.consumed);
  result = parser.parse(buffer, request);
  REQUIRE(result.state == HttpParseState::kComplete);
  CHECK(result.consumed == second.size());
  CHECK(request.target == "/b");
  CHECK(request.minor == 0);
  CHECK_FALSE(request.keep_alive);  // HTTP/1.0 without keep-alive.
  parser.reset();
  buffer.erase(0, result.consumed);
  CHECK(parser.parse(buffer, request).state == HttpParseState::kNeedMore);
}

TEST_CASE("HttpRequestParser: keep-alive by version and Connection") {
  HttpRequest request;
  REQUIRE(parse_all("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", request).state ==
          HttpParseState::kComplete);
  CHECK(request.keep_alive);
  REQUIRE(parse_all("GET / HTTP/1.1\r\nHost: h\r\nCONNECTION: te, Close\r\n\r\n", request).state ==
          HttpParseState::kComplete);
  CHECK_FALSE(request.keep_alive);
  REQUIRE(
      parse_all("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", request).state ==
      HttpParseState::kComplete);
  CHECK(request.keep_alive);
  CHECK(request.target == "/");
}

TEST_CASE("HttpRequestParser: the absolute form gives its path") {
  HttpRequest request;
  REQUIRE(parse_all("GET http://h:9330/metrics?a HTTP/1.1\r\nHost: h\r\n\r\n", request).state ==
          HttpParseState::kComplete);
  CHECK(request.target == "/metrics");
  REQUIRE(parse_all("GET https://h HTTP/1.1\r\nHost: h\r\n\r\n", request).state ==
          HttpParseState::kComplete);
  CHECK(request.target == "/");
}

TEST_CASE("HttpRequestParser: malformed requests are 400") {
  for (const char* bad : {
           "GET\r\n\r\n",                                   // No target or version.
           "GET /metrics\r\n\r\n",                          // HTTP/0.9.
           "GET  /metrics HTTP/1.1\r\nHost: h\r\n\r\n",     // Two spaces.
           "GET /metrics HTTP/1.1 \r\nHost: h\r\n\r\n",     // Trailing space.
           "G(T /metrics HTTP/1.1\r\nHost: h\r\n\r\n",      // Not a token.
           "GET metrics HTTP/1.1\r\nHost: h\r\n\r\n",       // Not origin-form.
           "GET /m\x01 HTTP/1.1\r\nHost: h\r\n\r\n",        // A control in the target.
           "GET /metrics HTTP/1.x\r\nHost: h\r\n\r\n",      // Not a version.
           "GET /metrics http/1.1\r\nHost: h\r\n\r\n",      // Lower case.
           "GET /metrics HTTP/1.1\r\n\r\n",                 // HTTP/1.1 without Host.
           "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",  // Two Hosts.
           "GET / HTTP/1.1\r\nHost : h\r\n\r\n",            // Space before the colon.
           "GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n",  // obs-fold.
           "GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n",  // No colon.
           "GET / HTTP/1.1\r\nHost: h\r\n: empty\r\n\r\n",  // Empty name.
           "GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n",       // A bare CR.
           "GET / HTTP/1.1\r\nHost: h\x7f\r\n\r\n",         // DEL in a value.
           "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",  // A body.
           "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: -0\r\n\r\n",
           "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n",
       }) {
    CAPTURE(bad);
    CHECK(status_of(bad) == 400);
  }
  // A NUL byte is a control character too (it cannot be in a C string literal's middle above).
  CHECK(status_of(std::string("GET / HTTP/1.1\r\nHost: h\0x\r\n\r\n", 29)) == 400);
}

TEST_CASE("HttpRequestParser: other versions are 505 and bodies by Transfer-Encoding 501") {
  CHECK(status_of("GET / HTTP/2.0\r\nHost: h\r\n\r\n") == 505);
  CHECK(status_of("GET / HTTP/1.2\r\nHost: h\r\n\r\n") == 505);
  CHECK(status_of("GET / HTTP/0.9\r\n\r\n") == 505);
  CHECK(status_of("GET / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n") == 501);
}

TEST_CASE("HttpRequestParser: a head over 8 KiB is 431") {
  const std::string start = "GET / HTTP/1.1\r\nHost: h\r\nX-Big: ";
  SUBCASE("one long header, still coming") {
    HttpRequestParser parser;
    HttpRequest request;
    const std::string text = start + std::string(HttpRequestParser::kMaxHeadBytes, 'a');
    const HttpParseResult result = parser.parse(text, request);
    CHECK(result.state == HttpParseState::kError);
    CHECK(result.status == 431);
  }
  SUBCASE("a complete head one byte too long") {
    const std::string filler(HttpRequestParser::kMaxHeadBytes - start.size() - 4 + 1, 'a');
    CHECK(status_of(start + filler + "\r\n\r\n") == 431);
    const std::string fits(HttpRequestParser::kMaxHeadBytes - start.size() - 4, 'a');
    CHECK(status_of(start + fits + "\r\n\r\n") == 0);
  }
  SUBCASE("many small headers fed in pieces") {
    HttpRequestParser parser;
    HttpRequest request;
    std::string text = start + "x\r\n";
    HttpParseResult result;
    while (text.size() < 3 * HttpRequestParser::kMaxHeadBytes) {
      text += "A: b\r\n";
      result = parser.parse(text, request);
      if (result.state != HttpParseState::kNeedMore) {
        break;
      }
    }
    CHECK(result.state == HttpParseState::kError);
    CHECK(result.status == 431);
    CHECK(text.size() <= HttpRequestParser::kMaxHeadBytes + 6);
  }
  SUBCASE("empty lines only") { CHECK(status_of(std::string(9000, '\n')) == 431); }
}

}  // namespace
}  // namespace numadir::server
