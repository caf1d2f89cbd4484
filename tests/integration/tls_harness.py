#!/usr/bin/python3
"""What the TLS integration tests (tls_test.py, tls_settings_test.py) share: a throwaway PKI
made with the openssl CLI (Pki), the [tls] table of numadir.toml (tls_config), TLS clients
(Python's ssl, python-ldap, ldap-utils' environment) and raw LDAP over them, and the runner
that makes the PKI, starts each server in turn and runs its groups of checks (run_tls_suite).

The checks of a test read the PKI and the server they run against as tls_harness.PKI and
tls_harness.S (set by run_tls_suite and run_server); the client helpers here use them too.

Standard library, python3-ldap and the openssl CLI only.
"""
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

import ldap  # python3-ldap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, CheckFailed, NumadirServer, ber, ber_children, ber_int, fail, parse_extended_response,
    read_ldap_message, run_checks, search_request, user_dn)

STARTTLS_OID = "1.3.6.1.4.1.1466.20037"
WHOAMI_OID = "1.3.6.1.4.1.4203.1.11.3"
USERS = 1000
HANDSHAKE_TIMEOUT_S = 2
EXTERNAL_MAP = f"uid={{cn}},{PEOPLE}"

# LDAP result codes.
SUCCESS = 0
OPERATIONS_ERROR = 1
CONFIDENTIALITY_REQUIRED = 13
INAPPROPRIATE_AUTHENTICATION = 48
UNAVAILABLE = 52

# LDAPMessage protocolOp tags.
BIND_RESPONSE = 0x61
SEARCH_ENTRY = 0x64
SEARCH_DONE = 0x65
EXTENDED_RESPONSE = 0x78

PKI = None  # The certificates (Pki).
S = None  # The server the current group of checks runs against.


# -- certificates --------------------------------------------------------------------------------
class Pki:
    """A throwaway CA and the certificates the checks use, made with the openssl CLI."""

    def __init__(self, directory: str):
        self.dir = directory
        self.ca_crt = self.path("ca.crt")
        self.ca_key = self.path("ca.key")
        self.openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", self.ca_key,
                     "-out", self.ca_crt, "-days", "30", "-subj", "/O=numadir test/CN=Test CA",
                     "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        server_ext = ("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                      "keyUsage=critical,digitalSignature,keyEncipherment\n"
                      "extendedKeyUsage=serverAuth\n")
        client_ext = ("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                      "extendedKeyUsage=clientAuth\n")
        # Servers: RSA keys (the cipher list check names ECDHE-RSA suites).
        self.server_crt, self.server_key = self.issue("server", "/CN=localhost", server_ext,
                                                      "rsa:2048")
        self.server2_crt, self.server2_key = self.issue(
            "server2", "/O=numadir reloaded/CN=localhost", server_ext, "rsa:2048")
        # An intermediate CA and a server certificate it issued, in a file without the
        # intermediate: the server completes the chain from its ca_file (the intermediate and
        # the root), for clients that trust the root alone.
        self.intermediate_crt, self.intermediate_key = self.issue(
            "intermediate", "/O=numadir test/CN=Intermediate CA",
            "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n")
        self.leaf_crt, self.leaf_key = self.issue(
            "leaf", "/O=numadir leaf/CN=localhost", server_ext,
            ca=(self.intermediate_crt, self.intermediate_key))
        self.chain_ca = self.path("chain-ca.crt")
        with open(self.chain_ca, "w") as stream:
            for name in (self.intermediate_crt, self.ca_crt):
                with open(name) as part:
                    stream.write(part.read())
        self.user5_crt, self.user5_key = self.issue("user5", "/CN=user5", client_ext)
        # A subject that is a directory DN as a whole, for external_map = "{subject}".
        self.user7_crt, self.user7_key = self.issue(
            "user7", "/DC=com/DC=example/OU=people/UID=user7", client_ext)
        # For external_map = "uid={uid},...": userId prints as UID, among other attributes.
        self.user8_crt, self.user8_key = self.issue(
            "user8", "/O=Example/CN=Someone Else/UID=user8/emailAddress=user8@example.com",
            client_ext)
        self.expired_crt, self.expired_key = self.issue_expired("expired", "/CN=user5")
        # A second CA and a client of it, for the CA reload.
        self.ca2_crt, self.ca2_key = self.path("ca2.crt"), self.path("ca2.key")
        self.openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                     "-nodes", "-keyout", self.ca2_key, "-out", self.ca2_crt, "-days", "30",
                     "-subj", "/O=numadir test/CN=Second CA",
                     "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        self.user9_crt, self.user9_key = self.issue("user9", "/CN=user9", client_ext,
                                                    ca=(self.ca2_crt, self.ca2_key))
        # Self-signed, so no CA of the server's vouches for it.
        self.untrusted_crt = self.path("untrusted.crt")
        self.untrusted_key = self.path("untrusted.key")
        self.openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                     "-nodes", "-keyout", self.untrusted_key, "-out", self.untrusted_crt,
                     "-days", "30", "-subj", "/CN=user5")
        # The CA as an OpenSSL hashed directory (ca_dir).
        self.ca_dir = self.path("cadir")
        os.mkdir(self.ca_dir)
        shutil.copy(self.ca_crt, os.path.join(self.ca_dir, "ca.pem"))
        self.openssl("rehash", self.ca_dir)
        # An empty ldap.conf for ldap-utils (see tls_env).
        self.ldap_conf = self.path("ldap.conf")
        open(self.ldap_conf, "w").close()

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def openssl(self, *args) -> str:
        result = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60,
                                cwd=self.dir)
        if result.returncode != 0:
            fail(f"openssl {' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result.stdout

    def request(self, name: str, subject: str, key_type: str):
        key, csr = self.path(f"{name}.key"), self.path(f"{name}.csr")
        if key_type == "ec":
            self.openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                         "-keyout", key, "-out", csr, "-subj", subject)
        else:
            self.openssl("req", "-newkey", key_type, "-nodes", "-keyout", key, "-out", csr,
                         "-subj", subject)
        return key, csr

    def issue(self, name: str, subject: str, extensions: str, key_type: str = "ec",
              ca: tuple = None):
        """A certificate signed by `ca` ((certificate, key); default: the test CA)."""
        ca_crt, ca_key = ca or (self.ca_crt, self.ca_key)
        key, csr = self.request(name, subject, key_type)
        crt, ext = self.path(f"{name}.crt"), self.path(f"{name}.ext")
        with open(ext, "w") as stream:
            stream.write(extensions)
        self.openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key,
                     "-CAcreateserial", "-out", crt, "-days", "30", "-sha256", "-extfile", ext)
        return crt, key

    def issue_expired(self, name: str, subject: str):
        """Signed by the CA, valid only in January 2020 (`openssl ca` sets past dates)."""
        key, csr = self.request(name, subject, "ec")
        crt = self.path(f"{name}.crt")
        ca_dir = self.path("ca-db")
        os.mkdir(ca_dir)
        open(os.path.join(ca_dir, "index.txt"), "w").close()
        with open(os.path.join(ca_dir, "serial"), "w") as stream:
            stream.write("1000\n")
        config = self.path("ca.cnf")
        with open(config, "w") as stream:
            stream.write(f"""[ca]
default_ca = test_ca
[test_ca]
database = {ca_dir}/index.txt
serial = {ca_dir}/serial
new_certs_dir = {ca_dir}
certificate = {self.ca_crt}
private_key = {self.ca_key}
default_md = sha256
policy = any
unique_subject = no
x509_extensions = client
[any]
commonName = supplied
[client]
basicConstraints = CA:FALSE
extendedKeyUsage = clientAuth
""")
        self.openssl("ca", "-batch", "-config", config, "-in", csr, "-out", crt, "-notext",
                     "-startdate", "20200101000000Z", "-enddate", "20200201000000Z")
        return crt, key

    def der(self, crt: str) -> bytes:
        with open(crt) as stream:
            return ssl.PEM_cert_to_DER_cert(stream.read())


def tls_config(certificate: str, key: str, **keys) -> str:
    """A [tls] table; `keys` are more keys (strings quoted, numbers and booleans as they are)."""
    lines = ["[tls]", f'certificate = "{certificate}"', f'key = "{key}"']
    for name, value in keys.items():
        if isinstance(value, bool):
            lines.append(f"{name} = {'true' if value else 'false'}")
        elif isinstance(value, int):
            lines.append(f"{name} = {value}")
        else:
            lines.append(f'{name} = "{value}"')
    return "\n".join(lines) + "\n"


# -- clients -------------------------------------------------------------------------------------
def tls_env(cert: str = None, key: str = None, ca: str = None) -> dict:
    """The environment for ldap-utils: LDAPTLS_* variables and nothing from ~/.ldaprc or
    /etc/ldap/ldap.conf (LDAPNOINIT would make libldap ignore the variables too)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("LDAP")}
    env["HOME"] = PKI.dir
    env["LDAPCONF"] = PKI.ldap_conf
    env["LDAPRC"] = "numadir-test-no-ldaprc"
    env["LDAPTLS_CACERT"] = ca or PKI.ca_crt
    env["LDAPTLS_REQCERT"] = "demand"
    if cert is not None:
        env["LDAPTLS_CERT"] = cert
        env["LDAPTLS_KEY"] = key
    return env


def tool(name: str, *args, url: str, cert: str = None, key: str = None, ca: str = None,
         timeout: float = 30):
    return S.ldap(name, *args, url=url, env=tls_env(cert, key, ca), timeout=timeout)


def client_context(cert: str = None, key: str = None, minimum=None, maximum=None,
                   ciphers: str = None) -> ssl.SSLContext:
    """A client context that verifies the server against the test CA (and its IP SAN)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(PKI.ca_crt)
    if cert is not None:
        context.load_cert_chain(cert, key)
    if minimum is not None:
        context.minimum_version = minimum
    if maximum is not None:
        context.maximum_version = maximum
    if ciphers is not None:
        context.set_ciphers(ciphers)
    return context


def ldaps_socket(context: ssl.SSLContext = None, port: int = None) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port or S.ldaps_port), timeout=10)
    return (context or client_context()).wrap_socket(raw, server_hostname="127.0.0.1")


def extended_request(message_id: int, oid: str) -> bytes:
    return ber(0x30, ber_int(0x02, message_id) + ber(0x77, ber(0x80, oid.encode())))


def simple_bind_request(message_id: int, dn: str, password: str) -> bytes:
    body = ber_int(0x02, 3) + ber(0x04, dn.encode()) + ber(0x80, password.encode())
    return ber(0x30, ber_int(0x02, message_id) + ber(0x60, body))


def sasl_bind_request(message_id: int, mechanism: str) -> bytes:
    body = ber_int(0x02, 3) + ber(0x04, b"") + ber(0xA3, ber(0x04, mechanism.encode()))
    return ber(0x30, ber_int(0x02, message_id) + ber(0x60, body))


def result_code(content: bytes) -> int:
    return int.from_bytes(ber_children(content)[0][1], "big")


def exchange(sock, request: bytes, buffer: bytearray, timeout: float = 10):
    """Sends one request and reads its one response: (op tag, content); None at EOF."""
    sock.sendall(request)
    message = read_ldap_message(sock, buffer, timeout=timeout)
    return None if message is None else (message[1], message[2])


def start_tls(sock, buffer: bytearray, message_id: int = 1):
    """Sends a StartTLS request in plaintext; returns (resultCode, diagnosticMessage)."""
    response = exchange(sock, extended_request(message_id, STARTTLS_OID), buffer)
    if response is None:
        fail("StartTLS: the server closed the connection instead of answering")
    if response[0] != EXTENDED_RESPONSE:
        fail(f"StartTLS: answered with protocolOp tag 0x{response[0]:02x}")
    code, _, diagnostic, _ = parse_extended_response(response[1])
    return code, diagnostic


def starttls_socket(context: ssl.SSLContext = None, port: int = None) -> ssl.SSLSocket:
    """A connection to the ldap:// port switched to TLS by StartTLS."""
    raw = socket.create_connection(("127.0.0.1", port or S.port), timeout=10)
    buffer = bytearray()
    code, diagnostic = start_tls(raw, buffer)
    if code != SUCCESS:
        fail(f"StartTLS answered {code} {diagnostic!r}, expected success (0)")
    if buffer:
        fail(f"bytes after the StartTLS response, before the handshake: {bytes(buffer).hex()}")
    return (context or client_context()).wrap_socket(raw, server_hostname="127.0.0.1")


def whoami_raw(sock, buffer: bytearray, message_id: int) -> str:
    response = exchange(sock, extended_request(message_id, WHOAMI_OID), buffer)
    if response is None:
        fail("WhoAmI: the connection was closed")
    children = ber_children(response[1])
    code = int.from_bytes(children[0][1], "big")
    if code != SUCCESS:
        fail(f"WhoAmI answered {code}")
    return next((value.decode() for tag, value in children[3:] if tag == 0x8B), "")


def search_uid_raw(sock, buffer: bytearray, message_id: int, n: int) -> list:
    """A base search for user n's entry; returns the DNs found (fails unless the search
    succeeds)."""
    sock.sendall(search_request(message_id, user_dn(n), scope=0, attributes=("1.1",)))
    dns = []
    while True:
        message = read_ldap_message(sock, buffer, timeout=10)
        if message is None:
            fail(f"search for user{n}: the connection was closed")
        if message[1] == SEARCH_ENTRY:
            dns.append(ber_children(message[2])[0][1].decode())
        elif message[1] == SEARCH_DONE:
            code = result_code(message[2])
            if code != SUCCESS:
                fail(f"search for user{n}: result {code}")
            return dns


def tls_refused(context: ssl.SSLContext, starttls: bool = False, port: int = None):
    """Tries a TLS connection and one request over it. Returns None when the request was
    answered, otherwise how it failed. With TLS 1.3 the client finishes its handshake before
    the server has checked the client's certificate, so a refusal may show only as an alert or
    a close at the first read."""
    try:
        sock = starttls_socket(context, port) if starttls else ldaps_socket(context, port)
    except TimeoutError:
        fail("the handshake neither finished nor failed within 10 s")
    except (ssl.SSLError, ConnectionError, OSError) as error:
        return f"handshake failed: {type(error).__name__}: {error}"
    with sock:
        buffer = bytearray()
        try:
            response = exchange(sock, extended_request(1, WHOAMI_OID), buffer)
        except TimeoutError:
            fail("after the handshake, a request was neither answered nor the connection "
                 "closed within 10 s")
        except (ssl.SSLError, ConnectionError, OSError) as error:
            return f"first read failed: {type(error).__name__}: {error}"
        if response is None:
            return "closed after the handshake"
        return None


def read_until_close(sock, timeout: float):
    """Reads until EOF or a reset. Returns (closed, bytes read, seconds taken)."""
    started = time.monotonic()
    data = bytearray()
    while True:
        remaining = started + timeout - time.monotonic()
        if remaining <= 0:
            return False, bytes(data), time.monotonic() - started
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return False, bytes(data), time.monotonic() - started
        except (ConnectionResetError, ssl.SSLError):
            return True, bytes(data), time.monotonic() - started
        if not chunk:
            return True, bytes(data), time.monotonic() - started
        data.extend(chunk)


def python_ldap(url: str, cert: str = None, key: str = None) -> "ldap.ldapobject.LDAPObject":
    conn = ldap.initialize(url, bytes_mode=False)
    conn.protocol_version = 3
    conn.set_option(ldap.OPT_REFERRALS, 0)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    conn.set_option(ldap.OPT_TIMEOUT, 30)
    conn.set_option(ldap.OPT_X_TLS_CACERTFILE, PKI.ca_crt)
    conn.set_option(ldap.OPT_X_TLS_REQUIRE_CERT, ldap.OPT_X_TLS_DEMAND)
    if cert is not None:
        conn.set_option(ldap.OPT_X_TLS_CERTFILE, cert)
        conn.set_option(ldap.OPT_X_TLS_KEYFILE, key)
    conn.set_option(ldap.OPT_X_TLS_NEWCTX, 0)
    return conn


def uid_of(conn, n: int):
    results = conn.search_s(user_dn(n), ldap.SCOPE_BASE, "(objectClass=*)", ["uid"])
    return results[0][1].get("uid") if results else None


def output(rc: int, out: str, err: str) -> str:
    return f"rc {rc}, stdout {out.strip()[:300]!r}, stderr {err.strip()[:500]!r}"


# -- the servers ---------------------------------------------------------------------------------
def run_server(args, test_name: str, name: str, checks, users: int, **options) -> list:
    """Starts a server (NumadirServer `options`), makes it S, runs `checks` against it;
    returns the failure messages."""
    global S
    print(f"{test_name}: server {name}", flush=True)
    try:
        with NumadirServer(args.numadir, args.gen, users=users, keep=args.keep,
                           **options) as server:
            S = server
            status = run_checks(f"{test_name} ({name})", checks, keep_going=args.keep_going)
            if status != 0:
                print(f"  numadir stderr (last lines):\n{server.stderr_text()[-3000:]}",
                      flush=True)
                return [f"server {name}: a group of checks failed"]
    except CheckFailed as error:
        message = f"FAIL {test_name} ({name}): the server: {error}"
        print(message, flush=True)
        return [message]
    finally:
        S = None
    return []


def run_tls_suite(test_name: str, args, servers) -> int:
    """Makes the PKI (PKI) in a fresh temporary directory, then for each (name, checks, users,
    NumadirServer options) that `servers(pki)` returns starts that server and runs its checks.
    Returns the exit status: 0 when every check of every server passed."""
    global PKI
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="numadir-tls-")
    failures = []
    try:
        try:
            PKI = Pki(work)
        except CheckFailed as error:
            print(f"FAIL {test_name}: certificates: {error}", flush=True)
            return 1
        print(f"{test_name}: certificates made in {time.monotonic() - started:.1f} s",
              flush=True)
        for name, checks, users, options in servers(PKI):
            failures += run_server(args, test_name, name, checks, users, **options)
    finally:
        if args.keep:
            print(f"  kept {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    if failures:
        sys.stderr.write("".join(f"{m}\n" for m in failures))
        print(f"{test_name}: failed after {elapsed:.1f} s", flush=True)
        return 1
    print(f"{test_name}: every check passed in {elapsed:.1f} s", flush=True)
    return 0
