// server/formats/detail/ldif_values.h: how the LDIF reader turns the text after a description's
// colon into a value (plain SAFE-STRING with UTF-8, base64, a local file:// URL) and quotes text
// for its error messages. Private to server/formats.
//
// Thread contract: free functions over caller-owned values; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace numadir::server::detail {

// Returns: `text` quoted for an error message: printable ASCII as is, other bytes as \xNN, cut
//   after 60 bytes with "...".
std::string quoted(std::string_view text);

// Decodes base64 `in` into `out` (replacing its contents). Padding is required (the length is
// a multiple of 4). Returns: an empty string on success, else the reason.
std::string decode_base64(std::string_view in, std::string& out);

// Checks a plain (SAFE-STRING, UTF-8 allowed) value; spaces after the colon are already skipped.
// Returns: an empty string if acceptable, else the reason.
std::string check_plain_value(std::string_view value);

// Reads the file named by local file:// URL `url` into `out`, at most `max_bytes`.
// Errors: kUnsupported (not a local file:// URL), kMalformed (a bad %-escape), kNotFound (no
// such file), kIo (open or read failed), kLimitExceeded (longer than max_bytes).
Status read_file_url(std::string_view url, std::size_t max_bytes, std::string& out);

}  // namespace numadir::server::detail
