#!/usr/bin/python3
"""Configured access rules, differentially: numadir with [[access]] tables and OpenLDAP slapd
with the same rules written as `access to ... by ...` lines, the same data, the same scripted
requests (differential_harness.py's machinery), the answers compared.

  access_rules_test.py --numadir build/release/server/numadir --gen perf/gen_users.py [-v]

The rules exercise every target (DN with base, subtree or children scope, filter,
attribute lists with the entry and children pseudo-attributes) and every subject (self,
anonymous, users, *, a DN, groupOfNames and groupOfUniqueNames members), privilege sets (=wx,
=w), first-match-wins, silently dropped attributes and entries, insufficientAccessRights (50)
for writes, and a base the client may not know of answered as missing (32, no matchedDN).
Differences must be listed in KNOWN_DIFFERENCES with their reason (none are, today).
"""
import os
import sys

import ldap  # python3-ldap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import differential_harness as dt  # noqa: E402
from numadir_harness import GROUPS, PEOPLE, SUFFIX, user_dn, user_pw  # noqa: E402

HELPDESK = f"cn=helpdesk,{GROUPS}"
AUDITORS = f"cn=auditors,{GROUPS}"
SECRET = f"ou=secret,{SUFFIX}"
DEVICES = f"ou=devices,{SUFFIX}"
CONTRACTOR = f"uid=contractor1,{PEOPLE}"
CONTRACTOR_PW = "contractor-pw"

EXTRA_LDIF = f"""dn: {HELPDESK}
objectClass: groupOfNames
cn: helpdesk
member: {user_dn(2)}

dn: {AUDITORS}
objectClass: groupOfUniqueNames
cn: auditors
uniqueMember: {user_dn(3)}

dn: {SECRET}
objectClass: organizationalUnit
ou: secret

dn: cn=vault,{SECRET}
objectClass: device
cn: vault
description: top secret

dn: {DEVICES}
objectClass: organizationalUnit
ou: devices

dn: cn=printer1,{DEVICES}
objectClass: device
cn: printer1
serialNumber: SN-0001

dn: {CONTRACTOR}
objectClass: inetOrgPerson
uid: contractor1
cn: Contractor One
sn: One
employeeType: contractor
mail: contractor1@example.com
userPassword: {CONTRACTOR_PW}
"""

SLAPD_ACCESS = f"""access to dn.subtree="{PEOPLE}" attrs=userPassword
  by self =wx
  by anonymous auth
  by group.exact="{HELPDESK}" =w
  by * none
access to dn.children="{PEOPLE}" filter=(employeeType=contractor)
  by group/groupOfUniqueNames/uniqueMember.exact="{AUDITORS}" read
  by self read
  by * none
access to dn.subtree="{PEOPLE}" attrs=mail,telephoneNumber
  by group.exact="{HELPDESK}" write
  by self write
  by users read
  by * none
access to dn.subtree="{SECRET}"
  by dn.exact="{user_dn(1)}" read
  by * none
access to dn.base="{DEVICES}" attrs=children
  by group.exact="{HELPDESK}" write
  by * read
access to dn.children="{DEVICES}"
  by group.exact="{HELPDESK}" write
  by users read
  by * none
access to attrs=children
  by * read
access to *
  by self write
  by users read
  by anonymous search
"""

NUMADIR_ACCESS = f"""
[[access]]
dn = "{PEOPLE}"
attrs = ["userPassword"]
by = [{{ who = "self", access = "=wx" }}, {{ who = "anonymous", access = "auth" }},
      {{ group = "{HELPDESK}", access = "=w" }}, {{ who = "*", access = "none" }}]

[[access]]
dn = "{PEOPLE}"
scope = "children"
filter = "(employeeType=contractor)"
by = [{{ group = "{AUDITORS}", access = "read" }}, {{ who = "self", access = "read" }},
      {{ who = "*", access = "none" }}]

[[access]]
dn = "{PEOPLE}"
attrs = ["mail", "telephoneNumber"]
by = [{{ group = "{HELPDESK}", access = "write" }}, {{ who = "self", access = "write" }},
      {{ who = "users", access = "read" }}, {{ who = "*", access = "none" }}]

[[access]]
dn = "{SECRET}"
by = [{{ dn = "{user_dn(1)}", access = "read" }}, {{ who = "*", access = "none" }}]

[[access]]
dn = "{DEVICES}"
scope = "base"
attrs = ["children"]
by = [{{ group = "{HELPDESK}", access = "write" }}, {{ who = "*", access = "read" }}]

[[access]]
dn = "{DEVICES}"
scope = "children"
by = [{{ group = "{HELPDESK}", access = "write" }}, {{ who = "users", access = "read" }},
      {{ who = "*", access = "none" }}]

[[access]]
attrs = ["children"]
by = [{{ who = "*", access = "read" }}]

[[access]]
by = [{{ who = "self", access = "write" }}, {{ who = "users", access = "read" }},
      {{ who = "anonymous", access = "search" }}]
"""

# (short request name) -> (verdict, reason), lines: as differential_test.KNOWN_DIFFERENCES.
KNOWN_DIFFERENCES = {}
KNOWN_OPERATIONAL_ATTRIBUTES = {}

ANON = dt.ANON
BASE, ONE, SUB = dt.BASE, dt.ONE, dt.SUB


def u(n: int):
    return (user_dn(n), user_pw(n))


HELPER = u(2)     # helpdesk member
AUDITOR = u(3)    # auditors member (groupOfUniqueNames)
SECRET_READER = u(1)
OTHER = u(6)
CONTRACTOR_ID = (CONTRACTOR, CONTRACTOR_PW)


def define_requests():
    # Binds: userPassword's `auth` for anonymous, whichever rule later governs the entry.
    dt.bind("user5", user_dn(5), user_pw(5))
    dt.bind("contractor", CONTRACTOR, CONTRACTOR_PW)
    dt.bind("user5 wrong password", user_dn(5), "nope")

    # Reading: attributes and entries left out silently.
    attrs = ["cn", "mail", "userPassword", "uid"]
    for who, label in ((u(5), "self"), (OTHER, "user"), (HELPER, "helpdesk"), (ANON, "anon")):
        dt.search(f"user5 as {label}", PEOPLE, SUB, "(uid=user5)", attrs, who=who)
    for who, label in ((u(5), "user"), (AUDITOR, "auditor"), (CONTRACTOR_ID, "self"),
                       (HELPER, "helpdesk")):
        dt.search(f"contractors as {label}", PEOPLE, SUB, "(employeeType=contractor)",
                  ["cn", "mail", "employeeType"], who=who)
    dt.search("people one-level as auditor", PEOPLE, ONE, "(|(uid=contractor1)(uid=user4))",
              ["cn", "employeeType"], who=AUDITOR)
    dt.search("whole tree as anonymous", SUFFIX, SUB, "(objectClass=organizationalUnit)",
              ["ou"], who=ANON)
    dt.search("whole tree as user", SUFFIX, SUB, "(objectClass=organizationalUnit)", ["ou"],
              who=OTHER)
    # Filters on attributes the client may not search match nothing.
    dt.search("filter on password as helpdesk", PEOPLE, SUB, "(&(uid=user7)(userPassword=*))",
              ["uid"], who=HELPER)
    dt.search("filter on mail as anonymous", SUFFIX, SUB, "(mail=user7@example.com)", ["uid"],
              who=ANON)
    dt.search("filter on mail as user", SUFFIX, SUB, "(mail=user7@example.com)", ["uid"],
              who=OTHER)
    dt.search("negated filter on password as user", PEOPLE, ONE,
              "(&(uid=user8)(!(userPassword=x)))", ["uid"], who=OTHER)

    # A subtree the client may not know of looks missing, with nothing above it named.
    for who, label in ((SECRET_READER, "dn reader"), (OTHER, "user"), (ANON, "anon")):
        dt.search(f"secret base as {label}", SECRET, BASE, attrs=["ou"], who=who)
        dt.search(f"secret subtree as {label}", SECRET, SUB, attrs=["cn", "description"],
                  who=who)
        dt.search(f"missing below secret as {label}", f"cn=missing,{SECRET}", BASE, who=who)
        dt.compare(f"vault cn as {label}", f"cn=vault,{SECRET}", "cn", "vault", who=who)

    # Compare needs compare (read includes it); userPassword is write-only for the helpdesk.
    dt.compare("mail as user", user_dn(5), "mail", "user5@example.com", who=OTHER)
    dt.compare("mail as anonymous", user_dn(5), "mail", "user5@example.com", who=ANON)
    dt.compare("password as helpdesk", user_dn(5), "userPassword", user_pw(5), who=HELPER)
    dt.compare("password as self", user_dn(5), "userPassword", user_pw(5), who=u(5))

    # Writes: per attribute; the group and self may, others get 50.
    dt.modify("mail by helpdesk", user_dn(10), [(ldap.MOD_REPLACE, "mail", "ten@example.com")],
              who=HELPER)
    dt.modify("mail by self", user_dn(11), [(ldap.MOD_REPLACE, "mail", "eleven@example.com")],
              who=u(11))
    dt.modify("mail by other", user_dn(12), [(ldap.MOD_REPLACE, "mail", "x@example.com")],
              who=OTHER)
    dt.modify("cn by helpdesk", user_dn(12), [(ldap.MOD_REPLACE, "cn", "Twelve")], who=HELPER)
    dt.modify("cn by self", user_dn(13), [(ldap.MOD_REPLACE, "cn", "Thirteen")], who=u(13))
    dt.modify("password by helpdesk", user_dn(14),
              [(ldap.MOD_REPLACE, "userPassword", "newpw14")], who=HELPER)
    dt.bind("user14 with the helpdesk's password", user_dn(14), "newpw14")
    dt.modify("missing entry by other", f"uid=nobody,{PEOPLE}",
              [(ldap.MOD_REPLACE, "mail", "x@example.com")], who=OTHER)
    dt.delete("missing entry by other", f"uid=nobody,{PEOPLE}", who=OTHER)
    dt.delete("user17 by other", user_dn(17), who=OTHER)
    dt.rename("missing entry by other", f"uid=nobody,{PEOPLE}", "uid=somebody", who=OTHER)
    dt.passwd("user15 by helpdesk", user_dn(15), None, "newpw15", who=HELPER)
    dt.passwd("user16 by other", user_dn(16), None, "newpw16", who=OTHER)
    dt.bind("user15 with its new password", user_dn(15), "newpw15")

    # Adding, renaming and deleting below ou=devices: the children right of the parent and
    # write on the entry itself.
    printer = {"objectClass": "device", "cn": "printer2", "serialNumber": "SN-0002"}
    dt.add("printer2 by other", f"cn=printer2,{DEVICES}", printer, who=OTHER)
    dt.add("printer2 by helpdesk", f"cn=printer2,{DEVICES}", printer, who=HELPER)
    dt.search("devices as user", DEVICES, ONE, attrs=["cn", "serialNumber"], who=OTHER)
    dt.rename("printer2 by other", f"cn=printer2,{DEVICES}", "cn=printer3", who=OTHER)
    dt.rename("printer2 by helpdesk", f"cn=printer2,{DEVICES}", "cn=printer3", who=HELPER)
    dt.delete("printer3 by other", f"cn=printer3,{DEVICES}", who=OTHER)
    dt.delete("printer3 by helpdesk", f"cn=printer3,{DEVICES}", who=HELPER)
    dt.cleanup(f"cn=printer3,{DEVICES}")
    dt.add("a person by helpdesk", f"uid=newbie,{PEOPLE}",
           {"objectClass": "inetOrgPerson", "uid": "newbie", "cn": "N", "sn": "N"}, who=HELPER)
    dt.cleanup(f"uid=newbie,{PEOPLE}")
    dt.whoami("helpdesk", HELPER)


def main() -> int:
    return dt.run_differential("access_rules_test", define_requests, SLAPD_ACCESS,
                               NUMADIR_ACCESS, EXTRA_LDIF, KNOWN_DIFFERENCES,
                               KNOWN_OPERATIONAL_ATTRIBUTES)


if __name__ == "__main__":
    sys.exit(main())
