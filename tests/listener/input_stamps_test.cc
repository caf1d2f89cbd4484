// Tests of InputStamps: which read's time each PDU a connection read gets.
#include "listener/input_stamps.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "listener/wire/ber_writer.h"
#include "listener/wire/message_encoder.h"
#include "threadpool/thread_counters.h"

namespace numadir::listener {
namespace {

// Returns: the bytes of an UnbindRequest with message ID `id` (a whole PDU).
std::string pdu(std::int32_t id) {
  wire::LdapMessage message;
  message.reset(id, wire::ProtocolOp::kUnbindRequest);
  wire::BerWriter writer;
  wire::encode_message(message, writer);
  return std::string(writer.view());
}

// Spins until the steady clock has moved past `ns`, so two stamps differ.
void after(std::int64_t ns) {
  while (static_cast<std::int64_t>(threadpool::steady_ns()) <= ns) {
  }
}

// A read in a round of its own (the listener's next epoll_wait), the input now `input`.
void read_alone(InputStamps& stamps, std::string_view input) {
  std::int64_t round_ns = 0;
  stamps.after_read(input.size(), round_ns);
}

TEST_CASE("InputStamps: the PDUs one read completes share its time and a partial one gets none") {
  InputStamps stamps;
  const std::string one = pdu(1), two = pdu(2), three = pdu(3);
  const auto before = static_cast<std::int64_t>(threadpool::steady_ns());
  std::string input = one + two + three.substr(0, 2);
  read_alone(stamps, input);
  const std::int64_t first = stamps.stamp_of(one.size());
  CHECK(first >= before);
  CHECK(first <= static_cast<std::int64_t>(threadpool::steady_ns()));
  CHECK(stamps.stamp_of(one.size() + two.size()) == first);
  CHECK(stamps.stamp_of(input.size() + three.size() - 2) == 0);  // Not complete yet.

  SUBCASE("the read that completes the partial one gives it its own time") {
    after(first);
    input += three.substr(2);
    read_alone(stamps, input);
    const std::int64_t third = stamps.stamp_of(input.size());
    CHECK(third > first);
    CHECK(stamps.stamp_of(one.size()) == first);
    SUBCASE("framing the first two keeps the third's time at its new offset") {
      stamps.consumed(one.size() + two.size());
      input.erase(0, one.size() + two.size());
      CHECK(stamps.stamp_of(input.size()) == third);
      stamps.consumed(input.size());
      CHECK(stamps.stamp_of(three.size()) == 0);
    }
  }
  SUBCASE("a read that does not complete it yet does not give it that read's time") {
    after(first);
    input += three.substr(2, 1);
    read_alone(stamps, input);
    const std::int64_t partial = stamps.stamp_of(input.size());
    CHECK(partial > first);
    after(partial);
    input += three.substr(3);
    read_alone(stamps, input);
    CHECK(stamps.stamp_of(input.size()) > partial);  // The read that completed it.
    CHECK(stamps.stamp_of(one.size()) == first);
  }
  SUBCASE("cleared nothing is stamped") {
    stamps.clear();
    CHECK(stamps.stamp_of(one.size()) == 0);
  }
}

TEST_CASE("InputStamps: past the reads it keeps the oldest merge and the newest keep their time") {
  InputStamps stamps;
  std::string input;
  std::int64_t last = 0;
  std::vector<std::int64_t> times;
  for (std::int32_t id = 1; id <= 5; ++id) {
    after(last);
    input += pdu(id);
    read_alone(stamps, input);
    last = stamps.stamp_of(input.size());
    REQUIRE(last != 0);
    times.push_back(last);
  }
  // Three reads kept: the oldest three PDUs under the first read's time, the last two their own.
  const std::size_t each = pdu(1).size();
  CHECK(stamps.stamp_of(each) == times[0]);
  CHECK(stamps.stamp_of(2 * each) == times[0]);
  CHECK(stamps.stamp_of(3 * each) == times[0]);
  CHECK(stamps.stamp_of(4 * each) == times[3]);
  CHECK(stamps.stamp_of(5 * each) == times[4]);
  for (std::size_t i = 1; i < times.size(); ++i) {
    CHECK(times[i] > times[i - 1]);
  }
}

TEST_CASE("InputStamps: the reads of one round share one clock read") {
  const std::string one = pdu(1), two = pdu(2);
  InputStamps first_connection;
  InputStamps second_connection;
  std::int64_t round_ns = 0;
  first_connection.after_read(0, round_ns);
  CHECK(round_ns == 0);                      // Nothing read: no clock read.
  first_connection.after_read(2, round_ns);  // A partial PDU.
  const std::int64_t stamped = round_ns;
  CHECK(stamped != 0);
  first_connection.after_read(one.size(), round_ns);
  CHECK(round_ns == stamped);
  CHECK(first_connection.stamp_of(one.size()) == stamped);
  after(stamped);
  second_connection.after_read(two.size(), round_ns);  // Later in the same round.
  CHECK(round_ns == stamped);
  CHECK(second_connection.stamp_of(two.size()) == stamped);
}

}  // namespace
}  // namespace numadir::listener
