#!/usr/bin/python3
"""numadir driven by python3-ldap (libldap underneath): binds, searches, paged results,
compare, updates, extended operations, asynchronous and abandoned operations, and the
connection rules of RFC 4511 checked over raw sockets (a malformed PDU gets a Notice of
Disconnection and a close while other connections carry on; a client vanishing mid-search
leaves the server serving).

  python_ldap_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 when every check passes; otherwise 1 with the first failing check (observed vs expected).
"""
import os
import socket
import struct
import sys

import ldap  # python3-ldap
import ldap.modlist
from ldap.controls import RequestControl, SimplePagedResultsControl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    NOTICE_OF_DISCONNECTION, PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, NumadirServer, ber,
    ber_int, check, check_equal, fail, parse_args,
    ber_children, parse_extended_response, read_ldap_message, run_suite,
    search_request, ssha, user_dn, user_pw, wait_for, wait_for_close)

USERS = 1000
TEST = f"ou=pytest,{SUFFIX}"
S = None


def connect(bind=None) -> "ldap.ldapobject.LDAPObject":
    conn = ldap.initialize(S.url, bytes_mode=False)
    conn.protocol_version = 3
    conn.set_option(ldap.OPT_REFERRALS, 0)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    conn.set_option(ldap.OPT_TIMEOUT, 30)
    if bind == "root":
        conn.simple_bind_s(ROOT_DN, ROOT_PW)
    elif bind is not None:
        conn.simple_bind_s(*bind)
    return conn


def expect_error(error_class, function, *args, what, **kwargs):
    """Calls function; checks that it raises error_class. Returns the exception's dict."""
    try:
        function(*args, **kwargs)
    except error_class as error:
        info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
        check(True, f"{what}: {error_class.__name__} ({info.get('result')})")
        return info
    except ldap.LDAPError as error:
        info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
        fail(f"{what}: raised {type(error).__name__} {info.get('result')} "
             f"{info.get('desc')} {info.get('info', '')}, expected {error_class.__name__}")
    fail(f"{what}: succeeded, expected {error_class.__name__}")


def lower_dns(results):
    return sorted(dn.lower() for dn, _ in results if dn is not None)


# -- binds ---------------------------------------------------------------------------------------
def check_binds():
    conn = connect()
    check_equal(conn.whoami_s(), "", "whoami before any bind: anonymous (empty authzId)")
    conn.simple_bind_s(ROOT_DN, ROOT_PW)
    check_equal(conn.whoami_s().lower(), f"dn:{ROOT_DN}".lower(), "bind as the rootdn")
    conn.simple_bind_s(user_dn(2), user_pw(2))
    check_equal(conn.whoami_s().lower(), f"dn:{user_dn(2)}".lower(),
                "a second bind on the same connection switches the identity to user2")
    wrong = expect_error(ldap.INVALID_CREDENTIALS, conn.simple_bind_s, user_dn(2), "wrong",
                         what="bind user2 with a wrong password")
    check_equal(conn.whoami_s(), "",
                "after a failed bind the connection is anonymous (RFC 4511 4.2.1)")
    missing = expect_error(ldap.INVALID_CREDENTIALS, conn.simple_bind_s, f"uid=ghost,{PEOPLE}",
                           "wrong", what="bind as a missing DN")
    check_equal((missing.get("info"), missing.get("matched")),
                (wrong.get("info"), wrong.get("matched")),
                "missing DN and wrong password: same diagnosticMessage and matchedDN")
    expect_error(ldap.UNWILLING_TO_PERFORM, conn.simple_bind_s, user_dn(2), "",
                 what="unauthenticated bind (DN, empty password) -> 53")
    conn.simple_bind_s("", "")
    check_equal(conn.whoami_s(), "", "anonymous bind (empty DN and password)")
    conn.unbind_s()
    check(True, "unbind")
    # A bind DN that does not parse: invalidDNSyntax (34) with slapd's text, as slapd and 389-ds
    # answer; the connection stays usable and anonymous.
    conn = connect()
    for name in ("not a dn", f"uid=user3,people,{SUFFIX}", f"noSuchType=x,{SUFFIX}"):
        error = expect_error(ldap.INVALID_DN_SYNTAX, conn.simple_bind_s, name, "x",
                             what=f"bind with the malformed DN {name!r} -> invalidDNSyntax (34)")
        check_equal(error.get("info"), "invalid DN", "with slapd's diagnosticMessage")
        check_equal(conn.whoami_s(), "", "and the connection is anonymous after it")
    conn.simple_bind_s(user_dn(3), user_pw(3))
    check_equal(conn.whoami_s().lower(), f"dn:{user_dn(3)}",
                "a bind after a malformed-DN bind works on the same connection")
    conn.unbind_s()


def bind_request(message_id, dn, choice_tag, credentials, version=3):
    """An LDAPMessage with a BindRequest whose AuthenticationChoice has tag `choice_tag`."""
    body = ber_int(0x02, version) + ber(0x04, dn.encode()) + ber(choice_tag, credentials)
    return ber(0x30, ber_int(0x02, message_id) + ber(0x60, body))


def check_unsupported_bind_methods():
    """RFC 4511 4.2: the AuthenticationChoice is extensible. A choice numadir does not implement
    ([1] and [2], the retired Kerberos v4 ones, or any other context tag) gets a BindResponse
    with authMethodNotSupported (7) and the connection goes on, as with slapd. python-ldap
    cannot send these: raw PDUs."""
    for tag, what in ((0x81, "[1] krbv42LDAP"), (0x82, "[2] krbv42DSA"),
                      (0xA9, "[9] constructed"), (0x9E, "[30] primitive")):
        with S.connect_raw() as sock:
            sock.sendall(bind_request(4, "", tag, b"\x04\x01x" if tag & 0x20 else b"ticket"))
            buffer = bytearray()
            answer = read_ldap_message(sock, buffer, timeout=10)
            if answer is None:
                fail(f"bind with choice {what}: the connection closed without an answer")
            message_id, op, content, raw = answer
            check((message_id, op) == (4, 0x61), f"bind with choice {what}: a BindResponse to "
                  "message 4", f"messageID {message_id}, tag {op:#x}, bytes {raw.hex()}")
            children = ber_children(content)
            check_equal((int.from_bytes(children[0][1], "big"), children[2][1]),
                        (7, b"unknown authentication method"),
                        f"bind with choice {what}: authMethodNotSupported (7), slapd's text")
            sock.sendall(simple_bind_request(5, user_dn(4), user_pw(4)))
            answer = read_ldap_message(sock, buffer, timeout=10)
            check(answer is not None and answer[0] == 5 and
                  ber_children(answer[2])[0][1] == b"\x00",
                  "and a simple bind on the same connection then succeeds",
                  f"{answer[3].hex() if answer else 'closed'}")
    # A universal tag is no AuthenticationChoice at all: a malformed PDU.
    with S.connect_raw() as sock:
        sock.sendall(bind_request(4, "", 0x04, b"secret"))
        expect_notice(sock, "a BindRequest with a universal OCTET STRING as its choice")


# -- searches ------------------------------------------------------------------------------------
def check_searches():
    conn = connect()
    results = conn.search_s(PEOPLE, ldap.SCOPE_BASE, "(objectClass=*)", ["ou"])
    check_equal(results, [(PEOPLE, {"ou": [b"people"]})], "base search on ou=people")
    results = conn.search_s(SUFFIX, ldap.SCOPE_ONELEVEL, "(objectClass=*)", ["1.1"])
    check_equal(lower_dns(results), sorted([f"ou=groups,{SUFFIX}", PEOPLE]),
                "one-level search under the suffix")
    results = conn.search_s(SUFFIX, ldap.SCOPE_SUBTREE,
                            "(&(objectClass=posixAccount)(|(uid=user1)(uid=user2))"
                            "(!(uid=user2)))", ["uid", "uidNumber"])
    check_equal(results, [(user_dn(1), {"uid": [b"user1"], "uidNumber": [b"10001"]})],
                "sub search with AND/OR/NOT and two attributes")
    results = conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(&(uidNumber>=10990)(cn=User 99*))",
                            ["cn"])
    check_equal(lower_dns(results), sorted(user_dn(n) for n in range(990, 1000)),
                "ordering and substring filter")
    results = conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(sn~=Wilson)", ["sn"])
    check_equal(len(results), len(range(5, 1000, 15)), "approx filter (sn~=Wilson)")
    results = conn.search_st(user_dn(4), ldap.SCOPE_BASE, "(objectClass=*)", ["cn", "mail"],
                             attrsonly=1, timeout=10)
    check_equal(results, [(user_dn(4), {"cn": [], "mail": []})], "attrsonly: types, no values")
    results = conn.search_s(user_dn(4), ldap.SCOPE_BASE, "(objectClass=*)", ["+"])
    check("entryUUID" in results[0][1] and "cn" not in results[0][1],
          "'+' returns operational attributes only", f"observed {sorted(results[0][1])}")
    results = conn.search_s(user_dn(4), ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"])
    check_equal(results, [(user_dn(4), {})], "'1.1' returns no attributes")
    results = conn.search_s(user_dn(4), ldap.SCOPE_BASE, "(objectClass=*)", ["*"])
    check("userPassword" not in results[0][1] and "cn" in results[0][1],
          "'*' returns user attributes without userPassword", f"{sorted(results[0][1])}")

    info = expect_error(ldap.NO_SUCH_OBJECT, conn.search_s, f"uid=ghost,{PEOPLE}",
                        ldap.SCOPE_BASE, what="search a missing base -> 32")
    check_equal(info.get("matched", "").lower(), PEOPLE, "matchedDN is ou=people")
    try:
        conn.search_ext_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=*)", ["1.1"], sizelimit=3)
        fail("search with sizelimit 3 over 1,000 entries succeeded, expected sizeLimitExceeded")
    except ldap.SIZELIMIT_EXCEEDED:
        check(True, "client sizelimit 3: SIZELIMIT_EXCEEDED (4)")
    msgid = conn.search_ext(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=*)", ["1.1"], sizelimit=3)
    got = []
    try:
        while True:
            rtype, rdata, _, _ = conn.result3(msgid, all=0, timeout=10)
            got.extend(rdata)
            if rtype == ldap.RES_SEARCH_RESULT:
                break
    except ldap.SIZELIMIT_EXCEEDED:
        pass
    check_equal(len(got), 3, "sizelimit 3: exactly 3 entries before the result")
    try:
        conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=*)", ["1.1"])
        fail("anonymous search over 1,000 users succeeded, expected the server's size limit 500")
    except ldap.SIZELIMIT_EXCEEDED:
        check(True, "server size_limit 500 for anonymous: SIZELIMIT_EXCEEDED")

    control = RequestControl("1.2.3.4.5.6.7.8", True, b"")
    expect_error(ldap.UNAVAILABLE_CRITICAL_EXTENSION, conn.search_ext_s, user_dn(1),
                 ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"], serverctrls=[control],
                 what="unknown critical control on search -> 12")
    expect_error(ldap.UNAVAILABLE_CRITICAL_EXTENSION, conn.compare_ext_s, user_dn(1), "sn",
                 b"Jones", serverctrls=[control], what="unknown critical control on compare -> 12")
    results = conn.search_ext_s(user_dn(1), ldap.SCOPE_BASE, "(objectClass=*)", ["1.1"],
                                serverctrls=[RequestControl("1.2.3.4.5.6.7.8", False, b"")])
    check_equal(len(results), 1, "the same control not critical is ignored")
    conn.unbind_s()


def check_paged_search():
    conn = connect("root")
    seen = []
    pages = 0
    page = SimplePagedResultsControl(True, size=100, cookie="")
    while True:
        msgid = conn.search_ext(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=inetOrgPerson)",
                                ["uid"], serverctrls=[page])
        _, results, _, controls = conn.result3(msgid, timeout=30)
        pages += 1
        if len(results) > 100:
            fail(f"page {pages} had {len(results)} entries, more than the page size 100")
        seen.extend(dn.lower() for dn, _ in results)
        cookies = [c for c in controls if c.controlType == SimplePagedResultsControl.controlType]
        if not cookies:
            fail(f"page {pages}: no paged results response control")
        if not cookies[0].cookie:
            break
        page.cookie = cookies[0].cookie
        if pages > 50:
            fail("more than 50 pages for 1,000 entries")
    check_equal(len(seen), USERS, f"paged search (size 100, rootdn): {USERS} entries in all")
    check_equal(len(set(seen)), USERS, "each entry exactly once")
    check_equal(set(seen), {user_dn(n) for n in range(USERS)}, "every user")
    check(10 <= pages <= 11, f"{pages} pages of at most 100", f"{pages}")

    # Abandoning a paged search: a page of size 0 with the cookie (RFC 2696).
    page = SimplePagedResultsControl(True, size=100, cookie="")
    msgid = conn.search_ext(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=*)", ["1.1"],
                            serverctrls=[page])
    _, results, _, controls = conn.result3(msgid, timeout=30)
    cookie = [c for c in controls if c.controlType == page.controlType][0].cookie
    page = SimplePagedResultsControl(True, size=0, cookie=cookie)
    msgid = conn.search_ext(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=*)", ["1.1"],
                            serverctrls=[page])
    _, results, _, controls = conn.result3(msgid, timeout=30)
    check(results == [], "a page of size 0 with the cookie ends the paged search, no entries",
          f"{len(results)} entries")

    # Anonymous paged search with a page size under the size limit: pages of 100 as well.
    anon = connect()
    page = SimplePagedResultsControl(True, size=100, cookie="")
    msgid = anon.search_ext(PEOPLE, ldap.SCOPE_ONELEVEL, "(uid=user1*)", ["1.1"],
                            serverctrls=[page])
    _, results, _, controls = anon.result3(msgid, timeout=30)
    cookie = [c for c in controls if c.controlType == page.controlType][0].cookie
    check(len(results) == 100 and cookie, "anonymous paged (uid=user1*): first page of 100 "
          "and a cookie", f"{len(results)} entries, cookie {cookie!r}")
    page.cookie = cookie
    msgid = anon.search_ext(PEOPLE, ldap.SCOPE_ONELEVEL, "(uid=user1*)", ["1.1"],
                            serverctrls=[page])
    _, results, _, controls = anon.result3(msgid, timeout=30)
    cookie = [c for c in controls if c.controlType == page.controlType][0].cookie
    check(len(results) == 11 and not cookie, "second page: the last 11 and an empty cookie",
          f"{len(results)} entries, cookie {cookie!r}")
    anon.unbind_s()
    conn.unbind_s()


# A user whose password takes the server a good fraction of a second to verify
# ({PBKDF2-SHA512}, 500,000 iterations, over the default passwords.max_pbkdf2_iterations, which
# ABANDON_TOML raises): a bind as it keeps its connection's later requests waiting (nothing runs
# beside a bind, RFC 4511 4.2.1).
SLOW_DN = f"uid=slowhash,{PEOPLE}"
SLOW_PW = "slow password"
SLOW_ITERATIONS = 500_000


def pbkdf2_sha512(password: str, iterations: int) -> str:
    """A {PBKDF2-SHA512} userPassword value as OpenLDAP's pw-pbkdf2 writes it (ab64)."""
    import base64
    import hashlib
    salt = os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)

    def ab64(data):
        return base64.b64encode(data).decode().replace("+", ".").rstrip("=")
    return f"{{PBKDF2-SHA512}}{iterations}${ab64(salt)}${ab64(digest)}"


def add_slow_user(root):
    """Adds SLOW_DN (as the rootdn `root`); the checks that count entries never see it."""
    root.add_s(SLOW_DN, ldap.modlist.addModlist({
        "objectClass": [b"inetOrgPerson"], "uid": [b"slowhash"], "cn": [b"Slow Hash"],
        "sn": [b"Hash"], "userPassword": [pbkdf2_sha512(SLOW_PW, SLOW_ITERATIONS).encode()]}))


def access_log_lines() -> list:
    try:
        with open(os.path.join(S.dir, "access.log")) as stream:
            return stream.read().splitlines()
    except FileNotFoundError:
        return []


def check_async_operations():
    conn = connect()
    ids = {}
    for n in (5, 6, 7, 8):
        ids[conn.search_ext(user_dn(n), ldap.SCOPE_BASE, "(objectClass=*)", ["uid"])] = n
    compare_id = conn.compare_ext(user_dn(9), "uid", b"user9")
    answered = {}
    for msgid, n in ids.items():
        _, results, got_id, _ = conn.result3(msgid, timeout=10)
        answered[got_id] = results[0][1]["uid"][0].decode()
    check_equal(answered, {i: f"user{n}" for i, n in ids.items()},
                "four searches outstanding at once: each answered under its own messageID")
    try:
        conn.result3(compare_id, timeout=10)
        fail("compare answered without compareTrue")
    except ldap.COMPARE_TRUE:
        check(True, "an outstanding compare is answered compareTrue")
    conn.unbind_s()


# The server of check_abandon: an access log, and listeners that never run a request
# themselves (a helping listener runs a bind on its own thread and reads nothing meanwhile).
ABANDON_TOML = ('[threads]\nlistener_helps = false\n\n'
                '[passwords]\nmax_pbkdf2_iterations = 1000000\n\n'
                '[log]\nlevel = "stats"\nfile = "access.log"\n')


def check_abandon():
    """Abandons a search of all 1,000+ entries while it surely waits. The listener reads no more
    of a connection while a request of it is held back, so the search and its abandon must
    reach it in one read with the search held: a slow bind runs on a worker, a second slow bind
    is held behind it (which cn=Monitor shows: the listener decoded it), and only then the
    search and the abandon are sent; when the first bind ends the second starts and the
    listener reads both, holds the search behind the running bind, and the abandon drops it.
    python-ldap drops whatever comes for an abandoned message ID, so what the server did is
    read from its access log: the search must never answer."""
    global S
    main_server = S
    try:
        with NumadirServer(main_server.numadir, main_server.gen_users, users=USERS,
                           keep=main_server.keep, extra_toml=ABANDON_TOML) as server:
            S = server
            abandon_held_search()
    finally:
        S = main_server


def abandon_held_search():
    root = connect("root")
    add_slow_user(root)
    polls = []  # Each poll is itself a request the listener decodes.

    def decoded():
        entries = root.search_s("cn=Listeners,cn=Monitor", ldap.SCOPE_ONELEVEL,
                                "(objectClass=*)", ["numadirRequests"])
        polls.append(sum(int(attributes["numadirRequests"][0]) for _, attributes in entries))
        return polls[-1] - polls[0] - (len(polls) - 1)
    decoded()
    conn = connect()
    slow = conn.simple_bind(SLOW_DN, SLOW_PW)
    second = conn.simple_bind(SLOW_DN, SLOW_PW)
    check(wait_for(lambda: decoded() >= 2, timeout=30),
          "the listener decoded both binds (the second one held back)")
    search = conn.search_ext(PEOPLE, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["*"])
    conn.abandon(search)
    last = conn.simple_bind(SLOW_DN, SLOW_PW)  # Runs once nothing else is outstanding.
    for msgid, what in ((slow, "the first slow bind"), (second, "the slow bind behind it"),
                        (last, "the slow bind after the abandon")):
        kind, _ = conn.result(msgid, all=1, timeout=30)
        check_equal(kind, ldap.RES_BIND, f"{what} is answered")
    check_equal(conn.whoami_s().lower(), f"dn:{SLOW_DN}".lower(),
                "after it the identity is the last bind's")
    results = conn.search_s(user_dn(1), ldap.SCOPE_BASE, "(objectClass=*)", ["uid"])
    check_equal(results[0][1]["uid"], [b"user1"],
                "after abandoning a large search the connection keeps working")
    conn.unbind_s()

    # The log's lines are ordered by time, and a record written after another never comes out
    # before it: once the connection's "closed" line is there (after its unbind), so is
    # everything the connection logged. The connection is the one whose first bind has the
    # first slow bind's message ID; op= counts its requests from 0 in the order the server read
    # them (binds 0 and 1, the search 2, its abandon 3, the last bind 4, and so on).
    def first_bind_line():
        return next((line for line in access_log_lines()
                     if f" op=0 msgid={slow} BIND dn=\"{SLOW_DN}\"" in line), None)
    line = wait_for(first_bind_line, timeout=30)
    check(line is not None, "the access log holds the first slow bind as op=0",
          "\n".join(access_log_lines()[-10:]))
    prefix = f"conn={line.split('conn=')[1].split(' ')[0]} "
    check(wait_for(lambda: any(line.endswith(f" {prefix}closed") for line in access_log_lines()),
                   timeout=30),
          "and the connection's close", "\n".join(access_log_lines()[-10:]))
    mine = [line.split("Z ", 1)[1] for line in access_log_lines() if f" {prefix}" in line]
    shown = "\n".join(mine)
    for op, msgid, what in ((1, second, "BIND"), (2, search, "SRCH"), (3, None, "ABANDON"),
                            (4, last, "BIND")):
        check(any(entry.startswith(f"{prefix}op={op} msgid=")
                  and (msgid is None or entry.startswith(f"{prefix}op={op} msgid={msgid} "))
                  and f" {what} " in entry for entry in mine),
              f"the access log numbers the {what} op={op}", shown)
    check(any(entry.startswith(f"{prefix}op=4 msgid={last} RESULT tag=97 err=0")
              for entry in mine), "and the last bind's success", shown)
    check(any(entry.startswith(f"{prefix}op=3 ") and entry.endswith(f" ABANDON msg={search}")
              for entry in mine), "the access log records the AbandonRequest", shown)
    searched = [entry for entry in mine if entry.startswith(f"{prefix}op=2 msgid={search} ")]
    results = [entry for entry in searched if " RESULT " in entry]
    check(not results, "the abandoned search sent no SearchResultDone (its entries: none)",
          "\n".join(results))
    check_equal(sum(" ABANDONED etime=" in entry for entry in searched), 1,
                "the held search dropped by the abandon is logged ABANDONED once")
    root.delete_s(SLOW_DN)
    root.unbind_s()


# -- compare and updates -----------------------------------------------------------------------
def check_compare():
    conn = connect()
    check_equal(conn.compare_s(user_dn(1), "sn", b"Jones"), True, "compare sn Jones: true")
    check_equal(conn.compare_s(user_dn(1), "sn", b"Smith"), False, "compare sn Smith: false")
    check_equal(conn.compare_s(user_dn(1), "uidNumber", b"10001"), True, "compare an integer")
    expect_error(ldap.NO_SUCH_OBJECT, conn.compare_s, f"uid=ghost,{PEOPLE}", "sn", b"x",
                 what="compare on a missing entry -> 32")
    expect_error(ldap.NO_SUCH_ATTRIBUTE, conn.compare_s, user_dn(1), "description", b"x",
                 what="compare an attribute the entry lacks -> 16")
    expect_error(ldap.INSUFFICIENT_ACCESS, conn.compare_s, user_dn(1), "userPassword",
                 user_pw(1).encode(), what="compare userPassword -> 50")
    conn.unbind_s()


def check_updates():
    anon = connect()
    ou = [("objectClass", [b"organizationalUnit"]), ("ou", [b"pytest"])]
    expect_error(ldap.INSUFFICIENT_ACCESS, anon.add_s, TEST, ou, what="anonymous add -> 50")
    root = connect("root")
    root.add_s(TEST, ou)
    check(True, "add ou=pytest as the rootdn")
    expect_error(ldap.ALREADY_EXISTS, root.add_s, TEST, ou, what="add it again -> 68")
    person = f"uid=carol,{TEST}"
    root.add_s(person, ldap.modlist.addModlist({
        "objectClass": [b"inetOrgPerson"], "uid": [b"carol"], "cn": [b"Carol"],
        "sn": [b"Doe"], "userPassword": [ssha("carolpw").encode()]}))
    check(True, "add uid=carol with an {SSHA} password")
    root.modify_s(person, [(ldap.MOD_ADD, "mail", [b"carol@example.com", b"c@example.com"]),
                           (ldap.MOD_REPLACE, "sn", [b"Roe"]),
                           (ldap.MOD_ADD, "description", [b"d1"])])
    root.modify_s(person, [(ldap.MOD_DELETE, "mail", [b"c@example.com"]),
                           (ldap.MOD_DELETE, "description", None)])
    results = root.search_s(person, ldap.SCOPE_BASE, "(objectClass=*)",
                            ["mail", "sn", "description"])
    check_equal(results[0][1], {"mail": [b"carol@example.com"], "sn": [b"Roe"]},
                "modify add/replace/delete values and delete an attribute")
    expect_error(ldap.NO_SUCH_ATTRIBUTE, root.modify_s, person,
                 [(ldap.MOD_DELETE, "mail", [b"none@example.com"])],
                 what="delete a value that is not there -> 16")
    expect_error(ldap.TYPE_OR_VALUE_EXISTS, root.modify_s, person,
                 [(ldap.MOD_ADD, "mail", [b"CAROL@example.com"])],
                 what="add an existing value -> 20")
    expect_error(ldap.OBJECT_CLASS_VIOLATION, root.modify_s, person,
                 [(ldap.MOD_ADD, "uidNumber", [b"5"])],
                 what="add an attribute no objectClass allows -> 65")
    expect_error(ldap.INVALID_SYNTAX, root.modify_s, person,
                 [(ldap.MOD_REPLACE, "telephoneNumber", [b""])],
                 what="an empty telephoneNumber (invalid syntax) -> 21")

    carol = connect((person, "carolpw"))
    carol.modify_s(person, [(ldap.MOD_REPLACE, "description", [b"self-edit"])])
    check(True, "carol modifies her own entry")
    expect_error(ldap.INSUFFICIENT_ACCESS, carol.modify_s, user_dn(1),
                 [(ldap.MOD_REPLACE, "description", [b"x"])],
                 what="carol modifies user1's entry -> 50")
    results = carol.search_s(person, ldap.SCOPE_BASE, "(objectClass=*)", ["*", "userPassword"])
    check("userPassword" not in results[0][1] and results[0][1].get("description") ==
          [b"self-edit"], "carol reads her own entry: userPassword not returned",
          f"observed {sorted(results[0][1])}")
    carol.modify_s(person, [(ldap.MOD_REPLACE, "userPassword", [ssha("carolpw2").encode()])])
    check(True, "carol replaces her own userPassword (write-only access)")
    connect((person, "carolpw2")).unbind_s()
    check(True, "bind with the new password")
    expect_error(ldap.INVALID_CREDENTIALS, connect, (person, "carolpw"),
                 what="bind with the old password -> 49")

    root.rename_s(person, "uid=carol2", delold=1)
    results = root.search_s(f"uid=carol2,{TEST}", ldap.SCOPE_BASE, "(objectClass=*)", ["uid"])
    check_equal(results[0][1]["uid"], [b"carol2"], "rename (delete old RDN): uid is carol2")
    root.add_s(f"ou=inner,{TEST}", [("objectClass", [b"organizationalUnit"]),
                                    ("ou", [b"inner"])])
    root.rename_s(f"uid=carol2,{TEST}", "uid=carol3", newsuperior=f"ou=inner,{TEST}",
                  delold=0)
    results = root.search_s(f"uid=carol3,ou=inner,{TEST}", ldap.SCOPE_BASE, "(objectClass=*)",
                            ["uid"])
    check_equal(sorted(results[0][1]["uid"]), [b"carol2", b"carol3"],
                "rename with newSuperior, old RDN kept: moved, uid carol2 and carol3")
    expect_error(ldap.NO_SUCH_OBJECT, root.search_s, f"uid=carol2,{TEST}", ldap.SCOPE_BASE,
                 what="the old DN is gone")
    expect_error(ldap.NOT_ALLOWED_ON_NONLEAF, root.delete_s, f"ou=inner,{TEST}",
                 what="delete a non-leaf -> 66")
    expect_error(ldap.INSUFFICIENT_ACCESS, anon.delete_s, f"uid=carol3,ou=inner,{TEST}",
                 what="anonymous delete -> 50")
    root.delete_s(f"uid=carol3,ou=inner,{TEST}")
    root.delete_s(f"ou=inner,{TEST}")
    root.delete_s(TEST)
    check(True, "delete the leaves, then ou=pytest")
    expect_error(ldap.NO_SUCH_OBJECT, root.delete_s, TEST, what="delete it again -> 32")
    carol.unbind_s()
    anon.unbind_s()
    root.unbind_s()


def check_extended():
    conn = connect((user_dn(40), user_pw(40)))
    check_equal(conn.whoami_s().lower(), f"dn:{user_dn(40)}", "whoami after bind")
    generated = conn.passwd_s(None, user_pw(40), None, extract_newpw=True)[1]
    new = generated.genPasswd if hasattr(generated, "genPasswd") else generated
    if isinstance(new, bytes):
        new = new.decode()
    check(bool(new), "password modify without a new password returns a generated one",
          f"observed {generated!r}")
    connect((user_dn(40), new)).unbind_s()
    check(True, "bind with the generated password")
    expect_error(ldap.INVALID_CREDENTIALS, connect, (user_dn(40), user_pw(40)),
                 what="bind with the old password -> 49")
    conn.passwd_s(user_dn(40), None, "chosen40")
    connect((user_dn(40), "chosen40")).unbind_s()
    check(True, "password modify with a chosen password; bind with it")
    expect_error(ldap.INSUFFICIENT_ACCESS, conn.passwd_s, user_dn(41), None, "x",
                 what="user40 changing user41's password -> 50")

    request = ldap.extop.ExtendedRequest("1.2.3.4.5.6.7.8.9", None)
    expect_error(ldap.PROTOCOL_ERROR, conn.extop_s, request,
                 what="unknown extended operation -> protocolError (2)")
    check_equal(conn.whoami_s().lower(), f"dn:{user_dn(40)}",
                "the connection survives the unknown extended operation")
    conn.unbind_s()


# -- raw sockets -----------------------------------------------------------------------------------
def simple_bind_request(message_id, dn, password):
    body = ber_int(0x02, 3) + ber(0x04, dn.encode()) + ber(0x80, password.encode())
    return ber(0x30, ber_int(0x02, message_id) + ber(0x60, body))


def expect_notice(sock, what):
    buffer = bytearray()
    message = read_ldap_message(sock, buffer, timeout=10)
    if message is None:
        fail(f"{what}: the connection closed without a Notice of Disconnection")
    message_id, tag, content, raw = message
    check(message_id == 0 and tag == 0x78,
          f"{what}: an ExtendedResponse with messageID 0",
          f"messageID {message_id}, tag {tag:#x}, bytes {raw.hex()}")
    code, matched, diagnostic, name = parse_extended_response(content)
    check_equal(name, NOTICE_OF_DISCONNECTION, f"{what}: responseName is the notice's OID")
    check_equal(code, 2, f"{what}: resultCode protocolError (2)")
    check(wait_for_close(sock, 10), f"{what}: then the server closes the connection")


def check_malformed_pdus():
    bystander = connect((user_dn(50), user_pw(50)))
    results = bystander.search_s(user_dn(50), ldap.SCOPE_BASE, "(objectClass=*)", ["uid"])
    check_equal(len(results), 1, "a python-ldap connection is open and working")

    # A SearchRequest that holds only its baseObject: well framed, wrong inside.
    with S.connect_raw() as sock:
        sock.sendall(ber(0x30, ber_int(0x02, 1) + ber(0x63, ber(0x04, b"dc=example,dc=com"))))
        expect_notice(sock, "a SearchRequest missing its fields")
    # A message whose protocolOp is a tag no operation has.
    with S.connect_raw() as sock:
        sock.sendall(ber(0x30, ber_int(0x02, 1) + ber(0x7D, b"\x04\x00")))
        expect_notice(sock, "an unknown protocolOp tag")
    # A BindRequest with version 2 in a v3-only server is a bind error, not a disconnect; skip.
    # Bytes that are not an LDAPMessage at all: a close (slapd closes without a notice; a
    # notice first is fine too).
    with S.connect_raw() as sock:
        sock.sendall(b"\x01\x02garbage that is not BER at all\r\n")
        buffer = bytearray()
        try:
            message = read_ldap_message(sock, buffer, timeout=10)
        except (TimeoutError, socket.timeout):
            fail("garbage bytes: the server neither answered nor closed within 10 s")
        except (ConnectionResetError, ValueError):
            message = None
        if message is not None:
            check(message[0] == 0 and message[1] == 0x78,
                  "garbage bytes: a Notice of Disconnection", f"{message[3].hex()}")
        check(message is None or wait_for_close(sock, 10), "garbage bytes: connection closed")
    # A length larger than max_pdu_size (4 MiB): refused without reading it all.
    with S.connect_raw() as sock:
        sock.sendall(b"\x30\x84" + struct.pack(">I", 64 * 1024 * 1024) + b"\x02\x01\x01")
        buffer = bytearray()
        try:
            message = read_ldap_message(sock, buffer, timeout=10)
        except (TimeoutError, socket.timeout):
            fail("a 64 MiB PDU header: the server neither answered nor closed within 10 s")
        except ConnectionResetError:
            message = None
        if message is not None:
            check(message[0] == 0 and message[1] == 0x78,
                  "a PDU over max_pdu_size: a Notice of Disconnection", f"{message[3].hex()}")
        check(message is None or wait_for_close(sock, 10), "a PDU over max_pdu_size: closed")
    # A well-formed request after a malformed one on the same connection is never answered.
    with S.connect_raw() as sock:
        sock.sendall(ber(0x30, ber_int(0x02, 1) + ber(0x63, b"")) +
                     search_request(2, "", scope=0))
        buffer = bytearray()
        try:
            message = read_ldap_message(sock, buffer, timeout=10)
        except ConnectionResetError:
            message = None
        # numadir sends the notice; slapd 2.5 closes this one without it. Either way the good
        # request behind it must never be answered.
        check(message is None or message[0] == 0,
              "an empty SearchRequest followed by a good one: the good one is not answered",
              f"{message[3].hex() if message else 'closed'}")
        check(message is None or wait_for_close(sock, 10), "and the connection is closed")

    results = bystander.search_s(user_dn(50), ldap.SCOPE_BASE, "(objectClass=*)", ["uid"])
    check_equal(results[0][1]["uid"], [b"user50"],
                "the other python-ldap connection still works, still bound")
    check_equal(bystander.whoami_s().lower(), f"dn:{user_dn(50)}", "and keeps its identity")
    bystander.unbind_s()


def check_client_vanishes():
    for round_ in range(20):
        sock = S.connect_raw()
        sock.sendall(simple_bind_request(1, ROOT_DN, ROOT_PW) +
                     search_request(2, SUFFIX, scope=2, attributes=("*", "+")))
        if round_ % 2:
            # Abortive close (RST) on odd rounds, an orderly FIN on even ones.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    check(True, "20 clients sent a bind and a search of everything and closed at once")
    with S.connect_raw() as sock:
        sock.sendall(simple_bind_request(1, ROOT_DN, ROOT_PW) +
                     search_request(2, SUFFIX, scope=2, attributes=("*",)))
        buffer = bytearray()
        read_ldap_message(sock, buffer, timeout=10)  # The BindResponse.
        read_ldap_message(sock, buffer, timeout=10)  # The first entry.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    check(True, "one more closed after reading the first entry of 1,000+")
    conn = connect("root")

    def open_connections():
        entry = conn.search_s("cn=Connections,cn=Monitor", ldap.SCOPE_BASE,
                              "(objectClass=*)", ["numadirConnections"])
        return int(entry[0][1]["numadirConnections"][0])
    open_now = wait_for(lambda: open_connections() == 1, timeout=30)
    check(open_now, "the server closed all 21 of them (cn=Monitor counts only this one open)",
          f"{open_connections()} open")
    check(S.alive(), "the server process is still running")
    results = conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=*)", ["1.1"])
    check_equal(len(results), USERS, "a new connection searches all 1,000 users")
    conn.unbind_s()


def set_server(server):
    global S
    S = server


def main() -> int:
    args = parse_args(__doc__.split("\n")[0])
    return run_suite("python_ldap", args, [
        ("binds", check_binds),
        ("binds with a method numadir does not implement", check_unsupported_bind_methods),
        ("searches", check_searches),
        ("paged results (RFC 2696)", check_paged_search),
        ("asynchronous operations", check_async_operations),
        ("an abandoned search held behind binds never answers", check_abandon),
        ("compare", check_compare),
        ("add, modify, rename, delete", check_updates),
        ("extended operations", check_extended),
        ("malformed PDUs get a Notice of Disconnection", check_malformed_pdus),
        ("clients vanishing mid-search", check_client_vanishes),
    ], set_server, users=USERS)


if __name__ == "__main__":
    sys.exit(main())
