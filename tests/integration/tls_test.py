#!/usr/bin/python3
"""numadir's TLS with real clients: ldaps:// and StartTLS (RFC 4511 4.14) from ldap-utils,
python-ldap, ldap3, Python's ssl module and `openssl s_client`; SASL EXTERNAL with client
certificates mapped to DNs; verify_client allow / demand with missing, expired and untrusted
certificates; min_version and cipher lists; simple_bind_requires_tls; certificate and CA reload on
SIGHUP; session resumption with tickets; and bad input (plaintext to the ldaps port, garbage
mid-handshake, stalled handshakes, StartTLS with an operation outstanding) that must leave the
server and its other connections unharmed.

  tls_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

A throwaway CA and every certificate are made with the openssl CLI in a temporary directory.
Six servers run one after the other: the main one (ldap:// and ldaps://, verify_client =
"allow"), one with simple_bind_requires_tls, min_version 1.3 and a hashed ca_dir, one with
verify_client = "demand" and a TLS 1.2 cipher list, an ldaps://-only one with [tls] defaults,
one with external_map "uid={uid},..." and a TLS 1.3 suite list, and one without [tls].

Exits 0 when every check passes; otherwise 1 with the failing checks (observed vs expected).
"""
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time

import ldap  # python3-ldap
from ldap3 import EXTERNAL, SASL, SUBTREE, Connection, Server, Tls

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, SUFFIX, CheckFailed, NumadirServer, ber, ber_children, ber_int,
    check, check_equal, fail, parse_args, parse_extended_response, parse_ldif, read_ldap_message,
    run_checks, search_request, user_dn, user_pw)

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


# -- the main server: ldap:// and ldaps://, verify_client = "allow" --------------------------------
def check_root_dse():
    for url in (S.url, S.ldaps_url):
        rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", "", "-s", "base",
                            "supportedExtension", "supportedSASLMechanisms", url=url)
        entries = parse_ldif(out)
        check(rc == 0 and len(entries) == 1, f"RootDSE read over {url.split(':')[0]}://",
              output(rc, out, err))
        attributes = entries[0][1]
        check(STARTTLS_OID in attributes.get("supportedextension", []),
              f"supportedExtension lists StartTLS ({STARTTLS_OID})",
              f"observed {attributes.get('supportedextension')}")
        check("EXTERNAL" in attributes.get("supportedsaslmechanisms", []),
              "supportedSASLMechanisms lists EXTERNAL",
              f"observed {attributes.get('supportedsaslmechanisms')}")


def check_ldap_utils():
    rc, out, err = tool("ldapsearch", "-x", "-ZZ", "-LLL", "-b", PEOPLE, "(uid=user1)", "uid",
                        url=S.url)
    check(rc == 0 and [dn.lower() for dn, _ in parse_ldif(out)] == [user_dn(1)],
          "ldapsearch -ZZ (StartTLS required, server certificate verified) finds user1",
          output(rc, out, err))
    rc, out, err = tool("ldapsearch", "-x", "-ZZ", "-LLL", "-D", user_dn(2), "-w", user_pw(2),
                        "-b", user_dn(2), "-s", "base", "uid", url=S.url)
    check(rc == 0 and "uid: user2" in out, "ldapsearch -ZZ bound as user2 reads its entry",
          output(rc, out, err))
    rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", PEOPLE, "(uid=user3)", "uid",
                        url=S.ldaps_url)
    check(rc == 0 and [dn.lower() for dn, _ in parse_ldif(out)] == [user_dn(3)],
          "ldapsearch -H ldaps:// (LDAPTLS_REQCERT=demand) finds user3", output(rc, out, err))
    rc, out, err = tool("ldapwhoami", "-x", "-D", user_dn(4), "-w", user_pw(4), url=S.ldaps_url)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(4)}",
          "ldapwhoami -x over ldaps:// bound as user4", output(rc, out, err))
    rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", "", "-s", "base", url=S.ldaps_url,
                        ca=PKI.untrusted_crt)
    check(rc != 0 and not out.strip(),
          "a client trusting another CA refuses the server's certificate (it is the test CA's)",
          output(rc, out, err))
    with ldaps_socket() as sock:
        check_equal(sock.getpeercert(binary_form=True), PKI.der(PKI.server_crt),
                    "the ldaps:// port presents the configured server certificate")


def check_external():
    expected = f"dn:{user_dn(5)}"
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=S.ldaps_url,
                        cert=PKI.user5_crt, key=PKI.user5_key)
    check(rc == 0 and out.strip().lower() == expected,
          f"ldapwhoami -Y EXTERNAL over ldaps:// with CN=user5's certificate: {expected}",
          output(rc, out, err))
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", "-ZZ", url=S.url,
                        cert=PKI.user5_crt, key=PKI.user5_key)
    check(rc == 0 and out.strip().lower() == expected,
          "ldapwhoami -Y EXTERNAL -ZZ (StartTLS) with the same certificate", output(rc, out, err))
    # GnuTLS (under ldap-utils) sends a client certificate only when its issuer is among the
    # CAs the server names, so the untrusted one is sent by Python's ssl.
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=S.ldaps_url,
                        cert=PKI.expired_crt, key=PKI.expired_key)
    check(rc == INAPPROPRIATE_AUTHENTICATION,
          'verify_client = "allow": ldapwhoami -Y EXTERNAL with an expired client certificate '
          "connects and gets inappropriateAuthentication (48)", output(rc, out, err))
    for name, crt, key in (("an untrusted (self-signed)", PKI.untrusted_crt, PKI.untrusted_key),
                           ("an expired", PKI.expired_crt, PKI.expired_key)):
        with ldaps_socket(client_context(crt, key)) as sock:
            buffer = bytearray()
            response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
            check(response is not None and response[0] == BIND_RESPONSE and
                  result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
                  f'verify_client = "allow": {name} client certificate (Python ssl) connects, '
                  "EXTERNAL gets inappropriateAuthentication (48)", f"observed {response}")
            check_equal(search_uid_raw(sock, buffer, 2, 1), [user_dn(1)],
                        "and the connection can search")

    # libsasl does not offer EXTERNAL without a client certificate, so these go raw.
    with ldaps_socket() as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and response[0] == BIND_RESPONSE and
              result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
              "EXTERNAL over ldaps:// without a client certificate: inappropriateAuthentication "
              "(48)", f"observed {response}")
        check_equal(whoami_raw(sock, buffer, 2), "", "and the connection stays anonymous")
        check_equal(search_uid_raw(sock, buffer, 3, 6), [user_dn(6)], "and can still search")
    with S.connect_raw() as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and response[0] == BIND_RESPONSE and
              result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
              "EXTERNAL over ldap:// without TLS: inappropriateAuthentication (48)",
              f"observed {response}")
    context = client_context(PKI.user5_crt, PKI.user5_key)
    with ldaps_socket(context) as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and result_code(response[1]) == SUCCESS,
              "EXTERNAL from Python's ssl with CN=user5's certificate", f"observed {response}")
        check_equal(whoami_raw(sock, buffer, 2).lower(), expected, "WhoAmI after it")
        response = exchange(sock, simple_bind_request(3, user_dn(8), user_pw(8)), buffer)
        check_equal(whoami_raw(sock, buffer, 4).lower(), f"dn:{user_dn(8)}",
                    "a simple bind on the same connection switches to user8")
        response = exchange(sock, sasl_bind_request(5, "EXTERNAL"), buffer)
        check_equal(whoami_raw(sock, buffer, 6).lower(), expected,
                    "and EXTERNAL again switches back to user5")

    tls = Tls(ca_certs_file=PKI.ca_crt, validate=ssl.CERT_REQUIRED,
              local_certificate_file=PKI.user5_crt, local_private_key_file=PKI.user5_key)
    server = Server("127.0.0.1", port=S.ldaps_port, use_ssl=True, tls=tls, connect_timeout=10)
    conn = Connection(server, authentication=SASL, sasl_mechanism=EXTERNAL, receive_timeout=30,
                      raise_exceptions=False)
    check(conn.bind(), "ldap3 SASL EXTERNAL over ldaps:// with CN=user5's certificate",
          f"{conn.result}")
    check_equal((conn.extend.standard.who_am_i() or "").lower(), expected, "ldap3 who_am_i()")
    conn.unbind()


def check_python_ldap():
    conn = python_ldap(S.url)
    conn.start_tls_s()
    check(True, "python-ldap start_tls_s() verifying the server against the test CA")
    conn.simple_bind_s(user_dn(9), user_pw(9))
    check_equal(conn.whoami_s().lower(), f"dn:{user_dn(9)}", "then a simple bind as user9")
    results = conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(uid=user1*)", ["uid"])
    check_equal(len(results), 111, "then a search (uid=user1*): 111 entries")
    conn.unbind_s()
    conn = python_ldap(S.ldaps_url)
    conn.simple_bind_s(user_dn(10), user_pw(10))
    check_equal(uid_of(conn, 10), [b"user10"], "python-ldap over ldaps://: bind and search")
    conn.unbind_s()
    conn = python_ldap(S.ldaps_url, PKI.user5_crt, PKI.user5_key)
    conn.sasl_external_bind_s()
    check_equal(conn.whoami_s().lower(), f"dn:{user_dn(5)}",
                "python-ldap sasl_external_bind_s() with CN=user5's certificate")
    conn.unbind_s()


def check_ldap3():
    tls = Tls(ca_certs_file=PKI.ca_crt, validate=ssl.CERT_REQUIRED)
    server = Server("127.0.0.1", port=S.ldaps_port, use_ssl=True, tls=tls, connect_timeout=10)
    conn = Connection(server, user=user_dn(11), password=user_pw(11), receive_timeout=30,
                      raise_exceptions=False)
    check(conn.bind(), "ldap3 over ldaps:// (Tls(validate=CERT_REQUIRED)): bind as user11",
          f"{conn.result}")
    conn.search(PEOPLE, "(uid=user12)", SUBTREE, attributes=["uid"])
    check_equal([entry.entry_dn.lower() for entry in conn.entries], [user_dn(12)],
                "ldap3 over ldaps://: search")
    conn.unbind()
    server = Server("127.0.0.1", port=S.port, tls=tls, connect_timeout=10)
    conn = Connection(server, user=user_dn(13), password=user_pw(13), receive_timeout=30,
                      raise_exceptions=False)
    conn.open()
    check(not conn.closed, "ldap3 connects to ldap://")
    check(conn.start_tls(), "ldap3 start_tls()", f"{conn.result}")
    check(conn.bind(), "ldap3 bind as user13 after start_tls()", f"{conn.result}")
    conn.search(PEOPLE, "(uid=user14)", SUBTREE, attributes=["uid"])
    check_equal([entry.entry_dn.lower() for entry in conn.entries], [user_dn(14)],
                "ldap3 search after start_tls()")
    conn.unbind()


def pipelined(sock, what: str):
    """Many requests at once over one TLS connection: two workers answer them concurrently, so
    their responses are encrypted by different threads into the same TLS stream."""
    buffer = bytearray()
    response = exchange(sock, simple_bind_request(1, ROOT_DN, ROOT_PW), buffer)
    if response is None or result_code(response[1]) != SUCCESS:
        fail(f"{what}: bind as the rootdn: {response}")
    count = 300
    requests = [search_request(10 + n, user_dn(n + 1), scope=0, attributes=("*",))
                for n in range(count)]
    requests.insert(count // 2, search_request(5, PEOPLE, scope=1, attributes=("*", "+")))
    sock.sendall(b"".join(requests))
    entries, done = {}, {}
    while len(done) < count + 1:
        message = read_ldap_message(sock, buffer, timeout=30)
        if message is None:
            fail(f"{what}: closed after {len(done)} of {count + 1} searches")
        message_id, tag, content = message[0], message[1], message[2]
        if tag == SEARCH_ENTRY:
            entries.setdefault(message_id, []).append(ber_children(content)[0][1].decode())
        elif tag == SEARCH_DONE:
            done[message_id] = result_code(content)
    check(all(code == SUCCESS for code in done.values()) and
          all(entries.get(10 + n) == [user_dn(n + 1)] for n in range(count)),
          f"{what}: {count} pipelined base searches each get their own entry",
          f"results {sorted(set(done.values()))}, "
          f"wrong: {[n for n in range(count) if entries.get(10 + n) != [user_dn(n + 1)]][:10]}")
    check_equal(len(entries.get(5, [])), USERS,
                f"{what}: and a one-level search among them returns all {USERS} users")


def check_concurrent_responses():
    with ldaps_socket() as sock:
        pipelined(sock, "ldaps://")
    with starttls_socket() as sock:
        pipelined(sock, "StartTLS")
    # Handshakes at once: the listener thread advances them all as their bytes come.
    errors = []

    def one_client(n: int):
        try:
            with (ldaps_socket() if n % 2 else starttls_socket()) as sock:
                buffer = bytearray()
                if search_uid_raw(sock, buffer, 1, 100 + n) != [user_dn(100 + n)]:
                    errors.append(f"client {n}: wrong entry")
        except (CheckFailed, OSError, ValueError) as error:
            errors.append(f"client {n}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=one_client, args=(n,)) for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    check(not errors and not any(thread.is_alive() for thread in threads),
          "40 clients handshaking at once (half ldaps://, half StartTLS) each find their entry",
          f"{errors[:5]}")

    conn = python_ldap(S.ldaps_url)
    conn.simple_bind_s(ROOT_DN, ROOT_PW)
    results = conn.search_s(PEOPLE, ldap.SCOPE_ONELEVEL, "(objectClass=*)", ["*", "+"])
    check_equal(len(results), USERS, f"python-ldap over ldaps:// reads all {USERS} users")
    conn.unbind_s()


def check_starttls_twice():
    raw = S.connect_raw()
    buffer = bytearray()
    code, diagnostic = start_tls(raw, buffer)
    check_equal(code, SUCCESS, "a first StartTLS: success")
    with client_context().wrap_socket(raw, server_hostname="127.0.0.1") as sock:
        check(True, f"TLS handshake after it ({sock.version()}, {sock.cipher()[0]})")
        response = exchange(sock, extended_request(2, STARTTLS_OID), buffer)
        check(response is not None and response[0] == EXTENDED_RESPONSE,
              "a second StartTLS inside TLS is answered", f"observed {response}")
        code, _, diagnostic, _ = parse_extended_response(response[1])
        check_equal(code, OPERATIONS_ERROR, f"with operationsError (1) ({diagnostic!r})")
        check_equal(search_uid_raw(sock, buffer, 3, 15), [user_dn(15)],
                    "the TLS connection goes on working")
    with ldaps_socket() as sock:
        buffer = bytearray()
        response = exchange(sock, extended_request(1, STARTTLS_OID), buffer)
        code = parse_extended_response(response[1])[0] if response else None
        check_equal(code, OPERATIONS_ERROR, "StartTLS over ldaps://: operationsError (1)")
        check_equal(search_uid_raw(sock, buffer, 2, 16), [user_dn(16)], "and the connection "
                    "goes on working")


def check_starttls_outstanding():
    """A search of the whole tree and a StartTLS sent in one segment: the StartTLS is decoded
    while the search is running. If the search happens to finish first (its SearchResultDone
    arrives before the StartTLS response), the attempt proves nothing and is repeated."""
    root = python_ldap(S.url)
    root.simple_bind_s(ROOT_DN, ROOT_PW)
    expected_entries = len(root.search_s(SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"]))
    root.unbind_s()
    for attempt in range(1, 6):
        sock = S.connect_raw()
        buffer = bytearray()
        response = exchange(sock, simple_bind_request(1, ROOT_DN, ROOT_PW), buffer)
        if response is None or result_code(response[1]) != SUCCESS:
            fail(f"bind as the rootdn: {response}")
        sock.sendall(search_request(2, SUFFIX, scope=2, attributes=("*", "+")) +
                     extended_request(3, STARTTLS_OID))
        entries = 0
        done = None
        starttls = None
        while done is None or starttls is None:
            message = read_ldap_message(sock, buffer, timeout=30)
            if message is None:
                fail(f"the connection was closed after {entries} entries")
            if message[0] == 2 and message[1] == SEARCH_ENTRY:
                entries += 1
            elif message[0] == 2 and message[1] == SEARCH_DONE:
                done = (result_code(message[2]), starttls is not None)
            elif message[0] == 3 and message[1] == EXTENDED_RESPONSE:
                code, _, diagnostic, _ = parse_extended_response(message[2])
                starttls = (code, diagnostic, done is not None)
                if code == SUCCESS and done is None:
                    fail("StartTLS answered success while the search was outstanding (its "
                         f"SearchResultDone had not come; {entries} entries so far)")
                if code == SUCCESS:
                    break  # What follows is TLS.
            else:
                fail(f"unexpected message id {message[0]} tag 0x{message[1]:02x}")
        if starttls[0] == SUCCESS:
            print(f"  (attempt {attempt}: the search finished before the StartTLS was read; "
                  "again)", flush=True)
            sock.close()
            continue
        check_equal(starttls[0], OPERATIONS_ERROR,
                    f"StartTLS with a search outstanding: operationsError (1) ({starttls[1]!r})")
        check_equal((done[0], entries), (SUCCESS, expected_entries),
                    f"the search still returns all its {expected_entries} entries and succeeds")
        code, diagnostic = start_tls(sock, buffer, 4)
        check_equal(code, SUCCESS, "with nothing outstanding, StartTLS on the same connection "
                    "then succeeds")
        with client_context().wrap_socket(sock, server_hostname="127.0.0.1") as tls:
            check_equal(whoami_raw(tls, buffer, 5).lower(), f"dn:{ROOT_DN}".lower(),
                        "and the TLS connection keeps the rootdn identity")
        return
    fail("in 5 attempts the search always finished before the StartTLS was read")


def check_bad_input():
    bystander = python_ldap(S.url)
    bystander.simple_bind_s(user_dn(20), user_pw(20))
    bystander_tls = python_ldap(S.ldaps_url)
    bystander_tls.simple_bind_s(user_dn(21), user_pw(21))

    def bystanders_work(when: str):
        check(uid_of(bystander, 22) == [b"user22"] and uid_of(bystander_tls, 23) == [b"user23"],
              f"{when}: an ldap:// and an ldaps:// connection opened before still search")

    # Stalls, left waiting while the rest runs: nothing sent at all, and half a ClientHello.
    silent = S.connect_raw(port=S.ldaps_port)
    silent_start = time.monotonic()
    hello = client_hello()
    half = S.connect_raw(port=S.ldaps_port)
    half.sendall(hello[:len(hello) // 2])
    half_start = time.monotonic()
    starttls_silent = S.connect_raw()
    buffer = bytearray()
    code, _ = start_tls(starttls_silent, buffer)
    check_equal(code, SUCCESS, "a StartTLS client that then sends no handshake: StartTLS success")
    starttls_start = time.monotonic()

    with S.connect_raw(port=S.ldaps_port) as sock:
        sock.sendall(search_request(1, PEOPLE, scope=1, attributes=("1.1",)))
        closed, data, _ = read_until_close(sock, 10)
        check(closed and not data.startswith(b"\x30"),
              "plaintext LDAP sent to the ldaps:// port: closed without an LDAP answer",
              f"closed {closed}, read {data[:40].hex()}")
    bystanders_work("after it")

    with S.connect_raw(port=S.ldaps_port) as sock:
        sock.sendall(client_hello())
        sock.settimeout(10)
        first = sock.recv(65536)
        check(first[:1] == b"\x16", "a real ClientHello gets the server's handshake records",
              f"read {first[:20].hex()}")
        sock.sendall(b"\x16\x03\x03\x00\x40" + bytes(range(0x40)) + b"garbage" * 30)
        closed, _, _ = read_until_close(sock, 10)
        check(closed, "garbage bytes in the middle of the handshake: the connection is closed")
    bystanders_work("after it")

    with S.connect_raw() as sock:
        buffer = bytearray()
        code, _ = start_tls(sock, buffer)
        sock.sendall(search_request(2, PEOPLE, scope=1, attributes=("1.1",)))
        closed, data, _ = read_until_close(sock, 10)
        check(code == SUCCESS and closed and not data.startswith(b"\x30"),
              "plaintext LDAP after a successful StartTLS: closed without an LDAP answer",
              f"StartTLS {code}, closed {closed}, read {data[:40].hex()}")

    with ldaps_socket() as sock:
        buffer = bytearray()
        check_equal(search_uid_raw(sock, buffer, 1, 24), [user_dn(24)], "an ldaps:// search")
        # Then bytes that are no TLS record, written under the TLS layer.
        with socket.socket(fileno=os.dup(sock.fileno())) as under:
            under.sendall(b"\x30\x05\x02\x01\x01\x42\x00" * 10)
        closed, _, _ = read_until_close(sock, 10)
        check(closed, "then non-TLS bytes (an LDAP PDU in the clear): the connection is closed")
    bystanders_work("after it")

    # The stalled ones: still open before handshake_timeout, closed after it.
    for name, sock, started in (("a client that connects to ldaps:// and sends nothing", silent,
                                 silent_start),
                                ("a client that stops in the middle of its ClientHello", half,
                                 half_start),
                                ("a client that sends no handshake after StartTLS",
                                 starttls_silent, starttls_start)):
        early = HANDSHAKE_TIMEOUT_S - 0.5 - (time.monotonic() - started)
        if early > 0:
            closed, _, _ = read_until_close(sock, early)
            check(not closed, f"{name}: still open {HANDSHAKE_TIMEOUT_S - 0.5:.1f} s later")
        closed, _, _ = read_until_close(sock, HANDSHAKE_TIMEOUT_S + 5)
        elapsed = time.monotonic() - started
        check(closed and elapsed >= HANDSHAKE_TIMEOUT_S - 0.5,
              f"{name}: closed after handshake_timeout ({HANDSHAKE_TIMEOUT_S} s): "
              f"{elapsed:.1f} s", f"closed {closed} after {elapsed:.1f} s")
        sock.close()
    bystanders_work("after the stalled handshakes")

    # Clients vanishing while the server encrypts a large search for them.
    for round_ in range(10):
        sock = ldaps_socket() if round_ % 2 else starttls_socket()
        sock.sendall(simple_bind_request(1, ROOT_DN, ROOT_PW) +
                     search_request(2, SUFFIX, scope=2, attributes=("*", "+")))
        if round_ % 4 < 2:
            # An abortive close (RST) half the time, otherwise an orderly FIN.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    check(True, "10 TLS clients sent a search of everything and closed at once")
    bystanders_work("after them")
    bystander.unbind_s()
    bystander_tls.unbind_s()
    check(S.alive(), "the server process is still running")


def client_hello() -> bytes:
    """The bytes of a real TLS ClientHello (from an SSLObject over memory BIOs)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_context().wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def s_client(port: int, *args):
    """Runs openssl s_client with its stdin held open until the handshake is done and a session
    ticket has come (with TLS 1.3 tickets come after the handshake, and an s_client that reads
    EOF at once can leave before they do). Returns its output."""
    process = subprocess.Popen(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile", PKI.ca_crt,
         "-verify_return_error", *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 5
    session_file = args[args.index("-sess_out") + 1] if "-sess_out" in args else None
    while time.monotonic() < deadline and session_file is not None:
        if os.path.exists(session_file) and os.path.getsize(session_file) > 0:
            break
        time.sleep(0.05)
    try:
        out, _ = process.communicate(input="", timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
        fail(f"openssl s_client did not finish: {out[-2000:]}")
    return process.returncode, out


def check_session_resumption():
    for version in ("-tls1_3", "-tls1_2"):
        session = os.path.join(PKI.dir, f"session{version}")
        if os.path.exists(session):
            os.remove(session)
        rc, out = s_client(S.ldaps_port, version, "-sess_out", session)
        check(rc == 0 and "Verify return code: 0 (ok)" in out and os.path.exists(session),
              f"openssl s_client {version} -sess_out: a verified handshake, session saved",
              f"rc {rc}; {out[-1500:]}")
        rc, out = s_client(S.ldaps_port, version, "-sess_in", session)
        summary = [line for line in out.splitlines() if line.startswith(("New,", "Reused,"))]
        check(rc == 0 and "Reused," in out,
              f"openssl s_client {version} -sess_in: the session is resumed (\"Reused\")",
              f"rc {rc}; {summary}; {out[-1500:]}")


def check_reload():
    directory = os.path.dirname(RELOAD_CRT)
    first, second = PKI.der(PKI.server_crt), PKI.der(PKI.server2_crt)
    old = ldaps_socket()
    old_buffer = bytearray()
    exchange(old, simple_bind_request(1, user_dn(30), user_pw(30)), old_buffer)
    check_equal(old.getpeercert(binary_form=True), first,
                "before the reload: the first certificate")
    python_old = python_ldap(S.url)
    python_old.start_tls_s()
    python_old.simple_bind_s(user_dn(31), user_pw(31))

    # A broken certificate file and SIGHUP: the server keeps serving with what it has.
    with open(os.path.join(directory, "broken.crt"), "w") as stream:
        stream.write("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n"
                     "-----END CERTIFICATE-----\n")
    os.replace(os.path.join(directory, "broken.crt"), RELOAD_CRT)
    stderr_before = len(S.stderr_text())
    os.kill(S.process.pid, signal.SIGHUP)
    # The server says why it kept its certificate; without waiting for that the checks below
    # would still hold, only perhaps before the reload was tried.
    deadline = time.monotonic() + 5
    while len(S.stderr_text()) == stderr_before and time.monotonic() < deadline:
        time.sleep(0.05)
    check(S.alive(), "SIGHUP with an unreadable certificate file: the server keeps running")
    with ldaps_socket() as sock:
        check_equal(sock.getpeercert(binary_form=True), first,
                    "and new connections still get the certificate it had")

    # The new certificate and key, each replaced in one rename; then SIGHUP.
    shutil.copy(PKI.server2_key, RELOAD_KEY + ".new")
    shutil.copy(PKI.server2_crt, RELOAD_CRT + ".new")
    os.replace(RELOAD_KEY + ".new", RELOAD_KEY)
    os.replace(RELOAD_CRT + ".new", RELOAD_CRT)
    os.kill(S.process.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    seen = None
    while time.monotonic() < deadline:
        with ldaps_socket() as sock:
            seen = sock.getpeercert(binary_form=True)
        if seen == second:
            break
        time.sleep(0.1)
    check(seen == second, "after replacing the files and SIGHUP, a new ldaps:// connection "
          "gets the new certificate", "still the old one after 10 s")
    with starttls_socket() as sock:
        check_equal(sock.getpeercert(binary_form=True), second,
                    "and so does a new StartTLS connection")
    check_equal(search_uid_raw(old, old_buffer, 2, 32), [user_dn(32)],
                "the ldaps:// connection opened before the reload still searches")
    check_equal(whoami_raw(old, old_buffer, 3).lower(), f"dn:{user_dn(30)}",
                "and keeps its identity")
    old.close()
    check_equal(uid_of(python_old, 33), [b"user33"],
                "the StartTLS connection opened before the reload still searches")
    python_old.unbind_s()
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=S.ldaps_url,
                        cert=PKI.user5_crt, key=PKI.user5_key)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(5)}",
          "after the reload the CA still verifies client certificates (EXTERNAL)",
          output(rc, out, err))

    # The CA file replaced by another CA's: its clients are verified, the first CA's no longer.
    # (Python's ssl sends a client certificate whichever CAs the server names.)
    shutil.copy(PKI.ca2_crt, RELOAD_CA + ".new")
    os.replace(RELOAD_CA + ".new", RELOAD_CA)
    os.kill(S.process.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while True:
        user9 = external_bind(PKI.user9_crt, PKI.user9_key)
        if user9 == SUCCESS or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    check_equal(user9, SUCCESS, "after replacing ca_file and SIGHUP, EXTERNAL with a "
                "certificate of the new CA succeeds")
    check_equal(external_bind(PKI.user5_crt, PKI.user5_key), INAPPROPRIATE_AUTHENTICATION,
                "and one of the old CA gets inappropriateAuthentication (48)")


def external_bind(crt: str, key: str) -> int:
    """The result code of a SASL EXTERNAL bind over ldaps:// with that client certificate."""
    with ldaps_socket(client_context(crt, key)) as sock:
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), bytearray())
        if response is None or response[0] != BIND_RESPONSE:
            fail(f"EXTERNAL bind: observed {response}")
        return result_code(response[1])


RELOAD_CRT = None
RELOAD_KEY = None
RELOAD_CA = None


# -- second server: simple_bind_requires_tls, min_version 1.3, ca_dir, {subject} -----------------
def check_requires_tls():
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", user_dn(1), "-w", user_pw(1))
    check_equal(rc, CONFIDENTIALITY_REQUIRED,
                "a simple bind over ldap:// without TLS: confidentialityRequired (13)")
    rc, out, err = S.ldap("ldapwhoami", "-x", "-D", ROOT_DN, "-w", ROOT_PW)
    check_equal(rc, CONFIDENTIALITY_REQUIRED, "the rootdn too")
    conn = python_ldap(S.url)
    try:
        conn.simple_bind_s(user_dn(2), user_pw(2))
        fail("python-ldap simple bind over ldap:// succeeded, expected confidentialityRequired")
    except ldap.CONFIDENTIALITY_REQUIRED:
        check(True, "python-ldap: CONFIDENTIALITY_REQUIRED (13)")
    conn.unbind_s()
    rc, out, err = S.ldap("ldapsearch", "-x", "-LLL", "-b", user_dn(3), "-s", "base", "uid")
    check(rc == 0 and "uid: user3" in out, "an anonymous search over ldap:// still works",
          output(rc, out, err))
    rc, out, err = S.ldap("ldapwhoami", "-x")
    check(rc == 0 and out.strip() == "anonymous",
          "an anonymous bind (no name, no password) over ldap:// still works",
          output(rc, out, err))
    rc, out, err = tool("ldapwhoami", "-x", "-D", user_dn(4), "-w", user_pw(4), url=S.ldaps_url)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(4)}",
          "a simple bind over ldaps:// succeeds", output(rc, out, err))
    rc, out, err = tool("ldapwhoami", "-x", "-ZZ", "-D", user_dn(5), "-w", user_pw(5), url=S.url)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(5)}",
          "a simple bind after StartTLS (-ZZ) succeeds", output(rc, out, err))


def check_min_version():
    with ldaps_socket() as sock:
        check_equal(sock.version(), "TLSv1.3", 'min_version = "1.3": a default client gets TLS 1.3')
    reason = tls_refused(client_context(maximum=ssl.TLSVersion.TLSv1_2))
    check(reason is not None, "a client that offers at most TLS 1.2 is refused over ldaps://",
          "its request was answered")
    reason = tls_refused(client_context(maximum=ssl.TLSVersion.TLSv1_2), starttls=True)
    check(reason is not None, "and after StartTLS", "its request was answered")
    rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", user_dn(6), "-s", "base", "uid",
                        url=S.ldaps_url)
    check(rc == 0 and "uid: user6" in out, "ldapsearch (GnuTLS, TLS 1.3) over ldaps:// works",
          output(rc, out, err))


def check_subject_map():
    expected = f"dn:{user_dn(7)}"
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=S.ldaps_url,
                        cert=PKI.user7_crt, key=PKI.user7_key)
    check(rc == 0 and out.strip().lower() == expected,
          'external_map = "{subject}", CA from ca_dir: the certificate of '
          f"DC=com/DC=example/OU=people/UID=user7 binds as {expected}", output(rc, out, err))
    with ldaps_socket(client_context(PKI.untrusted_crt, PKI.untrusted_key)) as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and response[0] == BIND_RESPONSE and
              result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
              "an untrusted certificate (no CA of the ca_dir issued it): EXTERNAL gets "
              "inappropriateAuthentication (48)", f"observed {response}")


# -- third server: verify_client = "demand", a TLS 1.2 cipher list --------------------------------
def check_demand():
    for name, crt, key in (("no", None, None), ("an expired", PKI.expired_crt, PKI.expired_key),
                           ("an untrusted (self-signed)", PKI.untrusted_crt, PKI.untrusted_key)):
        for starttls in (False, True):
            how = "StartTLS" if starttls else "ldaps://"
            reason = tls_refused(client_context(crt, key), starttls=starttls)
            check(reason is not None, f'verify_client = "demand", {name} client certificate, '
                  f"{how} (Python ssl): refused ({reason})", "its request was answered")
        rc, out, err = tool("ldapsearch", "-x", "-LLL", "-b", user_dn(1), "-s", "base", "uid",
                            url=S.ldaps_url, cert=crt, key=key)
        check(rc != 0 and "uid: user1" not in out,
              f"ldapsearch -H ldaps:// with {name} client certificate fails",
              output(rc, out, err))
    reason = tls_refused(client_context(PKI.user5_crt, PKI.user5_key))
    check(reason is None, "with CN=user5's certificate (Python ssl): connected and answered",
          reason or "")
    reason = tls_refused(client_context(PKI.user5_crt, PKI.user5_key), starttls=True)
    check(reason is None, "and over StartTLS", reason or "")
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=S.ldaps_url,
                        cert=PKI.user5_crt, key=PKI.user5_key)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(5)}",
          "ldapwhoami -Y EXTERNAL over ldaps:// with it", output(rc, out, err))
    rc, out, err = tool("ldapsearch", "-x", "-ZZ", "-LLL", "-b", user_dn(2), "-s", "base", "uid",
                        url=S.url, cert=PKI.user5_crt, key=PKI.user5_key)
    check(rc == 0 and "uid: user2" in out, "ldapsearch -ZZ with it", output(rc, out, err))
    check(S.alive(), "the server process is still running")


def check_ciphers():
    context = client_context(PKI.user5_crt, PKI.user5_key, maximum=ssl.TLSVersion.TLSv1_2)
    with ldaps_socket(context) as sock:
        check_equal((sock.version(), sock.cipher()[0]), ("TLSv1.2", DEMAND_CIPHER),
                    f'ciphers = "{DEMAND_CIPHER}": a TLS 1.2 client gets that suite')
    context = client_context(PKI.user5_crt, PKI.user5_key, maximum=ssl.TLSVersion.TLSv1_2,
                             ciphers="ECDHE-RSA-AES128-GCM-SHA256")
    reason = tls_refused(context)
    check(reason is not None, "a TLS 1.2 client offering only another suite is refused",
          "its request was answered")
    context = client_context(PKI.user5_crt, PKI.user5_key)
    with ldaps_socket(context) as sock:
        check_equal(sock.version(), "TLSv1.3", "TLS 1.3 clients are unaffected (ciphersuites "
                    "left at the default)")


DEMAND_CIPHER = "ECDHE-RSA-AES256-GCM-SHA384"


# -- fourth server: ldaps:// only, [tls] with its defaults ---------------------------------------
def check_defaults():
    check_equal(S.listening_urls, [S.ldaps_url], "the only listener is the ldaps:// one")
    context = client_context(PKI.user5_crt, PKI.user5_key, maximum=ssl.TLSVersion.TLSv1_2)
    with ldaps_socket(context) as sock:
        check_equal(sock.version(), "TLSv1.2", 'no min_version: TLS 1.2 clients connect ("1.2")')
        buffer = bytearray()
        check_equal(search_uid_raw(sock, buffer, 1, 1), [user_dn(1)], "and search")
    with ldaps_socket(client_context(PKI.user5_crt, PKI.user5_key)) as sock:
        check_equal(sock.version(), "TLSv1.3", "a default client gets TLS 1.3")
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and response[0] == BIND_RESPONSE and
              result_code(response[1]) == INAPPROPRIATE_AUTHENTICATION,
              'no verify_client ("never"): no client certificate is asked for, so EXTERNAL '
              "gets inappropriateAuthentication (48) even from a client that has one",
              f"observed {response}")
    rc, out, err = tool("ldapwhoami", "-x", "-D", user_dn(2), "-w", user_pw(2), url=S.ldaps_url)
    check(rc == 0 and out.strip().lower() == f"dn:{user_dn(2)}",
          "ldapwhoami -x over the ldaps:// listener", output(rc, out, err))


# -- fifth server: external_map with {uid}, TLS 1.3 ciphersuites -----------------------------------
TLS13_SUITE = "TLS_CHACHA20_POLY1305_SHA256"


def check_uid_map():
    expected = f"dn:{user_dn(8)}"
    rc, out, err = tool("ldapwhoami", "-Y", "EXTERNAL", "-Q", url=S.ldaps_url,
                        cert=PKI.user8_crt, key=PKI.user8_key)
    check(rc == 0 and out.strip().lower() == expected,
          'external_map = "uid={uid},ou=people,dc=example,dc=com" with the certificate of '
          f"O=Example/CN=Someone Else/UID=user8/emailAddress=...: {expected}",
          output(rc, out, err))
    with ldaps_socket(client_context(PKI.user8_crt, PKI.user8_key)) as sock:
        buffer = bytearray()
        response = exchange(sock, sasl_bind_request(1, "EXTERNAL"), buffer)
        check(response is not None and result_code(response[1]) == SUCCESS,
              "the same from Python's ssl", f"observed {response}")
        check_equal(whoami_raw(sock, buffer, 2).lower(), expected, "WhoAmI after it")


def check_ciphersuites():
    with ldaps_socket() as sock:
        check_equal((sock.version(), sock.cipher()[0]), ("TLSv1.3", TLS13_SUITE),
                    f'ciphersuites = "{TLS13_SUITE}": a TLS 1.3 client gets that suite')
    result = subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{S.ldaps_port}", "-CAfile", PKI.ca_crt,
         "-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    check(result.returncode != 0 and "Cipher is (NONE)" in result.stdout,
          "openssl s_client -tls1_3 offering only TLS_AES_128_GCM_SHA256 is refused",
          f"rc {result.returncode}; {result.stdout[-800:]} {result.stderr[-800:]}")


# -- sixth server: no [tls] -----------------------------------------------------------------------
def check_without_tls():
    with S.connect_raw() as sock:
        buffer = bytearray()
        code, diagnostic = start_tls(sock, buffer)
        check_equal(code, UNAVAILABLE, f"StartTLS without [tls]: unavailable (52) ({diagnostic!r})")
        check_equal(search_uid_raw(sock, buffer, 2, 1), [user_dn(1)],
                    "and the connection goes on in plaintext")
    rc, out, err = S.ldap("ldapsearch", "-x", "-LLL", "-b", "", "-s", "base", "supportedExtension",
                          "supportedSASLMechanisms")
    entries = parse_ldif(out)
    check(rc == 0 and len(entries) == 1, "RootDSE", output(rc, out, err))
    check(STARTTLS_OID not in entries[0][1].get("supportedextension", []) and
          "EXTERNAL" not in entries[0][1].get("supportedsaslmechanisms", []),
          "the RootDSE lists neither StartTLS nor EXTERNAL", f"{entries[0][1]}")
    rc, out, err = tool("ldapsearch", "-x", "-ZZ", "-LLL", "-b", "", "-s", "base", url=S.url)
    check(rc != 0, "ldapsearch -ZZ fails", output(rc, out, err))


# -- the servers ---------------------------------------------------------------------------------
def run_server(args, name: str, checks, users: int, **options) -> list:
    """Starts a server, runs `checks` against it; returns the failure messages."""
    global S
    print(f"tls: server {name}", flush=True)
    try:
        with NumadirServer(args.numadir, args.gen, users=users, keep=args.keep,
                           **options) as server:
            S = server
            status = run_checks(f"tls ({name})", checks, keep_going=args.keep_going)
            if status != 0:
                print(f"  numadir stderr (last lines):\n{server.stderr_text()[-3000:]}",
                      flush=True)
                return [f"server {name}: a group of checks failed"]
    except CheckFailed as error:
        message = f"FAIL tls ({name}): the server: {error}"
        print(message, flush=True)
        return [message]
    return []


def main() -> int:
    global PKI, RELOAD_CRT, RELOAD_KEY, RELOAD_CA
    args = parse_args(__doc__.split("\n")[0])
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="numadir-tls-")
    failures = []
    try:
        try:
            PKI = Pki(work)
        except CheckFailed as error:
            print(f"FAIL tls: certificates: {error}", flush=True)
            return 1
        print(f"tls: certificates made in {time.monotonic() - started:.1f} s", flush=True)
        # The main server's own copies: the reload check replaces them.
        RELOAD_CRT, RELOAD_KEY = PKI.path("reload.crt"), PKI.path("reload.key")
        shutil.copy(PKI.server_crt, RELOAD_CRT)
        shutil.copy(PKI.server_key, RELOAD_KEY)
        RELOAD_CA = PKI.path("reload-ca.crt")
        shutil.copy(PKI.ca_crt, RELOAD_CA)
        both = ("ldap://127.0.0.1:0", "ldaps://127.0.0.1:0")
        failures += run_server(args, "main", [
            ("RootDSE", check_root_dse),
            ("ldap-utils: ldapsearch -ZZ and ldaps://", check_ldap_utils),
            ("SASL EXTERNAL", check_external),
            ("python-ldap", check_python_ldap),
            ("ldap3", check_ldap3),
            ("many responses at once over one TLS connection", check_concurrent_responses),
            ("StartTLS twice", check_starttls_twice),
            ("StartTLS with an operation outstanding", check_starttls_outstanding),
            ("bad input", check_bad_input),
            ("session resumption", check_session_resumption),
            ("certificate reload on SIGHUP", check_reload),
        ], USERS, listen=both, extra_toml=tls_config(
            RELOAD_CRT, RELOAD_KEY, ca_file=RELOAD_CA, verify_client="allow",
            external_map=EXTERNAL_MAP, handshake_timeout=HANDSHAKE_TIMEOUT_S))
        failures += run_server(args, "simple_bind_requires_tls", [
            ("simple binds need TLS", check_requires_tls),
            ("min_version 1.3", check_min_version),
            ("external_map {subject} with ca_dir", check_subject_map),
        ], 100, listen=both, extra_toml=tls_config(
            PKI.server_crt, PKI.server_key, ca_dir=PKI.ca_dir, verify_client="allow",
            external_map="{subject}", min_version="1.3", simple_bind_requires_tls=True))
        failures += run_server(args, "verify_client demand", [
            ("client certificates demanded", check_demand),
            ("TLS 1.2 cipher list", check_ciphers),
        ], 100, listen=both, extra_toml=tls_config(
            PKI.server_crt, PKI.server_key, ca_file=PKI.ca_crt, verify_client="demand",
            external_map=EXTERNAL_MAP, ciphers=DEMAND_CIPHER))
        failures += run_server(args, "tls defaults, ldaps only", [
            ("[tls] defaults", check_defaults),
        ], 10, listen=("ldaps://127.0.0.1:0",), extra_toml=tls_config(
            PKI.server_crt, PKI.server_key, ca_file=PKI.ca_crt))
        failures += run_server(args, "external_map {uid}, ciphersuites", [
            ("external_map with {uid}", check_uid_map),
            ("TLS 1.3 ciphersuites", check_ciphersuites),
        ], 10, listen=("ldaps://127.0.0.1:0",), extra_toml=tls_config(
            PKI.server_crt, PKI.server_key, ca_file=PKI.ca_crt, verify_client="allow",
            external_map=f"uid={{uid}},{PEOPLE}", ciphersuites=TLS13_SUITE))
        failures += run_server(args, "without tls", [
            ("StartTLS unavailable", check_without_tls),
        ], 10)
    finally:
        if args.keep:
            print(f"  kept {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    if failures:
        sys.stderr.write("".join(f"{m}\n" for m in failures))
        print(f"tls: failed after {elapsed:.1f} s", flush=True)
        return 1
    print(f"tls: every check passed in {elapsed:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
