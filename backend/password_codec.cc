// backend/password_codec.cc: the byte-level helpers of the password schemes (declared in
// backend/detail/password_scheme.h): base64 in its standard and adapted alphabets, random
// salt, constant-time comparison, wiping secrets.
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <array>
#include <climits>
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/detail/password_scheme.h"
#include "base/status.h"

namespace numadir::backend::detail {
namespace {

constexpr std::string_view kStandardDigits =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kAdaptedDigits =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789./";

constexpr std::int8_t kNotADigit = -1;

// Maps a character to its 6-bit value, kNotADigit for anything else.
using DecodeTable = std::array<std::int8_t, 256>;

constexpr DecodeTable make_decode_table(std::string_view digits) {
  DecodeTable table{};
  for (auto& entry : table) {
    entry = kNotADigit;
  }
  for (std::size_t i = 0; i < digits.size(); ++i) {
    table[static_cast<unsigned char>(digits[i])] = static_cast<std::int8_t>(i);
  }
  return table;
}

constexpr DecodeTable kStandardTable = make_decode_table(kStandardDigits);

// pw-pbkdf2's encoder turns '+' into '.' everywhere except in the very first character (its
// loop advances before it looks), and its decoder maps '.' back and leaves '+' alone. Values
// it wrote can therefore hold both, so the adapted table takes '+' as 62 too.
constexpr DecodeTable make_adapted_table() {
  DecodeTable table = make_decode_table(kAdaptedDigits);
  table[static_cast<unsigned char>('+')] = 62;
  return table;
}
constexpr DecodeTable kAdaptedTable = make_adapted_table();

}  // namespace

std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet, bool pad) {
  const std::string_view digits =
      alphabet == Base64Alphabet::kStandard ? kStandardDigits : kAdaptedDigits;
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t group =
        static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
        static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
        static_cast<unsigned char>(bytes[i + 2]);
    out += digits[(group >> 18) & 63];
    out += digits[(group >> 12) & 63];
    out += digits[(group >> 6) & 63];
    out += digits[group & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t group = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) {
      group |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    }
    out += digits[(group >> 18) & 63];
    out += digits[(group >> 12) & 63];
    if (rest == 2) {
      out += digits[(group >> 6) & 63];
    }
    if (pad) {
      out.append(3 - rest, '=');
    }
  }
  return out;
}

bool base64_decode(std::string_view text, Base64Alphabet alphabet, std::string* out) {
  const DecodeTable& table = alphabet == Base64Alphabet::kStandard ? kStandardTable : kAdaptedTable;
  out->clear();
  // Padding, if any, must complete the last group of four and end the text.
  std::size_t data_size = text.size();
  while (data_size > 0 && text[data_size - 1] == '=') {
    --data_size;
  }
  const std::size_t padding = text.size() - data_size;
  if (padding > 2 || (padding > 0 && text.size() % 4 != 0)) {
    return false;
  }
  // A lone digit in the last group carries only 6 bits: no whole byte.
  if (data_size % 4 == 1) {
    return false;
  }
  // Every 4 digits give 3 bytes; a last group of 2 or 3 digits gives 1 or 2 (the bits left
  // below its last byte are dropped).
  const std::size_t tail = data_size % 4;
  out->resize(data_size / 4 * 3 + (tail == 0 ? 0 : tail - 1));
  char* write = out->data();
  const auto digit = [&table, text](std::size_t i) {
    return static_cast<std::int32_t>(table[static_cast<unsigned char>(text[i])]);
  };
  // A group at a time: kNotADigit is negative, so one test of the four values' OR finds it.
  std::size_t i = 0;
  for (; i + 4 <= data_size; i += 4) {
    const std::int32_t a = digit(i), b = digit(i + 1), c = digit(i + 2), d = digit(i + 3);
    if ((a | b | c | d) < 0) {
      out->clear();
      return false;
    }
    const auto group = static_cast<std::uint32_t>(a << 18 | b << 12 | c << 6 | d);
    *write++ = static_cast<char>(group >> 16);
    *write++ = static_cast<char>(group >> 8 & 0xFF);
    *write++ = static_cast<char>(group & 0xFF);
  }
  if (tail != 0) {
    std::int32_t bits = 0;
    for (; i < data_size; ++i) {
      const std::int32_t value = digit(i);
      if (value < 0) {
        out->clear();
        return false;
      }
      bits = bits << 6 | value;
    }
    // 12 bits: one byte above 4 spare ones; 18 bits: two above 2.
    if (tail == 2) {
      *write++ = static_cast<char>(bits >> 4);
    } else {
      *write++ = static_cast<char>(bits >> 10);
      *write++ = static_cast<char>(bits >> 2 & 0xFF);
    }
  }
  return true;
}

Status random_bytes(std::size_t size, std::string* out) {
  out->assign(size, '\0');
  if (size > static_cast<std::size_t>(INT_MAX) ||
      RAND_bytes(reinterpret_cast<unsigned char*>(out->data()), static_cast<int>(size)) != 1) {
    return internal_error("password: RAND_bytes failed to produce a salt");
  }
  return Status::ok_status();
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

void wipe(std::string* s) {
  if (!s->empty()) {
    OPENSSL_cleanse(s->data(), s->size());
  }
  s->clear();
}

}  // namespace numadir::backend::detail
