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

constexpr std::size_t kMax = 1024;

// A read in a round of its own (the listener's next epoll_wait).
void read_alone(InputStamps& stamps, std::string_view input) {
  std::int64_t round_ns = 0;
  stamps.after_read(input, kMax, round_ns);
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
  SUBCASE("a read that completes nothing more changes nothing") {
    after(first);
    input += three.substr(2, 1);
    read_alone(stamps, input);
    CHECK(stamps.stamp_of(one.size()) == first);
    CHECK(stamps.stamp_of(input.size() + three.size() - 3) == 0);
  }
  SUBCASE("cleared nothing is stamped") {
    stamps.clear();
    CHECK(stamps.stamp_of(one.size()) == 0);
  }
}

TEST_CASE("InputStamps: past the reads it keeps the later PDUs share the last read's time") {
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
  // Three reads kept: the first two with their own times, the rest with the third's.
  const std::size_t each = pdu(1).size();
  CHECK(stamps.stamp_of(each) == times[0]);
  CHECK(stamps.stamp_of(2 * each) == times[1]);
  CHECK(times[1] > times[0]);
  CHECK(times[2] > times[1]);
  CHECK(times[3] == times[2]);
  CHECK(times[4] == times[2]);
}

TEST_CASE("InputStamps: a malformed or oversized frame ends the look without a stamp") {
  InputStamps stamps;
  SUBCASE("malformed") {
    const std::string input = "GET / HTTP/1.1\r\n\r\n";
    read_alone(stamps, input);
    CHECK(stamps.stamp_of(input.size()) == 0);
  }
  SUBCASE("over max_pdu_bytes") {
    const std::string input("\x30\x82\x10\x00", 4);  // Announces 4096 bytes.
    read_alone(stamps, input);
    CHECK(stamps.stamp_of(input.size()) == 0);
  }
  SUBCASE("a whole PDU before a malformed one is stamped") {
    const std::string one = pdu(1);
    read_alone(stamps, one + "\xff\xff");
    CHECK(stamps.stamp_of(one.size()) != 0);
    CHECK(stamps.stamp_of(one.size() + 2) == 0);
  }
}

TEST_CASE(
    "InputStamps: the reads of one round share its time and a round that completes nothing "
    "reads no clock") {
  const std::string one = pdu(1), two = pdu(2);
  InputStamps first_connection;
  InputStamps second_connection;
  std::int64_t round_ns = 0;
  first_connection.after_read(one.substr(0, 2), kMax, round_ns);
  CHECK(round_ns == 0);  // Nothing complete: no clock read.
  first_connection.after_read(one, kMax, round_ns);
  const std::int64_t stamped = round_ns;
  CHECK(stamped != 0);
  CHECK(first_connection.stamp_of(one.size()) == stamped);
  after(stamped);
  second_connection.after_read(two, kMax, round_ns);  // Later in the same round.
  CHECK(round_ns == stamped);
  CHECK(second_connection.stamp_of(two.size()) == stamped);
}

}  // namespace
}  // namespace numadir::listener
