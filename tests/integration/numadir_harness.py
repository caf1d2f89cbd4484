#!/usr/bin/python3
"""Shared helpers for the integration tests that drive a real `numadir serve` with real clients.

  with NumadirServer(args.numadir, args.gen, users=1000, extra_ldif=EXTRA) as server:
      rc, out, err = server.ldap("ldapsearch", "-x", "-b", server.suffix, "uid=user1")

NumadirServer writes numadir.toml in a fresh temporary directory, imports the LDIF that
perf/gen_users.py prints (plus extra LDIF), starts `numadir serve` listening on
ldap://127.0.0.1:0 (or the `listen` URLs given, e.g. an ldaps:// one too), reads the ports from
its "listening on" lines and, on exit, stops it with SIGTERM and checks that it exited 0. Checks
fail through `fail()`, which raises CheckFailed; `run_checks()` turns the first failure into a
message and a non-zero exit status.

Standard library only (the tests themselves import python3-ldap / python3-ldap3).
"""
import argparse
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

SUFFIX = "dc=example,dc=com"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PW = "secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"

# The generated users have the password "password<N>".
def user_dn(n: int) -> str:
    return f"uid=user{n},{PEOPLE}"


def user_pw(n: int) -> str:
    return f"password{n}"


def ssha(password: str) -> str:
    """A {SSHA} userPassword value (salted SHA-1, as slappasswd makes by default)."""
    import base64
    import hashlib
    salt = os.urandom(8)
    return "{SSHA}" + base64.b64encode(hashlib.sha1(password.encode() + salt).digest() +
                                       salt).decode()


STARTUP_TIMEOUT_S = 60 * (3 if os.environ.get("ASAN_OPTIONS") is not None else 1)
STOP_TIMEOUT_S = 30


class CheckFailed(Exception):
    pass


def fail(message: str):
    raise CheckFailed(message)


def check(condition: bool, what: str, detail: str = ""):
    """Prints what was checked; fails with `detail` (observed vs expected) if it does not hold."""
    if not condition:
        fail(f"{what}: {detail}" if detail else what)
    print(f"  ok: {what}", flush=True)


def check_equal(observed, expected, what: str):
    check(observed == expected, what, f"observed {observed!r}, expected {expected!r}")


def sanitized(binary: str) -> bool:
    """Whether the program `binary` was built with a sanitizer (the asan or tsan preset): clang
    links the runtime in, gcc links libasan / libtsan; both leave the runtime's entry point
    named in the file."""
    with open(binary, "rb") as stream:
        data = stream.read()
    return any(name in data for name in (b"__asan_init", b"__tsan_init", b"libasan", b"libtsan"))


def wait_for(condition, timeout: float = 30, interval: float = 0.05):
    """Calls `condition()` until it returns something true or `timeout` seconds have passed (a
    bounded wait for what nothing signals: a file written by another process, a counter).
    Returns: the last value `condition()` returned (falsy if the deadline passed)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)  # The poll interval; the wait is for `condition`.


def read_until_line(process: subprocess.Popen, wanted, timeout: float = 60):
    """Reads `process`'s stdout until a complete line for which `wanted(line)` is true, or until
    it closes or `timeout` seconds pass. Reads the pipe's descriptor itself: select() on a
    buffered stream followed by readline() can leave the wanted line in Python's buffer while
    select() waits for bytes that never come.
    Returns: (the wanted line or None, every complete line read, as str)."""
    fd = process.stdout.fileno()
    deadline = time.monotonic() + timeout
    buffer = b""
    lines = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, lines
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            return None, lines
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        for raw in complete:
            line = raw.decode(errors="replace")
            lines.append(line)
            if wanted(line):
                return line, lines


def parse_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--numadir", required=True, help="the numadir executable")
    parser.add_argument("--gen", required=True, help="perf/gen_users.py")
    parser.add_argument("--bin-dir", default="", help="the build directory (unused here)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--keep-going", action="store_true",
                        help="after a failed group of checks, run the remaining groups too")
    args, _ = parser.parse_known_args()
    return args


def run_checks(name: str, checks, keep_going: bool = False) -> int:
    """Runs `checks` (a list of (title, callable)) in order; stops at the first failure unless
    `keep_going` (then a failed group is abandoned and the next one runs). Returns the process
    exit status."""
    failures = []
    for title, function in checks:
        print(f"{name}: {title}", flush=True)
        try:
            function()
            continue
        except CheckFailed as error:
            message = f"FAIL {name}: {title}: {error}"
        except Exception as error:  # A client library raised something unexpected.
            traceback.print_exc()
            message = f"FAIL {name}: {title}: unexpected {type(error).__name__}: {error}"
        print(message, flush=True)
        failures.append(message)
        if not keep_going:
            break
    if failures:
        sys.stderr.write("".join(f"{m}\n" for m in failures))
        return 1
    print(f"{name}: all {len(checks)} groups of checks passed", flush=True)
    return 0


def run_suite(name: str, args: argparse.Namespace, checks, set_server, users: int = 1000,
              **server_options) -> int:
    """Starts a NumadirServer, hands it to `set_server`, runs `checks` (see run_checks), stops
    the server (which must exit 0 on SIGTERM). Returns the process exit status; a failure to
    start or stop the server is reported like a failed check."""
    status = 1
    try:
        with NumadirServer(args.numadir, args.gen, users=users, keep=args.keep,
                           **server_options) as server:
            set_server(server)
            status = run_checks(name, checks, keep_going=args.keep_going)
    except CheckFailed as error:
        message = f"FAIL {name}: the server: {error}"
        print(message, flush=True)
        sys.stderr.write(message + "\n")
        return 1
    return status


class NumadirServer:
    """A numadir server on a loopback port with a fresh database. A context manager."""

    def __init__(self, numadir: str, gen_users: str, users: int = 1000, extra_ldif: str = "",
                 size_limit: int = 500, time_limit: int = 3600, keep: bool = False,
                 extra_server_toml: str = "", listen=("ldap://127.0.0.1:0",),
                 extra_toml: str = "", extra_limits_toml: str = "", workers: int = 2,
                 import_args=(), extra_database_toml: str = ""):
        """`extra_server_toml` / `extra_limits_toml` / `extra_database_toml`: more keys of
        [server] / [limits] / [database] (e.g. 'server_id = 1', in effect for the import too);
        `extra_toml`: more top-level tables
        (e.g. a [tls] section), written at the end of numadir.toml. `listen`: the listen URLs
        (each printed back with its port: see `ports`). `workers`: server.workers (one
        listener). `import_args`: more options of `numadir import` (its standard error is kept
        in `import_stderr`)."""
        self.numadir = os.path.abspath(numadir)
        self.gen_users = gen_users
        self.users = users
        self.extra_ldif = extra_ldif
        self.size_limit = size_limit
        self.time_limit = time_limit
        self.keep = keep
        self.extra_server_toml = extra_server_toml
        self.listen = list(listen)
        self.extra_toml = extra_toml
        self.extra_limits_toml = extra_limits_toml
        self.extra_database_toml = extra_database_toml
        self.workers = workers
        self.import_args = list(import_args)
        self.import_stderr = ""
        self.suffix = SUFFIX
        self.root_dn = ROOT_DN
        self.root_pw = ROOT_PW
        self.process = None
        self.port = None  # The first ldap:// listener's port (see `url`).
        # Every URL from a "listening on" line, in the order printed, and scheme -> its first
        # port ({"ldap": 38921, "ldaps": 40113}).
        self.listening_urls = []
        self.ports = {}
        self.ldaps_port = None
        self.ldaps_url = None
        self.ldapi_urls = []  # ldapi:// URLs as printed (percent-encoded).
        self.dir = None
        self.stdout_lines = []

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="numadir-it-")
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
                status = self.stop()
                if exc_type is None and status != 0:
                    raise CheckFailed(f"numadir serve exited {status} after SIGTERM, expected 0;"
                                      f" stderr: {self.stderr_text()[-2000:]}")
                if exc_type is None:
                    print("  ok: numadir serve stopped on SIGTERM with exit status 0", flush=True)
            elif self.process is not None and exc_type is None:
                raise CheckFailed(f"numadir serve died during the test with status "
                                  f"{self.process.returncode}; stderr: "
                                  f"{self.stderr_text()[-2000:]}")
        finally:
            self._kill()
            self._cleanup()
        return False

    def _prepare(self):
        rootpw = subprocess.run([self.numadir, "passwd", "-s", self.root_pw], capture_output=True,
                                text=True, timeout=60)
        if rootpw.returncode != 0 or not rootpw.stdout.startswith("{"):
            fail(f"numadir passwd -s failed ({rootpw.returncode}): {rootpw.stderr}")
        self.config = os.path.join(self.dir, "numadir.toml")
        with open(self.config, "w") as stream:
            stream.write(f"""[database]
path = "{self.dir}/db"
suffix = "{SUFFIX}"
map_size = "1GiB"
durability = "nosync"
indexes = ["objectClass eq", "uid eq,pres", "cn eq,sub", "mail eq"]
{self.extra_database_toml}
[server]
listen = [{", ".join('"' + url + '"' for url in self.listen)}]
rootdn = "{ROOT_DN}"
rootpw = "{rootpw.stdout.strip()}"
listeners = 1
workers = {self.workers}
{self.extra_server_toml}
[limits]
size_limit = {self.size_limit}
time_limit = {self.time_limit}
{self.extra_limits_toml}
{self.extra_toml}
""")
        ldif_path = os.path.join(self.dir, "data.ldif")
        with open(ldif_path, "w") as stream:
            generated = subprocess.run(["/usr/bin/python3", self.gen_users, "--users",
                                        str(self.users), "--suffix", SUFFIX],
                                       stdout=stream, stderr=subprocess.PIPE, text=True,
                                       timeout=120)
            if generated.returncode != 0:
                fail(f"gen_users.py failed: {generated.stderr}")
            if self.extra_ldif:
                stream.write("\n" + self.extra_ldif.strip("\n") + "\n\n")
        imported = subprocess.run([self.numadir, "import", "-c", self.config, "--no-progress",
                                   *self.import_args, ldif_path], capture_output=True, text=True,
                                  timeout=300)
        self.import_stderr = imported.stderr
        if imported.returncode != 0:
            fail(f"numadir import failed ({imported.returncode}): {imported.stderr}"
                 f"{imported.stdout}")

    def _start(self):
        self.stderr_path = os.path.join(self.dir, "serve.stderr")
        self.stderr_file = open(self.stderr_path, "wb")
        self.process = subprocess.Popen(
            [self.numadir, "serve", "-c", self.config, "--pidfile",
             os.path.join(self.dir, "numadir.pid")],
            stdout=subprocess.PIPE, stderr=self.stderr_file, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        buffer = b""
        fd = self.process.stdout.fileno()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                fail(f"numadir serve printed no 'listening on' line within {STARTUP_TIMEOUT_S}s;"
                     f" stdout so far: {buffer!r}; stderr: {self.stderr_text()[-2000:]}")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                self.process.wait(timeout=10)
                fail(f"numadir serve exited ({self.process.returncode}) before listening; "
                     f"stdout: {buffer!r}; stderr: {self.stderr_text()[-2000:]}")
            buffer += chunk
            # One line per listen URL; wait for all of them (complete lines only).
            complete = buffer[:buffer.rfind(b"\n") + 1]
            found = re.findall(rb"listening on (ldaps?)://(\[[0-9a-fA-F:.]*\]|[^:/\s]*):(\d+)",
                               complete)
            local = re.findall(rb"listening on (ldapi://\S+)", complete)
            if len(found) + len(local) >= len(self.listen):
                break
        # ldapi:// URLs as printed (percent-encoded, as ldap-utils' -H takes them).
        self.ldapi_urls = [url.decode() for url in local]
        for scheme, host, port in found:
            url = f"{scheme.decode()}://{host.decode()}:{int(port)}"
            self.listening_urls.append(url)
            self.ports.setdefault(scheme.decode(), int(port))
            if int(port) == 0:
                fail(f"numadir serve reported port 0, not the port it bound: {url}")
        self.port = self.ports.get("ldap")
        self.ldaps_port = self.ports.get("ldaps")
        self.ldaps_url = next((u for u in self.listening_urls if u.startswith("ldaps:")), None)
        self.stdout_lines = buffer.decode(errors="replace").splitlines()
        # Keep draining stdout so the server can never block on a full pipe.
        import threading
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = next((u for u in self.listening_urls if u.startswith("ldap:")),
                        self.ldaps_url)
        print(f"  numadir serve: pid {self.process.pid}, {', '.join(self.listening_urls)}, "
              f"db in {self.dir}", flush=True)

    def _drain(self):
        try:
            for line in self.process.stdout:
                self.stdout_lines.append(line.decode(errors="replace").rstrip("\n"))
        except (OSError, ValueError):
            pass

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise CheckFailed(f"numadir serve did not stop within {STOP_TIMEOUT_S}s of SIGTERM")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stderr_text(self) -> str:
        try:
            with open(self.stderr_path, "rb") as stream:
                return stream.read().decode(errors="replace")
        except OSError:
            return ""

    def _kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if getattr(self, "stderr_file", None) is not None:
            self.stderr_file.close()

    def _cleanup(self):
        if self.dir is None:
            return
        if self.keep:
            print(f"  kept {self.dir}", flush=True)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- clients --------------------------------------------------------------------------------
    def ldap(self, tool: str, *args, input_text: str = None, timeout: float = 60, url: str = None,
             env: dict = None):
        """Runs an ldap-utils tool against this server (-H added: `url`, by default the ldap://
        one). Returns (rc, stdout, stderr). `env`: the whole environment instead of ours with
        LDAPNOINIT (which also makes libldap ignore LDAPTLS_* variables)."""
        command = [shutil.which(tool) or f"/usr/bin/{tool}", "-H", url or self.url, *args]
        if env is None:
            env = dict(os.environ)
            env["LDAPNOINIT"] = "1"  # Ignore ~/.ldaprc and /etc/ldap/ldap.conf.
        result = subprocess.run(command, input=input_text, capture_output=True, text=True,
                                timeout=timeout, env=env)
        shown = [tool, *(["-H", url] if url else []), *args]
        print(f"  $ {' '.join(_quote(a) for a in shown)} -> rc {result.returncode}", flush=True)
        return result.returncode, result.stdout, result.stderr

    def ldap_root(self, tool: str, *args, **kwargs):
        return self.ldap(tool, "-x", "-D", ROOT_DN, "-w", ROOT_PW, *args, **kwargs)

    def connect_raw(self, timeout: float = 10, port: int = None) -> socket.socket:
        return socket.create_connection(("127.0.0.1", port or self.port), timeout=timeout)


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[-\w=,.:/@*+()&|!<>~]+", arg or "x") and arg else repr(arg)


# -- LDIF output of ldapsearch -------------------------------------------------------------------
def parse_ldif(text: str):
    """Parses ldapsearch -LLL output into a list of (dn, {attr_lower: [values]}). Handles folded
    lines and base64 values. Lines starting with '#' are ignored."""
    import base64
    entries = []
    lines = []
    for line in text.splitlines():
        if line.startswith(" ") and lines:
            lines[-1] += line[1:]
        else:
            lines.append(line)
    current = None
    for line in lines:
        if line.startswith("#"):
            continue
        if not line.strip():
            if current is not None:
                entries.append(current)
                current = None
            continue
        if ":" not in line:
            # ldapsearch -A prints "attr:" with no value, which still has a colon; a bare word is
            # unexpected but keep it as a type with no value.
            name, value = line, None
        elif "::" in line and line.index("::") == line.index(":"):
            name, value = line.split("::", 1)
            value = base64.b64decode(value.strip()).decode(errors="replace")
        else:
            name, value = line.split(":", 1)
            value = value[1:] if value.startswith(" ") else value
        if name.lower() == "dn" and current is None:
            current = (value, {})
            continue
        if current is None:
            continue
        current[1].setdefault(name.lower(), [])
        if value is not None:
            current[1][name.lower()].append(value)
    if current is not None:
        entries.append(current)
    return entries


# -- BER, for raw-socket checks --------------------------------------------------------------------
def rss_kib(pid: int) -> int:
    """The resident set size of process `pid` (VmRSS), in KiB."""
    with open(f"/proc/{pid}/status") as stream:
        for line in stream:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def ber_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def ber(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + ber_length(len(content)) + content


def ber_int(tag: int, value: int) -> bytes:
    body = value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True)
    return ber(tag, body)


def ber_read_tlv(data: bytes, offset: int = 0):
    """Returns (tag, content, next_offset) or None if `data` holds no complete TLV there."""
    if len(data) < offset + 2:
        return None
    tag = data[offset]
    first = data[offset + 1]
    position = offset + 2
    if first < 0x80:
        length = first
    else:
        count = first & 0x7F
        if len(data) < position + count:
            return None
        length = int.from_bytes(data[position:position + count], "big")
        position += count
    if len(data) < position + length:
        return None
    return tag, data[position:position + length], position + length


def ber_children(content: bytes):
    children = []
    offset = 0
    while offset < len(content):
        tlv = ber_read_tlv(content, offset)
        if tlv is None:
            raise ValueError("truncated BER")
        children.append((tlv[0], tlv[1]))
        offset = tlv[2]
    return children


def read_ldap_message(sock: socket.socket, buffer: bytearray, timeout: float = 10):
    """Reads one LDAPMessage; returns (message_id, op_tag, op_content, raw) or None at EOF."""
    deadline = time.monotonic() + timeout
    while True:
        tlv = ber_read_tlv(bytes(buffer))
        if tlv is not None:
            raw = bytes(buffer[:tlv[2]])
            del buffer[:tlv[2]]
            children = ber_children(tlv[1])
            message_id = int.from_bytes(children[0][1], "big", signed=True)
            return message_id, children[1][0], children[1][1], raw
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no complete LDAPMessage")
        sock.settimeout(remaining)
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buffer.extend(chunk)


def wait_for_close(sock: socket.socket, timeout: float = 10) -> bool:
    """Reads until EOF (True) or timeout (False); a connection reset counts as closed."""
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
        except ConnectionResetError:
            return True


NOTICE_OF_DISCONNECTION = "1.3.6.1.4.1.1466.20036"


def search_request(message_id: int, base: str, scope: int = 2, filter_present: str = "objectClass",
                   attributes=()) -> bytes:
    """An LDAPMessage with a SearchRequest (derefAliases never, no limits, present filter)."""
    body = (ber(0x04, base.encode()) + ber(0x0A, bytes([scope])) + ber(0x0A, b"\x00") +
            ber_int(0x02, 0) + ber_int(0x02, 0) + ber(0x01, b"\x00") +
            ber(0x87, filter_present.encode()) +
            ber(0x30, b"".join(ber(0x04, a.encode()) for a in attributes)))
    return ber(0x30, ber_int(0x02, message_id) + ber(0x63, body))


def parse_extended_response(content: bytes):
    """Returns (resultCode, matchedDN, diagnosticMessage, responseName or None)."""
    children = ber_children(content)
    result_code = int.from_bytes(children[0][1], "big")
    name = None
    for tag, value in children[3:]:
        if tag == 0x8A:
            name = value.decode()
    return result_code, children[1][1].decode(), children[2][1].decode(errors="replace"), name


def serve_until_listening(numadir, config, timeout=60):
    """Starts `numadir serve -c config`, waits for its "listening" line, stops it with SIGTERM.
    Returns: (exit status, stderr); fails the test if it never listens."""
    process = subprocess.Popen([numadir, "serve", "-c", config], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    listening, _ = read_until_line(process, lambda line: "listening on" in line, timeout)
    if listening is None:
        process.kill()
        _, err = process.communicate(timeout=timeout)
        fail(f"serve did not listen (status {process.returncode}): {err!r}")
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=timeout)
    return process.returncode, err
