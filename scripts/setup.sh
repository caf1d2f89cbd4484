#!/usr/bin/env bash
# Installs every build and test dependency of numadir from Debian packages (Debian 12).
# Idempotent: installs only what is missing and prints nothing when nothing is missing.
# Nothing is downloaded from anywhere but the Debian archive.
set -euo pipefail

packages=(
  # Build.
  cmake ninja-build g++ clang libclang-rt-14-dev pkg-config clang-format ccache
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
  # ip netns and ss: tests/integration/replication_hosts_test.py puts slapd, the replicas and
  # the clients in network namespaces of their own (slim images lack iproute2).
  iproute2
  # The NSS and PAM daemons tests/integration/nss_pam_test.py runs against numadir and slapd,
  # each in a private mount namespace with its own nsswitch.conf, daemon config and PAM service
  # (the host's configuration is neither used nor changed: see below), and pamtester, which it
  # runs there beside getent and id.
  nslcd libnss-ldapd libpam-ldapd sssd-ldap libnss-sss libpam-sss pamtester
  # perf/nss_pam_bench.py drives PAM logins from long-lived Python processes (libpam in-process).
  python3-pam
  # Prometheus and promtool: tests/integration/metrics_*_test.py and perf/metrics_bench.py start
  # a private Prometheus (its own config and data directory) that scrapes numadir's [metrics]
  # endpoint; promtool checks scrapes and etc/prometheus/numadir-alerts.yml.
  prometheus
  # 389 Directory Server, the other peer a user would pick: perf/bench.py, perf/modify_bench.py
  # and tests/integration/ds389_harness_test.py make private instances of it (perf/ds389.py:
  # dscreate under a prefix in /tmp, ns-slapd in the foreground). The package creates no
  # instance and starts nothing; its SNMP agent does not start at boot either (below).
  389-ds-base
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
# libnss-ldapd would add "ldap" to the /etc/nsswitch.conf services chosen here: none. nslcd's
# own questions get answers for the /etc/nslcd.conf it writes (which no test reads: each mounts
# its own over it).
$sudo debconf-set-selections <<'SELECTIONS'
libnss-ldapd libnss-ldapd/nsswitch multiselect
libnss-ldapd libnss-ldapd/clean_nsswitch boolean false
nslcd nslcd/ldap-uris string ldap://127.0.0.1/
nslcd nslcd/ldap-base string dc=example,dc=com
nslcd nslcd/ldap-auth-type select none
nslcd nslcd/ldap-starttls boolean false
SELECTIONS
nss_pam=0
prometheus=0
dirsrv=0
for package in "${missing[@]}"; do
  case "$package" in
    nslcd | libnss-* | libpam-* | sssd-*) nss_pam=1 ;;
    prometheus) prometheus=1 ;;
    389-ds-base) dirsrv=1 ;;
  esac
done
# libpam-ldapd, libpam-sss and libpam-pwquality (which libpam-sss depends on) run
# `pam-auth-update --package`, which adds to /etc/pam.d/common-* every profile it has not seen
# before: marked as seen, "ldap", "sss" and "pwquality" are left out, as for an administrator
# who declined them, and the host's PAM stack stays as it is.
if [ "$nss_pam" = 1 ] && [ -d /var/lib/pam ]; then
  for profile in ldap sss pwquality; do
    if ! grep -qx "$profile" /var/lib/pam/seen 2>/dev/null; then
      echo "$profile" | $sudo tee -a /var/lib/pam/seen >/dev/null
    fi
  done
fi
# libnss-sss's postinst appends "sss" to passwd, group, shadow, ... in /etc/nsswitch.conf on its
# first install, asking nothing: the copy taken now is put back afterwards.
nsswitch_copy=""
if [ "$nss_pam" = 1 ] && [ -f /etc/nsswitch.conf ]; then
  nsswitch_copy=$(mktemp)
  cp /etc/nsswitch.conf "$nsswitch_copy"
fi
# No maintainer script may start a daemon (nslcd, sssd, slapd): a policy-rc.d that answers 101
# ("action forbidden") while we install, unless the machine has one of its own.
own_policy_rc=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\n# scripts/setup.sh: no service starts while it installs packages.\nexit 101\n' |
    $sudo tee /usr/sbin/policy-rc.d >/dev/null
  $sudo chmod 755 /usr/sbin/policy-rc.d
  own_policy_rc=1
fi
restore() {
  if [ "$own_policy_rc" = 1 ]; then
    $sudo rm -f /usr/sbin/policy-rc.d
  fi
  if [ "$nss_pam" = 1 ] || [ "$prometheus" = 1 ] || [ "$dirsrv" = 1 ]; then
    # Installed as test tools, never to serve the host: nslcd, sssd, prometheus and 389-ds's
    # SNMP agent do not start at boot either (sysvinit links and systemd units; each command
    # does nothing where it has no job).
    for daemon in nslcd sssd prometheus dirsrv-snmp; do
      $sudo update-rc.d "$daemon" disable >/dev/null 2>&1 || true
      $sudo deb-systemd-helper disable "$daemon.service" >/dev/null 2>&1 || true
    done
  fi
  if [ -n "$nsswitch_copy" ]; then
    if ! cmp -s "$nsswitch_copy" /etc/nsswitch.conf; then
      $sudo cp "$nsswitch_copy" /etc/nsswitch.conf
      echo "setup: put /etc/nsswitch.conf back as it was before the install"
    fi
    rm -f "$nsswitch_copy"
  fi
}
trap restore EXIT
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
echo "setup: done"
