#!/usr/bin/python3
"""The replication benchmark: numadir as a read replica of an OpenLDAP slapd provider (RFC 4533
syncrepl, refreshAndPersist) beside a slapd consumer of the same provider, in one run, rounds
interleaved, medians reported.

  perf/replication_bench.py [--build-dir build/release] [--users 100000] [--rounds 3]
                            [--duration 10] [--warmup 2] [--connections 64] [--threads 2]
                            [--mod-rate 500] [--sample-every 10] [--durability sync]
                            [--quick] [--results FILE]

The provider: Debian's /usr/sbin/slapd, back-mdb, `overlay syncprov` (`syncprov-checkpoint 100
1`), indexes objectClass, uid, entryUUID and entryCSN eq, perf/bench.py's access rules, loaded
with slapadd from perf/gen_users.py's users ({SSHA} passwords). The consumers, each starting
from an empty database:
- numadir replica: `numadir serve` with a [[replication.consumer]] (rid 1, refreshAndPersist,
  retry "1 +", bound as the provider's rootdn; attrs the default "*", "+"), indexes objectClass
  eq and uid eq (the entryUUID eq index comes with the consumer);
- slapd consumer: slapd back-mdb with `syncrepl rid=002 ... type=refreshAndPersist retry="1 +"
  attrs="*,+"` and `updateref`, indexes objectClass, uid, entryUUID and entryCSN eq, the same
  access rules.
Both commit durably by default (numadir durability "sync", back-mdb's default); --durability
nosync makes both unsynced (numadir "nosync", slapd `dbnosync`).

1. Initial refresh. Each round starts a fresh numadir replica and a fresh slapd consumer (one
   at a time) and times, from the process's start, until the replica serves every entry of the
   provider: the provider's last entry (its refresh sends entries in id order, slapadd's LDIF
   order, and both consumers apply them in order) is polled with a base search every 5 ms;
   once found, a subtree count (as the rootdn) must equal the provider's (else the count is
   polled until it does, and the time is that count's start). Beside them, `numadir import -c
   numadir.toml --no-progress` of the same generated LDIF into an empty database (the replica's
   indexes, entryUUID eq included), timed as a whole, and of the provider's slapcat output (the
   same entries with the operational attributes the consumers store). Server CPU seconds:
   utime + stime from /proc/PID/stat when the refresh is seen complete (the process's whole life,
   startup included); the provider's over the same window; import's from getrusage. The
   numadir replica's "persisting" line on standard error is timed too.
2. Replication lag and 3. auths/s while applying. The last round's consumers are kept. Points,
   each with only its consumer running (the other is stopped with SIGTERM and restarted, from its
   own database and cookie, when its turn comes; before every point a sentinel written on the
   provider must be visible on the consumer), authrate (search + bind, --connections
   connections, --threads threads, --server-pid the consumer) driving the consumer under one of
   three loads:
   - `idle`: nothing else;
   - `applying`: --mod-rate modifications/s on the provider (--modifier-threads python-ldap
     connections bound as the rootdn, open loop on a fixed schedule, each replacing
     `description` of a user with a unique token, users in a shuffled cycle so that a user is
     modified again only after every other one; the time of the provider's answer is its
     acknowledgment); one write in --sample-every is watched: --watchers threads poll that
     entry on the consumer with a base search for (description=TOKEN) (attributes 1.1) every
     --poll-ms until it matches; lag = the time the matching answer arrived - the
     acknowledgment (an upper bound, by one poll). A sample whose first poll started more than
     2 ms after its acknowledgment and matched at once is counted `late` (the watchers were
     behind: its lag is an over-estimate);
   - `background`: the same writes to a second database of the provider (dc=other,dc=com,
     the same users, syncprov too) that no consumer replicates, no watchers: the machine
     carries the provider's and the modifier's work and the consumer has nothing to apply,
     which separates what applying costs from what sharing the CPUs with the writers costs.
   The modifier starts 1 s before authrate and stops after it; mods/s and lag samples count
   what was acknowledged while authrate measured. A round measures every point once, in one
   order on even rounds and the reverse on odd ones; authrate's --seed is the round's number.
   The lowest 1 s interval of authrate's rate is shown too (a stall shows there).

Prints a Markdown section ready for perf/RESULTS.md (with --results FILE, also written between
the replication markers of FILE), with the command line, date, nproc, CPU model and the load
average before and after. --quick is a smoke run (1,000 users, 1 round of 3 s points): it
checks that the benchmark works, not what it measures. Needs python3-ldap.
"""
import argparse
import datetime
import json
import math
import os
import queue
import random
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (perf/bench.py: data, authrate runs, machine details)

try:
    import ldap  # python3-ldap
    import ldap.filter
except ImportError:
    ldap = None

BEGIN = "<!-- replication:begin -->"
END = "<!-- replication:end -->"
HEADING = ("Replication: numadir as a syncrepl consumer of slapd, against a slapd consumer "
           "(perf/replication_bench.py)")

QUICK = {"users": 1000, "duration": 3.0, "warmup": 1.0, "rounds": 1}
DEFAULTS = {"users": 100_000, "duration": 10.0, "warmup": 2.0, "rounds": 3}

SCHEMA = "".join(f"include /etc/ldap/schema/{name}.schema\n"
                 for name in ("core", "cosine", "inetorgperson", "nis"))
SLAPD_INDEXES = "".join(f"index {a} eq\n" for a in ("objectClass", "uid", "entryUUID",
                                                     "entryCSN"))
NUMADIR_RID = 1
SLAPD_RID = 2
# The provider's second database, which no consumer replicates: the writes of the `background`
# points go there.
OTHER_SUFFIX = "dc=other,dc=com"
OTHER_PEOPLE = f"ou=people,{OTHER_SUFFIX}"
OTHER_ROOT_DN = f"cn=admin,{OTHER_SUFFIX}"
SENTINEL_DN = bench.PEOPLE  # organizationalUnit: its description carries the sentinel tokens.
REFRESH_POLL_S = 0.005
LATE_START_S = 0.002
SEND_LATE_S = 0.010  # A write sent this long after its due time counts as late.
SAMPLE_TIMEOUT_S = 30.0
CATCH_UP_TIMEOUT_S = 600.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of process `pid` from /proc/PID/stat, in seconds; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stream:
            fields = stream.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # Fields 14 and 15 of stat.


def load_average():
    with open("/proc/loadavg") as stream:
        return " ".join(stream.read().split()[:3])


def connect(url, timeout_s=10.0, bind_dn=bench.ROOT_DN):
    """A python-ldap connection bound as `bind_dn` (a rootdn, password "secret"), retried until
    `timeout_s` (a server that is just starting)."""
    deadline = time.monotonic() + timeout_s
    while True:
        conn = ldap.initialize(url, bytes_mode=False)
        conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 5)
        conn.set_option(ldap.OPT_TIMEOUT, 60)
        conn.set_option(ldap.OPT_REFERRALS, 0)
        try:
            conn.simple_bind_s(bind_dn, "secret")
            return conn
        except ldap.LDAPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def has_value(conn, dn, attribute, value):
    """Whether entry `dn` exists (`attribute` None) or holds `attribute`=`value`; a base search
    asking for no attributes."""
    filter_text = ("(objectClass=*)" if attribute is None else
                   f"({attribute}={ldap.filter.escape_filter_chars(value)})")
    try:
        return bool(conn.search_ext_s(dn, ldap.SCOPE_BASE, filter_text, ["1.1"]))
    except (ldap.NO_SUCH_OBJECT, ldap.REFERRAL):
        return False  # A consumer that has not received the entry, or its suffix, yet.


def context_csns(conn):
    """The suffix entry's contextCSN values (a set; empty before the suffix exists)."""
    try:
        found = conn.search_ext_s(bench.SUFFIX, ldap.SCOPE_BASE, "(objectClass=*)",
                                  ["contextCSN"])
    except (ldap.NO_SUCH_OBJECT, ldap.REFERRAL):
        return set()
    return {value.decode() for _, attrs in found for value in attrs.get("contextCSN", [])}


def count_entries(conn):
    """Every entry under the suffix, as the rootdn (no size limit)."""
    return len(conn.search_ext_s(bench.SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"]))


class Process:
    """A server process with the fields bench.run_authrate reads (name, process, port), its
    standard error read by a thread with each line's monotonic time."""

    def __init__(self, name):
        self.name = name
        self.process = None
        self.port = None
        self.started_at = None
        self.lines = []  # (monotonic time, line) of standard error.
        self.lines_lock = threading.Lock()

    def _read_stderr(self, stream):
        for raw in stream:
            line = raw.decode(errors="replace").rstrip("\n")
            with self.lines_lock:
                self.lines.append((time.monotonic(), line))

    def first_line(self, pattern, since=0.0):
        with self.lines_lock:
            for at, line in self.lines:
                if at >= since and re.search(pattern, line):
                    return at
        return None

    def stderr_tail(self, lines=20):
        with self.lines_lock:
            return "\n".join(line for _, line in self.lines[-lines:])

    def running(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        if self.running():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    @property
    def url(self):
        return f"ldap://127.0.0.1:{self.port}"


class Slapd(Process):
    """slapd (back-mdb, loglevel 0) in `folder`, on one port for its whole life (restarts reuse
    it). `ldif`: loaded with slapadd first; None: an empty database (a consumer)."""

    def __init__(self, name, folder, global_lines="", database_lines="", ldif=None,
                 other=None):
        """`other`: (LDIF) of a second database, OTHER_SUFFIX, with `database_lines` too."""
        super().__init__(name)
        self.folder = folder
        db = os.path.join(folder, "db")
        os.makedirs(db)
        root_pw = subprocess.run(["/usr/sbin/slappasswd", "-s", "secret"], capture_output=True,
                                 text=True, check=True).stdout.strip()
        self.config = os.path.join(folder, "slapd.conf")
        with open(self.config, "w") as stream:
            stream.write(f"""{SCHEMA}
modulepath /usr/lib/ldap
moduleload back_mdb
{global_lines}pidfile {folder}/slapd.pid
argsfile {folder}/slapd.args
loglevel 0

database mdb
maxsize 8589934592
suffix "{bench.SUFFIX}"
rootdn "{bench.ROOT_DN}"
rootpw {root_pw}
directory {db}
{SLAPD_INDEXES}{bench.SLAPD_ACCESS}
{database_lines}""")
            if other is not None:
                other_db = os.path.join(folder, "other-db")
                os.makedirs(other_db)
                stream.write(f"""
database mdb
maxsize 8589934592
suffix "{OTHER_SUFFIX}"
rootdn "{OTHER_ROOT_DN}"
rootpw {root_pw}
directory {other_db}
{SLAPD_INDEXES}{bench.SLAPD_ACCESS}
{database_lines}""")
        if other is not None:
            added = subprocess.run(["/usr/sbin/slapadd", "-q", "-f", self.config, "-b",
                                    OTHER_SUFFIX, "-l", other], capture_output=True, text=True)
            if added.returncode != 0:
                raise RuntimeError(f"slapadd of {OTHER_SUFFIX} failed: {added.stderr[-2000:]}")
        if ldif is not None:
            added = subprocess.run(["/usr/sbin/slapadd", "-q", "-f", self.config, "-l", ldif],
                                   capture_output=True, text=True)
            if added.returncode != 0:
                raise RuntimeError(f"slapadd for {name} failed: {added.stderr[-2000:]}")
        self.port = bench.free_port()

    def start(self):
        self.started_at = time.monotonic()
        self.process = subprocess.Popen(["/usr/sbin/slapd", "-h", f"{self.url}/", "-f",
                                         self.config, "-d", "0"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        threading.Thread(target=self._read_stderr, args=(self.process.stderr,),
                         daemon=True).start()
        try:
            bench.wait_for_port(self.port, self.process)
        except RuntimeError:
            raise RuntimeError(f"{self.name} did not start: {self.stderr_tail()}")

    def slapcat(self, path):
        subprocess.run(["/usr/sbin/slapcat", "-f", self.config, "-l", path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def numadir_toml(build, folder, durability, consumer=""):
    """numadir.toml in `folder` (its database in `folder`/db): bench.py's [database] with
    `durability`, the rootdn, percpu; `consumer`: a [[replication.consumer]] table."""
    root_pw = bench.root_password(build)
    config = os.path.join(folder, "numadir.toml")
    with open(config, "w") as stream:
        stream.write(f"""{bench.DATABASE_TOML}durability = "{durability}"

[server]
listen = ["ldap://127.0.0.1:0"]
rootdn = "{bench.ROOT_DN}"
rootpw = "{root_pw}"

[threads]
dispatcher = "percpu"

[passwords]
allow_cleartext = false
{consumer}""")
    os.chmod(config, 0o600)
    return config


class NumadirReplica(Process):
    """numadir serve with a [[replication.consumer]] of `provider`, from an empty database in
    `folder` (restarts keep it, and so its cookie)."""

    def __init__(self, build, name, folder, provider, durability):
        super().__init__(name)
        self.build = build
        self.folder = folder
        os.makedirs(folder)
        password = os.path.join(folder, "replicator.pw")
        with open(password, "w") as stream:
            stream.write("secret\n")
        os.chmod(password, 0o600)
        self.config = numadir_toml(build, folder, durability, f"""
[[replication.consumer]]
rid = {NUMADIR_RID}
provider = "{provider.url}"
searchbase = "{bench.SUFFIX}"
type = "refreshAndPersist"
binddn = "{bench.ROOT_DN}"
credentials_file = "{password}"
retry = "1 +"
""")

    def start(self):
        self.started_at = time.monotonic()
        self.process = subprocess.Popen([f"{self.build}/server/numadir", "serve", "-c",
                                         self.config],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=False)
        threading.Thread(target=self._read_stderr, args=(self.process.stderr,),
                         daemon=True).start()
        deadline = time.monotonic() + 60
        while True:
            raw = self.process.stdout.readline()
            if not raw:
                self.process.wait()
                raise RuntimeError(f"{self.name} exited with {self.process.returncode} before "
                                   f"listening: {self.stderr_tail()}")
            match = re.search(rb"listening on ldap://127\.0\.0\.1:(\d+)", raw)
            if match:
                self.port = int(match.group(1))
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not listen within 60 s")
        threading.Thread(target=lambda: [None for _ in self.process.stdout],
                         daemon=True).start()


def run_authrate(build, server, connections, args, extra=()):
    """bench.run_authrate, and the lowest auths/s of its 1 s interval lines once measuring
    (a stall shows there) as the summary's "lowest_interval"."""
    command = [f"{build}/perf/authrate", "-H", server.url, "-b", bench.PEOPLE, "--first", "0",
               "--last", str(args.users - 1), "-c", str(connections), "-t",
               str(args.authrate_threads), "-d", str(args.duration), "--warmup", str(args.warmup),
               "--server-pid", str(server.process.pid), "--json"] + list(extra)
    result = subprocess.run(command, capture_output=True, text=True,
                            timeout=args.duration * 4 + 120)
    if result.returncode != 0:
        raise RuntimeError(f"authrate against {server.name} failed: {result.stderr[-2000:]}")
    summary = json.loads(result.stdout)
    rates = []
    for line in result.stderr.splitlines():
        match = re.match(r"\s*([\d.]+) s\s+auths/s (\d+)", line)
        if match and float(match.group(1)) > args.warmup + 0.5:
            rates.append(int(match.group(2)))
    summary["lowest_interval"] = min(rates) if rates else None
    return summary


def entries_and_last_dn(ldif):
    count, last = 0, None
    with open(ldif) as stream:
        for line in stream:
            if line.startswith("dn: "):
                count += 1
                last = line[4:].strip()
    return count, last


def measure_refresh(server, provider, expected, last_dn):
    """Starts `server` (a consumer with an empty database) and waits until it serves all
    `expected` entries: until it holds `last_dn` (the LDIF's last entry) and the provider's
    contextCSN, polled with base searches (cheap for the consumer), then until a subtree count
    equals `expected`. A provider that sends the LDIF's last entry early (numadir sends in DN
    order: the groups before the people) must not turn the wait into counts of the whole
    directory that slow the consumer down: the contextCSN, which a consumer takes up only at
    the end of the refresh, says when counting is worth it.
    Returns {"seconds", "cpu", "provider_cpu", "persisting"}."""
    provider_conn = connect(provider.url)
    try:
        target_csns = context_csns(provider_conn)
    finally:
        provider_conn.unbind_s()
    provider_cpu = cpu_seconds(provider.process.pid)
    server.start()
    t0 = server.started_at
    conn = connect(server.url, timeout_s=60)
    deadline = t0 + CATCH_UP_TIMEOUT_S
    try:
        while not (has_value(conn, last_dn, None, None) and
                   target_csns <= context_csns(conn)):
            if not server.running():
                raise RuntimeError(f"{server.name} exited during its refresh: "
                                   f"{server.stderr_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{server.name}: {last_dn} not replicated after "
                                   f"{CATCH_UP_TIMEOUT_S:.0f} s: {server.stderr_tail()}")
            time.sleep(REFRESH_POLL_S)
        done = time.monotonic()
        cpu = cpu_seconds(server.process.pid)
        provider_cpu = cpu_seconds(provider.process.pid) - provider_cpu
        pause = REFRESH_POLL_S
        while True:
            counted = count_entries(conn)
            if counted == expected:
                break
            if counted > expected or time.monotonic() > deadline:
                raise RuntimeError(f"{server.name}: {counted} entries after its refresh, the "
                                   f"provider has {expected}: {server.stderr_tail()}")
            # The last entry came before others: the time is that of a complete count. The
            # pause between counts doubles (up to 0.2 s), so that counting costs the consumer
            # little beside its refresh.
            time.sleep(pause)
            pause = min(0.2, pause * 2)
            done = time.monotonic()
            cpu = cpu_seconds(server.process.pid)
    finally:
        conn.unbind_s()
    persisting = server.first_line(r": persisting$", since=t0)
    with server.lines_lock:
        # What the consumer said besides its states (a failure and retry, a warning).
        remarks = [f"{at - t0:.2f} s: {line}" for at, line in server.lines
                   if at >= t0 and not re.search(r": (connecting|refreshing|persisting)$", line)
                   and "unindexed search" not in line]
    return {"seconds": done - t0, "cpu": cpu, "provider_cpu": provider_cpu,
            "persisting": None if persisting is None else persisting - t0, "remarks": remarks}


def measure_import(build, folder, durability, ldif):
    """`numadir import` of `ldif` into an empty database with the replica's indexes.
    Returns {"seconds", "cpu"}."""
    os.makedirs(folder)
    config = numadir_toml(build, folder, durability)
    with open(config) as stream:
        text = stream.read()
    with open(config, "w") as stream:
        stream.write(text.replace('indexes = ["objectClass eq", "uid eq"]',
                                  'indexes = ["objectClass eq", "uid eq", "entryUUID eq"]'))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    result = subprocess.run([f"{build}/server/numadir", "import", "-c", config, "--no-progress",
                             ldif], capture_output=True, text=True)
    seconds = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"numadir import of {ldif} failed: {result.stderr[-2000:]}")
    shutil.rmtree(folder, ignore_errors=True)
    return {"seconds": seconds, "cpu": (after.ru_utime - before.ru_utime) +
            (after.ru_stime - before.ru_stime), "provider_cpu": None, "persisting": None}


def wait_until(server, holds, t0, timeout_s, provider_name):
    """Polls `holds()` every 10 ms until it is true. Raises RuntimeError when `server` (a
    consumer) exits, or `timeout_s` after `t0` (monotonic), naming `provider_name`."""
    while not holds():
        if not server.running():
            raise RuntimeError(f"{server.name} exited: {server.stderr_tail()}")
        if time.monotonic() - t0 > timeout_s:
            raise RuntimeError(f"{server.name} did not catch up with {provider_name} in "
                               f"{timeout_s:.0f} s: {server.stderr_tail()}")
        time.sleep(0.01)


def percentile(values, fraction):
    """The nearest-rank percentile of `values` (None if empty)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


class Modifier:
    """--mod-rate modifications/s on the provider, open loop: `threads` connections, write k of
    the run due at start + k / rate (a late thread sends at once, catching up), each replacing
    `description` of the next user of a shuffled cycle with a unique token. Every
    `sample_every`-th write, once acknowledged, goes to `samples` as (dn, token, ack time)."""

    def __init__(self, provider, users, rate, threads, sample_every, samples, tag, seed,
                 people=bench.PEOPLE, bind_dn=bench.ROOT_DN):
        self.provider = provider
        self.people = people
        self.bind_dn = bind_dn
        self.rate = rate
        self.threads = threads
        self.sample_every = sample_every
        self.samples = samples
        self.tag = tag
        self.order = list(range(users))
        random.Random(seed).shuffle(self.order)
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.acks = []  # (ack time, provider latency s, send time - due time s)
        self.errors = []
        self.workers = []
        self.start_time = None
        self.stop_time = None

    def start(self):
        conns = [connect(self.provider.url, bind_dn=self.bind_dn)
                 for _ in range(self.threads)]
        self.start_time = time.monotonic() + 0.05
        for k, conn in enumerate(conns):
            thread = threading.Thread(target=self._run, args=(k, conn), daemon=True)
            thread.start()
            self.workers.append(thread)

    def _run(self, k, conn):
        i = k
        try:
            while not self.stop_event.is_set():
                due = self.start_time + i / self.rate
                wait = due - time.monotonic()
                if wait > 0:
                    if self.stop_event.wait(wait):
                        break
                dn = f"uid=user{self.order[i % len(self.order)]},{self.people}"
                token = f"{self.tag}-{i}"
                sent = time.monotonic()
                try:
                    conn.modify_s(dn, [(ldap.MOD_REPLACE, "description", [token.encode()])])
                except ldap.LDAPError as error:
                    with self.lock:
                        self.errors.append(repr(error))
                    i += self.threads
                    continue
                ack = time.monotonic()
                with self.lock:
                    self.acks.append((ack, ack - sent, sent - due))
                if self.samples is not None and i % self.sample_every == 0:
                    self.samples.put((dn, token, ack))
                i += self.threads
        finally:
            conn.unbind_s()

    def stop(self):
        self.stop_event.set()
        for thread in self.workers:
            thread.join()
        self.stop_time = time.monotonic()


class Watcher:
    """`threads` connections to the consumer, each taking samples (dn, token, ack) from
    `samples` and polling the entry with a base search for (description=token) every `poll_s`
    until it matches. Results: (ack, lag s or None if unseen, late)."""

    def __init__(self, consumer, samples, threads, poll_s):
        self.consumer = consumer
        self.samples = samples
        self.poll_s = poll_s
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.results = []
        self.errors = []
        self.workers = [threading.Thread(target=self._run, args=(connect(consumer.url),),
                                         daemon=True) for _ in range(threads)]
        for thread in self.workers:
            thread.start()

    def _run(self, conn):
        try:
            while True:
                try:
                    dn, token, ack = self.samples.get(timeout=0.1)
                except queue.Empty:
                    if self.done.is_set():
                        return
                    continue
                first = time.monotonic()
                polls = 0
                lag = None
                while True:
                    polls += 1
                    try:
                        found = has_value(conn, dn, "description", token)
                    except ldap.LDAPError as error:
                        with self.lock:
                            self.errors.append(repr(error))
                        break
                    now = time.monotonic()
                    if found:
                        lag = now - ack
                        break
                    if now - ack > SAMPLE_TIMEOUT_S:
                        break
                    time.sleep(self.poll_s)
                late = polls == 1 and lag is not None and first - ack > LATE_START_S
                with self.lock:
                    self.results.append((ack, lag, late))
        finally:
            conn.unbind_s()

    def finish(self):
        """Waits until every queued sample is resolved."""
        self.done.set()
        for thread in self.workers:
            thread.join()


class Bench:
    def __init__(self, args, build, work):
        self.args = args
        self.build = build
        self.work = work
        self.provider = None
        self.consumers = {}  # "numadir" / "slapd" -> the server kept for the load points.
        self.sentinel = 0
        self.catch_ups = []  # (consumer, seconds) of each switch.

    def new_consumer(self, name, label):
        folder = os.path.join(self.work, label)
        if name == "numadir":
            return NumadirReplica(self.build, label, folder, self.provider, self.args.durability)
        os.makedirs(folder)
        syncrepl_lines = (f'syncrepl rid={SLAPD_RID:03d} provider={self.provider.url} '
                         f'bindmethod=simple binddn="{bench.ROOT_DN}" credentials=secret '
                         f'searchbase="{bench.SUFFIX}" type=refreshAndPersist retry="1 +" '
                         f'attrs="*,+"\nupdateref {self.provider.url}\n')
        nosync = "dbnosync\n" if self.args.durability == "nosync" else ""
        return Slapd(label, folder, database_lines=nosync + syncrepl_lines)

    def sync_point(self, name):
        """Only consumer `name` runs (the other stopped, it started if need be), and it holds
        a sentinel written on the provider just now. Returns the seconds that took."""
        for other, server in self.consumers.items():
            if other != name:
                server.stop()
        server = self.consumers[name]
        t0 = time.monotonic()
        if not server.running():
            server.start()
        self.sentinel += 1
        token = f"sentinel-{self.sentinel}"
        conn = connect(self.provider.url)
        conn.modify_s(SENTINEL_DN, [(ldap.MOD_REPLACE, "description", [token.encode()])])
        conn.unbind_s()
        conn = connect(server.url, timeout_s=60)
        try:
            wait_until(server, lambda: has_value(conn, SENTINEL_DN, "description", token), t0,
                       CATCH_UP_TIMEOUT_S, "the provider")
        finally:
            conn.unbind_s()
        return time.monotonic() - t0

    def load_point(self, name, load, round_index, authrate_args):
        """One point: authrate against consumer `name` with `load` "idle" (nothing else),
        "background" (the modifier writing to the provider's unreplicated database) or
        "applying" (the modifier writing to the replicated one, sampled writes watched)."""
        server = self.consumers[name]
        catch_up = self.sync_point(name)
        self.catch_ups.append((name, catch_up))
        extra = ["--seed", str(round_index + 1)]
        if load == "idle":
            summary = run_authrate(self.build, server, self.args.connections,
                                   authrate_args, extra=extra)
            return {"summary": summary}
        applying = load == "applying"
        samples = queue.Queue() if applying else None
        modifier = Modifier(self.provider, self.args.users, self.args.mod_rate,
                            self.args.modifier_threads, self.args.sample_every, samples,
                            f"r{round_index}-{name}-{load}", seed=round_index * 2 + len(name),
                            people=bench.PEOPLE if applying else OTHER_PEOPLE,
                            bind_dn=bench.ROOT_DN if applying else OTHER_ROOT_DN)
        watcher = (Watcher(server, samples, self.args.watchers, self.args.poll_ms / 1000)
                   if applying else None)
        modifier.start()
        try:
            time.sleep(1.0)
            measured_from = time.monotonic() + self.args.warmup
            summary = run_authrate(self.build, server, self.args.connections,
                                   authrate_args, extra=extra)
            measured_to = time.monotonic()
        finally:
            modifier.stop()
            if watcher is not None:
                watcher.finish()
        acks = [a for a in modifier.acks if measured_from <= a[0] <= measured_to]
        errors = modifier.errors + (watcher.errors if watcher else [])
        point = {
            "summary": summary,
            "mods_per_sec": len(acks) / (measured_to - measured_from),
            "mod_errors": len(errors),
            "first_error": (errors + [""])[0],
            "ack_p50": percentile([a[1] * 1000 for a in acks], 0.50),
            "ack_p99": percentile([a[1] * 1000 for a in acks], 0.99),
            "behind": (100 * sum(1 for a in acks if a[2] > SEND_LATE_S) / len(acks)
                       if acks else None),
        }
        if watcher is not None:
            results = [r for r in watcher.results if measured_from <= r[0] <= measured_to]
            lags = [lag * 1000 for _, lag, _ in results if lag is not None]
            point.update({
                "lag_p50": percentile(lags, 0.50),
                "lag_p99": percentile(lags, 0.99),
                "lag_max": max(lags) if lags else None,
                "samples": len(results),
                "unseen": sum(1 for _, lag, _ in results if lag is None),
                "late": sum(1 for _, _, late in results if late),
            })
        return point


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, spec=".1f", none="n/a"):
    return none if value is None else format(value, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def goal(value, target, at_least=True):
    if value is None:
        return "n/a"
    met = value >= target if at_least else value <= target
    return f"{'≥' if at_least else '≤'} {target:.2f}: {'met' if met else 'MISSED'}"


REFRESH_ROWS = [
    ("numadir", "numadir replica (syncrepl refresh)"),
    ("slapd", "slapd consumer (syncrepl refresh)"),
    ("import", "numadir import, generated LDIF"),
    ("import-slapcat", "numadir import, provider's slapcat LDIF"),
]


def refresh_tables(refresh, expected):
    points = {}
    for key, runs in refresh.items():
        points[key] = {
            "seconds": statistics.median(r["seconds"] for r in runs),
            "cpu": median_or_none(r["cpu"] for r in runs),
            "provider_cpu": median_or_none(r["provider_cpu"] for r in runs),
            "persisting": median_or_none(r["persisting"] for r in runs),
            "spread": (min(r["seconds"] for r in runs), max(r["seconds"] for r in runs)),
        }
    lines = ["| what | seconds (min-max) | entries/s | server CPU s | provider CPU s | "
             "\"persisting\" logged at s |", "|---|---:|---:|---:|---:|---:|"]
    for key, label in REFRESH_ROWS:
        p = points.get(key)
        if p is None:
            continue
        lines.append(f"| {label} | {p['seconds']:.2f} ({p['spread'][0]:.2f}-"
                     f"{p['spread'][1]:.2f}) | {expected / p['seconds']:.0f} | "
                     f"{fmt(p['cpu'], '.2f')} | {fmt(p['provider_cpu'], '.2f', '')} | "
                     f"{fmt(p['persisting'], '.2f', '')} |")
    n, s, i = points.get("numadir"), points.get("slapd"), points.get("import")
    rate = {k: expected / p["seconds"] for k, p in points.items()}
    versus_slapd = ratio(rate.get("numadir"), rate.get("slapd"))
    versus_import = ratio(rate.get("numadir"), rate.get("import"))
    ratios = ["| ratio | value | goal |", "|---|---:|---|",
              f"| numadir replica / slapd consumer, entries/s | {fmt(versus_slapd, '.2f')} | "
              f"{goal(versus_slapd, 1.0)} |",
              f"| numadir replica / slapd consumer, server CPU | "
              f"{fmt(ratio(n and n['cpu'], s and s['cpu']), '.2f')} | |",
              f"| numadir replica / numadir import (generated LDIF), entries/s | "
              f"{fmt(versus_import, '.2f')} | {goal(versus_import, 1 / 1.5)} (within 1.5x) |",
              f"| numadir replica / numadir import (generated LDIF), CPU | "
              f"{fmt(ratio(n and n['cpu'], i and i['cpu']), '.2f')} | |"]
    if "import-slapcat" in rate:
        ratios.append(f"| numadir replica / numadir import (slapcat LDIF), entries/s | "
                      f"{fmt(ratio(rate.get('numadir'), rate['import-slapcat']), '.2f')} | |")
    return "\n".join(lines) + "\n\n" + "\n".join(ratios)


LOADS = ("idle", "background", "applying")
LOAD_KEYS = ([("numadir", load) for load in LOADS] +
             [("slapd", load) for load in reversed(LOADS)])
CONSUMER_NAMES = {"numadir": "numadir replica", "slapd": "slapd consumer"}


def summarize_load(load):
    points = {}
    for key, runs in load.items():
        point = bench.median_point([r["summary"] for r in runs])
        for field in ("mods_per_sec", "ack_p50", "ack_p99", "behind", "lag_p50", "lag_p99"):
            point[field] = median_or_none(r.get(field) for r in runs)
        point["lag_max"] = max((r["lag_max"] for r in runs if r.get("lag_max") is not None),
                               default=None)
        for field in ("samples", "unseen", "late", "mod_errors"):
            point[field] = sum(r.get(field, 0) for r in runs)
        point["first_error"] = next((r["first_error"] for r in runs if r.get("first_error")), "")
        point["lowest_interval"] = min((r["summary"]["lowest_interval"] for r in runs
                                        if r["summary"].get("lowest_interval") is not None),
                                       default=None)
        points[key] = point
    return points


def load_tables(points, mod_rate):
    label = {"idle": "idle", "background": f"{mod_rate:g} mods/s elsewhere",
             "applying": f"applying {mod_rate:g} mods/s"}
    auths = ["| consumer | load | auths/s | server CPU µs/auth | auth p50 ms | auth p99 ms | "
             "lowest 1 s interval auths/s | authrate errors |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for key in LOAD_KEYS:
        p = points.get(key)
        if p is not None:
            auths.append(f"| {CONSUMER_NAMES[key[0]]} | {label[key[1]]} | {p['rate']:.0f} | "
                         f"{p['cpu']:.1f} | {p['p50']:.3f} | {p['p99']:.3f} | "
                         f"{fmt(p['lowest_interval'], '.0f')} | {p['errors']} |")
    writes = ["| consumer | load | mods/s acknowledged | sent > 10 ms late | provider ack p50 / "
              "p99 ms | lag p50 ms | lag p99 ms | lag max ms | lag samples (late, unseen) | "
              "modifier + watcher errors |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key in LOAD_KEYS:
        p = points.get(key)
        if p is None or key[1] == "idle":
            continue
        lag = ([fmt(p["lag_p50"], ".2f"), fmt(p["lag_p99"], ".2f"), fmt(p["lag_max"], ".1f"),
                f"{p['samples']} ({p['late']}, {p['unseen']})"]
               if key[1] == "applying" else ["", "", "", ""])
        cells = [CONSUMER_NAMES[key[0]], label[key[1]], fmt(p["mods_per_sec"], ".0f"),
                 fmt(p["behind"], ".1f") + "%",
                 f"{fmt(p['ack_p50'], '.2f')} / {fmt(p['ack_p99'], '.2f')}", *lag,
                 str(p["mod_errors"])]
        writes.append("| " + " | ".join(cells) + " |")

    def r(a, b, field):
        pa, pb = points.get(a), points.get(b)
        return ratio(pa and pa[field], pb and pb[field])
    na, nb, ni = ("numadir", "applying"), ("numadir", "background"), ("numadir", "idle")
    sa, sb, si = ("slapd", "applying"), ("slapd", "background"), ("slapd", "idle")
    rows = [("numadir replica applying / idle", na, ni, 0.9),
            ("numadir replica applying / writes elsewhere", na, nb, None),
            ("numadir replica / slapd consumer, both applying", na, sa, 2.0),
            ("slapd consumer applying / idle", sa, si, None),
            ("slapd consumer applying / writes elsewhere", sa, sb, None),
            ("numadir replica / slapd consumer, both idle", ni, si, None)]
    ratios = ["| ratio | auths/s | server CPU/auth | auth p99 | goal (auths/s) |",
              "|---|---:|---:|---:|---|"]
    for text, a, b, target in rows:
        value = r(a, b, "rate")
        ratios.append(f"| {text} | {fmt(value, '.2f')} | {fmt(r(a, b, 'cpu'), '.2f')} | "
                      f"{fmt(r(a, b, 'p99'), '.2f')} | "
                      f"{'(reference)' if target is None else goal(value, target)} |")
    lag = ["| replication lag | p50 | p99 |", "|---|---:|---:|",
           f"| numadir replica / slapd consumer | {fmt(r(na, sa, 'lag_p50'), '.3g')} | "
           f"{fmt(r(na, sa, 'lag_p99'), '.3g')} |"]
    errors = "".join(f"\n\nFirst modifier/watcher error ({CONSUMER_NAMES[k[0]]}, {k[1]}): "
                     f"`{p['first_error']}`" for k, p in points.items() if p.get("first_error"))
    return ("auths on the consumer:\n\n" + "\n".join(auths) + "\n\nThe writes and their "
            "replication lag:\n\n" + "\n".join(writes) + "\n\nRatios (medians):\n\n" +
            "\n".join(ratios) + "\n\n" + "\n".join(lag) + errors)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release",
                        help="the build whose numadir and authrate are used")
    parser.add_argument("--users", type=int, help=f"users (default {DEFAULTS['users']})")
    parser.add_argument("--rounds", type=int,
                        help=f"rounds, interleaved (default {DEFAULTS['rounds']})")
    parser.add_argument("--duration", type=float,
                        help=f"seconds measured per load point (default {DEFAULTS['duration']:g})")
    parser.add_argument("--warmup", type=float,
                        help=f"seconds of warm-up per load point (default {DEFAULTS['warmup']:g})")
    parser.add_argument("--connections", type=int, default=64, help="authrate -c")
    parser.add_argument("--threads", type=int, default=2, help="authrate -t")
    parser.add_argument("--mod-rate", type=float, default=500,
                        help="modifications/s on the provider while applying")
    parser.add_argument("--modifier-threads", type=int, default=4,
                        help="connections the modifications are spread over (more is slower: "
                        "16 made slapd's provider acknowledge half as many writes to the "
                        "replicated database in a run of 2026-12-03)")
    parser.add_argument("--sample-every", type=int, default=10,
                        help="one write in this many has its replication lag measured")
    parser.add_argument("--watchers", type=int, default=3,
                        help="threads polling the consumer for sampled writes")
    parser.add_argument("--poll-ms", type=float, default=0.5,
                        help="pause between a watcher's polls of one entry")
    parser.add_argument("--durability", default="sync", choices=["sync", "nosync"],
                        help="both consumers' commits (numadir database.durability; slapd "
                        "dbnosync for nosync); the provider keeps back-mdb's synced default")
    parser.add_argument("--skip-refresh", action="store_true",
                        help="only one refresh of each consumer (not timed), then the load "
                        "points")
    parser.add_argument("--refresh-only", default="",
                        help="only the refresh rounds of these (comma-separated: numadir, "
                        "slapd, import, import-slapcat), their table printed, nothing written: "
                        "for working on the refresh path")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: " + ", ".join(f"{k} {v:g}" for k, v in QUICK.items()) +
                        " unless given")
    parser.add_argument("--results", default="",
                        help="a file whose replication section to write (e.g. perf/RESULTS.md; "
                        "default: print only)")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if ldap is None:
        raise SystemExit("replication_bench: needs python3-ldap (apt-get install python3-ldap)")
    build = os.path.abspath(args.build_dir)
    authrate_args = argparse.Namespace(users=args.users, authrate_threads=args.threads,
                                       duration=args.duration, warmup=args.warmup)
    command = " ".join(["perf/replication_bench.py"] + [shlex.quote(a) for a in sys.argv[1:]])
    load_before = load_average()

    work = tempfile.mkdtemp(prefix="numadir-replication-bench-")
    b = Bench(args, build, work)
    refresh = {}
    load = {}
    started = []
    remarks = []  # Lines a consumer logged during its refresh besides its states.
    try:
        ldif = bench.generate_users(work, args.users)
        expected, last_dn = entries_and_last_dn(ldif)
        other_ldif = os.path.join(work, "other.ldif")
        with open(other_ldif, "w") as stream:
            subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(
                os.path.abspath(__file__)), "gen_users.py"), "--users", str(args.users),
                "--suffix", OTHER_SUFFIX], stdout=stream, check=True)
        b.provider = Slapd("provider", os.path.join(work, "provider"),
                           global_lines="moduleload syncprov\n",
                           database_lines="overlay syncprov\nsyncprov-checkpoint 100 1\n",
                           ldif=ldif, other=other_ldif)
        started.append(b.provider)
        b.provider.start()
        slapcat_ldif = os.path.join(work, "provider.ldif")
        b.provider.slapcat(slapcat_ldif)
        print(f"replication_bench: {args.users} users ({expected} entries) on the provider, "
              f"pid {b.provider.process.pid}, {b.provider.url}; load average {load_before}",
              flush=True)
        refresh_keys = (args.refresh_only.split(",") if args.refresh_only else
                        ["numadir", "slapd", "import", "import-slapcat"])
        rounds = 1 if args.skip_refresh else args.rounds
        for round_index in range(rounds):
            order = refresh_keys if round_index % 2 == 0 else list(reversed(refresh_keys))
            last = round_index == rounds - 1
            for key in order:
                if key.startswith("import"):
                    source = ldif if key == "import" else slapcat_ldif
                    result = measure_import(build, os.path.join(work, f"{key}-{round_index}"),
                                            args.durability, source)
                else:
                    # The other consumer stays stopped: the provider serves one at a time.
                    for server in b.consumers.values():
                        server.stop()
                    server = b.new_consumer(key, f"{key}-consumer-{round_index}")
                    started.append(server)
                    result = measure_refresh(server, b.provider, expected, last_dn)
                    if last:
                        b.consumers[key] = server
                    else:
                        server.stop()
                        shutil.rmtree(server.folder, ignore_errors=True)
                refresh.setdefault(key, []).append(result)
                print(f"replication_bench: refresh round {round_index + 1}/{rounds} {key:>14}: "
                      f"{result['seconds']:.2f} s ({expected / result['seconds']:.0f} entries/s)"
                      f", cpu {fmt(result['cpu'], '.2f')} s, provider cpu "
                      f"{fmt(result['provider_cpu'], '.2f')} s, persisting at "
                      f"{fmt(result['persisting'], '.2f')} s", flush=True)
                for remark in result.get("remarks", []):
                    print(f"replication_bench:   {key} said at {remark}", flush=True)
                    remarks.append(f"{key}, round {round_index + 1}, at {remark}")
        if args.skip_refresh:
            refresh = {}
        if args.refresh_only:
            print(refresh_tables(refresh, expected))
            return 0
        for round_index in range(args.rounds):
            order = LOAD_KEYS if round_index % 2 == 0 else list(reversed(LOAD_KEYS))
            for key in order:
                name, kind = key
                result = b.load_point(name, kind, round_index, authrate_args)
                load.setdefault(key, []).append(result)
                s = result["summary"]
                text = (f"replication_bench: load round {round_index + 1}/{args.rounds} "
                        f"{name:>7} {kind:>10}: "
                        f"{s['auths_per_sec']:.0f} auths/s, cpu "
                        f"{s.get('server_cpu_us_per_auth') or 0:.1f} us/auth, p99 "
                        f"{s['latency_ms']['p99']:.3f} ms, lowest 1 s interval "
                        f"{fmt(s.get('lowest_interval'), '.0f')} auths/s, errors "
                        f"{s['errors']['total']}")
                if kind != "idle":
                    text += (f"; {result['mods_per_sec']:.0f} mods/s ({fmt(result['behind'])}% "
                             f"sent > 10 ms late), provider ack p99 "
                             f"{fmt(result['ack_p99'], '.2f')} ms")
                if kind == "applying":
                    text += (f", lag p50 "
                             f"{fmt(result['lag_p50'], '.2f')} p99 {fmt(result['lag_p99'], '.2f')}"
                             f" max {fmt(result['lag_max'], '.1f')} ms over {result['samples']} "
                             f"samples ({result['late']} late, {result['unseen']} unseen), "
                             f"modifier/watcher errors {result['mod_errors']}")
                print(text + f" (caught up in {b.catch_ups[-1][1]:.2f} s)", flush=True)
    finally:
        for server in started:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    load_after = load_average()
    info = bench.machine()
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    points = summarize_load(load)
    load_text = load_tables(points, args.mod_rate)
    catch_up = max((s for _, s in b.catch_ups), default=0)
    durable = ("both durable (numadir durability \"sync\", back-mdb's synced default)"
               if args.durability == "sync" else
               "both unsynced (numadir durability \"nosync\", slapd dbnosync)")
    quick = ("\n\n**Smoke run (--quick): these figures check that the benchmark works; they "
             "measure nothing.**" if args.quick else "")
    noisy = ""
    # The load after the run is mostly the run's own (servers, authrate, the modifier): only the
    # load before it says whether other work shared the machine.
    if float(load_before.split()[0]) > 1.5:
        noisy = (f"\n\n**Noisy: the load average was {load_before} before the run (other work on "
                 "the machine); read the ratios with care.**")
    setup = (
        f"Command: `{command}` — {args.users} users ({expected} entries, {{SSHA}} passwords) on "
        "a slapd provider (back-mdb, overlay syncprov, indexes objectClass, uid, entryUUID, "
        "entryCSN eq, perf/bench.py's access rules); consumers from an empty database: the "
        f"numadir replica ([[replication.consumer]] rid {NUMADIR_RID}, refreshAndPersist, "
        "percpu) and a slapd consumer (syncrepl rid 002, refreshAndPersist, attrs \"*,+\", the "
        f"same indexes and access rules), {durable}. Refresh: from the consumer's process start "
        "until it serves the provider's last entry and a subtree count equals the provider's; "
        f"{len(next(iter(refresh.values()), []))} round(s) interleaved, medians. Under load: "
        "one consumer running at a time; authrate with "
        f"{args.connections} connections and {args.threads} thread(s), {args.duration:g} s "
        f"measured after {args.warmup:g} s warm-up; applying = {args.mod_rate:g} "
        f"modifications/s on the provider ({args.modifier_threads} python-ldap connections, open "
        f"loop, `replace: description` of users in a shuffled cycle); writes elsewhere = the "
        f"same writes to a second database of the provider ({OTHER_SUFFIX}, {args.users} users, "
        "also with syncprov) that no consumer replicates: the same load on the machine, nothing "
        "to apply, no watchers; 1 write in "
        f"{args.sample_every} watched on the consumer by {args.watchers} threads polling a base "
        f"search every {args.poll_ms:g} ms; lag = matching answer - provider's acknowledgment; "
        f"{args.rounds} round(s) interleaved, medians (lag max: over all rounds; late: samples "
        "the watchers reached late, their lag over-estimated). Date "
        f"{now}; `nproc` {nproc}, {info['cpu']}, Linux {info['kernel']}; {info['slapd']}. "
        "Provider, consumer, authrate and the python modifier and watchers share the machine's "
        f"CPUs. Load average (1, 5, 15 min) {load_before} before, {load_after} after. Longest "
        f"catch-up of a consumer restarted between points: {catch_up:.1f} s.")
    refresh_text = (refresh_tables(refresh, expected) if refresh else
                    "Refresh not measured (--skip-refresh).")
    if remarks:
        refresh_text += ("\n\nWhat the consumers logged during their refresh besides their "
                         "states:\n\n" + "\n".join(f"- `{r}`" for r in remarks))
    short = [f"{CONSUMER_NAMES[k[0]]} {k[1]} ({p['mods_per_sec']:.0f})"
             for k, p in points.items() if k[1] != "idle" and
             (p["mods_per_sec"] or 0) < 0.95 * args.mod_rate]
    if short:
        noisy += (f"\n\n**The provider acknowledged fewer than 95% of the {args.mod_rate:g} "
                  f"mods/s asked for in: {', '.join(short)}.**")
    section = (f"{BEGIN}\n### Replication: {now}\n\n" +
               textwrap.fill(setup, 100, break_long_words=False, break_on_hyphens=False) +
               quick + noisy + "\n\nInitial refresh of " + f"{expected} entries:\n\n" +
               refresh_text + f"\n\nUnder {args.mod_rate:g} modifications/s on the provider:"
               "\n\n" + load_text + f"\n{END}")
    if args.results:
        bench.write_section(args.results, BEGIN, END, HEADING, section)
    print(section)
    errors = sum(p["errors"] + p["mod_errors"] + p["unseen"] for p in points.values())
    if any((p["mods_per_sec"] or 0) < 0.95 * args.mod_rate for k, p in points.items()
           if k[1] != "idle"):
        print(f"replication_bench: a point made fewer than 95% of {args.mod_rate:g} mods/s: "
              "see above", file=sys.stderr)
    if errors:
        print("replication_bench: errors or unseen changes: see above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
