// perf/codec_bench: ns per decode and per encode of each message of one auth (DESIGN.md, "What we
// measure"): SearchRequest (base ou=people, scope sub, (uid=userN), attributes 1.1), its
// SearchResultEntry and SearchResultDone, a simple BindRequest as the found DN, and the
// BindResponse. Messages and writers are reused, as the listener and workers reuse theirs.
//
//   build/release/perf/codec_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <string>

#include "base/check.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"

namespace numadir::listener::wire {
namespace {

constexpr std::string_view kUserDn = "uid=user4711,ou=people,dc=example,dc=com";

void build_search_request(LdapMessage& m) {
  m.reset(7, ProtocolOp::kSearchRequest);
  m.search_request.base_object = "ou=people,dc=example,dc=com";
  m.search_request.scope = SearchScope::kWholeSubtree;
  m.search_request.filter.add_leaf(schema::FilterKind::kEquality, "uid", "user4711");
  m.search_request.attributes.push_back("1.1");
}

void build_search_entry(LdapMessage& m) {
  m.reset(7, ProtocolOp::kSearchResultEntry);
  m.search_entry.object_name = kUserDn;
}

void build_search_done(LdapMessage& m) { m.reset(7, ProtocolOp::kSearchResultDone); }

void build_bind_request(LdapMessage& m) {
  m.reset(8, ProtocolOp::kBindRequest);
  m.bind_request.name = kUserDn;
  m.bind_request.simple_password = "password4711";
}

void build_bind_response(LdapMessage& m) { m.reset(8, ProtocolOp::kBindResponse); }

template <void (*Build)(LdapMessage&)>
void BM_Encode(benchmark::State& state) {
  LdapMessage message;
  Build(message);
  BerWriter writer;
  for (auto _ : state) {
    writer.clear();
    encode_message(message, writer);
    benchmark::DoNotOptimize(writer.view().data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * writer.size()));
}

template <void (*Build)(LdapMessage&)>
void BM_Decode(benchmark::State& state) {
  LdapMessage built;
  Build(built);
  BerWriter writer;
  encode_message(built, writer);
  const std::string pdu(writer.view());
  LdapMessage message;
  for (auto _ : state) {
    const Status status = decode_message(pdu, message);
    NUMADIR_CHECK(status.ok(), "benchmark PDU does not decode");
    benchmark::DoNotOptimize(&message);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * pdu.size()));
}

BENCHMARK(BM_Decode<build_search_request>)->Name("decode/SearchRequest");
BENCHMARK(BM_Encode<build_search_request>)->Name("encode/SearchRequest");
BENCHMARK(BM_Decode<build_search_entry>)->Name("decode/SearchResultEntry");
BENCHMARK(BM_Encode<build_search_entry>)->Name("encode/SearchResultEntry");
BENCHMARK(BM_Decode<build_search_done>)->Name("decode/SearchResultDone");
BENCHMARK(BM_Encode<build_search_done>)->Name("encode/SearchResultDone");
BENCHMARK(BM_Decode<build_bind_request>)->Name("decode/BindRequest");
BENCHMARK(BM_Encode<build_bind_request>)->Name("encode/BindRequest");
BENCHMARK(BM_Decode<build_bind_response>)->Name("decode/BindResponse");
BENCHMARK(BM_Encode<build_bind_response>)->Name("encode/BindResponse");

}  // namespace
}  // namespace numadir::listener::wire

BENCHMARK_MAIN();
