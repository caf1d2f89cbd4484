// perf/proc_stat.h: reading another process's CPU time and peak memory from /proc, for
// authrate's `--server-pid`: utime + stime from /proc/PID/stat (in clock ticks) and VmHWM from
// /proc/PID/status.
//
// Thread contract: functions of their arguments; any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace numadir::perf {

struct ProcCpuTicks {
  std::uint64_t user_ticks = 0;    // Field 14, utime.
  std::uint64_t system_ticks = 0;  // Field 15, stime.

  std::uint64_t total() const { return user_ticks + system_ticks; }
};

// Parses one /proc/PID/stat line. The process name (field 2) is in parentheses and may itself
// hold spaces and parentheses, so fields are counted from the last ')'.
// Errors: kMalformed when the line has no ")" or too few fields, or a field is not a number.
Result<ProcCpuTicks> parse_proc_stat(std::string_view line);

// Parses the VmHWM line of a /proc/PID/status text. Returns: its value in KiB.
// Errors: kNotFound when there is no VmHWM line (e.g. a kernel thread); kMalformed if its value
//   is not a number.
Result<std::uint64_t> parse_vm_hwm_kib(std::string_view status_text);

// Reads and parses /proc/<pid>/stat. Errors: kIo (with strerror text) when it cannot be read
//   (no such process); as parse_proc_stat otherwise.
Result<ProcCpuTicks> read_proc_cpu_ticks(int pid);
// Reads /proc/<pid>/status and returns VmHWM in KiB. Errors: kIo; as parse_vm_hwm_kib.
Result<std::uint64_t> read_peak_rss_kib(int pid);
// Returns: clock ticks per second (sysconf(_SC_CLK_TCK)).
std::uint64_t clock_ticks_per_second();

}  // namespace numadir::perf
