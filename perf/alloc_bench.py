#!/usr/bin/python3
"""Heap allocations per auth: numadir from a build that counts them (the `allocs` preset,
NUMADIR_COUNT_ALLOCATIONS=ON: base/heap_counter.h) under authrate, with the access log off,
as text lines and as JSON. Prints one line per configuration and, with --results, appends the
table to perf/RESULTS.md.

  cmake --preset allocs && cmake --build build/allocs
  perf/alloc_bench.py [--build-dir build/allocs] [--authrate-build build/release]
                      [--users 10000] [--connections 16] [--duration 5] [--tls]

The counter (numadirHeapAllocations in cn=Monitor) counts every malloc, calloc, realloc and
aligned allocation of the process, operator new included. It is read before and after the
measured window, together with numadirAuths; one monitor read is measured on its own first and
subtracted, so the figure is the request path's alone. With --tls the connections are ldaps://.
"""
import argparse
import datetime
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (perf/bench.py: the servers and authrate runs it starts)

import ldap  # noqa: E402  (python3-ldap)

CONFIGURATIONS = [
    ("log off", ""),
    ("log stats, text", 'level = "stats"\nformat = "text"'),
    ("log stats, json", 'level = "stats"\nformat = "json"'),
]


def read_counters(port):
    """(numadirHeapAllocations, numadirAuths) read through one rootdn connection."""
    conn = ldap.initialize(f"ldap://127.0.0.1:{port}")
    conn.simple_bind_s(bench.ROOT_DN, "secret")
    values = {}
    for dn, base in (("cn=Monitor", "numadirHeapAllocations"),
                     ("cn=Operations,cn=Monitor", "numadirAuths")):
        result = conn.search_s(dn, ldap.SCOPE_BASE, "(objectClass=*)", [base])
        attrs = result[0][1]
        if base not in attrs:
            raise SystemExit(f"alloc_bench: {dn} has no {base}: is the build made with "
                             "NUMADIR_COUNT_ALLOCATIONS=ON (cmake --preset allocs)?")
        values[base] = int(attrs[base][0])
    conn.unbind_s()
    return values["numadirHeapAllocations"], values["numadirAuths"]


def measure(build, authrate_build, work, label, log_lines, args, tls):
    name = label.replace(" ", "-").replace(",", "")
    extra = ""
    if log_lines:
        extra = f'[log]\n{log_lines}\nfile = "{work}/{name}/access.log"\n'
    server = bench.start_numadir(build, work, name, args.dispatcher, args.ldif, tls=tls,
                                 extra=extra)
    try:
        scheme = "ldaps" if tls else "ldap"
        # Warm-up: every connection made, every buffer grown, the caches filled.
        bench.run_authrate(authrate_build, server, args.connections,
                           argparse.Namespace(**{**vars(args), "duration": args.warmup,
                                                 "warmup": 0}), scheme=scheme)
        first, _ = read_counters(server.port)
        second, auths_before = read_counters(server.port)
        per_read = second - first  # What one read of the counters allocates itself.
        summary = bench.run_authrate(authrate_build, server, args.connections, args,
                                     scheme=scheme)
        after, auths_after = read_counters(server.port)
        auths = auths_after - auths_before
        allocations = after - second - per_read
        return {"label": label, "auths": auths, "allocations": allocations,
                "per_auth": allocations / auths if auths else float("nan"),
                "per_read": per_read, "rate": summary["auths_per_sec"],
                "errors": summary["errors"]["total"]}
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/allocs")
    parser.add_argument("--authrate-build", default="build/release",
                        help="the build whose perf/authrate drives the server")
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--authrate-threads", type=int, default=1)
    parser.add_argument("--dispatcher", default="percpu", choices=["percpu", "single"])
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--tls", action="store_true", help="ldaps:// connections")
    parser.add_argument("--results", default="",
                        help="a file to append the table to (e.g. perf/RESULTS.md)")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    authrate_build = os.path.abspath(args.authrate_build)
    work = tempfile.mkdtemp(prefix="numadir-allocs-")
    rows = []
    try:
        args.ldif = bench.generate_users(work, args.users)
        tls = bench.make_certificate(work, "rsa") if args.tls else None
        for label, log_lines in CONFIGURATIONS:
            row = measure(build, authrate_build, work, label, log_lines, args, tls)
            rows.append(row)
            print(f"alloc_bench: {label:>16}: {row['per_auth']:.3f} allocations per auth "
                  f"({row['allocations']} over {row['auths']} auths, {row['rate']:.0f} auths/s, "
                  f"errors {row['errors']}; one monitor read: {row['per_read']})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.results:
        info = bench.machine()
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        command = "perf/alloc_bench.py " + " ".join(sys.argv[1:])
        lines = [f"### Allocations per auth: {now}", "",
                 f"Command: `{command}` — `nproc` {info['nproc']}, {info['cpu']}; {args.users} users, {args.connections} "
                 f"connections{' over ldaps://' if args.tls else ''}, authrate -t "
                 f"{args.authrate_threads}, {args.duration:g} s measured after {args.warmup:g} s "
                 f"warm-up, `{args.dispatcher}`.", "",
                 "| access log | auths | allocations | per auth |", "|---|---:|---:|---:|"]
        lines += [f"| {r['label']} | {r['auths']} | {r['allocations']} | {r['per_auth']:.3f} |"
                  for r in rows]
        with open(args.results, "a") as stream:
            stream.write("\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
