#!/usr/bin/python3
"""numadir serve as a daemon: a bad config never starts a half-configured server, --pidfile,
systemd's READY=1 / STOPPING=1 over $NOTIFY_SOCKET, SIGTERM finishing cleanly, dropping to
[server] user/group after binding (when run as root), and one server per database (numadir.lock),
which import, export and index do not mind.

  daemon_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 on success, 1 with the first failure.
"""
import argparse
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

SUFFIX = "dc=example,dc=com"


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def write_config(folder, extra_server=""):
    path = os.path.join(folder, "numadir.toml")
    with open(path, "w") as stream:
        stream.write(f"""[database]
path = "db"
suffix = "{SUFFIX}"
map_size = "256MiB"

[server]
listen = ["ldap://127.0.0.1:0"]
{extra_server}
""")
    return path


def start(numadir, config, env=None, pidfile=None):
    command = [numadir, "serve", "-c", config]
    if pidfile:
        command += ["--pidfile", pidfile]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def wait_port(process, timeout_s=60):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            if process.poll() is not None:
                fail(f"serve exited with {process.returncode}: {process.stderr.read()}")
            continue
        match = re.search(r"listening on ldap://127\.0\.0\.1:(\d+)", line)
        if match:
            return int(match.group(1))
    fail("serve printed no listening line")


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        fail("serve did not stop within 60 s of SIGTERM")


def check_bad_config(numadir, folder):
    config = write_config(folder, 'listeners = 1\nmax_conections = 10')
    result = subprocess.run([numadir, "serve", "-c", config], capture_output=True, text=True,
                            timeout=60)
    if result.returncode != 1 or "server.max_conections: unknown key" not in result.stderr:
        fail(f"a misspelt key: expected exit 1 naming server.max_conections, got "
             f"{result.returncode}: {result.stderr!r}")
    if "listening" in result.stdout:
        fail("a bad config started listening")
    print("ok: a misspelt key stops serve before it listens, naming the key")


def check_pidfile_notify_and_sigterm(numadir, folder):
    config = write_config(folder)
    pidfile = os.path.join(folder, "numadir.pid")
    notify_path = os.path.join(folder, "notify.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(60)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    process = start(numadir, config, env=env, pidfile=pidfile)
    port = wait_port(process)
    ready = notify.recv(4096).decode()
    if ready != "READY=1":
        fail(f"expected READY=1 on NOTIFY_SOCKET, got {ready!r}")
    with open(pidfile) as stream:
        pid = int(stream.read().strip())
    if pid != process.pid:
        fail(f"pid file holds {pid}, the server is {process.pid}")
    # A connection open during shutdown does not hold it up.
    client = socket.create_connection(("127.0.0.1", port))
    status = stop(process)
    stopping = notify.recv(4096).decode()
    client.close()
    notify.close()
    if status != 0:
        fail(f"SIGTERM: exit status {status}; stderr {process.stderr.read()!r}")
    if stopping != "STOPPING=1":
        fail(f"expected STOPPING=1, got {stopping!r}")
    if os.path.exists(pidfile):
        fail("the pid file is still there after a clean stop")
    print("ok: --pidfile, READY=1 / STOPPING=1, SIGTERM exits 0 and removes the pid file")


def check_database_lock(numadir, folder):
    config = write_config(folder)
    database = os.path.join(folder, "db")
    first = start(numadir, config)
    wait_port(first)
    lock_file = os.path.join(database, "numadir.lock")
    with open(lock_file) as stream:
        held_by = stream.read().strip()
    if held_by != str(first.pid):
        fail(f"numadir.lock holds {held_by!r}, the server is {first.pid}")
    second = subprocess.run([numadir, "serve", "-c", config], capture_output=True, text=True,
                            timeout=60)
    expected = (f"numadir serve: database {database} is in use by another numadir serve "
                f"(pid {first.pid})")
    if second.returncode != 1 or expected not in second.stderr or "listening" in second.stdout:
        fail(f"a second serve on the same database: expected exit 1 with {expected!r}, got "
             f"{second.returncode}: {second.stderr!r} {second.stdout!r}")
    print("ok: a second serve on the same database exits 1 naming the first one's pid")
    # The lock file is no entry: export and index see only the directory's entries.
    exported = subprocess.run([numadir, "export", "-c", config], capture_output=True, text=True,
                              timeout=60)
    verified = subprocess.run([numadir, "index", "-c", config, "--verify"], capture_output=True,
                              text=True, timeout=60)
    if exported.returncode != 0 or exported.stdout.strip() or "numadir.lock" in exported.stderr:
        fail(f"export beside the lock file: {exported.returncode} {exported.stdout!r} "
             f"{exported.stderr!r}")
    if verified.returncode != 0:
        fail(f"index --verify beside the lock file: {verified.returncode} {verified.stderr!r}")
    if stop(first) != 0:
        fail(f"the locking server did not stop cleanly: {first.stderr.read()!r}")
    if not os.path.exists(lock_file):
        fail("numadir.lock was removed: it must stay (the lock, not the file, marks a server)")
    # The lock is released with the process: an import and a new server go ahead.
    ldif = os.path.join(folder, "base.ldif")
    with open(ldif, "w") as stream:
        stream.write(f"dn: {SUFFIX}\nobjectClass: top\nobjectClass: dcObject\n"
                     "objectClass: organization\ndc: example\no: example\n\n")
    imported = subprocess.run([numadir, "import", "-c", config, "--no-progress", ldif],
                              capture_output=True, text=True, timeout=60)
    if imported.returncode != 0:
        fail(f"import into the stopped server's database: {imported.returncode} "
             f"{imported.stderr!r}")
    again = start(numadir, config)
    wait_port(again)
    if stop(again) != 0:
        fail(f"a server after the first one stopped did not stop cleanly: "
             f"{again.stderr.read()!r}")
    exported = subprocess.run([numadir, "export", "-c", config], capture_output=True, text=True,
                              timeout=60)
    if exported.returncode != 0 or exported.stdout.count("dn: ") != 1:
        fail(f"export after import: {exported.returncode} {exported.stdout!r}")
    print("ok: the lock goes with the server; the file stays and import, export, index and the "
          "next serve work beside it")


def check_user(numadir, folder):
    config = write_config(folder, 'user = "no-such-user-numadir"')
    result = subprocess.run([numadir, "serve", "-c", config], capture_output=True, text=True,
                            timeout=60)
    if result.returncode != 1 or 'server.user: no user "no-such-user-numadir"' not in result.stderr:
        fail(f"unknown user: expected exit 1 and the key, got {result.returncode}: "
             f"{result.stderr!r}")
    print("ok: an unknown server.user stops serve with the key named")
    if os.geteuid() != 0:
        print("skip: not root, so dropping to another user is not tried")
        return
    nobody = pwd.getpwnam("nobody")
    config = write_config(folder, 'user = "nobody"')
    process = start(numadir, config)
    wait_port(process)
    with open(f"/proc/{process.pid}/status") as stream:
        status = stream.read()
    uids = re.search(r"^Uid:\s+(\d+)\s+(\d+)\s+(\d+)", status, re.M)
    if uids is None or int(uids.group(2)) != nobody.pw_uid:
        fail(f"after binding, the effective uid should be nobody's ({nobody.pw_uid}): {uids}")
    if stop(process) != 0:
        fail(f"serve as nobody did not stop cleanly: {process.stderr.read()!r}")
    print("ok: as root, serve drops to server.user after binding")


def check_access_log(numadir, folder):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from numadir_harness import (ber, ber_int, read_ldap_message, search_request, wait_for,
                                 wait_for_close)
    config = write_config(folder)
    with open(config, "a") as stream:
        stream.write('\n[log]\nlevel = "stats"\nfile = "access.log"\n')
    process = start(numadir, config)
    port = wait_port(process)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(search_request(5, SUFFIX, scope=0))  # An empty directory: noSuchObject.
    buffer = bytearray()
    read_ldap_message(sock, buffer, timeout=10)
    sock.sendall(ber(0x30, ber_int(0x02, 6) + ber_int(0x50, 5)))  # Abandon 5 (long done).
    sock.sendall(ber(0x30, ber_int(0x02, 7) + ber(0x42, b"")))  # Unbind: the server closes.
    if not wait_for_close(sock, timeout=10):
        fail("the server did not close the connection after an UnbindRequest")
    sock.close()
    os.rename(os.path.join(folder, "access.log"), os.path.join(folder, "access.log.1"))
    process.send_signal(signal.SIGHUP)  # Reopen: later lines go to a new access.log.
    wait_for(lambda: os.path.exists(os.path.join(folder, "access.log")), timeout=30)
    if stop(process) != 0:
        fail("serve with an access log did not stop cleanly")
    text = ""
    for name in ("access.log.1", "access.log"):  # The writer is asynchronous: either file.
        if os.path.exists(os.path.join(folder, name)):
            with open(os.path.join(folder, name)) as stream:
                text += stream.read()
    accepted = re.search(r" conn=(\d+) ACCEPT from IP=127\.0\.0\.1:", text)
    if accepted is None:
        fail(f"access log lacks an ACCEPT line:\n{text}")
    # op= counts the connection's requests from 0 in the order read; msgid= is the client's.
    conn = f"conn={accepted.group(1)}"
    for expected in (f'{conn} op=0 msgid=5 SRCH base="{SUFFIX}" scope=0',
                     f"{conn} op=0 msgid=5 SEARCH RESULT tag=101 err=32 nentries=0 etime=",
                     f"{conn} op=1 msgid=6 ABANDON msg=5\n", f"{conn} op=2 msgid=7 UNBIND\n",
                     f"{conn} closed\n"):
        if expected not in text:
            fail(f"access log lacks {expected!r}:\n{text}")
    if not os.path.exists(os.path.join(folder, "access.log")):
        fail("SIGHUP did not reopen the access log")
    print("ok: [log] stats writes connections, requests, results, abandons and unbinds; SIGHUP "
          "reopens the file")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--numadir", required=True)
    args, _ = parser.parse_known_args()
    for check in (check_bad_config, check_pidfile_notify_and_sigterm, check_database_lock,
                  check_user, check_access_log):
        with tempfile.TemporaryDirectory(prefix="numadir-daemon-") as folder:
            os.chmod(folder, 0o755)
            check(args.numadir, folder)
    print("daemon: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
