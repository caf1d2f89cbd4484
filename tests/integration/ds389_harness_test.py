#!/usr/bin/python3
"""perf/ds389.py, the private 389 Directory Server the benchmarks put beside numadir and slapd:
an instance made from a few hundred generated users answers the benchmark's auth (search
`(uid=userN)` with attributes 1.1, then a simple bind as the found DN) with python-ldap; a wrong
password is refused; userPassword is not readable and another user's entry not writable
(numadir's default policy, as ACIs); the rootdn binds with its password; the server we hold is
ns-slapd itself (its CPU is what the benchmarks read from /proc); its files stay under its own
folder; and the access log setting takes effect: off, the auths leave no line in it; on, they do.
A second instance, given perf/bench.py's throwaway certificate (tls=), answers the auth over
ldaps:// with that certificate.

  ds389_harness_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Skips (exit 0, saying why) when 389-ds-base is not installed (scripts/setup.sh installs it).
Exits 0 when every check passes; otherwise 1 with the failing checks.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import ldap  # python3-ldap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "perf"))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, check, check_equal, parse_args, run_checks, user_dn, user_pw)
import bench  # noqa: E402  (perf/bench.py: make_certificate)
import ds389  # noqa: E402

USERS = 300
STATE = {}


def auth(url, n, ca_file=None):
    """The benchmark's auth for user n on one connection: the DN found, then whoami."""
    conn = ldap.initialize(url)
    if ca_file:
        conn.set_option(ldap.OPT_X_TLS_CACERTFILE, ca_file)
        conn.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND)
        conn.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
    try:
        found = conn.search_s(PEOPLE, ldap.SCOPE_SUBTREE, f"(uid=user{n})", ["1.1"])
        check_equal([dn for dn, _ in found], [user_dn(n)], f"search (uid=user{n})")
        conn.simple_bind_s(found[0][0], user_pw(n))
        return conn.whoami_s()
    finally:
        conn.unbind_s()


def searches_logged(instance):
    """The access log's SRCH lines for the users' filter (the log is read after a stop)."""
    try:
        with open(instance.access_log) as stream:
            return [line for line in stream if " SRCH " in line and "(uid=user" in line]
    except FileNotFoundError:
        return []


def check_auth():
    instance = STATE["instance"]
    for n in (0, 7, USERS - 1):
        check_equal(auth(instance.url, n), f"dn: {user_dn(n)}", f"auth of user{n}")
    conn = ldap.initialize(instance.url)
    try:
        conn.simple_bind_s(user_dn(3), "wrong")
        check(False, "a wrong password is refused", "the bind succeeded")
    except ldap.INVALID_CREDENTIALS:
        pass
    anonymous = conn.search_s(user_dn(3), ldap.SCOPE_BASE, attrlist=["userPassword", "uid"])
    check_equal(sorted(anonymous[0][1]), ["uid"], "attributes an anonymous reader gets")
    conn.simple_bind_s(user_dn(4), user_pw(4))
    try:
        conn.modify_s(user_dn(5), [(ldap.MOD_REPLACE, "description", b"not mine")])
        check(False, "another user's entry is not writable", "the modify succeeded")
    except ldap.INSUFFICIENT_ACCESS:
        pass
    conn.modify_s(user_dn(4), [(ldap.MOD_REPLACE, "description", b"mine")])
    root = ldap.initialize(instance.url)
    root.simple_bind_s(ROOT_DN, ROOT_PW)
    check_equal(root.whoami_s().lower(), f"dn: {ROOT_DN}".lower(), "the rootdn's bind")


def check_process():
    instance = STATE["instance"]
    with open(f"/proc/{instance.process.pid}/comm") as stream:
        check_equal(stream.read().strip(), "ns-slapd", "the process held (its CPU is measured)")
    check(instance.folder.startswith("/tmp/"), "the instance lives under /tmp", instance.folder)
    check(not os.path.exists(f"/etc/dirsrv/slapd-{ds389.INSTANCE_NAME}"),
          "nothing written to /etc/dirsrv", f"/etc/dirsrv/slapd-{ds389.INSTANCE_NAME} exists")


def check_access_log():
    instance = STATE["instance"]
    instance.stop(remove=False)
    check_equal(searches_logged(instance), [], "access log lines of the auths with it off")
    instance.set_access_log(True)
    instance.start()
    auth(instance.url, 11)
    instance.stop(remove=False)  # Flushes the buffered log.
    logged = searches_logged(instance)
    check(any('filter="(uid=user11)"' in line for line in logged),
          "the auth's search in the access log with it on", "".join(logged[-5:]) or "none")


def check_tls():
    tls = bench.make_certificate(STATE["work"], "rsa")
    instance = ds389.Ds389Instance.create(STATE["ldif"], ROOT_DN, ROOT_PW, tls=tls)
    try:
        instance.start()
        check_equal(auth(instance.ldaps_url, 9, ca_file=tls["ca"]), f"dn: {user_dn(9)}",
                    "auth of user9 over ldaps:// (the certificate verified with its CA)")
        check_equal(auth(instance.url, 10), f"dn: {user_dn(10)}", "auth of user10 over ldap://")
    finally:
        instance.stop()


def main():
    args = parse_args(__doc__)
    why = ds389.available()
    if why:
        print(f"ds389_harness: skipped: {why}")
        return 0
    work = tempfile.mkdtemp(prefix="ds389-harness-")
    try:
        ldif = os.path.join(work, "users.ldif")
        with open(ldif, "w") as stream:
            subprocess.run(["/usr/bin/python3", args.gen, "--users", str(USERS)], stdout=stream,
                           check=True)
        STATE["work"], STATE["ldif"] = work, ldif
        STATE["instance"] = ds389.Ds389Instance.create(ldif, ROOT_DN, ROOT_PW, access_log=False)
        STATE["instance"].start()
        return run_checks("ds389_harness", [
            ("search-then-bind auths, refusals and the access rules", check_auth),
            ("the pid is ns-slapd's; the files are under its own folder", check_process),
            ("the access log: off, then on", check_access_log),
            ("ldaps:// with the benchmarks' throwaway certificate", check_tls),
        ], args.keep_going)
    finally:
        if "instance" in STATE:
            STATE["instance"].stop(remove=not args.keep)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
