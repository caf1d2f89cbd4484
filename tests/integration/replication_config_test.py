#!/usr/bin/python3
"""`numadir check-config` on [[replication.consumer]] tables through the real executable, and
`check-config --online` against private OpenLDAP slapd providers: one with the syncprov overlay
and TLS (a throwaway CA from tls_harness.Pki), one without syncprov. Online, each consumer gets
one line: ok over ldap://, after StartTLS and over ldaps:// with the CA; "does not offer the Sync
Request control" for the provider without syncprov; a refused bind for a wrong password;
"certificate verify failed" for a CA that did not sign the provider's certificate; a searchbase
the provider lacks. Offline, the mistakes check-config reports before it reaches anything (an
unknown key, a searchbase outside the suffix, a missing credentials file; a credentials file open
to others is a warning), and without --online no provider is contacted.

  replication_config_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 on success (or when slapd or openssl is missing: skipped), 1 with the first failure.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numadir_harness as h  # noqa: E402
import slapd_harness  # noqa: E402
import tls_harness  # noqa: E402

TIMEOUT_S = 30
SYNC_REQUEST_OID = "1.3.6.1.4.1.4203.1.9.1.1"

LDIF = f"""dn: {h.SUFFIX}
objectClass: top
objectClass: dcObject
objectClass: organization
dc: example
o: Example

dn: {h.PEOPLE}
objectClass: organizationalUnit
ou: people

dn: {h.user_dn(1)}
objectClass: inetOrgPerson
uid: user1
cn: User One
sn: One
userPassword: {h.user_pw(1)}
"""


class Setup:
    """The temporary directory, the PKI, the credentials files and the two providers."""

    def __init__(self, numadir, root, pki, with_sync, without_sync):
        self.numadir = numadir
        self.root = root
        self.pki = pki
        self.with_sync = with_sync
        self.without_sync = without_sync
        self.good_pw = self.write("good.pw", f"{with_sync.root_pw}\n", 0o600)
        self.wrong_pw = self.write("wrong.pw", "not-the-password\n", 0o600)
        self.count = 0

    def write(self, name, text, mode=0o600):
        path = os.path.join(self.root, name)
        with open(path, "w") as stream:
            stream.write(text)
        os.chmod(path, mode)
        return path

    def config(self, consumers):
        """Writes a numadir.toml with `consumers` (TOML text) in a fresh folder; returns it."""
        self.count += 1
        folder = os.path.join(self.root, f"c{self.count}")
        os.mkdir(folder)
        path = os.path.join(folder, "numadir.toml")
        with open(path, "w") as stream:
            stream.write(f"""[database]
path = "db"
suffix = "{h.SUFFIX}"

[server]
listen = ["ldap://127.0.0.1:0"]

{consumers}""")
        os.chmod(path, 0o600)
        return path

    def check_config(self, config, online=True):
        args = [self.numadir, "check-config", "-c", config] + (["--online"] if online else [])
        result = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT_S)
        # Nothing is imported here: check-config's note that database.path has no database yet
        # is not what these checks are about.
        note = ": note: database.path: "
        h.check(note in result.stdout or result.returncode != 0 and not result.stdout,
                "check-config notes the database that is not there yet", result.stdout)
        result.stdout = "".join(line for line in result.stdout.splitlines(keepends=True)
                                if note not in line)
        print(f"  $ check-config{' --online' if online else ''}: status {result.returncode}\n"
              f"    out: {result.stdout!r}\n    err: {result.stderr!r}", flush=True)
        return result


def consumer(rid, provider, password_file, extra="", searchbase=h.SUFFIX):
    return f"""[[replication.consumer]]
rid = {rid}
provider = "{provider}"
searchbase = "{searchbase}"
binddn = "{h.ROOT_DN}"
credentials_file = "{password_file}"
timeout_ms = 5000
network_timeout_ms = 5000
{extra}
"""


def starttls_url(slapd):
    return f"ldap://127.0.0.1:{slapd.port}"


def check_online_ok(s):
    ca = f'ca_file = "{s.pki.ca_crt}"'
    config = s.config(
        consumer(1, s.with_sync.url, s.good_pw) +
        consumer(2, starttls_url(s.with_sync), s.good_pw, f'starttls = "critical"\n{ca}') +
        consumer(3, s.with_sync.ldaps_url, s.good_pw, ca, searchbase=h.PEOPLE))
    result = s.check_config(config)
    h.check_equal(result.returncode, 0, "check-config --online exits 0")
    h.check_equal(result.stderr, "", "nothing on standard error")
    lines = result.stdout.splitlines()
    h.check_equal(len(lines), 4, "a line per consumer, then the file's")
    bound = f"bound as {h.ROOT_DN}, searchbase readable)"
    h.check_equal(lines[0], f"replication.consumer rid=1: {s.with_sync.url}: ok, offers the Sync "
                            f"Request control (in the clear, {bound}", "ldap://: ok, in the clear")
    h.check(lines[1].startswith(f"replication.consumer rid=2: {starttls_url(s.with_sync)}: ok, "
                                "offers the Sync Request control (TLSv1.")
            and lines[1].endswith(f" after StartTLS, {bound}"),
            "StartTLS (critical): ok, TLS after StartTLS", lines[1])
    h.check(lines[2].startswith(f"replication.consumer rid=3: {s.with_sync.ldaps_url}: ok, offers "
                                "the Sync Request control (TLSv1.")
            and lines[2].endswith(f", {bound}") and "StartTLS" not in lines[2],
            "ldaps://: ok, TLS from the first byte", lines[2])
    h.check_equal(lines[3], f"{config}: ok", "the file is ok")


def check_missing_control(s):
    config = s.config(consumer(4, s.without_sync.url, s.good_pw))
    result = s.check_config(config)
    h.check_equal(result.returncode, 1, "a provider without syncprov fails the check")
    h.check(f"numadir: {config}: replication.consumer rid=4: {s.without_sync.url}: the provider "
            f"does not offer the Sync Request control ({SYNC_REQUEST_OID} is not in its root "
            "DSE's supportedControl): load the syncprov overlay on its database\n"
            in result.stderr, "the missing control is named, with the fix", result.stderr)
    h.check(f"{config}: ok" not in result.stdout, "the file is not said to be ok", result.stdout)


def check_wrong_password(s):
    config = s.config(consumer(5, s.with_sync.url, s.wrong_pw))
    result = s.check_config(config)
    h.check_equal(result.returncode, 1, "a wrong password fails the check")
    h.check(f"numadir: {config}: replication.consumer rid=5: {s.with_sync.url}: bind as "
            f"{h.ROOT_DN} refused: invalidCredentials (49)\n" in result.stderr,
            "the refused bind is named with its result code", result.stderr)


def check_wrong_ca(s):
    other_ca = f'ca_file = "{s.pki.ca2_crt}"'
    config = s.config(
        consumer(6, s.with_sync.ldaps_url, s.good_pw, other_ca) +
        consumer(7, starttls_url(s.with_sync), s.good_pw, f'starttls = "yes"\n{other_ca}') +
        consumer(8, s.with_sync.url, s.good_pw))
    result = s.check_config(config)
    h.check_equal(result.returncode, 1, "a CA that did not sign the provider's certificate fails")
    # slapd sends its CA with its certificate (TLSCACertificateFile): OpenSSL finds a root it
    # does not trust in the chain; without it, it would find no issuer at all.
    reasons = ("self-signed certificate in certificate chain",
               "self signed certificate in certificate chain",
               "unable to get local issuer certificate")
    for rid, url, how in ((6, s.with_sync.ldaps_url, ""),
                          (7, starttls_url(s.with_sync), "after StartTLS: ")):
        head = (f"numadir: {config}: replication.consumer rid={rid}: {url}: {how}certificate "
                "verify failed: ")
        h.check(any(f"{head}{reason}\n" in result.stderr for reason in reasons),
                f"{how or 'ldaps://: '}certificate verify failed, with OpenSSL's reason",
                result.stderr)
    h.check(result.stdout.startswith(f"replication.consumer rid=8: {s.with_sync.url}: ok,"),
            "the other consumers are still checked", result.stdout)


def check_starttls_refused(s):
    config = s.config(consumer(9, s.without_sync.url, s.good_pw,
                               f'starttls = "critical"\nca_file = "{s.pki.ca_crt}"'))
    result = s.check_config(config)
    h.check_equal(result.returncode, 1, "StartTLS refused with starttls = critical fails")
    h.check(f"numadir: {config}: replication.consumer rid=9: {s.without_sync.url}: StartTLS "
            "refused: " in result.stderr and '(starttls = "critical")\n' in result.stderr,
            "the refusal is named", result.stderr)


def check_absent_searchbase(s):
    base = f"ou=nowhere,{h.SUFFIX}"
    config = s.config(consumer(10, s.with_sync.url, s.good_pw, searchbase=base))
    result = s.check_config(config)
    h.check_equal(result.returncode, 1, "a searchbase the provider lacks fails the check")
    h.check(f"numadir: {config}: replication.consumer rid=10: {s.with_sync.url}: searchbase "
            f"{base}: no such object on the provider, or {h.ROOT_DN} may not read it\n"
            in result.stderr, "the searchbase is named", result.stderr)


def check_offline(s):
    # Without --online nothing is reached: a provider on a closed port is fine offline.
    closed = f"ldap://127.0.0.1:{slapd_harness.free_port()}"
    config = s.config(consumer(11, closed, s.good_pw))
    result = s.check_config(config, online=False)
    h.check_equal((result.returncode, result.stdout), (0, f"{config}: ok\n"),
                  "offline, a good table is ok without reaching the provider")
    result = s.check_config(config)
    h.check_equal(result.returncode, 1, "online, the closed port fails")
    h.check(f"numadir: {config}: replication.consumer rid=11: {closed}: Connection refused\n"
            in result.stderr, "the refused connection is named", result.stderr)

    config = s.config(consumer(12, s.with_sync.url, s.good_pw, 'colour = "blue"'))
    result = s.check_config(config)
    h.check_equal((result.returncode, result.stdout), (1, ""),
                  "an unknown key stops check-config before it reaches anything")
    h.check_equal(result.stderr, f"{config}:16: replication.consumer[0].colour: unknown key\n",
                  "the unknown key is named, with its line")

    config = s.config(consumer(13, s.with_sync.url, s.good_pw, searchbase="dc=example,dc=org"))
    result = s.check_config(config)
    h.check_equal(result.returncode, 1, "a searchbase outside the suffix is refused")
    h.check(f"{config}:11: replication.consumer[0].searchbase: \"dc=example,dc=org\" is not "
            f"database.suffix ({h.SUFFIX}) or under it: a replica replicates into its own "
            "database\n" in result.stderr, "the searchbase and the suffix are named",
            result.stderr)

    missing = os.path.join(s.root, "missing.pw")
    config = s.config(consumer(14, s.with_sync.url, missing))
    result = s.check_config(config)
    h.check_equal(result.returncode, 1, "a missing credentials file is refused")
    h.check(f"{config}:13: replication.consumer[0].credentials_file: {missing}: cannot be "
            "read (No such file or directory)\n" in result.stderr,
            "the credentials file and why are named", result.stderr)

    open_pw = s.write("open.pw", f"{s.with_sync.root_pw}\n", 0o644)
    config = s.config(consumer(15, s.with_sync.url, open_pw))
    result = s.check_config(config, online=False)
    h.check_equal(result.returncode, 0, "a credentials file open to others is only a warning")
    h.check(f"{config}:13: warning: replication.consumer[0].credentials_file: {open_pw} holds the "
            "password of replication.consumer[0] (rid 15) and is open to group or others (mode "
            "0644): chmod 600 it\n" in result.stderr,
            "the warning names the file and its mode", result.stderr)

    config = s.config(consumer(16, s.with_sync.ldaps_url, s.good_pw))
    result = s.check_config(config, online=False)
    h.check_equal(result.returncode, 1, "TLS without ca_file is refused")
    h.check(f"{config}:8: replication.consumer[0].ca_file: missing (the CAs to verify the "
            "provider's certificate with; or tls_verify = false, which checks nothing)\n"
            in result.stderr, "ca_file is asked for", result.stderr)


def main():
    args = h.parse_args(__doc__)
    numadir = os.path.abspath(args.numadir)
    why = slapd_harness.available()
    if why:
        print(f"replication_config: skipped: {why}")
        return 0
    if shutil.which("openssl") is None:
        print("replication_config: skipped: the openssl program is missing")
        return 0
    with tempfile.TemporaryDirectory(prefix="numadir-replication-config-") as root:
        pki_dir = os.path.join(root, "pki")
        os.mkdir(pki_dir)
        try:
            pki = tls_harness.Pki(pki_dir)
        except h.CheckFailed as error:
            print(f"FAIL replication_config: the PKI: {error}", flush=True)
            return 1
        ldif = os.path.join(root, "provider.ldif")
        with open(ldif, "w") as stream:
            stream.write(LDIF)
        tls = slapd_harness.SlapdTls(pki.server_crt, pki.server_key, pki.ca_crt)
        try:
            with slapd_harness.SlapdServer(ldif, tls=tls, extra_conf="moduleload syncprov\n",
                                           database_conf="overlay syncprov\n",
                                           keep=args.keep) as with_sync, \
                    slapd_harness.SlapdServer(ldif, keep=args.keep) as without_sync:
                s = Setup(numadir, root, pki, with_sync, without_sync)
                checks = [
                    ("ok over ldap://, StartTLS and ldaps://", lambda: check_online_ok(s)),
                    ("a provider without the Sync Request control",
                     lambda: check_missing_control(s)),
                    ("a wrong password", lambda: check_wrong_password(s)),
                    ("a wrong CA", lambda: check_wrong_ca(s)),
                    ("StartTLS refused with critical", lambda: check_starttls_refused(s)),
                    ("a searchbase the provider lacks", lambda: check_absent_searchbase(s)),
                    ("offline checks through the executable", lambda: check_offline(s)),
                ]
                return h.run_checks("replication_config", checks, keep_going=args.keep_going)
        except h.CheckFailed as error:
            print(f"FAIL replication_config: the providers: {error}", flush=True)
            return 1


if __name__ == "__main__":
    sys.exit(main())
