#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs numadir's main job: generate a directory of users,
# load it, start `numadir serve` on a free loopback port and drive it with authrate (search +
# bind per auth), printing auths/sec, latency and the server's CPU per auth; then a short
# side-by-side run (perf/bench.py) prints numadir's auths/s beside OpenLDAP slapd's on the same
# users.
#
#   scripts/main.sh [authrate options...]     e.g. scripts/main.sh -c 64 -d 30
#   (options given replace the defaults --warmup 2 -d 10 -c 16)
#   NUMADIR_USERS=100000 scripts/main.sh      (default 10000 users)
set -euo pipefail
cd "$(dirname "$0")/.."

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

# The shipped config, listening on a port the kernel picks.
sed 's|^listen = .*|listen = ["ldap://127.0.0.1:0"]|' etc/numadir.toml >"$work/numadir.toml"
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
echo "== side by side with OpenLDAP slapd ($users users, 16 connections, 5 s each)"
/usr/bin/python3 perf/bench.py --build-dir build/release --users "$users" --servers slapd,percpu \
  --connections 16 --repeat 1 --duration 5 --warmup 1 --slapd-extra "threads 4" --results "" \
  --plot "" | grep -E '^\|'
