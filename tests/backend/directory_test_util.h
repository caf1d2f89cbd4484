// tests/backend/directory_test_util.h: what the Directory tests (directory_*test.cc) share:
// user entries, a Fixture holding a directory with the base tree and two users
// (whose indexes it verifies when it goes), and a Modification builder.
//
// Thread contract: test-thread only, as backend_test_util.h.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/directory.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::backend::testing {

inline schema::Entry user(int n) {
  return person_entry(user_dn(n), "user" + std::to_string(n), "User " + std::to_string(n),
                      "Surname" + std::to_string(n));
}

inline schema::Entry posix_user(int n, std::string uid_number) {
  schema::Entry entry = user(n);
  entry.attributes[0].values.push_back("posixAccount");
  entry.attributes.push_back({"uidNumber", {std::move(uid_number)}});
  entry.attributes.push_back({"gidNumber", {"100"}});
  entry.attributes.push_back({"homeDirectory", {"/home/user" + std::to_string(n)}});
  return entry;
}

struct Fixture {
  Fixture() : directory(open_directory(test_options(dir.path()))) {
    add_base_tree(*directory);
    require_ok(directory->add(user(1), {}));
    require_ok(directory->add(user(2), {}));
    txn = directory->begin_read();
  }
  ~Fixture() {
    CHECK_MESSAGE(directory->verify_indexes().ok(), directory->verify_indexes().to_string());
  }

  StatusCode add_code(const schema::Entry& entry) { return directory->add(entry, {}).code(); }
  StatusCode modify_code(std::string_view dn, std::vector<Modification> mods) {
    return directory->modify(dn, mods, {}).code();
  }
  schema::Entry get(std::string_view dn) {
    Result<schema::Entry> entry = directory->get(*txn, dn);
    REQUIRE_MESSAGE(entry.ok(), entry.status().to_string());
    return std::move(*entry);
  }
  bool exists(std::string_view dn) { return directory->get(*txn, dn).ok(); }

  TempDir dir;
  std::unique_ptr<Directory> directory;
  std::unique_ptr<ReadTxn> txn;
};

inline Modification mod(ModificationKind kind, std::string description,
                        std::vector<std::string> values) {
  return Modification{kind, std::move(description), std::move(values)};
}

}  // namespace numadir::backend::testing
