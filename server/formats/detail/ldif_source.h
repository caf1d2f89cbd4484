// server/formats/detail/ldif_source.h: where an LdifReader's bytes come from (a stream, a string,
// a FILE*, a descriptor), for the reader (ldif_reader.cc) and for file:// values
// (ldif_values.cc). Private to server/formats.
//
// Thread contract: a source belongs to the thread of the reader that owns it. What it borrows (a
// stream, a string, a FILE*, a descriptor it does not own) must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace numadir::server::detail {

class LdifSource {
 public:
  virtual ~LdifSource() = default;
  // Reads up to `n` bytes into `out`. Returns: the count, 0 only at the end of the input.
  // Errors: kIo.
  virtual Result<std::size_t> read(char* out, std::size_t n) = 0;
  // Returns: the input's total size, when known up front.
  virtual std::optional<std::uint64_t> size_bytes() const { return std::nullopt; }
};

// Returns: a source reading `in` (borrowed).
std::unique_ptr<LdifSource> stream_source(std::istream& in);
// Returns: a source reading the bytes of `text` (borrowed). size_bytes() is text.size().
std::unique_ptr<LdifSource> memory_source(std::string_view text);
// Returns: a source reading `file` (borrowed). size_bytes() is known for a regular file.
std::unique_ptr<LdifSource> file_source(std::FILE* file);
// Returns: a source reading descriptor `fd`, which it closes when destroyed if `owned`.
// size_bytes() is known for a regular file. Requires: fd >= 0.
std::unique_ptr<LdifSource> fd_source(int fd, bool owned);

// Returns: the system's text for errno value `err`; the one place errno becomes text in
// server/formats' LDIF code.
std::string errno_text(int err);

}  // namespace numadir::server::detail
