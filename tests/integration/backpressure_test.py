#!/usr/bin/python3
"""Output backpressure against clients that do not read: the server's memory stays bounded, other
clients are served throughout, a stalled reader is closed after limits.write_timeout, and a slow
reader gets every entry once it catches up.

  backpressure_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

One server (500 users: a search of ou=people returns 501 entries, about 200 KB), with
limits.max_output_bytes = 1MiB and limits.write_timeout = 25:
- A raw client pipelines 2,000 searches of ou=people and reads nothing. For 20 s a python-ldap
  client binds and searches every 0.2 s and must be answered each time within 10 s; the server's
  VmRSS must grow by no more than the bound plus 1.5 MiB (the requests the connection had read)
  plus a constant (16 MiB) over its value before (not checked on a sanitizer build, whose
  allocator keeps freed memory). Then
  the stalled client must be closed, and the server's log must say so, by 25 s plus the timer's
  second and a margin.
- The same with 50 such clients at once: growth at most 50 times (bound + 1.5 MiB) plus the
  constant (10 clients on a sanitizer build, where the growth is not checked).
- A client pipelines 12 searches and reads 1 KiB a second for 8 s, then reads at full speed:
  every search returns the same 501 entries, in the same order, once each, then success.
Exits 0 on success, 1 with the first failure.
"""
import os
import select
import socket
import sys
import threading
import time

import ldap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (NumadirServer, ber_children, check, parse_args,  # noqa: E402
                             read_ldap_message, rss_kib, run_checks, search_request, user_dn,
                             sanitized, user_pw, wait_for)

BASE = "ou=people,dc=example,dc=com"
USERS = 500
BOUND_BYTES = 1024 * 1024
WRITE_TIMEOUT_S = 25
STALL_S = 20
# The longest a round of the other client may take: it waits in the pool's queue behind the
# searches the stalled clients pipelined before their output filled (50 x 64 at the start). A
# sanitizer build runs those several times slower: there only liveness is checked.
SLOWEST_S = 10
SANITIZED_SLOWEST_S = 60
SANITIZED_READERS = 10
CONSTANT_KIB = 16 * 1024
# What a connection holds beside its queued output: the requests it read before it paused (up to
# max_outstanding_per_connection = 64 started, now paused, and as many held, a few KiB each) and
# its unframed input (the rest of the 2,000 pipelined requests it had read, about 140 KB).
PER_CONNECTION_KIB = 1536
SEARCH_RESULT_ENTRY = 0x64
SEARCH_RESULT_DONE = 0x65


class StalledReader:
    """A raw connection that pipelines `count` searches of BASE and never reads."""

    def __init__(self, port, count=2000):
        # A small receive buffer, as a stalled client over a real network has (loopback's default
        # would first take megabytes of searches whole, which only makes the test slower).
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        requests = b"".join(search_request(i + 1, BASE) for i in range(count))
        # The server stops reading once its output is full, so sending may block: a thread.
        self.thread = threading.Thread(target=self._send, args=(requests,), daemon=True)
        self.thread.start()

    def _send(self, requests):
        try:
            self.sock.settimeout(None)
            self.sock.sendall(requests)
        except OSError:
            pass  # Closed by the server (write timeout) or by us.

    def closed_by_server(self):
        """Whether the server closed it (its FIN or reset arrived), found without reading: a
        read would be the progress that restarts the write timeout."""
        poller = select.poll()
        poller.register(self.sock, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
        return bool(poller.poll(0))

    def close(self):
        self.sock.close()


class ServedThroughout:
    """Binds and searches with python-ldap every 0.2 s on its own connection, timing each."""

    def __init__(self, url, timeout_s):
        self.url = url
        self.timeout_s = timeout_s
        self.stop = threading.Event()
        self.rounds = 0
        self.slowest = 0.0
        self.errors = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        conn = ldap.initialize(self.url)
        conn.set_option(ldap.OPT_NETWORK_TIMEOUT, self.timeout_s)
        conn.set_option(ldap.OPT_TIMEOUT, self.timeout_s)
        n = 0
        while not self.stop.is_set():
            n = n % USERS + 1
            started = time.monotonic()
            try:
                conn.simple_bind_s(user_dn(n), user_pw(n))
                found = conn.search_s(BASE, ldap.SCOPE_ONELEVEL, f"(uid=user{n})", ["cn"])
                if len(found) != 1:
                    self.errors.append(f"search for user{n} found {len(found)}")
            except ldap.LDAPError as error:
                self.errors.append(f"round {self.rounds}: {error}")
            self.slowest = max(self.slowest, time.monotonic() - started)
            self.rounds += 1
            self.stop.wait(0.2)
        conn.unbind_s()

    def finish(self):
        self.stop.set()
        self.thread.join(timeout=30)


def check_stalled(server, readers, label):
    pid = server.process.pid
    slow = sanitized(f"/proc/{pid}/exe")  # Its allocator's quarantine makes RSS meaningless.
    slowest_s = SANITIZED_SLOWEST_S if slow else SLOWEST_S
    if slow and readers > SANITIZED_READERS:
        # Before they pause, 50 connections take about 170 MB of searches (the bound each, and
        # the 4 MiB send buffer the kernel grows for each): 28 CPU-seconds under ASan, which on a
        # busy host outlast the write timeout. The memory bound these many check is not checked
        # on a sanitizer build; what is left, the pause and close paths, 10 exercise as well.
        print(f"  {label}: {SANITIZED_READERS} readers on a sanitizer build", flush=True)
        readers = SANITIZED_READERS
    served = ServedThroughout(server.url, slowest_s)
    before = rss_kib(pid)
    stalled = [StalledReader(server.port) for _ in range(readers)]
    peak = before
    deadline = time.monotonic() + STALL_S
    while time.monotonic() < deadline:
        peak = max(peak, rss_kib(pid))
        time.sleep(0.25)  # The sampling interval of the RSS; nothing waits on it.
    served.finish()
    growth = peak - before
    limit = readers * (BOUND_BYTES // 1024 + PER_CONNECTION_KIB) + CONSTANT_KIB
    print(f"  {label}: VmRSS {before} KiB before, peak {peak} KiB over {STALL_S} s "
          f"(+{growth} KiB, limit +{limit} KiB); the other client made {served.rounds} rounds, "
          f"slowest {served.slowest * 1000:.0f} ms", flush=True)
    if slow:
        print(f"  {label}: memory growth not checked (a sanitizer's allocator keeps freed memory)")
    else:
        check(growth <= limit,
              f"{label}: the server's memory grows by at most the output bound and its requests "
              f"per connection, plus a constant", f"grew {growth} KiB, limit {limit} KiB")
    rounds = 5 if slow else STALL_S * 2
    check(not served.errors and served.rounds >= rounds and served.slowest < slowest_s,
          f"{label}: another client's binds and searches are answered throughout",
          f"{served.rounds} rounds, slowest {served.slowest:.1f} s, errors {served.errors[:3]}")
    check(not any(reader.closed_by_server() for reader in stalled),
          f"{label}: before the write timeout the stalled readers stay connected")
    # The clock starts when the socket first fills, within a second of the start; the timer looks
    # once a second.
    wait_for(lambda: all(reader.closed_by_server() for reader in stalled),
             timeout=WRITE_TIMEOUT_S - STALL_S + 10, interval=0.5)
    check("(limits.write_timeout)" in server.stderr_text(),
          f"{label}: the server logs why it closed them", server.stderr_text()[-500:])
    for reader in stalled:
        reader.close()


def reference_entries(server):
    conn = ldap.initialize(server.url)
    found = conn.search_s(BASE, ldap.SCOPE_SUBTREE, "(objectClass=*)", ["1.1"])
    conn.unbind_s()
    return [dn for dn, _ in found]


def check_slow_reader(server):
    expected = reference_entries(server)
    check(len(expected) == USERS + 1, "the reference search returns ou=people and its users",
          f"{len(expected)} entries")
    searches = 12
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(b"".join(search_request(i + 1, BASE, attributes=["1.1"])
                          for i in range(searches)))
    buffer = bytearray()
    slow_until = time.monotonic() + 8
    while time.monotonic() < slow_until:
        sock.settimeout(1)
        try:
            buffer.extend(sock.recv(1024))
        except socket.timeout:
            pass
        time.sleep(1)  # The pace of a slow reader: 1 KiB a second.
    entries = {i + 1: [] for i in range(searches)}
    done = {}
    while len(done) < searches:
        message = read_ldap_message(sock, buffer, timeout=30)
        check(message is not None, "the slow reader's connection stays open to the end")
        message_id, tag, content, _ = message
        check(message_id in entries and message_id not in done,
              "every message belongs to a search still running", f"message {message_id}")
        if tag == SEARCH_RESULT_ENTRY:
            entries[message_id].append(ber_children(content)[0][1].decode())
        elif tag == SEARCH_RESULT_DONE:
            done[message_id] = ber_children(content)[0][1][0]
    sock.close()
    for message_id in sorted(entries):
        check(entries[message_id] == expected,
              f"slow reader: search {message_id} returns every entry once, in order",
              f"{len(entries[message_id])} entries")
        check(done[message_id] == 0, f"slow reader: search {message_id} ends in success",
              f"result {done[message_id]}")


def main(name="backpressure", groups=("one stalled reader", "a slow reader")):
    """Runs the named groups of checks on one server. This script runs the first and the last;
    backpressure_many_test.py the 50 stalled readers, on a server of its own, so that the two
    halves run side by side under CTest."""
    args = parse_args(__doc__)
    with NumadirServer(args.numadir, args.gen, users=USERS, size_limit=1000,
                       extra_limits_toml=f'max_output_bytes = "1MiB"\n'
                                         f'write_timeout = {WRITE_TIMEOUT_S}\n') as server:
        checks = {
            "one stalled reader": lambda: check_stalled(server, 1, "1 stalled reader"),
            "50 stalled readers": lambda: check_stalled(server, 50, "50 stalled readers"),
            "a slow reader": lambda: check_slow_reader(server),
        }
        return run_checks(name, [(group, checks[group]) for group in groups])


if __name__ == "__main__":
    sys.exit(main())
