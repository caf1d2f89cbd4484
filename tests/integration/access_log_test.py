#!/usr/bin/python3
"""numadir's access log ([log] level = "stats") against the real server and real clients: every
request, result, abandon and unbind of many concurrent python-ldap connections is in the log once,
numbered op=0,1,2,... per connection in the order the server read them and ordered by time; the
same in JSON (format = "json"); nothing lost or repeated across log rotations (rename the file,
SIGHUP); StartTLS logged as an EXT request with its result, the count going on after it; and
every request the server read logged even when it never ran: requests pipelined behind a bind
and dropped by the unbind after them, an unbind that arrives with the TLS close_notify.

  access_log_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Each client connection is matched with its log conn= by its local port (the ACCEPT line's peer)
and what it sent is compared with what the log says the server read, request by request. The
server is stopped with SIGTERM before its log is read: it writes everything it holds first.
Exits 0 when every check passes; otherwise 1 with the failing checks (observed vs expected).
"""
import datetime
import json
import os
import random
import re
import shutil
import signal
import socket
import ssl
import sys
import tempfile
import threading
import time

import ldap  # python3-ldap
import ldap.extop
import ldap.modlist
from ldap3 import NONE, SUBTREE, Connection, Server, Tls

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, NumadirServer, ber, ber_children, ber_int, ber_read_tlv, check,
    check_equal, fail, parse_args, run_checks, search_request, user_dn, user_pw, wait_for,
    wait_for_close)
import tls_harness as T  # noqa: E402
from tls_harness import (  # noqa: E402
    STARTTLS_OID, WHOAMI_OID, client_context, exchange, extended_request, simple_bind_request,
    start_tls, tls_config, whoami_raw)

USERS = 1000
ARGS = None
WORK = None  # A temporary directory for the logs: they outlive their servers' directories.

# The stress: THREADS connections at once, each ROUNDS rounds of about 15 requests (every kind).
THREADS = 8
ROUNDS = 60
UNBIND_CHANCE = 0.3  # After a round, a client unbinds and reconnects this often.
# Within a connection, a line's time may be this much earlier than the line before it. The log
# orders what it formats by time, and a record written after another (a result after its
# request, the next request after it) never comes out before it; only unrelated records of one
# connection (an abandoned search's end and the requests read meanwhile) may be reordered, by
# how long a thread took between reading the clock and queuing its record.
TIME_TOLERANCE_S = 0.05

# The tag of each request kind's response (0x60 | the response's protocolOp number).
RESULT_TAG = {"BIND": 97, "SRCH": 101, "MOD": 103, "ADD": 105, "DEL": 107, "MODRDN": 109,
              "CMP": 111, "EXT": 120}
NO_RESPONSE = ("ABANDON", "UNBIND")
REQUEST_TYPES = set(RESULT_TAG) | set(NO_RESPONSE)


def log_toml(path: str, log_format: str = "text") -> str:
    return f'[log]\nlevel = "stats"\nfile = "{path}"\nformat = "{log_format}"\n'


def server(log_path: str, log_format: str = "text", **options) -> NumadirServer:
    options.setdefault("extra_toml", "")
    options["extra_toml"] += "\n" + log_toml(log_path, log_format)
    return NumadirServer(ARGS.numadir, ARGS.gen, users=USERS, keep=ARGS.keep,
                         size_limit=2000, **options)


# -- what the clients sent -----------------------------------------------------------------------
class Op:
    """A request a client sent: its kind (the log's word for it), message ID (None when the
    client library does not say), the fields its request line must have, the result code the
    client got (None: no response, or none awaited), and whether it is a search the client
    abandoned (then the log may show its result or ABANDONED)."""

    def __init__(self, kind: str, msgid=None, fields=None, abandoned=False):
        self.kind = kind
        self.msgid = msgid
        self.fields = fields or {}
        self.err = None
        self.abandoned = abandoned

    def __repr__(self):
        return f"{self.kind} msgid={self.msgid} {self.fields}"


class ClientConnection:
    """One connection's requests, in the order sent, and its local port (the log's peer)."""

    def __init__(self):
        self.port = None
        self.ops = []
        self.opened = time.monotonic()


def local_port_of(conn) -> int:
    with socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.getsockname()[1]


class Client(threading.Thread):
    """A python-ldap client doing every kind of operation for `rounds` rounds, reconnecting
    after an unbind. Records each connection's requests."""

    def __init__(self, url: str, index: int, rounds: int):
        super().__init__(daemon=True)
        self.url = url
        self.index = index
        self.rounds = rounds
        self.random = random.Random(index)
        self.connections = []
        self.conn = None
        self.current = None
        self.error = None
        self.sent = 0

    def run(self):
        try:
            for number in range(self.rounds):
                self.round(number)
            if self.conn is not None:
                self.unbind()
        except Exception as error:  # Reported by the check that joins the clients.
            self.error = f"{type(error).__name__}: {error}"

    # -- requests --
    def connect(self):
        self.conn = ldap.initialize(self.url, bytes_mode=False)
        self.conn.protocol_version = 3
        self.conn.set_option(ldap.OPT_REFERRALS, 0)
        self.conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
        self.conn.set_option(ldap.OPT_TIMEOUT, 30)
        self.current = ClientConnection()
        self.connections.append(self.current)

    def record(self, op: Op) -> Op:
        self.current.ops.append(op)
        self.sent += 1
        if self.current.port is None:  # python-ldap connects with its first request.
            self.current.port = local_port_of(self.conn)
        return op

    def call(self, kind: str, fields: dict, start) -> Op:
        """Sends a request (`start()` returns its message ID) and waits for its result."""
        op = self.record(Op(kind, start(), fields))
        try:
            self.conn.result3(op.msgid, all=1, timeout=30)
            op.err = 0
        except ldap.LDAPError as error:
            info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
            if "result" not in info:
                raise
            op.err = info["result"]
        return op

    def bind(self, dn: str, password: str):
        return self.call("BIND", {"dn": dn, "method": "128"},
                         lambda: self.conn.simple_bind(dn, password))

    def search(self, base: str, filter_text: str, attrs):
        return self.call("SRCH", {"base": base, "scope": "2", "filter": filter_text,
                                  "attrs": " ".join(attrs)},
                         lambda: self.conn.search_ext(base, ldap.SCOPE_SUBTREE, filter_text,
                                                      attrs))

    def unbind(self):
        self.record(Op("UNBIND"))
        self.conn.unbind_s()
        self.conn = None

    # -- a round: blocks of requests in a random order --
    def round(self, number: int):
        if self.conn is None:
            self.connect()
        blocks = [self.updates, self.searches, self.whoami, self.user_binds, self.abandon]
        self.random.shuffle(blocks)
        for block in blocks:
            block(number)
        if self.random.random() < UNBIND_CHANCE:
            self.unbind()

    def updates(self, number: int):
        """As the rootdn: adds an entry, modifies, compares, renames and deletes it."""
        self.bind(ROOT_DN, ROOT_PW)
        rdn = f"uid=al{self.index}x{number}"
        dn = f"{rdn},{PEOPLE}"
        entry = {"objectClass": [b"inetOrgPerson"], "uid": [rdn[4:].encode()],
                 "cn": [b"Access Log"], "sn": [b"Log"]}
        self.call("ADD", {"dn": dn},
                  lambda: self.conn.add_ext(dn, ldap.modlist.addModlist(entry)))
        self.call("MOD", {"dn": dn}, lambda: self.conn.modify_ext(
            dn, [(ldap.MOD_REPLACE, "description", [f"round {number}".encode()])]))
        value = self.random.choice([b"Log", b"Other"])
        self.call("CMP", {"dn": dn, "attr": "sn"},
                  lambda: self.conn.compare_ext(dn, "sn", value))
        self.call("MODRDN", {"dn": dn}, lambda: self.conn.rename(dn, f"{rdn}r"))
        self.call("DEL", {"dn": f"{rdn}r,{PEOPLE}"},
                  lambda: self.conn.delete_ext(f"{rdn}r,{PEOPLE}"))

    def searches(self, number: int):
        """One search that finds an entry, one that finds none."""
        self.search(PEOPLE, f"(uid=user{self.random.randrange(1, USERS)})", ["cn"])
        self.search(PEOPLE, f"(uid=nobody{self.index}x{number})", ["1.1"])

    def whoami(self, number: int):
        request = ldap.extop.ExtendedRequest(WHOAMI_OID, None)
        self.call("EXT", {"oid": WHOAMI_OID}, lambda: self.conn.extop(request))

    def user_binds(self, number: int):
        user = self.random.randrange(1, USERS)
        self.bind(user_dn(user), user_pw(user))
        self.bind(user_dn(user), "wrong password")

    def abandon(self, number: int):
        """A search of every entry, abandoned at once (it may be queued, running or done), then
        a bind. The bind waits for the search to end (nothing runs beside a bind) and its
        response comes after all the search sent, which python-ldap reads and drops: an
        unbind later never closes the socket on unread entries. (A close with unread data
        resets the connection, and the server, its output backed up behind the entries and
        its reading paused, may never read the requests sent before the close.)"""
        msgid = self.conn.search_ext(PEOPLE, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["cn"])
        self.record(Op("SRCH", msgid, {"base": PEOPLE, "filter": "(objectClass=*)"},
                       abandoned=True))
        self.conn.abandon(msgid)
        self.record(Op("ABANDON", None, {"msg": str(msgid)}))
        user = self.random.randrange(1, USERS)
        self.bind(user_dn(user), user_pw(user))


def run_clients(url: str, count: int, rounds: int, during=None) -> list:
    """Runs `count` Clients of `rounds` rounds; `during(clients)`, if given, runs meanwhile on
    this thread. Returns the clients once all have ended (fails if one failed)."""
    clients = [Client(url, index, rounds) for index in range(count)]
    started = time.monotonic()
    for client in clients:
        client.start()
    if during is not None:
        during(clients)
    for client in clients:
        client.join(timeout=120)
        if client.is_alive():
            fail(f"client {client.index} still runs after 120 s")
    failed = [f"client {c.index}: {c.error}" for c in clients if c.error is not None]
    check(not failed, f"{count} clients sent {sum(c.sent for c in clients)} requests on "
          f"{sum(len(c.connections) for c in clients)} connections in "
          f"{time.monotonic() - started:.1f} s", "; ".join(failed))
    return clients


def wait_until_closed(port: int):
    """Waits until the server has closed every client connection to `port` (none of its sockets
    on that port ESTABLISHED or CLOSE_WAIT in /proc/net/tcp*). A client's last Unbind is sent
    without waiting for anything: a server stopped before it read it would log no UNBIND."""
    def still_open():
        count = 0
        for name in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(name) as stream:
                    rows = stream.read().splitlines()[1:]
            except FileNotFoundError:
                continue
            for row in rows:
                fields = row.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] in ("01", "08"):
                    count += 1
        return count
    check(wait_for(lambda: still_open() == 0, timeout=30),
          "the server closed every client connection before it was stopped",
          f"{still_open()} still open")


# -- the log -------------------------------------------------------------------------------------
class Line:
    """One log line: its index in the file(s), time (seconds), conn, op, msgid (None where the
    line has none), what it is (`what`: ACCEPT, CLOSED, TLS, MESSAGE, RESULT, ABANDONED or a
    request's type) and its fields (strings)."""

    def __init__(self, index, text, time_s, conn, op, msgid, what, fields):
        self.index = index
        self.text = text
        self.time = time_s
        self.conn = conn
        self.op = op
        self.msgid = msgid
        self.what = what
        self.fields = fields


def parse_time(text: str) -> float:
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", text):
        raise ValueError(f"not a timestamp: {text!r}")
    moment = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.replace(tzinfo=datetime.timezone.utc).timestamp()


TEXT_LINE = re.compile(r"(\S+) (?:conn=(\d+) )?(?:op=(\d+) msgid=(\d+) )?(.*)")
TEXT_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def text_fields(text: str) -> dict:
    fields = {}
    for key, value in TEXT_FIELD.findall(text):
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        fields[key] = value
    return fields


def parse_text_line(index: int, text: str) -> Line:
    match = TEXT_LINE.fullmatch(text)
    if match is None:
        raise ValueError("no timestamp")
    stamp, conn, op, msgid, body = match.groups()
    conn, op, msgid = (None if v is None else int(v) for v in (conn, op, msgid))
    fields = {}
    word = body.split(" ", 1)[0]
    accepted = re.fullmatch(r"ACCEPT from IP=(\S+):(\d+) \(port (\d+)\)", body)
    result = re.fullmatch(r'(?:SEARCH )?RESULT (tag=\d+ err=\d+(?: nentries=\d+)? '
                          r'etime=\d+\.\d{6} text=".*")', body)
    if accepted is not None:
        what, fields = "ACCEPT", {"peer": f"{accepted[1]}:{accepted[2]}", "port": accepted[3]}
    elif body == "closed":
        what = "CLOSED"
    elif body.startswith("TLS established "):
        what, fields = "TLS", text_fields(body)
    elif result is not None:
        what, fields = "RESULT", text_fields(result[1])
        if body.startswith("SEARCH ") != ("nentries" in fields):
            raise ValueError("SEARCH RESULT without nentries, or nentries without SEARCH")
    elif re.fullmatch(r"ABANDONED etime=\d+\.\d{6}", body):
        what, fields = "ABANDONED", text_fields(body)
    elif word in REQUEST_TYPES and op is not None:
        what, fields = word, text_fields(body[len(word):])
    elif conn is None and op is None:
        what, fields = "MESSAGE", {"text": body}
    else:
        raise ValueError("not a line the access log writes")
    if (what in REQUEST_TYPES or what in ("RESULT", "ABANDONED")) != (op is not None):
        raise ValueError("op= and msgid= on a line that has no operation, or the reverse")
    if what != "MESSAGE" and conn is None:
        raise ValueError("no conn=")
    return Line(index, text, parse_time(stamp), conn, op, msgid, what, fields)


def parse_json_line(index: int, text: str) -> Line:
    record = json.loads(text)
    if not isinstance(record, dict) or not isinstance(record.get("time"), str) or \
            not isinstance(record.get("type"), str):
        raise ValueError("not an object with a string time and type")
    what = record["type"]
    if what not in REQUEST_TYPES | {"ACCEPT", "CLOSED", "TLS", "MESSAGE", "RESULT", "ABANDONED"}:
        raise ValueError(f"unknown type {what!r}")
    fields = {key: str(value) for key, value in record.items()
              if key not in ("time", "type", "conn", "op", "msgid")}
    for key in ("conn", "op", "msgid"):
        if key in record and not isinstance(record[key], int):
            raise ValueError(f"{key} is not a number")
    if what == "RESULT" and not all(isinstance(record.get(k), int) for k in ("tag", "err")):
        raise ValueError("a RESULT without numbers tag and err")
    op = record.get("op")
    if (what in REQUEST_TYPES or what in ("RESULT", "ABANDONED")) != (op is not None):
        raise ValueError("op and msgid on an object that has no operation, or the reverse")
    if what != "MESSAGE" and "conn" not in record:
        raise ValueError("no conn")
    return Line(index, text, parse_time(record["time"]), record.get("conn"), op,
                record.get("msgid"), what, fields)


def read_log(paths, log_format: str = "text") -> list:
    """Parses the files `paths` (their lines back to back); fails on a line it cannot parse."""
    parse = parse_json_line if log_format == "json" else parse_text_line
    lines, bad = [], []
    for path in paths:
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
        check(text.endswith("\n") or not text, f"{os.path.basename(path)} ends with a whole line")
        for raw in text.splitlines():
            try:
                lines.append(parse(len(lines), raw))
            except ValueError as error:  # json.JSONDecodeError is one.
                bad.append(f"{error}: {raw}")
    check(not bad, f"every one of the {len(lines) + len(bad)} {log_format} lines parses "
          f"(timestamps too)", "\n".join(bad[:10]))
    return lines


def check_log(lines: list, connections: list, server_port: int):
    """Checks the log `lines` against what the client `connections` sent: each connection's
    requests in the log, by op=, are exactly those it sent (kind, message ID, fields), numbered
    0,1,2,... with no gap or repeat; each request that has a response has exactly one result
    line (same conn and op, the kind's tag, the code the client got), after its request line;
    an abandoned search has one result or one ABANDONED line; unbinds and abandons have none;
    ACCEPT is each connection's first line and closed its last; and times within a connection
    go back by at most TIME_TOLERANCE_S; ACCEPT lines name `server_port`. Returns:
    {"abandoned": how many searches were logged ABANDONED}."""
    by_conn = {}
    for line in lines:
        if line.conn is not None:
            by_conn.setdefault(line.conn, []).append(line)
    mentions = [line.text for line in lines if "drop" in line.text.lower()]
    check(not mentions, "no line mentions dropped records", "\n".join(mentions[:5]))

    # Client connections <-> conn= by the client's local port (the ACCEPT line's peer port).
    accepts = {}
    for conn, conn_lines in by_conn.items():
        for line in conn_lines:
            if line.what == "ACCEPT":
                port = int(line.fields["peer"].rsplit(":", 1)[1])
                accepts.setdefault(port, []).append(conn)
    matched, unmatched = {}, []
    by_port = {}
    for client in connections:
        by_port.setdefault(client.port, []).append(client)
    for port, clients in by_port.items():
        conns = sorted(accepts.get(port, []))
        if len(conns) != len(clients):
            unmatched.append(f"port {port}: {len(clients)} client connection(s), ACCEPT lines "
                             f"for conn {conns}")
            continue
        for conn, client in zip(conns, sorted(clients, key=lambda c: c.opened)):
            matched[conn] = client
    check(not unmatched, f"each of the {len(connections)} client connections has its ACCEPT "
          "line (matched by the client's port)", "\n".join(unmatched[:10]))
    ports = {line.fields["port"] for line in lines if line.what == "ACCEPT"}
    check_equal(ports, {str(server_port)}, "the ACCEPT lines name the server's port")
    strangers = sorted(set(by_conn) - set(matched))
    check(not strangers, "every conn= in the log is one of the clients' connections",
          f"conns {strangers[:10]}: " + "\n".join(l.text for l in by_conn[strangers[0]][:5])
          if strangers else "")

    # Each connection's requests: op= 0,1,2,..., each once, as the client sent them.
    sent_counts, logged_counts = {}, {}
    numbering, sequence = [], []
    requests = {}  # (conn, op) -> its request Line
    for conn, client in sorted(matched.items()):
        mine = [line for line in by_conn[conn] if line.what in REQUEST_TYPES]
        for line in mine:
            logged_counts[line.what] = logged_counts.get(line.what, 0) + 1
            requests.setdefault((conn, line.op), line)
        for op in client.ops:
            sent_counts[op.kind] = sent_counts.get(op.kind, 0) + 1
        ops = sorted(line.op for line in mine)
        if ops != list(range(len(ops))):
            numbering.append(f"conn={conn}: op= {ops[:40]}{'...' if len(ops) > 40 else ''}")
            continue
        mine.sort(key=lambda line: line.op)
        for number, (line, op) in enumerate(zip(mine, client.ops)):
            differs = [key for key, value in op.fields.items() if line.fields.get(key) != value]
            if line.what != op.kind or (op.msgid is not None and line.msgid != op.msgid) or \
                    differs:
                sequence.append(f"conn={conn} op={number}: sent {op!r}, logged {line.text}")
                break
        if len(mine) != len(client.ops):
            sequence.append(f"conn={conn}: sent {len(client.ops)} requests, logged {len(mine)}")
    check(not numbering, "each connection's op= numbers are 0,1,2,... with no gap or repeat",
          "\n".join(numbering[:10]))
    check(not sequence, "each connection's requests, by op=, are those its client sent in the "
          "order sent (kind, msgid, DN, filter, ...)", "\n".join(sequence[:10]))
    check_equal(logged_counts, sent_counts, "request lines of each kind = requests sent")

    # Results: exactly one per request that has one, matching it, after it in the file.
    ends = {}
    for line in lines:
        if line.what in ("RESULT", "ABANDONED"):
            ends.setdefault((line.conn, line.op), []).append(line)
    wrong, orphans, early = [], [], []
    abandoned_lines = 0
    for conn, client in sorted(matched.items()):
        for number, op in enumerate(client.ops):
            request = requests.get((conn, number))
            got = ends.get((conn, number), [])
            if op.kind in NO_RESPONSE:
                if got:
                    wrong.append(f"{op.kind} conn={conn} op={number} has {got[0].text}")
                continue
            if len(got) != 1:
                wrong.append(f"conn={conn} op={number} {op.kind}: {len(got)} result lines: "
                             + " | ".join(l.text for l in got))
                continue
            end = got[0]
            if end.what == "ABANDONED":
                abandoned_lines += 1
                if not op.abandoned:
                    wrong.append(f"conn={conn} op={number} {op!r} not abandoned: {end.text}")
                continue
            expected = {"tag": str(RESULT_TAG[op.kind])}
            if op.err is not None:
                expected["err"] = str(op.err)
            differs = {k: end.fields.get(k) for k, v in expected.items()
                       if end.fields.get(k) != v}
            if differs or (request is not None and end.msgid != request.msgid):
                wrong.append(f"conn={conn} op={number} {op!r} (client got {op.err}): {end.text}")
            if request is not None and end.index < request.index:
                early.append(f"line {end.index} {end.text} before line {request.index}")
    for (conn, op), got in ends.items():
        if (conn, op) not in requests:
            orphans.append(got[0].text)
    check(not wrong, "each request with a response has exactly one result line, of its kind's "
          "tag and the code its client got (an abandoned search: a result or ABANDONED); "
          "unbinds and abandons have none", "\n".join(wrong[:10]))
    check(not orphans, "no result line without its request line", "\n".join(orphans[:10]))
    check(not early, "each result line comes after its request line", "\n".join(early[:10]))

    # Each connection's first line is ACCEPT, its last closed, its times (nearly) in order.
    shape, backwards = [], []
    worst = 0.0
    for conn in sorted(matched):
        conn_lines = by_conn[conn]
        whats = [line.what for line in conn_lines]
        if whats[0] != "ACCEPT" or whats.count("ACCEPT") != 1 or whats[-1] != "CLOSED" or \
                whats.count("CLOSED") != 1:
            shape.append(f"conn={conn}: first {conn_lines[0].text} | last {conn_lines[-1].text}"
                         f" | {whats.count('ACCEPT')} ACCEPT, {whats.count('CLOSED')} closed")
        for before, after in zip(conn_lines, conn_lines[1:]):
            back = before.time - after.time
            worst = max(worst, back)
            if back > TIME_TOLERANCE_S:
                backwards.append(f"{back:.6f} s back: {before.text} | {after.text}")
    check(not shape, "each connection's first line is its ACCEPT and its last its only closed",
          "\n".join(shape[:10]))
    check(not backwards, f"within a connection a line's time is never more than "
          f"{TIME_TOLERANCE_S} s before the previous line's (worst: {worst * 1e3:.3f} ms back)",
          "\n".join(backwards[:10]))
    overall = max([0.0] + [a.time - b.time for a, b in zip(lines, lines[1:])])
    print(f"  note: the worst step back in time between consecutive lines of any connections: "
          f"{overall * 1e3:.3f} ms; {abandoned_lines} abandoned searches logged ABANDONED",
          flush=True)
    return {"abandoned": abandoned_lines}


# -- the checks ----------------------------------------------------------------------------------
def check_stress_text():
    """THREADS python-ldap clients doing every kind of operation at once, text format."""
    path = os.path.join(WORK, "stress.log")
    with server(path) as running:
        clients = run_clients(running.url, THREADS, ROUNDS)
        wait_until_closed(running.port)
    connections = [c for client in clients for c in client.connections]
    stats = check_log(read_log([path]), connections, running.port)
    searches = sum(op.abandoned for c in connections for op in c.ops)
    check(searches > 0, f"the clients abandoned {searches} searches, {stats['abandoned']} of them "
          "logged ABANDONED")


def check_json():
    """A shorter mix of the same operations, format = "json"."""
    path = os.path.join(WORK, "json.log")
    with server(path, "json") as running:
        clients = run_clients(running.url, 4, 10)
        wait_until_closed(running.port)
    lines = read_log([path], "json")
    connections = [c for client in clients for c in client.connections]
    check_log(lines, connections, running.port)
    search_results = [l for l in lines if l.what == "RESULT" and l.fields.get("tag") == "101"]
    check(search_results and all("nentries" in l.fields for l in search_results),
          "every search's RESULT object has nentries")
    check(all("nentries" not in l.fields for l in lines
              if l.what == "RESULT" and l.fields.get("tag") != "101"),
          "no other RESULT object has nentries")


def check_rotation():
    """Renames the log and sends SIGHUP twice while clients run: the rotated files and the new
    one hold every line once."""
    path = os.path.join(WORK, "rotated.log")
    rotated = [f"{path}.1", f"{path}.2"]
    with server(path) as running:
        def rotate(clients):
            for target, share in zip(rotated, (1 / 3, 2 / 3)):
                goal = share * len(clients) * ROUNDS * 15
                if not wait_for(lambda: sum(c.sent for c in clients) >= goal or
                                not any(c.is_alive() for c in clients), timeout=60):
                    fail("the clients made no progress")
                check(any(c.is_alive() for c in clients),
                      f"the clients still run at rotation {target[-1]}")
                os.rename(path, target)
                running.process.send_signal(signal.SIGHUP)
                check(wait_for(lambda: os.path.exists(path), timeout=30),
                      f"after rename and SIGHUP {target[-1]} the server made a new "
                      f"{os.path.basename(path)}")
        clients = run_clients(running.url, THREADS, ROUNDS, during=rotate)
        wait_until_closed(running.port)
    sizes = [os.path.getsize(p) for p in rotated + [path]]
    check(all(size > 0 for size in sizes), f"every file has lines (bytes: {sizes})")
    check_log(read_log(rotated + [path]), [c for client in clients for c in client.connections],
              running.port)


def pki():
    """The certificates of the TLS checks (made once)."""
    if T.PKI is None:
        work = os.path.join(WORK, "pki")
        os.mkdir(work)
        T.PKI = T.Pki(work)
    return T.PKI


def tls_server(path: str) -> NumadirServer:
    return server(path, extra_toml=tls_config(pki().server_crt, pki().server_key))


def check_starttls():
    """StartTLS is an EXT request with a RESULT tag=120, then TLS established; the op= count
    goes on over TLS."""
    path = os.path.join(WORK, "tls.log")
    connections = []
    with tls_server(path) as running:
        # ldap3: StartTLS first (op=0), then a bind, a search, WhoAmI and an unbind. (ldap3
        # closes without a TLS close_notify: see check_unbind_with_close_notify.)
        tls = Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=pki().ca_crt)
        conn = Connection(Server("127.0.0.1", port=running.port, tls=tls, get_info=NONE,
                                 connect_timeout=10),
                          user=user_dn(3), password=user_pw(3), receive_timeout=30,
                          raise_exceptions=False)
        conn.open()
        client = ClientConnection()
        connections.append(client)
        client.port = conn.socket.getsockname()[1]
        check(conn.start_tls(), "ldap3 start_tls()", f"{conn.result}")
        check(conn.bind(), "ldap3 binds as user3 over TLS", f"{conn.result}")
        conn.search(PEOPLE, "(uid=user4)", SUBTREE, attributes=["cn"])
        check_equal(len(conn.entries), 1, "ldap3 over TLS finds user4")
        check_equal(conn.extend.standard.who_am_i().lower(), f"dn:{user_dn(3)}".lower(),
                    "ldap3 over TLS is user3")
        conn.unbind()
        for kind, fields in (("EXT", {"oid": STARTTLS_OID}), ("BIND", {"dn": user_dn(3)}),
                             ("SRCH", {"filter": "(uid=user4)"}), ("EXT", {"oid": WHOAMI_OID}),
                             ("UNBIND", {})):
            client.ops.append(Op(kind, None, fields))
            client.ops[-1].err = None if kind == "UNBIND" else 0

        # Raw: a WhoAmI in plaintext (op=0), StartTLS (op=1), then WhoAmI, a bind and an unbind.
        raw = socket.create_connection(("127.0.0.1", running.port), timeout=10)
        client = ClientConnection()
        connections.append(client)
        client.port = raw.getsockname()[1]
        buffer = bytearray()
        check_equal(whoami_raw(raw, buffer, 7), "", "a plaintext WhoAmI: anonymous")
        check_equal(start_tls(raw, buffer, 8)[0], 0, "then StartTLS succeeds")
        sock = client_context().wrap_socket(raw, server_hostname="127.0.0.1")
        check_equal(whoami_raw(sock, buffer, 9), "", "a WhoAmI over TLS: anonymous")
        response = exchange(sock, simple_bind_request(10, user_dn(5), user_pw(5)), buffer)
        check_equal(T.result_code(response[1]), 0, "a bind over TLS succeeds")
        sock.sendall(ber(0x30, ber_int(0x02, 11) + ber(0x42, b"")))
        check(wait_for_close(sock, timeout=10), "the server closes after the unbind")
        sock.close()
        for msgid, kind, fields in ((7, "EXT", {"oid": WHOAMI_OID}),
                                    (8, "EXT", {"oid": STARTTLS_OID}),
                                    (9, "EXT", {"oid": WHOAMI_OID}),
                                    (10, "BIND", {"dn": user_dn(5)}), (11, "UNBIND", {})):
            client.ops.append(Op(kind, msgid, fields))
            client.ops[-1].err = None if kind == "UNBIND" else 0
    lines = read_log([path])
    check_log(lines, connections, running.port)
    for starttls_op, client in ((0, connections[0]), (1, connections[1])):
        conn = next(l.conn for l in lines
                    if l.what == "ACCEPT" and l.fields["peer"].endswith(f":{client.port}"))
        mine = [l for l in lines if l.conn == conn]
        # check_log found each of these lines.
        request = next(i for i, l in enumerate(mine) if l.what == "EXT" and l.op == starttls_op)
        result = next(i for i, l in enumerate(mine)
                      if l.what == "RESULT" and l.op == starttls_op)
        after = next(i for i, l in enumerate(mine)
                     if l.what in REQUEST_TYPES and l.op == starttls_op + 1)
        tls_lines = [i for i, l in enumerate(mine) if l.what == "TLS"]
        check(mine[request].fields.get("oid") == STARTTLS_OID and
              mine[result].fields.get("tag") == "120" and mine[result].fields.get("err") == "0",
              f"conn={conn}: StartTLS is op={starttls_op} EXT oid=\"{STARTTLS_OID}\" with a "
              "RESULT tag=120 err=0", "\n".join(l.text for l in mine))
        check(len(tls_lines) == 1 and request < result < tls_lines[0] < after and
              mine[tls_lines[0]].fields.get("tls_proto", "").startswith("TLS"),
              f"conn={conn}: then one TLS established line, before op={starttls_op + 1}",
              "\n".join(l.text for l in mine))


class MemoryTls:
    """TLS over a socket through memory BIOs, so that what several TLS records carry can be
    sent in one write."""

    def __init__(self, sock):
        self.sock = sock
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = client_context().wrap_bio(self.incoming, self.outgoing,
                                             server_hostname="127.0.0.1")
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.send()
                self.receive()
        self.send()

    def send(self):
        data = self.outgoing.read()
        if data:
            self.sock.sendall(data)

    def receive(self):
        data = self.sock.recv(65536)
        if not data:
            fail("the server closed the connection during TLS")
        self.incoming.write(data)

    def exchange(self, request: bytes):
        """Sends `request` and returns its one response: (op tag, content)."""
        self.tls.write(request)
        self.send()
        plain = b""
        while ber_read_tlv(plain) is None:
            try:
                plain += self.tls.read(65536)
            except ssl.SSLWantReadError:
                self.receive()
        tag, content, _ = ber_read_tlv(plain)
        children = ber_children(content)
        return children[1][0], children[1][1]

    def send_with_close_notify(self, request: bytes):
        """Sends `request` and the close_notify alert in one write."""
        self.tls.write(request)
        try:
            self.tls.unwrap()  # Writes close_notify, then waits for the server's.
        except ssl.SSLWantReadError:
            pass
        self.send()


def check_unbind_with_close_notify():
    """An unbind and the TLS close_notify after it in one write, as python-ldap's unbind_s over
    TLS often reaches the server: the server reads the unbind, and logs it."""
    path = os.path.join(WORK, "close-notify.log")
    connections = []
    with tls_server(path) as running:
        for _ in range(3):
            raw = socket.create_connection(("127.0.0.1", running.port), timeout=10)
            client = ClientConnection()
            client.port = raw.getsockname()[1]
            buffer = bytearray()
            check_equal(start_tls(raw, buffer, 1)[0], 0, "StartTLS succeeds")
            channel = MemoryTls(raw)
            tag, content = channel.exchange(extended_request(2, WHOAMI_OID))
            check_equal((tag, T.result_code(content)), (0x78, 0), "a WhoAmI over TLS succeeds")
            channel.send_with_close_notify(ber(0x30, ber_int(0x02, 3) + ber(0x42, b"")))
            check(wait_for_close(raw, timeout=10), "the server closes after the unbind")
            raw.close()
            client.ops = [Op("EXT", 1, {"oid": STARTTLS_OID}), Op("EXT", 2, {"oid": WHOAMI_OID}),
                          Op("UNBIND", 3)]
            client.ops[0].err = client.ops[1].err = 0
            connections.append(client)
    check_log(read_log([path]), connections, running.port)


def check_pipelined_at_close():
    """A bind, a search and an unbind in one write: the search waits behind the bind (nothing
    runs beside a bind) and the unbind ends the connection before it runs. Every request the
    server read is logged, the dropped ones as ABANDONED."""
    path = os.path.join(WORK, "pipelined.log")
    connections = []
    with server(path) as running:
        for _ in range(3):
            sock = running.connect_raw()
            client = ClientConnection()
            client.port = sock.getsockname()[1]
            sock.sendall(simple_bind_request(1, user_dn(1), user_pw(1)) +
                         search_request(2, PEOPLE, scope=2) +
                         ber(0x30, ber_int(0x02, 3) + ber(0x42, b"")))
            check(wait_for_close(sock, timeout=10), "the server closes after the unbind")
            sock.close()
            client.ops = [Op("BIND", 1, {"dn": user_dn(1)}, abandoned=True),
                          Op("SRCH", 2, {"base": PEOPLE}, abandoned=True), Op("UNBIND", 3)]
            connections.append(client)
    check_log(read_log([path]), connections, running.port)


def check_unindexed_notice():
    """A presence search on cn (which has eq and sub indexes, no pres) is noted in the log, once,
    timestamped, naming the index it lacks; an indexed one is not; nothing goes to stderr."""
    path = os.path.join(WORK, "unindexed.log")
    with server(path) as running:
        for filter_text in ("(cn=*)", "(cn=*)", "(uid=*)", "(cn=User 1*)"):
            conn = ldap.initialize(running.url)
            conn.simple_bind_s(ROOT_DN, ROOT_PW)
            found = conn.search_s(PEOPLE, ldap.SCOPE_SUBTREE, filter_text, ["1.1"])
            check(len(found) > 0, f"{filter_text} finds entries")
            conn.unbind_s()
        check("unindexed" not in running.stderr_text(), "no notice on the server's stderr",
              running.stderr_text()[-500:])
    notices = [line for line in read_log([path]) if line.what == "MESSAGE" and
               line.fields["text"].startswith("unindexed search: ")]
    check_equal([line.fields["text"] for line in notices],
                ['unindexed search: cn has no pres index, so a search with this filter item '
                 'scans its scope (add "pres" to cn in database.indexes)'],
                "the log's unindexed-search notices")


def main() -> int:
    global ARGS, WORK
    ARGS = parse_args(__doc__.split("\n")[0])
    WORK = tempfile.mkdtemp(prefix="numadir-access-log-")
    started = time.monotonic()
    try:
        status = run_checks("access_log", [
            ("stress: every kind of operation from many connections, text", check_stress_text),
            ("format = json", check_json),
            ("rotation: rename and SIGHUP twice under load", check_rotation),
            ("StartTLS", check_starttls),
            ("TLS: an unbind and close_notify in one read", check_unbind_with_close_notify),
            ("requests pipelined behind a bind and dropped at the unbind",
             check_pipelined_at_close),
            ("a search that scans for want of an index", check_unindexed_notice),
        ], keep_going=ARGS.keep_going)
    finally:
        if ARGS.keep:
            print(f"  kept {WORK}", flush=True)
        else:
            shutil.rmtree(WORK, ignore_errors=True)
    print(f"access_log: {time.monotonic() - started:.1f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
