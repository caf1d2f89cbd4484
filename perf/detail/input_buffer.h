// perf/detail/input_buffer.h: InputBuffer, the receive buffer of one connection of the load
// generator (AuthWorker) and of the floor server: bytes are read in at the end and whole PDUs
// are consumed from the front. Private to perf/.
//
// Thread contract: belongs to the thread that runs the connection's event loop.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace numadir::perf::detail {

class InputBuffer {
 public:
  // Allocates `bytes` (> 0) unless the buffer already has storage; the contents are unchanged.
  void allocate_once(std::size_t bytes) {
    if (!data_) {
      data_ = std::make_unique<char[]>(bytes);
      capacity_ = bytes;
    }
  }

  // Makes room to read into when the buffer is full: moves the unconsumed bytes (a partial PDU)
  // to the front, or doubles the buffer when they fill all of it.
  // Requires: allocate_once was called.
  void make_room() {
    if (end_ != capacity_) {
      return;
    }
    const std::size_t kept = end_ - begin_;
    if (begin_ > 0) {
      std::memmove(data_.get(), data_.get() + begin_, kept);
    } else {
      auto bigger = std::make_unique<char[]>(capacity_ * 2);
      std::memcpy(bigger.get(), data_.get(), kept);
      data_ = std::move(bigger);
      capacity_ *= 2;
    }
    begin_ = 0;
    end_ = kept;
  }

  // Where to read into, and how many bytes fit there. Valid until the next make_room().
  char* free_space() { return data_.get() + end_; }
  std::size_t free_bytes() const { return capacity_ - end_; }
  // Adds the `n` bytes just read into free_space(). Requires: n <= free_bytes().
  void commit(std::size_t n) { end_ += n; }

  // Returns: the bytes read and not yet consumed; valid until the next make_room().
  std::string_view unconsumed() const { return {data_.get() + begin_, end_ - begin_}; }
  bool empty() const { return begin_ == end_; }
  // Consumes the first `n` unconsumed bytes; once nothing is left, reading starts at the front
  // again. Requires: n <= unconsumed().size().
  void consume(std::size_t n) {
    begin_ += n;
    if (begin_ == end_) {
      clear();
    }
  }
  // Drops the unconsumed bytes (keeping the storage).
  void clear() { begin_ = end_ = 0; }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0;  // Unconsumed bytes are [begin_, end_).
  std::size_t end_ = 0;
};

}  // namespace numadir::perf::detail
