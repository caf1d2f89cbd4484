// server/formats/config_derive.cc: see config_derive.h. The file is read as a TOML document
// (toml++), changed in place and written back with toml++'s formatter.
#include "server/formats/config_derive.h"

#include <fstream>
#include <iterator>
#include <sstream>

#include "server/formats/detail/config_toml.h"

namespace numadir::server {
namespace {

// Returns: the table `key` of `root`, created when absent.
// Errors: kInvalidArgument when `key` is there and not a table.
Result<toml::table*> table_of(toml::table& root, std::string_view key, std::string_view origin) {
  if (toml::node* node = root.get(key)) {
    if (toml::table* table = node->as_table()) {
      return table;
    }
    return invalid_argument(std::string(origin) + ": " + std::string(key) + ": must be a table");
  }
  auto [it, inserted] = root.insert(key, toml::table{});
  return it->second.as_table();
}

// Rewrites the string `node` (a path) as absolute against `base`.
// Errors: kInvalidArgument naming `key` when it is not a string.
Status make_absolute(toml::node& node, const std::filesystem::path& base, std::string_view key,
                     std::string_view origin) {
  toml::value<std::string>* text = node.as_string();
  if (text == nullptr) {
    return invalid_argument(std::string(origin) + ": " + std::string(key) + ": must be a string");
  }
  const std::filesystem::path path(text->get());
  if (!path.is_absolute()) {
    *text = (base / path).lexically_normal().string();
  }
  return Status();
}

}  // namespace

Result<std::string> derive_config_text(const std::filesystem::path& path,
                                       const ConfigDerivation& derivation) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return not_found(path.string() + ": no such file");
    }
    return Status(StatusCode::kIo, path.string() + ": cannot be read");
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string origin = path.string();
  Result<toml::table> parsed = detail::parse_toml_document(text, origin);
  if (!parsed.ok()) {
    return parsed.status();
  }
  toml::table& root = *parsed;
  std::error_code ec;
  const std::filesystem::path base = std::filesystem::absolute(path, ec).parent_path();

  Result<toml::table*> database = table_of(root, "database", origin);
  if (!database.ok()) {
    return database.status();
  }
  (*database)->insert_or_assign("path",
                                std::filesystem::absolute(derivation.database_path, ec).string());

  if (!derivation.listen.empty()) {
    Result<toml::table*> server = table_of(root, "server", origin);
    if (!server.ok()) {
      return server.status();
    }
    toml::array listen;
    for (const std::string& url : derivation.listen) {
      listen.push_back(url);
    }
    (*server)->insert_or_assign("listen", std::move(listen));
  }

  if (derivation.drop_identity) {
    if (toml::table* server = root["server"].as_table()) {
      server->erase("user");
      server->erase("group");
    }
  }
  if (toml::table* schema = root["schema"].as_table()) {
    if (toml::node* files = schema->get("files")) {
      if (toml::array* list = files->as_array()) {
        for (toml::node& file : *list) {
          NUMADIR_RETURN_IF_ERROR(make_absolute(file, base, "schema.files", origin));
        }
      }
    }
  }
  if (toml::table* tls = root["tls"].as_table()) {
    for (const char* key : {"certificate", "key", "ca_file", "ca_dir"}) {
      if (toml::node* value = tls->get(key)) {
        NUMADIR_RETURN_IF_ERROR(make_absolute(*value, base, std::string("tls.") + key, origin));
      }
    }
  }
  if (derivation.log_off) {
    root.insert_or_assign("log", toml::table{{"level", "off"}});
  } else if (toml::table* log = root["log"].as_table()) {
    if (toml::node* file = log->get("file");
        file != nullptr && file->value_or(std::string()) != "-") {
      NUMADIR_RETURN_IF_ERROR(make_absolute(*file, base, "log.file", origin));
    }
  }
  if (derivation.threads_toml.has_value()) {
    Result<toml::table> fragment =
        detail::parse_toml_document(*derivation.threads_toml, "threads fragment");
    if (!fragment.ok()) {
      return fragment.status();
    }
    toml::table* threads = (*fragment)["threads"].as_table();
    if (threads == nullptr) {
      return invalid_argument("threads fragment: no [threads] table");
    }
    root.insert_or_assign("threads", std::move(*threads));
  }
  std::ostringstream out;
  out << root << "\n";
  return out.str();
}

}  // namespace numadir::server
