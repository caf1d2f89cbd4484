#!/usr/bin/python3
"""Differential test: the same scripted LDAP requests against numadir and against OpenLDAP
slapd (the reference), and the answers compared.

  differential_test.py --numadir build/release/server/numadir --gen perf/gen_users.py [-v]

Both servers get the same LDIF (gen_users.py --users 200 plus EXTRA_LDIF: groups, UTF-8 values,
multi-valued RDNs), the same schema (core, cosine, inetorgperson, nis), the same indexes
(objectClass eq, uid eq), the same rootdn/rootpw and the same access policy (numadir's built-in
default, server/operations/access_control.h, written as slapd `access to` lines in SLAPD_ACCESS). slapd is
Debian's /usr/sbin/slapd with back-mdb, started by slapd_harness.py on a free loopback port.

Every request in REQUESTS runs on a fresh connection (bound as the request says), first against
numadir, then against slapd; updates run in the same order on both, so both directories evolve
the same way. Compared: the result code; the matchedDN (normalized); for searches the set of
returned DNs (normalize_dn: lowercased, no spaces after commas, one escaping form, the AVAs of
a multi-valued RDN sorted) and, per entry, the user attributes (names case-insensitive, values
as sets; hashed userPassword values by scheme only, since salts differ); operational attributes
only where asked for: by name (values compared unless they are inherently server-specific, like
timestamps and UUIDs) or by '+' (names compared, those only one server has must be listed in
KNOWN_OPERATIONAL_ATTRIBUTES); for compare, whoami and password modify their answers. The
diagnosticMessage is shown with a difference but not compared.

A difference must be listed in KNOWN_DIFFERENCES with the exact difference lines this test
prints, a reason and a verdict: NUMADIR_BUG (numadir should answer as slapd does) or ACCEPTED
(an RFC or a documented numadir choice justifies numadir's answer). Any other difference, or a
listed one that changed or vanished (fixed: remove its entry), fails the test. Exits 0 when there
is no new difference, 1 otherwise. With -v every identical answer is printed too; with the
environment variable DIFFERENTIAL_DUMP=<file> the new differences are appended to <file> as
(name, lines), ready to paste into KNOWN_DIFFERENCES.
"""
import base64
import os
import subprocess
import sys
import tempfile
import time

import ldap  # python3-ldap
import ldap.dn
import ldap.modlist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    GROUPS, PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, CheckFailed, NumadirServer, fail, parse_args,
    user_dn, user_pw)
import slapd_harness  # noqa: E402

USERS = 200
TEST = f"ou=difftest,{SUFFIX}"
DEVICES = f"ou=devices,{SUFFIX}"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


RMULLER_DN = f"cn=Renée Müller+uid=rmuller,{PEOPLE}"
JANE_DN = f"cn=Jane Doe+employeeNumber=42,{PEOPLE}"
RMULLER_PW = "grüße-rpw"
JANE_PW = "janepw"
# userPassword values are written in cleartext so that both servers hold the same bytes (slapd
# accepts a cleartext userPassword for simple binds; numadir does with passwords.allow_cleartext,
# which DifferentialNumadir sets).
EXTRA_LDIF = f"""dn:: {b64(RMULLER_DN)}
objectClass: top
objectClass: person
objectClass: organizationalPerson
objectClass: inetOrgPerson
cn:: {b64("Renée Müller")}
uid: rmuller
sn:: {b64("Müller")}
givenName:: {b64("Renée")}
mail: rmuller@example.com
description:: {b64("Zürich, Straße 5 ☃")}
telephoneNumber: +41 44 555 0100
telephoneNumber: +41 44 555 0101
userPassword:: {b64(RMULLER_PW)}

dn: {JANE_DN}
objectClass: inetOrgPerson
cn: Jane Doe
sn: Doe
employeeNumber: 42
displayName: Jane
userPassword: {JANE_PW}

dn: cn=Comma\\, Inc.,{GROUPS}
objectClass: groupOfNames
cn: Comma, Inc.
member: uid=user1,{PEOPLE}
member:: {b64(RMULLER_DN)}

dn: cn=admins,{GROUPS}
objectClass: groupOfNames
cn: admins
description: the administrators
member: uid=user0,{PEOPLE}
member: uid=user3,{PEOPLE}

dn: cn=staff,{GROUPS}
objectClass: posixGroup
cn: staff
gidNumber: 5000
memberUid: user1
memberUid: user2

dn: {DEVICES}
objectClass: organizationalUnit
ou: devices

dn: cn=printer1,{DEVICES}
objectClass: device
objectClass: ipHost
cn: printer1
ipHostNumber: 10.0.0.5
serialNumber: SN-0001
"""

# numadir's default policy (server/operations/access_control.h) in slapd's terms. slapd's rootdn bypasses
# access control, as numadir's rootdn does. `children` is write for the rootdn only: slapd
# would otherwise let `by self write` add entries below one's own entry.
SLAPD_ACCESS = """access to attrs=userPassword
  by self =wx
  by * auth
access to attrs=children
  by * read
access to *
  by self write
  by * read
"""

# Server-specific values: compared by presence only, even when asked for by name.
VOLATILE_OPERATIONAL = {"entryuuid", "entrycsn", "createtimestamp", "modifytimestamp",
                        "creatorsname", "modifiersname", "contextcsn"}
# Every operational attribute either server may return (lowercased). Dropped from the
# comparison unless asked for by name or by '+'.
OPERATIONAL = VOLATILE_OPERATIONAL | {
    "structuralobjectclass", "entrydn", "subschemasubentry", "hassubordinates",
    "numsubordinates", "pwdchangedtime", "namingcontexts", "supportedldapversion",
    "supportedextension", "supportedcontrol", "supportedfeatures", "supportedsaslmechanisms",
    "vendorname", "vendorversion", "altserver", "configcontext", "monitorcontext",
    "objectclasses", "attributetypes", "matchingrules", "matchingruleuse", "ldapsyntaxes",
    "ditcontentrules", "ditstructurerules", "nameforms", "entryttl", "pwdpolicysubentry",
    "collectiveattributesubentries", "collectiveexclusions", "administrativerole",
    "subtreespecification", "hassubordinates"}
# Attributes with DN syntax: values compared as normalized DNs (normalize_dn).
DN_VALUED = {"entrydn", "subschemasubentry", "member", "namingcontexts", "creatorsname",
             "modifiersname", "uniquemember", "seealso", "manager", "owner"}

# The verdict of a known difference: numadir should change to answer as slapd does, or
# numadir's answer is right too (an RFC, or a documented numadir design choice).
NUMADIR_BUG = "NUMADIR BUG"
ACCEPTED = "ACCEPTED"

BIND_DN = (ACCEPTED,
           "numadir's deliberate choice (server/operations/bind_operation.h): a simple bind that fails for "
           'any reason tied to the name or the password, a malformed DN included, gets '
           'invalidCredentials (49) with the same empty message, so a client cannot probe names; '
           'RFC 4511 4.2.2 does not require invalidDNSyntax (34) there')
APPROX = (ACCEPTED,
          "RFC 4511 4.5.1.7.6: approximate matching is 'locally-defined'; numadir treats "
          'approxMatch as equalityMatch (backend/filter_eval.h), as the RFC says to when no '
          'approximate algorithm is offered; slapd uses a phonetic code that drops digits, so '
          "(cn~=User 15) matches every 'User N'")
EXT = (ACCEPTED,
       'feature set: slapd also implements Cancel (RFC 3909, 1.3.6.1.1.8) and LDAP Transactions '
       "(RFC 5805, 1.3.6.1.1.21.1/.3); numadir's root DSE lists exactly what it implements "
       '(Password Modify, Who am I?)')
ENTRYDN_CMP = (ACCEPTED,
               "slapd limitation ('entryDN compare not supported'); RFC 5020 gives entryDN "
               "EQUALITY distinguishedNameMatch, so numadir's compareTrue is right")
ANON_WRITE = (ACCEPTED,
              "slapd refuses every update from an anonymous session before access control "
              "unless `allow update_anon` is set (slapd.conf(5)) and answers "
              "strongerAuthRequired (8); numadir has no such switch and answers its access "
              "policy's insufficientAccessRights (50), the RFC 4511 Appendix A.2 code for a "
              "denied operation; neither discloses whether the entry exists")
NOT_ALLOWED_ON_RDN = (ACCEPTED,
                      'RFC 4511 Appendix A.2: notAllowedOnRDN (67) is for an operation that '
                      "'attempted to affect the RDN (e.g., removal of an attribute value forming "
                      "an entry's name)', which this modify is; slapd reports its schema check's "
                      'namingViolation (64)')
MATCHED_NEWSUP = (ACCEPTED,
                  'both answer noSuchObject (32) for a missing newSuperior; numadir also names the'
                  ' lowest existing entry of that DN as matchedDN (RFC 4511 4.1.9), slapd leaves '
                  'it empty; harmless')
PASSWD_MATCHED = (ACCEPTED,
                  'Password Modify (RFC 3062) for an identity without an entry: both answer '
                  'noSuchObject (32); numadir also sets matchedDN to the lowest existing entry '
                  '(RFC 4511 4.1.9), slapd leaves it empty; harmless')
PASSWD_DN = (ACCEPTED,
             'a userIdentity that is not a DN: numadir answers invalidDNSyntax (34), the RFC 4511 '
             "Appendix A.2 code for a malformed DN; slapd passes on its DN normalizer's "
             "invalidAttributeSyntax (21), with the same text 'Invalid DN'")

# request name (without its [details]) -> ((verdict, reason), [the exact difference lines
# this test prints for it]). Regenerate the lines with DIFFERENTIAL_DUMP=<file>.
KNOWN_DIFFERENCES = {
    'bind malformed DN': (BIND_DN, [
        'rc: numadir 49, slapd 34',
    ]),
    'search approx sn misspelled': (APPROX, [
        'entry count: numadir 0, slapd 13',
        'entry only from slapd: uid=user110,ou=people,dc=example,dc=com',
        'entry only from slapd: uid=user125,ou=people,dc=example,dc=com',
        'entry only from slapd: uid=user140,ou=people,dc=example,dc=com',
        'entry only from slapd: uid=user155,ou=people,dc=example,dc=com',
        'entry only from slapd: uid=user170,ou=people,dc=example,dc=com',
        '... 13 entries only from slapd',
    ]),
    'search approx cn': (APPROX, [
        'entry count: numadir 1, slapd 200',
        'entry only from slapd: uid=user0,ou=people,dc=example,dc=com',
        'entry only from slapd: uid=user1,ou=people,dc=example,dc=com',
        'entry only from slapd: uid=user10,ou=people,dc=example,dc=com',
        'entry only from slapd: uid=user100,ou=people,dc=example,dc=com',
        'entry only from slapd: uid=user101,ou=people,dc=example,dc=com',
        '... 199 entries only from slapd',
    ]),
    'search root DSE extensions': (EXT, [
        'operational supportedextension values: numadir {1.3.6.1.4.1.4203.1.11.1, '
        '1.3.6.1.4.1.4203.1.11.3}, slapd {1.3.6.1.1.21.1, 1.3.6.1.1.21.3, 1.3.6.1.1.8, '
        '1.3.6.1.4.1.4203.1.11.1, ... (5)} (the root DSE)',
    ]),
    'compare entryDN': (ENTRYDN_CMP, [
        'rc: numadir 6, slapd 53',
    ]),
    'add existing entry as anonymous': (ANON_WRITE, [
        'rc: numadir 50, slapd 8',
    ]),
    'add as anonymous': (ANON_WRITE, [
        'rc: numadir 50, slapd 8',
    ]),
    'modify delete the naming attribute': (NOT_ALLOWED_ON_RDN, [
        'rc: numadir 67, slapd 64',
    ]),
    'modify replace the naming value': (NOT_ALLOWED_ON_RDN, [
        'rc: numadir 67, slapd 64',
    ]),
    'modify as anonymous': (ANON_WRITE, [
        'rc: numadir 50, slapd 8',
    ]),
    'modrdn newSuperior missing': (MATCHED_NEWSUP, [
        "matched: numadir 'ou=difftest,dc=example,dc=com', slapd ''",
    ]),
    'modrdn as anonymous': (ANON_WRITE, [
        'rc: numadir 50, slapd 8',
    ]),
    'delete as anonymous': (ANON_WRITE, [
        'rc: numadir 50, slapd 8',
    ]),
    'passwd rootdn, missing user': (PASSWD_MATCHED, [
        "matched: numadir 'ou=people,dc=example,dc=com', slapd ''",
    ]),
    'passwd rootdn, malformed user id': (PASSWD_DN, [
        'rc: numadir 34, slapd 21',
    ]),
    'passwd rootdn for itself': (PASSWD_MATCHED, [
        "matched: numadir 'dc=example,dc=com', slapd ''",
    ]),
}

# Operational attributes that '+' returns from one server only: lowercased name -> (the server
# that returns it, (verdict, reason)).
KNOWN_OPERATIONAL_ATTRIBUTES = {
    "numsubordinates": ("numadir", (ACCEPTED,
                                    "numadir computes numSubordinates "
                                    "(draft-boreham-numsubordinates); back-mdb offers only "
                                    "hasSubordinates, and '+' returns whatever operational "
                                    "attributes a server has (RFC 3673)")),
}


# -- identities and connections -------------------------------------------------------------------
ANON = None
ROOT = (ROOT_DN, ROOT_PW)


def user(n: int):
    return (user_dn(n), user_pw(n))


def who_name(who) -> str:
    if who is None:
        return "anonymous"
    if who == ROOT:
        return "rootdn"
    return who[0].split(",")[0]


def connect(url: str, who):
    conn = ldap.initialize(url, bytes_mode=False)
    conn.protocol_version = 3
    conn.set_option(ldap.OPT_REFERRALS, 0)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    conn.set_option(ldap.OPT_TIMEOUT, 30)
    if who is not None:
        try:
            conn.simple_bind_s(*who)
        except ldap.LDAPError as error:
            raise CheckFailed(f"setup: bind as {who[0]} on {url} failed: {error}")
    return conn


def error_outcome(error: ldap.LDAPError) -> dict:
    info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
    rc = info.get("result")
    if rc is None:
        rc = f"{type(error).__name__}"
    # Keys starting with "_" are shown with a difference but not compared.
    return {"rc": rc, "matched": normalize_dn(info.get("matched", "") or ""),
            "_info": info.get("info", "")}


def normalize_dn(dn: str) -> str:
    """Lowercased, no spaces after separators, one escaping form (RFC 4514 lets a server write
    `\\,` or `\\2C`; python-ldap's str2dn/dn2str settle on one), the AVAs of a multi-valued RDN
    in one order."""
    if dn.lower().startswith("dn:"):
        return "dn:" + normalize_dn(dn[3:])
    try:
        # An RDN is a set of AVAs (RFC 4512 2.3.1): sort them.
        rdns = [sorted(rdn, key=lambda ava: (ava[0].lower(), ava[1].lower()))
                for rdn in ldap.dn.str2dn(dn)]
        return ldap.dn.dn2str(rdns).lower()
    except ldap.DECODING_ERROR:
        return dn.lower().replace(", ", ",")


def value_key(name: str, value: bytes):
    if name in DN_VALUED:
        try:
            return normalize_dn(value.decode())
        except UnicodeDecodeError:
            return value
    if name == "structuralobjectclass":
        return value.decode().lower()
    if name == "userpassword" and value.startswith(b"{") and b"}" in value:
        # A hashed value: salted, so only the scheme can agree between two servers (both hash
        # with {SSHA}: slapd's default password-hash, numadir's passwords.default_scheme here).
        return value[:value.index(b"}") + 1].upper() + b"<hash>"
    return value


# -- requests ----------------------------------------------------------------------------------
REQUESTS = []  # (name, function(url) -> outcome dict)


def short_name(name: str) -> str:
    """The request's name without its bracketed details: the key of KNOWN_DIFFERENCES."""
    return name.split(" [")[0]


def request(name: str, function):
    if any(short_name(existing) == short_name(name) for existing, _ in REQUESTS):
        raise ValueError(f"duplicate request name {short_name(name)}")
    REQUESTS.append((name, function))


def run_op(url: str, who, operation) -> dict:
    try:
        conn = connect(url, who)
    except CheckFailed as error:
        return {"setup bind failed": str(error).split(" on ldap://")[0]}
    try:
        return operation(conn)
    except ldap.LDAPError as error:
        return error_outcome(error)
    finally:
        try:
            conn.unbind_s()
        except ldap.LDAPError:
            pass


def bind(name: str, dn: str, password: str):
    def function(url):
        conn = connect(url, None)
        try:
            conn.simple_bind_s(dn, password)
            outcome = {"rc": 0, "whoami": normalize_dn(conn.whoami_s())}
        except ldap.LDAPError as error:
            outcome = error_outcome(error)
            # After a failed bind the connection is anonymous (RFC 4511 4.2.1).
            try:
                outcome["whoami after"] = conn.whoami_s()
            except ldap.LDAPError as second:
                outcome["whoami after"] = error_outcome(second)["rc"]
        conn.unbind_s()
        return outcome
    request(f"bind {name}", function)


def search(name: str, base: str, scope: int, filterstr: str = "(objectClass=*)", attrs=None,
           attrsonly: int = 0, sizelimit: int = 0, who=ANON):
    scope_name = {ldap.SCOPE_BASE: "base", ldap.SCOPE_ONELEVEL: "one",
                  ldap.SCOPE_SUBTREE: "sub", ldap.SCOPE_SUBORDINATE: "subordinate"}[scope]

    def operation(conn):
        msgid = conn.search_ext(base, scope, filterstr, attrs, attrsonly, sizelimit=sizelimit)
        entries = []
        outcome = {"rc": 0, "matched": ""}
        try:
            while True:
                rtype, rdata, _, _ = conn.result3(msgid, all=0, timeout=30)
                entries.extend(item for item in rdata if item[0] is not None)
                if rtype == ldap.RES_SEARCH_RESULT:
                    break
        except ldap.LDAPError as error:
            outcome = error_outcome(error)
        outcome["entries"] = {normalize_dn(dn): attributes for dn, attributes in entries}
        outcome["entry count"] = len(entries)
        return outcome

    request(f"search {name} [{scope_name} {filterstr} attrs={attrs}"
            f"{' typesOnly' if attrsonly else ''}{f' sizelimit={sizelimit}' if sizelimit else ''}"
            f" as {who_name(who)}]",
            lambda url: run_op(url, who, operation) | {"attrs": attrs, "sizelimit": sizelimit})


def compare(name: str, dn: str, attr: str, value: str, who=ANON):
    def operation(conn):
        return {"rc": 6 if conn.compare_s(dn, attr, value.encode()) else 5, "matched": ""}
    request(f"compare {name} [{attr}={value} as {who_name(who)}]",
            lambda url: run_op(url, who, operation))


def add(name: str, dn: str, attributes: dict, who=ROOT):
    modlist = [(a, [v.encode() for v in (vs if isinstance(vs, list) else [vs])])
               for a, vs in attributes.items()]

    def operation(conn):
        conn.add_s(dn, modlist)
        return {"rc": 0, "matched": ""}
    request(f"add {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def modify(name: str, dn: str, mods, who=ROOT):
    modlist = [(op, a, None if vs is None else
                [v.encode() for v in (vs if isinstance(vs, list) else [vs])])
               for op, a, vs in mods]

    def operation(conn):
        conn.modify_s(dn, modlist)
        return {"rc": 0, "matched": ""}
    request(f"modify {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def delete(name: str, dn: str, who=ROOT):
    def operation(conn):
        conn.delete_s(dn)
        return {"rc": 0, "matched": ""}
    request(f"delete {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def rename(name: str, dn: str, newrdn: str, newsuperior=None, delold: int = 1, who=ROOT):
    def operation(conn):
        conn.rename_s(dn, newrdn, newsuperior, delold)
        return {"rc": 0, "matched": ""}
    request(f"modrdn {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def cleanup(dn: str):
    """Deletes `dn` if it exists, so that one server's extra entry does not spread into later
    answers. Not compared."""
    def function(url):
        try:
            run_op(url, ROOT, lambda conn: conn.delete_s(dn))
        except CheckFailed:
            pass
        return None
    request(f"cleanup: delete {dn} where it exists", function)


def whoami(name: str, who):
    request(f"whoami {name}",
            lambda url: run_op(url, who, lambda conn: {"rc": 0,
                                                       "whoami": normalize_dn(conn.whoami_s())}))


def passwd(name: str, target, old, new, who):
    def operation(conn):
        _, generated = conn.passwd_s(target, old, new, extract_newpw=True)
        return {"rc": 0, "matched": "", "generated": generated is not None}
    request(f"passwd {name} [as {who_name(who)}]", lambda url: run_op(url, who, operation))


def sequence(name: str, who, steps):
    """Several operations on one connection (e.g. bind, then read); the outcome of each."""
    def function(url):
        conn = connect(url, who)
        outcome = {}
        for index, (label, step) in enumerate(steps):
            try:
                outcome[f"{index} {label}"] = step(conn)
            except ldap.LDAPError as error:
                outcome[f"{index} {label}"] = error_outcome(error)["rc"]
        conn.unbind_s()
        return outcome
    request(f"sequence {name} [as {who_name(who)}]", function)


# -- the script ----------------------------------------------------------------------------------
BASE, ONE, SUB = ldap.SCOPE_BASE, ldap.SCOPE_ONELEVEL, ldap.SCOPE_SUBTREE
U5 = user_dn(5)


def define_requests():
    # Binds.
    bind("anonymous", "", "")
    bind("rootdn", ROOT_DN, ROOT_PW)
    bind("rootdn wrong password", ROOT_DN, "wrong")
    bind("rootdn differently spelled", "CN=Admin, DC=Example,DC=COM", ROOT_PW)
    bind("user ok", U5, user_pw(5))
    bind("user DN upper case and spaces", "UID=User5, OU=People, DC=Example, DC=Com", user_pw(5))
    bind("user wrong password", U5, "wrong")
    bind("missing DN", f"uid=ghost,{PEOPLE}", "whatever")
    bind("missing DN below a missing parent", f"uid=ghost,ou=nowhere,{SUFFIX}", "whatever")
    bind("DN outside the naming context", "uid=x,dc=other,dc=org", "whatever")
    bind("DN with empty password", U5, "")
    bind("rootdn with empty password", ROOT_DN, "")
    bind("empty DN with a password", "", "secret")
    bind("entry without userPassword", PEOPLE, "whatever")
    bind("UTF-8 multi-valued RDN user", RMULLER_DN, RMULLER_PW)
    bind("multi-valued RDN, AVAs swapped", f"employeeNumber=42+cn=Jane Doe,{PEOPLE}", JANE_PW)
    bind("malformed DN", "not a dn", "x")

    # Searches: scopes.
    search("base on the suffix", SUFFIX, BASE)
    search("one-level under the suffix", SUFFIX, ONE, attrs=["1.1"])
    search("whole tree, DNs only", SUFFIX, SUB, attrs=["1.1"])
    search("whole tree, all user attributes", SUFFIX, SUB)
    search("one-level under ou=groups", GROUPS, ONE)
    search("sub under ou=devices", DEVICES, SUB)
    search("base on a user, filter not matching", U5, BASE, "(uid=user6)")
    search("one-level on a leaf", U5, ONE)

    # Searches: filters.
    people_filters = [
        ("equality uid", "(uid=user7)"),
        ("equality uid, other case", "(UID=USER7)"),
        ("equality cn with spaces", "(cn=user  7)"),
        ("substring initial", "(cn=User 1*)"),
        ("substring any", "(cn=*ser 1*)"),
        ("substring final", "(cn=*5)"),
        ("substring initial any final", "(cn=U*r*1*5)"),
        ("substring mail final", "(mail=*9@example.com)"),
        ("substring on uid", "(uid=user1*)"),
        ("equality mail other case", "(mail=USER1@EXAMPLE.COM)"),
        ("presence sn", "(sn=*)"),
        ("presence description", "(description=*)"),
        ("presence employeeNumber", "(employeeNumber=*)"),
        ("greater-or-equal integer", "(uidNumber>=10190)"),
        ("less-or-equal integer", "(uidNumber<=10005)"),
        ("less-or-equal gidNumber", "(gidNumber<=10000)"),
        ("greater-or-equal on sn (no ORDERING rule)", "(sn>=W)"),
        ("greater-or-equal on uid (no ORDERING rule)", "(uid>=user9)"),
        ("approx sn exact", "(sn~=Wilson)"),
        ("approx sn misspelled", "(sn~=Wilsen)"),
        ("approx cn", "(cn~=User 15)"),
        ("and/or/not", "(&(objectClass=posixAccount)(|(uid=user1)(uid=user2))(!(uid=user2)))"),
        ("not inetOrgPerson", "(!(objectClass=inetOrgPerson))"),
        ("nested not of or",
         "(&(objectClass=inetOrgPerson)(!(|(sn=Smith)(sn=Jones)(sn=Taylor))))"),
        ("objectClass superclass not listed", "(&(objectClass=person)(employeeNumber=42))"),
        ("or of and", "(|(&(sn=Smith)(uidNumber<=10020))(&(sn=Wilson)(uidNumber>=10180)))"),
        ("objectClass superclass listed", "(objectClass=organizationalPerson)"),
        ("objectClass upper case", "(objectClass=INETORGPERSON)"),
        ("objectClass by OID", "(objectClass=2.16.840.1.113730.3.2.2)"),
        ("attribute by OID", "(0.9.2342.19200300.100.1.1=user8)"),
        ("UTF-8 equality", "(cn=Renée Müller)"),
        ("UTF-8 equality, other case", "(cn=RENÉE MÜLLER)"),
        ("UTF-8 substring", "(sn=M*ller)"),
        ("UTF-8 substring in description", "(description=*Straße*)"),
        ("telephoneNumber without spaces", "(telephoneNumber=+41445550100)"),
        ("multi-valued RDN attribute", "(employeeNumber=42)"),
        ("userPassword presence (auth-only)", "(userPassword=*)"),
        ("userPassword equality (auth-only)", "(userPassword=password5)"),
        ("not userPassword presence", "(&(uid=user5)(!(userPassword=*)))"),
        ("undefined attribute type", "(fooBar=x)"),
        ("not of undefined attribute type", "(&(uid=user5)(!(fooBar=x)))"),
        ("invalid integer assertion", "(uidNumber=abc)"),
        ("not of invalid integer assertion", "(&(uid=user5)(!(uidNumber=abc)))"),
        ("absolute true", "(&)"),
        ("absolute false", "(|)"),
        ("extensible caseExactMatch", "(cn:caseExactMatch:=User 5)"),
        ("extensible caseExactMatch, other case", "(cn:caseExactMatch:=user 5)"),
        ("extensible dn attributes", "(ou:dn:=people)"),
        ("escaped parenthesis value", "(cn=\\28none\\29)"),
    ]
    for name, filterstr in people_filters:
        search(name, PEOPLE, SUB, filterstr, attrs=["*"])
    group_filters = [
        ("member DN equality", f"(member=uid=user1,{PEOPLE})"),
        ("member DN equality, other spelling", "(member=UID=User1, OU=People, DC=Example, DC=Com)"),
        ("member UTF-8 DN", f"(member={RMULLER_DN})"),
        ("memberUid", "(memberUid=user2)"),
        ("escaped comma in cn", "(cn=Comma, Inc.)"),
        ("gidNumber on posixGroup", "(gidNumber=5000)"),
        ("ipHostNumber", "(ipHostNumber=10.0.0.5)"),
    ]
    for name, filterstr in group_filters:
        search(name, SUFFIX, SUB, filterstr, attrs=["*"])

    # Searches: attribute selections.
    search("no attribute list", U5, BASE)
    search("'*'", U5, BASE, attrs=["*"])
    search("'+'", U5, BASE, attrs=["+"])
    search("'*' and '+'", U5, BASE, attrs=["*", "+"])
    search("'1.1'", U5, BASE, attrs=["1.1"])
    search("'1.1' with a name", U5, BASE, attrs=["1.1", "cn"])
    search("specific names", U5, BASE, attrs=["cn", "mail", "uidNumber"])
    search("names in other case and an unknown one", U5, BASE, attrs=["CN", "MAIL", "fooBar"])
    search("by OID", U5, BASE, attrs=["2.5.4.3", "0.9.2342.19200300.100.1.3"])
    search("supertype 'name'", U5, BASE, attrs=["name"])
    search("objectClass only", U5, BASE, attrs=["objectClass"])
    search("typesOnly specific", U5, BASE, attrs=["cn", "mail"], attrsonly=1)
    search("typesOnly all", U5, BASE, attrs=["*"], attrsonly=1)
    search("operational by name", U5, BASE,
           attrs=["entryDN", "hasSubordinates", "subschemaSubentry", "structuralObjectClass"])
    search("hasSubordinates of the suffix", SUFFIX, BASE, attrs=["hasSubordinates", "entryDN"])
    search("volatile operational by name", U5, BASE,
           attrs=["entryUUID", "createTimestamp", "creatorsName"])
    search("UTF-8 entry all", RMULLER_DN, BASE, attrs=["*"])
    search("UTF-8 entry '+'", RMULLER_DN, BASE, attrs=["+"])
    search("multi-valued RDN base, AVAs swapped", f"employeeNumber=42+cn=Jane Doe,{PEOPLE}",
           BASE, attrs=["*"])
    search("group with escaped comma '+'", f"cn=Comma\\, Inc.,{GROUPS}", BASE, attrs=["+"])
    search("ou '+'", PEOPLE, BASE, attrs=["+"])
    search("suffix '+'", SUFFIX, BASE, attrs=["+"])

    # userPassword visibility.
    for label, who in (("anonymous", ANON), ("self", user(5)), ("another user", user(6)),
                       ("rootdn", ROOT)):
        search(f"userPassword by name, {label}", U5, BASE, attrs=["userPassword"], who=who)
        search(f"'*', {label}", U5, BASE, attrs=["*"], who=who)
    search("userPassword filter as rootdn", PEOPLE, SUB, "(userPassword=*)", attrs=["1.1"],
           who=ROOT)
    search("userPassword filter as self", PEOPLE, SUB, "(userPassword=*)", attrs=["1.1"],
           who=user(5))

    # Size limits.
    search("client size limit 5", PEOPLE, ONE, attrs=["1.1"], sizelimit=5)
    search("client size limit 5, rootdn", PEOPLE, ONE, attrs=["1.1"], sizelimit=5, who=ROOT)
    search("client size limit equal to the result", PEOPLE, SUB, "(uidNumber<=10004)",
           attrs=["1.1"], sizelimit=5)
    search("client size limit above the result", PEOPLE, SUB, "(uidNumber<=10004)",
           attrs=["1.1"], sizelimit=6)
    search("client size limit 1 on a base search", U5, BASE, attrs=["1.1"], sizelimit=1)

    # Missing and odd bases.
    search("missing base", f"uid=ghost,{PEOPLE}", BASE)
    search("missing base, sub", f"uid=ghost,{PEOPLE}", SUB)
    search("missing base two levels down", f"uid=x,ou=nowhere,{SUFFIX}", ONE)
    search("base outside the naming context", "dc=other,dc=org", SUB)
    search("malformed base DN", "not a dn", BASE)
    search("base in other case with spaces", "OU=People, DC=Example, DC=Com", BASE)
    search("root DSE naming contexts", "", BASE, attrs=["namingContexts", "supportedLDAPVersion"])
    search("root DSE extensions", "", BASE, attrs=["supportedExtension"])
    search("root DSE subschemaSubentry", "", BASE, attrs=["subschemaSubentry"])
    search("subschema entry exists", "cn=Subschema", BASE, "(objectClass=subschema)",
           attrs=["1.1"])
    # The root DSE and cn=Subschema are filtered by the same evaluator as stored entries.
    search("root DSE substring on objectClass (no SUBSTR rule)", "", BASE, "(objectClass=*top*)",
           attrs=["1.1"])
    search("root DSE approximate objectClass", "", BASE, "(objectClass~=top)", attrs=["1.1"])
    search("root DSE not of an undefined item", "", BASE, "(!(objectClass=*top*))",
           attrs=["1.1"])
    search("subschema substring on cn", "cn=Subschema", BASE, "(cn=sub*)", attrs=["1.1"])
    search("subschema substring that misses", "cn=Subschema", BASE, "(cn=*monitor*)",
           attrs=["1.1"])
    search("subschema extensible on cn", "cn=Subschema", BASE, "(cn:caseExactMatch:=Subschema)",
           attrs=["1.1"])
    search("base DN with an undefined attribute type", f"fooBar=x,{PEOPLE}", BASE)
    search("subordinate scope (draft-sermersheim-ldap-subordinate-scope)", GROUPS,
           ldap.SCOPE_SUBORDINATE, attrs=["1.1"])
    search("filter on entryDN", SUFFIX, SUB, f"(entryDN={U5})", attrs=["1.1"])
    search("filter on hasSubordinates", SUFFIX, SUB, "(hasSubordinates=TRUE)", attrs=["1.1"])
    search("filter on createTimestamp", SUFFIX, SUB, "(createTimestamp>=20000101000000Z)",
           attrs=["1.1"])

    # Compare.
    compare("true", U5, "sn", "Wilson")
    compare("false", U5, "sn", "Smith")
    compare("case-insensitive true", U5, "uid", "USER5")
    compare("integer", U5, "uidNumber", "10005")
    compare("integer, invalid assertion", U5, "uidNumber", "abc")
    compare("objectClass", U5, "objectClass", "PERSON")
    compare("UTF-8 value", RMULLER_DN, "cn", "renée müller")
    compare("member DN other spelling", f"cn=admins,{GROUPS}", "member",
            "UID=User3, OU=People, DC=Example, DC=Com")
    compare("attribute missing from entry", U5, "description", "x")
    compare("undefined attribute type", U5, "fooBar", "x")
    compare("missing entry", f"uid=ghost,{PEOPLE}", "sn", "x")
    compare("userPassword anonymous", U5, "userPassword", user_pw(5))
    compare("userPassword self", U5, "userPassword", user_pw(5), who=user(5))
    compare("userPassword rootdn", JANE_DN, "userPassword", JANE_PW, who=ROOT)
    compare("entryDN", U5, "entryDN", U5)
    compare("supertype name", U5, "name", "Wilson")

    # Whoami.
    whoami("anonymous", ANON)
    whoami("rootdn", ROOT)
    whoami("user", user(5))
    whoami("UTF-8 user", (RMULLER_DN, RMULLER_PW))

    # Adds.
    ou = {"objectClass": ["organizationalUnit"], "ou": "difftest"}
    add("ou=difftest", TEST, ou)
    add("existing entry", TEST, ou)
    add("existing entry as anonymous", TEST, ou, who=ANON)
    alice = f"uid=alice,{TEST}"
    add("alice", alice, {"objectClass": ["inetOrgPerson"], "uid": "alice", "cn": "Alice",
                         "sn": "Liddell", "userPassword": "alicepw"})
    bob = f"uid=bob,{TEST}"
    add("bob", bob, {"objectClass": ["inetOrgPerson", "posixAccount"], "uid": "bob",
                     "cn": "Bob", "sn": "Builder", "uidNumber": "5001", "gidNumber": "5000",
                     "homeDirectory": "/home/bob", "userPassword": "bobpw"})
    add("below a missing parent", f"ou=x,ou=missing,{TEST}",
        {"objectClass": ["organizationalUnit"], "ou": "x"})
    add("outside the naming context", "ou=x,dc=other,dc=org",
        {"objectClass": ["organizationalUnit"], "ou": "x"})
    add("missing required sn", f"uid=nosn,{TEST}",
        {"objectClass": ["inetOrgPerson"], "uid": "nosn", "cn": "No SN"})
    add("no structural objectClass", f"uid=nos,{TEST}",
        {"objectClass": ["top", "uidObject"], "uid": "nos"})
    add("no objectClass", f"ou=noc,{TEST}", {"ou": "noc"})
    add("unknown objectClass", f"ou=unk,{TEST}",
        {"objectClass": ["organizationalUnit", "fooClass"], "ou": "unk"})
    add("attribute not allowed", f"ou=na,{TEST}",
        {"objectClass": ["organizationalUnit"], "ou": "na", "uid": "x"})
    add("undefined attribute type", f"ou=ud,{TEST}",
        {"objectClass": ["organizationalUnit"], "ou": "ud", "fooBar": "x"})
    add("invalid integer syntax", f"uid=bad,{TEST}",
        {"objectClass": ["account", "posixAccount"], "uid": "bad", "cn": "bad",
         "uidNumber": "abc", "gidNumber": "1", "homeDirectory": "/x"})
    add("non-IA5 mail", f"uid=bad2,{TEST}",
        {"objectClass": ["inetOrgPerson"], "uid": "bad2", "cn": "b", "sn": "b",
         "mail": "jöe@example.com"})
    add("duplicate values", f"ou=dup,{TEST}",
        {"objectClass": ["organizationalUnit"], "ou": "dup", "description": ["a", "a"]})
    add("two values for a single-valued attribute", f"uid=sv,{TEST}",
        {"objectClass": ["inetOrgPerson"], "uid": "sv", "cn": "s", "sn": "s",
         "displayName": ["one", "two"]})
    add("RDN value not in the entry", f"ou=rdn1,{TEST}",
        {"objectClass": ["organizationalUnit"], "ou": "other"})
    search("the entry added without its RDN value", f"ou=rdn1,{TEST}", BASE, attrs=["*"],
           who=ROOT)
    cleanup(f"ou=rdn1,{TEST}")
    add("required attributes only in a multi-valued RDN", f"cn=Rdn Only+sn=Only,{TEST}",
        {"objectClass": ["person"]})
    search("the entry added with its attributes only in the RDN", f"cn=Rdn Only+sn=Only,{TEST}",
           BASE, attrs=["*"], who=ROOT)
    cleanup(f"cn=Rdn Only+sn=Only,{TEST}")
    add("RDN attribute not allowed", f"uid=x1,{TEST}",
        {"objectClass": ["organizationalUnit"], "ou": "x1"})
    add("RDN undefined type", f"fooBar=x,{TEST}",
        {"objectClass": ["organizationalUnit"], "ou": "x"})
    add("two unrelated structural classes", f"ou=two,{TEST}",
        {"objectClass": ["organizationalUnit", "device"], "ou": "two", "cn": "two"})
    add("empty value", f"ou=empty,{TEST}",
        {"objectClass": ["organizationalUnit"], "ou": "empty", "description": ""})
    add("NO-USER-MODIFICATION attribute", f"ou=nousermod,{TEST}",
        {"objectClass": ["organizationalUnit"], "ou": "nousermod",
         "entryUUID": "597ae2f6-16a6-1027-98f4-d28b5365dc14"})
    add("malformed DN", "not a dn", {"objectClass": ["organizationalUnit"], "ou": "x"})
    add("as anonymous", f"ou=anon,{TEST}", {"objectClass": ["organizationalUnit"], "ou": "anon"},
        who=ANON)
    add("as a user", f"ou=usr,{TEST}", {"objectClass": ["organizationalUnit"], "ou": "usr"},
        who=user(5))
    add("below one's own entry", f"ou=mine,{U5}",
        {"objectClass": ["organizationalUnit"], "ou": "mine"}, who=user(5))
    add("multi-valued RDN with UTF-8", f"cn=Zoë+sn=Ünal,{TEST}",
        {"objectClass": ["person"], "cn": "Zoë", "sn": "Ünal"})

    # Modifies.
    A, D, R = ldap.MOD_ADD, ldap.MOD_DELETE, ldap.MOD_REPLACE
    modify("add a value", alice, [(A, "description", "first")])
    modify("add an existing value", alice, [(A, "description", "first")])
    modify("add an existing value, other case", alice, [(A, "description", "FIRST")])
    modify("delete a value not present", alice, [(D, "description", "nope")])
    modify("delete an absent attribute", alice, [(D, "telephoneNumber", None)])
    modify("replace an absent attribute with nothing", alice, [(R, "telephoneNumber", [])])
    modify("replace mail", alice, [(R, "mail", "alice@example.com")])
    modify("several changes", alice, [(A, "telephoneNumber", ["+1 555 0100", "+1 555 0101"]),
                                      (D, "telephoneNumber", "+1 555 0100"),
                                      (R, "description", ["second", "third"])])
    modify("undefined attribute type", alice, [(A, "fooBar", "x")])
    modify("attribute not allowed", alice, [(A, "uidNumber", "1")])
    modify("delete a required attribute", alice, [(D, "sn", None)])
    modify("replace a required attribute with nothing", alice, [(R, "sn", [])])
    modify("delete the naming attribute", alice, [(D, "uid", None)])
    modify("replace the naming value", alice, [(R, "uid", "alice2")])
    modify("add a second naming value", alice, [(A, "uid", "alias")])
    modify("delete the second naming value", alice, [(D, "uid", "alias")])
    modify("missing entry", f"uid=ghost,{TEST}", [(R, "description", "x")])
    modify("non-IA5 mail", alice, [(R, "mail", "jöe@example.com")])
    modify("invalid integer", bob, [(R, "uidNumber", "abc")])
    modify("two values for a single-valued attribute", alice, [(A, "displayName", ["a", "b"])])
    modify("add posixAccount without its required attributes", alice,
           [(A, "objectClass", "posixAccount")])
    modify("add an auxiliary class with its attributes", alice,
           [(A, "objectClass", "shadowAccount"), (A, "shadowLastChange", "19000")])
    modify("delete the structural class", alice, [(D, "objectClass", "inetOrgPerson")])
    modify("replace the structural class", alice, [(R, "objectClass", "organizationalUnit")])
    modify("NO-USER-MODIFICATION attribute", alice,
           [(R, "createTimestamp", "20200101000000Z")])
    modify("increment (RFC 4525)", bob, [(ldap.MOD_INCREMENT, "uidNumber", "5")])
    modify("increment a non-integer", alice, [(ldap.MOD_INCREMENT, "sn", "1")])
    modify("add an empty value", alice, [(A, "description", "")])
    modify("add an unknown objectClass", alice, [(A, "objectClass", "fooClass")])
    modify("outside the naming context", "ou=x,dc=other,dc=org", [(R, "description", "x")])
    modify("DN with an undefined attribute type", f"fooBar=x,{TEST}", [(R, "description", "x")])
    modify("UTF-8 value", alice, [(A, "description", "naïve café")])
    modify("as anonymous", alice, [(R, "description", "anon")], who=ANON)
    modify("own entry", alice, [(R, "title", "Queen")], who=(alice, "alicepw"))
    modify("another user's entry", U5, [(R, "title", "x")], who=(alice, "alicepw"))
    modify("own userPassword", alice, [(R, "userPassword", "alicepw2")], who=(alice, "alicepw"))
    modify("another user's userPassword", bob, [(R, "userPassword", "x")],
           who=(alice, "alicepw2"))
    modify("rootdn sets a userPassword", bob, [(R, "userPassword", "bobpw2")])
    bind("alice's new password", alice, "alicepw2")
    bind("alice's old password", alice, "alicepw")
    bind("bob's new password", bob, "bobpw2")
    search("alice after the modifies, as rootdn", alice, BASE, attrs=["*"], who=ROOT)

    # Renames.
    sub = f"ou=sub,{TEST}"
    add("ou=sub", sub, {"objectClass": ["organizationalUnit"], "ou": "sub"})
    carol = f"uid=carol,{TEST}"
    add("carol", carol, {"objectClass": ["inetOrgPerson"], "uid": "carol", "cn": "Carol",
                         "sn": "Singer"})
    rename("delete old RDN", carol, "uid=carol2", delold=1)
    search("carol2", f"uid=carol2,{TEST}", BASE, attrs=["*"], who=ROOT)
    rename("keep old RDN", f"uid=carol2,{TEST}", "uid=carol3", delold=0)
    search("carol3", f"uid=carol3,{TEST}", BASE, attrs=["*"], who=ROOT)
    rename("to an existing DN", f"uid=carol3,{TEST}", "uid=alice")
    rename("missing entry", f"uid=ghost,{TEST}", "uid=ghost2")
    rename("newSuperior", f"uid=carol3,{TEST}", "uid=carol4", newsuperior=sub)
    search("carol4 under ou=sub", sub, SUB, attrs=["*"], who=ROOT)
    rename("newSuperior missing", f"uid=carol4,{sub}", "uid=carol5",
           newsuperior=f"ou=missing,{TEST}")
    rename("newSuperior outside the naming context", f"uid=carol4,{sub}", "uid=carol5",
           newsuperior="dc=other,dc=org")
    rename("newSuperior below itself", sub, "ou=sub", newsuperior=f"uid=carol4,{sub}")
    rename("same DN", f"uid=carol4,{sub}", "uid=carol4")
    rename("RDN attribute not allowed", f"uid=carol4,{sub}", "dc=carol")
    rename("RDN undefined type", f"uid=carol4,{sub}", "fooBar=carol")
    rename("RDN value with invalid syntax", bob, "uidNumber=abc")
    rename("to a multi-valued RDN", f"uid=carol4,{sub}", "uid=carol4+cn=Carol Four", delold=0)
    search("after renaming to a multi-valued RDN", sub, SUB, attrs=["*"], who=ROOT)
    rename("back to a single RDN, delete old", f"uid=carol4+cn=Carol Four,{sub}", "uid=carol4",
           delold=1)
    search("after renaming back to a single RDN", sub, SUB, attrs=["*"], who=ROOT)
    rename("as anonymous", bob, "uid=bobby", who=ANON)
    rename("own entry as a user", alice, "uid=alicia", who=(alice, "alicepw2"))
    rename("outside the naming context", "ou=x,dc=other,dc=org", "ou=y")
    rename("a non-leaf entry", sub, "ou=sub2")
    search("after renaming a non-leaf entry", TEST, SUB, attrs=["1.1"], who=ROOT)

    # Deletes.
    delete("a non-leaf entry", TEST)
    delete("missing entry", f"uid=ghost,{TEST}")
    delete("missing entry below a missing parent", f"uid=ghost,ou=missing,{TEST}")
    delete("as anonymous", bob, who=ANON)
    delete("own entry as a user", alice, who=(alice, "alicepw2"))
    delete("outside the naming context", "ou=x,dc=other,dc=org")
    delete("a leaf", bob)
    search("ou=difftest after the deletes", TEST, SUB, attrs=["*"], who=ROOT)

    # Password modify (RFC 3062).
    passwd("own, with old and new", None, "alicepw2", "alicepw3", who=(alice, "alicepw2"))
    bind("alice after password modify", alice, "alicepw3")
    passwd("own, wrong old password", None, "wrong", "alicepw4", who=(alice, "alicepw3"))
    passwd("another user's", user_dn(6), None, "x", who=(alice, "alicepw3"))
    passwd("as anonymous, with a user id", user_dn(6), user_pw(6), "x", who=ANON)
    passwd("as anonymous, no user id", None, None, "x", who=ANON)
    passwd("rootdn sets a user's", user_dn(7), None, "seven", who=ROOT)
    bind("user7 with the password the rootdn set", user_dn(7), "seven")
    passwd("rootdn, missing user", f"uid=ghost,{PEOPLE}", None, "x", who=ROOT)
    passwd("rootdn, malformed user id", "not a dn", None, "x", who=ROOT)
    passwd("rootdn for itself", None, None, "x", who=ROOT)
    passwd("own, generated", None, None, None, who=user(9))
    bind("user9's old password after generation", user_dn(9), user_pw(9))

    # Final state of everything touched.
    search("final state of the tree", SUFFIX, SUB, attrs=["*"], who=ROOT)


# -- comparison ----------------------------------------------------------------------------------
def requested_names(attrs):
    if attrs is None:
        return set()
    return {a.lower() for a in attrs}


def split_attributes(attributes: dict) -> tuple:
    """(user attributes, operational attributes) by lowercased name, values as sets."""
    users, operational = {}, {}
    for name, values in attributes.items():
        key = name.lower()
        target = operational if key in OPERATIONAL else users
        target.setdefault(key, set()).update(value_key(key, v) for v in values)
    return users, operational


def show(values) -> str:
    shown = sorted(v.decode(errors="replace") if isinstance(v, bytes) else str(v)
                   for v in values)
    text = ", ".join(shown[:4]) + (f", ... ({len(shown)})" if len(shown) > 4 else "")
    return "{" + text + "}"


def diff_outcomes(ours: dict, theirs: dict, op_names_seen: list) -> list:
    """Difference lines, numadir ('numadir') against slapd ('slapd'); [] if none."""
    lines = []
    for key in sorted(set(ours) | set(theirs)):
        if key in ("entries", "attrs", "sizelimit") or key.startswith("_"):
            continue
        if ours.get(key) != theirs.get(key):
            lines.append(f"{key}: numadir {ours.get(key)!r}, slapd {theirs.get(key)!r}")
    if "entries" not in ours or "entries" not in theirs:
        return lines
    attrs = ours.get("attrs")
    asked = requested_names(attrs)
    plus = "+" in asked
    sizelimited = ours.get("rc") == 4 and theirs.get("rc") == 4
    dns_ours, dns_theirs = set(ours["entries"]), set(theirs["entries"])
    if not sizelimited:
        # Which entries a size-limited search returns is the server's choice; only the count
        # (compared above) must agree.
        for dn in sorted(dns_ours - dns_theirs)[:5]:
            lines.append(f"entry only from numadir: {dn}")
        if len(dns_ours - dns_theirs) > 5:
            lines.append(f"... {len(dns_ours - dns_theirs)} entries only from numadir")
        for dn in sorted(dns_theirs - dns_ours)[:5]:
            lines.append(f"entry only from slapd: {dn}")
        if len(dns_theirs - dns_ours) > 5:
            lines.append(f"... {len(dns_theirs - dns_ours)} entries only from slapd")
    # Attribute differences, grouped by (attribute, kind) over all common entries.
    grouped = {}
    for dn in sorted(dns_ours & dns_theirs):
        users_ours, op_ours = split_attributes(ours["entries"][dn])
        users_theirs, op_theirs = split_attributes(theirs["entries"][dn])
        for name in sorted(set(users_ours) | set(users_theirs)):
            a, b = users_ours.get(name), users_theirs.get(name)
            if a != b:
                if a is None or b is None:
                    kind = f"attribute {name} only from {'slapd' if a is None else 'numadir'}"
                else:
                    kind = f"attribute {name} values: numadir {show(a)}, slapd {show(b)}"
                grouped.setdefault(kind, []).append(dn)
        for name in sorted(set(op_ours) | set(op_theirs)):
            a, b = op_ours.get(name), op_theirs.get(name)
            if name in asked:
                # Asked for by name: compare presence, and values unless server-specific.
                if (a is None) != (b is None):
                    kind = (f"requested operational {name} only from "
                            f"{'slapd' if a is None else 'numadir'}")
                    grouped.setdefault(kind, []).append(dn)
                elif a != b and name not in VOLATILE_OPERATIONAL:
                    kind = f"operational {name} values: numadir {show(a)}, slapd {show(b)}"
                    grouped.setdefault(kind, []).append(dn)
            elif plus:
                if (a is None) != (b is None):
                    op_names_seen.append((name, "slapd" if a is None else "numadir"))
                elif a != b and name not in VOLATILE_OPERATIONAL:
                    kind = f"operational {name} values: numadir {show(a)}, slapd {show(b)}"
                    grouped.setdefault(kind, []).append(dn)
            else:
                # Not asked for: RFC 4511 4.5.1.8 says it must not be returned.
                for side, values in (("numadir", a), ("slapd", b)):
                    if values is not None:
                        grouped.setdefault(f"unrequested operational {name} from {side}",
                                           []).append(dn)
    for kind, dns in grouped.items():
        first = dns[0] or "the root DSE"
        where = first if len(dns) == 1 else f"{len(dns)} entries, e.g. {first}"
        lines.append(f"{kind} ({where})")
    return lines


def describe(outcome: dict) -> str:
    parts = []
    for key, value in outcome.items():
        if key in ("attrs", "sizelimit", "matched") and not value:
            continue
        if key == "entries":
            continue
        parts.append(f"{key} {value!r}")
    return ", ".join(parts)


def run_all(numadir_url: str, slapd_url: str, verbose: bool, test_name: str = "differential_test",
            known_differences=None, known_operational=None) -> int:
    """Runs REQUESTS against both servers; differences are checked against the given tables
    (default: this file's KNOWN_DIFFERENCES and KNOWN_OPERATIONAL_ATTRIBUTES)."""
    KNOWN_DIFFERENCES = known_differences if known_differences is not None \
        else globals()["KNOWN_DIFFERENCES"]
    KNOWN_OPERATIONAL_ATTRIBUTES = known_operational if known_operational is not None \
        else globals()["KNOWN_OPERATIONAL_ATTRIBUTES"]
    identical, known, new = 0, [], []
    op_names = {}
    compared = 0
    for name, function in REQUESTS:
        ours = function(numadir_url)
        theirs = function(slapd_url)
        if ours is None and theirs is None:
            continue  # A cleanup step.
        compared += 1
        seen = []
        lines = diff_outcomes(ours, theirs, seen)
        for attribute, side in seen:
            op_names.setdefault((attribute, side), []).append(name)
        if not lines:
            identical += 1
            if verbose:
                print(f"  same: {name}: {describe(ours)}", flush=True)
            continue
        entry = KNOWN_DIFFERENCES.get(short_name(name))
        if entry is not None and sorted(entry[1]) == sorted(lines):
            known.append((short_name(name), entry[0], lines))
            if verbose:
                print(f"  known difference: {name}", flush=True)
            continue
        new.append((name, lines, entry))
        if os.environ.get("DIFFERENTIAL_DUMP"):
            with open(os.environ["DIFFERENTIAL_DUMP"], "a") as dump:
                dump.write(repr((short_name(name), lines)) + "\n")
        print(f"  NEW DIFFERENCE: {name}", flush=True)
        for line in lines:
            print(f"      {line}", flush=True)
        print(f"      (result code: numadir {ours.get('rc')!r}, slapd {theirs.get('rc')!r}; "
              f"diagnosticMessage: numadir {ours.get('_info')!r}, "
              f"slapd {theirs.get('_info')!r})", flush=True)
        if entry is not None:
            print(f"      (KNOWN_DIFFERENCES lists different lines: {entry[1]})", flush=True)

    # Operational attribute names only one server returns for '+'.
    op_known, op_new = [], []
    for (attribute, side), names in sorted(op_names.items()):
        listed = KNOWN_OPERATIONAL_ATTRIBUTES.get(attribute)
        if listed is not None and listed[0] == side:
            op_known.append((attribute, side, listed[1]))
        else:
            op_new.append((attribute, side, names))
            print(f"  NEW DIFFERENCE: '+' returns {attribute} only from {side} "
                  f"({len(names)} requests, e.g. {names[0]})", flush=True)

    # Listed differences that did not show up: the table is stale.
    seen_names = {name for name, _, _ in known} | {short_name(name) for name, _, _ in new}
    stale = [name for name in KNOWN_DIFFERENCES if name not in seen_names]
    for name in stale:
        print(f"  STALE: KNOWN_DIFFERENCES lists '{name}', which did not differ "
              f"(or is no longer a request): remove it", flush=True)
    seen_attributes = {attribute for attribute, _, _ in op_known}
    for attribute in KNOWN_OPERATIONAL_ATTRIBUTES:
        if attribute not in seen_attributes:
            stale.append(attribute)
            print(f"  STALE: KNOWN_OPERATIONAL_ATTRIBUTES lists '{attribute}', which '+' did "
                  f"not return from one server only: remove it", flush=True)

    print(f"{test_name}: {compared} requests compared, {identical} identical, "
          f"{len(known)} known differences, {len(new)} new differences; '+' attribute names: "
          f"{len(op_known)} known, {len(op_new)} new; {len(stale)} stale table entries",
          flush=True)
    if known or op_known:
        print("known differences (numadir vs slapd), by reason:")
        by_reason = {}
        for name, reason, lines in known:
            by_reason.setdefault(reason, []).append((name, lines))
        for attribute, side, reason in op_known:
            by_reason.setdefault(reason, []).append(
                (f"'+' returns {attribute} only from {side}", []))
        for (verdict, reason), items in by_reason.items():
            print(f"  [{verdict}] {reason}")
            for name, lines in items:
                shown = "; ".join(lines[:2]) + ("; ..." if len(lines) > 2 else "")
                print(f"    - {name}{': ' + shown if shown else ''}")
        bugs = sum(1 for name, (verdict, _), _ in known if verdict == NUMADIR_BUG)
        print(f"  {bugs} of the {len(known)} known differences are marked {NUMADIR_BUG} "
              f"(numadir should answer as slapd does)")
    return 1 if new or op_new or stale else 0


def write_ldif(path: str, gen: str, extra_ldif: str = EXTRA_LDIF):
    with open(path, "wb") as stream:
        generated = subprocess.run(["/usr/bin/python3", gen, "--users", str(USERS), "--suffix",
                                    SUFFIX], capture_output=True, timeout=120)
        if generated.returncode != 0:
            fail(f"gen_users.py failed: {generated.stderr.decode(errors='replace')}")
        stream.write(generated.stdout)
        stream.write(b"\n" + extra_ldif.strip("\n").encode() + b"\n\n")


class DifferentialNumadir(NumadirServer):
    """numadir on the given LDIF file, with slapd's indexes and a {SSHA} rootpw."""

    def __init__(self, numadir: str, ldif_path: str, root_pw_hash: str, keep: bool,
                 extra_toml: str = ""):
        super().__init__(numadir, gen_users="", users=0, keep=keep)
        self.ldif_path = ldif_path
        self.root_pw_hash = root_pw_hash
        self.extra_toml = extra_toml

    def _prepare(self):
        self.config = os.path.join(self.dir, "numadir.toml")
        with open(self.config, "w") as stream:
            stream.write(f"""[database]
path = "{self.dir}/db"
suffix = "{SUFFIX}"
map_size = "1GiB"
durability = "nosync"
indexes = ["objectClass eq", "uid eq"]

[passwords]
default_scheme = "SSHA"
allow_cleartext = true

[server]
listen = ["ldap://127.0.0.1:0"]
rootdn = "{ROOT_DN}"
rootpw = "{self.root_pw_hash}"
listeners = 1
workers = 2

[limits]
size_limit = 500
time_limit = 3600
{self.extra_toml}
""")
        imported = subprocess.run([self.numadir, "import", "-c", self.config, "--no-progress",
                                   self.ldif_path], capture_output=True, text=True, timeout=300)
        if imported.returncode != 0:
            fail(f"numadir import failed ({imported.returncode}): {imported.stderr}"
                 f"{imported.stdout}")


def run_differential(test_name: str, define, slapd_access: str, numadir_toml: str = "",
                     extra_ldif: str = EXTRA_LDIF, known_differences=None,
                     known_operational=None) -> int:
    """The whole test: both servers on the same data, `define()` filling REQUESTS, the answers
    compared. Returns the exit status."""
    args = parse_args(f"{test_name}: numadir against OpenLDAP slapd, request by request")
    verbose = "-v" in sys.argv[1:] or "--verbose" in sys.argv[1:]
    missing = slapd_harness.available()
    if missing:
        print(f"FAIL {test_name}: {missing}", flush=True)
        return 1
    started = time.monotonic()
    REQUESTS.clear()
    define()
    with tempfile.TemporaryDirectory(prefix="numadir-diff-") as work:
        ldif_path = os.path.join(work, "data.ldif")
        write_ldif(ldif_path, args.gen, extra_ldif)
        hashed = subprocess.run([os.path.abspath(args.numadir), "passwd", "-h", "SSHA", "-s",
                                 ROOT_PW], capture_output=True, text=True, timeout=60)
        if hashed.returncode != 0 or not hashed.stdout.startswith("{SSHA}"):
            print(f"FAIL {test_name}: numadir passwd -h SSHA: {hashed.stderr}")
            return 1
        root_pw_hash = hashed.stdout.strip()
        try:
            with slapd_harness.SlapdServer(ldif_path, access=slapd_access, root_pw=root_pw_hash,
                                           keep=args.keep) as slapd, \
                    DifferentialNumadir(args.numadir, ldif_path, root_pw_hash,
                                        args.keep, numadir_toml) as numadir:
                status = run_all(numadir.url, slapd.url, verbose, test_name, known_differences,
                                 known_operational)
        except CheckFailed as error:
            print(f"FAIL {test_name}: {error}", flush=True)
            return 1
    print(f"{test_name}: {time.monotonic() - started:.1f}s", flush=True)
    if status != 0:
        print(f"FAIL {test_name}: new differences between numadir and slapd (above); "
              "fix numadir or, if slapd's answer is not the reference here, list them in "
              "KNOWN_DIFFERENCES with the reason", flush=True)
    return status


def main() -> int:
    return run_differential("differential_test", define_requests, SLAPD_ACCESS)


if __name__ == "__main__":
    sys.exit(main())
