#!/usr/bin/python3
"""perf/tls-handshake-bench runs every point it reports: a full and a resumed handshake, TLS 1.3
and 1.2, with an RSA-2048 and an ECDSA P-256 certificate, under numadir's TLS defaults and the
settings compared with them. The program exits 1 when a handshake fails or a resumption is not
resumed; this checks that, and that each table row carries a time for each setting.

  tls_handshake_bench_test.py --bin-dir build/release

Uses <bin-dir>/perf/tls-handshake-bench; other arguments (--numadir, --gen) are accepted and
ignored. Standard library only. Exits 0 on success, 1 with the first failure otherwise.
"""
import argparse
import os
import subprocess
import sys

CERTIFICATES = ("ECDSA P-256", "RSA-2048")
PROTOCOLS = ("TLS 1.3", "TLS 1.2")
HANDSHAKES = ("full", "resumed")
SETTINGS = 3  # numadir's defaults, two TLS 1.3 tickets, OpenSSL's defaults.
PRIMITIVES = ("RSA-2048 signature (SHA-256)", "ECDSA P-256 signature (SHA-256)",
              "X25519 key share made and secret derived")


def fail(message: str) -> None:
    sys.stderr.write(f"FAIL: {message}\n")
    sys.exit(1)


def cells(line: str) -> list:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def positive(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        fail(f"{where}: '{text}' is not a number")
    if value <= 0:
        fail(f"{where}: {value} is not a positive time")
    return value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args, _ = parser.parse_known_args()
    program = os.path.join(args.bin_dir, "perf", "tls-handshake-bench")
    command = [program, "--handshakes", "3", "--rounds", "1"]
    print("+", " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True, timeout=240)
    if result.returncode != 0:
        fail(f"exited {result.returncode}: {result.stderr}")
    rows = {}
    primitives = {}
    for line in result.stdout.splitlines():
        if not line.startswith("| ") or line.startswith("| certificate") \
                or line.startswith("| operation"):
            continue
        row = cells(line)
        if len(row) == 3 + SETTINGS + 1:
            rows[tuple(row[:3])] = row[3:]
        elif len(row) == 2:
            primitives[row[0]] = row[1]
        else:
            fail(f"a row of an unexpected shape: {line!r}")
    for certificate in CERTIFICATES:
        for protocol in PROTOCOLS:
            for handshake in HANDSHAKES:
                key = (certificate, protocol, handshake)
                if key not in rows:
                    fail(f"no row for {key}:\n{result.stdout}")
                times = [positive(cell, str(key)) for cell in rows[key][:SETTINGS]]
                ratio = positive(rows[key][SETTINGS], f"{key} ratio")
                if abs(ratio - times[0] / times[-1]) > 0.01 + 0.01 * ratio:
                    fail(f"{key}: ratio {ratio} is not {times[0]} / {times[-1]}")
    if len(rows) != len(CERTIFICATES) * len(PROTOCOLS) * len(HANDSHAKES):
        fail(f"{len(rows)} handshake rows:\n{result.stdout}")
    for primitive in PRIMITIVES:
        if primitive not in primitives:
            fail(f"no row for '{primitive}':\n{result.stdout}")
        positive(primitives[primitive], primitive)
    print(f"ok: {len(rows)} handshake points and {len(primitives)} primitives timed")


if __name__ == "__main__":
    main()
