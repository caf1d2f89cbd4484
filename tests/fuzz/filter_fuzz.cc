// tests/fuzz/filter_fuzz.cc: libFuzzer target for Filter::parse (RFC 4515 string filters).
//
// Every input must parse or fail cleanly; a filter that parses must print (to_string) to text
// that parses back to an equal Filter and prints the same again. Reusing one Filter through
// clear() and the builder is exercised too, so store() block reuse runs under ASan.
//
// Thread contract: libFuzzer calls LLVMFuzzerTestOneInput from one thread.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/filter.h"

namespace {

using numadir::schema::Filter;

// Rebuilds `source` into `target` (cleared first) through the builder, as a decoder would,
// storing every string, so that the result must equal `source`.
void rebuild(const Filter& source, Filter& target) {
  target.clear();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> open;  // (source end, target index)
  for (std::uint32_t i = 0; i < source.size(); ++i) {
    while (!open.empty() && open.back().first <= i) {
      target.close(open.back().second);
      open.pop_back();
    }
    const auto& node = source.node(i);
    const std::uint32_t index =
        target.open(node.kind, target.store(node.attribute), target.store(node.value));
    target.set_extensible(index, target.store(node.matching_rule), node.dn_attributes);
    open.emplace_back(node.end, index);
  }
  while (!open.empty()) {
    target.close(open.back().second);
    open.pop_back();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  numadir::Result<Filter> parsed = Filter::parse(text);
  if (!parsed.ok()) {
    const auto code = parsed.status().code();
    if ((code != numadir::StatusCode::kMalformed && code != numadir::StatusCode::kLimitExceeded) ||
        parsed.status().message().rfind("filter: offset ", 0) != 0) {
      __builtin_trap();
    }
    return 0;
  }
  const std::string printed = parsed->to_string();
  numadir::Result<Filter> reparsed = Filter::parse(printed);
  if (!reparsed.ok() || !(*reparsed == *parsed) || reparsed->to_string() != printed) {
    __builtin_trap();
  }
  // Moving must keep stored views valid.
  Filter moved = std::move(*reparsed);
  if (!(moved == *parsed)) {
    __builtin_trap();
  }
  // A Filter reused across inputs, as a decoder reuses one per connection.
  static Filter reused;
  rebuild(moved, reused);
  if (!(reused == *parsed) || reused.to_string() != printed) {
    __builtin_trap();
  }
  return 0;
}
