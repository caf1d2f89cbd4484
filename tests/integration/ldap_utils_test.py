#!/usr/bin/python3
"""numadir driven by Debian's ldap-utils (OpenLDAP's command-line clients): every operation,
the controls they send and the result codes they report, against a real `numadir serve` with
1,000 generated users.

  ldap_utils_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 when every check passes; otherwise 1 with the first failing check (observed vs
expected). The expected behaviour is RFC 4511's, and OpenLDAP slapd's where the RFCs leave room
(with the default access policy of server/operations/access_control.h: userPassword only authenticates).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    GROUPS, PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, check, check_equal,
    fail, parse_args, parse_ldif, run_suite, ssha, user_dn, user_pw)

USERS = 1000
TEST = f"ou=test,{SUFFIX}"

S = None  # The running server.


def search(*args, bind=None, expect_rc=0, what=None):
    """ldapsearch -LLL; bind: None (anonymous), "root", or (dn, password). Returns entries."""
    auth = ["-x"]
    if bind == "root":
        auth += ["-D", ROOT_DN, "-w", ROOT_PW]
    elif bind is not None:
        auth += ["-D", bind[0], "-w", bind[1]]
    rc, out, err = S.ldap("ldapsearch", *auth, "-LLL", *args)
    if rc != expect_rc:
        fail(f"{what or 'ldapsearch'}: exit status {rc}, expected {expect_rc}; stderr: "
             f"{err.strip()}")
    return parse_ldif(out)


def dns(entries):
    return sorted(dn.lower() for dn, _ in entries)


def bind_as(n):
    return (user_dn(n), user_pw(n))


# -- bind and whoami -----------------------------------------------------------------------------
def check_bind_and_whoami():
    rc, out, err = S.ldap("ldapwhoami", "-x")
    check(rc == 0 and out.strip() == "anonymous", "ldapwhoami without a bind says anonymous",
          f"rc {rc}, stdout {out.strip()!r}, stderr {err.strip()!r}")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", ROOT_DN, "-w", ROOT_PW)
    check(rc == 0 and out.strip().lower() == f"dn:{ROOT_DN}".lower(),
          "ldapwhoami bound as the config's rootdn says dn:<rootdn>",
          f"rc {rc}, stdout {out.strip()!r}, stderr {err.strip()!r}")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", user_dn(1), "-w", user_pw(1))
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(1)}".lower(),
          "ldapwhoami bound as uid=user1 ({SSHA} password from the LDIF) says dn:<user1>",
          f"rc {rc}, stdout {out.strip()!r}, stderr {err.strip()!r}")
    rc_wrong, _, err_wrong = S.ldap("ldapwhoami", "-x", "-D", user_dn(1), "-w", "wrong")
    check_equal(rc_wrong, 49, "bind with a wrong password: invalidCredentials (49)")
    rc_missing, _, err_missing = S.ldap("ldapwhoami", "-x", "-D", f"uid=nobody,{PEOPLE}",
                                        "-w", "wrong")
    check_equal(rc_missing, 49, "bind as a DN that does not exist: invalidCredentials (49)")
    check_equal(err_missing, err_wrong,
                "a missing DN and a wrong password give the same result and message")
    rc_outside, _, err_outside = S.ldap("ldapwhoami", "-x", "-D", "uid=x,dc=elsewhere",
                                        "-w", "wrong")
    check_equal((rc_outside, err_outside), (49, err_wrong),
                "bind as a DN outside the naming context: the same invalidCredentials (49)")
    rc, _, err = S.ldap("ldapwhoami", "-x", "-D", ROOT_DN, "-w", "wrong")
    check_equal((rc, err), (49, err_wrong), "rootdn with a wrong password: the same 49")
    rc, _, err = S.ldap("ldapwhoami", "-x", "-D", user_dn(1), "-w", "")
    check(rc == 53, "bind with a DN and an empty password (unauthenticated bind, RFC 4513 "
          "5.1.2): unwillingToPerform (53)", f"rc {rc}, stderr {err.strip()!r}")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", "", "-w", "")
    check(rc == 0 and out.strip() == "anonymous",
          "bind with an empty DN and an empty password is anonymous",
          f"rc {rc}, stdout {out.strip()!r}, stderr {err.strip()!r}")


# -- root DSE --------------------------------------------------------------------------------------
def check_root_dse():
    entries = search("-b", "", "-s", "base", "+")
    check_equal(len(entries), 1, "ldapsearch -b '' -s base + returns the root DSE")
    dn, attrs = entries[0]
    check_equal(dn, "", "the root DSE's DN is empty")
    check([v.lower() for v in attrs.get("namingcontexts", [])] == [SUFFIX],
          "namingContexts lists the suffix", f"observed {attrs.get('namingcontexts')}")
    controls = attrs.get("supportedcontrol", [])
    check("1.2.840.113556.1.4.319" in controls, "supportedControl lists paged results (RFC 2696)",
          f"observed {controls}")
    extensions = attrs.get("supportedextension", [])
    for oid, name in (("1.3.6.1.4.1.4203.1.11.3", "WhoAmI"),
                      ("1.3.6.1.4.1.4203.1.11.1", "Password Modify")):
        check(oid in extensions, f"supportedExtension lists {name} ({oid})",
              f"observed {extensions}")
    check("3" in attrs.get("supportedldapversion", []), "supportedLDAPVersion: 3",
          f"observed {attrs.get('supportedldapversion')}")
    check(bool(attrs.get("subschemasubentry")), "subschemaSubentry is given",
          f"observed {attrs.get('subschemasubentry')}")
    entries = search("-b", "", "-s", "base", "*")
    check(entries and "objectclass" in entries[0][1],
          "the root DSE with '*' shows its objectClass (as slapd's: top, OpenLDAProotDSE)",
          f"observed {entries}")
    check("namingcontexts" not in entries[0][1],
          "the root DSE with '*' shows no operational attributes",
          f"observed {sorted(entries[0][1])}")
    subschema = attrs.get("subschemasubentry", ["cn=Subschema"])[0]
    entries = search("-b", subschema, "-s", "base", "(objectClass=subschema)", "attributeTypes",
                     "objectClasses")
    check(len(entries) == 1 and any("'uid'" in v or "'userid'" in v
                                    for v in entries[0][1].get("attributetypes", [])),
          f"{subschema} lists attributeTypes including uid", f"observed {len(entries)} entries")
    check(any("'inetOrgPerson'" in v for v in entries[0][1].get("objectclasses", [])),
          f"{subschema} lists objectClasses including inetOrgPerson")


# -- search ----------------------------------------------------------------------------------------
def check_scopes():
    entries = search("-b", PEOPLE, "-s", "base", "(objectClass=*)", "1.1")
    check_equal(dns(entries), [PEOPLE], "scope base returns the base entry only")
    entries = search("-b", SUFFIX, "-s", "one", "(objectClass=*)", "1.1")
    check_equal(dns(entries), sorted([GROUPS, PEOPLE]),
                "scope one under the suffix returns its two children, not the suffix")
    entries = search("-b", PEOPLE, "-s", "one", "(uid=user1*)", "1.1")
    check_equal(len(entries), 111, "scope one with (uid=user1*) returns the 111 matching users")
    entries = search("-b", SUFFIX, "-s", "sub", "(uid=user42)", "1.1")
    check_equal(dns(entries), [user_dn(42)], "scope sub from the suffix finds uid=user42")
    entries = search("-b", user_dn(42), "-s", "one", "(objectClass=*)", "1.1")
    check_equal(entries, [], "scope one under a leaf returns nothing")
    entries = search("-b", SUFFIX, "-s", "sub", "(objectClass=organizationalUnit)", "ou")
    check_equal(dns(entries), sorted([GROUPS, PEOPLE]), "sub search for the two OUs")
    entries = search("-b", SUFFIX, "-s", "base", "(objectClass=organization)", "o")
    check_equal(entries, [(SUFFIX, {"o": ["example"]})], "base search on the suffix entry")
    entries = search("-b", SUFFIX, "-s", "base", "(objectClass=person)", "1.1")
    check_equal(entries, [], "a base search whose filter does not match returns no entry")


def check_filters():
    def count(flt, base=SUFFIX, **kwargs):
        entries = search("-b", base, flt, "1.1", **kwargs)
        return dns(entries)

    check_equal(count("(uidNumber>=10995)"), sorted(user_dn(n) for n in range(995, 1000)),
                "(uidNumber>=10995): integer ordering, users 995..999")
    check_equal(count("(uidNumber<=10002)"), sorted(user_dn(n) for n in range(3)),
                "(uidNumber<=10002): users 0..2")
    check_equal(count("(&(objectClass=inetOrgPerson)(uidNumber>=10500)(uidNumber<=10502))"),
                sorted(user_dn(n) for n in (500, 501, 502)), "AND of three filters")
    check_equal(count("(|(uid=user5)(uid=user7)(cn=User 9))"),
                sorted(user_dn(n) for n in (5, 7, 9)), "OR of three equality filters")
    check_equal(len(count("(&(uid=user1*)(!(uid=user10*)))")), 100,
                "AND with NOT: (uid=user1*) minus (uid=user10*) is 100 users")
    check_equal(count("(!(mail=*))"), sorted([SUFFIX, PEOPLE, GROUPS,
                                              f"cn=group0,{GROUPS}"]),
                "NOT present: the four entries without mail")
    check_equal(len(count("(&(mail=*)(uidNumber<=10009))")), 10, "present AND ordering")
    check_equal(count("(cn=*ser 12*)"),
                sorted([user_dn(12)] + [user_dn(n) for n in range(120, 130)]),
                "substring any: (cn=*ser 12*) matches User 12 and User 120..129")
    check_equal(count("(mail=user9*9@*.com)"),
                sorted(user_dn(n) for n in range(1000)
                       if len(str(n)) >= 2 and str(n)[0] == "9" and str(n)[-1] == "9"),
                "substring initial+any+final: (mail=user9*9@*.com)")
    check_equal(count("(cn=USER 7)"), [user_dn(7)], "equality is case-insensitive for cn")
    smiths = sorted(user_dn(n) for n in range(0, 1000, 15))
    check_equal(count("(sn~=Smith)"), smiths, "approx (sn~=Smith) matches the 67 Smiths")
    check_equal(count("(sn~=smith)"), smiths, "approx (sn~=smith) ignores case")
    check_equal(count("(|(uid=nobody)(uid=user3))"), [user_dn(3)],
                "OR with a non-matching branch")
    check_equal(count("(&(uid=user3)(sn=NotHisName))"), [], "AND with a failing branch")
    check_equal(count("(description=*)"), [], "present filter on an attribute no entry has")
    check_equal(count("(nosuchattribute=x)"), [],
                "equality on an undefined attribute type matches nothing (Undefined)")
    check_equal(count("(userPassword=*)"), [],
                "anonymous: (userPassword=*) matches nothing (no search access)")
    check_equal(count("(userPassword=*)", bind=bind_as(5)), [],
                "user5: (userPassword=*) matches nothing, not even its own entry")


def check_attribute_lists():
    base = ["-b", user_dn(7), "-s", "base", "(objectClass=*)"]
    user_attributes = {"objectclass", "uid", "cn", "sn", "givenname", "mail", "uidnumber",
                       "gidnumber", "homedirectory", "loginshell"}
    (dn, attrs), = search(*base)
    check_equal(set(attrs), user_attributes,
                "no attribute list: all user attributes except userPassword, no operational")
    (dn, attrs), = search(*base, "*")
    check_equal(set(attrs), user_attributes, "'*': the same")
    (dn, attrs), = search(*base, "+")
    check(not (set(attrs) & user_attributes) and
          {"entryuuid", "createtimestamp", "modifytimestamp", "entrydn", "subschemasubentry",
           "structuralobjectclass", "hassubordinates"} <= set(attrs),
          "'+': operational attributes only (entryUUID, createTimestamp, entryDN, ...)",
          f"observed {sorted(attrs)}")
    check_equal(attrs.get("structuralobjectclass"), ["inetOrgPerson"],
                "structuralObjectClass: inetOrgPerson")
    check_equal(attrs.get("hassubordinates"), ["FALSE"], "hasSubordinates: FALSE for a leaf")
    check_equal([v.lower() for v in attrs.get("entrydn", [])], [user_dn(7)],
                "entryDN is the entry's DN")
    (dn, attrs), = search(*base, "*", "+")
    check(user_attributes <= set(attrs) and "entryuuid" in attrs and "userpassword" not in attrs,
          "'*' and '+': both, still no userPassword", f"observed {sorted(attrs)}")
    (dn, attrs), = search(*base, "1.1")
    check_equal((dn.lower(), attrs), (user_dn(7), {}), "'1.1': the DN and no attributes")
    (dn, attrs), = search(*base, "cn", "MAIL", "entryUUID")
    check_equal(sorted(attrs), ["cn", "entryuuid", "mail"],
                "named attributes (any case, operational by name): exactly those")
    check_equal(attrs["cn"], ["User 7"], "cn value")
    (dn, attrs), = search(*base, "name")
    check_equal(sorted(attrs), ["cn", "givenname", "sn"],
                "a supertype (name) returns its subtypes cn, sn, givenName")
    (dn, attrs), = search(*base, "1.1", "uid")
    check_equal(sorted(attrs), ["uid"], "'1.1' with another name: that name")
    rc, out, err = S.ldap("ldapsearch", "-x", "-LLL", "-A", *base, "cn", "mail")
    lines = sorted(line for line in out.splitlines() if line and not line.startswith("dn:"))
    check(rc == 0 and lines == ["cn:", "mail:"],
          "typesOnly (ldapsearch -A): the types cn and mail without values",
          f"rc {rc}, observed lines {lines}")
    (dn, attrs), = search(*base, "nosuchattribute")
    check_equal(attrs, {}, "an unknown attribute name is ignored")
    (dn, attrs), = search(*base, "userPassword", bind="root")
    check(len(attrs.get("userpassword", [])) == 1 and attrs["userpassword"][0].startswith("{SSHA}"),
          "the rootdn can read userPassword", f"observed {attrs}")


def check_limits_and_errors():
    rc, out, err = S.ldap("ldapsearch", "-x", "-LLL", "-b", PEOPLE, "-s", "one", "-z", "3",
                          "(objectClass=*)", "1.1")
    check(rc == 4 and len(parse_ldif(out)) == 3,
          "ldapsearch -z 3: sizeLimitExceeded (4) after exactly 3 entries",
          f"rc {rc}, {len(parse_ldif(out))} entries, stderr {err.strip()!r}")
    rc, out, err = S.ldap("ldapsearch", "-x", "-LLL", "-b", PEOPLE, "-s", "one",
                          "(objectClass=*)", "1.1")
    check(rc == 4 and len(parse_ldif(out)) == 500,
          "anonymous search over 1,000 users: the server's size_limit 500 -> 4 after 500 entries",
          f"rc {rc}, {len(parse_ldif(out))} entries")
    entries = search("-b", PEOPLE, "-s", "one", "(objectClass=*)", "1.1", bind="root")
    check_equal(len(entries), USERS, "the rootdn has no size limit: all 1,000 users")
    rc, out, err = S.ldap_root("ldapsearch", "-LLL", "-b", PEOPLE, "-s", "one", "-E",
                               "pr=100/noprompt", "(objectClass=*)", "1.1")
    found = [dn.lower() for dn, _ in parse_ldif(out)]
    check(rc == 0 and len(found) == USERS and len(set(found)) == USERS,
          "ldapsearch -E pr=100/noprompt: 1,000 users in pages of 100, each once",
          f"rc {rc}, {len(found)} entries, {len(set(found))} distinct, stderr {err.strip()!r}")

    rc, out, err = S.ldap("ldapsearch", "-x", "-b", f"uid=nobody,{PEOPLE}", "-s", "base")
    matched = re.search(r"^matchedDN: (.*)$", out, re.M)
    check(rc == 32 and matched is not None and matched.group(1).lower() == PEOPLE,
          "search below a missing entry: noSuchObject (32) with matchedDN ou=people",
          f"rc {rc}, matchedDN {matched.group(1) if matched else None!r}")
    rc, out, err = S.ldap("ldapsearch", "-x", "-b", f"cn=a,ou=missing,{PEOPLE}", "-s", "sub")
    matched = re.search(r"^matchedDN: (.*)$", out, re.M)
    check(rc == 32 and matched is not None and matched.group(1).lower() == PEOPLE,
          "two levels missing: 32, matchedDN is the deepest existing entry",
          f"rc {rc}, matchedDN {matched.group(1) if matched else None!r}")
    rc, out, err = S.ldap("ldapsearch", "-x", "-b", "dc=elsewhere", "-s", "base")
    check(rc == 32, "search outside every naming context: noSuchObject (32)", f"rc {rc}")
    rc, out, err = S.ldap("ldapsearch", "-x", "-b", "not a dn", "-s", "base")
    check(rc == 34, "search with a malformed base DN: invalidDNSyntax (34)",
          f"rc {rc}, stderr {err.strip()!r}")

    rc, out, err = S.ldap("ldapsearch", "-x", "-LLL", "-b", user_dn(1), "-s", "base",
                          "-e", "!1.2.3.4.5.6.7", "(objectClass=*)", "1.1")
    check(rc == 12, "an unknown critical control: unavailableCriticalExtension (12)",
          f"rc {rc}, stderr {err.strip()!r}")
    rc, out, err = S.ldap("ldapsearch", "-x", "-LLL", "-b", user_dn(1), "-s", "base",
                          "-e", "1.2.3.4.5.6.7", "(objectClass=*)", "1.1")
    check(rc == 0 and len(parse_ldif(out)) == 1,
          "the same control not critical is ignored: the entry, success",
          f"rc {rc}, stderr {err.strip()!r}")
    rc, out, err = S.ldap("ldapexop", "-x", "1.2.3.4.5.6.7")
    check(rc != 0 and "Protocol error (2)" in err,
          "an unknown extended operation: protocolError (2), as slapd answers",
          f"rc {rc}, stderr {err.strip()!r}")
    rc, out, err = S.ldap("ldapexop", "-x", "whoami")
    check(rc == 0 and out.strip() == "anonymous", "ldapexop whoami: anonymous",
          f"rc {rc}, stdout {out.strip()!r}")


# -- compare ---------------------------------------------------------------------------------------
def check_compare():
    rc, out, err = S.ldap("ldapcompare", "-x", user_dn(1), "sn:Jones")
    check(rc == 6 and "TRUE" in out, "ldapcompare sn:Jones on user1: compareTrue (exit 6)",
          f"rc {rc}, stdout {out.strip()!r}")
    rc, out, err = S.ldap("ldapcompare", "-x", user_dn(1), "sn:jones")
    check_equal(rc, 6, "compare uses the equality rule: sn:jones is TRUE")
    rc, out, err = S.ldap("ldapcompare", "-x", user_dn(1), "sn:Smith")
    check(rc == 5 and "FALSE" in out, "ldapcompare sn:Smith: compareFalse (exit 5)",
          f"rc {rc}, stdout {out.strip()!r}")
    rc, out, err = S.ldap("ldapcompare", "-x", user_dn(1), "uidNumber:10001")
    check_equal(rc, 6, "compare an integer: uidNumber:10001 is TRUE")
    rc, out, err = S.ldap("ldapcompare", "-x", f"uid=nobody,{PEOPLE}", "sn:Jones")
    check_equal(rc, 32, "compare on a missing entry: noSuchObject (32)")
    rc, out, err = S.ldap("ldapcompare", "-x", user_dn(1), "description:x")
    check_equal(rc, 16, "compare an attribute the entry lacks: noSuchAttribute (16)")
    rc, out, err = S.ldap("ldapcompare", "-x", user_dn(1), "nosuchattribute:x")
    check_equal(rc, 17, "compare an undefined attribute type: undefinedAttributeType (17)")
    rc, out, err = S.ldap("ldapcompare", "-x", user_dn(1), f"userPassword:{user_pw(1)}")
    check_equal(rc, 50, "anonymous compare of userPassword: insufficientAccess (50)")
    rc, out, err = S.ldap("ldapcompare", "-x", "-D", user_dn(1), "-w", user_pw(1), user_dn(1),
                          f"userPassword:{user_pw(1)}")
    check_equal(rc, 50, "compare of one's own userPassword: insufficientAccess (50)")


# -- updates ---------------------------------------------------------------------------------------
def entry_ldif(rdn, parent=TEST, extra=""):
    name = rdn.split("=", 1)[1]
    return (f"dn: {rdn},{parent}\nobjectClass: inetOrgPerson\n{rdn.split('=')[0]}: {name}\n"
            f"cn: {name}\nsn: Test\n{extra}\n")


def check_add():
    ou = f"dn: {TEST}\nobjectClass: organizationalUnit\nou: test\n\n"
    rc, out, err = S.ldap("ldapadd", "-x", input_text=ou)
    check_equal(rc, 50, "anonymous ldapadd: insufficientAccess (50)")
    rc, out, err = S.ldap("ldapadd", "-x", "-D", user_dn(1), "-w", user_pw(1), input_text=ou)
    check_equal(rc, 50, "ldapadd as an ordinary user: insufficientAccess (50)")
    rc, out, err = S.ldap_root("ldapadd", input_text=ou)
    check(rc == 0, "ldapadd ou=test as the rootdn: success", f"rc {rc}, {err.strip()!r}")
    rc, out, err = S.ldap_root("ldapadd", input_text=ou)
    check_equal(rc, 68, "adding ou=test again: entryAlreadyExists (68)")
    children = "".join([
        f"dn: ou=sub1,{TEST}\nobjectClass: organizationalUnit\nou: sub1\n\n",
        f"dn: ou=sub2,{TEST}\nobjectClass: organizationalUnit\nou: sub2\n\n",
        entry_ldif("uid=alpha", f"ou=sub1,{TEST}", "description: first\n"
                   f"userPassword: {ssha('alphapw')}\n"),
        entry_ldif("uid=beta", f"ou=sub1,{TEST}"),
        entry_ldif("uid=gamma"),
    ])
    rc, out, err = S.ldap_root("ldapadd", input_text=children)
    check(rc == 0, "ldapadd of five entries below ou=test",
          f"rc {rc}, {err.strip()!r}")
    entries = search("-b", TEST, "(objectClass=*)", "1.1")
    check_equal(len(entries), 6, "the six entries of ou=test are found")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", f"uid=alpha,ou=sub1,{TEST}", "-w", "alphapw")
    check_equal(rc, 0, "bind as the added uid=alpha with its password")
    (dn, attrs), = search("-b", f"uid=alpha,ou=sub1,{TEST}", "-s", "base", "creatorsName",
                          "createTimestamp", "entryUUID", bind="root")
    check([v.lower() for v in attrs.get("creatorsname", [])] == [ROOT_DN] and
          attrs.get("createtimestamp") and attrs.get("entryuuid"),
          "the added entry has creatorsName=<rootdn>, createTimestamp and entryUUID",
          f"observed {attrs}")
    rc, out, err = S.ldap_root("ldapadd", input_text=entry_ldif("uid=orphan", f"ou=none,{TEST}"))
    check_equal(rc, 32, "add below a missing parent: noSuchObject (32)")
    rc, out, err = S.ldap_root("ldapadd", input_text=f"dn: uid=nosn,{TEST}\n"
                               "objectClass: inetOrgPerson\nuid: nosn\ncn: x\n\n")
    check_equal(rc, 65, "add an inetOrgPerson without sn: objectClassViolation (65)")
    rc, out, err = S.ldap_root("ldapadd",
                               input_text=entry_ldif("uid=undef", extra="bogusAttr: 1\n"))
    check_equal(rc, 17, "add with an undefined attribute type: undefinedAttributeType (17)")
    rc, out, err = S.ldap_root("ldapadd", input_text=f"dn: uid=norole,{TEST}\n"
                               "objectClass: inetOrgPerson\nuid: norole\ncn: x\nsn: y\n"
                               "uidNumber: notanumber\n\n")
    check(rc in (21, 65), "add with uidNumber: notanumber (and no posixAccount): 21 or 65",
          f"rc {rc}")
    rc, out, err = S.ldap_root("ldapadd", input_text="dn: cn=outside,dc=elsewhere\n"
                               "objectClass: organizationalRole\ncn: outside\n\n")
    check(rc in (32, 53), "add outside the naming context: noSuchObject (32) or 53 as slapd "
          "without a superior database", f"rc {rc}")


def check_modify():
    dn = f"uid=gamma,{TEST}"
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: {dn}\nchangetype: modify\nadd: description\ndescription: one\ndescription: two\n-\n"
        "replace: sn\nsn: Replaced\n-\nadd: mail\nmail: gamma@example.com\n\n"))
    check_equal(rc, 0, "ldapmodify add two descriptions, replace sn, add mail")
    (_, attrs), = search("-b", dn, "-s", "base", "description", "sn", "mail")
    check_equal((sorted(attrs.get("description", [])), attrs.get("sn"), attrs.get("mail")),
                (["one", "two"], ["Replaced"], ["gamma@example.com"]), "the modified values")
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: {dn}\nchangetype: modify\ndelete: description\ndescription: one\n\n"))
    check_equal(rc, 0, "ldapmodify delete one value of description")
    (_, attrs), = search("-b", dn, "-s", "base", "description")
    check_equal(attrs.get("description"), ["two"], "one description value left")
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: {dn}\nchangetype: modify\ndelete: mail\n\n"))
    check_equal(rc, 0, "ldapmodify delete the whole mail attribute")
    (_, attrs), = search("-b", dn, "-s", "base", "mail")
    check_equal(attrs, {}, "mail is gone")
    (_, attrs), = search("-b", dn, "-s", "base", "modifiersName", "modifyTimestamp", bind="root")
    check_equal([v.lower() for v in attrs.get("modifiersname", [])], [ROOT_DN],
                "modifiersName is the rootdn")
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: {dn}\nchangetype: modify\ndelete: description\ndescription: notthere\n\n"))
    check_equal(rc, 16, "delete a value that is not there: noSuchAttribute (16)")
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: {dn}\nchangetype: modify\nadd: description\ndescription: TWO\n\n"))
    check_equal(rc, 20, "add a value equal to an existing one: attributeOrValueExists (20)")
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: {dn}\nchangetype: modify\ndelete: sn\n\n"))
    check_equal(rc, 65, "delete the required sn: objectClassViolation (65)")
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: {dn}\nchangetype: modify\nreplace: uid\nuid: other\n\n"))
    check(rc in (64, 67), "replace the RDN's uid value: refused, namingViolation (64) as slapd "
          "or notAllowedOnRDN (67)", f"rc {rc}")
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: uid=nobody,{TEST}\nchangetype: modify\nreplace: sn\nsn: x\n\n"))
    check_equal(rc, 32, "modify a missing entry: noSuchObject (32)")
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: {dn}\nchangetype: modify\nreplace: entryUUID\n"
        "entryUUID: 00000000-0000-0000-0000-000000000000\n\n"))
    check(rc in (19, 53), "modify the operational entryUUID: constraintViolation (19, as slapd:"
          " no user modification) or 53", f"rc {rc}")
    rc, out, err = S.ldap_root("ldapmodify", input_text=(
        f"dn: {dn}\nchangetype: modify\nadd: description\ndescription: three\n-\n"
        "delete: description\ndescription: notthere\n\n"))
    (_, attrs), = search("-b", dn, "-s", "base", "description")
    check(rc == 16 and attrs.get("description") == ["two"],
          "a modify whose second change fails changes nothing (atomic)",
          f"rc {rc}, description {attrs.get('description')}")
    rc, out, err = S.ldap("ldapmodify", "-x", input_text=(
        f"dn: {dn}\nchangetype: modify\nreplace: sn\nsn: anon\n\n"))
    check_equal(rc, 50, "anonymous modify: insufficientAccess (50)")

    own = user_dn(10)
    rc, out, err = S.ldap("ldapmodify", "-x", "-D", own, "-w", user_pw(10), input_text=(
        f"dn: {own}\nchangetype: modify\nreplace: description\ndescription: mine\n\n"))
    check_equal(rc, 0, "user10 modifies its own entry: success")
    (_, attrs), = search("-b", own, "-s", "base", "description")
    check_equal(attrs.get("description"), ["mine"], "user10's description changed")
    rc, out, err = S.ldap("ldapmodify", "-x", "-D", own, "-w", user_pw(10), input_text=(
        f"dn: {user_dn(11)}\nchangetype: modify\nreplace: description\ndescription: theirs\n\n"))
    check_equal(rc, 50, "user10 modifies user11's entry: insufficientAccess (50)")
    (_, attrs), = search("-b", user_dn(11), "-s", "base", "description")
    check_equal(attrs, {}, "user11 unchanged")


def check_user_password_hidden():
    entries = search("-b", user_dn(20), "-s", "base", "(objectClass=*)", "userPassword")
    check(entries and "userpassword" not in entries[0][1],
          "anonymous search asking for userPassword: the entry, without it", f"{entries}")
    entries = search("-b", user_dn(20), "-s", "base", "(objectClass=*)", "userPassword",
                     bind=bind_as(21))
    check(entries and "userpassword" not in entries[0][1],
          "another user asking for user20's userPassword: not returned", f"{entries}")
    entries = search("-b", user_dn(20), "-s", "base", "(objectClass=*)", "userPassword", "*",
                     "+", bind=bind_as(20))
    check(entries and "userpassword" not in entries[0][1],
          "user20 asking for its own userPassword: not returned either (self =wx, slapd's "
          "'by self =wx by * auth' default for userPassword)", f"{entries}")
    entries = search("-b", PEOPLE, f"(userPassword={user_pw(20)})", "1.1", bind=bind_as(20))
    check_equal(entries, [], "a filter on userPassword does not find even one's own entry")


def check_password_modify():
    dn = user_dn(30)
    rc, out, err = S.ldap("ldappasswd", "-x", "-D", dn, "-w", user_pw(30), "-s", "newpass30")
    check(rc == 0, "ldappasswd -s newpass30 as user30 on itself: success",
          f"rc {rc}, {err.strip()!r}")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", dn, "-w", "newpass30")
    check_equal(rc, 0, "bind with the new password: success")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", dn, "-w", user_pw(30))
    check_equal(rc, 49, "bind with the old password: invalidCredentials (49)")
    rc, out, err = S.ldap("ldappasswd", "-x", "-D", dn, "-w", "newpass30", "-a", "wrongold",
                          "-s", "x")
    check(rc != 0, "ldappasswd with a wrong old password (-a): refused",
          f"rc {rc}, {err.strip()!r}")
    rc, out, err = S.ldap("ldappasswd", "-x", "-D", dn, "-w", "newpass30")
    generated = re.search(r"New password: (\S+)", out)
    check(rc == 0 and generated is not None,
          "ldappasswd without -s: success and a generated password printed",
          f"rc {rc}, stdout {out.strip()!r}, stderr {err.strip()!r}")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", dn, "-w", generated.group(1))
    check_equal(rc, 0, "bind with the generated password: success")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", dn, "-w", "newpass30")
    check_equal(rc, 49, "bind with the previous password: invalidCredentials (49)")
    rc, out, err = S.ldap("ldappasswd", "-x", "-D", user_dn(31), "-w", user_pw(31), "-s", "x",
                          dn)
    check(rc != 0 and "(50)" in out + err,
          "user31 setting user30's password: insufficientAccess (50)",
          f"rc {rc}, output {(out + err).strip()!r}")
    rc, out, err = S.ldap_root("ldappasswd", "-s", "rootset30", dn)
    check_equal(rc, 0, "the rootdn sets user30's password")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", dn, "-w", "rootset30")
    check_equal(rc, 0, "bind with the rootdn-set password: success")
    rc, out, err = S.ldap("ldappasswd", "-x", "-s", "x")
    check(rc != 0, "anonymous ldappasswd (no user identity): refused", f"rc {rc}")


def check_modrdn_and_delete():
    old = f"uid=beta,ou=sub1,{TEST}"
    rc, out, err = S.ldap_root("ldapmodrdn", "-r", old, "uid=beta2")
    check_equal(rc, 0, "ldapmodrdn -r uid=beta -> uid=beta2 (same parent)")
    rc, _, _ = S.ldap("ldapsearch", "-x", "-b", old, "-s", "base")
    check_equal(rc, 32, "the old DN is gone (32)")
    (dn, attrs), = search("-b", f"uid=beta2,ou=sub1,{TEST}", "-s", "base", "uid")
    check_equal(attrs.get("uid"), ["beta2"], "-r removed the old RDN value: uid is beta2 only")
    rc, out, err = S.ldap_root("ldapmodrdn", f"uid=beta2,ou=sub1,{TEST}", "uid=beta3")
    (dn, attrs), = search("-b", f"uid=beta3,ou=sub1,{TEST}", "-s", "base", "uid")
    check(rc == 0 and sorted(attrs.get("uid", [])) == ["beta2", "beta3"],
          "without -r the old RDN value stays: uid beta2 and beta3", f"rc {rc}, {attrs}")
    rc, out, err = S.ldap_root("ldapmodrdn", "-r", "-s", f"ou=sub2,{TEST}",
                               f"uid=beta3,ou=sub1,{TEST}", "uid=beta4")
    check_equal(rc, 0, "ldapmodrdn -s ou=sub2 (newSuperior): moved and renamed")
    entries = search("-b", f"ou=sub2,{TEST}", "-s", "one", "(objectClass=*)", "uid")
    check_equal([(dn.lower(), sorted(a.get("uid", []))) for dn, a in entries],
                [(f"uid=beta4,ou=sub2,{TEST}", ["beta2", "beta4"])],
                "uid=beta4 is under ou=sub2; -r removed the old RDN value beta3 (beta2 stays)")
    rc, _, _ = S.ldap("ldapsearch", "-x", "-b", f"uid=beta3,ou=sub1,{TEST}", "-s", "base")
    check_equal(rc, 32, "nothing left at the old place")
    rc, out, err = S.ldap_root("ldapmodrdn", "-s", f"ou=sub2,{TEST}", f"ou=sub2,{TEST}",
                               "ou=sub2b")
    check(rc in (53, 32, 80), "moving an entry below itself is refused (unwillingToPerform)",
          f"rc {rc}")
    rc, out, err = S.ldap_root("ldapmodrdn", f"uid=gamma,{TEST}", "ou=sub1")
    check_equal(rc, 68, "renaming uid=gamma to the existing ou=sub1: entryAlreadyExists (68)")
    rc, out, err = S.ldap_root("ldapmodrdn", "-s", f"ou=none,{TEST}", f"uid=gamma,{TEST}",
                               "uid=gamma")
    check_equal(rc, 32, "newSuperior that does not exist: noSuchObject (32)")
    rc, out, err = S.ldap_root("ldapmodrdn", f"uid=nobody,{TEST}", "uid=x")
    check_equal(rc, 32, "renaming a missing entry: noSuchObject (32)")
    rc, out, err = S.ldap("ldapmodrdn", "-x", "-D", user_dn(1), "-w", user_pw(1),
                          f"uid=gamma,{TEST}", "uid=gamma9")
    check_equal(rc, 50, "renaming as an ordinary user: insufficientAccess (50)")
    rc, out, err = S.ldap_root("ldapmodrdn", f"ou=sub1,{TEST}", "ou=sub1renamed")
    check(rc in (0, 66), "renaming a non-leaf (slapd back-mdb allows it; 66 if not supported)",
          f"rc {rc}, {err.strip()!r}")
    sub1 = f"ou=sub1renamed,{TEST}" if rc == 0 else f"ou=sub1,{TEST}"
    if rc == 0:
        entries = search("-b", sub1, "-s", "one", "(objectClass=*)", "1.1")
        check_equal(dns(entries), sorted([f"uid=alpha,{sub1}"]),
                    "the renamed subtree's child has the new DN")
        rc, out, err = S.ldap("ldapwhoami", "-x", "-D", f"uid=alpha,{sub1}", "-w", "alphapw")
        check_equal(rc, 0, "bind as the child under its new DN")

    rc, out, err = S.ldap_root("ldapdelete", TEST)
    check_equal(rc, 66, "delete ou=test, which has children: notAllowedOnNonLeaf (66)")
    rc, out, err = S.ldap("ldapdelete", "-x", f"uid=gamma,{TEST}")
    check_equal(rc, 50, "anonymous delete: insufficientAccess (50)")
    rc, out, err = S.ldap_root("ldapdelete", f"uid=gamma,{TEST}")
    check_equal(rc, 0, "delete the leaf uid=gamma")
    rc, _, _ = S.ldap("ldapsearch", "-x", "-b", f"uid=gamma,{TEST}", "-s", "base")
    check_equal(rc, 32, "uid=gamma is gone")
    rc, out, err = S.ldap_root("ldapdelete", f"uid=gamma,{TEST}")
    check_equal(rc, 32, "delete it again: noSuchObject (32)")
    rc, out, err = S.ldap_root("ldapdelete", "-r", TEST)
    check_equal(rc, 0, "ldapdelete -r ou=test (client-side recursive delete, leaves first)")
    rc, _, _ = S.ldap("ldapsearch", "-x", "-b", TEST, "-s", "base")
    check_equal(rc, 32, "ou=test is gone")
    (_, attrs), = search("-b", SUFFIX, "-s", "base", "hasSubordinates", "numSubordinates")
    check_equal(attrs.get("hassubordinates"), ["TRUE"], "the suffix still hasSubordinates TRUE")


def set_server(server):
    global S
    S = server


def main() -> int:
    args = parse_args(__doc__.split("\n")[0])
    return run_suite("ldap_utils", args, [
        ("bind and whoami", check_bind_and_whoami),
        ("root DSE and subschema", check_root_dse),
        ("search scopes", check_scopes),
        ("search filters", check_filters),
        ("attribute lists", check_attribute_lists),
        ("limits, errors, controls, extended operations", check_limits_and_errors),
        ("compare", check_compare),
        ("userPassword is never disclosed", check_user_password_hidden),
        ("add", check_add),
        ("modify", check_modify),
        ("password modify (ldappasswd)", check_password_modify),
        ("modrdn and delete", check_modrdn_and_delete),
    ], set_server, users=USERS)


if __name__ == "__main__":
    sys.exit(main())
