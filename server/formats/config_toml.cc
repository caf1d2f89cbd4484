// server/formats/config_toml.cc: the typed key readers of numadir.toml (see
// detail/config_toml.h): each reads an optional key and reports a wrong type with its full key.
//
// Thread contract: as detail/config_toml.h; the thread parsing a config.
#include "server/formats/detail/config_toml.h"

namespace numadir::server::detail {
namespace {

void collect_lines(const toml::node& node, const std::string& path, ConfigKeyLines& lines) {
  if (!path.empty()) {
    if (const auto line = node.source().begin.line; line != 0) {
      lines.emplace(path, static_cast<std::uint32_t>(line));
    }
  }
  if (const toml::table* table = node.as_table()) {
    for (const auto& [key, value] : *table) {
      std::string inner = path.empty() ? std::string(key.str()) : path + "." + std::string(key);
      if (value.source().begin.line == 0 && key.source().begin.line != 0) {
        lines.emplace(inner, static_cast<std::uint32_t>(key.source().begin.line));
      }
      collect_lines(value, inner, lines);
    }
  } else if (const toml::array* array = node.as_array()) {
    for (std::size_t i = 0; i < array->size(); ++i) {
      collect_lines(*array->get(i), path + "[" + std::to_string(i) + "]", lines);
    }
  }
}

}  // namespace

ConfigKeyLines collect_key_lines(const toml::table& root) {
  ConfigKeyLines lines;
  collect_lines(root, std::string(), lines);
  return lines;
}

// Rejects keys of `table` not in `known`.
void check_keys(const toml::table& table, std::string_view prefix,
                std::initializer_list<std::string_view> known, Problems& problems) {
  for (const auto& [key, value] : table) {
    bool found = false;
    for (std::string_view k : known) {
      found = found || key.str() == k;
    }
    if (!found) {
      const std::string full =
          prefix.empty() ? std::string(key.str()) : std::string(prefix) + "." + std::string(key);
      problems.add(full, "unknown key");
    }
  }
}

// Reads an optional string key.
bool get_string(const toml::table& table, std::string_view prefix, std::string_view key,
                std::string& out, Problems& problems) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    return false;
  }
  if (const auto* value = node->as_string()) {
    out = value->get();
    return true;
  }
  problems.add(std::string(prefix) + "." + std::string(key), "must be a string");
  return false;
}

bool get_bool(const toml::table& table, std::string_view prefix, std::string_view key, bool& out,
              Problems& problems) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    return false;
  }
  if (const auto* value = node->as_boolean()) {
    out = value->get();
    return true;
  }
  problems.add(std::string(prefix) + "." + std::string(key), "must be true or false");
  return false;
}

// Reads an optional array of strings.
bool get_strings(const toml::table& table, std::string_view prefix, std::string_view key,
                 std::vector<std::string>& out, Problems& problems) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    return false;
  }
  const std::string full = std::string(prefix) + "." + std::string(key);
  const toml::array* array = node->as_array();
  if (array == nullptr) {
    problems.add(full, "must be an array of strings");
    return false;
  }
  for (const toml::node& element : *array) {
    const auto* value = element.as_string();
    if (value == nullptr) {
      problems.add(full, "must be an array of strings");
      return false;
    }
    out.push_back(value->get());
  }
  return true;
}

const toml::table* get_table(const toml::table& root, std::string_view key, Problems& problems) {
  const toml::node* node = root.get(key);
  if (node == nullptr) {
    return nullptr;
  }
  if (const auto* table = node->as_table()) {
    return table;
  }
  problems.add(key, "must be a table");
  return nullptr;
}

// Reads an optional non-negative integer key no larger than `max`.
bool get_count(const toml::table& table, std::string_view prefix, std::string_view key,
               std::uint64_t max, std::uint64_t& out, Problems& problems) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    return false;
  }
  const auto* value = node->as_integer();
  if (value == nullptr || value->get() < 0 || static_cast<std::uint64_t>(value->get()) > max) {
    problems.add(std::string(prefix) + "." + std::string(key),
                 "must be an integer from 0 to " + std::to_string(max));
    return false;
  }
  out = static_cast<std::uint64_t>(value->get());
  return true;
}

}  // namespace numadir::server::detail
