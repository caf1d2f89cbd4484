// libFuzzer target for LdifReader and LdifWriter (server/formats/ldif_reader.h,
// server/formats/ldif_writer.h). The input is read as LDIF with a small buffer (so records cross
// buffer refills) and a small record limit. Any record may be rejected, but every error names its
// line, and the reader always moves on. Each accepted record must survive the writer, or the target
// traps:
//   - LdifWriter::append_record accepts it, under several option sets (default slapcat form,
//     no folding, tiny fold widths, plain UTF-8);
//   - reading that text back gives exactly one record, equal to the first;
//   - writing the re-read record again gives the same text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "schema/entry.h"
#include "server/formats/ldif_reader.h"
#include "server/formats/ldif_writer.h"

namespace {

using numadir::Result;
using numadir::Status;
using numadir::schema::Entry;
using numadir::server::LdifReader;
using numadir::server::LdifReaderOptions;
using numadir::server::LdifWriter;
using numadir::server::LdifWriterOptions;

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

constexpr LdifWriterOptions kWriterOptions[] = {
    LdifWriterOptions{},
    LdifWriterOptions{.wrap_columns = 0, .plain_utf8 = true},
    LdifWriterOptions{.wrap_columns = 3, .base64_passwords = false},
    LdifWriterOptions{.wrap_columns = 1, .plain_utf8 = true},
};

void check_round_trip(const Entry& entry) {
  for (const LdifWriterOptions& options : kWriterOptions) {
    std::string text;
    check(LdifWriter::append_record(entry, options, text).ok());

    // The writer's output may be longer than the input (base64, folding): no tight limit here.
    LdifReader reader(text, LdifReaderOptions{.read_chunk_bytes = 7});
    Entry again;
    Result<bool> first = reader.next(again);
    check(first.ok() && *first);
    check(again == entry);
    Result<bool> end = reader.next(again);
    check(end.ok() && !*end);
    check(reader.bytes_consumed() == text.size());

    std::string text_again;
    check(LdifWriter::append_record(entry, options, text_again).ok());
    check(text_again == text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  LdifReader reader(input, LdifReaderOptions{.max_record_bytes = 2048, .read_chunk_bytes = 16});
  Entry entry;
  Status last_error;
  std::uint64_t last_error_at = 0;
  // Every call consumes at least one line, except a final error (a line over the limit) and its
  // repeat.
  for (std::size_t calls = 0; calls <= size + 2; ++calls) {
    const std::uint64_t before = reader.bytes_consumed();
    Result<bool> more = reader.next(entry);
    if (!more.ok()) {
      const Status status = more.status();
      check(status.message().starts_with("line "));
      if (status == last_error && before == last_error_at) {
        return 0;  // A final error, repeated without reading on.
      }
      last_error = status;
      last_error_at = reader.bytes_consumed();
      continue;
    }
    if (!*more) {
      check(reader.bytes_consumed() == size);
      return 0;
    }
    check(reader.bytes_consumed() > before);
    for (const auto& attribute : entry.attributes) {
      check(!attribute.values.empty());
    }
    check_round_trip(entry);
  }
  check(false);  // The reader stopped making progress.
  return 0;
}
