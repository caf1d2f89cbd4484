#include "server/commands/opened_directory.h"

namespace numadir::server {

Result<std::unique_ptr<schema::Schema>> load_schema(const Config& config) {
  auto loaded = schema::Schema::load_default(config.schema_files);
  if (!loaded.ok()) {
    return loaded.status();
  }
  return std::make_unique<schema::Schema>(std::move(loaded).value());
}

Result<OpenedDirectory> open_directory(const Config& config, backend::OpenMode mode) {
  OpenedDirectory opened;
  auto schema = load_schema(config);
  if (!schema.ok()) {
    return schema.status();
  }
  opened.schema = std::move(schema).value();
  auto directory = backend::Directory::open(*opened.schema, config.database, mode);
  if (!directory.ok()) {
    if (directory.status().code() == StatusCode::kNotFound) {
      // A misspelt path, or a database not made yet: say which key and how one is made.
      return Status(StatusCode::kNotFound, "database.path " + config.database.path.string() +
                                               ": no database there (numadir import creates one)");
    }
    return directory.status();
  }
  opened.directory = std::move(directory).value();
  return opened;
}

}  // namespace numadir::server
