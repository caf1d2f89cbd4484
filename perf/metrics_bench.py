#!/usr/bin/python3
"""The metrics benchmark: what the metrics endpoint costs an auth when a real Prometheus scrapes
it every second, numadir percpu with [metrics] off against on, beside the floor server and
OpenLDAP slapd, in one run, rounds interleaved, medians reported.

  perf/metrics_bench.py [--build-dir build/release] [--users 100000]
                        [--connections 16,1000] [--threads 2] [--duration 10] [--warmup 2]
                        [--repeat 3] [--rate 0] [--servers floor,slapd,percpu-off,percpu-on]
                        [--results FILE]

Servers, all started at the start on the same generated users (perf/bench.py's data, indexes and
access rules) and idle while another is measured:
- `percpu-off`: numadir percpu without a [metrics] table (nothing on the request path measures);
- `percpu-on`: the same with [metrics] listen on a loopback port, so requests are stamped when
  read and every result lands in the per-thread histograms and counters; Debian's prometheus
  (/usr/bin/prometheus, its own config and data under the work directory, scrape_interval 1s,
  scrape_timeout 900ms) scrapes it every second for the whole run, so every percpu-on point
  includes ~10 scrapes (each rendering every metric on the endpoint's thread) in its window;
- `percpu-unscraped` (not in the default list): [metrics] on, never scraped, so that the
  request path's share (stamps, histograms) shows apart from the scrapes;
- `floor` (canned answers: the request path's ceiling) and `slapd` (back-mdb), for scale.
Prometheus runs through every point, so its own CPU (scrapes, TSDB appends) weighs on percpu-off
and percpu-on alike; the servers' CPU is utime + stime of /proc/PID/stat over the measured
window (authrate --server-pid), per auth, and for percpu-on includes the endpoint's thread.

A round measures every (connections, authrate threads, server) point once, in one order on even
rounds and the reverse on odd ones (slow drift of the machine cancels out). At the end the
Prometheus API tells how many scrapes of percpu-on succeeded over the run (expected: about one
a second) and the slowest; a run in which Prometheus did not scrape is reported as such.

Prints Markdown tables ready for perf/RESULTS.md (with --results FILE, also written between the
metrics markers of FILE): auths/s, latency, CPU µs per auth per point, and the ratios
percpu-on/percpu-off (goals: auths/s >= 0.99x, CPU per auth <= 1.01x; the ratio of the
medians, and the median of each round's own on/off ratio with its range: the two points of a
round run back to back, so the machine's drift between rounds cancels in the latter),
percpu-on/slapd and percpu-on/floor. A smoke run: --users 1000 --duration 2 --warmup 1 --repeat 1.
"""
import argparse
import datetime
import json
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (perf/bench.py: data, servers, authrate runs, machine details)

BEGIN = "<!-- metrics:begin -->"
END = "<!-- metrics:end -->"
HEADING = ("Metrics endpoint: its cost per auth, scraped every second by Prometheus "
           "(perf/metrics_bench.py)")
PROMETHEUS = "/usr/bin/prometheus"
GOAL_RATE = 0.99  # percpu-on / percpu-off auths/s at least.
GOAL_CPU = 1.01  # percpu-on / percpu-off server CPU per auth at most.


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_metrics(port, timeout_s=60):
    """Waits until numadir's endpoint answers GET /metrics with 200."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                        timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the metrics endpoint on port {port} did not answer within {timeout_s}s")


class Prometheus:
    """Debian's prometheus scraping `target` every second from a folder of `work`."""

    def __init__(self, work, target):
        self.folder = os.path.join(work, "prometheus")
        os.makedirs(self.folder)
        config = os.path.join(self.folder, "prometheus.yml")
        with open(config, "w") as stream:
            stream.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: numadir
    static_configs:
      - targets: ["{target}"]
""")
        self.port = free_port()
        self.log = open(os.path.join(self.folder, "prometheus.log"), "wb")
        self.process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(self.folder, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        self.started = time.time()

    def query(self, expr):
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?" +
               urllib.parse.urlencode({"query": expr}))
        with urllib.request.urlopen(url, timeout=30) as response:
            answer = json.load(response)
        return [float(item["value"][1]) for item in answer["data"]["result"]]

    def wait_up(self, timeout_s=60):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}")
            try:
                if self.query('up{job="numadir"}') == [1.0]:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("prometheus did not scrape numadir (up == 1) within "
                           f"{timeout_s}s")

    def scrape_report(self):
        """(successful scrapes, seconds covered, slowest scrape in ms) since `started`."""
        window = max(1, int(time.time() - self.started))
        ok = self.query(f'sum_over_time(up{{job="numadir"}}[{window}s])')
        slowest = self.query(f'max_over_time(scrape_duration_seconds{{job="numadir"}}[{window}s])')
        return (int(ok[0]) if ok else 0, window, slowest[0] * 1000 if slowest else float("nan"))

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def point_summary(summaries):
    return {
        "rate": statistics.median(s["auths_per_sec"] for s in summaries),
        "p50": statistics.median(s["latency_ms"]["p50"] for s in summaries),
        "p99": statistics.median(s["latency_ms"]["p99"] for s in summaries),
        "cpu": statistics.median((s.get("server_cpu_us_per_auth") or 0) for s in summaries),
        "errors": sum(s["errors"]["total"] for s in summaries),
        "rates": [s["auths_per_sec"] for s in summaries],
        "cpus": [(s.get("server_cpu_us_per_auth") or 0) for s in summaries],
    }


def paired(on, off, key):
    """The on/off ratios of each round (the two points a round measures next to each other, so
    the machine's slow drift cancels): (median, lowest, highest), or None."""
    if not on or not off:
        return None
    ratios = [a / b for a, b in zip(on[key], off[key]) if b > 0]
    if not ratios:
        return None
    return statistics.median(ratios), min(ratios), max(ratios)


def paired_cell(value):
    return "n/a" if value is None else f"{value[0]:.3f} ({value[1]:.3f}-{value[2]:.3f})"


def ratio(a, b, key):
    return a[key] / b[key] if a and b and b[key] > 0 else None


def cell(value):
    return "n/a" if value is None else f"{value:.3f}"


def tables(points, names, loads):
    lines = ["| connections | authrate threads | server | auths/s | p50 ms | p99 ms | "
             "server CPU µs/auth | errors |", "|---:|---:|---|---:|---:|---:|---:|---:|"]
    for c, t in loads:
        for name in names:
            p = points.get((name, c, t))
            if p is None:
                continue
            lines.append(f"| {c} | {t} | {name} | {p['rate']:.0f} | {p['p50']:.3f} | "
                         f"{p['p99']:.3f} | {p['cpu']:.1f} | {p['errors']} |")
    ratio_lines = ["| connections | authrate threads | on/off auths/s (goal ≥ 0.99) | "
                   "on/off CPU/auth (goal ≤ 1.01) | per round on/off auths/s: median "
                   "(lowest-highest) | per round on/off CPU/auth | on/slapd auths/s | "
                   "on/floor auths/s |",
                   "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    verdicts = []
    for c, t in loads:
        on, off = points.get(("percpu-on", c, t)), points.get(("percpu-off", c, t))
        rate, cpu = ratio(on, off, "rate"), ratio(on, off, "cpu")
        ratio_lines.append(
            f"| {c} | {t} | {cell(rate)} | {cell(cpu)} | "
            f"{paired_cell(paired(on, off, 'rates'))} | {paired_cell(paired(on, off, 'cpus'))} | "
            f"{cell(ratio(on, points.get(('slapd', c, t)), 'rate'))} | "
            f"{cell(ratio(on, points.get(('floor', c, t)), 'rate'))} |")
        if rate is not None and cpu is not None:
            met = rate >= GOAL_RATE and cpu <= GOAL_CPU
            verdicts.append(f"- {c} connections, {t} authrate thread(s): on/off auths/s "
                            f"{rate:.3f}, CPU/auth {cpu:.3f}: goal {'met' if met else 'missed'}")
        quiet = points.get(("percpu-unscraped", c, t))
        if quiet is not None and off is not None:
            verdicts.append(f"- {c} connections, {t} authrate thread(s), unscraped/off: auths/s "
                            f"{cell(ratio(quiet, off, 'rate'))}, CPU/auth "
                            f"{cell(ratio(quiet, off, 'cpu'))}")
    return "\n".join(lines), "\n".join(ratio_lines), "\n".join(verdicts)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release")
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--connections", default="16,1000")
    parser.add_argument("--threads", default="2", help="authrate -t values, e.g. 1,2")
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--repeat", type=int, default=3, help="rounds")
    parser.add_argument("--rate", type=float, default=0,
                        help="authrate --rate: an open loop of this many auths/s in all (0, the "
                             "default: closed loop). Below what the servers can serve, every "
                             "point does the same work and CPU per auth is compared at equal "
                             "load, without the saturated cores' noise")
    parser.add_argument("--servers", default="floor,slapd,percpu-off,percpu-on")
    parser.add_argument("--slapd-extra", default="", help="global slapd.conf lines, ';'-separated")
    parser.add_argument("--slapd-loglevel", default="0")
    parser.add_argument("--results", default="",
                        help="also write the tables between the metrics markers of this file "
                        "(e.g. perf/RESULTS.md)")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    connections = [int(c) for c in args.connections.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    loads = [(c, t) for c in connections for t in threads]
    names = args.servers.split(",")
    for name in names:
        if name not in ("floor", "slapd", "percpu-off", "percpu-on", "percpu-unscraped"):
            raise SystemExit(f"metrics_bench: unknown server {name!r}")
    if "percpu-on" in names and not os.path.exists(PROMETHEUS):
        raise SystemExit(f"metrics_bench: {PROMETHEUS} is missing (apt-get install prometheus)")
    command = "perf/metrics_bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])

    work = tempfile.mkdtemp(prefix="numadir-metrics-bench-")
    servers = {}
    prometheus = None
    runs = {}
    scrapes = None
    try:
        ldif = bench.generate_users(work, args.users)
        print(f"metrics_bench: {args.users} users generated; starting {', '.join(names)}",
              flush=True)
        for name in names:
            if name == "floor":
                servers[name] = bench.start_floor(build)
            elif name == "slapd":
                servers[name] = bench.start_slapd(work, ldif, args)
            elif name == "percpu-off":
                servers[name] = bench.start_numadir(build, work, name, "percpu", ldif)
            elif name == "percpu-unscraped":
                # [metrics] on and nobody scraping: what the request path alone costs.
                servers[name] = bench.start_numadir(
                    build, work, name, "percpu", ldif,
                    extra=f'\n[metrics]\nlisten = "127.0.0.1:{free_port()}"\n')
            else:
                port = free_port()
                servers[name] = bench.start_numadir(
                    build, work, name, "percpu", ldif,
                    extra=f'\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
                wait_for_metrics(port)
                prometheus = Prometheus(work, f"127.0.0.1:{port}")
                prometheus.wait_up()
                print(f"metrics_bench: prometheus scrapes percpu-on on port {port} every second",
                      flush=True)
        keys = [(name, c, t) for c, t in loads for name in names]
        if prometheus is not None:
            prometheus.started = time.time()  # The scrape report covers the rounds only.
        for round_index in range(args.repeat):
            order = keys if round_index % 2 == 0 else list(reversed(keys))
            for name, c, t in order:
                run_args = argparse.Namespace(users=args.users, authrate_threads=t,
                                              duration=args.duration, warmup=args.warmup)
                extra = ["--seed", str(round_index + 1)]
                if args.rate > 0:
                    extra += ["--rate", f"{args.rate:g}"]
                summary = bench.run_authrate(build, servers[name], c, run_args, extra=extra)
                runs.setdefault((name, c, t), []).append(summary)
                print(f"metrics_bench: round {round_index + 1}/{args.repeat} {c:>5} conns "
                      f"-t {t} {name:>10}: {summary['auths_per_sec']:.0f} auths/s, p99 "
                      f"{summary['latency_ms']['p99']:.3f} ms, cpu "
                      f"{summary.get('server_cpu_us_per_auth') or 0:.1f} us/auth, errors "
                      f"{summary['errors']['total']}", flush=True)
        if prometheus is not None:
            scrapes = prometheus.scrape_report()
    finally:
        if prometheus is not None:
            prometheus.stop()
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    points = {key: point_summary(summaries) for key, summaries in runs.items()}
    table, ratio_table, verdicts = tables(points, names, loads)
    info = bench.machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    errors = sum(p["errors"] for p in points.values())
    if scrapes is None:
        scraped = "Prometheus did not run (percpu-on was not measured)."
    else:
        ok, window, slowest = scrapes
        scraped = (f"Prometheus scraped percpu-on successfully {ok} times in {window} s "
                   f"({ok / window:.2f}/s; goal about 1/s), the slowest scrape "
                   f"{slowest:.1f} ms.")
    loop = (f"in an open loop of {args.rate:g} auths/s (--rate)" if args.rate > 0
            else "in a closed loop")
    section = f"""{BEGIN}
### Metrics endpoint on vs off: {now}

Command: `{command}` — {args.users} users ({{SSHA}} passwords), perf/bench.py's indexes and
access rules; numadir percpu with no [metrics] (`percpu-off`) and with [metrics] on a loopback
port scraped every second by Debian's prometheus (`percpu-on`, scrape_interval 1s,
scrape_timeout 900ms, running through every point); authrate {loop}, {args.duration:g} s measured
after {args.warmup:g} s warm-up, {args.repeat} rounds interleaved (odd rounds reversed),
medians shown. Machine: {info['nproc']} CPUs, {info['cpu']}, Linux {info['kernel']};
{info['slapd']}. Load generator, servers and Prometheus share the machine's CPUs.
{scraped} Errors over all runs: {errors}.

{table}

Ratios (medians):

{ratio_table}

{verdicts}
{END}"""
    if args.results:
        bench.write_section(args.results, BEGIN, END, HEADING, section)
    print(section)
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
