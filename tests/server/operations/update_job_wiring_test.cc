// The update units' jobs (server/operations/update_common.h run_update): access decided in the
// write transaction, the response sent by the writer thread through a detached operation, and
// an abandoned update still carried out.
#include <doctest/doctest.h>

#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/operations/root_dse.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

const std::string kEditors = "cn=editors,ou=groups,dc=example,dc=com";

// Holds the writer inside a batch (a job whose check waits) until release(): the jobs
// submitted meanwhile queue, in order, for the next batch.
class WriterGate {
 public:
  explicit WriterGate(backend::Directory& directory) {
    auto job = std::make_unique<backend::UpdateJob>();
    job->change = backend::ModifyChange{
        user_dn(5), {{backend::ModificationKind::kReplace, "description", {"gate"}}}};
    job->check = [opened = opened_,
                  released = released_.get_future().share()](const backend::WriteView&) mutable {
      opened->set_value();
      released.wait();
      return Status();
    };
    std::future<void> entered = opened_->get_future();
    directory.submit_update(std::move(job));
    entered.wait();
  }
  void release() { released_.set_value(); }

 private:
  std::shared_ptr<std::promise<void>> opened_ = std::make_shared<std::promise<void>>();
  std::promise<void> released_;
};

std::vector<AccessRuleSpec> editors_may_write() {
  // access to * by group=cn=editors write by * read
  AccessSubjectSpec editors;
  editors.group = kEditors;
  editors.access = up_to(AccessLevel::kWrite);
  AccessSubjectSpec everyone;
  everyone.who = "*";
  everyone.access = up_to(AccessLevel::kRead);
  return {{"access[0]", "", DnScope::kSubtree, "", {}, {editors, everyone}}};
}

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

std::vector<std::string> descriptions(HandlerFixture& fixture, std::string_view dn) {
  auto txn = fixture.directory().begin_read();
  Result<schema::Entry> entry = fixture.directory().get(*txn, dn);
  REQUIRE(entry.ok());
  return backend::testing::values_of(*entry, "description");
}

struct EditorsFixture {
  EditorsFixture()
      : fixture(default_handler_options(), editors_may_write()), session(fixture.open_session()) {
    backend::testing::require_ok(fixture.directory().add(
        backend::testing::make_entry(kEditors, {{"objectClass", {"groupOfNames"}},
                                                {"cn", {"editors"}},
                                                {"member", {user_dn(1), user_dn(4)}}}),
        {}));
    REQUIRE(code_of(*fixture.run_one(bind_request(1, user_dn(1), user_password(1)), *session)) ==
            ResultCode::kSuccess);
  }
  // Runs `request` on the session with a detaching sink; waits for the job's end.
  ResultCode run_detached(const LdapMessage& request) {
    DetachingSink sink;
    fixture.handler().handle(request, *session, sink, fixture.worker_state());
    REQUIRE(sink.detached);
    sink.record->wait_released();
    REQUIRE(sink.record->responses.responses.size() == 1);
    return code_of(*sink.record->responses.responses[0]);
  }

  HandlerFixture fixture;
  std::unique_ptr<listener::Session> session;
};

TEST_CASE("UpdateJob wiring: a detached update is answered by the writer") {
  EditorsFixture editors;
  CHECK(editors.run_detached(modify_description(2, user_dn(2), "edited")) == ResultCode::kSuccess);
  CHECK(descriptions(editors.fixture, user_dn(2)) == std::vector<std::string>{"edited"});
  CHECK(editors.run_detached(delete_request(3, user_dn(9))) == ResultCode::kNoSuchObject);
}

TEST_CASE("UpdateJob wiring: access revoked before the commit refuses the update") {
  EditorsFixture editors;
  backend::Directory& directory = editors.fixture.directory();
  WriterGate gate(directory);
  // Queued first: user1 leaves the editors.
  auto leave = std::make_unique<backend::UpdateJob>();
  leave->change = backend::ModifyChange{
      kEditors, {{backend::ModificationKind::kDelete, "member", {user_dn(1)}}}};
  std::promise<Status> left;
  std::future<Status> leave_outcome = left.get_future();
  leave->done = [&left](Status status) { left.set_value(std::move(status)); };
  REQUIRE(directory.try_submit_update(leave));
  // Then user1's modify, decided when the read snapshot still lists user1 as an editor.
  DetachingSink sink;
  editors.fixture.handler().handle(modify_description(2, user_dn(2), "too late"), *editors.session,
                                   sink, editors.fixture.worker_state());
  REQUIRE(sink.detached);
  {
    const std::lock_guard lock(sink.record->mu);
    CHECK(sink.record->responses.responses.empty());  // Not answered before the commit.
  }
  gate.release();
  sink.record->wait_released();
  REQUIRE(sink.record->responses.responses.size() == 1);
  const Response& response = *sink.record->responses.responses[0];
  CHECK(code_of(response) == ResultCode::kInsufficientAccessRights);
  CHECK(response.message.result.diagnostic_message == "no write access to attribute description");
  CHECK(descriptions(editors.fixture, user_dn(2)).empty());
  CHECK(leave_outcome.get().ok());
}

bool binds(HandlerFixture& fixture, std::string_view dn, std::string_view password) {
  auto session = fixture.open_session();
  return code_of(*fixture.run_one(bind_request(1, dn, password), *session)) == ResultCode::kSuccess;
}

TEST_CASE("UpdateJob wiring: a detached password modify is answered by the writer") {
  EditorsFixture editors;
  DetachingSink sink;
  // user1 changes their own password, giving the old one, and lets the server make one up.
  const std::string value = passwd_value(std::nullopt, user_password(1), std::nullopt);
  editors.fixture.handler().handle(extended_request(2, kPasswordModifyOid, value), *editors.session,
                                   sink, editors.fixture.worker_state());
  REQUIRE(sink.detached);
  sink.record->wait_released();
  REQUIRE(sink.record->responses.responses.size() == 1);
  const Response& response = *sink.record->responses.responses[0];
  CHECK(response.message.op == ProtocolOp::kExtendedResponse);
  REQUIRE(code_of(response) == ResultCode::kSuccess);
  REQUIRE(response.message.extended.value.has_value());
  const std::string generated = gen_passwd(*response.message.extended.value);
  CHECK(binds(editors.fixture, user_dn(1), generated));
  CHECK_FALSE(binds(editors.fixture, user_dn(1), user_password(1)));
}

TEST_CASE(
    "UpdateJob wiring: an old password changed before the commit refuses the password modify") {
  EditorsFixture editors;
  backend::Directory& directory = editors.fixture.directory();
  WriterGate gate(directory);
  // Queued first: an administrator sets user1's password.
  auto reset = std::make_unique<backend::UpdateJob>();
  reset->change = backend::ModifyChange{
      user_dn(1), {{backend::ModificationKind::kReplace, "userPassword", {"{CLEARTEXT}reset"}}}};
  REQUIRE(directory.try_submit_update(reset));
  // Then user1's change, whose old password the worker verified against the snapshot.
  DetachingSink sink;
  const std::string value = passwd_value(std::nullopt, user_password(1), "mine");
  editors.fixture.handler().handle(extended_request(2, kPasswordModifyOid, value), *editors.session,
                                   sink, editors.fixture.worker_state());
  REQUIRE(sink.detached);
  gate.release();
  sink.record->wait_released();
  REQUIRE(sink.record->responses.responses.size() == 1);
  const Response& response = *sink.record->responses.responses[0];
  CHECK(code_of(response) == ResultCode::kUnwillingToPerform);
  CHECK(response.message.result.diagnostic_message == "unwilling to verify old password");
  CHECK_FALSE(binds(editors.fixture, user_dn(1), "mine"));
}

TEST_CASE("UpdateJob wiring: access revoked before the commit refuses the password modify") {
  EditorsFixture editors;
  backend::Directory& directory = editors.fixture.directory();
  WriterGate gate(directory);
  auto leave = std::make_unique<backend::UpdateJob>();
  leave->change = backend::ModifyChange{
      kEditors, {{backend::ModificationKind::kDelete, "member", {user_dn(1)}}}};
  REQUIRE(directory.try_submit_update(leave));
  // user1, an editor in the snapshot, sets user2's password.
  DetachingSink sink;
  const std::string value = passwd_value(user_dn(2), std::nullopt, "by an editor");
  editors.fixture.handler().handle(extended_request(2, kPasswordModifyOid, value), *editors.session,
                                   sink, editors.fixture.worker_state());
  REQUIRE(sink.detached);
  gate.release();
  sink.record->wait_released();
  REQUIRE(sink.record->responses.responses.size() == 1);
  CHECK(code_of(*sink.record->responses.responses[0]) == ResultCode::kInsufficientAccessRights);
  CHECK(binds(editors.fixture, user_dn(2), user_password(2)));
  CHECK_FALSE(binds(editors.fixture, user_dn(2), "by an editor"));
}

TEST_CASE("UpdateJob wiring: an abandoned update still commits without a response") {
  EditorsFixture editors;
  WriterGate gate(editors.fixture.directory());
  DetachingSink sink;
  editors.fixture.handler().handle(modify_description(2, user_dn(3), "abandoned"), *editors.session,
                                   sink, editors.fixture.worker_state());
  REQUIRE(sink.detached);
  sink.record->abandoned = true;
  gate.release();
  sink.record->wait_released();
  CHECK(sink.record->responses.responses.empty());
  CHECK(descriptions(editors.fixture, user_dn(3)) == std::vector<std::string>{"abandoned"});
}

TEST_CASE("UpdateJob wiring: one worker queues updates without waiting for their commits") {
  EditorsFixture editors;
  backend::Directory& directory = editors.fixture.directory();
  const std::uint64_t before = directory.writer_stats().largest_batch;
  WriterGate gate(directory);
  constexpr int kUpdates = 8;
  std::vector<DetachingSink> sinks(kUpdates);
  for (int i = 0; i < kUpdates; ++i) {
    // Each returns at once: the worker is not held through the commit.
    editors.fixture.handler().handle(
        modify_description(10 + i, user_dn(2), "v" + std::to_string(i)), *editors.session, sinks[i],
        editors.fixture.worker_state());
    REQUIRE(sinks[i].detached);
  }
  gate.release();
  for (DetachingSink& sink : sinks) {
    sink.record->wait_released();
    REQUIRE(sink.record->responses.responses.size() == 1);
    CHECK(code_of(*sink.record->responses.responses[0]) == ResultCode::kSuccess);
  }
  CHECK(directory.writer_stats().largest_batch >= std::max<std::uint64_t>(before, kUpdates));
  CHECK(descriptions(editors.fixture, user_dn(2)) == std::vector<std::string>{"v7"});
}

}  // namespace
}  // namespace numadir::server::testing
