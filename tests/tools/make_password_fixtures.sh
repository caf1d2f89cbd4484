#!/usr/bin/env bash
# make_password_fixtures.sh - one-time tool (not run by the tests) that (re)generates the
# password hash fixtures in tests/data/passwords/, which tests/backend/password_scheme_test.cc
# verifies with numadir's own implementation.
#
#   slappasswd.txt  hashes made by OpenLDAP's slappasswd (Debian package slapd) and the
#                   modules Debian ships in /usr/lib/ldap: pw-sha2 ({SSHA256}.. {SHA512}) and
#                   argon2 ({ARGON2}; Debian builds it on libargon2, so it writes argon2i).
#                   pw-pbkdf2 is not shipped by Debian; see reference.txt.
#   reference.txt   what slappasswd cannot make here: {PBKDF2-*} in pw-pbkdf2's format and
#                   {SSHA*} with other salt lengths, computed by Python's hashlib (OpenSSL,
#                   through an independent codepath: hashlib + base64 in /usr/bin/python3);
#                   and argon2id / argon2d / version-0x10 argon2i values, which are published
#                   reference vectors of the Argon2 reference implementation's test suite
#                   (phc-winner-argon2, src/test.c), copied as data.
#
# Format of both: '#' comments, then one hash a line: scheme<TAB>password<TAB>stored value.
# Passwords never hold a TAB or a newline. Salts are random: re-running changes every value.
#
# Requirements (Debian 12): slapd (for /usr/sbin/slappasswd and /usr/lib/ldap), python3.
# Usage: tests/tools/make_password_fixtures.sh [OUTPUT_DIR]   (default tests/data/passwords)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=$(mkdir -p "${1:-$REPO/tests/data/passwords}" && cd "${1:-$REPO/tests/data/passwords}" && pwd)
SLAPPASSWD=/usr/sbin/slappasswd
MODULE_PATH=/usr/lib/ldap
PY=/usr/bin/python3

for tool in "$SLAPPASSWD" "$PY"; do
  if [ ! -x "$tool" ]; then
    echo "make_password_fixtures: $tool is missing (apt-get install slapd python3)" >&2
    exit 1
  fi
done

PASSWORDS=("secret" "correct horse battery staple" "pässwörd€")

# emit SCHEME PASSWORD [slappasswd options...]: one line made by slappasswd.
emit() {
  local scheme=$1 password=$2
  shift 2
  local hash
  hash=$("$SLAPPASSWD" -n "$@" -s "$password")
  printf '%s\t%s\t%s\n' "$scheme" "$password" "$hash"
}

sha2=(-o "module-path=$MODULE_PATH" -o module-load=pw-sha2)
argon2=(-o "module-path=$MODULE_PATH" -o module-load=argon2)
argon2_small=(-o "module-path=$MODULE_PATH" -o "module-load=argon2 m=1024 t=2 p=2")

{
  echo "# Made by tests/tools/make_password_fixtures.sh with $SLAPPASSWD from" \
    "$(dpkg-query -W -f='slapd ${Version}' slapd 2>/dev/null || echo 'slapd (version unknown)')."
  echo "# Modules loaded from $MODULE_PATH: pw-sha2, argon2. pw-pbkdf2 is not shipped."
  echo "# scheme<TAB>password<TAB>stored value"
  for password in "${PASSWORDS[@]}"; do
    emit '{SSHA}' "$password" -h '{SSHA}'
    emit '{SHA}' "$password" -h '{SHA}'
    emit '{SMD5}' "$password" -h '{SMD5}'
    emit '{MD5}' "$password" -h '{MD5}'
    for bits in 256 384 512; do
      emit "{SSHA$bits}" "$password" "${sha2[@]}" -h "{SSHA$bits}"
      emit "{SHA$bits}" "$password" "${sha2[@]}" -h "{SHA$bits}"
    done
    emit '{ARGON2}' "$password" "${argon2[@]}" -h '{ARGON2}'
    emit '{ARGON2}' "$password" "${argon2_small[@]}" -h '{ARGON2}'
    emit '{CRYPT}' "$password" -h '{CRYPT}' -c '$6$%.16s'
    emit '{CRYPT}' "$password" -h '{CRYPT}' -c '$6$rounds=10000$%.16s'
    emit '{CRYPT}' "$password" -h '{CRYPT}' -c '$5$%.16s'
    emit '{CRYPT}' "$password" -h '{CRYPT}' -c '$1$%.8s'
    emit '{CRYPT}' "$password" -h '{CRYPT}' -c '$y$j9T$%.16s'
    emit '{CRYPT}' "$password" -h '{CRYPT}' -c '$2b$05$%.22s'
  done
  # Traditional DES crypt reads only the first 8 bytes of a password: one ASCII sample.
  emit '{CRYPT}' "secret" -h '{CRYPT}'
} >"$OUT/slappasswd.txt"

"$PY" - "$OUT/reference.txt" "${PASSWORDS[@]}" <<'PYTHON'
import base64, hashlib, os, ssl, sys

# Bytes throughout, so that the passwords reach the file as the shell passed them.
out_path, passwords = sys.argv[1], [os.fsencode(arg) for arg in sys.argv[2:]]
lines = [
    b"# Made by tests/tools/make_password_fixtures.sh with Python %s hashlib (%s)."
    % (sys.version.split()[0].encode(), ssl.OPENSSL_VERSION.encode()),
    b"# {PBKDF2-*}: pw-pbkdf2's format, <iterations>$<ab64 salt>$<ab64 dk>, 16-byte salt, dk as",
    b"# long as the digest; ab64 is base64 with '.' for '+' and no '=' padding.",
    b"# {SSHA*}, {SMD5}: base64(digest(password + salt) + salt), salts of 1 to 64 bytes.",
    b"# scheme<TAB>password<TAB>stored value",
]

def ab64(data):
    return base64.b64encode(data).replace(b"+", b".").rstrip(b"=")

for password in passwords:
    for scheme, digest, iterations in [
        (b"{PBKDF2}", "sha1", 10000),
        (b"{PBKDF2-SHA1}", "sha1", 1000),
        (b"{PBKDF2-SHA256}", "sha256", 10000),
        (b"{PBKDF2-SHA512}", "sha512", 10000),
        (b"{PBKDF2-SHA512}", "sha512", 25000),
    ]:
        salt = os.urandom(16)
        dk = hashlib.pbkdf2_hmac(digest, password, salt, iterations)
        lines.append(b"%s\t%s\t%s%d$%s$%s" % (scheme, password, scheme, iterations, ab64(salt), ab64(dk)))
    for scheme, digest, salt_size in [
        (b"{SSHA}", "sha1", 16),
        (b"{SSHA256}", "sha256", 4),
        (b"{SSHA384}", "sha384", 1),
        (b"{SSHA512}", "sha512", 64),
        (b"{SMD5}", "md5", 8),
    ]:
        salt = os.urandom(salt_size)
        value = base64.b64encode(hashlib.new(digest, password + salt).digest() + salt)
        lines.append(b"%s\t%s\t%s%s" % (scheme, password, scheme, value))

lines += [
    b"# Argon2 reference vectors (phc-winner-argon2 src/test.c), with the {ARGON2} prefix.",
    b"# The argon2d one has an empty password.",
]
for password, phc in [
    (b"password", b"$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"),
    (b"password", b"$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc"),
    (b"differentpassword", b"$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$C4TWUs9rDEvq7w3+J4umqA32aWKB1+DSiRuBfYxFj94"),
    (b"password", b"$argon2i$v=19$m=256,t=2,p=2$c29tZXNhbHQ$T/XOJ2mh1/TIpJHfCdQan76Q5esCFVoT5MAeIM1Oq2E"),
    (b"password", b"$argon2i$m=256,t=2,p=2$c29tZXNhbHQ$tsEVYKap1h6scGt5ovl9aLRGOqOth+AMB+KwHpDFZPs"),
    (b"", b"$argon2d$v=16$m=8,t=1,p=1$ICAgICAgICA$X54KZYxUSfMUihzebb70sKbheabHilo8gsUldrVU4IU"),
]:
    lines.append(b"{ARGON2}\t%s\t{ARGON2}%s" % (password, phc))

with open(out_path, "wb") as f:
    f.write(b"\n".join(lines) + b"\n")
PYTHON

echo "make_password_fixtures: wrote $OUT/slappasswd.txt and $OUT/reference.txt"
