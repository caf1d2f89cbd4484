#include "perf/proc_stat.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace numadir::perf {
namespace {

bool parse_u64(std::string_view text, std::uint64_t& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return status_error(StatusCode::kIo, path + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Result<ProcCpuTicks> parse_proc_stat(std::string_view line) {
  const std::size_t close = line.rfind(')');
  if (close == std::string_view::npos) {
    return malformed("/proc stat line has no ')' after the process name");
  }
  // After the name: field 3 (state) is the first; utime and stime are fields 14 and 15.
  std::string_view rest = line.substr(close + 1);
  ProcCpuTicks ticks;
  int field = 2;
  while (field < 15) {
    const std::size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) {
      return malformed("/proc stat line has " + std::to_string(field) +
                       " fields; utime and stime are 14 and 15");
    }
    rest.remove_prefix(start);
    const std::size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    const std::string_view token = rest.substr(0, end);
    rest.remove_prefix(end);
    ++field;
    if (field == 14 && !parse_u64(token, ticks.user_ticks)) {
      return malformed("/proc stat utime '" + std::string(token) + "' is not a number");
    }
    if (field == 15 && !parse_u64(token, ticks.system_ticks)) {
      return malformed("/proc stat stime '" + std::string(token) + "' is not a number");
    }
  }
  return ticks;
}

Result<std::uint64_t> parse_vm_hwm_kib(std::string_view status_text) {
  constexpr std::string_view kKey = "VmHWM:";
  std::size_t pos = 0;
  while (pos < status_text.size()) {
    std::size_t end = status_text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = status_text.size();
    }
    std::string_view line = status_text.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, kKey.size()) != kKey) {
      continue;
    }
    line.remove_prefix(kKey.size());
    const std::size_t start = line.find_first_not_of(" \t");
    line = start == std::string_view::npos ? std::string_view{} : line.substr(start);
    const std::size_t space = line.find(' ');
    std::uint64_t kib = 0;
    if (!parse_u64(line.substr(0, space), kib)) {
      return malformed("VmHWM value '" + std::string(line) + "' is not a number");
    }
    return kib;
  }
  return not_found("no VmHWM line in /proc status");
}

Result<ProcCpuTicks> read_proc_cpu_ticks(int pid) {
  Result<std::string> text = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text.ok()) {
    return text.status();
  }
  return parse_proc_stat(*text);
}

Result<std::uint64_t> read_peak_rss_kib(int pid) {
  Result<std::string> text = read_file("/proc/" + std::to_string(pid) + "/status");
  if (!text.ok()) {
    return text.status();
  }
  return parse_vm_hwm_kib(*text);
}

std::uint64_t clock_ticks_per_second() {
  const long ticks = sysconf(_SC_CLK_TCK);
  return ticks > 0 ? static_cast<std::uint64_t>(ticks) : 100;
}

}  // namespace numadir::perf
