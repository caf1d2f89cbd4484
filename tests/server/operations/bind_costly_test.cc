// Binds against costly stored passwords (server/operations/bind_operation.h): a value over a
// cost ceiling is refused without being hashed and the bind says so once; a bind meeting a
// costly value while it runs inline on a helping thread (a listener) hands the check to a
// worker, which answers through the detached operation; the salted SHA family stays inline.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <latch>
#include <memory>
#include <string>
#include <thread>

#include "server/monitoring/access_log.h"
#include "server/operations/root_dse.h"
#include "server/operations/server_session.h"
#include "tests/server/operations/costly_values.h"
#include "tests/server/operations/operation_handler_test_util.h"
#include "threadpool/worker_pool.h"

namespace numadir::server::testing {
namespace {

const std::string kCostlyPassword = "costly secret";

// Adds kCostlyUser with `values` as its userPassword values.
void add_costly_user(HandlerFixture& fixture, std::vector<std::string> values) {
  schema::Entry entry = backend::testing::person_entry(kCostlyUser, "costly", "Costly", "Hash");
  entry.attributes.push_back({"userPassword", std::move(values)});
  backend::testing::require_ok(fixture.directory().add(entry, {}));
}

TEST_CASE("BindOperation: a bind refuses a value over a ceiling and logs it once") {
  backend::testing::TempDir dir;
  auto log = AccessLog::open(dir.path() / "access.log");
  REQUIRE(log.ok());
  HandlerOptions options = default_handler_options();
  options.refusal_log = log->get();
  HandlerFixture fixture(options);
  add_costly_user(fixture, {kArgon2GiB, kPbkdf2TenMillion});
  auto session = fixture.open_session();
  std::unique_ptr<Response> response =
      fixture.run_one(bind_request(4, kCostlyUser, kCostlyPassword), *session);
  CHECK(code_of(*response) == ResultCode::kInvalidCredentials);
  CHECK(response->message.result.diagnostic_message.empty());  // As every failed bind reads.
  (*log)->flush();
  std::ifstream in(dir.path() / "access.log");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_MESSAGE(
      text.find(" conn=1 msgid=4 BIND dn=\"uid=costly,ou=people,dc=example,dc=com\" "
                "refused a userPassword value without checking it: argon2 memory "
                "1048576 KiB over passwords.max_argon2_memory_kib (65536)\n") != std::string::npos,
      text);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);  // One line for the bind.
  // A cheap value beside them still works.
  schema::Entry extra = backend::testing::person_entry("uid=mixed," + std::string(kPeople), "mixed",
                                                       "Mixed", "Values");
  Result<std::string> ssha = backend::hash_password("mixed", backend::PasswordScheme::kSsha1);
  REQUIRE(ssha.ok());
  extra.attributes.push_back({"userPassword", {kArgon2GiB, *ssha}});
  backend::testing::require_ok(fixture.directory().add(extra, {}));
  bind_as(fixture, *session, "uid=mixed," + std::string(kPeople), "mixed");
}

// Runs one request through the handler as the listener's Request does: a task a helping thread
// may run inline.
class HandleTask final : public threadpool::Task {
 public:
  HandleTask(OperationHandler& handler, const LdapMessage& request, listener::Session& session,
             listener::ResponseSink& sink, std::thread::id* ran_on = nullptr)
      : handler_(handler), request_(request), session_(session), sink_(sink), ran_on_(ran_on) {}
  void run(threadpool::WorkerState& state) override {
    if (ran_on_ != nullptr) {
      *ran_on_ = std::this_thread::get_id();
    }
    handler_.handle(request_, session_, sink_, state);
  }
  bool may_run_inline() const override { return true; }

 private:
  OperationHandler& handler_;
  const LdapMessage& request_;
  listener::Session& session_;
  listener::ResponseSink& sink_;
  std::thread::id* const ran_on_;  // Where run() notes its thread (the task dies after it).
};

// A pool of one worker (the handler's worker states) whose worker can be held, and the test
// thread helping it with its own state, as a listener does.
class HelpedPool {
 public:
  HelpedPool(HandlerFixture& fixture, std::size_t queue_capacity = 8) : fixture_(fixture) {
    threadpool::WorkerPoolOptions options;
    options.threads = 1;
    options.queue_capacity = queue_capacity;
    options.make_worker_state = [&handler = fixture.handler()] {
      return handler.make_worker_state();
    };
    pool_ = std::make_unique<threadpool::WorkerPool>(options);
    pool_->start();
  }
  ~HelpedPool() {
    release();
    pool_->stop();
  }
  threadpool::WorkerPool& pool() { return *pool_; }

  // Keeps the worker busy until release(): what is queued meanwhile waits.
  void hold() {
    std::latch started(1);
    std::unique_ptr<threadpool::Task> blocker = std::make_unique<Blocker>(started, released_);
    REQUIRE(pool_->try_submit(blocker));
    started.wait();
  }
  void release() {
    if (!released_set_) {
      released_set_ = true;
      release_.set_value();
    }
  }
  // Queues `request` and runs it on the test thread as a helper. Returns: the thread it ran on.
  // Requires: the worker is held (otherwise it may take the request first).
  std::thread::id help_with(const LdapMessage& request, listener::Session& session,
                            listener::ResponseSink& sink) {
    std::thread::id ran_on;
    std::unique_ptr<threadpool::Task> queued =
        std::make_unique<HandleTask>(fixture_.handler(), request, session, sink, &ran_on);
    REQUIRE(pool_->try_submit(queued));
    REQUIRE(pool_->try_help(fixture_.worker_state()));
    return ran_on;
  }

 private:
  class Blocker final : public threadpool::Task {
   public:
    Blocker(std::latch& started, std::shared_future<void> released)
        : started_(started), released_(std::move(released)) {}
    void run(threadpool::WorkerState&) override {
      started_.count_down();
      released_.wait();
    }

   private:
    std::latch& started_;
    std::shared_future<void> released_;
  };

  HandlerFixture& fixture_;
  std::unique_ptr<threadpool::WorkerPool> pool_;
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  bool released_set_ = false;
};

TEST_CASE("BindOperation: a costly bind met inline on a helper is checked on a worker") {
  HandlerOptions options = default_handler_options();
  SUBCASE("an entry's value") {}
  SUBCASE("the rootdn's value") { options.root_password = cheap_pbkdf2(kRootPassword); }
  const bool root = options.root_password.starts_with("{PBKDF2");
  HandlerFixture fixture(options);
  add_costly_user(fixture, {cheap_pbkdf2(kCostlyPassword)});
  const std::string dn = root ? std::string(kRootDn) : kCostlyUser;
  const std::string password = root ? std::string(kRootPassword) : kCostlyPassword;
  HelpedPool helped(fixture);
  auto session = fixture.open_session();
  helped.hold();
  const LdapMessage bind = bind_request(5, dn, password);
  DetachingSink sink;
  CHECK(helped.help_with(bind, *session, sink) == std::this_thread::get_id());
  CHECK(sink.detached);  // Not answered on the helper: handed to the pool.
  {
    const std::lock_guard lock(sink.record->mu);
    CHECK(sink.record->responses.responses.empty());
  }
  CHECK(helped.pool().queue_depth() == 1);
  CHECK_FALSE(helped.pool().try_help(fixture.worker_state()));  // Only for a worker.
  helped.release();
  sink.record->wait_released();
  const std::lock_guard lock(sink.record->mu);
  CHECK(sink.record->finished_on != std::thread::id{});
  CHECK(sink.record->finished_on != std::this_thread::get_id());
  REQUIRE(sink.record->responses.responses.size() == 1);
  const Response& response = *sink.record->responses.responses[0];
  CHECK(response.message.message_id == 5);
  CHECK(response.message.op == ProtocolOp::kBindResponse);
  CHECK(code_of(response) == ResultCode::kSuccess);
  const Identity identity = static_cast<ServerSession&>(*session).identity();
  CHECK(identity.root == root);
  CHECK(identity.dn == dn);
}

TEST_CASE(
    "BindOperation: a cheap bind on a helper is answered there and a wrong costly one on a "
    "worker") {
  HandlerFixture fixture;
  add_costly_user(fixture, {cheap_pbkdf2(kCostlyPassword)});
  HelpedPool helped(fixture);
  auto session = fixture.open_session();
  helped.hold();
  DetachingSink cheap;
  const std::string ssha_dn = user_dn(3);  // The request's views need them to live.
  const std::string ssha_password = user_password(3);
  const LdapMessage ssha_bind = bind_request(6, ssha_dn, ssha_password);
  helped.help_with(ssha_bind, *session, cheap);
  CHECK_FALSE(cheap.detached);
  REQUIRE(cheap.record->responses.responses.size() == 1);
  CHECK(code_of(*cheap.record->responses.responses[0]) == ResultCode::kSuccess);

  DetachingSink wrong;
  const LdapMessage wrong_bind = bind_request(7, kCostlyUser, "not it");
  helped.help_with(wrong_bind, *session, wrong);
  CHECK(wrong.detached);
  helped.release();
  wrong.record->wait_released();
  const std::lock_guard lock(wrong.record->mu);
  CHECK(wrong.record->finished_on != std::this_thread::get_id());
  REQUIRE(wrong.record->responses.responses.size() == 1);
  CHECK(code_of(*wrong.record->responses.responses[0]) == ResultCode::kInvalidCredentials);
  CHECK(static_cast<ServerSession&>(*session).identity().anonymous());
}

// A pool whose queue is always full (or which is stopping): it refuses every task, and lends a
// helper's state to a task as a pool does (TaskPool::run_as_helper).
class RefusingPool final : public threadpool::TaskPool {
 public:
  RefusingPool() : TaskPool(threadpool::WorkerPoolOptions{}) {}
  void stop() override {}
  bool try_submit(std::unique_ptr<threadpool::Task>&) override {
    ++refused;
    return false;
  }
  bool try_help(threadpool::WorkerState&) override { return false; }
  std::size_t queue_depth() const override { return 0; }
  std::size_t queue_high_water() const override { return 0; }
  // Runs `task` on the calling thread as a helper of this pool.
  void help_with(threadpool::Task& task, threadpool::WorkerState& state) {
    run_as_helper(task, state);
  }

  int refused = 0;

 private:
  void run_worker(std::size_t) override {}
  bool has_room() const override { return false; }
};

TEST_CASE("BindOperation: a handed bind ended meanwhile is dropped and a full pool answers busy") {
  HandlerFixture fixture;
  add_costly_user(fixture, {cheap_pbkdf2(kCostlyPassword)});
  auto session = fixture.open_session();
  const LdapMessage bind = bind_request(8, kCostlyUser, kCostlyPassword);
  SUBCASE("ended by the listener before a worker took it") {
    HelpedPool helped(fixture);
    helped.hold();
    DetachingSink sink;
    helped.help_with(bind, *session, sink);
    REQUIRE(sink.detached);
    sink.record->abandoned = true;  // An unbind or a close.
    helped.release();
    sink.record->wait_released();
    const std::lock_guard lock(sink.record->mu);
    CHECK(sink.record->responses.responses.empty());
    CHECK_FALSE(sink.record->finished);
  }
  SUBCASE("the pool refuses the handed bind") {
    RefusingPool pool;
    DetachingSink sink;
    HandleTask task(fixture.handler(), bind, *session, sink);
    pool.help_with(task, fixture.worker_state());
    CHECK(sink.detached);
    CHECK(pool.refused == 1);
    sink.record->wait_released();
    const std::lock_guard lock(sink.record->mu);
    REQUIRE(sink.record->responses.responses.size() == 1);
    CHECK(code_of(*sink.record->responses.responses[0]) == ResultCode::kBusy);
    CHECK(sink.record->finished_on == std::this_thread::get_id());
  }
}

}  // namespace
}  // namespace numadir::server::testing
