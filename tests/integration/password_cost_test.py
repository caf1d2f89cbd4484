#!/usr/bin/python3
"""numadir against hostile password hashes, with python3-ldap and the real `numadir serve` (one
listener, which runs reads itself when it has nothing to read, and one worker):

  - a user who sets their own userPassword to a pre-hashed value over a cost ceiling ({ARGON2}
    with m=1 GiB, {PBKDF2-SHA512} with 10 million iterations) gets constraintViolation (19)
    naming the parameter; Password Modify hashes such a string as any new password;
  - `numadir import` refuses such values naming the entry, and keeps them with
    --allow-costly-hashes, saying how many;
  - a bind against an imported costly value is refused at once (49) without computing it (1 GiB
    of argon2 or 10 million iterations would take seconds), and says so once on standard error;
  - while 8 connections bind in a loop to an {ARGON2} user of the default cost, binds of {SSHA}
    users on other connections keep flowing on the listener: every 100 ms window has some.

  password_cost_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 when every check passes; otherwise 1 with the first failing check (observed vs expected).
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

import ldap  # python3-ldap
import ldap.modlist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, check, check_equal, fail, parse_args, run_suite, user_dn,
    user_pw)

USERS = 200
BINDING_USERS = 100  # user1..user100 bind in the load check ({SSHA}, from gen_users.py).
WRITER_USERS = (150, 151)  # Their passwords change in the write check.
S = None

# Well-formed values over the default ceilings. Only the cost fields matter: the salts and
# hashes are valid base64 of the right sizes, and no password matches them.
ARGON2_GIB = ("{ARGON2}$argon2id$v=19$m=1048576,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$"
              "CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc")
PBKDF2_TEN_MILLION = ("{PBKDF2-SHA512}10000000$uEt6/HSZ1F12Twniv6DuTw$XelwTh/LPICgouYSFZJ3laPq"
                      "G4soNTiPdxyB/3poAHaYaVDvFGTjay2SlsRgtUReIJ5TPoCbkG4toNcgRLzCkA")
ARGON2_DIAGNOSTIC = ("userPassword: argon2 memory 1048576 KiB over "
                     "passwords.max_argon2_memory_kib (65536)")
PBKDF2_DIAGNOSTIC = ("userPassword: PBKDF2 iterations 10000000 over "
                     "passwords.max_pbkdf2_iterations (30000)")

COSTLY_ARGON2_DN = f"uid=costly-argon2,{PEOPLE}"
COSTLY_PBKDF2_DN = f"uid=costly-pbkdf2,{PEOPLE}"
ARGON2_DN = f"uid=argon2-user,{PEOPLE}"  # Default cost: computed at every bind.
ARGON2_PW = "argon2 password"

ARGON2_CONNECTIONS = 8
SSHA_CONNECTIONS = 2
LOAD_SECONDS = 3.0
WINDOW_S = 0.1


def person(dn: str, uid: str, password: str) -> str:
    return (f"dn: {dn}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: Hash\n"
            f"userPassword: {password}\n")


def numadir_passwd(numadir: str, scheme: str, password: str) -> str:
    made = subprocess.run([numadir, "passwd", "-h", scheme, "-s", password], capture_output=True,
                          text=True, timeout=60)
    if made.returncode != 0:
        fail(f"numadir passwd -h {scheme} failed: {made.stderr}")
    return made.stdout.strip()


def connect(bind=None) -> "ldap.ldapobject.LDAPObject":
    conn = ldap.initialize(S.url, bytes_mode=False)
    conn.protocol_version = 3
    conn.set_option(ldap.OPT_REFERRALS, 0)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    conn.set_option(ldap.OPT_TIMEOUT, 60)
    if bind is not None:
        conn.simple_bind_s(*bind)
    return conn


def expect(error_class, function, *args, what):
    """Calls function; checks that it raises error_class. Returns the error's info text."""
    try:
        function(*args)
    except error_class as error:
        info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
        check(True, f"{what}: {error_class.__name__} ({info.get('result')})")
        return info.get("info", "")
    except ldap.LDAPError as error:
        info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
        fail(f"{what}: raised {type(error).__name__} {info.get('result')} {info.get('info', '')}"
             f", expected {error_class.__name__}")
    fail(f"{what}: succeeded, expected {error_class.__name__}")


def stored_passwords(dn: str) -> list:
    root = connect((ROOT_DN, ROOT_PW))
    (_, attributes), = root.search_s(dn, ldap.SCOPE_BASE, "(objectClass=*)", ["userPassword"])
    root.unbind_s()
    return [v.decode() for v in attributes.get("userPassword", [])]


def check_writes_refused():
    for n, value, diagnostic, name in ((WRITER_USERS[0], ARGON2_GIB, ARGON2_DIAGNOSTIC,
                                        "argon2 m=1 GiB"),
                                       (WRITER_USERS[1], PBKDF2_TEN_MILLION, PBKDF2_DIAGNOSTIC,
                                        "PBKDF2-SHA512 with 10M iterations")):
        before = stored_passwords(user_dn(n))
        conn = connect((user_dn(n), user_pw(n)))
        for operation in (ldap.MOD_REPLACE, ldap.MOD_ADD):
            info = expect(ldap.CONSTRAINT_VIOLATION, conn.modify_s, user_dn(n),
                          [(operation, "userPassword", [value.encode()])],
                          what=f"user{n} sets its own userPassword to {name} "
                               f"({'replace' if operation == ldap.MOD_REPLACE else 'add'}) -> 19")
            check_equal(info, diagnostic, "the diagnostic names the parameter and its ceiling")
        check_equal(stored_passwords(user_dn(n)), before, f"user{n}'s userPassword is unchanged")
        # RFC 3062 carries the new password in the clear: the server hashes the string as any
        # new password, so Password Modify cannot store a pre-hashed value at all.
        conn.passwd_s(user_dn(n), None, value)
        stored = stored_passwords(user_dn(n))
        check(len(stored) == 1 and stored[0].startswith("{SSHA512}"),
              "Password Modify with that string as newPasswd stores it hashed with the default "
              "scheme", f"{stored}")
        conn.unbind_s()
        connect((user_dn(n), value)).unbind_s()
        check(True, f"user{n} binds with the string itself as its password")


def check_import_refuses():
    """A fresh directory of its own: the import stops at the costly entry, naming it."""
    with tempfile.TemporaryDirectory(prefix="numadir-it-import-") as directory:
        config = os.path.join(directory, "numadir.toml")
        with open(config, "w") as stream:
            stream.write(f'[database]\npath = "{directory}/db"\nsuffix = "{SUFFIX}"\n'
                         'map_size = "64MiB"\ndurability = "nosync"\n')
        ldif = os.path.join(directory, "costly.ldif")
        with open(ldif, "w") as stream:
            stream.write(f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\n"
                         f"dc: example\no: Example\n\ndn: {PEOPLE}\nobjectClass: organizationalUnit"
                         f"\nou: people\n\n" + person(COSTLY_ARGON2_DN, "costly-argon2", ARGON2_GIB))
        imported = subprocess.run([S.numadir, "import", "-c", config, "--no-progress", ldif],
                                  capture_output=True, text=True, timeout=60)
        check_equal(imported.returncode, 1, "numadir import without --allow-costly-hashes fails")
        expected = f'costly.ldif:11: dn "{COSTLY_ARGON2_DN}": {ARGON2_DIAGNOSTIC}'
        check(expected in imported.stderr and "--allow-costly-hashes" in imported.stderr
              and "nothing was imported" in imported.stderr,
              "it names the entry, its line, the parameter and the flag", imported.stderr)


def check_import_kept():
    check("kept 2 userPassword value(s) over the [passwords] cost ceilings "
          "(--allow-costly-hashes)" in S.import_stderr,
          "the server's import with --allow-costly-hashes kept both costly values and said so",
          S.import_stderr)


def refusal_lines(dn: str) -> list:
    return [line for line in S.stderr_text().splitlines()
            if f'BIND dn="{dn}" refused a userPassword value without checking it' in line]


def check_binds_refused_without_hashing():
    for dn, diagnostic, name in ((COSTLY_ARGON2_DN, ARGON2_DIAGNOSTIC, "argon2 m=1 GiB"),
                                 (COSTLY_PBKDF2_DN, PBKDF2_DIAGNOSTIC, "PBKDF2 10M iterations")):
        conn = connect()
        for attempt in range(3):
            started = time.monotonic()
            expect(ldap.INVALID_CREDENTIALS, conn.simple_bind_s, dn, f"guess {attempt}",
                   what=f"a bind against the imported {name} value -> 49")
            elapsed = time.monotonic() - started
            # Computing it would take seconds (1 GiB of memory filled twice, or 10 million
            # HMAC-SHA512 rounds); refused from its cost fields it takes a round trip.
            check(elapsed < 1.0, f"it answered in {elapsed * 1000:.1f} ms, without computing it",
                  f"{elapsed:.3f} s")
        conn.unbind_s()
        lines = wait_for_lines(dn, 3)
        check_equal(len(lines), 3, f"standard error has one refusal line per bind for {dn}")
        check(lines[0].endswith(diagnostic[len("userPassword: "):]),
              "naming the parameter and its ceiling", lines[0])


def wait_for_lines(dn: str, count: int, timeout: float = 10) -> list:
    deadline = time.monotonic() + timeout
    while True:
        lines = refusal_lines(dn)
        if len(lines) >= count or time.monotonic() >= deadline:
            return lines
        time.sleep(0.05)  # Standard error is a file the server appends to: poll it.


def listener_helped() -> int:
    root = connect((ROOT_DN, ROOT_PW))
    entries = root.search_s("cn=Listeners,cn=Monitor", ldap.SCOPE_ONELEVEL, "(objectClass=*)",
                            ["numadirHelped"])
    root.unbind_s()
    return sum(int(attributes["numadirHelped"][0]) for _, attributes in entries)


def check_ssha_binds_flow_beside_argon2():
    stop = threading.Event()
    errors = []
    argon2_binds = [0] * ARGON2_CONNECTIONS
    ssha_times = []  # Completion time of every SSHA bind.
    lock = threading.Lock()
    started_argon2 = threading.Barrier(ARGON2_CONNECTIONS + 1)

    def argon2_client(index):
        try:
            conn = connect()
            started_argon2.wait(timeout=30)
            while not stop.is_set():
                conn.simple_bind_s(ARGON2_DN, ARGON2_PW)
                argon2_binds[index] += 1
            conn.unbind_s()
        except Exception as error:  # noqa: BLE001 - reported as a check failure below.
            with lock:
                errors.append(f"argon2 client {index}: {error!r}")

    def ssha_client(index):
        try:
            conn = connect()
            n = index
            while not stop.is_set():
                user = n % BINDING_USERS + 1
                conn.simple_bind_s(user_dn(user), user_pw(user))
                with lock:
                    ssha_times.append(time.monotonic())
                n += SSHA_CONNECTIONS
            conn.unbind_s()
        except Exception as error:  # noqa: BLE001
            with lock:
                errors.append(f"ssha client {index}: {error!r}")

    helped_before = listener_helped()
    threads = [threading.Thread(target=argon2_client, args=(i,))
               for i in range(ARGON2_CONNECTIONS)]
    for thread in threads:
        thread.start()
    started_argon2.wait(timeout=30)
    # Let the argon2 binds fill the worker before measuring.
    deadline = time.monotonic() + 30
    while sum(argon2_binds) < ARGON2_CONNECTIONS and time.monotonic() < deadline and not errors:
        time.sleep(0.01)  # Polls the counters the client threads update.
    ssha_threads = [threading.Thread(target=ssha_client, args=(i,))
                    for i in range(SSHA_CONNECTIONS)]
    for thread in ssha_threads:
        thread.start()
    begin = time.monotonic()
    argon2_at_begin = sum(argon2_binds)
    stop.wait(LOAD_SECONDS)
    end = time.monotonic()
    argon2_during = sum(argon2_binds) - argon2_at_begin
    stop.set()
    for thread in threads + ssha_threads:
        thread.join(timeout=60)
    check_equal(errors, [], "no client failed")
    check(argon2_during > 0, f"{argon2_during} argon2 binds of the default cost succeeded "
          f"during the {LOAD_SECONDS:.0f} s measured (computed on the worker)")
    # The first window starts once the SSHA clients had time to connect and bind once.
    with lock:
        times = sorted(t for t in ssha_times if begin <= t <= end)
    first = begin + 0.2
    windows = int((end - first) / WINDOW_S)
    counts = [0] * windows
    for t in times:
        index = int((t - first) / WINDOW_S)
        if 0 <= index < windows:
            counts[index] += 1
    gaps = [b - a for a, b in zip([begin] + times, times + [end])]
    print(f"  {len(times)} SSHA binds in {end - begin:.2f} s beside {argon2_during} argon2 binds;"
          f" per {WINDOW_S * 1000:.0f} ms window: min {min(counts, default=0)}, max "
          f"{max(counts, default=0)}; longest gap {max(gaps) * 1000:.1f} ms", flush=True)
    check(windows >= 20 and min(counts) > 0,
          f"every one of {windows} windows of {WINDOW_S * 1000:.0f} ms had SSHA binds (no "
          "listener stall)", f"windows without one: {counts.count(0)}; counts {counts}")
    helped = listener_helped() - helped_before
    check(helped > 0, f"the listener ran {helped} requests itself meanwhile (the inline path)")
    check(S.alive(), "the server process is still running")


def set_server(server):
    global S
    S = server


def main() -> int:
    args = parse_args(__doc__)
    extra = "\n".join([
        person(COSTLY_ARGON2_DN, "costly-argon2", ARGON2_GIB),
        person(COSTLY_PBKDF2_DN, "costly-pbkdf2", PBKDF2_TEN_MILLION),
        person(ARGON2_DN, "argon2-user", numadir_passwd(args.numadir, "ARGON2", ARGON2_PW)),
    ])
    return run_suite("password_cost", args, [
        ("a user's own costly userPassword is refused on write", check_writes_refused),
        ("numadir import refuses a costly value naming its entry", check_import_refuses),
        ("numadir import --allow-costly-hashes keeps them and says so", check_import_kept),
        ("binds against costly values are refused without computing them",
         check_binds_refused_without_hashing),
        ("SSHA binds flow beside argon2 binds on the listener",
         check_ssha_binds_flow_beside_argon2),
    ], set_server, users=USERS, extra_ldif=extra, workers=1,
        import_args=["--allow-costly-hashes"])


if __name__ == "__main__":
    sys.exit(main())
