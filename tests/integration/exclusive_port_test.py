#!/usr/bin/python3
"""A listening address is one server's alone: a second `numadir serve` with another database on
a port the first listens on exits non-zero, naming the address and the first's process, and the
first keeps every connection; a wildcard address over the first's specific one is refused too;
a port slapd listens on is refused; a stopped server's port takes a new server at once.

  exclusive_port_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 on success, 1 with the first failure.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slapd_harness  # noqa: E402
from numadir_harness import (PEOPLE, SUFFIX, CheckFailed, NumadirServer, check,  # noqa: E402
                             parse_args, run_checks)

ONLY_FIRST = f"""dn: uid=onlyfirst,{PEOPLE}
objectClass: inetOrgPerson
uid: onlyfirst
cn: Only First
sn: First
"""

args = parse_args(__doc__)


def second_server(listen: str):
    """A NumadirServer with another (empty but for 3 users) database on `listen`, prepared but
    not started."""
    server = NumadirServer(args.numadir, args.gen, users=3, keep=args.keep, listen=(listen,))
    server.dir = tempfile.mkdtemp(prefix="numadir-it-second-")
    server._prepare()
    return server


def refused_start(server: NumadirServer):
    """Runs `numadir serve` on `server`'s config; it must exit by itself. Returns (rc, stderr)."""
    process = subprocess.Popen([server.numadir, "serve", "-c", server.config],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise CheckFailed(f"the second numadir serve kept running on a port in use; stdout: "
                          f"{out[-500:]!r}")
    finally:
        server._cleanup()
    print(f"  second numadir serve: rc {process.returncode}; stderr: {err.strip()[-300:]}",
          flush=True)
    return process.returncode, err


def all_answered_by_first(first: NumadirServer, connections: int = 20):
    for i in range(connections):
        rc, out, err = first.ldap("ldapsearch", "-x", "-LLL", "-b", SUFFIX, "(uid=onlyfirst)", "dn")
        if rc != 0 or f"uid=onlyfirst,{PEOPLE}" not in out:
            raise CheckFailed(f"search {i + 1} of {connections} on a new connection was not "
                              f"answered by the first server: rc {rc}, {out!r} {err!r}")
    check(True, f"{connections} new connections, each search answered by the first server")


def main() -> int:
    with NumadirServer(args.numadir, args.gen, users=20, keep=args.keep,
                       extra_ldif=ONLY_FIRST) as first:
        port = first.port
        pid = first.process.pid

        def same_address():
            rc, err = refused_start(second_server(f"ldap://127.0.0.1:{port}"))
            check(rc != 0, "the second server exits non-zero", f"rc {rc}")
            expected = f"ldap://127.0.0.1:{port}: address already in use by process {pid} (numadir)"
            check(expected in err, "its error names the address and the first's process",
                  f"stderr {err!r}, expected {expected!r}")
            check(first.alive(), "the first server still runs")
            all_answered_by_first(first)

        def wildcard_over_specific():
            rc, err = refused_start(second_server(f"ldap://:{port}"))
            check(rc != 0, "a second server on every address (dual stack) exits non-zero")
            check(f"ldap://:{port}: address already in use" in err, "naming its address",
                  f"stderr {err!r}")
            rc, err = refused_start(second_server(f"ldap://0.0.0.0:{port}"))
            check(rc != 0 and f"ldap://0.0.0.0:{port}: address already in use" in err,
                  "0.0.0.0 on that port is refused as well", f"rc {rc}, stderr {err!r}")
            all_answered_by_first(first, 5)

        def slapd_port():
            why = slapd_harness.available()
            if why:
                raise CheckFailed(why)
            ldif = os.path.join(first.dir, "data.ldif")
            with slapd_harness.SlapdServer(ldif, keep=args.keep) as slapd:
                rc, err = refused_start(second_server(f"ldap://127.0.0.1:{slapd.port}"))
                check(rc != 0, "numadir refuses the port slapd listens on", f"rc {rc}")
                match = re.search(rf"ldap://127\.0\.0\.1:{slapd.port}: address already in use"
                                  rf"( by process (\d+))?", err)
                check(match is not None, "naming the address", f"stderr {err!r}")
                if match.group(2) is not None:
                    check(int(match.group(2)) == slapd.process.pid, "and slapd's process",
                          f"stderr {err!r}, slapd pid {slapd.process.pid}")

        status = run_checks("exclusive port", [
            ("a second server on the first's address", same_address),
            ("a second server on a wildcard over it", wildcard_over_specific),
            ("a port slapd listens on", slapd_port),
        ], keep_going=args.keep_going)
        if status != 0:
            return status
    # The first stopped (SIGTERM): its port takes a new server at once, TIME_WAIT or not.
    restarted = NumadirServer(args.numadir, args.gen, users=3, keep=args.keep,
                              listen=(f"ldap://127.0.0.1:{port}",))
    try:
        with restarted:
            check(restarted.port == port, f"a new server listens on the stopped one's port {port}")
            rc, out, _ = restarted.ldap("ldapsearch", "-x", "-LLL", "-b", SUFFIX,
                                        "(uid=onlyfirst)", "dn")
            check(rc == 0 and "onlyfirst" not in out, "and it answers from its own database")
    except CheckFailed as error:
        print(f"FAIL exclusive port: restart: {error}", flush=True)
        return 1
    print("exclusive port: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
