#!/usr/bin/python3
"""cn=Monitor and `numadir stats` against a real `numadir serve`, with both dispatchers:
binds made with ldapwhoami and python-ldap are counted, the subtree has an entry per listener,
worker and pool with live thread ids and CPU times, filters and scopes work, only the rootdn
sees it (anonymous and users get noSuchObject), writes are refused with unwillingToPerform,
the root DSE names it in monitorContext, and `numadir stats --count 2` prints two views with
auths/s, listeners and workers.

  monitor_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 when every check passes; otherwise 1 with the first failing check.
"""
import os
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    ROOT_DN, ROOT_PW, check, check_equal, fail, parse_args, parse_ldif, run_suite, user_dn,
    user_pw)

import ldap  # noqa: E402  python3-ldap

USERS = 100
BINDS_WHOAMI = 10
BINDS_PYTHON = 30

S = None  # The running server.
ARGS = None
DISPATCHER = None


def monitor(*args, bind="root", expect_rc=0, what="ldapsearch of cn=Monitor"):
    """ldapsearch -LLL below cn=Monitor; bind: "root", None (anonymous) or (dn, password)."""
    auth = ["-x"]
    if bind == "root":
        auth += ["-D", ROOT_DN, "-w", ROOT_PW]
    elif bind is not None:
        auth += ["-D", bind[0], "-w", bind[1]]
    rc, out, err = S.ldap("ldapsearch", *auth, "-LLL", *args)
    if rc != expect_rc:
        fail(f"{what}: exit status {rc}, expected {expect_rc}; stderr: {err.strip()}")
    return parse_ldif(out)


def counter(entry, name):
    values = entry[1].get(name.lower())
    if not values:
        fail(f"{entry[0]} has no {name}: {sorted(entry[1])}")
    return int(values[0])


def operations():
    entries = monitor("-b", "cn=Operations,cn=Monitor", "-s", "base")
    check_equal(len(entries), 1, "cn=Operations,cn=Monitor is one entry")
    return entries[0]


def python_ldap_binds(count, start=1):
    """Binds `count` users on one python-ldap connection (simple binds, one after the other)."""
    conn = ldap.initialize(S.url, bytes_mode=False)
    try:
        for n in range(start, start + count):
            conn.simple_bind_s(user_dn(n), user_pw(n))
    finally:
        conn.unbind_s()


# -- checks ---------------------------------------------------------------------------------------
def check_binds_are_counted():
    before = operations()
    for n in range(1, BINDS_WHOAMI + 1):
        rc, out, err = S.ldap("ldapwhoami", "-x", "-D", user_dn(n), "-w", user_pw(n))
        if rc != 0:
            fail(f"ldapwhoami as {user_dn(n)}: rc {rc}, {err.strip()}")
    python_ldap_binds(BINDS_PYTHON)
    rc, _, _ = S.ldap("ldapwhoami", "-x", "-D", user_dn(1), "-w", "wrong password")
    check_equal(rc, 49, "a wrong password is refused (invalidCredentials)")
    after = operations()
    made = BINDS_WHOAMI + BINDS_PYTHON
    auths = counter(after, "numadirAuths") - counter(before, "numadirAuths")
    binds = counter(after, "numadirBinds") - counter(before, "numadirBinds")
    # The rootdn bind of the second ldapsearch is an auth too.
    check(auths >= made + 1, f"numadirAuths grew by at least the {made} user binds made",
          f"grew by {auths}")
    check(binds >= made + 2, "numadirBinds counts the failed bind as well",
          f"grew by {binds}")
    check(counter(after, "numadirExtendedOperations") >= BINDS_WHOAMI,
          "numadirExtendedOperations counts the WhoAmI requests",
          f"{counter(after, 'numadirExtendedOperations')}")


def check_entries():
    entries = monitor("-b", "cn=Monitor", "-s", "sub")
    dns = [dn.lower() for dn, _ in entries]
    for dn in ("cn=monitor", "cn=connections,cn=monitor", "cn=operations,cn=monitor",
               "cn=listeners,cn=monitor", "cn=listener 0,cn=listeners,cn=monitor",
               "cn=workers,cn=monitor", "cn=worker 0,cn=workers,cn=monitor",
               "cn=worker 1,cn=workers,cn=monitor", "cn=pools,cn=monitor",
               "cn=pool 0,cn=pools,cn=monitor"):
        check(dn in dns, f"the subtree holds {dn}", f"observed {dns}")
    by_dn = {dn.lower(): (dn, attrs) for dn, attrs in entries}
    server = by_dn["cn=monitor"]
    check_equal(server[1].get("numadirdispatcher"), [DISPATCHER],
                "cn=Monitor names the dispatcher")
    check(server[1].get("numadirversion", [""])[0].startswith("numadir "),
          "cn=Monitor names the version", f"{server[1].get('numadirversion')}")
    connections = by_dn["cn=connections,cn=monitor"]
    check(counter(connections, "numadirConnections") >= 1,
          "cn=Connections counts the searching connection as open")
    check(counter(connections, "numadirConnectionsTotal") >= BINDS_WHOAMI + 3,
          "cn=Connections counts every connection accepted",
          f"{counter(connections, 'numadirConnectionsTotal')}")
    listener_requests = 0
    for dn, attrs in entries:
        if not re.fullmatch(r"cn=(listener|worker) \d+,cn=(listeners|workers),cn=monitor",
                            dn.lower()):
            continue
        tid = counter((dn, attrs), "numadirThreadId")
        check(os.path.exists(f"/proc/{S.process.pid}/task/{tid}"),
              f"{dn}: numadirThreadId {tid} is a thread of the server")
        counter((dn, attrs), "numadirCpuTimeMs")
        if dn.lower().startswith("cn=listener"):
            listener_requests += counter((dn, attrs), "numadirRequests")
        else:
            counter((dn, attrs), "numadirParks")
            counter((dn, attrs), "numadirBusyTimeMs")
    check(listener_requests >= BINDS_WHOAMI + BINDS_PYTHON,
          "the listeners' numadirRequests count at least the binds made",
          f"{listener_requests}")
    pool = by_dn["cn=pool 0,cn=pools,cn=monitor"]
    check(counter(pool, "numadirQueueHighWater") >= counter(pool, "numadirQueueDepth"),
          "the pool's high-water mark is at least its depth")
    check_equal(counter(pool, "numadirQueueCapacity"), 4096,
                "the pool's capacity is server.queue_capacity")


def check_scopes_and_filters():
    entries = monitor("-b", "cn=Workers,cn=Monitor", "-s", "one", "(numadirRequests>=1)",
                      "numadirRequests")
    check(len(entries) >= 1 and all(set(a) == {"numadirrequests"} for _, a in entries),
          "a one-level search with an ordering filter returns the busy workers' counter only",
          f"observed {entries}")
    entries = monitor("-b", "cn=Monitor", "-s", "sub", "(numadirThreadName=listener*)", "1.1")
    check(len(entries) >= 1 and all(dn.lower().startswith("cn=listener ") for dn, _ in entries),
          "a substring filter on numadirThreadName finds the listeners", f"observed {entries}")
    entries = monitor("-b", "cn=Monitor", "-s", "base", "(objectClass=numadirMonitor)", "cn")
    check_equal(entries, [("cn=Monitor", {"cn": ["Monitor"]})], "a base search of cn=Monitor")
    monitor("-b", "cn=Nothing,cn=Monitor", expect_rc=32,
            what="a name below cn=Monitor that is not there")
    rc, out, err = S.ldap("ldapsearch", "-x", "-LLL", "-b", "", "-s", "base", "monitorContext")
    entries = parse_ldif(out)
    check(rc == 0 and entries and entries[0][1].get("monitorcontext") == ["cn=Monitor"],
          "the root DSE names cn=Monitor in monitorContext", f"rc {rc}, {out!r}")


def check_access():
    monitor("-b", "cn=Monitor", bind=None, expect_rc=32,
            what="anonymous search of cn=Monitor (noSuchObject)")
    monitor("-b", "cn=Workers,cn=Monitor", "-s", "one", bind=None, expect_rc=32,
            what="anonymous search of cn=Workers,cn=Monitor (noSuchObject)")
    monitor("-b", "cn=Monitor", bind=(user_dn(2), user_pw(2)), expect_rc=32,
            what="a user's search of cn=Monitor (noSuchObject)")
    rc, _, err = S.ldap_root("ldapmodify", input_text=(
        "dn: cn=Monitor\nchangetype: modify\nreplace: description\ndescription: x\n"))
    check_equal(rc, 53, "the rootdn's modify of cn=Monitor is unwillingToPerform")
    rc, _, err = S.ldap_root("ldapdelete", "cn=Worker 0,cn=Workers,cn=Monitor")
    check_equal(rc, 53, "the rootdn's delete below cn=Monitor is unwillingToPerform")


def run_stats(*args, timeout=60):
    command = [ARGS.numadir, "stats", "-H", S.url, *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    print(f"  $ numadir stats {' '.join(args)} -> rc {result.returncode}", flush=True)
    return result


def check_stats():
    # Binds go on while stats watches, so some view shows auths/s above 0.
    stop = threading.Event()
    errors = []

    def bind_loop():
        conn = ldap.initialize(S.url, bytes_mode=False)
        n = 0
        try:
            while not stop.is_set():
                conn.simple_bind_s(user_dn(n % (USERS - 1) + 1), user_pw(n % (USERS - 1) + 1))
                n += 1
        except ldap.LDAPError as error:
            errors.append(error)
        finally:
            conn.unbind_s()

    loader = threading.Thread(target=bind_loop)
    loader.start()
    try:
        result = run_stats("-D", ROOT_DN, "-w", ROOT_PW, "--count", "2", "--interval", "0.5")
    finally:
        stop.set()
        loader.join()
    check(not errors, "binds succeed while stats watches", f"{errors}")
    check_equal(result.returncode, 0, "numadir stats --count 2 exits 0")
    out = result.stdout
    check_equal(out.count("numadir stats  " + S.url), 2, "it prints two views")
    check("\x1b[" not in out, "not on a terminal: plain blocks, no escape codes")
    rates = [float(value) for value in re.findall(r"auths/s (\d+\.\d)", out)]
    check(len(rates) == 2 and max(rates) > 0, "auths/s is shown and counts the binds made",
          f"observed {rates}; output:\n{out}")
    for heading in ("POOL", "LISTENER", "WORKER", "CPU%", "BUSY%", "REQ/S", "QUEUE"):
        check(heading in out, f"the view has a {heading} column")
    check(re.search(r"\n0\s+listener-\S+\s+\d+\s+\d+\s+\d+\.\d\s+\d+\.\d\s+\d+\.\d\n", out)
          is not None, "a listener line shows its connections, requests/s, run/s and CPU%", out)
    check(len(re.findall(r"\n\d+\s+worker-\S+\s+\d+\s+\d+\.\d\s+\d+\.\d\s+\d+\.\d", out)) == 4,
          "two worker lines per view show requests/s, busy% and CPU%", out)

    password_file = os.path.join(S.dir, "rootpw")
    with open(password_file, "w") as stream:
        stream.write(ROOT_PW + "\n")
    result = run_stats("-D", ROOT_DN, "-y", password_file, "--once", "--interval", "0.2")
    check(result.returncode == 0 and result.stdout.count("numadir stats  ") == 1,
          "numadir stats -y FILE --once prints one view",
          f"rc {result.returncode}, stderr {result.stderr}")
    result = run_stats("--once")
    check(result.returncode == 1 and "no such object" in result.stderr,
          "anonymous, numadir stats fails: cn=Monitor is for the rootdn",
          f"rc {result.returncode}, stderr {result.stderr}")


def set_server(server):
    global S
    S = server


def main() -> int:
    global ARGS, DISPATCHER
    ARGS = parse_args(__doc__)
    checks = [
        ("binds are counted", check_binds_are_counted),
        ("the entries", check_entries),
        ("scopes and filters", check_scopes_and_filters),
        ("access", check_access),
        ("numadir stats", check_stats),
    ]
    status = 0
    for dispatcher, toml in (("percpu", ""), ("single", '[threads]\ndispatcher = "single"\n')):
        DISPATCHER = dispatcher
        status |= run_suite(f"monitor ({dispatcher})", ARGS, checks, set_server, users=USERS,
                            extra_server_toml=toml)
        if status != 0 and not ARGS.keep_going:
            break
    return status


if __name__ == "__main__":
    sys.exit(main())
