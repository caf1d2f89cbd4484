// server/formats/ldif_writer.h: LdifWriter, which prints Entry records as RFC 2849 LDIF (the output
// of `numadir export`), in the form OpenLDAP's slapcat prints them, so that slapadd and LdifReader
// both read it back to equal entries.
//
// Each record is `dn:` then one line per value, attributes in entry order, then a blank line.
// A value (or the DN) is written plain only when it is non-empty printable ASCII (0x20-0x7E)
// that neither starts with a space, ':' or '<' nor ends with a space; otherwise it is base64
// (`attr:: ...`). An empty value is `attr:` with nothing after the colon. Like libldap's
// ldif_sput_wrap, values of attribute descriptions with a ";binary" option and of userPassword
// (2.5.4.35) are always base64. Lines are folded at LDIF_LINE_WIDTH = 78 bytes (OpenLDAP
// include/ldif.h; its older releases used 76): a line, the leading space of a continuation line
// included, never passes 78 bytes, except that an attribute description is never split.
//
// Thread contract: an LdifWriter belongs to one thread (the export thread). The ostream is
// borrowed: it must outlive the writer and not be written by anyone else meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "base/status.h"
#include "schema/entry.h"

namespace numadir::server {

// OpenLDAP's default fold width (LDIF_LINE_WIDTH in include/ldif.h).
inline constexpr std::size_t kLdifLineWidth = 78;

struct LdifWriterOptions {
  // The longest line, in bytes, before folding; 0 never folds.
  std::size_t wrap_columns = kLdifLineWidth;
  // Print `version: 1` and a blank line before the first record (RFC 2849 ldif-content; what
  // ldapsearch prints). Off by default, as in slapcat's output: slapadd (OpenLDAP 2.5) refuses a
  // version line ("str2ad(version): attribute type undefined").
  bool version_header = false;
  // Also write valid, printable UTF-8 values plain (readable, and accepted by slapadd and
  // LdifReader, though RFC 2849 SAFE-STRING is ASCII only). Folding then never splits a
  // character. Off by default: plain ASCII only, as slapcat writes.
  bool plain_utf8 = false;
  // Always base64 userPassword values (so they do not show on a terminal), as slapcat does.
  bool base64_passwords = true;
};

class LdifWriter {
 public:
  explicit LdifWriter(std::ostream& out, LdifWriterOptions options = {});
  LdifWriter(const LdifWriter&) = delete;
  LdifWriter& operator=(const LdifWriter&) = delete;

  // Writes `entry` as one record and a blank line (and, first of all, the version header when
  // asked). An attribute with no values writes nothing.
  // Errors: kInvalidArgument (nothing written) when the DN is not valid UTF-8 or an attribute
  // description is not a valid RFC 2849 AttributeDescription; kIo when the stream fails.
  [[nodiscard]] Status write(const schema::Entry& entry);

  std::uint64_t records_written() const { return records_written_; }
  std::uint64_t bytes_written() const { return bytes_written_; }

  // Appends the record for `entry` (without any version header, with its closing blank line) to
  // `out`. On error `out` is unchanged. Errors: kInvalidArgument as for write().
  [[nodiscard]] static Status append_record(const schema::Entry& entry,
                                            const LdifWriterOptions& options, std::string& out);

 private:
  std::ostream& out_;
  const LdifWriterOptions options_;
  std::string scratch_;  // The record being formatted; reused.
  std::uint64_t records_written_ = 0;
  std::uint64_t bytes_written_ = 0;
  bool header_written_ = false;
};

}  // namespace numadir::server
