#!/usr/bin/python3
"""Instructions per auth (search + bind) of numadir builds, counted by valgrind's callgrind:
counts, not times, so the figure does not move with the machine's load and two builds compare
exactly. For each build: a server that starts and stops with no auth (its start-up and shut-
down), then one that serves authrate for --duration seconds; the difference over the auths
served is the figure. Needs valgrind (Debian package valgrind).

  perf/instructions_bench.py --build build/release [--build /tmp/base/build/release]
                             [--users 10000] [--connections 16] [--duration 10] [--log]
                             [--metrics] [--keep]

Under valgrind the threads take turns, so workers polling an empty queue before they park
(WorkerPool's spin) count for as long as they poll, which moves with the run; the request path
alone is therefore also reported, from callgrind_annotate's inclusive counts: Request::run
(decode, the operation, encode and send, on whichever thread ran it) plus the listener's own part
of its rounds (Listener::run_round less help_pool(), whose requests Request::run counts).

--log: the access log on (log.level = "stats", to a file). --metrics: the metrics endpoint on
(a loopback port, not scraped: the request path's share). --keep: leave the work directory
(the callgrind files, for callgrind_annotate) and print its path. authrate is the first build's.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (perf/bench.py: the servers and authrate runs it starts)


def total_instructions(out_prefix):
    """The Ir total of every callgrind file a run wrote (one per process)."""
    total = 0
    for path in glob.glob(out_prefix + "*"):
        with open(path) as stream:
            for line in stream:
                match = re.match(r"(?:summary|totals):\s+(\d+)", line)
                if match:
                    total += int(match.group(1))
                    break
    return total


REQUEST_RUN = "numadir::listener::Request::run("
RUN_ROUND = "numadir::listener::Listener::run_round("
HELP_POOL = "numadir::listener::Listener::help_pool("


def inclusive_counts(out_prefix):
    """{function prefix: inclusive Ir} for REQUEST_RUN, RUN_ROUND and HELP_POOL, summed over the
    callgrind files of a run."""
    counts = {REQUEST_RUN: 0, RUN_ROUND: 0, HELP_POOL: 0}
    for path in glob.glob(out_prefix + "*"):
        annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", path],
                                   capture_output=True, text=True, check=True).stdout
        for line in annotated.splitlines():
            # A function's own total ends with its object's name in brackets; the lines
            # without are the parts of it inlined from other files.
            match = re.match(r"\s*([\d,]+) .*?:(numadir::\S+).*\]$", line)
            if match is None:
                continue
            for name in counts:
                if match.group(2).startswith(name):
                    counts[name] += int(match.group(1).replace(",", ""))
    return counts


def one_run(build, authrate_build, work, name, args, serve_s):
    out_prefix = os.path.join(work, f"{name}.callgrind")
    extra = ""
    if args.log:
        extra = f'[log]\nlevel = "stats"\nfile = "{work}/{name}/access.log"\n'
    if args.metrics:
        extra += f'[metrics]\nlisten = "127.0.0.1:{bench.free_port()}"\n'
    server = bench.start_numadir(build, work, name, "percpu", args.ldif, extra=extra,
                                 wrapper=("valgrind", "-q", "--tool=callgrind",
                                          f"--callgrind-out-file={out_prefix}.%p"))
    auths = 0
    try:
        if serve_s > 0:
            summary = bench.run_authrate(authrate_build, server, args.connections,
                                         argparse.Namespace(**{**vars(args),
                                                               "duration": serve_s,
                                                               "warmup": 0}))
            auths = summary["auths"]
        else:
            time.sleep(1)
    finally:
        server.stop()
    return total_instructions(out_prefix), auths, (inclusive_counts(out_prefix) if serve_s > 0
                                                   else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", required=True,
                        help="a build directory (repeat for a before/after)")
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--authrate-threads", type=int, default=1)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--log", action="store_true", help="the access log on")
    parser.add_argument("--metrics", action="store_true", help="the metrics endpoint on")
    parser.add_argument("--keep", action="store_true", help="keep the callgrind files")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions_bench: needs valgrind (apt-get install valgrind)")
    builds = [os.path.abspath(b) for b in args.build]
    work = tempfile.mkdtemp(prefix="numadir-instructions-")
    try:
        args.ldif = bench.generate_users(work, args.users)
        for index, build in enumerate(builds):
            idle, _, _ = one_run(build, builds[0], work, f"idle{index}", args, 0)
            busy, auths, parts = one_run(build, builds[0], work, f"busy{index}", args,
                                         args.duration)
            per_auth = (busy - idle) / auths if auths else float("nan")
            print(f"instructions_bench: {build}: {per_auth:,.0f} instructions per auth "
                  f"({busy:,} - {idle:,} at start-up and shut-down, over {auths} auths"
                  f"{', access log on' if args.log else ''}"
                  f"{', metrics on' if args.metrics else ''})", flush=True)
            run = parts[REQUEST_RUN] / auths if auths else float("nan")
            own = (parts[RUN_ROUND] - parts[HELP_POOL]) / auths if auths else float("nan")
            print(f"instructions_bench: {build}: request path {run + own:,.0f} instructions "
                  f"per auth (Request::run {run:,.0f}, the listener's own {own:,.0f})",
                  flush=True)
    finally:
        if args.keep:
            print(f"instructions_bench: the callgrind files are in {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
