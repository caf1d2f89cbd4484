#!/usr/bin/python3
"""ldapi:// (a Unix-domain socket listener) with real clients: ldapsearch over slapd's
percent-encoded URL, SASL EXTERNAL by peer credentials (ldapwhoami -Y EXTERNAL printing the
peercred DN of this test's uid and gid, python-ldap's sasl_external_bind_s and whoami_s), an
[[sasl.external_map]] rule mapping this test's identity to the rootdn (ldapmodify -Y EXTERNAL
with no password), an unmapped identity refused a write by access control, the socket's mode
and group, a socket held by a live server refused, a stale socket file replaced, the file
removed at SIGTERM, and check-config refusing a bad rule.

  ldapi_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 on success, 1 with the first failure.
"""
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (PEOPLE, ROOT_DN, SUFFIX, CheckFailed, NumadirServer,  # noqa: E402
                             check, check_equal, parse_args, run_checks, user_dn)

args = parse_args(__doc__)
UID, GID = os.getuid(), os.getgid()
PEERCRED = f"gidNumber={GID}+uidNumber={UID},cn=peercred,cn=external,cn=auth"
# Everyone reads everything; only the rootdn writes.
ACCESS = """
[[access]]
by = [{ who = "*", access = "read" }]
"""
MAP_TO_ROOT = f"""
[[sasl.external_map]]
match = "^gidNumber={GID}\\\\+uidNumber={UID},cn=peercred,cn=external,cn=auth$"
dn = "{ROOT_DN}"
"""


def ldapi_url(path: str) -> str:
    return "ldapi://" + urllib.parse.quote(path, safe="")


def modify_sn(server: NumadirServer, url: str, value: str):
    return server.ldap("ldapmodify", "-Y", "EXTERNAL", "-Q", url=url,
                       input_text=f"dn: {user_dn(1)}\nchangetype: modify\nreplace: sn\n"
                                  f"sn: {value}\n")


def main() -> int:
    socket_dir = tempfile.mkdtemp(prefix="numadir-ldapi-")
    try:
        return run(socket_dir)
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)


def run(socket_dir: str) -> int:
    path = os.path.join(socket_dir, "ldapi")
    url = ldapi_url(path)
    unmapped = NumadirServer(
        args.numadir, args.gen, users=10, keep=args.keep,
        listen=("ldap://127.0.0.1:0", url),
        extra_server_toml=f'ldapi_mode = "0660"\nldapi_group = "{GID}"\n', extra_toml=ACCESS)
    try:
        with unmapped as server:
            def listening():
                check_equal(server.ldapi_urls, [url], "serve prints the ldapi URL, percent-encoded")
                st = os.lstat(path)
                check(stat.S_ISSOCK(st.st_mode), f"{path} is a socket")
                check_equal(stat.S_IMODE(st.st_mode), 0o660, "with server.ldapi_mode")
                check_equal(st.st_gid, GID, "and server.ldapi_group")

            def search():
                rc, out, err = server.ldap("ldapsearch", "-x", "-LLL", "-b", SUFFIX,
                                           "(uid=user1)", "dn", url=url)
                check(rc == 0 and f"dn: {user_dn(1)}" in out, "ldapsearch -H ldapi://%2F...",
                      f"rc {rc}, {out!r} {err!r}")
                plain = "ldapi://" + path.replace("/", "%2f")
                rc, out, _ = server.ldap("ldapsearch", "-x", "-LLL", "-b", SUFFIX,
                                         "(uid=user2)", "dn", url=plain)
                check(rc == 0 and f"dn: {user_dn(2)}" in out, "lower-case escapes too")

            def whoami():
                rc, out, err = server.ldap("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=url)
                check_equal((rc, out.strip()), (0, f"dn:{PEERCRED}"),
                            "ldapwhoami -Y EXTERNAL prints this process's peercred DN")
                rc, _, err = server.ldap("ldapwhoami", "-Y", "EXTERNAL", "-Q")
                check(rc != 0, "EXTERNAL over TCP without TLS is refused", f"rc {rc} {err!r}")

            def python_ldap():
                import ldap
                connection = ldap.initialize(url)
                connection.sasl_external_bind_s()
                check_equal(connection.whoami_s(), f"dn:{PEERCRED}",
                            "python-ldap: sasl_external_bind_s, then whoami_s")
                found = connection.search_s(PEOPLE, ldap.SCOPE_SUBTREE, "(uid=user3)", ["uid"])
                check_equal([dn for dn, _ in found], [user_dn(3)], "and it searches")
                connection.unbind_s()

            def unmapped_write():
                rc, _, err = modify_sn(server, url, "X")
                check(rc == 50, "an unmapped EXTERNAL identity may not write (access control)",
                      f"rc {rc}, {err!r}")

            def live_socket():
                second = NumadirServer(args.numadir, args.gen, users=3, keep=args.keep,
                                       listen=(url,))
                second.dir = tempfile.mkdtemp(prefix="numadir-it-second-")
                try:
                    second._prepare()
                    done = subprocess.run([args.numadir, "serve", "-c", second.config],
                                          capture_output=True, text=True, timeout=60)
                finally:
                    second._cleanup()
                expected = (f"{url}: address already in use by process {server.process.pid} "
                            f"(numadir)")
                check(done.returncode != 0 and expected in done.stderr,
                      "a second server on the live socket exits naming it and the first",
                      f"rc {done.returncode}, stderr {done.stderr!r}")
                check(stat.S_ISSOCK(os.lstat(path).st_mode), "the first's socket stays")
                rc, _, _ = server.ldap("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=url)
                check(rc == 0, "and serves")

            status = run_checks("ldapi", [
                ("listening, mode and group", listening),
                ("ldapsearch over ldapi", search),
                ("ldapwhoami -Y EXTERNAL", whoami),
                ("python-ldap EXTERNAL", python_ldap),
                ("an unmapped identity writes nothing", unmapped_write),
                ("a live server's socket is refused", live_socket),
            ], keep_going=args.keep_going)
            if status != 0:
                return status
        check(not os.path.exists(path), "the socket file is removed at SIGTERM")

        # A stale socket, as a killed server leaves it: removed and bound again.
        stale = os.path.join(socket_dir, "stale")
        leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        leftover.bind(stale)
        leftover.close()
        check(stat.S_ISSOCK(os.lstat(stale).st_mode), "a stale socket file is left")
        with NumadirServer(args.numadir, args.gen, users=10, keep=args.keep,
                           listen=("ldap://127.0.0.1:0", ldapi_url(stale)),
                           extra_toml=ACCESS + MAP_TO_ROOT +
                           '[log]\nlevel = "stats"\nfile = "access.log"\n') as mapped:
            stale_url = ldapi_url(stale)
            check_equal(stat.S_IMODE(os.lstat(stale).st_mode), 0o666,
                        "the stale socket is replaced (default mode 0666)")
            rc, out, _ = mapped.ldap("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=stale_url)
            check_equal((rc, out.strip()), (0, f"dn:{ROOT_DN}"),
                        "[[sasl.external_map]] maps this process's peercred DN to the rootdn")
            rc, _, err = modify_sn(mapped, stale_url, "Mapped")
            check(rc == 0, "ldapmodify -Y EXTERNAL as the rootdn, no password", f"rc {rc} {err!r}")
            rc, out, _ = mapped.ldap("ldapsearch", "-x", "-LLL", "-D", ROOT_DN, "-w",
                                     mapped.root_pw, "-b", user_dn(1), "-s", "base", "sn")
            check("sn: Mapped" in out, "the change is there (read over TCP)", out)
            with open(os.path.join(mapped.dir, "access.log")) as stream:
                log = stream.read()
            check(f"ACCEPT from PATH={stale} (PATH={stale})" in log,
                  "the access log names the socket as slapd does", log[-1000:])
        check(not os.path.exists(stale), "removed at SIGTERM")

        # check-config compiles the rules: a bad regex is refused with its key.
        bad = os.path.join(socket_dir, "bad.toml")
        with open(bad, "w") as stream:
            stream.write(f"""[database]
path = "{socket_dir}/db"
suffix = "{SUFFIX}"
[server]
listen = ["{url}"]
[[sasl.external_map]]
match = "^(unclosed"
dn = "{ROOT_DN}"
""")
        checked = subprocess.run([args.numadir, "check-config", "-c", bad], capture_output=True,
                                 text=True, timeout=60)
        check(checked.returncode != 0 and "sasl.external_map[0].match" in checked.stderr,
              "check-config refuses a bad regex, naming its key",
              f"rc {checked.returncode}, stderr {checked.stderr!r}")
    except CheckFailed as error:
        print(f"FAIL ldapi: {error}", flush=True)
        sys.stderr.write(f"FAIL ldapi: {error}\n")
        return 1
    print("ldapi: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
