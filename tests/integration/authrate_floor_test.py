#!/usr/bin/python3
"""authrate against floor-server: the load generator and the canned server agree on the auth
cycle, the JSON summary has its keys, --server-pid yields a CPU figure, and a server that is not
there makes authrate exit 1 with a clear message.

  authrate_floor_test.py --bin-dir build/release

Uses <bin-dir>/perf/authrate and <bin-dir>/perf/floor-server; other arguments (--numadir,
--gen) are accepted and ignored. Standard library only. Exits 0 on success, 1 with the first
failure otherwise.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys

JSON_KEYS = ("auths", "auths_per_sec", "latency_ms", "errors", "server_cpu_us_per_auth",
             "server_peak_rss_kib", "connections", "threads", "duration_s", "mode")
LATENCY_KEYS = ("p50", "p90", "p99", "p999", "max", "mean")


def fail(message: str) -> None:
    sys.stderr.write(f"FAIL: {message}\n")
    sys.exit(1)


def run_authrate(authrate: str, args: list) -> subprocess.CompletedProcess:
    command = [authrate] + args
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def parse_summary(result: subprocess.CompletedProcess) -> dict:
    if result.returncode != 0:
        fail(f"authrate exited {result.returncode}: {result.stderr}")
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as error:
        fail(f"authrate --json stdout is not one JSON object ({error}): {result.stdout!r}")


def check_clean_run(summary: dict, connections: int) -> None:
    for key in JSON_KEYS:
        if key not in summary:
            fail(f"JSON summary lacks '{key}': {summary}")
    for key in LATENCY_KEYS:
        if key not in summary["latency_ms"]:
            fail(f"latency_ms lacks '{key}': {summary['latency_ms']}")
    if summary["auths"] <= 0:
        fail(f"no auths: {summary}")
    if summary["errors"]["total"] != 0:
        fail(f"errors against the floor server: {summary['errors']}")
    if summary["connections"] != connections:
        fail(f"connections {summary['connections']}, expected {connections}")
    if not 0 < summary["latency_ms"]["p50"] <= summary["latency_ms"]["p99"] \
            <= summary["latency_ms"]["max"]:
        fail(f"latency percentiles out of order: {summary['latency_ms']}")


def unused_port() -> int:
    # Bound and closed: nobody listens there (the kernel does not hand it out again at once).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args, _ = parser.parse_known_args()
    authrate = os.path.join(args.bin_dir, "perf", "authrate")
    floor = os.path.join(args.bin_dir, "perf", "floor-server")
    for program in (authrate, floor):
        if not os.access(program, os.X_OK):
            fail(f"{program} is missing: build the authrate and floor-server targets")

    server = subprocess.Popen([floor, "--listen", "127.0.0.1:0", "--threads", "2"],
                              stdout=subprocess.PIPE, text=True)
    try:
        first = server.stdout.readline().strip()
        prefix = "listening on 127.0.0.1:"
        if not first.startswith(prefix):
            fail(f"floor-server's first line is {first!r}, not '{prefix}PORT'")
        url = f"ldap://127.0.0.1:{int(first[len(prefix):])}"

        # 1. A clean closed-loop run.
        summary = parse_summary(run_authrate(
            authrate, ["-H", url, "--json", "-d", "2", "-c", "4", "-t", "2"]))
        check_clean_run(summary, 4)
        if summary["server_cpu_us_per_auth"] is not None:
            fail("server_cpu_us_per_auth should be null without --server-pid")

        # 2. The server's CPU per auth and peak RSS, after a warm-up, in split mode.
        summary = parse_summary(run_authrate(
            authrate, ["-H", url, "--json", "-d", "1", "--warmup", "0.5", "-c", "4",
                       "--mode", "split", "--server-pid", str(server.pid)]))
        check_clean_run(summary, 4)
        if not isinstance(summary["server_cpu_us_per_auth"], (int, float)) \
                or summary["server_cpu_us_per_auth"] < 0:
            fail(f"no server CPU figure: {summary}")
        if not summary["server_peak_rss_kib"]:
            fail(f"no server peak RSS: {summary}")

        # 3. Text output, the other modes, new connections per auth, an open-loop rate.
        for extra in (["--mode", "bind-only"], ["--mode", "search-only"], ["--reconnect"],
                      ["--rate", "500", "--hot", "80:20"]):
            result = run_authrate(authrate, ["-H", url, "-d", "1", "-c", "2"] + extra)
            if result.returncode != 0 or "auths/s" not in result.stdout \
                    or "errors       0" not in result.stdout:
                fail(f"authrate {extra}: exit {result.returncode}: {result.stdout}"
                     f"{result.stderr}")

        # 4. Nobody listening: exit 1, saying so.
        dead = f"ldap://127.0.0.1:{unused_port()}"
        result = run_authrate(authrate, ["-H", dead, "--json", "-d", "1"])
        if result.returncode != 1:
            fail(f"against {dead} authrate exited {result.returncode}, expected 1")
        if "cannot connect" not in result.stderr or dead not in result.stderr:
            fail(f"unclear message against {dead}: {result.stderr!r}")

        # 5. Usage errors exit 2.
        result = run_authrate(authrate, ["-H", "ldapi:///run/slapd/ldapi"])
        if result.returncode != 2 or "ldap://" not in result.stderr:
            fail(f"ldapi:// URL: exit {result.returncode}: {result.stderr!r}")

        # 6. floor-server exits cleanly on SIGTERM.
        server.send_signal(signal.SIGTERM)
        if server.wait(timeout=10) != 0:
            fail(f"floor-server exited {server.returncode} on SIGTERM")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
