// tests/backend/backend_test_util.h: helpers for the backend tests: fresh temp directories, the
// shipped schema loaded once, entry builders, and search wrappers that collect DNs.
//
// Thread contract: test-thread only (the schema singleton is built on first use).
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/directory.h"
#include "schema/filter.h"
#include "schema/schema.h"

namespace numadir::backend::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents by the destructor.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/numadir-be-XXXXXX";
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline const schema::Schema& test_schema() {
  static const schema::Schema* schema = [] {
    Result<schema::Schema> loaded = schema::Schema::load_default();
    REQUIRE_MESSAGE(loaded.ok(), loaded.status().to_string());
    return new schema::Schema(std::move(*loaded));
  }();
  return *schema;
}

inline constexpr std::string_view kSuffix = "dc=example,dc=com";
inline const std::string kPeople = "ou=people," + std::string(kSuffix);
inline const std::string kGroups = "ou=groups," + std::string(kSuffix);

// Returns: the DN of test user n under kPeople.
inline std::string user_dn(int n) { return "uid=user" + std::to_string(n) + "," + kPeople; }

inline std::vector<IndexSpec> default_indexes() {
  return {
      IndexSpec{"objectClass", true, false, false, false},
      IndexSpec{"uid", true, true, true, false},
      IndexSpec{"cn", true, true, true, false},
      IndexSpec{"uidNumber", true, false, false, true},
      IndexSpec{"mail", true, false, true, false},
  };
}

inline DirectoryOptions test_options(const std::filesystem::path& path,
                                     std::vector<IndexSpec> indexes = default_indexes()) {
  DirectoryOptions options;
  options.path = path;
  options.map_size_bytes = std::uint64_t{1} << 30;
  options.suffix = std::string(kSuffix);
  options.indexes = std::move(indexes);
  return options;
}

inline std::unique_ptr<Directory> open_directory(const DirectoryOptions& options) {
  Result<std::unique_ptr<Directory>> directory =
      Directory::open(test_schema(), options, OpenMode::kCreate);
  REQUIRE_MESSAGE(directory.ok(), directory.status().to_string());
  return std::move(*directory);
}

using Attrs = std::vector<std::pair<std::string, std::vector<std::string>>>;

inline schema::Entry make_entry(std::string dn, const Attrs& attributes) {
  schema::Entry entry;
  entry.dn = std::move(dn);
  for (const auto& [description, values] : attributes) {
    entry.attributes.push_back(schema::EntryAttribute{description, values});
  }
  return entry;
}

inline schema::Entry domain_entry(std::string dn, std::string dc) {
  return make_entry(std::move(dn), {{"objectClass", {"top", "domain"}}, {"dc", {std::move(dc)}}});
}

inline schema::Entry ou_entry(std::string dn, std::string ou) {
  return make_entry(std::move(dn),
                    {{"objectClass", {"top", "organizationalUnit"}}, {"ou", {std::move(ou)}}});
}

inline schema::Entry person_entry(std::string dn, std::string uid, std::string cn, std::string sn) {
  return make_entry(std::move(dn), {{"objectClass", {"top", "person", "inetOrgPerson"}},
                                    {"uid", {std::move(uid)}},
                                    {"cn", {std::move(cn)}},
                                    {"sn", {std::move(sn)}}});
}

inline void require_ok(const Status& status) { REQUIRE_MESSAGE(status.ok(), status.to_string()); }

// The base tree: the suffix, ou=people and ou=groups.
inline void add_base_tree(Directory& directory) {
  require_ok(directory.add(domain_entry(std::string(kSuffix), "example"), {}));
  require_ok(directory.add(ou_entry("ou=people," + std::string(kSuffix), "people"), {}));
  require_ok(directory.add(ou_entry("ou=groups," + std::string(kSuffix), "groups"), {}));
}

struct SearchResult {
  Status status;
  std::vector<std::string> dns;  // As delivered.
};

inline schema::Filter parse_filter(std::string_view text) {
  Result<schema::Filter> filter = schema::Filter::parse(text);
  REQUIRE_MESSAGE(filter.ok(), filter.status().to_string());
  return std::move(*filter);
}

inline SearchResult search(const Directory& directory, ReadTxn& txn, std::string_view base,
                           Scope scope, std::string_view filter_text,
                           std::uint64_t size_limit = 0) {
  const schema::Filter filter = parse_filter(filter_text);
  SearchSpec spec;
  spec.base = std::string(base);
  spec.scope = scope;
  spec.filter = &filter;
  spec.size_limit = size_limit;
  SearchResult result;
  result.status = directory.search(txn, spec, [&](const EntryRef& entry) {
    result.dns.emplace_back(entry.dn());
    return true;
  });
  return result;
}

// Returns: the values of `description` in `entry` (empty when absent).
inline std::vector<std::string> values_of(const schema::Entry& entry,
                                          std::string_view description) {
  const schema::EntryAttribute* attribute = entry.find(description);
  return attribute != nullptr ? attribute->values : std::vector<std::string>();
}

}  // namespace numadir::backend::testing
