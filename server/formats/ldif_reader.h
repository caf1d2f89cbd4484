// server/formats/ldif_reader.h: LdifReader, a streaming parser of RFC 2849 LDIF content records
// (the input of `numadir import`), and the attribute description check LdifWriter shares with it.
//
// The reader pulls the input through one buffer in chunks (1 MiB by default) and hands out one
// record at a time, so a multi-GB file is never held whole: memory is bounded by the longest
// line and by LdifReaderOptions::max_record_bytes. next() refills a caller's Entry in place,
// reusing its strings and vectors, so a steady import allocates little per record.
//
// Accepted: an optional `version: 1` first line; `#` comments anywhere (also folded); folded
// lines (a line starting with one space continues the previous one); LF and CRLF line ends; `dn:`
// and `dn::` (base64); `attr: value`, `attr:: base64`, `attr:` (empty value); attribute
// descriptions with options (`cn;lang-en`); records separated by one or more blank lines. Plain
// values follow RFC 2849's SAFE-STRING except that, like OpenLDAP, UTF-8 is accepted: a plain
// value must not start with ':' or '<' (spaces after the colon are skipped), must not contain NUL
// or CR, and must be valid UTF-8. Values with the same description (compared ASCII
// case-insensitively, options included) are gathered into one EntryAttribute, in first-seen
// order.
// Refused: change records (`changetype:`) and `control:` lines (import takes content only),
// `attr:< url` values unless LdifReaderOptions::allow_file_urls (then only local file:// URLs).
//
// Every error message starts "line N: " (the line where the problem is; for a folded line, its
// first physical line), adding " (record at line M)" when the record started on another line.
//
// Thread contract: an LdifReader belongs to one thread (the import thread); it is not safe to use
// from two threads at once. A borrowed stream, FILE* or descriptor must outlive it and must not
// be read by anyone else meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "schema/entry.h"

namespace numadir::server {

struct LdifReaderOptions {
  // Upper bound on the raw bytes of one record (all its lines and line ends), and so on one line
  // and on one value. Also bounds the read buffer, which grows past read_chunk_bytes only to hold
  // one longer physical line.
  std::size_t max_record_bytes = std::size_t{64} << 20;
  // How much is read from the source at a time; the initial buffer size.
  std::size_t read_chunk_bytes = std::size_t{1} << 20;
  // Allows `attr:< file:///path` (and file://localhost/path): the value is the file's content,
  // read when the line is parsed. Other URL schemes are always refused.
  bool allow_file_urls = false;
};

namespace detail {
class LdifSource;
}  // namespace detail

class LdifReader {
 public:
  // Reads from `in` (borrowed).
  explicit LdifReader(std::istream& in, LdifReaderOptions options = {});
  // Reads the bytes of `text` (borrowed: they must stay unchanged while the reader lives).
  explicit LdifReader(std::string_view text, LdifReaderOptions options = {});
  // A temporary string would dangle: keep the text alive in a variable.
  template <typename String>
  requires std::is_same_v<String, std::string>
  explicit LdifReader(String&& text, LdifReaderOptions options = {}) = delete;
  // Reads from `file` (borrowed; the caller closes it after the reader is gone).
  explicit LdifReader(std::FILE* file, LdifReaderOptions options = {});
  // Reads from descriptor `fd` (borrowed; the caller closes it after the reader is gone), e.g.
  // STDIN_FILENO. Requires: fd >= 0.
  explicit LdifReader(int fd, LdifReaderOptions options = {});

  // Opens `path` for reading (the reader owns and closes the descriptor) and hints the kernel
  // that it is read sequentially.
  // Errors: kIo (with the path and the system's reason) when it cannot be opened.
  static Result<std::unique_ptr<LdifReader>> open_file(const std::string& path,
                                                       LdifReaderOptions options = {});

  LdifReader(const LdifReader&) = delete;
  LdifReader& operator=(const LdifReader&) = delete;
  ~LdifReader();

  // Reads the next record into `entry`, reusing its capacity: entry.dn and entry.attributes are
  // overwritten in place (attributes in first-seen order, each with at least one value).
  // Returns: true with `entry` holding the record; false at the end of the input (`entry` is then
  // unspecified).
  // Errors (`entry` unspecified):
  //   kMalformed: a line without ':', an invalid attribute description, a record that does not
  //     start with `dn:` or has a second `dn:`, invalid base64, a plain value that starts with
  //     ':' or '<' or holds NUL, CR or invalid UTF-8, a base64 DN that is not UTF-8, a line that
  //     starts with a space with nothing to continue, input that ends in an empty folded line,
  //     `version:` anywhere but the first line.
  //   kUnsupported: a change record (`changetype:`) or `control:` line; a URL value when not
  //     allowed, or a URL that is not a local file:// URL; a `version:` other than 1.
  //   kIo / kNotFound: reading the input (or a file:// value) failed / the file is absent.
  //   kLimitExceeded: a line or record over max_record_bytes.
  // After a kMalformed, kUnsupported or kNotFound error in a record, the next call resumes
  // after that record (at its next blank line), so a caller may report and go on. kIo,
  // kLimitExceeded and a bad `version:` are final: every later call returns the same error.
  [[nodiscard]] Result<bool> next(schema::Entry& entry);

  // Input bytes consumed so far: through the end of the last record returned (or failed), for
  // progress reports; compare with input_size_bytes().
  std::uint64_t bytes_consumed() const { return base_offset_ + pos_; }
  // The size of the input when it is known up front (a regular file, or a string), else nullopt.
  std::optional<std::uint64_t> input_size_bytes() const { return input_size_bytes_; }
  // Records returned by next() with true.
  std::uint64_t records_read() const { return records_read_; }
  // The number of the last physical line consumed (the first line is 1).
  std::uint64_t line_number() const { return line_number_; }
  // The first line of the last record returned or failed; 0 before any.
  std::uint64_t record_line() const { return record_line_; }

  // The current size of the read buffer, to check that memory stays bounded.
  std::size_t buffer_bytes_for_test() const { return capacity_; }

 private:
  struct PhysicalLine;
  enum class LineKind { kEnd, kBlank, kContent };

  LdifReader(std::unique_ptr<detail::LdifSource> source, LdifReaderOptions options);

  Result<bool> read_physical_line(PhysicalLine& line);
  Result<bool> refill();
  Result<LineKind> read_logical_line(std::string_view& text, std::uint64_t& first_line,
                                     std::uint64_t& start_offset);
  Status skip_rest_of_record();
  Status handle_line(std::string_view text, std::uint64_t line, schema::Entry& entry);
  Status decode_value(std::string_view spec, std::string_view description, std::uint64_t line,
                      bool is_dn, std::string& out);
  // Returns: the string to decode the next value of `description` into, or nullptr when
  // `description` names a new attribute and is not a valid attribute description.
  std::string* next_value_slot(schema::Entry& entry, std::string_view description);
  void finish_record(schema::Entry& entry);
  Status error(StatusCode code, std::uint64_t line, std::string_view reason) const;
  Status fail(Status status, bool final_error);

  const LdifReaderOptions options_;
  std::unique_ptr<detail::LdifSource> source_;
  std::optional<std::uint64_t> input_size_bytes_;

  // Read buffer: bytes [pos_, end_) are read but not consumed; base_offset_ is the input offset
  // of buffer_[0].
  std::unique_ptr<char[]> buffer_;
  std::size_t capacity_ = 0;
  std::size_t pos_ = 0;
  std::size_t end_ = 0;
  std::uint64_t base_offset_ = 0;
  bool eof_ = false;

  std::string folded_;  // A logical line gathered from folded physical lines; reused.
  std::uint64_t line_number_ = 0;
  std::uint64_t record_line_ = 0;
  std::uint64_t record_start_offset_ = 0;
  std::uint64_t records_read_ = 0;
  bool seen_content_ = false;  // A content line was read: `version:` is no longer allowed.
  bool in_record_ = false;
  bool resync_ = false;  // The last record failed: skip to its end before the next one.
  Status final_status_;  // Not ok once a final error happened.

  // Slots of the Entry being filled: attributes [0, attribute_count_) are this record's, and
  // value_counts_[i] of attribute i's values are.
  std::size_t attribute_count_ = 0;
  std::vector<std::size_t> value_counts_;
};

// Returns: whether `description` is an RFC 2849 AttributeDescription: a name (ALPHA then ALPHA,
// DIGIT or '-') or a numeric OID, then zero or more ";option" (each 1+ ALPHA, DIGIT or '-').
bool is_valid_attribute_description(std::string_view description);

}  // namespace numadir::server
