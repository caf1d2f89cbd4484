#!/usr/bin/python3
"""Memory per idle connection, cleartext and TLS, numadir beside slapd: --idle connections
(10,000) opened to each server and left silent (over ldaps:// with their handshake done), then
each binds once (a simple bind of one of the generated users) and idles again. The server's
RSS growth over the connections, per connection, at both moments. A warm-up connection binds
first, so the code pages the first bind touches are not counted as connections' memory.

  perf/idle_memory_bench.py [--build-dir build/release] [--idle 10000] [--users 1000]
                            [--servers percpu,slapd] [--results perf/RESULTS.md]
"""
import argparse
import datetime
import os
import shutil
import socket
import ssl
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import scaling_bench  # noqa: E402  (fd limit, RSS and descriptor counts)


def ber(tag, body):
    size = len(body)
    if size < 0x80:
        return bytes([tag, size]) + body
    length = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(length)]) + length + body


def bind_request(message_id, dn, password):
    body = b"\x02\x01\x03" + ber(0x04, dn.encode()) + ber(0x80, password.encode())
    return ber(0x30, b"\x02\x01" + bytes([message_id]) + ber(0x60, body))


def read_message(sock):
    """One whole LDAPMessage (the bind response)."""
    data = b""
    while True:
        chunk = sock.recv(4096)
        if not chunk:
            raise RuntimeError("the server closed the connection")
        data += chunk
        if len(data) >= 2:
            first = data[1]
            header = 2 if first < 0x80 else 2 + (first & 0x7F)
            if len(data) >= header:
                size = first if first < 0x80 else int.from_bytes(data[2:header], "big")
                if len(data) >= header + size:
                    return data


def connect(port, context):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    if context is not None:
        sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
    return sock


def bind(sock, user, message_id=1):
    sock.sendall(bind_request(message_id, f"uid=user{user},{bench.PEOPLE}", f"password{user}"))
    response = read_message(sock)
    if b"\x0a\x01\x00" not in response:  # resultCode success
        raise RuntimeError(f"the bind of user{user} failed: {response.hex()}")


def measure(server, port, tls, args):
    """Returns (bytes per silent connection, bytes per connection after a bind)."""
    context = None
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    pid = server.process.pid
    warm = connect(port, context)
    bind(warm, 0)
    time.sleep(0.5)
    before_fds = scaling_bench.settled_fds(pid)
    rss_before = scaling_bench.rss_kib(pid)
    sockets = []
    try:
        for _ in range(args.idle):
            sockets.append(connect(port, context))
        deadline = time.time() + 120
        while scaling_bench.open_fds(pid) < before_fds + args.idle and time.time() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        rss_silent = scaling_bench.rss_kib(pid)
        for n, sock in enumerate(sockets):
            bind(sock, n % args.users)
        time.sleep(1)
        rss_bound = scaling_bench.rss_kib(pid)
    finally:
        for sock in sockets + [warm]:
            sock.close()
    return ((rss_silent - rss_before) * 1024 / args.idle,
            (rss_bound - rss_before) * 1024 / args.idle)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release")
    parser.add_argument("--idle", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--servers", default="percpu,slapd")
    parser.add_argument("--results", default="", help="a file to append the table to")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    limit = scaling_bench.raise_fd_limit()
    if limit < args.idle + 100:  # Per process: this one and each server.
        raise SystemExit(f"idle_memory_bench: RLIMIT_NOFILE {limit} is too low for {args.idle}")
    work = tempfile.mkdtemp(prefix="numadir-idle-")
    rows = []
    try:
        ldif = bench.generate_users(work, args.users)
        tls = bench.make_certificate(work, "ec")
        for name in args.servers.split(","):
            if name == "slapd":
                slapd_args = argparse.Namespace(slapd_loglevel="0", slapd_extra="")
                server = bench.start_slapd(work, ldif, slapd_args, tls=tls)
            else:
                server = bench.start_numadir(build, work, name, name, ldif, tls=tls,
                                             server_extra=f"max_connections = {args.idle + 100}")
            try:
                for scheme, port in (("ldap", server.port), ("ldaps", server.ldaps_port)):
                    silent, bound = measure(server, port, scheme == "ldaps", args)
                    rows.append((name, scheme, silent, bound))
                    print(f"idle_memory_bench: {name} {scheme}: {silent:.0f} bytes per silent "
                          f"connection, {bound:.0f} after a bind", flush=True)
                    time.sleep(2)  # The server closes the previous connections.
            finally:
                server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.results:
        info = bench.machine()
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        command = "perf/idle_memory_bench.py " + " ".join(sys.argv[1:])
        lines = [f"### Memory per idle connection: {now}", "",
                 f"Command: `{command}` — `nproc` {info['nproc']}, {info['cpu']}; {args.idle} "
                 f"connections per point; ECDSA P-256 certificate; {info['slapd']}.", "",
                 "| server | scheme | bytes per silent connection | bytes after a bind |",
                 "|---|---|---:|---:|"]
        lines += [f"| {n} | {s} | {a:.0f} | {b:.0f} |" for n, s, a, b in rows]
        with open(args.results, "a") as stream:
            stream.write("\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
