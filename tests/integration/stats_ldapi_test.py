#!/usr/bin/python3
"""`numadir stats` over ldapi:// with SASL EXTERNAL against a real `numadir serve` whose
ldapi:// listener maps this test's identity (root, as the tests run) to the rootdn by an
[[sasl.external_map]] rule: `numadir stats -H ldapi://... -Y EXTERNAL` shows the server's
counters with no password (the binds a client makes over ldap:// counted in binds/s, the same
threads as the rootdn's view over ldap:// with its password), in all three ldapi forms; a missing
socket names its path and asks for a server (exit 1); a file that is not a socket and, run as
nobody, a socket nobody may open give the system's reason; an unmapped identity (nobody) is told
that cn=Monitor is for the rootdn and which identity it bound as; -Y EXTERNAL over ldap:// and
with -D are usage errors (exit 2); and --help names ldapi.

  stats_ldapi_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 on success, 1 with the first failure.
"""
import os
import pwd
import grp
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (ROOT_DN, CheckFailed, NumadirServer,  # noqa: E402
                             check, check_equal, parse_args, run_checks, user_dn, user_pw)

args = parse_args(__doc__)
UID, GID = os.getuid(), os.getgid()
MAP_TO_ROOT = f"""
[[sasl.external_map]]
match = "^gidNumber={GID}\\\\+uidNumber={UID},cn=peercred,cn=external,cn=auth$"
dn = "{ROOT_DN}"
"""
USERS = 20


def encoded(path: str) -> str:
    return "ldapi://" + urllib.parse.quote(path, safe="")


def stats(*options, prefix=()):
    command = [*prefix, args.numadir, "stats", *options]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    print(f"  $ {' '.join(command)} -> rc {result.returncode}", flush=True)
    return result


def nobody_prefix():
    """setpriv's command line to run as nobody:nogroup, or None when that cannot be done (not
    root, no setpriv, no such user)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return None
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None
    try:
        gid = grp.getgrnam("nogroup").gr_gid
    except KeyError:
        gid = nobody.pw_gid
    return (shutil.which("setpriv"), f"--reuid={nobody.pw_uid}", f"--regid={gid}",
            "--clear-groups"), nobody.pw_uid, gid


def thread_names(view: str):
    return sorted(re.findall(r"\n\d+\s+((?:listener|worker)-\S+)", view))


def main() -> int:
    socket_dir = tempfile.mkdtemp(prefix="numadir-stats-ldapi-")
    try:
        # nobody must reach the sockets in it.
        os.chmod(socket_dir, 0o755)
        return run(socket_dir)
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)


def run(socket_dir: str) -> int:
    path = os.path.join(socket_dir, "ldapi")
    with NumadirServer(args.numadir, args.gen, users=USERS, keep=args.keep,
                       listen=("ldap://127.0.0.1:0", encoded(path)),
                       extra_toml=MAP_TO_ROOT) as server:

        def counters():
            # Binds over ldap:// go on while stats watches over ldapi://: binds/s counts them.
            stop = threading.Event()
            errors = []
            made = [0]

            def bind_loop():
                import ldap
                connection = ldap.initialize(server.url, bytes_mode=False)
                try:
                    while not stop.is_set():
                        n = made[0] % (USERS - 1) + 1
                        connection.simple_bind_s(user_dn(n), user_pw(n))
                        made[0] += 1
                except ldap.LDAPError as error:
                    errors.append(error)
                finally:
                    connection.unbind_s()

            loader = threading.Thread(target=bind_loop)
            loader.start()
            try:
                result = stats("-H", "ldapi://" + path, "-Y", "EXTERNAL", "--count", "2",
                               "--interval", "0.5")
            finally:
                stop.set()
                loader.join()
            check(not errors, "binds succeed while stats watches", f"{errors}")
            check_equal((result.returncode, result.stderr), (0, ""),
                        "numadir stats -H ldapi:///PATH -Y EXTERNAL, no password: exit 0")
            out = result.stdout
            check_equal(out.count(f"numadir stats  ldapi://{path}  "), 2, "two views, as asked")
            rates = [float(value) for value in re.findall(r"binds/s (\d+\.\d)", out)]
            check(len(rates) == 2 and max(rates) > 0 and made[0] > 0,
                  "binds/s counts the binds made over ldap://",
                  f"observed {rates} after {made[0]} binds; output:\n{out}")

            # The rootdn's view over ldap:// with its password shows the same threads.
            tcp = stats("-H", server.url, "-D", ROOT_DN, "-w", server.root_pw, "--once",
                        "--interval", "0.2")
            check_equal(tcp.returncode, 0, "numadir stats over ldap:// with the password")
            names = thread_names(out.split("\nnumadir stats  ")[-1])
            check(names and names == thread_names(tcp.stdout),
                  "the same listener and worker threads as over ldap://",
                  f"{names} vs {thread_names(tcp.stdout)}")

        def forms():
            for url in (encoded(path), "ldapi://" + path.replace("/", "%2f")):
                result = stats("-H", url, "-Y", "external", "--once", "--interval", "0.1")
                check(result.returncode == 0 and f"numadir stats  {url}  " in result.stdout,
                      f"-H {url} -Y external (lower case)", f"rc {result.returncode}, "
                      f"stderr {result.stderr!r}")

        def missing_socket():
            typo = os.path.join(socket_dir, "typo")
            result = stats("-H", "ldapi://" + typo, "-Y", "EXTERNAL", "--once")
            check_equal((result.returncode, result.stderr),
                        (1, f"numadir stats: ldapi://{typo}: no such socket (No such file or "
                            f"directory): is a numadir serve listening there?\n"),
                        "a missing socket names its path, exit 1")
            plain = os.path.join(socket_dir, "plain-file")
            with open(plain, "w") as stream:
                stream.write("x")
            result = stats("-H", "ldapi://" + plain, "-Y", "EXTERNAL", "--once")
            check_equal((result.returncode, result.stderr),
                        (1, f"numadir stats: ldapi://{plain}: not a socket (Connection "
                            f"refused)\n"),
                        "a file that is not a socket: the system's reason, exit 1")

        def usage():
            result = stats("-H", server.url, "-Y", "EXTERNAL", "--once")
            check_equal((result.returncode, result.stderr),
                        (2, f"numadir stats: -Y EXTERNAL needs an ldapi:// URL (e.g. -H "
                            f"ldapi:///run/numadir/ldapi), not {server.url}\n"),
                        "-Y EXTERNAL over ldap://: a usage error, exit 2")
            result = stats("-H", "ldapi://" + path, "-Y", "EXTERNAL", "-D", ROOT_DN, "--once")
            check(result.returncode == 2 and "-Y EXTERNAL takes no -D, -w or -y" in
                  result.stderr, "-Y with -D: a usage error, exit 2", result.stderr)
            result = stats("--help")
            check(result.returncode == 0 and "ldapi://" in result.stdout and
                  "-Y" in result.stdout, "--help names ldapi:// and -Y", result.stdout)

        def as_nobody():
            found = nobody_prefix()
            if found is None:
                print("  skipped: not root, or no setpriv or no user nobody", flush=True)
                return
            prefix, uid, gid = found
            result = stats("-H", "ldapi://" + path, "-Y", "EXTERNAL", "--once", prefix=prefix)
            peercred = f"gidNumber={gid}+uidNumber={uid},cn=peercred,cn=external,cn=auth"
            check_equal((result.returncode, result.stderr),
                        (1, f"numadir stats: ldapi://{path}: cn=Monitor: no such object (only "
                            f"the rootdn may read it; -Y EXTERNAL bound as dn:{peercred}: map "
                            f"it to the rootdn with a [[sasl.external_map]] rule)\n"),
                        "an unmapped identity: cn=Monitor is for the rootdn, exit 1")
            private = os.path.join(socket_dir, "private")
            listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                listening.bind(private)
                listening.listen(1)
                os.chmod(private, 0o600)
                result = stats("-H", "ldapi://" + private, "-Y", "EXTERNAL", "--once",
                               prefix=prefix)
            finally:
                listening.close()
            check_equal((result.returncode, result.stderr),
                        (1, f"numadir stats: ldapi://{private}: Permission denied\n"),
                        "a socket nobody may open: the system's reason, exit 1")

        return run_checks("stats ldapi", [
            ("the server's counters over ldapi with SASL EXTERNAL", counters),
            ("slapd's percent-encoded forms", forms),
            ("a missing socket and a plain file", missing_socket),
            ("usage errors and help", usage),
            ("as nobody: unmapped, and permission denied", as_nobody),
        ], keep_going=args.keep_going)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CheckFailed as error:
        print(f"FAIL stats ldapi: {error}", flush=True)
        sys.stderr.write(f"FAIL stats ldapi: {error}\n")
        sys.exit(1)
