// listener/input_stamps.h: when the whole PDUs a connection has read, and not yet framed, were
// read (FrontendOptions::stamp_requests, RequestOrigin::received_ns): one steady-clock read per
// round of the listener's reads (the connections one epoll_wait reported) that completed at least
// one PDU, given to every PDU the round's reads completed. Their bytes were there when the round
// began, so the time lies between a request's arrival and its read; what the listener did for
// the round's earlier connections is time the request waited.
// PDUs left in the input while the connection waits (past its outstanding limit, over its output
// bound) keep the time of the read that brought them: the wait is part of their latency.
//
// Thread contract: a member of its Connection, used by the connection's listener thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace numadir::listener {

class InputStamps {
 public:
  // Bytes were appended to `input` (the connection's unframed input, from its first byte): a read
  //   from the socket, or the plaintext TLS made of one. If they completed PDUs that were not
  //   complete before, gives them the time `round_ns`, read from the clock here first if it is
  //   0 (the round's first completed PDU: the caller keeps it for the round's other reads). A
  //   frame that is malformed or over `max_pdu_bytes` ends the look (the rules refuse it when
  //   they frame it).
  void after_read(std::string_view input, std::size_t max_pdu_bytes, std::int64_t& round_ns);
  // Returns: the time (threadpool::steady_ns()) of the read that completed the PDU ending `end`
  //   bytes into the input; 0 when no read stamped it.
  std::int64_t stamp_of(std::size_t end) const;
  // The first `bytes` of the input (whole PDUs) were framed and erased from it.
  void consumed(std::size_t bytes);
  // The input was emptied.
  void clear() { count_ = 0; }

 private:
  // The PDUs ending at or before `end` bytes into the input (and past the previous stamp's end)
  // were completed by the read at `ns`.
  struct Stamp {
    std::size_t end = 0;
    std::int64_t ns = 0;
  };
  // Reads that completed PDUs before the rules framed them: one, almost always (the rules frame
  // after each batch of reads). Past this many, the newest PDUs share the last stamp: the reads
  // of one batch are microseconds apart.
  static constexpr std::size_t kStamps = 3;

  // Returns: bytes of the input known to be whole PDUs.
  std::size_t scanned() const { return count_ == 0 ? 0 : stamps_[count_ - 1].end; }

  std::array<Stamp, kStamps> stamps_{};
  std::uint8_t count_ = 0;
};

}  // namespace numadir::listener
