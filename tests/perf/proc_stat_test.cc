#include "perf/proc_stat.h"

#include <doctest/doctest.h>
#include <unistd.h>

namespace numadir::perf {
namespace {

TEST_CASE("parse_proc_stat: a process name with spaces and parentheses") {
  // Fields 14 and 15 (utime 250, stime 37) come after a name that holds ") " itself.
  const auto ticks = parse_proc_stat(
      "4242 (my (weird) ) proc) S 1 4242 4242 0 -1 4194560 1500 0 3 0 250 37 0 0 20 0 9 0 "
      "123456 104857600 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 3 0 0 0 0 0\n");
  REQUIRE(ticks.ok());
  CHECK(ticks->user_ticks == 250);
  CHECK(ticks->system_ticks == 37);
  CHECK(ticks->total() == 287);
}

TEST_CASE("parse_proc_stat: malformed lines are errors") {
  SUBCASE("no closing parenthesis") {
    const auto ticks = parse_proc_stat("4242 (slapd S 1 2 3");
    CHECK(ticks.status().code() == StatusCode::kMalformed);
  }
  SUBCASE("too few fields") {
    const auto ticks = parse_proc_stat("4242 (slapd) S 1 4242 4242 0 -1 4194560 1500 0 3 0 250");
    CHECK(ticks.status().code() == StatusCode::kMalformed);
  }
  SUBCASE("utime not a number") {
    const auto ticks =
        parse_proc_stat("4242 (slapd) S 1 4242 4242 0 -1 4194560 1500 0 3 0 2x0 37 0");
    CHECK(ticks.status().code() == StatusCode::kMalformed);
  }
}

TEST_CASE("parse_vm_hwm_kib: finds the VmHWM line") {
  const auto kib = parse_vm_hwm_kib(
      "Name:\tslapd\nVmPeak:\t  900000 kB\nVmHWM:\t   12345 kB\nVmRSS:\t   12000 kB\n");
  REQUIRE(kib.ok());
  CHECK(*kib == 12345);
  CHECK(parse_vm_hwm_kib("Name:\tkthreadd\n").status().code() == StatusCode::kNotFound);
  CHECK(parse_vm_hwm_kib("VmHWM:\t lots kB\n").status().code() == StatusCode::kMalformed);
}

TEST_CASE("read_proc_cpu_ticks: reads this process and reports a missing one") {
  REQUIRE(read_proc_cpu_ticks(getpid()).ok());
  const auto rss = read_peak_rss_kib(getpid());
  REQUIRE(rss.ok());
  CHECK(*rss > 0);
  // PIDs stop well below INT32_MAX (pid_max is at most 4194304).
  CHECK(read_proc_cpu_ticks(2'000'000'000).status().code() == StatusCode::kIo);
  CHECK(clock_ticks_per_second() > 0);
}

}  // namespace
}  // namespace numadir::perf
