#!/usr/bin/python3
"""numadir's metrics endpoint against bad and hostile clients, over raw sockets, Python's
http.client, curl and Debian's prometheus:

  - bad input is answered with its status and never kills the endpoint: malformed request
    lines and header lines 400; headers over 8 KiB 431 (one huge header, or many); unknown paths
    404; other methods 405 with "Allow: GET, HEAD"; HEAD 200 with Content-Length and no body; a
    request dribbled a byte at a time is served; keep-alive serves several requests on one
    connection and "Connection: close" closes it; binary garbage is answered 400 or closed;
  - 100 slowloris connections (headers never finished, a byte every 200 ms) against
    max_connections = 16 and request_timeout = 3: the ones past 16 are closed at accept (EOF
    within a second), the 16 are closed by the header timeout (within request_timeout + 2 s)
    although they keep sending; meanwhile python-ldap search+bind auths and ldapsearch go on,
    every one answered, none slower than 1 s; afterwards a scrape is served;
  - the server's RSS after 2,000 bad requests and the slowloris round is within 16 MiB of
    before (64 MiB under a sanitizer, whose allocator keeps freed memory in quarantine);
  - on a non-loopback address (0.0.0.0) with tls = true, client_certificate = true and a
    bearer_token_file: curl with the client certificate and the token gets 200; without the
    token or with a wrong one 401 with "WWW-Authenticate: Bearer"; without a client
    certificate, or with one no CA of [tls] vouches for, the TLS handshake fails; plain HTTP is
    not answered with metrics; prometheus with that tls_config and credentials_file scrapes it
    (up == 1);
  - check-config (and serve) refuse an open door: a non-loopback listen without tls, or with
    tls but no client certificate or token; tls without [tls]; client_certificate without tls;
    a listen that is not host:port. Loopback (127.0.0.1, [::1]) without tls is fine;
  - promtool check rules passes on etc/prometheus/numadir-alerts.yml and promtool check config
    on etc/prometheus/prometheus.yml.

  metrics_endpoint_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 when every check passes; otherwise 1 with the first failing check (observed vs expected).
"""
import multiprocessing
import os
import re
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
    PEOPLE, check, check_equal, fail, parse_args, rss_kib, run_suite, sanitized,
    user_dn, user_pw)
from metrics_harness import (  # noqa: E402
    ALERTS_FILE, PROMETHEUS_EXAMPLE, PrometheusServer, free_port, http_get, metrics_toml,
    promtool, scrape, wait_for_endpoint)

USERS = 200
MAX_CONNECTIONS = 16
REQUEST_TIMEOUT_S = 3
SLOWLORIS = 100
TOKEN = "s3cret-metrics-token"

ARGS = None
S = None
PORT = None
PKI_DIR = None
RSS_BEFORE = None


# -- raw HTTP --------------------------------------------------------------------------------
def read_response(sock: socket.socket, timeout: float = 5, head: bool = False):
    """Reads one HTTP response. Returns (status or None if closed first, headers, body,
    leftover bytes)."""
    data = b""
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            fail(f"no complete response head within {timeout}s: {data[:200]!r}")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            if data:
                fail(f"connection closed inside a response head: {data[:200]!r}")
            return None, {}, b"", b""
        data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    match = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    if match is None:
        fail(f"not an HTTP status line: {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = 0 if head else int(headers.get("content-length", "0"))
    while len(rest) < length:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            fail(f"body shorter than its Content-Length {length}: {len(rest)}")
        sock.settimeout(remaining)
        chunk = sock.recv(65536)
        if not chunk:
            fail(f"connection closed inside a body of {length} bytes ({len(rest)} read)")
        rest += chunk
    return int(match.group(1)), headers, rest[:length], rest[length:]


def raw(data: bytes, timeout: float = 5, head: bool = False):
    """Sends `data` on a new connection; returns (status or None, headers, body, closed after)."""
    with socket.create_connection(("127.0.0.1", PORT), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return None, {}, b"", True
        status, headers, body, _ = read_response(sock, timeout, head)
        return status, headers, body, closed(sock, 2)


def closed(sock: socket.socket, timeout: float) -> bool:
    """Whether the peer closes `sock` within `timeout` seconds (reading and dropping bytes)."""
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        sock.settimeout(remaining)
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True


def get(path: str = "/metrics", method: str = "GET", extra: str = "") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode()


# -- group A: bad input on a loopback endpoint -----------------------------------------------
def check_answers():
    global RSS_BEFORE
    wait_for_endpoint(PORT)
    RSS_BEFORE = rss_kib(S.process.pid)
    status, headers, body, _ = raw(get())
    check(status == 200 and int(headers.get("content-length", -1)) == len(body) and
          b"numadir_build_info" in body, "GET /metrics: 200 with Content-Length and metrics")
    status, headers, body, _ = raw(get(method="HEAD"), head=True)
    check(status == 200 and int(headers.get("content-length", 0)) > 0,
          f"HEAD /metrics: 200 with the Content-Length of the body it leaves out "
          f"({headers.get('content-length')})")
    for path in ("/", "/metric", "/metrics/x", "/favicon.ico", "/METRICS"):
        status, _, _, _ = raw(get(path))
        check_equal(status, 404, f"GET {path}")
    status, _, _, _ = raw(get("/../metrics"))
    check(status in (400, 404), f"GET /../metrics: 400 or 404 ({status})")
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "PATCH"):
        status, headers, _, _ = raw(get(method=method, extra="Content-Length: 0\r\n"))
        check(status == 405 and headers.get("allow", "").replace(" ", "") == "GET,HEAD",
              f"{method} /metrics: 405 with Allow: GET, HEAD",
              f"{status} {headers.get('allow')!r}")


MALFORMED = [
    (b"GARBAGE\r\n\r\n", "a request line of one word"),
    (b"GET /metrics\r\n\r\n", "a request line without a version"),
    (b"GET /metrics HTTP/1.1 extra\r\nHost: x\r\n\r\n", "a request line of four words"),
    (b"GET /metrics FTP/1.1\r\nHost: x\r\n\r\n", "a version that is not HTTP"),
    (b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", "a header line without a colon"),
    (b"GET /metrics HTTP/1.1\r\n: empty name\r\n\r\n", "a header with an empty name"),
    (b"GET /metrics HTTP/1.1\r\nContent-Length: -5\r\n\r\n", "a negative Content-Length"),
    (b"GET /metrics HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
     "a Content-Length past 64 bits"),
    (b"GET /metrics HTTP/1.1\r\nX\x00Y: z\r\n\r\n", "a NUL in a header name"),
]


def check_malformed():
    for data, what in MALFORMED:
        status, _, _, was_closed = raw(data)
        check(status == 400 or (status is None and was_closed), f"{what}: 400",
              f"{status}")
    for data, what in ((bytes(range(256)) * 4 + b"\r\n\r\n", "1 KiB of binary bytes"),
                       (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64 +
                        b"\r\n\r\n", "a TLS ClientHello on the plain port")):
        status, _, _, was_closed = raw(data)
        check(status in (400, None) and was_closed, f"{what}: 400 or closed, then closed",
              f"{status}, closed {was_closed}")
    status, _, _, _ = raw(b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n")
    check(status in (400, 505), f"HTTP/9.9: 400 or 505 ({status})")
    big = "X-Big: " + "a" * (9 * 1024) + "\r\n"
    status, _, _, was_closed = raw(get(extra=big))
    check(status == 431, "one 9 KiB header: 431", f"{status}")
    many = "".join(f"X-H{i}: {'b' * 100}\r\n" for i in range(100))
    status, _, _, _ = raw(get(extra=many))
    check(status == 431, "100 headers of 100 bytes (10 KiB): 431", f"{status}")
    status, _, _, _ = raw(get(path="/metrics?" + "q" * (9 * 1024)))
    check(status in (400, 414, 431), f"a 9 KiB request line: refused ({status})")
    near = "X-Fill: " + "c" * (6 * 1024) + "\r\n"
    status, _, _, _ = raw(get(extra=near))
    check_equal(status, 200, "6 KiB of headers (under 8 KiB) is served")
    # Headers that never end within the limit, sent without a final blank line.
    with socket.create_connection(("127.0.0.1", PORT), timeout=5) as sock:
        try:
            sock.sendall(b"GET /metrics HTTP/1.1\r\n" + b"X-Endless: " + b"d" * 20000)
        except (BrokenPipeError, ConnectionResetError):
            pass
        status, _, _, _ = read_response(sock, 5)
        check(status in (431, None), f"20 KiB of headers that never end: 431 or closed "
              f"({status})")
        check(closed(sock, 3), "and the connection is closed")


def check_framing():
    # A byte at a time, each in its own segment: the parser keeps partial state.
    with socket.create_connection(("127.0.0.1", PORT), timeout=10) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for byte in get():
            sock.send(bytes([byte]))
            time.sleep(0.002)  # Separate segments, as a slow client sends them.
        status, _, body, _ = read_response(sock, 5)
        check(status == 200 and b"numadir_build_info" in body,
              "a request sent a byte at a time is served")
    # Keep-alive: three requests on one connection; then Connection: close.
    with socket.create_connection(("127.0.0.1", PORT), timeout=10) as sock:
        statuses = []
        for _ in range(3):
            sock.sendall(get())
            status, _, _, leftover = read_response(sock, 5)
            statuses.append(status)
            check_equal(leftover, b"", "nothing after the response's Content-Length")
        check_equal(statuses, [200, 200, 200], "keep-alive: three requests on one connection")
        sock.sendall(get(extra="Connection: close\r\n"))
        status, headers, _, _ = read_response(sock, 5)
        check(status == 200 and closed(sock, 3),
              "Connection: close: answered, then the server closes", f"{status} {headers}")
    # An HTTP/1.0 request without keep-alive is answered and closed.
    with socket.create_connection(("127.0.0.1", PORT), timeout=10) as sock:
        sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        status, _, _, _ = read_response(sock, 5)
        check(status == 200 and closed(sock, 3), "HTTP/1.0: answered and closed", f"{status}")
    # A connection that sends nothing is closed after request_timeout.
    with socket.create_connection(("127.0.0.1", PORT), timeout=10) as sock:
        started = time.monotonic()
        was_closed = closed(sock, REQUEST_TIMEOUT_S + 3)
        elapsed = time.monotonic() - started
        check(was_closed and elapsed >= REQUEST_TIMEOUT_S - 0.5,
              f"an idle connection is closed after request_timeout ({elapsed:.1f} s)",
              f"closed {was_closed} after {elapsed:.1f} s")


def check_many_bad_requests():
    """2,000 bad requests of every kind, for the RSS check (and the endpoint still answers)."""
    kinds = [data for data, _ in MALFORMED] + [get("/nope"), get(method="POST"),
                                               get(extra="X-Big: " + "e" * 9000 + "\r\n")]
    for i in range(2000):
        with socket.create_connection(("127.0.0.1", PORT), timeout=5) as sock:
            try:
                sock.sendall(kinds[i % len(kinds)])
                read_response(sock, 5)
            except (BrokenPipeError, ConnectionResetError):
                pass
    check(True, "2,000 bad requests answered")
    wait_for_endpoint(PORT, timeout=10)
    check(True, "the endpoint still serves /metrics")


def ldap_auths(url: str, index: int, stop, results):
    """A process: python-ldap search+bind auths on one connection until `stop` is set; puts
    (answered, errors, slowest seconds) on `results`."""
    answered, errors, slowest = 0, [], 0.0
    try:
        conn = ldap.initialize(url, bytes_mode=False)
        conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
        conn.set_option(ldap.OPT_TIMEOUT, 10)
        n = index
        while not stop.is_set():
            user = n % USERS
            started = time.monotonic()
            found = conn.search_s(PEOPLE, ldap.SCOPE_SUBTREE, f"(uid=user{user})", ["1.1"])
            if len(found) != 1:
                raise RuntimeError(f"uid=user{user}: {len(found)} entries")
            conn.simple_bind_s(user_dn(user), user_pw(user))
            slowest = max(slowest, time.monotonic() - started)
            answered += 1
            n += 2
        conn.unbind_s()
    except Exception as error:  # noqa: BLE001 - reported as a check failure.
        errors.append(f"auth client {index}: {error!r}")
    results.put((answered, errors, slowest))


def ldap_tool(url: str, stop, results):
    """A process: ldapsearch every 100 ms until `stop` is set; puts what ldap_auths puts."""
    answered, errors, slowest = 0, [], 0.0
    while not stop.is_set():
        started = time.monotonic()
        result = subprocess.run(["/usr/bin/ldapsearch", "-x", "-H", url, "-b", PEOPLE, "-LLL",
                                 "uid=user3", "1.1"], capture_output=True, text=True, timeout=30,
                                env={**os.environ, "LDAPNOINIT": "1"})
        if result.returncode != 0 or "dn: uid=user3," not in result.stdout:
            errors.append(f"ldapsearch: rc {result.returncode} {result.stderr}")
        else:
            answered += 1
            slowest = max(slowest, time.monotonic() - started)
        stop.wait(0.1)
    results.put((answered, errors, slowest))


class LdapLoad:
    """Two processes of python-ldap search+bind auths and one of ldapsearch every 100 ms, until
    the context ends (processes, so that this process's slowloris sockets never wait for
    their GIL); then `answered`, `errors` and `slowest` (seconds) sum them up."""

    def __init__(self):
        context = multiprocessing.get_context("fork")
        self.stop = context.Event()
        self.results = context.Queue()
        self.processes = [context.Process(target=ldap_auths, args=(S.url, i, self.stop,
                                                                   self.results))
                          for i in range(2)]
        self.processes.append(context.Process(target=ldap_tool, args=(S.url, self.stop,
                                                                      self.results)))

    def __enter__(self):
        for process in self.processes:
            process.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        results = [self.results.get(timeout=60) for _ in self.processes]
        for process in self.processes:
            process.join(timeout=60)
        self.answered = sum(r[0] for r in results)
        self.errors = [e for r in results for e in r[1]]
        self.slowest = max(r[2] for r in results)
        return False


def check_slowloris():
    with LdapLoad() as load:
        time.sleep(0.5)  # Load running before the attack: its first answers set the pace.
        sockets = []
        started = time.monotonic()
        for _ in range(SLOWLORIS):
            sock = socket.create_connection(("127.0.0.1", PORT), timeout=5)
            try:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            sockets.append(sock)
        opened = time.monotonic() - started
        if opened > REQUEST_TIMEOUT_S - 1.2:
            fail(f"opening {SLOWLORIS} connections took {opened:.2f} s: too slow to tell the "
                 "ones closed at accept from the ones the header timeout closes")
        # Which were closed at accept: EOF (or reset) within a second, before the header
        # timeout of the held ones.
        time.sleep(1.0)
        refused = []
        for sock in sockets:
            sock.setblocking(False)
            try:
                refused.append(sock.recv(4096) == b"")
            except BlockingIOError:
                refused.append(False)
            except (ConnectionResetError, BrokenPipeError):
                refused.append(True)
        held = [s for s, r in zip(sockets, refused) if not r]
        check(refused.count(True) == SLOWLORIS - MAX_CONNECTIONS and len(held) == MAX_CONNECTIONS,
              f"{refused.count(True)} of {SLOWLORIS} closed at accept, {len(held)} held "
              f"(max_connections {MAX_CONNECTIONS})", f"held {len(held)}")
        # The held ones dribble a header byte every 200 ms; the header timeout still ends them.
        deadline = started + REQUEST_TIMEOUT_S + 3
        alive = list(held)
        while alive and time.monotonic() < deadline:
            still = []
            for sock in alive:
                try:
                    sock.send(b"X")
                    try:
                        if sock.recv(4096) == b"":
                            continue
                    except BlockingIOError:
                        pass
                    still.append(sock)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    continue
            alive = still
            time.sleep(0.2)  # The slowloris pace.
        elapsed = time.monotonic() - started
        check(not alive and elapsed >= REQUEST_TIMEOUT_S - 0.5,
              f"the {len(held)} held slowloris connections were closed by the header timeout "
              f"({elapsed:.1f} s after they opened), although they kept sending",
              f"{len(alive)} still open after {elapsed:.1f} s")
        for sock in sockets:
            sock.close()
        time.sleep(0.3)  # More LDAP traffic after the attack.
    answered, errors, slowest = load.answered, load.errors, load.slowest
    check(not errors, "every LDAP request was answered", f"{errors[:3]}")
    check(answered > 20 and slowest < 1.0,
          f"{answered} LDAP auths and searches answered during the attack, the slowest in "
          f"{slowest * 1000:.0f} ms", f"answered {answered}, slowest {slowest:.3f} s")
    wait_for_endpoint(PORT, timeout=10)
    check(True, "once they are closed, a scrape is served")


def check_rss():
    after = rss_kib(S.process.pid)
    bound = (64 if sanitized(S.numadir) else 16) * 1024
    check(after - RSS_BEFORE <= bound, f"RSS {RSS_BEFORE} KiB before the bad input, {after} KiB "
          f"after (bound +{bound // 1024} MiB)", f"grew {after - RSS_BEFORE} KiB")
    exposition = scrape(PORT)
    reported = exposition.total("process_resident_memory_bytes")
    check(abs(reported / 1024 - rss_kib(S.process.pid)) <= 0.2 * after + 4096,
          f"process_resident_memory_bytes ({reported / 1048576:.1f} MiB) is the RSS /proc shows")


def write_config(directory: str, metrics: str, tls: str = "") -> str:
    """S's numadir.toml with its [metrics] table replaced by `metrics` (and `tls` added)."""
    with open(S.config) as stream:
        text = stream.read()
    text = re.sub(r"\n\[metrics\]\n(?:[^\[\n][^\n]*\n|\n)*", "\n", text)
    path = os.path.join(directory, f"metrics-{len(os.listdir(directory))}.toml")
    with open(path, "w") as stream:
        stream.write(text + "\n" + metrics + "\n" + tls)
    return path


def check_config_errors():
    with tempfile.TemporaryDirectory(prefix="numadir-it-metrics-config-") as directory:
        crt, key = make_self_signed(directory)
        tls = f'[tls]\ncertificate = "{crt}"\nkey = "{key}"\nca_file = "{crt}"\n'
        token = os.path.join(directory, "token")
        with open(token, "w") as stream:
            stream.write(TOKEN + "\n")
        port = free_port()
        refused = [
            (metrics_toml(port, "0.0.0.0"), "", "0.0.0.0 without tls"),
            (metrics_toml(port, "0.0.0.0", bearer_token_file=token), "",
             "0.0.0.0 with a token but no tls"),
            (metrics_toml(port, "0.0.0.0", tls=True), tls, "0.0.0.0 with tls but neither a "
             "client certificate nor a token"),
            (metrics_toml(port, tls=True), "", "tls = true without [tls]"),
            (metrics_toml(port, client_certificate=True), "", "client_certificate without tls"),
            ('[metrics]\nlisten = "nonsense"\n', "", "a listen that is not host:port"),
            ('[metrics]\nlisten = "127.0.0.1:70000"\n', "", "a port over 65535"),
            (metrics_toml(port, max_connections=0), "", "max_connections = 0"),
            (metrics_toml(port, request_timeout=0), "", "request_timeout = 0"),
            (metrics_toml(port, unknown_key=1), "", "an unknown key"),
            (metrics_toml(port, bearer_token_file=os.path.join(directory, "absent")), "",
             "a bearer_token_file that does not exist"),
        ]
        for metrics, extra, what in refused:
            config = write_config(directory, metrics, extra)
            result = subprocess.run([S.numadir, "check-config", "-c", config],
                                    capture_output=True, text=True, timeout=60)
            message = result.stderr + result.stdout
            check(result.returncode != 0 and "metrics" in message,
                  f"check-config refuses {what}, naming [metrics]",
                  f"exit {result.returncode}: {message[-500:]}")
            if what.startswith("0.0.0.0"):
                check("open door" in message, "saying a metrics port is never an open door",
                      message[-500:])
        accepted = [
            (metrics_toml(port), "", "127.0.0.1 without tls"),
            (metrics_toml(port, "[::1]"), "", "[::1] without tls"),
            ("[metrics]\nlisten = \"\"\n", "", "an empty listen (off)"),
            (metrics_toml(port, "0.0.0.0", tls=True, client_certificate=True), tls,
             "0.0.0.0 with tls and client certificates"),
            (metrics_toml(port, "0.0.0.0", tls=True, bearer_token_file=token), tls,
             "0.0.0.0 with tls and a token"),
        ]
        for metrics, extra, what in accepted:
            config = write_config(directory, metrics, extra)
            result = subprocess.run([S.numadir, "check-config", "-c", config],
                                    capture_output=True, text=True, timeout=60)
            check(result.returncode == 0, f"check-config accepts {what}",
                  f"exit {result.returncode}: {(result.stderr + result.stdout)[-500:]}")
        # serve refuses the open door too, before it listens (on a database of its own, so that
        # S's lock on its database cannot be the reason).
        config = write_config(directory, metrics_toml(port, "0.0.0.0"))
        with open(config) as stream:
            text = stream.read()
        with open(config, "w") as stream:
            stream.write(re.sub(r'(?m)^path = ".*"$', f'path = "{directory}/db"', text, 1))
        process = subprocess.run([S.numadir, "serve", "-c", config], capture_output=True,
                                 text=True, timeout=60)
        check(process.returncode != 0 and "open door" in process.stderr and
              "listening on" not in process.stdout,
              "numadir serve refuses 0.0.0.0 without tls, before listening",
              f"exit {process.returncode}: {process.stderr[-500:]}")


def make_self_signed(directory: str):
    crt, key = os.path.join(directory, "self.crt"), os.path.join(directory, "self.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", crt, "-days",
                    "2", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return crt, key


def check_promtool_files():
    code, out = promtool("check", "rules", ALERTS_FILE)
    check(code == 0, f"promtool check rules {os.path.relpath(ALERTS_FILE)}", out[-2000:])
    code, out = promtool("check", "config", PROMETHEUS_EXAMPLE)
    check(code == 0, f"promtool check config {os.path.relpath(PROMETHEUS_EXAMPLE)}", out[-2000:])


# -- group B: TLS, client certificates and a bearer token on 0.0.0.0 ------------------------
class Pki:
    """A CA, a server certificate for 127.0.0.1, a client certificate it issued, and an
    untrusted (self-signed) client certificate; openssl CLI."""

    def __init__(self, directory: str):
        self.dir = directory

        def openssl(*args):
            subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True,
                           timeout=60)

        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
                "-subj", "/CN=metrics test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign")
        for name, extensions in (
                ("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE"
                           "\nextendedKeyUsage=serverAuth\n"),
                ("scraper", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")):
            openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj",
                    f"/CN={name}")
            with open(os.path.join(directory, f"{name}.ext"), "w") as stream:
                stream.write(extensions)
            openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                    "-CAcreateserial", "-days", "2", "-out", f"{name}.crt", "-extfile",
                    f"{name}.ext")
        openssl("req", "-x509", *ec, "-keyout", "untrusted.key", "-out", "untrusted.crt",
                "-days", "2", "-subj", "/CN=scraper")
        with open(os.path.join(directory, "token"), "w") as stream:
            stream.write(TOKEN + "\n")

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)


def curl(*args, token: str = None, cert: str = "scraper"):
    command = ["/usr/bin/curl", "-sS", "--max-time", "10", "--cacert", PKI.path("ca.crt"),
               "-o", "-", "-D", "-", "-w", "\\n%{http_code}"]
    if cert:
        command += ["--cert", PKI.path(f"{cert}.crt"), "--key", PKI.path(f"{cert}.key")]
    if token:
        command += ["-H", f"Authorization: Bearer {token}"]
    command += list(args) or [f"https://127.0.0.1:{PORT}/metrics"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    code = result.stdout.rstrip().rsplit("\n", 1)[-1] if result.stdout else "000"
    return result.returncode, code, result.stdout, result.stderr


PKI = None


def check_tls_token():
    context = ssl.create_default_context(cafile=PKI.path("ca.crt"))
    context.load_cert_chain(PKI.path("scraper.crt"), PKI.path("scraper.key"))
    wait_for_endpoint(PORT, context=context, headers={"Authorization": f"Bearer {TOKEN}"})
    rc, code, out, err = curl(token=TOKEN)
    check(rc == 0 and code == "200" and "numadir_build_info" in out,
          "curl with the client certificate and the token: 200 with metrics",
          f"rc {rc}, {code}: {err[-300:]}")
    for token, what in ((None, "without a token"), ("wrong", "with a wrong token"),
                        (TOKEN + "x", "with the token and one more character"),
                        (TOKEN[:-1], "with the token short of one character")):
        rc, code, out, err = curl(token=token)
        check(code == "401" and re.search(r"(?im)^www-authenticate:\s*bearer", out),
              f"curl {what}: 401 with WWW-Authenticate: Bearer", f"rc {rc}, {code}: {out[:300]}")
        check("numadir_" not in out, "and no metrics in the answer")
    status, _, _ = http_get(PORT, headers={"Authorization": f"Basic {TOKEN}"}, context=context)
    check_equal(status, 401, "a Basic authorization with the token's text")
    rc, code, _, err = curl(token=TOKEN, cert=None)
    check(rc != 0 and code != "200", "without a client certificate the TLS handshake fails",
          f"rc {rc}, {code}")
    rc, code, _, err = curl(token=TOKEN, cert="untrusted")
    check(rc != 0 and code != "200", "with a certificate no CA of [tls] vouches for it fails",
          f"rc {rc}, {code}")
    rc, code, out, _ = curl(f"http://127.0.0.1:{PORT}/metrics", token=TOKEN)
    check(code != "200" and "numadir_" not in out, f"plain HTTP gets no metrics ({code})")
    job = (f"    scheme: https\n    authorization:\n      type: Bearer\n"
           f"      credentials_file: {PKI.path('token')}\n    tls_config:\n"
           f"      ca_file: {PKI.path('ca.crt')}\n      cert_file: {PKI.path('scraper.crt')}\n"
           f"      key_file: {PKI.path('scraper.key')}\n")
    with PrometheusServer([f"127.0.0.1:{PORT}"], job_extra=job, keep=ARGS.keep) as prometheus:
        up = prometheus.wait_for('up{job="numadir"}', lambda r: r and r[0][1] == 1, 30)
        check(up and up[0][1] == 1, "prometheus with that tls_config and credentials_file "
              "scrapes it: up == 1", f"{up}: {prometheus.targets_health()}")
        count = prometheus.wait_for("numadir_build_info", lambda r: bool(r), 10)
        check(bool(count), "and stores its samples")


def set_server(server):
    global S
    S = server


def main() -> int:
    global ARGS, PORT, PKI
    ARGS = parse_args(__doc__)
    PORT = free_port()
    status = run_suite("metrics_endpoint", ARGS, [
        ("GET, HEAD, unknown paths and methods", check_answers),
        ("malformed requests and oversized headers", check_malformed),
        ("a request a byte at a time, keep-alive, Connection: close, timeouts", check_framing),
        ("2,000 bad requests", check_many_bad_requests),
        (f"{SLOWLORIS} slowloris connections beside LDAP traffic", check_slowloris),
        ("RSS after the bad input", check_rss),
        ("check-config and serve refuse an open door", check_config_errors),
        ("promtool checks the example files", check_promtool_files),
    ], set_server, users=USERS,
        extra_toml=metrics_toml(PORT, max_connections=MAX_CONNECTIONS,
                                request_timeout=REQUEST_TIMEOUT_S))
    if status != 0 and not ARGS.keep_going:
        return status
    directory = tempfile.mkdtemp(prefix="numadir-it-metrics-pki-")
    try:
        PKI = Pki(directory)
        PORT = free_port()
        tls = (f'[tls]\ncertificate = "{PKI.path("server.crt")}"\n'
               f'key = "{PKI.path("server.key")}"\nca_file = "{PKI.path("ca.crt")}"\n')
        status |= run_suite("metrics_endpoint tls", ARGS, [
            ("0.0.0.0 with TLS, a client certificate and a bearer token", check_tls_token),
        ], set_server, users=USERS,
            extra_toml=metrics_toml(PORT, "0.0.0.0", tls=True, client_certificate=True,
                                    bearer_token_file=PKI.path("token")) + tls)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
