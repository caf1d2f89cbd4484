// OperationHandler (server/operations/operation_handler.h): extended operations (Password Modify,
// StartTLS, unknown ones), controls (paged results, critical ones) and concurrent workers (each
// with its own read transaction, seen in LMDB's reader table).
#include <doctest/doctest.h>
#include <lmdb.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <latch>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"
#include "server/operations/root_dse.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

namespace ber = listener::wire::ber;

ResultCode bind_code(HandlerFixture& fixture, listener::Session& session, std::string_view dn,
                     std::string_view password) {
  return code_of(*fixture.run_one(bind_request(1, dn, password), session));
}

TEST_CASE("OperationHandler: password modify of one's own password") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  REQUIRE(bind_code(fixture, *session, user_dn(1), user_password(1)) == ResultCode::kSuccess);

  SUBCASE("with a new password given") {
    const std::string value = passwd_value(std::nullopt, user_password(1), "brand new");
    std::unique_ptr<Response> response =
        fixture.run_one(extended_request(2, kPasswordModifyOid, value), *session);
    CHECK(response->message.op == ProtocolOp::kExtendedResponse);
    CHECK(code_of(*response) == ResultCode::kSuccess);
    CHECK_FALSE(response->message.extended.value.has_value());
    CHECK(bind_code(fixture, *session, user_dn(1), "brand new") == ResultCode::kSuccess);
    CHECK(bind_code(fixture, *session, user_dn(1), user_password(1)) ==
          ResultCode::kInvalidCredentials);
    auto txn = fixture.directory().begin_read();
    Result<schema::Entry> entry = fixture.directory().get(*txn, user_dn(1));
    REQUIRE(entry.ok());
    CHECK(backend::testing::values_of(*entry, "userPassword").at(0).starts_with("{SSHA256}"));
  }
  SUBCASE("without one the server generates it") {
    std::unique_ptr<Response> response =
        fixture.run_one(extended_request(2, kPasswordModifyOid), *session);
    REQUIRE(code_of(*response) == ResultCode::kSuccess);
    REQUIRE(response->message.extended.value.has_value());
    const std::string generated = gen_passwd(*response->message.extended.value);
    CHECK(generated.size() == 12);
    CHECK(bind_code(fixture, *session, user_dn(1), generated) == ResultCode::kSuccess);
  }
  SUBCASE("a wrong old password is refused") {
    const std::string value = passwd_value(std::nullopt, "not it", "brand new");
    std::unique_ptr<Response> response =
        fixture.run_one(extended_request(2, kPasswordModifyOid, value), *session);
    CHECK(code_of(*response) == ResultCode::kUnwillingToPerform);
    CHECK(bind_code(fixture, *session, user_dn(1), user_password(1)) == ResultCode::kSuccess);
  }
  SUBCASE("another user's password is refused") {
    const std::string value = passwd_value(user_dn(2), std::nullopt, "brand new");
    CHECK(code_of(*fixture.run_one(extended_request(2, kPasswordModifyOid, value), *session)) ==
          ResultCode::kInsufficientAccessRights);
  }
  SUBCASE("malformed values are protocol errors") {
    CHECK(code_of(*fixture.run_one(extended_request(2, kPasswordModifyOid, "\x04\x01x"),
                                   *session)) == ResultCode::kProtocolError);
    CHECK(code_of(*fixture.run_one(extended_request(3, kPasswordModifyOid, ""), *session)) ==
          ResultCode::kProtocolError);
  }
}

TEST_CASE("OperationHandler: password modify needs an authenticated user") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  std::unique_ptr<Response> response =
      fixture.run_one(extended_request(2, kPasswordModifyOid), *session);
  CHECK(code_of(*response) == ResultCode::kStrongerAuthRequired);
  CHECK(response->message.result.diagnostic_message ==
        "only authenticated users may change passwords");
}

TEST_CASE("OperationHandler: the rootdn sets any user's password") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  REQUIRE(bind_code(fixture, *session, kRootDn, kRootPassword) == ResultCode::kSuccess);
  const std::string value = passwd_value(user_dn(3), std::nullopt, "set by admin");
  CHECK(code_of(*fixture.run_one(extended_request(2, kPasswordModifyOid, value), *session)) ==
        ResultCode::kSuccess);
  CHECK(bind_code(fixture, *session, user_dn(3), "set by admin") == ResultCode::kSuccess);
}

TEST_CASE("OperationHandler: StartTLS and unknown extended operations") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  std::unique_ptr<Response> tls = fixture.run_one(extended_request(2, kStartTlsOid), *session);
  CHECK(code_of(*tls) == ResultCode::kUnavailable);
  std::unique_ptr<Response> unknown = fixture.run_one(extended_request(3, "1.2.3.4.5.6"), *session);
  CHECK(unknown->message.op == ProtocolOp::kExtendedResponse);
  CHECK(code_of(*unknown) == ResultCode::kProtocolError);
  CHECK(unknown->message.message_id == 3);
}

TEST_CASE("OperationHandler: a StartTLS the listener answered counts as an extended operation") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  const OperationTotals before = fixture.handler().operation_totals();
  const LdapMessage start = extended_request(2, kStartTlsOid);
  LdapMessage response;
  response.reset(2, ProtocolOp::kExtendedResponse);
  response.extended.name = kStartTlsOid;
  fixture.handler().notice(start, *session, listener::RequestOrigin{}, &response);
  LdapMessage unbind;
  unbind.reset(3, ProtocolOp::kUnbindRequest);
  fixture.handler().notice(unbind, *session, listener::RequestOrigin{}, nullptr);
  const OperationTotals after = fixture.handler().operation_totals();
  CHECK(after.of(OperationKind::kExtended) == before.of(OperationKind::kExtended) + 1);
  CHECK(after.total() == before.total() + 1);  // The unbind is not an operation.
}

TEST_CASE("OperationHandler: controls") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  SUBCASE("an unknown critical control is unavailableCriticalExtension") {
    LdapMessage request = search_request(2, kPeople, SearchScope::kSingleLevel, "(uid=*)");
    request.controls.push_back({"1.2.3.4", true, std::nullopt});
    auto responses = fixture.run(request, *session);
    REQUIRE(responses.size() == 1);
    CHECK(done_of(responses).result.code == ResultCode::kUnavailableCriticalExtension);

    const std::string dn = user_dn(1);
    LdapMessage compare = compare_request(3, dn, "cn", "User 1");
    compare.controls.push_back({"1.2.3.4", true, std::nullopt});
    std::unique_ptr<Response> response = fixture.run_one(compare, *session);
    CHECK(response->message.op == ProtocolOp::kCompareResponse);
    CHECK(code_of(*response) == ResultCode::kUnavailableCriticalExtension);
  }
  SUBCASE("unknown non-critical controls and ManageDsaIT are accepted") {
    LdapMessage request = search_request(2, kPeople, SearchScope::kSingleLevel, "(uid=*)", {"1.1"});
    request.controls.push_back({"1.2.3.4", false, std::nullopt});
    request.controls.push_back({kManageDsaItOid, true, std::nullopt});
    auto responses = fixture.run(request, *session);
    CHECK(entries_of(responses).size() == 5);
    CHECK(done_of(responses).result.code == ResultCode::kSuccess);
  }
}

std::string paged_value(std::int64_t size, std::string_view cookie) {
  listener::wire::BerWriter writer;
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kInteger, size);
  writer.write_octets(ber::kOctetString, cookie);
  writer.end();
  return std::string(writer.view());
}

// Returns: the cookie of the paged results control of a SearchResultDone.
std::string response_cookie(const LdapMessage& done) {
  REQUIRE(done.controls.size() == 1);
  REQUIRE(done.controls[0].type == kPagedResultsOid);
  REQUIRE(done.controls[0].value.has_value());
  listener::wire::BerError error;
  listener::wire::BerReader outer(*done.controls[0].value, error, 2);
  listener::wire::BerReader sequence = outer.enter(ber::kSequence);
  std::int64_t size = -1;
  std::string_view cookie;
  REQUIRE(sequence.read_integer(ber::kInteger, 0, INT32_MAX, size));
  REQUIRE(sequence.read_octets(ber::kOctetString, cookie));
  return std::string(cookie);
}

TEST_CASE("OperationHandler: paged results over three pages") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  auto page = [&](std::int32_t id, std::string_view cookie, std::int64_t size = 2) {
    LdapMessage request =
        search_request(id, kPeople, SearchScope::kSingleLevel, "(objectClass=person)", {"uid"});
    const std::string value = paged_value(size, cookie);
    request.controls.push_back({kPagedResultsOid, true, value});
    return fixture.run(request, *session);
  };
  std::vector<std::string> uids;
  auto collect = [&](const std::vector<std::unique_ptr<Response>>& responses) {
    for (const auto* entry : entries_of(responses)) {
      uids.push_back(values_of(*entry, "uid")->at(0));
    }
  };

  auto first = page(1, "");
  CHECK(entries_of(first).size() == 2);
  CHECK(done_of(first).result.code == ResultCode::kSuccess);
  const std::string cookie1 = response_cookie(done_of(first));
  REQUIRE_FALSE(cookie1.empty());
  collect(first);

  auto second = page(2, cookie1);
  CHECK(entries_of(second).size() == 2);
  const std::string cookie2 = response_cookie(done_of(second));
  REQUIRE_FALSE(cookie2.empty());
  CHECK(cookie2 != cookie1);
  collect(second);

  auto third = page(3, cookie2);
  CHECK(entries_of(third).size() == 1);
  CHECK(done_of(third).result.code == ResultCode::kSuccess);
  CHECK(response_cookie(done_of(third)).empty());
  collect(third);

  std::sort(uids.begin(), uids.end());
  CHECK(uids == std::vector<std::string>{"user1", "user2", "user3", "user4", "user5"});

  SUBCASE("a used cookie is no longer valid") {
    auto again = page(4, cookie1);
    CHECK(done_of(again).result.code == ResultCode::kProtocolError);
  }
  SUBCASE("a cookie from another connection is not valid") {
    auto other = fixture.open_session();
    auto first_other = page(5, "");
    LdapMessage request =
        search_request(6, kPeople, SearchScope::kSingleLevel, "(objectClass=person)", {"uid"});
    const std::string value = paged_value(2, response_cookie(done_of(first_other)));
    request.controls.push_back({kPagedResultsOid, true, value});
    CHECK(done_of(fixture.run(request, *other)).result.code == ResultCode::kProtocolError);
  }
}

// Anonymous pages through the five users with a size limit of 3: the limit counts every page
// (slapd's size.prtotal defaulting to the size limit) unless limits.size_limit_paged lifts it;
// an unpaged search keeps the size limit either way.
TEST_CASE("OperationHandler: the size limit of a paged search over all its pages") {
  const auto pages = [](std::optional<std::uint64_t> paged_limit) {
    HandlerOptions options = default_handler_options();
    options.size_limit_anonymous = 3;
    options.size_limit_paged = paged_limit;
    HandlerFixture fixture(std::move(options));
    auto session = fixture.open_session();
    std::size_t entries = 0;
    std::string cookie;
    ResultCode last = ResultCode::kSuccess;
    for (std::int32_t id = 1; id <= 5; ++id) {
      LdapMessage request =
          search_request(id, kPeople, SearchScope::kSingleLevel, "(objectClass=person)", {"uid"});
      const std::string value = paged_value(2, cookie);
      request.controls.push_back({kPagedResultsOid, true, value});
      auto responses = fixture.run(request, *session);
      entries += entries_of(responses).size();
      last = done_of(responses).result.code;
      if (last != ResultCode::kSuccess) {
        break;
      }
      cookie = response_cookie(done_of(responses));
      if (cookie.empty()) {
        break;
      }
    }
    const auto unpaged = fixture.run(
        search_request(9, kPeople, SearchScope::kSingleLevel, "(objectClass=person)", {"uid"}),
        *session);
    CHECK(done_of(unpaged).result.code == ResultCode::kSizeLimitExceeded);
    CHECK(entries_of(unpaged).size() == 3);
    return std::make_pair(entries, last);
  };
  CHECK(pages(std::nullopt) == std::make_pair(std::size_t{3}, ResultCode::kSizeLimitExceeded));
  CHECK(pages(0) == std::make_pair(std::size_t{5}, ResultCode::kSuccess));
  CHECK(pages(4) == std::make_pair(std::size_t{4}, ResultCode::kSizeLimitExceeded));
}

TEST_CASE("OperationHandler: paged results size zero abandons the paged search") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  auto page = [&](std::int32_t id, std::string_view cookie, std::int64_t size,
                  std::string_view filter = "(objectClass=person)") {
    LdapMessage request = search_request(id, kPeople, SearchScope::kSingleLevel, filter, {"1.1"});
    const std::string value = paged_value(size, cookie);
    request.controls.push_back({kPagedResultsOid, false, value});
    return fixture.run(request, *session);
  };
  auto first = page(1, "", 2);
  const std::string cookie = response_cookie(done_of(first));
  SUBCASE("size zero") {
    auto stop = page(2, cookie, 0);
    CHECK(entries_of(stop).empty());
    CHECK(done_of(stop).result.code == ResultCode::kSuccess);
    CHECK(response_cookie(done_of(stop)).empty());
    CHECK(done_of(page(3, cookie, 2)).result.code == ResultCode::kProtocolError);
  }
  SUBCASE("a cookie used with another search is refused") {
    CHECK(done_of(page(2, cookie, 2, "(uid=*)")).result.code == ResultCode::kProtocolError);
  }
}

// Returns: the LMDB reader table of the environment at `path` as (process id, thread) pairs,
// the thread being the pthread_self() of the thread that took the slot (LMDB records it when a
// read transaction first begins). A child process reads it: LMDB forbids opening one
// environment twice in a process. Requires: no other thread of this process runs (fork).
std::vector<std::pair<long, std::uintptr_t>> reader_slots(const std::filesystem::path& path) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    MDB_env* env = nullptr;
    int rc = mdb_env_create(&env);
    if (rc == MDB_SUCCESS) {
      rc = mdb_env_open(env, path.c_str(), MDB_RDONLY | MDB_NOTLS, 0600);
    }
    if (rc == MDB_SUCCESS) {
      rc = mdb_reader_list(
          env,
          [](const char* line, void* fd) {
            const std::size_t length = std::strlen(line);
            return ::write(*static_cast<int*>(fd), line, length) == static_cast<ssize_t>(length)
                       ? 0
                       : -1;
          },
          &pipe_fds[1]);
    }
    ::_exit(rc == MDB_SUCCESS ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  std::string table;
  char chunk[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], chunk, sizeof(chunk))) > 0;) {
    table.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE_MESSAGE(WIFEXITED(status), table);
  REQUIRE_MESSAGE(WEXITSTATUS(status) == 0, table);
  // "    pid     thread     txnid" then one "%10d %zx <txnid or ->" line per slot.
  std::vector<std::pair<long, std::uintptr_t>> slots;
  std::istringstream lines(table);
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    long pid = 0;
    std::uintptr_t thread = 0;
    if (fields >> pid >> std::hex >> thread) {
      slots.emplace_back(pid, thread);
    }
  }
  return slots;
}

TEST_CASE("OperationHandler: concurrent workers each use their own read transaction") {
  HandlerFixture fixture;
  constexpr int kThreads = 4;
  constexpr int kRounds = 50;
  std::latch start(kThreads);
  std::vector<int> failures(kThreads, 0);
  std::vector<std::uintptr_t> thread_of(kThreads, 0);  // pthread_self(), as LMDB records it.
  std::vector<std::unique_ptr<listener::Session>> sessions;
  for (int t = 0; t < kThreads; ++t) {
    sessions.push_back(fixture.open_session());
  }
  // Each thread makes its own state, as each worker does; they outlive the threads so that the
  // reader table is read while every read transaction still holds its slot (a ReadTxn may be
  // destroyed on another thread: LMDB is opened MDB_NOTLS).
  std::vector<std::unique_ptr<threadpool::WorkerState>> states(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      thread_of[t] = static_cast<std::uintptr_t>(::pthread_self());
      listener::Session* session = sessions[t].get();
      states[t] = fixture.handler().make_worker_state();
      threadpool::WorkerState* state = states[t].get();
      start.arrive_and_wait();  // All four alive at once: their pthread_self() values differ.
      for (int round = 0; round < kRounds; ++round) {
        const int user = 1 + (t + round) % 5;
        RecordingSink search_sink;
        const std::string filter = "(uid=user" + std::to_string(user) + ")";
        fixture.handler().handle(
            search_request(1, kPeople, SearchScope::kWholeSubtree, filter, {"1.1"}), *session,
            search_sink, *state);
        RecordingSink bind_sink;
        fixture.handler().handle(bind_request(2, user_dn(user), user_password(user)), *session,
                                 bind_sink, *state);
        if (search_sink.responses.size() != 2 || bind_sink.responses.size() != 1 ||
            code_of(*bind_sink.responses[0]) != ResultCode::kSuccess) {
          ++failures[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  for (int t = 0; t < kThreads; ++t) {
    CHECK(failures[t] == 0);
  }
  // Each worker state keeps its thread's transaction, and its reader slot, until it is
  // destroyed: each of the four threads holds exactly one slot (its one read transaction, reused
  // for all 100 operations; group lookups, which would add a second, are not configured here).
  const auto slots = reader_slots(fixture.directory().options().path);
  for (int t = 0; t < kThreads; ++t) {
    CAPTURE(t);
    CHECK(std::count(slots.begin(), slots.end(), std::make_pair(long{::getpid()}, thread_of[t])) ==
          1);
  }
}

}  // namespace
}  // namespace numadir::server::testing
