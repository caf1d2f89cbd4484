// server/operations/result_sender.h: ResultSender, how an operation answers its request: the final
// result in the response the request calls for (BindResponse for a BindRequest, ...; an
// ExtendedResponse with its value), the result for a failed Status (logged once when the client
// is not at fault), search entries, and intermediate responses (RFC 4511 §4.13). Response
// controls added before the result go out with it (the Paged Results control of a search's
// SearchResultDone, RFC 2696).
//
// Thread contract: made on the worker running the request, for that request alone, and used by
// that worker only; it borrows the request and the listener's ResponseSink for the call.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "listener/request_handler.h"
#include "listener/wire/ldap_message.h"
#include "server/operations/result_codes.h"

namespace numadir::server {

class OperationMeter;

// Returns: the response operation answering request `op` (kBindResponse for kBindRequest, ...),
//   or nullopt for operations that have none (unbind, abandon, responses).
std::optional<listener::wire::ProtocolOp> response_op(listener::wire::ProtocolOp op);

class ResultSender {
 public:
  // Requires: `request`, `sink` and `meter` outlive the sender. With a `meter`
  // (server/monitoring/operation_meter.h: metrics on, for the request's handle()), the first
  // result sent and a detach() are reported to it.
  ResultSender(const listener::wire::LdapMessage& request, listener::ResponseSink& sink,
               OperationMeter* meter = nullptr)
      : request_(request), sink_(sink), meter_(meter) {}
  ResultSender(const ResultSender&) = delete;
  ResultSender& operator=(const ResultSender&) = delete;

  const listener::wire::LdapMessage& request() const { return request_; }
  // Returns: true once the operation was abandoned (it then sends nothing more: RFC 4511 §4.11).
  bool abandoned() const { return sink_.abandoned(); }
  // Returns: whether the connection takes more output now (ResponseSink::writable).
  bool writable() const { return sink_.writable(); }
  // Returns: the sink's ResponseSink::detach() (nullptr if it cannot keep the operation open);
  //   once it returned an operation, this sender must send nothing more.
  std::unique_ptr<listener::OpenOperation> detach();

  // Attaches a control (OID `type`, its value if given; both copied) to the next result sent
  // (send_result, send_extended, send_status, send_denied, send_update_result); the result
  // takes every control added since the previous one, in order.
  void add_response_control(std::string_view type, bool criticality,
                            std::optional<std::string_view> value);

  // Sends the response the request calls for with `result` (nothing for a request without one).
  void send_result(const OwnedResult& result);
  // Sends an ExtendedResponse with `result` and, when given, responseValue `value`.
  void send_extended(const OwnedResult& result, std::optional<std::string_view> value);
  // Sends the result for a failed Status (result_from_status), logging storage and internal
  // errors once to standard error.
  void send_status(const Status& status);
  // Sends `denied` for an update of an entry that access control refuses, unless `found` (the
  // status of looking that entry up) says it does not exist: then noSuchObject with its matched
  // DN, as slapd, which finds the entry first.
  void send_denied(const Status& found, const OwnedResult& denied);
  // Sends success for an ok `status` (an ExtendedResponse with responseValue `value` when one
  // is given), else as send_status (the end of every update).
  void send_update_result(const Status& status,
                          const std::optional<std::string>& value = std::nullopt);

  // Sends `entry` (a SearchResultEntry or SearchResultReference the caller built) as it is,
  // with the request's message ID.
  void send_entry(listener::wire::LdapMessage& entry);
  // Sends an IntermediateResponse with responseName `name` and responseValue `value` (each
  // left out when absent) and `controls`. It is not the final response: the pending controls
  // stay for the result.
  void send_intermediate(std::optional<std::string_view> name,
                         std::optional<std::string_view> value,
                         std::span<const listener::wire::Control> controls = {});

 private:
  struct OwnedControl {
    std::string type;
    bool criticality = false;
    std::optional<std::string> value;
  };

  // Fills `response` with the request's message ID, `op` and `result`, moves the pending
  // controls onto it, and sends it.
  void send_final(listener::wire::LdapMessage& response, listener::wire::ProtocolOp op,
                  const OwnedResult& result);

  const listener::wire::LdapMessage& request_;
  listener::ResponseSink& sink_;
  OperationMeter* const meter_;
  std::vector<OwnedControl> controls_;  // For the next result; empty (no allocation) mostly.
};

// A ResponseSink over an OpenOperation, for a ResultSender answering an operation after its
// handle() returned: the final response (one with an LDAPResult) finishes the operation, the
// others are sent through it. Thread contract: as OpenOperation's holder (one call at a time).
class OpenOperationSink final : public listener::ResponseSink {
 public:
  // Requires: `open` outlives the sink and is not finished.
  explicit OpenOperationSink(listener::OpenOperation& open) : open_(open) {}
  void send(const listener::wire::LdapMessage& response) override;
  bool abandoned() const override { return open_.abandoned(); }
  bool writable() const override { return open_.writable(); }

 private:
  listener::OpenOperation& open_;
};

}  // namespace numadir::server
