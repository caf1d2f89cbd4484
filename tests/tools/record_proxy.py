#!/usr/bin/python3
"""One-shot TCP recording proxy, used to capture golden LDAP wire traffic.

Usage: record_proxy.py LISTEN_PORT UPSTREAM_HOST:PORT OUTPUT_PREFIX

Listens on 127.0.0.1:LISTEN_PORT (0 = pick a free port), prints the actual
port on stdout, accepts ONE client connection, connects to the upstream
server and relays bytes both ways until both sides have closed.  Every byte
sent client->server is appended to OUTPUT_PREFIX.c2s and every byte
server->client to OUTPUT_PREFIX.s2c, raw and exactly as seen on the wire.
Exits after that single connection ends.  Stdlib only.
"""
import selectors
import socket
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    listen_port = int(sys.argv[1])
    up_host, up_port = sys.argv[2].rsplit(":", 1)
    prefix = sys.argv[3]

    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", listen_port))
    lsock.listen(1)
    print(lsock.getsockname()[1], flush=True)

    client, _ = lsock.accept()
    lsock.close()
    upstream = socket.create_connection((up_host, int(up_port)))

    with open(prefix + ".c2s", "wb") as c2s, open(prefix + ".s2c", "wb") as s2c:
        # source socket -> (destination socket, capture file)
        routes = {client: (upstream, c2s), upstream: (client, s2c)}
        sel = selectors.DefaultSelector()
        for s in routes:
            sel.register(s, selectors.EVENT_READ)
        open_sides = 2
        while open_sides:
            for key, _ in sel.select():
                src = key.fileobj
                dst, out = routes[src]
                try:
                    data = src.recv(65536)
                except ConnectionResetError:
                    data = b""
                if data:
                    out.write(data)
                    try:
                        dst.sendall(data)
                    except OSError:  # peer already gone; keep recording
                        pass
                    continue
                # EOF from src: propagate the half-close and stop reading it.
                sel.unregister(src)
                open_sides -= 1
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
    client.close()
    upstream.close()


if __name__ == "__main__":
    main()
