#!/usr/bin/python3
"""README's "Your own directory, step by step", typed as written.

The section's blocks are marked `<!-- quick-start:sh -->` (commands, run by bash) or
`<!-- quick-start:file FILE -->` (a file, written as it stands). They are taken in README's
order, and each command of a command block (a line, with its backslash continuations) is
known by how it starts:

- `scripts/setup.sh ... cmake --build --preset P --target numadir` (the build) is not run (the
  test is given a build); its preset must be the one whose `build/<preset>/server` directory
  the `export PATH=...` command puts on the PATH;
- `export PATH=...` and the `mkdir ... && cd ...` after it (the shell: the PATH, make and enter
  the working folder) are run first alone, then before each later command, in the same bash,
  as a reader's shell would have them;
- each `file` block is written into the folder the shell enters;
- every other command runs with `bash -e` and its output is checked: `numadir passwd` prints
  a hash that verifies its `-s` password; `chmod ... numadir check-config` exits 0 without a
  warning and leaves the config 0600; `numadir import` says it imported as many entries as its
  LDIF file holds; `numadir serve` (run in the background as written, `&` included) says it
  listens; `ldapsearch` returns the LDIF's user and `ldapwhoami` prints `dn:` and the user's
  DN. Every kind must be there, and a command of no kind fails the test.

Only what must differ in a test is replaced, and each replacement is printed:

- the numadir binary: the test runs the commands in a folder that stands for the clone, where
  the path the `shell` block puts on the PATH (`build/release/server`) holds a symlink named
  `numadir` to --numadir (the build's layout is checked: --numadir must end in
  `server/numadir`);
- the working folder: HOME is a fresh temporary directory, so `~/...` lands inside it (and no
  ~/.ldaprc of the machine's user is read);
- the port: the config file's listen URL (`ldap://127.0.0.1:3389`) is written with port 0,
  and the URL the server prints it listens on replaces that URL in the later command blocks,
  each of which must name it.

The server is stopped with SIGTERM at the end and must exit 0 (the test is the subreaper of
the background server, so it can wait for it after the bash that started it has gone).

Standard library only; ldap-utils for the commands.
"""
import base64
import ctypes
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (STARTUP_TIMEOUT_S, STOP_TIMEOUT_S, check, check_equal,  # noqa: E402
                             fail, parse_args, run_checks, wait_for)

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
README = os.path.join(REPO, "README.md")
BLOCK = re.compile(r"<!-- quick-start:([a-z-]+)(?: ([^ ]+))? -->\n```[a-z]*\n(.*?)```", re.S)
COMMAND_TIMEOUT_S = STARTUP_TIMEOUT_S
PR_SET_CHILD_SUBREAPER = 36


def readme_blocks():
    """[(name, file name or None, text)] of README's quick-start blocks, in order."""
    with open(README, encoding="utf-8") as stream:
        text = stream.read()
    blocks = [(m.group(1), m.group(2), m.group(3)) for m in BLOCK.finditer(text)]
    if not blocks:
        fail("README.md has no <!-- quick-start:... --> blocks")
    # A marker whose block did not match (a typo in the marker or the fence) must not be
    # skipped silently.
    check_equal(len(blocks), text.count("<!-- quick-start:"),
                "every quick-start marker of README.md is followed by a fenced block")
    return blocks


def verify_hash(value: str, password: str) -> bool:
    """Whether `value`, a {SSHA*} userPassword value, is a hash of `password`."""
    match = re.fullmatch(r"\{(SSHA|SSHA256|SSHA384|SSHA512)\}([A-Za-z0-9+/=]+)", value)
    if match is None:
        return False
    digest = {"SSHA": hashlib.sha1, "SSHA256": hashlib.sha256, "SSHA384": hashlib.sha384,
              "SSHA512": hashlib.sha512}[match.group(1)]
    raw = base64.b64decode(match.group(2))
    size = digest().digest_size
    return len(raw) > size and digest(password.encode() + raw[size:]).digest() == raw[:size]


def ldif_entries(text: str):
    """[{attribute (lower case): [values]}] of a small LDIF file (no folding, no base64)."""
    entries = []
    for record in re.split(r"\n\s*\n", text.strip()):
        entry = {}
        for line in record.split("\n"):
            if line and not line.startswith("#"):
                name, _, value = line.partition(":")
                entry.setdefault(name.strip().lower(), []).append(value.strip())
        entries.append(entry)
    return entries


class QuickStart:
    def __init__(self, args):
        self.args = args
        self.numadir = os.path.abspath(args.numadir)
        self.temp = tempfile.mkdtemp(prefix="numadir-quick-start-")
        self.clone = os.path.join(self.temp, "clone")  # Stands for the reader's clone.
        self.home = os.path.join(self.temp, "home")
        os.makedirs(self.clone)
        os.makedirs(self.home)
        self.env = dict(os.environ, HOME=self.home)
        self.shell = None
        self.workdir = None
        self.files = {}
        self.readme_url = None  # The config's listen URL as README writes it.
        self.url = None  # The URL the server listens on.
        self.server_pid = None
        self.server_out = []
        self.preset = None
        self.user = None

    def bash(self, block: str, what: str, expect_status: int = 0):
        """Runs the `shell` block, then `block`, with `bash -e`; returns (stdout, stderr)."""
        script = (self.shell + "\n" if self.shell is not None else "") + block
        done = subprocess.run(["bash", "-e", "-c", script], cwd=self.clone, env=self.env,
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        check(done.returncode == expect_status, f"{what}: exit status {expect_status}",
              f"{done.returncode}, stdout {done.stdout!r}, stderr {done.stderr!r}")
        return done.stdout, done.stderr

    # The blocks, by name.

    def build(self, text: str):
        preset = re.search(r"cmake --build --preset ([a-z]+)", text)
        check(preset is not None and "--target numadir" in text,
              "the build block builds the numadir target of a preset", text)
        self.preset = preset.group(1)
        check(self.numadir.endswith(os.path.join("server", "numadir")),
              "the numadir under test is build/<preset>/server/numadir, as README says",
              self.numadir)

    def shell_block(self, text: str):
        path = re.search(r'^export PATH="\$PWD/([^":$]+):\$PATH"$', text, re.M)
        check(path is not None, "the shell block puts a folder of the clone on the PATH", text)
        check_equal(path.group(1), f"build/{self.preset}/server",
                    "the folder the shell block puts on the PATH is the build block's")
        binary = os.path.join(self.clone, path.group(1), "numadir")
        os.makedirs(os.path.dirname(binary))
        os.symlink(self.numadir, binary)
        print(f"  replaced: {path.group(1)}/numadir in the clone is a symlink to {self.numadir}",
              flush=True)
        print(f"  replaced: HOME={self.home}", flush=True)
        self.shell = text
        out, _ = self.bash("pwd", "the shell block, then pwd")
        self.workdir = out.strip()
        check(self.workdir.startswith(self.home + os.sep) and os.path.isdir(self.workdir),
              "the shell block enters a new folder under HOME", self.workdir)
        out, _ = self.bash("command -v numadir", "the shell block, then command -v numadir")
        check_equal(out.strip(), binary, "numadir on the PATH is the build's")

    def file(self, name: str, text: str):
        check(name is not None and "/" not in name, "a file block names its file", str(name))
        if name.endswith(".toml"):
            listen = re.search(r'^listen = \["(ldap://[0-9.]+):([0-9]+)"\]', text, re.M)
            check(listen is not None, "the config listens on one ldap:// URL with a port", text)
            self.readme_url = f"{listen.group(1)}:{listen.group(2)}"
            text = text.replace(listen.group(0), f'listen = ["{listen.group(1)}:0"]')
            print(f"  replaced: {self.readme_url} by port 0 in {name}", flush=True)
        path = os.path.join(self.workdir, name)
        with open(path, "w") as stream:
            stream.write(text)
        self.files[name] = text
        print(f"  wrote {path}", flush=True)

    def passwd(self, text: str):
        commands = [line for line in text.split("\n") if line.strip()]
        out, _ = self.bash(text, "numadir passwd")
        hashes = out.split()
        check_equal(len(hashes), len(commands), "one hash printed per numadir passwd command")
        for command, value in zip(commands, hashes):
            words = shlex.split(command)
            check("-s" in words, "the passwd command gives its password with -s", command)
            password = words[words.index("-s") + 1]
            check(verify_hash(value, password), f"`{command}` prints a hash of {password!r}",
                  value)

    def check_config(self, text: str):
        out, err = self.bash(text, "check-config")
        check("warning" not in (out + err).lower(),
              "check-config warns of nothing (the config is mode 0600)", out + err)
        mode = os.stat(os.path.join(self.workdir, "numadir.toml")).st_mode & 0o777
        check_equal(oct(mode), oct(0o600), "numadir.toml's mode after the check block")

    def import_block(self, text: str):
        names = [name for name in shlex.split(text) if name.endswith(".ldif")]
        check(len(names) == 1 and names[0] in self.files,
              "the import command names an LDIF file the quick start wrote", text)
        entries = ldif_entries(self.files[names[0]])
        out, err = self.bash(text, "numadir import")
        check(re.search(rf"\b{len(entries)} entries\b", out + err) is not None,
              f"import says it imported the {len(entries)} entries of {names[0]}", out + err)
        self.user = next(e for e in entries if "userpassword" in e)

    def serve(self, text: str):
        check(text.strip().endswith("&"), "serve runs in the background, as written", text)
        # The server outlives the bash that starts it: as the subreaper, this process becomes
        # its parent and can stop it and read its exit status.
        libc = ctypes.CDLL(None, use_errno=True)
        check_equal(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0,
                    "this test is the subreaper of the background server")
        starter = subprocess.Popen(["bash", "-e", "-c", self.shell + "\n" + text],
                                   cwd=self.clone, env=self.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
        listening = threading.Event()  # Set at the listening line, or when the output ends.

        def read():
            for line in starter.stdout:  # Also the server's: it inherits the pipe.
                self.server_out.append(line)
                if "listening on" in line:
                    listening.set()
            listening.set()
        threading.Thread(target=read, daemon=True).start()
        check_equal(starter.wait(timeout=COMMAND_TIMEOUT_S), 0, "the serve block's bash exits 0")
        listening.wait(STARTUP_TIMEOUT_S)
        check(any("listening on" in line for line in self.server_out),
              "the server says it listens", "".join(self.server_out))
        self.server_pid = wait_for(self.find_server, timeout=10)
        check(self.server_pid, "the server runs in the background, a child of this test")
        line = next(line for line in self.server_out if "listening on" in line)
        url = re.search(r"listening on (ldap://[0-9.]+:[0-9]+)", line)
        check(url is not None, "the listening line names an ldap:// URL", line)
        self.url = url.group(1)
        print(f"  replaced: {self.readme_url} by {self.url} in the later commands", flush=True)

    def find_server(self):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as stream:
                    stat = stream.read()
                exe = os.readlink(f"/proc/{entry}/exe")
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid() and os.path.samefile(exe, self.numadir):
                return int(entry)
        return None

    def with_url(self, text: str) -> str:
        check(self.readme_url in text, "the command names the server's URL from the config",
              text)
        return text.replace(self.readme_url, self.url)

    def search(self, text: str):
        out, _ = self.bash(self.with_url(text), "ldapsearch")
        dn = self.user["dn"][0]
        check(re.search(rf"^dn: {re.escape(dn)}$", out, re.M | re.I) is not None,
              f"ldapsearch returns {dn}", out)
        check("# numEntries: 1" in out, "ldapsearch returns one entry", out)
        for attribute in ("cn", "mail"):
            if attribute in shlex.split(text):
                check(f"{attribute}: {self.user[attribute][0]}" in out,
                      f"ldapsearch returns the user's {attribute}", out)

    def whoami(self, text: str):
        out, _ = self.bash(self.with_url(text), "ldapwhoami")
        check_equal(out.strip().lower(), "dn:" + self.user["dn"][0].lower(),
                    "ldapwhoami prints the user's DN")

    def stop(self):
        check(self.server_pid is not None, "the server was started")
        pid, self.server_pid = self.server_pid, None
        os.kill(pid, signal.SIGTERM)

        def reaped():
            got, status = os.waitpid(pid, os.WNOHANG)
            return (status,) if got == pid else None
        result = wait_for(reaped, timeout=STOP_TIMEOUT_S)
        if result is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            fail(f"the server did not stop within {STOP_TIMEOUT_S} s of SIGTERM")
        check_equal(os.waitstatus_to_exitcode(result[0]), 0,
                    "the server's exit status after SIGTERM")

    # How each command of a command block starts, and what checks it.
    KINDS = [("build", re.compile(r"scripts/setup\.sh ")), ("shell", re.compile(r"export PATH=")),
             ("shell", re.compile(r"mkdir ")), ("passwd", re.compile(r"numadir passwd ")),
             ("check", re.compile(r"chmod .*numadir check-config ")),
             ("import", re.compile(r"numadir import ")), ("serve", re.compile(r"numadir serve ")),
             ("search", re.compile(r"ldapsearch ")), ("whoami", re.compile(r"ldapwhoami "))]

    def run(self):
        handlers = {"build": self.build, "passwd": self.passwd, "check": self.check_config,
                    "import": self.import_block, "serve": self.serve, "search": self.search,
                    "whoami": self.whoami}
        seen = []
        shell = []  # The shell's commands, run as one when the last of them has come.
        for name, argument, text in readme_blocks():
            print(f"  block {name}{' ' + argument if argument else ''}", flush=True)
            if name == "file":
                self.file(argument, text)
                seen.append(name)
                continue
            if name != "sh":
                fail(f"README.md: unknown quick-start block {name!r}")
            for command in commands_of(text):
                kind = next((kind for kind, start in self.KINDS if start.match(command)), None)
                if kind is None:
                    fail(f"README.md: a quick-start command of no known kind: {command!r}")
                print(f"  {kind}: {command.splitlines()[0]}", flush=True)
                if kind == "shell":
                    shell.append(command)
                    if command.startswith("mkdir "):
                        self.shell_block("\n".join(shell))
                else:
                    handlers[kind](command)
                seen.append(kind)
        check_equal(sorted(set(seen)), sorted(set(handlers) | {"file", "shell"}),
                    "README's quick start has every kind of command and a file")


def commands_of(text: str):
    """The commands of a command block: its non-empty lines, each with its continuations."""
    out = []
    for line in text.split("\n"):
        if out and out[-1].endswith("\\"):
            out[-1] += "\n" + line
        elif line.strip():
            out.append(line)
    return out


def main() -> int:
    args = parse_args(__doc__)
    quick = QuickStart(args)

    try:
        return run_checks("readme quick start", [
            ("README's blocks, typed as written", quick.run),
            ("the server stops on SIGTERM and exits 0", quick.stop),
        ])
    finally:
        if quick.server_pid is not None:
            os.kill(quick.server_pid, signal.SIGKILL)
        if args.keep:
            print(f"kept {quick.temp}")
        else:
            shutil.rmtree(quick.temp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
