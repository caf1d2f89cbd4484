// numadir export: every entry as LDIF, parents first.
#include <fstream>
#include <iostream>

#include "server/commands/commands.h"
#include "server/commands/opened_directory.h"
#include "server/formats/config.h"
#include "server/formats/ldif_writer.h"

namespace numadir::server {

int run_export(const ExportOptions& options, std::ostream& out, std::ostream& err) {
  auto config = load_config(options.config);
  if (!config.ok()) {
    err << "numadir export: " << config.status().message() << "\n";
    return 1;
  }
  auto opened = open_directory(*config, backend::OpenMode::kMustExist);
  if (!opened.ok()) {
    err << "numadir export: " << opened.status().message() << "\n";
    return 1;
  }
  std::ofstream file;
  std::ostream* sink = &out;
  if (options.output != "-") {
    file.open(options.output, std::ios::binary | std::ios::trunc);
    if (!file) {
      err << "numadir export: " << options.output << ": cannot be written\n";
      return 1;
    }
    sink = &file;
  }
  LdifWriter writer(*sink);
  Status write_status;
  const Status status = opened->directory->export_entries([&](const schema::Entry& entry) {
    write_status = writer.write(entry);
    return write_status.ok();
  });
  if (!write_status.ok() || !status.ok()) {
    err << "numadir export: " << (write_status.ok() ? status : write_status).to_string() << "\n";
    return 1;
  }
  sink->flush();
  if (!*sink) {
    err << "numadir export: writing the output failed\n";
    return 1;
  }
  return 0;
}

}  // namespace numadir::server
