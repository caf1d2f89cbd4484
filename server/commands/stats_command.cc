// numadir stats: a live, top-like view of a running server, read from its cn=Monitor over
// LDAP, ldap:// or ldapi:// (server/monitoring/monitor.h) every interval: auths/s, requests/s per
// listener and per worker, queue depths, CPU per thread.
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "schema/ascii.h"
#include "server/client/ldap_url.h"
#include "server/commands/commands.h"
#include "server/commands/ldap_client.h"
#include "server/commands/stats_view.h"
#include "server/monitoring/monitor.h"

namespace numadir::server {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// `external`: bound with SASL EXTERNAL, so that a refusal names the identity the server saw
// and how to make it the rootdn, rather than asking for a password.
Result<StatsSample> read_sample(LdapClient& client, bool external) {
  const double at_s = now_s();
  Result<std::vector<schema::Entry>> entries = client.search(
      kMonitorDn, listener::wire::SearchScope::kWholeSubtree, "(objectClass=*)", {"*"});
  if (!entries.ok()) {
    if (entries.status().code() == StatusCode::kNoSuchObject) {
      if (external) {
        Result<std::string> who = client.who_am_i();
        const std::string identity =
            who.ok() ? (who->empty() ? std::string("anonymous") : *who) : "an unknown identity";
        return Status(StatusCode::kNoSuchObject,
                      "cn=Monitor: no such object (only the rootdn may read it; -Y EXTERNAL "
                      "bound as " +
                          identity + ": map it to the rootdn with a [[sasl.external_map]] rule)");
      }
      return Status(StatusCode::kNoSuchObject,
                    "cn=Monitor: no such object (only the rootdn may read it: -D <rootdn> -w or "
                    "-y <password>, or -Y EXTERNAL over ldapi://)");
    }
    return entries.status();
  }
  return parse_stats_sample(*entries, at_s);
}

// Returns: "" when -Y (if given) may be used with the other options, else the usage error.
std::string sasl_usage_error(const StatsOptions& options) {
  if (!options.sasl_mechanism.has_value()) {
    return std::string();
  }
  if (schema::ascii_lowered(*options.sasl_mechanism) != "external") {
    return "-Y " + *options.sasl_mechanism + ": the only SASL mechanism is EXTERNAL";
  }
  if (!options.bind_dn.empty() || options.password.has_value() ||
      options.password_file.has_value()) {
    return "-Y EXTERNAL takes no -D, -w or -y (the identity is this process's uid and gid)";
  }
  Result<LdapUrl> url = parse_ldap_url(options.url);
  if (url.ok() && !url->is_local()) {
    // Over TCP the EXTERNAL identity is a TLS client certificate, which stats cannot present.
    return "-Y EXTERNAL needs an ldapi:// URL (e.g. -H ldapi:///run/numadir/ldapi), not " +
           options.url;
  }
  return std::string();  // A bad URL is connect()'s to report.
}

}  // namespace

int run_stats(const StatsOptions& options, std::ostream& out, std::ostream& err) {
  if (!(options.interval_s > 0)) {
    err << "numadir stats: --interval must be more than 0 seconds\n";
    return 2;
  }
  if (const std::string usage = sasl_usage_error(options); !usage.empty()) {
    err << "numadir stats: " << usage << "\n";
    return 2;
  }
  const bool external = options.sasl_mechanism.has_value();
  std::string password;
  if (options.password.has_value()) {
    password = *options.password;
  } else if (options.password_file.has_value()) {
    std::ifstream in(*options.password_file, std::ios::binary);
    if (!in) {
      err << "numadir stats: " << *options.password_file << ": cannot be read\n";
      return 1;
    }
    std::ostringstream text;
    text << in.rdbuf();
    password = text.str();
    // A trailing newline is the editor's, not the password's.
    while (!password.empty() && (password.back() == '\n' || password.back() == '\r')) {
      password.pop_back();
    }
  }
  auto client = LdapClient::connect(options.url);
  if (!client.ok()) {
    err << "numadir stats: " << client.status().message() << "\n";
    return 1;
  }
  if (external) {
    if (const Status bound = (*client)->sasl_external_bind(); !bound.ok()) {
      err << "numadir stats: " << options.url << ": " << bound.message() << "\n";
      return 1;
    }
  } else if (!options.bind_dn.empty() || !password.empty()) {
    if (const Status bound = (*client)->simple_bind(options.bind_dn, password); !bound.ok()) {
      err << "numadir stats: " << options.url << ": " << bound.message() << "\n";
      return 1;
    }
  }
  Result<StatsSample> previous = read_sample(**client, external);
  if (!previous.ok()) {
    err << "numadir stats: " << options.url << ": " << previous.status().message() << "\n";
    return 1;
  }
  const auto interval = std::chrono::duration<double>(options.interval_s);
  const std::uint64_t frames = options.once ? 1 : options.count.value_or(0);
  for (std::uint64_t frame = 1; frames == 0 || frame <= frames; ++frame) {
    std::this_thread::sleep_for(interval);
    Result<StatsSample> current = read_sample(**client, external);
    if (!current.ok()) {
      err << "numadir stats: " << options.url << ": " << current.status().message() << "\n";
      return 1;
    }
    const std::string view = render_stats(*previous, *current, options.url);
    if (options.terminal) {
      out << "\x1b[H\x1b[2J" << view << std::flush;  // Home and clear: redraw in place.
    } else {
      out << (frame > 1 ? "\n" : "") << view << std::flush;
    }
    previous = std::move(current);
  }
  return 0;
}

}  // namespace numadir::server
