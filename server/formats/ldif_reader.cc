// server/formats/ldif_reader.cc: LdifReader's buffer, lines and records, and the attribute
// description check it shares with the writer (see ldif_reader.h).
// Where the bytes come from is in ldif_source.cc; how a value's text becomes its bytes is in
// ldif_values.cc.
//
// Thread contract: as ldif_reader.h; an LdifReader belongs to one thread.
#include "server/formats/ldif_reader.h"

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "schema/ascii.h"
#include "schema/utf8.h"
#include "server/formats/detail/ldif_source.h"
#include "server/formats/detail/ldif_values.h"

namespace numadir::server {
namespace {

using detail::check_plain_value;
using detail::decode_base64;
using detail::errno_text;
using detail::read_file_url;

// Small enough that tests can push every boundary case through refill().
constexpr std::size_t kMinBuffer = 4;

// RFC 2849 keychar (ALPHA, DIGIT, '-'), as a table: checked for every byte of every description.
constexpr std::array<bool, 256> make_key_char_table() {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) {
    table[c] = schema::is_keychar(static_cast<char>(c));
  }
  return table;
}
constexpr std::array<bool, 256> kKeyChar = make_key_char_table();
bool is_key_char(unsigned char c) { return kKeyChar[c]; }

}  // namespace

// ---- LdifReader ----

struct LdifReader::PhysicalLine {
  std::string_view text;   // Without its line end (LF or CRLF). Valid until the next read.
  int next_byte = -1;      // The first byte of the following line, or -1 at the end.
  bool terminated = true;  // False for a last line without a line end.
};

LdifReader::LdifReader(std::unique_ptr<detail::LdifSource> source, LdifReaderOptions options)
    : options_(options), source_(std::move(source)), input_size_bytes_(source_->size_bytes()) {}

LdifReader::LdifReader(std::istream& in, LdifReaderOptions options)
    : LdifReader(detail::stream_source(in), options) {}

LdifReader::LdifReader(std::string_view text, LdifReaderOptions options)
    : LdifReader(detail::memory_source(text), options) {}

LdifReader::LdifReader(std::FILE* file, LdifReaderOptions options)
    : LdifReader(detail::file_source(file), options) {}

LdifReader::LdifReader(int fd, LdifReaderOptions options)
    : LdifReader(detail::fd_source(fd, /*owned=*/false), options) {}

LdifReader::~LdifReader() = default;

Result<std::unique_ptr<LdifReader>> LdifReader::open_file(const std::string& path,
                                                          LdifReaderOptions options) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status(StatusCode::kIo, "cannot open LDIF file '" + path + "': " + errno_text(errno));
  }
  // Only a hint: a bigger readahead window for a file read once from start to end.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<LdifReader>(
      new LdifReader(detail::fd_source(fd, /*owned=*/true), options));
}

Result<bool> LdifReader::refill() {
  if (eof_) {
    return false;
  }
  if (buffer_ == nullptr) {
    std::size_t initial = std::max(options_.read_chunk_bytes, kMinBuffer);
    if (input_size_bytes_.has_value() && *input_size_bytes_ + 1 < initial) {
      initial = std::max(static_cast<std::size_t>(*input_size_bytes_ + 1), kMinBuffer);
    }
    buffer_ = std::make_unique<char[]>(initial);
    capacity_ = initial;
  }
  // Only the unfinished line is kept, so this moves little.
  if (pos_ > 0) {
    std::memmove(buffer_.get(), buffer_.get() + pos_, end_ - pos_);
    base_offset_ += pos_;
    end_ -= pos_;
    pos_ = 0;
  }
  if (end_ == capacity_) {
    // One line fills the buffer: grow it, up to what the longest allowed line needs (its bytes,
    // CR LF, and one byte of the next line).
    const std::size_t max_capacity =
        std::max(options_.max_record_bytes + 3, std::max(options_.read_chunk_bytes, kMinBuffer));
    if (capacity_ >= max_capacity) {
      return limit_exceeded("");  // The caller words the message.
    }
    const std::size_t grown = std::min(max_capacity, capacity_ * 2);
    auto bigger = std::make_unique<char[]>(grown);
    std::memcpy(bigger.get(), buffer_.get(), end_);
    buffer_ = std::move(bigger);
    capacity_ = grown;
  }
  Result<std::size_t> got = source_->read(buffer_.get() + end_, capacity_ - end_);
  if (!got.ok()) {
    return got.status();
  }
  if (*got == 0) {
    eof_ = true;
    return false;
  }
  end_ += *got;
  return true;
}

Result<bool> LdifReader::read_physical_line(PhysicalLine& line) {
  std::size_t scanned = 0;  // Bytes after pos_ known to hold no line end.
  for (;;) {
    const char* base = buffer_.get();
    const void* found =
        base == nullptr ? nullptr : std::memchr(base + pos_ + scanned, '\n', end_ - pos_ - scanned);
    if (found != nullptr) {
      const std::size_t newline = static_cast<std::size_t>(static_cast<const char*>(found) - base);
      // The byte after the line end tells whether the next line continues this one.
      if (newline + 1 < end_ || eof_) {
        std::size_t length = newline - pos_;
        if (length > 0 && base[pos_ + length - 1] == '\r') {
          --length;
        }
        if (length > options_.max_record_bytes) {
          break;
        }
        line.text = std::string_view(base + pos_, length);
        line.next_byte = newline + 1 < end_ ? static_cast<unsigned char>(base[newline + 1]) : -1;
        line.terminated = true;
        pos_ = newline + 1;
        ++line_number_;
        return true;
      }
      scanned = newline - pos_;
    } else {
      if (eof_) {
        if (pos_ == end_) {
          return false;
        }
        std::size_t length = end_ - pos_;
        if (base[end_ - 1] == '\r') {
          --length;
        }
        line.text = std::string_view(base + pos_, length);
        line.next_byte = -1;
        line.terminated = false;
        pos_ = end_;
        ++line_number_;
        return true;
      }
      scanned = end_ - pos_;
    }
    if (scanned > options_.max_record_bytes) {
      break;
    }
    Result<bool> more = refill();
    if (!more.ok()) {
      if (more.status().code() == StatusCode::kLimitExceeded) {
        break;
      }
      return more.status();
    }
  }
  return error(
      StatusCode::kLimitExceeded, line_number_ + 1,
      "line longer than max_record_bytes (" + std::to_string(options_.max_record_bytes) + ")");
}

Result<LdifReader::LineKind> LdifReader::read_logical_line(std::string_view& text,
                                                           std::uint64_t& first_line,
                                                           std::uint64_t& start_offset) {
  PhysicalLine line;
  for (;;) {
    start_offset = bytes_consumed();
    Result<bool> got = read_physical_line(line);
    if (!got.ok()) {
      return got.status();
    }
    if (!*got) {
      return LineKind::kEnd;
    }
    first_line = line_number_;
    if (line.text.empty()) {
      return LineKind::kBlank;
    }
    if (line.text[0] == ' ') {
      return error(StatusCode::kMalformed, first_line,
                   "line starts with a space (a folded continuation) but there is no line to "
                   "continue");
    }
    const bool comment = line.text[0] == '#';
    if (line.next_byte != ' ') {
      if (comment) {
        continue;
      }
      text = line.text;  // The common case: no copy.
      return LineKind::kContent;
    }
    if (!comment) {
      folded_.assign(line.text);
    }
    while (line.next_byte == ' ') {
      got = read_physical_line(line);
      if (!got.ok()) {
        return got.status();
      }
      NUMADIR_DCHECK(*got, "a peeked line vanished");
      if (!line.terminated && line.text.size() == 1) {
        return error(StatusCode::kMalformed, line_number_,
                     "the input ends inside a folded line (a last line with only the folding "
                     "space)");
      }
      if (!comment) {
        folded_.append(line.text.substr(1));
        if (folded_.size() > options_.max_record_bytes) {
          return error(StatusCode::kLimitExceeded, first_line,
                       "folded line longer than max_record_bytes (" +
                           std::to_string(options_.max_record_bytes) + ")");
        }
      }
    }
    if (!comment) {
      text = folded_;
      return LineKind::kContent;
    }
  }
}

Status LdifReader::skip_rest_of_record() {
  PhysicalLine line;
  for (;;) {
    Result<bool> got = read_physical_line(line);
    if (!got.ok()) {
      return got.status();
    }
    if (!*got || line.text.empty()) {
      return Status();
    }
  }
}

Status LdifReader::error(StatusCode code, std::uint64_t line, std::string_view reason) const {
  std::string message = "line " + std::to_string(line);
  if (in_record_ && record_line_ != 0 && record_line_ != line) {
    message += " (record at line " + std::to_string(record_line_) + ")";
  }
  message += ": ";
  message += reason;
  return Status(code, std::move(message));
}

Status LdifReader::fail(Status status, bool final_error) {
  if (final_error || status.code() == StatusCode::kIo ||
      status.code() == StatusCode::kLimitExceeded) {
    final_status_ = status;
  } else {
    resync_ = true;
  }
  in_record_ = false;
  return status;
}

Result<bool> LdifReader::next(schema::Entry& entry) {
  if (!final_status_.ok()) {
    return final_status_;
  }
  if (resync_) {
    resync_ = false;
    Status skipped = skip_rest_of_record();
    if (!skipped.ok()) {
      return fail(std::move(skipped), /*final_error=*/true);
    }
  }
  in_record_ = false;
  attribute_count_ = 0;
  for (;;) {
    std::string_view text;
    std::uint64_t line = 0;
    std::uint64_t start_offset = 0;
    Result<LineKind> kind = read_logical_line(text, line, start_offset);
    if (!kind.ok()) {
      return fail(kind.status(), /*final_error=*/false);
    }
    if (*kind == LineKind::kEnd || *kind == LineKind::kBlank) {
      if (in_record_) {
        finish_record(entry);
        return true;
      }
      if (*kind == LineKind::kEnd) {
        return false;
      }
      continue;
    }
    if (!in_record_) {
      record_start_offset_ = start_offset;
    }
    Status handled = handle_line(text, line, entry);
    if (!handled.ok()) {
      // A `version:` the reader does not know means the rest cannot be trusted.
      const bool final_error = handled.code() == StatusCode::kUnsupported && !in_record_;
      return fail(std::move(handled), final_error);
    }
    if (in_record_ && bytes_consumed() - record_start_offset_ > options_.max_record_bytes) {
      return fail(error(StatusCode::kLimitExceeded, line,
                        "record longer than max_record_bytes (" +
                            std::to_string(options_.max_record_bytes) + ")"),
                  /*final_error=*/true);
    }
  }
}

Status LdifReader::handle_line(std::string_view text, std::uint64_t line, schema::Entry& entry) {
  const bool first_content = !seen_content_;
  seen_content_ = true;
  const bool starts_record = !in_record_;
  const std::size_t colon = text.find(':');
  const std::string_view description = text.substr(0, colon);

  // `version: 1` may only be the first line of the input, outside any record.
  if (starts_record && first_content && colon != std::string_view::npos &&
      schema::ascii_iequals(description, "version")) {
    std::string version;
    NUMADIR_RETURN_IF_ERROR(decode_value(text.substr(colon + 1), description, line,
                                         /*is_dn=*/false, version));
    if (version != "1") {
      return error(StatusCode::kUnsupported, line,
                   "unsupported LDIF version " + detail::quoted(version) + " (only 'version: 1')");
    }
    return Status();
  }
  if (starts_record) {
    in_record_ = true;
    record_line_ = line;
  }
  if (colon == std::string_view::npos) {
    return error(StatusCode::kMalformed, line,
                 "missing ':' after the attribute description in " + detail::quoted(text));
  }
  auto invalid_description = [&] {
    return error(StatusCode::kMalformed, line,
                 description.empty()
                     ? std::string("empty attribute description before ':'")
                     : "invalid attribute description " + detail::quoted(description) +
                           " (allowed: a name of letters, digits and '-' starting with a "
                           "letter, or a numeric OID, then ;options)");
  };
  // Later lines are checked in next_value_slot, only when they name a new attribute.
  if (starts_record && !is_valid_attribute_description(description)) {
    return invalid_description();
  }
  const std::string_view spec = text.substr(colon + 1);
  const bool is_dn = schema::ascii_iequals(description, "dn");
  if (starts_record) {
    if (!is_dn) {
      if (schema::ascii_iequals(description, "version")) {
        return error(StatusCode::kMalformed, line,
                     "'version:' is only allowed as the first line of the input");
      }
      return error(StatusCode::kMalformed, line,
                   "record does not start with 'dn:' (found " + detail::quoted(description) +
                       "); every record needs a dn: line first, and records are separated by "
                       "blank lines");
    }
    return decode_value(spec, description, line, /*is_dn=*/true, entry.dn);
  }
  if (is_dn) {
    return error(StatusCode::kMalformed, line,
                 "a second 'dn:' in one record (is a blank line missing between records?)");
  }
  if (schema::ascii_iequals(description, "changetype") ||
      schema::ascii_iequals(description, "control")) {
    std::string shown = schema::ascii_lowered(description);
    std::string_view kind = spec;
    while (!kind.empty() && kind[0] == ' ') {
      kind.remove_prefix(1);
    }
    const bool plain_word = !kind.empty() && kind.size() <= 16 &&
                            std::all_of(kind.begin(), kind.end(), schema::is_ascii_alpha);
    shown += plain_word && shown != "control" ? ": " + std::string(kind) : std::string(": ...");
    return error(StatusCode::kUnsupported, line,
                 "change records (" + shown +
                     ") are not supported by import; use ldapadd/ldapmodify against a running "
                     "server");
  }
  std::string* value = next_value_slot(entry, description);
  if (value == nullptr) {
    return invalid_description();
  }
  return decode_value(spec, description, line, /*is_dn=*/false, *value);
}

Status LdifReader::decode_value(std::string_view spec, std::string_view description,
                                std::uint64_t line, bool is_dn, std::string& out) {
  enum class Form { kPlain, kBase64, kUrl } form = Form::kPlain;
  if (!spec.empty() && spec[0] == ':') {
    form = Form::kBase64;
    spec.remove_prefix(1);
  } else if (!spec.empty() && spec[0] == '<') {
    form = Form::kUrl;
    spec.remove_prefix(1);
  }
  while (!spec.empty() && spec[0] == ' ') {  // FILL
    spec.remove_prefix(1);
  }
  switch (form) {
    case Form::kPlain: {
      const std::string reason = check_plain_value(spec);
      if (!reason.empty()) {
        return error(StatusCode::kMalformed, line,
                     "value of " + detail::quoted(description) + ": " + reason);
      }
      out.assign(spec);
      return Status();
    }
    case Form::kBase64: {
      const std::string reason = decode_base64(spec, out);
      if (!reason.empty()) {
        return error(StatusCode::kMalformed, line,
                     "bad base64 in the value of " + detail::quoted(description) + ": " + reason);
      }
      if (is_dn) {
        const std::size_t bad = schema::find_invalid_utf8(out);
        if (bad != std::string::npos) {
          return error(StatusCode::kMalformed, line,
                       "the base64 DN is not valid UTF-8 (byte " + std::to_string(bad) + ")");
        }
      }
      return Status();
    }
    case Form::kUrl:
      if (is_dn) {
        return error(StatusCode::kMalformed, line, "a DN cannot be given as a URL ('dn:<')");
      }
      if (!options_.allow_file_urls) {
        return error(StatusCode::kUnsupported, line,
                     "URL values (attr:< url) are not allowed, found one for " +
                         detail::quoted(description) +
                         "; put the value inline, base64-encoded (attr:: ...)");
      }
      {
        Status read = read_file_url(spec, options_.max_record_bytes, out);
        if (!read.ok()) {
          return error(read.code(), line,
                       "value of " + detail::quoted(description) + ": " + read.message());
        }
      }
      return Status();
  }
  return internal_error("unreachable");
}

std::string* LdifReader::next_value_slot(schema::Entry& entry, std::string_view description) {
  auto& attributes = entry.attributes;
  std::size_t index = attribute_count_;
  // Values of one attribute are usually adjacent: try the latest attribute first.
  if (attribute_count_ > 0 &&
      schema::ascii_iequals(attributes[attribute_count_ - 1].description, description)) {
    index = attribute_count_ - 1;
  } else {
    for (std::size_t i = 0; i + 1 < attribute_count_; ++i) {
      const std::string& known = attributes[i].description;
      if (known.size() == description.size() && schema::ascii_iequals(known, description)) {
        index = i;
        break;
      }
    }
  }
  if (index == attribute_count_) {
    // A description equal to a known one (up to case) is valid; a new one is checked here.
    if (!is_valid_attribute_description(description)) {
      return nullptr;
    }
    // A new attribute: reuse the slot (and its strings) left by an earlier record if any.
    if (index == attributes.size()) {
      attributes.emplace_back();
    }
    attributes[index].description.assign(description);
    if (value_counts_.size() <= index) {
      value_counts_.resize(index + 1);
    }
    value_counts_[index] = 0;
    ++attribute_count_;
  }
  auto& values = attributes[index].values;
  const std::size_t slot = value_counts_[index]++;
  if (slot == values.size()) {
    values.emplace_back();
  }
  return &values[slot];
}

void LdifReader::finish_record(schema::Entry& entry) {
  for (std::size_t i = 0; i < attribute_count_; ++i) {
    entry.attributes[i].values.resize(value_counts_[i]);
  }
  entry.attributes.resize(attribute_count_);
  in_record_ = false;
  ++records_read_;
}

bool is_valid_attribute_description(std::string_view description) {
  const std::size_t semi = description.find(';');
  const std::string_view type = description.substr(0, semi);
  if (type.empty()) {
    return false;
  }
  if (schema::is_ascii_alpha(type[0])) {
    for (const char c : type) {
      if (!is_key_char(static_cast<unsigned char>(c))) {
        return false;
      }
    }
  } else {
    // numericoid: 1*DIGIT *("." 1*DIGIT)
    bool digit_before = false;
    for (const char c : type) {
      if (schema::is_ascii_digit(c)) {
        digit_before = true;
      } else if (c == '.' && digit_before) {
        digit_before = false;
      } else {
        return false;
      }
    }
    if (!digit_before) {
      return false;
    }
  }
  if (semi == std::string_view::npos) {
    return true;
  }
  std::string_view options = description.substr(semi + 1);
  for (;;) {
    const std::size_t next = options.find(';');
    const std::string_view option = options.substr(0, next);
    if (option.empty()) {
      return false;
    }
    for (const char c : option) {
      if (!is_key_char(static_cast<unsigned char>(c))) {
        return false;
      }
    }
    if (next == std::string_view::npos) {
      return true;
    }
    options.remove_prefix(next + 1);
  }
}

}  // namespace numadir::server
