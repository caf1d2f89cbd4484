// libFuzzer target for parse_listen_url (listener/listen_url.h). Any input may be rejected; an
// accepted one must keep its properties, or the target traps:
//   - parse(to_string()) succeeds and gives the same scheme, host, port and path;
//   - an ldapi URL's path is absolute, fits a sockaddr_un and holds no NUL byte.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "listener/listen_url.h"

namespace {

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto url = numadir::listener::parse_listen_url(text);
  if (!url.ok()) {
    return 0;
  }
  if (url->is_local()) {
    check(!url->path.empty() && url->path.front() == '/');
    check(url->path.size() <= numadir::listener::kMaxLdapiPathBytes);
    check(url->path.find('\0') == std::string_view::npos);
  }
  auto again = numadir::listener::parse_listen_url(url->to_string());
  check(again.ok());
  check(again->scheme == url->scheme);
  check(again->host == url->host);
  check(again->port == url->port);
  check(again->path == url->path);
  return 0;
}
