// numadir check-config: compiles the config as `numadir serve` does (server_config.h: the
// schema it names, the indexes, the rootdn, the access rules, the TLS certificate and key, the
// thread plan, the user and group) and reports every problem and warning in the words serve
// would use; neither the database nor the log is opened.
#include <iostream>

#include "server/commands/commands.h"
#include "server/commands/server_config.h"

namespace numadir::server {

int run_check_config(const std::filesystem::path& config_path, std::ostream& out,
                     std::ostream& err) {
  const ServerConfigOutcome outcome = compile_server_config(config_path);
  report_server_config(outcome, err);
  if (!outcome.ok()) {
    return 1;
  }
  out << config_path.string() << ": ok\n";
  return 0;
}

}  // namespace numadir::server
