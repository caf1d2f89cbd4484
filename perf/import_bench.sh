#!/usr/bin/env bash
# Times `numadir import` against OpenLDAP's `slapadd -q` on the same generated LDIF, in one run,
# with the same schema and the same indexes (objectClass, uid, cn, mail eq), and reports wall
# time, entries/s and peak RSS of each, and the ratio.
#
#   perf/import_bench.sh [--users N] [--runs R] [--numadir PATH]
#                                     (defaults: 1,000,000 users, 1 run, build/release's numadir)
#
# Needs a release build (cmake --preset release && cmake --build --preset release, or --numadir
# naming another RelWithDebInfo build's binary) and the slapd package (slapadd). Runs entirely in
# a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

users=1000000
runs=1
numadir="$PWD/build/release/server/numadir"
while [ $# -gt 0 ]; do
  case "$1" in
    --users) users="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --numadir) numadir="$(realpath "$2")"; shift 2 ;;
    *) echo "usage: $0 [--users N] [--runs R] [--numadir PATH]" >&2; exit 2 ;;
  esac
done

[ -x "$numadir" ] || { echo "build the release preset first ($numadir missing)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "generating $users users..." >&2
/usr/bin/python3 perf/gen_users.py --users "$users" > "$work/users.ldif"
ldif_bytes=$(stat -c %s "$work/users.ldif")
entries=$(grep -c '^dn: ' "$work/users.ldif")

cat > "$work/numadir.toml" <<TOML
[database]
path = "db"
suffix = "dc=example,dc=com"
map_size = "16GiB"
indexes = ["objectClass eq", "uid eq", "cn eq", "mail eq"]
TOML

cat > "$work/slapd.conf" <<CONF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 17179869184
suffix "dc=example,dc=com"
rootdn "cn=admin,dc=example,dc=com"
directory $work/slapdb
index objectClass eq
index uid eq
index cn eq
index mail eq
CONF

# Prints "<seconds> <peak RSS KiB>" for a command.
measure() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || {
    cat "$work/stderr" >&2
    return 1
  }
  cat "$work/time"
}

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "input: $entries entries, $((ldif_bytes / 1048576)) MiB of LDIF"
printf "%-18s %10s %14s %14s\n" "tool" "seconds" "entries/s" "peak RSS MiB"
for run in $(seq 1 "$runs"); do
  rm -rf "$work/db" "$work/slapdb"
  mkdir -p "$work/db" "$work/slapdb"
  read -r n_sec n_rss < <(cd "$work" && measure "$numadir" import --no-progress -c numadir.toml users.ldif)
  read -r s_sec s_rss < <(measure /usr/sbin/slapadd -q -f "$work/slapd.conf" -l "$work/users.ldif")
  printf "%-18s %10s %14d %14d\n" "numadir import" "$n_sec" \
    "$(awk -v e="$entries" -v s="$n_sec" 'BEGIN{printf "%d", e/s}')" $((n_rss / 1024))
  printf "%-18s %10s %14d %14d\n" "slapadd -q" "$s_sec" \
    "$(awk -v e="$entries" -v s="$s_sec" 'BEGIN{printf "%d", e/s}')" $((s_rss / 1024))
  awk -v n="$n_sec" -v s="$s_sec" 'BEGIN{printf "run '"$run"': numadir takes %.2fx the time of slapadd -q (%.2fx as fast)\n", n/s, s/n}'
  echo "load average after run $run: $(cut -d' ' -f1-3 /proc/loadavg)"
done
