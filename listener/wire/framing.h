// listener/wire/framing.h: finds the end of one LDAPMessage PDU at the front of a stream
// buffer, telling "complete", "need N more bytes", "too large" and "malformed" apart, so the
// listener can read until a PDU is whole and disconnect on garbage without buffering it.
//
// Thread contract: a pure function of its arguments; any thread.
#pragma once

#include <cstddef>
#include <string_view>

namespace numadir::listener::wire {

// The default limit on one PDU. slapd's sockbuf_max_incoming_auth is 4 MiB; the server's
// config can lower or raise it.
inline constexpr std::size_t kDefaultMaxPduBytes = 4 * 1024 * 1024;

enum class FrameState {
  kComplete,   // pdu_bytes is the size of the PDU at the front of the buffer.
  kNeedMore,   // need_bytes more bytes (at least) are needed to frame the PDU.
  kTooLarge,   // The PDU announces a size over max_pdu_bytes: disconnect.
  kMalformed,  // Not an LDAPMessage (wrong tag or an impossible length): disconnect.
};

struct Frame {
  FrameState state = FrameState::kNeedMore;
  std::size_t pdu_bytes = 0;    // kComplete, kTooLarge: identifier + length + content octets.
  std::size_t need_bytes = 0;   // kNeedMore: missing bytes (a lower bound while the header is
                                // incomplete, exact once the length octets are in).
  const char* error = nullptr;  // kMalformed, kTooLarge: a static description.
};

// Frames the PDU at the front of `buffer` (which may hold several PDUs, or part of one).
Frame frame_pdu(std::string_view buffer, std::size_t max_pdu_bytes = kDefaultMaxPduBytes);

}  // namespace numadir::listener::wire
