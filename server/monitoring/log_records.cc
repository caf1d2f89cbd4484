// server/monitoring/log_records.cc: see log_records.h.
#include "server/monitoring/log_records.h"

#include <charconv>
#include <cstdio>
#include <cstring>

#include "listener/wire/message_decoder.h"

namespace numadir::server {
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

// Appends `value` in decimal.
template <typename Integer>
void append_number(std::string& out, Integer value) {
  char text[24];
  const std::to_chars_result result = std::to_chars(text, text + sizeof(text), value);
  out.append(text, static_cast<std::size_t>(result.ptr - text));
}

// Appends `value` (< 10^digits) in exactly `digits` decimal digits, zero-padded.
void append_padded(std::string& out, std::uint64_t value, int digits) {
  char text[20];
  for (int i = digits - 1; i >= 0; --i) {
    text[i] = static_cast<char>('0' + value % 10);
    value /= 10;
  }
  out.append(text, static_cast<std::size_t>(digits));
}

// Appends `ns` as seconds with 6 decimals (slapd's etime), truncated to the microsecond.
void append_seconds(std::string& out, std::int64_t ns) {
  const std::uint64_t micros = ns > 0 ? static_cast<std::uint64_t>(ns) / 1000 : 0;
  append_number(out, micros / 1000000);
  out += '.';
  append_padded(out, micros % 1000000, 6);
}

void append_quoted(std::string& out, std::string_view value) {
  out += '"';
  // Runs without a byte to escape are appended whole (a DN or filter usually is one run).
  std::size_t run = 0;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c != '"' && c != '\\' && c != '\n' && c != '\r') {
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
    key_(key);
    append_number(out_, value);
  }
  // Nanoseconds as seconds with 6 decimals, unquoted in both forms.
  void seconds(std::string_view key, std::int64_t ns) {
    key_(key);
    append_seconds(out_, ns);
  }

 private:
  void key_(std::string_view key) {
    if (json_) {
      out_ += ",\"";
      out_ += key;
      out_ += "\":";
    } else {
      out_ += ' ';
      out_ += key;
      out_ += '=';
    }
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

void LineFormatter::append_time(std::int64_t time_ns, std::string& out) {
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
  out += cached_prefix_;
  out += '.';
  append_padded(out, static_cast<std::uint64_t>((wall % 1000000000) / 1000), 6);
  out += 'Z';
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
  append_time(record.time_ns, out);
  out += ' ';
  if (record.conn != 0) {
    out += "conn=";
    append_number(out, record.conn);
    out += ' ';
  }
  if (record.msgid >= 0) {
    out += "op=";
    append_number(out, record.op);
    out += " msgid=";
    append_number(out, record.msgid);
    out += ' ';
  }
  const auto* n = record.numbers;
  switch (record.kind) {
    case RecordKind::kAccept:
      out += "ACCEPT from IP=";
      out += record.strings[0];
      out += " (port ";
      append_number(out, n[0]);
      out += ')';
      return;
    case RecordKind::kClosed:
      out += "closed";
      return;
    case RecordKind::kRequest:
      if (listener::wire::decode_message(record.strings[0], decoded_, {}).ok()) {
        Fields fields(out, scratch_, LogFormat::kText);
        describe_fields(decoded_, fields);
      } else {
        out += "UNDECODABLE";  // Bytes the listener had decoded: cannot happen.
      }
      return;
    case RecordKind::kEntry:
      out += "ENTRY dn=";
      append_quoted(out, record.strings[0]);
      return;
    case RecordKind::kResult:
      out += n[2] >= 0 ? "SEARCH RESULT" : "RESULT";
      out += " tag=";
      append_number(out, n[0]);
      out += " err=";
      append_number(out, n[1]);
      if (n[2] >= 0) {
        out += " nentries=";
        append_number(out, n[2]);
      }
      out += " etime=";
      append_seconds(out, n[3]);
      out += " text=";
      append_quoted(out, record.strings[0]);
      return;
    case RecordKind::kAbandoned:
      out += "ABANDONED etime=";
      append_seconds(out, n[3]);
      return;
    case RecordKind::kTls:
      out += "TLS established tls_proto=";
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
      out += record.strings[0];
      return;
  }
}

void LineFormatter::append_json(const Record& record, std::string& out) {
  out += "{\"time\":\"";
  append_time(record.time_ns, out);
  out += '"';
  if (record.conn != 0) {
    out += ",\"conn\":";
    append_number(out, record.conn);
  }
  if (record.msgid >= 0) {
    out += ",\"op\":";
    append_number(out, record.op);
    out += ",\"msgid\":";
    append_number(out, record.msgid);
  }
  out += ',';
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
