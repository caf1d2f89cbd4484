// server/commands/ldap_client.cc: see ldap_client.h.
#include "server/commands/ldap_client.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "listener/wire/framing.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;

namespace {

struct HostPort {
  std::string host;
  std::string port;
};

Result<HostPort> parse_url(std::string_view url) {
  constexpr std::string_view kScheme = "ldap://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return invalid_argument("\"" + std::string(url) + "\": the URL must be ldap://HOST[:PORT]");
  }
  std::string_view rest = url.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') {
    rest.remove_suffix(1);
  }
  HostPort out;
  std::string_view port;
  if (rest.substr(0, 1) == "[") {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return invalid_argument("\"" + std::string(url) + "\": no ']' after the IPv6 address");
    }
    out.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty() && rest[0] != ':') {
      return invalid_argument("\"" + std::string(url) + "\": ':' must follow ']'");
    }
    port = rest.empty() ? std::string_view() : rest.substr(1);
  } else {
    const std::size_t colon = rest.find(':');
    out.host = std::string(rest.substr(0, colon));
    port = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  if (out.host.empty()) {
    out.host = "127.0.0.1";
  }
  unsigned number = 389;
  if (!port.empty()) {
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (ec != std::errc() || end != port.data() + port.size() || number == 0 || number > 65535) {
      return invalid_argument("\"" + std::string(url) + "\": bad port");
    }
  }
  out.port = std::to_string(number);
  return out;
}

// Returns: "<code> (<diagnostic>)" for a failed result.
std::string describe(const listener::wire::LdapResult& result) {
  std::string out = "result code " + std::to_string(static_cast<int>(result.code));
  if (!result.diagnostic_message.empty()) {
    out += " (" + std::string(result.diagnostic_message) + ")";
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<LdapClient>> LdapClient::connect(std::string_view url, int timeout_ms) {
  Result<HostPort> where = parse_url(url);
  if (!where.ok()) {
    return where.status();
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(where->host.c_str(), where->port.c_str(), &hints, &found);
      rc != 0) {
    return Status(StatusCode::kIo, std::string(url) + ": " + gai_strerror(rc));
  }
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* address = found; address != nullptr && fd < 0; address = address->ai_next) {
    fd = socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, address->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    if (::connect(fd, address->ai_addr, address->ai_addrlen) != 0) {
      last_error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) {
    return Status(StatusCode::kIo, std::string(url) + ": " + last_error);
  }
  timeval timeout{};
  timeout.tv_sec = timeout_ms / 1000;
  timeout.tv_usec = (timeout_ms % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  return std::unique_ptr<LdapClient>(new LdapClient(fd));
}

LdapClient::~LdapClient() { ::close(fd_); }

Status LdapClient::send(const LdapMessage& message) {
  writer_.clear();
  listener::wire::encode_message(message, writer_);
  std::string_view bytes = writer_.view();
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return Status(StatusCode::kIo, std::string("send: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status();
}

Status LdapClient::receive(LdapMessage& message) {
  for (;;) {
    const listener::wire::Frame frame = listener::wire::frame_pdu(buffer_);
    if (frame.state == listener::wire::FrameState::kComplete) {
      pdu_.assign(buffer_, 0, frame.pdu_bytes);
      buffer_.erase(0, frame.pdu_bytes);
      return listener::wire::decode_message(pdu_, message);
    }
    if (frame.state != listener::wire::FrameState::kNeedMore) {
      return malformed("the server sent something that is not an LDAP message");
    }
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n == 0) {
      return Status(StatusCode::kIo, "the server closed the connection");
    }
    if (n < 0) {
      return Status(StatusCode::kIo, std::string("receive: ") + std::strerror(errno));
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

Status LdapClient::simple_bind(std::string_view dn, std::string_view password) {
  LdapMessage request;
  request.reset(next_id_++, ProtocolOp::kBindRequest);
  request.bind_request.name = dn;
  request.bind_request.simple_password = password;
  NUMADIR_RETURN_IF_ERROR(send(request));
  LdapMessage response;
  NUMADIR_RETURN_IF_ERROR(receive(response));
  if (response.op != ProtocolOp::kBindResponse) {
    return malformed("the server answered a bind with " +
                     std::string(listener::wire::protocol_op_name(response.op)));
  }
  if (response.result.code != ResultCode::kSuccess) {
    return invalid_argument("bind refused: " + describe(response.result));
  }
  return Status();
}

Result<std::vector<schema::Entry>> LdapClient::search(
    std::string_view base, listener::wire::SearchScope scope, std::string_view filter,
    const std::vector<std::string_view>& attributes) {
  Result<schema::Filter> parsed = schema::Filter::parse(filter);
  if (!parsed.ok()) {
    return invalid_argument("filter " + std::string(filter) + ": " + parsed.status().message());
  }
  LdapMessage request;
  const std::int32_t id = next_id_++;
  request.reset(id, ProtocolOp::kSearchRequest);
  request.search_request.base_object = base;
  request.search_request.scope = scope;
  request.search_request.filter = std::move(*parsed);
  request.search_request.attributes = attributes;
  NUMADIR_RETURN_IF_ERROR(send(request));
  std::vector<schema::Entry> entries;
  LdapMessage response;
  for (;;) {
    NUMADIR_RETURN_IF_ERROR(receive(response));
    if (response.message_id != id) {
      continue;  // A notice of disconnection comes next, or nothing of ours.
    }
    if (response.op == ProtocolOp::kSearchResultEntry) {
      schema::Entry entry;
      entry.dn = std::string(response.search_entry.object_name);
      const listener::wire::AttributeList& list = response.search_entry.attributes;
      for (const auto& attribute : list.attributes()) {
        schema::EntryAttribute copy{std::string(attribute.type), {}};
        for (std::string_view value : list.values(attribute)) {
          copy.values.emplace_back(value);
        }
        entry.attributes.push_back(std::move(copy));
      }
      entries.push_back(std::move(entry));
      continue;
    }
    if (response.op == ProtocolOp::kSearchResultReference) {
      continue;
    }
    if (response.op != ProtocolOp::kSearchResultDone) {
      return malformed("the server answered a search with " +
                       std::string(listener::wire::protocol_op_name(response.op)));
    }
    if (response.result.code == ResultCode::kNoSuchObject) {
      return Status(StatusCode::kNoSuchObject, std::string(base) + ": no such object");
    }
    if (response.result.code != ResultCode::kSuccess) {
      return invalid_argument("search of " + std::string(base) + ": " + describe(response.result));
    }
    return entries;
  }
}

}  // namespace numadir::server
