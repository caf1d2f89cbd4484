#!/usr/bin/python3
"""numadir as a read replica of OpenLDAP's slapd (syncprov overlay), RFC 4533.

A private slapd provider (back-mdb, `overlay syncprov`, entryUUID/entryCSN indexed) holds
perf/gen_users.py's users; numadir replicas follow it with a [[replication.consumer]] table.
After each step the whole replica equals the provider: every entry with every stored attribute,
entryUUID and entryCSN included (the two servers' `ldapsearch "*" "+"` output, less
numSubordinates, which slapd's back-mdb does not have, and the provider's own contextCSN on the
suffix entry, which syncprov keeps there while numadir keeps the consumer's cookie instead; the
attributes both compute on read, entryDN, hasSubordinates and subschemaSubentry, compared).

1. refreshAndPersist: the initial refresh of the provider's users; then each change made on
   the provider with ldap-utils and python-ldap (add, modify of each kind, delete, ModifyDN with
   and without newSuperior, a subtree move, a Password Modify) appears on the replica.
2. A write to the replica gets a referral to the provider (the rootdn's too), as slapd's
   consumers answer; nothing is written. cn=Monitor has the consumer's entry (state,
   provider, cookie and contextCSN, changes applied, last change), numadir stats shows it, and
   the state changes are on the server's standard error.
3. The replica stopped while the provider takes adds, modifies, deletes and renames, then
   started again: it converges to the provider, the deleted entries gone; with a syncprov
   session log on the provider (deletes sent as a syncIdSet) and without one (a present
   phase).
4. refreshOnly every 1 s, with a syncprov session log on the provider (deletes sent as a
   syncIdSet) and without one (a present phase, deletes found by what is not named).
5. kill -9 of the replica in the middle of its initial refresh: restarted, it equals the
   provider.
6. docs/replication.md's example, exactly as written there (the provider's slapd.conf lines
   and the replica's table, only the provider URL and the password file's path replaced).
7. A change naming an object class and attribute type the replica's schema lacks (misc.schema,
   on the provider only): the consumer names them, nothing of the change is stored; with the
   schema file added and the replica restarted it converges.

Standard library + python3-ldap (for the Password Modify and the modify kinds).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (NumadirServer, check, check_equal, fail,  # noqa: E402
                             parse_args, run_checks, sanitized, wait_for)
import slapd_harness  # noqa: E402

SUFFIX = "dc=example,dc=com"
PEOPLE = f"ou=people,{SUFFIX}"
ROOT_DN = f"cn=admin,{SUFFIX}"
USERS = 2000
BIG_USERS = 50000  # The kill -9 test: a refresh long enough to stop in the middle.
# What only one of the servers shows: numSubordinates (numadir computes it, slapd's back-mdb has
# none) and contextCSN (syncprov keeps one a server id, numadir one, the greatest: compared on
# their own by check_context_csn). entryDN, hasSubordinates and subschemaSubentry are compared: each
# server computes them on read, and a replica that stored the provider's would show them twice.
COMPUTED = {"numsubordinates", "contextcsn"}

PROVIDER_INDEXES = ("objectClass eq", "uid eq", "entryUUID eq", "entryCSN eq")


def provider(ldif: str, sessionlog: bool = False):
    conf = "overlay syncprov\nsyncprov-checkpoint 100 1\n"
    if sessionlog:
        conf += "syncprov-sessionlog 1000\n"
    return slapd_harness.SlapdServer(ldif, extra_conf="moduleload syncprov\n",
                                     indexes=PROVIDER_INDEXES, database_conf=conf)


def consumer_toml(work: str, provider_url: str, rid: int = 1, kind: str = "refreshAndPersist"):
    password = os.path.join(work, f"replicator-{rid}.pw")
    with open(password, "w") as stream:
        stream.write("secret\n")
    os.chmod(password, 0o600)
    return f"""
[[replication.consumer]]
rid = {rid}
provider = "{provider_url}"
searchbase = "{SUFFIX}"
type = "{kind}"
{'interval = "1"' if kind == "refreshOnly" else ""}
binddn = "{ROOT_DN}"
credentials_file = "{password}"
retry = "1 +"
"""


def dump(url: str, bind=()) -> dict:
    """Every entry of the server with every stored attribute: {normalized dn: {attr: sorted
    values}}."""
    result = subprocess.run(["ldapsearch", "-x", "-LLL", "-o", "ldif-wrap=no", "-H", url,
                             *bind, "-b", SUFFIX, "(objectClass=*)", "*", "+"],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        fail(f"ldapsearch of {url} failed ({result.returncode}): {result.stderr}")
    return parse_dump(result.stdout)


def parse_dump(ldif: str) -> dict:
    """`ldapsearch -LLL -o ldif-wrap=no "*" "+"` output as dump() returns it, the attributes
    each server computes or keeps of its own (COMPUTED) left out."""
    entries = {}
    for block in ldif.strip().split("\n\n"):
        if not block.strip():
            continue
        dn = None
        attributes = {}
        for line in block.splitlines():
            name, _, value = line.partition(":")
            if name == "dn":
                dn = value.strip().lower()
                continue
            if name.lower() in COMPUTED:
                continue
            attributes.setdefault(name.lower(), []).append(value.strip())
        entries[dn] = {name: sorted(values) for name, values in attributes.items()}
    return entries


def root_bind(server):
    """Both servers' rootdn is ROOT_DN with the password "secret"."""
    del server
    return ("-D", ROOT_DN, "-w", "secret")


def check_same(p, replica, what: str, timeout: float = 60):
    """Waits until the replica's dump equals the provider's; fails with the first difference."""
    expected = dump(p.url, root_bind(p))
    last = {}

    def same():
        nonlocal last
        last = dump(replica.url, root_bind(replica))
        return last == expected
    if not wait_for(same, timeout=timeout, interval=0.2):
        missing = sorted(set(expected) - set(last))[:3]
        extra = sorted(set(last) - set(expected))[:3]
        differing = [dn for dn in expected if dn in last and expected[dn] != last[dn]][:1]
        detail = f"missing {missing}, extra {extra}"
        for dn in differing:
            keys = set(expected[dn]) | set(last[dn])
            detail += f"; {dn}: " + ", ".join(
                f"{k}: provider {expected[dn].get(k)} replica {last[dn].get(k)}"
                for k in sorted(keys) if expected[dn].get(k) != last[dn].get(k))
        fail(f"{what}: the replica does not equal the provider after {timeout:.0f} s "
             f"({len(expected)} entries on the provider, {len(last)} on the replica): {detail}; "
             f"replica stderr: {replica.stderr_text()[-1500:]}")
    print(f"  ok: {what}: the replica equals the provider ({len(expected)} entries)", flush=True)


def ldap_tool(url: str, tool: str, text: str = "", *args):
    result = subprocess.run([tool, "-x", "-H", url, "-D", ROOT_DN, "-w", "secret", *args],
                            input=text, capture_output=True, text=True, timeout=60)
    return result.returncode, result.stdout, result.stderr


def modify(url: str, ldif: str):
    rc, out, err = ldap_tool(url, "ldapmodify", ldif)
    check(rc == 0, "ldapmodify on the provider", f"{rc}: {err}")


class Context:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="replication-it-")
        self.ldif = os.path.join(self.work, "users.ldif")
        with open(self.ldif, "w") as stream:
            subprocess.run(["/usr/bin/python3", args.gen, "--users", str(USERS), "--suffix",
                            SUFFIX], stdout=stream, check=True, timeout=120)

    def replica(self, provider_url: str, rid: int = 1, kind: str = "refreshAndPersist",
                keep: bool = False):
        return NumadirServer(self.args.numadir, self.args.gen, users=0, keep=keep,
                             extra_toml=consumer_toml(self.work, provider_url, rid, kind))


def changes_on_the_provider(p):
    """Every kind of change, by ldap-utils and python-ldap."""
    import ldap
    modify(p.url, f"""dn: uid=newuser,{PEOPLE}
changetype: add
objectClass: inetOrgPerson
uid: newuser
cn: New User
sn: User
userPassword: fresh

dn: uid=user1,{PEOPLE}
changetype: modify
replace: sn
sn: Replaced
-
add: mail
mail: second@example.com
-
delete: givenName

dn: uid=user2,{PEOPLE}
changetype: delete

dn: uid=user3,{PEOPLE}
changetype: modrdn
newrdn: uid=user3renamed
deleteoldrdn: 1

dn: ou=moved,{SUFFIX}
changetype: add
objectClass: organizationalUnit
ou: moved

dn: uid=user4,{PEOPLE}
changetype: modrdn
newrdn: uid=user4
deleteoldrdn: 0
newsuperior: ou=moved,{SUFFIX}

dn: ou=tree,{SUFFIX}
changetype: add
objectClass: organizationalUnit
ou: tree

dn: ou=leaf,ou=tree,{SUFFIX}
changetype: add
objectClass: organizationalUnit
ou: leaf

dn: ou=tree,{SUFFIX}
changetype: modrdn
newrdn: ou=tree
deleteoldrdn: 0
newsuperior: ou=moved,{SUFFIX}
""")
    conn = ldap.initialize(p.url)
    conn.simple_bind_s(ROOT_DN, "secret")
    conn.modify_s(f"uid=user5,{PEOPLE}", [(ldap.MOD_ADD, "description", [b"one", b"two"])])
    conn.modify_s(f"uid=user5,{PEOPLE}", [(ldap.MOD_DELETE, "description", [b"one"])])
    conn.passwd_s(f"uid=user6,{PEOPLE}", None, "changed-by-exop")
    conn.unbind_s()


def context_csns(server) -> list:
    result = subprocess.run(["ldapsearch", "-LLL", "-o", "ldif-wrap=no", "-x", "-H", server.url,
                             *root_bind(server), "-b", SUFFIX, "-s", "base", "(objectClass=*)",
                             "contextCSN"], capture_output=True, text=True, timeout=30)
    return sorted(line.split(":", 1)[1].strip() for line in result.stdout.splitlines()
                  if line.lower().startswith("contextcsn:"))


def check_context_csn(p, replica, what: str):
    """The replica's contextCSN is the provider's (its greatest), not one of its own."""
    last = []

    def same():
        nonlocal last
        expected, last = context_csns(p), context_csns(replica)
        return bool(expected) and last == [max(expected)]
    check(wait_for(same, timeout=30, interval=0.2), f"{what}: the replica's contextCSN is the "
          f"provider's", f"provider {context_csns(p)}, replica {last}")


def check_refresh_and_persist(c: Context):
    with provider(c.ldif) as p, c.replica(p.url) as r:
        check_same(p, r, "initial refresh of %d users" % USERS, timeout=120)
        changes_on_the_provider(p)
        check_same(p, r, "every kind of change on the provider")
        # (Not after the refresh alone: the harness imported the replica's base tree, whose local
        # CSNs are later than the provider's entries until the provider's changes.)
        check_context_csn(p, r, "after every kind of change")
        # A bind on the replica with the password changed on the provider.
        whoami = subprocess.run(["ldapwhoami", "-x", "-H", r.url, "-D", f"uid=user6,{PEOPLE}",
                                 "-w", "changed-by-exop"], capture_output=True, text=True,
                                timeout=30)
        rc, err = whoami.returncode, whoami.stderr
        check(rc == 0, "a bind on the replica with the password set on the provider", err)

        # Writes to the replica are referred to the provider.
        for who in (("-D", ROOT_DN, "-w", "secret"), ("-D", f"uid=user7,{PEOPLE}", "-w",
                                                        "password7")):
            result = subprocess.run(["ldapmodify", "-x", "-H", r.url, *who],
                                    input=f"dn: uid=user7,{PEOPLE}\nchangetype: modify\n"
                                          f"replace: sn\nsn: Local\n",
                                    capture_output=True, text=True, timeout=30)
            check_equal(result.returncode, 10, f"a modify on the replica as {who[1]}: referral")
            check(f"{p.url}/uid=user7,{PEOPLE}" in result.stdout + result.stderr,
                  "the referral names the provider and the entry", result.stdout + result.stderr)
        check_same(p, r, "nothing written by the refused writes", timeout=5)

        # Visibility: cn=Monitor's entry for the consumer, and numadir stats.
        monitor = subprocess.run(["ldapsearch", "-x", "-LLL", "-o", "ldif-wrap=no", "-H", r.url,
                                  *root_bind(r), "-b", "cn=Consumer 1,cn=Replication,cn=Monitor",
                                  "-s", "base"], capture_output=True, text=True, timeout=30)
        check(monitor.returncode == 0, "cn=Monitor has the consumer's entry", monitor.stderr)
        for line in ("numadirReplicationState: persisting", f"numadirProvider: {p.url}",
                     "numadirCookie: rid=001,csn=", "numadirContextCSN: ", "numadirLastChange: "):
            check(line in monitor.stdout, f"cn=Monitor shows {line.strip()}", monitor.stdout)
        applied = re.search(r"numadirChangesApplied: (\d+)", monitor.stdout)
        check(applied is not None and int(applied.group(1)) >= USERS,
              "cn=Monitor counts the changes applied", monitor.stdout)
        stats = subprocess.run([c.args.numadir, "stats", "-H", r.url, "-D", ROOT_DN, "-w",
                                "secret", "--count", "2", "--interval", "0.2"],
                               capture_output=True, text=True, timeout=30)
        check(stats.returncode == 0 and re.search(r"\n1 +persisting ", stats.stdout) is not None,
              "numadir stats shows the consumer persisting", stats.stdout + stats.stderr)
        check("replication rid=1" in r.stderr_text() and "persisting" in r.stderr_text(),
              "the state changes are on standard error", r.stderr_text()[-1000:])


def check_restart_converges(c: Context):
    for sessionlog in (False, True):
        restart_converges(c, sessionlog)


def restart_converges(c: Context, sessionlog: bool):
    """refreshAndPersist stopped and started again: without a session log the provider names
    what is present, with one it sends the deletes (a syncIdSet)."""
    with provider(c.ldif, sessionlog=sessionlog) as p:
        with c.replica(p.url, keep=True) as r:
            check_same(p, r, "initial refresh" + (" (session log)" if sessionlog else ""),
                       timeout=120)
            replica_dir = r.dir
            config = r.config
        # Stopped (SIGTERM by the harness): the provider takes changes meanwhile.
        modify(p.url, "".join(f"dn: uid=user{n},{PEOPLE}\nchangetype: delete\n\n"
                              for n in range(10, 20)) +
               f"dn: uid=user20,{PEOPLE}\nchangetype: modify\nreplace: sn\nsn: WhileAway\n\n"
               f"dn: uid=user21,{PEOPLE}\nchangetype: modrdn\nnewrdn: uid=away21\n"
               f"deleteoldrdn: 1\n\n"
               f"dn: uid=added-away,{PEOPLE}\nchangetype: add\nobjectClass: account\n"
               f"uid: added-away\n")
        restarted = restart(c, replica_dir, config)
        try:
            check_same(p, restarted, "after a restart, changes made while it was stopped" +
                       (" (session log)" if sessionlog else ""))
        finally:
            restarted.stop()


class Restarted:
    """numadir serve started again on a kept database and config."""

    def __init__(self, numadir: str, directory: str, config: str):
        self.dir = directory
        self.config = config
        self.stderr_path = os.path.join(directory, "restart.stderr")
        self.process = subprocess.Popen([numadir, "serve", "-c", config],
                                        stdout=subprocess.PIPE,
                                        stderr=open(self.stderr_path, "wb"), text=True)
        line = self.process.stdout.readline()
        match = re.search(r"listening on (ldap://[^\s]+)", line)
        if not match:
            fail(f"the restarted replica did not listen: {line!r} {self.stderr_text()}")
        self.url = match.group(1)

    def stderr_text(self) -> str:
        with open(self.stderr_path, errors="replace") as stream:
            return stream.read()

    def stop(self):
        """Stops the server and removes its kept folder."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


def restart(c: Context, directory: str, config: str) -> Restarted:
    return Restarted(c.args.numadir, directory, config)


def check_refresh_only(c: Context):
    for sessionlog in (False, True):
        with provider(c.ldif, sessionlog=sessionlog) as p, \
                c.replica(p.url, kind="refreshOnly") as r:
            what = "refreshOnly " + ("with a session log" if sessionlog else "without one")
            check_same(p, r, f"{what}: first refresh", timeout=120)
            modify(p.url, f"dn: uid=user30,{PEOPLE}\nchangetype: delete\n\n"
                          f"dn: uid=user31,{PEOPLE}\nchangetype: modify\nreplace: sn\n"
                          f"sn: Polled\n")
            check_same(p, r, f"{what}: a delete and a modify, one interval later")


def check_schema_the_replica_lacks(c: Context):
    """A change naming an attribute type the replica's schema lacks (misc.schema's, on the
    provider only) stops the consumer with a message naming it, nothing of its batch written;
    once the admin adds the schema file and restarts the replica, it converges."""
    misc = "/etc/ldap/schema/misc.schema"
    conf = "overlay syncprov\nsyncprov-checkpoint 100 1\n"
    with slapd_harness.SlapdServer(c.ldif, extra_conf=f"moduleload syncprov\ninclude {misc}\n",
                                   indexes=PROVIDER_INDEXES, database_conf=conf) as p:
        with c.replica(p.url, keep=True) as r:
            check_same(p, r, "before the change the schema lacks", timeout=120)
            modify(p.url, f"dn: uid=user40,{PEOPLE}\nchangetype: modify\nadd: objectClass\n"
                          f"objectClass: inetLocalMailRecipient\n-\nadd: mailLocalAddress\n"
                          f"mailLocalAddress: user40@mail.example.com\n\n"
                          f"dn: uid=user41,{PEOPLE}\nchangetype: modify\nreplace: sn\n"
                          f"sn: AfterTheOddOne\n")
            check(wait_for(lambda: "inetLocalMailRecipient" in r.stderr_text() or
                           "mailLocalAddress" in r.stderr_text(), timeout=30),
                  "the consumer names what the schema lacks", r.stderr_text()[-1500:])
            after = dump(r.url, root_bind(r))
            check("mailLocalAddress".lower() not in after[f"uid=user40,{PEOPLE}".lower()],
                  "nothing of the refused change is stored")
            replica_dir, config = r.dir, r.config
        with open(config, "a") as stream:
            stream.write(f"\n[schema]\nfiles = [\"{misc}\"]\n")
        restarted = restart(c, replica_dir, config)
        try:
            check_same(p, restarted, "once the schema is added, after a restart")
        finally:
            restarted.stop()


DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                   "replication.md")


def doc_block(name: str) -> str:
    """The fenced block after docs/replication.md's `<!-- replication-example:NAME -->` marker."""
    with open(DOC) as stream:
        text = stream.read()
    match = re.search(r"<!-- replication-example:" + re.escape(name) + r" -->\n```[a-z]*\n(.*?)```",
                      text, re.S)
    if match is None:
        fail(f"docs/replication.md has no replication-example:{name} block")
    return match.group(1)


def check_doc_example(c: Context):
    """docs/replication.md's example, as written: the provider's slapd.conf lines and the
    replica's [[replication.consumer]] table (only the provider's URL and the password file's
    path replaced), with the replication identity it names."""
    replicator = f"cn=replicator,{SUFFIX}"
    ldif = os.path.join(c.work, "readme.ldif")
    with open(c.ldif) as source, open(ldif, "w") as stream:
        stream.write(source.read().rstrip("\n") + f"\n\ndn: {replicator}\nobjectClass: "
                     "organizationalRole\nobjectClass: simpleSecurityObject\ncn: replicator\n"
                     "userPassword: replicate-me\n")
    password = os.path.join(c.work, "readme-replicator.pw")
    with open(password, "w") as stream:
        stream.write("replicate-me\n")
    os.chmod(password, 0o600)
    table = doc_block("replica")
    check("ldap://ldap1.example.com" in table and "/etc/numadir/replicator.pw" in table,
          "docs/replication.md's replica table names the provider and password file the test "
          "replaces", table)
    with slapd_harness.SlapdServer(ldif, extra_conf=doc_block("provider-global"),
                                   database_conf=doc_block("provider-database")) as p:
        table = table.replace("ldap://ldap1.example.com", p.url).replace(
            "/etc/numadir/replicator.pw", password)
        with NumadirServer(c.args.numadir, c.args.gen, users=0, extra_toml=table) as r:
            check_same(p, r, "docs/replication.md's example", timeout=120)
            modify(p.url, f"dn: uid=user8,{PEOPLE}\nchangetype: modify\nreplace: sn\n"
                          f"sn: FromTheDocs\n")
            check_same(p, r, "docs/replication.md's example: a change on the provider")


def check_kill_mid_refresh(c: Context):
    global BIG_USERS
    if sanitized(c.args.numadir):
        BIG_USERS = 10000  # A sanitized build refreshes ten times slower: still mid-refresh.
    big = os.path.join(c.work, "big.ldif")
    with open(big, "w") as stream:
        subprocess.run(["/usr/bin/python3", c.args.gen, "--users", str(BIG_USERS), "--suffix",
                        SUFFIX],
                       stdout=stream, check=True, timeout=120)
    with provider(big) as p:
        r = c.replica(p.url, keep=True)
        r.__enter__()
        try:
            # Killed once part of the refresh is committed, before all of it is.
            served = [0]

            def some():
                out = subprocess.run(["ldapsearch", "-x", "-LLL", "-H", r.url, "-D", ROOT_DN,
                                      "-w", "secret", "-b", PEOPLE, "(uid=*)", "1.1"],
                                     capture_output=True, text=True, timeout=30).stdout
                served[0] = out.count("dn: ")
                return served[0] > 0
            check(wait_for(some, timeout=60, interval=0.01), "part of the refresh is served")
            r.process.kill()
            r.process.wait(timeout=30)
            check(served[0] < BIG_USERS, "the replica was killed mid-refresh",
                  f"{served[0]} of {BIG_USERS} users were there")
            print(f"  killed with {served[0]} of {BIG_USERS} users replicated", flush=True)
        finally:
            replica_dir, config = r.dir, r.config
        restarted = restart(c, replica_dir, config)
        try:
            check_same(p, restarted, "after kill -9 mid-refresh", timeout=180)
        finally:
            restarted.stop()


def main() -> int:
    args = parse_args(__doc__)
    missing = slapd_harness.available()
    if missing:
        print(f"replication: {missing}")
        return 1
    c = Context(args)
    try:
        return run_checks("replication", [
            ("refreshAndPersist: initial refresh, every change, referrals",
             lambda: check_refresh_and_persist(c)),
            ("stopped while the provider changes, then restarted",
             lambda: check_restart_converges(c)),
            ("refreshOnly with and without a session log", lambda: check_refresh_only(c)),
            ("kill -9 mid-refresh", lambda: check_kill_mid_refresh(c)),
            ("docs/replication.md's example, as written", lambda: check_doc_example(c)),
            ("a change the replica's schema lacks", lambda: check_schema_the_replica_lacks(c)),
        ])
    finally:
        shutil.rmtree(c.work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
