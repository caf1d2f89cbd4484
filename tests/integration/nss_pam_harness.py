#!/usr/bin/python3
"""The machinery of nss_pam_test.py: the real NSS and PAM daemons, nslcd (nss-pam-ldapd) and
SSSD, run against a private `numadir serve` and a private slapd, without touching the machine's
own configuration.

  with Namespace(work, files={"/etc/nsswitch.conf": mine}, dirs=..., tmpfs=["/run"]) as ns:
      nslcd = Daemon(ns, "nslcd", [NSLCD, "-d"], ready=lambda: ns.exists("/run/nslcd/socket"))
      nslcd.start()
      rc, out = ns.run(["getent", "passwd", "user5"])
      nslcd.stop()

Why a mount namespace and not cwrap's nss_wrapper / pam_wrapper: the wrappers would have the
clients load libnss_ldap / libnss_sss and pam_ldap / pam_sss through a preloaded shim, but those
modules still talk to their daemons over compiled-in paths (/run/nslcd/socket,
/var/lib/sss/pipes/...), and the daemons read compiled-in files (/etc/nslcd.conf,
/etc/sssd/sssd.conf, /var/lib/sss/db); the wrappers do not move those, and the daemons are the
point. A private mount namespace (`unshare --mount --propagation private`, as root, as CI runs)
gives every one of those paths a private file or directory: nothing the test mounts is seen
outside it, and the real getent, id and pamtester run inside it against the real daemons.

- Namespace: a holder process (`unshare ... sh -c 'mount ...; exec cat'`) that keeps the
  namespace alive while its standard input is open; the files and directories given are bind
  mounted over the host's, tmpfs over /run (which hides the host's nscd and systemd sockets
  too). Commands run inside through `nsenter --mount=/proc/HOLDER/ns/mnt` (which execs them,
  so a daemon's pid is the one we hold). Every process started here gets PR_SET_PDEATHSIG
  (SIGKILL), so a test that dies leaves nothing; closing checks that no process is left in the
  namespace (any is killed, by pid, and reported).
- Daemon: a daemon in the foreground (nslcd -d, sssd -i --logger=stderr) with its output in a
  log file, waited for until it is ready, stopped with SIGTERM; `log_tail()` for failures.
- HostGuard: what the host has in /etc/nsswitch.conf, /etc/nslcd.conf, /etc/pam.d, /etc/sssd,
  /var/lib/sss and its mount table, before and after.
- LdapTap: a loopback TCP relay in front of a server that decodes what passes (requests with
  their filters, attributes and controls; results, entries, response controls), to record what
  a daemon sends per login (numadir's access log has no controls).
- NssNumadir / NssSlapd: the two servers on the same LDIF, with TLS, the password policy, a size
  limit and, for numadir, the access log; both restart on the same ports.

Standard library only (and the harnesses beside it).
"""
import ctypes
import datetime
import glob
import hashlib
import os
import re
import select
import signal
import socket
import subprocess
import threading
import time

from numadir_harness import (ROOT_DN, ROOT_PW, SUFFIX, NumadirServer, ber_children, ber_read_tlv,
                             fail, ssha, wait_for)
import slapd_harness

NSLCD = "/usr/sbin/nslcd"
SSSD = "/usr/sbin/sssd"
PAMTESTER = "/usr/bin/pamtester"
UNSHARE = "/usr/bin/unshare"
NSENTER = "/usr/bin/nsenter"
SETPRIV = "/usr/bin/setpriv"
STOP_TIMEOUT_S = 15
# What each daemon needs besides its program: its NSS module, its PAM module, its LDAP provider,
# and the host paths the namespace mounts over (they must exist to be mount points).
NEEDS = {
    "nslcd": {"tools": [NSLCD], "modules": ["libnss_ldap.so.2", "security/pam_ldap.so"],
              "packages": "nslcd libnss-ldapd libpam-ldapd", "mount_points": ["/etc/nslcd.conf"]},
    "sssd": {"tools": [SSSD], "modules": ["libnss_sss.so.2", "security/pam_sss.so",
                                          "sssd/libsss_ldap.so"],
             "packages": "sssd-ldap libnss-sss libpam-sss",
             "mount_points": ["/etc/sssd", "/var/lib/sss", "/var/log/sssd"]},
}
LIB_DIRS = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"] + \
    glob.glob("/lib/*-linux-gnu") + glob.glob("/usr/lib/*-linux-gnu")


def missing(daemons) -> list:
    """Returns why the test cannot run here (empty: it can): not root, or a program, module or
    mount point of `daemons` ("nslcd", "sssd") absent."""
    problems = []
    if os.geteuid() != 0:
        problems.append("not root: the daemons run in a private mount namespace (unshare -m), "
                        "which needs root (CI runs the tests as root)")
    for tool in (UNSHARE, NSENTER, SETPRIV, PAMTESTER, "/usr/bin/getent", "/usr/bin/id"):
        if not os.access(tool, os.X_OK):
            problems.append(f"{tool} is missing (scripts/setup.sh installs pamtester; util-linux "
                            "and libc-bin are essential)")
    for daemon in daemons:
        need = NEEDS[daemon]
        absent = [tool for tool in need["tools"] if not os.access(tool, os.X_OK)]
        absent += [module for module in need["modules"]
                   if not any(os.path.exists(os.path.join(d, module)) for d in LIB_DIRS)]
        absent += [path for path in need["mount_points"] if not os.path.exists(path)]
        if absent:
            problems.append(f"{daemon}: missing {', '.join(absent)} (Debian packages "
                            f"{need['packages']}: run scripts/setup.sh)")
    problem = slapd_harness.available()
    if problem:
        problems.append(problem)
    return problems


# -- processes -----------------------------------------------------------------------------------
_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """preexec_fn: the child gets SIGKILL when this process's thread that started it ends (so a
    test killed mid-way leaves no daemon behind)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def children_die_with_this_process():
    """From now on every process this one starts (the servers of the harnesses too) gets
    PR_SET_PDEATHSIG (SIGKILL) unless it has a preexec_fn of its own: a test killed by a
    timeout leaves no server or daemon behind. (The signal comes when the thread that started
    the child ends: the servers and daemons are started by threads that outlive them.)"""
    if getattr(subprocess.Popen, "_numadir_die_with_parent", False):
        return
    original = subprocess.Popen.__init__

    def init(self, *args, **kwargs):
        if kwargs.get("preexec_fn") is None:
            kwargs["preexec_fn"] = _die_with_parent
        original(self, *args, **kwargs)
    subprocess.Popen.__init__ = init
    subprocess.Popen._numadir_die_with_parent = True


def clean_env() -> dict:
    """The environment of everything run in a namespace: C locale (English PAM messages), no
    LDAP* variables, no fast in-memory cache for libnss_sss (every answer asks sssd_nss)."""
    return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C", "LC_ALL": "C",
            "HOME": "/root", "SSS_NSS_USE_MEMCACHE": "NO"}


def mount_namespace(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return ""


class Namespace:
    """A private mount namespace with files and directories bind-mounted over the host's. A
    context manager; see the module's docstring."""

    def __init__(self, name: str, work: str, files: dict = None, dirs: dict = None,
                 tmpfs=("/run",), make_dirs=()):
        """`files` / `dirs`: host path -> the file / directory mounted over it; `tmpfs`: paths
        that get an empty tmpfs (after the binds); `make_dirs`: created after that (in the
        tmpfs)."""
        self.name = name
        self.work = work
        self.files = dict(files or {})
        self.dirs = dict(dirs or {})
        self.tmpfs = list(tmpfs)
        self.make_dirs = list(make_dirs)
        self.holder = None
        self.ns = None
        self.daemons = []

    def __enter__(self):
        lines = ["set -e"]
        for target, source in list(self.files.items()) + list(self.dirs.items()):
            lines.append(f"mount --bind '{source}' '{target}'")
        for target in self.tmpfs:
            lines.append(f"mount -t tmpfs -o mode=0755,size=64m numadir-nss-test '{target}'")
        for path in self.make_dirs:
            lines.append(f"mkdir -p -m 0755 '{path}'")
        lines += ["echo ready", "exec cat >/dev/null"]
        self.script = "\n".join(lines) + "\n"
        with open(os.path.join(self.work, f"{self.name}.namespace.sh"), "w") as stream:
            stream.write(self.script)
        self.holder = subprocess.Popen(
            [UNSHARE, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", self.script],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent, env=clean_env())
        ready, _, _ = select.select([self.holder.stdout], [], [], 10)
        line = self.holder.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.holder.kill()
            _, err = self.holder.communicate(timeout=10)
            fail(f"namespace {self.name}: setting it up failed: {err.decode(errors='replace')}"
                 f"; script:\n{self.script}")
        self.ns = mount_namespace(self.holder.pid)
        if not self.ns or self.ns == mount_namespace(os.getpid()):
            self.close()
            fail(f"namespace {self.name}: the holder is not in a mount namespace of its own")
        return self

    def __exit__(self, exc_type, exc, tb):
        problems = self.close()
        if problems and exc_type is None:
            fail(f"namespace {self.name}: {'; '.join(problems)}")
        return False

    def close(self) -> list:
        """Stops the daemons, kills (by pid) whatever is still in the namespace, ends the holder.
        Returns: what had to be killed or did not end."""
        problems = []
        for daemon in self.daemons:
            if daemon.running():
                problems += daemon.stop(check=False)
        # Looked for while the holder keeps the namespace alive: once it is gone, its inode
        # number (what identifies it in /proc/PID/ns/mnt) may name another namespace.
        left = self.processes() if self.holder is not None and self.holder.poll() is None else []
        if left:
            problems.append("processes left in the namespace, killed: " +
                            ", ".join(f"{pid} ({name})" for pid, name in left))
            for pid, _ in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if not wait_for(lambda: not self.processes(), timeout=5):
                problems.append(f"still in the namespace after SIGKILL: {self.processes()}")
        if self.holder is not None and self.holder.poll() is None:
            self.holder.stdin.close()
            try:
                self.holder.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.holder.kill()
                self.holder.wait()
                problems.append("the holder did not end when its input closed")
        return problems

    def processes(self) -> list:
        """(pid, command name) of every process in this namespace but the holder."""
        found = []
        if not self.ns:
            return found
        holder = self.holder.pid if self.holder is not None else -1
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == holder:
                continue
            if mount_namespace(int(entry)) == self.ns:
                try:
                    with open(f"/proc/{entry}/comm") as stream:
                        found.append((int(entry), stream.read().strip()))
                except OSError:
                    pass
        return found

    def command(self, argv, as_user=None) -> list:
        prefix = [NSENTER, f"--mount=/proc/{self.holder.pid}/ns/mnt", "--"]
        if as_user is not None:
            uid, gid = as_user
            prefix += [SETPRIV, f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
        return prefix + list(argv)

    def run(self, argv, input_text: str = None, timeout: float = 30, as_user=None):
        """Runs `argv` in the namespace (as uid/gid `as_user`, else root), in a session of its
        own: no controlling terminal, so pamtester reads passwords from standard input.
        Returns (exit status, standard output + standard error)."""
        try:
            result = subprocess.run(self.command(argv, as_user), input=input_text,
                                    capture_output=True, text=True, timeout=timeout,
                                    start_new_session=True, env=clean_env())
        except subprocess.TimeoutExpired as error:
            fail(f"{' '.join(argv)} did not end within {timeout} s "
                 f"(output so far: {error.stdout!r} {error.stderr!r})")
        return result.returncode, result.stdout + result.stderr

    def spawn(self, argv, log_path: str) -> subprocess.Popen:
        log = open(log_path, "ab")
        try:
            return subprocess.Popen(self.command(argv), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent,
                                    start_new_session=True, env=clean_env())
        finally:
            log.close()


class Daemon:
    """A daemon in the foreground inside a Namespace, its output in `log_path`."""

    def __init__(self, ns: Namespace, name: str, argv, log_path: str, ready,
                 ready_timeout: float = 30):
        """`ready()`: true once the daemon answers (polled after the start)."""
        self.ns = ns
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.ready = ready
        self.ready_timeout = ready_timeout
        self.process = None
        ns.daemons.append(self)

    def start(self):
        self.started = time.monotonic()
        self.process = self.ns.spawn(self.argv, self.log_path)
        if not wait_for(lambda: self.ready() or not self.running(), timeout=self.ready_timeout) \
                or not self.running():
            status = self.process.poll()
            self.stop(check=False)
            fail(f"{self.name} did not get ready within {self.ready_timeout} s (exit status "
                 f"{status}); its log:\n{self.log_tail()}")
        print(f"  {self.name}: pid {self.process.pid}, ready in "
              f"{time.monotonic() - self.started:.2f} s", flush=True)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, check: bool = True) -> list:
        """SIGTERM, then SIGKILL after STOP_TIMEOUT_S. Returns what went wrong (with `check`,
        fails instead)."""
        problems = []
        if self.process is None:
            return problems
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                problems.append(f"{self.name} did not stop within {STOP_TIMEOUT_S} s of SIGTERM")
        elif check:
            problems.append(f"{self.name} died during the test (exit status "
                            f"{self.process.returncode}); its log:\n{self.log_tail()}")
        if check and problems:
            fail("; ".join(problems))
        return problems

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_path, "rb") as stream:
                text = stream.read().decode(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join("    | " + line for line in text.splitlines()[-lines:])

    def log_text(self) -> str:
        try:
            with open(self.log_path, "rb") as stream:
                return stream.read().decode(errors="replace")
        except OSError:
            return ""


# -- the host ------------------------------------------------------------------------------------
class HostGuard:
    """The host's NSS / PAM / daemon configuration and mount table, to show they are unchanged."""

    # Contents compared; of the daemons' state and run directories only the names (a host's
    # own sssd or nslcd, where one runs, may write there meanwhile).
    PATHS = ("/etc/nsswitch.conf", "/etc/nslcd.conf", "/etc/pam.d", "/etc/sssd")
    NAMES_ONLY = ("/var/lib/sss", "/var/log/sssd", "/run/nslcd", "/run/sssd")

    def __init__(self):
        self.before = self.snapshot()

    @staticmethod
    def snapshot() -> dict:
        state = {}
        for root in HostGuard.PATHS + HostGuard.NAMES_ONLY:
            if os.path.isfile(root):
                state[root] = HostGuard.digest(root)
                continue
            for directory, _, names in os.walk(root):
                state[directory] = "dir"
                for name in names:
                    path = os.path.join(directory, name)
                    state[path] = (HostGuard.digest(path) if root in HostGuard.PATHS
                                   else "present")
        with open("/proc/self/mountinfo") as stream:
            state["mounts"] = sorted(line.split()[4] for line in stream)
        return state

    @staticmethod
    def digest(path: str) -> str:
        try:
            if os.path.islink(path):
                return "link " + os.readlink(path)
            if not os.path.isfile(path):
                return "special"
            with open(path, "rb") as stream:
                return hashlib.sha256(stream.read()).hexdigest()
        except OSError as error:
            return f"unreadable: {error.strerror}"

    def changes(self) -> list:
        after = self.snapshot()
        changed = []
        for key in sorted(set(self.before) | set(after)):
            if self.before.get(key) != after.get(key):
                if key == "mounts":
                    extra = sorted(set(after[key]) - set(self.before[key]))
                    gone = sorted(set(self.before[key]) - set(after[key]))
                    changed.append(f"mount table: new {extra}, gone {gone}")
                else:
                    changed.append(f"{key}: {self.before.get(key, 'absent')} -> "
                                   f"{after.get(key, 'absent')}")
        return changed


# -- the servers ---------------------------------------------------------------------------------
class NssNumadir(NumadirServer):
    """numadir on a given LDIF, on ldap:// and ldaps://, with [tls], a [passwords] table, a size
    limit, the access log (stats) and the indexes NSS lookups use; restart() keeps its ports."""

    def __init__(self, numadir: str, ldif_path: str, passwords_toml: str, tls_files,
                 size_limit: int, keep: bool):
        super().__init__(numadir, gen_users="", users=0, keep=keep, size_limit=size_limit,
                         listen=("ldap://127.0.0.1:0", "ldaps://127.0.0.1:0"))
        self.ldif_path = ldif_path
        self.passwords_toml = passwords_toml
        self.certificate, self.key = tls_files
        self.restarts = 0

    def _prepare(self):
        self.access_log = os.path.join(self.dir, "access.log")
        self.config = os.path.join(self.dir, "numadir.toml")
        self.write_config(self.listen)
        imported = subprocess.run([self.numadir, "import", "-c", self.config, "--no-progress",
                                   self.ldif_path], capture_output=True, text=True, timeout=300)
        if imported.returncode != 0:
            fail(f"numadir import failed ({imported.returncode}): {imported.stderr}")

    def write_config(self, listen):
        with open(self.config, "w") as stream:
            stream.write(f"""[database]
path = "{self.dir}/db"
suffix = "{SUFFIX}"
map_size = "1GiB"
durability = "nosync"
indexes = {NUMADIR_INDEXES}

{self.passwords_toml}
[server]
listen = [{", ".join(f'"{url}"' for url in listen)}]
rootdn = "{ROOT_DN}"
rootpw = "{ssha(ROOT_PW)}"
listeners = 1
workers = 2

[limits]
size_limit = {self.size_limit}
size_limit_paged = 0

[log]
level = "stats"
file = "{self.access_log}"

[tls]
certificate = "{self.certificate}"
key = "{self.key}"
""")
        os.chmod(self.config, 0o600)

    def restart(self):
        """Stops the server (SIGTERM, exit status 0) and starts it again on the same ports."""
        status = self.stop()
        if status != 0:
            fail(f"numadir serve exited {status} on SIGTERM; stderr: {self.stderr_text()[-2000:]}")
        self.stderr_file.close()
        self.restarts += 1
        os.rename(self.stderr_path, f"{self.stderr_path}.{self.restarts}")
        self.write_config([f"ldap://127.0.0.1:{self.port}",
                           f"ldaps://127.0.0.1:{self.ldaps_port}"])
        old = (self.port, self.ldaps_port)
        self.listening_urls, self.ports = [], {}
        self._start()
        if (self.port, self.ldaps_port) != old:
            fail(f"numadir came back on ports {self.port}, {self.ldaps_port}, not {old}")

    def access_lines(self, start: int = 0) -> list:
        """The access log's lines from line `start` on (the log is written by a thread of its
        own: wait_access_log first when a line must be there)."""
        try:
            with open(self.access_log, errors="replace") as stream:
                return stream.read().splitlines()[start:]
        except OSError:
            return []


NUMADIR_INDEXES = ('["objectClass eq", "uid eq,pres", "uidNumber eq,pres", "gidNumber eq,pres", '
                   '"memberUid eq", "member eq", "cn eq,pres"]')
SLAPD_INDEXES = ("objectClass eq", "uid eq,pres", "uidNumber eq,pres", "gidNumber eq,pres",
                 "memberUid eq", "member eq", "cn eq,pres")


class NssSlapd(slapd_harness.SlapdServer):
    """slapd on the same LDIF with TLS, the ppolicy overlay and a size limit; restart() keeps its
    ports."""

    def restart(self):
        self.stop()
        self.stderr_file.close()
        self.stderr_file = open(self.stderr_path, "ab")
        urls = f"{self.url}/ {self.ldaps_url}/"
        self.process = subprocess.Popen(
            [slapd_harness.SLAPD, "-h", urls, "-f", self.config, "-d", "0"],
            stdout=subprocess.DEVNULL, stderr=self.stderr_file, stdin=subprocess.DEVNULL)
        if not (self._wait_listening(self.port) and self._wait_listening(self.ldaps_port)):
            fail(f"slapd did not come back on {urls}: {self.stderr_text()}")


# -- what a daemon sends: a decoding relay ------------------------------------------------------
REQUEST_NAMES = {0x60: "BIND", 0x42: "UNBIND", 0x63: "SRCH", 0x66: "MOD", 0x68: "ADD",
                 0x4A: "DEL", 0x6C: "MODDN", 0x6E: "CMP", 0x50: "ABANDON", 0x77: "EXT"}
RESPONSE_NAMES = {0x61: "BIND", 0x64: "ENTRY", 0x65: "SRCH", 0x73: "REF", 0x67: "MOD",
                  0x69: "ADD", 0x6B: "DEL", 0x6D: "MODDN", 0x6F: "CMP", 0x78: "EXT",
                  0x79: "INTERMEDIATE"}
CONTROL_NAMES = {
    "1.2.840.113556.1.4.319": "pagedResults",
    "1.3.6.1.4.1.42.2.27.8.5.1": "ppolicy",
    "2.16.840.1.113730.3.4.2": "manageDsaIT",
    "1.3.6.1.1.12": "assertion",
    "1.2.840.113556.1.4.473": "sort",
    "1.2.840.113556.1.4.1339": "domainScope",
    "1.2.840.113556.1.4.841": "dirSync",
    "1.3.6.1.4.1.4203.1.9.1.1": "syncRequest",
    "1.2.840.113556.1.4.805": "treeDelete",
    "2.16.840.1.113730.3.4.9": "VLV",
    "1.3.6.1.4.1.42.2.27.9.5.2": "getEffectiveRights",
    "1.2.840.113556.1.4.1504": "ASQ",
    "2.16.840.1.113730.3.4.4": "passwordExpired",
    "2.16.840.1.113730.3.4.5": "passwordExpiring",
    "1.3.6.1.4.1.4203.666.5.16": "deref",
}
EXTENDED_NAMES = {"1.3.6.1.4.1.4203.1.11.1": "passwordModify",
                  "1.3.6.1.4.1.1466.20037": "StartTLS", "1.3.6.1.4.1.4203.1.11.3": "whoami"}
SCOPES = {0: "base", 1: "one", 2: "sub", 3: "children"}


def _integer(content: bytes) -> int:
    return int.from_bytes(content, "big", signed=True) if content else 0


def _escape(value: bytes) -> str:
    return "".join(chr(b) if 0x20 < b < 0x7F and chr(b) not in "*()\\" else f"\\{b:02x}"
                   for b in value)


def filter_string(tag: int, content: bytes) -> str:
    """An RFC 4511 Filter as its RFC 4515 string."""
    if tag in (0xA0, 0xA1):
        return "(" + ("&" if tag == 0xA0 else "|") + "".join(
            filter_string(t, c) for t, c in ber_children(content)) + ")"
    if tag == 0xA2:
        inner = ber_children(content)[0]
        return "(!" + filter_string(*inner) + ")"
    if tag == 0x87:
        return f"({content.decode(errors='replace')}=*)"
    if tag in (0xA3, 0xA5, 0xA6, 0xA8):
        (_, attribute), (_, value) = ber_children(content)
        operator = {0xA3: "=", 0xA5: ">=", 0xA6: "<=", 0xA8: "~="}[tag]
        return f"({attribute.decode(errors='replace')}{operator}{_escape(value)})"
    if tag == 0xA4:
        (_, attribute), (_, parts) = ber_children(content)
        initial, anys, final = "", [], ""
        for part_tag, value in ber_children(parts):
            if part_tag == 0x80:
                initial = _escape(value)
            elif part_tag == 0x81:
                anys.append(_escape(value))
            else:
                final = _escape(value)
        return f"({attribute.decode(errors='replace')}=" + "*".join(
            [initial] + anys + [final]) + ")"
    if tag == 0xA9:
        fields = dict(ber_children(content))
        text = fields.get(0x82, b"").decode(errors="replace")
        if fields.get(0x84, b"\x00") != b"\x00":
            text += ":dn"
        if 0x81 in fields:
            text += ":" + fields[0x81].decode(errors="replace")
        return f"({text}:={_escape(fields.get(0x83, b''))})"
    return f"(?tag 0x{tag:02x})"


def _controls(children) -> list:
    """The controls ([0]) of an LDAPMessage's children: names (criticality marked with '!')."""
    found = []
    for tag, content in children[2:]:
        if tag != 0xA0:
            continue
        for _, control in ber_children(content):
            parts = ber_children(control)
            oid = parts[0][1].decode(errors="replace")
            critical = len(parts) > 1 and parts[1][0] == 0x01 and parts[1][1] != b"\x00"
            found.append(CONTROL_NAMES.get(oid, oid) + ("!" if critical else ""))
    return found


def describe_request(message: bytes) -> dict:
    """What an LDAPMessage from a client asks, as a dict (op, msgid, controls and the op's
    fields: dn / base, scope, filter, attrs, oid)."""
    tlv = ber_read_tlv(message)
    children = ber_children(tlv[1])
    msgid = _integer(children[0][1])
    tag, content = children[1]
    event = {"msgid": msgid, "op": REQUEST_NAMES.get(tag, f"op 0x{tag:02x}"),
             "controls": _controls(children)}
    try:
        if tag == 0x60:
            fields = ber_children(content)
            event["dn"] = fields[1][1].decode(errors="replace")
            event["method"] = "simple" if fields[2][0] == 0x80 else "sasl"
            event["anonymous"] = fields[2][0] == 0x80 and not fields[2][1]
        elif tag == 0x63:
            fields = ber_children(content)
            event["base"] = fields[0][1].decode(errors="replace")
            event["scope"] = SCOPES.get(_integer(fields[1][1]), "?")
            event["sizelimit"] = _integer(fields[3][1])
            event["filter"] = filter_string(*fields[6])
            event["attrs"] = [value.decode(errors="replace")
                              for _, value in ber_children(fields[7][1])]
        elif tag in (0x66, 0x68, 0x6C, 0x6E):
            event["dn"] = ber_children(content)[0][1].decode(errors="replace")
            if tag == 0x66:
                event["mods"] = [ber_children(ber_children(change)[1][1])[0][1].decode()
                                 for _, change in ber_children(ber_children(content)[1][1])]
        elif tag == 0x4A:
            event["dn"] = content.decode(errors="replace")
        elif tag == 0x50:
            event["target"] = _integer(content)
        elif tag == 0x77:
            oid = ber_children(content)[0][1].decode(errors="replace")
            event["oid"] = EXTENDED_NAMES.get(oid, oid)
    except (IndexError, ValueError) as error:
        event["undecoded"] = str(error)
    return event


def describe_response(message: bytes) -> dict:
    tlv = ber_read_tlv(message)
    children = ber_children(tlv[1])
    tag, content = children[1]
    event = {"msgid": _integer(children[0][1]), "op": RESPONSE_NAMES.get(tag, f"0x{tag:02x}"),
             "controls": _controls(children)}
    if tag not in (0x64, 0x73, 0x79):
        try:
            event["result"] = _integer(ber_children(content)[0][1])
        except (IndexError, ValueError):
            event["result"] = None
    return event


class LdapTap:
    """A relay on 127.0.0.1:<port> to a server's port that records each message it passes:
    events (conn, "request" | "response", described message), in order. Connections are
    relayed as they come; when either side closes, both are closed. A context manager."""

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.events = []
        self.lock = threading.Lock()
        self.connections = 0
        self.closing = False
        self.sockets = []
        self.local_ports = {}  # conn -> this end's port towards the server (its access log).

    def __enter__(self):
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.url = f"ldap://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.closing = True
        for sock in [self.listener] + self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        return False

    def mark(self) -> int:
        with self.lock:
            return len(self.events)

    def since(self, mark: int) -> list:
        with self.lock:
            return list(self.events[mark:])

    def _accept(self):
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self.lock:
                self.connections += 1
                conn = self.connections
                self.sockets += [client, server]
                self.local_ports[conn] = server.getsockname()[1]
            for source, sink, kind in ((client, server, "request"), (server, client, "response")):
                threading.Thread(target=self._pump, args=(conn, source, sink, kind),
                                 daemon=True).start()

    def _pump(self, conn: int, source, sink, kind: str):
        buffer = b""
        describe = describe_request if kind == "request" else describe_response
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                buffer += chunk
                while True:
                    tlv = ber_read_tlv(buffer)
                    if tlv is None:
                        break
                    message, buffer = buffer[:tlv[2]], buffer[tlv[2]:]
                    try:
                        event = describe(message)
                    except (IndexError, ValueError) as error:
                        event = {"op": "undecodable", "error": str(error)}
                    event["conn"], event["kind"], event["t"] = conn, kind, time.monotonic()
                    with self.lock:
                        self.events.append(event)
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def request_keys(events: list) -> list:
    """The requests of `events` as comparable tuples: (op, dn or base, filter, attributes)."""
    keys = []
    for event in events:
        if event["kind"] != "request" or event["op"] == "undecodable":
            continue
        if event["op"] == "SRCH":
            keys.append(("SRCH", event["base"], event["filter"], " ".join(event["attrs"])))
        elif event["op"] == "BIND":
            keys.append(("BIND", event.get("dn", ""), "", ""))
        else:
            keys.append((event["op"], "", "", ""))
    return sorted(keys)


ACCESS_REQUEST = re.compile(r" conn=(\d+) op=\d+ msgid=\d+ (SRCH|BIND|EXT|MOD|ADD|DEL|MODRDN|CMP|"
                            r"ABANDON|UNBIND)\b(.*)")
ACCESS_ACCEPT = re.compile(r" conn=(\d+) ACCEPT from IP=127\.0\.0\.1:(\d+) ")


def utc_now() -> str:
    """Now as numadir's access log writes times (2026-12-03T17:36:17.317392Z)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def access_log_keys(lines: list, since: str, ports) -> list:
    """The requests numadir's access log `lines` has from time `since` (utc_now()) on, of the
    connections that came from local `ports` (each port's latest connection: a port is used
    again once its connection closed), as request_keys() makes them. (By time, not by line: the
    log is written by a thread of its own, a little behind.)"""
    latest = {}
    for line in lines:
        accepted = ACCESS_ACCEPT.search(line)
        if accepted and int(accepted.group(2)) in ports:
            latest[int(accepted.group(2))] = accepted.group(1)
    conns = set(latest.values())
    keys = []
    for line in lines:
        if line[:27] < since:
            continue
        request = ACCESS_REQUEST.search(line)
        if not request or request.group(1) not in conns:
            continue
        op, rest = request.group(2), request.group(3)
        fields = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest))
        if op == "SRCH":
            keys.append(("SRCH", fields.get("base", ""), fields.get("filter", ""),
                         fields.get("attrs", "")))
        elif op == "BIND":
            keys.append(("BIND", fields.get("dn", ""), "", ""))
        else:
            keys.append((op, "", "", ""))
    return sorted(keys)


def summarize(events: list) -> list:
    """The requests of `events` in order, each with what came back (entries, result code,
    response controls), as one line each: "c1 SRCH base=... scope=sub filter=... attrs=...
    [ctrl] -> 1 entry, 0". Connections are renumbered from 1 in order of first use."""
    numbers = {}
    results = {}
    for event in events:
        key = (event["conn"], event.get("msgid"))
        if event["kind"] == "response":
            result = results.setdefault(key, {"entries": 0, "result": None, "controls": []})
            if event["op"] == "ENTRY":
                result["entries"] += 1
            else:
                result["result"] = event.get("result")
                result["controls"] = event.get("controls", [])
    lines = []
    for event in events:
        if event["kind"] != "request":
            continue
        conn = numbers.setdefault(event["conn"], len(numbers) + 1)
        words = [f"c{conn}", event["op"]]
        if event["op"] == "undecodable":  # TLS after a StartTLS, say.
            lines.append(f"c{conn} (not LDAP: {event.get('error')})")
            continue
        if event["op"] == "BIND":
            words.append("anonymous" if event.get("anonymous") else f'dn="{event.get("dn")}"')
        elif event["op"] == "SRCH":
            words += [f'base="{event["base"]}"', f"scope={event['scope']}",
                      f"filter={event['filter']}",
                      "attrs=" + (",".join(event["attrs"]) if event["attrs"] else "(all)")]
            if event.get("sizelimit"):
                words.append(f"sizelimit={event['sizelimit']}")
        elif event["op"] in ("MOD", "ADD", "DEL", "MODDN", "CMP"):
            words.append(f'dn="{event.get("dn")}"')
            if event.get("mods"):
                words.append("mods=" + ",".join(event["mods"]))
        elif event["op"] == "EXT":
            words.append(event.get("oid", "?"))
        elif event["op"] == "ABANDON":
            words.append(f"msgid={event.get('target')}")
        if event["controls"]:
            words.append("[" + ",".join(event["controls"]) + "]")
        result = results.get((event["conn"], event.get("msgid")))
        if result is not None and event["op"] not in ("ABANDON", "UNBIND"):
            answer = []
            if event["op"] == "SRCH":
                answer.append(f"{result['entries']} entr{'y' if result['entries'] == 1 else 'ies'}")
            answer.append(f"result {result['result']}")
            if result["controls"]:
                answer.append("[" + ",".join(result["controls"]) + "]")
            words.append("-> " + ", ".join(answer))
        lines.append(" ".join(words))
    return lines
