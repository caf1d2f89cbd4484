#!/usr/bin/python3
"""Scaling benchmark of the per-CPU frontend: numadir `percpu` (pinned and unpinned), numadir
`single` and OpenLDAP slapd on the same generated users, in one run, repetitions interleaved,
medians reported:

  grid: authrate at each connection count (default 16, 64, 256 and 1,000) against each
        server: auths/s, p50/p99 latency, server CPU µs per auth.
  idle: authrate with 64 active connections, once with no other connection and once with
        10,000 idle connections opened beforehand by this script (plain sockets that connect
        and stay silent): the auth rate with idle connections over the rate without, the
        server's RSS growth per idle connection, and the server's CPU while only idle
        connections are open.

  perf/scaling_bench.py --build-dir build/release [--users 100000] [--repeat 3]
                        [--connections 16,64,256,1000] [--idle 10000] [--active 64]
                        [--servers slapd,single,percpu,percpu-unpinned]
                        [--variant NAME:key=value,...] [--results perf/RESULTS.md]

Servers: `slapd`, `percpu` (the default placement, pinned), `percpu-unpinned` (threads.pin =
false), `single`, and any --variant: a numadir server named NAME with the given settings
(dispatcher=percpu|single, pin=true|false, listener_helps=true|false, listeners=N, workers=N,
topology=DESCRIPTION (threads.topology), build=DIR), e.g. `--variant p2l:listeners=2` for two pinned listeners beside the auto workers,
`--variant percpu-nohelp:listener_helps=false` for listeners that never run requests.

Every server runs at once, idle while another is measured. The tables go between the scaling
markers of RESULTS.md (--section names them). Helpers shared with perf/bench.py come from it.
"""
import argparse
import datetime
import os
import resource
import shlex
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

HEADING = "Scaling: 1,000 connections, 10,000 idle connections, pinned vs unpinned " \
          "(perf/scaling_bench.py)"

# Built-in numadir servers: name -> settings (see --variant).
BUILT_IN = {
    "percpu": {"dispatcher": "percpu"},
    "percpu-unpinned": {"dispatcher": "percpu", "pin": "false"},
    "single": {"dispatcher": "single"},
}


def parse_variant(text):
    """'NAME:key=value,...' -> (NAME, settings)."""
    name, _, rest = text.partition(":")
    settings = {"dispatcher": "percpu"}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key not in ("dispatcher", "pin", "listener_helps", "listeners", "workers", "topology",
                       "build"):
            raise SystemExit(f"scaling_bench: --variant {text!r}: unknown key {key!r}")
        settings[key] = value
    if not name or name in ("slapd",):
        raise SystemExit(f"scaling_bench: --variant {text!r}: needs a name other than slapd")
    return name, settings


def raise_fd_limit():
    """Raises this process's soft RLIMIT_NOFILE to the hard limit; the servers and authrate
    inherit it (numadir and slapd size nothing by it beyond their connection tables)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def import_template(build, work, ldif, cleartext):
    """Imports the users once into `work`/template/db; each numadir server gets a copy."""
    folder = os.path.join(work, "template")
    os.makedirs(folder)
    config = os.path.join(folder, "numadir.toml")
    with open(config, "w") as stream:
        stream.write(f"""{bench.DATABASE_TOML}
[passwords]
allow_cleartext = {"true" if cleartext else "false"}
""")
    subprocess.run([f"{build}/server/numadir", "import", "-c", config, "--no-progress", ldif],
                   check=True, stdout=subprocess.DEVNULL)
    return os.path.join(folder, "db")


def start_numadir(build, work, name, settings, template_db, max_connections, cleartext):
    """Like bench.start_numadir, with the thread settings of `settings`, max_connections raised
    for the idle connections, and the database copied from the imported template."""
    build = os.path.abspath(settings.get("build", build))
    folder = os.path.join(work, name)
    os.makedirs(folder)
    shutil.copytree(template_db, os.path.join(folder, "db"))
    root_pw = bench.root_password(build)
    server_counts = ""
    for key in ("listeners", "workers"):
        if key in settings:
            server_counts += f"{key} = {int(settings[key])}\n"
    pin = f"pin = {settings['pin']}\n" if "pin" in settings else ""
    if "listener_helps" in settings:
        pin += f"listener_helps = {settings['listener_helps']}\n"
    if "topology" in settings:  # An emulated topology, e.g. numa:2 core:1 pu:1 (threads.topology).
        pin += f'topology = "{settings["topology"]}"\n'
    config = os.path.join(folder, "numadir.toml")
    with open(config, "w") as stream:
        stream.write(f"""{bench.DATABASE_TOML}
[server]
listen = ["ldap://127.0.0.1:0"]
rootdn = "{bench.ROOT_DN}"
rootpw = "{root_pw}"
max_connections = {max_connections}
{server_counts}
[threads]
dispatcher = "{settings['dispatcher']}"
{pin}
[passwords]
allow_cleartext = {"true" if cleartext else "false"}
""")
    process = subprocess.Popen([f"{build}/server/numadir", "serve", "-c", config],
                               stdout=subprocess.PIPE, text=True)
    match = bench.wait_for_line(process, r"listening on ldap://127\.0\.0\.1:(\d+) \((.*)\)")
    server = bench.Server(name, process, int(match.group(1)))
    server.threads = match.group(2)
    return server


def server_threads(pid):
    """Returns: 'name@cpus' for each thread of `pid` (its allowed CPU list), for the report."""
    out = []
    task = f"/proc/{pid}/task"
    for tid in sorted(os.listdir(task), key=int):
        try:
            with open(f"{task}/{tid}/comm") as stream:
                comm = stream.read().strip()
            with open(f"{task}/{tid}/status") as stream:
                cpus = next(line.split(":", 1)[1].strip() for line in stream
                            if line.startswith("Cpus_allowed_list"))
        except (OSError, StopIteration):
            continue
        out.append(f"{comm}@{cpus}")
    return out


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as stream:
        for line in stream:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as stream:
        fields = stream.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15)


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def settled_fds(pid, timeout_s=15):
    """Returns: the server's open descriptor count once it has stopped moving for a second
    (a server may still be closing the previous authrate's connections)."""
    count = open_fds(pid)
    deadline = time.time() + timeout_s
    stable_since = time.time()
    while time.time() < deadline and time.time() - stable_since < 1:
        time.sleep(0.1)
        now = open_fds(pid)
        if now != count:
            count, stable_since = now, time.time()
    return count


def open_idle(port, count, server_pid, timeout_s=120):
    """Opens `count` connections to 127.0.0.1:`port` that send nothing, and waits until the
    server holds them (its open descriptors grew by `count`). Returns the sockets."""
    before = settled_fds(server_pid)
    sockets = []
    linger = struct.pack("ii", 1, 0)  # Close with RST: no TIME_WAIT left behind on our side.
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            sock.settimeout(30)
            sock.connect(("127.0.0.1", port))
            sockets.append(sock)
        deadline = time.time() + timeout_s
        while open_fds(server_pid) < before + count:
            if time.time() > deadline:
                accepted = open_fds(server_pid) - before
                if accepted < count * 0.99:
                    raise RuntimeError(f"the server accepted {accepted} of {count} idle "
                                       f"connections within {timeout_s}s")
                print(f"scaling: warning: {accepted} of {count} idle connections seen as "
                      "accepted (the server's descriptor count moved)", flush=True)
                break
            time.sleep(0.2)
    except BaseException:
        close_idle(sockets)
        raise
    return sockets


def close_idle(sockets):
    for sock in sockets:
        sock.close()
    sockets.clear()


def wait_fds_back(pid, target, timeout_s=60):
    """Waits until the server has closed the idle connections (its descriptors are back)."""
    deadline = time.time() + timeout_s
    while open_fds(pid) > target + 8 and time.time() < deadline:
        time.sleep(0.2)


def summarize(summaries):
    point = bench.median_point(summaries)
    point["rates"] = [s["auths_per_sec"] for s in summaries]
    return point


def grid_table(points, names, connections):
    lines = ["| connections | server | auths/s (each repetition) | auths/s | p50 ms | p99 ms | "
             "server CPU µs/auth |", "|---:|---|---|---:|---:|---:|---:|"]
    for c in connections:
        for name in names:
            p = points[(name, c)]
            each = ", ".join(f"{r:.0f}" for r in p["rates"])
            lines.append(f"| {c} | {name} | {each} | {p['rate']:.0f} | {p['p50']:.3f} | "
                         f"{p['p99']:.3f} | {p['cpu']:.1f} |")
    return "\n".join(lines)


def ratio_table(points, pairs, connections):
    lines = ["| connections | pair | auths/s | CPU/auth | p99 |", "|---:|---|---:|---:|---:|"]
    for c in connections:
        for a, b in pairs:
            pa, pb = points[(a, c)], points[(b, c)]
            cpu = f"{pa['cpu'] / pb['cpu']:.2f}" if pb["cpu"] > 0 else "n/a"
            lines.append(f"| {c} | {a}/{b} | {pa['rate'] / pb['rate']:.2f} | {cpu} | "
                         f"{pa['p99'] / pb['p99']:.2f} |")
    return "\n".join(lines)


def idle_table(idle, names, args):
    lines = [f"| server | auths/s, {args.active} active | auths/s, {args.active} active + "
             f"{args.idle} idle | with/without | p99 ms without | p99 ms with | RSS growth "
             "KiB, first opening (later ones) | bytes per idle connection | server CPU ms in "
             f"{args.idle_cpu_window:g} s with only idle connections |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        d = idle[name]
        without, with_idle = summarize(d["without"]), summarize(d["with"])
        # The first opening counts: the memory it takes is kept by the allocator when the
        # connections close and serves the later repetitions (shown in brackets).
        growth = d["rss_growth_kib"][0]
        later = ", ".join(str(g) for g in d["rss_growth_kib"][1:]) or "-"
        lines.append(f"| {name} | {without['rate']:.0f} | {with_idle['rate']:.0f} | "
                     f"{with_idle['rate'] / without['rate']:.3f} | {without['p99']:.3f} | "
                     f"{with_idle['p99']:.3f} | {growth} ({later}) | "
                     f"{growth * 1024 / args.idle:.0f} | "
                     f"{statistics.median(d['idle_cpu_ms']):.0f} |")
    return "\n".join(lines)


def goals(points, idle, connections, args):
    """Returns: one line per goal of the per-CPU issue that this run measured, met or not."""
    out = []

    def verdict(ok):
        return "**met**" if ok else "**not met**"

    for c in (64, 256):
        if ("percpu", c) in points and ("slapd", c) in points:
            p, s = points[("percpu", c)], points[("slapd", c)]
            rate, cpu, p99 = p["rate"] / s["rate"], p["cpu"] / s["cpu"], p["p99"] / s["p99"]
            out.append(f"- {c} connections: percpu/slapd auths/s {rate:.2f} (goal >= 2): "
                       f"{verdict(rate >= 2)}; CPU per auth {cpu:.2f}x (goal <= 0.4): "
                       f"{verdict(cpu <= 0.4)}; p99 {p99:.2f}x (goal <= 1): {verdict(p99 <= 1)}.")
    behind = [(c, points[("percpu", c)]["rate"] / points[("single", c)]["rate"])
              for c in connections if ("percpu", c) in points and ("single", c) in points]
    if behind:
        ok = all(r > 1 for _, r in behind)
        out.append("- percpu ahead of single at every point: " + verdict(ok) + " (" +
                   ", ".join(f"{r:.2f}x at {c}" for c, r in behind) + ").")
    for name in ("percpu", "single", "slapd"):
        if name in idle:
            d = idle[name]
            ratio = summarize(d["with"])["rate"] / summarize(d["without"])["rate"]
            per_conn = d["rss_growth_kib"][0] * 1024 / args.idle
            line = (f"- {name}, {args.idle} idle connections beside {args.active} active: "
                    f"{ratio:.3f} of the rate without them (goal >= 0.95): "
                    f"{verdict(ratio >= 0.95)}; {per_conn:.0f} bytes of RSS per idle connection")
            if name != "slapd":
                line += f" (goal <= 4096): {verdict(per_conn <= 4096)}"
            out.append(line + ".")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release")
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--scheme", default="ssha", choices=["ssha", "cleartext"])
    parser.add_argument("--connections", default="16,64,256,1000",
                        help="connection counts of the grid ('' = no grid)")
    parser.add_argument("--servers", default="slapd,single,percpu,percpu-unpinned",
                        help="servers of the grid, in the order they are measured")
    parser.add_argument("--idle-servers", default="slapd,single,percpu",
                        help="servers of the idle-connection test ('' = none)")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME:key=value,... an extra numadir server (see above)")
    parser.add_argument("--idle", type=int, default=10_000)
    parser.add_argument("--active", type=int, default=64)
    parser.add_argument("--idle-cpu-window", type=float, default=3.0,
                        help="seconds of server CPU measured with only idle connections open")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--authrate-threads", type=int, default=1)
    parser.add_argument("--slapd-extra", default="threads 4",
                        help="global slapd.conf lines, separated by ';'")
    parser.add_argument("--slapd-loglevel", default="0")
    parser.add_argument("--section", default="scaling",
                        help="the markers <!-- SECTION:begin --> and <!-- SECTION:end --> of "
                        "RESULTS.md this run rewrites (another name keeps a second run)")
    parser.add_argument("--results", default="perf/RESULTS.md",
                        help="the file whose scaling section is rewritten ('' = print only)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]  # Other work on the machine, reported with the figures.
    build = os.path.abspath(args.build_dir)
    begin, end = f"<!-- {args.section}:begin -->", f"<!-- {args.section}:end -->"
    connections = [int(c) for c in args.connections.split(",") if c]
    names = [n for n in args.servers.split(",") if n] if connections else []
    idle_names = [n for n in args.idle_servers.split(",") if n]
    numadir_settings = dict(BUILT_IN)
    numadir_settings.update(parse_variant(v) for v in args.variant)
    wanted = list(dict.fromkeys(names + idle_names))
    for name in wanted:
        if name != "slapd" and name not in numadir_settings:
            raise SystemExit(f"scaling_bench: unknown server {name!r}")
    command = "perf/scaling_bench.py " + shlex.join(sys.argv[1:])
    fd_limit = raise_fd_limit()
    needed = max(connections + [args.active]) + (args.idle if idle_names else 0) + 256
    if fd_limit < needed:
        raise SystemExit(f"scaling_bench: {needed} file descriptors needed, the limit is "
                         f"{fd_limit} (ulimit -Hn)")
    max_connections = max(connections + [args.active]) + args.idle + 1024

    work = tempfile.mkdtemp(prefix="numadir-scaling-")
    servers = {}
    runs = {}
    idle = {name: {"without": [], "with": [], "rss_growth_kib": [], "idle_cpu_ms": []}
            for name in idle_names}
    placements = {}
    tick_ms = 1000 / os.sysconf("SC_CLK_TCK")
    try:
        ldif = bench.generate_users(work, args.users, args.scheme)
        template_db = None
        for name in wanted:
            if name == "slapd":
                servers[name] = bench.start_slapd(work, ldif, args)
                continue
            if template_db is None:
                template_db = import_template(build, work, ldif, args.scheme == "cleartext")
            servers[name] = start_numadir(build, work, name, numadir_settings[name], template_db,
                                          max_connections, args.scheme == "cleartext")
        for name, server in servers.items():
            placements[name] = (getattr(server, "threads", "") + " " +
                                " ".join(server_threads(server.process.pid))).strip()
            print(f"scaling: {name}: {placements[name]}", flush=True)

        def measure(name, c, label):
            summary = bench.run_authrate(build, servers[name], c, args)
            print(f"scaling: {label} {c:>5} conns {name:>16}: "
                  f"{summary['auths_per_sec']:.0f} auths/s, "
                  f"p99 {summary['latency_ms']['p99']:.3f} ms, "
                  f"cpu {summary.get('server_cpu_us_per_auth') or 0:.1f} us/auth, "
                  f"errors {summary['errors']['total']}", flush=True)
            return summary

        for rep in range(args.repeat):
            label = f"rep {rep + 1}/{args.repeat}"
            # Idle connections first: the first opening's RSS growth must not be hidden by
            # memory the allocator kept from the grid's larger connection counts.
            for name in idle_names:
                server = servers[name]
                pid = server.process.pid
                # Alternate which comes first so that drift during a repetition cancels out.
                order = ("without", "with") if rep % 2 == 0 else ("with", "without")
                for kind in order:
                    if kind == "without":
                        idle[name]["without"].append(measure(name, args.active, label))
                        continue
                    fds_before = settled_fds(pid)
                    rss_before = rss_kib(pid)
                    sockets = open_idle(server.port, args.idle, pid)
                    try:
                        time.sleep(0.5)
                        rss_after = rss_kib(pid)
                        ticks = cpu_ticks(pid)
                        time.sleep(args.idle_cpu_window)
                        idle_ms = (cpu_ticks(pid) - ticks) * tick_ms
                        summary = measure(name, args.active, label + f" +{args.idle} idle")
                        idle[name]["with"].append(summary)
                        idle[name]["rss_growth_kib"].append(rss_after - rss_before)
                        idle[name]["idle_cpu_ms"].append(idle_ms)
                        print(f"scaling: {name}: RSS {rss_before} -> {rss_after} KiB with "
                              f"{args.idle} idle connections "
                              f"({(rss_after - rss_before) * 1024 / args.idle:.0f} B each), "
                              f"{idle_ms:.0f} ms CPU in {args.idle_cpu_window:g} s idle",
                              flush=True)
                    finally:
                        close_idle(sockets)
                        wait_fds_back(pid, fds_before)
            for c in connections:
                for name in names:
                    runs.setdefault((name, c), []).append(measure(name, c, label))
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    points = {key: summarize(summaries) for key, summaries in runs.items()}
    info = bench.machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    errors = sum(p["errors"] for p in points.values()) + sum(
        s["errors"]["total"] for d in idle.values() for k in ("without", "with") for s in d[k])
    pairs = [(a, b) for a, b in (("percpu", "slapd"), ("percpu", "single"),
                                 ("percpu", "percpu-unpinned"), ("percpu-unpinned", "single"),
                                 ("single", "slapd")) if a in names and b in names]
    pairs += [(n, "percpu") for n in names if n not in ("slapd", "single", "percpu",
                                                        "percpu-unpinned") and "percpu" in names]
    build_note = f"binaries from {os.path.relpath(build)}, built as the release preset"
    placement_lines = "\n".join(f"- `{name}`: {placements[name]}" for name in wanted)
    grid = ""
    if connections:
        grid = f"""
{grid_table(points, names, connections)}

Ratios of medians (auths/s and CPU per auth: higher and lower are better; p99: lower is better):

{ratio_table(points, pairs, connections)}
"""
    idle_part = ""
    if idle_names:
        idle_part = f"""
Idle connections: {args.active} active connections alone, then with {args.idle} idle ones
opened before authrate starts (in alternating order); RSS growth is the server's VmRSS after
the idle connections were accepted minus before, the first time they are opened (later
openings reuse the memory the allocator kept; kernel socket memory is not included):

{idle_table(idle, idle_names, args)}
"""
    section = f"""{begin}
### Scaling: {now}

Command: `{command}` ({build_note}), {now}. {args.users} users ({args.scheme} passwords),
indexes objectClass eq and uid eq on every server, the same access rules; slapd with loglevel
{args.slapd_loglevel} and `{args.slapd_extra}`; authrate with {args.authrate_threads} thread(s),
{args.duration:g} s measured after {args.warmup:g} s warm-up; {args.repeat} repetitions
interleaved, medians shown. Machine: `nproc` = {info['nproc']}, {info['cpu']}, Linux
{info['kernel']}; {info['slapd']}. The load generator and the servers share the machine's
CPUs; load average {load_before:.2f} before the run (its own benchmarks included), {os.getloadavg()[0]:.2f}
after. Errors over all runs: {errors}.

Threads of each server (thread@CPUs it may run on):

{placement_lines}
{grid}{idle_part}
Goals of the per-CPU design, as measured in this run:

{goals(points, idle, connections, args)}

{end}"""
    print(section)
    if args.results:
        bench.write_section(args.results, begin, end, HEADING, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
