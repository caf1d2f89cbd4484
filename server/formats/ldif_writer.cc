// server/formats/ldif_writer.cc: see ldif_writer.h.
#include "server/formats/ldif_writer.h"

#include <string_view>

#include "schema/ascii.h"
#include "schema/utf8.h"
#include "server/formats/ldif_reader.h"

namespace numadir::server {
namespace {

constexpr char kBase64Digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Whether values of `description` are always base64: a ";binary" option, or userPassword.
bool always_base64(std::string_view description, const LdifWriterOptions& options) {
  const std::size_t semi = description.find(';');
  const std::string_view type = description.substr(0, semi);
  if (options.base64_passwords &&
      (schema::ascii_iequals(type, "userPassword") || type == "2.5.4.35")) {
    return true;
  }
  std::string_view rest = semi == std::string_view::npos ? "" : description.substr(semi + 1);
  while (!rest.empty()) {
    const std::size_t next = rest.find(';');
    if (schema::ascii_iequals(rest.substr(0, next), "binary")) {
      return true;
    }
    rest = next == std::string_view::npos ? "" : rest.substr(next + 1);
  }
  return false;
}

// Whether `value` (non-empty) may be written plain: printable ASCII, or with plain_utf8 also
// valid UTF-8 without C1 controls; never starting with a space, ':' or '<' or ending with a
// space (a reader would drop or misread those).
bool is_plain_safe(std::string_view value, bool plain_utf8) {
  const char first = value.front();
  if (first == ' ' || first == ':' || first == '<' || value.back() == ' ') {
    return false;
  }
  bool ascii = true;
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      continue;
    }
    if (c < 0x80 || !plain_utf8) {
      return false;
    }
    ascii = false;
  }
  if (ascii) {
    return true;
  }
  if (schema::find_invalid_utf8(value) != std::string_view::npos) {
    return false;
  }
  // U+0080..U+009F (C1 controls) are 0xC2 0x80..0x9F: terminals may act on them.
  for (std::size_t i = 0; i + 1 < value.size(); ++i) {
    if (static_cast<unsigned char>(value[i]) == 0xc2 &&
        static_cast<unsigned char>(value[i + 1]) < 0xa0) {
      return false;
    }
  }
  return true;
}

// Appends text to a line, folding as libldap's ldif_sput_wrap does: before a character that
// would end past `wrap` bytes, start a continuation line (a line end and one space).
class FoldingAppender {
 public:
  FoldingAppender(std::string& out, std::size_t wrap, std::size_t column)
      : out_(out), wrap_(wrap), column_(column) {}

  // Appends one character of `size` bytes. A character never moves alone onto a continuation
  // line that it would overflow anyway (only possible with wrap < 5).
  void append_char(const char* bytes, std::size_t size) {
    if (wrap_ != 0 && column_ + size > wrap_ && column_ > 1) {
      out_ += "\n ";
      column_ = 1;
    }
    out_.append(bytes, size);
    column_ += size;
  }

 private:
  std::string& out_;
  const std::size_t wrap_;
  std::size_t column_;  // Bytes on the current line so far.
};

void append_base64(std::string_view value, FoldingAppender& appender) {
  const auto* p = reinterpret_cast<const unsigned char*>(value.data());
  std::size_t left = value.size();
  char quad[4];
  for (; left >= 3; p += 3, left -= 3) {
    const std::uint32_t bits = (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2];
    quad[0] = kBase64Digits[(bits >> 18) & 0x3f];
    quad[1] = kBase64Digits[(bits >> 12) & 0x3f];
    quad[2] = kBase64Digits[(bits >> 6) & 0x3f];
    quad[3] = kBase64Digits[bits & 0x3f];
    for (const char c : quad) {
      appender.append_char(&c, 1);
    }
  }
  if (left > 0) {
    const std::uint32_t bits =
        (std::uint32_t{p[0]} << 16) | (left == 2 ? std::uint32_t{p[1]} << 8 : 0);
    quad[0] = kBase64Digits[(bits >> 18) & 0x3f];
    quad[1] = kBase64Digits[(bits >> 12) & 0x3f];
    quad[2] = left == 2 ? kBase64Digits[(bits >> 6) & 0x3f] : '=';
    quad[3] = '=';
    for (const char c : quad) {
      appender.append_char(&c, 1);
    }
  }
}

// Appends "description: value" or "description:: base64", folded, and a line end.
void append_line(std::string_view description, std::string_view value, bool force_base64,
                 const LdifWriterOptions& options, std::string& out) {
  out += description;
  out += ':';
  if (value.empty()) {
    out += '\n';
    return;
  }
  const std::size_t wrap = options.wrap_columns;
  if (!force_base64 && is_plain_safe(value, options.plain_utf8)) {
    out += ' ';
    FoldingAppender appender(out, wrap, description.size() + 2);
    if (wrap == 0) {
      out += value;
    } else {
      for (std::size_t i = 0; i < value.size();) {
        // UTF-8 sequences stay whole on one line; is_plain_safe checked their form.
        const auto lead = static_cast<unsigned char>(value[i]);
        const std::size_t size = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
        appender.append_char(value.data() + i, size);
        i += size;
      }
    }
  } else {
    out += ": ";
    FoldingAppender appender(out, wrap, description.size() + 3);
    append_base64(value, appender);
  }
  out += '\n';
}

Status check_entry(const schema::Entry& entry) {
  const std::size_t bad = schema::find_invalid_utf8(entry.dn);
  if (bad != std::string::npos) {
    return invalid_argument("LDIF export: the DN is not valid UTF-8 (byte " + std::to_string(bad) +
                            ")");
  }
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    const std::string_view description = attribute.description;
    if (!is_valid_attribute_description(description)) {
      return invalid_argument("LDIF export of '" + entry.dn + "': invalid attribute description '" +
                              attribute.description + "'");
    }
    // A reader would take these for the DN or for a change record.
    if (schema::ascii_iequals(description, "dn") ||
        schema::ascii_iequals(description, "changetype") ||
        schema::ascii_iequals(description, "control")) {
      return invalid_argument("LDIF export of '" + entry.dn + "': attribute description '" +
                              attribute.description + "' is reserved in LDIF");
    }
  }
  return Status();
}

}  // namespace

LdifWriter::LdifWriter(std::ostream& out, LdifWriterOptions options)
    : out_(out), options_(options) {}

Status LdifWriter::append_record(const schema::Entry& entry, const LdifWriterOptions& options,
                                 std::string& out) {
  NUMADIR_RETURN_IF_ERROR(check_entry(entry));
  append_line("dn", entry.dn, /*force_base64=*/false, options, out);
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    const bool force_base64 = always_base64(attribute.description, options);
    for (const std::string& value : attribute.values) {
      append_line(attribute.description, value, force_base64, options, out);
    }
  }
  out += '\n';
  return Status();
}

Status LdifWriter::write(const schema::Entry& entry) {
  scratch_.clear();
  if (options_.version_header && !header_written_) {
    scratch_ += "version: 1\n\n";
  }
  NUMADIR_RETURN_IF_ERROR(append_record(entry, options_, scratch_));
  out_.write(scratch_.data(), static_cast<std::streamsize>(scratch_.size()));
  if (!out_.good()) {
    return Status(StatusCode::kIo, "LDIF export: writing the output failed");
  }
  header_written_ = true;
  bytes_written_ += scratch_.size();
  ++records_written_;
  return Status();
}

}  // namespace numadir::server
