#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs numadir's main job: generate a directory of users,
# load it, start `numadir serve` on a free loopback port and drive it with authrate (search +
# bind per auth), printing auths/sec, latency and the server's CPU per auth; then a short
# side-by-side run (perf/bench.py) prints numadir's auths/s beside OpenLDAP slapd's (and 389
# Directory Server's, when 389-ds-base is installed: scripts/setup.sh installs it) on the same
# users.
#
#   scripts/main.sh [authrate options...]     e.g. scripts/main.sh -c 64 -d 30
#   (options given replace the defaults --warmup 2 -d 10 -c 16)
#   NUMADIR_USERS=100000 scripts/main.sh      (default 10000 users)
#   scripts/main.sh --write-config FILE       only writes the job's numadir.toml to FILE
set -euo pipefail

only_config=""
if [[ "${1:-}" == "--write-config" ]]; then
  [[ $# -eq 2 ]] || { echo "usage: scripts/main.sh --write-config FILE" >&2; exit 2; }
  only_config="$(realpath -m "$2")"
fi
cd "$(dirname "$0")/.."

# The shipped config, listening on a port the kernel picks, written to $1. Mode 0600 from the
# start (install makes the file before a byte is in it): it holds server.rootpw.
write_config() {
  install -m 600 /dev/null "$1"
  sed 's|^listen = .*|listen = ["ldap://127.0.0.1:0"]|' etc/numadir.toml >"$1"
}
if [[ -n "$only_config" ]]; then
  write_config "$only_config"
  exit 0
fi

scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target numadir authrate floor-server

users="${NUMADIR_USERS:-10000}"
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

write_config "$work/numadir.toml"
echo "== generating $users users and loading them"
/usr/bin/python3 perf/gen_users.py --users "$users" >"$work/users.ldif"
build/release/server/numadir import -c "$work/numadir.toml" --no-progress "$work/users.ldif"

echo "== starting numadir serve"
build/release/server/numadir serve -c "$work/numadir.toml" >"$work/serve.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 1 100); do
  port="$(grep -o 'listening on ldap://127.0.0.1:[0-9]*' "$work/serve.log" | head -n 1 |
          sed 's/.*://')" || true
  [[ -n "$port" ]] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    cat "$work/serve.log"
    exit 1
  fi
  sleep 0.1
done
[[ -n "$port" ]] || { echo "numadir serve did not start"; cat "$work/serve.log"; exit 1; }
cat "$work/serve.log"

echo "== authrate against ldap://127.0.0.1:$port ($users users)"
options=("$@")
if [[ ${#options[@]} -eq 0 ]]; then
  options=(--warmup 2 -d 10 -c 16)
fi
build/release/perf/authrate -H "ldap://127.0.0.1:$port" -b "ou=people,dc=example,dc=com" \
  --first 0 --last "$((users - 1))" --server-pid "$server_pid" "${options[@]}"

kill -TERM "$server_pid" && wait "$server_pid" || true
server_pid=""
# 389-ds joins when its tools are there (perf/ds389.py makes a private instance under /tmp).
servers="slapd,percpu"
peers="OpenLDAP slapd"
if [[ -x /usr/sbin/ns-slapd && -x /usr/sbin/dscreate ]]; then
  servers="slapd,389ds,percpu"
  peers="OpenLDAP slapd and 389-ds"
else
  echo "== 389-ds is not installed (Debian's 389-ds-base): the side by side leaves it out"
fi
echo "== side by side with $peers ($users users, 16 connections, 5 s each)"
/usr/bin/python3 perf/bench.py --build-dir build/release --users "$users" --servers "$servers" \
  --connections 16 --repeat 1 --duration 5 --warmup 1 --slapd-extra "threads 4" --results "" \
  --plot "" | grep -E '^\|'
