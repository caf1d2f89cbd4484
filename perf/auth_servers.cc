#include "perf/auth_servers.h"

#include <algorithm>

#include "base/check.h"

namespace numadir::perf {

Result<std::vector<std::string>> split_url_list(const std::vector<std::string>& values) {
  std::vector<std::string> urls;
  for (const std::string& value : values) {
    std::size_t start = 0;
    while (start < value.size()) {
      const std::size_t end = std::min(value.find_first_of(" ,\t\n", start), value.size());
      if (end > start) {
        urls.push_back(value.substr(start, end - start));
      }
      start = end + 1;
    }
  }
  if (urls.empty()) {
    return invalid_argument("-H: no URL given");
  }
  if (urls.size() > kMaxServers) {
    return invalid_argument("-H: " + std::to_string(urls.size()) + " URLs; at most " +
                            std::to_string(kMaxServers));
  }
  return urls;
}

namespace {

std::size_t count_usable(const std::vector<ServerTarget>& servers) {
  return static_cast<std::size_t>(std::count_if(
      servers.begin(), servers.end(), [](const ServerTarget& server) { return server.usable(); }));
}

}  // namespace

ServerList::ServerList(std::vector<ServerTarget> servers)
    : servers_(std::move(servers)), usable_count_(count_usable(servers_)) {
  NUMADIR_CHECK(!servers_.empty() && servers_.size() <= kMaxServers && usable_count_ > 0,
                "ServerList: 1 to kMaxServers servers, one of them usable");
}

std::size_t ServerList::initial(std::size_t connection_index) const {
  const std::size_t n = servers_.size();
  const std::size_t first = connection_index % n;
  for (std::size_t step = 0; step < n; ++step) {
    const ServerTarget& server = servers_[(first + step) % n];
    if (server.usable() && server.reachable_at_start) {
      return (first + step) % n;
    }
  }
  for (std::size_t step = 0; step < n; ++step) {
    if (servers_[(first + step) % n].usable()) {
      return (first + step) % n;
    }
  }
  return first;  // Not reached: the constructor requires a usable server.
}

std::size_t ServerList::next(std::size_t failed) const {
  const std::size_t n = servers_.size();
  for (std::size_t step = 1; step <= n; ++step) {
    if (servers_[(failed + step) % n].usable()) {
      return (failed + step) % n;
    }
  }
  return failed;  // Not reached: the constructor requires a usable server.
}

std::int64_t ServerList::retry_delay_ns(std::uint32_t failures_in_row,
                                        std::int64_t full_round_delay_ns) const {
  return failures_in_row % usable_count_ == 0 ? full_round_delay_ns : 0;
}

}  // namespace numadir::perf
