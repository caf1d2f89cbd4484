#!/usr/bin/python3
"""How numadir `percpu`, numadir `single` and OpenLDAP slapd scale with cores, on the machine it
runs on: each server is started under taskset on 1, 2, 4, 8, ... and finally all of the machine's
CPUs, taken node by node (all of node 0's CPUs, in core order with a core's hardware threads
together, before any of node 1's), and driven by authrate; numadir plans its threads for the
CPUs it was started on. Run by perf/core_sweep.sh (which builds first).

  perf/core_sweep.py --build-dir build/release [--levels 1,2,4,...] [--users 10000]
                     [--connections auto] [--repeat 2] [--duration 4] [--warmup 1]
                     [--results perf/RESULTS.md] [--plot perf/core_sweep.png]

authrate runs on the CPUs the servers do not have (all of them at the last level, where it
shares them: said in the table), with one thread per 4 of those CPUs (at least 1, at most 8).
--connections auto: 16 per server CPU, at least 64. slapd gets `threads` = 2 per CPU (at
least 4). Each level starts the three servers fresh (their placement follows the CPUs they were
given), measures them interleaved, and stops them. Writes the table (auths/s, server CPU
µs/auth, each server's speed-up over its 1-CPU rate and that over linear, percpu/single) between
the core-sweep markers of RESULTS.md, and a plot; under 5 minutes with the defaults on 64 CPUs.
"""
import argparse
import datetime
import os
import shlex
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import scaling_bench  # noqa: E402

HEADING = "Core sweep: percpu, single and slapd on 1, 2, 4 ... CPUs (perf/core_sweep.sh)"
SERVERS = ["percpu", "single", "slapd"]


def cpus_in_node_order():
    """The CPUs this process may run on, node by node, each node's in core order with a core's
    hardware threads together."""
    allowed = os.sched_getaffinity(0)
    node_of = {}
    nodes = "/sys/devices/system/node"
    if os.path.isdir(nodes):
        for entry in os.listdir(nodes):
            if entry.startswith("node") and entry[4:].isdigit():
                with open(f"{nodes}/{entry}/cpulist") as stream:
                    for cpu in bench.expand_cpus(stream.read().strip()):
                        node_of[cpu] = int(entry[4:])

    def key(cpu):
        core = cpu
        try:
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/core_id") as stream:
                core = int(stream.read())
        except OSError:
            pass
        return (node_of.get(cpu, 0), core, cpu)

    return sorted(allowed, key=key)


def cpu_list(cpus):
    return ",".join(str(c) for c in cpus)


def start_under(cpus, start):
    """Runs start() with this process bound to `cpus`, so the server it starts inherits them."""
    everything = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cpus))
    try:
        return start()
    finally:
        os.sched_setaffinity(0, everything)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release")
    parser.add_argument("--levels", default="", help="CPU counts (default 1, 2, 4, ... all)")
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--connections", default="auto")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--duration", type=float, default=4)
    parser.add_argument("--warmup", type=float, default=1)
    parser.add_argument("--section", default="core-sweep")
    parser.add_argument("--results", default="perf/RESULTS.md")
    parser.add_argument("--plot", default="perf/core_sweep.png")
    args = parser.parse_args()
    args.slapd_loglevel = "0"
    build = os.path.abspath(args.build_dir)
    order = cpus_in_node_order()
    if args.levels:
        levels = [int(x) for x in args.levels.split(",")]
    else:
        levels, k = [], 1
        while k < len(order):
            levels.append(k)
            k *= 2
        levels.append(len(order))
    if any(level < 1 or level > len(order) for level in levels):
        raise SystemExit(f"core_sweep: levels must be 1..{len(order)} (the CPUs allowed here)")
    command = "perf/core_sweep.sh " + shlex.join(sys.argv[1:])
    load_before = os.getloadavg()[0]
    work = tempfile.mkdtemp(prefix="numadir-sweep-")
    runs = {(name, level): [] for name in SERVERS for level in levels}
    clients = {}
    try:
        ldif = bench.generate_users(work, args.users)
        template = scaling_bench.import_template(build, work, ldif, False)
        for level in levels:
            server_cpus = order[:level]
            client_cpus = order[level:] or order
            clients[level] = client_cpus
            connections = (max(64, 16 * level) if args.connections == "auto"
                           else int(args.connections))
            args.authrate_threads = max(1, min(8, len(client_cpus) // 4))
            args.slapd_extra = f"threads {max(4, 2 * level)}"
            level_work = os.path.join(work, f"level{level}")
            os.makedirs(level_work)
            servers = {}
            try:
                for name in ("percpu", "single"):
                    servers[name] = start_under(server_cpus, lambda name=name: (
                        scaling_bench.start_numadir(build, level_work, name,
                                                    scaling_bench.BUILT_IN[name], template,
                                                    4096, False)))
                servers["slapd"] = start_under(server_cpus, lambda: bench.start_slapd(
                    level_work, ldif, args))
                for rep in range(args.repeat):
                    names = SERVERS if rep % 2 == 0 else list(reversed(SERVERS))
                    for name in names:
                        summary = start_under(client_cpus, lambda name=name: bench.run_authrate(
                            build, servers[name], connections, args))
                        runs[(name, level)].append(summary)
                        print(f"core_sweep: {level} CPUs ({cpu_list(server_cpus)}), "
                              f"{connections} conns, rep {rep + 1}/{args.repeat}, {name}: "
                              f"{summary['auths_per_sec']:.0f} auths/s, "
                              f"{summary.get('server_cpu_us_per_auth') or 0:.1f} µs/auth",
                              flush=True)
            finally:
                for server in servers.values():
                    server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rates = {key: statistics.median(s["auths_per_sec"] for s in summaries)
             for key, summaries in runs.items()}
    cpu = {key: statistics.median((s.get("server_cpu_us_per_auth") or 0) for s in summaries)
           for key, summaries in runs.items()}
    base = levels[0]
    lines = ["| CPUs | authrate on | " +
             " | ".join(f"{n} auths/s | {n} µs/auth | {n} speed-up (of linear)" for n in SERVERS)
             + " | percpu / single |",
             "|---:|---|" + "---:|" * (3 * len(SERVERS) + 1)]
    for level in levels:
        shared = "shared" if clients[level] == order[:level] else cpu_list(clients[level])
        cells = []
        for name in SERVERS:
            speedup = rates[(name, level)] / rates[(name, base)] if rates[(name, base)] else 0
            linear = level / base
            cells += [f"{rates[(name, level)]:.0f}", f"{cpu[(name, level)]:.1f}",
                      f"{speedup:.2f}× ({speedup / linear:.2f})"]
        ratio = rates[("percpu", level)] / rates[("single", level)] if rates[
            ("single", level)] else 0
        lines.append(f"| {level} | {shared} | " + " | ".join(cells) + f" | {ratio:.2f}× |")
    m = bench.machine()
    plotted = bool(args.plot) and bench.plot(
        {key: {"rate": rate} for key, rate in rates.items()}, SERVERS, levels,
        os.path.abspath(args.plot), xlabel="CPUs given to the server (taskset)",
        title="auths/s vs server CPUs (median of repetitions)")
    section = "\n".join([
        f"<!-- {args.section}:begin -->",
        f"Run {datetime.date.today().isoformat()} on {m['nproc']} × {m['cpu']}, kernel "
        f"{m['kernel']}, {m['slapd']} (load average {load_before:.2f} before), `{command}`: "
        f"{args.users} users, {args.repeat} interleaved repetitions of {args.duration:g} s "
        f"(+{args.warmup:g} s warm-up), medians; CPUs taken in node order "
        f"({cpu_list(order)}).",
        "",
        "\n".join(lines),
        "",
        (f"![auths/s vs server CPUs]({os.path.relpath(args.plot, os.path.dirname(args.results))})"
         if plotted and args.results else f"Plot: `{args.plot}`." if plotted
         else "(gnuplot missing: no plot.)"),
        f"<!-- {args.section}:end -->",
    ])
    print(section)
    if args.results:
        bench.write_section(args.results, f"<!-- {args.section}:begin -->",
                            f"<!-- {args.section}:end -->", HEADING, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
