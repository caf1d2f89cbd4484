#!/usr/bin/python3
"""What the tests of a replication provider (RFC 4533) share: the providers (numadir serve with
[replication.provider], or slapd + syncprov) on a port kept across a kill -9 and restart, a slapd
consumer (syncrepl in its slapd.conf), the full comparison of two servers' entries, and a raw
sync client (hand-made BER for the Sync Request control, its answers parsed).

  with NumadirProvider(numadir, gen, users, sessionlog, queue_changes) as p, \\
          SlapdConsumer(work, p.url) as s:
      converged(p, s, "the initial refresh")

Standard library + python3-ldap (imported where used).
"""
import os
import socket
import struct
import subprocess
import time

from numadir_harness import (CheckFailed, NumadirServer, ber, ber_children, ber_int,
                             ber_read_tlv, check, fail, ssha, wait_for)
import slapd_harness

SUFFIX = "dc=example,dc=com"
PEOPLE = f"ou=people,{SUFFIX}"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PW = "secret"

# What each server computes on read (not replicated, so not compared): entryDN,
# hasSubordinates, subschemaSubentry; numSubordinates (numadir computes it, slapd's back-mdb has
# none); contextCSN is compared separately (the suffix's, provider against consumer).
COMPUTED = {"entrydn", "hassubordinates", "subschemasubentry", "numsubordinates", "contextcsn"}

SYNC_REQUEST = "1.3.6.1.4.1.4203.1.9.1.1"
SYNC_STATE = "1.3.6.1.4.1.4203.1.9.1.2"
SYNC_DONE = "1.3.6.1.4.1.4203.1.9.1.3"
SYNC_INFO = "1.3.6.1.4.1.4203.1.9.1.4"
REFRESH_ONLY, REFRESH_AND_PERSIST = 1, 3
# numadir's server_id, in every CSN and cookie it makes (sid=001): not 0, which a provider could
# get right by leaving the sid out. slapd's provider keeps its default serverID 0: with serverID 1
# slapd 2.5.13's own consumer, resuming from a cookie the session log covers, does not delete the
# entries its provider names in syncIdSets (its -d sync log: syncrepl_del_nonpresent, no delete):
# a slapd-to-slapd fault the reference run must not have.
NUMADIR_SERVER_ID = 1
SLAPD_PROVIDER_INDEXES = ("objectClass eq", "uid eq", "entryUUID eq", "entryCSN eq")


def anon_rss_kib(pid: int) -> int:
    """The process's anonymous resident memory (RssAnon), in KiB: what a queue of changes
    grows; LMDB's file-backed map (RssFile) is left out."""
    with open(f"/proc/{pid}/status") as stream:
        for line in stream:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    fail(f"/proc/{pid}/status has no RssAnon")


def generate(gen: str, users: int, path: str):
    with open(path, "w") as stream:
        subprocess.run(["/usr/bin/python3", gen, "--users", str(users), "--suffix", SUFFIX],
                       stdout=stream, check=True, timeout=120)


# -- the servers ---------------------------------------------------------------------------------
class FixedPortSlapd(slapd_harness.SlapdServer):
    """slapd on a port chosen once, so that a consumer's syncrepl line still names it after a
    kill -9 and restart; `start_again()` runs it again on the same database and config."""

    def __init__(self, ldif_path: str, port: int, **options):
        super().__init__(ldif_path, **options)
        self.fixed_port = port

    def _start(self):
        self.stderr_path = os.path.join(self.dir, "slapd.stderr")
        self.stderr_file = open(self.stderr_path, "ab")
        # The port was free when chosen; if another test took it before the first start, slapd
        # exits and another is chosen (a restart keeps its port: consumers name it).
        for attempt in range(1 if self.process is not None else 5):
            if attempt:
                self.fixed_port = slapd_harness.free_port()
            self.port = self.fixed_port
            self.url = f"ldap://127.0.0.1:{self.port}"
            self.process = subprocess.Popen(
                [slapd_harness.SLAPD, "-h", f"{self.url}/", "-f", self.config, "-d", "0"],
                stdout=subprocess.DEVNULL, stderr=self.stderr_file, stdin=subprocess.DEVNULL)
            if self._wait_listening(self.port) and self._answers():
                print(f"  slapd: pid {self.process.pid}, {self.url}, db in {self.dir}",
                      flush=True)
                return
            self._kill()
            self.stderr_file = open(self.stderr_path, "ab")
        fail(f"slapd did not start on port {self.port}; stderr: {self.stderr_text()}")

    def _answers(self) -> bool:
        """Whether what listens on the port is this slapd: it answers an anonymous bind."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                sock.sendall(ber(0x30, ber_int(0x02, 1) + ber(0x60, ber_int(0x02, 3) +
                                                              ber(0x04, b"") + ber(0x80, b""))))
                answer = sock.recv(64)
        except OSError:
            return False
        return answer[:1] == b"\x30" and self.process.poll() is None

    def start_again(self):
        self.stderr_file.close()
        self._start()

    def kill9(self):
        self.process.kill()
        self.process.wait(timeout=30)


class SlapdProvider(FixedPortSlapd):
    """slapd + syncprov (back-mdb, dbnosync like numadir's test config: a kill -9 loses nothing
    written, only a host crash would)."""
    name = "slapd"

    def __init__(self, ldif_path: str, sessionlog: int, queue_changes: int,
                 replicator: bool = False, write_timeout_s: int = 0):
        """`write_timeout_s`: slapd's writetimeout (0: none, its default)."""
        del queue_changes  # syncprov has no such bound.
        conf = "overlay syncprov\nsyncprov-checkpoint 100 1\n"
        if sessionlog:
            conf += f"syncprov-sessionlog {sessionlog}\n"
        super().__init__(ldif_path, slapd_harness.free_port(), indexes=SLAPD_PROVIDER_INDEXES,
                         extra_conf=f"writetimeout {write_timeout_s}\nmoduleload syncprov\n",
                         access=SLAPD_REPLICATOR_ACCESS if replicator else "",
                         database_conf="dbnosync\n" + conf)

    def restart(self):
        self.start_again()


class NumadirProvider(NumadirServer):
    """numadir serve with [replication.provider] enabled, on a port chosen once."""
    name = "numadir"

    def __init__(self, numadir: str, gen: str, users: int, sessionlog: int,
                 queue_changes: int, replicator: bool = False, write_timeout_s: int = 60):
        """`write_timeout_s`: limits.write_timeout (60 s, numadir's default)."""
        port = slapd_harness.free_port()
        # numadir import loads gen_users.py's output for `users`: the LDIF slapadd loads for
        # the slapd provider (the same seed, so the same entries and passwords).
        super().__init__(numadir, gen, users=users, listen=(f"ldap://127.0.0.1:{port}",),
                         extra_ldif=REPLICATOR_LDIF if replicator else "",
                         # The server's size limit stays: a sync search is not bound by it.
                         size_limit=500,
                         extra_limits_toml=f"write_timeout = {write_timeout_s}",
                         extra_database_toml=f"server_id = {NUMADIR_SERVER_ID}", extra_toml=f"""
[replication.provider]
enabled = true
sessionlog = {sessionlog}
queue_changes = {queue_changes}
{NUMADIR_REPLICATOR_ACCESS if replicator else ""}
""")

    def _start(self):
        if self.process is not None:  # A restart keeps its port: consumers name it.
            return super()._start()
        # The port was free when chosen; if another test took it first, serve exits before
        # listening and another is chosen.
        for attempt in range(5):
            try:
                return super()._start()
            except CheckFailed:
                if attempt == 4 or self.process.poll() is None:
                    raise
            self.stderr_file.close()
            old = self.listen[0]
            self.listen = [f"ldap://127.0.0.1:{slapd_harness.free_port()}"]
            with open(self.config) as stream:
                text = stream.read()
            with open(self.config, "w") as stream:
                stream.write(text.replace(f'"{old}"', f'"{self.listen[0]}"'))

    def kill9(self):
        self.process.kill()
        self.process.wait(timeout=30)

    def restart(self):
        self.stderr_file.close()
        os.replace(self.stderr_path, self.stderr_path + f".{time.monotonic_ns()}")
        self.listening_urls = []
        self.ports = {}
        self._start()


class SlapdConsumer(FixedPortSlapd):
    """slapd with its own empty back-mdb database and a syncrepl line naming `provider_url`."""

    def __init__(self, work: str, provider_url: str, kind: str = "refreshAndPersist",
                 binddn: str = ROOT_DN, credentials: str = ROOT_PW):
        empty = os.path.join(work, "empty.ldif")
        open(empty, "w").close()
        interval = " interval=00:00:00:01" if kind == "refreshOnly" else ""
        syncrepl = (f'syncrepl rid=001 provider={provider_url} type={kind}{interval} '
                    f'searchbase="{SUFFIX}" scope=sub attrs="*,+" bindmethod=simple '
                    f'binddn="{binddn}" credentials={credentials} retry="1 +" timeout=1 '
                    f'network-timeout=1\nupdateref {provider_url}\n')
        # pw-sha2: numadir hashes new passwords with {SSHA512} by default
        # (passwords.default_scheme), which slapd checks only with this module.
        super().__init__(empty, slapd_harness.free_port(),
                         indexes=("objectClass eq", "uid eq", "entryUUID eq", "entryCSN eq"),
                         extra_conf="moduleload pw-sha2\n",
                         database_conf="dbnosync\n" + syncrepl)

    def stop_now(self):
        self.stop()


# A replication identity that is not the rootdn, and what it needs on each provider: read on
# every entry and attribute (userPassword and the operational ones included) and no size limit
# on its searches. numadir's sync searches take only the consumer's own size limit (slapd: a
# limits line for the replicator).
REPLICATOR = f"cn=replicator,{SUFFIX}"
REPLICATOR_PW = "replicate-me"
REPLICATOR_LDIF = f"""dn: {REPLICATOR}
objectClass: organizationalRole
objectClass: simpleSecurityObject
cn: replicator
userPassword: {ssha(REPLICATOR_PW)}
"""
SLAPD_REPLICATOR_ACCESS = f"""limits dn.exact="{REPLICATOR}" size=unlimited time=unlimited
access to attrs=userPassword by dn.exact="{REPLICATOR}" read by self write by anonymous auth
  by * none
access to * by dn.exact="{REPLICATOR}" read by users read by * none
"""
NUMADIR_REPLICATOR_ACCESS = f"""
[[access]]
attrs = ["userPassword"]
by = [{{ dn = "{REPLICATOR}", access = "read" }}, {{ who = "self", access = "write" }},
      {{ who = "anonymous", access = "auth" }}]

[[access]]
by = [{{ dn = "{REPLICATOR}", access = "read" }}, {{ who = "users", access = "read" }}]
"""


# -- reading and comparing -----------------------------------------------------------------------
def connect(url: str):
    import ldap
    conn = ldap.initialize(url)
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    conn.set_option(ldap.OPT_TIMEOUT, 120)
    conn.simple_bind_s(ROOT_DN, ROOT_PW)
    return conn


def dump(url: str) -> dict:
    """{lowercased DN: {lowercased attribute: sorted values}} of every entry, "*" and "+", less
    COMPUTED; {} when the server holds nothing (yet)."""
    import ldap
    conn = connect(url)
    try:
        found = conn.search_ext_s(SUFFIX, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["*", "+"])
    except ldap.NO_SUCH_OBJECT:
        return {}
    finally:
        conn.unbind_s()
    entries = {}
    for dn, attributes in found:
        if dn is None:
            continue
        kept = {}
        for name, values in attributes.items():
            if name.lower() not in COMPUTED:
                kept.setdefault(name.lower(), []).extend(values)
        entries[dn.lower()] = {name: sorted(values) for name, values in kept.items()}
    return entries


def context_csn(url: str) -> list:
    """The suffix entry's contextCSN values, sorted ([] if none)."""
    import ldap
    conn = connect(url)
    try:
        found = conn.search_ext_s(SUFFIX, ldap.SCOPE_BASE, "(objectClass=*)", ["contextCSN"])
    except ldap.NO_SUCH_OBJECT:
        return []
    finally:
        conn.unbind_s()
    for _, attributes in found:
        for name, values in attributes.items():
            if name.lower() == "contextcsn":
                return sorted(v.decode() for v in values)
    return []


def difference(expected: dict, observed: dict) -> str:
    missing = sorted(set(expected) - set(observed))
    extra = sorted(set(observed) - set(expected))
    detail = f"missing on the consumer {missing[:3]} ({len(missing)}), " \
             f"extra {extra[:3]} ({len(extra)})"
    differing = [dn for dn in expected if dn in observed and expected[dn] != observed[dn]]
    for dn in differing[:2]:
        keys = sorted(set(expected[dn]) | set(observed[dn]))
        detail += f"; {dn} ({len(differing)} differ): " + ", ".join(
            f"{k}: provider {expected[dn].get(k)} consumer {observed[dn].get(k)}"
            for k in keys if expected[dn].get(k) != observed[dn].get(k))
    return detail


def newest_entry_csn(entries: dict) -> str:
    return max((v.decode() for e in entries.values() for v in e.get("entrycsn", [])),
               default="")


def converged(p, consumer, what: str, timeout: float = 60) -> dict:
    """Waits until the consumer equals the provider (entries, attributes, values; then the
    contextCSN, which must not be older than the provider's newest entryCSN); fails with the
    first differences. The provider takes no writes meanwhile. Returns: the provider's dump."""
    expected = dump(p.url)
    observed = {}

    def same():
        nonlocal observed
        observed = dump(consumer.url)
        return observed == expected
    started = time.monotonic()
    if not wait_for(same, timeout=timeout, interval=0.1):
        fail(f"{what}: the consumer does not hold the provider's entries after {timeout:.0f} s "
             f"({len(expected)} on the provider, {len(observed)} on the consumer): "
             f"{difference(expected, observed)}; consumer stderr: "
             f"{consumer.stderr_text()[-1500:]}")
    provider_csn = context_csn(p.url)
    newest = newest_entry_csn(expected)
    check(provider_csn != [] and max(provider_csn) >= newest,
          f"{what}: the provider's contextCSN is not older than its newest entryCSN",
          f"contextCSN {provider_csn}, newest entryCSN {newest}")
    consumer_csn = []

    def same_csn():
        nonlocal consumer_csn
        consumer_csn = context_csn(consumer.url)
        return consumer_csn == provider_csn
    if not wait_for(same_csn, timeout=10, interval=0.1):
        fail(f"{what}: contextCSN: provider {provider_csn}, consumer {consumer_csn}")
    print(f"  ok: {what}: the consumer equals the provider ({len(expected)} entries, contextCSN "
          f"{provider_csn}) after {time.monotonic() - started:.1f} s", flush=True)
    return expected


# -- step 6: bad input on raw sockets -------------------------------------------------------------
def ldap_string(tag: int, text) -> bytes:
    return ber(tag, text.encode() if isinstance(text, str) else text)


def sync_request_value(mode: int, cookie=None, reload_hint: bool = False) -> bytes:
    body = ber(0x0A, bytes([mode]))
    if cookie is not None:
        body += ldap_string(0x04, cookie)
    if reload_hint:
        body += ber(0x01, b"\xff")
    return ber(0x30, body)


def control(oid: str, critical: bool, value) -> bytes:
    body = ldap_string(0x04, oid)
    if critical:
        body += ber(0x01, b"\xff")
    if value is not None:
        body += ldap_string(0x04, value)
    return ber(0x30, body)


class RawClient:
    """One LDAP connection on a socket: hand-made requests, responses parsed as they come."""

    def __init__(self, port: int, receive_buffer: int = 0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer:
            # Before connect, so the window is small from the start.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(30)
        self.sock.connect(("127.0.0.1", port))
        self.buffer = bytearray()
        self.next_id = 1

    def send(self, op: bytes, controls: bytes = b"") -> int:
        message_id = self.next_id
        self.next_id += 1
        body = ber_int(0x02, message_id) + op
        if controls:
            body += ber(0xA0, controls)
        self.sock.sendall(ber(0x30, body))
        return message_id

    def read(self, timeout: float = 30):
        """Returns (message_id, op_tag, op_content, {control oid: value}) or None at EOF."""
        deadline = time.monotonic() + timeout
        while True:
            tlv = ber_read_tlv(bytes(self.buffer))
            if tlv is not None:
                del self.buffer[:tlv[2]]
                children = ber_children(tlv[1])
                controls = {}
                for tag, content in children[2:]:
                    if tag == 0xA0:
                        for _, one in ber_children(content):
                            parts = ber_children(one)
                            value = next((v for t, v in parts[1:] if t == 0x04), None)
                            controls[parts[0][1].decode()] = value
                message_id = int.from_bytes(children[0][1], "big", signed=True)
                return message_id, children[1][0], children[1][1], controls
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no complete LDAPMessage")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            self.buffer.extend(chunk)

    def bind(self, dn: str = ROOT_DN, password: str = ROOT_PW) -> int:
        self.send(ber(0x60, ber_int(0x02, 3) + ldap_string(0x04, dn) +
                      ldap_string(0x80, password)))
        message = self.read()
        if message is None or message[1] != 0x61:
            fail(f"raw bind: no BindResponse ({message})")
        return result_code(message[2])

    def sync_search(self, controls: bytes, base: str = SUFFIX) -> int:
        # SearchRequest: base, subtree, neverDerefAliases, no limits, typesOnly false,
        # (objectClass=*), attributes "*" "+".
        op = ber(0x63, ldap_string(0x04, base) + ber(0x0A, b"\x02") + ber(0x0A, b"\x00") +
                 ber_int(0x02, 0) + ber_int(0x02, 0) + ber(0x01, b"\x00") +
                 ldap_string(0x87, "objectClass") +
                 ber(0x30, ldap_string(0x04, "*") + ldap_string(0x04, "+")))
        return self.send(op, controls)

    def close(self, reset: bool = False):
        if reset:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()


def result_code(content: bytes) -> int:
    return int.from_bytes(ber_children(content)[0][1], "big")


def diagnostic(content: bytes) -> str:
    return ber_children(content)[2][1].decode(errors="replace")


class SyncOutcome:
    """What a sync search got back."""

    def __init__(self):
        self.entries = 0
        self.states = []  # (Sync State: 0 present, 1 add, 2 modify, 3 delete; entryUUID bytes)
        self.id_sets = []  # (refreshDeletes, [entryUUID bytes]) of each Sync Info syncIdSet.
        self.infos = []  # The choice tag of each Sync Info message.
        self.code = None  # SearchResultDone's resultCode (None: the connection closed first).
        self.text = ""
        self.done_cookie = None
        self.done_refresh_deletes = False
        self.closed = False


def sync_state(value: bytes):
    """(state, entryUUID) of a Sync State control value."""
    parts = ber_children(ber_read_tlv(value)[1])
    return int.from_bytes(parts[0][1], "big"), parts[1][1]


def sync_id_set(content: bytes):
    """(refreshDeletes, [entryUUID]) of a syncIdSet's content."""
    refresh_deletes, uuids = False, []
    for tag, value in ber_children(content):
        if tag == 0x01:
            refresh_deletes = value != b"\x00"
        elif tag == 0x31:
            uuids = [uuid for _, uuid in ber_children(value)]
    return refresh_deletes, uuids


def run_sync_search(port: int, value, critical: bool = True,
                    timeout: float = 60) -> SyncOutcome:
    """A sync search by the rootdn with the Sync Request control value `value` (bytes, or None
    for no value); reads until SearchResultDone or EOF."""
    client = RawClient(port)
    try:
        code = client.bind()
        if code != 0:
            fail(f"raw bind as the rootdn: result {code}")
        message_id = client.sync_search(control(SYNC_REQUEST, critical, value))
        outcome = SyncOutcome()
        deadline = time.monotonic() + timeout
        while True:
            message = client.read(timeout=max(0.1, deadline - time.monotonic()))
            if message is None:
                outcome.closed = True
                return outcome
            got_id, tag, content, controls = message
            if got_id == 0:  # A Notice of Disconnection.
                outcome.closed = True
                outcome.code = result_code(content)
                outcome.text = diagnostic(content)
                return outcome
            if got_id != message_id:
                continue
            if tag == 0x64:
                outcome.entries += 1
                if SYNC_STATE in controls:
                    outcome.states.append(sync_state(controls[SYNC_STATE]))
            elif tag == 0x79:
                parts = dict(ber_children(content))
                if parts.get(0x80, b"").decode() == SYNC_INFO and 0x81 in parts:
                    info_tag, info = ber_children(parts[0x81])[0][:2]
                    outcome.infos.append(info_tag)
                    if info_tag == 0xA3:
                        outcome.id_sets.append(sync_id_set(info))
            elif tag == 0x65:
                outcome.code = result_code(content)
                outcome.text = diagnostic(content)
                done = controls.get(SYNC_DONE)
                if done:
                    for part_tag, part in ber_children(ber_read_tlv(done)[1]):
                        if part_tag == 0x04:
                            outcome.done_cookie = part.decode(errors="replace")
                        elif part_tag == 0x01:
                            outcome.done_refresh_deletes = part != b"\x00"
                return outcome
    finally:
        client.close()


def uuid_bytes(entry_uuid: bytes) -> bytes:
    """An entryUUID value ("c6ef24d1-414f-...") as the 16 octets of a Sync State / syncIdSet."""
    return bytes.fromhex(entry_uuid.decode().replace("-", ""))


def message_cookie(message) -> "str | None":
    """The cookie a sync search's message carries (Sync State, Sync Info or Sync Done), if
    any."""
    _, tag, content, controls = message
    try:
        if tag == 0x64 and SYNC_STATE in controls:
            parts = ber_children(ber_read_tlv(controls[SYNC_STATE])[1])
            return parts[2][1].decode() if len(parts) > 2 else None
        if tag == 0x65 and controls.get(SYNC_DONE):
            return next((v.decode() for t, v in ber_children(ber_read_tlv(
                controls[SYNC_DONE])[1]) if t == 0x04), None)
        if tag == 0x79:
            parts = dict(ber_children(content))
            if 0x81 not in parts:
                return None
            info_tag, info = ber_children(parts[0x81])[0][:2]
            if info_tag == 0x80:
                return info.decode()
            return next((v.decode() for t, v in ber_children(info) if t == 0x04), None)
    except (ValueError, IndexError):
        fail(f"a sync message that does not parse: tag {tag:#x}")
    return None
