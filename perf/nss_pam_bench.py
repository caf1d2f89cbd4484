#!/usr/bin/python3
"""Logins through the real NSS/PAM stack: N concurrent PAM authentications through nslcd
(nss-pam-ldapd) and through SSSD (sssd-ldap), against numadir and against OpenLDAP slapd loaded
with the same LDIF, in one run, rounds interleaved, medians reported.

  perf/nss_pam_bench.py [--build-dir build/release] [--users 2000] [--concurrency 8]
                        [--duration 30] [--warmup 5] [--rounds 3] [--daemons nslcd,sssd]
                        [--servers numadir,slapd] [--driver auto|pam|pamtester]
                        [--tls default|none|starttls] [--nslcd-threads 5]
                        [--sssd-cache tmpfs|disk] [--access-log] [--quick] [--keep]
                        [--results FILE]

Needs root (the daemons run in private mount namespaces: tests/integration/nss_pam_harness.py,
which keeps the machine's own nsswitch.conf, PAM stack and daemon configs untouched), Debian's
nslcd, libpam-ldapd, sssd-ldap, libpam-sss, pamtester and slapd (scripts/setup.sh), and for the
default driver python3-pam.

The directory: perf/gen_users.py --users N --nss --posix-groups 20 --groups-per-user 3 (as
tests/integration/nss_pam_test.py makes it: posixAccount + shadowAccount users with password
"password<I>", primary posixGroups, 20 secondary groups both as posixGroup + memberUid and as
groupOfNames + member), loaded into numadir (`percpu`, the auto thread plan, the indexes of
nss_pam_harness, the access log off unless --access-log) and into slapd (back-mdb, the same
indexes, perf/bench.py's access rules, which are numadir's defaults, loglevel 0, back-monitor
for its counters). Both servers listen on loopback with TLS configured (one throwaway
certificate) and no password policy.

The points: every (daemon, server) pair has a daemon of its own in its own namespace, all started
at the start and idle while another is measured. A login is one PAM authentication
(pam_start, pam_authenticate, pam_end of service numadir-bench-DAEMON, whose stack is the
daemon's module alone) of a user drawn at random (seeded per round and slot) with the right
password. `--concurrency` N slots log in in a closed loop, each slot one login at a time:
- driver `pam` (the default when python3-pam is installed): N long-lived Python processes in the
  daemon's namespace, each calling libpam through python3-pam's PAM module; the latency of a
  login is pam_start to pam_end inside that process;
- driver `pamtester`: N Python threads, each starting `nsenter ... pamtester SERVICE USER
  authenticate` per login (posix_spawn), the password on its standard input; the latency of a
  login is the whole process, so its start (two execs, the dynamic loader, libpam and the
  module loading) is included, and so is its CPU in the client figure.
Each point runs --warmup seconds, then is measured for --duration seconds: logins/s counts the
successful logins completed in the window; p50 / p99 are of those logins; the LDAP server's CPU
(utime + stime of its process from /proc/PID/stat over the window), the daemon's (nslcd's
process; sssd's monitor and its sssd_be, sssd_nss and sssd_pam children) and the client's (the
driver processes, or each pamtester's rusage) are divided by those logins; "busy" is the
machine's non-idle CPU time over the window (/proc/stat) as a share of all its CPUs. The LDAP
operations per login come from the server's counters (numadir: cn=Operations and
cn=Connections,cn=Monitor; slapd: back-monitor's cn=Operations and cn=Total,cn=Connections),
read just after the window opens and just after it closes, less the counter read's own
bind, search and connection, divided by the logins completed between the two reads (StartTLS
counts as an extended operation on both: numadirExtendedOperations, slapd's cn=Extended). The run fails (exit status 1) if a login failed or a point made fewer than
0.9 binds per login, i.e. if logins did not reach the server.

Daemon settings (each daemon's own defaults otherwise): nslcd with `threads` (--nslcd-threads,
nslcd's default 5) and logging at notice; SSSD with `cache_credentials = false` (no offline
authentication: every login binds to the server), `access_provider = permit` (only
pam_authenticate is measured), the default `pam_id_timeout` (5 s: the PAM responder refreshes a
user's identity and groups from the server unless it did within 5 s) and entry caches, and its
cache (/var/lib/sss/db) on a tmpfs in its namespace: on disk (--sssd-cache disk) each identity
refresh commits cache transactions with fsync, and on this shared machine's disk that alone held
SSSD to a few logins/s whatever the LDAP server (--quick runs through numadir, 2026-12-03 18:00
UTC, load average about 10: 3-5 logins/s with p50 0.4-3.8 s on disk, 153 logins/s on tmpfs),
which measures the disk rather than the path through the server.
--tls: `default` is what each daemon does unconfigured on an ldap:// URI: nslcd stays in the
clear, SSSD's auth provider runs StartTLS before each login's bind (it does whenever the server
offers it) while its lookups stay in the clear; `none`: SSSD binds in the clear too
(ldap_auth_disable_tls_never_use_in_production); `starttls`: every connection of both daemons
runs StartTLS (nslcd `ssl start_tls`, SSSD `ldap_id_use_start_tls`), the CA verified.

Prints a Markdown table ready for perf/RESULTS.md with the command line, date, nproc, CPU model
and the load average; --results FILE also writes it between the nss-pam-bench markers of FILE.
--quick is a smoke run (300 users, 1 round of 3 s points after 1 s of warm-up): it checks that
the benchmark works, not what it measures.
"""
import argparse
import contextlib
import datetime
import json
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import bench  # noqa: E402  (perf/bench.py: certificates, access rules, machine details)
import nss_pam_harness as h  # noqa: E402
import slapd_harness  # noqa: E402
from numadir_harness import ROOT_DN, ROOT_PW, SUFFIX, CheckFailed, ssha  # noqa: E402

BEGIN = "<!-- nss-pam-bench:begin -->"
END = "<!-- nss-pam-bench:end -->"
HEADING = "NSS and PAM: logins through nslcd and SSSD (perf/nss_pam_bench.py)"

QUICK = {"users": 300, "duration": 3.0, "warmup": 1.0, "rounds": 1}
DEFAULTS = {"users": 2000, "duration": 30.0, "warmup": 5.0, "rounds": 3}
POSIX_GROUPS = 20
GROUPS_PER_USER = 3
PASSWORD_TEMPLATE = "password%d"  # gen_users.py's.
DAEMONS = ("nslcd", "sssd")
SERVERS = ("numadir", "slapd")
SERVICE = {"nslcd": "numadir-bench-nslcd", "sssd": "numadir-bench-sssd"}
MODULE = {"nslcd": "pam_ldap.so", "sssd": "pam_sss.so"}
SSSD_DEBUG = "0x0070"  # SSSD's default: fatal, critical and serious failures.
# A bind, a search and a connection: what one counter read adds between two reads.
READ_COST = {"binds": 1, "searches": 1, "connections": 1}
MIN_BINDS_PER_LOGIN = 0.9


def pam_service(daemon: str) -> str:
    module = MODULE[daemon]
    return (f"# numadir nss_pam_bench: {module} alone, so every login is {daemon}'s.\n"
            f"auth     required {module}\naccount  required {module}\n"
            f"password required {module}\nsession  required pam_permit.so\n")


OTHER_SERVICE = ("auth required pam_deny.so\naccount required pam_deny.so\n"
                 "password required pam_deny.so\nsession required pam_deny.so\n")


# -- the PAM driver: one slot's logins, in a process inside a daemon's namespace ----------------
def pam_driver() -> int:
    """`nss_pam_bench.py --pam-driver`: reads jobs, one JSON line each ({"service", "first",
    "last", "template", "seed", "end", "users": [[user number, password override or null]]
    (optional: a fixed list instead of random users)}), logs in with libpam (python3-pam) in a
    closed loop until CLOCK_MONOTONIC passes "end", and answers each job with one JSON line:
    {"logins": [[done, seconds, ok], ...], "failures": [first messages]}. Ends at EOF."""
    import PAM  # python3-pam
    password = [""]

    def conversation(_auth, queries, _data):
        return [(password[0], 0) if kind in (PAM.PAM_PROMPT_ECHO_OFF, PAM.PAM_PROMPT_ECHO_ON)
                else ("", 0) for _, kind in queries]

    print("ready", flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        rng = random.Random(job["seed"])
        fixed = job.get("users")
        logins, failures = [], []
        while fixed or (fixed is None and time.monotonic() < job["end"]):
            if fixed:
                number, override = fixed.pop(0)
            else:
                number, override = rng.randint(job["first"], job["last"]), None
            password[0] = override if override is not None else job["template"] % number
            began = time.monotonic()
            ok = True
            auth = PAM.pam()
            try:
                auth.start(job["service"], f"user{number}", conversation)
                auth.authenticate()
            except PAM.error as error:
                ok = False
                if len(failures) < 5:
                    failures.append(f"user{number}: {error}")
            finally:
                del auth  # pam_end
            done = time.monotonic()
            logins.append([done, done - began, ok])
        print(json.dumps({"logins": logins, "failures": failures}), flush=True)
    return 0


# -- processes and CPU ---------------------------------------------------------------------------
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of process `pid` (all its threads), in seconds; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stream:
            fields = stream.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_tree(root: int) -> list:
    """`root` and every process descended from it."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stream:
                ppid = int(stream.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, queue = [], [root]
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue += children.get(pid, [])
    return found


def tree_cpu(root: int) -> dict:
    """pid -> CPU seconds of `root`'s process tree (a process that starts or ends between two
    samples counts what it used while both saw it, which for sssd's long-lived children is
    all)."""
    return {pid: cpu_seconds(pid) for pid in process_tree(root)}


def tree_delta(before: dict, after: dict) -> float:
    return sum(after[pid] - before[pid] for pid in after if pid in before)


def machine_cpu() -> tuple:
    """(busy, total) CPU seconds of the machine so far, from /proc/stat."""
    with open("/proc/stat") as stream:
        values = [int(v) for v in stream.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    total = sum(values[:8])  # guest time is already in user time.
    return (total - idle) / CLOCK_TICKS, total / CLOCK_TICKS


# -- the servers ---------------------------------------------------------------------------------
class BenchNumadir(h.NssNumadir):
    """numadir on the LDIF with nss_pam_harness's indexes, the auto thread plan (`percpu`), TLS
    and, with `access_log`, the stats access log; no password policy and no size limit of its
    own (the default)."""

    def __init__(self, numadir: str, ldif_path: str, tls_files, access_log: bool, keep: bool):
        super().__init__(numadir, ldif_path, "", tls_files, size_limit=500, keep=keep)
        self.with_access_log = access_log

    def write_config(self, listen):
        log = (f'\n[log]\nlevel = "stats"\nfile = "{self.access_log}"\n'
               if self.with_access_log else "")
        with open(self.config, "w") as stream:
            stream.write(f"""[database]
path = "{self.dir}/db"
suffix = "{SUFFIX}"
map_size = "1GiB"
indexes = {h.NUMADIR_INDEXES}

[server]
listen = [{", ".join(f'"{url}"' for url in listen)}]
rootdn = "{ROOT_DN}"
rootpw = "{ssha(ROOT_PW)}"

[threads]
dispatcher = "percpu"
{log}
[tls]
certificate = "{self.certificate}"
key = "{self.key}"
""")
        os.chmod(self.config, 0o600)


SLAPD_MONITOR = f"""
database monitor
access to *
  by dn.exact="{ROOT_DN}" read
  by * none
"""


def make_slapd(ldif: str, tls: dict, keep: bool):
    return slapd_harness.SlapdServer(
        ldif, access=bench.SLAPD_ACCESS, root_pw=ssha(ROOT_PW), indexes=h.SLAPD_INDEXES,
        extra_conf="loglevel 0\n", database_conf=SLAPD_MONITOR,
        tls=slapd_harness.SlapdTls(tls["certificate"], tls["key"], tls["ca"]), keep=keep)


def ldap_entries(text: str) -> dict:
    """ldapsearch -LLL output -> {dn: {attribute (lower case): first value}}."""
    entries, dn = {}, None
    for line in text.replace("\n ", "").splitlines():
        if not line.strip():
            dn = None
            continue
        name, _, value = line.partition(": ")
        if name == "dn":
            dn = value
            entries[dn] = {}
        elif dn is not None:
            entries[dn].setdefault(name.lower(), value)
    return entries


def read_counters(kind: str, server) -> dict:
    """The server's operation counters: {"binds", "searches", "extended", "connections"
    [, "auths": numadir's successful named binds]}, as the rootdn (one connection, one bind,
    one search)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("LDAP")}
    env["LDAPNOINIT"] = "1"
    if kind == "numadir":
        query = ["-b", "cn=Monitor", "-s", "sub", "(|(cn=Operations)(cn=Connections))",
                 "numadirBinds", "numadirSearches", "numadirAuths", "numadirExtendedOperations",
                 "numadirConnectionsTotal"]
    else:
        query = ["-b", "cn=Monitor", "-s", "sub",
                 "(|(objectClass=monitorOperation)(cn=Total))", "monitorOpCompleted",
                 "monitorCounter"]
    result = subprocess.run(["/usr/bin/ldapsearch", "-LLL", "-x", "-H", server.url, "-D",
                             ROOT_DN, "-w", ROOT_PW, "-o", "ldif-wrap=no", *query],
                            capture_output=True, text=True, timeout=30, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"reading {kind}'s counters failed ({result.returncode}): "
                           f"{result.stderr.strip()}")
    entries = {dn.lower().replace(" ", ""): attrs
               for dn, attrs in ldap_entries(result.stdout).items()}

    def number(dn: str, attribute: str) -> int:
        value = entries.get(dn, {}).get(attribute.lower())
        if value is None:
            raise RuntimeError(f"{kind}'s counters: no {attribute} in {dn}: {result.stdout}")
        return int(value)
    if kind == "numadir":
        operations, connections = "cn=operations,cn=monitor", "cn=connections,cn=monitor"
        return {"binds": number(operations, "numadirBinds"),
                "searches": number(operations, "numadirSearches"),
                "auths": number(operations, "numadirAuths"),
                "extended": number(operations, "numadirExtendedOperations"),
                "connections": number(connections, "numadirConnectionsTotal")}
    ops = "cn=operations,cn=monitor"
    return {"binds": number(f"cn=bind,{ops}", "monitorOpCompleted"),
            "searches": number(f"cn=search,{ops}", "monitorOpCompleted"),
            "extended": number(f"cn=extended,{ops}", "monitorOpCompleted"),
            "connections": number("cn=total,cn=connections,cn=monitor", "monitorCounter")}


# -- the daemons ---------------------------------------------------------------------------------
def nslcd_conf(url: str, tls: str, ca: str, threads: int) -> str:
    lines = [f"uri {url}/", f"base {SUFFIX}", f"threads {threads}", "log /dev/stderr notice"]
    if tls == "starttls":
        lines += ["ssl start_tls", "tls_reqcert demand", f"tls_cacertfile {ca}"]
    return "\n".join(lines) + "\n"


def sssd_conf(url: str, tls: str, ca: str) -> str:
    lines = ["[sssd]", "services = nss, pam", "domains = bench", "", "[nss]", "", "[pam]", "",
             "[domain/bench]", "id_provider = ldap", "auth_provider = ldap",
             "access_provider = permit", "chpass_provider = none", "sudo_provider = none",
             "autofs_provider = none", "resolver_provider = none", f"ldap_uri = {url}",
             f"ldap_search_base = {SUFFIX}", "ldap_schema = rfc2307",
             "cache_credentials = false", f"ldap_tls_cacert = {ca}",
             "ldap_tls_reqcert = demand"]
    if tls == "starttls":
        lines.append("ldap_id_use_start_tls = true")
    elif tls == "none":
        # sssd.conf's validator does not know it and says so; sssd_be reads it.
        lines.append("ldap_auth_disable_tls_never_use_in_production = true")
    return "\n".join(lines) + "\n"


class Target:
    """One (daemon, server) point: the daemon in its namespace, and the driver processes."""

    def __init__(self, daemon: str, kind: str, server, work: str, args, tls: dict):
        self.daemon, self.kind, self.server = daemon, kind, server
        self.name = f"{daemon}/{kind}"
        self.service = SERVICE[daemon]
        self.root = os.path.join(work, f"{daemon}-{kind}")
        self.drivers = []
        os.makedirs(self.root)
        nsswitch = os.path.join(self.root, "nsswitch.conf")
        module = "ldap" if daemon == "nslcd" else "sss"
        with open(nsswitch, "w") as stream:
            stream.write(f"# numadir nss_pam_bench\npasswd: files {module}\n"
                         f"group: files {module}\nshadow: files {module}\n")
        pam = os.path.join(self.root, "pam.d")
        os.makedirs(pam)
        with open(os.path.join(pam, self.service), "w") as stream:
            stream.write(pam_service(daemon))
        with open(os.path.join(pam, "other"), "w") as stream:
            stream.write(OTHER_SERVICE)
        files = {"/etc/nsswitch.conf": nsswitch}
        dirs = {"/etc/pam.d": pam}
        log = os.path.join(self.root, f"{daemon}.log")
        if daemon == "nslcd":
            path = os.path.join(self.root, "nslcd.conf")
            with open(path, "w") as stream:
                stream.write(nslcd_conf(server.url, args.tls, tls["ca"], args.nslcd_threads))
            os.chmod(path, 0o600)
            files["/etc/nslcd.conf"] = path
            self.ns = h.Namespace(f"bench-{daemon}-{kind}", self.root, files=files, dirs=dirs,
                                  tmpfs=["/run"], make_dirs=["/run/nslcd"])
            self.process = h.Daemon(self.ns, f"nslcd ({kind})", [h.NSLCD, "-n"], log,
                                    ready=lambda: os.path.exists(
                                        f"/proc/{self.process.process.pid}/root/run/nslcd/"
                                        "socket"))
        else:
            etc = os.path.join(self.root, "etc-sssd")
            os.makedirs(os.path.join(etc, "conf.d"))
            os.chmod(etc, 0o711)
            path = os.path.join(etc, "sssd.conf")
            with open(path, "w") as stream:
                stream.write(sssd_conf(server.url, args.tls, tls["ca"]))
            os.chmod(path, 0o600)
            state = os.path.join(self.root, "var-lib-sss")
            for sub in ("db", "pipes/private", "mc", "pubconf", "gpo_cache", "secrets",
                        "deskprofile", "keytabs"):
                os.makedirs(os.path.join(state, sub))
            for sub, mode in (("db", 0o700), ("secrets", 0o700), ("pipes/private", 0o700)):
                os.chmod(os.path.join(state, sub), mode)
            logs = os.path.join(self.root, "var-log-sssd")
            os.makedirs(logs)
            dirs.update({"/etc/sssd": etc, "/var/lib/sss": state, "/var/log/sssd": logs})
            self.ns = h.Namespace(f"bench-{daemon}-{kind}", self.root, files=files, dirs=dirs,
                                  tmpfs=["/run"] + (["/var/lib/sss/db"]
                                                    if args.sssd_cache == "tmpfs" else []))
            pipes = os.path.join(state, "pipes")
            self.process = h.Daemon(self.ns, f"sssd ({kind})",
                                    [h.SSSD, "-i", "--logger=stderr", "-d", SSSD_DEBUG], log,
                                    ready=lambda: all(os.path.exists(os.path.join(pipes, p))
                                                      for p in ("nss", "pam")))

    def daemon_pid(self) -> int:
        return self.process.process.pid

    # -- the pam driver ------------------------------------------------------------------------
    def start_drivers(self, count: int):
        argv = self.ns.command(["/usr/bin/python3", "-u", os.path.abspath(__file__),
                                "--pam-driver"])
        errors = open(os.path.join(self.root, "drivers.stderr"), "ab")
        try:
            for _ in range(count):
                self.drivers.append(subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                    text=True, env=h.clean_env(), start_new_session=True))
        finally:
            errors.close()
        for driver in self.drivers:
            line = driver.stdout.readline().strip()
            if line != "ready":
                raise CheckFailed(f"{self.name}: a PAM driver did not start ({line!r}); see "
                                  f"{self.root}/drivers.stderr")

    def stop_drivers(self):
        for driver in self.drivers:
            if driver.poll() is None:
                driver.stdin.close()
        for driver in self.drivers:
            try:
                driver.wait(timeout=30)
            except subprocess.TimeoutExpired:
                driver.kill()
                driver.wait()
        self.drivers = []

    def send_jobs(self, jobs: list):
        for driver, job in zip(self.drivers, jobs):
            driver.stdin.write(json.dumps(job) + "\n")
            driver.stdin.flush()

    def job_results(self) -> list:
        results = []
        for driver in self.drivers:
            line = driver.stdout.readline()
            if not line:
                raise CheckFailed(f"{self.name}: a PAM driver ended mid-job; see "
                                  f"{self.root}/drivers.stderr")
            results.append(json.loads(line))
        return results

    # -- pamtester -----------------------------------------------------------------------------
    def pamtester(self, user: str, password: str):
        """One `pamtester SERVICE USER authenticate` in the namespace. Returns (ok, output, CPU
        seconds of the process)."""
        argv = self.ns.command([h.PAMTESTER, self.service, user, "authenticate"])
        stdin_r, stdin_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            pid = os.posix_spawn(argv[0], argv, h.clean_env(), setsid=True, file_actions=[
                (os.POSIX_SPAWN_DUP2, stdin_r, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
                (os.POSIX_SPAWN_DUP2, out_w, 2)])
        finally:
            os.close(stdin_r)
            os.close(out_w)
        try:
            os.write(stdin_w, (password + "\n").encode())
        except BrokenPipeError:
            pass
        os.close(stdin_w)
        _, status, usage = os.wait4(pid, 0)
        chunks = []
        while True:
            chunk = os.read(out_r, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(out_r)
        return (os.waitstatus_to_exitcode(status) == 0, b"".join(chunks).decode(errors="replace"),
                usage.ru_utime + usage.ru_stime)


def pamtester_slot(target: Target, first: int, last: int, seed: int, end: float, out: list):
    """One slot of the pamtester driver: logins until CLOCK_MONOTONIC passes `end`; appends
    {"logins": [[done, seconds, ok, cpu]], "failures": [...]} to `out`."""
    rng = random.Random(seed)
    logins, failures = [], []
    while time.monotonic() < end:
        number = rng.randint(first, last)
        began = time.monotonic()
        ok, output, cpu = target.pamtester(f"user{number}", PASSWORD_TEMPLATE % number)
        done = time.monotonic()
        logins.append([done, done - began, ok, cpu])
        if not ok and len(failures) < 5:
            failures.append(f"user{number}: {' | '.join(output.split(chr(10)))[:300]}")
    out.append({"logins": logins, "failures": failures})


def check_logins(target: Target, driver: str, users: int):
    """A right password is accepted and a wrong one refused, through this daemon and server."""
    right, wrong = users // 2, users // 3
    if driver == "pam":
        target.send_jobs([{"service": target.service, "template": PASSWORD_TEMPLATE, "seed": 0,
                           "end": 0, "users": [[right, None], [wrong, "not-the-password"]]}] +
                         [{"service": target.service, "template": PASSWORD_TEMPLATE, "seed": 0,
                           "end": 0, "users": []}] * (len(target.drivers) - 1))
        result = target.job_results()[0]
        outcome = [login[2] for login in result["logins"]]
        detail = "; ".join(result["failures"])
    else:
        ok_right, out_right, _ = target.pamtester(f"user{right}", PASSWORD_TEMPLATE % right)
        ok_wrong, out_wrong, _ = target.pamtester(f"user{wrong}", "not-the-password")
        outcome = [ok_right, ok_wrong]
        detail = f"{out_right.strip()} / {out_wrong.strip()}"
    if outcome != [True, False]:
        raise CheckFailed(f"{target.name}: user{right} with the right password and user{wrong} "
                          f"with a wrong one: {outcome}, expected [True, False] ({detail}); "
                          f"daemon log:\n{target.process.log_tail()}")
    print(f"nss_pam_bench: {target.name}: the right password is accepted, a wrong one refused",
          flush=True)


# -- one point -----------------------------------------------------------------------------------
def sleep_until(moment: float):
    delay = moment - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def timed_counters(target: Target) -> tuple:
    """(moment, counters): the moment is the middle of the read."""
    began = time.monotonic()
    counters = read_counters(target.kind, target.server)
    return (began + time.monotonic()) / 2, counters


def measure(target: Target, args, driver: str, seed: int) -> dict:
    """One run of a point: --warmup seconds, then the --duration seconds window."""
    start = time.monotonic() + args.warmup
    end = start + args.duration
    first, last = 0, args.users - 1
    threads, pamtester_results = [], []
    if driver == "pam":
        target.send_jobs([{"service": target.service, "first": first, "last": last,
                           "template": PASSWORD_TEMPLATE, "seed": seed * 1000 + slot,
                           "end": end} for slot in range(len(target.drivers))])
    else:
        for slot in range(args.concurrency):
            thread = threading.Thread(target=pamtester_slot, args=(
                target, first, last, seed * 1000 + slot, end, pamtester_results))
            thread.start()
            threads.append(thread)
    server_pid = target.server.process.pid
    sleep_until(start)
    t0 = time.monotonic()
    server0, daemon0, machine0 = cpu_seconds(server_pid), tree_cpu(target.daemon_pid()), \
        machine_cpu()
    clients0 = {d.pid: cpu_seconds(d.pid) for d in target.drivers}
    c0_at, c0 = timed_counters(target)
    sleep_until(end)
    t1 = time.monotonic()
    server1, daemon1, machine1 = cpu_seconds(server_pid), tree_cpu(target.daemon_pid()), \
        machine_cpu()
    clients1 = {d.pid: cpu_seconds(d.pid) for d in target.drivers}
    c1_at, c1 = timed_counters(target)
    if driver == "pam":
        results = target.job_results()
    else:
        for thread in threads:
            thread.join()
        results = pamtester_results
    logins = [login for result in results for login in result["logins"]]
    window = [login for login in logins if t0 <= login[0] <= t1]
    good = [login for login in window if login[2]]
    latencies = sorted(login[1] for login in good)
    n = len(good)
    counted = sum(1 for login in logins if c0_at <= login[0] <= c1_at and login[2])
    ops = {key: (c1[key] - c0[key] - READ_COST.get(key, 0)) / counted if counted else 0.0
           for key in c1}
    if driver == "pam":
        client = sum(clients1[pid] - clients0[pid] for pid in clients1)
    else:
        client = sum(login[3] for login in good)
    busy = (machine1[0] - machine0[0]) / max(machine1[1] - machine0[1], 1e-9)
    return {
        "rate": n / (t1 - t0),
        "p50": percentile(latencies, 50) * 1000,
        "p99": percentile(latencies, 99) * 1000,
        "server_cpu": (server1 - server0) * 1e6 / n if n else 0.0,
        "daemon_cpu": tree_delta(daemon0, daemon1) * 1e6 / n if n else 0.0,
        "client_cpu": client * 1e6 / n if n else 0.0,
        "busy": busy,
        "logins": n,
        "failed": len(window) - n,
        "failures": [f for result in results for f in result["failures"]][:5],
        "ops": ops,
    }


def percentile(sorted_values: list, p: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def median_point(runs: list) -> dict:
    point = {key: statistics.median(run[key] for run in runs)
             for key in ("rate", "p50", "p99", "server_cpu", "daemon_cpu", "client_cpu", "busy")}
    point["logins"] = sum(run["logins"] for run in runs)
    point["failed"] = sum(run["failed"] for run in runs)
    point["ops"] = {key: statistics.median(run["ops"][key] for run in runs)
                    for key in runs[0]["ops"]}
    point["runs"] = len(runs)
    return point


def host_changes(guard) -> list:
    """What changed on the host since `guard` (nss_pam_harness.HostGuard) was made: its files,
    and the mounts on the paths the namespaces cover (other mounts are other programs': tests
    running beside this one add and remove network namespaces under /run/netns)."""
    ours = ("/etc/nsswitch.conf", "/etc/nslcd.conf", "/etc/pam.d", "/etc/sssd", "/var/lib/sss",
            "/var/log/sssd", "/run")

    def relevant(mounts):
        return {m for m in mounts
                if any(m == path or m.startswith(path + "/") for path in ours)
                and not m.startswith("/run/")}
    after = h.HostGuard.snapshot()
    changed = []
    for key in sorted(set(guard.before) | set(after)):
        if key == "mounts":
            extra = sorted(relevant(after[key]) - relevant(guard.before[key]))
            gone = sorted(relevant(guard.before[key]) - relevant(after[key]))
            if extra or gone:
                changed.append(f"mount table: new {extra}, gone {gone}")
        elif guard.before.get(key) != after.get(key):
            changed.append(f"{key}: {guard.before.get(key, 'absent')} -> "
                           f"{after.get(key, 'absent')}")
    return changed


# -- the report ----------------------------------------------------------------------------------
def cell(value, digits=2):
    return "n/a" if value is None else f"{value:.{digits}f}"


def tables(points: dict, daemons: list, servers: list, driver: str) -> str:
    client = "pamtester CPU" if driver == "pamtester" else "driver CPU"
    lines = [f"| daemon | server | logins/s | p50 ms | p99 ms | server CPU µs/login | "
             f"daemon CPU µs/login | {client} µs/login | machine busy | failed logins |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    ops = ["| daemon | server | searches/login | binds/login | successful user binds/login | "
           "extended ops (StartTLS)/login | connections/login |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for daemon in daemons:
        for server in servers:
            p = points.get((daemon, server))
            if p is None:
                continue
            lines.append(f"| {daemon} | {server} | {p['rate']:.0f} | {p['p50']:.2f} | "
                         f"{p['p99']:.2f} | {p['server_cpu']:.0f} | {p['daemon_cpu']:.0f} | "
                         f"{p['client_cpu']:.0f} | {p['busy'] * 100:.0f}% | {p['failed']} |")
            o = p["ops"]
            auths = f"{o['auths']:.2f}" if "auths" in o else "(no counter)"
            extended = f"{o['extended']:.2f}"
            ops.append(f"| {daemon} | {server} | {o['searches']:.2f} | {o['binds']:.2f} | "
                       f"{auths} | {extended} | {o['connections']:.2f} |")
    text = "\n".join(lines) + "\n\nLDAP operations per login, from each server's counters:\n\n" + \
        "\n".join(ops)
    if "numadir" in servers and "slapd" in servers:
        versus = ["| daemon | numadir/slapd logins/s | numadir/slapd server CPU per login | "
                  "numadir/slapd p99 |", "|---|---:|---:|---:|"]
        for daemon in daemons:
            n, s = points.get((daemon, "numadir")), points.get((daemon, "slapd"))
            if not n or not s:
                continue
            versus.append(f"| {daemon} | {cell(n['rate'] / s['rate'] if s['rate'] else None)} | "
                          f"{cell(n['server_cpu'] / s['server_cpu'] if s['server_cpu'] else None)}"
                          f" | {cell(n['p99'] / s['p99'] if s['p99'] else None)} |")
        text += "\n\nnumadir / slapd through each daemon:\n\n" + "\n".join(versus)
    return text


def package_versions() -> str:
    result = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "nslcd",
                             "sssd-ldap", "pamtester", "python3-pam"],
                            capture_output=True, text=True)
    return ", ".join(line for line in result.stdout.splitlines() if line.strip()) or "unknown"


def choose_driver(requested: str) -> str:
    if requested in ("pam", "auto"):
        found = subprocess.run(["/usr/bin/python3", "-c", "import PAM"],
                               capture_output=True).returncode == 0
        if found:
            return "pam"
        if requested == "pam":
            raise SystemExit("nss_pam_bench: --driver pam needs python3-pam "
                             "(apt-get install python3-pam)")
        print("nss_pam_bench: python3-pam is not installed: using pamtester processes "
              "(apt-get install python3-pam for the in-process driver)", flush=True)
    return "pamtester"


def write_ldif(work: str, users: int) -> str:
    path = os.path.join(work, "nss.ldif")
    with open(path, "wb") as stream:
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "gen_users.py"), "--users",
                        str(users), "--suffix", SUFFIX, "--nss", "--posix-groups",
                        str(POSIX_GROUPS), "--groups-per-user", str(GROUPS_PER_USER)],
                       stdout=stream, check=True, timeout=300)
    return path


def main() -> int:
    if sys.argv[1:2] == ["--pam-driver"]:
        return pam_driver()
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release",
                        help="the build whose server/numadir is measured")
    parser.add_argument("--users", type=int, help=f"users (default {DEFAULTS['users']})")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="logins in flight at once (default 8)")
    parser.add_argument("--duration", type=float,
                        help=f"seconds measured per point (default {DEFAULTS['duration']:g})")
    parser.add_argument("--warmup", type=float,
                        help=f"seconds of warm-up per point (default {DEFAULTS['warmup']:g})")
    parser.add_argument("--rounds", type=int,
                        help=f"rounds, interleaved (default {DEFAULTS['rounds']})")
    parser.add_argument("--daemons", default="nslcd,sssd", help="nslcd and/or sssd")
    parser.add_argument("--servers", default="numadir,slapd", help="numadir and/or slapd")
    parser.add_argument("--driver", default="auto", choices=["auto", "pam", "pamtester"],
                        help="auto: pam (python3-pam, in-process) when installed, else "
                        "pamtester processes")
    parser.add_argument("--tls", default="default", choices=["default", "none", "starttls"],
                        help="what the daemons do about TLS (see above)")
    parser.add_argument("--nslcd-threads", type=int, default=5,
                        help="nslcd.conf threads (nslcd's default 5)")
    parser.add_argument("--sssd-cache", default="tmpfs", choices=["tmpfs", "disk"],
                        help="where SSSD's cache (/var/lib/sss/db) lives (default tmpfs)")
    parser.add_argument("--access-log", action="store_true",
                        help="numadir with its access log on (level stats, to a file)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: " + ", ".join(f"{k} {v:g}" for k, v in QUICK.items()) +
                        " unless given")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--results", default="",
                        help="a file whose nss-pam-bench section to write (e.g. perf/RESULTS.md;"
                        " default: print only)")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    daemons = args.daemons.split(",")
    servers = args.servers.split(",")
    if not daemons or any(d not in DAEMONS for d in daemons):
        raise SystemExit("nss_pam_bench: --daemons takes nslcd and/or sssd")
    if not servers or any(s not in SERVERS for s in servers):
        raise SystemExit("nss_pam_bench: --servers takes numadir and/or slapd")
    if args.concurrency < 1 or args.users < 10:
        raise SystemExit("nss_pam_bench: --concurrency must be >= 1 and --users >= 10")
    numadir = os.path.join(os.path.abspath(args.build_dir), "server", "numadir")
    if "numadir" in servers and not os.access(numadir, os.X_OK):
        raise SystemExit(f"nss_pam_bench: {numadir} is missing: build it first")
    problems = h.missing(daemons)
    if problems:
        for problem in problems:
            print(f"nss_pam_bench: cannot run here: {problem}", file=sys.stderr)
        return 1
    driver = choose_driver(args.driver)
    h.children_die_with_this_process()
    command = " ".join(["perf/nss_pam_bench.py"] + [shlex.quote(a) for a in sys.argv[1:]])
    load_before = os.getloadavg()
    guard = h.HostGuard()
    work = tempfile.mkdtemp(prefix="numadir-nss-pam-bench-")
    keys = [(daemon, server) for daemon in daemons for server in servers]
    runs = {}
    try:
        with contextlib.ExitStack() as stack:
            tls = bench.make_certificate(work, "ec")
            for name in ("ca", "certificate"):
                os.chmod(tls[name], 0o644)
            ldif = write_ldif(work, args.users)
            started = {}
            for server in servers:
                if server == "numadir":
                    started[server] = stack.enter_context(BenchNumadir(
                        numadir, ldif, (tls["certificate"], tls["key"]), args.access_log,
                        args.keep))
                else:
                    started[server] = stack.enter_context(make_slapd(ldif, tls, args.keep))
                read_counters(server, started[server])  # the counters can be read
            targets = {}
            for daemon, server in keys:
                target = Target(daemon, server, started[server], work, args, tls)
                stack.enter_context(target.ns)
                target.process.start()
                # Drivers end before the namespace closes (it fails on processes left in it).
                stack.callback(target.stop_drivers)
                if driver == "pam":
                    target.start_drivers(args.concurrency)
                check_logins(target, driver, args.users)
                targets[(daemon, server)] = target
            print(f"nss_pam_bench: {args.users} users, {len(keys)} points, {args.rounds} "
                  f"round(s) of {args.warmup:g} + {args.duration:g} s, concurrency "
                  f"{args.concurrency}, driver {driver}, tls {args.tls}, sssd cache "
                  f"{args.sssd_cache}", flush=True)
            for round_index in range(args.rounds):
                order = keys if round_index % 2 == 0 else list(reversed(keys))
                for key in order:
                    run = measure(targets[key], args, driver, round_index + 1)
                    runs.setdefault(key, []).append(run)
                    o = run["ops"]
                    print(f"nss_pam_bench: round {round_index + 1}/{args.rounds} "
                          f"{'/'.join(key):>13}: {run['rate']:.0f} logins/s, p50 "
                          f"{run['p50']:.2f} ms, p99 {run['p99']:.2f} ms, server "
                          f"{run['server_cpu']:.0f} us/login, daemon {run['daemon_cpu']:.0f} "
                          f"us/login, client {run['client_cpu']:.0f} us/login, busy "
                          f"{run['busy'] * 100:.0f}%, per login: {o['searches']:.2f} searches "
                          f"{o['binds']:.2f} binds {o['extended']:.2f} ext "
                          f"{o['connections']:.2f} conns; failed {run['failed']}"
                          + (f" ({'; '.join(run['failures'])})" if run["failed"] else ""),
                          flush=True)
            for target in targets.values():
                target.stop_drivers()
                target.process.stop()  # Fails if the daemon died during the run.
    finally:
        if args.keep:
            print(f"nss_pam_bench: kept {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    changes = host_changes(guard)
    if changes:
        print(f"nss_pam_bench: the host changed: {'; '.join(changes)}", file=sys.stderr)
        return 1
    load_after = os.getloadavg()

    points = {key: median_point(value) for key, value in runs.items()}
    info = bench.machine()
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    failed = sum(p["failed"] for p in points.values())
    low_binds = [f"{'/'.join(key)} ({p['ops']['binds']:.2f})" for key, p in points.items()
                 if p["ops"]["binds"] < MIN_BINDS_PER_LOGIN]
    if driver == "pam":
        how = (f"{args.concurrency} Python processes in the daemon's namespace, each logging in "
               "through libpam (python3-pam) in a closed loop; a login's latency is pam_start "
               "to pam_end in that process")
    else:
        how = (f"{args.concurrency} Python threads, each starting `pamtester SERVICE USER "
               "authenticate` (through nsenter) per login in a closed loop; a login's latency "
               "is the whole pamtester process, so its start (two execs, the dynamic loader, "
               "libpam and the module) is included, and so is its CPU in the pamtester column")
    tls_text = {"default": "each daemon's default on an ldap:// URI: nslcd in the clear; SSSD's "
                           "lookups in the clear and a StartTLS before each login's bind",
                "none": "everything in the clear (SSSD with "
                        "ldap_auth_disable_tls_never_use_in_production)",
                "starttls": "StartTLS on every connection of both daemons"}[args.tls]
    quick = ("\n\n**Smoke run (--quick): these figures check that the benchmark works; they "
             "measure nothing.**" if args.quick else "")
    setup = (
        f"Command: `{command}` — {args.users} users (`perf/gen_users.py --nss --posix-groups "
        f"{POSIX_GROUPS} --groups-per-user {GROUPS_PER_USER}`, {{SSHA}} passwords), the same "
        "LDIF, indexes and access rules in numadir (`percpu`, auto thread plan, access log "
        f"{'on' if args.access_log else 'off'}) and slapd (back-mdb, loglevel 0); no password "
        f"policy. A login is pam_authenticate of a random user with the right password through "
        f"the daemon's PAM module alone; {how}. TLS: {tls_text}. nslcd with "
        f"{args.nslcd_threads} threads; SSSD with cache_credentials = false, its cache on "
        f"{'a tmpfs' if args.sssd_cache == 'tmpfs' else 'disk'} and its defaults "
        "(pam_id_timeout 5 s: the PAM responder refreshes a user's identity and groups unless "
        f"it did within 5 s). {args.warmup:g} s warm-up, then {args.duration:g} s measured per "
        f"point, {args.rounds} round(s) interleaved (every daemon and server running "
        "throughout, idle while another point is measured; even rounds in order, odd ones "
        "reversed), medians shown. CPU per login: utime + stime over the window from /proc "
        "(server process; daemon process tree; client processes), over the successful logins "
        "of the window; machine busy: non-idle share of all CPUs over the window. Operations "
        "per login: the server's counters (numadir cn=Monitor, slapd back-monitor) less the "
        f"counter reads' own. Date {now}; `nproc` {nproc}, {info['cpu']}, Linux "
        f"{info['kernel']}; {info['slapd']}; {package_versions()}. Load average "
        f"{load_before[0]:.2f} before the run, {load_after[0]:.2f} after. Daemons, servers and "
        f"the login driver share the machine's CPUs. Failed logins over all runs: {failed}.")
    section = (f"{BEGIN}\n### NSS and PAM logins: {now}\n\n" +
               textwrap.fill(setup, 100, break_long_words=False, break_on_hyphens=False) +
               quick + f"\n\n{tables(points, daemons, servers, driver)}\n{END}")
    print(section, flush=True)  # First: a long run's figures survive a failed write.
    if args.results:
        bench.write_section(args.results, BEGIN, END, HEADING, section)
    if failed or low_binds:
        print("nss_pam_bench: " + ("; ".join(
            ([f"{failed} logins failed"] if failed else []) +
            ([f"fewer than {MIN_BINDS_PER_LOGIN} binds per login: {', '.join(low_binds)}"]
             if low_binds else []))), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CheckFailed as error:
        print(f"nss_pam_bench: {error}", file=sys.stderr)
        sys.exit(1)
