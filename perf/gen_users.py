#!/usr/bin/python3
"""Generates an LDIF directory of N users for benchmarks and tests.

  perf/gen_users.py --users 100000 --suffix dc=example,dc=com > users.ldif

Entries: the suffix (dcObject + organization), ou=people, ou=groups, then uid=user0 ..
uid=user{N-1} under ou=people (inetOrgPerson + posixAccount + shadowAccount) with
userPassword {SSHA} of "password<N>" (the password template authrate uses), and one
groupOfNames per 1,000 users. Deterministic for a given --seed. Standard library only.

For NSS and PAM clients (nslcd, SSSD), options add what they read; without them the output is
exactly as before (benchmarks and tests depend on it):

  perf/gen_users.py --users 600 --nss --posix-groups 20 --groups-per-user 3 > nss.ldif

  --nss              each user also gets gecos and the shadowAccount attributes
                     shadowLastChange (a fixed day: 19000, 2022-01-08), shadowMin 0,
                     shadowMax 99999 and shadowWarning 7.
  --posix-groups N   after the groupOfNames above: per 1,000 users the posixGroup
                     cn=users<B> (gidNumber 10000+B, the users' primary group, no memberUid),
                     then N secondary groups in both schemas, with the same members: the
                     posixGroup cn=pgroup<G> (gidNumber 20000+G, memberUid: RFC 2307) and the
                     groupOfNames + extensibleObject cn=ngroup<G> (gidNumber 30000+G, member:
                     the users' DNs, as rfc2307bis clients read them; RFC 2307's posixGroup is
                     structural, so it cannot join groupOfNames in one entry).
  --groups-per-user K  user<I> is a member of groups (I + J) mod N for J < K (default 2).
"""
import argparse
import base64
import hashlib
import random
import sys


def ssha(password: str, rng: random.Random) -> str:
    salt = bytes(rng.getrandbits(8) for _ in range(8))
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=100000)
    parser.add_argument("--suffix", default="dc=example,dc=com")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--password-template", default="password%d")
    parser.add_argument("--scheme", choices=["ssha", "cleartext"], default="ssha")
    parser.add_argument("--nss", action="store_true",
                        help="add gecos and shadowLastChange/Min/Max/Warning to each user")
    parser.add_argument("--posix-groups", type=int, default=0, metavar="N",
                        help="add primary posixGroups and N secondary groups as posixGroup "
                             "(memberUid) and as groupOfNames (member)")
    parser.add_argument("--groups-per-user", type=int, default=2, metavar="K",
                        help="secondary groups per user with --posix-groups (default 2)")
    args = parser.parse_args()
    if args.posix_groups < 0 or \
            (args.posix_groups and not 0 <= args.groups_per_user <= args.posix_groups):
        parser.error("--posix-groups N needs N >= 0, and --groups-per-user K 0 <= K <= N")

    rng = random.Random(args.seed)
    first = args.suffix.split(",")[0].split("=", 1)[1]
    out = sys.stdout
    write = out.write
    write(f"dn: {args.suffix}\nobjectClass: top\nobjectClass: dcObject\n"
          f"objectClass: organization\ndc: {first}\no: {first}\n\n")
    for ou in ("people", "groups"):
        write(f"dn: ou={ou},{args.suffix}\nobjectClass: top\nobjectClass: organizationalUnit\n"
              f"ou: {ou}\n\n")
    surnames = ["Smith", "Jones", "Taylor", "Brown", "Williams", "Wilson", "Johnson", "Davies",
                "Robinson", "Wright", "Thompson", "Evans", "Walker", "White", "Roberts"]
    people = f"ou=people,{args.suffix}"
    for i in range(args.users):
        password = args.password_template % i
        stored = ssha(password, rng) if args.scheme == "ssha" else password
        sn = surnames[i % len(surnames)]
        write(f"dn: uid=user{i},{people}\n"
              "objectClass: top\nobjectClass: person\nobjectClass: organizationalPerson\n"
              "objectClass: inetOrgPerson\nobjectClass: posixAccount\n"
              "objectClass: shadowAccount\n"
              f"uid: user{i}\ncn: User {i}\nsn: {sn}\ngivenName: User\n"
              f"mail: user{i}@example.com\nuidNumber: {10000 + i}\ngidNumber: {10000 + i // 1000}\n"
              f"homeDirectory: /home/user{i}\nloginShell: /bin/bash\n")
        if args.nss:
            write(f"gecos: User {i}\nshadowLastChange: 19000\nshadowMin: 0\n"
                  "shadowMax: 99999\nshadowWarning: 7\n")
        write(f"userPassword:: {base64.b64encode(stored.encode()).decode()}\n\n")
    for g in range((args.users + 999) // 1000):
        write(f"dn: cn=group{g},ou=groups,{args.suffix}\nobjectClass: top\n"
              f"objectClass: groupOfNames\ncn: group{g}\n")
        for i in range(g * 1000, min(args.users, g * 1000 + 1000)):
            write(f"member: uid=user{i},{people}\n")
        write("\n")
    if args.posix_groups:
        write_posix_groups(write, args, people)
    return 0


def write_posix_groups(write, args, people: str):
    """The groups of --posix-groups (see the module's docstring)."""
    groups = f"ou=groups,{args.suffix}"
    for b in range((args.users + 999) // 1000):
        write(f"dn: cn=users{b},{groups}\nobjectClass: top\nobjectClass: posixGroup\n"
              f"cn: users{b}\ngidNumber: {10000 + b}\n\n")
    members = [[] for _ in range(args.posix_groups)]
    for i in range(args.users):
        for j in range(args.groups_per_user):
            members[(i + j) % args.posix_groups].append(i)
    for g, users in enumerate(members):
        write(f"dn: cn=pgroup{g},{groups}\nobjectClass: top\nobjectClass: posixGroup\n"
              f"cn: pgroup{g}\ngidNumber: {20000 + g}\n")
        write("".join(f"memberUid: user{i}\n" for i in users))
        write("\n")
    for g, users in enumerate(members):
        write(f"dn: cn=ngroup{g},{groups}\nobjectClass: top\nobjectClass: groupOfNames\n"
              f"objectClass: extensibleObject\ncn: ngroup{g}\ngidNumber: {30000 + g}\n")
        # groupOfNames must have a member.
        write("".join(f"member: uid=user{i},{people}\n" for i in users) or
              f"member: cn=ngroup{g},{groups}\n")
        write("\n")


if __name__ == "__main__":
    sys.exit(main())
