// Tests of server/operations/result_sender.h: every response re-encoded and decoded as a client
// would read it (RecordingSink).
#include "server/operations/result_sender.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "listener/wire/ber_writer.h"
#include "server/operations/root_dse.h"
#include "server/operations/search_paging.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

LdapMessage request_of(std::int32_t id, ProtocolOp op) {
  LdapMessage request;
  request.message_id = id;
  request.op = op;
  return request;
}

TEST_CASE("ResultSender: a result carries the response controls added before it") {
  const LdapMessage request = request_of(7, ProtocolOp::kSearchRequest);
  RecordingSink sink;
  ResultSender sender(request, sink);
  const std::string paged = paged_response_value("cookie");
  {
    std::string value = paged;  // Copied by the sender: this buffer may go first.
    sender.add_response_control(kPagedResultsOid, false, value);
  }
  sender.add_response_control("1.2.3.4", true, std::nullopt);
  sender.send_result(OwnedResult::error(ResultCode::kSizeLimitExceeded, "too many"));
  REQUIRE(sink.responses.size() == 1);
  const LdapMessage& done = sink.responses[0]->message;
  CHECK(done.message_id == 7);
  CHECK(done.op == ProtocolOp::kSearchResultDone);
  CHECK(done.result.code == ResultCode::kSizeLimitExceeded);
  CHECK(done.result.diagnostic_message == "too many");
  REQUIRE(done.controls.size() == 2);
  CHECK(done.controls[0].type == kPagedResultsOid);
  CHECK_FALSE(done.controls[0].criticality);
  CHECK(done.controls[0].value == std::optional<std::string_view>(paged));
  CHECK(done.controls[1] == listener::wire::Control{"1.2.3.4", true, std::nullopt});

  SUBCASE("the controls go with one result only") {
    sender.send_result(OwnedResult::success());
    REQUIRE(sink.responses.size() == 2);
    CHECK(sink.responses[1]->message.controls.empty());
  }
}

TEST_CASE("ResultSender: extended and status results take the pending controls too") {
  const LdapMessage request = request_of(3, ProtocolOp::kExtendedRequest);
  RecordingSink sink;
  ResultSender sender(request, sink);
  sender.add_response_control("1.3.6.1.4.1.42.2.27.8.5.1", false, std::string_view("\x30\x00", 2));
  sender.send_extended(OwnedResult::success(), std::string_view("value"));
  sender.add_response_control("1.2.3", false, std::nullopt);
  sender.send_status(Status(StatusCode::kNoSuchObject, "dc=example,dc=com"));
  REQUIRE(sink.responses.size() == 2);
  const LdapMessage& first = sink.responses[0]->message;
  CHECK(first.op == ProtocolOp::kExtendedResponse);
  CHECK(first.extended.value == std::optional<std::string_view>("value"));
  REQUIRE(first.controls.size() == 1);
  CHECK(first.controls[0].value ==
        std::optional<std::string_view>(std::string_view("\x30\x00", 2)));
  const LdapMessage& second = sink.responses[1]->message;
  CHECK(second.op == ProtocolOp::kExtendedResponse);  // A Status of an extended request.
  CHECK(second.result.code == ResultCode::kNoSuchObject);
  CHECK(second.result.matched_dn == "dc=example,dc=com");
  REQUIRE(second.controls.size() == 1);
  CHECK(second.controls[0].type == "1.2.3");
}

TEST_CASE("ResultSender: an intermediate response goes out before the result and keeps it open") {
  const LdapMessage request = request_of(11, ProtocolOp::kSearchRequest);
  RecordingSink sink;
  ResultSender sender(request, sink);
  sender.add_response_control("1.2.3", false, std::nullopt);  // For the result, not for this.
  const listener::wire::Control own{"1.2.4", false, std::string_view("x")};
  sender.send_intermediate(std::string_view("1.3.6.1.4.1.4203.1.9.1.4"),
                           std::string_view("\xa0\x00", 2), std::span(&own, 1));
  sender.send_intermediate(std::nullopt, std::nullopt);
  sender.send_result(OwnedResult::success());
  REQUIRE(sink.responses.size() == 3);
  const LdapMessage& info = sink.responses[0]->message;
  CHECK(info.message_id == 11);
  CHECK(info.op == ProtocolOp::kIntermediateResponse);
  CHECK(info.extended.name == std::optional<std::string_view>("1.3.6.1.4.1.4203.1.9.1.4"));
  CHECK(info.extended.value == std::optional<std::string_view>(std::string_view("\xa0\x00", 2)));
  REQUIRE(info.controls.size() == 1);
  CHECK(info.controls[0].type == "1.2.4");
  const LdapMessage& bare = sink.responses[1]->message;
  CHECK(bare.op == ProtocolOp::kIntermediateResponse);
  CHECK_FALSE(bare.extended.name.has_value());
  CHECK_FALSE(bare.extended.value.has_value());
  CHECK(bare.controls.empty());
  const LdapMessage& done = sink.responses[2]->message;
  CHECK(done.op == ProtocolOp::kSearchResultDone);
  REQUIRE(done.controls.size() == 1);
  CHECK(done.controls[0].type == "1.2.3");
}

TEST_CASE("ResultSender: each request gets the response it calls for") {
  const auto op_answering = [](ProtocolOp op) {
    const LdapMessage request = request_of(1, op);
    RecordingSink sink;
    ResultSender sender(request, sink);
    sender.send_result(OwnedResult::success());
    return sink.responses.empty() ? std::optional<ProtocolOp>() : sink.responses[0]->message.op;
  };
  CHECK(op_answering(ProtocolOp::kBindRequest) == ProtocolOp::kBindResponse);
  CHECK(op_answering(ProtocolOp::kCompareRequest) == ProtocolOp::kCompareResponse);
  CHECK(op_answering(ProtocolOp::kModifyDnRequest) == ProtocolOp::kModifyDnResponse);
  CHECK(op_answering(ProtocolOp::kDelRequest) == ProtocolOp::kDelResponse);
  CHECK_FALSE(op_answering(ProtocolOp::kUnbindRequest).has_value());  // No response.
}

TEST_CASE("ResultSender: a denied update names a missing entry noSuchObject") {
  const LdapMessage request = request_of(5, ProtocolOp::kDelRequest);
  RecordingSink sink;
  ResultSender sender(request, sink);
  const OwnedResult denied =
      OwnedResult::error(ResultCode::kInsufficientAccessRights, "no write access to entry");
  sender.send_denied(Status(StatusCode::kNoSuchObject, "ou=people,dc=example,dc=com"), denied);
  sender.send_denied(Status(), denied);
  sender.send_update_result(Status());
  sender.send_update_result(Status(StatusCode::kNotAllowedOnNonLeaf, "subordinate objects"));
  REQUIRE(sink.responses.size() == 4);
  CHECK(code_of(*sink.responses[0]) == ResultCode::kNoSuchObject);
  CHECK(sink.responses[0]->message.result.matched_dn == "ou=people,dc=example,dc=com");
  CHECK(code_of(*sink.responses[1]) == ResultCode::kInsufficientAccessRights);
  CHECK(sink.responses[1]->message.result.diagnostic_message == "no write access to entry");
  CHECK(code_of(*sink.responses[2]) == ResultCode::kSuccess);
  CHECK(code_of(*sink.responses[3]) == ResultCode::kNotAllowedOnNonLeaf);
}

TEST_CASE("ResultSender: send_entry stamps the request's message ID") {
  const LdapMessage request = request_of(42, ProtocolOp::kSearchRequest);
  RecordingSink sink;
  ResultSender sender(request, sink);
  LdapMessage entry;
  entry.op = ProtocolOp::kSearchResultEntry;
  entry.search_entry.object_name = "dc=example,dc=com";
  sender.send_entry(entry);
  CHECK_FALSE(sender.abandoned());
  REQUIRE(sink.responses.size() == 1);
  CHECK(sink.responses[0]->message.message_id == 42);
  CHECK(sink.responses[0]->message.search_entry.object_name == "dc=example,dc=com");
}

}  // namespace
}  // namespace numadir::server::testing
