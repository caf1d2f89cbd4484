#!/usr/bin/python3
"""Differential test: the same scripted LDAP requests against numadir and against OpenLDAP
slapd (the reference), and the answers compared (the machinery: differential_harness.py).

  differential_test.py --numadir build/release/server/numadir --gen perf/gen_users.py [-v]

Both servers get the same LDIF (gen_users.py --users 200 plus EXTRA_LDIF: groups, UTF-8 values,
multi-valued RDNs), the same schema (core, cosine, inetorgperson, nis), the same indexes
(objectClass eq, uid eq), the same rootdn/rootpw and the same access policy (numadir's built-in
default, server/operations/access_control.h, written as slapd `access to` lines in
SLAPD_ACCESS). slapd is Debian's /usr/sbin/slapd with back-mdb, started by slapd_harness.py on
a free loopback port.

define_requests() is the script: binds (raw BindRequest PDUs among them, for what python-ldap
cannot send), raw PDU sequences with the message IDs a hostile client picks (0, reused while in
use, negative) and Abandons of them, searches of every scope and filter kind, compares,
updates, renames, whoami and password modify. A difference must be listed in KNOWN_DIFFERENCES (operational attribute names
that '+' returns from one server only: KNOWN_OPERATIONAL_ATTRIBUTES) with the exact difference
lines this test prints, a reason and a verdict: NUMADIR_BUG (numadir should answer as slapd
does) or ACCEPTED (an RFC or a documented numadir choice justifies numadir's answer). Any other
difference, or a listed one that changed or vanished (fixed: remove its entry), fails the test.
Exits 0 when there is no new difference, 1 otherwise. With -v every identical answer is printed
too; with the environment variable DIFFERENTIAL_DUMP=<file> the new differences are appended to
<file> as (name, lines), ready to paste into KNOWN_DIFFERENCES.
"""
import base64
import os
import sys

import ldap  # python3-ldap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import GROUPS, PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, user_dn, user_pw  # noqa: E402
from differential_harness import (  # noqa: E402
    ACCEPTED, ANON, BASE, ONE, ROOT, SUB, add, bind, cleanup, compare, delete, modify, passwd,
    pdu_abandon, pdu_bind, pdu_search, pdu_whoami, raw_bind, raw_sequence, rename,
    run_differential, search, user, whoami)

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

# numadir's default policy (server/operations/access_control.h) in slapd's terms. slapd's
# rootdn bypasses access control, as numadir's rootdn does. `children` is write for the rootdn
# only: slapd would otherwise let `by self write` add entries below one's own entry.
SLAPD_ACCESS = """access to attrs=userPassword
  by self =wx
  by * auth
access to attrs=children
  by * read
access to *
  by self write
  by * read
"""


UNIVERSAL_CHOICE = (ACCEPTED,
                    "RFC 4511 4.2: every AuthenticationChoice alternative, present and future "
                    "(the choice is extensible), has a context-specific tag; a universal OCTET "
                    "STRING there is no alternative at all, so numadir treats the PDU as "
                    "malformed (Notice of Disconnection, protocolError, RFC 4511 4.1.1) where "
                    "slapd reads any tag it does not know as an unknown method (7)")
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
NEGATIVE_ID = (ACCEPTED,
               "RFC 4511 4.1.1: MessageID ::= INTEGER (0 .. maxInt), so a negative one makes the "
               "PDU malformed and numadir answers with a Notice of Disconnection (protocolError); "
               "slapd answers the request under the negative ID")
BIND_WAITS = (ACCEPTED,
              "RFC 4511 4.2.1: before a BindRequest is processed, the operations outstanding "
              "'MUST either complete or be abandoned', and the server may do either. slapd "
              "abandons them when the BindRequest arrives (the first bind here never answers); "
              "numadir holds the bind until they complete, so both binds answer")

# request name (without its [details]) -> ((verdict, reason), [the exact difference lines
# this test prints for it]). Regenerate the lines with DIFFERENTIAL_DUMP=<file>.
KNOWN_DIFFERENCES = {
    'bind raw universal OCTET STRING as the choice': (UNIVERSAL_CHOICE, [
        "anonymous bind after: numadir 'closed', slapd 0",
        "matched: numadir None, slapd ''",
        "op: numadir 120, slapd 97",
        "rc: numadir 'Notice of Disconnection (2)', slapd 7",
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
    'raw search with a negative message ID': (NEGATIVE_ID, [
        "responses: numadir ['0: extendedResponse 2 (Notice of Disconnection)'], slapd "
        "['-1: searchResDone 0', '-1: searchResEntry']",
        "then: numadir 'closed', slapd '99: bindResponse 0'",
    ]),
    "raw bind reusing the ID of a bind outstanding": (BIND_WAITS, [
        "responses: numadir ['1: bindResponse 0', '1: bindResponse 0'], slapd "
        "['1: bindResponse 0']",
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
    "contextcsn": ("numadir", (ACCEPTED,
                               "numadir keeps the suffix's contextCSN for every write (a "
                               "replication provider's state, as syncprov keeps it); the slapd "
                               "here has no syncprov overlay, and back-mdb alone keeps none")),
}



# -- the script ----------------------------------------------------------------------------------
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
    bind("DN with an RDN that has no value", f"uid=user5,people,{SUFFIX}", user_pw(5))
    bind("DN with an attribute type neither server knows", f"noSuchType=x,{SUFFIX}", "x")
    bind("DN with a trailing comma", f"{U5},", user_pw(5))

    # Binds with an authentication choice neither server implements (RFC 4511 4.2: the choice
    # is extensible; [1] and [2] were Kerberos v4's): a BindResponse, authMethodNotSupported,
    # and the connection stays open. python-ldap cannot send these, so they go as raw PDUs.
    raw_bind("choice krbv42LDAP (context 1)", b"", 0x81, b"ticket")
    raw_bind("choice krbv42DSA (context 2)", b"", 0x82, b"ticket")
    raw_bind("choice krbv42LDAP with a user DN", U5.encode(), 0x81, b"ticket")
    raw_bind("choice context 9 constructed", b"", 0xA9, b"\x04\x01x")
    raw_bind("choice krbv42LDAP with protocol version 2", b"", 0x81, b"ticket", version=2)
    raw_bind("universal OCTET STRING as the choice", b"", 0x04, b"secret")
    raw_bind("choice simple for comparison", U5.encode(), 0x80, user_pw(5).encode())

    # Message IDs, as raw PDUs (python-ldap picks its own). RFC 4511 4.1.1.1 reserves ID 0 for
    # unsolicited notifications and wants a request's ID distinct from those of the requests in
    # progress; slapd checks neither: it answers a request with ID 0 under ID 0, each of two
    # requests sharing an ID, and ignores an Abandon of ID 0 or of a bind. numadir does the
    # same. For an ID to come again while its first request is still outstanding, it comes
    # behind a bind, in the same write: slapd reads every PDU of a write before it runs the
    # first one, and runs nothing beside a bind; numadir holds what comes behind a bind until
    # the bind has answered. (Should the bind be done before numadir's listener routes the next
    # PDU, the outcome is the same: each request is answered.)
    user5 = (U5, user_pw(5))
    raw_sequence("search with message ID 0", [pdu_search(0, "")], 1)
    raw_sequence("bind with message ID 0 then whoami", [pdu_bind(0), pdu_whoami(2)], 2)
    raw_sequence("whoami with message ID 0", [pdu_whoami(0)], 1)
    raw_sequence("search with message ID maxInt", [pdu_search(2**31 - 1, "")], 1)
    raw_sequence("search with a negative message ID", [pdu_search(-1, "")], 1)
    raw_sequence("abandon of message ID 0 held behind a bind",
                 [pdu_bind(1, *user5), pdu_search(0, ""), pdu_abandon(2, 0), pdu_search(3, "")],
                 3)
    raw_sequence("search reusing the ID of a bind outstanding",
                 [pdu_bind(1, *user5), pdu_search(1, "")], 2)
    raw_sequence("two searches sharing an ID behind a bind",
                 [pdu_bind(1, *user5), pdu_search(2, ""), pdu_search(2, SUFFIX)], 3)
    raw_sequence("abandon of a bind outstanding",
                 [pdu_bind(1, *user5), pdu_abandon(2, 1), pdu_search(3, "")], 2)
    raw_sequence("bind reusing the ID of a bind outstanding",
                 [pdu_bind(1), pdu_bind(1, *user5)], 1)

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



def main() -> int:
    return run_differential("differential_test", define_requests, SLAPD_ACCESS,
                            extra_ldif=EXTRA_LDIF, known_differences=KNOWN_DIFFERENCES,
                            known_operational=KNOWN_OPERATIONAL_ATTRIBUTES)


if __name__ == "__main__":
    sys.exit(main())
