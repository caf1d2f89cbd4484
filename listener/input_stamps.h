// listener/input_stamps.h: when the bytes a connection has read, and not yet framed, were read
// (FrontendOptions::stamp_requests, RequestOrigin::received_ns): one steady-clock read per
// round of the listener's reads (the connections one epoll_wait reported) that read anything,
// given to every read of the round. A PDU gets the time of the read that completed it (the
// first whose input reached the PDU's end): the reads are not framed here, the rules frame
// them once. The bytes were there when the round began, so the time lies between a request's
// arrival and its read; what the listener did for the round's earlier connections is time the
// request waited.
// PDUs left in the input while the connection waits (past its outstanding limit, over its output
// bound) keep the time of the read that brought them: the wait is part of their latency.
//
// Thread contract: a member of its Connection, used by the connection's listener thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace numadir::listener {

class InputStamps {
 public:
  // Bytes were appended to the input (a read from the socket, or the plaintext TLS made of
  //   one), which is now `input_bytes` long from its first unframed byte: they are given the
  //   time `round_ns`, read from the clock here first if it is 0 (the round's first read: the
  //   caller keeps it for the round's other reads). Nothing when no byte was added.
  void after_read(std::size_t input_bytes, std::int64_t& round_ns);
  // Returns: the time (threadpool::steady_ns()) of the read that completed the PDU ending `end`
  //   bytes into the input; 0 when no read stamped it.
  std::int64_t stamp_of(std::size_t end) const;
  // The first `bytes` of the input (whole PDUs) were framed and erased from it.
  void consumed(std::size_t bytes);
  // The input was emptied.
  void clear() { count_ = 0; }

 private:
  // The bytes up to `end` into the input (and past the previous stamp's end) came with the
  // read at `ns`.
  struct Stamp {
    std::size_t end = 0;
    std::int64_t ns = 0;
  };
  // Reads before the rules framed their bytes: one, almost always (the rules frame after each
  // batch of reads), a few while a large PDU comes in pieces. Past this many, the two oldest
  // merge, keeping the older time: the newest read, the one that completes a large PDU, keeps
  // its own, and a merged PDU's latency counts from an earlier read (a little more, not less).
  static constexpr std::size_t kStamps = 3;

  // Returns: bytes of the input stamped so far.
  std::size_t stamped() const { return count_ == 0 ? 0 : stamps_[count_ - 1].end; }

  std::array<Stamp, kStamps> stamps_{};
  std::uint8_t count_ = 0;
};

}  // namespace numadir::listener
