// server/monitoring/http_request.cc: the HTTP/1.1 request head parser (http_request.h). Strict
// where strictness costs a client nothing (RFC 9112: no whitespace before a header's colon, no
// line folding, no control characters), lenient where RFC 9112 allows it (a bare LF ends a line;
// empty lines before the request line are skipped).
//
// Thread contract: as http_request.h.
#include "server/monitoring/http_request.h"

namespace numadir::server {
namespace {

HttpParseResult error(int status) { return {HttpParseState::kError, 0, status}; }

// RFC 9110 5.6.2 tchar.
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    return true;
  }
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view text) {
  if (text.empty()) {
    return false;
  }
  for (const char c : text) {
    if (!is_tchar(c)) {
      return false;
    }
  }
  return true;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

// Whether `text` holds `needle`, ignoring case.
bool icontains(std::string_view text, std::string_view needle) {
  if (needle.size() > text.size()) {
    return false;
  }
  for (std::size_t i = 0; i + needle.size() <= text.size(); ++i) {
    if (iequals(text.substr(i, needle.size()), needle)) {
      return true;
    }
  }
  return false;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  return text;
}

// Splits off the next line of `rest` (ended by LF or CRLF), without its ending. Returns: false
// when a CR stands anywhere but right before the LF.
bool next_line(std::string_view& rest, std::string_view& line) {
  const std::size_t lf = rest.find('\n');
  line = rest.substr(0, lf);  // The head ends with a blank line: there is always an LF.
  rest.remove_prefix(lf == std::string_view::npos ? rest.size() : lf + 1);
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line.find('\r') == std::string_view::npos;
}

// "close" / "keep-alive" in a Connection value (a comma-separated list of tokens).
void read_connection(std::string_view value, bool& close, bool& keep_alive) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view option = trim(value.substr(0, comma));
    if (iequals(option, "close")) {
      close = true;
    } else if (iequals(option, "keep-alive")) {
      keep_alive = true;
    }
    value.remove_prefix(comma == std::string_view::npos ? value.size() : comma + 1);
  }
}

}  // namespace

HttpParseResult HttpRequestParser::parse(std::string_view buffer, HttpRequest& out) {
  // RFC 9112 2.2: empty lines before the request line are ignored; they count toward the limit.
  std::size_t start = 0;
  while (start < buffer.size() && (buffer[start] == '\r' || buffer[start] == '\n')) {
    ++start;
  }
  // The head ends at the first LF followed by a blank line ("\n\n" or "\n\r\n").
  std::size_t at = scanned_ > start ? scanned_ : start;
  const std::size_t limit = buffer.size() < kMaxHeadBytes ? buffer.size() : kMaxHeadBytes;
  for (; at < limit; ++at) {
    if (buffer[at] != '\n') {
      continue;
    }
    std::size_t end = 0;
    if (at + 1 < buffer.size() && buffer[at + 1] == '\n') {
      end = at + 2;
    } else if (at + 2 < buffer.size() && buffer[at + 1] == '\r' && buffer[at + 2] == '\n') {
      end = at + 3;
    } else if (at + 2 >= buffer.size()) {
      break;  // Its blank line may be on its way: look at this LF again with more bytes.
    } else {
      continue;
    }
    if (end > kMaxHeadBytes) {
      return error(431);
    }
    HttpParseResult result = parse_head(buffer.substr(start, end - start), out);
    if (result.state == HttpParseState::kComplete) {
      result.consumed = end;
    }
    return result;
  }
  scanned_ = at;
  if (buffer.size() >= kMaxHeadBytes && at >= limit) {
    return error(431);
  }
  return {};
}

HttpParseResult HttpRequestParser::parse_head(std::string_view head, HttpRequest& out) {
  std::string_view line;
  if (!next_line(head, line)) {
    return error(400);
  }
  // request-line = method SP request-target SP HTTP-version
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return error(400);
  }
  HttpRequest request;
  request.method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(request.method) || target.empty()) {
    return error(400);
  }
  for (const char c : target) {
    if (c <= ' ' || c >= 0x7f) {
      return error(400);
    }
  }
  if (version.size() != 8 || !version.starts_with("HTTP/") || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return error(400);
  }
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    return error(505);
  }
  request.minor = static_cast<std::uint8_t>(version[7] - '0');
  // absolute-form ("http://host:port/path?q", as a proxy is sent): only its path matters here.
  if (target.starts_with("http://") || target.starts_with("https://")) {
    const std::size_t scheme_end = target.find("://") + 3;
    const std::size_t slash = target.find('/', scheme_end);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  } else if (target != "*" && !target.starts_with('/')) {
    return error(400);
  }
  request.target = target.substr(0, target.find('?'));

  bool close = false;
  bool keep_alive = false;
  bool host_seen = false;
  bool authorization_seen = false;
  bool accept_seen = false;
  for (;;) {
    if (!next_line(head, line)) {
      return error(400);
    }
    if (line.empty()) {
      break;  // The blank line: the head's end.
    }
    const std::size_t colon = line.find(':');
    // No whitespace between the name and its colon (RFC 9112 5.1), and no obs-fold (5.2).
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
      return error(400);
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    for (const char c : value) {
      const auto byte = static_cast<unsigned char>(c);
      if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
        return error(400);
      }
    }
    if (iequals(name, "host")) {
      if (host_seen) {
        return error(400);  // RFC 9112 3.2: more than one Host is a 400.
      }
      host_seen = true;
      request.host = value;
    } else if (iequals(name, "authorization")) {
      if (authorization_seen) {
        return error(400);
      }
      authorization_seen = true;
      request.authorization = value;
    } else if (iequals(name, "accept")) {
      if (!accept_seen) {
        request.accept = value;
        accept_seen = true;
      }
      request.accepts_openmetrics =
          request.accepts_openmetrics || icontains(value, "application/openmetrics-text");
    } else if (iequals(name, "connection")) {
      read_connection(value, close, keep_alive);
    } else if (iequals(name, "transfer-encoding")) {
      return error(501);
    } else if (iequals(name, "content-length")) {
      // No request of this endpoint has a body; a body's bytes would be read as the next
      // request, so anything but 0 is refused.
      if (value.empty() || value.find_first_not_of('0') != std::string_view::npos) {
        return error(400);
      }
    }
  }
  if (request.minor == 1 && !host_seen) {
    return error(400);  // RFC 9112 3.2: an HTTP/1.1 request without Host is a 400.
  }
  request.keep_alive = !close && (request.minor == 1 || keep_alive);
  out = request;
  return {HttpParseState::kComplete, 0, 0};
}

}  // namespace numadir::server
