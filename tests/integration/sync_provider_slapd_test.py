#!/usr/bin/python3
"""Debian's slapd 2.5 as a syncrepl CONSUMER of a provider (RFC 4533): numadir's
[replication.provider] (`--provider numadir`, the default) or, to prove the test itself, a
private slapd with the syncprov overlay (`--provider slapd`). Every step runs the same against
both.

The consumer is a private slapd (back-mdb, its own empty database, its own port) with
`syncrepl rid=001 provider=ldap://127.0.0.1:PORT type=refreshAndPersist ... retry="1 +"` in its
slapd.conf, bound as the provider's rootdn. "Converged" means: the consumer holds the same
entries as the provider, every attribute with every value, user and operational (entryUUID,
entryCSN, createTimestamp, modifiersName, structuralObjectClass, ...) read with "*" and "+" on
both, less what each server computes on read (entryDN, hasSubordinates, subschemaSubentry,
numSubordinates), and the two suffix entries carry the same contextCSN (compared on its own),
not older than the provider's newest entryCSN. Every wait is a poll with a deadline.

1. 10,000 users: the initial refresh; then an add, each modify kind (add values, delete values,
   delete an attribute, replace, increment), a delete, ModifyDN with deleteoldrdn true and
   false, with newSuperior, a subtree move and a Password Modify (ldappasswd), each followed by
   the full comparison; the new password binds on the consumer; a write on the consumer gets a
   referral to the provider (updateref). Then a consumer bound as a replication identity that
   is not the rootdn (cn=replicator: read on everything by access rules, no size limit):
   the same copy, userPassword included; a sync search by a user lacks others' userPassword.
2. The consumer stopped while the provider takes adds, modifies, renames and deletes, then
   started again: it converges, the deleted entries gone; once with a session log that covers
   the gap and once with one smaller than the gap. A refreshOnly search with the consumer's own
   cookie shows which way the provider went: the changed entries and a syncIdSet of the
   deleted entryUUIDs (refreshDeletes), or a present phase naming every entry still there.
   Then a refreshOnly consumer (interval=00:00:00:01): its first refresh and a round of changes.
3. kill -9 of the provider in the middle of a client's stream of adds: restarted on the same
   database and port, it holds every acknowledged add and nothing the client never sent; the
   consumer catches up and converges. (slapd's syncprov restarts from the contextCSN it last
   checkpointed, older than its newest entries until its next write: for slapd that one check
   is shown, not asserted, and both converge after one more write.)
6. Bad input on raw sockets (hand-made BER): a malformed Sync Request control value, a cookie
   that does not parse, a cookie with an unknown rid, a CSN from the future, a consumer that
   disconnects mid-refresh, consumers that never read while writes go on (binds and writes
   timed; numadir's anonymous memory bounded, which slapd's is not: there it is shown; numadir
   ends the consumer that fell behind its queue with busy, and its cookie resumes it; with
   limits.write_timeout = 2 it closes a consumer that never reads, seen from /proc/net/tcp,
   which slapd's writetimeout does not). After each the provider still serves.
   The answers expected are slapd 2.5.13's (syncprov.c), written next to each check; where
   numadir's docs/replication.md answers otherwise (a cookie that does not parse: protocolError,
   where slapd ignores it) each provider's own answer is checked.
   A consumer that disconnects mid-refresh runs in step 1, where the refresh (10,000 users) is
   larger than a socket can buffer.

The steps are numbered as the issue's "must show" list (4 and 5 are numadir replicas: other
tests).

The servers, the comparison and the raw sync client are sync_provider_harness.py's. Standard
library + python3-ldap.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (CheckFailed, ber, check, check_equal, fail,  # noqa: E402
                             run_checks, sanitized, wait_for)
import slapd_harness  # noqa: E402
from sync_provider_harness import (  # noqa: E402
    SUFFIX, PEOPLE, ROOT_DN, ROOT_PW, SYNC_REQUEST, REFRESH_ONLY, REFRESH_AND_PERSIST,
    NUMADIR_SERVER_ID, anon_rss_kib, generate, SlapdProvider, NumadirProvider, SlapdConsumer,
    REPLICATOR, REPLICATOR_PW, REPLICATOR_LDIF, connect, dump, context_csn, newest_entry_csn,
    converged, sync_request_value, control, RawClient, result_code, run_sync_search, uuid_bytes,
    message_cookie)

BIG_USERS = 10000  # Step 1's initial refresh, as the issue asks.
USERS = 500  # Every other step.


# -- the steps -----------------------------------------------------------------------------------
class Context:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="sync-provider-slapd-")

    def provider(self, users: int, sessionlog: int = 10000, queue_changes: int = 4096,
                 replicator: bool = False, write_timeout_s: int = 0):
        """`replicator`: the directory has REPLICATOR, and access rules (and limits) that let it
        read everything, users read all but userPassword. `write_timeout_s`: how long a client
        may read nothing before the provider closes its connection (0: each server's default:
        none for slapd, 60 s for numadir)."""
        options = {"write_timeout_s": write_timeout_s} if write_timeout_s else {}
        if self.args.provider == "slapd":
            ldif = os.path.join(self.work, f"users-{users}{'-r' if replicator else ''}.ldif")
            if not os.path.exists(ldif):
                generate(self.args.gen, users, ldif)
                if replicator:
                    with open(ldif, "a") as stream:
                        stream.write("\n" + REPLICATOR_LDIF)
            return SlapdProvider(ldif, sessionlog, queue_changes, replicator, **options)
        return NumadirProvider(self.args.numadir, self.args.gen, users, sessionlog,
                               queue_changes, replicator, **options)

    def consumer(self, p, **options):
        return SlapdConsumer(self.work, p.url, **options)


def ldif_modify(url: str, text: str):
    result = subprocess.run(["ldapmodify", "-x", "-H", url, "-D", ROOT_DN, "-w", ROOT_PW],
                            input=text, capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, LDAPNOINIT="1"))
    check(result.returncode == 0, "ldapmodify on the provider",
          f"rc {result.returncode}: {result.stderr}")


def check_initial_refresh_and_each_change(c: Context):
    import ldap
    with c.provider(BIG_USERS) as p, c.consumer(p) as s:
        entries = converged(p, s, f"initial refresh of {BIG_USERS} users", timeout=240)
        # The comparison covers the operational attributes: every entry has them.
        operational = {"entryuuid", "entrycsn", "createtimestamp", "modifytimestamp",
                       "creatorsname", "modifiersname", "structuralobjectclass"}
        lacking = [dn for dn, attributes in entries.items() if operational - set(attributes)]
        check(len(entries) > BIG_USERS and not lacking,
              f"every entry compared has {', '.join(sorted(operational))}",
              f"{len(lacking)} lack some, e.g. {lacking[:1]}: "
              f"{entries[lacking[0]] if lacking else ''}")

        disconnect_mid_refresh(p, entries)

        def step(what: str, action):
            action()
            converged(p, s, what)
        conn = connect(p.url)
        step("an add", lambda: conn.add_s(f"uid=newuser,{PEOPLE}", [
            ("objectClass", [b"inetOrgPerson"]), ("uid", [b"newuser"]), ("cn", [b"New User"]),
            ("sn", [b"User"]), ("userPassword", [b"fresh"])]))
        user = f"uid=user5,{PEOPLE}"
        step("modify: add values", lambda: conn.modify_s(
            user, [(ldap.MOD_ADD, "description", [b"one", b"two", b"three"])]))
        step("modify: delete values", lambda: conn.modify_s(
            user, [(ldap.MOD_DELETE, "description", [b"one", b"three"])]))
        step("modify: delete an attribute", lambda: conn.modify_s(
            user, [(ldap.MOD_DELETE, "mail", None)]))
        step("modify: replace", lambda: conn.modify_s(
            user, [(ldap.MOD_REPLACE, "sn", [b"Replaced"])]))
        step("modify: increment (uidNumber)", lambda: conn.modify_s(
            user, [(ldap.MOD_INCREMENT, "uidNumber", [b"5"])]))
        step("modify: several kinds in one request", lambda: ldif_modify(p.url, f"""\
dn: uid=user1,{PEOPLE}
changetype: modify
replace: sn
sn: Again
-
add: mail
mail: second@example.com
-
delete: givenName
"""))
        step("a delete", lambda: conn.delete_s(f"uid=user2,{PEOPLE}"))
        step("ModifyDN, deleteoldrdn true", lambda: conn.rename_s(
            f"uid=user3,{PEOPLE}", "uid=user3renamed", delold=1))
        step("ModifyDN, deleteoldrdn false", lambda: conn.rename_s(
            f"uid=user9,{PEOPLE}", "uid=user9kept", delold=0))

        def new_superior():
            conn.add_s(f"ou=moved,{SUFFIX}", [("objectClass", [b"organizationalUnit"]),
                                               ("ou", [b"moved"])])
            conn.rename_s(f"uid=user4,{PEOPLE}", "uid=user4", newsuperior=f"ou=moved,{SUFFIX}",
                          delold=1)
        step("ModifyDN with newSuperior", new_superior)

        def subtree():
            conn.add_s(f"ou=tree,{SUFFIX}", [("objectClass", [b"organizationalUnit"]),
                                              ("ou", [b"tree"])])
            conn.add_s(f"ou=leaf,ou=tree,{SUFFIX}", [("objectClass", [b"organizationalUnit"]),
                                                      ("ou", [b"leaf"])])
            conn.add_s(f"uid=treeuser,ou=leaf,ou=tree,{SUFFIX}", [
                ("objectClass", [b"account"]), ("uid", [b"treeuser"])])
        step("a subtree (ou=tree, ou=leaf, uid=treeuser) added", subtree)
        step("a subtree move (ou=tree under ou=moved)", lambda: conn.rename_s(
            f"ou=tree,{SUFFIX}", "ou=tree", newsuperior=f"ou=moved,{SUFFIX}", delold=0))
        after = dump(s.url)
        check(f"uid=treeuser,ou=leaf,ou=tree,ou=moved,{SUFFIX}".lower() in after and
              f"ou=tree,{SUFFIX}".lower() not in after,
              "the consumer has the subtree under its new parent and none under the old")

        def password_modify():
            result = subprocess.run(["ldappasswd", "-x", "-H", p.url, "-D", ROOT_DN, "-w",
                                     ROOT_PW, "-s", "changed-by-exop", f"uid=user6,{PEOPLE}"],
                                    capture_output=True, text=True, timeout=30,
                                    env=dict(os.environ, LDAPNOINIT="1"))
            check(result.returncode == 0, "ldappasswd on the provider", result.stderr)
        step("Password Modify (ldappasswd)", password_modify)
        conn.unbind_s()
        whoami = subprocess.run(["ldapwhoami", "-x", "-H", s.url, "-D", f"uid=user6,{PEOPLE}",
                                 "-w", "changed-by-exop"], capture_output=True, text=True,
                                timeout=30, env=dict(os.environ, LDAPNOINIT="1"))
        stored = dump(s.url)[f"uid=user6,{PEOPLE}".lower()]["userpassword"]
        check(whoami.returncode == 0, "the password set on the provider binds on the consumer",
              f"{whoami.stderr.strip()}; stored {[v[:10] for v in stored]}...")
        # A write on the consumer is referred to the provider (its updateref line).
        refused = subprocess.run(["ldapmodify", "-x", "-H", s.url, "-D", ROOT_DN, "-w",
                                  ROOT_PW], input=f"dn: uid=user7,{PEOPLE}\nchangetype: modify"
                                 "\nreplace: sn\nsn: Local\n", capture_output=True, text=True,
                                 timeout=30, env=dict(os.environ, LDAPNOINIT="1"))
        check(refused.returncode == 10 and p.url in refused.stdout + refused.stderr,
              "a write on the consumer gets a referral to the provider",
              f"rc {refused.returncode}: {refused.stdout} {refused.stderr}")


def check_replication_identity(c: Context):
    """A slapd consumer bound as REPLICATOR (not the rootdn), with the access rules and limits
    it needs: the consumer equals the provider, userPassword included; a sync search by a user,
    whom the rules let read all but others' userPassword, gets entries without it."""
    import ldap
    import ldap.syncrepl
    with c.provider(USERS, replicator=True) as p, \
            c.consumer(p, binddn=REPLICATOR, credentials=REPLICATOR_PW) as s:
        entries = converged(p, s, f"a consumer bound as {REPLICATOR}")
        with_password = sum(1 for e in entries.values() if "userpassword" in e)
        check(with_password > USERS, "the consumer's copy has the users' userPassword",
              f"{with_password} entries with one")
        user = ldap.initialize(p.url)
        user.simple_bind_s(f"uid=user7,{PEOPLE}", "password7")
        found = user.search_ext_s(PEOPLE, ldap.SCOPE_SUBTREE, "(uid=user1*)", ["*", "+"],
                                  serverctrls=[ldap.syncrepl.SyncRequestControl(
                                      criticality=True, mode="refreshOnly")])
        user.unbind_s()
        found = [(dn, {k.lower(): v for k, v in a.items()}) for dn, a in found if dn]
        leaked = [dn for dn, a in found if "userpassword" in a]
        check(len(found) == 111 and not leaked and all("entryuuid" in a for _, a in found),
              "a sync search by a user: the entries it may read, without others' userPassword",
              f"{len(found)} entries, {len(leaked)} with userPassword")


def writes_while_away(url: str, deletes: range) -> set:
    """Adds, modifies, renames and deletes. Returns: the DNs deleted or renamed away."""
    import ldap
    conn = connect(url)
    gone = set()
    for n in deletes:
        conn.delete_s(f"uid=user{n},{PEOPLE}")
        gone.add(f"uid=user{n},{PEOPLE}".lower())
    for n in range(5):
        conn.add_s(f"uid=away{n},{PEOPLE}", [("objectClass", [b"account"]),
                                              ("uid", [f"away{n}".encode()])])
        conn.modify_s(f"uid=user{100 + n},{PEOPLE}",
                      [(ldap.MOD_REPLACE, "sn", [b"WhileAway"])])
    conn.rename_s(f"uid=user110,{PEOPLE}", "uid=renamed110", delold=1)
    gone.add(f"uid=user110,{PEOPLE}".lower())
    conn.delete_s(f"uid=away0,{PEOPLE}")  # Added and deleted while the consumer was away.
    gone.add(f"uid=away0,{PEOPLE}".lower())
    conn.unbind_s()
    return gone


def check_consumer_down(c: Context):
    # 10 deletes, 5 adds, 5 modifies, a rename and a delete of an entry added meanwhile: 22
    # changes.
    for sessionlog, covered in ((1000, True), (5, False)):
        what = ("a session log covering the gap" if covered else
                "a session log of 5 changes, fewer than the gap (present phase)")
        with c.provider(USERS, sessionlog=sessionlog) as p:
            s = c.consumer(p)
            with s:
                before = converged(p, s, f"{what}: before the consumer stops")
                cookie_csn = context_csn(s.url)
                s.stop_now()
                gone = writes_while_away(p.url, range(10, 20))
                probe_refresh(p, before, cookie_csn, gone, covered, what)
                s.start_again()
                after = converged(p, s, f"{what}: the consumer back")
                on_consumer = dump(s.url)
                check(not (gone & set(on_consumer)) and not (gone & set(after)),
                      f"{what}: the {len(gone)} entries deleted or renamed away are gone on "
                      "the consumer", str(sorted(gone & set(on_consumer))))


def check_refresh_only(c: Context):
    """A refreshOnly consumer (a refresh every second): its first refresh, then a delete, a
    modify, an add and a rename, one interval later."""
    import ldap
    with c.provider(USERS) as p, c.consumer(p, kind="refreshOnly") as s:
        converged(p, s, "refreshOnly: the first refresh")
        conn = connect(p.url)
        conn.delete_s(f"uid=user30,{PEOPLE}")
        conn.modify_s(f"uid=user31,{PEOPLE}", [(ldap.MOD_REPLACE, "sn", [b"Polled"])])
        conn.add_s(f"uid=polled,{PEOPLE}", [("objectClass", [b"account"]),
                                             ("uid", [b"polled"])])
        conn.rename_s(f"uid=user32,{PEOPLE}", "uid=user32polled", delold=1)
        conn.unbind_s()
        converged(p, s, "refreshOnly: a delete, a modify, an add and a rename, polled")


def probe_refresh(p, before: dict, cookie_csn: list, gone: set, covered: bool, what: str):
    """What the provider sends a consumer holding `before` (with the cookie the consumer had,
    its contextCSN `cookie_csn`), as a raw refreshOnly search: with the gap covered by the
    session log, the changed entries only and the deleted ones' entryUUIDs (a syncIdSet with
    refreshDeletes TRUE, or Sync State delete); otherwise a present phase (Sync Done
    refreshDeletes FALSE), which names every entry still there and none of those deleted."""
    now = dump(p.url)
    deleted = {uuid_bytes(before[dn]["entryuuid"][0]) for dn in gone if dn in before}
    deleted = {uuid for uuid in deleted
               if uuid not in {uuid_bytes(e["entryuuid"][0]) for e in now.values()}}
    remaining = {uuid_bytes(e["entryuuid"][0]) for e in now.values()}
    cookie = f"rid=002,csn={cookie_csn[0]}".encode()
    outcome = run_sync_search(p.port, sync_request_value(REFRESH_ONLY, cookie))
    check_equal(outcome.code, 0, f"{what}: a refreshOnly search with the consumer's cookie")
    sent = {uuid for state, uuid in outcome.states if state in (0, 1, 2)}
    named_deleted = {uuid for state, uuid in outcome.states if state == 3}
    named_present = set(sent)
    for refresh_deletes, uuids in outcome.id_sets:
        (named_deleted if refresh_deletes else named_present).update(uuids)
    detail = (f"{outcome.entries} entries, {len(outcome.id_sets)} syncIdSets "
              f"({sum(len(u) for _, u in outcome.id_sets)} UUIDs), Sync Done refreshDeletes "
              f"{outcome.done_refresh_deletes}")
    if covered:
        check(outcome.done_refresh_deletes and deleted <= named_deleted and
              not (named_deleted & remaining) and 0 < outcome.entries < 20,
              f"{what}: only the changed entries and the {len(deleted)} deleted entryUUIDs are "
              "sent (delete phase)", detail + f"; deleted named {len(deleted & named_deleted)}"
              f" of {len(deleted)}")
    else:
        check(not outcome.done_refresh_deletes and remaining <= named_present and
              not (deleted & named_present),
              f"{what}: a present phase names each of the {len(remaining)} entries and none "
              "of those deleted", detail + f"; named present {len(named_present & remaining)}"
              f" of {len(remaining)}, deleted named present {len(deleted & named_present)}")
    print(f"  {what}: {detail}", flush=True)


def check_kill_provider_mid_stream(c: Context):
    import ldap
    with c.provider(USERS) as p, c.consumer(p) as s:
        converged(p, s, "before the stream of adds")
        sent, acknowledged = [], []
        ended = []

        def stream():
            conn = connect(p.url)
            n = 0
            try:
                while True:
                    dn = f"uid=stream{n},{PEOPLE}"
                    sent.append(dn.lower())
                    conn.add_s(dn, [("objectClass", [b"account"]),
                                    ("uid", [f"stream{n}".encode()])])
                    acknowledged.append(dn.lower())
                    n += 1
            except ldap.LDAPError as error:
                ended.append(error)
        writer = threading.Thread(target=stream, daemon=True)
        writer.start()
        check(wait_for(lambda: len(acknowledged) >= 150, timeout=60, interval=0.005),
              "the client's adds are acknowledged", f"{len(acknowledged)} of 150")
        p.kill9()
        writer.join(timeout=30)
        check(not writer.is_alive() and ended, "the client's stream ended with the provider",
              str(ended))
        print(f"  killed the provider after {len(acknowledged)} acknowledged adds, "
              f"{len(sent)} sent; the client saw {type(ended[0]).__name__}", flush=True)
        p.restart()
        on_provider = dump(p.url)
        stored = {dn for dn in on_provider if dn.startswith("uid=stream")}
        lost = set(acknowledged) - stored
        check(not lost, "the restarted provider holds every acknowledged add",
              f"{len(lost)} lost: {sorted(lost)[:5]}")
        never_sent = stored - set(sent)
        check(not never_sent, "the provider holds no add the client never sent",
              str(sorted(never_sent)[:5]))
        # The provider's contextCSN must cover every entry it holds: numadir advances it in
        # the transaction of each write. slapd's syncprov does not: after a kill -9 it starts
        # from the contextCSN it last checkpointed (syncprov-checkpoint 100 1), older than the
        # adds after that checkpoint, until its next write; slapd is only shown here, and
        # converges after one more write below.
        csn, newest = context_csn(p.url), newest_entry_csn(on_provider)
        if p.name == "slapd":
            print(f"  slapd after kill -9: contextCSN {csn}, newest entryCSN {newest}", flush=True)
        else:
            converged(p, s, "the consumer after the provider's kill -9 and restart", timeout=90)
        root = connect(p.url)
        root.modify_s(f"uid=user12,{PEOPLE}", [(ldap.MOD_REPLACE, "sn", [b"AfterRestart"])])
        root.unbind_s()
        converged(p, s, "the consumer after the provider's restart and one more write",
                  timeout=90)


def still_serves(p, what: str, deadline_s: float = 10):
    """A bind as a user, a search and a write on the provider, each within `deadline_s`."""
    import ldap
    started = time.monotonic()
    conn = ldap.initialize(p.url)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, deadline_s)
    conn.set_option(ldap.OPT_TIMEOUT, deadline_s)
    conn.simple_bind_s(f"uid=user7,{PEOPLE}", "password7")
    found = conn.search_s(PEOPLE, ldap.SCOPE_SUBTREE, "(uid=user8)", ["1.1"])
    conn.unbind_s()
    root = connect(p.url)
    root.modify_s(f"uid=user8,{PEOPLE}", [(ldap.MOD_REPLACE, "description",
                                           [f"after {what}".encode()])])
    root.unbind_s()
    took = time.monotonic() - started
    check(len(found) == 1 and took < deadline_s,
          f"after {what}: the provider still binds, searches and writes", f"{took:.2f} s")


def current_cookie_csn(p) -> str:
    csns = context_csn(p.url)
    check(len(csns) == 1, "the provider has one contextCSN", str(csns))
    return csns[0]


def disconnect_mid_refresh(p, entries: dict):
    """Step 6's consumer that disconnects (a reset) in the middle of its refresh, here where the
    refresh (10,000 users) is larger than the most a socket's send buffer can hold, so the
    provider is still sending when the connection goes."""
    with open("/proc/sys/net/ipv4/tcp_wmem") as stream:
        send_buffer_max = int(stream.read().split()[2])
    # A lower bound of the refresh's size on the wire: each DN, attribute name and value once.
    refresh_bytes = sum(len(dn) + sum(len(name) + sum(len(v) for v in values)
                                      for name, values in e.items())
                        for dn, e in entries.items())
    check(refresh_bytes > send_buffer_max + 65536,
          "the refresh is larger than the provider's socket can buffer",
          f"at least {refresh_bytes} bytes, tcp_wmem max {send_buffer_max}")
    client = RawClient(p.port, receive_buffer=4096)
    check_equal(client.bind(), 0, "raw bind as the rootdn")
    message_id = client.sync_search(control(SYNC_REQUEST, True,
                                            sync_request_value(REFRESH_AND_PERSIST)))
    first = client.read()
    check(first is not None and first[0] == message_id and first[1] == 0x64,
          "a consumer's refresh began", str(first and first[:2]))
    client.close(reset=True)
    still_serves(p, "a consumer that reset its connection mid-refresh")


def bad_control_values(p, state):
    # A Sync Request control value that is not BER, one with an unknown mode, one without a
    # mode, none at all (critical): slapd's syncprov_parseCtrl answers protocolError (2), "Sync
    # control : mode decoding error" / "unknown update mode" / "unknown update mode" / "Sync
    # control value is absent".
    for value, what in ((b"\xff\x03abc", "a control value that is not BER"),
                        (ber(0x30, ber(0x0A, b"\x07")), "an unknown mode (7)"),
                        (ber(0x30, ber(0x04, b"x")), "no mode"),
                        (None, "no control value")):
        outcome = run_sync_search(p.port, value)
        check_equal(outcome.code, 2, f"{what}: protocolError ({outcome.text!r})")
        still_serves(p, what)
    # An element after the cookie that is no reloadHint: slapd's lber does not look past the
    # elements it knows and serves the search (0); refusing it (2) is as clear. Either way a
    # result, and the provider goes on.
    outcome = run_sync_search(p.port, ber(0x30, ber(0x0A, b"\x01") + ber(0x04, b"x") +
                                          ber(0x02, b"\x01")))
    check(outcome.code in (0, 2), "a trailing element: success or protocolError",
          f"result {outcome.code} {outcome.text!r}")
    still_serves(p, "a trailing element")


def cookie_that_does_not_parse(p, state):
    # slapd ignores a cookie it cannot parse ("If parse fails, pretend no cookie was sent",
    # syncprov_parseCtrl) and serves a full refresh, success. numadir refuses it with
    # protocolError (2), as docs/replication.md says: each provider's own answer is checked.
    outcome = run_sync_search(p.port, sync_request_value(REFRESH_ONLY, b"not a cookie"))
    if p.name == "slapd":
        check(outcome.code == 0 and outcome.entries == state["total"],
              "a cookie that does not parse: a full refresh, success",
              f"result {outcome.code} {outcome.text!r}, {outcome.entries} of {state['total']} "
              "entries")
    else:
        check(outcome.code == 2 and outcome.entries == 0 and "cookie" in outcome.text,
              "a cookie that does not parse: protocolError naming the cookie, no entries",
              f"result {outcome.code} {outcome.text!r}, {outcome.entries} entries")
    still_serves(p, "a cookie that does not parse")


def cookie_with_unknown_rid(p, state):
    # A rid the provider never saw, one write behind: the provider keeps no state per rid
    # (syncprov neither) and serves it as any consumer: slapd sends the one changed entry (the
    # session log covers it), success, and echoes the rid in the Sync Done cookie
    # (rid=999,csn=<its contextCSN>).
    import ldap
    csn = current_cookie_csn(p)
    root = connect(p.url)
    root.modify_s(f"uid=user11,{PEOPLE}", [(ldap.MOD_REPLACE, "sn", [b"OneBehind"])])
    root.unbind_s()
    outcome = run_sync_search(p.port, sync_request_value(
        REFRESH_ONLY, f"rid=999,sid={state['sid']},csn={csn}".encode()))
    check(outcome.code == 0 and 1 <= outcome.entries < state["total"],
          "a cookie with an unknown rid, one write behind: success, the changed entry only",
          f"result {outcome.code} {outcome.text!r}, {outcome.entries} of {state['total']} "
          "entries")
    csn = current_cookie_csn(p)
    check(outcome.done_cookie is not None and
          re.match(r"rid=999,", outcome.done_cookie) is not None and
          outcome.done_cookie.endswith(f"csn={csn}"),
          "the Sync Done cookie carries the consumer's rid and the provider's contextCSN",
          f"{outcome.done_cookie}, contextCSN {csn}")
    if p.name == "numadir":  # slapd leaves the sid out with its serverID 0.
        check(outcome.done_cookie.startswith(f"rid=999,sid={NUMADIR_SERVER_ID:03x},csn="),
              "numadir's cookie names its server_id: rid=999,sid=001,csn=...",
              outcome.done_cookie)
    still_serves(p, "a cookie with an unknown rid")


def csn_from_the_future(p, state):
    # With the provider's serverID: slapd answers unwillingToPerform (53), "consumer state is
    # newer than provider!" (syncprov_op_search), no entries.
    future = f"29991231235959.999999Z#000000#{state['sid']}#000000"
    outcome = run_sync_search(p.port, sync_request_value(
        REFRESH_ONLY, f"rid=001,sid={state['sid']},csn={future}".encode()))
    check(outcome.code == 53 and outcome.entries == 0,
          "a CSN from the future: unwillingToPerform, no entries",
          f"result {outcome.code} {outcome.text!r}, {outcome.entries} entries")
    still_serves(p, "a CSN from the future")


def consumers_that_do_not_read(p, state):
    """One consumer never reads at all (its refresh fits the socket buffers, so it is in its
    persist phase too), one stops reading after its refresh. Each write carries a 64 KiB value:
    600 of them queued for one consumer would be 38 MiB."""
    import ldap
    stuck = RawClient(p.port, receive_buffer=4096)
    check_equal(stuck.bind(), 0, "raw bind (the consumer that never reads)")
    stuck.sync_search(control(SYNC_REQUEST, True, sync_request_value(REFRESH_AND_PERSIST)))
    lagging = RawClient(p.port, receive_buffer=4096)
    check_equal(lagging.bind(), 0, "raw bind (the consumer that stops reading)")
    lagging_id = lagging.sync_search(control(SYNC_REQUEST, True,
                                             sync_request_value(REFRESH_AND_PERSIST)))
    last_cookie = None
    while True:
        message = lagging.read()
        if message is None:
            fail("the consumer that stops reading: the connection closed in its refresh")
        last_cookie = message_cookie(message) or last_cookie
        if message[1] == 0x79 or message[1] == 0x65:
            break
    check(last_cookie is not None, "the refresh's end carries a cookie")
    baseline = anon_rss_kib(p.process.pid)
    big = b"x" * 65536
    conn = connect(p.url)
    slowest_write = slowest_bind = 0.0
    peak = baseline
    for n in range(600):
        started = time.monotonic()
        conn.modify_s(f"uid=user{20 + n % 50},{PEOPLE}",
                      [(ldap.MOD_REPLACE, "description", [big + str(n).encode()])])
        slowest_write = max(slowest_write, time.monotonic() - started)
        if n % 50 == 0:
            started = time.monotonic()
            user = ldap.initialize(p.url)
            user.simple_bind_s(f"uid=user{n % 10},{PEOPLE}", f"password{n % 10}")
            user.unbind_s()
            slowest_bind = max(slowest_bind, time.monotonic() - started)
            peak = max(peak, anon_rss_kib(p.process.pid))
    conn.unbind_s()
    peak = max(peak, anon_rss_kib(p.process.pid))
    grown_mib = (peak - baseline) / 1024
    print(f"  {p.name}: slowest write {slowest_write * 1000:.0f} ms, slowest bind "
          f"{slowest_bind * 1000:.0f} ms, anonymous memory {baseline // 1024} MiB -> peak "
          f"{peak // 1024} MiB (+{grown_mib:.1f} MiB)", flush=True)
    # A provider that waited for its consumers would stop here for good; 5 s is for a machine
    # loaded by other tests (each takes a few ms alone).
    check(slowest_write < 5 and slowest_bind < 5,
          "writes and binds go on while two consumers do not read (each under 5 s)",
          f"slowest write {slowest_write:.2f} s, bind {slowest_bind:.2f} s")
    if p.name == "numadir":
        # The bound (docs/replication.md): per consumer, queue_changes (64) change records of
        # ~300 bytes (the entry is read when sent) plus the connection's output bound
        # (limits.max_output_bytes, 1 MiB) plus the entry being encoded (65 KiB): ~1.1 MiB;
        # 12 MiB for the two leaves room for the allocator. Queueing the changed entries would
        # be 77 MiB: slapd's syncprov does (+75 MiB here), so for slapd the figure is printed,
        # not asserted.
        # (Under ASan the allocator's quarantine keeps what is freed, up to 256 MiB: there the
        # figure says nothing of the queues, and is only printed.)
        if sanitized(p.numadir):
            print(f"  a sanitized build: +{grown_mib:.1f} MiB, not checked", flush=True)
        else:
            check(grown_mib < 12, "the provider's anonymous memory grew by less than 12 MiB "
                                  "with two consumers not reading 600 changes of 64 KiB",
                  f"+{grown_mib:.1f} MiB")
        # The lagging consumer fell behind its queue: numadir ends its search with busy (51),
        # resumable by its cookie. Read what is there until the end.
        code = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = lagging.read(timeout=max(0.1, deadline - time.monotonic()))
            if message is None:
                break
            last_cookie = message_cookie(message) or last_cookie
            if message[0] == lagging_id and message[1] == 0x65:
                code = result_code(message[2])
                break
        check_equal(code, 51, "the consumer that fell behind its queue is ended with busy")
        # Resumed by its last cookie: the users modified since, no more (the session log
        # covers them).
        outcome = run_sync_search(p.port, sync_request_value(REFRESH_ONLY,
                                                             last_cookie.encode()))
        check(outcome.code == 0 and outcome.entries <= 50,
              "the consumer ended with busy resumes from its last cookie",
              f"cookie {last_cookie}: result {outcome.code} {outcome.text!r}, "
              f"{outcome.entries} entries")
    stuck.close()
    lagging.close()
    still_serves(p, "two consumers that did not read")


def provider_side_state(provider_port: int, client_port: int) -> str:
    """The TCP state of the provider's end of the connection from `client_port`, from
    /proc/net/tcp ("01" ESTABLISHED, "04" FIN_WAIT1: closed by the provider with output still
    unsent, which a client that does not read never sees; "" gone)."""
    with open("/proc/net/tcp") as stream:
        for line in stream.readlines()[1:]:
            fields = line.split()
            local, remote, state = fields[1], fields[2], fields[3]
            if int(local.split(":")[1], 16) == provider_port and \
                    int(remote.split(":")[1], 16) == client_port:
                return state
    return ""


def check_never_reads_closed(c: Context):
    """A consumer that never reads, with a write timeout of 2 s on the provider (numadir's
    limits.write_timeout, slapd's writetimeout): once its output is blocked that long numadir
    closes its connection (docs/replication.md), while writes go on."""
    import ldap
    with c.provider(USERS, write_timeout_s=2) as p:
        stuck = RawClient(p.port, receive_buffer=4096)
        check_equal(stuck.bind(), 0, "raw bind (the consumer that never reads)")
        stuck.sync_search(control(SYNC_REQUEST, True, sync_request_value(REFRESH_AND_PERSIST)))
        conn = connect(p.url)
        big = b"y" * 65536
        started = time.monotonic()
        n = 0

        def closed():
            nonlocal n
            # Changes keep coming, so the consumer's output stays blocked.
            conn.modify_s(f"uid=user{20 + n % 50},{PEOPLE}",
                          [(ldap.MOD_REPLACE, "description", [big + str(n).encode()])])
            n += 1
            return provider_side_state(p.port, client_port) != "01"
        client_port = stuck.sock.getsockname()[1]
        check(provider_side_state(p.port, client_port) == "01",
              "the provider's end of the consumer's connection is established")
        if p.name == "slapd":
            # slapd 2.5.13 keeps it open: its writetimeout does not reach syncprov's responses,
            # which it queues in memory (step 6's +75 MiB). Shown, not asserted.
            wait_for(closed, timeout=5, interval=0.01)
            state = provider_side_state(p.port, client_port)
            print(f"  slapd: its end of the connection is {state!r} after "
                  f"{time.monotonic() - started:.1f} s and {n} writes", flush=True)
        else:
            check(wait_for(closed, timeout=30, interval=0.01),
                  "the provider closes the connection of a consumer that never reads",
                  f"its end still {provider_side_state(p.port, client_port)!r} after {n} writes")
            print(f"  closed after {time.monotonic() - started:.1f} s and {n} writes of 64 KiB",
                  flush=True)
        conn.unbind_s()
        stuck.close()
        still_serves(p, "a consumer closed for not reading")


def check_bad_input(c: Context):
    """Each case runs, on one provider; the failures are reported together."""
    with c.provider(USERS, queue_changes=64) as p:
        csn = current_cookie_csn(p)
        state = {"total": len(dump(p.url)), "sid": csn.split("#")[2]}
        failures = []
        for function in (bad_control_values, cookie_that_does_not_parse,
                         cookie_with_unknown_rid, csn_from_the_future,
                         consumers_that_do_not_read):
            try:
                function(p, state)
            except CheckFailed as error:
                print(f"  FAIL: {function.__name__}: {error}", flush=True)
                failures.append(f"{function.__name__}: {error}")
                still_serves(p, f"the failed {function.__name__}")
        if failures:
            fail("; ".join(failures))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--numadir", required=True)
    parser.add_argument("--gen", required=True)
    parser.add_argument("--bin-dir", default="")
    parser.add_argument("--provider", choices=("numadir", "slapd"), default="numadir")
    parser.add_argument("--only", default="", help="run only the steps whose title has this")
    parser.add_argument("--keep-going", action="store_true")
    args = parser.parse_args()
    missing = slapd_harness.available()
    if missing:
        print(f"sync provider slapd: {missing}")
        return 1
    c = Context(args)
    print(f"sync provider slapd: the provider is {args.provider}", flush=True)
    steps = [
        ("1. initial refresh of 10,000 users, then each kind of change",
         lambda: check_initial_refresh_and_each_change(c)),
        ("1. a replication identity that is not the rootdn",
         lambda: check_replication_identity(c)),
        ("2. the consumer down while the provider takes writes", lambda: check_consumer_down(c)),
        ("2. a refreshOnly consumer", lambda: check_refresh_only(c)),
        ("3. kill -9 of the provider mid-stream", lambda: check_kill_provider_mid_stream(c)),
        ("6. bad input", lambda: check_bad_input(c)),
        ("6. a consumer that never reads is closed after the write timeout",
         lambda: check_never_reads_closed(c)),
    ]
    steps = [s for s in steps if args.only in s[0]]
    started = time.monotonic()
    try:
        return run_checks(f"sync provider slapd ({args.provider})", steps,
                          keep_going=args.keep_going)
    finally:
        print(f"sync provider slapd: {time.monotonic() - started:.0f} s", flush=True)
        shutil.rmtree(c.work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
