#!/usr/bin/python3
"""numadir replicas of a numadir provider (RFC 4533 syncprov served by numadir), and the cascade.

The provider: `numadir serve` with `[replication.provider] enabled = true` and
`database.server_id = 1`, perf/gen_users.py's users imported. Each replica: `numadir serve`
(server_id 2, 3) from the suffix and its two ous only, with a [[replication.consumer]]
(refreshAndPersist, bound as the provider's rootdn) pointing at it. After each step the replica
equals the provider: every entry with every stored attribute, entryUUID and entryCSN included
(the two servers' `ldapsearch "*" "+"` output as replication_test.py compares it, less
contextCSN, which a provider keeps for itself and a consumer keeps as its cookie).

1. The initial refresh of USERS users; then, one at a time, each change made on the provider
   with ldap-utils and python-ldap (an add, a modify replacing, adding and deleting values, a
   modify deleting one value of several, one deleting a whole attribute, a delete, ModifyDN
   with and without newSuperior and with deleteoldrdn 0 and 1, a subtree move, a Password
   Modify) appears on the replica. A bind
   on the replica with the password set by the Password Modify works; a write sent to the
   replica gets a referral (10) naming the provider and the entry.
2. The replica stopped while the provider takes adds, modifies, deletes and renames, then
   started again on its database and cookie: it converges, the deleted entries gone; once with
   the provider's session log covering the gap (sessionlog 1000: the provider's cn=Monitor
   shows the returning consumer was sent only what changed) and once with a session log
   shorter than the gap (sessionlog 4: a present phase, every entry named).
3. A consumer that stops reading: `ldapsearch -E '!sync=rp'` writing into a pipe nobody reads,
   SLOW_USERS users, so that the provider's refresh to it pauses (its cn=Monitor entry's
   numadirEntriesSent stays below the users). Meanwhile a subtree is added and moved on the
   provider; once the pipe is read, the stream names every entry of that subtree by its
   entryUUID (at its new DN, or at the DN it was added at before the move, as slapd's syncprov
   sends it: a consumer moves the subtree with its top).
4. The cascade: replica1 follows the provider and is itself a provider (enabled = true);
   replica2 follows replica1. The initial refresh, every kind of change made on the provider
   and replica2 stopped while the provider changes reach replica2 through replica1; at the end
   of the chain replica2 equals the provider, and a write to replica2 is referred to replica1
   (its provider, as slapd's chained consumers refer).

  sync_provider_numadir_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Standard library + python3-ldap (the Password Modify and the modify kinds), ldap-utils.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, NumadirServer,  # noqa: E402
                             check, check_equal, fail, parse_args, run_checks, user_dn, wait_for)
from replication_test import (Restarted, check_same, consumer_toml, modify,  # noqa: E402
                              root_bind)

USERS = 2000
# Changes made while a replica is stopped: more than SHORT_SESSION_LOG, fewer than LONG_SESSION_LOG.
SHORT_SESSION_LOG = 4
LONG_SESSION_LOG = 1000


def provider_toml(sessionlog: int = LONG_SESSION_LOG) -> str:
    return f"""
[replication.provider]
enabled = true
sessionlog = {sessionlog}
"""


def provider(args, sessionlog: int = LONG_SESSION_LOG, keep: bool = False) -> NumadirServer:
    """The numadir provider: USERS users, server_id 1."""
    return NumadirServer(args.numadir, args.gen, users=USERS, keep=keep,
                         extra_database_toml="server_id = 1",
                         extra_toml=provider_toml(sessionlog))


def replica(args, work: str, provider_url: str, rid: int, server_id: int,
            also_provider: bool = False, keep: bool = False) -> NumadirServer:
    """A numadir replica of `provider_url` from an empty database (the suffix and its ous);
    `also_provider`: it serves the Sync Request control itself (a cascade's middle)."""
    return NumadirServer(args.numadir, args.gen, users=0, keep=keep,
                         extra_database_toml=f"server_id = {server_id}",
                         extra_toml=consumer_toml(work, provider_url, rid) +
                         (provider_toml() if also_provider else ""))


def ldap_root(server, tool: str, *args):
    result = subprocess.run([tool, "-x", "-H", server.url, "-D", ROOT_DN, "-w", ROOT_PW,
                             "-o", "ldif-wrap=no", *args], capture_output=True, text=True,
                            timeout=60)
    return result.returncode, result.stdout, result.stderr


def python_ldap_change(url: str, change):
    import ldap
    conn = ldap.initialize(url)
    conn.simple_bind_s(ROOT_DN, ROOT_PW)
    try:
        change(conn, ldap)
    finally:
        conn.unbind_s()


# Each step: (what, LDIF for ldapmodify or a callable(conn, ldap) run with python-ldap).
STEPS = [
    ("an add", f"""dn: uid=newuser,{PEOPLE}
changetype: add
objectClass: inetOrgPerson
uid: newuser
cn: New User
sn: User
mail: newuser@example.com
userPassword: fresh
"""),
    ("a modify replacing, adding and deleting values in one request",
     f"""dn: uid=user1,{PEOPLE}
changetype: modify
replace: sn
sn: Replaced
-
add: mail
mail: second@example.com
-
delete: givenName
"""),
    ("a modify adding two values, then one deleting one of them",
     lambda conn, ldap: (
         conn.modify_s(f"uid=user5,{PEOPLE}", [(ldap.MOD_ADD, "description", [b"one", b"two"])]),
         conn.modify_s(f"uid=user5,{PEOPLE}", [(ldap.MOD_DELETE, "description", [b"one"])]))),
    ("a modify deleting a whole attribute",
     f"dn: uid=user8,{PEOPLE}\nchangetype: modify\ndelete: mail\n"),
    ("a delete", f"dn: uid=user2,{PEOPLE}\nchangetype: delete\n"),
    ("ModifyDN without newSuperior (deleteoldrdn 1)",
     f"dn: uid=user3,{PEOPLE}\nchangetype: modrdn\nnewrdn: uid=user3renamed\n"
     f"deleteoldrdn: 1\n"),
    ("ModifyDN without newSuperior (deleteoldrdn 0)",
     f"dn: uid=user9,{PEOPLE}\nchangetype: modrdn\nnewrdn: uid=user9kept\ndeleteoldrdn: 0\n"),
    ("ModifyDN with newSuperior", f"""dn: ou=moved,{SUFFIX}
changetype: add
objectClass: organizationalUnit
ou: moved

dn: uid=user4,{PEOPLE}
changetype: modrdn
newrdn: uid=user4
deleteoldrdn: 0
newsuperior: ou=moved,{SUFFIX}
"""),
    ("a subtree move (ModifyDN of an entry with children, newSuperior)", f"""dn: ou=tree,{SUFFIX}
changetype: add
objectClass: organizationalUnit
ou: tree

dn: ou=leaf,ou=tree,{SUFFIX}
changetype: add
objectClass: organizationalUnit
ou: leaf

dn: uid=deep,ou=leaf,ou=tree,{SUFFIX}
changetype: add
objectClass: account
uid: deep

dn: ou=tree,{SUFFIX}
changetype: modrdn
newrdn: ou=branch
deleteoldrdn: 1
newsuperior: ou=moved,{SUFFIX}
"""),
    ("a Password Modify extended operation",
     lambda conn, ldap: conn.passwd_s(user_dn(6), None, "changed-by-exop")),
]


def apply_step(url: str, change):
    if callable(change):
        python_ldap_change(url, change)
    else:
        modify(url, change)


def check_each_change(upstream, downstreams, what: str = ""):
    """Each step made on `upstream`; after it, every server of `downstreams` equals it."""
    for title, change in STEPS:
        apply_step(upstream.url, change)
        for server, name in downstreams:
            check_same(upstream, server, f"{what}{title}: on {name}")


def check_referral(server, expected_url: str, name: str):
    result = subprocess.run(["ldapmodify", "-x", "-H", server.url, "-D", ROOT_DN, "-w", ROOT_PW],
                            input=f"dn: uid=user7,{PEOPLE}\nchangetype: modify\nreplace: sn\n"
                                  f"sn: Local\n", capture_output=True, text=True, timeout=30)
    check_equal(result.returncode, 10, f"a modify sent to {name}: referral (10)")
    check(f"{expected_url}/uid=user7,{PEOPLE}" in result.stdout + result.stderr,
          f"{name}'s referral names {expected_url} and the entry",
          result.stdout + result.stderr)


def check_bind(url: str, dn: str, password: str, what: str):
    whoami = subprocess.run(["ldapwhoami", "-x", "-H", url, "-D", dn, "-w", password],
                            capture_output=True, text=True, timeout=30)
    check(whoami.returncode == 0, what, whoami.stderr)


def check_changes(args, work):
    with provider(args) as p, replica(args, work, p.url, rid=1, server_id=2) as r:
        check_same(p, r, f"initial refresh of {USERS} users", timeout=120)
        dumped = subprocess.run(["ldapsearch", "-x", "-LLL", "-H", r.url, *root_bind(r), "-b",
                                 user_dn(10), "-s", "base", "entryUUID", "entryCSN"],
                                capture_output=True, text=True, timeout=30).stdout
        check(re.search(r"entryUUID: [0-9a-f-]{36}", dumped) is not None and
              re.search(r"entryCSN: \d{14}\.\d{6}Z#[0-9a-f]{6}#001#000000", dumped) is not None,
              "the replica holds the provider's entryUUID and an entryCSN with sid 001",
              dumped)
        check_each_change(p, [(r, "the replica")])
        check_bind(r.url, user_dn(6), "changed-by-exop",
                   "a bind on the replica with the password set on the provider")
        check_referral(r, p.url, "the replica")
        check_same(p, r, "nothing written by the refused write", timeout=5)


# Changes made while a replica is away: 14, deletes among them.
def changes_while_away() -> str:
    return ("".join(f"dn: uid=user{n},{PEOPLE}\nchangetype: delete\n\n" for n in range(10, 20)) +
            f"dn: uid=user20,{PEOPLE}\nchangetype: modify\nreplace: sn\nsn: WhileAway\n\n"
            f"dn: uid=user21,{PEOPLE}\nchangetype: modrdn\nnewrdn: uid=away21\n"
            f"deleteoldrdn: 1\n\n"
            f"dn: uid=user22,{PEOPLE}\nchangetype: modrdn\nnewrdn: uid=user22\n"
            f"deleteoldrdn: 0\nnewsuperior: {SUFFIX}\n\n"
            f"dn: uid=added-away,{PEOPLE}\nchangetype: add\nobjectClass: account\n"
            f"uid: added-away\n")


def monitor_consumers(server) -> list:
    """The provider's cn=Monitor entries of the sync searches it serves: [{attr: [values]}]."""
    result = subprocess.run(["ldapsearch", "-x", "-LLL", "-o", "ldif-wrap=no", "-H", server.url,
                             *root_bind(server), "-b", "cn=Provider,cn=Replication,cn=Monitor",
                             "(objectClass=numadirSyncConsumerObject)", "*", "+"],
                            capture_output=True, text=True, timeout=30)
    entries = []
    for block in result.stdout.strip().split("\n\n"):
        attributes = {}
        for line in block.splitlines():
            name, _, value = line.partition(": ")
            attributes.setdefault(name.lower(), []).append(value)
        if "numadirentriessent" in attributes:
            entries.append(attributes)
    return entries


def entries_sent_to_returning_consumer(p) -> int:
    """The entries the provider sent in the refresh of the consumer that came back (its only
    attached consumer), from its cn=Monitor entry once it persists."""
    last = []

    def persisting():
        nonlocal last
        last = monitor_consumers(p)
        return len(last) == 1 and last[0].get("numadirsyncphase") == ["persist"]
    if not wait_for(persisting, timeout=60, interval=0.2):
        fail(f"the provider's cn=Monitor shows not one persisting consumer: {last}")
    return int(last[0]["numadirentriessent"][0])


def restart_converges(args, work, sessionlog: int):
    covered = sessionlog >= 14
    what = (f"session log {sessionlog} " + ("covering" if covered else "shorter than") +
            " the gap")
    with provider(args, sessionlog=sessionlog) as p:
        with replica(args, work, p.url, rid=1, server_id=2, keep=True) as r:
            check_same(p, r, f"{what}: initial refresh", timeout=120)
            replica_dir, config = r.dir, r.config
        modify(p.url, changes_while_away())
        restarted = Restarted(args.numadir, replica_dir, config)
        try:
            check_same(p, restarted, f"{what}: after a restart, the changes made while it "
                                     f"was stopped")
            sent = entries_sent_to_returning_consumer(p)
            if covered:
                check(sent < 20, f"{what}: the returning consumer got only what changed",
                      f"{sent} entries sent")
            else:
                check(sent >= USERS - 20, f"{what}: the returning consumer got a present phase "
                                          f"(every entry named)", f"{sent} entries sent")
        finally:
            restarted.stop()


def check_restart(args, work):
    restart_converges(args, work, LONG_SESSION_LOG)
    restart_converges(args, work, SHORT_SESSION_LOG)


def check_cascade(args, work):
    with provider(args) as p, \
            replica(args, work, p.url, rid=1, server_id=2, also_provider=True) as r1:
        check_same(p, r1, f"the cascade: initial refresh of {USERS} users on replica1",
                   timeout=120)
        with replica(args, work, r1.url, rid=2, server_id=3, keep=True) as r2:
            check_same(p, r2, "the cascade: initial refresh at the end of the chain (replica2)",
                       timeout=120)
            check_each_change(p, [(r1, "replica1"), (r2, "replica2")], "the cascade: ")
            check_referral(r2, r1.url, "replica2")
            replica_dir, config = r2.dir, r2.config
        # replica2 stopped (SIGTERM, its database and cookie kept): the provider changes.
        modify(p.url, changes_while_away())
        check_same(p, r1, "the cascade: changes while replica2 is away, on replica1")
        restarted = Restarted(args.numadir, replica_dir, config)
        try:
            check_same(p, restarted, "the cascade: replica2 restarted converges to the provider")
            modify(p.url, f"dn: uid=user30,{PEOPLE}\nchangetype: modify\nreplace: sn\n"
                          f"sn: AfterRestart\n")
            check_same(p, restarted, "the cascade: a change after replica2's restart")
        finally:
            restarted.stop()


SLOW_USERS = 20000  # ~20 MB of refresh: more than the pipe and socket buffers hold.


def check_consumer_reading_late(args, work):
    """A refreshAndPersist consumer that stops reading mid-refresh (ldapsearch -E sync=rp
    writing into a pipe nobody reads) while a subtree is added and moved on the provider:
    once it reads again, what it is sent names every entry of the moved subtree at its new
    DN (a consumer that fell behind gets the changes, not only the last one's entry)."""
    import threading
    with NumadirServer(args.numadir, args.gen, users=SLOW_USERS,
                       extra_database_toml="server_id = 1", extra_toml=provider_toml()) as p:
        search = subprocess.Popen(["ldapsearch", "-x", "-H", p.url, "-D", ROOT_DN, "-w",
                                   ROOT_PW, "-o", "ldif-wrap=no", "-b", SUFFIX, "-E",
                                   "!sync=rp", "(objectClass=*)", "*", "+"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            sent = []

            def paused():
                consumers = monitor_consumers(p)
                if len(consumers) != 1:
                    return False
                sent.append(int(consumers[0]["numadirentriessent"][0]))
                return len(sent) >= 3 and sent[-1] == sent[-3] and 0 < sent[-1] < SLOW_USERS
            check(wait_for(paused, timeout=60, interval=0.3),
                  "the consumer's refresh is paused mid-way (it does not read)", f"{sent}")
            subtree = dict(STEPS)["a subtree move (ModifyDN of an entry with children, "
                                  "newSuperior)"]
            modify(p.url, f"dn: ou=moved,{SUFFIX}\nchangetype: add\n"
                          f"objectClass: organizationalUnit\nou: moved\n\n" + subtree)
            chunks = []
            reader = threading.Thread(target=lambda: chunks.extend(iter(
                lambda: search.stdout.read1(65536), b"")), daemon=True)
            reader.start()
            # Sent either at its new DN or at the DN it was added at before its ancestor's
            # move (as slapd's syncprov sends them): the consumer moves subtrees with their top.
            moved = [f"ou=branch,ou=moved,{SUFFIX}", f"ou=leaf,ou=branch,ou=moved,{SUFFIX}",
                     f"uid=deep,ou=leaf,ou=branch,ou=moved,{SUFFIX}"]
            uuids = {}
            for dn in moved:
                rc, out, err = ldap_root(p, "ldapsearch", "-LLL", "-b", dn, "-s", "base",
                                         "entryUUID")
                match = re.search(r"^entryUUID: (\S+)$", out, re.M)
                check(rc == 0 and match is not None, f"{dn} has an entryUUID on the provider",
                      f"rc {rc}: {out} {err}")
                uuids[dn] = match.group(1)

            def unsent():
                text = b"".join(chunks).decode(errors="replace")
                return [dn for dn, uuid in uuids.items()
                        if not re.search(rf"SyncState control, UUID {uuid} (added|modified)",
                                         text)]
            wait_for(lambda: not unsent(), timeout=60, interval=0.2)
            check(not unsent(), "the late reader was sent every entry of the subtree added "
                                "and moved meanwhile (by entryUUID)",
                  f"{unsent()} never sent; {len(chunks)} chunks read")
        finally:
            search.kill()
            search.wait()


def main() -> int:
    args = parse_args(__doc__)
    work = tempfile.mkdtemp(prefix="sync-provider-numadir-")
    try:
        return run_checks("sync_provider_numadir", [
            ("a numadir replica of a numadir provider: initial refresh, every change, "
             "referrals", lambda: check_changes(args, work)),
            ("stopped while the provider changes, then restarted: session log covering and "
             "not covering the gap", lambda: check_restart(args, work)),
            ("a consumer that stops reading while a subtree is added and moved",
             lambda: check_consumer_reading_late(args, work)),
            ("the cascade: provider -> replica1 (also a provider) -> replica2",
             lambda: check_cascade(args, work)),
        ], keep_going=args.keep_going)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
