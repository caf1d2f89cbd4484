#!/usr/bin/python3
"""Instructions per auth (search + bind) of numadir builds, counted by valgrind's callgrind:
counts, not times, so the figure does not move with the machine's load and two builds compare
exactly. For each build: a server that starts and stops with no auth (its start-up and shut-
down), then one that serves authrate for --duration seconds; the difference over the auths
served is the figure. Needs valgrind (Debian package valgrind).

  perf/instructions_bench.py --build build/release [--build /tmp/base/build/release]
                             [--users 10000] [--connections 16] [--duration 10] [--log]

--log: the access log on (log.level = "stats", to a file). authrate is the first build's.
"""
import argparse
import glob
import os
import re
import shutil
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


def one_run(build, authrate_build, work, name, args, serve_s):
    out_prefix = os.path.join(work, f"{name}.callgrind")
    extra = ""
    if args.log:
        extra = f'[log]\nlevel = "stats"\nfile = "{work}/{name}/access.log"\n'
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
    return total_instructions(out_prefix), auths


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
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions_bench: needs valgrind (apt-get install valgrind)")
    builds = [os.path.abspath(b) for b in args.build]
    work = tempfile.mkdtemp(prefix="numadir-instructions-")
    try:
        args.ldif = bench.generate_users(work, args.users)
        for index, build in enumerate(builds):
            idle, _ = one_run(build, builds[0], work, f"idle{index}", args, 0)
            busy, auths = one_run(build, builds[0], work, f"busy{index}", args, args.duration)
            per_auth = (busy - idle) / auths if auths else float("nan")
            print(f"instructions_bench: {build}: {per_auth:,.0f} instructions per auth "
                  f"({busy:,} - {idle:,} at start-up and shut-down, over {auths} auths"
                  f"{', access log on' if args.log else ''})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
