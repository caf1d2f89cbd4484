#!/usr/bin/python3
"""Writes the seed corpus of connection_fuzz (tests/fuzz/corpus/connection/): real request PDU
sequences, each behind the control bytes that say how the fuzz target writes them and when its
pool and open operations move (the input format is described in connection_fuzz.cc).

  tests/fuzz/make_connection_corpus.py [DIR]   # default: tests/fuzz/corpus/connection

Standard library only; the output is the same on every run.
"""
import os
import sys


def ber_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def ber(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + ber_length(len(content)) + content


def integer(tag: int, value: int) -> bytes:
    return ber(tag, value.to_bytes(max(1, (value.bit_length() + 8) // 8), "big", signed=True))


def message(message_id: int, op: bytes) -> bytes:
    return ber(0x30, integer(0x02, message_id) + op)


def octets(text: str) -> bytes:
    return ber(0x04, text.encode())


def bind(message_id: int, dn: str = "", password: str = "") -> bytes:
    return message(message_id, ber(0x60, integer(0x02, 3) + octets(dn) +
                                   ber(0x80, password.encode())))


def search(message_id: int, base: str, scope: int = 0) -> bytes:
    body = (octets(base) + ber(0x0A, bytes([scope])) + ber(0x0A, b"\x00") + integer(0x02, 0) +
            integer(0x02, 0) + ber(0x01, b"\x00") + ber(0x87, b"objectClass") +
            ber(0x30, octets("1.1")))
    return message(message_id, ber(0x63, body))


def unbind(message_id: int) -> bytes:
    return message(message_id, ber(0x42, b""))


def abandon(message_id: int, target: int) -> bytes:
    return message(message_id, integer(0x50, target))


def extended(message_id: int, oid: str) -> bytes:
    return message(message_id, ber(0x77, ber(0x80, oid.encode())))


def add(message_id: int, dn: str) -> bytes:
    attribute = ber(0x30, octets("cn") + ber(0x31, octets("x")))
    return message(message_id, ber(0x68, octets(dn) + ber(0x30, attribute)))


def modify(message_id: int, dn: str) -> bytes:
    change = ber(0x30, ber(0x0A, b"\x02") + ber(0x30, octets("cn") + ber(0x31, octets("y"))))
    return message(message_id, ber(0x66, octets(dn) + ber(0x30, change)))


def delete(message_id: int, dn: str) -> bytes:
    return message(message_id, ber(0x4A, dn.encode()))


def rename(message_id: int, dn: str, new_rdn: str) -> bytes:
    return message(message_id, ber(0x6C, octets(dn) + octets(new_rdn) + ber(0x01, b"\xff")))


def compare(message_id: int, dn: str) -> bytes:
    return message(message_id, ber(0x6E, octets(dn) + ber(0x30, octets("cn") + octets("x"))))


START_TLS = "1.3.6.1.4.1.1466.20037"
WHO_AM_I = "1.3.6.1.4.1.4203.1.11.3"

# Control bytes (connection_fuzz.cc): bits 0-4 + 1 bytes (bit 5: x16), then bits 6-7.
NOTHING, RUN_ALL, RUN_ONE, END_OPEN = 0x00, 0x40, 0x80, 0xC0
BIG = 0x3F  # 512 bytes.
FINISH = 0x01  # With END_OPEN: finish (odd) rather than release.


def seed(controls, pdus) -> bytes:
    return bytes([len(controls)]) + bytes(controls) + b"".join(pdus)


SEEDS = {
    "bind_search_unbind": seed([], [bind(1, "cn=admin,dc=example,dc=com", "secret"),
                                    search(2, "dc=example,dc=com", 2), unbind(3)]),
    "byte_by_byte": seed([NOTHING, RUN_ALL], [bind(1), search(2, "x"), search(3, "y"),
                                             unbind(4)]),
    "pipelined_over_the_limit": seed(
        [BIG, RUN_ONE, RUN_ONE, RUN_ALL, RUN_ONE],
        [search(i, f"cn=s{i}") for i in range(1, 9)]),
    "open_searches_abandoned": seed(
        [BIG | RUN_ALL, END_OPEN | FINISH, RUN_ALL, END_OPEN],
        [search(1, "open"), search(2, "open"), abandon(3, 1), bind(4), search(5, "x")]),
    "updates_kept_open": seed(
        [BIG | RUN_ALL, END_OPEN | FINISH, END_OPEN, RUN_ALL, END_OPEN | FINISH, RUN_ALL],
        [add(1, "cn=a,dc=x"), modify(2, "cn=a,dc=x"), delete(3, "cn=b,dc=x"),
         rename(4, "cn=a,dc=x", "cn=c"), compare(5, "cn=c,dc=x"), extended(6, WHO_AM_I),
         bind(7)]),
    "start_tls_without_tls": seed(
        [BIG | RUN_ALL, END_OPEN | FINISH, RUN_ALL],
        [extended(1, START_TLS), search(2, "x"), search(3, "open"), extended(4, START_TLS),
         search(5, "y")]),
    "message_ids_zero_and_reused": seed(
        [0x0F, RUN_ALL, 0x0F | RUN_ONE, RUN_ALL],
        [search(0, "zero"), bind(1), search(1, "again"), search(1, "open"), abandon(2, 0),
         abandon(3, 1), search(4, "x"), unbind(0)]),
    "bind_waits_for_open": seed(
        [BIG | RUN_ALL, RUN_ALL, END_OPEN | FINISH, RUN_ALL],
        [search(1, "open"), bind(2), search(3, "x"), search(4, "y")]),
    "unbind_with_open_operations": seed(
        [BIG | RUN_ALL], [search(1, "open"), add(2, "cn=a,dc=x"), unbind(3)]),
    "malformed_after_valid": seed([], [search(1, "x"), b"\x30\x05\x02\x01\x07\x7f\x00"]),
    "oversized_pdu": seed([0x07, RUN_ALL], [search(1, "x"), b"\x30\x82\x10\x00" + bytes(64)]),
}


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "corpus", "connection")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as stream:
            stream.write(data)
    print(f"{len(SEEDS)} seeds in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
