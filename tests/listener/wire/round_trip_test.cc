// Round-trip property test: for randomized messages of every operation, decode(encode(m)) == m
// and encoding the decoded message gives the same bytes. Seeded; the seed is printed, and
// NUMADIR_TEST_SEED=<n> reruns one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"

namespace numadir::listener::wire {
namespace {

using schema::Filter;
using schema::FilterKind;

constexpr ProtocolOp kAllOps[] = {
    ProtocolOp::kBindRequest,         ProtocolOp::kBindResponse,
    ProtocolOp::kUnbindRequest,       ProtocolOp::kSearchRequest,
    ProtocolOp::kSearchResultEntry,   ProtocolOp::kSearchResultDone,
    ProtocolOp::kModifyRequest,       ProtocolOp::kModifyResponse,
    ProtocolOp::kAddRequest,          ProtocolOp::kAddResponse,
    ProtocolOp::kDelRequest,          ProtocolOp::kDelResponse,
    ProtocolOp::kModifyDnRequest,     ProtocolOp::kModifyDnResponse,
    ProtocolOp::kCompareRequest,      ProtocolOp::kCompareResponse,
    ProtocolOp::kAbandonRequest,      ProtocolOp::kSearchResultReference,
    ProtocolOp::kExtendedRequest,     ProtocolOp::kExtendedResponse,
    ProtocolOp::kIntermediateResponse};

// Builds random messages whose strings live in the generator's arena.
class MessageGenerator {
 public:
  explicit MessageGenerator(std::uint64_t seed) : rng_(seed) {}

  void fill(LdapMessage& m) {
    const ProtocolOp op = kAllOps[uniform(0, std::size(kAllOps) - 1)];
    m.reset(random_int32(), op);
    switch (op) {
      case ProtocolOp::kBindRequest:
        m.bind_request.version = static_cast<std::int32_t>(uniform(1, 127));
        m.bind_request.name = text();
        switch (uniform(0, 2)) {
          case 0:
            m.bind_request.method = BindMethod::kSimple;
            m.bind_request.simple_password = bytes();
            break;
          case 1:
            m.bind_request.method = BindMethod::kSasl;
            m.bind_request.sasl_mechanism = text();
            if (coin()) {
              m.bind_request.sasl_credentials = bytes();
            }
            break;
          default: {
            // Any context tag number but simple's 0 and sasl's 3, either form, raw content.
            std::uint8_t number = static_cast<std::uint8_t>(uniform(1, 29));
            number = number >= 3 ? number + 1 : number;
            m.bind_request.method = BindMethod::kUnsupported;
            m.bind_request.unsupported_tag =
                static_cast<std::uint8_t>(0x80 | (coin() ? 0x20 : 0) | number);
            m.bind_request.unsupported_credentials = bytes();
            break;
          }
        }
        break;
      case ProtocolOp::kBindResponse:
        fill_result(m.result);
        if (coin()) {
          m.server_sasl_creds = bytes();
        }
        break;
      case ProtocolOp::kSearchRequest: {
        SearchRequest& s = m.search_request;
        s.base_object = text();
        s.scope = static_cast<SearchScope>(uniform(0, 3));
        s.deref_aliases = static_cast<DerefAliases>(uniform(0, 3));
        s.size_limit =
            static_cast<std::int32_t>(uniform(0, std::numeric_limits<std::int32_t>::max()));
        s.time_limit = static_cast<std::int32_t>(uniform(0, 1000));
        s.types_only = coin();
        fill_filter(s.filter, 0);
        for (std::size_t i = uniform(0, 4); i > 0; --i) {
          s.attributes.push_back(text());
        }
        break;
      }
      case ProtocolOp::kSearchResultEntry:
        m.search_entry.object_name = text();
        fill_attributes(m.search_entry.attributes, 0);
        break;
      case ProtocolOp::kSearchResultReference:
        for (std::size_t i = uniform(1, 3); i > 0; --i) {
          m.uris.push_back(text());
        }
        break;
      case ProtocolOp::kModifyRequest:
        m.modify_request.object = text();
        fill_attributes(m.modify_request.modifications, 0);
        for (std::size_t i = 0; i < m.modify_request.modifications.size(); ++i) {
          m.modify_request.operations.push_back(static_cast<ModifyOperation>(uniform(0, 3)));
        }
        break;
      case ProtocolOp::kAddRequest:
        m.add_request.entry = text();
        fill_attributes(m.add_request.attributes, 1);
        break;
      case ProtocolOp::kDelRequest:
        m.dn = text();
        break;
      case ProtocolOp::kModifyDnRequest:
        m.modify_dn_request.entry = text();
        m.modify_dn_request.new_rdn = text();
        m.modify_dn_request.delete_old_rdn = coin();
        if (coin()) {
          m.modify_dn_request.new_superior = text();
        }
        break;
      case ProtocolOp::kCompareRequest:
        m.compare_request = {text(), text(), bytes()};
        break;
      case ProtocolOp::kAbandonRequest:
        m.abandon_id = random_int32();
        break;
      case ProtocolOp::kExtendedRequest:
        m.extended.name = text();
        if (coin()) {
          m.extended.value = bytes();
        }
        break;
      case ProtocolOp::kExtendedResponse:
        fill_result(m.result);
        fill_extended(m.extended);
        break;
      case ProtocolOp::kIntermediateResponse:
        fill_extended(m.extended);
        break;
      case ProtocolOp::kUnbindRequest:
        break;
      case ProtocolOp::kSearchResultDone:
      case ProtocolOp::kModifyResponse:
      case ProtocolOp::kAddResponse:
      case ProtocolOp::kDelResponse:
      case ProtocolOp::kModifyDnResponse:
      case ProtocolOp::kCompareResponse:
        fill_result(m.result);
        break;
    }
    for (std::size_t i = uniform(0, 2); i > 0; --i) {
      Control control{text(), coin(), std::nullopt};
      if (coin()) {
        control.value = bytes();
      }
      m.controls.push_back(control);
    }
  }

 private:
  std::uint64_t uniform(std::uint64_t lo, std::uint64_t hi) {
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng_);
  }
  bool coin() { return uniform(0, 1) == 1; }
  std::int32_t random_int32() {
    // Favor the edges of the encodings' length classes.
    static constexpr std::int32_t kEdges[] = {0,
                                              1,
                                              127,
                                              128,
                                              255,
                                              256,
                                              32767,
                                              32768,
                                              65535,
                                              65536,
                                              8388607,
                                              8388608,
                                              std::numeric_limits<std::int32_t>::max()};
    if (coin()) {
      return kEdges[uniform(0, std::size(kEdges) - 1)];
    }
    return static_cast<std::int32_t>(uniform(0, std::numeric_limits<std::int32_t>::max()));
  }
  // A string of a length that sometimes crosses the 127 / 255 byte length forms.
  std::string_view make_string(bool binary) {
    static constexpr std::size_t kLengths[] = {0, 1, 5, 20, 127, 128, 255, 256, 300};
    const std::size_t length = kLengths[uniform(0, std::size(kLengths) - 1)];
    std::string s(length, '\0');
    for (char& c : s) {
      c = binary ? static_cast<char>(uniform(0, 255)) : static_cast<char>(uniform('a', 'z'));
    }
    return arena_.emplace_back(std::move(s));
  }
  std::string_view text() { return make_string(false); }
  std::string_view bytes() { return make_string(true); }
  std::string_view non_empty_text() {
    std::string_view s = text();
    return s.empty() ? arena_.emplace_back("x") : s;
  }

  void fill_result(LdapResult& result) {
    result.code = static_cast<ResultCode>(uniform(0, 80));
    result.matched_dn = text();
    result.diagnostic_message = text();
    if (coin()) {
      for (std::size_t i = uniform(1, 3); i > 0; --i) {
        result.referrals.push_back(text());
      }
    }
  }
  void fill_extended(ExtendedFields& extended) {
    if (coin()) {
      extended.name = text();
    }
    if (coin()) {
      extended.value = bytes();
    }
  }
  void fill_attributes(AttributeList& list, std::uint64_t min_values) {
    for (std::size_t i = uniform(0, 4); i > 0; --i) {
      list.add(text());
      for (std::size_t j = uniform(min_values, 3); j > 0; --j) {
        list.add_value(bytes());
      }
    }
  }
  void fill_filter(Filter& filter, int depth) {
    const std::uint64_t choice = uniform(depth >= 4 ? 3 : 0, 9);
    switch (choice) {
      case 0:
      case 1: {
        const std::uint32_t index = filter.open(choice == 0 ? FilterKind::kAnd : FilterKind::kOr);
        for (std::size_t i = uniform(0, 3); i > 0; --i) {
          fill_filter(filter, depth + 1);
        }
        filter.close(index);
        return;
      }
      case 2: {
        const std::uint32_t index = filter.open(FilterKind::kNot);
        fill_filter(filter, depth + 1);
        filter.close(index);
        return;
      }
      case 3:
        filter.add_leaf(FilterKind::kEquality, text(), bytes());
        return;
      case 4:
        filter.add_leaf(FilterKind::kGreaterOrEqual, text(), bytes());
        return;
      case 5:
        filter.add_leaf(FilterKind::kLessOrEqual, text(), bytes());
        return;
      case 6:
        filter.add_leaf(FilterKind::kApprox, text(), bytes());
        return;
      case 7:
        filter.add_leaf(FilterKind::kPresent, text());
        return;
      case 8: {
        const std::uint32_t index = filter.open(FilterKind::kSubstrings, text());
        const bool initial = coin();
        const std::size_t any = uniform(0, 3);
        const bool final = coin() || (!initial && any == 0);
        if (initial) {
          filter.add_leaf(FilterKind::kSubInitial, {}, bytes());
        }
        for (std::size_t i = 0; i < any; ++i) {
          filter.add_leaf(FilterKind::kSubAny, {}, bytes());
        }
        if (final) {
          filter.add_leaf(FilterKind::kSubFinal, {}, bytes());
        }
        filter.close(index);
        return;
      }
      default: {
        // Extensible: a rule, a type or both (an empty string means absent).
        std::string_view rule;
        std::string_view type;
        switch (uniform(0, 2)) {
          case 0:
            rule = non_empty_text();
            break;
          case 1:
            type = non_empty_text();
            break;
          default:
            rule = non_empty_text();
            type = non_empty_text();
            break;
        }
        const std::uint32_t index = filter.add_leaf(FilterKind::kExtensible, type, bytes());
        filter.set_extensible(index, rule, coin());
        return;
      }
    }
  }

  std::mt19937_64 rng_;
  std::deque<std::string> arena_;
};

std::uint64_t test_seed() {
  if (const char* env = std::getenv("NUMADIR_TEST_SEED")) {
    return std::strtoull(env, nullptr, 10);
  }
  return std::random_device{}();
}

TEST_CASE("LdapMessage codec: decode(encode(m)) == m for randomized messages") {
  const std::uint64_t seed = test_seed();
  std::printf("round trip seed: %llu (rerun with NUMADIR_TEST_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  MessageGenerator generator(seed);
  BerWriter writer;
  BerWriter again;
  LdapMessage decoded;
  constexpr int kMessages = 20'000;
  for (int i = 0; i < kMessages; ++i) {
    LdapMessage original;
    generator.fill(original);
    writer.clear();
    encode_message(original, writer);
    CAPTURE(i);
    CAPTURE(protocol_op_name(original.op));

    const Frame frame = frame_pdu(writer.view());
    REQUIRE(frame.state == FrameState::kComplete);
    REQUIRE(frame.pdu_bytes == writer.size());

    const Status status = decode_message(writer.view(), decoded);
    REQUIRE_MESSAGE(status.ok(), status.to_string());
    REQUIRE(decoded == original);

    again.clear();
    encode_message(decoded, again);
    REQUIRE(again.view() == writer.view());
  }
}

TEST_CASE("LdapMessage codec: every truncation of a valid PDU is rejected and never read past") {
  MessageGenerator generator(12345);
  BerWriter writer;
  LdapMessage decoded;
  for (int i = 0; i < 300; ++i) {
    LdapMessage original;
    generator.fill(original);
    writer.clear();
    encode_message(original, writer);
    const std::string pdu(writer.view());
    for (std::size_t cut = 0; cut < pdu.size(); ++cut) {
      // A heap copy of exactly `cut` bytes, so ASan catches any read past the end.
      auto copy = std::make_unique<char[]>(cut);
      std::copy_n(pdu.data(), cut, copy.get());
      const std::string_view prefix(copy.get(), cut);
      CHECK_FALSE(decode_message(prefix, decoded).ok());
      CHECK(frame_pdu(prefix).state == FrameState::kNeedMore);
    }
  }
}

}  // namespace
}  // namespace numadir::listener::wire
