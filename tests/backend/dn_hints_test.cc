// Tests for backend/dn_hints.h: what get() returns after put(), slots shared by keys.
#include "backend/dn_hints.h"

#include <doctest/doctest.h>

#include <string>

namespace numadir::backend {
namespace {

using namespace std::literals;

TEST_CASE("DnHints: a key's hint is its last put until another key takes the slot") {
  DnHints hints(1024);
  CHECK(hints.get("dc=com\0dc=example"sv) == 0);
  hints.put("dc=com\0dc=example"sv, 7);
  CHECK(hints.get("dc=com\0dc=example"sv) == 7);
  hints.put("dc=com\0dc=example"sv, 9);
  CHECK(hints.get("dc=com\0dc=example"sv) == 9);

  DnHints one_slot(1);  // Every key shares the slot: the last put wins for all of them.
  one_slot.put("a", 1);
  one_slot.put("b", 2);
  CHECK(one_slot.get("a") == 2);
  CHECK(one_slot.get("b") == 2);
}

TEST_CASE("DnHints: keys spread over the slots") {
  DnHints hints(4096);
  for (EntryId id = 1; id <= 1000; ++id) {
    hints.put("dc=com\0ou=people\0uid=user"s + std::to_string(id), id);
  }
  int kept = 0;  // Keys whose slot no later key took.
  for (EntryId id = 1; id <= 1000; ++id) {
    kept += hints.get("dc=com\0ou=people\0uid=user"s + std::to_string(id)) == id ? 1 : 0;
  }
  CHECK(kept > 800);  // 1,000 keys in 4,096 slots: about 890 expected; 1 if all collided.
}

}  // namespace
}  // namespace numadir::backend
