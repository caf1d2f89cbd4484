// backend/fault_injection.h: FaultInjection, for tests only: the reads of chosen entries fail as
// they would on a failing disk (kStorage), so that a test can show what a caller does with a
// storage error it cannot provoke otherwise (access control fails closed:
// server/operations/operation_access.h). Set with Directory::inject_faults_for_test; without it
// each read pays one predictable branch.
//
// Thread contract: a plain value; the Directory keeps its own copy (see inject_faults_for_test).
#pragma once

#include <string>
#include <vector>

namespace numadir::backend {

struct FaultInjection {
  // Every read of these entries (DNs in any spelling) fails with kStorage and `message`:
  // Directory::get, lookup and lookup_normalized, and a write check's WriteView (get, lookup,
  // exists). Searches, and the reads and writes of an update's own change, are not affected.
  std::vector<std::string> failing_reads;
  std::string message = "injected fault";
};

}  // namespace numadir::backend
