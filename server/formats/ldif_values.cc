// server/formats/ldif_values.cc: LDIF value decoding (see detail/ldif_values.h).
//
// Thread contract: stateless functions over caller-owned values; any thread.
#include "server/formats/detail/ldif_values.h"

#include <fcntl.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "schema/ascii.h"
#include "schema/utf8.h"
#include "server/formats/detail/ldif_source.h"

namespace numadir::server {
namespace detail {
namespace {

// Whether any byte of the 8 in `word` is NUL, CR or above 0x7f (SWAR: 8 bytes per step).
bool word_needs_checking(std::uint64_t word) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHighs = 0x8080808080808080ULL;
  const std::uint64_t nul = (word - kOnes) & ~word & kHighs;
  const std::uint64_t cr_bits = word ^ (kOnes * '\r');
  const std::uint64_t cr = (cr_bits - kOnes) & ~cr_bits & kHighs;
  return ((word & kHighs) | nul | cr) != 0;
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

}  // namespace

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
        return "invalid base64 character " + detail::quoted(in.substr(at + k, 1)) + " at offset " +
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

Status read_file_url(std::string_view url, std::size_t max_bytes, std::string& out) {
  constexpr std::string_view kScheme = "file://";
  if (url.size() < kScheme.size() ||
      !schema::ascii_iequals(url.substr(0, kScheme.size()), kScheme)) {
    return unsupported("only file:// URLs are supported, not " + detail::quoted(url));
  }
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  const std::string_view host = rest.substr(0, slash);
  if (slash == std::string_view::npos ||
      (!host.empty() && !schema::ascii_iequals(host, "localhost"))) {
    return unsupported("only local file:// URLs (file:///path) are supported, not " +
                       detail::quoted(url));
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
      return malformed("bad %-escape in URL " + detail::quoted(url));
    }
    path += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return Status(
        err == ENOENT ? StatusCode::kNotFound : StatusCode::kIo,
        "cannot open " + detail::quoted(path) + " named by URL value: " + errno_text(err));
  }
  out.clear();
  const std::unique_ptr<LdifSource> file = fd_source(fd, /*owned=*/true);
  char chunk[65536];
  for (;;) {
    Result<std::size_t> got = file->read(chunk, sizeof(chunk));
    if (!got.ok()) {
      return Status(StatusCode::kIo,
                    "reading " + detail::quoted(path) + ": " + got.status().message());
    }
    if (*got == 0) {
      return Status();
    }
    if (out.size() + *got > max_bytes) {
      return limit_exceeded("file " + detail::quoted(path) + " named by URL value is longer than " +
                            std::to_string(max_bytes) + " bytes");
    }
    out.append(chunk, *got);
  }
}

}  // namespace detail

}  // namespace numadir::server
