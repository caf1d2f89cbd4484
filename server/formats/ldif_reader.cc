// server/formats/ldif_reader.cc: see ldif_reader.h.
#include "server/formats/ldif_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include "schema/ascii.h"
#include "schema/utf8.h"

namespace numadir::server {

namespace detail {

// Where the reader's bytes come from.
class LdifSource {
 public:
  virtual ~LdifSource() = default;
  // Reads up to `n` bytes into `out`. Returns: the count, 0 only at the end of the input.
  // Errors: kIo.
  virtual Result<std::size_t> read(char* out, std::size_t n) = 0;
  // Returns: the input's total size, when known up front.
  virtual std::optional<std::uint64_t> size_bytes() const { return std::nullopt; }
};

}  // namespace detail

namespace {

using detail::LdifSource;

// The one place errno becomes text in this file.
std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

class StreamSource final : public LdifSource {
 public:
  explicit StreamSource(std::istream& in) : in_(in) {}
  Result<std::size_t> read(char* out, std::size_t n) override {
    if (in_.bad()) {
      return Status(StatusCode::kIo, "read error on the input stream");
    }
    if (in_.eof()) {
      return std::size_t{0};
    }
    in_.read(out, static_cast<std::streamsize>(n));
    if (in_.bad()) {
      return Status(StatusCode::kIo, "read error on the input stream");
    }
    return static_cast<std::size_t>(in_.gcount());
  }

 private:
  std::istream& in_;
};

class MemorySource final : public LdifSource {
 public:
  explicit MemorySource(std::string_view text) : text_(text) {}
  Result<std::size_t> read(char* out, std::size_t n) override {
    const std::size_t count = std::min(n, text_.size() - pos_);
    std::memcpy(out, text_.data() + pos_, count);
    pos_ += count;
    return count;
  }
  std::optional<std::uint64_t> size_bytes() const override { return text_.size(); }

 private:
  const std::string_view text_;
  std::size_t pos_ = 0;
};

class FileSource final : public LdifSource {
 public:
  explicit FileSource(std::FILE* file) : file_(file) {}
  Result<std::size_t> read(char* out, std::size_t n) override {
    const std::size_t count = std::fread(out, 1, n, file_);
    if (count == 0 && std::ferror(file_) != 0) {
      return Status(StatusCode::kIo, "read error on the input file");
    }
    return count;
  }
  std::optional<std::uint64_t> size_bytes() const override {
    return regular_file_size(fileno(file_));
  }

  static std::optional<std::uint64_t> regular_file_size(int fd) {
    struct stat st;
    if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      return std::nullopt;
    }
    return static_cast<std::uint64_t>(st.st_size);
  }

 private:
  std::FILE* const file_;
};

class FdSource final : public LdifSource {
 public:
  FdSource(int fd, bool owned) : fd_(fd), owned_(owned) {}
  FdSource(const FdSource&) = delete;
  FdSource& operator=(const FdSource&) = delete;
  ~FdSource() override {
    if (owned_) {
      ::close(fd_);
    }
  }
  Result<std::size_t> read(char* out, std::size_t n) override {
    for (;;) {
      const ssize_t got = ::read(fd_, out, n);
      if (got >= 0) {
        return static_cast<std::size_t>(got);
      }
      if (errno != EINTR) {
        return Status(StatusCode::kIo, "read error on the input: " + errno_text(errno));
      }
    }
  }
  std::optional<std::uint64_t> size_bytes() const override {
    return FileSource::regular_file_size(fd_);
  }

 private:
  const int fd_;
  const bool owned_;
};

// ---- character classes and small helpers ----

constexpr std::array<bool, 256> make_key_char_table() {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) {
    table[c] = schema::is_keychar(static_cast<char>(c));
  }
  return table;
}
constexpr std::array<bool, 256> kKeyChar = make_key_char_table();
bool is_key_char(unsigned char c) { return kKeyChar[c]; }

// Whether any byte of the 8 in `word` is NUL, CR or above 0x7f (SWAR: 8 bytes per step).
bool word_needs_checking(std::uint64_t word) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  const std::uint64_t nul = (word - kOnes) & ~word & kHighs;
  const std::uint64_t cr_bits = word ^ (kOnes * '\r');
  const std::uint64_t cr = (cr_bits - kOnes) & ~cr_bits & kHighs;
  return ((word & kHighs) | nul | cr) != 0;
}

// Quotes `text` for an error message: printable ASCII as is, other bytes as \xNN, cut at 60.
std::string quoted(std::string_view text) {
  constexpr std::size_t kMaxShown = 60;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (text.size() > kMaxShown) {
    out += "...";
  }
  out += "'";
  return out;
}

// Base64 digit values; 0x40 marks '=', 0x80 anything else.
constexpr std::array<std::uint8_t, 256> make_base64_table() {
  std::array<std::uint8_t, 256> table{};
  for (auto& entry : table) {
    entry = 0x80;
  }
  constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::uint8_t i = 0; i < 64; ++i) {
    table[static_cast<unsigned char>(kDigits[i])] = i;
  }
  table['='] = 0x40;
  return table;
}
constexpr std::array<std::uint8_t, 256> kBase64Table = make_base64_table();

// Decodes base64 `in` into `out`. Padding is required (the length is a multiple of 4).
// Returns: an empty string on success, else the reason.
std::string decode_base64(std::string_view in, std::string& out) {
  out.clear();
  if (in.size() % 4 != 0) {
    return "base64 length " + std::to_string(in.size()) + " is not a multiple of 4";
  }
  out.resize(in.size() / 4 * 3);
  const auto* src = reinterpret_cast<const unsigned char*>(in.data());
  char* dst = out.data();
  const std::size_t groups = in.size() / 4;
  for (std::size_t g = 0; g < groups; ++g, src += 4) {
    const std::uint8_t a = kBase64Table[src[0]], b = kBase64Table[src[1]], c = kBase64Table[src[2]],
                       d = kBase64Table[src[3]];
    if (((a | b | c | d) & 0xc0) == 0) [[likely]] {
      const std::uint32_t bits =
          (std::uint32_t{a} << 18) | (std::uint32_t{b} << 12) | (std::uint32_t{c} << 6) | d;
      *dst++ = static_cast<char>(bits >> 16);
      *dst++ = static_cast<char>(bits >> 8);
      *dst++ = static_cast<char>(bits);
      continue;
    }
    // Padding, only in the last group: "xx==" or "xxx=".
    const std::size_t at = g * 4;
    for (std::size_t k = 0; k < 4; ++k) {
      if (kBase64Table[src[k]] & 0x80) {
        return "invalid base64 character " + quoted(in.substr(at + k, 1)) + " at offset " +
               std::to_string(at + k);
      }
    }
    const bool last = g + 1 == groups;
    if (!last || ((a | b) & 0x40) != 0 || ((c & 0x40) != 0 && (d & 0x40) == 0)) {
      return "misplaced base64 padding '=' in the group at offset " + std::to_string(at);
    }
    const std::uint32_t bits = (std::uint32_t{a} << 18) | (std::uint32_t{b} << 12) |
                               (static_cast<std::uint32_t>(c & 0x3f) << 6);
    *dst++ = static_cast<char>(bits >> 16);
    if (!(c & 0x40)) {
      *dst++ = static_cast<char>(bits >> 8);
    }
  }
  out.resize(static_cast<std::size_t>(dst - out.data()));
  return {};
}

// Checks a plain (SAFE-STRING, UTF-8 allowed) value; spaces after the colon are already skipped.
// Returns: an empty string if acceptable, else the reason.
std::string check_plain_value(std::string_view value) {
  if (value.empty()) {
    return {};
  }
  if (value[0] == ':' || value[0] == '<') {
    return std::string("a plain value must not start with '") + value[0] +
           "'; write it in base64 (attr:: ...)";
  }
  // Most values are plain ASCII: skip those 8 bytes at a time.
  std::size_t start = 0;
  while (start + 8 <= value.size()) {
    std::uint64_t word;
    std::memcpy(&word, value.data() + start, sizeof(word));
    if (word_needs_checking(word)) {
      break;
    }
    start += 8;
  }
  bool ascii = true;
  for (std::size_t i = start; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c == 0 || c == '\r') {
      return std::string("a plain value must not contain ") + (c == 0 ? "NUL" : "CR") +
             " (offset " + std::to_string(i) + "); write it in base64 (attr:: ...)";
    }
    ascii = ascii && c < 0x80;
  }
  if (!ascii) {
    const std::size_t bad = schema::find_invalid_utf8(value.substr(start));
    if (bad != std::string_view::npos) {
      return "invalid UTF-8 at offset " + std::to_string(start + bad) +
             " of a plain value; write binary values in base64 (attr:: ...)";
    }
  }
  return {};
}

// Reads a local file:// URL into `out`, at most `max_bytes`.
Status read_file_url(std::string_view url, std::size_t max_bytes, std::string& out) {
  constexpr std::string_view kScheme = "file://";
  if (url.size() < kScheme.size() ||
      !schema::ascii_iequals(url.substr(0, kScheme.size()), kScheme)) {
    return unsupported("only file:// URLs are supported, not " + quoted(url));
  }
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  const std::string_view host = rest.substr(0, slash);
  if (slash == std::string_view::npos ||
      (!host.empty() && !schema::ascii_iequals(host, "localhost"))) {
    return unsupported("only local file:// URLs (file:///path) are supported, not " + quoted(url));
  }
  // RFC 1738: the path may carry %XX escapes.
  std::string path;
  for (std::size_t i = slash; i < rest.size(); ++i) {
    if (rest[i] != '%') {
      path += rest[i];
      continue;
    }
    const int hi = i + 2 < rest.size() ? schema::ascii_hex_value(rest[i + 1]) : -1;
    const int lo = i + 2 < rest.size() ? schema::ascii_hex_value(rest[i + 2]) : -1;
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
      return malformed("bad %-escape in URL " + quoted(url));
    }
    path += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Status(err == ENOENT ? StatusCode::kNotFound : StatusCode::kIo,
                  "cannot open " + quoted(path) + " named by URL value: " + errno_text(err));
  }
  out.clear();
  FdSource file(fd, /*owned=*/true);
  char chunk[65536];
  for (;;) {
    Result<std::size_t> got = file.read(chunk, sizeof(chunk));
    if (!got.ok()) {
      return Status(StatusCode::kIo, "reading " + quoted(path) + ": " + got.status().message());
    }
    if (*got == 0) {
      return Status();
    }
    if (out.size() + *got > max_bytes) {
      return limit_exceeded("file " + quoted(path) + " named by URL value is longer than " +
                            std::to_string(max_bytes) + " bytes");
    }
    out.append(chunk, *got);
  }
}

// Small enough that tests can push every boundary case through refill().
constexpr std::size_t kMinBuffer = 4;

}  // namespace

// ---- shared text checks ----

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

// ---- LdifReader ----

struct LdifReader::PhysicalLine {
  std::string_view text;   // Without its line end (LF or CRLF). Valid until the next read.
  int next_byte = -1;      // The first byte of the following line, or -1 at the end.
  bool terminated = true;  // False for a last line without a line end.
};

LdifReader::LdifReader(std::unique_ptr<detail::LdifSource> source, LdifReaderOptions options)
    : options_(options), source_(std::move(source)), input_size_bytes_(source_->size_bytes()) {}

LdifReader::LdifReader(std::istream& in, LdifReaderOptions options)
    : LdifReader(std::make_unique<StreamSource>(in), options) {}

LdifReader::LdifReader(std::string_view text, LdifReaderOptions options)
    : LdifReader(std::make_unique<MemorySource>(text), options) {}

LdifReader::LdifReader(std::FILE* file, LdifReaderOptions options)
    : LdifReader(std::make_unique<FileSource>(file), options) {}

LdifReader::LdifReader(int fd, LdifReaderOptions options)
    : LdifReader(std::make_unique<FdSource>(fd, /*owned=*/false), options) {}

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
      new LdifReader(std::make_unique<FdSource>(fd, /*owned=*/true), options));
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
                   "unsupported LDIF version " + quoted(version) + " (only 'version: 1')");
    }
    return Status();
  }
  if (starts_record) {
    in_record_ = true;
    record_line_ = line;
  }
  if (colon == std::string_view::npos) {
    return error(StatusCode::kMalformed, line,
                 "missing ':' after the attribute description in " + quoted(text));
  }
  auto invalid_description = [&] {
    return error(StatusCode::kMalformed, line,
                 description.empty()
                     ? std::string("empty attribute description before ':'")
                     : "invalid attribute description " + quoted(description) +
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
                   "record does not start with 'dn:' (found " + quoted(description) +
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
                     "value of " + quoted(description) + ": " + reason);
      }
      out.assign(spec);
      return Status();
    }
    case Form::kBase64: {
      const std::string reason = decode_base64(spec, out);
      if (!reason.empty()) {
        return error(StatusCode::kMalformed, line,
                     "bad base64 in the value of " + quoted(description) + ": " + reason);
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
                         quoted(description) +
                         "; put the value inline, base64-encoded (attr:: ...)");
      }
      {
        Status read = read_file_url(spec, options_.max_record_bytes, out);
        if (!read.ok()) {
          return error(read.code(), line,
                       "value of " + quoted(description) + ": " + read.message());
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

}  // namespace numadir::server
