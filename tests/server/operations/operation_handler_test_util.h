// tests/server/operation_handler_test_util.h: a real Directory in a temp dir with a small tree
// (dc=example,dc=com, ou=people with five users, ou=groups), an OperationHandler over it, a
// ResponseSink that re-encodes and decodes every response as the wire would carry it, and
// builders for request messages.
//
// Thread contract: test-thread only, except RecordingSink, which may be used by one thread at a
// time (each threaded test gives each thread its own), and OpenRecord, which is locked.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "backend/password_scheme.h"
#include "listener/wire/ber_reader.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "server/operations/operation_handler.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::server::testing {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;
using listener::wire::ResultCode;
using listener::wire::SearchScope;

inline constexpr std::string_view kPeople = "ou=people,dc=example,dc=com";
inline constexpr std::string_view kRootDn = "cn=admin,dc=example,dc=com";
inline constexpr std::string_view kRootPassword = "admin secret";

inline std::string user_dn(int i) {
  return "uid=user" + std::to_string(i) + "," + std::string(kPeople);
}
inline std::string user_password(int i) { return "password" + std::to_string(i); }

// One response as a client would decode it: the PDU and the message viewing it.
struct Response {
  std::string pdu;
  LdapMessage message;
};

class RecordingSink final : public listener::ResponseSink {
 public:
  void send(const LdapMessage& response) override {
    listener::wire::BerWriter writer;
    listener::wire::encode_message(response, writer);
    auto decoded = std::make_unique<Response>();
    decoded->pdu = std::string(writer.view());
    const Status status = listener::wire::decode_message(decoded->pdu, decoded->message);
    REQUIRE_MESSAGE(status.ok(), status.to_string());
    responses.push_back(std::move(decoded));
    if (abandon_after.has_value() && responses.size() >= *abandon_after) {
      abandoned_flag = true;
    }
  }
  bool abandoned() const override { return abandoned_flag.load(); }

  std::vector<std::unique_ptr<Response>> responses;
  std::optional<std::size_t> abandon_after;  // Abandoned once this many responses were sent.
  std::atomic<bool> abandoned_flag{false};
};

// What a DetachingSink's open operation did, shared with the test (the operation itself is
// owned, then destroyed, by whoever the handler gave it to: the writer's job, a worker's task).
// Locked: another thread finishes it.
struct OpenRecord {
  std::mutex mu;
  std::condition_variable changed;
  RecordingSink responses;      // Guarded by mu.
  bool finished = false;        // Guarded by mu.
  bool released = false;        // Guarded by mu.
  std::thread::id finished_on;  // Guarded by mu: the thread that sent the last response.
  std::atomic<bool> abandoned{false};

  // Waits until the operation was released (destroyed), by whichever thread.
  void wait_released() {
    std::unique_lock lock(mu);
    changed.wait(lock, [this] { return released; });
  }
};

class TestOpenOperation final : public listener::OpenOperation {
 public:
  explicit TestOpenOperation(std::shared_ptr<OpenRecord> record) : record_(std::move(record)) {}
  ~TestOpenOperation() override {
    const std::lock_guard lock(record_->mu);
    record_->released = true;
    record_->changed.notify_all();
  }
  void send(const LdapMessage& message) override {
    const std::lock_guard lock(record_->mu);
    if (!record_->abandoned) {
      record_->responses.send(message);
    }
  }
  void finish(const LdapMessage& last_message) override {
    const std::lock_guard lock(record_->mu);
    REQUIRE_FALSE(record_->finished);
    record_->finished = true;
    record_->finished_on = std::this_thread::get_id();
    if (!record_->abandoned) {  // As the listener: a response after the end is dropped.
      record_->responses.send(last_message);
    }
  }
  bool abandoned() const override { return record_->abandoned; }
  void set_on_end(std::function<void()> on_end) override { (void)on_end; }

 private:
  const std::shared_ptr<OpenRecord> record_;
};

// A sink that can keep its operation open, as the listener's.
class DetachingSink final : public listener::ResponseSink {
 public:
  void send(const LdapMessage& response) override { record->responses.send(response); }
  bool abandoned() const override { return record->abandoned; }
  std::unique_ptr<listener::OpenOperation> detach() override {
    detached = true;
    return std::make_unique<TestOpenOperation>(record);
  }

  std::shared_ptr<OpenRecord> record = std::make_shared<OpenRecord>();
  bool detached = false;
};

inline HandlerOptions default_handler_options() {
  HandlerOptions options;
  options.root_dn = std::string(kRootDn);
  Result<std::string> hashed =
      backend::hash_password(kRootPassword, backend::PasswordScheme::kSsha512);
  REQUIRE(hashed.ok());
  options.root_password = std::move(*hashed);
  options.default_password_scheme = backend::PasswordScheme::kSsha256;
  options.vendor_version = "numadir test";
  return options;
}

// A directory with the base tree and users 1..5 (user1 also has cn;lang-de and mail), and a
// handler over it, with `rules` compiled as the server compiles them (none: the default policy).
class HandlerFixture {
 public:
  explicit HandlerFixture(HandlerOptions options = default_handler_options(),
                          const std::vector<AccessRuleSpec>& rules = {}) {
    directory_ = backend::testing::open_directory(backend::testing::test_options(dir_.path()));
    if (!rules.empty()) {
      catalog_ = std::make_unique<backend::AttributeCatalog>(directory_->schema());
      Result<std::unique_ptr<AccessControl>> compiled =
          OperationContext::compile_access_rules(*catalog_, rules);
      REQUIRE_MESSAGE(compiled.ok(), compiled.status().to_string());
      access_ = std::move(*compiled);
      options.access = access_.get();
    }
    backend::testing::add_base_tree(*directory_);
    for (int i = 1; i <= 5; ++i) {
      schema::Entry entry = backend::testing::person_entry(user_dn(i), "user" + std::to_string(i),
                                                           "User " + std::to_string(i), "Smith");
      Result<std::string> hashed =
          backend::hash_password(user_password(i), backend::PasswordScheme::kSsha1);
      REQUIRE(hashed.ok());
      entry.attributes.push_back({"userPassword", {std::move(*hashed)}});
      if (i == 1) {
        entry.attributes.push_back({"cn;lang-de", {"Benutzer Eins"}});
        entry.attributes.push_back({"mail", {"user1@example.com"}});
      }
      backend::testing::require_ok(directory_->add(entry, {}));
    }
    handler_ = std::make_unique<OperationHandler>(*directory_, std::move(options));
    state_ = handler_->make_worker_state();
  }

  OperationHandler& handler() { return *handler_; }
  backend::Directory& directory() { return *directory_; }

  std::unique_ptr<listener::Session> open_session() {
    listener::ConnectionInfo info;
    info.id = ++connections_;
    info.peer = "127.0.0.1:40000";
    info.local_port = 389;
    return handler_->open_session(info);
  }
  // A session of a connection as `info` describes it (an ldapi:// one with peer credentials).
  std::unique_ptr<listener::Session> open_session(listener::ConnectionInfo info) {
    info.id = ++connections_;
    return handler_->open_session(info);
  }

  // The test thread's worker state (another thread makes its own with make_worker_state()).
  threadpool::WorkerState& worker_state() { return *state_; }
  // Runs `request` on `session` with the test thread's worker state, responding to `sink`.
  void handle(const LdapMessage& request, listener::Session& session, RecordingSink& sink) {
    handler_->handle(request, session, sink, *state_);
  }
  // Runs `request` on `session` and returns its responses.
  std::vector<std::unique_ptr<Response>> run(const LdapMessage& request,
                                             listener::Session& session) {
    RecordingSink sink;
    handle(request, session, sink);
    return std::move(sink.responses);
  }
  // Runs `request` and returns its single response. Requires: exactly one was sent.
  std::unique_ptr<Response> run_one(const LdapMessage& request, listener::Session& session) {
    std::vector<std::unique_ptr<Response>> responses = run(request, session);
    REQUIRE(responses.size() == 1);
    CHECK(responses[0]->message.message_id == request.message_id);
    return std::move(responses[0]);
  }

 private:
  backend::testing::TempDir dir_;
  std::unique_ptr<backend::Directory> directory_;       // Outlives handler_ (declared first).
  std::unique_ptr<backend::AttributeCatalog> catalog_;  // The rules' filters use it.
  std::unique_ptr<const AccessControl> access_;         // Outlives handler_ too.
  std::unique_ptr<OperationHandler> handler_;
  std::unique_ptr<threadpool::WorkerState> state_;  // Destroyed before handler_ (declared after).
  std::uint64_t connections_ = 0;
};

// ---- Request builders ----

inline LdapMessage bind_request(std::int32_t id, std::string_view dn, std::string_view password) {
  LdapMessage message;
  message.message_id = id;
  message.op = ProtocolOp::kBindRequest;
  message.bind_request.name = dn;
  message.bind_request.simple_password = password;
  return message;
}

inline LdapMessage add_request(
    std::int32_t id, std::string_view dn,
    std::vector<std::pair<std::string_view, std::vector<std::string_view>>> attributes) {
  LdapMessage message;
  message.message_id = id;
  message.op = ProtocolOp::kAddRequest;
  message.add_request.entry = dn;
  for (const auto& [type, values] : attributes) {
    message.add_request.attributes.add(type);
    for (std::string_view value : values) {
      message.add_request.attributes.add_value(value);
    }
  }
  return message;
}

inline LdapMessage modify_request(std::int32_t id, std::string_view dn,
                                  listener::wire::ModifyOperation operation, std::string_view type,
                                  std::vector<std::string_view> values) {
  LdapMessage message;
  message.message_id = id;
  message.op = ProtocolOp::kModifyRequest;
  message.modify_request.object = dn;
  message.modify_request.operations.push_back(operation);
  message.modify_request.modifications.add(type);
  for (std::string_view value : values) {
    message.modify_request.modifications.add_value(value);
  }
  return message;
}

inline LdapMessage search_request(std::int32_t id, std::string_view base, SearchScope scope,
                                  std::string_view filter,
                                  std::vector<std::string_view> attributes = {}) {
  LdapMessage message;
  message.message_id = id;
  message.op = ProtocolOp::kSearchRequest;
  message.search_request.base_object = base;
  message.search_request.scope = scope;
  message.search_request.filter = backend::testing::parse_filter(filter);
  message.search_request.attributes = std::move(attributes);
  return message;
}

inline LdapMessage compare_request(std::int32_t id, std::string_view dn, std::string_view attribute,
                                   std::string_view value) {
  LdapMessage message;
  message.message_id = id;
  message.op = ProtocolOp::kCompareRequest;
  message.compare_request = {dn, attribute, value};
  return message;
}

inline LdapMessage extended_request(std::int32_t id, std::string_view oid,
                                    std::optional<std::string_view> value = std::nullopt) {
  LdapMessage message;
  message.message_id = id;
  message.op = ProtocolOp::kExtendedRequest;
  message.extended.name = oid;
  message.extended.value = value;
  return message;
}

// Returns: an encoded PasswdModifyRequestValue with the fields given.
inline std::string passwd_value(std::optional<std::string_view> user,
                                std::optional<std::string_view> old_password,
                                std::optional<std::string_view> new_password) {
  listener::wire::BerWriter writer;
  writer.begin(listener::wire::ber::kSequence);
  if (user.has_value()) {
    writer.write_octets(listener::wire::ber::context(0), *user);
  }
  if (old_password.has_value()) {
    writer.write_octets(listener::wire::ber::context(1), *old_password);
  }
  if (new_password.has_value()) {
    writer.write_octets(listener::wire::ber::context(2), *new_password);
  }
  writer.end();
  return std::string(writer.view());
}

// Returns: genPasswd from a PasswdModifyResponseValue.
inline std::string gen_passwd(std::string_view value) {
  listener::wire::BerError error;
  listener::wire::BerReader outer(value, error, 2);
  listener::wire::BerReader sequence = outer.enter(listener::wire::ber::kSequence);
  std::string_view generated;
  REQUIRE(sequence.read_octets(listener::wire::ber::context(0), generated));
  REQUIRE(sequence.at_end());
  return std::string(generated);
}

inline LdapMessage delete_request(std::int32_t id, std::string_view dn) {
  LdapMessage message;
  message.message_id = id;
  message.op = ProtocolOp::kDelRequest;
  message.dn = dn;
  return message;
}

// ---- Response readers ----

inline ResultCode code_of(const Response& response) { return response.message.result.code; }

// Returns: the SearchResultEntry messages of `responses`, in order.
inline std::vector<const listener::wire::SearchResultEntry*> entries_of(
    const std::vector<std::unique_ptr<Response>>& responses) {
  std::vector<const listener::wire::SearchResultEntry*> out;
  for (const auto& response : responses) {
    if (response->message.op == ProtocolOp::kSearchResultEntry) {
      out.push_back(&response->message.search_entry);
    }
  }
  return out;
}

// Returns: the last response, which must be a SearchResultDone.
inline const LdapMessage& done_of(const std::vector<std::unique_ptr<Response>>& responses) {
  REQUIRE(!responses.empty());
  REQUIRE(responses.back()->message.op == ProtocolOp::kSearchResultDone);
  return responses.back()->message;
}

// Returns: the attribute descriptions of `entry`, in order.
inline std::vector<std::string> types_of(const listener::wire::SearchResultEntry& entry) {
  std::vector<std::string> out;
  for (const auto& attribute : entry.attributes.attributes()) {
    out.emplace_back(attribute.type);
  }
  return out;
}

// Returns: the values of attribute `type` (exact description) in `entry`; nullopt if absent.
inline std::optional<std::vector<std::string>> values_of(
    const listener::wire::SearchResultEntry& entry, std::string_view type) {
  for (const auto& attribute : entry.attributes.attributes()) {
    if (attribute.type == type) {
      std::vector<std::string> out;
      for (std::string_view value : entry.attributes.values(attribute)) {
        out.emplace_back(value);
      }
      return out;
    }
  }
  return std::nullopt;
}

inline bool has_type(const listener::wire::SearchResultEntry& entry, std::string_view type) {
  return values_of(entry, type).has_value();
}

// ---- Steps ----

inline void bind_as(HandlerFixture& fixture, listener::Session& session, std::string_view dn,
                    std::string_view password) {
  REQUIRE(code_of(*fixture.run_one(bind_request(1, dn, password), session)) ==
          ResultCode::kSuccess);
}

// Returns: the values of `type` in the stored entry `dn`, read as the rootdn would.
inline std::vector<std::string> stored_values(HandlerFixture& fixture, std::string_view dn,
                                              std::string_view type) {
  auto txn = fixture.directory().begin_read();
  Result<schema::Entry> entry = fixture.directory().get(*txn, dn);
  REQUIRE_MESSAGE(entry.ok(), entry.status().to_string());
  return backend::testing::values_of(*entry, type);
}

}  // namespace numadir::server::testing
