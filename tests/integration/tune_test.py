#!/usr/bin/python3
"""numadir tune on a generated directory: every candidate measured (nonzero auths/s, no errors),
the best [threads] fragment written, parsed as TOML and accepted by check-config in place of
the config's own [threads], the live data file byte-identical afterwards, nothing left in the
temporary directory; and the clear refusals: a missing database, a server holding it, --write
to an existing file or to the config itself, thread settings the machine lacks (that candidate
skipped; none left: an error), authrate missing.

  tune_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Kept short: --duration 1, --repeat 1, 4 connections, at most 3 candidates, 200 test users.
Exits 0 on success, 1 with the first failure.
"""
import hashlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (check, check_equal, fail, parse_args, read_until_line,  # noqa: E402
                             run_checks)

SUFFIX = "dc=example,dc=com"
BASE = f"""[database]
path = "db"
suffix = "{SUFFIX}"
map_size = "256MiB"
indexes = ["objectClass eq", "uid eq"]

[server]
listen = ["ldap://127.0.0.1:0"]
"""
THREADS = """
[threads]
listener_helps = true
"""
QUICK = ["--duration", "1", "--warmup", "0.3", "--repeat", "1", "--connections", "4",
         "--users", "200"]

ARGS = None
WORK = None


def write(path, text):
    with open(path, "w") as stream:
        stream.write(text)
    return path


def sha256(path):
    with open(path, "rb") as stream:
        return hashlib.sha256(stream.read()).hexdigest()


def tune(config, *extra, timeout=120):
    env = dict(os.environ, TMPDIR=os.path.join(WORK, "tmp"))
    result = subprocess.run([ARGS.numadir, "tune", "-c", config, *extra], capture_output=True,
                            text=True, timeout=timeout, env=env)
    print(f"  numadir tune {' '.join(extra)}: exit {result.returncode}", flush=True)
    return result


def table_rows(stdout):
    """The table's rows: (candidate, conns, auths/s, errors) per line until the blank line."""
    rows = []
    lines = stdout.splitlines()
    if not lines or not lines[0].startswith("candidate"):
        fail(f"no table header in the output: {stdout[:500]!r}")
    for line in lines[1:]:
        if not line.strip():
            break
        fields = line.split()
        rows.append((fields[0], int(fields[1]), fields[2], fields[5]))
    return rows


def fragment_of(stdout):
    """The fragment: from the first '#' comment line after the table to the end."""
    at = stdout.find("\n# numadir tune")
    if at < 0:
        fail(f"no fragment in the output: {stdout!r}")
    return stdout[at + 1:]


def setup():
    global WORK
    WORK = tempfile.mkdtemp(prefix="numadir-tune-it-")
    os.makedirs(os.path.join(WORK, "tmp"))
    ldif = os.path.join(WORK, "users.ldif")
    with open(ldif, "w") as stream:
        subprocess.run(["/usr/bin/python3", ARGS.gen, "--users", "300", "--suffix", SUFFIX],
                       stdout=stream, check=True, timeout=120)
    config = write(os.path.join(WORK, "numadir.toml"), BASE + THREADS)
    imported = subprocess.run([ARGS.numadir, "import", "-c", config, "--no-progress", ldif],
                              capture_output=True, text=True, timeout=300)
    if imported.returncode != 0:
        fail(f"numadir import: {imported.stderr}")


def check_measures_and_writes():
    config = os.path.join(WORK, "numadir.toml")
    data = os.path.join(WORK, "db", "data.mdb")
    before = sha256(data)
    fragment_file = os.path.join(WORK, "threads.toml")
    plot = os.path.join(WORK, "tune.png")
    result = tune(config, *QUICK, "--max-candidates", "3", "--write", fragment_file,
                  "--plot", plot)
    check_equal(result.returncode, 0, "numadir tune exits 0")
    rows = table_rows(result.stdout)
    names = [row[0] for row in rows]
    check_equal(len(rows), 3, "the table has a row per candidate at the one connection count")
    check_equal(names[0], "current", "the config's own settings are the first candidate")
    check_equal(len(set(names)), 3, "three distinct candidates")
    for name, conns, rate, errors in rows:
        check(conns == 4 and rate != "-" and float(rate) > 0 and errors == "0",
              f"candidate {name} measured at 4 connections with nonzero auths/s and no errors",
              f"row {name} {conns} {rate} {errors}")
    check("best: " in result.stdout and "<- best" in result.stdout, "the best is named")
    check(re.search(r"round 1/1, candidate \d/3 \S+, 4 connections \(about \d+ s left\)",
                    result.stderr) is not None, "progress lines with the time left on stderr",
          result.stderr[-1000:])
    with open(fragment_file) as stream:
        written = stream.read()
    check_equal(written, fragment_of(result.stdout), "--write writes the printed fragment")
    parsed = tomllib.loads(written)
    check("threads" in parsed and set(parsed) == {"threads"},
          "the fragment parses as TOML and holds only [threads]", str(parsed))
    check(parsed["threads"]["dispatcher"] == "percpu" and
          all(set(node) == {"id", "listeners", "workers"} for node in parsed["threads"]["node"]),
          "it gives the dispatcher and each node's listeners and workers", str(parsed))
    merged = write(os.path.join(WORK, "merged.toml"), BASE + "\n" + written)
    checked = subprocess.run([ARGS.numadir, "check-config", "-c", merged], capture_output=True,
                             text=True, timeout=60)
    check_equal(checked.returncode, 0,
                f"check-config accepts the config with the fragment's [threads] "
                f"({checked.stderr.strip()})")
    check_equal(sha256(data), before, "the live data.mdb is byte-identical after tune")
    check(not os.path.exists(os.path.join(WORK, "db", "numadir.lock")),
          "tune created nothing in the live database directory")
    check_equal(os.listdir(os.path.join(WORK, "tmp")), [],
                "the copy and the private servers' files are gone from TMPDIR")
    if "gnuplot not found" in result.stderr:
        print("  skip: gnuplot is not installed: --plot said so and tune went on", flush=True)
    else:
        with open(plot, "rb") as stream:
            check_equal(stream.read(8), b"\x89PNG\r\n\x1a\n", "--plot draws a PNG")


def check_missing_database():
    config = write(os.path.join(WORK, "missing.toml"),
                   BASE.replace('path = "db"', 'path = "no-such-db"'))
    result = tune(config, *QUICK)
    database = os.path.join(WORK, "no-such-db")
    check(result.returncode == 1 and
          f"numadir tune: database {database}: no such directory" in result.stderr,
          "a missing database: exit 1 naming it", result.stderr)
    check(not os.path.exists(database), "and it is not created")
    os.makedirs(os.path.join(WORK, "empty-db"))
    config = write(os.path.join(WORK, "empty.toml"),
                   BASE.replace('path = "db"', 'path = "empty-db"'))
    result = tune(config, *QUICK)
    check(result.returncode == 1 and "empty-db: no data.mdb in it" in result.stderr,
          "a directory without a database: exit 1 naming it", result.stderr)
    check_equal(os.listdir(os.path.join(WORK, "empty-db")), [], "and nothing is created in it")


def check_running_server():
    config = os.path.join(WORK, "numadir.toml")
    server = subprocess.Popen([ARGS.numadir, "serve", "-c", config], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line, lines = read_until_line(server, lambda line: "listening on" in line, 60)
        if line is None:
            fail(f"the live server did not start: {lines!r}")
        result = tune(config, *QUICK)
        expected = (f"numadir tune: database {os.path.join(WORK, 'db')} is in use by numadir "
                    f"serve (pid {server.pid})")
        check(result.returncode == 1 and expected in result.stderr,
              "a server holding the database: exit 1 naming its pid", result.stderr)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


def check_write_refusals():
    config = os.path.join(WORK, "numadir.toml")
    existing = write(os.path.join(WORK, "existing.toml"), "# mine\n")
    result = tune(config, *QUICK, "--write", existing)
    check(result.returncode == 1 and
          f"--write {existing}: the file exists (--force overwrites it)" in result.stderr,
          "--write to an existing file without --force: exit 1", result.stderr)
    with open(existing) as stream:
        check_equal(stream.read(), "# mine\n", "and the file is left as it was")
    with open(config) as stream:
        live = stream.read()
    result = tune(config, *QUICK, "--write", config, "--force")
    check(result.returncode == 1 and "that is the config file itself" in result.stderr,
          "--write to the config itself, even with --force: exit 1", result.stderr)
    with open(config) as stream:
        check_equal(stream.read(), live, "and the config is left as it was")


def check_settings_the_machine_lacks():
    config = write(os.path.join(WORK, "far-node.toml"),
                   BASE + "\n[[threads.node]]\nid = 7\nlisteners = 1\nworkers = 1\n")
    result = tune(config, *QUICK, "--max-candidates", "1")
    check(result.returncode == 0 and
          "skipping candidate current (the config's own settings): " in result.stderr and
          "node 7 does not exist" in result.stderr,
          "a [[threads.node]] the machine lacks: that candidate is skipped, saying why",
          result.stderr)
    names = [row[0] for row in table_rows(result.stdout)]
    check(len(names) == 1 and names[0] != "current", "and the others are measured", str(names))
    config = write(os.path.join(WORK, "bad-topology.toml"),
                   BASE + '\n[threads]\ntopology = "nonsense:9"\n')
    result = tune(config, *QUICK)
    check(result.returncode == 1 and
          "numadir tune: no candidate can run on this machine" in result.stderr,
          "a threads.topology that does not load: no candidate left, exit 1", result.stderr)
    result = tune(os.path.join(WORK, "numadir.toml"), *QUICK, "--authrate",
                  os.path.join(WORK, "no-authrate"))
    check(result.returncode == 1 and "no-authrate: not an executable file" in result.stderr,
          "an --authrate that is not there: exit 1", result.stderr)
    check_equal(os.listdir(os.path.join(WORK, "tmp")), [], "nothing left in TMPDIR")


def main():
    global ARGS
    ARGS = parse_args(__doc__)
    setup()
    try:
        return run_checks("tune", [
            ("measures every candidate and writes the best fragment", check_measures_and_writes),
            ("a missing database", check_missing_database),
            ("a server holding the database", check_running_server),
            ("--write refusals", check_write_refusals),
            ("thread settings the machine lacks", check_settings_the_machine_lacks),
        ], keep_going=ARGS.keep_going)
    finally:
        if not ARGS.keep:
            subprocess.run(["rm", "-rf", WORK])


if __name__ == "__main__":
    sys.exit(main())
