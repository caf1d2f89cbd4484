#!/usr/bin/python3
"""What each auth costs in the mechanisms that grow with cores: numadir `percpu` against `single`
(and any --variant) on the same users, in one run, repetitions interleaved, medians reported.
Per auth: context switches (voluntary and involuntary, summed over the server's threads), futex
and epoll_wait calls and all system calls (perf stat's syscall tracepoints, attached to the
server for the measured window), the single dispatcher's queue mutex (acquisitions, waits that
found it held, µs waited: its cn=Monitor counters), and the server's CPU split by thread role
(listener threads, worker threads, the rest), from each thread's /proc schedstat run time.

  perf/mechanisms_bench.py --build-dir build/release [--users 10000] [--connections 16,64,256]
                           [--repeat 3] [--duration 5] [--authrate-threads 2]
                           [--server-cpus 0] [--client-cpus 1] [--servers percpu,single]
                           [--variant NAME:key=value,...] [--section mechanisms]
                           [--results perf/RESULTS.md]

--server-cpus / --client-cpus run the servers / authrate under taskset (a CPU list): a server
started on one PU plans for one PU, which is how the model of RESULTS.md is checked at 1 and 2
PUs. perf's tracepoints cost the server some CPU of their own: the rates here are for the
mechanisms, not the headline figures (perf/bench.py). Needs perf (Debian's linux-perf) and
ldapsearch; without perf the syscall columns are left empty.
"""
import argparse
import datetime
import json
import os
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import scaling_bench  # noqa: E402

HEADING = "Mechanisms per auth: percpu against single (perf/mechanisms_bench.py)"
EVENTS = ["syscalls:sys_enter_futex", "syscalls:sys_enter_epoll_wait", "raw_syscalls:sys_enter"]
LOCK_KEYS = ["numadirQueueLockAcquisitions", "numadirQueueLockContended", "numadirQueueLockWaitUs"]


def thread_stats(pid):
    """{tid: (role, run ns, context switches)} for every thread of `pid`, from /proc."""
    out = {}
    task = f"/proc/{pid}/task"
    for tid in os.listdir(task):
        try:
            with open(f"{task}/{tid}/comm") as stream:
                comm = stream.read().strip()
            with open(f"{task}/{tid}/schedstat") as stream:
                run_ns = int(stream.read().split()[0])
            switches = 0
            with open(f"{task}/{tid}/status") as stream:
                for line in stream:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        switches += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue  # The thread ended meanwhile.
        role = "listener" if comm.startswith("listener") else \
            "worker" if comm.startswith("worker") else "other"
        out[tid] = (role, run_ns, switches)
    return out


def difference(before, after):
    """Per role: run µs and context switches between two thread_stats."""
    roles = {"listener": [0.0, 0], "worker": [0.0, 0], "other": [0.0, 0]}
    for tid, (role, run_ns, switches) in after.items():
        _, run0, switches0 = before.get(tid, (role, 0, 0))
        roles[role][0] += (run_ns - run0) / 1000
        roles[role][1] += switches - switches0
    return roles


def lock_counters(server):
    """The first pool's queue-lock counters from cn=Monitor (zeros for a lock-free pool)."""
    result = subprocess.run(
        ["ldapsearch", "-x", "-LLL", "-H", f"ldap://127.0.0.1:{server.port}", "-D", bench.ROOT_DN,
         "-w", "secret", "-b", "cn=Pool 0,cn=Pools,cn=Monitor", "-s", "base"] + LOCK_KEYS,
        capture_output=True, text=True, timeout=30)
    values = dict.fromkeys(LOCK_KEYS, 0)
    for line in result.stdout.splitlines():
        key, _, value = line.partition(": ")
        if key in values:
            values[key] = int(value)
    return values


def start_perf(pid, output):
    if shutil.which("perf") is None:
        return None
    return subprocess.Popen(["perf", "stat", "-x", ",", "-o", output, "-e", ",".join(EVENTS),
                             "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_perf(process, output):
    """Returns: {event: count} of a perf stat started by start_perf (empty without perf)."""
    if process is None:
        return {}
    process.send_signal(signal.SIGINT)
    process.wait(timeout=30)
    counts = {}
    with open(output) as stream:
        for line in stream:
            fields = line.strip().split(",")
            if len(fields) >= 3 and fields[2] in EVENTS:
                try:
                    counts[fields[2]] = int(fields[0])
                except ValueError:
                    pass  # "<not supported>" or "<not counted>".
    return counts


def authrate(build, server, connections, args, duration, warmup):
    command = [f"{build}/perf/authrate", "-H", f"ldap://127.0.0.1:{server.port}", "-b",
               bench.PEOPLE, "--first", "0", "--last", str(args.users - 1), "-c",
               str(connections), "-t", str(args.authrate_threads), "-d", str(duration),
               "--warmup", str(warmup), "--server-pid", str(server.process.pid), "--json"]
    if args.client_cpus:
        command = ["taskset", "-c", args.client_cpus] + command
    result = subprocess.run(command, capture_output=True, text=True, timeout=duration * 4 + 120)
    if result.returncode != 0:
        raise RuntimeError(f"authrate against {server.name} failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout)


def measure(build, server, connections, args, work):
    """One point: a short untimed warm-up run, then the measured run with everything sampled
    around it. Returns the per-auth figures."""
    authrate(build, server, connections, args, 1, 0)
    pid = server.process.pid
    perf_output = os.path.join(work, "perf.csv")
    locks_before = lock_counters(server)
    threads_before = thread_stats(pid)
    perf = start_perf(pid, perf_output)
    time.sleep(0.2)  # perf attaches to every thread before the load starts.
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = authrate(build, server, connections, args, args.duration, 0)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    counts = stop_perf(perf, perf_output)
    threads_after = thread_stats(pid)
    locks_after = lock_counters(server)
    auths = summary["auths_per_sec"] * summary.get("duration_s", args.duration)
    auths = max(auths, 1)
    roles = difference(threads_before, threads_after)
    point = {
        "rate": summary["auths_per_sec"],
        "p99": summary["latency_ms"]["p99"],
        "cpu": sum(role[0] for role in roles.values()) / auths,
        "listener_cpu": roles["listener"][0] / auths,
        "worker_cpu": roles["worker"][0] / auths,
        "other_cpu": roles["other"][0] / auths,
        "switches": sum(role[1] for role in roles.values()) / auths,
        # authrate's own CPU (it shares the machine): what the model's CPU budget must count.
        "client_cpu": ((children_after.ru_utime + children_after.ru_stime) -
                       (children.ru_utime + children.ru_stime)) * 1e6 / auths,
        "errors": summary["errors"]["total"],
    }
    for event, key in zip(EVENTS, ["futex", "epoll_wait", "syscalls"]):
        point[key] = counts[event] / auths if event in counts else None
    for name, key in zip(LOCK_KEYS, ["locks", "contended", "lock_wait_us"]):
        point[key] = (locks_after[name] - locks_before[name]) / auths
    return point


def median(points, key):
    values = [p[key] for p in points if p[key] is not None]
    return statistics.median(values) if values else None


COLUMNS = [
    ("auths/s", "rate", "{:.0f}"), ("p99 ms", "p99", "{:.2f}"), ("CPU µs/auth", "cpu", "{:.1f}"),
    ("listener µs", "listener_cpu", "{:.1f}"), ("worker µs", "worker_cpu", "{:.1f}"),
    ("other µs", "other_cpu", "{:.2f}"), ("authrate µs", "client_cpu", "{:.1f}"),
    ("ctx switches", "switches", "{:.2f}"),
    ("futex", "futex", "{:.2f}"), ("epoll_wait", "epoll_wait", "{:.2f}"),
    ("syscalls", "syscalls", "{:.1f}"), ("mutex locks", "locks", "{:.2f}"),
    ("contended", "contended", "{:.3f}"), ("mutex wait µs", "lock_wait_us", "{:.2f}"),
]


def table(runs, names, connections):
    lines = ["| server | conns | " + " | ".join(c[0] for c in COLUMNS) + " |",
             "|---|---:|" + "---:|" * len(COLUMNS)]
    for c in connections:
        for name in names:
            points = runs[(name, c)]
            cells = []
            for _, key, form in COLUMNS:
                value = median(points, key)
                cells.append("—" if value is None else form.format(value))
            lines.append(f"| {name} | {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release")
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--connections", default="16,64,256")
    parser.add_argument("--servers", default="percpu,single")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME:key=value,... an extra numadir server (perf/scaling_bench.py)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5)
    parser.add_argument("--authrate-threads", type=int, default=2)
    parser.add_argument("--server-cpus", default="", help="taskset CPU list for the servers")
    parser.add_argument("--client-cpus", default="", help="taskset CPU list for authrate")
    parser.add_argument("--section", default="mechanisms")
    parser.add_argument("--results", default="perf/RESULTS.md",
                        help="the file whose section is rewritten ('' = print only)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    build = os.path.abspath(args.build_dir)
    connections = [int(c) for c in args.connections.split(",") if c]
    names = [n for n in args.servers.split(",") if n]
    settings = dict(scaling_bench.BUILT_IN)
    settings.update(scaling_bench.parse_variant(v) for v in args.variant)
    for name in names:
        if name not in settings:
            raise SystemExit(f"mechanisms_bench: unknown server {name!r}")
    command = "perf/mechanisms_bench.py " + shlex.join(sys.argv[1:])
    work = tempfile.mkdtemp(prefix="numadir-mechanisms-")
    servers = {}
    runs = {(name, c): [] for name in names for c in connections}
    try:
        ldif = bench.generate_users(work, args.users)
        template = scaling_bench.import_template(build, work, ldif, False)
        for name in names:
            if args.server_cpus:
                # numadir plans for the CPUs it may run on: start it under taskset.
                os.sched_setaffinity(0, set(bench.expand_cpus(args.server_cpus)))
            try:
                servers[name] = scaling_bench.start_numadir(build, work, name, settings[name],
                                                            template, 4096, False)
            finally:
                os.sched_setaffinity(0, set(range(os.cpu_count())))
            print(f"mechanisms: {name}: {servers[name].threads}", flush=True)
        for rep in range(args.repeat):
            for c in connections:
                order = names if rep % 2 == 0 else list(reversed(names))
                for name in order:
                    point = measure(build, servers[name], c, args, work)
                    runs[(name, c)].append(point)
                    print(f"mechanisms: rep {rep + 1}/{args.repeat} {c:>4} conns {name:>8}: "
                          + ", ".join(f"{key} {point[key]:.3g}" for key in
                                      ("rate", "cpu", "listener_cpu", "worker_cpu", "switches",
                                       "futex", "locks", "lock_wait_us")
                                      if point[key] is not None), flush=True)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    load_after = os.getloadavg()[0]
    m = bench.machine()
    section = "\n".join([
        f"<!-- {args.section}:begin -->",
        f"Run {datetime.date.today().isoformat()} on {m['nproc']} × {m['cpu']}, kernel "
        f"{m['kernel']} (load average {load_before:.2f} "
        f"before, {load_after:.2f} after), `{command}`: {args.users} users, {args.repeat} "
        f"interleaved repetitions of {args.duration:g} s, medians; authrate -t "
        f"{args.authrate_threads}{', on CPUs ' + args.client_cpus if args.client_cpus else ''}"
        f"{'; servers on CPUs ' + args.server_cpus if args.server_cpus else ''}. Per auth: "
        "server CPU by thread role (schedstat run time), authrate's own CPU, context switches of all its threads, "
        "futex / epoll_wait / all system calls (perf stat tracepoints), the single dispatcher's "
        "queue mutex (cn=Monitor).",
        "",
        table(runs, names, connections),
        f"<!-- {args.section}:end -->",
    ])
    print(section)
    if args.results:
        heading = HEADING if args.section == "mechanisms" else f"{HEADING}, {args.section}"
        bench.write_section(args.results, f"<!-- {args.section}:begin -->",
                            f"<!-- {args.section}:end -->", heading, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
