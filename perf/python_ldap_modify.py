#!/usr/bin/python3
"""Modifications/s from python-ldap clients: --connections processes, each with one python-ldap
connection bound as the rootdn, replacing `description` of a random user in a closed loop
(modify_s: one outstanding operation per connection), the way a provisioning job or a web
application's workers write. The clients' own CPU (Python, libldap) is in the loop and shares
the machine with the server, so this measures what such clients get, not the server's ceiling
(authrate --mode modify is that instrument).

  perf/python_ldap_modify.py --url ldap://127.0.0.1:PORT --users 10000 [--connections 16]
                             [--duration 10] [--warmup 2] [--server-pid PID] [--seed 1]

Prints one JSON object in the shape of authrate --mode modify --json's (the fields
modify_bench.py reads): modifications_per_sec, latency_ms {p50, p99}, errors {total},
server_cpu_us_per_modification (utime + stime of --server-pid over the measured window).
Needs python3-ldap.
"""
import argparse
import json
import multiprocessing
import os
import random
import sys
import time

import ldap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (perf/bench.py: the generated users' names and the rootdn)


def cpu_seconds(pid):
    """utime + stime of process `pid`, in seconds."""
    with open(f"/proc/{pid}/stat") as stream:
        fields = stream.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client(index, args, start, results):
    """One connection: binds, waits for `start`, then modifies until the run's end. Puts
    (modifications in the window, latencies in ms of those, errors) on `results`."""
    rng = random.Random(args.seed * 1000 + index)
    connection = ldap.initialize(args.url)
    connection.protocol_version = 3
    connection.simple_bind_s(bench.ROOT_DN, "secret")
    start.wait()
    begin = time.monotonic()
    window_start, window_end = begin + args.warmup, begin + args.warmup + args.duration
    count, errors, latencies = 0, 0, []
    serial = 0
    while True:
        sent = time.monotonic()
        if sent >= window_end:
            break
        user = rng.randrange(args.users)
        serial += 1
        try:
            connection.modify_s(f"uid=user{user},{bench.PEOPLE}",
                                [(ldap.MOD_REPLACE, "description", f"c{index}-{serial}".encode())])
            ok = True
        except ldap.LDAPError:
            ok = False
        done = time.monotonic()
        if sent >= window_start and done <= window_end:
            if ok:
                count += 1
                latencies.append((done - sent) * 1000)
            else:
                errors += 1
    connection.unbind_s()
    results.put((count, latencies, errors))


def percentile(sorted_values, fraction):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def run(args):
    """Runs the clients. Returns: the summary dictionary (see the module's docstring)."""
    context = multiprocessing.get_context("fork")
    start, results = context.Event(), context.Queue()
    processes = [context.Process(target=client, args=(i, args, start, results))
                 for i in range(args.connections)]
    for process in processes:
        process.start()
    time.sleep(0.5)  # Every client connected and bound (a slow one only shortens its window).
    start.set()
    time.sleep(args.warmup)
    cpu_before = cpu_seconds(args.server_pid) if args.server_pid else None
    time.sleep(args.duration)
    cpu_after = cpu_seconds(args.server_pid) if args.server_pid else None
    gathered = [results.get(timeout=args.duration + 120) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    count = sum(g[0] for g in gathered)
    latencies = sorted(latency for g in gathered for latency in g[1])
    summary = {
        "modifications_per_sec": count / args.duration,
        "latency_ms": {"p50": percentile(latencies, 0.50), "p99": percentile(latencies, 0.99)},
        "errors": {"total": sum(g[2] for g in gathered) +
                   sum(1 for p in processes if p.exitcode != 0)},
    }
    if cpu_before is not None and count:
        summary["server_cpu_us_per_modification"] = (cpu_after - cpu_before) * 1e6 / count
    return summary


def parser():
    result = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    result.add_argument("--url", required=True)
    result.add_argument("--users", type=int, default=10_000)
    result.add_argument("--connections", type=int, default=16)
    result.add_argument("--duration", type=float, default=10)
    result.add_argument("--warmup", type=float, default=2)
    result.add_argument("--server-pid", type=int, default=0)
    result.add_argument("--seed", type=int, default=1)
    return result


if __name__ == "__main__":
    print(json.dumps(run(parser().parse_args())))
