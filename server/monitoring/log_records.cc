// server/monitoring/log_records.cc: see log_records.h.
#include "server/monitoring/log_records.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "listener/wire/message_decoder.h"

namespace numadir::server {

// A bounded piece of a line (words, numbers, a time) built in place and appended to the line
// in one go: a line is a handful of appends, not one per character or field.
class LinePiece {
 public:
  static constexpr std::size_t kCapacity = 320;  // Each use stays well under it (numbers <= 20).

  LinePiece& add(std::string_view text) {
    const std::size_t n = std::min(text.size(), kCapacity - size_);  // Never past the end.
    std::memcpy(data_ + size_, text.data(), n);
    size_ += n;
    return *this;
  }
  LinePiece& add(char c) {
    if (size_ < kCapacity) {
      data_[size_++] = c;
    }
    return *this;
  }
  // `value` in decimal.
  template <typename Integer>
  LinePiece& number(Integer value) {
    if (kCapacity - size_ >= 20) {
      size_ = static_cast<std::size_t>(std::to_chars(data_ + size_, data_ + kCapacity, value).ptr -
                                       data_);
    }
    return *this;
  }
  // `value` (< 10^digits) in exactly `digits` decimal digits, zero-padded. Requires: digits <= 20.
  LinePiece& padded(std::uint64_t value, int digits) {
    if (kCapacity - size_ < static_cast<std::size_t>(digits)) {
      return *this;
    }
    for (int i = digits - 1; i >= 0; --i) {
      data_[size_ + static_cast<std::size_t>(i)] = static_cast<char>('0' + value % 10);
      value /= 10;
    }
    size_ += static_cast<std::size_t>(digits);
    return *this;
  }
  // `ns` as seconds with 6 decimals (slapd's etime), truncated to the microsecond.
  LinePiece& seconds(std::int64_t ns) {
    const std::uint64_t micros = ns > 0 ? static_cast<std::uint64_t>(ns) / 1000 : 0;
    return number(micros / 1000000).add('.').padded(micros % 1000000, 6);
  }
  void append_to(std::string& out) const { out.append(data_, size_); }

 private:
  char data_[kCapacity];
  std::size_t size_ = 0;
};

namespace {

using listener::wire::LdapMessage;
using listener::wire::ProtocolOp;

// The fixed part of an encoded record, then each string as a 4-byte length and its bytes.
struct EncodedHead {
  std::uint32_t size;
  RecordKind kind;
  std::uint8_t unused[3];
  std::int64_t time_ns;
  std::uint64_t conn;
  std::uint64_t op;
  std::int64_t msgid;
  std::int64_t numbers[Record::kNumbers];
};

// The bytes a quoted text value cannot hold as they are.
constexpr std::array<bool, 256> kTextEscapes = [] {
  std::array<bool, 256> escapes{};
  for (const char c : {'"', '\\', '\n', '\r'}) {
    escapes[static_cast<unsigned char>(c)] = true;
  }
  return escapes;
}();

void append_quoted(std::string& out, std::string_view value) {
  std::size_t run = 0;
  while (run < value.size() && !kTextEscapes[static_cast<unsigned char>(value[run])]) {
    ++run;
  }
  const std::size_t at = out.size();
  if (run == value.size()) {
    // Nothing to escape (a DN or filter usually): one resize, one copy.
    out.resize(at + value.size() + 2);
    char* p = out.data() + at;
    p[0] = '"';
    std::memcpy(p + 1, value.data(), value.size());
    p[value.size() + 1] = '"';
    return;
  }
  out += '"';
  out.append(value.data(), run);
  for (std::size_t i = run; i < value.size(); ++i) {
    const char c = value[i];
    if (!kTextEscapes[static_cast<unsigned char>(c)]) {
      continue;
    }
    out.append(value.data() + run, i - run);
    run = i + 1;
    if (c == '\n' || c == '\r') {
      out += ' ';  // One log line per event, whatever the client sent.
    } else {
      out += '\\';
      out += c;
    }
  }
  out.append(value.data() + run, value.size() - run);
  out += '"';
}

// Returns: the length of the well-formed UTF-8 sequence `text` starts with, 0 if it is not one.
std::size_t utf8_sequence(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  std::uint32_t min = 0;
  if (lead < 0x80) {
    return 1;
  } else if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
    min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (text.size() < length) {
    return 0;
  }
  std::uint32_t code = lead & (0x7f >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) {
      return 0;
    }
    code = (code << 6) | (byte(i) & 0x3f);
  }
  const bool surrogate = code >= 0xd800 && code <= 0xdfff;
  return code < min || code > 0x10ffff || surrogate ? 0 : length;
}

// Appends `value` as a JSON string: quotes, backslashes and control characters escaped, bytes
// that are not UTF-8 replaced by U+FFFD (JSON text must be UTF-8; a client may send any bytes).
void append_json_string(std::string& out, std::string_view value) {
  out += '"';
  while (!value.empty()) {
    // Printable ASCII with nothing to escape, appended as a run.
    std::size_t plain = 0;
    while (plain < value.size()) {
      const unsigned char b = static_cast<unsigned char>(value[plain]);
      if (b < 0x20 || b >= 0x80 || b == '"' || b == '\\') {
        break;
      }
      ++plain;
    }
    out.append(value.data(), plain);
    value.remove_prefix(plain);
    if (value.empty()) {
      break;
    }
    const unsigned char c = static_cast<unsigned char>(value.front());
    const std::size_t length = utf8_sequence(value);
    if (length == 0) {
      out += "\\ufffd";
      value.remove_prefix(1);
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out.append(value.data(), length);
    }
    value.remove_prefix(length);
  }
  out += '"';
}

// Where describe_fields puts a request's fields: text (`TYPE key="value" key=N`) or JSON
// (`"type":"TYPE","key":"value","key":N`).
class Fields {
 public:
  // `scratch`: where a value made of parts is put together (a filter's string form, the
  // attribute list), kept by the caller so formatting allocates nothing once it has grown.
  Fields(std::string& out, std::string& scratch, LogFormat format)
      : out_(out), scratch_(scratch), json_(format == LogFormat::kJson) {}
  std::string& scratch() { return scratch_; }
  void type(std::string_view name) {
    if (json_) {
      out_ += "\"type\":";
      append_json_string(out_, name);
    } else {
      out_ += name;
    }
  }
  // A quoted string in the text form.
  void text(std::string_view key, std::string_view value) {
    key_(key);
    json_ ? append_json_string(out_, value) : append_quoted(out_, value);
  }
  // An unquoted word in the text form (a SASL mechanism name).
  void word(std::string_view key, std::string_view value) {
    key_(key);
    if (json_) {
      append_json_string(out_, value);
    } else {
      out_ += value;
    }
  }
  void number(std::string_view key, long long value) {
    LinePiece piece;
    key_(piece, key).number(value).append_to(out_);
  }
  // Nanoseconds as seconds with 6 decimals, unquoted in both forms.
  void seconds(std::string_view key, std::int64_t ns) {
    LinePiece piece;
    key_(piece, key).seconds(ns).append_to(out_);
  }

 private:
  void key_(std::string_view key) {
    LinePiece piece;
    key_(piece, key).append_to(out_);
  }
  LinePiece& key_(LinePiece& piece, std::string_view key) const {
    return json_ ? piece.add(",\"").add(key).add("\":") : piece.add(' ').add(key).add('=');
  }
  std::string& out_;
  std::string& scratch_;
  const bool json_;
};

void describe_fields(const LdapMessage& request, Fields& fields) {
  switch (request.op) {
    case ProtocolOp::kUnbindRequest:
      fields.type("UNBIND");
      return;
    case ProtocolOp::kAbandonRequest:
      fields.type("ABANDON");
      fields.number("msg", request.abandon_id);
      return;
    case ProtocolOp::kBindRequest:
      fields.type("BIND");
      fields.text("dn", request.bind_request.name);
      if (request.bind_request.method == listener::wire::BindMethod::kSimple) {
        fields.number("method", 128);
      } else if (request.bind_request.method == listener::wire::BindMethod::kUnsupported) {
        fields.number("method", request.bind_request.unsupported_tag);
      } else {
        fields.word("mech", request.bind_request.sasl_mechanism);
      }
      return;
    case ProtocolOp::kSearchRequest: {
      const auto& search = request.search_request;
      fields.type("SRCH");
      fields.text("base", search.base_object);
      fields.number("scope", static_cast<int>(search.scope));
      fields.number("deref", static_cast<int>(search.deref_aliases));
      std::string& scratch = fields.scratch();
      scratch.clear();
      search.filter.append_to(scratch);
      fields.text("filter", scratch);
      scratch.clear();
      for (std::string_view attribute : search.attributes) {
        scratch += scratch.empty() ? "" : " ";
        scratch += attribute;
      }
      fields.text("attrs", scratch.empty() ? "ALL" : std::string_view(scratch));
      return;
    }
    case ProtocolOp::kAddRequest:
      fields.type("ADD");
      fields.text("dn", request.add_request.entry);
      return;
    case ProtocolOp::kDelRequest:
      fields.type("DEL");
      fields.text("dn", request.dn);
      return;
    case ProtocolOp::kModifyRequest:
      fields.type("MOD");
      fields.text("dn", request.modify_request.object);
      return;
    case ProtocolOp::kModifyDnRequest:
      fields.type("MODRDN");
      fields.text("dn", request.modify_dn_request.entry);
      return;
    case ProtocolOp::kCompareRequest:
      fields.type("CMP");
      fields.text("dn", request.compare_request.entry);
      fields.text("attr", request.compare_request.attribute);
      return;
    case ProtocolOp::kExtendedRequest:
      fields.type("EXT");
      fields.text("oid", request.extended.name.value_or(""));
      return;
    default:
      fields.type(listener::wire::protocol_op_name(request.op));
      return;
  }
}

template <typename T>
void put(std::string& out, std::size_t at, const T& value) {
  std::memcpy(out.data() + at, &value, sizeof(value));
}

template <typename T>
T get(std::string_view bytes, std::size_t at) {
  T value;
  std::memcpy(&value, bytes.data() + at, sizeof(value));
  return value;
}

}  // namespace

Result<LogFormat> parse_log_format(std::string_view text) {
  if (text == "text") {
    return LogFormat::kText;
  }
  if (text == "json") {
    return LogFormat::kJson;
  }
  return invalid_argument("\"" + std::string(text) + "\": must be \"text\" or \"json\"");
}

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

void encode_record(const Record& record, std::string& out) {
  std::size_t size = sizeof(EncodedHead);
  for (std::string_view s : record.strings) {
    size += sizeof(std::uint32_t) + s.size();
  }
  out.resize(size);
  EncodedHead head{};
  head.size = static_cast<std::uint32_t>(size);
  head.kind = record.kind;
  head.time_ns = record.time_ns;
  head.conn = record.conn;
  head.op = record.op;
  head.msgid = record.msgid;
  std::memcpy(head.numbers, record.numbers, sizeof(head.numbers));
  put(out, 0, head);
  std::size_t at = sizeof(EncodedHead);
  for (std::string_view s : record.strings) {
    put(out, at, static_cast<std::uint32_t>(s.size()));
    at += sizeof(std::uint32_t);
    if (!s.empty()) {
      std::memcpy(out.data() + at, s.data(), s.size());
    }
    at += s.size();
  }
}

std::uint32_t encoded_size(std::string_view bytes) { return get<std::uint32_t>(bytes, 0); }

std::int64_t encoded_time(std::string_view bytes) {
  return get<std::int64_t>(bytes, offsetof(EncodedHead, time_ns));
}

Record decode_record(std::string_view bytes) {
  const auto head = get<EncodedHead>(bytes, 0);
  Record record;
  record.kind = head.kind;
  record.time_ns = head.time_ns;
  record.conn = head.conn;
  record.op = head.op;
  record.msgid = head.msgid;
  std::memcpy(record.numbers, head.numbers, sizeof(record.numbers));
  std::size_t at = sizeof(EncodedHead);
  for (std::string_view& s : record.strings) {
    const auto length = get<std::uint32_t>(bytes, at);
    at += sizeof(std::uint32_t);
    s = bytes.substr(at, length);
    at += length;
  }
  return record;
}

std::string describe_request(const LdapMessage& request) {
  std::string out;
  std::string scratch;
  Fields fields(out, scratch, LogFormat::kText);
  describe_fields(request, fields);
  return out;
}

void LineFormatter::append_time(std::int64_t time_ns, LinePiece& out) {
  const std::int64_t wall = time_ns + wall_offset_ns_;
  const std::time_t seconds = static_cast<std::time_t>(wall / 1000000000);
  if (seconds != cached_second_) {
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    std::snprintf(cached_prefix_, sizeof(cached_prefix_), "%04d-%02d-%02dT%02d:%02d:%02d",
                  utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                  utc.tm_sec);
    cached_second_ = seconds;
  }
  out.add(cached_prefix_)
      .add('.')
      .padded(static_cast<std::uint64_t>((wall % 1000000000) / 1000), 6)
      .add('Z');
}

void LineFormatter::append_line(const Record& record, std::string& out) {
  if (format_ == LogFormat::kJson) {
    append_json(record, out);
  } else {
    append_text(record, out);
  }
  out += '\n';
}

void LineFormatter::append_text(const Record& record, std::string& out) {
  // The time, the ids and, for the records of numbers only, the whole line: one piece.
  LinePiece piece;
  append_time(record.time_ns, piece);
  piece.add(' ');
  if (record.conn != 0) {
    piece.add("conn=").number(record.conn).add(' ');
  }
  if (record.msgid >= 0) {
    piece.add("op=").number(record.op).add(" msgid=").number(record.msgid).add(' ');
  }
  const auto* n = record.numbers;
  switch (record.kind) {
    case RecordKind::kAccept:
      if (record.strings[0].starts_with("PATH=")) {
        // ldapi://: slapd's "ACCEPT from PATH=/run/... (PATH=/run/...)".
        piece.add("ACCEPT from ").append_to(out);
        out += record.strings[0];
        out += " (";
        out += record.strings[0];
        out += ')';
        return;
      }
      piece.add("ACCEPT from IP=").append_to(out);
      out += record.strings[0];
      LinePiece().add(" (port ").number(n[0]).add(')').append_to(out);
      return;
    case RecordKind::kClosed:
      piece.add("closed").append_to(out);
      return;
    case RecordKind::kRequest:
      piece.append_to(out);
      if (listener::wire::decode_message(record.strings[0], decoded_, {}).ok()) {
        Fields fields(out, scratch_, LogFormat::kText);
        describe_fields(decoded_, fields);
      } else {
        out += "UNDECODABLE";  // Bytes the listener had decoded: cannot happen.
      }
      return;
    case RecordKind::kEntry:
      piece.add("ENTRY dn=").append_to(out);
      append_quoted(out, record.strings[0]);
      return;
    case RecordKind::kResult:
      piece.add(n[2] >= 0 ? "SEARCH RESULT" : "RESULT").add(" tag=").number(n[0]);
      piece.add(" err=").number(n[1]);
      if (n[2] >= 0) {
        piece.add(" nentries=").number(n[2]);
      }
      piece.add(" etime=").seconds(n[3]).add(" text=").append_to(out);
      append_quoted(out, record.strings[0]);
      return;
    case RecordKind::kAbandoned:
      piece.add("ABANDONED etime=").seconds(n[3]).append_to(out);
      return;
    case RecordKind::kTls:
      piece.add("TLS established tls_proto=").append_to(out);
      out += record.strings[0];
      out += " tls_cipher=";
      out += record.strings[1];
      out += n[0] != 0 ? " resumed" : "";
      if (n[1] != 0) {
        out += " peer=";
        append_quoted(out, record.strings[2]);
        out += n[2] != 0 ? " verified" : " unverified";
      }
      return;
    case RecordKind::kMessage:
      piece.append_to(out);
      out += record.strings[0];
      return;
  }
}

void LineFormatter::append_json(const Record& record, std::string& out) {
  LinePiece piece;
  piece.add("{\"time\":\"");
  append_time(record.time_ns, piece);
  piece.add('"');
  if (record.conn != 0) {
    piece.add(",\"conn\":").number(record.conn);
  }
  if (record.msgid >= 0) {
    piece.add(",\"op\":").number(record.op).add(",\"msgid\":").number(record.msgid);
  }
  piece.add(',').append_to(out);
  Fields fields(out, scratch_, LogFormat::kJson);
  const auto* n = record.numbers;
  switch (record.kind) {
    case RecordKind::kAccept:
      fields.type("ACCEPT");
      fields.text("peer", record.strings[0]);
      fields.number("port", n[0]);
      break;
    case RecordKind::kClosed:
      fields.type("CLOSED");
      break;
    case RecordKind::kRequest:
      if (listener::wire::decode_message(record.strings[0], decoded_, {}).ok()) {
        describe_fields(decoded_, fields);
      } else {
        fields.type("UNDECODABLE");  // Bytes the listener had decoded: cannot happen.
      }
      break;
    case RecordKind::kEntry:
      fields.type("ENTRY");
      fields.text("dn", record.strings[0]);
      break;
    case RecordKind::kResult:
      fields.type("RESULT");
      fields.number("tag", n[0]);
      fields.number("err", n[1]);
      if (n[2] >= 0) {
        fields.number("nentries", n[2]);
      }
      fields.seconds("etime", n[3]);
      fields.text("text", record.strings[0]);
      break;
    case RecordKind::kAbandoned:
      fields.type("ABANDONED");
      fields.seconds("etime", n[3]);
      break;
    case RecordKind::kTls:
      fields.type("TLS");
      fields.text("tls_proto", record.strings[0]);
      fields.text("tls_cipher", record.strings[1]);
      out += n[0] != 0 ? ",\"resumed\":true" : ",\"resumed\":false";
      if (n[1] != 0) {
        fields.text("peer", record.strings[2]);
        out += n[2] != 0 ? ",\"verified\":true" : ",\"verified\":false";
      }
      break;
    case RecordKind::kMessage:
      fields.type("MESSAGE");
      fields.text("text", record.strings[0]);
      break;
  }
  out += '}';
}

}  // namespace numadir::server
