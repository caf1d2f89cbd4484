#!/usr/bin/python3
"""A private 389 Directory Server instance (Debian's 389-ds-base 2.3: dscreate, ns-slapd) for the
benchmarks and tests that put it beside numadir and OpenLDAP slapd.

  instance = ds389.Ds389Instance.create(ldif, root_dn=ROOT_DN, root_pw="secret",
                                        access_log=False, tls=None)
  instance.start()            # ns-slapd in the foreground: instance.process.pid is the server
  ... ldap://127.0.0.1:{instance.port}, ldaps://127.0.0.1:{instance.ldaps_port} ...
  instance.stop()             # SIGTERM, wait, and the instance's folder is removed

What the instance is:
- Every file under one fresh folder /tmp/numadir-389ds-XXXX (mode 0700, owned by the user the
  server runs as: dirsrv when we are root, else ourselves). dscreate reads its paths from
  $PREFIX/share/dirsrv/inf/defaults.inf when PREFIX is set, and looks an instance up as
  $PREFIX/etc/dirsrv/slapd-NAME/dse.ldif: the folder is that PREFIX, with a copy of Debian's
  defaults.inf whose sysconf, config, schema, cert, db, log, lock, run, ldif, backup and tmp
  paths are inside it and whose with_systemd is 0 (the .inf's `systemd = False` alone still
  ends dscreate with `systemctl start`), and copies of /etc/dirsrv/schema and
  /etc/dirsrv/config. Nothing is written to /etc, /var or /run, and no service is started.
- One backend userRoot for dc=example,dc=com (`db_lib`: Berkeley DB, 2.3's default, or LMDB).
  Its indexes are those slapd and numadir get, uid eq and objectClass eq (both in 389-ds's
  defaults, checked in dse.ldif after dscreate), and 389-ds's system indexes (entryrdn,
  parentid, aci, nsuniqueid, ...): the other default indexes (cn, sn, mail, member, memberOf,
  ...; nsSystemIndex false) are removed from dse.ldif before the import. The rootdn is the
  benchmarks' rootdn, its password set with pwdhash (SSHA) into dse.ldif while the server is
  stopped.
- cn=config: nsslapd-listenhost 127.0.0.1, passwordStorageScheme SSHA (the users' stored
  {SSHA} values from perf/gen_users.py bind as they are), the access log on or off
  (nsslapd-accesslog-logging-enabled; when on, buffered as by default, to <folder>/log/access).
- ACIs on the suffix entry equivalent to numadir's default policy (and perf/bench.py's
  SLAPD_ACCESS): everyone (anonymous or bound) may read, search and compare every attribute but
  userPassword; an entry's own DN may write it (userPassword included); userPassword is
  otherwise unreadable. Binds are not governed by ACIs in 389-ds ("anonymous auth").
- The users are imported offline (ns-slapd ldif2db) from a copy of the LDIF with the ACIs added
  to the suffix entry. Measured on 2 shared cores: Berkeley DB about 300 entries/s (10,000
  users in 34 s, 100,000 in about 5.5 min: its import threads mostly sleep), LMDB about 2,000
  entries/s (100,000 users, instance included, in 45 s).
- TLS (`tls`: perf/bench.py make_certificate()'s files): the CA is trusted and the key and
  certificate imported as "Server-Cert" (pk12util) into the instance's NSS database,
  nsslapd-security on, ldaps:// on its own port.
- The server runs as `ns-slapd -D <config> -i <pidfile> -d 0`: -d keeps it in the foreground,
  so the pid we hold is the server's (its CPU comes from /proc/PID/stat like the others').

Standard library only (the tools are 389-ds-base's, pk12util and certutil from libnss3-tools,
which it depends on, and openssl).
"""
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

NS_SLAPD = "/usr/sbin/ns-slapd"
DSCREATE = "/usr/sbin/dscreate"
PWDHASH = "/usr/bin/pwdhash"
DEFAULTS_INF = "/usr/share/dirsrv/inf/defaults.inf"
SYSTEM_CONFIG = "/etc/dirsrv"  # schema/ and config/, copied into each instance's prefix.
INSTANCE_NAME = "bench"
SUFFIX = "dc=example,dc=com"
BACKEND = "userRoot"
STARTUP_TIMEOUT_S = 60
STOP_TIMEOUT_S = 60

# numadir's default access policy (server/operations/access_control.h) in 389-ds's terms.
ACIS = [
    '(targetattr!="userPassword")(version 3.0; acl "numadir default: read"; '
    'allow (read, search, compare) userdn="ldap:///anyone";)',
    '(targetattr="*")(version 3.0; acl "numadir default: self write"; '
    'allow (write) userdn="ldap:///self";)',
]


def available():
    """Returns "" when 389-ds can be run here, else why not (for a skip or a note)."""
    for tool in (NS_SLAPD, DSCREATE, PWDHASH):
        if not os.access(tool, os.X_OK):
            return (f"{tool} is missing: install Debian's 389-ds-base package "
                    "(scripts/setup.sh does)")
    if os.path.isdir(SYSTEM_CONFIG) and not os.access(SYSTEM_CONFIG, os.R_OK | os.X_OK):
        return (f"{SYSTEM_CONFIG} is not readable here (mode 0750, user dirsrv): run as root or "
                "in group dirsrv")
    for path in (DEFAULTS_INF, os.path.join(SYSTEM_CONFIG, "schema"),
                 os.path.join(SYSTEM_CONFIG, "config")):
        if not os.path.exists(path):
            return f"{path} is missing (389-ds-base is not fully installed)"
    if os.getuid() == 0:
        try:
            pwd.getpwnam("dirsrv")
        except KeyError:
            return "no user dirsrv (389-ds-base's package creates it) to run ns-slapd as"
    return ""


def version():
    """ns-slapd's version line, e.g. "389-Directory/2.3.1 B2023.013.0000", or "unknown"."""
    try:
        result = subprocess.run([NS_SLAPD, "-v"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    for line in (result.stdout + result.stderr).splitlines():
        if line.startswith("389-Directory/"):
            return line.strip()
    return "unknown"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pwdhash(password, scheme="SSHA"):
    """`password` hashed by 389-ds's pwdhash, e.g. "{SSHA}..."."""
    return subprocess.run([PWDHASH, "-s", scheme, password], capture_output=True, text=True,
                          check=True).stdout.strip()


def read_ldif_records(path):
    """dse.ldif as a list of records, each a list of unfolded lines (dn line first)."""
    with open(path) as stream:
        text = stream.read()
    records = []
    for block in re.split(r"\n\s*\n", text):
        lines = []
        for line in block.split("\n"):
            if line.startswith(" ") and lines:
                lines[-1] += line[1:]
            elif line:
                lines.append(line)
        if lines:
            records.append(lines)
    return records


def edit_dse(path, dn, replace):
    """Sets attributes of entry `dn` in the dse.ldif at `path` (the server stopped): every value
    of each attribute named in `replace` ({name: [values]}) is replaced by the given ones.
    Errors: KeyError if `dn` is not there."""
    records = read_ldif_records(path)
    wanted = {name.lower() for name in replace}
    for record in records:
        if record[0].lower() == f"dn: {dn}".lower():
            kept = [record[0]] + [line for line in record[1:]
                                  if line.split(":", 1)[0].lower() not in wanted]
            for name, values in replace.items():
                kept += [f"{name}: {value}" for value in values]
            record[:] = kept
            break
    else:
        raise KeyError(f"{path}: no entry {dn}")
    with open(path, "w") as stream:
        stream.write("\n\n".join("\n".join(record) for record in records) + "\n\n")


def drop_user_indexes(path, backend, keep):
    """Removes from dse.ldif the backend's non-system indexes (nsSystemIndex: false: cn, sn,
    mail, member, memberOf, ...) but those named in `keep` (lower case). Returns the names
    removed."""
    records = read_ldif_records(path)
    tail = f",cn=index,cn={backend},cn=ldbm database,cn=plugins,cn=config".lower()
    kept, dropped = [], []
    for record in records:
        dn = record[0].lower()
        name = ""
        if dn.endswith(tail) and dn.startswith("dn: cn="):
            name = dn[len("dn: cn="):-len(tail)]
        if (name and "," not in name and name not in keep and
                any(line.lower() == "nssystemindex: false" for line in record)):
            dropped.append(name)
        else:
            kept.append(record)
    with open(path, "w") as stream:
        stream.write("\n\n".join("\n".join(record) for record in kept) + "\n\n")
    return dropped


def dse_entry(path, dn):
    """The unfolded lines of entry `dn` in dse.ldif, or None."""
    for record in read_ldif_records(path):
        if record[0].lower() == f"dn: {dn}".lower():
            return record
    return None


def _prefix_defaults(prefix):
    """Debian's defaults.inf with every instance path under `prefix` and without systemd."""
    per_instance = {
        "with_systemd": "0",
        "sysconf_dir": f"{prefix}/etc",
        "initconfig_dir": f"{prefix}/etc/default",
        "config_dir": f"{prefix}/etc/dirsrv/slapd-{{instance_name}}",
        "schema_dir": f"{prefix}/etc/dirsrv/slapd-{{instance_name}}/schema",
        "cert_dir": f"{prefix}/etc/dirsrv/slapd-{{instance_name}}",
        "local_state_dir": f"{prefix}/var",
        "run_dir": f"{prefix}/run",
        "ldapi": f"{prefix}/run/slapd.socket",
        "pid_file": f"{prefix}/run/slapd.pid",
        "tmpfiles_d": f"{prefix}/tmpfiles.d",
        "tmp_dir": f"{prefix}/tmp",
        "lock_dir": f"{prefix}/lock/slapd-{{instance_name}}",
        "log_dir": f"{prefix}/log",
        "access_log": f"{prefix}/log/access",
        "audit_log": f"{prefix}/log/audit",
        "error_log": f"{prefix}/log/errors",
        "security_log": f"{prefix}/log/security",
        "db_dir": f"{prefix}/db",
        "db_home_dir": f"{prefix}/db",
        "backup_dir": f"{prefix}/bak",
        "ldif_dir": f"{prefix}/ldif",
    }
    out = []
    with open(DEFAULTS_INF) as stream:
        for line in stream:
            key = line.split("=", 1)[0].strip()
            if "=" in line and not line.lstrip().startswith(";") and key in per_instance:
                line = f"{key} = {per_instance[key]}\n"
            out.append(line)
    return "".join(out)


class Ds389Instance:
    """One private 389-ds instance. Duck-types perf/bench.py's Server (name, process, port,
    ldaps_port, stop()). Not thread-safe: one thread creates, starts and stops it."""

    def __init__(self, folder, name, port, ldaps_port, user):
        self.folder = folder  # The PREFIX: every file of the instance is under it.
        self.name = name
        self.port = port
        self.ldaps_port = ldaps_port  # None: no TLS.
        self.user = user
        self.process = None  # subprocess.Popen of ns-slapd once started.
        self.config_dir = os.path.join(folder, "etc", "dirsrv", f"slapd-{INSTANCE_NAME}")
        self.dse = os.path.join(self.config_dir, "dse.ldif")
        self.access_log = os.path.join(folder, "log", "access")
        self.error_log = os.path.join(folder, "log", "errors")
        self.pid_file = os.path.join(folder, "run", "slapd.pid")

    @property
    def url(self):
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def ldaps_url(self):
        return f"ldaps://127.0.0.1:{self.ldaps_port}" if self.ldaps_port else None

    @classmethod
    def create(cls, ldif, root_dn, root_pw="secret", access_log=False, tls=None, name="389ds",
               parent="/tmp", log=None, db_lib="bdb"):
        """Creates the instance (dscreate), configures it (dse.ldif) and imports `ldif`
        (ns-slapd ldif2db); it is left stopped. `tls`: {"ca", "certificate", "key"} PEM paths.
        `db_lib`: the backend's database library, "bdb" (389-ds 2.3's default) or "mdb" (LMDB,
        as slapd's back-mdb and numadir).
        `log`: a stream for the tools' output (None: discarded, shown on failure).
        Errors: RuntimeError naming the step and the tool's output; the folder is removed."""
        why = available()
        if why:
            raise RuntimeError(f"389-ds: {why}")
        folder = tempfile.mkdtemp(prefix="numadir-389ds-", dir=parent)
        user = "dirsrv" if os.getuid() == 0 else pwd.getpwuid(os.getuid()).pw_name
        instance = cls(folder, name, free_port(), free_port() if tls else None, user)
        try:
            instance._create(ldif, root_dn, root_pw, access_log, tls, log, db_lib)
        except BaseException:
            instance.remove()
            raise
        return instance

    def _run(self, step, command, log, env=None, cwd=None):
        result = subprocess.run(command, capture_output=True, text=True, env=env,
                                cwd=cwd or self.folder, timeout=600)
        if log is not None:
            log.write(f"389-ds {step}: {' '.join(command)}\n{result.stdout}{result.stderr}")
        if result.returncode != 0:
            raise RuntimeError(f"389-ds {step} failed ({result.returncode}): "
                               f"{' '.join(command)}\n{(result.stdout + result.stderr)[-3000:]}")
        return result

    def _chown(self):
        if os.getuid() != 0:
            return
        entry = pwd.getpwnam(self.user)
        for root, dirs, files in os.walk(self.folder):
            for item in [root] + [os.path.join(root, f) for f in dirs + files]:
                os.lchown(item, entry.pw_uid, entry.pw_gid)

    def _create(self, ldif, root_dn, root_pw, access_log, tls, log, db_lib):
        prefix = self.folder
        os.makedirs(os.path.join(prefix, "share", "dirsrv", "inf"))
        os.makedirs(os.path.join(prefix, "etc", "dirsrv"))
        os.makedirs(os.path.join(prefix, "tmp"))
        for part in ("schema", "config"):
            shutil.copytree(os.path.join(SYSTEM_CONFIG, part),
                            os.path.join(prefix, "etc", "dirsrv", part))
        with open(os.path.join(prefix, "share", "dirsrv", "inf", "defaults.inf"), "w") as out:
            out.write(_prefix_defaults(prefix))
        root_hash = pwdhash(root_pw)
        inf = os.path.join(prefix, "instance.inf")
        with open(inf, "w") as stream:
            stream.write(f"""[general]
config_version = 2
full_machine_name = localhost
strict_host_checking = False
selinux = False
systemd = False
start = False

[slapd]
instance_name = {INSTANCE_NAME}
user = {self.user}
group = {pwd_group(self.user)}
port = {self.port}
secure_port = {self.ldaps_port or free_port()}
root_dn = {root_dn}
root_password = {root_hash}
self_sign_cert = False
db_lib = {db_lib}

[backend-{BACKEND.lower()}]
suffix = {SUFFIX}
create_suffix_entry = False
sample_entries = no
""")
        self._chown()
        env = dict(os.environ, PREFIX=prefix)
        self._run("dscreate", [DSCREATE, "from-file", inf], log, env=env)
        if self.running_pid() is not None:
            raise RuntimeError("389-ds dscreate left ns-slapd running (start = False)")
        for index in ("uid", "objectclass"):
            entry = dse_entry(self.dse, f"cn={index},cn=index,cn={BACKEND.lower()},"
                              "cn=ldbm database,cn=plugins,cn=config") or []
            if "nsIndexType: eq" not in entry:
                raise RuntimeError(f"389-ds: no eq index on {index} in {self.dse}")
        # Only the indexes slapd and numadir have besides 389-ds's own (entryrdn, parentid,
        # objectclass, aci, nsuniqueid, ...): uid eq. Its defaults (cn, sn, mail, member,
        # memberOf, ... in several kinds each) would make the import several times slower and
        # every write maintain indexes the others do not.
        drop_user_indexes(self.dse, BACKEND.lower(), {"uid"})
        # The rootdn's password, set again here: dscreate's did not always bind afterwards.
        config = {
            "nsslapd-rootpw": [root_hash],
            "nsslapd-listenhost": ["127.0.0.1"],
            "passwordStorageScheme": ["SSHA"],
            "nsslapd-accesslog-logging-enabled": ["on" if access_log else "off"],
            "nsslapd-security": ["on" if tls else "off"],
        }
        if tls:
            config["nsslapd-securePort"] = [str(self.ldaps_port)]
            self._import_tls(tls, log)
        edit_dse(self.dse, "cn=config", config)
        # The users, with the ACIs on the suffix entry, in a file the server's user can read.
        users = os.path.join(prefix, "ldif", "users.ldif")
        add_acis(ldif, users, SUFFIX, ACIS)
        self._chown()
        self._run("ldif2db", [NS_SLAPD, "ldif2db", "-D", self.config_dir, "-n", BACKEND,
                              "-i", users, "-q"], log)
        os.remove(users)

    def _import_tls(self, tls, log):
        """The CA (trusted for servers) and the server key and certificate ("Server-Cert", the
        nickname cn=RSA,cn=encryption,cn=config names) into the instance's NSS database."""
        db = f"sql:{self.config_dir}"
        password_file = os.path.join(self.config_dir, "pwdfile.txt")
        self._run("certutil", ["certutil", "-A", "-d", db, "-n", "numadir-bench-ca", "-t",
                               "CT,,", "-a", "-i", tls["ca"], "-f", password_file], log)
        p12 = os.path.join(self.folder, "tmp", "server.p12")
        self._run("openssl pkcs12", ["openssl", "pkcs12", "-export", "-in", tls["certificate"],
                                     "-inkey", tls["key"], "-name", "Server-Cert", "-out", p12,
                                     "-passout", "pass:bench"], log)
        self._run("pk12util", ["pk12util", "-i", p12, "-d", db, "-k", password_file, "-W",
                               "bench"], log)
        os.remove(p12)

    def set_access_log(self, enabled):
        """Turns the access log on or off in dse.ldif. Requires: the server stopped."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("389-ds: set_access_log while the server runs")
        edit_dse(self.dse, "cn=config",
                 {"nsslapd-accesslog-logging-enabled": ["on" if enabled else "off"]})

    def running_pid(self):
        """The pid in the pid file if that process lives, else None."""
        try:
            with open(self.pid_file) as stream:
                pid = int(stream.read().strip() or 0)
        except (OSError, ValueError):
            return None
        if pid <= 0:
            return None
        try:
            os.kill(pid, 0)
        except OSError:
            return None
        with open(f"/proc/{pid}/stat") as stream:
            if stream.read().split(")")[-1].split()[0] == "Z":
                return None
        return pid

    def start(self, timeout_s=STARTUP_TIMEOUT_S):
        """Starts ns-slapd in the foreground and waits until its ports accept connections.
        Errors: RuntimeError with the tail of its error log."""
        self.process = subprocess.Popen([NS_SLAPD, "-D", self.config_dir, "-i", self.pid_file,
                                         "-d", "0"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, cwd=self.folder)
        for port in filter(None, (self.port, self.ldaps_port)):
            deadline = time.time() + timeout_s
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(f"389-ds: ns-slapd exited with {self.process.returncode}:"
                                       f"\n{self.error_tail()}")
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    if time.time() > deadline:
                        self.stop(remove=False)
                        raise RuntimeError(f"389-ds: nothing listens on {port} after "
                                           f"{timeout_s}s:\n{self.error_tail()}")
                    time.sleep(0.1)
        return self

    def error_tail(self, lines=30):
        try:
            with open(self.error_log) as stream:
                return "".join(stream.readlines()[-lines:])
        except OSError:
            return "(no error log)"

    def stop(self, remove=True):
        """SIGTERM, then waits (SIGKILL after STOP_TIMEOUT_S); `remove`: the folder too."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if remove:
            self.remove()

    def remove(self):
        shutil.rmtree(self.folder, ignore_errors=True)


def pwd_group(user):
    import grp
    return grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name


def add_acis(source, target, suffix, acis):
    """Copies the LDIF `source` to `target` with `acis` added to the entry `suffix`."""
    marker = f"dn: {suffix}".lower()
    added = False
    with open(source) as stream, open(target, "w") as out:
        for line in stream:
            out.write(line)
            if not added and line.rstrip("\n").lower() == marker:
                out.writelines(f"aci: {aci}\n" for aci in acis)
                added = True
    if not added:
        raise RuntimeError(f"{source}: no entry {suffix} to put the ACIs on")
