#!/usr/bin/python3
"""authrate against a replicated pair: two numadir servers on the same generated data, driven
with both URLs, as nslcd and SSSD take a URI list:

- one server stopped (SIGTERM) a few seconds into a run: the auths go on on the other one (its
  auths/s in the interval lines after the stop), failovers > 0 and no more than the connections
  that were on the stopped server (plus a few retries), every one of them away from it, errors
  only the auths in flight at the stop (bounded by the connections), and the per-server counts
  sum to the total;
- one URL down from the start: the preflight reports it, the run goes on, every auth on the
  other, no error, no failover; every URL down: exit 1.

  authrate_failover_test.py --numadir build/release/server/numadir --gen perf/gen_users.py \\
      --bin-dir build/release
"""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (PEOPLE, CheckFailed, NumadirServer, check, parse_args,  # noqa: E402
                             run_checks, wait_for)

USERS = 1000
CONNECTIONS = 8  # Connections 0, 2, 4, 6 start on the first URL, 1, 3, 5, 7 on the second.
ON_FIRST = CONNECTIONS // 2
RUN_S = 6
STOP_AFTER_S = 2
# Interval lines with several URLs end "failovers N  by server/s A B".
INTERVAL = re.compile(r"^\s*([\d.]+) s .* failovers (\d+)  by server/s (\d+) (\d+)\s*$")


def free_port() -> int:
    """A loopback port nothing listens on (bound and released: connects to it are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def authrate_command(args, urls, *options):
    command = [os.path.join(args.bin_dir, "perf", "authrate"), "-b", PEOPLE, "--last",
               str(USERS - 1), "--json", "-c", str(CONNECTIONS), "-t", "2"]
    for url in urls:
        command += ["-H", url]
    return command + list(options)


def parse_summary(stdout: str, stderr: str, code: int):
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        raise CheckFailed(f"authrate printed no JSON (exit {code}): {stdout[-500:]} "
                          f"{stderr[-1000:]}")


def check_per_server(summary, urls):
    per_server = summary["per_server"]
    check([entry["url"] for entry in per_server] == urls, "per_server lists the URLs in order",
          f"{per_server}")
    check(sum(entry["auths"] for entry in per_server) == summary["auths"],
          "the per-server auths sum to the total", f"{per_server} vs {summary['auths']}")
    check(sum(entry["failovers_from"] for entry in per_server) == summary["failovers"],
          "the per-server failovers sum to the total", f"{per_server} vs {summary['failovers']}")


def main():
    args = parse_args(__doc__)
    if not args.bin_dir:
        print("authrate_failover: --bin-dir is required")
        return 2
    servers = {}

    def one_stops():
        first, second = servers["first"], servers["second"]
        urls = [first.url, second.url]
        process = subprocess.Popen(
            authrate_command(args, urls, "-d", str(RUN_S), "-i", "0.5", "--server-pid",
                             str(first.process.pid), "--server-pid", str(second.process.pid)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []  # (elapsed s, failovers, first's auths/s, second's auths/s)
        stderr_text = []

        def read_stderr():
            for line in process.stderr:
                stderr_text.append(line)
                match = INTERVAL.match(line)
                if match:
                    lines.append((float(match.group(1)), int(match.group(2)),
                                  int(match.group(3)), int(match.group(4))))

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        try:
            # Both servers took auths (their first interval lines) before the first one stops.
            started = wait_for(lambda: any(e >= STOP_AFTER_S for e, _, _, _ in lines),
                               timeout=30)
            check(started, f"authrate ran {STOP_AFTER_S} s on both servers",
                  f"interval lines {lines}, stderr {''.join(stderr_text)[-1000:]}")
            check(all(a > 0 and b > 0 for _, _, a, b in lines),
                  "before the stop both servers answered in every interval", f"{lines}")
            stopped_at = lines[-1][0]
            status = first.stop()
            # Stopped here on purpose: the harness has nothing left to stop at the end.
            first.process = None
            check(status == 0, "the first server stopped on SIGTERM with exit status 0",
                  f"exit {status}")
            # Not communicate(): it would read standard error too, taking interval lines from
            # the reader thread.
            stdout = process.stdout.read()
            process.wait(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        reader.join(timeout=10)
        summary = parse_summary(stdout, "".join(stderr_text), process.returncode)
        print(f"  summary: auths {summary['auths']}, failovers {summary['failovers']}, "
              f"errors {summary['errors']}, per_server {summary['per_server']}", flush=True)
        check(process.returncode == 0, "authrate exited 0", f"exit {process.returncode}")
        check_per_server(summary, urls)
        first_entry, second_entry = summary["per_server"]
        check(first_entry["auths"] > 0 and second_entry["auths"] > 0,
              "both servers completed auths", f"{summary['per_server']}")
        # Interval lines wholly after the stop (stopped_at + 1 s for the line in progress).
        after = [line for line in lines if line[0] > stopped_at + 1.0]
        check(len(after) >= 2, "interval lines after the stop", f"{lines}")
        check(all(a == 0 for _, _, a, _ in after),
              "after the stop the stopped server completes nothing", f"{after}")
        check(sum(b for _, _, _, b in after) > 0 and after[-1][3] > 0,
              "after the stop the other server's auths go on, to the end", f"{after}")
        check(sum(f for _, f, _, _ in lines) <= summary["failovers"],
              "the interval lines' failovers are in the summary's", f"{lines}")
        failovers = summary["failovers"]
        check(0 < failovers <= ON_FIRST + 2,
              f"failovers > 0 and at most the {ON_FIRST} connections on the stopped server "
              f"(+2 retries)", f"{failovers}")
        check(first_entry["failovers_from"] == failovers,
              "every failover was away from the stopped server", f"{summary['per_server']}")
        errors = summary["errors"]
        allowed = {"connection_dropped", "connect_failed", "ldap_result"}
        check(all(count == 0 for kind, count in errors["by_kind"].items() if kind not in allowed),
              "errors only of a server going away", f"{errors}")
        check(errors["total"] <= CONNECTIONS,
              f"errors only the auths in flight at the stop (at most {CONNECTIONS})",
              f"{errors}")
        # The stopped server's CPU is gone with it: no figure (documented).
        check(summary["server_cpu_us_per_auth"] is None,
              "no CPU figure once one of the --server-pid processes has exited",
              f"{summary['server_cpu_us_per_auth']}")

    def one_down_from_the_start():
        down = servers["first"].url if servers["first"].process is None else \
            f"ldap://127.0.0.1:{free_port()}"
        second = servers["second"]
        urls = [down, second.url]
        result = subprocess.run(
            authrate_command(args, urls, "-d", "1.5", "--server-pid", str(second.process.pid)),
            capture_output=True, text=True, timeout=60)
        summary = parse_summary(result.stdout, result.stderr, result.returncode)
        check(result.returncode == 0, "authrate exited 0", f"exit {result.returncode}, "
              f"{result.stderr[-1000:]}")
        check(f"cannot connect to {down}" in result.stderr,
              "the preflight reported the URL that is down", f"{result.stderr[-1000:]}")
        check_per_server(summary, urls)
        first_entry, second_entry = summary["per_server"]
        check(not first_entry["reachable_at_start"] and second_entry["reachable_at_start"],
              "per_server says which URL the preflight reached", f"{summary['per_server']}")
        check(first_entry["auths"] == 0 and second_entry["auths"] == summary["auths"] > 0,
              "every auth on the server that is up", f"{summary['per_server']}")
        check(summary["failovers"] == 0 and summary["errors"]["total"] == 0,
              "no connection started on the server that is down: no failover, no error",
              f"failovers {summary['failovers']}, errors {summary['errors']}")
        check(summary["server_cpu_us_per_auth"] is not None,
              "the server's CPU per auth with its --server-pid", f"{summary}")

    def all_down():
        urls = [f"ldap://127.0.0.1:{free_port()}", f"ldap://127.0.0.1:{free_port()}"]
        result = subprocess.run(authrate_command(args, urls, "-d", "1"), capture_output=True,
                                text=True, timeout=60)
        check(result.returncode == 1, "every URL down: exit 1", f"exit {result.returncode}")
        check(all(f"cannot connect to {url}" in result.stderr for url in urls)
              and "no server answered" in result.stderr,
              "the preflight reported each URL", f"{result.stderr[-1000:]}")

    start = time.monotonic()
    with NumadirServer(args.numadir, args.gen, users=USERS) as first, \
            NumadirServer(args.numadir, args.gen, users=USERS) as second:
        servers["first"], servers["second"] = first, second
        status = run_checks("authrate_failover", [
            ("one of two servers stops during the run", one_stops),
            ("one URL down from the start", one_down_from_the_start),
            ("every URL down", all_down)])
    print(f"authrate_failover: {time.monotonic() - start:.1f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
