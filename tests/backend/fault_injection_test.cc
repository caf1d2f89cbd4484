// Tests for backend/fault_injection.h through Directory::inject_faults_for_test: the reads named
// fail with kStorage in every spelling of the DN, through a ReadTxn and through a check's
// WriteView; other entries read as before; an empty FaultInjection ends the faults.
#include "backend/fault_injection.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "backend/directory.h"
#include "backend/directory_update.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

bool is_injected(const Status& status) {
  return status.code() == StatusCode::kStorage && status.message() == "disk on fire";
}

TEST_CASE("FaultInjection: reads of a named entry fail with kStorage and others do not") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  add_base_tree(*directory);
  FaultInjection faults;
  faults.failing_reads = {"OU=People, DC=Example,DC=com"};
  faults.message = "disk on fire";
  require_ok(directory->inject_faults_for_test(faults));

  auto txn = directory->begin_read();
  const auto nothing = [](const EntryRef&) {};
  CHECK(is_injected(directory->get(*txn, kPeople).status()));
  CHECK(is_injected(directory->lookup(*txn, "ou=PEOPLE,dc=example,dc=com", nothing)));
  CHECK(is_injected(directory->lookup_normalized(*txn, kPeople, nothing)));
  CHECK(directory->get(*txn, kGroups).ok());
  CHECK(directory->lookup(*txn, kGroups, nothing).ok());

  SUBCASE("a check's view fails the same reads, and its job writes nothing") {
    auto job = std::make_unique<UpdateJob>();
    job->change = ModifyChange{std::string(kGroups),
                               {{ModificationKind::kReplace, "description", {"changed"}}}};
    Status exists_status;
    Status get_status;
    job->check = [&](const WriteView& view) {
      exists_status = view.exists(kPeople).status();
      get_status = view.get(kPeople).status();
      CHECK(view.exists(kGroups).ok());
      return view.lookup(kPeople, [](const EntryRef&) {});
    };
    CHECK(is_injected(directory->run_update(std::move(job))));
    CHECK(is_injected(exists_status));
    CHECK(is_injected(get_status));
    Result<schema::Entry> groups = directory->get(*txn, kGroups);
    REQUIRE(groups.ok());
    CHECK(values_of(*groups, "description").empty());
  }
  SUBCASE("an empty FaultInjection ends the faults") {
    require_ok(directory->inject_faults_for_test(FaultInjection{}));
    CHECK(directory->get(*txn, kPeople).ok());
    CHECK(directory->lookup_normalized(*txn, kPeople, nothing).ok());
  }
  SUBCASE("a DN that does not parse is refused and the faults stay") {
    FaultInjection bad;
    bad.failing_reads = {"not a dn"};
    CHECK(directory->inject_faults_for_test(bad).code() == StatusCode::kInvalidDnSyntax);
    CHECK(is_injected(directory->get(*txn, kPeople).status()));
  }
}

}  // namespace
}  // namespace numadir::backend
