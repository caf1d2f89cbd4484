#!/usr/bin/python3
"""Generates an LDIF directory of N users for benchmarks and tests.

  perf/gen_users.py --users 100000 --suffix dc=example,dc=com > users.ldif

Entries: the suffix (dcObject + organization), ou=people, ou=groups, then uid=user0 ..
uid=user{N-1} under ou=people (inetOrgPerson + posixAccount + shadowAccount) with
userPassword {SSHA} of "password<N>" (the password template authrate uses), and one
groupOfNames per 1,000 users. Deterministic for a given --seed. Standard library only.
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
    args = parser.parse_args()

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
              f"homeDirectory: /home/user{i}\nloginShell: /bin/bash\n"
              f"userPassword:: {base64.b64encode(stored.encode()).decode()}\n\n")
    for g in range((args.users + 999) // 1000):
        write(f"dn: cn=group{g},ou=groups,{args.suffix}\nobjectClass: top\n"
              f"objectClass: groupOfNames\ncn: group{g}\n")
        for i in range(g * 1000, min(args.users, g * 1000 + 1000)):
            write(f"member: uid=user{i},{people}\n")
        write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
