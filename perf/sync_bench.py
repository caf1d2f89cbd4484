#!/usr/bin/python3
"""The provider benchmark: numadir as an RFC 4533 provider (`[replication.provider]`) against
OpenLDAP slapd with syncprov, serving the same consumers, in one run, rounds interleaved,
medians reported. No test asserts these figures.

  perf/sync_bench.py [--build-dir build/release] [--users 100000] [--rounds 3]
                     [--duration 10] [--warmup 2] [--connections 64] [--threads 2]
                     [--mod-rate 500] [--consumers numadir,slapd,numadir,slapd]
                     [--mod-connections 16] [--refresh-rounds N] [--durability sync]
                     [--quick] [--results FILE]

The providers, both loaded with perf/gen_users.py's users ({SSHA} passwords), both running for
the whole run (the one not measured is idle):
- numadir: `numadir serve` (perf/bench.py's [database], durability per --durability,
  database.server_id = 1, percpu) with `[replication.provider] enabled = true`, `sessionlog =
  --sessionlog`, imported with `numadir import`;
- slapd: Debian's /usr/sbin/slapd, back-mdb, `overlay syncprov`, `syncprov-checkpoint 100 1`,
  `syncprov-sessionlog --sessionlog`, indexes objectClass, uid, entryUUID, entryCSN eq,
  perf/bench.py's access rules, loaded with slapadd (dbnosync with --durability nosync).
The consumers (perf/replication_bench.py's): the numadir replica ([[replication.consumer]]
refreshAndPersist, retry "1 +", bound as the provider's rootdn) and the slapd consumer
(`syncrepl ... type=refreshAndPersist attrs="*,+"`), each from an empty database; and
`ldapsearch` (PersistSearch), Debian's ldapsearch -E '!sync=rp' asking what a replica asks and
keeping nothing: the provider's cost of a persistent consumer without the consumer's applying
on the same CPUs (no initial-refresh or lag points: it serves no searches).

1. Initial refresh: each round, for each provider and each consumer kind (orders reversed on
   odd rounds), a fresh consumer is started alone and timed from its process's start until it
   serves the LDIF's last entry and the provider's contextCSN and a subtree count equals the
   provider's (replication_bench.py's measure_refresh: base searches every 5 ms, then a count).
   entries/s = entries /
   that time; CPU seconds of the consumer (its whole life) and of the provider (the window).
2. Auths/s under writes: authrate (search + bind, --connections, --threads, --server-pid the
   provider) against the provider while --mod-rate modifications/s are written to it
   (replication_bench.py's Modifier: open loop, `replace: description`), in three points per
   provider: `none` (no consumer attached: the consumers stopped), `attached` (the
   --consumers consumers running refreshAndPersist, each caught up with a sentinel write
   first) and `lag` (attached, and one write in --sample-every watched on the first numadir
   and the first slapd consumer: replication_bench.py's Watcher, a base search for the token
   every --poll-ms; replication lag = the consumer's matching answer - the provider's
   acknowledgment, an upper bound by one poll, p50 / p99). The watchers' polls take CPU from
   the same machine, so `none` and `attached`, which the auths/s ratios compare, run without.
3. Modifications/s acknowledged: `authrate --mode modify` (modify_bench.py's run: each of
   --mod-connections connections bound as the rootdn replaces `description` of random users,
   closed loop) against the provider with the consumers attached; then a sentinel is written
   and the time until every consumer holds it is the `drain` (how far behind the consumers
   fell).
Each round measures every point of both providers, providers in one order on even rounds and the
reverse on odd ones; authrate's --seed is the round's number.

Prints a Markdown section for perf/RESULTS.md (with --results FILE, also written between the
sync markers of FILE). --quick is a smoke run (2,000 users, 1 round of 3 s points, about 3
minutes): it checks that the benchmark works, not what it measures. The full run takes about
25 minutes, most of it the slapd consumers' durable refreshes of 100,000 entries (about 1,000
entries/s, an entry per commit; --refresh-rounds 1 or --durability nosync shorten it).
--providers slapd runs only slapd's side. Needs python3-ldap.
"""
import argparse
import datetime
import os
import queue
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (perf/bench.py: data, machine details, results sections)
import modify_bench  # noqa: E402  (authrate --mode modify)
import replication_bench as rb  # noqa: E402  (servers, consumers, modifier, watchers)
from replication_bench import fmt, goal, median_or_none, ratio  # noqa: E402

BEGIN = "<!-- sync:begin -->"
END = "<!-- sync:end -->"
HEADING = ("Replication provider: numadir against slapd + syncprov serving the same consumers "
           "(perf/sync_bench.py)")
QUICK = {"users": 2000, "duration": 3.0, "warmup": 1.0, "rounds": 1}
DEFAULTS = {"users": 100_000, "duration": 10.0, "warmup": 2.0, "rounds": 3}
PROVIDERS = ("numadir", "slapd")
CONSUMER_KINDS = ("numadir", "slapd")  # The servers: refreshed, watched for lag.
PERSIST_SEARCH = "ldapsearch"  # A consumer that keeps nothing (PersistSearch).
CONSUMER_NAMES = {"numadir": "numadir replica", "slapd": "slapd consumer",
                  PERSIST_SEARCH: "ldapsearch -E sync=rp"}
PROVIDER_NAMES = {"numadir": "numadir provider", "slapd": "slapd + syncprov"}
SYNC_TIMEOUT_S = 600.0
SENTINEL_PADDING = 16384  # Bytes: more than ldapsearch's stdout buffer.


class NumadirProvider(rb.NumadirReplica):
    """numadir serve with [replication.provider] enabled, `ldif` imported into `folder`/db.
    start() and stop() as the replica's (NumadirReplica.start reads its listening line)."""

    def __init__(self, build, name, folder, ldif, durability, sessionlog):
        rb.Process.__init__(self, name)
        self.build = build
        self.folder = folder
        os.makedirs(folder)
        self.config = rb.numadir_toml(build, folder, durability, f"""
[replication.provider]
enabled = true
sessionlog = {sessionlog}
""")
        with open(self.config) as stream:
            text = stream.read()
        durability_line = f'durability = "{durability}"\n'
        with open(self.config, "w") as stream:
            stream.write(text.replace(durability_line, durability_line + "server_id = 1\n", 1))
        imported = subprocess.run([f"{build}/server/numadir", "import", "-c", self.config,
                                   "--no-progress", ldif], capture_output=True, text=True)
        if imported.returncode != 0:
            raise RuntimeError(f"numadir import for {name} failed: {imported.stderr[-2000:]}")


def slapd_provider(folder, ldif, durability, sessionlog):
    nosync = "dbnosync\n" if durability == "nosync" else ""
    return rb.Slapd("slapd-provider", folder, global_lines="moduleload syncprov\n",
                    database_lines=f"{nosync}overlay syncprov\nsyncprov-checkpoint 100 1\n"
                                   f"syncprov-sessionlog {sessionlog}\n", ldif=ldif)


class PersistSearch(rb.Process):
    """Debian's ldapsearch as a refreshAndPersist consumer that keeps nothing: `-E '!sync=rp'`
    as the rootdn for every user and operational attribute, as a replica asks, its LDIF
    written to a file in `folder` through ldapsearch's own buffer (a sentinel's padding value
    pushes the sentinel's token out of it).
    The provider does a consumer's whole work for it, and it takes little CPU of its own: what
    a provider's persistent searches cost, apart from what its consumers' applying costs."""

    def __init__(self, name, folder, provider):
        super().__init__(name)
        self.folder = folder
        self.provider = provider
        os.makedirs(folder)
        self.output = os.path.join(folder, "stream.ldif")
        self.read_to = 0
        self.tail = b""

    def start(self):
        """A new search with no cookie: its refresh sends every entry again."""
        self.started_at = time.monotonic()
        self.read_to, self.tail = 0, b""
        with open(self.output, "wb") as stream:
            self.process = subprocess.Popen(
                ["ldapsearch", "-x", "-LLL", "-o", "ldif-wrap=no", "-H",
                 self.provider.url, "-D", bench.ROOT_DN, "-w", "secret", "-b", bench.SUFFIX,
                 "-E", "!sync=rp", "*", "+"],
                stdout=stream, stderr=subprocess.PIPE)
        threading.Thread(target=self._read_stderr, args=(self.process.stderr,),
                         daemon=True).start()

    def holds(self, token):
        """Whether `token` has been printed since the search started (read on from where the
        last call stopped)."""
        with open(self.output, "rb") as stream:
            stream.seek(self.read_to)
            text = self.tail + stream.read()
        self.read_to += len(text) - len(self.tail)
        self.tail = text[-256:]
        return token.encode() in text


def new_consumer(build, work, kind, provider, label, rid, durability):
    """A consumer of `kind` ("numadir", "slapd" or PERSIST_SEARCH) of `provider`, from an empty
    database."""
    folder = os.path.join(work, label)
    if kind == PERSIST_SEARCH:
        return PersistSearch(label, folder, provider)
    if kind == "numadir":
        return rb.NumadirReplica(build, label, folder, provider, durability)
    os.makedirs(folder)
    syncrepl = (f'syncrepl rid={rid:03d} provider={provider.url} bindmethod=simple '
                f'binddn="{bench.ROOT_DN}" credentials=secret searchbase="{bench.SUFFIX}" '
                f'type=refreshAndPersist retry="1 +" attrs="*,+"\nupdateref {provider.url}\n')
    nosync = "dbnosync\n" if durability == "nosync" else ""
    return rb.Slapd(label, folder, database_lines=nosync + syncrepl)


def consumers_cpu(consumers):
    """The CPU seconds each consumer has used so far (None for one that is gone)."""
    return [rb.cpu_seconds(server.process.pid) if server.running() else None
            for server in consumers]


def cpu_shares(start, start_at, end, end_at):
    """Per consumer, the CPU seconds per second between two consumers_cpu() readings, and their
    sum (None if a consumer was gone at either reading, or there are none)."""
    each = [(e - b) / (end_at - start_at) if b is not None and e is not None else None
            for b, e in zip(start, end)]
    total = sum(each) if each and None not in each else None
    return total, each


class Fanout:
    """A Modifier's `samples`: each sample goes to every queue (one per watched consumer)."""

    def __init__(self, queues):
        self.queues = queues

    def put(self, item):
        for q in self.queues:
            q.put(item)


class Bench:
    def __init__(self, args, build, work):
        self.args = args
        self.build = build
        self.work = work
        self.providers = {}  # "numadir" / "slapd" -> the provider.
        self.consumers = {}  # provider name -> [its --consumers consumers], kept once made.
        self.sentinel = 0
        self.authrate_args = argparse.Namespace(users=args.users,
                                                authrate_threads=args.threads,
                                                duration=args.duration, warmup=args.warmup,
                                                client="authrate")

    def refresh_point(self, provider_name, kind, round_index, expected, last_dn):
        provider = self.providers[provider_name]
        server = new_consumer(self.build, self.work, kind, provider,
                              f"refresh-{provider_name}-{kind}-{round_index}", 2,
                              self.args.durability)
        try:
            return rb.measure_refresh(server, provider, expected, last_dn)
        finally:
            server.stop()
            shutil.rmtree(server.folder, ignore_errors=True)

    def stop_consumers(self, provider_name=None):
        for name, servers in self.consumers.items():
            if provider_name is None or name == provider_name:
                for server in servers:
                    server.stop()

    def attach(self, provider_name):
        """Only `provider_name`'s consumers run (made at the first call), every one holding
        a sentinel written on the provider just now. Returns the seconds that took."""
        for name in self.consumers:
            if name != provider_name:
                self.stop_consumers(name)
        provider = self.providers[provider_name]
        if provider_name not in self.consumers:
            self.consumers[provider_name] = [
                new_consumer(self.build, self.work, kind, provider,
                             f"{provider_name}-consumer{n}-{kind}", 10 + n, self.args.durability)
                for n, kind in enumerate(self.args.consumers)]
        t0 = time.monotonic()
        for server in self.consumers[provider_name]:
            if not server.running():
                server.start()
        self.sync(provider_name)
        return time.monotonic() - t0

    def sync(self, provider_name):
        """Writes a sentinel on the provider; waits until every running consumer of it holds
        it. Returns the seconds from the write."""
        provider = self.providers[provider_name]
        self.sentinel += 1
        token = f"sentinel-{self.sentinel}"
        conn = rb.connect(provider.url)
        # The padding after the token fills a PersistSearch's output buffer: the token is
        # written out once printed.
        conn.modify_s(rb.SENTINEL_DN, [(rb.ldap.MOD_REPLACE, "description",
                                        [token.encode(), b"p" * SENTINEL_PADDING])])
        conn.unbind_s()
        t0 = time.monotonic()
        for server in self.consumers.get(provider_name, []):
            if not server.running():
                continue
            if isinstance(server, PersistSearch):
                rb.wait_until(server, lambda: server.holds(token), t0, SYNC_TIMEOUT_S,
                              provider_name)
                continue
            conn = rb.connect(server.url, timeout_s=60)
            try:
                rb.wait_until(server, lambda: rb.has_value(conn, rb.SENTINEL_DN, "description",
                                                           token), t0, SYNC_TIMEOUT_S,
                              provider_name)
            finally:
                conn.unbind_s()
        return time.monotonic() - t0

    def auth_point(self, provider_name, attached, round_index, watch=False):
        """authrate against the provider under --mod-rate writes, its consumers attached or
        not; with `watch` (consumers attached), the lag of sampled writes on the first consumer
        of each kind. The watchers' polls cost CPU on the same machine, so the auths/s compared
        with and without consumers come from points without them."""
        provider = self.providers[provider_name]
        if attached:
            self.attach(provider_name)
        else:
            self.stop_consumers()
        watched = []
        if watch:
            for kind in CONSUMER_KINDS:
                server = next((s for s, k in zip(self.consumers[provider_name],
                                                 self.args.consumers) if k == kind), None)
                if server is not None:
                    watched.append((kind, server, queue.Queue()))
        modifier = rb.Modifier(provider, self.args.users, self.args.mod_rate,
                               self.args.modifier_threads, self.args.sample_every,
                               Fanout([q for _, _, q in watched]) if watched else None,
                               f"r{round_index}-{provider_name}-{int(attached)}{'w' if watch else ''}",
                               seed=round_index * 3 + int(attached) + int(watch))
        watchers = [(kind, rb.Watcher(server, q, self.args.watchers, self.args.poll_ms / 1000))
                    for kind, server, q in watched]
        consumers = self.consumers.get(provider_name, []) if attached else []
        cpu_at = {}  # consumers_cpu() readings at the measured window's start and end.
        modifier.start()
        try:
            time.sleep(1.0)
            measured_from = time.monotonic() + self.args.warmup
            # The consumers' CPU over the measured window: taken from the machine the provider runs on.
            timer = threading.Timer(self.args.warmup, lambda: cpu_at.update(
                start=(consumers_cpu(consumers), time.monotonic())))
            timer.start()
            summary = rb.run_authrate(self.build, provider, self.args.connections,
                                      self.authrate_args, extra=["--seed", str(round_index + 1)])
            measured_to = time.monotonic()
            timer.join()
            cpu_at["end"] = (consumers_cpu(consumers), measured_to)
        finally:
            modifier.stop()
            for _, watcher in watchers:
                watcher.finish()
        acks = [a for a in modifier.acks if measured_from <= a[0] <= measured_to]
        point = {"summary": summary, "mods_per_sec": len(acks) / (measured_to - measured_from),
                 "mod_errors": len(modifier.errors), "first_error": (modifier.errors + [""])[0],
                 "lag": {}}
        point["consumer_cpu"], point["consumer_cpu_each"] = cpu_shares(
            *cpu_at.get("start", ([], 0.0)), *cpu_at["end"])
        for kind, watcher in watchers:
            results = [r for r in watcher.results if measured_from <= r[0] <= measured_to]
            lags = [lag * 1000 for _, lag, _ in results if lag is not None]
            point["lag"][kind] = {"p50": rb.percentile(lags, 0.50),
                                  "p99": rb.percentile(lags, 0.99),
                                  "samples": len(results),
                                  "unseen": sum(1 for _, lag, _ in results if lag is None),
                                  "errors": len(watcher.errors)}
        return point

    def modify_point(self, provider_name):
        """authrate --mode modify against the provider, its consumers attached; then the time
        until every consumer holds a sentinel written after it."""
        provider = self.providers[provider_name]
        self.attach(provider_name)
        summary = modify_bench.run_modify(self.build, provider, self.args.mod_connections,
                                          self.authrate_args)
        return {"summary": summary, "drain": self.sync(provider_name)}


def summarize(results):
    """Medians per point over the rounds."""
    out = {}
    for key, points in results.items():
        s = [p["summary"] for p in points]
        entry = {"rounds": len(points)}
        if key[0] == "refresh":
            entry.update({"seconds": median_or_none([p["seconds"] for p in points]),
                          "cpu": median_or_none([p["cpu"] for p in points]),
                          "provider_cpu": median_or_none([p["provider_cpu"] for p in points])})
        elif key[0] in ("auth", "lag"):
            entry.update(bench.median_point(s))
            entry["mods_per_sec"] = median_or_none([p["mods_per_sec"] for p in points])
            entry["consumer_cpu"] = median_or_none([p["consumer_cpu"] for p in points
                                                    if p["consumer_cpu"] is not None])
            entry["mod_errors"] = sum(p["mod_errors"] for p in points)
            entry["lag"] = {}
            for kind in CONSUMER_KINDS:
                lags = [p["lag"][kind] for p in points if kind in p["lag"]]
                if lags:
                    entry["lag"][kind] = {
                        "p50": median_or_none([lag["p50"] for lag in lags]),
                        "p99": median_or_none([lag["p99"] for lag in lags]),
                        "samples": sum(lag["samples"] for lag in lags),
                        "unseen": sum(lag["unseen"] for lag in lags),
                        "errors": sum(lag["errors"] for lag in lags)}
        else:
            entry.update(bench.median_point(s, "modifications_per_sec",
                                            "server_cpu_us_per_modification"))
            entry["drain"] = median_or_none([p["drain"] for p in points])
        out[key] = entry
    return out


def tables(points, args, expected):
    lines = []
    if args.refresh_rounds:
        lines += [f"Initial refresh of {expected} entries (from the consumer's start until it "
                  "holds all of them):", "",
                  "| provider | consumer | seconds | entries/s | consumer CPU s | provider CPU s |",
                  "|---|---|---:|---:|---:|---:|"]
    for provider in args.providers:
        for kind in CONSUMER_KINDS:
            p = points.get(("refresh", provider, kind))
            if p:
                lines.append(f"| {PROVIDER_NAMES[provider]} | {CONSUMER_NAMES[kind]} | "
                             f"{fmt(p['seconds'], '.2f')} | "
                             f"{fmt(ratio(expected, p['seconds']), '.0f')} | "
                             f"{fmt(p['cpu'], '.2f')} | {fmt(p['provider_cpu'], '.2f')} |")
    ratio_lines = []
    for kind in CONSUMER_KINDS:
        n, s = points.get(("refresh", "numadir", kind)), points.get(("refresh", "slapd", kind))
        if n and s:
            r = ratio(s["seconds"], n["seconds"])
            ratio_lines.append(f"- entries/s to the {CONSUMER_NAMES[kind]}, numadir / slapd: "
                               f"{fmt(r, '.2f')}× (goal {goal(r, 2.0)})")
    if args.refresh_rounds:
        lines += [""] + ratio_lines + [""]
    if not args.rounds:
        return "\n".join(lines).rstrip("\n")
    lines += [
        f"Under {args.mod_rate:g} modifications/s on the provider, authrate against the "
        f"provider ({args.connections} connections); consumers attached: "
        f"{', '.join(args.consumers)} (refreshAndPersist):", "",
        "| provider | consumers | auths/s | p99 ms | provider CPU µs/auth | consumers' CPU s/s | "
        "mods/s acked | lag p50 / p99 ms, numadir replica | lag p50 / p99 ms, slapd consumer | "
        "errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def lag(p, kind):
        value = p["lag"].get(kind)
        if value is None:
            return "—"
        return (f"{fmt(value['p50'], '.2f')} / {fmt(value['p99'], '.2f')} "
                f"({value['samples']} samples, {value['unseen']} unseen)")
    for provider in args.providers:
        for key in (("auth", provider, False), ("auth", provider, True), ("lag", provider)):
            p = points.get(key)
            if p:
                attached = key[0] == "lag" or key[2]
                consumers = (f"{len(args.consumers)}" if attached else "0") + (
                    " + lag watchers" if key[0] == "lag" else "")
                lines.append(f"| {PROVIDER_NAMES[provider]} | "
                             f"{consumers} | {p['rate']:.0f} | "
                             f"{p['p99']:.2f} | {p['cpu']:.1f} | "
                             f"{fmt(p['consumer_cpu'], '.2f') if attached else '—'} | "
                             f"{fmt(p['mods_per_sec'], '.0f')} "
                             f"| {lag(p, 'numadir')} | {lag(p, 'slapd')} | "
                             f"{p['errors'] + p['mod_errors']} |")
    n0, n4 = points.get(("auth", "numadir", False)), points.get(("auth", "numadir", True))
    s4 = points.get(("auth", "slapd", True))
    lines.append("")
    if any(key[0] == "lag" for key in points):
        lines.append(f"The lag watchers ({args.watchers} python-ldap threads per watched "
                     f"consumer polling every {args.poll_ms:g} ms) take CPU from the same "
                     "machine: the auths/s compared come from the rows without them.")
        lines.append("")
    if n0 and n4:
        r = ratio(n4["rate"], n0["rate"])
        lines.append(f"- numadir's auths/s, consumers attached / none: {fmt(r, '.2f')}× "
                     f"(goal {goal(r, 0.9)})")
    if n4 and s4:
        r = ratio(n4["rate"], s4["rate"])
        lines.append(f"- auths/s with consumers attached, numadir / slapd: {fmt(r, '.2f')}× "
                     f"(goal {goal(r, 2.0)})")
    lines += ["", f"Modifications/s acknowledged (authrate --mode modify, "
              f"{args.mod_connections} connections, closed loop) with the consumers attached; "
              "drain: from a write made after the run until every consumer holds it:", "",
              "| provider | mods/s | p50 ms | p99 ms | provider CPU µs/mod | drain s | errors |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for provider in args.providers:
        p = points.get(("modify", provider))
        if p:
            lines.append(f"| {PROVIDER_NAMES[provider]} | {p['rate']:.0f} | {p['p50']:.2f} | "
                         f"{p['p99']:.2f} | {p['cpu']:.1f} | {fmt(p['drain'], '.2f')} | "
                         f"{p['errors']} |")
    n, s = points.get(("modify", "numadir")), points.get(("modify", "slapd"))
    if n and s:
        r = ratio(n["rate"], s["rate"])
        lines += ["", f"- mods/s with consumers attached, numadir / slapd: {fmt(r, '.2f')}× "
                  f"(goal {goal(r, 2.0)})"]
    return "\n".join(lines)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release",
                        help="the build whose numadir and authrate are used")
    parser.add_argument("--users", type=int, help=f"users (default {DEFAULTS['users']})")
    parser.add_argument("--rounds", type=int,
                        help=f"rounds, interleaved (default {DEFAULTS['rounds']})")
    parser.add_argument("--duration", type=float,
                        help=f"seconds measured per point (default {DEFAULTS['duration']:g})")
    parser.add_argument("--warmup", type=float,
                        help=f"seconds of warm-up per point (default {DEFAULTS['warmup']:g})")
    parser.add_argument("--connections", type=int, default=64, help="authrate -c (auths)")
    parser.add_argument("--threads", type=int, default=2, help="authrate -t")
    parser.add_argument("--mod-rate", type=float, default=500,
                        help="modifications/s on the provider during the auth points")
    parser.add_argument("--modifier-threads", type=int, default=4,
                        help="python-ldap connections the modifications are spread over")
    parser.add_argument("--mod-connections", type=int, default=16,
                        help="authrate --mode modify -c (the modifications/s point)")
    parser.add_argument("--consumers", default="numadir,slapd,numadir,slapd",
                        help="the consumers attached to each provider, by kind: numadir, "
                        f"slapd, {PERSIST_SEARCH} (a persistent search keeping nothing)")
    parser.add_argument("--providers", default="numadir,slapd",
                        help="the providers measured (numadir, slapd)")
    parser.add_argument("--sessionlog", type=int, default=10000,
                        help="both providers' session log (numadir sessionlog, "
                        "syncprov-sessionlog)")
    parser.add_argument("--sample-every", type=int, default=10,
                        help="one write in this many has its replication lag measured")
    parser.add_argument("--watchers", type=int, default=2,
                        help="threads polling each watched consumer for sampled writes")
    parser.add_argument("--poll-ms", type=float, default=0.5,
                        help="pause between a watcher's polls of one entry")
    parser.add_argument("--durability", default="sync", choices=["sync", "nosync"],
                        help="every server's commits (numadir database.durability; slapd "
                        "dbnosync for nosync)")
    parser.add_argument("--refresh-rounds", type=int,
                        help="rounds of the initial refresh (default --rounds; 0: none): a "
                        "slapd consumer's durable refresh of 100,000 entries takes minutes")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: " + ", ".join(f"{k} {v:g}" for k, v in QUICK.items()) +
                        " unless given")
    parser.add_argument("--results", default="",
                        help="a file whose sync section to write (e.g. perf/RESULTS.md; "
                        "default: print only)")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.refresh_rounds is None:
        args.refresh_rounds = args.rounds
    args.consumers = [c for c in args.consumers.split(",") if c]
    args.providers = [p for p in args.providers.split(",") if p]
    for name in args.providers:
        if name not in PROVIDERS:
            parser.error(f"--providers {name}: not numadir or slapd")
    for name in args.consumers:
        if name not in CONSUMER_NAMES:
            parser.error(f"--consumers {name}: not numadir, slapd or {PERSIST_SEARCH}")
    return args


def main():
    args = parse_args()
    if rb.ldap is None:
        raise SystemExit("sync_bench: needs python3-ldap (apt-get install python3-ldap)")
    build = os.path.abspath(args.build_dir)
    command = " ".join(["perf/sync_bench.py"] + [shlex.quote(a) for a in sys.argv[1:]])
    load_before = rb.load_average()
    started_at = time.monotonic()
    work = tempfile.mkdtemp(prefix="numadir-sync-bench-")
    b = Bench(args, build, work)
    results = {}
    try:
        ldif = bench.generate_users(work, args.users)
        expected, last_dn = rb.entries_and_last_dn(ldif)
        for name in args.providers:
            folder = os.path.join(work, f"{name}-provider")
            b.providers[name] = (NumadirProvider(build, "numadir-provider", folder, ldif,
                                                 args.durability, args.sessionlog)
                                 if name == "numadir" else
                                 slapd_provider(folder, ldif, args.durability, args.sessionlog))
            b.providers[name].start()
            print(f"sync_bench: {PROVIDER_NAMES[name]}: pid {b.providers[name].process.pid}, "
                  f"{b.providers[name].url}, {expected} entries", flush=True)

        def record(key, result, text):
            results.setdefault(key, []).append(result)
            print(f"sync_bench: round {round_index + 1}/{args.rounds} {text}", flush=True)

        for round_index in range(args.refresh_rounds):
            providers = args.providers if round_index % 2 == 0 else args.providers[::-1]
            kinds = CONSUMER_KINDS if round_index % 2 == 0 else CONSUMER_KINDS[::-1]
            for provider in providers:
                for kind in kinds:
                    r = b.refresh_point(provider, kind, round_index, expected, last_dn)
                    r["summary"] = None
                    record(("refresh", provider, kind), r,
                           f"refresh {PROVIDER_NAMES[provider]} -> {CONSUMER_NAMES[kind]}: "
                           f"{r['seconds']:.2f} s ({expected / r['seconds']:.0f} entries/s), "
                           f"consumer cpu {fmt(r['cpu'], '.2f')} s, provider cpu "
                           f"{fmt(r['provider_cpu'], '.2f')} s")
        watched_kinds = [kind for kind in CONSUMER_KINDS if kind in args.consumers]
        for round_index in range(args.rounds):
            providers = args.providers if round_index % 2 == 0 else args.providers[::-1]
            order = [False, True] + (["lag"] if watched_kinds else []) + ["modify"]
            order = order if round_index % 2 == 0 else order[::-1]
            for provider in providers:
                for point in order:
                    if point == "modify":
                        r = b.modify_point(provider)
                        s = r["summary"]
                        record(("modify", provider), r,
                               f"modify {PROVIDER_NAMES[provider]}: "
                               f"{s['modifications_per_sec']:.0f} mods/s, p99 "
                               f"{s['latency_ms']['p99']:.2f} ms, errors "
                               f"{s['errors']['total']}, drain {r['drain']:.2f} s")
                        continue
                    watch = point == "lag"
                    r = b.auth_point(provider, bool(point), round_index, watch=watch)
                    s = r["summary"]
                    lags = ", ".join(f"lag {k} p50 {fmt(v['p50'], '.2f')} p99 "
                                     f"{fmt(v['p99'], '.2f')} ms ({v['samples']} samples, "
                                     f"{v['unseen']} unseen)" for k, v in r["lag"].items())
                    record(("lag", provider) if watch else ("auth", provider, point), r,
                           f"auths {PROVIDER_NAMES[provider]}, consumers "
                           f"{len(args.consumers) if point else 0}"
                           f"{' + lag watchers' if watch else ''}: "
                           f"{s['auths_per_sec']:.0f} auths/s, cpu "
                           f"{s.get('server_cpu_us_per_auth') or 0:.1f} us/auth, errors "
                           f"{s['errors']['total']}; consumers' cpu "
                           f"{fmt(r['consumer_cpu'], '.2f')} s/s ("
                           + ", ".join(f"{k} {fmt(c, '.3f')}" for k, c in
                                       zip(args.consumers, r["consumer_cpu_each"])) +
                           f"); {r['mods_per_sec']:.0f} mods/s "
                           f"({r['mod_errors']} errors"
                           f"{', ' + r['first_error'] if r['mod_errors'] else ''})"
                           f"{'; ' + lags if lags else ''}")
    finally:
        b.stop_consumers()
        for provider in b.providers.values():
            provider.stop()
        shutil.rmtree(work, ignore_errors=True)

    points = summarize(results)
    load_after = rb.load_average()
    info = bench.machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    durable = ("every server durable (numadir durability \"sync\", back-mdb's synced default)"
               if args.durability == "sync" else
               "every server unsynced (numadir durability \"nosync\", slapd dbnosync)")
    kinds = {"numadir": "numadir replicas (from an empty database)",
             "slapd": "slapd consumers (from an empty database)",
             PERSIST_SEARCH: f"{CONSUMER_NAMES[PERSIST_SEARCH]} (keeping nothing)"}
    consumer_kinds = ", ".join(kinds[kind] for kind in kinds if kind in args.consumers)
    setup = (
        f"Command: `{command}` — {args.users} users ({expected} entries, {{SSHA}} passwords) on "
        "each provider: numadir (server_id 1, [replication.provider] enabled, sessionlog "
        f"{args.sessionlog}, percpu) and slapd (back-mdb, overlay syncprov, "
        f"syncprov-sessionlog {args.sessionlog}, indexes objectClass, uid, entryUUID, entryCSN "
        "eq, perf/bench.py's access rules); consumers refreshAndPersist as the provider's "
        f"rootdn asking for attrs \"*,+\": {consumer_kinds}; "
        f"{durable}. {args.refresh_rounds} refresh round(s) and {args.rounds} load round(s) "
        f"interleaved, medians; authrate {args.threads} "
        f"thread(s), {args.duration:g} s measured after {args.warmup:g} s warm-up; the "
        f"{args.mod_rate:g} mods/s written by {args.modifier_threads} python-ldap connections "
        f"(open loop, replace: description); lag: 1 write in {args.sample_every} polled on the "
        f"consumer every {args.poll_ms:g} ms by {args.watchers} threads, matching answer - "
        f"provider's acknowledgment. Date {now}; nproc {os.cpu_count()}, {info['cpu']}, Linux "
        f"{info['kernel']}; {info['slapd']}. Providers, consumers, authrate and the python "
        f"writers share the machine's CPUs. Load average {load_before} before, {load_after} "
        f"after; {time.monotonic() - started_at:.0f} s in all.")
    quick = ("\n\n**Smoke run (--quick): these figures check that the benchmark works; they "
             "measure nothing.**" if args.quick else "")
    noisy = ""
    if float(load_before.split()[0]) > 1.5:
        noisy = (f"\n\n**Noisy: the load average was {load_before} before the run (other work "
                 "on the machine); read the ratios with care.**")
    short = [f"{PROVIDER_NAMES[k[1]]} with "
             f"{len(args.consumers) if k[0] == 'lag' or k[2] else 0} consumers "
             f"({p['mods_per_sec']:.0f})" for k, p in points.items()
             if k[0] in ("auth", "lag") and (p["mods_per_sec"] or 0) < 0.95 * args.mod_rate]
    if short:
        noisy += (f"\n\n**The provider acknowledged fewer than 95% of the {args.mod_rate:g} "
                  f"mods/s asked for in: {', '.join(short)} (more --modifier-threads, or "
                  "--durability nosync, if the provider's synced commits bound them).**")
    section = (f"{BEGIN}\n### Replication provider: {now}\n\n" +
               textwrap.fill(setup, 100, break_long_words=False, break_on_hyphens=False) +
               quick + noisy + "\n\n" + tables(points, args, expected) + f"\n{END}")
    if args.results:
        bench.write_section(args.results, BEGIN, END, HEADING, section)
    print(section)
    errors = sum(p.get("errors", 0) + p.get("mod_errors", 0) +
                 sum(v["unseen"] + v["errors"] for v in p.get("lag", {}).values())
                 for p in points.values())
    if errors:
        print("sync_bench: errors or unseen changes: see above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
