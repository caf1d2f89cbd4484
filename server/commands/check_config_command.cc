// numadir check-config: parse the config, load the schema it names, compile the access rules
// and load the TLS certificate and key; nothing else is opened.
#include <iostream>

#include "listener/tls.h"
#include "server/commands/commands.h"
#include "server/commands/opened_directory.h"
#include "server/formats/config.h"
#include "server/operations/operation_handler.h"

namespace numadir::server {

int run_check_config(const std::filesystem::path& config_path, std::ostream& out,
                     std::ostream& err) {
  auto config = load_config(config_path);
  if (!config.ok()) {
    err << "numadir check-config: " << config.status().message() << "\n";
    return 1;
  }
  auto schema = load_schema(*config);
  if (!schema.ok()) {
    err << "numadir check-config: " << schema.status().message() << "\n";
    return 1;
  }
  for (const backend::IndexSpec& index : config->database.indexes) {
    if ((*schema)->attribute_type(index.attribute) == nullptr) {
      err << "numadir check-config: " << config_path.string() << ": database.indexes: attribute \""
          << index.attribute << "\" is not in the schema\n";
      return 1;
    }
  }
  if (Status rules = OperationHandler::check_access_rules(**schema, config->access); !rules.ok()) {
    err << "numadir check-config: " << config_path.string() << ": " << rules.message() << "\n";
    return 1;
  }
  if (config->tls.has_value()) {
    // The certificate, key and CAs load as the server would load them.
    if (auto tls = listener::TlsContext::create(*config->tls); !tls.ok()) {
      err << "numadir check-config: " << config_path.string() << ": " << tls.status().message()
          << "\n";
      return 1;
    }
  }
  out << config_path.string() << ": ok\n";
  return 0;
}

}  // namespace numadir::server
