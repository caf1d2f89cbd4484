#!/usr/bin/python3
"""numadir replicas of an OpenLDAP provider on separate hosts: network namespaces.

Five network namespaces (named replication-hosts-<pid>-*): `net` holds only a bridge, and
`provider`, `replica1`, `replica2` and `client` each have loopback up and a veth pair to that
bridge with their own address on 10.201.0.0/24. The host's own namespace gets nothing: the
veth pairs are made inside `net` with their peers sent straight to the others. slapd (back-mdb,
`overlay syncprov`, perf/gen_users.py's users) listens on ldap://10.201.0.10:389 in
`provider`; the two numadir replicas ([[replication.consumer]] refreshAndPersist) on
ldap://10.201.0.11:389 and ldap://10.201.0.12:389 in theirs; every client (ldapsearch,
ldapmodify, authrate, a python-ldap writer) runs in `client`, so every request and every
replication stream crosses the bridge. Checked:

1. Each server listens on its own address (not 127.0.0.1), each replica's consumer connection
   to the provider is established over the bridge, and both replicas equal the provider (every
   entry with every stored attribute, as replication_test.py compares them).
2. authrate, given both replicas' URLs, drives auths for about 12 s while the writer adds a
   `description` value (`write-N`, one per user) to users on the provider and records each
   write the provider acknowledged. During the run: replica1 is stopped (SIGTERM, exit 0): the
   connections on it fail over to replica2 and auths go on there (failovers > 0, all away from
   replica1; replica2's auths in authrate's interval lines of each phase that follows); then
   the provider is stopped: auths still go on on replica2, no write is acknowledged, a
   modify sent to replica2 gets a referral (10) naming the provider's URL and the entry, and
   one sent to the stopped provider fails with "Can't contact LDAP server" (255);
   replica1 is restarted on its kept database and config while the provider is still down and
   serves what it holds; the provider is restarted on the same address and database and writes
   are acknowledged again. Each step is taken on authrate's clock (its interval lines), once
   the phase before it has lines showing auths on replica2, and the run is ended (SIGINT) once
   the last phase has them too: a slow step on a loaded machine makes the run longer, never
   a phase missing. authrate exits 0, its errors are only the auths in flight on the stopped
   replica, and its per-server counts add up.
3. Afterwards both replicas equal the provider again, and every acknowledged write's value is
   on the provider and on both replicas: nothing acknowledged is lost.
4. The test stops every process it started and deletes its namespaces, also on failure or
   SIGTERM; when it starts it deletes a crashed earlier run's namespaces (those whose run's pid
   is gone), the processes still in them and that run's temporary directory. The host's
   namespace has the same links and addresses at the end as at the start.

It needs root (ip netns); run as another user it fails saying so.

  replication_hosts_test.py --numadir build/release/server/numadir --gen perf/gen_users.py \\
      --bin-dir build/release

Standard library + python3-ldap (the writer) + iproute2, ldap-utils, slapd.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, CheckFailed,  # noqa: E402
                             check, check_equal, fail, parse_args, read_until_line, run_checks,
                             user_dn, wait_for)
from replication_test import PROVIDER_INDEXES, consumer_toml, parse_dump  # noqa: E402
import slapd_harness  # noqa: E402

USERS = 2000
PORT = 389
PREFIX = "replication-hosts-"
# The numadir provider of sync_provider_hosts_test.py.
NUMADIR_PROVIDER_TOML = """
[replication.provider]
enabled = true
"""
SUBNET_BITS = 24
ADDRESSES = {"provider": "10.201.0.10", "replica1": "10.201.0.11", "replica2": "10.201.0.12",
             "client": "10.201.0.100"}
RUN_S = 12  # What the steps take on authrate's clock when each is quick.
# authrate's own bound (-d): the run is ended by SIGINT once every phase has its lines, long
# before this unless it stalled.
MAX_RUN_S = 600
# A step fails when authrate printed no interval line (one every 0.5 s) for this long.
STALL_S = 30
CONNECTIONS = 8  # Connections 0, 2, 4, 6 start on replica1, 1, 3, 5, 7 on replica2.
WRITE_PAUSE_S = 0.01  # Between the writer's modifies: ~80 writes/s, a few hundred in all.
# Interval lines with several URLs end "failovers N  by server/s A B".
INTERVAL = re.compile(r"^\s*([\d.]+) s .* failovers (\d+)  by server/s (\d+) (\d+)\s*$")


def ip(*args) -> str:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        fail(f"ip {' '.join(args)} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def in_ns(ns: str, *argv) -> list:
    return ["ip", "netns", "exec", ns, *argv]


def namespace_pids(ns: str):
    result = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True,
                            timeout=30)
    return [int(pid) for pid in result.stdout.split()]


def kill_namespace(ns: str):
    """Kills every process in namespace `ns` (processes of this test or of a crashed run of
    it) and deletes the namespace."""
    for _ in range(50):
        pids = namespace_pids(ns)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)  # The poll interval: the killed processes leave the namespace.
    subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def our_namespaces():
    """{pid: [namespace names]} of every namespace this test makes, by run."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            timeout=30).stdout
    runs = {}
    for line in listed.splitlines():
        name = line.split()[0] if line.split() else ""
        match = re.fullmatch(re.escape(PREFIX) + r"(\d+)-\w+", name)
        if match:
            runs.setdefault(int(match.group(1)), []).append(name)
    return runs


def remove_leftovers():
    """Deletes the namespaces of earlier runs whose process is gone (a crashed run), with the
    processes left in them and the run's temporary directory; a run still going (another test
    process) keeps its own."""
    for pid, names in our_namespaces().items():
        if pid == os.getpid() or os.path.exists(f"/proc/{pid}"):
            continue
        for name in names:
            kill_namespace(name)
        # Its files too (a run that ended kept them only with --keep, and left no namespace).
        for directory in glob.glob(os.path.join(tempfile.gettempdir(), f"{PREFIX}{pid}-*")):
            shutil.rmtree(directory, ignore_errors=True)
        print(f"  deleted the namespaces and files of a crashed run (pid {pid}): "
              f"{', '.join(names)}", flush=True)


def root_links_and_addresses():
    """The host namespace's interfaces and addresses (names and addresses only: counters and
    states may move)."""
    links = sorted(line.split(":")[1].strip().split("@")[0]
                   for line in ip("-o", "link", "show").splitlines())
    addresses = sorted(" ".join(line.split()[1:4]) for line in ip("-o", "addr", "show")
                       .splitlines())
    return links, addresses


class Network:
    """The namespaces, the bridge and the veth pairs; teardown() kills what runs in them."""

    def __init__(self):
        self.base = f"{PREFIX}{os.getpid()}"
        self.net = f"{self.base}-net"
        self.hosts = {host: f"{self.base}-{host}" for host in ADDRESSES}
        self.made = []

    def build(self):
        ip("netns", "add", self.net)
        self.made.append(self.net)
        ip("-n", self.net, "link", "set", "lo", "up")
        ip("-n", self.net, "link", "add", "br0", "type", "bridge", "forward_delay", "0",
           "stp_state", "0")
        ip("-n", self.net, "link", "set", "br0", "up")
        for host, ns in self.hosts.items():
            ip("netns", "add", ns)
            self.made.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
            # Made in `net` with its peer sent straight into `ns`: the root namespace never
            # holds either end.
            ip("-n", self.net, "link", "add", f"v-{host}", "type", "veth", "peer", "name",
               "eth0", "netns", ns)
            ip("-n", self.net, "link", "set", f"v-{host}", "master", "br0", "up")
            ip("-n", ns, "addr", "add", f"{ADDRESSES[host]}/{SUBNET_BITS}", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
        print(f"  namespaces {self.net} (bridge br0) and "
              f"{', '.join(f'{ns} ({ADDRESSES[h]})' for h, ns in self.hosts.items())}",
              flush=True)

    def teardown(self):
        for ns in reversed(self.made):
            kill_namespace(ns)
        self.made = []


def ldap_tool(net: Network, tool: str, url: str, *args, text: str = "", timeout: float = 60):
    """Runs an ldap-utils tool in the client namespace as the rootdn."""
    result = subprocess.run(in_ns(net.hosts["client"], tool, "-x", "-H", url, "-D", ROOT_DN,
                                  "-w", ROOT_PW, *args),
                            input=text, capture_output=True, text=True, timeout=timeout)
    return result.returncode, result.stdout, result.stderr


def reachable(net: Network, url: str) -> bool:
    rc, _, _ = ldap_tool(net, "ldapsearch", url, "-o", "nettimeout=1", "-LLL", "-s", "base",
                         "-b", SUFFIX, "1.1", timeout=10)
    return rc == 0


def dump(net: Network, url: str) -> dict:
    """Every entry of the server with every stored attribute, from the client namespace:
    {normalized dn: {attr: sorted values}} (as replication_test.py's dump)."""
    rc, out, err = ldap_tool(net, "ldapsearch", url, "-LLL", "-o", "ldif-wrap=no", "-b",
                             SUFFIX, "(objectClass=*)", "*", "+", timeout=120)
    if rc != 0:
        fail(f"ldapsearch of {url} failed ({rc}): {err}")
    return parse_dump(out)


def check_same(net: Network, provider, replica, what: str, timeout: float = 60) -> dict:
    """Waits until the replica's dump equals the provider's; fails with the first difference.
    Returns: the replica's dump."""
    expected = dump(net, provider.url)
    last = {}

    def same():
        nonlocal last
        last = dump(net, replica.url)
        return last == expected
    if not wait_for(same, timeout=timeout, interval=0.2):
        missing = sorted(set(expected) - set(last))[:3]
        extra = sorted(set(last) - set(expected))[:3]
        differing = [dn for dn in expected if dn in last and expected[dn] != last[dn]][:1]
        detail = f"missing {missing}, extra {extra}"
        for dn in differing:
            keys = set(expected[dn]) | set(last[dn])
            detail += f"; {dn}: " + ", ".join(
                f"{k}: provider {expected[dn].get(k)} replica {last[dn].get(k)}"
                for k in sorted(keys) if expected[dn].get(k) != last[dn].get(k))
        fail(f"{what}: {replica.name} does not equal the provider after {timeout:.0f} s "
             f"({len(expected)} entries on the provider, {len(last)} on the replica): {detail};"
             f" {replica.name} stderr: {replica.stderr_text()[-1500:]}")
    print(f"  ok: {what}: {replica.name} equals the provider ({len(expected)} entries)",
          flush=True)
    return last


class Provider:
    """slapd with syncprov in the provider namespace; start()/stop() again on the same
    database, config and address."""

    def __init__(self, net: Network, work: str, ldif: str):
        self.name = "the provider"
        self.ns = net.hosts["provider"]
        self.net = net
        self.url = f"ldap://{ADDRESSES['provider']}:{PORT}"
        self.dir = os.path.join(work, "provider")
        self.db_dir = os.path.join(self.dir, "db")
        os.makedirs(self.db_dir)
        self.config = os.path.join(self.dir, "slapd.conf")
        self.stderr_path = os.path.join(self.dir, "slapd.stderr")
        self.process = None
        schema = "".join(f"include {slapd_harness.SCHEMA_DIR}/{name}.schema\n"
                         for name in ("core", "cosine", "inetorgperson", "nis"))
        indexes = "".join(f"index {index}\n" for index in PROVIDER_INDEXES)
        with open(self.config, "w") as stream:
            stream.write(f"""{schema}
modulepath {slapd_harness.MODULE_DIR}
moduleload back_mdb
moduleload syncprov
pidfile {self.dir}/slapd.pid
argsfile {self.dir}/slapd.args

database mdb
maxsize 1073741824
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {ROOT_PW}
directory {self.db_dir}
{indexes}
overlay syncprov
syncprov-checkpoint 100 1
""")
        added = subprocess.run([slapd_harness.SLAPADD, "-q", "-f", self.config, "-l", ldif],
                               capture_output=True, text=True, timeout=120)
        if added.returncode != 0:
            fail(f"slapadd failed ({added.returncode}): {added.stderr[-2000:]}")

    def start(self):
        with open(self.stderr_path, "ab") as stderr:
            self.process = subprocess.Popen(
                in_ns(self.ns, slapd_harness.SLAPD, "-h", f"{self.url}/", "-f", self.config,
                      "-d", "0"),
                stdout=subprocess.DEVNULL, stderr=stderr, stdin=subprocess.DEVNULL)
        if not wait_for(lambda: self.process.poll() is not None or reachable(self.net, self.url),
                        timeout=30, interval=0.05) or self.process.poll() is not None:
            fail(f"slapd did not answer on {self.url} from the client namespace; stderr: "
                 f"{self.stderr_text()}")
        print(f"  slapd: pid {self.process.pid} in {self.ns}, {self.url}", flush=True)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)

    def stderr_text(self) -> str:
        with open(self.stderr_path, "rb") as stream:
            return stream.read().decode(errors="replace")[-2000:]


class Replica:
    """numadir serve in its own namespace with a [[replication.consumer]] for the provider;
    start()/stop() again on the same database and config. With `provider_url` None and
    `ldif` (imported instead of the suffix and its ous) it is a numadir provider:
    sync_provider_hosts_test.py's (`extra_toml`: more tables, `database_toml`: more keys of
    [database])."""

    def __init__(self, args, net: Network, work: str, host: str, rid: int, provider_url,
                 ldif: str = None, extra_toml: str = "", database_toml: str = "",
                 name: str = None):
        self.name = name or host
        self.numadir = os.path.abspath(args.numadir)
        self.ns = net.hosts[host]
        self.url = f"ldap://{ADDRESSES[host]}:{PORT}"
        self.dir = os.path.join(work, host)
        os.makedirs(self.dir)
        self.config = os.path.join(self.dir, "numadir.toml")
        self.stderr_path = os.path.join(self.dir, "serve.stderr")
        self.process = None
        rootpw = subprocess.run([self.numadir, "passwd", "-s", ROOT_PW], capture_output=True,
                                text=True, timeout=60)
        if rootpw.returncode != 0 or not rootpw.stdout.startswith("{"):
            fail(f"numadir passwd -s failed ({rootpw.returncode}): {rootpw.stderr}")
        with open(self.config, "w") as stream:
            stream.write(f"""[database]
path = "{self.dir}/db"
suffix = "{SUFFIX}"
map_size = "1GiB"
durability = "nosync"
indexes = ["objectClass eq", "uid eq,pres", "cn eq,sub", "mail eq"]
{database_toml}
[server]
listen = ["{self.url}"]
rootdn = "{ROOT_DN}"
rootpw = "{rootpw.stdout.strip()}"
listeners = 1
workers = 2
{consumer_toml(work, provider_url, rid) if provider_url else ""}{extra_toml}""")
        base = ldif
        if base is None:
            # The suffix and the two ous only, as replication_test.py's replicas: the rest
            # comes from the provider.
            base = os.path.join(self.dir, "base.ldif")
            with open(base, "w") as stream:
                subprocess.run(["/usr/bin/python3", args.gen, "--users", "0", "--suffix",
                                SUFFIX], stdout=stream, check=True, timeout=60)
        imported = subprocess.run([self.numadir, "import", "-c", self.config, "--no-progress",
                                   base], capture_output=True, text=True, timeout=120)
        if imported.returncode != 0:
            fail(f"numadir import failed ({imported.returncode}): {imported.stderr}")

    def start(self):
        with open(self.stderr_path, "ab") as stderr:
            self.process = subprocess.Popen(in_ns(self.ns, self.numadir, "serve", "-c",
                                                  self.config),
                                            stdout=subprocess.PIPE, stderr=stderr,
                                            stdin=subprocess.DEVNULL)
        line, lines = read_until_line(self.process,
                                     lambda line: f"listening on {self.url}" in line, 60)
        if line is None:
            fail(f"{self.name} did not listen on {self.url}: {lines!r}; stderr: "
                 f"{self.stderr_text()[-2000:]}")
        # Keep draining stdout so the server can never block on a full pipe.
        threading.Thread(target=lambda out: out.read(), args=(self.process.stdout,),
                         daemon=True).start()
        print(f"  {self.name}: pid {self.process.pid} in {self.ns}, {self.url}", flush=True)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)

    def stderr_text(self) -> str:
        with open(self.stderr_path, "rb") as stream:
            return stream.read().decode(errors="replace")


def sockets(ns: str, *args) -> str:
    return subprocess.run(in_ns(ns, "ss", "-Htn", *args), capture_output=True, text=True,
                          timeout=30).stdout


# -- the writer: this file run with --writer in the client namespace ---------------------------
def writer(url: str):
    """Adds `description: write-N` to user N mod USERS on the provider until SIGTERM; prints
    "ack TIME USER VALUE" for each modify the provider acknowledged, "down TIME" for each
    failed connect or modify (TIME: CLOCK_MONOTONIC, shared with the test process)."""
    import ldap
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    conn = None
    sequence = 0
    while not stopping:
        if conn is None:
            try:
                conn = ldap.initialize(url)
                conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 1)
                conn.set_option(ldap.OPT_TIMEOUT, 5)
                conn.simple_bind_s(ROOT_DN, ROOT_PW)
            except ldap.LDAPError:
                conn = None
                print(f"down {time.monotonic():.3f}", flush=True)
                time.sleep(0.1)  # Retry pause while the provider is away.
                continue
        sequence += 1
        user = sequence % USERS
        value = f"write-{sequence}"
        try:
            conn.modify_s(user_dn(user), [(ldap.MOD_ADD, "description", [value.encode()])])
            print(f"ack {time.monotonic():.3f} {user} {value}", flush=True)
        except ldap.LDAPError:
            conn = None
            print(f"down {time.monotonic():.3f}", flush=True)
        time.sleep(WRITE_PAUSE_S)
    print("stopped", flush=True)


class Run:
    """What the test started, for the checks and for teardown."""

    def __init__(self, args, net: Network, provider_kind: str):
        self.args = args
        self.net = net
        self.provider_kind = provider_kind  # "slapd" (syncprov) or "numadir".
        self.work = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
        self.provider = None
        self.replicas = []
        self.others = []  # authrate and the writer.
        self.acks = []  # (CLOCK_MONOTONIC, user number, value) of each acknowledged write.
        self.provider_gone = 0.0  # CLOCK_MONOTONIC once the stopped provider has exited.

    def processes(self):
        return self.others + [s.process for s in [self.provider, *self.replicas]
                              if s is not None and s.process is not None]

    def running(self):
        return [process.pid for process in self.processes() if process.poll() is None]

    def kill_all(self):
        for process in self.processes():
            if process.poll() is None:
                process.kill()
                process.wait()


def check_setup(run: Run):
    run.net.build()
    ldif = os.path.join(run.work, "users.ldif")
    with open(ldif, "w") as stream:
        subprocess.run(["/usr/bin/python3", run.args.gen, "--users", str(USERS), "--suffix",
                        SUFFIX], stdout=stream, check=True, timeout=120)
    if run.provider_kind == "numadir":
        run.provider = Replica(run.args, run.net, run.work, "provider", 0, None, ldif=ldif,
                               extra_toml=NUMADIR_PROVIDER_TOML,
                               database_toml="server_id = 1", name="the provider")
    else:
        run.provider = Provider(run.net, run.work, ldif)
    run.provider.start()
    run.replicas = [Replica(run.args, run.net, run.work, f"replica{n}", n, run.provider.url)
                    for n in (1, 2)]
    for replica in run.replicas:
        replica.start()
    for replica in run.replicas:
        check_same(run.net, run.provider, replica, f"initial refresh of {USERS} users")
    provider_address = f"{ADDRESSES['provider']}:{PORT}"
    listening = sockets(run.provider.ns, "-l")
    check(provider_address in listening and "127.0.0.1" not in listening,
          f"the provider ({run.provider_kind}) listens on {provider_address} only", listening)
    for replica in run.replicas:
        address = f"{ADDRESSES[replica.name]}:{PORT}"
        listening = sockets(replica.ns, "-l")
        check(address in listening and "127.0.0.1" not in listening,
              f"{replica.name} listens on {address} only", listening)
        established = sockets(replica.ns, "state", "established")
        check(re.search(rf"{re.escape(ADDRESSES[replica.name])}:\d+\s+"
                        rf"{re.escape(provider_address)}", established) is not None,
              f"{replica.name}'s consumer is connected to the provider over the bridge",
              established)
    if run.provider_kind == "numadir":
        check_provider_monitor(run)


def check_provider_monitor(run: Run):
    """The numadir provider's cn=Monitor: a persisting refreshAndPersist search per replica,
    its peer the replica's address."""
    peers = {}

    def both():
        rc, out, _ = ldap_tool(run.net, "ldapsearch", run.provider.url, "-LLL", "-o",
                               "ldif-wrap=no", "-b", "cn=Provider,cn=Replication,cn=Monitor",
                               "(&(objectClass=numadirSyncConsumerObject)"
                               "(numadirSyncPhase=persist)(numadirSyncMode=refreshAndPersist))",
                               "numadirPeer", timeout=30)
        peers.clear()
        for peer in re.findall(r"^numadirPeer: (\S+)$", out, re.M):
            peers[peer.rsplit(":", 1)[0]] = peer
        return rc == 0 and sorted(peers) == sorted(ADDRESSES[r.name] for r in run.replicas)
    check(wait_for(both, timeout=30, interval=0.2),
          "the provider's cn=Monitor shows a persisting sync search from each replica's address",
          f"{peers}")


def check_failures_during_load(run: Run):
    net, provider = run.net, run.provider
    replica1, replica2 = run.replicas
    authrate = os.path.join(run.args.bin_dir, "perf", "authrate")
    writes = subprocess.Popen(in_ns(net.hosts["client"], "/usr/bin/python3",
                                    os.path.abspath(__file__), "--writer", provider.url),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run.others.append(writes)
    load = subprocess.Popen(in_ns(net.hosts["client"], authrate, "-b", PEOPLE, "--last",
                                  str(USERS - 1), "--json", "-c", str(CONNECTIONS), "-t", "1",
                                  "-d", str(MAX_RUN_S), "-i", "0.5", "--timeout", "3",
                                  "-H", replica1.url, "-H", replica2.url),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run.others.append(load)
    lines = []  # (elapsed s, failovers, replica1's auths/s, replica2's auths/s)
    load_stderr = []

    def read_stderr():
        for line in load.stderr:
            load_stderr.append(line)
            match = INTERVAL.match(line)
            if match:
                lines.append((float(match.group(1)), int(match.group(2)), int(match.group(3)),
                              int(match.group(4))))
    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()

    def reached(elapsed: float, since) -> bool:
        return bool(lines) and lines[-1][0] >= elapsed and (
            since is None or any(line[3] > 0 for line in lines if line[0] > since))

    def at(elapsed: float, what: str, since=None) -> float:
        """Waits for authrate's interval lines to reach `elapsed` s and, with `since`, to show
        auths on replica2 in a line after `since` s (the phase before the step has what its
        check needs); returns the elapsed time of the last line (the moment of the step, on
        authrate's clock). Waits as long as authrate makes progress: fails once it ended or
        printed no line for STALL_S."""
        seen, last_line = len(lines), time.monotonic()
        while not reached(elapsed, since):
            if load.poll() is not None:
                reader.join(timeout=10)  # The lines it printed before it ended.
                if reached(elapsed, since):
                    break
                fail(f"authrate ended (exit {load.returncode}) before {what}: interval lines "
                     f"{lines}, stderr {''.join(load_stderr)[-1500:]}")
            if len(lines) != seen:
                seen, last_line = len(lines), time.monotonic()
            elif time.monotonic() - last_line > STALL_S:
                wanted = f"{elapsed:.1f} s" + (
                    "" if since is None else f" and auths on replica2 after {since:.1f} s")
                fail(f"authrate printed no interval line for {STALL_S} s, waiting for {wanted} "
                     f"before {what}: interval lines {lines}, "
                     f"stderr {''.join(load_stderr)[-1500:]}")
            time.sleep(0.05)
        return lines[-1][0]

    events = {}  # step -> (authrate elapsed s, CLOCK_MONOTONIC)
    t = at(2.5, "stopping replica1")
    events["replica1 stopped"] = (t, time.monotonic())
    check_equal(replica1.stop(), 0, "replica1 stopped on SIGTERM with exit status 0")

    t = at(t + 2.0, "stopping the provider", since=t + 1.0)
    events["provider stopped"] = (t, time.monotonic())
    check_equal(provider.stop(), 0, "the provider stopped on SIGTERM with exit status 0")
    run.provider_gone = time.monotonic()  # slapd has exited.
    rc, out, err = ldap_tool(net, "ldapmodify", replica2.url,
                             text=f"dn: {user_dn(7)}\nchangetype: modify\nreplace: sn\n"
                                  f"sn: Local\n", timeout=30)
    check_equal(rc, 10, "a modify sent to replica2 while the provider is down: referral (10)")
    check(f"{provider.url}/{user_dn(7)}" in out + err,
          f"the referral names the provider ({provider.url}) and the entry", out + err)
    rc, out, err = ldap_tool(net, "ldapmodify", provider.url,
                             text=f"dn: {user_dn(7)}\nchangetype: modify\nreplace: sn\n"
                                  f"sn: Local\n", timeout=30)
    check(rc == 255 and "Can't contact LDAP server" in err,
          "a modify sent to the stopped provider fails clearly: Can't contact LDAP server "
          "(255)", f"rc {rc}: {out} {err}")

    t = at(t + 2.0, "restarting replica1", since=t + 1.0)
    events["replica1 restarted"] = (t, time.monotonic())
    replica1.start()
    rc, out, err = ldap_tool(net, "ldapsearch", replica1.url, "-LLL", "-b", PEOPLE,
                             f"(uid=user{USERS - 1})", "uid", timeout=30)
    check(rc == 0 and f"uid: user{USERS - 1}" in out,
          "replica1 restarted while the provider is down serves its kept database",
          f"rc {rc}: {out} {err}")

    t = at(t + 1.0, "restarting the provider", since=t + 1.0)
    events["provider restarted"] = (t, time.monotonic())
    provider.start()

    # The rest of the run, as long as it takes: RUN_S on authrate's clock when the steps were
    # quick, and lines after the restart with auths on replica2; then SIGINT ends it.
    at(max(RUN_S, t + 4.5), "ending the run", since=t + 1.0)
    load.send_signal(signal.SIGINT)
    # Not communicate(): it would read standard error too, taking interval lines from
    # read_stderr. The summary is one small JSON object, written when the run ends.
    try:
        load.wait(timeout=60)
    except subprocess.TimeoutExpired:
        fail(f"authrate did not end on SIGINT: {''.join(load_stderr)[-1500:]}")
    stdout = load.stdout.read()
    reader.join(timeout=10)
    time.sleep(1.0)  # A second more of acknowledged writes after the provider's restart.
    writes.send_signal(signal.SIGTERM)
    written, writer_err = writes.communicate(timeout=30)
    print("  " + ", ".join(f"{step} at {e:.1f} s" for step, (e, _) in events.items()),
          flush=True)

    try:
        summary = json.loads(stdout)
    except json.JSONDecodeError:
        fail(f"authrate printed no JSON (exit {load.returncode}): {stdout[-500:]} "
             f"{''.join(load_stderr)[-1500:]}")
    per_server = summary["per_server"]
    print(f"  authrate: auths {summary['auths']}, failovers {summary['failovers']}, errors "
          f"{summary['errors']}, per_server {per_server}", flush=True)
    check_equal(load.returncode, 0, "authrate exited 0")
    check([entry["url"] for entry in per_server] == [replica1.url, replica2.url],
          "per_server lists both replicas' URLs in order", f"{per_server}")
    check(sum(entry["auths"] for entry in per_server) == summary["auths"],
          "the per-server auths sum to the total", f"{per_server} vs {summary['auths']}")
    check(per_server[0]["auths"] > 0 and per_server[1]["auths"] > 0,
          "both replicas completed auths", f"{per_server}")
    check(0 < summary["failovers"] <= CONNECTIONS // 2 + 2,
          f"failovers > 0 and at most the {CONNECTIONS // 2} connections on replica1 (+2)",
          f"{summary['failovers']}")
    check(per_server[0]["failovers_from"] == summary["failovers"] and
          per_server[1]["failovers_from"] == 0,
          "every failover was away from replica1, none away from replica2", f"{per_server}")
    errors = summary["errors"]
    allowed = {"connection_dropped", "connect_failed", "ldap_result"}
    check(all(count == 0 for kind, count in errors["by_kind"].items() if kind not in allowed)
          and errors["total"] <= CONNECTIONS,
          f"errors only the auths in flight on replica1 when it stopped (at most "
          f"{CONNECTIONS})", f"{errors}")
    # Each phase's interval lines, on authrate's clock (each step taken at a line's time;
    # +1 s for the line in progress when it was taken). Per phase rather than per 0.5 s line,
    # so that a moment's stall of a loaded machine does not count as auths stopping.
    replica1_stop, provider_stop, replica1_restart, provider_restart = (
        events[step][0] for step in ("replica1 stopped", "provider stopped",
                                     "replica1 restarted", "provider restarted"))
    run_s = lines[-1][0]  # The run's length on authrate's clock, to its last line.
    check(len(lines) >= 2 * int(run_s) - 2 and
          all(a[0] <= b[0] for a, b in zip(lines, lines[1:])),
          "authrate printed its interval lines every 0.5 s", f"{[line[0] for line in lines]}")

    def phase(start: float, end: float):
        return [line for line in lines if start < line[0] <= end]
    before = phase(0, replica1_stop)
    check(sum(a for _, _, a, _ in before) > 0 and sum(b for _, _, _, b in before) > 0,
          "before any stop both replicas completed auths", f"{before}")
    for what, start, end in (
            ("replica1 stopped, the provider up", replica1_stop + 1.0, provider_stop),
            ("the provider down too", provider_stop + 1.0, provider_restart),
            ("everything back", provider_restart + 1.0, run_s + 1.0)):
        lines_in = phase(start, end)
        check(lines_in and sum(b for _, _, _, b in lines_in) > 0,
              f"{what} ({start:.1f} s to {min(end, run_s):.1f} s): auths go on on replica2",
              f"{lines_in}")
    check(lines[-1][3] > 0, "auths on replica2 to the end of the run", f"{lines[-3:]}")
    down = phase(replica1_stop + 1.0, replica1_restart)
    check(all(a == 0 for _, _, a, _ in down), "stopped, replica1 completes nothing",
          f"{down}")

    acks = []
    refused = []
    for line in written.splitlines():
        words = line.split()
        if words and words[0] == "ack":
            acks.append((float(words[1]), int(words[2]), words[3]))
        elif words and words[0] == "down":
            refused.append(float(words[1]))
    check("stopped" in written, "the writer ran until stopped", f"{written[-500:]} "
          f"{writer_err[-1500:]}")
    stop_time, restart_time = (events["provider stopped"][1], events["provider restarted"][1])
    provider_gone = run.provider_gone
    print(f"  writer: {len(acks)} writes acknowledged, {len(refused)} refused", flush=True)
    # An answer read just before slapd exited may be stamped a little later.
    check(not [a for a in acks if provider_gone + 0.5 < a[0] < restart_time],
          "no write acknowledged while the provider is down", f"{acks[-5:]}")
    check(any(stop_time < r < restart_time for r in refused),
          "writes were refused while the provider was down", f"{refused[-5:]}")
    check(len([a for a in acks if a[0] < stop_time]) >= 50 and
          any(a[0] > restart_time for a in acks),
          "writes acknowledged before the provider's stop and after its restart",
          f"{len(acks)} acknowledged")
    run.acks = acks


def check_converged(run: Run):
    net, provider = run.net, run.provider
    expected = dump(net, provider.url)
    for replica in run.replicas:
        check(replica.process.poll() is None, f"{replica.name} is running",
              f"exit {replica.process.returncode}: {replica.stderr_text()[-1500:]}")
    # Every acknowledged write on the provider and on both replicas.
    dumps = {"the provider": expected}
    for replica in run.replicas:
        dumps[replica.name] = check_same(net, provider, replica,
                                         "after the stops and restarts under load")
    for where, entries in dumps.items():
        lost = [(user, value) for _, user, value in run.acks
                if value not in entries.get(user_dn(user).lower(), {}).get("description", [])]
        check(not lost, f"all {len(run.acks)} acknowledged writes are on {where}",
              f"{len(lost)} missing, e.g. {lost[:5]}")
    check(expected[user_dn(7).lower()]["sn"] != ["Local"],
          "the write refused by replica2 is not on the provider (nor, equal to it, on the "
          "replicas)", f"{expected[user_dn(7).lower()]}")


def main(name: str = "replication_hosts", doc: str = __doc__, provider_kind: str = "slapd",
         prefix: str = PREFIX) -> int:
    """The test with `provider_kind` "slapd" (this file) or "numadir"
    (sync_provider_hosts_test.py); `prefix` names its namespaces and temporary folders."""
    global PREFIX
    PREFIX = prefix
    if len(sys.argv) == 3 and sys.argv[1] == "--writer":
        writer(sys.argv[2])
        return 0
    args = parse_args(doc)
    if os.geteuid() != 0:
        message = (f"FAIL {name}: needs root (it makes network namespaces with "
                   "ip netns); run it as root, as CI does")
        print(message, flush=True)
        sys.stderr.write(message + "\n")
        return 1
    for missing in (slapd_harness.available() if provider_kind == "slapd" else "",
                    "" if shutil.which("ip") else "ip is missing: install iproute2",
                    "" if args.bin_dir else "--bin-dir is required (authrate)"):
        if missing:
            print(f"FAIL {name}: {missing}", flush=True)
            return 1
    # A SIGTERM to the test fails the check in progress and still runs the teardown.
    def terminated(*_):
        raise CheckFailed("the test got SIGTERM")
    signal.signal(signal.SIGTERM, terminated)
    start = time.monotonic()
    remove_leftovers()
    root_before = root_links_and_addresses()
    net = Network()
    run = Run(args, net, provider_kind)

    def teardown():
        run.kill_all()
        net.teardown()
        remaining = our_namespaces().get(os.getpid(), [])
        check(not remaining and not run.running(),
              "every process of the test ended and every namespace of it deleted",
              f"namespaces {remaining}, processes {run.running()}")
        check_equal(root_links_and_addresses(), root_before,
                    "the host's namespace has the links and addresses it had")

    try:
        status = run_checks(name, [
            ("five namespaces; the provider and two replicas on their own addresses converge",
             lambda: check_setup(run)),
            ("authrate on both replicas and writes on the provider while a replica and then "
             "the provider stop and come back", lambda: check_failures_during_load(run)),
            ("both replicas converge with every acknowledged write",
             lambda: check_converged(run)),
            ("teardown", teardown),
        ])
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # Nothing interrupts the teardown.
        try:
            run.kill_all()
        finally:
            net.teardown()
            if args.keep:
                print(f"  kept {run.work}", flush=True)
            else:
                shutil.rmtree(run.work, ignore_errors=True)
    print(f"{name}: {time.monotonic() - start:.1f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
