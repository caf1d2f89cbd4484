#!/usr/bin/python3
"""numadir with the real NSS and PAM daemons: nslcd (nss-pam-ldapd) and SSSD (sssd-ldap), each
run against a private `numadir serve` and against a private OpenLDAP slapd loaded with the same
LDIF, in a private mount namespace (nss_pam_harness.py): the machine's own /etc/nsswitch.conf,
daemon configs and PAM stack are neither used nor changed, and nothing is left running.

  nss_pam_test.py --numadir build/release/server/numadir --gen perf/gen_users.py
                  [--daemons nslcd,sssd] [--servers numadir,slapd] [--keep] [-v]

The directory: perf/gen_users.py --users 600 --nss --posix-groups 20 --groups-per-user 3 (users
with posixAccount + shadowAccount, secondary groups both as posixGroup + memberUid and as
groupOfNames + member), password policies, and a few users per daemon for the policy, expiry,
password change and restart checks. Both servers: size limit 500, lifted for paged searches as a
whole (slapd's `sizelimit size.prtotal=unlimited`, as nslcd.conf(5) recommends; numadir's
`limits.size_limit_paged = 0`), so enumerating the 600 users must page through more than the
size limit, the password policy (slapd's ppolicy
overlay, numadir's [passwords] default_policy, use_lockout), ldap:// and ldaps:// with a
throwaway CA (tls_harness.Pki), StartTLS.

For each daemon and each server (every daemon started once per server and configuration; the
numbered items are the issue's):
 1. getent passwd / group, id (secondary groups from RFC 2307 memberUid and from rfc2307bis
    member: nslcd with one group filter over both classes, SSSD with a domain of each schema),
    enumeration paged in pages of 100 (nslcd pagesize; SSSD ldap_page_size and enumerate = true
    in a domain of its own);
 2. pamtester authenticate: right password, wrong password, unknown user; a user locked by
    pwdMaxFailure; a password about to expire (the daemon's warning); an expired one; an
    account past its shadowExpire refused by acct_mgmt;
 3. chauthtok (as the user, through setpriv): Password Modify, the new password works, the old
    one no longer does, and the stored userPassword is hashed;
 4. the server stopped and started again on the same ports under the running daemon: a user
    added after the restart is found and authenticates (SSSD: no cached credentials, cache
    timeouts of 1 s, no in-memory cache, so answers come from the server);
 5. StartTLS and ldaps:// with the CA verified (tls_reqcert demand), and refused with another
    CA;
 6. one login (getent passwd, pamtester authenticate acct_mgmt, id) through a decoding relay
    (nss_pam_harness.LdapTap): every request with its filter, attributes and controls, and what
    came back, printed as what the daemon sends per login; SSSD twice (cold and warm cache).
Every answer is compared between numadir and slapd (PAM messages with their numbers masked,
where they are time left); each also has its expected value, so that both servers being wrong
the same way fails too. numadir's access log must show the paged enumeration and the TLS.

Accepted differences (ACCEPTED below): none is a failure; each is printed with its reason.

Standard library and the harnesses beside it (tls_harness imports python3-ldap); ldap-utils do
the rootdn's reads and writes.
"""
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, CheckFailed, fail, parse_args, parse_ldif, ssha, wait_for)
import nss_pam_harness as h  # noqa: E402
import slapd_harness  # noqa: E402
from tls_harness import Pki  # noqa: E402

NAME = "nss pam"
USERS = 600  # More than SIZE_LIMIT: enumeration must page.
SIZE_LIMIT = 500
PAGE_SIZE = 100
POSIX_GROUPS = 20
GROUPS_PER_USER = 3
POLICIES = f"ou=policies,{SUFFIX}"
DEFAULT_POLICY = f"cn=default,{POLICIES}"
DAY_S = 86400
# The users every daemon's checks use (generated: password "password<N>").
IDENTITY_USER = 5  # getent / id
TLS_USER = 7
LOGIN_USER = 9  # the recorded login (cold: nothing looked it up before)
RECONNECT_TIMEOUT_S = 30
# The two servers' suites run side by side, each on a thread: each line says whose it is.
_label = threading.local()
STARTED = time.monotonic()


def say(text: str):
    print(f"  [{getattr(_label, 'value', '-')} {time.monotonic() - STARTED:5.1f}s] {text}",
          flush=True)


def check(condition: bool, what: str, detail: str = ""):
    """numadir_harness.check, with the suite's label on the line."""
    if not condition:
        fail(f"{what}: {detail}" if detail else what)
    say(f"ok: {what}")


# Policy name -> its attributes (each also has pwdAttribute: userPassword).
POLICY_TABLE = {
    "default": {"pwdMaxFailure": "5", "pwdLockout": "TRUE"},
    "lockout": {"pwdMaxFailure": "3", "pwdLockout": "TRUE", "pwdLockoutDuration": "0"},
    # 30 days, warned from the first day on: the users below are 25 days in (5 days left).
    "expiring": {"pwdMaxAge": str(30 * DAY_S), "pwdExpireWarning": str(29 * DAY_S)},
    "expired": {"pwdMaxAge": str(DAY_S)},
}


def generalized_time(seconds_ago: float) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(
        seconds=seconds_ago)
    return moment.strftime("%Y%m%d%H%M%SZ")


# Per daemon: name suffix -> (uidNumber offset, policy or None, more attributes).
SPECIAL_USERS = {
    "lock": (0, "lockout", {}),
    "warn": (1, "expiring", {"pwdChangedTime": lambda: generalized_time(25 * DAY_S)}),
    "expired": (2, "expired", {"pwdChangedTime": lambda: "20000101000000Z"}),
    "shadow": (3, None, {"shadowExpire": lambda: "1"}),  # 1970-01-02: long past.
    "chpw": (4, None, {}),
    "late": (5, None, {}),  # Added after the restart, not in the LDIF.
}
UID_BASE = {"nslcd": 15000, "sssd": 15100}
SHADOW_LAST_CHANGE = 19000  # Days since 1970 (2022-01-08), as gen_users.py --nss writes.


def special(daemon: str, what: str) -> str:
    return f"{daemon}-{what}"


def special_password(name: str) -> str:
    return f"Nss-{name}-pw1"


def user_entry(daemon: str, what: str) -> str:
    name = special(daemon, what)
    offset, policy, extra = SPECIAL_USERS[what]
    lines = [f"dn: uid={name},{PEOPLE}", "objectClass: top", "objectClass: person",
             "objectClass: organizationalPerson", "objectClass: inetOrgPerson",
             "objectClass: posixAccount", "objectClass: shadowAccount", f"uid: {name}",
             f"cn: {name}", "sn: Nss", f"uidNumber: {UID_BASE[daemon] + offset}",
             "gidNumber: 10000", f"homeDirectory: /home/{name}", "loginShell: /bin/sh",
             f"shadowLastChange: {SHADOW_LAST_CHANGE}",
             f"userPassword: {ssha(special_password(name))}"]
    if policy:
        lines.append(f"pwdPolicySubentry: cn={policy},{POLICIES}")
    lines += [f"{attribute}: {value()}" for attribute, value in extra.items()]
    return "\n".join(lines) + "\n"


def extra_ldif() -> str:
    parts = [f"dn: {POLICIES}\nobjectClass: organizationalUnit\nou: policies\n"]
    for name, attributes in POLICY_TABLE.items():
        lines = [f"dn: cn={name},{POLICIES}", "objectClass: person", "objectClass: pwdPolicy",
                 f"cn: {name}", "sn: policy", "pwdAttribute: userPassword"]
        lines += [f"{attribute}: {value}" for attribute, value in attributes.items()]
        parts.append("\n".join(lines) + "\n")
    for daemon in UID_BASE:
        for what in SPECIAL_USERS:
            if what != "late":
                parts.append(user_entry(daemon, what))
    return "\n".join(parts)


def write_ldif(path: str, gen: str):
    generated = subprocess.run(
        ["/usr/bin/python3", gen, "--users", str(USERS), "--suffix", SUFFIX, "--nss",
         "--posix-groups", str(POSIX_GROUPS), "--groups-per-user", str(GROUPS_PER_USER)],
        capture_output=True, timeout=120)
    if generated.returncode != 0:
        fail(f"gen_users.py failed: {generated.stderr.decode(errors='replace')}")
    with open(path, "wb") as stream:
        stream.write(generated.stdout)
        stream.write(b"\n" + extra_ldif().encode() + b"\n")


# What gen_users.py's groups hold (see its --posix-groups).
def groups_of(i: int) -> list:
    return sorted({(i + j) % POSIX_GROUPS for j in range(GROUPS_PER_USER)})


def members_of(g: int) -> list:
    return sorted(f"user{i}" for i in range(USERS) if g in groups_of(i))


# -- the servers ---------------------------------------------------------------------------------
SLAPD_ACCESS = """access to attrs=userPassword
  by self =wx
  by * auth
access to attrs=children
  by * read
access to *
  by self write
  by * read
"""
NUMADIR_PASSWORDS = f"""[passwords]
default_policy = "{DEFAULT_POLICY}"
use_lockout = true
failure_flush_ms = 100
"""


def make_numadir(args, ldif, pki):
    return h.NssNumadir(args.numadir, ldif, NUMADIR_PASSWORDS,
                        (pki.server_crt, pki.server_key), SIZE_LIMIT, args.keep)


def make_slapd(args, ldif, pki):
    return h.NssSlapd(
        ldif, access=SLAPD_ACCESS, root_pw=ssha(ROOT_PW), indexes=h.SLAPD_INDEXES,
        extra_conf=f"moduleload ppolicy\nsizelimit size.soft={SIZE_LIMIT} size.hard={SIZE_LIMIT} "
                   "size.prtotal=unlimited\n",
        database_conf=f'overlay ppolicy\nppolicy_default "{DEFAULT_POLICY}"\n'
                      "ppolicy_use_lockout\n",
        tls=slapd_harness.SlapdTls(pki.server_crt, pki.server_key, pki.ca_crt), keep=args.keep)


def ldap_tool(server, tool: str, *arguments, input_text: str = None, url: str = None):
    """An ldap-utils tool as the rootdn against `server` (numadir or slapd)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("LDAP")}
    env["LDAPNOINIT"] = "1"
    result = subprocess.run([f"/usr/bin/{tool}", "-H", url or server.url, "-x", "-D", ROOT_DN,
                             "-w", ROOT_PW, *arguments], input=input_text, capture_output=True,
                            text=True, timeout=30, env=env)
    return result.returncode, result.stdout + result.stderr


# -- daemon configurations -----------------------------------------------------------------------
NSLCD_SERVICE = """# numadir nss_pam_test: pam_ldap alone, so every answer is nslcd's.
auth     required pam_ldap.so
account  required pam_ldap.so
password required pam_ldap.so
session  required pam_permit.so
"""
SSSD_SERVICE = """# numadir nss_pam_test: pam_sss alone, so every answer is sssd's.
auth     required pam_sss.so
account  required pam_sss.so
password required pam_sss.so
session  required pam_permit.so
"""
OTHER_SERVICE = """auth     required pam_deny.so
account  required pam_deny.so
password required pam_deny.so
session  required pam_deny.so
"""
SERVICE = {"nslcd": "numadir-nslcd", "sssd": "numadir-sssd"}


def nslcd_conf(uri: str, ca: str = None, starttls: bool = False) -> str:
    """nslcd.conf for `uri`. No uid/gid: nslcd runs as root in the namespace (it then keeps the
    PR_SET_PDEATHSIG the harness gives it). One group filter over both group schemas: nslcd
    reads memberUid (RFC 2307) and member (rfc2307bis) of whatever entry it finds."""
    lines = [f"uri {uri}", f"base {SUFFIX}", f"pagesize {PAGE_SIZE}",
             "filter group (&(gidNumber=*)(|(objectClass=posixGroup)(objectClass=groupOfNames)))",
             "map group memberUid memberUid", "map group member member",
             "pam_authc_ppolicy yes", "bind_timelimit 3", "timelimit 10",
             "reconnect_sleeptime 1", "reconnect_retrytime 1"]
    if ca:
        lines += ["tls_reqcert demand", f"tls_cacertfile {ca}"]
    if starttls:
        lines.append("ssl start_tls")
    return "\n".join(lines) + "\n"


def sssd_domain(name: str, uri: str, schema: str = "rfc2307", qualified: bool = True,
                ca: str = None, starttls: bool = False, enumerate: bool = False,
                cache_timeout: int = 1, clear_auth: bool = False) -> str:
    """One [domain/NAME]: id, auth, chpass and access through LDAP (access: shadowExpire), no
    cached credentials, entries stale after `cache_timeout` s, quick offline retries. SSSD's
    LDAP auth provider runs StartTLS on an ldap:// URI whenever the server offers it (both do
    here), so every domain gets a CA (`ca`) to verify the server with; the lookups of a domain
    without `starttls` stay in the clear."""
    lines = [f"[domain/{name}]", "id_provider = ldap", "auth_provider = ldap",
             "chpass_provider = ldap", "access_provider = ldap", "ldap_access_order = expire",
             "ldap_account_expire_policy = shadow", "sudo_provider = none",
             "autofs_provider = none", "resolver_provider = none", f"ldap_uri = {uri}",
             f"ldap_search_base = {SUFFIX}", f"ldap_schema = {schema}",
             f"ldap_page_size = {PAGE_SIZE}", "ldap_pwmodify_mode = exop",
             "cache_credentials = false", f"entry_cache_timeout = {cache_timeout}",
             "ldap_network_timeout = 3", "ldap_opt_timeout = 5", "ldap_search_timeout = 5",
             "offline_timeout = 1", "offline_timeout_max = 0",
             "offline_timeout_random_offset = 0",
             f"use_fully_qualified_names = {'true' if qualified else 'false'}"]
    if schema == "rfc2307bis":
        lines.append("ldap_group_object_class = groupOfNames")
    if enumerate:
        # The first enumeration starts at once (no random offset) so the test need not wait.
        lines += ["enumerate = true", "ldap_enumeration_refresh_offset = 0"]
    if ca:
        lines += [f"ldap_tls_cacert = {ca}", "ldap_tls_reqcert = demand"]
    if starttls:
        lines.append("ldap_id_use_start_tls = true")
    if clear_auth:
        # Only for the recorded logins, so that the relay sees the bind (sssd.conf's validator
        # does not know the option and says so; sssd_be reads it).
        lines.append("ldap_auth_disable_tls_never_use_in_production = true")
    return "\n".join(lines) + "\n"


# -- answers -------------------------------------------------------------------------------------
class Answers:
    """What one daemon answered against one server, by check name; printed and compared with
    the other server's."""

    def __init__(self, daemon: str, server: str):
        self.daemon = daemon
        self.server = server
        self.values = {}
        self.shown = {}  # Raw output, for the report when the compared value was normalized.
        self.timings = {}
        self.traffic = {}  # Login step -> summarized requests (LdapTap).

    def note(self, key: str, value, shown=None):
        self.values[key] = value
        if shown is not None:
            self.shown[key] = shown


def masked(text: str) -> str:
    """PAM output with each number masked (time left until a password expires is seconds or
    days that differ between two runs)."""
    return re.sub(r"\d+", "#", text)


def pam_output(text: str) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())


def parse_group(line: str):
    name, _, gid, members = line.strip().split(":", 3)
    return name, int(gid), sorted(m for m in members.split(",") if m)


def parse_id(line: str):
    """`id` output -> (uid, gid, sorted groups as "gid(name)")."""
    fields = dict(part.split("=", 1) for part in line.split())
    groups = sorted(fields.get("groups", "").split(","), key=lambda g: int(g.split("(")[0]))
    return fields["uid"], fields["gid"], groups


def expected_id(i: int, suffix: str = "", schema: str = "rfc2307") -> list:
    """The groups `id user<i>` lists: the primary users0 (10000) and the secondary ones."""
    groups = ["10000(users0)"]
    for g in groups_of(i):
        if schema in ("rfc2307", "both"):
            groups.append(f"{20000 + g}(pgroup{g}{suffix})")
        if schema in ("rfc2307bis", "both"):
            groups.append(f"{30000 + g}(ngroup{g}{suffix})")
    return sorted(groups, key=lambda g: int(g.split("(")[0]))


# -- the checks of one daemon against one server -------------------------------------------------
class Suite:
    """One daemon (nslcd or sssd) against one server: its namespaces, runs and checks."""

    def __init__(self, daemon: str, kind: str, server, pki, work: str, verbose: bool):
        self.daemon = daemon
        self.kind = kind
        self.server = server
        self.pki = pki
        self.work = os.path.join(work, f"{daemon}-{kind}")
        os.makedirs(self.work)
        self.verbose = verbose
        self.answers = Answers(daemon, kind)
        self.service = SERVICE[daemon]

    # -- namespaces ------------------------------------------------------------------------------
    def namespace(self, run: str, conf: str):
        """A Namespace for one run of the daemon with `conf` as its config file, and the Daemon
        in it (not started). A second call for the same `run` keeps its files and state (SSSD's
        caches) and writes the new `conf`."""
        root = os.path.join(self.work, run)
        fresh = not os.path.exists(root)
        os.makedirs(root, exist_ok=True)
        nsswitch = os.path.join(root, "nsswitch.conf")
        module = "ldap" if self.daemon == "nslcd" else "sss"
        with open(nsswitch, "w") as stream:
            stream.write(f"# numadir nss_pam_test ({run})\npasswd: files {module}\n"
                         f"group: files {module}\nshadow: files {module}\n")
        pam = os.path.join(root, "pam.d")
        os.makedirs(pam, exist_ok=True)
        with open(os.path.join(pam, self.service), "w") as stream:
            stream.write(NSLCD_SERVICE if self.daemon == "nslcd" else SSSD_SERVICE)
        with open(os.path.join(pam, "other"), "w") as stream:
            stream.write(OTHER_SERVICE)
        files = {"/etc/nsswitch.conf": nsswitch}
        dirs = {"/etc/pam.d": pam}
        log = os.path.join(root, f"{self.daemon}.log")
        if self.daemon == "nslcd":
            path = os.path.join(root, "nslcd.conf")
            with open(path, "w") as stream:
                stream.write(conf)
            os.chmod(path, 0o600)
            files["/etc/nslcd.conf"] = path
            ns = h.Namespace(f"{self.daemon}-{self.kind}-{run}", root, files=files, dirs=dirs,
                             tmpfs=["/run"], make_dirs=["/run/nslcd"])
            daemon = h.Daemon(ns, f"nslcd ({run}, {self.kind})", [h.NSLCD, "-d"], log,
                              ready=lambda: os.path.exists(
                                  f"/proc/{daemon.process.pid}/root/run/nslcd/socket"))
        else:
            etc = os.path.join(root, "etc-sssd")
            os.makedirs(os.path.join(etc, "conf.d"), exist_ok=True)
            os.chmod(etc, 0o711)
            path = os.path.join(etc, "sssd.conf")
            with open(path, "w") as stream:
                stream.write(conf)
            os.chmod(path, 0o600)
            state = os.path.join(root, "var-lib-sss")
            logs = os.path.join(root, "var-log-sssd")
            if fresh:
                for sub in ("db", "pipes/private", "mc", "pubconf", "gpo_cache", "secrets",
                            "deskprofile", "keytabs"):
                    os.makedirs(os.path.join(state, sub))
                for sub, mode in (("db", 0o700), ("secrets", 0o700), ("pipes/private", 0o700)):
                    os.chmod(os.path.join(state, sub), mode)
                os.makedirs(logs)
            for pipe in ("nss", "pam"):  # A stopped sssd leaves its sockets: not ready yet.
                if os.path.exists(os.path.join(state, "pipes", pipe)):
                    os.unlink(os.path.join(state, "pipes", pipe))
            dirs.update({"/etc/sssd": etc, "/var/lib/sss": state, "/var/log/sssd": logs})
            ns = h.Namespace(f"{self.daemon}-{self.kind}-{run}", root, files=files, dirs=dirs,
                             tmpfs=["/run"])
            pipes = os.path.join(state, "pipes")
            # Debug level 0x00f0: failures and minor failures ("sizelimit was exceeded").
            level = os.environ.get("NSS_PAM_SSSD_DEBUG", "0x00f0")
            daemon = h.Daemon(ns, f"sssd ({run}, {self.kind})",
                              [h.SSSD, "-i", "--logger=stderr", "-d", level], log,
                              ready=lambda: all(os.path.exists(os.path.join(pipes, p))
                                                for p in ("nss", "pam")))
        return ns, daemon

    # -- helpers ---------------------------------------------------------------------------------
    def run(self, ns, *argv, input_text: str = None, as_user=None):
        rc, out = ns.run(list(argv), input_text=input_text, as_user=as_user)
        if self.verbose:
            say(f"$ {' '.join(argv)} -> {rc}: {out.strip()[:300]!r}")
        return rc, out

    def pam(self, ns, user: str, password: str, *ops) -> tuple:
        """pamtester SERVICE USER ops...; returns (exit status, its output on one line)."""
        rc, out = self.run(ns, h.PAMTESTER, self.service, user, *(ops or ("authenticate",)),
                           input_text=password + "\n")
        return rc, pam_output(out)

    def getent(self, ns, database: str, key: str = None):
        rc, out = self.run(ns, "getent", database, *([key] if key else []))
        return rc, out.strip()

    def qualified(self, name: str, domain: str = None) -> str:
        return f"{name}@{domain}" if domain and self.daemon == "sssd" else name

    # -- 1. identity -----------------------------------------------------------------------------
    def identity(self, ns, bis_domain: str = None):
        """getent passwd / group, id; `bis_domain`: the SSSD domain of the rfc2307bis schema
        (nslcd sees both schemas in one run)."""
        a = self.answers
        i = IDENTITY_USER
        rc, line = self.getent(ns, "passwd", f"user{i}")
        fields = line.split(":")
        check(rc == 0 and fields[2:] == [str(10000 + i), "10000", f"User {i}", f"/home/user{i}",
                                         "/bin/bash"],
              f"getent passwd user{i}: {line}", f"rc {rc}, expected uid {10000 + i}, gid 10000, "
              f"gecos, home, shell from the entry")
        a.note("getent passwd user5", line)
        g = groups_of(i)[0]
        rc, line = self.getent(ns, "group", f"pgroup{g}")
        check(rc == 0 and parse_group(line) == (f"pgroup{g}", 20000 + g, members_of(g)),
              f"getent group pgroup{g} (posixGroup, memberUid): {len(members_of(g))} members",
              f"rc {rc}, {line[:200]}")
        a.note("getent group pgroup", parse_group(line))
        name = self.qualified(f"ngroup{g}", bis_domain)
        rc, line = self.getent(ns, "group", name)
        members = [self.qualified(m, bis_domain) for m in members_of(g)]
        check(rc == 0 and parse_group(line) == (name, 30000 + g, sorted(members)),
              f"getent group {name} (groupOfNames, member): {len(members)} members",
              f"rc {rc}, {line[:200]}")
        a.note("getent group ngroup", parse_group(line))
        rc, line = self.run(ns, "id", f"user{i}")
        schema = "both" if self.daemon == "nslcd" else "rfc2307"
        check(rc == 0 and parse_id(line.strip())[2] == expected_id(i, schema=schema),
              f"id user{i} ({'memberUid and member' if schema == 'both' else 'memberUid'}): "
              f"{line.strip()}", f"rc {rc}, expected groups {expected_id(i, schema=schema)}")
        a.note("id user5", parse_id(line.strip()))
        if bis_domain:
            name = f"user{i}@{bis_domain}"
            rc, line = self.run(ns, "id", name)
            expected = expected_id(i, f"@{bis_domain}", "rfc2307bis")
            check(rc == 0 and parse_id(line.strip())[2] == expected,
                  f"id {name} (rfc2307bis, member): {line.strip()}",
                  f"rc {rc}, expected groups {expected}")
            a.note("id user5 rfc2307bis", parse_id(line.strip()))
        rc, line = self.getent(ns, "passwd", "nosuchuser")
        check(rc == 2 and not line, "getent passwd nosuchuser: not found (exit status 2)",
              f"rc {rc}, {line!r}")

    # -- 1. enumeration --------------------------------------------------------------------------
    def enumeration(self, ns):
        a = self.answers

        # SSSD enumerates its domain "enum" (names user<N>@enum).
        def ldap_users():
            rc, out = self.getent(ns, "passwd")
            return [line.split(":")[0].split("@")[0] for line in out.splitlines()
                    if line.count(":") == 6 and 10000 <= int(line.split(":")[2]) < 10000 + USERS]
        began = time.monotonic()
        if self.daemon == "sssd":
            # sssd answers an enumeration from its cache, which its first enumeration fills.
            users = wait_for(lambda: (lambda u: u if len(u) >= USERS else None)(
                ldap_users()), timeout=30, interval=0.25) or ldap_users()
        else:
            users = ldap_users()
        a.timings["enumeration"] = time.monotonic() - began
        # Paged searches pass the size limit on both servers (slapd: size.prtotal=unlimited;
        # numadir: limits.size_limit_paged = 0): every generated account, past SIZE_LIMIT.
        expected = [f"user{i}" for i in range(USERS)]
        check(sorted(users) == sorted(expected),
              f"getent passwd enumerates {len(users)} LDAP users in pages of {PAGE_SIZE}: all "
              f"{USERS}, more than the size limit of {SIZE_LIMIT}",
              f"observed {len(users)}: {sorted(set(users) ^ set(expected))[:10]} differ")
        a.note("enumerated users", sorted(users))
        rc, out = self.getent(ns, "group")
        groups = sorted(line.split(":")[0].split("@")[0] for line in out.splitlines()
                        if line.count(":") == 3 and 10000 <= int(line.split(":")[2]) < 40000)
        expected = sorted(["users0"] + [f"pgroup{g}" for g in range(POSIX_GROUPS)] +
                          ([f"ngroup{g}" for g in range(POSIX_GROUPS)]
                           if self.daemon == "nslcd" else []))
        check(groups == expected, f"getent group enumerates the {len(expected)} LDAP groups",
              f"observed {groups}")
        a.note("enumerated groups", groups)
        if self.kind == "numadir":
            # nslcd's (objectClass=posixAccount), SSSD's (&(objectclass=posixAccount)(uid=*)...).
            def pages():
                return [line for line in self.server.access_lines(self.log_start)
                        if " SRCH " in line and ('filter="(objectClass=posixAccount)"' in line or
                                                 "(uid=*)(uidNumber=*)" in line)]
            wait_for(lambda: len(pages()) >= SIZE_LIMIT // PAGE_SIZE, timeout=5)
            lines = pages()
            check(len(lines) >= SIZE_LIMIT // PAGE_SIZE,
                  f"numadir's access log: the enumeration came as {len(lines or [])} paged "
                  f"searches", f"expected at least {SIZE_LIMIT // PAGE_SIZE}")

    # -- 2. authentication and the password policy ----------------------------------------------
    def authentication(self, ns, domain: str = None):
        a = self.answers
        user = self.qualified(f"user{IDENTITY_USER}", domain)
        rc, out = self.pam(ns, user, f"password{IDENTITY_USER}", "authenticate", "acct_mgmt")
        check(rc == 0, f"pamtester {user} authenticate acct_mgmt, right password: {out}",
              f"rc {rc}")
        a.note("pam right password", (rc, out))
        rc, out = self.pam(ns, user, "not-the-password")
        check(rc != 0, f"wrong password refused: {out}", f"rc {rc}")
        a.note("pam wrong password", (rc, out))
        rc, out = self.pam(ns, self.qualified("nosuchuser", domain), "whatever")
        check(rc != 0, f"unknown user refused: {out}", f"rc {rc}")
        a.note("pam unknown user", (rc, out))

    def policy(self, ns, domain: str = None):
        a = self.answers
        name = special(self.daemon, "lock")
        user = self.qualified(name, domain)
        failures = []
        for _ in range(int(POLICY_TABLE["lockout"]["pwdMaxFailure"])):
            failures.append(self.pam(ns, user, "wrong-password"))
        check(all(rc != 0 for rc, _ in failures),
              f"{user}: {len(failures)} wrong passwords refused", f"{failures}")
        if self.kind == "numadir":
            time.sleep(0.3)  # failure_flush_ms: the lock is written within 100 ms.
        rc, out = self.pam(ns, user, special_password(name))
        check(rc != 0, f"{user} locked by pwdMaxFailure: the right password is refused: {out}",
              f"rc {rc}")
        a.note("pam locked", (rc, out))
        rc, stored = ldap_tool(self.server, "ldapsearch", "-LLL", "-b", f"uid={name},{PEOPLE}",
                               "-s", "base", "pwdAccountLockedTime")
        check("pwdAccountLockedTime:" in stored, f"{name}: pwdAccountLockedTime is stored",
              stored)

        name = special(self.daemon, "warn")
        user = self.qualified(name, domain)
        # pam_ldap shows nslcd's policy message in account management, pam_sss at once.
        rc, out = self.pam(ns, user, special_password(name), "authenticate", "acct_mgmt")
        check(rc == 0 and re.search(r"expire", out, re.I) is not None,
              f"{user}: 5 days before pwdMaxAge the login succeeds with the daemon's warning: "
              f"{out}", f"rc {rc}")
        a.note("pam expiring", (rc, masked(out)), shown=out)

        # An expired password is PAM's "new authentication token required": pam_sss (like
        # pam_unix) lets authenticate succeed and has acct_mgmt answer it, so that a login asks
        # for a new password.
        name = special(self.daemon, "expired")
        user = self.qualified(name, domain)
        rc, out = self.pam(ns, user, special_password(name), "authenticate", "acct_mgmt")
        check(rc != 0, f"{user}: past pwdMaxAge (no grace logins) refused: {out}", f"rc {rc}")
        a.note("pam expired", (rc, out))

        name = special(self.daemon, "shadow")
        user = self.qualified(name, domain)
        rc, out = self.pam(ns, user, special_password(name), "authenticate", "acct_mgmt")
        check(rc != 0 and "successfully authenticated" in out,
              f"{user}: past shadowExpire: authenticated, then refused by acct_mgmt: {out}",
              f"rc {rc}")
        a.note("pam shadowExpire", (rc, out))

    # -- 3. password change ----------------------------------------------------------------------
    def password_change(self, ns, domain: str = None):
        a = self.answers
        name = special(self.daemon, "chpw")
        user = self.qualified(name, domain)
        old, new = special_password(name), f"Changed-{name}-pw2"
        uid = UID_BASE[self.daemon] + SPECIAL_USERS["chpw"][0]
        start = len(self.server.access_lines()) if self.kind == "numadir" else 0
        rc, out = self.run(ns, h.PAMTESTER, self.service, user, "chauthtok",
                           input_text=f"{old}\n{new}\n{new}\n", as_user=(uid, 10000))
        out = pam_output(out)
        check(rc == 0, f"pamtester {user} chauthtok, as the user (uid {uid}): {out}", f"rc {rc}")
        a.note("pam chauthtok", (rc, out))
        rc, out = self.pam(ns, user, new)
        check(rc == 0, f"{user}: the new password authenticates", f"rc {rc}: {out}")
        rc, out = self.pam(ns, user, old)
        check(rc != 0, f"{user}: the old password is refused", f"rc {rc}: {out}")
        a.note("pam after chauthtok", "new accepted, old refused")
        rc, stored = ldap_tool(self.server, "ldapsearch", "-LLL", "-b", f"uid={name},{PEOPLE}",
                               "-s", "base", "userPassword", "shadowLastChange")
        entry = parse_ldif(stored)[0][1] if parse_ldif(stored) else {}
        values = entry.get("userpassword", [])
        # nslcd also sets shadowLastChange (a Modify as the user) where the entry has it; SSSD
        # only with ldap_chpass_update_last_change.
        today = int(time.time() // DAY_S)
        last_change = int(entry.get("shadowlastchange", ["0"])[0])
        if self.daemon == "nslcd":
            check(abs(last_change - today) <= 1,
                  f"{name}: nslcd set shadowLastChange to today ({last_change})",
                  f"expected {today}")
        else:
            check(last_change == SHADOW_LAST_CHANGE,
                  f"{name}: sssd left shadowLastChange as it was ({last_change})")
        a.note("shadowLastChange after chauthtok", last_change - today)
        scheme = values[0].split("}")[0] + "}" if values else ""
        check(len(values) == 1 and re.match(r"\{(SSHA\d*|PBKDF2-\w+|ARGON2|CRYPT)\}", values[0])
              and new not in values[0],
              f"{name}: userPassword stored hashed ({scheme}), not the cleartext", f"{values}")
        if self.kind == "numadir":
            lines = wait_for(lambda: [line for line in self.server.access_lines(start)
                                      if 'EXT oid="1.3.6.1.4.1.4203.1.11.1"' in line], timeout=5)
            check(bool(lines), "numadir's access log: the change was a Password Modify "
                               "extended operation", "no EXT 1.3.6.1.4.1.4203.1.11.1 logged")

    # -- 4. restart under the daemon -------------------------------------------------------------
    def restart(self, ns, domain: str = None):
        a = self.answers
        began = time.monotonic()
        self.server.restart()
        name = special(self.daemon, "late")
        rc, out = ldap_tool(self.server, "ldapadd", input_text=user_entry(self.daemon, "late"))
        check(rc == 0, f"server restarted on its ports; {name} added after it", out)
        user = self.qualified(name, domain)
        found = wait_for(lambda: self.getent(ns, "passwd", user)[0] == 0,
                         timeout=RECONNECT_TIMEOUT_S, interval=0.2)
        a.timings["reconnect"] = time.monotonic() - began
        check(bool(found), f"getent passwd {user}: found {a.timings['reconnect']:.1f} s after "
                           f"the restart, the daemon not restarted",
              f"not found within {RECONNECT_TIMEOUT_S} s; daemon log:\n{self.daemon_log_tail()}")
        rc, out = self.pam(ns, user, special_password(name), "authenticate", "acct_mgmt")
        check(rc == 0, f"pamtester {user} after the restart: {out}", f"rc {rc}")
        rc, line = self.getent(ns, "passwd", self.qualified(f"user{IDENTITY_USER + 1}", domain))
        check(rc == 0, f"and an entry not looked up since the restart: {line}", f"rc {rc}")
        a.note("after restart", "found and authenticated")

    # -- 5. TLS ----------------------------------------------------------------------------------
    def tls(self, ns, label: str, domain: str = None, refused: bool = False):
        a = self.answers
        user = self.qualified(f"user{TLS_USER}", domain)
        rc, line = self.getent(ns, "passwd", user)
        if refused:
            check(rc != 0, f"{label}: with another CA the server is not trusted: getent passwd "
                           f"{user} finds nothing", f"rc {rc}: {line}")
            a.note(f"tls {label}", rc != 0)
            return
        check(rc == 0 and line.split(":")[2] == str(10000 + TLS_USER),
              f"{label}: getent passwd {user}: {line}", f"rc {rc}")
        rc, out = self.pam(ns, user, f"password{TLS_USER}", "authenticate")
        check(rc == 0, f"{label}: pamtester {user} authenticate: {out}", f"rc {rc}")
        a.note(f"tls {label}", (line, rc))

    def tls_seen(self, start: int):
        """numadir's access log from line `start`: StartTLS was run and ldaps:// accepted."""
        if self.kind != "numadir":
            return

        def seen():
            lines = self.server.access_lines(start)
            starttls = any('oid="1.3.6.1.4.1.1466.20037"' in line for line in lines)
            ldaps = any(f"(port {self.server.ldaps_port})" in line for line in lines)
            return (starttls, ldaps) if starttls and ldaps else None
        found = wait_for(seen, timeout=5)
        check(bool(found), "numadir's access log: a StartTLS extended operation and "
                           "connections on the ldaps:// port", "not both seen")

    # -- 6. one login, recorded ------------------------------------------------------------------
    def login(self, ns, tap, label: str, domain: str = None):
        a = self.answers
        user = self.qualified(f"user{LOGIN_USER}", domain)
        steps = [("getent passwd", lambda: self.getent(ns, "passwd", user)),
                 ("pamtester authenticate acct_mgmt",
                  lambda: self.pam(ns, user, f"password{LOGIN_USER}", "authenticate",
                                   "acct_mgmt")),
                 ("id", lambda: self.run(ns, "id", user))]
        recorded = []
        for step, action in steps:
            mark = tap.mark()
            since = h.utc_now()
            rc, out = action()
            check(rc == 0, f"{label}: {step} {user}", f"rc {rc}: {out}")
            time.sleep(0.2)  # Let the relay see the last responses (abandons, unbinds).
            events = tap.since(mark)
            lines = h.summarize(events)
            recorded.append((step, lines))
            if self.kind == "numadir":
                # What the relay decoded is what numadir's access log says it received.
                wire = h.request_keys(events)
                ports = {tap.local_ports[event["conn"]] for event in events}
                # (A tuple: an empty list of requests is an answer too.)
                logged = wait_for(lambda: (lambda keys: (keys,) if keys == wire else None)(
                    h.access_log_keys(self.server.access_lines(), since, ports)), timeout=3)
                check(logged is not None,
                      f"{label}: {step}: numadir's access log has the {len(wire)} requests the "
                      f"relay passed, with the same bases, filters and attributes",
                      f"relay {wire}, access log "
                      f"{h.access_log_keys(self.server.access_lines(), since, ports)}")
        a.traffic[label] = recorded
        a.note(f"login traffic {label}", [(step, comparable_traffic(lines))
                                          for step, lines in recorded])

    def daemon_log_tail(self) -> str:
        return self.current.log_tail() if getattr(self, "current", None) else "(none)"

    # -- the runs --------------------------------------------------------------------------------
    def run_all(self, tap):
        if self.daemon == "nslcd":
            self.run_nslcd(tap)
        else:
            self.run_sssd(tap)

    def start(self, ns, daemon):
        self.current = daemon
        if not hasattr(self, "log_start"):
            self.log_start = len(self.server.access_lines()) if self.kind == "numadir" else 0
        began = time.monotonic()
        daemon.start()
        self.answers.timings.setdefault("daemon starts", []).append(time.monotonic() - began)

    def run_nslcd(self, tap):
        ca = self.pki.ca_crt
        ns, daemon = self.namespace("main", nslcd_conf(f"{self.server.url}/"))
        with ns:
            self.start(ns, daemon)
            self.identity(ns)
            self.enumeration(ns)
            self.authentication(ns)
            self.policy(ns)
            self.password_change(ns)
            self.restart(ns)
            daemon.stop()
        start = len(self.server.access_lines()) if self.kind == "numadir" else 0
        for label, conf in (
                ("StartTLS", nslcd_conf(f"{self.server.url}/", ca=ca, starttls=True)),
                ("ldaps", nslcd_conf(f"{self.server.ldaps_url}/", ca=ca)),
                ("ldaps, another CA", nslcd_conf(f"{self.server.ldaps_url}/",
                                                 ca=self.pki.ca2_crt))):
            ns, daemon = self.namespace(re.sub(r"\W+", "-", label), conf)
            with ns:
                self.start(ns, daemon)
                self.tls(ns, label, refused="another" in label)
                daemon.stop()
        self.tls_seen(start)
        ns, daemon = self.namespace("login", nslcd_conf(f"{tap.url}/"))
        with ns:
            self.start(ns, daemon)
            self.login(ns, tap, "login")
            daemon.stop()

    def run_sssd(self, tap):
        ca = self.pki.ca_crt
        url, ldaps = self.server.url, self.server.ldaps_url
        domains = [
            ("rfc2307", sssd_domain("rfc2307", url, qualified=False, ca=ca)),
            # Its entries keep SSSD's default lifetime (90 min): the cleanup that follows an
            # enumeration deletes expired entries of users who never logged in, which with the
            # 1 s of the other domains is, at random, every user just enumerated.
            ("enum", sssd_domain("enum", url, ca=ca, enumerate=True,
                                 cache_timeout=5400)),
            ("rfc2307bis", sssd_domain("rfc2307bis", url, schema="rfc2307bis", ca=ca)),
            ("starttls", sssd_domain("starttls", url, ca=ca, starttls=True)),
            ("ldaps", sssd_domain("ldaps", ldaps, ca=ca)),
            ("badca", sssd_domain("badca", ldaps, ca=self.pki.ca2_crt)),
            # The recorded logins: SSSD's default entry cache (90 min), so the second login
            # shows what a warm cache leaves.
            ("tap", sssd_domain("tap", tap.url, ca=ca, cache_timeout=5400, clear_auth=True)),
        ]
        conf = ("[sssd]\nservices = nss, pam\n"
                f"domains = {', '.join(name for name, _ in domains)}\n\n"
                # No in-memory cache, enumerations and negative answers not kept: every
                # answer asks the backend.
                "[nss]\nmemcache_timeout = 0\nenum_cache_timeout = 1\n"
                "entry_negative_timeout = 0\n\n"
                # The PAM responder refreshes a user's identity before an auth unless it did
                # within pam_id_timeout (default 5 s): long here, so that the second recorded
                # login shows what such a login leaves (the first shows the refresh).
                "[pam]\npam_verbosity = 2\npam_id_timeout = 600\n\n" +
                "\n".join(text for _, text in domains))
        start = len(self.server.access_lines()) if self.kind == "numadir" else 0
        ns, daemon = self.namespace("main", conf)
        with ns:
            self.start(ns, daemon)
            self.identity(ns, bis_domain="rfc2307bis")
            self.enumeration(ns)
            self.authentication(ns)
            self.authentication(ns, domain="rfc2307bis")
            self.policy(ns)
            self.password_change(ns)
            self.tls(ns, "StartTLS", domain="starttls")
            self.tls(ns, "ldaps", domain="ldaps")
            self.tls(ns, "ldaps, another CA", domain="badca", refused=True)
            self.tls_seen(start)
            self.login(ns, tap, "login (cold cache)", domain="tap")
            self.login(ns, tap, "login (warm cache)", domain="tap")
            self.restart(ns)
            daemon.stop()


def comparable_traffic(lines: list) -> list:
    """A step's summarized requests (nss_pam_harness.summarize) as compared between the two
    servers. nslcd's threads each keep a connection and run in whatever order: the set of the
    step's requests, without connection numbers, anonymous binds (a thread's first use of its
    connection), abandons and unbinds. nslcd abandons a search once it has its one entry, so
    whether the SearchResultDone (and its paged results control) still comes depends on which is
    first, the server or the abandon: a search keeps its entries and any result but success."""
    kept = []
    for line in lines:
        if re.match(r"c\d+ (BIND anonymous|ABANDON|UNBIND)", line):
            continue
        line = re.sub(r"^c\d+ ", "", line)
        if line.startswith("SRCH "):
            line = re.sub(r", result (0|None)(, \[[^]]*\])?$", "", line)
        kept.append(line)
    return sorted(kept)


# Differences between numadir's and slapd's answers that are not failures, by check name, each
# with its reason (printed every run). None so far.
ACCEPTED = {}


def compare(results: dict, daemons) -> list:
    """Every answer of each daemon, numadir against slapd. Returns the differences."""
    problems = []
    for daemon in daemons:
        numadir = results.get("numadir", {}).get(daemon)
        slapd = results.get("slapd", {}).get(daemon)
        if numadir is None or slapd is None:
            continue
        print(f"{NAME}: {daemon}: numadir's answers against slapd's", flush=True)
        for key in sorted(set(numadir.values) | set(slapd.values)):
            ours, theirs = numadir.values.get(key), slapd.values.get(key)
            if ours == theirs:
                print(f"  same: {key}", flush=True)
            elif (daemon, key) in ACCEPTED:
                print(f"  differs (accepted: {ACCEPTED[(daemon, key)]}): {key}", flush=True)
            else:
                message = (f"{daemon}: {key}: numadir {numadir.shown.get(key, ours)!r}, slapd "
                           f"{slapd.shown.get(key, theirs)!r}")
                print(f"  DIFFERS: {message}", flush=True)
                problems.append(message)
    return problems


def print_traffic(results: dict, daemons):
    for daemon in daemons:
        answers = results.get("numadir", {}).get(daemon)
        if answers is None or not answers.traffic:
            continue
        for label, steps in answers.traffic.items():
            print(f"{NAME}: what {daemon} sends per {label} (numadir):", flush=True)
            for step, lines in steps:
                print(f"  {step}: {len(lines)} requests", flush=True)
                for line in lines:
                    print(f"    {line}", flush=True)


def run_server(kind: str, args, ldif: str, pki, work: str, daemons, verbose: bool,
               results: dict, failures: list):
    started = time.monotonic()
    results[kind] = {}
    try:
        server = (make_numadir if kind == "numadir" else make_slapd)(args, ldif, pki)
        with server:
            with h.LdapTap(server.port) as tap:
                for daemon in daemons:
                    _label.value = f"{daemon}/{kind}"
                    print(f"{NAME}: {daemon} against {kind}", flush=True)
                    suite = Suite(daemon, kind, server, pki, work, verbose)
                    results[kind][daemon] = suite.answers
                    began = time.monotonic()
                    try:
                        suite.run_all(tap)
                    except CheckFailed as error:
                        message = f"{daemon} against {kind}: {error}"
                        print(f"FAIL {NAME}: {message}", flush=True)
                        if getattr(suite, "current", None) is not None:
                            print(f"  {suite.current.name} log (last lines):\n"
                                  f"{suite.current.log_tail()}", flush=True)
                        failures.append(message)
                    suite.answers.timings["total"] = time.monotonic() - began
                    starts = suite.answers.timings.get("daemon starts", [])
                    print(f"  {daemon} against {kind}: {time.monotonic() - began:.1f} s "
                          f"(daemon starts {', '.join(f'{t:.2f}' for t in starts)} s)",
                          flush=True)
    except CheckFailed as error:
        failures.append(f"{kind}: {error}")
        print(f"FAIL {NAME}: {kind}: {error}", flush=True)
    print(f"{NAME}: {kind} done in {time.monotonic() - started:.1f} s", flush=True)


def main() -> int:
    args = parse_args(f"{NAME}: nslcd and SSSD against numadir and slapd")
    argv = sys.argv[1:]
    daemons = ["nslcd", "sssd"]
    if "--daemons" in argv:
        daemons = argv[argv.index("--daemons") + 1].split(",")
    servers = ["numadir", "slapd"]
    if "--servers" in argv:  # For debugging one side; the comparison needs both.
        servers = argv[argv.index("--servers") + 1].split(",")
    verbose = "-v" in argv or "--verbose" in argv
    if not os.path.exists(args.numadir) and args.bin_dir and \
            os.path.exists(os.path.join(args.bin_dir, "server", "numadir")):
        args.numadir = os.path.join(args.bin_dir, "server", "numadir")
        print(f"{NAME}: using {args.numadir}", flush=True)
    problems = h.missing(daemons)
    if problems:
        for problem in problems:
            print(f"FAIL {NAME}: cannot run here: {problem}", flush=True)
        sys.stderr.write("".join(f"FAIL {NAME}: cannot run here: {p}\n" for p in problems))
        return 1
    h.children_die_with_this_process()
    started = time.monotonic()
    guard = h.HostGuard()
    work = tempfile.mkdtemp(prefix="numadir-nss-")
    failures = []
    results = {}
    try:
        pki_dir = os.path.join(work, "pki")
        os.mkdir(pki_dir)
        pki = Pki(pki_dir)
        for path in (pki.ca_crt, pki.ca2_crt, pki.server_crt):
            os.chmod(path, 0o644)
        ldif = os.path.join(work, "nss.ldif")
        write_ldif(ldif, args.gen)
        print(f"{NAME}: directory and certificates ready in {time.monotonic() - started:.1f} s",
              flush=True)
        # The two servers' runs are independent: side by side, each with its own daemons.
        threads = [threading.Thread(target=run_server,
                                    args=(kind, args, ldif, pki, work, daemons, verbose, results,
                                          failures))
                   for kind in servers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        failures += compare(results, daemons)
        print_traffic(results, daemons)
    except CheckFailed as error:
        failures.append(str(error))
    finally:
        if args.keep:
            print(f"  kept {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
        changes = guard.changes()
        if changes:
            failures.append("the host changed: " + "; ".join(changes))
        else:
            print(f"{NAME}: the host's nsswitch.conf, nslcd.conf, pam.d, sssd config, sss state "
                  "and mount table are as before", flush=True)
    elapsed = time.monotonic() - started
    if failures:
        sys.stderr.write("".join(f"FAIL {NAME}: {m}\n" for m in failures))
        print(f"FAIL {NAME}: {len(failures)} problems, {elapsed:.1f} s", flush=True)
        return 1
    print(f"{NAME}: every check passed for {', '.join(daemons)} against numadir and slapd in "
          f"{elapsed:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
