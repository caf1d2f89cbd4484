// server/operations/external_map.cc: see external_map.h.
#include "server/operations/external_map.h"

#include "schema/ascii.h"

namespace numadir::server {

namespace {

// Appends `value` escaped as an RFC 4514 attribute value.
void append_escaped(std::string& out, std::string_view value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    const bool special = c == ',' || c == '+' || c == '"' || c == '\\' || c == '<' || c == '>' ||
                         c == ';' || c == '=';
    const bool edge = (i == 0 && (c == ' ' || c == '#')) || (i + 1 == value.size() && c == ' ');
    if (special || edge) {
      out += '\\';
      out += c;
    } else if (c == '\0') {
      out += "\\00";
    } else {
      out += c;
    }
  }
}

}  // namespace

Result<std::string> expand_external_map(std::string_view map, const listener::TlsPeer& peer) {
  std::string out;
  std::size_t at = 0;
  while (at < map.size()) {
    const std::size_t open = map.find('{', at);
    if (open == std::string_view::npos) {
      out.append(map.substr(at));
      break;
    }
    out.append(map.substr(at, open - at));
    const std::size_t close = map.find('}', open);
    if (close == std::string_view::npos) {
      return invalid_argument("tls.external_map: unclosed '{'");
    }
    const std::string_view name = map.substr(open + 1, close - open - 1);
    if (name == "subject") {
      out += peer.subject;
    } else {
      bool found = false;
      for (const auto& [attribute, value] : peer.subject_attributes) {
        if (schema::ascii_iequals(attribute, name)) {
          append_escaped(out, value);
          found = true;
          break;
        }
      }
      if (!found) {
        return invalid_argument("the certificate subject \"" + peer.subject + "\" has no " +
                                std::string(name));
      }
    }
    at = close + 1;
  }
  return out;
}

}  // namespace numadir::server
