#!/usr/bin/python3
"""numadir under concurrent modifies: 16 python3-ldap clients, each on its own connection bound
as the rootdn, add description values to random users at once (the writer commits them in
batches and answers each from its thread); then every modified entry is read back and must hold
every value whose modify was acknowledged.

  concurrent_modify_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 when every check passes; otherwise 1 with the first failing check (observed vs expected).
"""
import os
import random
import sys
import threading

import ldap  # python3-ldap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    ROOT_DN, ROOT_PW, check, check_equal, parse_args, run_suite, user_dn)

USERS = 200
THREADS = 16
MODIFIES = 40  # Per thread.
S = None


def connect():
    conn = ldap.initialize(S.url, bytes_mode=False)
    conn.protocol_version = 3
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    conn.set_option(ldap.OPT_TIMEOUT, 60)
    conn.simple_bind_s(ROOT_DN, ROOT_PW)
    return conn


def check_concurrent_modifies():
    acknowledged = {}  # dn -> values whose modify succeeded
    errors = []
    lock = threading.Lock()

    def client(number):
        rng = random.Random(number)
        try:
            conn = connect()
            for i in range(MODIFIES):
                dn = user_dn(rng.randrange(USERS))
                value = f"client {number} modify {i}"
                conn.modify_s(dn, [(ldap.MOD_ADD, "description", [value.encode()])])
                with lock:
                    acknowledged.setdefault(dn, set()).add(value)
            conn.unbind_s()
        except ldap.LDAPError as error:
            with lock:
                errors.append(f"client {number}: {error}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    check_equal(errors, [], "no modify failed")
    check_equal(sum(len(v) for v in acknowledged.values()), THREADS * MODIFIES,
                f"{THREADS} clients had all {THREADS * MODIFIES} modifies acknowledged")
    conn = connect()
    missing = []
    for dn, values in acknowledged.items():
        (_, attributes), = conn.search_s(dn, ldap.SCOPE_BASE, "(objectClass=*)", ["description"])
        stored = {v.decode() for v in attributes.get("description", [])}
        missing.extend(f"{dn}: {v}" for v in sorted(values - stored))
    conn.unbind_s()
    check_equal(missing[:5], [], f"every acknowledged value of {len(acknowledged)} entries is "
                                 "stored")
    check(S.alive(), "the server process is still running")


def set_server(server):
    global S
    S = server


def main() -> int:
    args = parse_args(__doc__.split("\n")[0])
    return run_suite("concurrent_modify", args, [
        ("16 connections modifying at once", check_concurrent_modifies),
    ], set_server, users=USERS)


if __name__ == "__main__":
    sys.exit(main())
