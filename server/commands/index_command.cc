// numadir index: rebuild or verify the configured attribute indexes.
#include <iostream>

#include "server/commands/commands.h"
#include "server/commands/opened_directory.h"
#include "server/formats/config.h"

namespace numadir::server {

int run_index(const IndexOptions& options, std::ostream& out, std::ostream& err) {
  auto config = load_config(options.config);
  if (!config.ok()) {
    err << "numadir index: " << config.status().message() << "\n";
    return 1;
  }
  auto opened = open_directory(*config, backend::OpenMode::kMustExist);
  if (!opened.ok()) {
    err << "numadir index: " << opened.status().message() << "\n";
    return 1;
  }
  const Status status =
      options.verify ? opened->directory->verify_indexes() : opened->directory->rebuild_indexes();
  if (!status.ok()) {
    err << "numadir index: " << status.to_string() << "\n";
    return 1;
  }
  out << (options.verify ? "indexes consistent\n" : "indexes rebuilt\n");
  return 0;
}

}  // namespace numadir::server
