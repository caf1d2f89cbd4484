// server/monitoring/log_records.h: the access log's records and their lines. The request path
// hands the log a Record (a kind, a time, the connection, the operation's number and message ID,
// a few numbers and the strings a line needs: views, copied as bytes, never formatted); the log's
// formatting thread turns each into one line, slapd-like text or a JSON object:
//   2026-11-30T15:10:02.123456Z conn=3 op=1 msgid=2 SRCH base="ou=people,dc=example,dc=com"
//   scope=2 deref=0 filter="(uid=user7)" attrs="1.1"
//   {"time":"2026-11-30T15:10:02.123456Z","conn":3,"op":1,"msgid":2,"type":"SRCH",...}
//
// Thread contract: encode_record and RecordReader on any thread, each on its own buffers;
// LineFormatter belongs to the one thread that formats.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#include "base/status.h"
#include "listener/wire/ldap_message.h"

namespace numadir::server {

enum class LogFormat : std::uint8_t {
  kText,  // slapd's `stats` lines.
  kJson,  // One JSON object per line, for log shippers.
};

// Errors: kInvalidArgument naming the accepted formats.
Result<LogFormat> parse_log_format(std::string_view text);

enum class RecordKind : std::uint8_t {
  kAccept,     // strings[0] the peer "IP:port" ("PATH=..." for ldapi); numbers[0] the local port.
  kClosed,     // The connection closed.
  kRequest,    // strings[0] the request's PDU (the whole LDAPMessage).
  kEntry,      // strings[0] the DN of an entry a search returned (level debug).
  kResult,     // numbers: [0] the response's tag, [1] its result code, [2] the entries a search
               // returned (-1: not a search), [3] nanoseconds since the request; strings[0] the
               // diagnostic message.
  kAbandoned,  // numbers[3] nanoseconds since the request: it ended without a result.
  kTls,        // strings: [0] protocol, [1] cipher, [2] client certificate's subject; numbers:
               // [0] resumed, [1] a certificate was sent, [2] it was verified.
  kMessage,    // strings[0] free text (a refused bind, a search scanning its scope).
};

// One event. Its views need only live until encode_record returns.
struct Record {
  static constexpr int kNumbers = 4;
  static constexpr int kStrings = 3;

  RecordKind kind = RecordKind::kMessage;
  std::int64_t time_ns = 0;  // CLOCK_MONOTONIC (monotonic_ns()).
  std::uint64_t conn = 0;    // 0: no connection (kMessage).
  std::uint64_t op = 0;      // The operation's number on its connection, from 0.
  std::int64_t msgid = -1;   // -1: no operation.
  std::int64_t numbers[kNumbers] = {0, 0, 0, 0};
  std::string_view strings[kStrings];
};

// Returns: CLOCK_MONOTONIC in nanoseconds (a vDSO read: no system call).
std::int64_t monotonic_ns();

// Replaces `out` with `record`'s bytes (a 4-byte size first); `out` keeps its capacity, so a
// reused buffer allocates nothing once grown.
void encode_record(const Record& record, std::string& out);
// Returns: the size of the record `bytes` starts with (its first 4 bytes).
// Requires: bytes.size() >= 4.
std::uint32_t encoded_size(std::string_view bytes);
// Returns: the time of the record `bytes` starts with. Requires: bytes holds its fixed part.
std::int64_t encoded_time(std::string_view bytes);
// Returns: the record encoded in `bytes` (encode_record's output), its views into `bytes`.
// Requires: `bytes` is exactly one encoded record.
Record decode_record(std::string_view bytes);

class LinePiece;  // A bounded part of a line (log_records.cc).

// Turns records into lines. Owner: the formatting thread.
class LineFormatter {
 public:
  explicit LineFormatter(LogFormat format) : format_(format) {}
  // Sets the wall-clock time of monotonic time 0 (CLOCK_REALTIME minus CLOCK_MONOTONIC, ns).
  void set_wall_offset(std::int64_t offset_ns) { wall_offset_ns_ = offset_ns; }
  // Appends `record`'s line, ending in '\n', to `out`.
  void append_line(const Record& record, std::string& out);

 private:
  void append_time(std::int64_t time_ns, LinePiece& out);
  void append_text(const Record& record, std::string& out);
  void append_json(const Record& record, std::string& out);

  const LogFormat format_;
  std::int64_t wall_offset_ns_ = 0;
  std::time_t cached_second_ = -1;  // The second cached_prefix_ spells.
  char cached_prefix_[64] = {};     // "YYYY-MM-DDTHH:MM:SS".
  listener::wire::LdapMessage decoded_;
  std::string scratch_;  // Fields' (a filter's string form, an attribute list).
};

// Returns: the access log's description of `request` (without timestamp or conn/op prefix),
//   e.g. `SRCH base="dc=example,dc=com" scope=2 deref=0 filter="(uid=a)" attrs="1.1"`.
std::string describe_request(const listener::wire::LdapMessage& request);

}  // namespace numadir::server
