#!/usr/bin/python3
"""The side-by-side benchmark: authrate against the floor server, OpenLDAP slapd, 389 Directory
Server (when 389-ds-base is installed), numadir `percpu` and numadir `single`, on the same
generated users, at several connection counts, each
point repeated and interleaved, medians reported. Run by perf/bench.sh (which builds first).

  perf/bench.py --build-dir build/release [--users 100000] [--connections 16,64,256]
                [--repeat 3] [--duration 10] [--warmup 2] [--results perf/RESULTS.md]
                [--tls | --tls-only] [--tls-connections 16] [--tls-key-type rsa]
                [--baseline-build DIR --servers slapd,percpu,percpu-base,single,single-base]
                [--servers floor,slapd,389ds,389ds-log,percpu,single] [--389ds-db-lib mdb]

Every server runs at once, idle while another is measured (an idle server costs nothing), so
the points of one repetition follow each other within seconds. Each server's CPU (utime +
stime from /proc/PID/stat over the measured window) comes from authrate --server-pid as µs per
auth. Writes the tables between the bench markers of RESULTS.md and a PNG plot (gnuplot).

389-ds (servers 389ds and 389ds-log, its access log on) is a private instance made by
perf/ds389.py: dscreate under a prefix of its own in /tmp, the same users imported with
ldif2db, numadir's access rules as ACIs, ns-slapd in the foreground. Without 389-ds-base the
run goes on without it and its section says so.

--tls adds TLS points (--tls-only runs only those): one throwaway certificate (made with the
openssl command) for slapd (TLSCertificateFile / TLSCertificateKeyFile, an ldaps:// URL),
389-ds (imported into its NSS database, nsslapd-security on) and numadir ([tls] certificate /
key, an ldaps:// listen URL); authrate over ldap:// and ldaps://
with persistent connections, and with a new connection per auth (--reconnect, then with
--tls-resume) to show what a handshake costs. Written between the bench-tls markers.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ds389  # noqa: E402  (perf/ds389.py: the private 389-ds instance)

SUFFIX = "dc=example,dc=com"
PEOPLE = f"ou=people,{SUFFIX}"
ROOT_DN = f"cn=admin,{SUFFIX}"
BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"
TLS_BEGIN = "<!-- bench-tls:begin -->"
TLS_END = "<!-- bench-tls:end -->"
TLS_HEADING = "TLS: the side-by-side benchmark over ldaps:// (perf/bench.sh --tls)"

# The TLS points: (label, URL scheme, authrate options). Each TLS point has its cleartext twin
# (same options over ldap://) so what TLS adds shows as a difference.
TLS_VARIANTS = [
    ("ldap", "ldap", []),
    ("ldaps", "ldaps", []),
    ("ldap reconnect", "ldap", ["--reconnect"]),
    ("ldaps reconnect", "ldaps", ["--reconnect"]),
    ("ldaps reconnect resume", "ldaps", ["--reconnect", "--tls-resume"]),
    # TLS 1.2, whose resumption is an abbreviated handshake (no key exchange, no signature),
    # where TLS 1.3's resumption still runs an (EC)DHE exchange (psk_dhe_ke).
    ("ldaps reconnect tls1.2", "ldaps", ["--reconnect", "--tls-max-version", "1.2"]),
    ("ldaps reconnect resume tls1.2", "ldaps",
     ["--reconnect", "--tls-resume", "--tls-max-version", "1.2"]),
]

# numadir's default access policy (server/operations/access_control.h) in slapd's terms, so both servers
# check the same rules on every auth (perf/ds389.py ACIS: the same for 389-ds).
SLAPD_ACCESS = """access to attrs=userPassword
  by self =wx
  by anonymous auth
  by * none
access to *
  by self write
  by users read
  by anonymous read
"""


# The [database] table of every numadir the benchmarks start: the generated users' suffix and
# the indexes slapd gets too.
DATABASE_TOML = f"""[database]
path = "db"
suffix = "{SUFFIX}"
map_size = "8GiB"
indexes = ["objectClass eq", "uid eq"]
"""


def generate_users(work, users, scheme=None):
    """Writes perf/gen_users.py's `users` users (passwords stored per `scheme`, None: its
    default) to `work`/users.ldif. Returns the file's path."""
    ldif = os.path.join(work, "users.ldif")
    command = ["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "gen_users.py"), "--users", str(users)]
    if scheme is not None:
        command += ["--scheme", scheme]
    with open(ldif, "w") as stream:
        subprocess.run(command, stdout=stream, check=True)
    return ldif


def root_password(build):
    """The rootdn's password "secret", hashed by `numadir passwd`."""
    return subprocess.run([f"{build}/server/numadir", "passwd", "-s", "secret"],
                          capture_output=True, text=True, check=True).stdout.strip()


def median_point(summaries, rate_key="auths_per_sec", cpu_key="server_cpu_us_per_auth"):
    """One point from the authrate JSON summaries of its repetitions: median rate, latency and
    server CPU per operation, peak RSS, and the errors of all of them."""
    return {
        "rate": statistics.median(s[rate_key] for s in summaries),
        "p50": statistics.median(s["latency_ms"]["p50"] for s in summaries),
        "p99": statistics.median(s["latency_ms"]["p99"] for s in summaries),
        "cpu": statistics.median((s.get(cpu_key) or 0) for s in summaries),
        "rss": max((s.get("server_peak_rss_kib") or 0) for s in summaries),
        "errors": sum(s["errors"]["total"] for s in summaries),
    }


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_line(process, pattern, timeout_s=120):
    """Reads process stdout until a line matches `pattern`; returns the match."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}")
            continue
        match = re.search(pattern, line)
        if match:
            return match
    raise RuntimeError(f"no line matching {pattern!r} within {timeout_s}s")


def wait_for_port(port, process, timeout_s=60):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port} after {timeout_s}s")


class Server:
    def __init__(self, name, process, port, ldaps_port=None):
        self.name = name
        self.process = process
        self.port = port
        self.ldaps_port = ldaps_port  # None: no TLS.

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_floor(build):
    process = subprocess.Popen([f"{build}/perf/floor-server", "--listen", "127.0.0.1:0"],
                               stdout=subprocess.PIPE, text=True)
    port = int(wait_for_line(process, r"listening on 127\.0\.0\.1:(\d+)").group(1))
    return Server("floor", process, port)


def make_certificate(work, key_type):
    """A throwaway CA and a server certificate for 127.0.0.1 / localhost, signed by it, made
    with the openssl command. Returns {"ca", "certificate" (leaf then CA), "key"} paths."""
    folder = os.path.join(work, "tls")
    os.makedirs(folder)
    new_key = (["-newkey", "rsa:2048"] if key_type == "rsa" else
               ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])

    def openssl(*command):
        subprocess.run(["openssl"] + list(command), cwd=folder, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    openssl("req", "-x509", *new_key, "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days",
            "2", "-subj", "/CN=numadir bench CA", "-addext",
            "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    openssl("req", *new_key, "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj",
            "/CN=localhost")
    with open(os.path.join(folder, "server.ext"), "w") as stream:
        stream.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                     "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-set_serial", "2", "-days", "2", "-out", "leaf.crt", "-extfile", "server.ext")
    with open(os.path.join(folder, "server.crt"), "w") as out:
        for part in ("leaf.crt", "ca.crt"):
            with open(os.path.join(folder, part)) as stream:
                out.write(stream.read())
    return {"ca": os.path.join(folder, "ca.crt"),
            "certificate": os.path.join(folder, "server.crt"),
            "key": os.path.join(folder, "server.key")}


# The emulated topology of the percpu-2node server: two nodes of one PU each.
TWO_NODES = "numa:2 core:1 pu:1"


def start_numadir(build, work, name, dispatcher, ldif, cleartext=False, tls=None,
                  database_extra="", threads_extra="", extra="", wrapper=(), server_extra=""):
    """`tls`: make_certificate()'s files: numadir also listens on ldaps://. `database_extra` /
    `threads_extra`: more lines of the [database] / [threads] table (e.g. 'durability = "sync"',
    'topology = "numa:2 core:1 pu:1"'); `server_extra`: of the [server] table; `extra`: more
    tables (e.g. a [log]); `wrapper`: a command the server runs under (e.g. valgrind)."""
    folder = os.path.join(work, name)
    os.makedirs(folder)
    root_pw = root_password(build)
    with open(os.path.join(folder, "numadir.toml"), "w") as stream:
        stream.write(f"""{DATABASE_TOML}{database_extra}
[server]
listen = ["ldap://127.0.0.1:0"{', "ldaps://127.0.0.1:0"' if tls else ""}]
rootdn = "{ROOT_DN}"
rootpw = "{root_pw}"
{server_extra}
[threads]
dispatcher = "{dispatcher}"
{threads_extra}

[passwords]
allow_cleartext = {"true" if cleartext else "false"}
{extra}
""")
        if tls:
            stream.write(f"""
[tls]
certificate = "{tls['certificate']}"
key = "{tls['key']}"
""")
    config = os.path.join(folder, "numadir.toml")
    subprocess.run([f"{build}/server/numadir", "import", "-c", config, "--no-progress", ldif],
                   check=True, stdout=subprocess.DEVNULL)
    process = subprocess.Popen([*wrapper, f"{build}/server/numadir", "serve", "-c", config],
                               stdout=subprocess.PIPE, text=True)
    port = int(wait_for_line(process, r"listening on ldap://127\.0\.0\.1:(\d+)").group(1))
    ldaps_port = None
    if tls:
        try:
            ldaps_port = int(wait_for_line(process, r"listening on ldaps://127\.0\.0\.1:(\d+)",
                                           timeout_s=30).group(1))
        except RuntimeError:
            Server(name, process, port).stop()
            raise
    return Server(name, process, port, ldaps_port)


def start_slapd(work, ldif, args, tls=None, name="slapd", loglevel=None):
    """`tls`: make_certificate()'s files: slapd also listens on ldaps://. `loglevel`: besides
    args.slapd_loglevel, e.g. "stats", written to <folder>/slapd.log (slapd -d, as it logs
    without syslog)."""
    folder = os.path.join(work, name)
    db = os.path.join(folder, "db")
    os.makedirs(db)
    root_pw = subprocess.run(["/usr/sbin/slappasswd", "-s", "secret"], capture_output=True,
                             text=True, check=True).stdout.strip()
    config = os.path.join(folder, "slapd.conf")
    schema = "".join(f"include /etc/ldap/schema/{name}.schema\n"
                     for name in ("core", "cosine", "inetorgperson", "nis"))
    with open(config, "w") as stream:
        stream.write(f"""{schema}
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {folder}/slapd.pid
argsfile {folder}/slapd.args
loglevel {loglevel or args.slapd_loglevel}
{slapd_tls_lines(tls)}{args.slapd_extra.replace(";", chr(10))}

database mdb
maxsize 8589934592
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {root_pw}
directory {db}
index objectClass eq
index uid eq
{SLAPD_ACCESS}
""")
    subprocess.run(["/usr/sbin/slapadd", "-q", "-f", config, "-l", ldif], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = free_port()
    urls = f"ldap://127.0.0.1:{port}/"
    ldaps_port = None
    if tls:
        ldaps_port = free_port()
        urls += f" ldaps://127.0.0.1:{ldaps_port}/"
    log = open(os.path.join(folder, "slapd.log"), "w") if loglevel else subprocess.DEVNULL
    process = subprocess.Popen(["/usr/sbin/slapd", "-h", urls, "-f", config, "-d",
                                loglevel or "0"],
                               stdout=subprocess.PIPE, stderr=log, text=True)
    wait_for_port(port, process)
    if ldaps_port:
        wait_for_port(ldaps_port, process)
    return Server(name, process, port, ldaps_port)


def start_389ds(ldif, tls=None, name="389ds", access_log=False, db_lib="bdb"):
    """A private 389-ds instance (perf/ds389.py) with the users of `ldif`, started; `tls`:
    make_certificate()'s files (it also listens on ldaps://); `access_log`: its access log on
    (buffered, as by default), as slapd-stats and percpu-log log theirs; `db_lib`: "bdb" or
    "mdb". Duck-types Server; stop() also removes its folder. Errors: RuntimeError (389-ds
    missing, or a step failed)."""
    instance = ds389.Ds389Instance.create(ldif, ROOT_DN, "secret", access_log=access_log,
                                          tls=tls, name=name, db_lib=db_lib)
    try:
        return instance.start()
    except BaseException:
        instance.stop()
        raise


def slapd_tls_lines(tls):
    if not tls:
        return ""
    return (f"TLSCertificateFile {tls['certificate']}\n"
            f"TLSCertificateKeyFile {tls['key']}\n"
            f"TLSCACertificateFile {tls['ca']}\n")


def run_authrate(build, server, connections, args, scheme="ldap", extra=()):
    """One authrate run; `scheme` "ldaps" goes to the server's ldaps:// port, `extra` are more
    authrate options. Returns authrate's JSON summary."""
    port = server.ldaps_port if scheme == "ldaps" else server.port
    command = [f"{build}/perf/authrate", "-H", f"{scheme}://127.0.0.1:{port}", "-b", PEOPLE,
               "--first", "0", "--last", str(args.users - 1), "-c", str(connections),
               "-t", str(args.authrate_threads), "-d", str(args.duration), "--warmup",
               str(args.warmup), "--server-pid", str(server.process.pid), "--json"] + list(extra)
    result = subprocess.run(command, capture_output=True, text=True, timeout=args.duration * 4 + 120)
    if result.returncode != 0:
        raise RuntimeError(f"authrate against {server.name} failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout)


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as stream:
        for line in stream:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    slapd = subprocess.run(["/usr/sbin/slapd", "-VV"], capture_output=True, text=True)
    slapd_version = (slapd.stderr or slapd.stdout).strip().splitlines()
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "kernel": platform.release(),
        "slapd": slapd_version[0] if slapd_version else "unknown",
        "389ds": ds389.version() if not ds389.available() else "389-ds not installed",
    }


def ds389_label(info, args):
    """389-ds's version and database library for a results section, or that it is missing."""
    if ds389.available():
        return info["389ds"]
    return f"{info['389ds']} (db_lib {args.ds389_db_lib})"


def table(points, servers, connections):
    lines = ["| connections | server | auths/s | p50 ms | p99 ms | server CPU µs/auth | "
             "peak RSS MiB |", "|---:|---|---:|---:|---:|---:|---:|"]
    for c in connections:
        for name in servers:
            p = points[(name, c)]
            lines.append(f"| {c} | {name} | {p['rate']:.0f} | {p['p50']:.3f} | {p['p99']:.3f} | "
                         f"{p['cpu']:.1f} | {p['rss'] / 1024:.1f} |")
    return "\n".join(lines)


def ratios(points, servers, connections):
    pairs = [("percpu", "slapd"), ("percpu", "389ds"), ("percpu", "floor"),
             ("percpu", "single"), ("single", "slapd"), ("single", "389ds"), ("389ds", "slapd"),
             ("percpu", "percpu-base"), ("single", "single-base"),
             ("percpu-2node", "percpu"), ("percpu-2node", "single")]
    pairs = [(a, b) for a, b in pairs if a in servers and b in servers]
    lines = ["| connections | " + " | ".join(f"{a}/{b} auths/s | {a}/{b} CPU/auth"
                                             for a, b in pairs) + " |",
             "|---:|" + "---:|---:|" * len(pairs)]
    for c in connections:
        cells = []
        for a, b in pairs:
            pa, pb = points[(a, c)], points[(b, c)]
            cells.append(f"{pa['rate'] / pb['rate']:.2f}")
            cells.append(f"{pa['cpu'] / pb['cpu']:.2f}" if pb["cpu"] > 0 else "n/a")
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def expand_cpus(text):
    """A CPU list as taskset and /sys write it, '0-2,5' -> [0, 1, 2, 5]."""
    out = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        out += list(range(int(low), int(high or low) + 1))
    return out


def plot(points, servers, connections, png, xlabel="connections",
         title="auths/s vs connections (median of repetitions)"):
    """Draws points[(server, x)]["rate"] over the x values `connections`, one line a server."""
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        return False
    with tempfile.TemporaryDirectory() as folder:
        data = os.path.join(folder, "data")
        with open(data, "w") as stream:
            for name in servers:
                stream.write(f'"{name}"\n')
                for c in connections:
                    stream.write(f"{c} {points[(name, c)]['rate']:.0f}\n")
                stream.write("\n\n")
        script = f"""set terminal pngcairo size 800,500 noenhanced
set output "{png}"
set title "{title}"
set xlabel "{xlabel}"
set ylabel "auths/s"
set logscale x 2
set key outside right
set grid
plot for [i=0:{len(servers) - 1}] "{data}" index i using 1:2 with linespoints title columnheader(1)
"""
        result = subprocess.run([gnuplot], input=script, text=True, capture_output=True)
        if result.returncode != 0:
            # pngcairo may be missing from gnuplot-nox builds: fall back to the png terminal.
            script = script.replace("pngcairo", "png")
            result = subprocess.run([gnuplot], input=script, text=True, capture_output=True)
        return result.returncode == 0


def write_section(path, begin, end, heading, section):
    """Replaces the text between `begin` and `end` in `path` with `section` (which carries the
    markers), or appends it under `heading` when the markers are not there yet (a file that
    does not exist yet starts empty)."""
    try:
        with open(path) as stream:
            text = stream.read()
    except FileNotFoundError:
        text = ""
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + f"\n\n## {heading}\n\n" + section + "\n"
    with open(path, "w") as stream:
        stream.write(text)


def summarize(runs):
    """Medians over the repetitions of each point."""
    points = {}
    for key, summaries in runs.items():
        points[key] = median_point(summaries)
        points[key]["handshakes"] = sum((s.get("tls") or {}).get("handshakes", 0)
                                        for s in summaries)
        points[key]["resumed"] = sum((s.get("tls") or {}).get("resumed", 0) for s in summaries)
    return points


def tls_tables(points, servers):
    """The TLS points, the cost TLS adds per auth (server CPU over the cleartext twin), and
    numadir's ratios to slapd."""
    lines = ["| point | server | auths/s | p50 ms | p99 ms | server CPU µs/auth | "
             "handshakes resumed |", "|---|---|---:|---:|---:|---:|---:|"]
    for label, _, _ in TLS_VARIANTS:
        for name in servers:
            p = points.get((name, label))
            if p is None:
                continue
            resumed = (f"{100 * p['resumed'] / p['handshakes']:.0f}%"
                       if "resume" in label and p["handshakes"] else "")
            lines.append(f"| {label} | {name} | {p['rate']:.0f} | {p['p50']:.3f} | "
                         f"{p['p99']:.3f} | {p['cpu']:.1f} | {resumed} |")
    cost = ["| server | ldaps − ldap (records) | full handshake | resumed handshake | "
            "full handshake, TLS 1.2 | resumed handshake, TLS 1.2 |",
            "|---|---:|---:|---:|---:|---:|"]
    for name in servers:
        def delta(tls_label, clear_label):
            a, b = points.get((name, tls_label)), points.get((name, clear_label))
            return f"{a['cpu'] - b['cpu']:.1f}" if a and b else "n/a"
        cost.append(f"| {name} | {delta('ldaps', 'ldap')} | "
                    f"{delta('ldaps reconnect', 'ldap reconnect')} | "
                    f"{delta('ldaps reconnect resume', 'ldap reconnect')} | "
                    f"{delta('ldaps reconnect tls1.2', 'ldap reconnect')} | "
                    f"{delta('ldaps reconnect resume tls1.2', 'ldap reconnect')} |")
    pairs = [(a, b) for a, b in (("percpu", "slapd"), ("percpu", "389ds"), ("single", "slapd"),
                                 ("percpu", "single"), ("percpu", "percpu-base"))
             if a in servers and b in servers]
    ratio = ["| point | " + " | ".join(f"{a}/{b} auths/s | {a}/{b} CPU/auth"
                                      for a, b in pairs) + " |",
             "|---|" + "---:|---:|" * len(pairs)]
    for label, _, _ in TLS_VARIANTS:
        cells = []
        for a, b in pairs:
            pa, pb = points.get((a, label)), points.get((b, label))
            if pa is None or pb is None:
                cells += ["n/a", "n/a"]
                continue
            cells.append(f"{pa['rate'] / pb['rate']:.2f}" if pb["rate"] > 0 else "n/a")
            cells.append(f"{pa['cpu'] / pb['cpu']:.2f}" if pb["cpu"] > 0 else "n/a")
        ratio.append(f"| {label} | " + " | ".join(cells) + " |")
    return ("\n".join(lines) + "\n\nServer CPU µs per auth that TLS adds (each TLS point minus its "
            "cleartext twin):\n\n" + "\n".join(cost) +
            ("\n\nRatios (medians):\n\n" + "\n".join(ratio) if pairs else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release")
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--scheme", default="ssha", choices=["ssha", "cleartext"],
                        help="how gen_users.py stores passwords (cleartext: numadir is told to "
                        "accept them)")
    parser.add_argument("--connections", default="16,64,256")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--authrate-threads", type=int, default=1)
    parser.add_argument("--servers", default="floor,slapd,389ds,percpu,single",
                        help="of floor, slapd, slapd-stats (its access log on), 389ds (389 "
                        "Directory Server, left out with a note when 389-ds-base is not "
                        "installed), 389ds-log (its access log on), percpu, "
                        "percpu-log (log.level = stats), single, percpu-2node (percpu on the "
                        "emulated topology numa:2 core:1 pu:1), and with --baseline-build "
                        "percpu-base and single-base")
    parser.add_argument("--baseline-build", default="",
                        help="a build directory of another commit: its numadir serves the "
                        "percpu-base and single-base servers, for a before/after ratio")
    parser.add_argument("--389ds-db-lib", dest="ds389_db_lib", default="bdb",
                        choices=["bdb", "mdb"],
                        help="389-ds's database library: Berkeley DB (2.3's default; its import "
                        "runs at a few hundred entries/s) or LMDB (like slapd's and numadir's)")
    parser.add_argument("--slapd-extra", default="",
                        help="global slapd.conf lines, separated by ';' (e.g. 'threads 8')")
    parser.add_argument("--slapd-loglevel", default="0",
                        help="slapd's loglevel (0: none, as numadir logs nothing per operation "
                        "yet; 'stats' for slapd's default)")
    parser.add_argument("--tls", action="store_true",
                        help="also the TLS points (ldaps://, persistent and per auth, with and "
                        "without session resumption) for slapd, 389-ds and numadir")
    parser.add_argument("--tls-only", action="store_true",
                        help="only the TLS points (the cleartext section is left as it is)")
    parser.add_argument("--tls-connections", type=int, default=16,
                        help="connections (auths in flight) of the TLS points")
    parser.add_argument("--tls-key-type", default="rsa", choices=["rsa", "ec"],
                        help="the server certificate's key: RSA 2048 or ECDSA P-256")
    parser.add_argument("--results", default="perf/RESULTS.md",
                        help="the file whose bench sections are rewritten ('' = print only)")
    parser.add_argument("--plot", default="perf/bench.png", help="the PNG to draw ('' = none)")
    args = parser.parse_args()
    build = os.path.abspath(args.build_dir)
    connections = [] if args.tls_only else [int(c) for c in args.connections.split(",")]
    names = args.servers.split(",")
    with_tls = args.tls or args.tls_only
    command = "perf/bench.sh " + " ".join(sys.argv[1:])

    work = tempfile.mkdtemp(prefix="numadir-bench-")
    servers = {}
    tls_names = []  # The servers measured over TLS, in order.
    tls_missing = {}  # Server name -> why it has no TLS points.
    left_out = {}  # Server name -> why it was not measured at all.
    runs = {}
    tls_runs = {}
    try:
        ldif = generate_users(work, args.users, args.scheme)
        tls = make_certificate(work, args.tls_key_type) if with_tls else None
        print(f"bench: {args.users} users generated; starting {', '.join(names)}", flush=True)
        for name in names:
            if name == "floor":
                if args.tls_only:
                    continue
                servers[name] = start_floor(build)  # Canned answers in the clear only.
                if tls:
                    tls_missing[name] = "the floor server has no TLS"
            elif name == "slapd":
                servers[name] = start_slapd(work, ldif, args, tls=tls)
            elif name == "slapd-stats":
                # slapd with its access log (loglevel stats) to a file, beside percpu-log.
                servers[name] = start_slapd(work, ldif, args, name=name, loglevel="stats")
            elif name in ("389ds", "389ds-log"):
                why = ds389.available()
                if why:
                    left_out[name] = why
                    print(f"bench: {name}: left out: {why}", flush=True)
                    continue
                try:
                    servers[name] = start_389ds(ldif, tls=tls, name=name,
                                                access_log=name == "389ds-log",
                                                db_lib=args.ds389_db_lib)
                except RuntimeError as error:
                    if not tls:
                        raise
                    # Its TLS setup failed (NSS import, nsslapd-security): cleartext points only.
                    tls_missing[name] = ("389-ds did not start with TLS "
                                         f"({str(error).splitlines()[0]})")
                    print(f"bench: {name}: {tls_missing[name]}; measuring it in the clear only",
                          flush=True)
                    if not args.tls_only:
                        servers[name] = start_389ds(ldif, name=name,
                                                    access_log=name == "389ds-log",
                                                    db_lib=args.ds389_db_lib)
            elif name == "percpu-log":
                # percpu with its access log on (log.level = "stats") to a file.
                servers[name] = start_numadir(
                    build, work, name, "percpu", ldif, args.scheme == "cleartext",
                    extra=f'[log]\nlevel = "stats"\nfile = "{work}/{name}/access.log"\n')
            elif name in ("percpu-base", "single-base"):
                # The same dispatcher from another build (--baseline-build): a change's before
                # and after, measured in one run (over TLS too with --tls).
                if not args.baseline_build:
                    raise SystemExit(f"bench: {name} needs --baseline-build")
                servers[name] = start_numadir(os.path.abspath(args.baseline_build), work, name,
                                              name.removesuffix("-base"), ldif,
                                              args.scheme == "cleartext", tls=tls)
            elif name == "percpu-2node":
                # percpu on an emulated two-node topology (threads.topology): two pools and a
                # listener each, connections steered by the CPU that received them.
                servers[name] = start_numadir(build, work, name, "percpu", ldif,
                                              args.scheme == "cleartext",
                                              threads_extra=f'topology = "{TWO_NODES}"')
            elif name in ("percpu", "single"):
                cleartext = args.scheme == "cleartext"
                try:
                    servers[name] = start_numadir(build, work, name, name, ldif, cleartext,
                                                  tls=tls)
                except (RuntimeError, subprocess.CalledProcessError) as error:
                    if not tls:
                        raise
                    # numadir without a working [tls]: its cleartext points still run.
                    tls_missing[name] = f"numadir did not start with [tls] ({error})"
                    print(f"bench: {name}: {tls_missing[name]}; measuring it in the clear only",
                          flush=True)
                    shutil.rmtree(os.path.join(work, name), ignore_errors=True)
                    if not args.tls_only:
                        servers[name] = start_numadir(build, work, name, name, ldif, cleartext)
            else:
                raise SystemExit(f"bench: unknown server {name!r}")
            if tls and name in servers and servers[name].ldaps_port:
                tls_names.append(name)
        for rep in range(args.repeat):
            for c in connections:
                for name in names:
                    if name not in servers:
                        continue
                    summary = run_authrate(build, servers[name], c, args)
                    runs.setdefault((name, c), []).append(summary)
                    print(f"bench: rep {rep + 1}/{args.repeat} {c:>5} conns {name:>7}: "
                          f"{summary['auths_per_sec']:.0f} auths/s, "
                          f"p99 {summary['latency_ms']['p99']:.3f} ms, "
                          f"cpu {summary.get('server_cpu_us_per_auth') or 0:.1f} us/auth, "
                          f"errors {summary['errors']['total']}", flush=True)
            for label, scheme, extra in TLS_VARIANTS if tls else []:
                for name in tls_names:
                    summary = run_authrate(build, servers[name], args.tls_connections, args,
                                           scheme=scheme, extra=extra)
                    tls_runs.setdefault((name, label), []).append(summary)
                    resumed = (summary.get("tls") or {}).get("resumed", 0)
                    print(f"bench: rep {rep + 1}/{args.repeat} {label:>22} {name:>7}: "
                          f"{summary['auths_per_sec']:.0f} auths/s, "
                          f"cpu {summary.get('server_cpu_us_per_auth') or 0:.1f} us/auth, "
                          f"resumed {resumed}, errors {summary['errors']['total']}", flush=True)
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    names = [name for name in names if any(key[0] == name for key in runs)]
    points = summarize(runs)
    info = machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sections = []
    if connections:
        plotted = bool(args.plot) and plot(points, names, connections, os.path.abspath(args.plot))
        errors = sum(p["errors"] for p in points.values())
        left_out_note = "".join(f"\n- {name}: not measured: {why}."
                                for name, why in left_out.items())
        sections.append((BEGIN, END, "The side-by-side benchmark (perf/bench.sh)", f"""{BEGIN}
### Side by side: {now}

Command: `{command}` — {args.users} users ({args.scheme} passwords), indexes objectClass eq and uid
eq on every server, the same access rules; authrate with {args.authrate_threads} thread(s),
{args.duration:g} s measured after {args.warmup:g} s warm-up, {args.repeat} repetitions
interleaved, medians shown. Machine: {info['nproc']} CPUs, {info['cpu']}, Linux
{info['kernel']}; {info['slapd']}; {ds389_label(info, args)}. Load
generator and servers share the machine's CPUs. Errors over all runs: {errors}.{left_out_note}

{table(points, names, connections)}

Ratios (medians):

{ratios(points, names, connections)}
{"" if not plotted else chr(10) + "![auths/s vs connections](bench.png)" + chr(10)}
{END}"""))
    if tls:
        tls_points = summarize(tls_runs)
        errors = sum(p["errors"] for p in tls_points.values())
        missing = "".join(f"\n- {name}: no TLS points: {why}." for name, why in tls_missing.items())
        missing += "".join(f"\n- {name}: not measured: {why}." for name, why in left_out.items())
        sections.append((TLS_BEGIN, TLS_END, TLS_HEADING, f"""{TLS_BEGIN}
### Over TLS: {now}

Command: `{command}` — {args.users} users ({args.scheme} passwords), the same data, indexes and
access rules as the cleartext points; one throwaway {"RSA 2048" if args.tls_key_type == "rsa"
else "ECDSA P-256"} server certificate for every server; authrate with {args.tls_connections}
connections and {args.authrate_threads} thread(s), {args.duration:g} s measured after
{args.warmup:g} s warm-up, {args.repeat} repetitions interleaved, medians shown. Points: `ldap`
and `ldaps` on persistent connections; `reconnect`: a new connection (and so a TLS handshake)
per auth; `resume`: authrate `--tls-resume`, offering the slot's previous session. Machine:
{info['nproc']} CPUs, {info['cpu']}, Linux {info['kernel']}; {info['slapd']};
{ds389_label(info, args)}. Load generator and servers share the machine's
CPUs. Errors over all runs: {errors}.{missing}

{tls_tables(tls_points, tls_names) if tls_names else "No server was measured over TLS."}
{TLS_END}"""))
    for begin, end, heading, section in sections:
        if args.results:
            write_section(args.results, begin, end, heading, section)
        print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
