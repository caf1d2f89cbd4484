#!/usr/bin/python3
"""authrate against the real numadir serve: its requests are understood and its decoding of the
answers is right (auths succeed, every returned DN binds), and every failure is counted under
its LDAP result code or kind:

- right passwords: auths > 0, no error;
- wrong passwords: every bind answered invalidCredentials, counted as by_code["49"];
- --wrong-percent 30 in same, split, bind-only and --reconnect: the wrong-password binds are
  all refused with invalidCredentials, counted as wrong_password_refused (and as auths), none
  as an error; search-only and modify refuse the option (exit 2);
- users that do not exist: every search answered with no entry, counted as no_entry;
- a filter that matches several entries: counted as multiple_entries (or sizeLimitExceeded, 4,
  for an anonymous search past the server's size limit);
- --mode modify as the rootdn: modifications > 0, no error; as a user, who may change only its
  own entry: the others refused with insufficientAccessRights, counted as by_code["50"].

  authrate_numadir_test.py --numadir build/release/server/numadir --gen perf/gen_users.py \\
      --bin-dir build/release
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (ROOT_DN, ROOT_PW, CheckFailed, NumadirServer, parse_args,  # noqa: E402
                             run_checks)

PEOPLE = "ou=people,dc=example,dc=com"


def authrate(args, server, *options):
    command = [os.path.join(args.bin_dir, "perf", "authrate"), "-H", server.url, "-b", PEOPLE,
               "--json", "-d", "1", "-c", "2"] + list(options)
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    try:
        summary = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise CheckFailed(f"authrate printed no JSON (exit {result.returncode}): "
                          f"{result.stdout[-500:]} {result.stderr[-500:]}")
    return result.returncode, summary


def main():
    args = parse_args(__doc__)
    if not args.bin_dir:
        print("authrate_numadir: --bin-dir is required")
        return 2
    state = {}

    def good():
        code, summary = authrate(args, state["server"], "--last", "99")
        if code != 0 or summary["auths"] == 0 or summary["errors"]["total"] != 0:
            raise CheckFailed(f"right passwords: exit {code}, {summary}")
        print(f"  ok: {summary['auths']} auths, no error")

    def wrong_password():
        code, summary = authrate(args, state["server"], "--last", "99", "-w", "wrong%d")
        errors = summary["errors"]
        if summary["auths"] != 0 or errors["by_code"].get("49", 0) == 0:
            raise CheckFailed(f"wrong passwords: expected only code 49: {summary}")
        if errors["by_code"].get("49") != errors["total"]:
            raise CheckFailed(f"wrong passwords: every error should be code 49: {errors}")
        if code != 1:
            raise CheckFailed(f"every auth failed, so authrate should exit 1, not {code}")
        print(f"  ok: {errors['total']} binds counted under code 49, exit 1")

    def some_wrong_passwords():
        for options in (["--mode", "same"], ["--mode", "split"], ["--mode", "bind-only"],
                        ["--reconnect"]):
            code, summary = authrate(args, state["server"], "--last", "99", "--wrong-percent",
                                     "30", *options)
            made, refused = summary["wrong_password_binds"], summary["wrong_password_refused"]
            if code != 0 or summary["errors"]["total"] != 0 or made == 0 or refused != made:
                raise CheckFailed(f"--wrong-percent 30 {' '.join(options)}: exit {code}, "
                                  f"{summary}")
            if summary["auths"] <= refused or summary["wrong_percent"] != 30:
                raise CheckFailed(f"--wrong-percent 30 {' '.join(options)}: auths should count "
                                  f"the right and the refused binds: {summary}")
            print(f"  ok: {' '.join(options)}: {refused} of {made} wrong-password binds refused "
                  f"as expected, {summary['auths']} auths, no error")
        for mode, more in (("search-only", []), ("modify", ["-D", ROOT_DN, "-w", ROOT_PW])):
            command = [os.path.join(args.bin_dir, "perf", "authrate"), "-H",
                       state["server"].url, "--mode", mode, *more, "--wrong-percent", "10",
                       "-d", "1"]
            result = subprocess.run(command, capture_output=True, text=True, timeout=60)
            if result.returncode != 2 or "--wrong-percent" not in result.stderr:
                raise CheckFailed(f"--wrong-percent with --mode {mode}: expected a usage error, "
                                  f"got exit {result.returncode}: {result.stderr[-500:]}")
        print("  ok: search-only and modify refuse --wrong-percent")

    def missing_users():
        _, summary = authrate(args, state["server"], "--first", "5000", "--last", "5099")
        errors = summary["errors"]
        if errors["by_kind"]["no_entry"] == 0 or errors["by_kind"]["no_entry"] != errors["total"]:
            raise CheckFailed(f"missing users: expected only no_entry: {errors}")
        print(f"  ok: {errors['total']} searches counted as no_entry")

    def several_entries():
        _, summary = authrate(args, state["server"], "-f", "(objectClass=person)")
        errors = summary["errors"]
        several = errors["by_kind"]["multiple_entries"] + errors["by_code"].get("4", 0)
        if several == 0 or several != errors["total"]:
            raise CheckFailed(f"a filter matching many: expected multiple_entries or code 4: "
                              f"{errors}")
        print(f"  ok: {errors['total']} searches counted as several entries")

    def modify_as_root():
        code, summary = authrate(args, state["server"], "--mode", "modify", "-D", ROOT_DN, "-w",
                                 ROOT_PW, "--last", "99")
        if code != 0 or summary["modifications"] == 0 or summary["errors"]["total"] != 0:
            raise CheckFailed(f"modify as the rootdn: exit {code}, {summary}")
        print(f"  ok: {summary['modifications']} modifications, no error")

    def modify_refused():
        _, summary = authrate(args, state["server"], "--mode", "modify", "-D",
                              f"uid=user0,{PEOPLE}", "-w", "password0", "--first", "1",
                              "--last", "99")
        errors = summary["errors"]
        if errors["by_code"].get("50", 0) == 0 or errors["by_code"].get("50") != errors["total"]:
            raise CheckFailed(f"modify as a user: expected only code 50: {summary}")
        print(f"  ok: {errors['total']} modifications refused with code 50")

    with NumadirServer(args.numadir, args.gen, users=100) as server:
        state["server"] = server
        return run_checks("authrate_numadir", [("right passwords", good),
                                               ("wrong passwords", wrong_password),
                                               ("some wrong passwords", some_wrong_passwords),
                                               ("missing users", missing_users),
                                               ("several entries", several_entries),
                                               ("modify as the rootdn", modify_as_root),
                                               ("modify refused", modify_refused)])


if __name__ == "__main__":
    sys.exit(main())
