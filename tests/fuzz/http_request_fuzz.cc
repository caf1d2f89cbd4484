// libFuzzer target for the metrics endpoint's HTTP request parser (server/monitoring/
// http_request.h). The input is a byte stream as a client would send it; it is parsed as the
// server does (requests one after another, pipelined), once whole and once fed in pieces whose
// sizes come from the input's first byte. Either way, or the target traps:
//   - both feeds give the same results (the incremental scan loses nothing);
//   - a complete request consumed at most its buffer and at most 8 KiB, its views point into the
//     buffer (but the static "/" of an absolute-form target without a path), its target
//     starts with '/' or is "*";
//   - an error is 400, 431, 501 or 505, and nothing is parsed past a need-more or an error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/monitoring/http_request.h"

namespace {

using numadir::server::HttpParseResult;
using numadir::server::HttpParseState;
using numadir::server::HttpRequest;
using numadir::server::HttpRequestParser;

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

bool inside(std::string_view view, std::string_view buffer) {
  return view.empty() || (view.data() >= buffer.data() &&
                          view.data() + view.size() <= buffer.data() + buffer.size());
}

// Parses `input` as a connection's stream, `step` bytes arriving at a time (0: all at once).
// Returns: each result's state, status and consumed, and each complete request's target.
std::vector<std::string> run(std::string_view input, std::size_t step) {
  std::vector<std::string> outcomes;
  HttpRequestParser parser;
  std::string buffer;
  std::size_t fed = 0;
  for (;;) {
    const std::size_t more = step == 0 ? input.size() - fed : std::min(step, input.size() - fed);
    buffer.append(input.substr(fed, more));
    fed += more;
    for (;;) {
      HttpRequest request;
      const HttpParseResult result = parser.parse(buffer, request);
      if (result.state == HttpParseState::kNeedMore) {
        break;
      }
      if (result.state == HttpParseState::kError) {
        check(result.status == 400 || result.status == 431 || result.status == 501 ||
              result.status == 505);
        outcomes.push_back("error " + std::to_string(result.status));
        return outcomes;
      }
      check(result.consumed > 0 && result.consumed <= buffer.size());
      check(result.consumed <= HttpRequestParser::kMaxHeadBytes);
      for (const std::string_view view :
           {request.method, request.target, request.accept, request.authorization, request.host}) {
        // The one view that may be elsewhere: "/" for an absolute-form target without a path.
        check(inside(view, std::string_view(buffer).substr(0, result.consumed)) ||
              (view.data() == request.target.data() && view == "/"));
      }
      check(request.target == "*" || request.target.starts_with('/'));
      check(request.minor <= 1);
      outcomes.push_back(std::string(request.method) + " " + std::string(request.target) + " " +
                         std::to_string(result.consumed) + (request.keep_alive ? " k" : " c"));
      parser.reset();
      buffer.erase(0, result.consumed);
    }
    if (fed == input.size()) {
      outcomes.push_back("need more " + std::to_string(buffer.size()));
      return outcomes;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::size_t step = data[0] % 16 + 1;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::vector<std::string> whole = run(input, 0);
  const std::vector<std::string> pieces = run(input, step);
  // Requests are parsed in order either way: the outcomes must be the same.
  check(whole == pieces);
  return 0;
}
