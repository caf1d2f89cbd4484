#!/usr/bin/env bash
# Installs every build and test dependency of numadir from Debian packages (Debian 12).
# Idempotent: installs only what is missing and prints nothing when nothing is missing.
# Nothing is downloaded from anywhere but the Debian archive.
set -euo pipefail

packages=(
  # Build.
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config clang-format
  # Libraries.
  liblmdb-dev libssl-dev libboost-dev libhwloc-dev libicu-dev libargon2-dev libcrypt-dev
  libcli11-dev libtomlplusplus-dev
  # Tests and benchmarks.
  doctest-dev libbenchmark-dev
  # Real LDAP clients for integration tests (used with /usr/bin/python3).
  ldap-utils python3 python3-ldap python3-ldap3
  # perf/bench.sh draws its plot with gnuplot.
  gnuplot-nox
  # OpenLDAP's slapd, the reference: tests start private instances with their own config, and
  # slappasswd / slapcat / slapadd make the hashes and LDIF the round-trip tests compare with.
  slapd
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "setup: missing packages (${missing[*]}) and not root; run as root or install sudo" >&2
    exit 1
  fi
  sudo="sudo"
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Without a preseed, slapd's package would configure and start a system-wide server; tests
# only ever start private instances.
echo "slapd slapd/no_configuration boolean true" | $sudo debconf-set-selections
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
echo "setup: done"
