// server/operations/result_sender.cc: see result_sender.h.
#include "server/operations/result_sender.h"

#include <cstdio>
#include <utility>

#include "server/monitoring/operation_meter.h"

namespace numadir::server {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;

std::optional<ProtocolOp> response_op(ProtocolOp op) {
  switch (op) {
    case ProtocolOp::kBindRequest:
      return ProtocolOp::kBindResponse;
    case ProtocolOp::kSearchRequest:
      return ProtocolOp::kSearchResultDone;
    case ProtocolOp::kModifyRequest:
      return ProtocolOp::kModifyResponse;
    case ProtocolOp::kAddRequest:
      return ProtocolOp::kAddResponse;
    case ProtocolOp::kDelRequest:
      return ProtocolOp::kDelResponse;
    case ProtocolOp::kModifyDnRequest:
      return ProtocolOp::kModifyDnResponse;
    case ProtocolOp::kCompareRequest:
      return ProtocolOp::kCompareResponse;
    case ProtocolOp::kExtendedRequest:
      return ProtocolOp::kExtendedResponse;
    default:
      return std::nullopt;
  }
}

void ResultSender::add_response_control(std::string_view type, bool criticality,
                                        std::optional<std::string_view> value) {
  OwnedControl control{std::string(type), criticality, std::nullopt};
  if (value.has_value()) {
    control.value.emplace(*value);
  }
  controls_.push_back(std::move(control));
}

void ResultSender::send_final(LdapMessage& response, ProtocolOp op, const OwnedResult& result) {
  response.message_id = request_.message_id;
  response.op = op;
  response.result.code = result.code;
  response.result.matched_dn = result.matched_dn;
  response.result.diagnostic_message = result.diagnostic;
  for (const std::string& referral : result.referrals) {
    response.result.referrals.push_back(referral);
  }
  for (const OwnedControl& control : controls_) {
    std::optional<std::string_view> value;
    if (control.value.has_value()) {
      value = *control.value;
    }
    response.controls.push_back({control.type, control.criticality, value});
  }
  sink_.send(response);
  if (meter_ != nullptr) {
    meter_->resulted(response.result.code);
  }
  controls_.clear();
}

std::unique_ptr<listener::OpenOperation> ResultSender::detach() {
  std::unique_ptr<listener::OpenOperation> open = sink_.detach();
  if (meter_ != nullptr) {
    return meter_->detached(std::move(open));
  }
  return open;
}

void ResultSender::send_result(const OwnedResult& result) {
  const std::optional<ProtocolOp> op = response_op(request_.op);
  if (!op.has_value()) {
    return;
  }
  LdapMessage response;
  send_final(response, *op, result);
}

void ResultSender::send_extended(const OwnedResult& result, std::optional<std::string_view> value) {
  LdapMessage response;
  response.extended.value = value;
  send_final(response, ProtocolOp::kExtendedResponse, result);
}

void ResultSender::send_status(const Status& status) {
  const OwnedResult result = result_from_status(status);
  if (result.code == ResultCode::kOther) {
    std::fprintf(stderr, "numadir: %s (message %d): %s\n",
                 std::string(listener::wire::protocol_op_name(request_.op)).c_str(),
                 request_.message_id, status.to_string().c_str());
  }
  if (request_.op == ProtocolOp::kExtendedRequest) {
    send_extended(result, std::nullopt);
  } else {
    send_result(result);
  }
}

void ResultSender::send_denied(const Status& found, const OwnedResult& denied) {
  if (found.code() == StatusCode::kNoSuchObject) {
    send_status(found);
    return;
  }
  send_result(denied);
}

void ResultSender::send_update_result(const Status& status,
                                      const std::optional<std::string>& value) {
  if (!status.ok()) {
    send_status(status);
    return;
  }
  if (value.has_value()) {
    send_extended(OwnedResult::success(), *value);
    return;
  }
  send_result(OwnedResult::success());
}

void ResultSender::send_entry(LdapMessage& entry) {
  entry.message_id = request_.message_id;
  sink_.send(entry);
}

void ResultSender::send_intermediate(std::optional<std::string_view> name,
                                     std::optional<std::string_view> value,
                                     std::span<const listener::wire::Control> controls) {
  LdapMessage response;
  response.message_id = request_.message_id;
  response.op = ProtocolOp::kIntermediateResponse;
  response.extended.name = name;
  response.extended.value = value;
  response.controls.assign(controls.begin(), controls.end());
  sink_.send(response);
}

void OpenOperationSink::send(const LdapMessage& response) {
  if (listener::wire::has_ldap_result(response.op)) {
    open_.finish(response);
  } else {
    open_.send(response);
  }
}

}  // namespace numadir::server
