// server/formats/config_diagnostic.cc: see config_diagnostic.h.
#include "server/formats/config_diagnostic.h"

#include "schema/ascii.h"

namespace numadir::server {

std::string ConfigDiagnostic::to_string(std::string_view label) const {
  std::string text = file;
  if (!file.empty() && line != 0) {
    text += ":" + std::to_string(line);
    if (column != 0) {
      text += ":" + std::to_string(column);
    }
  }
  for (const std::string_view part : {label, std::string_view(key), std::string_view(message)}) {
    if (!part.empty()) {
      text += (text.empty() ? "" : ": ") + std::string(part);
    }
  }
  return text;
}

std::string ConfigDiagnostic::without_line() const {
  ConfigDiagnostic copy = *this;
  copy.line = 0;
  copy.column = 0;
  return copy.to_string();
}

std::uint32_t config_key_line(const ConfigKeyLines& lines, std::string_view key) {
  std::size_t end = 0;
  while (end < key.size() && (schema::is_keychar(key[end]) || key[end] == '_' || key[end] == '.' ||
                              key[end] == '[' || key[end] == ']')) {
    ++end;
  }
  key = key.substr(0, end);
  while (!key.empty()) {
    if (const auto found = lines.find(key); found != lines.end()) {
      return found->second;
    }
    const std::size_t cut = key.ends_with(']') ? key.rfind('[') : key.rfind('.');
    if (cut == std::string_view::npos) {
      break;
    }
    key = key.substr(0, cut);
  }
  return 0;
}

}  // namespace numadir::server
