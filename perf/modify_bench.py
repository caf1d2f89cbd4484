#!/usr/bin/python3
"""The modify benchmark: authrate --mode modify against numadir `percpu`, OpenLDAP slapd and
389 Directory Server (when 389-ds-base is installed) side by side, on the same generated
users, at several connection counts, each point repeated and interleaved, medians reported.

  perf/modify_bench.py --build-dir build/release [--users 10000] [--connections 1,16,64]
                       [--repeat 3] [--duration 10] [--warmup 2] [--results perf/RESULTS.md]
                       [--servers slapd,389ds,percpu] [--389ds-db-lib bdb|mdb]
                       [--client authrate|python-ldap]

Each connection binds once as the rootdn, then replaces `description` of a random user, closed
loop. Every server commits each modification durably before answering: numadir with
durability = "sync" (its writer batches the commits of the modifications waiting), slapd with
back-mdb's default (a synced commit per operation, no dbnosync), 389-ds with its default
(nsslapd-db-durable-transaction on; perf/ds389.py's private instance, access log off).
Server CPU (utime + stime from /proc/PID/stat over the measured window) comes from authrate
--server-pid, as µs per modification. Writes a table between the bench-modify markers of
RESULTS.md (--results '' only prints it). Uses perf/bench.py's server setup (same data,
indexes and access rules).

--client python-ldap: the clients are perf/python_ldap_modify.py's instead of authrate's: a
process per connection, each one python-ldap connection doing the same closed loop (modify_s),
so the clients' own CPU shares the machine with the server as real Python clients' would.
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (perf/bench.py: server setup shared with the auth benchmark)

BEGIN = "<!-- bench-modify:begin -->"
END = "<!-- bench-modify:end -->"
HEADING = "Modifications: numadir and slapd side by side (perf/modify_bench.py)"

# The ratios of the table: numadir's to each peer's.
PAIRS = [("percpu", "slapd"), ("percpu", "389ds"), ("single", "slapd"), ("389ds", "slapd")]


def run_modify(build, server, connections, args):
    """One authrate --mode modify run (or perf/python_ldap_modify.py's, per --client). Returns
    the JSON summary."""
    if args.client == "python-ldap":
        command = ["/usr/bin/python3",
                   os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "python_ldap_modify.py"),
                   "--url", f"ldap://127.0.0.1:{server.port}", "--users", str(args.users),
                   "--connections", str(connections), "--duration", str(args.duration),
                   "--warmup", str(args.warmup), "--server-pid", str(server.process.pid)]
    else:
        command = [f"{build}/perf/authrate", "-H", f"ldap://127.0.0.1:{server.port}",
                   "-b", bench.PEOPLE, "--mode", "modify", "-D", bench.ROOT_DN, "-w", "secret",
                   "--first", "0", "--last", str(args.users - 1), "-c", str(connections),
                   "-t", str(args.authrate_threads), "-d", str(args.duration), "--warmup",
                   str(args.warmup), "--server-pid", str(server.process.pid), "--json"]
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=args.duration * 4 + 120)
    if result.returncode != 0:
        raise RuntimeError(f"{args.client} modify clients against {server.name} failed: "
                           f"{result.stderr[-2000:]}")
    return json.loads(result.stdout)


def summarize(runs):
    return {key: bench.median_point(summaries, "modifications_per_sec",
                                    "server_cpu_us_per_modification")
            for key, summaries in runs.items()}


def tables(points, names, connections):
    lines = ["| connections | server | modifications/s | p50 ms | p99 ms | "
             "server CPU µs/modification |", "|---:|---|---:|---:|---:|---:|"]
    for c in connections:
        for name in names:
            p = points[(name, c)]
            lines.append(f"| {c} | {name} | {p['rate']:.0f} | {p['p50']:.3f} | {p['p99']:.3f} | "
                         f"{p['cpu']:.1f} |")
    pairs = [(a, b) for a, b in PAIRS if a in names and b in names]
    if pairs:
        lines += ["", "| connections | " + " | ".join(
            f"{a}/{b} modifications/s | {a}/{b} CPU/mod" for a, b in pairs) + " |",
            "|---:|" + "---:|---:|" * len(pairs)]
        for c in connections:
            cells = []
            for a_name, b_name in pairs:
                a, b = points[(a_name, c)], points[(b_name, c)]
                cells.append(f"{a['rate'] / b['rate']:.2f}" if b["rate"] > 0 else "n/a")
                cells.append(f"{a['cpu'] / b['cpu']:.2f}" if b["cpu"] > 0 else "n/a")
            lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release")
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--connections", default="1,16,64")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--authrate-threads", type=int, default=1)
    parser.add_argument("--client", choices=("authrate", "python-ldap"), default="authrate",
                        help="the modify clients: authrate's, or a python-ldap process per "
                        "connection")
    parser.add_argument("--servers", default="slapd,389ds,percpu",
                        help="of slapd, 389ds (left out with a note when 389-ds-base is not "
                        "installed), percpu, single")
    parser.add_argument("--389ds-db-lib", dest="ds389_db_lib", default="bdb",
                        choices=["bdb", "mdb"], help="389-ds's database library")
    parser.add_argument("--slapd-extra", default="",
                        help="global slapd.conf lines, separated by ';' (e.g. 'threads 8')")
    parser.add_argument("--slapd-loglevel", default="0")
    parser.add_argument("--results", default="perf/RESULTS.md",
                        help="the file whose bench-modify section is rewritten ('' = print only)")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    connections = [int(c) for c in args.connections.split(",")]
    names = args.servers.split(",")
    command = "perf/modify_bench.py " + " ".join(sys.argv[1:])

    work = tempfile.mkdtemp(prefix="numadir-modify-bench-")
    servers = {}
    runs = {}
    left_out = {}  # Server name -> why it was not measured.
    try:
        ldif = bench.generate_users(work, args.users)
        print(f"modify bench: {args.users} users generated; starting {', '.join(names)}",
              flush=True)
        for name in names:
            if name == "slapd":
                servers[name] = bench.start_slapd(work, ldif, args)
            elif name == "389ds":
                why = bench.ds389.available()
                if why:
                    left_out[name] = why
                    print(f"modify bench: {name}: left out: {why}", flush=True)
                    continue
                servers[name] = bench.start_389ds(ldif, name=name, db_lib=args.ds389_db_lib)
            elif name in ("percpu", "single"):
                servers[name] = bench.start_numadir(build, work, name, name, ldif,
                                                    database_extra='durability = "sync"\n')
            else:
                raise SystemExit(f"modify bench: unknown server {name!r}")
        for rep in range(args.repeat):
            for c in connections:
                for name in names:
                    if name not in servers:
                        continue
                    summary = run_modify(build, servers[name], c, args)
                    runs.setdefault((name, c), []).append(summary)
                    print(f"modify bench: rep {rep + 1}/{args.repeat} {c:>4} conns {name:>7}: "
                          f"{summary['modifications_per_sec']:.0f} mods/s, "
                          f"p99 {summary['latency_ms']['p99']:.3f} ms, "
                          f"cpu {summary.get('server_cpu_us_per_modification') or 0:.1f} us/mod, "
                          f"errors {summary['errors']['total']}", flush=True)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    names = [name for name in names if name in servers]
    points = summarize(runs)
    info = bench.machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    errors = sum(p["errors"] for p in points.values())
    left_out_note = "".join(f"\n- {name}: not measured: {why}." for name, why in left_out.items())
    clients = (f"a python-ldap process per connection (perf/python_ldap_modify.py)"
               if args.client == "python-ldap" else
               f"authrate with {args.authrate_threads} thread(s)")
    section = f"""{BEGIN}
### Modifications side by side: {now}

Command: `{command}` — {args.users} users; each connection binds once as the rootdn, then
replaces `description` of a random user, closed loop; numadir with durability = "sync", slapd
back-mdb and 389-ds with their defaults (synced commits); {clients},
{args.duration:g} s measured after {args.warmup:g} s warm-up,
{args.repeat} repetitions interleaved, medians shown. Machine: {info['nproc']} CPUs,
{info['cpu']}, Linux {info['kernel']}; {info['slapd']};
{bench.ds389_label(info, args)}. Errors over all runs: {errors}.{left_out_note}

{tables(points, names, connections)}
{END}"""
    if args.results:
        bench.write_section(args.results, BEGIN, END, HEADING, section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
