#!/usr/bin/env bash
# capture_golden.sh - one-time tool (not run in CI) that (re)generates the
# golden LDAP wire captures in tests/data/golden/.
#
# It starts a private OpenLDAP slapd on 127.0.0.1 (free port, temp dir), loads
# a small example tree, and then records ONE client session per capture by
# pointing a real client (ldap-utils / python-ldap) at tests/tools/record_proxy.py,
# which writes the raw client->server bytes to <name>.c2s and the raw
# server->client bytes to <name>.s2c.
#
# Requirements (Debian 12): slapd ldap-utils python3-ldap libsasl2-modules.
# Must run as root (slapd is started without -u/-g).  Re-running regenerates
# every file; contents differ between runs (timestamps, entryCSN, UUIDs,
# generated password), so only re-run when the goldens should really change.
#
# Usage: tests/tools/capture_golden.sh [OUTPUT_DIR]   (default tests/data/golden)
# Set KEEP_WORK=1 to keep the temp dir (slapd.conf, slapd.log, client output).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=$(mkdir -p "${1:-$REPO/tests/data/golden}" && cd "${1:-$REPO/tests/data/golden}" && pwd)
PY=/usr/bin/python3
PROXY=$HERE/record_proxy.py
export LDAPNOINIT=1   # ignore /etc/ldap/ldap.conf and ~/.ldaprc

WORK=$(mktemp -d /tmp/numadir-golden.XXXXXX)
SLAPD_PID=
cleanup() {
    if [ -n "$SLAPD_PID" ]; then
        kill "$SLAPD_PID" 2>/dev/null || true
        wait "$SLAPD_PID" 2>/dev/null || true
    fi
    [ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
    $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

PORT=$(free_port)
URI="ldap://127.0.0.1:$PORT/"
BASE="dc=example,dc=com"
PEOPLE="ou=people,$BASE"
GROUPS_DN="ou=groups,$BASE"
ADMIN="cn=admin,$BASE"
ADMINPW=secret

# ---------------------------------------------------------------- slapd --
mkdir "$WORK/db"
cat > "$WORK/slapd.conf" <<EOF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema

pidfile  $WORK/slapd.pid
argsfile $WORK/slapd.args

modulepath /usr/lib/ldap
moduleload back_mdb

# SASL DIGEST-MD5 identities -> entries (used by the sasl_digest capture)
authz-regexp "^uid=([^,]+)(,cn=[^,]+)?,cn=digest-md5,cn=auth$" "uid=\$1,$PEOPLE"

database mdb
maxsize 104857600
suffix "$BASE"
rootdn "$ADMIN"
rootpw $ADMINPW
directory $WORK/db
index objectClass,uid,cn eq

access to attrs=userPassword
    by self write
    by anonymous auth
    by * none
access to *
    by * read
EOF

/usr/sbin/slapd -d stats -h "$URI" -f "$WORK/slapd.conf" > "$WORK/slapd.log" 2>&1 &
SLAPD_PID=$!

for _ in $(seq 100); do
    if ldapsearch -x -H "$URI" -s base -b "" "(objectClass=*)" 1.1 >/dev/null 2>&1; then
        break
    fi
    kill -0 "$SLAPD_PID" 2>/dev/null || { cat "$WORK/slapd.log" >&2; echo "slapd died" >&2; exit 1; }
    sleep 0.1
done
ldapsearch -x -H "$URI" -s base -b "" "(objectClass=*)" 1.1 >/dev/null

# ------------------------------------------------------------ base data --
SURNAMES=(Smith Smyth Jones Miller Brown Adams Zimmer Nguyen Taylor Moore
          Walker Young King Wright Lopez Hill Scott Green Baker Nelson
          Carter Mitchell Perez Roberts Turner Phillips Campbell Parker Evans Edwards)
{
    cat <<EOF
dn: $BASE
objectClass: dcObject
objectClass: organization
dc: example
o: Example Inc.

dn: $PEOPLE
objectClass: organizationalUnit
ou: people

dn: $GROUPS_DN
objectClass: organizationalUnit
ou: groups

EOF
    for i in $(seq 0 29); do
        cat <<EOF
dn: uid=user$i,$PEOPLE
objectClass: inetOrgPerson
objectClass: posixAccount
uid: user$i
cn: User $i
sn: ${SURNAMES[$i]}
givenName: User
mail: user$i@example.com
uidNumber: $((10000 + i))
gidNumber: 10000
homeDirectory: /home/user$i
loginShell: /bin/bash
userPassword: pass$i

EOF
    done
    cat <<EOF
dn: cn=staff,$GROUPS_DN
objectClass: groupOfNames
cn: staff
description: All staff
member: uid=user0,$PEOPLE
member: uid=user1,$PEOPLE
member: uid=user2,$PEOPLE

EOF
} > "$WORK/base.ldif"
ldapadd -x -H "$URI" -D "$ADMIN" -w "$ADMINPW" -f "$WORK/base.ldif" > /dev/null

# Referral object (added with ManageDsaIT so it is stored, not followed).
ldapadd -x -M -H "$URI" -D "$ADMIN" -w "$ADMINPW" > /dev/null <<EOF
dn: ou=remote,$BASE
objectClass: referral
objectClass: extensibleObject
ou: remote
ref: ldap://ldap.remote.example.org/ou=remote,dc=example,dc=com
EOF

# ------------------------------------------------------------ recording --
# record NAME EXPECTED_RC CMD ARGS...
#   Runs CMD through a fresh recording proxy.  The literal argument PROXY_URI
#   is replaced by the proxy's ldap:// URI.  EXPECTED_RC '-' accepts any exit.
record() {
    local name=$1 expect=$2
    shift 2
    local portfile="$WORK/$name.port"
    rm -f "$OUT/$name.c2s" "$OUT/$name.s2c"
    timeout 60 $PY -u "$PROXY" 0 "127.0.0.1:$PORT" "$OUT/$name" > "$portfile" &
    local proxy_pid=$!
    for _ in $(seq 100); do [ -s "$portfile" ] && break; sleep 0.05; done
    local puri="ldap://127.0.0.1:$(head -n1 "$portfile")/"
    local args=() a
    for a in "$@"; do args+=("${a//PROXY_URI/$puri}"); done
    local rc=0
    "${args[@]}" > "$WORK/$name.out" 2>&1 || rc=$?
    wait "$proxy_pid" || { echo "$name: proxy failed" >&2; exit 1; }
    if [ "$expect" != "-" ] && [ "$rc" != "$expect" ]; then
        cat "$WORK/$name.out" >&2
        echo "$name: client exit $rc, expected $expect" >&2
        exit 1
    fi
    if [ ! -s "$OUT/$name.c2s" ] || [ ! -s "$OUT/$name.s2c" ]; then
        echo "$name: empty capture" >&2
        exit 1
    fi
    printf '%-24s rc=%-3s c2s=%5d s2c=%6d bytes\n' "$name" "$rc" \
        "$(stat -c %s "$OUT/$name.c2s")" "$(stat -c %s "$OUT/$name.s2c")"
}

# Read-only sessions first (anonymous simple bind, as ldapsearch -x does).
record search_nested_filter 0 ldapsearch -x -H PROXY_URI -b "$BASE" \
    '(&(objectClass=inetOrgPerson)(|(uid=user1)(!(cn=User 2))(sn>=M)(sn<=Z)))' cn sn mail

# ldapsearch -f runs one search per line, substituted into the pattern '(%s)'.
printf '%s\n' 'cn=Us*er*1*5' 'mail=*@example.com' 'sn=Sm*' 'cn=*ser 2*' > "$WORK/substrings.txt"
record search_substrings 0 ldapsearch -x -H PROXY_URI -b "$PEOPLE" -f "$WORK/substrings.txt" '(%s)' cn

printf '%s\n' 'cn:caseExactMatch:=User 1' ':dn:2.5.13.5:=people' 'sn:dn:caseIgnoreMatch:=smith' > "$WORK/extensible.txt"
record search_extensible 0 ldapsearch -x -H PROXY_URI -b "$BASE" -f "$WORK/extensible.txt" '(%s)' 1.1

printf '%s\n' 'sn~=Smith' 'mail=*' > "$WORK/approx.txt"
record search_approx_present 0 ldapsearch -x -H PROXY_URI -b "$PEOPLE" -f "$WORK/approx.txt" '(%s)' uid

record search_paged 0 ldapsearch -x -H PROXY_URI -b "$PEOPLE" -E pr=10/noprompt '(objectClass=*)' uid
record search_sizelimit 4 ldapsearch -x -H PROXY_URI -b "$PEOPLE" -z 5 '(uid=*)' uid
record search_attrs_all_user_op 0 ldapsearch -x -H PROXY_URI -b "uid=user3,$PEOPLE" -s base '(objectClass=*)' '*' '+'
record search_attrs_noattrs 0 ldapsearch -x -H PROXY_URI -b "$BASE" -s one '(objectClass=*)' 1.1
record search_typesonly 0 ldapsearch -x -H PROXY_URI -A -b "$GROUPS_DN" -s sub '(objectClass=*)'
record search_rootdse 0 ldapsearch -x -H PROXY_URI -s base -b '' '(objectClass=*)' '+'
record referral 0 ldapsearch -x -H PROXY_URI -b "$BASE" -s sub '(objectClass=organizationalUnit)' ou

record compare_true 6 ldapcompare -x -H PROXY_URI "uid=user1,$PEOPLE" 'sn:Smyth'
record compare_false 5 ldapcompare -x -H PROXY_URI "uid=user1,$PEOPLE" 'sn:Jones'
record whoami 0 ldapwhoami -x -H PROXY_URI -D "uid=user4,$PEOPLE" -w pass4
record bind_fail 49 ldapwhoami -x -H PROXY_URI -D "uid=user4,$PEOPLE" -w wrongpassword

# Update sessions (bound as the rootdn).
cat > "$WORK/add.ldif" <<EOF
dn: uid=newuser,$PEOPLE
objectClass: inetOrgPerson
objectClass: posixAccount
uid: newuser
cn: New User
sn: Newman
mail: newuser@example.com
uidNumber: 20000
gidNumber: 10000
homeDirectory: /home/newuser
EOF
record add 0 ldapadd -x -H PROXY_URI -D "$ADMIN" -w "$ADMINPW" -f "$WORK/add.ldif"

cat > "$WORK/modify.ldif" <<EOF
dn: uid=user5,$PEOPLE
changetype: modify
add: telephoneNumber
telephoneNumber: +1 555 0100
telephoneNumber: +1 555 0101
-
delete: loginShell
-
replace: mail
mail: user5@mail.example.com
mail: u5@example.com
-
delete: givenName
givenName: User
-
EOF
record modify 0 ldapmodify -x -H PROXY_URI -D "$ADMIN" -w "$ADMINPW" -f "$WORK/modify.ldif"

record delete 0 ldapdelete -x -H PROXY_URI -D "$ADMIN" -w "$ADMINPW" "uid=user29,$PEOPLE"
record modrdn 0 ldapmodrdn -x -H PROXY_URI -D "$ADMIN" -w "$ADMINPW" -r -s "$GROUPS_DN" \
    "uid=user28,$PEOPLE" "uid=moved28"

# Password modify extended operation: admin sets a given password for a user;
# then a user changes its own password and lets the server generate one.
record passwd 0 ldappasswd -x -H PROXY_URI -D "$ADMIN" -w "$ADMINPW" -s newpass7 "uid=user7,$PEOPLE"
record passwd_generated 0 ldappasswd -x -H PROXY_URI -D "uid=user8,$PEOPLE" -w pass8

# Abandon: python-ldap sends a search and abandons it straight away.
record abandon 0 $PY -c '
import sys, ldap
l = ldap.initialize(sys.argv[1])
l.protocol_version = 3
l.simple_bind_s("uid=user9,ou=people,dc=example,dc=com", "pass9")
msgid = l.search_ext("dc=example,dc=com", ldap.SCOPE_SUBTREE, "(objectClass=*)", ["cn"])
l.abandon(msgid)
l.unbind_s()
' PROXY_URI

# SASL DIGEST-MD5 bind (no security layer so the trailing unbind stays plain).
record sasl_digest 0 ldapwhoami -H PROXY_URI -Y DIGEST-MD5 -U user10 -w pass10 -O maxssf=0

echo "captures written to $OUT"
