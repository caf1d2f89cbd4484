// listener/wire/detail/message_tags.h: the context-specific identifier octets of the LDAPv3
// message fields (RFC 4511 §4), shared by the decoder (message_decoder.cc) and the encoder
// (message_encoder.cc) so that both read and write the same tags. The filter's tags live with
// its codec (filter_codec.cc), its only user.
//
// Thread contract: compile-time constants; any thread.
#pragma once

#include <cstdint>

#include "listener/wire/ber_reader.h"

namespace numadir::listener::wire::detail {

inline constexpr std::uint8_t kControlsTag = ber::context_constructed(0);  // LDAPMessage
inline constexpr std::uint8_t kReferralTag = ber::context_constructed(3);  // LDAPResult
inline constexpr std::uint8_t kSimpleAuthTag = ber::context(0);            // AuthenticationChoice
inline constexpr std::uint8_t kSaslAuthTag = ber::context_constructed(3);  // AuthenticationChoice
inline constexpr std::uint8_t kServerSaslCredsTag = ber::context(7);       // BindResponse
inline constexpr std::uint8_t kNewSuperiorTag = ber::context(0);           // ModifyDNRequest
inline constexpr std::uint8_t kRequestNameTag = ber::context(0);           // ExtendedRequest
inline constexpr std::uint8_t kRequestValueTag = ber::context(1);          // ExtendedRequest
inline constexpr std::uint8_t kResponseNameTag = ber::context(10);         // ExtendedResponse
inline constexpr std::uint8_t kResponseValueTag = ber::context(11);        // ExtendedResponse
inline constexpr std::uint8_t kIntermediateNameTag = ber::context(0);      // IntermediateResponse
inline constexpr std::uint8_t kIntermediateValueTag = ber::context(1);     // IntermediateResponse

}  // namespace numadir::listener::wire::detail
