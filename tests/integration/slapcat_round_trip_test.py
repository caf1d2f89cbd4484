#!/usr/bin/python3
"""Round trip with OpenLDAP: LDIF that slapcat exports from a slapd back-mdb imports into
numadir, and numadir's export holds the same entries (same DNs, attributes and values after
normalization, the suffix entry's contextCSN included) and is accepted by slapadd again.

  slapcat_round_trip_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Needs Debian's slapd (slapadd, slapcat) and python3-ldap (its ldif module). Exits 0 on success,
1 with a description of the first difference otherwise.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import ldif  # python3-ldap

SUFFIX = "dc=example,dc=com"

# Entries that exercise the LDIF and schema corners: UTF-8, base64-only values, a multi-valued
# RDN, language options, binary-ish values, an escaped DN.
EXTRA_LDIF = f"""dn: cn=Ren\\C3\\A9e M\\C3\\BCller+uid=rmuller,ou=people,{SUFFIX}
objectClass: inetOrgPerson
cn:: UmVuw6llIE3DvGxsZXI=
uid: rmuller
sn:: TcO8bGxlcg==
cn;lang-de:: UmVuw6llIE3DvGxsZXI=
description:: IGxlYWRpbmcgc3BhY2U=
description: trailing colon:
telephoneNumber: +1 555 0100
telephoneNumber: +1 555 0101

dn: cn=Comma\\, Inc.,ou=groups,{SUFFIX}
objectClass: groupOfNames
cn: Comma, Inc.
member: uid=user1,ou=people,{SUFFIX}
member: cn=Ren\\C3\\A9e M\\C3\\BCller+uid=rmuller,ou=people,{SUFFIX}

"""

SLAPD_CONF = """include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 1073741824
suffix "{suffix}"
rootdn "cn=admin,{suffix}"
directory {directory}
index objectClass eq
index uid eq
"""


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, **kwargs)
    if result.returncode != 0:
        sys.stderr.write(f"command failed ({result.returncode}): {' '.join(command)}\n")
        sys.stderr.write(result.stderr.decode(errors="replace"))
        sys.exit(1)
    return result.stdout


def normalize_dn(dn: str) -> str:
    # Case-insensitive attribute types and values (the shipped schema's DN attributes are all
    # case-ignore), multi-valued RDNs sorted, spacing around separators dropped.
    rdns = []
    for rdn in ldap_dn.str2dn(dn):
        avas = sorted((a.lower(), v.lower()) for a, v, _ in rdn)
        rdns.append("+".join(f"{a}={v}" for a, v in avas))
    return ",".join(rdns)


def load(path: str) -> dict:
    with open(path, "rb") as stream:
        records = ldif.LDIFRecordList(stream)
        records.parse()
    entries = {}
    for dn, attributes in records.all_records:
        normalized = {}
        for name, values in attributes.items():
            key = name.lower()
            if key in ("member", "creatorsname", "modifiersname"):
                values = [normalize_dn(v.decode()).encode() for v in values]
            normalized[key] = sorted(values)
        entries[normalize_dn(dn)] = normalized
    return entries


def compare(expected: dict, actual: dict, what: str) -> None:
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    if missing or extra:
        sys.exit(f"{what}: DNs differ: missing {missing[:5]}, extra {extra[:5]}")
    for dn, attributes in expected.items():
        if attributes != actual[dn]:
            for name in sorted(set(attributes) | set(actual[dn])):
                if attributes.get(name) != actual[dn].get(name):
                    sys.exit(f"{what}: {dn}: {name}: expected {attributes.get(name)}, "
                             f"got {actual[dn].get(name)}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--numadir", required=True)
    parser.add_argument("--gen", required=True)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--bin-dir", help="the build directory (unused here)")
    args = parser.parse_args()
    for tool in ("/usr/sbin/slapadd", "/usr/sbin/slapcat"):
        if not os.access(tool, os.X_OK):
            sys.exit(f"{tool} is missing: install Debian's slapd package (scripts/setup.sh does)")

    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "source.ldif")
        with open(source, "wb") as out:
            out.write(run(["/usr/bin/python3", args.gen, "--users", str(args.users)]))
            out.write(EXTRA_LDIF.encode())

        # 1. slapd's own copy, and slapcat's export of it (with its operational attributes).
        slapdb = os.path.join(work, "slapdb")
        os.mkdir(slapdb)
        conf = os.path.join(work, "slapd.conf")
        with open(conf, "w") as out:
            out.write(SLAPD_CONF.format(suffix=SUFFIX, directory=slapdb))
        # -w: the suffix entry gets the contextCSN (the greatest entryCSN), as a provider's has.
        run(["/usr/sbin/slapadd", "-q", "-w", "-f", conf, "-l", source])
        slapcat_ldif = os.path.join(work, "slapcat.ldif")
        with open(slapcat_ldif, "wb") as out:
            out.write(run(["/usr/sbin/slapcat", "-f", conf]))

        # 2. Into numadir and back out.
        with open(os.path.join(work, "numadir.toml"), "w") as out:
            out.write(f'[database]\npath = "db"\nsuffix = "{SUFFIX}"\nmap_size = "1GiB"\n'
                      'indexes = ["objectClass eq", "uid eq"]\n')
        run([args.numadir, "import", "--no-progress", "-c", "numadir.toml", slapcat_ldif],
            cwd=work)
        export_ldif = os.path.join(work, "export.ldif")
        run([args.numadir, "export", "-c", "numadir.toml", "-o", export_ldif], cwd=work)

        expected = load(slapcat_ldif)
        actual = load(export_ldif)
        if len(expected) != args.users + 3 + (args.users + 999) // 1000 + 2:
            sys.exit(f"slapcat exported {len(expected)} entries, not the expected count")
        # The contextCSN slapcat wrote on the suffix entry is numadir's after the import, and its
        # export writes it there again.
        context_csn = expected[normalize_dn(SUFFIX)].get("contextcsn")
        greatest = max(v for a in expected.values() for v in a.get("entrycsn", []))
        if context_csn != [greatest]:
            sys.exit(f"slapcat's suffix contextCSN {context_csn} is not the greatest entryCSN "
                     f"{greatest}")
        compare(expected, actual, "numadir export vs slapcat")

        # 2b. An LDIF without operational attributes: numadir generates entryCSNs, and its
        # export's suffix contextCSN is the greatest of them.
        with open(os.path.join(work, "plain.toml"), "w") as out:
            out.write(f'[database]\npath = "plaindb"\nsuffix = "{SUFFIX}"\nmap_size = "1GiB"\n'
                      'indexes = ["objectClass eq", "uid eq"]\n')
        run([args.numadir, "import", "--no-progress", "-c", "plain.toml", source], cwd=work)
        plain_ldif = os.path.join(work, "plain.ldif")
        run([args.numadir, "export", "-c", "plain.toml", "-o", plain_ldif], cwd=work)
        plain = load(plain_ldif)
        greatest = max(v for a in plain.values() for v in a.get("entrycsn", []))
        if plain[normalize_dn(SUFFIX)].get("contextcsn") != [greatest]:
            sys.exit(f"numadir's export of an LDIF without CSNs: suffix contextCSN "
                     f"{plain[normalize_dn(SUFFIX)].get('contextcsn')}, greatest entryCSN {greatest}")

        # 3. slapadd accepts numadir's export, and slapcat gives the same entries back.
        again = os.path.join(work, "slapdb2")
        os.mkdir(again)
        with open(conf, "w") as out:
            out.write(SLAPD_CONF.format(suffix=SUFFIX, directory=again))
        run(["/usr/sbin/slapadd", "-q", "-f", conf, "-l", export_ldif])
        second = os.path.join(work, "slapcat2.ldif")
        with open(second, "wb") as out:
            out.write(run(["/usr/sbin/slapcat", "-f", conf]))
        compare(expected, load(second), "slapcat of numadir's export vs slapcat")
    print(f"round trip ok: {len(expected)} entries")
    return 0


if __name__ == "__main__":
    import ldap.dn as ldap_dn  # python3-ldap
    sys.exit(main())
