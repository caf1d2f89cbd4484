// libFuzzer target for what the password policy reads from entries, which users and replication
// may fill with anything: GeneralizedTime values (pwdChangedTime, pwdAccountLockedTime,
// pwdFailureTime, ...) and pwdHistory values ("time#oid#length#value").
// Properties: a time that parses formats back to a string that parses to the same time; a
// history value that parses has a password of exactly the length it declares, and one made by
// make_history_value parses back to its password.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/operations/password_policy.h"

using numadir::server::format_generalized_time;
using numadir::server::make_history_value;
using numadir::server::parse_generalized_time;
using numadir::server::parse_history_value;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (const std::optional<std::int64_t> time = parse_generalized_time(input)) {
    const std::string again = format_generalized_time(*time, /*with_fraction=*/true);
    if (parse_generalized_time(again) != time) {
      __builtin_trap();
    }
  }
  if (const auto item = parse_history_value(input)) {
    if (item->password.data() + item->password.size() != input.data() + input.size()) {
      __builtin_trap();
    }
  }
  const std::string made = make_history_value(1'796'299'200'000'000, input);
  const auto back = parse_history_value(made);
  if (!back.has_value() || back->password != input) {
    __builtin_trap();
  }
  return 0;
}
