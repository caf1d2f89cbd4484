// libFuzzer target for what backend/change_state.cc reads that it did not write itself in this
// process: a CSN a provider sent (observe_csn, which every replicated entryCSN and cookie CSN
// goes through) and a stored session log record (decode_session_log_record). The first byte
// picks which. Any input may be rejected; otherwise the target traps unless:
//   - observe_csn: a CSN of the entryCSN form is followed by a greater one from next_csn, even
//     with the clock at the epoch;
//   - decode_session_log_record: a record that decodes encodes back to the same bytes, and one
//     that does not is a kStorage error.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/detail/change_state.h"
#include "backend/operational.h"

namespace {

using numadir::Result;
using numadir::StatusCode;
using numadir::backend::detail::SessionLogRecord;

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

bool all(std::string_view text, bool (*accept)(char)) {
  for (const char c : text) {
    if (!accept(c)) {
      return false;
    }
  }
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// "YYYYmmddHHMMSS.uuuuuuZ#cccccc#" and anything after, with a year before 2262 (the system clock
// ends in 2262), a real month, a day of 1..31 and a time.
bool csn_form(std::string_view csn) {
  if (csn.size() < 30 || csn[14] != '.' || csn[21] != 'Z' || csn[22] != '#' || csn[29] != '#' ||
      !all(csn.substr(0, 14), is_digit) || !all(csn.substr(15, 6), is_digit) ||
      !all(csn.substr(23, 6), is_hex)) {
    return false;
  }
  auto number = [&](std::size_t at) { return (csn[at] - '0') * 10 + (csn[at + 1] - '0'); };
  const int month = number(4), day = number(6), hour = number(8), minute = number(10),
            second = number(12);
  const int year = number(0) * 100 + number(2);
  return year <= 2261 && month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 &&
         minute <= 59 && second <= 60;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    numadir::backend::observe_csn(input);
    const std::string next = numadir::backend::next_csn(std::chrono::system_clock::time_point{}, 1);
    check(next.size() == 40);
    if (csn_form(input)) {
      check(next > input);
    }
    return 0;
  }
  Result<SessionLogRecord> record = numadir::backend::detail::decode_session_log_record(input);
  if (!record.ok()) {
    check(record.status().code() == StatusCode::kStorage);
    return 0;
  }
  std::string again;
  numadir::backend::detail::encode_session_log_record(record->kind, record->csn, record->uuid,
                                                      again);
  check(again == input);
  return 0;
}
