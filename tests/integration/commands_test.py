#!/usr/bin/python3
"""The numadir commands a new user meets first, as the real binary runs them: a command that
reads a database (export, index, index --verify) refuses a database.path with no database there,
naming it, and creates nothing; serve says when it creates an empty database; import's refusals
name the path, the lines and the system's reason; ldapsearch's default filter (objectClass=*)
leaves no unindexed-search notice where the server puts them (its standard error with the access
log off, the access log when on); and the main job (scripts/main.sh) writes its config 0600.

  commands_test.py --numadir build/release/server/numadir --gen perf/gen_users.py
"""
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time

from numadir_harness import (PEOPLE, SUFFIX, NumadirServer, check, check_equal,
                             fail, parse_args, run_checks)

ARGS = None
WORK = None
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE_LDIF = f"""dn: {SUFFIX}
objectClass: dcObject
objectClass: organization
dc: example
o: Example

dn: {PEOPLE}
objectClass: organizationalUnit
ou: people

"""  # 10 lines: the next record starts on line 11.


def user(uid: str) -> str:
    return (f"dn: uid={uid},{PEOPLE}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\n"
            f"sn: {uid}\n\n")  # 6 lines


def write(path: str, text: str) -> str:
    with open(path, "w") as stream:
        stream.write(text)
    return path


def config_for(name: str) -> (str, str):
    """A config whose database.path is WORK/<name>-db, which does not exist yet.
    Returns: (config path, database path)."""
    database = os.path.join(WORK, f"{name}-db")
    config = write(os.path.join(WORK, f"{name}.toml"), f"""[database]
path = "{database}"
suffix = "{SUFFIX}"
map_size = "64MiB"
durability = "nosync"
indexes = ["objectClass eq", "uid eq"]

[server]
listen = ["ldap://127.0.0.1:0"]
listeners = 1
workers = 1
""")
    return config, database


def numadir(*args, input_text=None, timeout=120) -> subprocess.CompletedProcess:
    result = subprocess.run([ARGS.numadir, *args], capture_output=True, text=True,
                            input=input_text, timeout=timeout)
    print(f"  $ numadir {' '.join(args)} -> rc {result.returncode}", flush=True)
    return result


def check_refused(result: subprocess.CompletedProcess, expected: str, what: str):
    check(result.returncode == 1 and expected in result.stderr, what,
          f"rc {result.returncode}, stderr {result.stderr!r}, expected {expected!r}")


# -- commands that read a database ----------------------------------------------------------------
def check_reading_commands_create_nothing():
    config, database = config_for("typo")
    expected = f"database.path {database}: no database there (numadir import creates one)"
    for command in (["export"], ["export", "-o", os.path.join(WORK, "typo.ldif")], ["index"],
                    ["index", "--verify"]):
        result = numadir(*command, "-c", config)
        check_refused(result, f"numadir {command[0]}: {expected}",
                      f"{' '.join(command)} on a missing database.path: exit 1 naming it")
        check(not os.path.exists(database), f"{' '.join(command)} left no {database} behind")
        check_equal(result.stdout, "", f"{' '.join(command)} printed nothing on stdout")
    check(not os.path.exists(os.path.join(WORK, "typo.ldif")), "export -o wrote no file")
    # A directory that is there but holds no database: nothing is made in it either.
    os.makedirs(database)
    for command in (["export"], ["index"], ["index", "--verify"]):
        result = numadir(*command, "-c", config)
        check_refused(result, expected, f"{' '.join(command)} on an empty directory: exit 1")
        check_equal(os.listdir(database), [], f"{' '.join(command)} made nothing in it")
    # Once imported, the same commands work.
    ldif = write(os.path.join(WORK, "typo-users.ldif"), BASE_LDIF + user("a"))
    result = numadir("import", "-c", config, "--no-progress", ldif)
    check(result.returncode == 0, "import creates the database", result.stderr)
    result = numadir("index", "--verify", "-c", config)
    check(result.returncode == 0 and result.stdout == "indexes consistent\n",
          "index --verify on it: consistent", result.stdout + result.stderr)
    result = numadir("export", "-c", config)
    check(result.returncode == 0 and f"dn: uid=a,{PEOPLE}" in result.stdout,
          "export on it: the entries", result.stderr)


# -- serve -----------------------------------------------------------------------------------------
def serve_once(config: str) -> str:
    """Starts numadir serve on `config`, waits for its "listening on" line, stops it with
    SIGTERM. Returns: its standard error."""
    stderr_path = os.path.join(WORK, "serve.stderr")
    with open(stderr_path, "wb") as stderr_file:
        process = subprocess.Popen([ARGS.numadir, "serve", "-c", config], stdout=subprocess.PIPE,
                                   stderr=stderr_file, stdin=subprocess.DEVNULL)
        try:
            buffer = b""
            deadline = time.monotonic() + 60
            while b"listening on" not in buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    fail(f"numadir serve did not listen within 60 s: {buffer!r}")
                ready, _, _ = select.select([process.stdout], [], [], remaining)
                if ready:
                    chunk = os.read(process.stdout.fileno(), 4096)
                    if not chunk:
                        process.wait(timeout=10)
                        with open(stderr_path, errors="replace") as stream:
                            fail(f"numadir serve exited {process.returncode}: {stream.read()}")
                    buffer += chunk
            process.send_signal(signal.SIGTERM)
            check_equal(process.wait(timeout=30), 0, "numadir serve exits 0 on SIGTERM")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    with open(stderr_path, errors="replace") as stream:
        return stream.read()


def check_serve_says_it_created():
    config, database = config_for("new")
    stderr = serve_once(config)
    line = f"numadir: created an empty database in {database}\n"
    check(line in stderr, "serve on a new database.path says it created one", repr(stderr))
    check(os.path.exists(os.path.join(database, "data.mdb")), "and there it is")
    stderr = serve_once(config)
    check("created" not in stderr, "serve on that database again says nothing of it",
          repr(stderr))


# -- import's refusals -----------------------------------------------------------------------------
def import_text(name: str, ldif: str):
    config, database = config_for(name)
    path = write(os.path.join(WORK, f"{name}.ldif"), ldif)
    return numadir("import", "-c", config, "--no-progress", path), path, database


def check_import_errors():
    # Into a database that holds entries: the path, the count and what to do.
    result, path, database = import_text("full", BASE_LDIF + user("a"))
    check(result.returncode == 0, "a first import works", result.stderr)
    result = numadir("import", "-c", os.path.join(WORK, "full.toml"), "--no-progress", path)
    check_refused(result, f"numadir import: database.path {database} already holds 3 entries: "
                          "import loads only into an empty database; move it away or point "
                          "database.path elsewhere", "a second import: names the path and what to do")

    # A missing parent: the parent itself, and the line of the entry that needs it.
    orphan = f"dn: uid=x,ou=nowhere,{SUFFIX}\nobjectClass: account\nuid: x\n\n"
    result, path, _ = import_text("orphan", BASE_LDIF + user("a") + orphan + user("b"))
    check_refused(result, f'numadir import: {path}:17: dn "uid=x,ou=nowhere,{SUFFIX}": no such '
                          f'object: its parent "ou=nowhere,{SUFFIX}" is not in the LDIF before '
                          "it (parents come before their children)",
                  "a missing parent: named, with the line of its child")
    check("nothing was imported" in result.stderr, "and nothing was imported")

    # A DN twice: both lines (and the first's spelling when it differs).
    result, path, _ = import_text("twice", BASE_LDIF + user("a") + user("b") + user("a"))
    check_refused(result, f'numadir import: {path}:23: dn "uid=a,{PEOPLE}": already at line 11\n',
                  "a DN twice: the line of each")
    again = user("b").replace("uid=b,", "UID=B,")
    result, path, _ = import_text("twice-spelt", BASE_LDIF + user("a") + user("b") + again)
    check_refused(result, f'numadir import: {path}:23: dn "UID=B,{PEOPLE}": already at line 17 '
                          f'(as "uid=b,{PEOPLE}")', "a DN twice spelt differently: both")

    # Outside the suffix.
    stray = "dn: uid=y,dc=elsewhere,dc=org\nobjectClass: account\nuid: y\n\n"
    result, path, _ = import_text("stray", BASE_LDIF + stray)
    check_refused(result, f'{path}:11: dn "uid=y,dc=elsewhere,dc=org": no such object: not '
                          f"under the suffix {SUFFIX}", "an entry outside the suffix: says so")

    # Files that cannot be opened or read: the system's reason, and no database made.
    config, database = config_for("unopened")
    missing = os.path.join(WORK, "no-such.ldif")
    result = numadir("import", "-c", config, "--no-progress", missing)
    check_refused(result, f"cannot open LDIF file '{missing}': No such file or directory",
                  "a missing LDIF file: the system's reason")
    check(not os.path.exists(database), "and no database was created for it")
    result = numadir("import", "-c", config, "--no-progress", WORK)
    check_refused(result, f"numadir import: {WORK}: read error on the input: Is a directory",
                  "a directory as the LDIF file: the system's reason")
    if os.geteuid() != 0:  # root reads any file
        unreadable = write(os.path.join(WORK, "unreadable.ldif"), BASE_LDIF)
        os.chmod(unreadable, 0)
        result = numadir("import", "-c", config, "--no-progress", unreadable)
        check_refused(result, f"cannot open LDIF file '{unreadable}': Permission denied",
                      "an unreadable LDIF file: the system's reason")


# -- (objectClass=*) -------------------------------------------------------------------------------
def check_default_filter_notice():
    # The harness's config indexes objectClass eq only (no pres), like most configs.
    with NumadirServer(ARGS.numadir, ARGS.gen, users=50, keep=ARGS.keep) as server:
        with open(os.path.join(server.dir, "data.ldif")) as stream:
            imported = [line[4:].strip() for line in stream if line.startswith("dn: ")]
        rc, out, err = server.ldap_root("ldapsearch", "-LLL", "-b", SUFFIX, "1.1")
        check(rc == 0 and out.count("dn: ") == len(imported),
              f"ldapsearch's default filter finds every entry ({len(imported)})",
              f"rc {rc}: {out.count('dn: ')} entries; {err}")
        rc, out, err = server.ldap_root("ldapsearch", "-LLL", "-b", PEOPLE, "(objectClass=*)",
                                        "1.1")
        under_people = [dn for dn in imported if dn.endswith(PEOPLE)]
        check(rc == 0 and out.count("dn: ") == len(under_people),
              "(objectClass=*) under ou=people too", f"{out.count('dn: ')} entries; {err}")
        check("unindexed" not in server.stderr_text(), "no notice on the server's standard "
              "error (where notices go with the access log off)", server.stderr_text()[-500:])
        # The place is right: a presence search that does scan for want of an index is noted.
        rc, _, err = server.ldap_root("ldapsearch", "-LLL", "-b", SUFFIX, "(mail=*)", "1.1")
        check(rc == 0, "a search on (mail=*)", err)
        check("unindexed search: mail has no pres index" in server.stderr_text(),
              "(mail=*) is noted there", server.stderr_text()[-500:])

    log_path = os.path.join(WORK, "access.log")
    with NumadirServer(ARGS.numadir, ARGS.gen, users=50, keep=ARGS.keep,
                       extra_toml=f'[log]\nlevel = "stats"\nfile = "{log_path}"\n') as server:
        rc, out, err = server.ldap_root("ldapsearch", "-LLL", "-b", SUFFIX, "1.1")
        check(rc == 0 and out.count("dn: ") > 50, "with the access log on: every entry", err)
        rc, _, err = server.ldap_root("ldapsearch", "-LLL", "-b", SUFFIX, "(mail=*)", "1.1")
        check(rc == 0, "and a search on (mail=*)", err)
    with open(log_path, errors="replace") as stream:
        notices = [line for line in stream if "unindexed search" in line]
    check(len(notices) == 1 and "mail has no pres index" in notices[0],
          "the access log notes (mail=*) only, not ldapsearch's default filter", repr(notices))


# -- the main job's config -------------------------------------------------------------------------
def check_main_job_config_mode():
    target = os.path.join(WORK, "main-job", "numadir.toml")
    os.makedirs(os.path.dirname(target))
    for attempt in ("new", "over an existing 0644 file"):
        if os.path.exists(target):
            os.chmod(target, 0o644)
        old_umask = os.umask(0o022)  # The usual one, under which sed's output would be 0644.
        try:
            result = subprocess.run([os.path.join(REPO, "scripts", "main.sh"), "--write-config",
                                     target], capture_output=True, text=True, timeout=60)
        finally:
            os.umask(old_umask)
        check(result.returncode == 0 and result.stdout == "",
              f"main.sh --write-config ({attempt}) only writes the config",
              result.stdout + result.stderr)
        check_equal(oct(stat.S_IMODE(os.stat(target).st_mode)), oct(0o600),
                    f"the config main.sh writes ({attempt}) has mode 0600")
    with open(os.path.join(REPO, "etc", "numadir.toml")) as stream:
        shipped = stream.read()
    with open(target) as stream:
        written = stream.read()
    check_equal(written, re.sub(r"(?m)^listen = .*$", 'listen = ["ldap://127.0.0.1:0"]', shipped),
                "it is the shipped config listening on a port the kernel picks")
    result = numadir("check-config", "-c", target)
    check("chmod" not in result.stdout + result.stderr,
          "numadir asks for no chmod of it", result.stdout + result.stderr)


def main() -> int:
    global ARGS, WORK
    ARGS = parse_args(__doc__.split("\n")[0])
    WORK = tempfile.mkdtemp(prefix="numadir-commands-")
    try:
        return run_checks("commands", [
            ("export and index on a missing database", check_reading_commands_create_nothing),
            ("serve on a new database", check_serve_says_it_created),
            ("import's refusals", check_import_errors),
            ("ldapsearch's default filter", check_default_filter_notice),
            ("the main job's config", check_main_job_config_mode),
        ], keep_going=ARGS.keep_going)
    finally:
        if ARGS.keep:
            print(f"  kept {WORK}", flush=True)
        else:
            shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
