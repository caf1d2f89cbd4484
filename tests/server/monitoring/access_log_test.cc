#include "server/monitoring/access_log.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "listener/wire/ber_writer.h"
#include "listener/wire/message_encoder.h"
#include "schema/filter.h"
#include "server/monitoring/logging_handler.h"
#include "tests/read_file.h"

namespace numadir::server {
namespace {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;

using numadir::testing::read_file;

std::filesystem::path temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "numadir-log-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  return pattern;
}

TEST_CASE("AccessLog: a file that cannot be opened is an error naming it") {
  auto log = AccessLog::open("/nonexistent-dir-numadir/access.log");
  REQUIRE_FALSE(log.ok());
  CHECK(log.status().message().find("/nonexistent-dir-numadir/access.log") != std::string::npos);
}

TEST_CASE("AccessLog: levels parse and a bad one is refused") {
  CHECK(*parse_log_level("off") == LogLevel::kOff);
  CHECK(*parse_log_level("stats") == LogLevel::kStats);
  CHECK(*parse_log_level("debug") == LogLevel::kDebug);
  CHECK_FALSE(parse_log_level("verbose").ok());
  CHECK(*parse_log_format("text") == LogFormat::kText);
  CHECK(*parse_log_format("json") == LogFormat::kJson);
  CHECK_FALSE(parse_log_format("xml").ok());
}

TEST_CASE("LoggingHandler: describes each kind of request") {
  LdapMessage bind;
  bind.reset(1, ProtocolOp::kBindRequest);
  bind.bind_request.name = "uid=a,dc=x";
  CHECK(describe_request(bind) == "BIND dn=\"uid=a,dc=x\" method=128");
  LdapMessage search;
  search.reset(2, ProtocolOp::kSearchRequest);
  search.search_request.base_object = "dc=x";
  search.search_request.scope = listener::wire::SearchScope::kWholeSubtree;
  search.search_request.filter = *schema::Filter::parse("(uid=a\"b)");
  search.search_request.attributes = {"1.1"};
  CHECK(describe_request(search) ==
        "SRCH base=\"dc=x\" scope=2 deref=0 filter=\"(uid=a\\\"b)\" attrs=\"1.1\"");
}

// The worker state Scripted makes: handle() counts the requests that came with one.
class ScriptedState : public LoggingWorkerState {};

// An inner handler that answers a search with two entries and a bind with invalidCredentials.
class Scripted : public listener::RequestHandler {
 public:
  std::unique_ptr<listener::Session> open_session(const listener::ConnectionInfo&) override {
    return std::make_unique<listener::Session>();
  }
  std::unique_ptr<listener::RequestWorkerState> make_worker_state() override {
    return std::make_unique<ScriptedState>();
  }
  void handle(const LdapMessage& request, listener::Session&, listener::ResponseSink& sink,
              threadpool::WorkerState& state) override {
    if (dynamic_cast<ScriptedState*>(&state) != nullptr) {
      ++with_own_state;
    }
    LdapMessage response;
    if (request.op == ProtocolOp::kSearchRequest) {
      for (const char* dn : {"uid=a,dc=x", "uid=b,dc=x"}) {
        response.reset(request.message_id, ProtocolOp::kSearchResultEntry);
        response.search_entry.object_name = dn;
        sink.send(response);
      }
      response.reset(request.message_id, ProtocolOp::kSearchResultDone);
    } else {
      response.reset(request.message_id, ProtocolOp::kBindResponse);
      response.result.code = listener::wire::ResultCode::kInvalidCredentials;
    }
    sink.send(response);
  }

  int with_own_state = 0;
};

class CountingSink : public listener::ResponseSink {
 public:
  void send(const LdapMessage&) override { ++sent; }
  bool abandoned() const override { return false; }
  listener::RequestOrigin origin() const override { return {number, {}}; }
  int sent = 0;
  std::uint64_t number = 0;
};

TEST_CASE("LoggingHandler: logs the connection and each operation with its result") {
  const std::filesystem::path dir = temp_dir();
  auto log = AccessLog::open(dir / "access.log");
  REQUIRE(log.ok());
  Scripted inner;
  SUBCASE("stats") {
    LoggingHandler handler(inner, **log, LogLevel::kStats);
    listener::ConnectionInfo info;
    info.id = 7;
    info.peer = "127.0.0.1:5555";
    info.local_port = 389;
    auto session = handler.open_session(info);
    const std::unique_ptr<threadpool::WorkerState> state = handler.make_worker_state();
    LdapMessage search;
    search.reset(1, ProtocolOp::kSearchRequest);
    search.search_request.base_object = "dc=x";
    search.search_request.filter = *schema::Filter::parse("(uid=*)");
    CountingSink sink;
    handler.handle(search, *session, sink, *state);
    CHECK(sink.sent == 3);  // The client still gets everything.
    LdapMessage bind;
    bind.reset(2, ProtocolOp::kBindRequest);
    bind.bind_request.name = "uid=a,dc=x";
    sink.number = 1;
    handler.handle(bind, *session, sink, *state);
    CHECK(inner.with_own_state == 2);  // The inner handler's state, passed through.
    LdapMessage abandon;
    abandon.reset(3, ProtocolOp::kAbandonRequest);
    abandon.abandon_id = 1;
    handler.notice(abandon, *session, {2, {}}, nullptr);
    LdapMessage unbind;
    unbind.reset(4, ProtocolOp::kUnbindRequest);
    handler.notice(unbind, *session, {3, {}}, nullptr);
    session.reset();
    (*log)->flush();
    const std::string text = read_file(dir / "access.log");
    CAPTURE(text);
    CHECK(text.find("conn=7 ACCEPT from IP=127.0.0.1:5555 (port 389)\n") != std::string::npos);
    CHECK(text.find("conn=7 op=0 msgid=1 SRCH base=\"dc=x\" scope=0") != std::string::npos);
    CHECK(text.find("conn=7 op=0 msgid=1 SEARCH RESULT tag=101 err=0 nentries=2 etime=") !=
          std::string::npos);
    CHECK(text.find("conn=7 op=1 msgid=2 BIND dn=\"uid=a,dc=x\" method=128\n") !=
          std::string::npos);
    CHECK(text.find("conn=7 op=1 msgid=2 RESULT tag=97 err=49 etime=") != std::string::npos);
    CHECK(text.find("conn=7 op=2 msgid=3 ABANDON msg=1\n") != std::string::npos);
    CHECK(text.find("conn=7 op=3 msgid=4 UNBIND\n") != std::string::npos);
    CHECK(text.find("conn=7 op=3 msgid=4 UNBIND\n") < text.find("conn=7 closed\n"));
    CHECK(text.find("conn=7 closed\n") != std::string::npos);
    CHECK(text.find("ENTRY") == std::string::npos);
  }
  SUBCASE("debug lists the entries") {
    LoggingHandler handler(inner, **log, LogLevel::kDebug);
    auto session = handler.open_session(listener::ConnectionInfo{});
    const std::unique_ptr<threadpool::WorkerState> state = handler.make_worker_state();
    LdapMessage search;
    search.reset(3, ProtocolOp::kSearchRequest);
    search.search_request.base_object = "dc=x";
    search.search_request.filter = *schema::Filter::parse("(uid=*)");
    CountingSink sink;
    handler.handle(search, *session, sink, *state);
    (*log)->flush();
    const std::string text = read_file(dir / "access.log");
    CAPTURE(text);
    CHECK(text.find("msgid=3 ENTRY dn=\"uid=a,dc=x\"\n") != std::string::npos);
    CHECK(text.find("msgid=3 ENTRY dn=\"uid=b,dc=x\"\n") != std::string::npos);
    CHECK(text.find("ENTRY dn=\"uid=b,dc=x\"") < text.find("SEARCH RESULT"));
  }
  log->reset();
  std::filesystem::remove_all(dir);
}

// 2023-11-14T22:13:20Z as the wall-clock time of monotonic time 0.
constexpr std::int64_t kWallOffsetNs = std::int64_t{1700000000} * 1000000000;

Record result_record() {
  Record record;
  record.kind = RecordKind::kResult;
  record.time_ns = 1500;  // 1.5 us after the offset.
  record.conn = 4;
  record.op = 2;
  record.msgid = 9;
  record.numbers[0] = 101;
  record.numbers[1] = 32;
  record.numbers[2] = 0;
  record.numbers[3] = 46000;
  record.strings[0] = "no such \"entry\"";
  return record;
}

TEST_CASE("Record: encoding round-trips every field") {
  Record record = result_record();
  record.strings[2] = std::string_view("a\0b", 3);
  std::string bytes;
  encode_record(record, bytes);
  CHECK(encoded_size(bytes) == bytes.size());
  const Record decoded = decode_record(bytes);
  CHECK(decoded.kind == RecordKind::kResult);
  CHECK(decoded.time_ns == 1500);
  CHECK(decoded.conn == 4);
  CHECK(decoded.op == 2);
  CHECK(decoded.msgid == 9);
  CHECK(decoded.numbers[3] == 46000);
  CHECK(decoded.strings[0] == record.strings[0]);
  CHECK(decoded.strings[1].empty());
  CHECK(decoded.strings[2] == std::string_view("a\0b", 3));
  const std::size_t capacity = bytes.capacity();
  encode_record(record, bytes);
  CHECK(bytes.capacity() == capacity);  // A reused buffer does not grow again.
}

TEST_CASE("LineFormatter: text lines as slapd writes them") {
  LineFormatter formatter(LogFormat::kText);
  formatter.set_wall_offset(kWallOffsetNs);
  std::string out;
  formatter.append_line(result_record(), out);
  CHECK(out ==
        "2023-11-14T22:13:20.000001Z conn=4 op=2 msgid=9 SEARCH RESULT tag=101 err=32 nentries=0 "
        "etime=0.000046 text=\"no such \\\"entry\\\"\"\n");
  // Quotes and backslashes escaped, line breaks made spaces (one line per event), the rest as
  // it is; an etime of whole seconds.
  Record odd = result_record();
  odd.strings[0] = "a\\b\r\nc\"d";
  odd.numbers[3] = 2'000'000'999;
  out.clear();
  formatter.append_line(odd, out);
  CHECK(out.ends_with("etime=2.000000 text=\"a\\\\b  c\\\"d\"\n"));
  Record accept;
  accept.kind = RecordKind::kAccept;
  accept.time_ns = 2000000;
  accept.conn = 4;
  accept.numbers[0] = 389;
  accept.strings[0] = "127.0.0.1:5555";
  out.clear();
  formatter.append_line(accept, out);
  CHECK(out == "2023-11-14T22:13:20.002000Z conn=4 ACCEPT from IP=127.0.0.1:5555 (port 389)\n");
  // An ldapi:// connection, as slapd logs it.
  accept.numbers[0] = 0;
  accept.strings[0] = "PATH=/run/numadir/ldapi";
  out.clear();
  formatter.append_line(accept, out);
  CHECK(out ==
        "2023-11-14T22:13:20.002000Z conn=4 ACCEPT from PATH=/run/numadir/ldapi "
        "(PATH=/run/numadir/ldapi)\n");
  Record tls;
  tls.kind = RecordKind::kTls;
  tls.conn = 4;
  tls.strings[0] = "TLSv1.3";
  tls.strings[1] = "TLS_AES_256_GCM_SHA384";
  tls.strings[2] = "CN=client";
  tls.numbers[0] = 1;
  tls.numbers[1] = 1;
  out.clear();
  formatter.append_line(tls, out);
  CHECK(out ==
        "2023-11-14T22:13:20.000000Z conn=4 TLS established tls_proto=TLSv1.3 "
        "tls_cipher=TLS_AES_256_GCM_SHA384 resumed peer=\"CN=client\" unverified\n");
  Record message;
  message.strings[0] = "a line of its own";
  out.clear();
  formatter.append_line(message, out);
  CHECK(out == "2023-11-14T22:13:20.000000Z a line of its own\n");
}

TEST_CASE("LineFormatter: the widest numbers of a line are all written") {
  // Every number a result line carries at its widest, in both formats: the bounded pieces a
  // line is built from hold them all.
  Record wide = result_record();
  wide.conn = std::numeric_limits<std::uint64_t>::max();
  wide.op = std::numeric_limits<std::uint64_t>::max();
  wide.msgid = std::numeric_limits<std::int64_t>::max();
  wide.numbers[0] = std::numeric_limits<std::int64_t>::min();
  wide.numbers[1] = std::numeric_limits<std::int64_t>::min();
  wide.numbers[2] = std::numeric_limits<std::int64_t>::max();
  wide.numbers[3] = std::numeric_limits<std::int64_t>::max();
  LineFormatter text(LogFormat::kText);
  text.set_wall_offset(kWallOffsetNs);
  std::string out;
  text.append_line(wide, out);
  CHECK(out.ends_with(
      " conn=18446744073709551615 op=18446744073709551615 msgid=9223372036854775807 SEARCH "
      "RESULT tag=-9223372036854775808 err=-9223372036854775808 nentries=9223372036854775807 "
      "etime=9223372036.854775 text=\"no such \\\"entry\\\"\"\n"));
  LineFormatter json(LogFormat::kJson);
  json.set_wall_offset(kWallOffsetNs);
  out.clear();
  json.append_line(wide, out);
  CHECK(out.find("\"conn\":18446744073709551615,\"op\":18446744073709551615,\"msgid\":"
                 "9223372036854775807,\"type\":\"RESULT\",\"tag\":-9223372036854775808") !=
        std::string::npos);
  CHECK(out.ends_with("\"etime\":9223372036.854775,\"text\":\"no such \\\"entry\\\"\"}\n"));
}

TEST_CASE("LineFormatter: a request's PDU is decoded and described") {
  LdapMessage search;
  search.reset(2, ProtocolOp::kSearchRequest);
  search.search_request.base_object = "dc=x";
  search.search_request.filter = *schema::Filter::parse("(uid=a)");
  search.search_request.attributes = {"1.1"};
  listener::wire::BerWriter writer;
  listener::wire::encode_message(search, writer);
  Record record;
  record.kind = RecordKind::kRequest;
  record.conn = 1;
  record.op = 0;
  record.msgid = 2;
  record.strings[0] = writer.view();
  for (const LogFormat format : {LogFormat::kText, LogFormat::kJson}) {
    LineFormatter formatter(format);
    formatter.set_wall_offset(kWallOffsetNs);
    std::string out;
    formatter.append_line(record, out);
    CHECK(out == (format == LogFormat::kText
                      ? "2023-11-14T22:13:20.000000Z conn=1 op=0 msgid=2 SRCH base=\"dc=x\" "
                        "scope=0 deref=0 filter=\"(uid=a)\" attrs=\"1.1\"\n"
                      : "{\"time\":\"2023-11-14T22:13:20.000000Z\",\"conn\":1,\"op\":0,"
                        "\"msgid\":2,\"type\":\"SRCH\",\"base\":\"dc=x\",\"scope\":0,"
                        "\"deref\":0,\"filter\":\"(uid=a)\",\"attrs\":\"1.1\"}\n"));
  }
}

TEST_CASE("LineFormatter: JSON escapes quotes and control bytes and replaces what is not UTF-8") {
  LineFormatter formatter(LogFormat::kJson);
  formatter.set_wall_offset(kWallOffsetNs);
  Record record = result_record();
  record.strings[0] = "q\"b\\n\nc\x01 \xc3\xa9 \xff\xc3 \xed\xa0\x80";
  std::string out;
  formatter.append_line(record, out);
  CHECK(out ==
        "{\"time\":\"2023-11-14T22:13:20.000001Z\",\"conn\":4,\"op\":2,\"msgid\":9,"
        "\"type\":\"RESULT\",\"tag\":101,\"err\":32,\"nentries\":0,\"etime\":0.000046,"
        "\"text\":\"q\\\"b\\\\n\\u000ac\\u0001 \xc3\xa9 \\ufffd\\ufffd "
        "\\ufffd\\ufffd\\ufffd\"}\n");
}

std::size_t count_lines(const std::string& text, std::string_view part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

TEST_CASE("AccessLog: records from many threads come out whole and in order with none lost") {
  const std::filesystem::path dir = temp_dir();
  auto log = AccessLog::open(dir / "access.log");
  REQUIRE(log.ok());
  constexpr int kThreads = 4;
  constexpr int kOps = 5000;
  // Each thread logs kOps request/result pairs through its own writer; every tenth result is
  // written by another thread, through the shared writer, as an operation kept open finishes.
  std::mutex handed_mu;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> handed;  // (conn, op)
  std::atomic<bool> done{false};
  std::thread finisher([&] {
    for (;;) {
      // Read before the swap: once done is seen, every hand-off is already in `handed`.
      const bool finished = done.load();
      std::vector<std::pair<std::uint64_t, std::uint64_t>> batch;
      {
        std::lock_guard lock(handed_mu);
        batch.swap(handed);
      }
      for (const auto& [conn, op] : batch) {
        Record result = result_record();
        result.conn = conn;
        result.op = op;
        result.time_ns = monotonic_ns();
        (*log)->write_shared(result);
      }
      if (batch.empty() && finished) {
        return;
      }
      std::this_thread::yield();
    }
  });
  LdapMessage bind;
  bind.reset(1, ProtocolOp::kBindRequest);
  bind.bind_request.name = "uid=a";
  listener::wire::BerWriter bind_pdu;
  listener::wire::encode_message(bind, bind_pdu);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      LogWriter& writer = (*log)->make_writer();
      for (int op = 0; op < kOps; ++op) {
        Record request;
        request.kind = RecordKind::kRequest;
        request.conn = static_cast<std::uint64_t>(t + 1);
        request.op = static_cast<std::uint64_t>(op);
        request.msgid = op + 1;
        request.strings[0] = bind_pdu.view();
        request.time_ns = monotonic_ns();
        writer.write(request);
        if (op % 10 == 0) {
          std::lock_guard lock(handed_mu);
          handed.emplace_back(request.conn, request.op);
        } else {
          Record result = result_record();
          result.conn = request.conn;
          result.op = request.op;
          result.time_ns = monotonic_ns();
          writer.write(result);
        }
        if (op % 500 == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));  // A server's pace.
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  done = true;
  finisher.join();
  (*log)->flush();
  CHECK((*log)->dropped() == 0);
  const std::string text = read_file(dir / "access.log");
  CHECK(count_lines(text, "\n") == std::size_t{2} * kThreads * kOps);
  CHECK(count_lines(text, " BIND ") == std::size_t{kThreads} * kOps);
  // Each request's line comes before its result's, and each thread's requests come in the order
  // it wrote them. (Lines of different threads may step back in time: a thread that read the
  // clock and was preempted before it wrote the record is formatted in a later batch.)
  std::map<std::string, std::size_t> requests;
  std::map<std::string, long long> last_op;  // conn= -> op of its last request line.
  std::size_t misordered = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t time_end = line.find(' ');
    const std::size_t key_end = line.find(" msgid=");
    REQUIRE(key_end != std::string::npos);
    const std::string key = line.substr(time_end + 1, key_end - time_end - 1);  // conn= op=
    if (line.find(" BIND ") != std::string::npos) {
      requests.emplace(key, 1);
      const std::string conn = key.substr(0, key.find(' '));
      const long long op = std::stoll(key.substr(key.find(" op=") + 4));
      misordered += last_op.count(conn) == 1 && last_op[conn] >= op ? 1 : 0;
      last_op[conn] = op;
    } else {
      misordered += requests.count(key) == 1 ? 0 : 1;
    }
  }
  CHECK(misordered == 0);
  CHECK(requests.size() == std::size_t{kThreads} * kOps);
  log->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("AccessLog: a record its ring has no room for is dropped counted and reported") {
  const std::filesystem::path dir = temp_dir();
  // A ring smaller than any record: each one is dropped.
  auto log = AccessLog::open(dir / "access.log", LogFormat::kText, 16);
  REQUIRE(log.ok());
  LogWriter& writer = (*log)->make_writer();
  for (int i = 0; i < 5; ++i) {
    writer.write(result_record());
  }
  CHECK((*log)->dropped() == 5);
  (*log)->flush();
  const std::string text = read_file(dir / "access.log");
  CAPTURE(text);
  CHECK(count_lines(text, "\n") == 1);
  CHECK(text.find(" access log: 5 lines dropped (the log fell behind)\n") != std::string::npos);
  log->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("LoggingHandler: StartTLS and a request abandoned before it ran are logged") {
  const std::filesystem::path dir = temp_dir();
  auto log = AccessLog::open(dir / "access.log", LogFormat::kJson);
  REQUIRE(log.ok());
  Scripted inner;
  LoggingHandler handler(inner, **log, LogLevel::kStats);
  listener::ConnectionInfo info;
  info.id = 5;
  auto session = handler.open_session(info);
  LdapMessage start_tls;
  start_tls.reset(1, ProtocolOp::kExtendedRequest);
  start_tls.extended.name = listener::wire::kStartTlsOid;
  LdapMessage response;
  response.reset(1, ProtocolOp::kExtendedResponse);
  handler.notice(start_tls, *session, {0, {}}, &response);
  LdapMessage search;
  search.reset(2, ProtocolOp::kSearchRequest);
  search.search_request.filter = *schema::Filter::parse("(uid=*)");
  handler.not_run(search, *session, {1, {}});
  session.reset();
  (*log)->flush();
  const std::string text = read_file(dir / "access.log");
  CAPTURE(text);
  CHECK(text.find("\"conn\":5,\"op\":0,\"msgid\":1,\"type\":\"EXT\","
                  "\"oid\":\"1.3.6.1.4.1.1466.20037\"}\n") != std::string::npos);
  CHECK(text.find("\"conn\":5,\"op\":0,\"msgid\":1,\"type\":\"RESULT\",\"tag\":120,"
                  "\"err\":0,") != std::string::npos);
  CHECK(text.find("\"conn\":5,\"op\":1,\"msgid\":2,\"type\":\"SRCH\"") != std::string::npos);
  CHECK(text.find("\"conn\":5,\"op\":1,\"msgid\":2,\"type\":\"ABANDONED\"") != std::string::npos);
  CHECK(text.find("\"type\":\"CLOSED\"") != std::string::npos);
  log->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace numadir::server
