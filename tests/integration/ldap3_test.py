#!/usr/bin/python3
"""numadir driven by python3-ldap3 (a pure-Python client with its own BER codec): server info
and schema loading (get_info=ALL), binds, searches, paged searches, compare, updates, extended
operations and result codes.

  ldap3_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 when every check passes; otherwise 1 with the first failing check (observed vs expected).
"""
import os
import sys

import ldap3  # python3-ldap3
from ldap3 import (ALL, BASE, LEVEL, MODIFY_ADD, MODIFY_DELETE, MODIFY_REPLACE, SUBTREE,
                   Connection, Server)
from ldap3.core.exceptions import LDAPPasswordIsMandatoryError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, check, check_equal, fail,
    parse_args, run_suite, ssha, user_dn, user_pw)

USERS = 1000
TEST = f"ou=ldap3test,{SUFFIX}"
S = None
SERVER = None  # ldap3.Server with the info and schema read at the first bind.


def connect(user=None, password=None, bind=True) -> Connection:
    conn = Connection(SERVER, user=user, password=password, receive_timeout=30,
                      raise_exceptions=False)
    if bind:
        if not conn.bind():
            fail(f"bind as {user!r} failed: {conn.result}")
    return conn


def root() -> Connection:
    return connect(ROOT_DN, ROOT_PW)


def code(conn) -> int:
    return conn.result["result"]


def expect(conn, ok, expected_code, what):
    check(code(conn) == expected_code, f"{what}: result {expected_code}",
          f"observed {conn.result['result']} {conn.result['description']} "
          f"{conn.result.get('message', '')!r}")
    return conn.result


def check_server_info():
    global SERVER
    SERVER = Server("127.0.0.1", port=S.port, get_info=ALL, connect_timeout=10)
    conn = Connection(SERVER, user=ROOT_DN, password=ROOT_PW, receive_timeout=30)
    check(conn.bind(), "Connection(Server(get_info=ALL), rootdn).bind()", f"{conn.result}")
    info = SERVER.info
    check(info is not None, "server.info was read from the root DSE")
    check_equal([c.lower() for c in info.naming_contexts], [SUFFIX], "naming_contexts")
    controls = [c[0] for c in info.supported_controls]
    check("1.2.840.113556.1.4.319" in controls, "supported_controls has paged results",
          f"{controls}")
    extensions = [e[0] for e in info.supported_extensions]
    check("1.3.6.1.4.1.4203.1.11.3" in extensions and "1.3.6.1.4.1.4203.1.11.1" in extensions,
          "supported_extensions has WhoAmI and Password Modify", f"{extensions}")
    check(3 in info.supported_ldap_versions or "3" in info.supported_ldap_versions,
          "supported_ldap_versions has 3", f"{info.supported_ldap_versions}")
    schema = SERVER.schema
    check(schema is not None, "server.schema was loaded from the subschema subentry")
    check("uid" in schema.attribute_types and "userPassword" in schema.attribute_types,
          "the schema has attributeTypes uid and userPassword",
          f"{len(schema.attribute_types)} attribute types")
    check("inetOrgPerson" in schema.object_classes and "posixAccount" in schema.object_classes,
          "the schema has objectClasses inetOrgPerson and posixAccount",
          f"{len(schema.object_classes)} object classes")
    uid = schema.attribute_types["uid"]
    check(uid.equality and "caseIgnoreMatch" in uid.equality, "uid's EQUALITY is caseIgnoreMatch",
          f"{uid.equality}")
    iop = schema.object_classes["inetOrgPerson"]
    check("organizationalPerson" in iop.superior, "inetOrgPerson's SUP is organizationalPerson",
          f"{iop.superior}")
    check(bool(schema.ldap_syntaxes) and bool(schema.matching_rules),
          "ldapSyntaxes and matchingRules are listed too")
    check_equal(conn.extend.standard.who_am_i().lower(), f"dn:{ROOT_DN}", "who_am_i as rootdn")
    conn.unbind()


def check_binds():
    anon = connect()
    check(anon.extend.standard.who_am_i() in (None, ""), "who_am_i anonymous: empty",
          f"{anon.extend.standard.who_am_i()!r}")
    user = connect(user_dn(3), user_pw(3))
    check_equal(user.extend.standard.who_am_i().lower(), f"dn:{user_dn(3)}", "who_am_i as user3")
    user.unbind()
    wrong = connect(user_dn(3), "wrong", bind=False)
    wrong.bind()
    expect(wrong, False, 49, "bind with a wrong password")
    missing = connect(f"uid=ghost,{PEOPLE}", "wrong", bind=False)
    missing.bind()
    expect(missing, False, 49, "bind as a missing DN")
    check_equal((missing.result["message"], missing.result["dn"]),
                (wrong.result["message"], wrong.result["dn"]),
                "missing DN and wrong password: identical message and matchedDN")
    # ldap3 refuses an empty password itself; send the BindRequest at the protocol level.
    unauth = connect(user_dn(3), "", bind=False)
    try:
        unauth.bind()
        fail("ldap3 sent a bind with an empty password (it used to refuse)")
    except LDAPPasswordIsMandatoryError:
        pass
    from ldap3.operation.bind import bind_operation
    unauth.open()
    request = bind_operation(3, ldap3.ANONYMOUS, None, None)  # Simple, empty password ...
    request["name"] = user_dn(3)  # ... and a DN: RFC 4513 5.1.2's unauthenticated bind.
    response = unauth.post_send_single_response(unauth.send("bindRequest", request, None))
    result = unauth.result if unauth.result else response[0]
    check(result["result"] == 53, "unauthenticated bind (DN, empty password): 53",
          f"observed {result}")
    unauth.unbind()
    anon.unbind()


def check_searches():
    conn = connect()
    conn.search(PEOPLE, "(objectClass=*)", BASE, attributes=["ou"])
    check(code(conn) == 0 and len(conn.entries) == 1 and conn.entries[0].ou.value == "people",
          "base search", f"{conn.result}")
    conn.search(SUFFIX, "(objectClass=*)", LEVEL, attributes=["1.1"])
    check_equal(sorted(e.entry_dn.lower() for e in conn.entries),
                sorted([f"ou=groups,{SUFFIX}", PEOPLE]), "one-level search")
    conn.search(SUFFIX, "(&(uid=user7*)(!(uid=user7?*))(|(sn=*)(mail=*)))", SUBTREE,
                attributes=["uid"])
    # "?" is not a wildcard: (uid=user7?*) is a substring with initial "user7?" matching nobody.
    check_equal(len(conn.entries), 111, "AND/OR/NOT/substring/present filters")
    conn.search(PEOPLE, "(&(uidNumber>=10100)(uidNumber<=10104))", LEVEL, attributes=["uid"])
    check_equal(sorted(e.uid.value for e in conn.entries),
                sorted(f"user{n}" for n in range(100, 105)), ">= and <= filters")
    conn.search(PEOPLE, "(sn~=Brown)", LEVEL, attributes=["sn"])
    check_equal(len(conn.entries), len(range(3, 1000, 15)), "approx filter (sn~=Brown)")
    conn.search(user_dn(6), "(objectClass=*)", BASE, attributes=["cn", "mail"], types_only=True)
    attrs = conn.response[0]["raw_attributes"]
    check(sorted(attrs) == ["cn", "mail"] and all(not v for v in attrs.values()),
          "types_only: types without values", f"{attrs}")
    conn.search(user_dn(6), "(objectClass=*)", BASE, attributes=[ldap3.ALL_ATTRIBUTES,
                                                                 ldap3.ALL_OPERATIONAL_ATTRIBUTES])
    attrs = conn.response[0]["attributes"]
    check("cn" in attrs and "entryUUID" in attrs and "userPassword" not in attrs,
          "'*' and '+': user and operational attributes, no userPassword", f"{sorted(attrs)}")
    conn.search(user_dn(6), "(objectClass=*)", BASE, attributes=["userPassword"])
    check("userPassword" not in conn.response[0]["raw_attributes"] or
          conn.response[0]["raw_attributes"]["userPassword"] == [],
          "anonymous asking for userPassword: not returned", f"{conn.response[0]}")
    conn.search(f"uid=ghost,{PEOPLE}", "(objectClass=*)", BASE)
    result = expect(conn, False, 32, "search below a missing entry")
    check_equal(result["dn"].lower(), PEOPLE, "matchedDN is ou=people")
    conn.search(PEOPLE, "(objectClass=*)", LEVEL, attributes=["1.1"], size_limit=3)
    check(code(conn) == 4 and len(conn.entries) == 3, "size_limit=3: 4 after 3 entries",
          f"{conn.result}, {len(conn.entries)} entries")
    conn.search(PEOPLE, "(objectClass=*)", LEVEL, attributes=["1.1"])
    check(code(conn) == 4 and len(conn.entries) == 500,
          "anonymous search of 1,000: the server's size limit 500 -> 4",
          f"{conn.result}, {len(conn.entries)} entries")
    conn.search(user_dn(1), "(objectClass=*)", BASE, attributes=["1.1"],
                controls=[("1.2.3.4.5.6.7.8", True, None)])
    expect(conn, False, 12, "unknown critical control")
    conn.search(user_dn(1), "(objectClass=*)", BASE, attributes=["1.1"],
                controls=[("1.2.3.4.5.6.7.8", False, None)])
    check(code(conn) == 0 and len(conn.entries) == 1, "the same control not critical: ignored",
          f"{conn.result}")
    conn.unbind()


def check_paged():
    conn = root()
    dns = [e["dn"].lower() for e in conn.extend.standard.paged_search(
        PEOPLE, "(objectClass=inetOrgPerson)", LEVEL, attributes=["uid"], paged_size=100,
        generator=True) if e["type"] == "searchResEntry"]
    check_equal(len(dns), USERS, "extend.standard.paged_search (100 a page): 1,000 entries")
    check_equal(set(dns), {user_dn(n) for n in range(USERS)}, "every user exactly once" if
                len(set(dns)) == USERS else "every user")
    check_equal(len(set(dns)), len(dns), "no entry twice")

    seen, pages, cookie = [], 0, None
    while True:
        conn.search(PEOPLE, "(uid=*)", LEVEL, attributes=["1.1"], paged_size=100,
                    paged_cookie=cookie)
        if code(conn) != 0:
            fail(f"page {pages + 1}: {conn.result}")
        pages += 1
        page_entries = [e["dn"].lower() for e in conn.response if e["type"] == "searchResEntry"]
        if len(page_entries) > 100:
            fail(f"page {pages}: {len(page_entries)} entries, more than 100")
        seen.extend(page_entries)
        cookie = conn.result["controls"]["1.2.840.113556.1.4.319"]["value"]["cookie"]
        if not cookie:
            break
        if pages > 50:
            fail("more than 50 pages")
    check(len(seen) == USERS and len(set(seen)) == USERS and pages in (10, 11),
          "Connection.search with paged_size/paged_cookie: 1,000 distinct entries",
          f"{len(seen)} entries, {len(set(seen))} distinct, {pages} pages")
    conn.unbind()


def check_compare_and_updates():
    anon = connect()
    check_equal(anon.compare(user_dn(1), "sn", "Jones"), True, "compare sn Jones: true")
    check_equal(code(anon), 6, "compareTrue is result 6")
    check_equal(anon.compare(user_dn(1), "sn", "Smith"), False, "compare sn Smith: false")
    check_equal(code(anon), 5, "compareFalse is result 5")
    anon.compare(user_dn(1), "userPassword", user_pw(1))
    expect(anon, False, 50, "compare userPassword")
    anon.compare(f"uid=ghost,{PEOPLE}", "sn", "x")
    expect(anon, False, 32, "compare on a missing entry")

    anon.add(TEST, ["organizationalUnit"], {"ou": "ldap3test"})
    expect(anon, False, 50, "anonymous add")
    conn = root()
    conn.add(TEST, ["organizationalUnit"], {"ou": "ldap3test"})
    expect(conn, True, 0, "add ou=ldap3test as the rootdn")
    conn.add(TEST, ["organizationalUnit"], {"ou": "ldap3test"})
    expect(conn, False, 68, "add it again")
    dave = f"uid=dave,{TEST}"
    conn.add(dave, ["inetOrgPerson"], {"uid": "dave", "cn": "Dave", "sn": "Dee",
                                       "userPassword": ssha("davepw")})
    expect(conn, True, 0, "add uid=dave")
    conn.modify(dave, {"mail": [(MODIFY_ADD, ["d@example.com", "dave@example.com"])],
                       "sn": [(MODIFY_REPLACE, ["Dean"])],
                       "description": [(MODIFY_ADD, ["x"])]})
    expect(conn, True, 0, "modify: add two mails, replace sn, add description")
    conn.modify(dave, {"mail": [(MODIFY_DELETE, ["d@example.com"])],
                       "description": [(MODIFY_DELETE, [])]})
    expect(conn, True, 0, "modify: delete one mail, delete description")
    conn.search(dave, "(objectClass=*)", BASE, attributes=["mail", "sn", "description"])
    attrs = conn.response[0]["raw_attributes"]
    check_equal({k: sorted(v) for k, v in attrs.items() if v},
                {"mail": [b"dave@example.com"], "sn": [b"Dean"]}, "the modified entry")
    conn.modify(dave, {"mail": [(MODIFY_DELETE, ["none@example.com"])]})
    expect(conn, False, 16, "delete a missing value")
    conn.modify(dave, {"mail": [(MODIFY_ADD, ["dave@example.com"])]})
    expect(conn, False, 20, "add an existing value")

    me = connect(dave, "davepw")
    me.modify(dave, {"description": [(MODIFY_REPLACE, ["mine"])]})
    expect(me, True, 0, "dave modifies his own entry")
    me.modify(user_dn(1), {"description": [(MODIFY_REPLACE, ["not mine"])]})
    expect(me, False, 50, "dave modifies user1's entry")
    me.search(dave, "(objectClass=*)", BASE, attributes=["userPassword"])
    check(not me.response[0]["raw_attributes"].get("userPassword"),
          "dave cannot read his own userPassword", f"{me.response[0]}")
    result = me.extend.standard.modify_password(dave, "davepw", "davepw2")
    check(result is True, "modify_password (Password Modify) as dave with old and new",
          f"{result}, {me.result}")
    generated = me.extend.standard.modify_password(dave, "davepw2")
    check(isinstance(generated, str) and generated,
          "modify_password without a new password returns a generated one", f"{generated!r}")
    connect(dave, generated).unbind()
    check(True, "bind with the generated password")
    stale = connect(dave, "davepw2", bind=False)
    stale.bind()
    expect(stale, False, 49, "bind with the previous password")
    me.unbind()

    conn.modify_dn(dave, "uid=dave2")
    expect(conn, True, 0, "modify_dn uid=dave -> uid=dave2")
    conn.add(f"ou=in,{TEST}", ["organizationalUnit"], {"ou": "in"})
    conn.modify_dn(f"uid=dave2,{TEST}", "uid=dave3", delete_old_dn=True,
                   new_superior=f"ou=in,{TEST}")
    expect(conn, True, 0, "modify_dn with new_superior ou=in")
    conn.search(f"uid=dave3,ou=in,{TEST}", "(objectClass=*)", BASE, attributes=["uid"])
    check_equal(conn.entries[0].uid.values if conn.entries else None, ["dave3"],
                "moved and renamed; the old RDN value removed")
    conn.delete(f"ou=in,{TEST}")
    expect(conn, False, 66, "delete a non-leaf")
    anon.delete(f"uid=dave3,ou=in,{TEST}")
    expect(anon, False, 50, "anonymous delete")
    for dn in (f"uid=dave3,ou=in,{TEST}", f"ou=in,{TEST}", TEST):
        conn.delete(dn)
        expect(conn, True, 0, f"delete {dn}")
    conn.delete(TEST)
    expect(conn, False, 32, "delete it again")
    conn.extended("1.2.3.4.5.6.7.8.9")
    expect(conn, False, 2, "unknown extended operation: protocolError")
    check_equal(conn.extend.standard.who_am_i().lower(), f"dn:{ROOT_DN}",
                "the connection works after it")
    conn.unbind()
    anon.unbind()


def set_server(server):
    global S
    S = server


def main() -> int:
    args = parse_args(__doc__.split("\n")[0])
    return run_suite("ldap3", args, [
        ("server info and schema (get_info=ALL)", check_server_info),
        ("binds", check_binds),
        ("searches", check_searches),
        ("paged searches", check_paged),
        ("compare, updates, extended operations", check_compare_and_updates),
    ], set_server, users=USERS)


if __name__ == "__main__":
    sys.exit(main())
