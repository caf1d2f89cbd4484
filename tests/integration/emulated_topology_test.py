#!/usr/bin/python3
"""Serving on an emulated topology (threads.topology): `numadir serve` with "numa:2 core:1 pu:1"
plans two NUMA nodes of one PU each, maps them onto this machine's PUs, and serves on both.

  emulated_topology_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

- cn=Monitor shows two pools (node0, node1), listeners and workers on each node;
- every listener and worker thread is pinned to its node's one PU (its Cpus_allowed_list in
  /proc/PID/task/TID/status), the two nodes' PUs different when the machine has two or more;
- binds and searches through python-ldap are answered, and the start line warns that the
  topology is emulated;
- each listener and worker thread's memory policy (/proc/PID/task/TID/numa_maps) prefers the
  NUMA node of its PU (on one-node hardware node 0: a no-op), the main thread's stays the
  default; where the system refuses the binding, standard error says so once;
- connections made from CPU 0 are accepted by node 0's listener and those from CPU 1 by node 1's
  (the reuseport program steering by the receiving CPU), and their requests are decoded and run
  by that node's threads only.
Exits 0 on success, 1 with the first failure.
"""
import os
import socket
import sys

import ldap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (NumadirServer, ROOT_DN, ROOT_PW, check, check_equal,  # noqa: E402
                             parse_args, parse_ldif, run_checks, user_dn, user_pw)


def monitor_entries(server, base):
    rc, out, err = server.ldap("ldapsearch", "-x", "-D", ROOT_DN, "-w", ROOT_PW, "-LLL", "-b",
                               base, "-s", "one", "(objectClass=*)")
    check(rc == 0, f"the rootdn reads {base}", err)
    return parse_ldif(out)


def monitor_root(server):
    rc, out, err = server.ldap("ldapsearch", "-x", "-D", ROOT_DN, "-w", ROOT_PW, "-LLL", "-b",
                               "cn=Monitor", "-s", "base", "(objectClass=*)")
    check(rc == 0, "the rootdn reads cn=Monitor", err)
    return parse_ldif(out)[0][1]


def pinned_pu(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/status") as stream:
        for line in stream:
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    return ""


def check_nodes(server):
    pools = monitor_entries(server, "cn=Pools,cn=Monitor")
    check_equal(sorted(entry["description"][0] for _, entry in pools), ["node0", "node1"],
                "two pools, one per emulated node")
    for kind in ("Listeners", "Workers"):
        threads = monitor_entries(server, f"cn={kind},cn=Monitor")
        nodes = sorted({entry["numadirpool"][0] for _, entry in threads})
        check_equal(nodes, ["0", "1"], f"cn={kind} has threads on both nodes' pools")
        pus = {}
        for _, entry in threads:
            pu = pinned_pu(server.process.pid, entry["numadirthreadid"][0])
            check(pu.isdigit(), f"each of cn={kind} is pinned to one PU", f"allowed {pu!r}")
            pus.setdefault(entry["numadirpool"][0], set()).add(pu)
        check(all(len(node_pus) == 1 for node_pus in pus.values()),
              f"each node's threads of cn={kind} share its one PU", f"{pus}")
        if os.cpu_count() >= 2:
            check(pus["0"] != pus["1"],
                  f"the two nodes' threads of cn={kind} run on two different PUs", f"{pus}")


def memory_policy(pid, tid):
    """Thread `tid`'s memory policy, as numa_maps shows it for a mapping with none of its own:
    "default", "prefer (many):0", "bind:0-1", ... (the first mapping's; numadir sets none)."""
    with open(f"/proc/{pid}/task/{tid}/numa_maps") as stream:
        fields = stream.readline().split()[1:]
    words = []
    for field in fields:
        if "=" in field:
            break
        words.append(field)
    return " ".join(words)


def node_of_cpu(cpu):
    """The NUMA node of CPU `cpu` ("0" when sysfs does not say)."""
    path = f"/sys/devices/system/cpu/cpu{cpu}"
    nodes = [name[4:] for name in os.listdir(path) if name.startswith("node")] \
        if os.path.isdir(path) else []
    return nodes[0] if nodes else "0"


def check_memory(server):
    """Each node's threads ask for its memory: a listener or worker prefers the node of the PU
    it is pinned to; the main thread keeps the default policy (the binding is per thread)."""
    refusals = server.stderr_text().count("first touches it")
    if refusals:
        check(refusals == 1, "a refused memory binding is said once", server.stderr_text()[-400:])
        print("  skipped: this system refuses memory binding", flush=True)
        return
    pid = server.process.pid
    check_equal(memory_policy(pid, pid), "default", "the main thread's memory policy")
    for kind in ("Listeners", "Workers"):
        for _, entry in monitor_entries(server, f"cn={kind},cn=Monitor"):
            tid = entry["numadirthreadid"][0]
            policy = memory_policy(pid, tid)
            node = node_of_cpu(pinned_pu(pid, tid))
            check(policy.split(" ")[0] in ("prefer", "bind") and policy.rsplit(":", 1)[-1] == node,
                  f"{entry['cn'][0]} binds its memory to node {node}", f"policy {policy!r}")


def accepted_by_pool(server):
    """numadirConnectionsTotal of each pool's listeners, by pool index ("0", "1")."""
    totals = {}
    for _, entry in monitor_entries(server, "cn=Listeners,cn=Monitor"):
        pool = entry["numadirpool"][0]
        totals[pool] = totals.get(pool, 0) + int(entry["numadirconnectionstotal"][0])
    return totals


def check_steering(server):
    """A connection made from CPU c is accepted by the listener of c's node: the kernel runs a
    loopback connect's SYN on the connecting CPU, which the reuseport program reads."""
    if os.cpu_count() < 2:
        print("  skipped: one CPU, both nodes share it", flush=True)
        return
    saved = os.sched_getaffinity(0)
    try:
        for cpu, pool in ((0, "0"), (1, "1"), (0, "0")):
            before = accepted_by_pool(server)
            os.sched_setaffinity(0, {cpu})
            sockets = [socket.create_connection(("127.0.0.1", server.port), timeout=10)
                       for _ in range(10)]
            os.sched_setaffinity(0, saved)
            for sock in sockets:
                sock.close()
            after = accepted_by_pool(server)
            gained = {p: after.get(p, 0) - before.get(p, 0) for p in after}
            # The monitor's own ldapsearch connections count too, wherever they land.
            check(gained.get(pool, 0) >= 10 and sum(gained.values()) - gained.get(pool, 0) <= 1,
                  f"connections made on CPU {cpu} are accepted by node {pool}'s listener",
                  f"gained by pool: {gained}")
    finally:
        os.sched_setaffinity(0, saved)
    check("by the kernel's hash" not in server.stderr_text(),
          "the kernel took the reuseport program", server.stderr_text()[-400:])
    root = monitor_root(server)
    check(root.get("numadirsteering") == ["cpu"], "cn=Monitor says connections are steered by CPU",
          f"{root}")


def requests_by_pool(server):
    """numadirRequests of each pool's listeners and workers together, by pool index."""
    totals = {}
    for kind in ("Listeners", "Workers"):
        for _, entry in monitor_entries(server, f"cn={kind},cn=Monitor"):
            pool = entry["numadirpool"][0]
            totals[pool] = totals.get(pool, 0) + int(entry["numadirrequests"][0])
    return totals


def check_requests_stay(server):
    """The requests of a node's connections are decoded and run by that node's threads only:
    with this process (and the ldapsearch it starts to read cn=Monitor) on CPU k, the other
    node's listener and workers count nothing."""
    if os.cpu_count() < 2:
        print("  skipped: one CPU, both nodes share it", flush=True)
        return
    saved = os.sched_getaffinity(0)
    try:
        for cpu, pool, other in ((0, "0", "1"), (1, "1", "0")):
            os.sched_setaffinity(0, {cpu})
            before = requests_by_pool(server)
            conn = ldap.initialize(server.url)
            for n in range(1, 51):
                conn.simple_bind_s(user_dn(n), user_pw(n))
                conn.search_s("ou=people,dc=example,dc=com", ldap.SCOPE_ONELEVEL,
                              f"(uid=user{n})", ["uid"])
            conn.unbind_s()
            after = requests_by_pool(server)
            check(after[pool] - before[pool] >= 100 and after[other] == before[other],
                  f"requests made on CPU {cpu} run on node {pool}'s threads only",
                  f"before {before}, after {after}")
    finally:
        os.sched_setaffinity(0, saved)


def check_serves(server):
    conn = ldap.initialize(server.url)
    for n in range(1, 21):
        conn.simple_bind_s(user_dn(n), user_pw(n))
        found = conn.search_s("ou=people,dc=example,dc=com", ldap.SCOPE_ONELEVEL,
                              f"(uid=user{n})", ["uid"])
        check(len(found) == 1, f"a search as user{n} finds its entry")
    conn.unbind_s()
    check("threads.topology: serving on the emulated topology" in server.stderr_text(),
          "the server says it serves on an emulated topology", server.stderr_text()[-400:])


def main():
    args = parse_args(__doc__)
    with NumadirServer(args.numadir, args.gen, users=100,
                       extra_toml='[threads]\ntopology = "numa:2 core:1 pu:1"\n') as server:
        return run_checks("emulated topology", [
            ("two nodes, each pinned", lambda: check_nodes(server)),
            ("it serves", lambda: check_serves(server)),
            ("memory on its node", lambda: check_memory(server)),
            ("connections on their node", lambda: check_steering(server)),
            ("requests on their node", lambda: check_requests_stay(server)),
        ])


if __name__ == "__main__":
    sys.exit(main())
