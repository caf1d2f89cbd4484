// Searches that pause at the connection's output bound (server/operations/search_pause.h): the
// search stops without holding the worker, keeps its operation open and goes on from where it
// stopped once the output drained, in the snapshot it pinned, so that an update committed
// meanwhile changes nothing of what it returns; an abandoned one is dropped.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

// Says the output is full after every `batch` messages, as a connection at its bound would;
// keeps the resume callback for the test to run, as the listener hands it to a worker.
struct Output {
  RecordingSink received;
  std::size_t batch = 2;
  std::size_t since_drain = 0;
  bool finished = false;
  std::function<void(threadpool::WorkerState&)> resume;

  bool writable() const { return since_drain < batch; }
  void record(const LdapMessage& message) {
    received.send(message);
    ++since_drain;
  }
  // The client read everything: runs the paused search on `state`. Returns: whether one waited.
  bool drain(threadpool::WorkerState& state) {
    since_drain = 0;
    if (!resume) {
      return false;
    }
    auto run = std::move(resume);
    resume = nullptr;
    run(state);
    return true;
  }
};

class TestOpen final : public listener::OpenOperation {
 public:
  explicit TestOpen(Output& output) : output_(output) {}
  void send(const LdapMessage& message) override { output_.record(message); }
  void finish(const LdapMessage& last_message) override {
    output_.record(last_message);
    output_.finished = true;
  }
  bool abandoned() const override { return output_.received.abandoned(); }
  void set_on_end(std::function<void()>) override {}
  bool writable() const override { return output_.writable(); }
  void set_on_writable(std::function<void(threadpool::WorkerState&)> resume) override {
    REQUIRE_FALSE(output_.resume);
    output_.resume = std::move(resume);
  }

 private:
  Output& output_;
};

class BoundedSink final : public listener::ResponseSink {
 public:
  explicit BoundedSink(Output& output) : output_(output) {}
  void send(const LdapMessage& response) override { output_.record(response); }
  bool abandoned() const override { return output_.received.abandoned(); }
  bool writable() const override { return output_.writable(); }
  std::unique_ptr<listener::OpenOperation> detach() override {
    return std::make_unique<TestOpen>(output_);
  }

 private:
  Output& output_;
};

std::vector<std::string> names_of(const std::vector<std::unique_ptr<Response>>& responses) {
  std::vector<std::string> names;
  for (const auto* entry : entries_of(responses)) {
    names.emplace_back(entry->object_name);
  }
  return names;
}

// Runs a whole-subtree search of the base as the rootdn, draining the output each time it
// pauses; `between` runs at the first pause. Returns: the pauses.
int run_paused(HandlerFixture& fixture, Output& output, const std::function<void()>& between) {
  auto session = fixture.open_session();
  REQUIRE(code_of(*fixture.run_one(bind_request(1, kRootDn, kRootPassword), *session)) ==
          ResultCode::kSuccess);
  BoundedSink sink(output);
  fixture.handler().handle(
      search_request(2, "dc=example,dc=com", SearchScope::kWholeSubtree, "(objectClass=*)"),
      *session, sink, fixture.worker_state());
  int pauses = 0;
  // Another worker's state: the search goes on wherever the pool runs it.
  std::unique_ptr<threadpool::WorkerState> other = fixture.handler().make_worker_state();
  while (!output.finished) {
    REQUIRE(output.resume);
    if (pauses++ == 0) {
      between();
    }
    REQUIRE(output.drain(pauses % 2 == 0 ? fixture.worker_state() : *other));
  }
  return pauses;
}

TEST_CASE("PausedSearch: a search paused at the bound returns every entry once and in order") {
  HandlerFixture reference_fixture;
  auto session = reference_fixture.open_session();
  REQUIRE(code_of(*reference_fixture.run_one(bind_request(1, kRootDn, kRootPassword), *session)) ==
          ResultCode::kSuccess);
  const std::vector<std::string> expected = names_of(reference_fixture.run(
      search_request(2, "dc=example,dc=com", SearchScope::kWholeSubtree, "(objectClass=*)"),
      *session));
  REQUIRE(expected.size() >= 8);

  HandlerFixture fixture;
  Output output;
  const int pauses = run_paused(fixture, output, [] {});
  CHECK(pauses >= static_cast<int>(expected.size() / output.batch) - 1);
  CHECK(names_of(output.received.responses) == expected);
  CHECK(code_of(*output.received.responses.back()) == ResultCode::kSuccess);
}

TEST_CASE("PausedSearch: an update committed during the pause changes nothing it returns") {
  HandlerFixture fixture;
  Output output;
  std::vector<std::string> before_names;
  const int pauses = run_paused(fixture, output, [&] {
    // Deletes an entry not yet sent and adds one: the pinned snapshot has neither change.
    backend::testing::require_ok(fixture.directory().remove(user_dn(5), {}));
    backend::testing::require_ok(fixture.directory().add(
        backend::testing::person_entry("uid=late,ou=people,dc=example,dc=com", "late", "Late",
                                       "Comer"),
        {}));
  });
  CHECK(pauses >= 2);
  const std::vector<std::string> names = names_of(output.received.responses);
  CHECK(std::count(names.begin(), names.end(), user_dn(5)) == 1);
  CHECK(std::count(names.begin(), names.end(), "uid=late,ou=people,dc=example,dc=com") == 0);
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  CHECK(code_of(*output.received.responses.back()) == ResultCode::kSuccess);
}

TEST_CASE("PausedSearch: an abandoned paused search ends without a response") {
  HandlerFixture fixture;
  Output output;
  auto session = fixture.open_session();
  BoundedSink sink(output);
  fixture.handler().handle(
      search_request(2, "dc=example,dc=com", SearchScope::kWholeSubtree, "(objectClass=*)"),
      *session, sink, fixture.worker_state());
  REQUIRE(output.resume);
  const std::size_t sent = output.received.responses.size();
  output.received.abandoned_flag = true;
  REQUIRE(output.drain(fixture.worker_state()));
  CHECK(output.received.responses.size() == sent);
  CHECK_FALSE(output.finished);
  CHECK_FALSE(output.resume);  // Nothing more to run: the search is gone.
}

}  // namespace
}  // namespace numadir::server::testing
