#!/usr/bin/python3
"""numadir's command line and `numadir check-config` through the real executable: an unknown
command is named, with the closest command when one is close (exit 2); `numadir` alone prints
the usage (exit 2); `numadir help [COMMAND]` prints what `--help` prints; `numadir --version`
names numadir's version and the OpenSSL (as `openssl version` reports it), LMDB and hwloc it runs
with. check-config lists every mistake as "file:line: key: problem"; a directory, a missing or an
unreadable config is one clear error (exit 1) for every command that reads a config, never an
abort; a cleartext rootpw that can never bind is a warning from check-config and serve (which
still starts); an [[access]] rule an earlier rule hides is a warning; [replication.provider]'s mistakes are
listed and its ineffective settings warned about (serve still starts); [metrics]'s mistakes are
listed (a non-loopback port without TLS and a client check among them), a token file others can
read is a warning, and serve answers /metrics on the port given (401 without the token) or
refuses an address in use, naming it; a database.path with no
database is a note, and check-config creates nothing there. `numadir topology` plans from
numadir.toml when there is one in the current folder.

  cli_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 on success, 1 with the first failure.
"""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

import numadir_harness as h

TIMEOUT_S = 60
COMMANDS = ["serve", "import", "export", "index", "passwd", "stats", "tune", "topology",
            "check-config", "help"]


def run(numadir, *args, cwd=None, prefix=()):
    return subprocess.run([*prefix, numadir, *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=cwd)


def write(path, text, mode=0o600):
    with open(path, "w") as stream:
        stream.write(text)
    os.chmod(path, mode)
    return path


def base_config(folder):
    return f"""[database]
path = "{folder}/db"
suffix = "{h.SUFFIX}"
map_size = "256MiB"

[server]
listen = ["ldap://127.0.0.1:0"]
"""


def check_unknown_commands(numadir):
    result = run(numadir, "serv")
    h.check_equal(result.returncode, 2, "numadir serv: a usage error")
    h.check(result.stderr.startswith("numadir: unknown command 'serv'; did you mean 'serve'?\n"),
            "numadir serv: named, with the closest command", result.stderr)
    h.check_equal(result.stdout, "", "numadir serv: nothing on standard output")

    result = run(numadir, "bogus")
    h.check_equal(result.returncode, 2, "numadir bogus: a usage error")
    h.check(result.stderr.startswith("numadir: unknown command 'bogus'; the commands are: "
                                     + " ".join(COMMANDS) + "\n"),
            "numadir bogus: named, with the list of commands (none is close)", result.stderr)
    h.check("did you mean" not in result.stderr, "numadir bogus: no far-fetched guess",
            result.stderr)

    result = run(numadir, "check")
    h.check(result.returncode == 2 and "did you mean 'check-config'?" in result.stderr,
            "numadir check: a prefix of a command suggests it", result.stderr)

    result = run(numadir, "help", "imprt")
    h.check(result.returncode == 2 and
            result.stderr.startswith("numadir: unknown command 'imprt'; did you mean 'import'?"),
            "numadir help imprt: the same error", result.stderr)

    result = run(numadir, "--bogus")
    h.check(result.returncode == 2 and
            result.stderr.startswith("numadir: unknown option '--bogus' (before a command: "),
            "an unknown option before any command is named", result.stderr)

    result = run(numadir, "serve", "--bogus")
    h.check(result.returncode == 2 and "--bogus" in result.stderr,
            "an unknown option is a usage error (2) naming it", result.stderr)


def check_no_command(numadir):
    result = run(numadir)
    h.check_equal(result.returncode, 2, "numadir alone: a usage error")
    h.check("Usage:" in result.stderr and all(name in result.stderr for name in COMMANDS[:-1]),
            "numadir alone: the usage, with every command", result.stderr)
    h.check(result.stderr.endswith("numadir: a command is required\n"),
            "numadir alone: says what is missing", result.stderr)

    result = run(numadir, "help")
    h.check_equal(result.returncode, 0, "numadir help: exit 0")
    h.check("Usage:" in result.stdout and all(name in result.stdout for name in COMMANDS[:-1]),
            "numadir help: the usage on standard output", result.stdout)


def check_help_command(numadir):
    for command in ("import", "passwd", "check-config"):
        helped = run(numadir, "help", command)
        direct = run(numadir, command, "--help")
        h.check_equal((helped.returncode, direct.returncode), (0, 0),
                      f"numadir help {command} and {command} --help exit 0")
        h.check_equal(helped.stdout, direct.stdout, f"numadir help {command} is {command} --help")
    helped = run(numadir, "help", "import")
    h.check("-c,--config" in helped.stdout and "numadir.toml" in helped.stdout and
            "ldif" in helped.stdout, "numadir help import: its options, -c with its default",
            helped.stdout)
    # Every -c shows the same default the same way.
    shown = set()
    for command in ("serve", "import", "export", "index", "tune", "topology", "check-config"):
        text = run(numadir, command, "--help").stdout
        line = next((l for l in text.splitlines() if "-c,--config" in l), "")
        h.check("numadir.toml" in line, f"{command} --help: -c shows its default", text)
        shown.add(line.split("--config", 1)[1].split()[0])
    h.check_equal(len(shown), 1, "every -c shows its default the same way")


def check_version(numadir):
    result = run(numadir, "--version")
    h.check_equal(result.returncode, 0, "numadir --version: exit 0")
    lines = result.stdout.splitlines()
    h.check(len(lines) == 4 and lines[0].startswith("numadir 0.") and " build" in lines[0],
            "numadir --version: numadir's version and build, then three libraries", result.stdout)
    openssl = subprocess.run(["openssl", "version"], capture_output=True, text=True,
                             timeout=TIMEOUT_S).stdout.strip()
    # "OpenSSL 3.0.x 1 Jan 2024 (Library: OpenSSL 3.0.x 1 Jan 2024)": the library is what runs.
    library = openssl.split("(Library: ", 1)[1].rstrip(")") if "(Library: " in openssl else openssl
    h.check(lines[1].startswith(library + " (built with OpenSSL "),
            "the OpenSSL line names the library `openssl version` reports", f"{lines[1]!r} vs "
            f"{openssl!r}")
    h.check(lines[2].startswith("LMDB 0.") and "(built with LMDB 0." in lines[2],
            "the LMDB line names mdb_version()'s", lines[2])
    h.check(lines[3].startswith("hwloc API 2.") and "(built with hwloc API 2." in lines[3],
            "the hwloc line names hwloc_get_api_version()'s", lines[3])


def check_unreadable_configs(numadir, root):
    folder = os.path.join(root, "unreadable")
    os.mkdir(folder)
    missing = os.path.join(folder, "absent.toml")
    ldif = write(os.path.join(folder, "empty.ldif"), "")
    for config, why in ((folder, f"{folder}: is a directory, not a config file"),
                        (missing, f"{missing}: cannot be read (No such file or directory)")):
        result = run(numadir, "check-config", "-c", config)
        h.check_equal((result.returncode, result.stderr), (1, f"numadir: {why}\n"),
                      f"check-config -c {config}: one clear error, exit 1")
        for args in (["serve", "-c", config], ["import", "-c", config, ldif],
                     ["export", "-c", config], ["index", "-c", config],
                     ["topology", "-c", config],
                     ["tune", "-c", config, "--authrate", "/bin/true"]):
            result = run(numadir, *args)
            h.check(result.returncode == 1 and why in result.stderr,
                    f"{args[0]} -c {config}: exit 1 with the reason (not an abort)",
                    f"status {result.returncode}, stderr {result.stderr!r}")

    # Not text, not TOML: the line (and column) of what is wrong.
    binary = os.path.join(folder, "binary.toml")
    with open(binary, "wb") as stream:
        stream.write(b"\xff\xfe\x00\x01\n")
    result = run(numadir, "check-config", "-c", binary)
    h.check_equal((result.returncode, result.stderr),
                  (1, f"{binary}:1: non-ASCII character (only comments may have them; write DNs "
                      "with \\XX escapes)\n"), "a binary file: its line, exit 1")
    prose = write(os.path.join(folder, "prose.toml"), "this is not toml\n")
    result = run(numadir, "check-config", "-c", prose)
    h.check(result.returncode == 1 and result.stderr.startswith(f"{prose}:1:6: ") and
            len(result.stderr.splitlines()) == 1, "text that is not TOML: line and column, exit 1",
            result.stderr)

    # Permission denied: root reads any file, so the check runs as nobody where it can.
    locked = write(os.path.join(folder, "locked.toml"), base_config(folder), 0o600)
    prefix = ()
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        try:
            nobody = pwd.getpwnam("nobody")
        except KeyError:
            nobody = None
        if setpriv is None or nobody is None:
            print("cli: unreadable config: skipped (root, and no setpriv or no user nobody)")
            return
        os.chmod(root, 0o755)
        os.chmod(folder, 0o755)
        prefix = (setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}",
                  "--clear-groups")
    else:
        os.chmod(locked, 0)
    result = run(numadir, "check-config", "-c", locked, prefix=prefix)
    h.check_equal((result.returncode, result.stderr),
                  (1, f"numadir: {locked}: cannot be read (Permission denied)\n"),
                  "an unreadable config: the system's reason, exit 1")


def check_several_mistakes(numadir, root):
    folder = os.path.join(root, "mistakes")
    os.mkdir(folder)
    config = write(os.path.join(folder, "numadir.toml"), base_config(folder) +  # Lines 1-7.
                   'colour = "blue"\n'                                          # 8
                   '[limits]\n'                                                 # 9
                   'size_limit = -1\n'                                          # 10
                   '[[access]]\n'                                               # 11
                   'by = [{ who = "*", access = "reed" }]\n'                    # 12
                   '[[access]]\n'                                               # 13
                   'attrs = ["noSuchAttr"]\n'                                   # 14
                   'by = [{ who = "*", access = "read" }]\n')                   # 15
    result = run(numadir, "check-config", "-c", config)
    h.check_equal(result.returncode, 1, "several mistakes: exit 1")
    lines = result.stderr.splitlines()
    h.check(len(lines) == 3 and lines[0] == f"{config}:8: server.colour: unknown key" and
            lines[1] == f"{config}:10: limits.size_limit: must be an integer from 0 to 4294967295"
            and lines[2].startswith(f"{config}:12: access[0].by[0].access: "),
            "every parse mistake, each with its line and key", result.stderr)
    h.check_equal(result.stdout, "", "and nothing is said to be ok")

    # Once it parses, the schema checks list every bad rule and index too.
    config = write(os.path.join(folder, "compiles.toml"), base_config(folder) +  # Lines 1-7.
                   'rootdn = "noSuchType=admin,dc=example,dc=com"\n'            # 8
                   '[[access]]\n'                                               # 9
                   'attrs = ["noSuchAttr"]\n'                                   # 10
                   'by = [{ who = "*", access = "read" }]\n'                    # 11
                   '[[access]]\n'                                               # 12
                   'attrs = ["otherMissingAttr"]\n'                             # 13
                   'by = [{ who = "*", access = "read" }]\n')                   # 14
    result = run(numadir, "check-config", "-c", config)
    lines = result.stderr.splitlines()
    h.check(result.returncode == 1 and len(lines) == 3 and
            lines[0] == f"{config}:8: server.rootdn: DN: undefined attribute type noSuchType" and
            lines[1].startswith(f"{config}:10: access[0].attrs: \"noSuchAttr\"") and
            lines[2].startswith(f"{config}:13: access[1].attrs: \"otherMissingAttr\""),
            "the rootdn and each bad rule, with their lines", result.stderr)
    served = run(numadir, "serve", "-c", config)
    h.check(served.returncode == 1 and served.stderr == result.stderr,
            "serve refuses it, printing the same lines", served.stderr)
    h.check(not os.path.exists(os.path.join(folder, "db")), "and creates no database")


def check_cleartext_rootpw(numadir, root):
    folder = os.path.join(root, "cleartext")
    os.mkdir(folder)
    config = write(os.path.join(folder, "numadir.toml"), base_config(folder) +  # Lines 1-7.
                   f'rootdn = "{h.ROOT_DN}"\n'                                  # 8
                   'rootpw = "secret"\n')                                       # 9
    warning = (f"{config}:9: warning: server.rootpw: the rootdn can never bind: rootpw is "
               "cleartext and passwords.allow_cleartext is off; hash it with `numadir passwd`\n")
    result = run(numadir, "check-config", "-c", config)
    h.check_equal((result.returncode, result.stderr), (0, warning),
                  "check-config: a cleartext rootpw is a warning naming the line and the fix")
    status, err = h.serve_until_listening(numadir, config)
    h.check_equal(status, 0, "serve still starts and stops cleanly")
    h.check(warning in err, "serve prints the same warning", repr(err))

    allowed = write(os.path.join(folder, "allowed.toml"), "[passwords]\nallow_cleartext = true\n"
                    + base_config(folder) + f'rootdn = "{h.ROOT_DN}"\nrootpw = "secret"\n')
    result = run(numadir, "check-config", "-c", allowed)
    h.check_equal((result.returncode, result.stderr), (0, ""),
                  "with passwords.allow_cleartext = true: no warning")


def check_hidden_rule(numadir, root):
    folder = os.path.join(root, "hidden")
    os.mkdir(folder)
    config = write(os.path.join(folder, "numadir.toml"), base_config(folder) +  # Lines 1-7.
                   '[[access]]\n'                                               # 8
                   f'dn = "{h.SUFFIX}"\n'                                       # 9
                   'by = [{ who = "*", access = "read" }]\n'                    # 10
                   '[[access]]\n'                                               # 11
                   f'dn = "{h.PEOPLE}"\n'                                       # 12
                   'attrs = ["userPassword"]\n'                                 # 13
                   'by = [{ who = "self", access = "write" }]\n')               # 14
    result = run(numadir, "check-config", "-c", config)
    h.check_equal(result.returncode, 0, "a hidden rule is not an error")
    h.check_equal(result.stderr,
                  f"{config}:11: warning: access[1]: never reached: access[0] comes first and "
                  "targets every entry and attribute this rule does (the first rule whose target "
                  "matches decides)\n", "a rule an earlier rule hides is a warning at its line")


def check_provider_settings(numadir, root):
    folder = os.path.join(root, "provider")
    os.mkdir(folder)
    config = write(os.path.join(folder, "numadir.toml"), base_config(folder) +  # Lines 1-7.
                   '[replication.provider]\n'                                   # 8
                   'enabled = 1\n'                                              # 9
                   'sessionlog = 20000000\n'                                    # 10
                   'queue_changes = 0\n'                                        # 11
                   'max_consumers = 0\n'                                        # 12
                   'lag = 5\n')                                                 # 13
    result = run(numadir, "check-config", "-c", config)
    h.check_equal((result.returncode, result.stdout), (1, ""),
                  "bad [replication.provider] values: exit 1, nothing said to be ok")
    h.check_equal(result.stderr.splitlines(), [
        f"{config}:9: replication.provider.enabled: must be true or false",
        f"{config}:10: replication.provider.sessionlog: must be an integer from 0 to 10000000",
        f"{config}:11: replication.provider.queue_changes: must be an integer from 1 to 1000000",
        f"{config}:12: replication.provider.max_consumers: must be an integer from 1 to 10000",
        f"{config}:13: replication.provider.lag: unknown key",
    ], "every provider mistake, each with its line and key")

    # Warnings only: check-config says ok and serve starts.
    ignored = write(os.path.join(folder, "ignored.toml"), base_config(folder) +  # Lines 1-7.
                    '[replication.provider]\n'                                  # 8
                    'queue_changes = 100\n')                                    # 9
    warning = (f"{ignored}:9: warning: replication.provider.queue_changes: ignored: "
               "replication.provider.enabled is false (the default), so no sync search is "
               "served\n")
    result = run(numadir, "check-config", "-c", ignored)
    h.check_equal((result.returncode, result.stderr), (0, warning),
                  "a provider key while the provider is off is a warning")
    h.check(result.stdout.endswith(f"{ignored}: ok\n"), "and the file is ok", result.stdout)

    no_log = write(os.path.join(folder, "nolog.toml"), base_config(folder) +  # Lines 1-7.
                   '[replication.provider]\n'                                # 8
                   'enabled = true\n'                                        # 9
                   'sessionlog = 0\n')                                       # 10
    warning = (f"{no_log}:10: warning: replication.provider.sessionlog: 0: no session log, so "
               "every consumer that reconnects with a cookie gets a present phase (every entry "
               "of its search named again) instead of only what changed\n")
    result = run(numadir, "check-config", "-c", no_log)
    h.check_equal((result.returncode, result.stderr), (0, warning),
                  "a provider without a session log is a warning")
    status, err = h.serve_until_listening(numadir, no_log)
    h.check_equal(status, 0, "serve with the provider enabled starts and stops cleanly")
    h.check(warning in err, "serve prints the same warning", repr(err))

    password = write(os.path.join(folder, "repl.pw"), "secret\n")
    cascade = write(os.path.join(folder, "cascade.toml"), base_config(folder) +  # Lines 1-7.
                    '[replication.provider]\n'                                  # 8
                    'enabled = true\n'                                          # 9
                    '[[replication.consumer]]\n'                                # 10
                    'rid = 1\n'
                    'provider = "ldap://127.0.0.1:1"\n'
                    f'searchbase = "{h.SUFFIX}"\n'
                    f'binddn = "{h.ROOT_DN}"\n'
                    f'credentials_file = "{password}"\n')
    result = run(numadir, "check-config", "-c", cascade)
    h.check_equal((result.returncode, result.stderr), (0,
                  f"{cascade}:1: warning: database.server_id: 0 on a server that is both a "
                  "replication consumer and a provider (a cascade): give it a server id of its "
                  "own (1..4095), as slapd consumers tell the CSNs of different servers apart "
                  "by it\n"), "a cascade with server_id 0 is a warning (offline: no provider "
                  "reached)")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http_get(url, headers):
    """Returns: (status, headers, body) of a GET, errors included."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def check_metrics_settings(numadir, root):
    folder = os.path.join(root, "metrics")
    os.mkdir(folder)
    config = write(os.path.join(folder, "numadir.toml"), base_config(folder) +  # Lines 1-7.
                   '[metrics]\n'                                               # 8
                   'listen = "0.0.0.0:9330"\n'                                 # 9
                   'tls = true\n'                                              # 10
                   'bearer_token_file = "absent.token"\n'                      # 11
                   'max_connections = 0\n'                                     # 12
                   'port = 9330\n')                                            # 13
    result = run(numadir, "check-config", "-c", config)
    h.check_equal((result.returncode, result.stdout), (1, ""),
                  "bad [metrics] values: exit 1, nothing said to be ok")
    h.check_equal(result.stderr.splitlines(), [
        f"{config}:10: metrics.tls: needs a [tls] section (its certificate and key)",
        f"{config}:11: metrics.bearer_token_file: {folder}/absent.token: cannot be read (No such "
        "file or directory)",
        f"{config}:12: metrics.max_connections: must be an integer from 1 to 4096",
        f"{config}:13: metrics.port: unknown key",
    ], "every [metrics] mistake, each with its line and key")

    open_door = write(os.path.join(folder, "open.toml"), base_config(folder) +  # Lines 1-7.
                      '[metrics]\n'                                            # 8
                      'listen = "[::]:9330"\n')                                # 9
    result = run(numadir, "check-config", "-c", open_door)
    h.check_equal((result.returncode, result.stderr),
                  (1, f"{open_door}:9: metrics.listen: \"[::]:9330\" is not a loopback address: "
                   "it needs metrics.tls = true and metrics.client_certificate = true or a "
                   "metrics.bearer_token_file (a metrics port is never an open door)\n"),
                  "a metrics port beyond loopback without TLS and a client check: an error")
    served = run(numadir, "serve", "-c", open_door)
    h.check(served.returncode == 1 and served.stderr == result.stderr,
            "serve refuses it with the same line", served.stderr)

    token = write(os.path.join(folder, "metrics.token"), "t0ken-42\n", mode=0o644)
    port = free_port()
    served_config = write(os.path.join(folder, "served.toml"), base_config(folder) +  # 1-7.
                          '[metrics]\n'                                              # 8
                          f'listen = "127.0.0.1:{port}"\n'                           # 9
                          f'bearer_token_file = "{token}"\n')                        # 10
    warning = (f"{served_config}:10: warning: metrics.bearer_token_file: {token} can be read by "
               "its group or others: chmod 600 it\n")
    result = run(numadir, "check-config", "-c", served_config)
    h.check_equal((result.returncode, result.stderr), (0, warning),
                  "a token file others can read is a warning")
    os.chmod(token, 0o600)
    result = run(numadir, "check-config", "-c", served_config)
    h.check_equal((result.returncode, result.stderr), (0, ""), "chmod 600: no warning")

    process = subprocess.Popen([numadir, "serve", "-c", served_config], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        announced, _ = h.read_until_line(
            process, lambda line: line.startswith("numadir: metrics on "), TIMEOUT_S)
        url = f"http://127.0.0.1:{port}/metrics"
        h.check_equal(announced, f"numadir: metrics on {url}", "serve names the metrics URL")
        status, headers, _ = http_get(url, {})
        h.check(status == 401 and headers.get("WWW-Authenticate", "").startswith("Bearer"),
                "/metrics without the token: 401 with WWW-Authenticate: Bearer", str(status))
        authorization = {"Authorization": "Bearer t0ken-42"}
        status, headers, body = http_get(url, authorization)
        h.check(status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
                and "numadir_build_info{version=" in body,
                "/metrics with the token: 200, the Prometheus text format", f"{status} {body!r}")
        status, headers, body = http_get(
            url, {**authorization, "Accept": "application/openmetrics-text; version=1.0.0"})
        h.check(status == 200 and headers["Content-Type"].startswith(
            "application/openmetrics-text") and body.endswith("# EOF\n"),
            "asked for OpenMetrics: OpenMetrics, ending # EOF", f"{status} {body!r}")

        # A second server on the same metrics port is refused, naming the address.
        other = write(os.path.join(folder, "other.toml"),
                      base_config(os.path.join(folder, "other")) +
                      f'[metrics]\nlisten = "127.0.0.1:{port}"\n')
        os.mkdir(os.path.join(folder, "other"))
        second = run(numadir, "serve", "-c", other)
        h.check(second.returncode == 1 and
                f"numadir serve: metrics.listen 127.0.0.1:{port}: Address already in use\n"
                in second.stderr, "a metrics address in use: serve exits 1 naming it",
                second.stderr)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=TIMEOUT_S)
    h.check_equal(process.returncode, 0, "serve with the metrics endpoint stops cleanly")


def check_database_note(numadir, root):
    folder = os.path.join(root, "nodb")
    os.mkdir(folder)
    config = write(os.path.join(folder, "numadir.toml"), base_config(folder))
    result = run(numadir, "check-config", "-c", config)
    db = os.path.join(folder, "db")
    h.check_equal((result.returncode, result.stderr), (0, ""), "no database yet: still ok")
    h.check_equal(result.stdout,
                  f"{config}:2: note: database.path: {db}: no database there yet; numadir import "
                  f"creates one, numadir serve creates an empty one\n{config}: ok\n",
                  "a note on standard output names the path and what creates a database")
    h.check(not os.path.exists(db), "check-config created nothing")


def check_topology_default(numadir, root):
    folder = os.path.join(root, "topology")
    os.mkdir(folder)
    result = run(numadir, "topology", "--synthetic", "numa:2 core:1 pu:1", cwd=folder)
    h.check(result.returncode == 0 and "dispatcher: percpu (auto: no config given)" in
            result.stdout, "topology without numadir.toml here: the auto plan", result.stdout)
    write(os.path.join(folder, "numadir.toml"),
          base_config(folder) + '[threads]\ndispatcher = "single"\n')
    result = run(numadir, "topology", "--synthetic", "numa:2 core:1 pu:1", cwd=folder)
    h.check(result.returncode == 0 and "dispatcher: single" in result.stdout,
            "topology with numadir.toml here: plans from it, as serve would", result.stdout)
    result = run(numadir, "topology", "-c", os.path.join(folder, "absent.toml"), cwd=folder)
    h.check(result.returncode == 1 and "absent.toml: cannot be read" in result.stderr,
            "topology -c with a missing file: an error, not the auto plan", result.stderr)


def main():
    args = h.parse_args(__doc__)
    numadir = os.path.abspath(args.numadir)
    with tempfile.TemporaryDirectory(prefix="numadir-cli-") as root:
        checks = [
            ("unknown commands", lambda: check_unknown_commands(numadir)),
            ("no command", lambda: check_no_command(numadir)),
            ("help COMMAND", lambda: check_help_command(numadir)),
            ("--version", lambda: check_version(numadir)),
            ("unreadable configs", lambda: check_unreadable_configs(numadir, root)),
            ("several mistakes", lambda: check_several_mistakes(numadir, root)),
            ("cleartext rootpw", lambda: check_cleartext_rootpw(numadir, root)),
            ("hidden access rule", lambda: check_hidden_rule(numadir, root)),
            ("provider settings", lambda: check_provider_settings(numadir, root)),
            ("metrics settings", lambda: check_metrics_settings(numadir, root)),
            ("database note", lambda: check_database_note(numadir, root)),
            ("topology default", lambda: check_topology_default(numadir, root)),
        ]
        return h.run_checks("cli", checks, keep_going=args.keep_going)


if __name__ == "__main__":
    sys.exit(main())
