// OperationAccess (server/operations/operation_access.h) fails closed: a read an access decision
// needs that fails with a storage error (backend::FaultInjection) denies the decision, the
// operation answers other (80) with "access check failed", and standard error names the DN and
// the error once; an update refused so writes nothing. Each case first shows the rules grant the
// access when the read works.
#include "server/operations/operation_access.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server {
namespace {

using namespace testing;

constexpr std::string_view kBlocked = "cn=blocked,ou=groups,dc=example,dc=com";
// The entry the cases read and change (requests view their DNs: this outlives them).
const std::string kTarget = user_dn(3);

// What this process writes to standard error while it lives (fd 2 itself, so every thread's
// writes are caught).
class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()) {
    REQUIRE(file_ != nullptr);
    std::fflush(stderr);
    saved_ = dup(STDERR_FILENO);
    REQUIRE(dup2(fileno(file_), STDERR_FILENO) >= 0);
  }
  ~StderrCapture() {
    restore();
    std::fclose(file_);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // Returns: everything written so far, and stops capturing.
  std::string text() {
    restore();
    std::string out;
    std::rewind(file_);
    char buffer[4096];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file_)) > 0;) {
      out.append(buffer, n);
    }
    return out;
  }

 private:
  void restore() {
    if (saved_ >= 0) {
      std::fflush(stderr);
      dup2(saved_, STDERR_FILENO);
      close(saved_);
      saved_ = -1;
    }
  }

  std::FILE* const file_;
  int saved_ = -1;
};

std::size_t count_of(std::string_view text, std::string_view part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string_view::npos;
       at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

AccessSubjectSpec group_clause(std::string_view group, AccessMask access) {
  AccessSubjectSpec spec;
  spec.group = std::string(group);
  spec.access = access;
  return spec;
}

AccessSubjectSpec everyone(AccessLevel level) {
  AccessSubjectSpec spec;
  spec.who = "*";
  spec.access = up_to(level);
  return spec;
}

// access to * by group=cn=blocked none by * <level>, and `filter` on the target when given.
std::vector<AccessRuleSpec> blocked_then_everyone(AccessLevel level, std::string filter = "") {
  return {{"access[0]",
           "",
           DnScope::kSubtree,
           std::move(filter),
           {},
           {group_clause(kBlocked, 0), everyone(level)}}};
}

// A handler fixture with the cn=blocked group (user5 its only member) and a session bound as
// user1.
struct BlockedFixture {
  explicit BlockedFixture(const std::vector<AccessRuleSpec>& rules)
      : fixture(default_handler_options(), rules), session(fixture.open_session()) {
    backend::testing::require_ok(fixture.directory().add(
        backend::testing::make_entry(
            std::string(kBlocked),
            {{"objectClass", {"groupOfNames"}}, {"cn", {"blocked"}}, {"member", {user_dn(5)}}}),
        {}));
    REQUIRE(code_of(*fixture.run_one(bind_request(1, user_dn(1), user_password(1)), *session)) ==
            ResultCode::kSuccess);
  }
  void fail_reads_of(std::string_view dn) {
    backend::FaultInjection faults;
    faults.failing_reads = {std::string(dn)};
    backend::testing::require_ok(fixture.directory().inject_faults_for_test(faults));
  }
  void clear_faults() {
    backend::testing::require_ok(fixture.directory().inject_faults_for_test({}));
  }
  std::vector<std::string> descriptions(std::string_view dn) {
    auto txn = fixture.directory().begin_read();
    Result<schema::Entry> entry = fixture.directory().get(*txn, dn);
    REQUIRE(entry.ok());
    return backend::testing::values_of(*entry, "description");
  }

  HandlerFixture fixture;
  std::unique_ptr<listener::Session> session;
};

LdapMessage modify_description(std::int32_t id, std::string_view dn, std::string_view value) {
  LdapMessage message;
  message.message_id = id;
  message.op = ProtocolOp::kModifyRequest;
  message.modify_request.object = dn;
  message.modify_request.operations.push_back(listener::wire::ModifyOperation::kReplace);
  message.modify_request.modifications.add("description");
  message.modify_request.modifications.add_value(value);
  return message;
}

// The log line of a failed group read (the group's normalized DN, the injected error).
constexpr std::string_view kGroupLog =
    "access check failed: reading cn=blocked,ou=groups,dc=example,dc=com: storage error: "
    "injected fault; denied";

TEST_CASE("OperationAccess: a group that cannot be read denies a search instead of granting") {
  BlockedFixture blocked(blocked_then_everyone(AccessLevel::kRead));
  const LdapMessage search =
      search_request(2, kTarget, SearchScope::kBaseObject, "(objectClass=*)", {"cn"});
  {
    auto responses = blocked.fixture.run(search, *blocked.session);
    REQUIRE(entries_of(responses).size() == 1);
    CHECK(done_of(responses).result.code == ResultCode::kSuccess);
  }
  blocked.fail_reads_of(kBlocked);
  StderrCapture log;
  auto responses = blocked.fixture.run(search, *blocked.session);
  CHECK(entries_of(responses).empty());
  CHECK(done_of(responses).result.code == ResultCode::kOther);
  CHECK(done_of(responses).result.diagnostic_message == "access check failed");
  const std::string text = log.text();
  CHECK_MESSAGE(count_of(text, kGroupLog) == 1, text);
  CHECK_MESSAGE(text.find("search") != std::string::npos, text);
}

TEST_CASE("OperationAccess: a subtree search ends with other at the first failed decision") {
  BlockedFixture blocked(blocked_then_everyone(AccessLevel::kRead));
  const LdapMessage search =
      search_request(2, kPeople, SearchScope::kSingleLevel, "(objectClass=*)", {"1.1"});
  CHECK(entries_of(blocked.fixture.run(search, *blocked.session)).size() == 5);
  blocked.fail_reads_of(kBlocked);
  StderrCapture log;
  auto responses = blocked.fixture.run(search, *blocked.session);
  CHECK(entries_of(responses).empty());
  CHECK(done_of(responses).result.code == ResultCode::kOther);
  const std::string text = log.text();
  CHECK_MESSAGE(count_of(text, kGroupLog) == 1, text);  // Once, not once per entry.
}

TEST_CASE("OperationAccess: a compare whose group cannot be read answers other") {
  BlockedFixture blocked(blocked_then_everyone(AccessLevel::kRead));
  const LdapMessage compare = compare_request(2, kTarget, "cn", "User 3");
  CHECK(code_of(*blocked.fixture.run_one(compare, *blocked.session)) == ResultCode::kCompareTrue);
  blocked.fail_reads_of(kBlocked);
  StderrCapture log;
  const auto response = blocked.fixture.run_one(compare, *blocked.session);
  CHECK(code_of(*response) == ResultCode::kOther);
  CHECK(response->message.result.diagnostic_message == "access check failed");
  const std::string text = log.text();
  CHECK_MESSAGE(count_of(text, kGroupLog) == 1, text);
}

TEST_CASE("OperationAccess: an update whose check cannot read a group is refused and not written") {
  BlockedFixture blocked(blocked_then_everyone(AccessLevel::kWrite));
  REQUIRE(code_of(*blocked.fixture.run_one(modify_description(2, kTarget, "first"),
                                           *blocked.session)) == ResultCode::kSuccess);
  blocked.fail_reads_of(kBlocked);
  StderrCapture log;
  const auto response =
      blocked.fixture.run_one(modify_description(3, kTarget, "second"), *blocked.session);
  CHECK(code_of(*response) == ResultCode::kOther);
  CHECK(response->message.result.diagnostic_message == "access check failed");
  const std::string text = log.text();
  CHECK_MESSAGE(count_of(text, kGroupLog) == 1, text);
  CHECK(blocked.descriptions(kTarget) == std::vector<std::string>{"first"});
}

TEST_CASE("OperationAccess: a filtered rule whose entry cannot be read fails the update") {
  // The filter needs the entry itself: its read (entry_for_access) is the one that fails.
  BlockedFixture blocked(blocked_then_everyone(AccessLevel::kWrite, "(objectClass=person)"));
  SUBCASE("the target of a modify") {
    REQUIRE(code_of(*blocked.fixture.run_one(modify_description(2, kTarget, "first"),
                                             *blocked.session)) == ResultCode::kSuccess);
    blocked.fail_reads_of(kTarget);
    StderrCapture log;
    CHECK(code_of(*blocked.fixture.run_one(modify_description(3, kTarget, "second"),
                                           *blocked.session)) == ResultCode::kOther);
    const std::string text = log.text();
    CHECK_MESSAGE(count_of(text, "access check failed: reading " + kTarget +
                                     ": storage error: injected fault; denied") == 1,
                  text);
    blocked.clear_faults();
    CHECK(blocked.descriptions(kTarget) == std::vector<std::string>{"first"});
  }
  SUBCASE("the parent of a delete") {
    blocked.fail_reads_of(kPeople);
    StderrCapture log;
    CHECK(code_of(*blocked.fixture.run_one(delete_request(2, kTarget), *blocked.session)) ==
          ResultCode::kOther);
    const std::string text = log.text();
    CHECK_MESSAGE(count_of(text, "access check failed: reading ou=people") == 1, text);
    blocked.clear_faults();
    auto txn = blocked.fixture.directory().begin_read();
    CHECK(blocked.fixture.directory().get(*txn, kTarget).ok());
  }
}

}  // namespace
}  // namespace numadir::server
