// The randomized model test: thousands of random adds, modifies, renames (subtree moves
// included), removes and searches against the Directory and against the in-memory Reference
// (model_reference.h), comparing result codes, search results as DN sets and, for a sample,
// attribute values; then verify_indexes() and a full comparison, also after reopening.
//
// Seeded: the seed is printed; NUMADIR_TEST_SEED=<n> replays a run, NUMADIR_MODEL_OPS=<n>
// changes its length (default 3000).
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backend/directory.h"
#include "tests/backend/backend_test_util.h"
#include "tests/backend/model_reference.h"

namespace numadir::backend {
namespace {

using namespace testing;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::strtoull(value, nullptr, 10) : fallback;
}

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : random_(seed) {}

  int below(int n) { return static_cast<int>(random_() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<std::size_t>(below(static_cast<int>(items.size())))];
  }

  std::string uid() { return "u" + std::to_string(below(60)); }
  std::string uid_spelling(const std::string& uid) { return chance(30) ? upper(uid) : uid; }
  std::string cn() {
    static const std::vector<std::string> kCns = {"Alpha Beta",    "alpha  beta",    "Gamma",
                                                  "Delta Epsilon", "Zeta",           "eta theta",
                                                  "Iota",          "kappa lambda mu"};
    return chance(70) ? pick(kCns) : "Person " + std::to_string(below(30));
  }
  std::string sn() { return pick(std::vector<std::string>{"Smith", "Jones", "Brown", "smith"}); }
  std::string mail() {
    return chance(50) ? "m" + std::to_string(below(20)) + "@example.com" : "X@Example.COM";
  }
  std::string description() {
    return pick(std::vector<std::string>{"first", "second", "a longer description value"});
  }
  std::string ou() { return "o" + std::to_string(below(20)); }
  std::string number() { return std::to_string(1000 + below(40)); }

  static std::string upper(std::string text) {
    for (char& c : text) {
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return text;
  }

  std::string filter(int depth = 0) {
    if (depth >= 3 || chance(45)) {
      return item();
    }
    const int kind = below(3);
    if (kind == 2) {
      return "(!" + filter(depth + 1) + ")";
    }
    std::string out = kind == 0 ? "(&" : "(|";
    for (int n = below(3) + 1; n > 0; --n) {
      out += filter(depth + 1);
    }
    return out + ")";
  }

  std::string item() {
    switch (below(30)) {
      case 0:
        return "(uid=" + uid_spelling(uid()) + ")";
      case 1:
        return "(uid=u" + std::to_string(below(6)) + "*)";
      case 2:
        return "(uid=*" + std::to_string(below(10)) + ")";
      case 3:
        return "(uid=*" + std::to_string(below(10)) + "*)";
      case 4:
        return "(cn=" + cn() + ")";
      case 5:
        return "(cn=" + pick(std::vector<std::string>{"al", "Del", "pers", "g"}) + "*)";
      case 6:
        return "(cn=*" + pick(std::vector<std::string>{"ta", "lambda", "son 1", "eta t"}) + "*)";
      case 7:
        return "(cn=*" + pick(std::vector<std::string>{"a", "beta", "mu", "2"}) + ")";
      case 8:
        return "(sn=" + sn() + ")";
      case 9:
        return "(sn=*mi*)";
      case 10:
        return pick(std::vector<std::string>{"(mail=*)", "(mail=*@example.com)"});
      case 11:
        return "(mail=" + mail() + ")";
      case 12:
        return pick(std::vector<std::string>{"(description=*)", "(description~=FIRST)"});
      case 13:
        return "(uidNumber>=" + number() + ")";
      case 14:
        return "(uidNumber<=" + number() + ")";
      case 15:
        return "(uidNumber=" + number() + ")";
      case 16:
        return pick(
            std::vector<std::string>{"(objectClass=person)", "(objectClass=organizationalUnit)",
                                     "(objectClass=posixAccount)", "(objectClass=*)",
                                     "(objectClass=organizationalPerson)", "(objectClass=top)"});
      case 17:
        return "(ou=" + ou() + ")";
      case 18:
        return "(ou=*)";
      case 19:
        return pick(std::vector<std::string>{"(noSuchAttr=x)", "(noSuchAttr=*)"});
      case 20:
        return "(hasSubordinates=" + pick(std::vector<std::string>{"TRUE", "FALSE"}) + ")";
      case 21:
        return "(uid:caseExactMatch:=" + uid_spelling(uid()) + ")";
      case 22:
        return "(cn:=" + cn() + ")";
      case 23:
        return "(ou:dn:=" + ou() + ")";
      case 24:
        return "(:dn:caseIgnoreMatch:=people)";
      case 25:
        return "(cn:noSuchRule:=x)";
      case 26:
        return "(name=" + cn() + ")";
      case 27:
        return "(cn;lang-de=*)";
      case 28:
        return "(uidNumber=bad)";
      default:
        return "(sn>=a)";
    }
  }

 private:
  std::mt19937_64 random_;
};

class ModelRun {
 public:
  ModelRun(std::uint64_t seed, const std::filesystem::path& path)
      : gen_(seed), reference_(test_schema(), kSuffix), options_(test_options(path)) {
    options_.durability = Durability::kNoSync;  // Durability has its own test.
    reopen();
    for (const schema::Entry& entry : {domain_entry(std::string(kSuffix), "example"),
                                       ou_entry("ou=people," + std::string(kSuffix), "people"),
                                       ou_entry("ou=groups," + std::string(kSuffix), "groups")}) {
      REQUIRE(reference_.add(entry) == StatusCode::kOk);
      require_ok(directory_->add(entry, {}));
    }
  }

  void reopen() {
    txn_.reset();
    directory_.reset();
    directory_ = open_directory(options_);
    txn_ = directory_->begin_read();
  }

  void step(int index) {
    index_ = index;
    const int op = gen_.below(100);
    if (op < 28) {
      add();
    } else if (op < 36) {
      remove();
    } else if (op < 56) {
      modify();
    } else if (op < 66) {
      rename();
    } else if (op < 98) {
      search();
    } else if (op < 99) {
      reopen();
    } else {
      require_ok(directory_->rebuild_indexes());
    }
  }

  void check_all() {
    require_ok(directory_->verify_indexes());
    CHECK(directory_->entry_count().value() == reference_.entries().size());
    for (const auto& item : reference_.entries()) {
      const Reference::RefEntry& entry = item.second;
      Result<schema::Entry> stored = directory_->get(*txn_, entry.dn);
      REQUIRE_MESSAGE(stored.ok(), entry.dn, ": ", stored.status().to_string());
      compare_entry(*stored, entry);
    }
    std::set<std::string> exported;
    require_ok(directory_->export_entries([&](const schema::Entry& e) {
      const std::string key = *reference_.key_of(e.dn);
      const auto parent = schema::Dn::parse(e.dn)->parent();
      if (parent.rdn_count() >= 2) {
        CHECK_MESSAGE(exported.count(*reference_.key_of(parent.to_string())) == 1, e.dn);
      }
      exported.insert(key);
      return true;
    }));
    CHECK(exported.size() == reference_.entries().size());
  }

  int searches() const { return searches_; }
  int nonempty_searches() const { return nonempty_searches_; }
  const std::map<StatusCode, int>& update_codes() const { return update_codes_; }

 private:
  std::vector<std::string> existing_dns() {
    std::vector<std::string> dns;
    for (const auto& [key, entry] : reference_.entries()) {
      dns.push_back(entry.dn);
    }
    return dns;
  }

  void expect_code(StatusCode expected, const Status& actual, const std::string& what) {
    update_codes_[expected]++;
    INFO("op #", index_, ": ", what);
    REQUIRE_MESSAGE(actual.code() == expected, "expected ", status_code_name(expected), ", got ",
                    actual.to_string());
  }

  void add() {
    const std::vector<std::string> dns = existing_dns();
    std::string parent = gen_.pick(dns);
    if (gen_.chance(3)) {
      parent = "ou=missing," + parent;
    }
    schema::Entry entry;
    if (gen_.chance(25)) {
      const std::string ou = gen_.ou();
      entry = ou_entry("ou=" + ou + "," + parent, ou);
      if (gen_.chance(30)) {
        entry.attributes.push_back({"description", {gen_.description()}});
      }
    } else {
      const std::string uid = gen_.uid();
      const std::string cn = gen_.cn();
      const bool cn_named = gen_.chance(10);
      entry = person_entry((cn_named ? "cn=" + cn : "uid=" + gen_.uid_spelling(uid)) + "," + parent,
                           uid, cn, gen_.sn());
      if (gen_.chance(20)) {
        // Superclasses are implicit (RFC 4512 §2.4.1); (objectClass=person) still matches.
        entry.attributes[0].values = {"inetOrgPerson"};
      } else {
        entry.attributes[0].values.push_back("organizationalPerson");
      }
      if (gen_.chance(30)) {
        entry.attributes[0].values.push_back("posixAccount");
        entry.attributes.push_back({"uidNumber", {gen_.number()}});
        entry.attributes.push_back({"gidNumber", {"100"}});
        entry.attributes.push_back({"homeDirectory", {"/home/" + uid}});
      }
      if (gen_.chance(40)) {
        entry.attributes.push_back({"mail", {gen_.mail()}});
      }
      if (gen_.chance(20)) {
        entry.attributes.push_back({"cn;lang-de", {gen_.cn()}});
      }
      switch (gen_.below(30)) {
        case 0:
          entry.attributes.pop_back();
          break;  // Maybe a MUST.
        case 1:
          entry.attributes[1].values = {"other"};
          break;  // RDN value missing.
        case 2:
          entry.attributes.push_back({"entryUUID", {"3f2504e0-4f89-41d3-9a0c-0305e82c3301"}});
          break;
        case 3:
          entry.attributes.push_back({"noSuchAttr", {"x"}});
          break;
        case 4:
          entry.attributes.push_back({"CN", {"Again"}});
          break;
        case 5:
          entry.attributes.push_back({"description", {"d", "D"}});
          break;
        default:
          break;
      }
    }
    const StatusCode expected = reference_.add(entry);
    expect_code(expected, directory_->add(entry, {}), "add " + entry.dn);
  }

  void remove() {
    std::string dn = gen_.pick(existing_dns());
    if (gen_.chance(10)) {
      dn = "cn=absent," + dn;
    }
    expect_code(reference_.remove(dn), directory_->remove(dn, {}), "remove " + dn);
  }

  void modify() {
    const std::string dn = gen_.pick(existing_dns());
    std::vector<Modification> mods;
    std::ostringstream what;
    what << "modify " << dn;
    using K = ModificationKind;
    for (int n = gen_.below(3) + 1; n > 0; --n) {
      Modification mod;
      switch (gen_.below(16)) {
        case 0:
          mod = {K::kAdd, "cn", {gen_.cn()}};
          break;
        case 1:
          mod = {K::kDelete, "cn", {gen_.cn()}};
          break;
        case 2:
          mod = {K::kReplace, "sn", {gen_.sn()}};
          break;
        case 3:
          mod = {K::kReplace, "mail",
                 gen_.chance(50) ? std::vector<std::string>{} : std::vector{gen_.mail()}};
          break;
        case 4:
          mod = {K::kAdd, "description", {gen_.description()}};
          break;
        case 5:
          mod = {K::kDelete, "description", {}};
          break;
        case 6:
          mod = {K::kDelete, "uid",
                 gen_.chance(50) ? std::vector<std::string>{} : std::vector{gen_.uid()}};
          break;
        case 7:
          mod = {K::kReplace, "objectClass", {"top", "person"}};
          break;
        case 8:
          mod = {K::kAdd, "objectClass", {"posixAccount"}};
          break;
        case 9:
          mod = {K::kAdd, "uidNumber", {gen_.number()}};
          mods.push_back({K::kReplace, "gidNumber", {"7"}});
          mods.push_back({K::kReplace, "homeDirectory", {"/h"}});
          break;
        case 10:
          mod = {K::kIncrement, "uidNumber", {std::to_string(gen_.below(11) - 5)}};
          break;
        case 11:
          mod = {K::kReplace, "modifyTimestamp", {"20200101000000Z"}};
          break;
        case 12:
          mod = {K::kAdd, gen_.chance(50) ? "noSuchAttr" : "cn", {}};
          break;
        case 13:
          mod = {K::kReplace, "cn;lang-de", {gen_.cn()}};
          break;
        case 14:
          mod = {K::kAdd, "ou", {gen_.ou()}};
          break;
        default:
          mod = {K::kDelete, "ou", {gen_.ou()}};
          break;
      }
      mods.push_back(mod);
    }
    for (const Modification& mod : mods) {
      what << " [" << static_cast<int>(mod.kind) << " " << mod.description << " "
           << mod.values.size() << "]";
    }
    expect_code(reference_.modify(dn, mods), directory_->modify(dn, mods, {}), what.str());
  }

  void rename() {
    const std::vector<std::string> dns = existing_dns();
    const std::string dn = gen_.pick(dns);
    const std::string type = schema::Dn::parse(dn)->rdn(0)[0].type.data() == nullptr
                                 ? "uid"
                                 : std::string(schema::Dn::parse(dn)->rdn(0)[0].type);
    std::string new_rdn;
    if (type == "ou") {
      new_rdn = "ou=" + gen_.ou();
    } else if (type == "dc") {
      new_rdn = "dc=x";
    } else {
      new_rdn = gen_.chance(20) ? "cn=" + gen_.cn() : "uid=" + gen_.uid_spelling(gen_.uid());
    }
    std::optional<std::string> superior;
    const int where = gen_.below(100);
    if (where < 35) {
      superior = gen_.pick(dns);
    } else if (where < 40) {
      superior = "ou=nowhere," + std::string(kSuffix);
    }
    const bool delete_old = gen_.chance(60);
    const std::optional<std::string_view> sup_view =
        superior ? std::optional<std::string_view>(*superior) : std::nullopt;
    expect_code(reference_.rename(dn, new_rdn, delete_old, sup_view),
                directory_->rename(dn, new_rdn, delete_old, sup_view, {}),
                "rename " + dn + " to " + new_rdn + " under " + superior.value_or("(same)"));
  }

  void search() {
    ++searches_;
    const std::vector<std::string> dns = existing_dns();
    // Bases near the top half of the time, so that most searches have results.
    std::string base = gen_.chance(50)
                           ? gen_.pick(std::vector<std::string>{
                                 std::string(kSuffix), "ou=people," + std::string(kSuffix)})
                           : gen_.pick(dns);
    if (reference_.entries().count(*reference_.key_of(base)) == 0) {
      base = std::string(kSuffix);  // ou=people may have been renamed away.
    }
    if (gen_.chance(8)) {
      base = "uid=ghost," + base;
    } else if (gen_.chance(3)) {
      base = "dc=elsewhere";
    }
    const Scope scope = static_cast<Scope>(gen_.below(4));
    const std::string filter_text = gen_.filter();
    const schema::Filter filter = parse_filter(filter_text);
    const std::uint64_t size_limit =
        gen_.chance(10) ? static_cast<std::uint64_t>(gen_.below(5) + 1) : 0;
    INFO("op #", index_, ": search ", base, " scope ", static_cast<int>(scope), " ", filter_text,
         " limit ", size_limit);

    std::set<std::string> expected;
    const Status expected_status = reference_.search(base, scope, filter, &expected);
    std::vector<std::string> got;
    bool compared_one = false;
    const SearchSpec spec{base, scope, &filter, size_limit, std::nullopt, std::nullopt};
    const Status status = directory_->search(*txn_, spec, [&](const EntryRef& ref) {
      got.emplace_back(ref.dn());
      if (!compared_one && gen_.chance(30)) {
        compared_one = true;
        const auto& model = reference_.entries().at(*reference_.key_of(ref.dn()));
        compare_entry(ref.materialize(), model);
      }
      return true;
    });
    if (!expected_status.ok()) {
      REQUIRE_MESSAGE(status == expected_status, status.to_string(), " vs ",
                      expected_status.to_string());
      return;
    }
    std::set<std::string> got_keys;
    for (const std::string& dn : got) {
      REQUIRE_MESSAGE(got_keys.insert(*reference_.key_of(dn)).second, "delivered twice: ", dn);
    }
    if (size_limit != 0 && expected.size() > size_limit) {
      REQUIRE_MESSAGE(status.code() == StatusCode::kSizeLimitExceeded, status.to_string());
      REQUIRE(got.size() == size_limit);
      for (const std::string& key : got_keys) {
        REQUIRE_MESSAGE(expected.count(key) == 1, "unexpected ", key);
      }
      return;
    }
    REQUIRE_MESSAGE(status.ok(), status.to_string());
    if (got_keys != expected) {
      std::string missing, extra;
      for (const auto& k : expected) missing += got_keys.count(k) ? "" : " [" + k + "]";
      for (const auto& k : got_keys) extra += expected.count(k) ? "" : " [" + k + "]";
      FAIL("missing:", missing, " extra:", extra);
    }
    nonempty_searches_ += expected.empty() ? 0 : 1;
  }

  void compare_entry(const schema::Entry& stored, const Reference::RefEntry& model) {
    INFO("entry ", model.dn);
    CHECK(stored.dn == model.dn);
    std::map<std::string, std::vector<std::string>> user;
    for (const auto& attribute : stored.attributes) {
      const auto* type = test_schema().attribute_type(description_type(attribute.description));
      REQUIRE(type != nullptr);
      if (!type->operational()) {
        user[attribute.description] = attribute.values;
      }
    }
    std::map<std::string, std::vector<std::string>> expected;
    for (const auto& attribute : model.attrs) {
      expected[attribute.description] = attribute.values;
    }
    CHECK(user == expected);
  }

  static std::string_view description_type(std::string_view d) { return d.substr(0, d.find(';')); }

  Generator gen_;
  Reference reference_;
  DirectoryOptions options_;
  std::unique_ptr<Directory> directory_;
  std::unique_ptr<ReadTxn> txn_;
  int index_ = 0;
  int searches_ = 0;
  int nonempty_searches_ = 0;
  std::map<StatusCode, int> update_codes_;
};

TEST_CASE("Model: random operations agree with the in-memory reference") {
  const std::uint64_t seed = env_or("NUMADIR_TEST_SEED", 20261130);
  const std::uint64_t ops = env_or("NUMADIR_MODEL_OPS", 3000);
  MESSAGE("model test seed ", seed, " (replay with NUMADIR_TEST_SEED=", seed, "), ", ops, " ops");
  TempDir dir;
  ModelRun run(seed, dir.path());
  for (std::uint64_t i = 0; i < ops; ++i) {
    run.step(static_cast<int>(i));
    if (i % 500 == 499) {
      run.check_all();
    }
  }
  run.check_all();
  run.reopen();
  run.check_all();
  std::string codes;
  for (const auto& [code, count] : run.update_codes()) {
    codes += " " + std::string(status_code_name(code)) + "=" + std::to_string(count);
  }
  MESSAGE("searches ", run.searches(), " (", run.nonempty_searches(),
          " with results); updates:", codes);
  // The run must exercise the interesting outcomes, or it proves little.
  CHECK(run.nonempty_searches() > run.searches() / 4);
  CHECK(run.update_codes().size() >= 8);
}

}  // namespace
}  // namespace numadir::backend
