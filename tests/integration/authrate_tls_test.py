#!/usr/bin/python3
"""authrate over TLS against a private OpenLDAP slapd (and numadir serve, once it takes a [tls]
section): ldaps:// and StartTLS, persistent connections and a new connection per auth, session
resumption reported, the server verified against its CA (and refused against another CA), a
client certificate for a server that demands one, and a refused StartTLS counted under its
result code.

A throwaway CA and server certificate (SAN IP:127.0.0.1 and DNS:localhost) and a client
certificate are made with the openssl command in a temporary directory.

  authrate_tls_test.py --numadir build/release/server/numadir --gen perf/gen_users.py \\
      --bin-dir build/release

Uses <bin-dir>/perf/authrate and <bin-dir>/perf/floor-server.
"""
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slapd_harness  # noqa: E402
from numadir_harness import (PEOPLE, CheckFailed, NumadirServer, check, parse_args,  # noqa: E402
                             run_checks)

USERS = 100

# numadir's default access policy in slapd's terms (as perf/bench.py writes it).
SLAPD_ACCESS = """access to attrs=userPassword
  by self =wx
  by anonymous auth
  by * none
access to *
  by self write
  by users read
  by anonymous read
"""


def openssl(folder, *args):
    result = subprocess.run(["openssl"] + list(args), cwd=folder, capture_output=True, text=True,
                            timeout=60)
    if result.returncode != 0:
        raise CheckFailed(f"openssl {' '.join(args)} failed: {result.stderr[-1000:]}")


def make_ca(folder, name):
    """A self-signed CA: <name>.crt, <name>.key."""
    openssl(folder, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2", "-subj",
            f"/CN=authrate test {name}", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")


def make_leaf(folder, name, ca, serial, extensions):
    """<name>.crt (the leaf then the CA: a chain as servers load it) and <name>.key."""
    openssl(folder, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
    with open(os.path.join(folder, f"{name}.ext"), "w") as stream:
        stream.write(extensions)
    openssl(folder, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey",
            f"{ca}.key", "-set_serial", str(serial), "-days", "2",
            "-out", f"{name}.leaf.crt", "-extfile", f"{name}.ext")
    with open(os.path.join(folder, f"{name}.crt"), "w") as out:
        for part in (f"{name}.leaf.crt", f"{ca}.crt"):
            with open(os.path.join(folder, part)) as stream:
                out.write(stream.read())


def make_certificates(folder):
    make_ca(folder, "ca")
    make_ca(folder, "other-ca")
    make_leaf(folder, "server", "ca", 2,
              "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
              "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n")
    make_leaf(folder, "client", "ca", 3,
              "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
              "extendedKeyUsage=clientAuth\n")
    return {name: os.path.join(folder, name) for name in (
        "ca.crt", "other-ca.crt", "server.crt", "server.key", "client.crt", "client.key")}


class Authrate:
    def __init__(self, bin_dir):
        self.path = os.path.join(bin_dir, "perf", "authrate")

    def run(self, url, *options, duration="1", connections="2"):
        command = [self.path, "-H", url, "-b", PEOPLE, "--last", str(USERS - 1), "-d", duration,
                   "-c", connections] + list(options)
        print("  +", " ".join(command), flush=True)
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    def summary(self, url, *options, **kwargs):
        result = self.run(url, "--json", *options, **kwargs)
        try:
            return result.returncode, json.loads(result.stdout), result.stderr
        except json.JSONDecodeError:
            raise CheckFailed(f"authrate printed no JSON (exit {result.returncode}): "
                              f"{result.stdout[-500:]} {result.stderr[-500:]}")


def check_clean(code, summary, what, mode, connections=2):
    check(code == 0 and summary["auths"] > 0 and summary["errors"]["total"] == 0,
          f"{what}: auths succeed with no error",
          f"exit {code}, {summary['auths']} auths, errors {summary['errors']}")
    tls = summary["tls"]
    check(tls is not None and tls["mode"] == mode, f"{what}: the summary says TLS {mode}",
          f"tls {tls}")
    return tls


def persistent_checks(authrate, ldaps_url, ldap_url, ca, name):
    """ldaps:// and StartTLS on persistent connections: one handshake per connection."""
    for url, options, mode in ((ldaps_url, [], "ldaps"), (ldap_url, ["--starttls"], "starttls")):
        code, summary, _ = authrate.summary(url, "--tls-ca", ca, *options)
        tls = check_clean(code, summary, f"{name} {mode}", mode)
        check(tls["handshakes"] == 2 and tls["resumed"] == 0,
              f"{name} {mode}: one full handshake per connection", f"{tls}")


def reconnect_checks(authrate, ldaps_url, ldap_url, ca, name, resumes):
    """A new connection per auth: a handshake per auth; with --tls-resume, resumed handshakes
    reported (most of them when the server `resumes`; slapd built with GnuTLS, as Debian's is,
    hands out no session tickets or IDs to resume, and then none)."""
    for url, options, mode in ((ldaps_url, [], "ldaps"), (ldap_url, ["--starttls"], "starttls")):
        code, summary, _ = authrate.summary(url, "--tls-ca", ca, "--reconnect", *options)
        tls = check_clean(code, summary, f"{name} {mode} --reconnect", mode)
        check(tls["handshakes"] >= summary["auths"] and tls["resumed"] == 0,
              f"{name} {mode} --reconnect: a full handshake for every auth",
              f"{summary['auths']} auths, {tls}")
        code, summary, _ = authrate.summary(url, "--tls-ca", ca, "--reconnect", "--tls-resume",
                                            *options)
        tls = check_clean(code, summary, f"{name} {mode} --reconnect --tls-resume", mode)
        if resumes:
            check(tls["resume"] and tls["handshakes"] >= summary["auths"]
                  and tls["resumed"] >= tls["handshakes"] // 2,
                  f"{name} {mode} --tls-resume: most handshakes resumed the slot's session",
                  f"{summary['auths']} auths, {tls}")
        else:
            check(tls["resume"] and tls["handshakes"] >= summary["auths"]
                  and tls["resumed"] == 0,
                  f"{name} {mode} --tls-resume: resumption reported (none: {name} does not "
                  f"resume)", f"{summary['auths']} auths, {tls}")
    result = authrate.run(ldaps_url, "--tls-ca", ca, "--reconnect", "--tls-resume")
    check(result.returncode == 0 and "resumed" in result.stdout,
          f"{name}: the text summary reports resumed handshakes", result.stdout)


def main():
    args = parse_args(__doc__)
    if not args.bin_dir:
        print("authrate_tls: --bin-dir is required")
        return 2
    why = slapd_harness.available()
    if why:
        print(f"authrate_tls: skipped: {why}")
        return 0
    if shutil.which("openssl") is None:
        print("authrate_tls: skipped: the openssl command is missing")
        return 0
    authrate = Authrate(args.bin_dir)
    work = tempfile.mkdtemp(prefix="authrate-tls-")
    try:
        return run_all(authrate, args, work)
    except CheckFailed as error:  # A server or a certificate could not be made.
        print(f"FAIL authrate_tls: {error}", flush=True)
        sys.stderr.write(f"FAIL authrate_tls: {error}\n")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_all(authrate, args, work):
    files = make_certificates(work)
    ldif = os.path.join(work, "users.ldif")
    with open(ldif, "w") as stream:
        subprocess.run(["/usr/bin/python3", args.gen, "--users", str(USERS)], stdout=stream,
                       check=True, timeout=120)
    tls = slapd_harness.SlapdTls(files["server.crt"], files["server.key"], files["ca.crt"])
    status = slapd_checks(authrate, files, ldif, tls)
    if status == 0:
        status = refused_starttls_check(authrate, args.bin_dir)
    if status == 0:
        status = numadir_checks(authrate, files, args)
    return status


def slapd_checks(authrate, files, ldif, tls):
    with slapd_harness.SlapdServer(ldif, access=SLAPD_ACCESS, tls=tls) as slapd:
        ca = files["ca.crt"]

        def verification():
            result = authrate.run(slapd.ldaps_url, "--tls-ca", files["other-ca.crt"])
            check(result.returncode == 1 and "certificate verif" in result.stderr,
                  "a server certificate from another CA: exit 1, saying why", result.stderr)
            code, summary, _ = authrate.summary(slapd.ldaps_url)
            check(code == 0 and summary["errors"]["total"] == 0,
                  "without --tls-ca the server is not verified", f"{summary}")
            result = authrate.run(slapd.ldaps_url, "--starttls")
            check(result.returncode == 2 and "--starttls" in result.stderr,
                  "--starttls with an ldaps:// URL is a usage error", result.stderr)
            result = authrate.run(slapd.url, "--tls-ca", ca)
            check(result.returncode == 2, "--tls-ca without TLS is a usage error", result.stderr)

        status = run_checks("authrate_tls slapd", [
            ("persistent connections",
             lambda: persistent_checks(authrate, slapd.ldaps_url, slapd.url, ca, "slapd")),
            ("a new connection per auth",
             lambda: reconnect_checks(authrate, slapd.ldaps_url, slapd.url, ca, "slapd",
                                     resumes=False)),
            ("verification and usage", verification),
        ])
    if status != 0:
        return status

    # A server that demands a client certificate.
    with slapd_harness.SlapdServer(ldif, access=SLAPD_ACCESS, tls=tls,
                                   extra_conf="TLSVerifyClient demand") as slapd:
        def client_certificate():
            code, summary, _ = authrate.summary(slapd.ldaps_url, "--tls-ca", files["ca.crt"],
                                                "--tls-cert", files["client.crt"], "--tls-key",
                                                files["client.key"])
            check_clean(code, summary, "with a client certificate", "ldaps")
            result = authrate.run(slapd.ldaps_url, "--tls-ca", files["ca.crt"])
            check(result.returncode == 1 and "TLS handshake" in result.stderr,
                  "without one: exit 1, saying the handshake failed", result.stderr)
            result = authrate.run(slapd.ldaps_url, "--tls-cert", files["client.crt"])
            check(result.returncode == 2, "--tls-cert without --tls-key is a usage error",
                  result.stderr)

        return run_checks("authrate_tls slapd TLSVerifyClient demand",
                          [("client certificate", client_certificate)])


def refused_starttls_check(authrate, bin_dir):
    """The floor server answers StartTLS with unwillingToPerform (53)."""
    floor = subprocess.Popen([os.path.join(bin_dir, "perf", "floor-server"), "--listen",
                              "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        line = floor.stdout.readline().strip()
        url = "ldap://" + line.rsplit(" ", 1)[-1]

        def refused():
            code, summary, _ = authrate.summary(url, "--starttls", duration="0.5")
            errors = summary["errors"]
            check(code == 1 and summary["auths"] == 0 and errors["by_code"].get("53", 0) > 0
                  and errors["by_code"]["53"] == errors["total"],
                  "a refused StartTLS is counted under its result code (53), exit 1",
                  f"exit {code}, {summary}")

        return run_checks("authrate_tls floor", [("refused StartTLS", refused)])
    finally:
        floor.terminate()
        floor.wait(timeout=30)


def numadir_accepts_tls(numadir, files):
    """Whether this numadir takes a [tls] section (check-config), and why not."""
    if "extra_toml" not in inspect.signature(NumadirServer.__init__).parameters:
        return False, "the test harness cannot write a [tls] section"
    folder = tempfile.mkdtemp(prefix="numadir-tls-check-")
    try:
        config = os.path.join(folder, "numadir.toml")
        with open(config, "w") as stream:
            stream.write(f"""[database]
path = "{folder}/db"
suffix = "dc=example,dc=com"

[server]
listen = ["ldap://127.0.0.1:0", "ldaps://127.0.0.1:0"]

{tls_toml(files)}""")
        result = subprocess.run([numadir, "check-config", "-c", config], capture_output=True,
                                text=True, timeout=60)
        return result.returncode == 0, (result.stderr or result.stdout).strip()[-300:]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def tls_toml(files):
    return (f'[tls]\ncertificate = "{files["server.crt"]}"\nkey = "{files["server.key"]}"\n'
            f'ca_file = "{files["ca.crt"]}"\n')


def numadir_checks(authrate, files, args):
    accepted, why = numadir_accepts_tls(args.numadir, files)
    if not accepted:
        print(f"authrate_tls numadir: skipped: numadir check-config refuses [tls]: {why}")
        return 0
    with NumadirServer(args.numadir, args.gen, users=USERS, keep=args.keep,
                       listen=("ldap://127.0.0.1:0", "ldaps://127.0.0.1:0"),
                       extra_toml=tls_toml(files)) as server:
        ca = files["ca.crt"]
        return run_checks("authrate_tls numadir", [
            ("persistent connections",
             lambda: persistent_checks(authrate, server.ldaps_url, server.url, ca, "numadir")),
            ("a new connection per auth",
             lambda: reconnect_checks(authrate, server.ldaps_url, server.url, ca, "numadir",
                                     resumes=True)),
        ])


if __name__ == "__main__":
    sys.exit(main())
