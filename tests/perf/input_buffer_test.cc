// Tests for perf/detail/input_buffer.h: bytes in at the end, PDUs out at the front, and room made
// by compacting before growing.
#include "perf/detail/input_buffer.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string_view>

namespace numadir::perf::detail {
namespace {

void put(InputBuffer& buffer, std::string_view bytes) {
  buffer.make_room();
  REQUIRE(bytes.size() <= buffer.free_bytes());
  std::memcpy(buffer.free_space(), bytes.data(), bytes.size());
  buffer.commit(bytes.size());
}

TEST_CASE("InputBuffer: a full buffer compacts a partial PDU to the front before it grows") {
  InputBuffer buffer;
  buffer.allocate_once(4);
  buffer.allocate_once(64);  // Already allocated: no change.
  put(buffer, "abcd");
  CHECK(buffer.free_bytes() == 0);
  buffer.consume(3);
  CHECK(buffer.unconsumed() == "d");
  buffer.make_room();  // Compacts: "d" moves to the front, the size stays 4.
  CHECK(buffer.unconsumed() == "d");
  CHECK(buffer.free_bytes() == 3);
  put(buffer, "efg");
  buffer.make_room();  // Full of unconsumed bytes: doubles.
  CHECK(buffer.unconsumed() == "defg");
  CHECK(buffer.free_bytes() == 4);
}

TEST_CASE("InputBuffer: consuming everything starts the next read at the front") {
  InputBuffer buffer;
  buffer.allocate_once(8);
  put(buffer, "xyz");
  buffer.consume(3);
  CHECK(buffer.empty());
  CHECK(buffer.free_bytes() == 8);
  put(buffer, "12");
  buffer.clear();
  CHECK(buffer.empty());
  CHECK(buffer.unconsumed().empty());
  CHECK(buffer.free_bytes() == 8);
}

}  // namespace
}  // namespace numadir::perf::detail
