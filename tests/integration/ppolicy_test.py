#!/usr/bin/python3
"""The password policy (draft-behera-ldap-password-policy, as OpenLDAP slapd 2.5's ppolicy
overlay does it), differentially: every scenario runs against slapd (the reference) first, then
against numadir, on the same LDIF, and the answers are compared.

  ppolicy_test.py --numadir build/release/server/numadir --gen perf/gen_users.py
                  [--slapd-only] [--keep] [-v]

Both servers load gen_users.py's users, an ou=policies subtree (cn=default, the default policy,
and one policy per scenario: objectClass person + pwdPolicy) and one user per scenario
(uid=pp-<name>,ou=people) whose pwdPolicySubentry names that scenario's policy; expiry is set up
with a pwdChangedTime in the past, not by sleeping. slapd runs with `moduleload ppolicy` (global:
slapadd needs the module's built-in schema to load pwdPolicy entries) and `overlay ppolicy`,
`ppolicy_default`, `ppolicy_use_lockout` in its database; numadir with [passwords]
default_policy, use_lockout and failure_flush_ms. Requests carry the Password Policy request
control (1.3.6.1.4.1.42.2.27.8.5.1) unless a step says otherwise.

Compared, step by step: the result code; whether a Password Policy response control came back;
its error (by name) and its warnings (graceAuthNsRemaining exactly, timeBeforeExpiration within
EXPIRY_TOLERANCE_S); where a step reads it, the stored state the rootdn sees (pwdAccountLockedTime
present, the number of pwdFailureTime, pwdGraceUseTime and pwdHistory values, pwdReset,
pwdChangedTime present). Diagnostic messages are printed, never compared. Every step also states
what slapd is expected to answer: if slapd itself answers otherwise the test's picture of the
reference is wrong, and that fails too (the expectations below are what slapd 2.5.13 answered).
Most scenarios use python3-ldap (ldap.controls.ppolicy decodes the control); the expiry warning
and the root DSE use python3-ldap3, which does not decode this control (its decode_control knows
only paged results, DirSync and pre/post-read): its raw value is decoded by hand
(decode_ppolicy_value).

What slapd 2.5.13 answered, and what a server implementer must match (read with the overlay's
source, servers/slapd/overlays/ppolicy.c at OPENLDAP_REL_ENG_2_5_13):
- The response control. Only ever sent when the request carried the request control, and slapd
  honours the request control only on bind, add, modify and Password Modify (it registers it for
  those alone): on a search, a compare or Who am I? a non-critical one is ignored and a critical
  one is refused before anything else with 12 (unavailableCriticalExtension). On a user's bind
  it always comes back, empty (SEQUENCE {}) when there is nothing to report; on the rootdn's bind
  never (the rootdn bypasses every policy). On a modify or Password Modify only when the policy
  refuses the change: a change that passes gets no control.
- Lockout (pwdLockout TRUE, pwdMaxFailure 3). Each wrong password is 49 and adds a pwdFailureTime
  value. The third one stores pwdAccountLockedTime but is itself still a plain 49 with no error.
  From then on every bind, right password or wrong, is 49 with error accountLocked (the lock is
  checked before the password; with ppolicy_use_lockout, else no error) and adds no failure.
  pwdLockoutDuration 0: locked until the rootdn deletes pwdAccountLockedTime with a plain modify,
  and that delete also deletes every pwdFailureTime value (ITS#8762). pwdLockoutDuration 4: the
  lock ends 4 s later; pwdAccountLockedTime stays stored until the next bind deletes it.
- Failures. A successful bind deletes every pwdFailureTime value. pwdFailureCountInterval only
  decides which stored failures count towards the lock (now <= failure + interval, whole
  seconds); old ones are not pruned by age: slapd keeps at most pwdMaxRecordedFailure values
  (default: pwdMaxFailure; with neither it nor pwdMinDelay set, no failures are recorded at all),
  dropping the oldest as it adds one. So 2 failures, 3 s, 2 more leave 3 values, not 2.
- Expiry. Within pwdExpireWarning of pwdMaxAge the bind succeeds with the warning
  timeBeforeExpiration = pwdMaxAge - age (seconds). Past pwdMaxAge with grace logins left: success
  with graceAuthNsRemaining = the logins left after this one (limit-1, ..., 0), each adding one
  pwdGraceUseTime value; then 49 with passwordExpired (no value added). No grace: 49 with
  passwordExpired. Without the request control the result codes are the same.
- pwdMustChange TRUE. A userPassword set by a password administrator (someone with manage access
  to it: the rootdn's modify replace here) stores pwdReset TRUE (and pwdChangedTime). The old
  password is then 49. A bind with the new one succeeds with error changeAfterReset, and that
  connection is restricted until the password changes or another bind succeeds: a search of the
  database, a compare and a modify of any other attribute are 50 (insufficientAccessRights,
  "Operations are restricted to bind/unbind/abandon/StartTLS/modify password"); only the modify
  carries changeAfterReset in the control (search and compare ignore the request control, above).
  An add is 50 with changeAfterReset too, a delete 50 without the control. Allowed: bind, unbind,
  abandon, StartTLS, Who am I? (the overlay has no hook for extended operations, nor for modrdn),
  Password Modify, a modify of userPassword alone, and the root DSE (outside the database).
  The user's own change deletes pwdReset and lifts the restriction on that connection at once.
- The checks of a change by the user (modify of userPassword or Password Modify), in slapd's order:
  the restriction above (50); password administrators (the rootdn) skip the rest; pwdAllowUserChange
  FALSE: 50 passwordModNotAllowed; pwdSafeModify without the old password (Password Modify without
  oldPasswd, or a modify that replaces or adds without deleting the old value): 50
  mustSupplyOldPassword; pwdMinAge with pwdChangedTime younger than it (and no pwdReset TRUE): 19
  passwordTooYoung; a modify's deleted value is checked as a password, cleartext against the stored
  hash (wrong: 53 unwillingToPerform with mustSupplyOldPassword; right: the stored value is what
  gets deleted, so "delete the cleartext old, add the new" works); quality (pwdCheckQuality 1 or 2):
  shorter than pwdMinLength is 19 passwordTooShort, a value already hashed under pwdCheckQuality 2
  is 19 insufficientPasswordQuality; pwdInHistory: the current password, then the newest
  pwdInHistory pwdHistory values: 19 passwordInHistory. A wrong oldPasswd in Password Modify is
  refused by slapd's Password Modify itself, before the policy: 53 (unwillingToPerform), no control.
  Each accepted change adds the old value to pwdHistory (keeping pwdInHistory values) and sets
  pwdChangedTime.
- The root DSE lists 1.3.6.1.4.1.42.2.27.8.5.1 in supportedControl. ppolicy_default applies to
  entries without pwdPolicySubentry (uid=user7 here gets cn=default's lockout counting).

Standard library + python3-ldap + python3-ldap3 (pyasn1 comes with python3-ldap).
"""
import datetime
import os
import subprocess
import sys
import tempfile
import time

import ldap  # python3-ldap
import ldap.controls.ppolicy
import ldap3  # python3-ldap3
from ldap3.core.exceptions import LDAPException

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, CheckFailed, NumadirServer, ber_children, ber_read_tlv,
    fail, parse_args, ssha)
import slapd_harness  # noqa: E402

NAME = "ppolicy"
USERS = 300  # gen_users.py --users, for both servers.
PPOLICY_OID = "1.3.6.1.4.1.42.2.27.8.5.1"
POLICIES = f"ou=policies,{SUFFIX}"
DEFAULT_POLICY = f"cn=default,{POLICIES}"
EXPIRY_TOLERANCE_S = 5  # timeBeforeExpiration may differ by this much between the servers.
# numadir records bind failures in batches (failure_flush_ms = 100): wait this long before the
# rootdn reads the stored state there. slapd writes them before it answers the bind.
NUMADIR_STATE_SETTLE_S = 0.3
# PasswordPolicyResponseValue's error numbers -> names (accountLocked, ...).
ERROR_NAMES = {int(number): name for name, number in
               ldap.controls.ppolicy.PasswordPolicyError.namedValues.items()}

# -- the directory -------------------------------------------------------------------------------
# Policy name -> its pwd* attributes (pwdAttribute: userPassword is added to each).
POLICY_TABLE = {
    "default": {"pwdMaxFailure": "5", "pwdLockout": "TRUE"},
    "lockout": {"pwdMaxFailure": "3", "pwdLockout": "TRUE", "pwdLockoutDuration": "0"},
    "lockout-duration": {"pwdMaxFailure": "3", "pwdLockout": "TRUE", "pwdLockoutDuration": "4"},
    "failure-interval": {"pwdMaxFailure": "3", "pwdLockout": "TRUE", "pwdLockoutDuration": "0",
                         "pwdFailureCountInterval": "2"},
    "failure-clear": {"pwdMaxFailure": "3", "pwdLockout": "TRUE"},
    "expire-warning": {"pwdMaxAge": "1000", "pwdExpireWarning": "900"},
    "grace": {"pwdMaxAge": "100", "pwdGraceAuthNLimit": "2"},
    "expired": {"pwdMaxAge": "100"},
    "must-change": {"pwdMustChange": "TRUE", "pwdAllowUserChange": "TRUE"},
    "quality": {"pwdMinLength": "8", "pwdCheckQuality": "2", "pwdInHistory": "2",
                "pwdAllowUserChange": "TRUE"},
    "too-young": {"pwdMinAge": "3600", "pwdAllowUserChange": "TRUE"},
    "safe-modify": {"pwdSafeModify": "TRUE", "pwdAllowUserChange": "TRUE"},
    "no-user-change": {"pwdAllowUserChange": "FALSE"},
}


def generalized_time(seconds_ago: float) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(
        seconds=seconds_ago)
    return moment.strftime("%Y%m%d%H%M%SZ")


LONG_AGO = "20000101000000Z"
# User name -> (its policy, more attributes). The DN is dn_of(name), the password
# password_of(name). pwdChangedTime values are computed when the LDIF is written.
USER_TABLE = {
    "lockout": ("lockout", {}),
    "unlock": ("lockout-duration", {}),
    "interval": ("failure-interval", {}),
    "clear": ("failure-clear", {}),
    "warning": ("expire-warning", {"pwdChangedTime": lambda: generalized_time(200)}),
    "grace": ("grace", {"pwdChangedTime": lambda: LONG_AGO}),
    "expired": ("expired", {"pwdChangedTime": lambda: LONG_AGO}),
    "mustchange": ("must-change", {}),
    "quality": ("quality", {}),
    "young": ("too-young", {"pwdChangedTime": lambda: generalized_time(60)}),
    "safe": ("safe-modify", {}),
    "nochange": ("no-user-change", {}),
}
DEFAULT_POLICY_USER = 7  # uid=user7: no pwdPolicySubentry, so cn=default applies.


def dn_of(name: str) -> str:
    return f"uid=pp-{name},{PEOPLE}"


def password_of(name: str) -> str:
    return f"Pp-{name}-secret1"


def policy_dn(name: str) -> str:
    return f"cn={name},{POLICIES}"


def policy_ldif() -> str:
    parts = [f"dn: {POLICIES}\nobjectClass: organizationalUnit\nou: policies\n"]
    for name, attributes in POLICY_TABLE.items():
        lines = [f"dn: {policy_dn(name)}", "objectClass: person", "objectClass: pwdPolicy",
                 f"cn: {name}", "sn: policy", "pwdAttribute: userPassword"]
        lines += [f"{attribute}: {value}" for attribute, value in attributes.items()]
        parts.append("\n".join(lines) + "\n")
    for name, (policy, extra) in USER_TABLE.items():
        lines = [f"dn: {dn_of(name)}", "objectClass: inetOrgPerson", f"uid: pp-{name}",
                 f"cn: Policy {name}", "sn: Policy", f"userPassword: {ssha(password_of(name))}",
                 f"pwdPolicySubentry: {policy_dn(policy)}"]
        lines += [f"{attribute}: {value()}" for attribute, value in extra.items()]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def write_ldif(path: str, gen: str):
    with open(path, "wb") as stream:
        generated = subprocess.run(["/usr/bin/python3", gen, "--users", str(USERS), "--suffix",
                                    SUFFIX], capture_output=True, timeout=120)
        if generated.returncode != 0:
            fail(f"gen_users.py failed: {generated.stderr.decode(errors='replace')}")
        stream.write(generated.stdout)
        stream.write(b"\n" + policy_ldif().encode() + b"\n")


# numadir's default access policy (server/operations/access_control.h) in slapd's terms, as in
# differential_test.py: users may replace their own userPassword, anyone may bind.
SLAPD_ACCESS = """access to attrs=userPassword
  by self =wx
  by * auth
access to attrs=children
  by * read
access to *
  by self write
  by * read
"""
SLAPD_GLOBAL = "moduleload ppolicy\n"
SLAPD_DATABASE = f"""overlay ppolicy
ppolicy_default "{DEFAULT_POLICY}"
ppolicy_use_lockout
"""
NUMADIR_PASSWORDS = f"""[passwords]
default_scheme = "SSHA"
allow_cleartext = true
default_policy = "{DEFAULT_POLICY}"
use_lockout = true
failure_flush_ms = 100
clear_flush_ms = 100
"""


class PolicyNumadir(NumadirServer):
    """numadir on the given LDIF file with a [passwords] table carrying the policy keys (and
    slapd's {SSHA} / cleartext acceptance) and a {SSHA} rootpw."""

    def __init__(self, numadir: str, ldif_path: str, keep: bool):
        super().__init__(numadir, gen_users="", users=0, keep=keep)
        self.ldif_path = ldif_path

    def _prepare(self):
        self.config = os.path.join(self.dir, "numadir.toml")
        with open(self.config, "w") as stream:
            stream.write(f"""[database]
path = "{self.dir}/db"
suffix = "{SUFFIX}"
map_size = "1GiB"
durability = "nosync"
indexes = ["objectClass eq", "uid eq"]

{NUMADIR_PASSWORDS}
[server]
listen = ["ldap://127.0.0.1:0"]
rootdn = "{ROOT_DN}"
rootpw = "{ssha(ROOT_PW)}"
listeners = 1
workers = 2

[limits]
size_limit = 500
time_limit = 3600
""")
        imported = subprocess.run([self.numadir, "import", "-c", self.config, "--no-progress",
                                   self.ldif_path], capture_output=True, text=True, timeout=300)
        self.import_stderr = imported.stderr
        if imported.returncode != 0:
            fail(f"numadir import failed ({imported.returncode}): {imported.stderr}"
                 f"{imported.stdout}")


# -- answers -------------------------------------------------------------------------------------
NO_VALUE = "without a value"  # A response control with no controlValue (a malformed one).


def decode_ppolicy_value(value: bytes) -> dict:
    """The PasswordPolicyResponseValue, by hand (for python3-ldap3, which returns the raw value):
    SEQUENCE { warning [0] CHOICE { timeBeforeExpiration [0] INTEGER, graceAuthNsRemaining [1]
    INTEGER } OPTIONAL, error [1] ENUMERATED OPTIONAL }. The CHOICE's tag is explicit (a tagged
    CHOICE always is), so the warning is A0 holding 80 or 81."""
    fields = {"error": None, "expire": None, "grace": None}
    top = ber_read_tlv(value or b"")
    if top is None or top[0] != 0x30:
        raise ValueError(f"not a PasswordPolicyResponseValue: {value!r}")
    for tag, content in ber_children(top[1]):
        if tag == 0xA0:
            for inner_tag, number in ber_children(content):
                key = {0x80: "expire", 0x81: "grace"}[inner_tag]
                fields[key] = int.from_bytes(number, "big", signed=True)
        elif tag == 0x81:
            fields["error"] = ERROR_NAMES.get(int.from_bytes(content, "big"),
                                              int.from_bytes(content, "big"))
    return fields


def control_fields(controls) -> dict:
    """{"control": whether a Password Policy response control came back, "error", "expire",
    "grace"} from python-ldap's controls: decoded objects on success, (oid, criticality, value)
    tuples in an LDAPError."""
    fields = {"control": False, "error": None, "expire": None, "grace": None}
    for control in controls or ():
        if isinstance(control, tuple):
            oid, _, value = control
            if oid != PPOLICY_OID:
                continue
            if not value:  # The draft requires a value; python-ldap cannot decode none.
                return dict(fields, control=NO_VALUE)
            decoded = ldap.controls.ppolicy.PasswordPolicyControl()
            decoded.decodeControlValue(value)
        elif getattr(control, "controlType", None) == PPOLICY_OID:
            decoded = control
        else:
            continue
        fields = {"control": True,
                  "error": None if decoded.error is None else ERROR_NAMES.get(decoded.error,
                                                                              decoded.error),
                  "expire": decoded.timeBeforeExpiration, "grace": decoded.graceAuthNsRemaining}
    return fields


def answer(call) -> dict:
    """Runs a python-ldap call that waits for its result (…_s or result3) and returns
    {"rc", "control", "error", "expire", "grace", "_info"} (keys starting with "_" are shown,
    not compared)."""
    try:
        result = call()
        controls = result[3] if isinstance(result, tuple) and len(result) >= 4 else []
        return {"rc": 0, **control_fields(controls), "_info": ""}
    except ldap.LDAPError as error:
        info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
        rc = info.get("result", type(error).__name__)
        return {"rc": rc, **control_fields(info.get("ctrls")), "_info": info.get("info", "")}


def request_controls(with_control: bool):
    return [ldap.controls.ppolicy.PasswordPolicyControl()] if with_control else None


# -- one server ----------------------------------------------------------------------------------
class Side:
    """One server as the scenarios see it: its URL, requests that return answers, and the steps
    recorded so far (label -> answer) with the expectation failures (slapd only)."""

    def __init__(self, name: str, url: str, settle_s: float, verbose: bool):
        self.name = name
        self.url = url
        self.settle_s = settle_s
        self.verbose = verbose
        self.steps = []  # (label, answer)
        self.unexpected = []  # Lines: where slapd did not answer as the step expects.

    def step(self, label: str, outcome: dict, **expected):
        """Records `outcome`; on slapd, checks it against `expected` (values or predicates)."""
        self.steps.append((label, outcome))
        if self.verbose or self.name == "slapd":
            text = ", ".join(f"{k} {v!r}" for k, v in outcome.items()
                             if not (k in ("error", "expire", "grace") and v is None))
            print(f"    {self.name}: {label}: {text}", flush=True)
        if self.name != "slapd":
            return
        for key, wanted in expected.items():
            observed = outcome.get(key, "<absent>")
            ok = wanted(observed) if callable(wanted) else observed == wanted
            if not ok:
                shown = wanted.__doc__ if callable(wanted) else repr(wanted)
                self.unexpected.append(f"{label}: {key} {observed!r}, expected {shown}")

    # Connections and requests (python-ldap). Each returns an answer dict.
    def connect(self):
        conn = ldap.initialize(self.url, bytes_mode=False)
        conn.protocol_version = 3
        conn.set_option(ldap.OPT_REFERRALS, 0)
        conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
        conn.set_option(ldap.OPT_TIMEOUT, 30)
        return conn

    def bound(self, dn: str, password: str, control: bool = True):
        """A simple bind on a new connection. Returns (its answer, the connection)."""
        conn = self.connect()
        return answer(lambda: conn.simple_bind_s(dn, password,
                                                 serverctrls=request_controls(control))), conn

    def bind(self, dn: str, password: str, control: bool = True) -> dict:
        """A simple bind on a connection of its own, closed after the answer."""
        outcome, conn = self.bound(dn, password, control)
        conn.unbind_s()
        return outcome

    def root(self):
        conn = self.connect()
        conn.simple_bind_s(ROOT_DN, ROOT_PW)
        return conn

    @staticmethod
    def search(conn, base: str, scope=ldap.SCOPE_BASE, control: bool = True) -> dict:
        def call():
            msgid = conn.search_ext(base, scope, "(objectClass=*)", ["1.1"],
                                    serverctrls=request_controls(control))
            return conn.result3(msgid, all=1, timeout=30)
        return answer(call)

    @staticmethod
    def passwd(conn, dn, old, new, control: bool = True) -> dict:
        def call():
            msgid = conn.passwd(dn, old, new, serverctrls=request_controls(control))
            return conn.result3(msgid, all=1, timeout=30)
        return answer(call)

    @staticmethod
    def modify(conn, dn: str, mods, control: bool = True) -> dict:
        modlist = [(op, attribute, None if values is None else
                    [v.encode() for v in (values if isinstance(values, list) else [values])])
                   for op, attribute, values in mods]
        return answer(lambda: conn.modify_ext_s(dn, modlist,
                                                serverctrls=request_controls(control)))

    @staticmethod
    def compare(conn, dn: str, attribute: str, value: str, control: bool = True) -> dict:
        def call():
            msgid = conn.compare_ext(dn, attribute, value.encode(),
                                     serverctrls=request_controls(control))
            return conn.result3(msgid, all=1, timeout=30)
        return answer(call)

    @staticmethod
    def add(conn, dn: str, control: bool = True) -> dict:
        """Adds a device entry `dn` (cn=NAME,...)."""
        name = dn.split(",")[0].split("=", 1)[1]
        modlist = [("objectClass", [b"device"]), ("cn", [name.encode()])]
        return answer(lambda: conn.add_ext_s(dn, modlist, serverctrls=request_controls(control)))

    @staticmethod
    def delete(conn, dn: str, control: bool = True) -> dict:
        return answer(lambda: conn.delete_ext_s(dn, serverctrls=request_controls(control)))

    @staticmethod
    def whoami(conn, control: bool = True) -> dict:
        # whoami_s hands its controls to the C layer as they are: tuples, not objects.
        controls = ldap.controls.RequestControlTuples(request_controls(control))
        return answer(lambda: (conn.whoami_s(serverctrls=controls), None, None, []))

    def state(self, dn: str, *keys) -> dict:
        """The stored policy state the rootdn reads, reduced to what is compared: `keys` among
        locked, failures, grace_uses, history, reset, changed."""
        if self.settle_s:
            time.sleep(self.settle_s)  # numadir's failure_flush_ms; see NUMADIR_STATE_SETTLE_S.
        conn = self.root()
        try:
            found = conn.search_s(dn, ldap.SCOPE_BASE, "(objectClass=*)",
                                  ["pwdAccountLockedTime", "pwdFailureTime", "pwdGraceUseTime",
                                   "pwdHistory", "pwdReset", "pwdChangedTime"])
        finally:
            conn.unbind_s()
        attributes = {name.lower(): values for name, values in found[0][1].items()}
        everything = {
            "locked": "pwdaccountlockedtime" in attributes,
            "failures": len(attributes.get("pwdfailuretime", [])),
            "grace_uses": len(attributes.get("pwdgraceusetime", [])),
            "history": len(attributes.get("pwdhistory", [])),
            "reset": b"".join(attributes.get("pwdreset", [])).decode() or None,
            "changed": "pwdchangedtime" in attributes,
        }
        return {key: everything[key] for key in keys}


def between(low: int, high: int):
    def predicate(value):
        return isinstance(value, int) and low <= value <= high
    predicate.__doc__ = f"between {low} and {high}"
    return predicate


# -- scenarios -----------------------------------------------------------------------------------
NEW = "Changed-pw-9x"  # A password every quality rule accepts.


def lockout(s: Side):
    dn, pw = dn_of("lockout"), password_of("lockout")
    for attempt in (1, 2, 3):
        # slapd: the third failure, the one that locks, is still a plain 49 with no error.
        s.step(f"wrong password {attempt}", s.bind(dn, "wrong"), rc=49, control=True,
               error=None)
    s.step("right password once locked", s.bind(dn, pw), rc=49, control=True,
           error="accountLocked")
    s.step("right password once locked, no request control", s.bind(dn, pw, control=False),
           rc=49, control=False)
    s.step("wrong password once locked", s.bind(dn, "wrong"), rc=49, error="accountLocked")
    s.step("stored state when locked", s.state(dn, "locked", "failures"), locked=True,
           failures=3)
    root = s.root()
    s.step("rootdn deletes pwdAccountLockedTime",
           s.modify(root, dn, [(ldap.MOD_DELETE, "pwdAccountLockedTime", None)], control=False),
           rc=0)
    root.unbind_s()
    s.step("stored state after the unlock", s.state(dn, "locked", "failures"), locked=False,
           failures=0)
    s.step("right password after the unlock", s.bind(dn, pw), rc=0, control=True, error=None)


def unlock_after_duration(s: Side):
    dn, pw = dn_of("unlock"), password_of("unlock")
    for attempt in (1, 2, 3):
        s.step(f"wrong password {attempt}", s.bind(dn, "wrong"), rc=49, error=None)
    s.step("right password once locked", s.bind(dn, pw), rc=49, error="accountLocked")
    s.step("stored state when locked", s.state(dn, "locked", "failures"), locked=True,
           failures=3)
    # pwdLockoutDuration is 4 s, and slapd stores whole seconds: the lock may end 3 s after the
    # third failure, which leaves a loaded machine time for the steps before this one.
    time.sleep(5)
    # The lock has ended, but nothing has removed pwdAccountLockedTime yet: the next bind does.
    s.step("stored state after pwdLockoutDuration", s.state(dn, "locked", "failures"),
           locked=True, failures=3)
    s.step("right password after pwdLockoutDuration", s.bind(dn, pw), rc=0, error=None)
    s.step("stored state after the successful bind", s.state(dn, "locked", "failures"),
           locked=False, failures=0)


def failure_count_interval(s: Side):
    dn, pw = dn_of("interval"), password_of("interval")
    for attempt in (1, 2):
        s.step(f"wrong password {attempt}", s.bind(dn, "wrong"), rc=49, error=None)
    s.step("stored state after 2 failures", s.state(dn, "locked", "failures"), locked=False,
           failures=2)
    time.sleep(3)  # pwdFailureCountInterval is 2 s.
    for attempt in (3, 4):
        s.step(f"wrong password {attempt}", s.bind(dn, "wrong"), rc=49, error=None)
    # slapd keeps the old failures (they just no longer count): it stores at most
    # pwdMaxRecordedFailure values (which defaults to pwdMaxFailure, 3), dropping the oldest.
    s.step("stored state after 2 more failures", s.state(dn, "locked", "failures"),
           locked=False, failures=3)
    s.step("right password (the old failures are forgotten)", s.bind(dn, pw), rc=0, error=None)
    s.step("stored state after the successful bind", s.state(dn, "locked", "failures"),
           locked=False, failures=0)


def success_clears_failures(s: Side):
    dn, pw = dn_of("clear"), password_of("clear")
    for attempt in (1, 2):
        s.step(f"wrong password {attempt}", s.bind(dn, "wrong"), rc=49, error=None)
    s.step("stored state after 2 failures", s.state(dn, "failures"), failures=2)
    s.step("right password", s.bind(dn, pw), rc=0, control=True, error=None)
    s.step("stored state after the successful bind", s.state(dn, "failures"), failures=0)
    s.step("wrong password 3", s.bind(dn, "wrong"), rc=49, error=None)
    s.step("stored state: counting starts again", s.state(dn, "failures", "locked"),
           failures=1, locked=False)


def ldap3_bind(s: Side, dn: str, password: str) -> dict:
    """A simple bind by python3-ldap3 with the request control; the raw response control value
    is decoded by decode_ppolicy_value (ldap3 leaves it undecoded)."""
    host, port = s.url[len("ldap://"):].rstrip("/").rsplit(":", 1)
    server = ldap3.Server(host, port=int(port), get_info=ldap3.NONE, connect_timeout=10)
    conn = ldap3.Connection(server, user=dn, password=password, receive_timeout=30,
                            raise_exceptions=False)
    try:
        conn.open()
        conn.bind(controls=[(PPOLICY_OID, False, None)])
        result = conn.result
    finally:
        conn.unbind()
    controls = result.get("controls") or {}
    fields = {"control": False, "error": None, "expire": None, "grace": None}
    if PPOLICY_OID in controls:
        value = controls[PPOLICY_OID]["value"]
        fields = dict(fields, control=NO_VALUE) if not value else \
            {"control": True, **decode_ppolicy_value(value)}
    return {"rc": result["result"], **fields, "_info": result.get("message", "")}


def expiry_warning(s: Side):
    dn, pw = dn_of("warning"), password_of("warning")
    # pwdMaxAge 1000, changed 200 s before the LDIF was written: about 800 s left, less the time
    # the test has run since (both servers' start-up included: slow under a sanitizer), and the
    # warning window (900 s) has begun.
    s.step("bind (python3-ldap3)", ldap3_bind(s, dn, pw), rc=0, control=True, error=None,
           expire=between(400, 800), grace=None)
    s.step("bind (python3-ldap)", s.bind(dn, pw), rc=0, control=True, error=None,
           expire=between(400, 800))
    s.step("bind without the request control", s.bind(dn, pw, control=False), rc=0,
           control=False)


def grace_logins(s: Side):
    dn, pw = dn_of("grace"), password_of("grace")
    s.step("first bind, expired", s.bind(dn, pw), rc=0, control=True, error=None, grace=1,
           expire=None)
    s.step("stored state after 1 grace login", s.state(dn, "grace_uses"), grace_uses=1)
    s.step("second bind, expired", s.bind(dn, pw), rc=0, control=True, error=None, grace=0)
    s.step("third bind, expired", s.bind(dn, pw), rc=49, control=True, error="passwordExpired",
           grace=None)
    s.step("stored state after the grace logins", s.state(dn, "grace_uses", "locked"),
           grace_uses=2, locked=False)


def expired(s: Side):
    dn, pw = dn_of("expired"), password_of("expired")
    s.step("bind, expired, no grace", s.bind(dn, pw), rc=49, control=True,
           error="passwordExpired")
    s.step("bind, expired, without the request control", s.bind(dn, pw, control=False), rc=49,
           control=False)
    s.step("wrong password, expired", s.bind(dn, "wrong"), rc=49)


def must_change(s: Side):
    dn, pw = dn_of("mustchange"), password_of("mustchange")
    reset_pw = "Reset-by-admin-1"
    root = s.root()
    s.step("rootdn replaces userPassword",
           s.modify(root, dn, [(ldap.MOD_REPLACE, "userPassword", reset_pw)], control=False),
           rc=0)
    root.unbind_s()
    s.step("stored state after the reset", s.state(dn, "reset", "changed"), reset="TRUE",
           changed=True)
    s.step("old password after the reset", s.bind(dn, pw), rc=49, error=None)
    outcome, conn = s.bound(dn, reset_pw)
    s.step("bind with the reset password", outcome, rc=0, control=True,
           error="changeAfterReset")
    # slapd registers the request control for bind, add, modify and Password Modify only, and
    # ignores it (it is not critical) on a search or a compare: they are refused with 50 but
    # carry no response control, although the restriction code would add changeAfterReset.
    s.step("search on that connection", s.search(conn, dn), rc=50, control=False)
    s.step("search on that connection, no request control", s.search(conn, dn, control=False),
           rc=50, control=False)
    s.step("subtree search of the suffix", s.search(conn, SUFFIX, ldap.SCOPE_SUBTREE), rc=50,
           control=False)
    s.step("compare on that connection", s.compare(conn, dn, "sn", "Policy"), rc=50,
           control=False)
    s.step("modify of another attribute",
           s.modify(conn, dn, [(ldap.MOD_REPLACE, "description", "x")]), rc=50,
           control=True, error="changeAfterReset")
    # add honours the request control, delete does not: both are refused by the restriction.
    s.step("add on that connection", s.add(conn, f"cn=pp-added,{PEOPLE}"), rc=50,
           control=True, error="changeAfterReset")
    s.step("delete on that connection", s.delete(conn, dn), rc=50, control=False)
    # The root DSE is not in the database the overlay guards: slapd answers it.
    s.step("search of the root DSE", s.search(conn, ""), rc=0)
    s.step("Who am I?", s.whoami(conn), rc=0)
    # A change that passes the policy is answered without a response control, requested or not
    # (slapd adds it to a modify or Password Modify only when it refuses one).
    s.step("Password Modify by the user", s.passwd(conn, dn, reset_pw, NEW), rc=0,
           control=False)
    s.step("stored state after the user's change", s.state(dn, "reset", "changed"),
           reset=None, changed=True)
    s.step("search on that connection after the change", s.search(conn, dn), rc=0, error=None)
    conn.unbind_s()
    s.step("bind with the new password", s.bind(dn, NEW), rc=0, control=True, error=None)


def quality(s: Side):
    dn, pw = dn_of("quality"), password_of("quality")
    second, third = "Quality-second-2", "Quality-third-3"
    outcome, conn = s.bound(dn, pw)
    s.step("bind", outcome, rc=0, error=None)
    s.step("Password Modify to a 3-character password", s.passwd(conn, dn, pw, "abc"), rc=19,
           error="passwordTooShort")
    s.step("modify to a 3-character password",
           s.modify(conn, dn, [(ldap.MOD_DELETE, "userPassword", pw),
                               (ldap.MOD_ADD, "userPassword", "abc")]),
           rc=19, error="passwordTooShort")
    s.step("Password Modify to the current password", s.passwd(conn, dn, pw, pw), rc=19,
           error="passwordInHistory")
    # pwdCheckQuality 2 and a value already hashed: the quality cannot be checked, so it fails.
    s.step("modify to a pre-hashed password",
           s.modify(conn, dn, [(ldap.MOD_DELETE, "userPassword", pw),
                               (ldap.MOD_ADD, "userPassword", ssha(second))]),
           rc=19, error="insufficientPasswordQuality")
    s.step("Password Modify to a second password", s.passwd(conn, dn, pw, second), rc=0,
           control=False)
    s.step("stored state after one change", s.state(dn, "history", "changed"), history=1,
           changed=True)
    s.step("modify to a third password",
           s.modify(conn, dn, [(ldap.MOD_DELETE, "userPassword", second),
                               (ldap.MOD_ADD, "userPassword", third)]),
           rc=0, error=None)
    s.step("stored state after two changes", s.state(dn, "history"), history=2)
    s.step("Password Modify back to the first password", s.passwd(conn, dn, third, pw), rc=19,
           error="passwordInHistory")
    s.step("modify back to the second password",
           s.modify(conn, dn, [(ldap.MOD_DELETE, "userPassword", third),
                               (ldap.MOD_ADD, "userPassword", second)]),
           rc=19, error="passwordInHistory")
    s.step("Password Modify to the current password", s.passwd(conn, dn, third, third), rc=19,
           error="passwordInHistory")
    conn.unbind_s()
    s.step("bind with the third password", s.bind(dn, third), rc=0, error=None)

    dn, pw = dn_of("young"), password_of("young")
    outcome, conn = s.bound(dn, pw)
    s.step("pwdMinAge: bind", outcome, rc=0, error=None)
    s.step("pwdMinAge: Password Modify", s.passwd(conn, dn, pw, NEW), rc=19,
           error="passwordTooYoung")
    s.step("pwdMinAge: modify",
           s.modify(conn, dn, [(ldap.MOD_DELETE, "userPassword", pw),
                               (ldap.MOD_ADD, "userPassword", NEW)]),
           rc=19, error="passwordTooYoung")
    conn.unbind_s()
    s.step("pwdMinAge: the password is unchanged", s.bind(dn, pw), rc=0)


def safe_modify(s: Side):
    dn, pw = dn_of("safe"), password_of("safe")
    third = "Safe-third-3x"
    outcome, conn = s.bound(dn, pw)
    s.step("bind", outcome, rc=0, error=None)
    s.step("Password Modify without oldPasswd", s.passwd(conn, dn, None, NEW), rc=50,
           error="mustSupplyOldPassword")
    # slapd's Password Modify checks oldPasswd itself, before the policy: 53, no control.
    s.step("Password Modify with a wrong oldPasswd", s.passwd(conn, dn, "wrong", NEW), rc=53,
           control=False)
    s.step("Password Modify with the right oldPasswd", s.passwd(conn, dn, pw, NEW), rc=0,
           error=None)
    s.step("modify replacing userPassword",
           s.modify(conn, dn, [(ldap.MOD_REPLACE, "userPassword", third)]), rc=50,
           error="mustSupplyOldPassword")
    # Under a policy slapd checks the deleted value as a password (cleartext against the stored
    # hash) and deletes the stored value; a wrong one is 53 with mustSupplyOldPassword.
    s.step("modify deleting a wrong old value",
           s.modify(conn, dn, [(ldap.MOD_DELETE, "userPassword", "wrong"),
                               (ldap.MOD_ADD, "userPassword", third)]), rc=53,
           control=True, error="mustSupplyOldPassword")
    s.step("modify deleting the old value and adding the new",
           s.modify(conn, dn, [(ldap.MOD_DELETE, "userPassword", NEW),
                               (ldap.MOD_ADD, "userPassword", third)]), rc=0, error=None)
    conn.unbind_s()
    s.step("bind with the newest password", s.bind(dn, third), rc=0)


def no_user_change(s: Side):
    dn, pw = dn_of("nochange"), password_of("nochange")
    outcome, conn = s.bound(dn, pw)
    s.step("bind", outcome, rc=0, error=None)
    s.step("Password Modify by the user", s.passwd(conn, dn, pw, NEW), rc=50,
           error="passwordModNotAllowed")
    s.step("modify of userPassword by the user",
           s.modify(conn, dn, [(ldap.MOD_DELETE, "userPassword", pw),
                               (ldap.MOD_ADD, "userPassword", NEW)]),
           rc=50, error="passwordModNotAllowed")
    conn.unbind_s()
    root = s.root()
    s.step("Password Modify by the rootdn", s.passwd(root, dn, None, NEW), rc=0)
    root.unbind_s()
    s.step("stored state after the rootdn's change", s.state(dn, "reset", "changed"),
           reset=None, changed=True)
    s.step("bind with the rootdn's password", s.bind(dn, NEW), rc=0, error=None)


def default_policy(s: Side):
    dn = f"uid=user{DEFAULT_POLICY_USER},{PEOPLE}"
    pw = f"password{DEFAULT_POLICY_USER}"
    s.step("wrong password", s.bind(dn, "wrong"), rc=49, control=True, error=None)
    s.step("stored state after a failure", s.state(dn, "failures", "locked"), failures=1,
           locked=False)
    s.step("right password", s.bind(dn, pw), rc=0, control=True, error=None)
    s.step("stored state after the successful bind", s.state(dn, "failures"), failures=0)


def root_dse_and_rootdn(s: Side):
    host, port = s.url[len("ldap://"):].rstrip("/").rsplit(":", 1)
    server = ldap3.Server(host, port=int(port), get_info=ldap3.NONE, connect_timeout=10)
    conn = ldap3.Connection(server, receive_timeout=30, raise_exceptions=False)
    conn.open()
    conn.search("", "(objectClass=*)", ldap3.BASE, attributes=["supportedControl"])
    controls = conn.response[0]["attributes"].get("supportedControl", []) if conn.response \
        else []
    conn.unbind()
    s.step("root DSE supportedControl (python3-ldap3)",
           {"rc": conn.result["result"], "ppolicy listed": PPOLICY_OID in controls}, rc=0,
           **{"ppolicy listed": True})
    # The rootdn bypasses the policy entirely: no response control even when requested.
    s.step("rootdn bind with the request control", s.bind(ROOT_DN, ROOT_PW), rc=0,
           control=False)
    outcome, conn = s.bound(f"uid=user{DEFAULT_POLICY_USER + 1},{PEOPLE}",
                            f"password{DEFAULT_POLICY_USER + 1}")
    s.step("a user's bind with the request control", outcome, rc=0, control=True, error=None)
    critical = ldap.controls.ppolicy.PasswordPolicyControl(criticality=True)

    def critical_search():
        msgid = conn.search_ext(SUFFIX, ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"],
                                serverctrls=[critical])
        return conn.result3(msgid, all=1, timeout=30)
    # Not registered for search: a critical one is refused before anything else.
    s.step("search with the request control marked critical", answer(critical_search), rc=12,
           control=False)
    conn.unbind_s()


SCENARIOS = [
    ("1 lockout, unlocked by the rootdn", lockout),
    ("2 unlock after pwdLockoutDuration", unlock_after_duration),
    ("3 pwdFailureCountInterval forgets old failures", failure_count_interval),
    ("4 a successful bind clears pwdFailureTime", success_clears_failures),
    ("5 expiry warning", expiry_warning),
    ("6 grace logins", grace_logins),
    ("7 expired without grace", expired),
    ("8 pwdMustChange", must_change),
    ("9 password quality, history and minimum age", quality),
    ("10 pwdSafeModify", safe_modify),
    ("11 pwdAllowUserChange FALSE", no_user_change),
    ("12 the root DSE and the rootdn", root_dse_and_rootdn),
    ("13 the default policy", default_policy),
]


# -- comparison and the run ----------------------------------------------------------------------
def same(key: str, a, b) -> bool:
    if key == "expire" and isinstance(a, int) and isinstance(b, int):
        return abs(a - b) <= EXPIRY_TOLERANCE_S
    return a == b


def differences(slapd_steps, numadir_steps) -> list:
    lines = []
    numadir_by_label = dict(numadir_steps)
    for label, theirs in slapd_steps:
        ours = numadir_by_label.get(label)
        if ours is None:
            lines.append(f"{label}: no answer from numadir; slapd {theirs!r}")
            continue
        keys = sorted(k for k in set(ours) | set(theirs) if not k.startswith("_"))
        diff = [k for k in keys if not same(k, ours.get(k), theirs.get(k))]
        if diff:
            line = f"{label}: " + "; ".join(
                f"{k}: numadir {ours.get(k)!r}, slapd {theirs.get(k)!r}" for k in diff)
            if ours.get("_info") or theirs.get("_info"):
                line += (f" (diagnostics: numadir {ours.get('_info')!r}, "
                         f"slapd {theirs.get('_info')!r})")
            lines.append(line)
    return lines


def run_scenario(side: Side, function) -> str:
    """Runs one scenario on one side. Returns "" or why it could not finish."""
    try:
        function(side)
        return ""
    except (ldap.LDAPError, LDAPException, CheckFailed, OSError, IndexError, KeyError,
            ValueError) as error:
        return f"{type(error).__name__}: {error}"


def run_all(slapd_url: str, numadir_url, verbose: bool, failures: list) -> list:
    """Runs every scenario against slapd, then (unless `numadir_url` is None) against numadir,
    and compares. Appends each problem to `failures`. Returns the summary table: (scenario,
    slapd's verdict, numadir's verdict or None)."""
    table = []
    for title, function in SCENARIOS:
        print(f"{NAME}: {title}", flush=True)
        theirs = Side("slapd", slapd_url, 0, verbose)
        problems = [f"slapd stopped: {why}" for why in [run_scenario(theirs, function)] if why]
        problems += [f"slapd answered otherwise than the scenario expects: {line}"
                     for line in theirs.unexpected]
        for line in problems:
            print(f"  {line}", flush=True)
        failures.extend(f"{title}: {line}" for line in problems)
        verdict = "FAILED" if problems else "ok"
        if numadir_url is None:
            table.append((title, verdict, None))
            continue
        ours = Side("numadir", numadir_url, NUMADIR_STATE_SETTLE_S, verbose)
        stopped = run_scenario(ours, function)
        lines = differences(theirs.steps, ours.steps)
        if stopped:
            lines.append(f"numadir stopped: {stopped}")
        for line in lines:
            print(f"  DIFFERENCE: {line}", flush=True)
        failures.extend(f"{title}: {line}" for line in lines)
        table.append((title, verdict, f"{len(lines)} differences" if lines else "same"))
    return table


def main() -> int:
    args = parse_args(f"{NAME}: the password policy, numadir against OpenLDAP slapd")
    slapd_only = "--slapd-only" in sys.argv[1:]
    verbose = "-v" in sys.argv[1:] or "--verbose" in sys.argv[1:]
    missing = slapd_harness.available()
    if missing:
        print(f"FAIL {NAME}: {missing}", flush=True)
        return 1
    started = time.monotonic()
    failures = []  # Every problem, for the summary.
    numadir_state = "not run (--slapd-only)"
    with tempfile.TemporaryDirectory(prefix="numadir-ppolicy-") as work:
        ldif_path = os.path.join(work, "data.ldif")
        write_ldif(ldif_path, args.gen)
        try:
            with slapd_harness.SlapdServer(ldif_path, access=SLAPD_ACCESS, root_pw=ssha(ROOT_PW),
                                           extra_conf=SLAPD_GLOBAL,
                                           database_conf=SLAPD_DATABASE,
                                           keep=args.keep) as slapd:
                numadir = None
                if not slapd_only:
                    # Started by hand so that a numadir that cannot start (or import the policy
                    # entries) still leaves every scenario run against slapd.
                    numadir = PolicyNumadir(args.numadir, ldif_path, args.keep)
                    try:
                        numadir.__enter__()
                    except (CheckFailed, OSError, subprocess.SubprocessError) as error:
                        numadir, numadir_state = None, "did not start"
                        print(f"  numadir did not start: {error}", flush=True)
                        failures.append(f"numadir did not start: {error}")
                try:
                    table = run_all(slapd.url, numadir.url if numadir else None, verbose,
                                    failures)
                finally:
                    if numadir is not None:
                        try:
                            numadir.__exit__(None, None, None)
                        except CheckFailed as error:
                            failures.append(f"numadir: {error}")
        except CheckFailed as error:
            print(f"FAIL {NAME}: {error}", flush=True)
            return 1
    print(f"{NAME}: summary ({time.monotonic() - started:.1f}s)", flush=True)
    for title, slapd_verdict, numadir_verdict in table:
        print(f"  {title:<50} slapd {slapd_verdict:<7} numadir {numadir_verdict or numadir_state}",
              flush=True)
    if failures:
        sys.stderr.write("".join(f"FAIL {NAME}: {line}\n" for line in failures))
        print(f"FAIL {NAME}: {len(failures)} problems (above)", flush=True)
        return 1
    if slapd_only:
        print(f"{NAME}: slapd answered all {len(SCENARIOS)} scenarios as expected (numadir not "
              f"run: --slapd-only)", flush=True)
    else:
        print(f"{NAME}: all {len(SCENARIOS)} scenarios answered alike", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
