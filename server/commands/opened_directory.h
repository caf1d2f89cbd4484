// server/commands/opened_directory.h: a config's schema and directory, opened together (the
// directory borrows the schema, so they live and die as a pair).
//
// Thread contract: opened on the main thread; the Directory's own contract applies after that.
#pragma once

#include <memory>

#include "backend/directory.h"
#include "base/status.h"
#include "schema/schema.h"
#include "server/formats/config.h"

namespace numadir::server {

struct OpenedDirectory {
  std::unique_ptr<schema::Schema> schema;
  std::unique_ptr<backend::Directory> directory;  // Destroyed first (declared last).
};

// Loads the shipped schema plus config.schema_files, then opens config.database: only a
// database that is there with OpenMode::kMustExist (the commands that read one: export, index),
// creating an empty one where there is none with OpenMode::kCreate (import).
// Errors: the schema's load errors (file:line); kNotFound "database.path PATH: no database
//   there (numadir import creates one)" with kMustExist; the Directory's other open errors.
Result<OpenedDirectory> open_directory(const Config& config, backend::OpenMode mode);

// Loads the schema only. Errors: as Schema::load_default.
Result<std::unique_ptr<schema::Schema>> load_schema(const Config& config);

}  // namespace numadir::server
