#!/usr/bin/python3
"""A private OpenLDAP slapd (Debian's /usr/sbin/slapd, back-mdb, slapd.conf style) on a free
loopback port, for tests that compare numadir with the reference server.

  with SlapdServer(ldif_path, access=ACCESS_LINES, root_pw_hash=hashed) as slapd:
      conn = ldap.initialize(slapd.url)

SlapdServer writes slapd.conf in a fresh temporary directory (schema core, cosine,
inetorgperson and nis from /etc/ldap/schema; one mdb database for dc=example,dc=com with the
given indexes, access lines, rootdn and rootpw), loads the LDIF with slapadd, starts
`slapd -h ldap://127.0.0.1:PORT/ -f slapd.conf -d 0` as the current user (-d keeps it in the
foreground, so the pid we hold is slapd's), waits until the port accepts connections and, on
exit, stops it by pid with SIGTERM and waits for it.

With `tls=SlapdTls(certificate, key, ca_file)` slapd.conf also gets TLSCertificateFile,
TLSCertificateKeyFile (and TLSCACertificateFile) and slapd listens on a second port for
ldaps:// (`ldaps_url`, `ldaps_port`); StartTLS works on the ldap:// port.

Standard library only.
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile

from numadir_harness import ROOT_DN, SUFFIX, CheckFailed, fail, wait_for

SLAPD = "/usr/sbin/slapd"
SLAPADD = "/usr/sbin/slapadd"
SCHEMA_DIR = "/etc/ldap/schema"
MODULE_DIR = "/usr/lib/ldap"
STARTUP_TIMEOUT_S = 30
STOP_TIMEOUT_S = 30


def available() -> str:
    """Returns "" if slapd and slapadd can be run, else why not."""
    for tool in (SLAPD, SLAPADD):
        if not os.access(tool, os.X_OK):
            return f"{tool} is missing: install Debian's slapd package (scripts/setup.sh does)"
    for schema in ("core", "cosine", "inetorgperson", "nis"):
        if not os.path.exists(os.path.join(SCHEMA_DIR, f"{schema}.schema")):
            return f"{SCHEMA_DIR}/{schema}.schema is missing"
    return ""


def free_port() -> int:
    """A loopback TCP port that nothing listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SlapdTls:
    """slapd's TLS settings: PEM files (the certificate may carry its chain after the leaf)."""

    def __init__(self, certificate: str, key: str, ca_file: str = ""):
        self.certificate = certificate
        self.key = key
        self.ca_file = ca_file

    def conf_lines(self) -> str:
        lines = f"TLSCertificateFile {self.certificate}\nTLSCertificateKeyFile {self.key}\n"
        if self.ca_file:
            lines += f"TLSCACertificateFile {self.ca_file}\n"
        return lines


class SlapdServer:
    """slapd with a fresh back-mdb database loaded from `ldif_path`. A context manager."""

    def __init__(self, ldif_path: str, access: str = "", root_pw: str = "secret",
                 indexes=("objectClass eq", "uid eq"), extra_conf: str = "",
                 keep: bool = False, tls: "SlapdTls | None" = None,
                 database_conf: str = ""):
        """`extra_conf`: global lines (before the database, e.g. moduleload); `database_conf`:
        lines at the end of the database section, after the access lines (e.g. an overlay and
        its directives)."""
        self.ldif_path = ldif_path
        self.access = access
        self.root_pw = root_pw
        self.indexes = indexes
        self.extra_conf = extra_conf
        self.keep = keep
        self.tls = tls
        self.database_conf = database_conf
        self.ldaps_port = None
        self.ldaps_url = None
        self.suffix = SUFFIX
        self.root_dn = ROOT_DN
        self.process = None
        self.port = None
        self.dir = None
        self.url = None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="slapd-it-")
        try:
            self._prepare()
            self._start()
        except BaseException:
            self._kill()
            self._cleanup()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self.process is not None and self.process.poll() is None:
                self.stop()
            elif self.process is not None and exc_type is None:
                raise CheckFailed(f"slapd died during the test with status "
                                  f"{self.process.returncode}; stderr: {self.stderr_text()}")
        finally:
            self._kill()
            self._cleanup()
        return False

    def _prepare(self):
        self.db_dir = os.path.join(self.dir, "db")
        os.mkdir(self.db_dir)
        self.config = os.path.join(self.dir, "slapd.conf")
        schema = "".join(f"include {SCHEMA_DIR}/{name}.schema\n"
                         for name in ("core", "cosine", "inetorgperson", "nis"))
        indexes = "".join(f"index {index}\n" for index in self.indexes)
        with open(self.config, "w") as stream:
            stream.write(f"""{schema}
modulepath {MODULE_DIR}
moduleload back_mdb
pidfile {self.dir}/slapd.pid
argsfile {self.dir}/slapd.args
{self.tls.conf_lines() if self.tls else ""}{self.extra_conf}

database mdb
maxsize 1073741824
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {self.root_pw}
directory {self.db_dir}
{indexes}
{self.access}
{self.database_conf}
""")
        added = subprocess.run([SLAPADD, "-q", "-f", self.config, "-l", self.ldif_path],
                               capture_output=True, text=True, timeout=120)
        if added.returncode != 0:
            fail(f"slapadd failed ({added.returncode}): {added.stderr[-2000:]}")

    def _start(self):
        self.stderr_path = os.path.join(self.dir, "slapd.stderr")
        self.stderr_file = open(self.stderr_path, "wb")
        # The port is free when chosen; if something takes it before slapd binds, slapd exits
        # and we try another.
        for _ in range(5):
            self.port = free_port()
            self.url = f"ldap://127.0.0.1:{self.port}"
            urls = f"{self.url}/"
            if self.tls:
                self.ldaps_port = free_port()
                self.ldaps_url = f"ldaps://127.0.0.1:{self.ldaps_port}"
                urls += f" {self.ldaps_url}/"
            self.process = subprocess.Popen(
                [SLAPD, "-h", urls, "-f", self.config, "-d", "0"],
                stdout=subprocess.DEVNULL, stderr=self.stderr_file, stdin=subprocess.DEVNULL)
            if self._wait_listening(self.port) and \
                    (self.ldaps_port is None or self._wait_listening(self.ldaps_port)):
                print(f"  slapd: pid {self.process.pid}, {urls}, db in {self.dir}",
                      flush=True)
                return
        fail(f"slapd did not start; stderr: {self.stderr_text()}")

    def _wait_listening(self, port: int) -> bool:
        def state():
            if self.process.poll() is not None:
                return "exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return "listening"
            except OSError:
                return None
        reached = wait_for(state, timeout=STARTUP_TIMEOUT_S)
        if reached is not None:
            return reached == "listening"
        self._kill()
        fail(f"slapd did not listen on port {port} within {STARTUP_TIMEOUT_S}s; "
             f"stderr: {self.stderr_text()}")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise CheckFailed(f"slapd did not stop within {STOP_TIMEOUT_S}s of SIGTERM")

    def stderr_text(self) -> str:
        try:
            with open(self.stderr_path, "rb") as stream:
                return stream.read().decode(errors="replace")[-2000:]
        except (OSError, AttributeError):
            return ""

    def _kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if getattr(self, "stderr_file", None) is not None:
            self.stderr_file.close()
            self.stderr_file = None

    def _cleanup(self):
        if self.dir is None:
            return
        if self.keep:
            print(f"  kept {self.dir}", flush=True)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
