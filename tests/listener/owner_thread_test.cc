// Tests of OwnerThread, the debug-build check behind "// Owner:" marks.
#include "listener/owner_thread.h"

#include <doctest/doctest.h>

#include <thread>

namespace numadir::listener {
namespace {

TEST_CASE("OwnerThread: only the thread that claimed it is the owner in debug builds") {
  OwnerThread owner;
  owner.claim();
  CHECK(owner.is_owner());
  bool other_is_owner = true;
  std::thread other([&] { other_is_owner = owner.is_owner(); });
  other.join();
#ifdef NDEBUG
  CHECK(other_is_owner);  // Release builds check nothing.
#else
  CHECK_FALSE(other_is_owner);
#endif
  std::thread claimer([&] { owner.claim(); });  // A new owner: the old one is not any more.
  claimer.join();
#ifndef NDEBUG
  CHECK_FALSE(owner.is_owner());
#endif
}

}  // namespace
}  // namespace numadir::listener
