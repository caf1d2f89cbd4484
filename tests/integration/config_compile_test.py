#!/usr/bin/python3
"""`numadir check-config` and `numadir serve` compile numadir.toml through the same code: an
access rule whose DN parses but fails the DN checks every operation applies (a value its syntax
refuses) stops both, with the same message on standard error and a non-zero status, and serve
never listens; a config file holding server.rootpw that group or others may read draws the same
warning from both (and none at mode 0600), without stopping either.

  config_compile_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 on success, 1 with the first failure.
"""
import os
import subprocess
import sys
import tempfile

import numadir_harness as h

TIMEOUT_S = 60


def write_config(folder, extra):
    path = os.path.join(folder, "numadir.toml")
    with open(path, "w") as stream:
        stream.write(f"""[database]
path = "db"
suffix = "{h.SUFFIX}"
map_size = "256MiB"

[server]
listen = ["ldap://127.0.0.1:0"]
{extra}""")
    return path


def check_config(numadir, config):
    return subprocess.run([numadir, "check-config", "-c", config], capture_output=True,
                          text=True, timeout=TIMEOUT_S)


def check_bad_rule_dn(numadir, folder, key, rule):
    config = write_config(folder, f"\n[[access]]\n{rule}\n")
    checked = check_config(numadir, config)
    h.check(checked.returncode != 0, f"{key}: check-config exits non-zero",
            f"status {checked.returncode}, stderr {checked.stderr!r}")
    # Line 10: the rule's first line after write_config's seven and "\n[[access]]\n".
    expected = f"{config}:10: {key}: DN: value of uidNumber invalid per syntax\n"
    h.check_equal(checked.stderr, expected,
                  f"{key}: check-config names the file, line, rule, key and why")
    served = subprocess.run([numadir, "serve", "-c", config], capture_output=True, text=True,
                            timeout=TIMEOUT_S)
    h.check(served.returncode != 0, f"{key}: serve exits non-zero",
            f"status {served.returncode}, stderr {served.stderr!r}")
    h.check_equal(served.stderr, checked.stderr, f"{key}: serve says exactly what check-config says")
    h.check("listening" not in served.stdout, f"{key}: serve never listens", served.stdout)
    h.check(not os.path.exists(os.path.join(folder, "db")), f"{key}: serve opened no database")


def check_rootpw_mode(numadir, folder):
    config = write_config(folder, 'rootdn = "cn=admin,dc=example,dc=com"\n'
                                  f'rootpw = "{h.ssha(h.ROOT_PW)}"\n')
    warning = (f"{config}: warning: holds server.rootpw and is open to group or "
               f"others (mode 0644): chmod 600 it\n")
    os.chmod(config, 0o644)
    checked = check_config(numadir, config)
    h.check_equal(checked.returncode, 0, "mode 0644: check-config still accepts the config")
    h.check_equal(checked.stderr, warning, "mode 0644: check-config warns, naming the file and mode")
    status, err = h.serve_until_listening(numadir, config)
    h.check_equal(status, 0, "mode 0644: serve starts and stops cleanly")
    h.check(warning in err, "mode 0644: serve prints the same warning at start", repr(err))

    os.chmod(config, 0o600)
    checked = check_config(numadir, config)
    h.check_equal((checked.returncode, checked.stderr), (0, ""), "mode 0600: no warning")
    status, err = h.serve_until_listening(numadir, config)
    h.check_equal(status, 0, "mode 0600: serve starts and stops cleanly")
    h.check("warning" not in err, "mode 0600: serve prints no warning", repr(err))


def main():
    args = h.parse_args(__doc__)
    numadir = os.path.abspath(args.numadir)
    with tempfile.TemporaryDirectory(prefix="numadir-config-compile-") as root:
        def folder(name):
            path = os.path.join(root, name)
            os.mkdir(path)
            return path

        checks = [
            ("a by-clause DN that fails the DN checks",
             lambda: check_bad_rule_dn(numadir, folder("by"), "access[0].by.dn",
                                       'by = [{ dn = "uidNumber=abc,dc=example,dc=com", '
                                       'access = "read" }]')),
            ("a rule target DN that fails the DN checks",
             lambda: check_bad_rule_dn(numadir, folder("target"), "access[0].dn",
                                       'dn = "uidNumber=abc,dc=example,dc=com"\n'
                                       'by = [{ who = "*", access = "read" }]')),
            ("the rootpw file mode", lambda: check_rootpw_mode(numadir, folder("rootpw"))),
        ]
        return h.run_checks("config_compile", checks, keep_going=args.keep_going)


if __name__ == "__main__":
    sys.exit(main())
