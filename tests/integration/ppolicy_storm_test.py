#!/usr/bin/python3
"""The password policy under attack: password-guessing storms against numadir with a lockout
policy (pwdMaxFailure, pwdLockout, use_lockout), from many python3-ldap connections at once.

  ppolicy_storm_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

1. 64 connections guess one user's password at once: the account locks after exactly
   pwdMaxFailure failures (pwdFailureTime holds exactly that many values), every later bind,
   the right password too, gets invalidCredentials with accountLocked, and no bind is answered
   anything else.
2. A crash during a storm: 32 connections guess the passwords of 289 users (failures counted in
   memory and written in batches); the server is killed with SIGKILL mid-storm and restarted on
   the same database. Every account a client was told is locked (accountLocked in a response)
   is still locked after the restart: its right password is refused with accountLocked.
3. The right password of a user who was never guessed at still works after the restart.

Exits 0 when every check passes; otherwise 1 with the first failing check.
"""
import os
import random
import sys
import threading
import time

import ldap  # python3-ldap
from ldap.controls import DecodeControlTuples
from ldap.controls.ppolicy import PasswordPolicyControl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    ROOT_DN, ROOT_PW, SUFFIX, check, check_equal, parse_args, run_suite, user_dn, user_pw)

USERS = 300
MAX_FAILURE = 5
POLICY_DN = f"cn=lockout,ou=policies,{SUFFIX}"
POLICY_LDIF = f"""dn: ou=policies,{SUFFIX}
objectClass: organizationalUnit
ou: policies

dn: {POLICY_DN}
objectClass: person
objectClass: pwdPolicy
cn: lockout
sn: policy
pwdAttribute: userPassword
pwdMaxFailure: {MAX_FAILURE}
pwdLockout: TRUE
pwdLockoutDuration: 0
"""
POLICY_TOML = f"""[passwords]
default_policy = "{POLICY_DN}"
use_lockout = true
failure_flush_ms = 100
"""
ACCOUNT_LOCKED = 1  # PasswordPolicyResponseValue error accountLocked.
S = None


def bind(url: str, dn: str, password: str):
    """Returns (result name, ppolicy error or None) of a simple bind with the request control,
    or ("down", None) when the server cannot be reached."""
    conn = ldap.initialize(url, bytes_mode=False)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 5)
    try:
        _, _, _, controls = conn.simple_bind_s(dn, password, serverctrls=[PasswordPolicyControl()])
        return "success", policy_error(controls)
    except ldap.SERVER_DOWN:
        return "down", None
    except ldap.LDAPError as error:
        info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
        return type(error).__name__, policy_error(DecodeControlTuples(info.get("ctrls", [])))
    finally:
        try:
            conn.unbind_s()
        except ldap.LDAPError:
            pass


def policy_error(controls):
    for control in controls:
        if isinstance(control, PasswordPolicyControl):
            return control.error
    return None


def root_search(dn: str):
    conn = ldap.initialize(S.url, bytes_mode=False)
    conn.simple_bind_s(ROOT_DN, ROOT_PW)
    (_, attributes), = conn.search_s(dn, ldap.SCOPE_BASE, "(objectClass=*)",
                                     ["pwdFailureTime", "pwdAccountLockedTime"])
    conn.unbind_s()
    return attributes


def check_one_user_storm():
    target = user_dn(1)
    answers = []
    lock = threading.Lock()

    def guess(worker: int):
        conn = ldap.initialize(S.url, bytes_mode=False)
        mine = []
        for attempt in range(8):
            try:
                _, _, _, controls = conn.simple_bind_s(target, f"wrong-{worker}-{attempt}",
                                                       serverctrls=[PasswordPolicyControl()])
                mine.append(("success", policy_error(controls)))
            except ldap.LDAPError as error:
                info = error.args[0] if isinstance(error.args[0], dict) else {}
                mine.append((type(error).__name__,
                             policy_error(DecodeControlTuples(info.get("ctrls", [])))))
        conn.unbind_s()
        with lock:
            answers.extend(mine)

    threads = [threading.Thread(target=guess, args=(i,)) for i in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    check_equal(len(answers), 64 * 8, "every guess was answered")
    names = {name for name, _ in answers}
    check_equal(names, {"INVALID_CREDENTIALS"}, "every guess got invalidCredentials")
    plain = sum(1 for _, error in answers if error is None)
    locked = sum(1 for _, error in answers if error == ACCOUNT_LOCKED)
    check_equal((plain, locked), (MAX_FAILURE, 64 * 8 - MAX_FAILURE),
                f"exactly {MAX_FAILURE} guesses were counted, the rest refused as locked")
    time.sleep(0.5)  # failure_flush_ms is 100: the failures are written by now.
    stored = root_search(target)
    check_equal(len(stored.get("pwdFailureTime", [])), MAX_FAILURE,
                "pwdFailureTime holds exactly pwdMaxFailure values")
    check("pwdAccountLockedTime" in stored, "the account is locked in storage",
          f"stored: {stored}")
    check_equal(bind(S.url, target, user_pw(1)), ("INVALID_CREDENTIALS", ACCOUNT_LOCKED),
                "the right password is refused with accountLocked")


def restart_after_sigkill():
    S.process.kill()
    S.process.wait()
    S.stderr_file.close()
    S.listening_urls = []
    S.ports = {}
    S._start()


def check_crash_during_storm():
    users = [n for n in range(10, USERS) if n != 250]
    told_locked = set()
    answered = [0]
    lock = threading.Lock()
    stop = threading.Event()
    url = S.url

    def storm(seed: int):
        rng = random.Random(seed)
        while not stop.is_set():
            n = rng.choice(users)
            result, error = bind(url, user_dn(n), f"guess-{rng.random()}")
            if result == "down":
                return
            with lock:
                answered[0] += 1
                if error == ACCOUNT_LOCKED:
                    told_locked.add(n)

    threads = [threading.Thread(target=storm, args=(i,)) for i in range(32)]
    for thread in threads:
        thread.start()
    # Until some accounts are reported locked and the storm goes on past them.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lock:
            if len(told_locked) >= 20:
                break
        time.sleep(0.05)
    restart_after_sigkill()
    stop.set()
    for thread in threads:
        thread.join()
    with lock:
        reported = sorted(told_locked)
    print(f"  {answered[0]} guesses answered, {len(reported)} accounts reported locked before "
          "the SIGKILL", flush=True)
    check(len(reported) >= 20, "accounts were reported locked before the crash",
          f"{len(reported)} reported")
    unlocked = [n for n in reported
                if bind(S.url, user_dn(n), user_pw(n)) != ("INVALID_CREDENTIALS", ACCOUNT_LOCKED)]
    check_equal(unlocked, [], "every account reported locked is still locked after the restart")


def check_untouched_user_after_restart():
    check_equal(bind(S.url, user_dn(250), user_pw(250)), ("success", None),
                "a user nobody guessed at binds with the right password")


def set_server(server):
    global S
    S = server


def main() -> int:
    args = parse_args(__doc__.split("\n")[0])
    return run_suite("ppolicy_storm", args, [
        ("64 connections guessing one user's password", check_one_user_storm),
        ("SIGKILL during a storm of failed binds", check_crash_during_storm),
        ("an untouched user after the restart", check_untouched_user_after_restart),
    ], set_server, users=USERS, extra_ldif=POLICY_LDIF, extra_toml=POLICY_TOML, workers=2)


if __name__ == "__main__":
    sys.exit(main())
