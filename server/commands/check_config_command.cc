// numadir check-config: compiles the config as `numadir serve` does (server_config.h: the
// schema it names, the indexes, the rootdn, the access rules, the TLS certificate and key, the
// replication consumers' files and DNs, the thread plan, the user and group) and reports every
// problem and warning in the words serve would use; neither the database nor the log is opened.
// A database.path with no database in it is only a note (on standard output): check-config is
// run before the first import, and serve creates an empty database there.
// With --online it then reaches each [[replication.consumer]]'s provider
// (server/replication/provider_check.h) and prints a line for each.
#include <iostream>
#include <system_error>

#include "server/commands/commands.h"
#include "server/commands/server_config.h"
#include "server/replication/provider_check.h"

namespace numadir::server {

int run_check_config(const std::filesystem::path& config_path, std::ostream& out, std::ostream& err,
                     bool online) {
  const ServerConfigOutcome outcome = compile_server_config(config_path);
  report_server_config(outcome, err);
  if (!outcome.ok()) {
    return 1;
  }
  const Config& config = outcome.compiled->config;
  std::error_code ec;
  if (!std::filesystem::exists(config.database.path / "data.mdb", ec)) {
    const ConfigDiagnostic note{config_path.string(),
                                config_key_line(config.key_lines, "database.path"), 0,
                                "database.path",
                                config.database.path.string() +
                                    ": no database there yet; numadir import creates one, "
                                    "numadir serve creates an empty one"};
    out << note.to_string("note") << "\n";
  }
  bool failed = false;
  if (online) {
    const std::vector<ReplicationConsumerConfig>& consumers =
        outcome.compiled->config.replication_consumers;
    if (consumers.empty()) {
      out << config_path.string()
          << ": no [[replication.consumer]]: --online has no provider to reach\n";
    }
    for (const ReplicationConsumerConfig& consumer : consumers) {
      Result<replication::ProviderCheck> check = replication::check_provider(consumer);
      if (!check.ok()) {
        err << "numadir: " << config_path.string() << ": replication.consumer rid=" << consumer.rid
            << ": " << check.status().message() << "\n";
        failed = true;
      } else if (!check->offers_sync) {
        err << "numadir: " << config_path.string() << ": "
            << replication::describe_provider_check(consumer, *check) << "\n";
        failed = true;
      } else {
        out << replication::describe_provider_check(consumer, *check) << "\n";
      }
      out.flush();
      err.flush();
    }
  }
  if (failed) {
    return 1;
  }
  out << config_path.string() << ": ok\n";
  return 0;
}

}  // namespace numadir::server
