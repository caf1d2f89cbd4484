#!/usr/bin/python3
"""The password policy benchmark: what the policy costs an auth, and what wrong passwords cost
under it, numadir against OpenLDAP slapd, in one run, rounds interleaved, medians reported.

  perf/ppolicy_bench.py [--build-dir build/release] [--authrate-build DIR] [--users 10000]
                        [--connections 64] [--threads 2] [--duration 10] [--warmup 2]
                        [--rounds 3] [--servers numadir,slapd] [--quick] [--results FILE]

Configurations, each under two loads (authrate with 0% and with --wrong-percent 10):
- numadir, policy off: no policy keys in [passwords];
- numadir, policy on: [passwords] default_policy = "cn=default,ou=policies,dc=example,dc=com",
  use_lockout = true;
- slapd (Debian's /usr/sbin/slapd, back-mdb), without the overlay: `moduleload ppolicy` only
  (slapadd needs the module's schema for the policy entry);
- slapd with `overlay ppolicy`, `ppolicy_default` (the same entry) and `ppolicy_use_lockout`.
Every server loads the same data: perf/gen_users.py's users ({SSHA} passwords) and the policy
entry (objectClass person + pwdPolicy, pwdAttribute userPassword, pwdMaxFailure 20, pwdLockout
TRUE, pwdLockoutDuration 300, pwdFailureCountInterval 300, pwdMaxAge 0), with the indexes and
access rules of perf/bench.py; both commit durably (numadir durability "sync", slapd back-mdb's
default).

Each (configuration, load) point has a server of its own, all started at the start and idle
while another is measured (an idle server costs nothing), so the failures a 10% load leaves
stored (which the user's next successful bind clears, with a write) never spill into a 0%
point. A round measures every point once, in one order on even rounds and the reverse on odd
ones (slow drift of the machine cancels out); authrate's --seed is the round's number. Server
CPU is utime + stime of /proc/PID/stat over the measured window (authrate --server-pid), per
auth; auths/s counts every completed search+bind cycle, a wrong password refused with
invalidCredentials included. Before measuring, each server is checked to answer the Password
Policy control exactly when its policy is on (python3-ldap; skipped if it is missing).

Prints a Markdown table ready for perf/RESULTS.md (with --results FILE, also written between the
ppolicy markers of FILE), with the command line, date, nproc and CPU model. --quick is a smoke
run (1,000 users, 1 round of 2 s points): it checks that the benchmark works, not what it
measures.
"""
import argparse
import datetime
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (perf/bench.py: data, servers, authrate runs, machine details)

BEGIN = "<!-- ppolicy:begin -->"
END = "<!-- ppolicy:end -->"
HEADING = ("Password policy: its cost per auth, with and without wrong passwords "
           "(perf/ppolicy_bench.py)")

POLICIES = f"ou=policies,{bench.SUFFIX}"
POLICY_DN = f"cn=default,{POLICIES}"
MAX_FAILURE = 20
POLICY_LDIF = f"""dn: {POLICIES}
objectClass: organizationalUnit
ou: policies

dn: {POLICY_DN}
objectClass: person
objectClass: pwdPolicy
cn: default
sn: policy
pwdAttribute: userPassword
pwdMaxFailure: {MAX_FAILURE}
pwdLockout: TRUE
pwdLockoutDuration: 300
pwdFailureCountInterval: 300
pwdMaxAge: 0
"""
# Lines of numadir's [passwords] table: bench.start_numadir writes its `extra` right after
# `allow_cleartext`, the last key of that table.
NUMADIR_POLICY = f'default_policy = "{POLICY_DN}"\nuse_lockout = true\n'
SLAPD_GLOBAL = "moduleload ppolicy\n"
SLAPD_POLICY = f"""overlay ppolicy
ppolicy_default "{POLICY_DN}"
ppolicy_use_lockout
"""
WRONG_PERCENTS = (0, 10)
PPOLICY_OID = "1.3.6.1.4.1.42.2.27.8.5.1"

QUICK = {"users": 1000, "duration": 2.0, "warmup": 0.5, "rounds": 1}
DEFAULTS = {"users": 10_000, "duration": 10.0, "warmup": 2.0, "rounds": 3}


def write_ldif(work, users):
    """gen_users.py's users and the policy entry, for every server. Returns the path."""
    ldif = bench.generate_users(work, users)
    with open(ldif, "a") as stream:
        stream.write("\n" + POLICY_LDIF)
    return ldif


def start_slapd(work, ldif, name, policy):
    """slapd as perf/bench.py starts it (back-mdb, same indexes and access rules, loglevel 0),
    with the ppolicy module loaded and, if `policy`, the overlay on the database."""
    folder = os.path.join(work, name)
    db = os.path.join(folder, "db")
    os.makedirs(db)
    root_pw = subprocess.run(["/usr/sbin/slappasswd", "-s", "secret"], capture_output=True,
                             text=True, check=True).stdout.strip()
    config = os.path.join(folder, "slapd.conf")
    schema = "".join(f"include /etc/ldap/schema/{schema}.schema\n"
                     for schema in ("core", "cosine", "inetorgperson", "nis"))
    with open(config, "w") as stream:
        stream.write(f"""{schema}
modulepath /usr/lib/ldap
moduleload back_mdb
{SLAPD_GLOBAL}pidfile {folder}/slapd.pid
argsfile {folder}/slapd.args
loglevel 0

database mdb
maxsize 8589934592
suffix "{bench.SUFFIX}"
rootdn "{bench.ROOT_DN}"
rootpw {root_pw}
directory {db}
index objectClass eq
index uid eq
{bench.SLAPD_ACCESS}
{SLAPD_POLICY if policy else ""}""")
    added = subprocess.run(["/usr/sbin/slapadd", "-q", "-f", config, "-l", ldif],
                           capture_output=True, text=True)
    if added.returncode != 0:
        raise RuntimeError(f"slapadd for {name} failed: {added.stderr[-2000:]}")
    port = bench.free_port()
    process = subprocess.Popen(["/usr/sbin/slapd", "-h", f"ldap://127.0.0.1:{port}/", "-f",
                                config, "-d", "0"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = bench.Server(name, process, port)
    try:
        bench.wait_for_port(port, process)
    except RuntimeError:
        server.stop()
        raise
    return server


def check_policy(server, policy):
    """A wrong bind as uid=user0 asking for the Password Policy control is answered
    invalidCredentials, with the control exactly when the policy is on; then the right bind
    (clearing the failure). Returns "" when all is as expected (or python3-ldap is missing:
    then a note), else what is wrong."""
    try:
        import ldap  # python3-ldap
        from ldap.controls import DecodeControlTuples
        from ldap.controls.ppolicy import PasswordPolicyControl
    except ImportError:
        return "skipped: no python3-ldap"
    url = f"ldap://127.0.0.1:{server.port}"
    dn = f"uid=user0,{bench.PEOPLE}"
    conn = ldap.initialize(url, bytes_mode=False)
    try:
        conn.simple_bind_s(dn, "password0-wrong", serverctrls=[PasswordPolicyControl()])
        return "a wrong password was accepted"
    except ldap.INVALID_CREDENTIALS as error:
        info = error.args[0] if error.args and isinstance(error.args[0], dict) else {}
        controls = DecodeControlTuples(info.get("ctrls", []))
        answered = any(isinstance(c, PasswordPolicyControl) for c in controls)
        if answered != policy:
            return (f"the policy should be {'on' if policy else 'off'}, but the control was "
                    f"{'' if answered else 'not '}answered")
    except ldap.LDAPError as error:
        return f"the wrong bind was answered {error!r}"
    finally:
        conn.unbind_s()
    conn = ldap.initialize(url, bytes_mode=False)
    try:
        conn.simple_bind_s(dn, "password0")
    except ldap.LDAPError as error:
        return f"the right password of uid=user0 was refused: {error!r}"
    finally:
        conn.unbind_s()
    return ""


def point_name(server, policy, wrong):
    return f"{server}-{'on' if policy else 'off'}-{wrong}"


def summarize(summaries):
    point = bench.median_point(summaries)
    point["wrong_binds"] = sum(s.get("wrong_password_binds", 0) for s in summaries)
    point["wrong_refused"] = sum(s.get("wrong_password_refused", 0) for s in summaries)
    point["runs"] = len(summaries)
    return point


def ratio(a, b, key):
    return a[key] / b[key] if a and b and b[key] > 0 else None


def cell(value):
    return "n/a" if value is None else f"{value:.2f}"


def goal_cell(value, goal, applies):
    if not applies:
        return "(reference)"
    if value is None:
        return "n/a"
    return f"≥ {goal:.2f}: {'met' if value >= goal else 'MISSED'}"


def tables(points, servers):
    label = {False: "off", True: "on"}
    lines = ["| server | policy | wrong passwords | auths/s | server CPU µs/auth | p50 ms | "
             "p99 ms | wrong binds refused / made | errors |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for server in servers:
        for policy in (False, True):
            for wrong in WRONG_PERCENTS:
                p = points.get((server, policy, wrong))
                if p is None:
                    continue
                lines.append(f"| {server} | {label[policy]} | {wrong}% | {p['rate']:.0f} | "
                             f"{p['cpu']:.1f} | {p['p50']:.3f} | {p['p99']:.3f} | "
                             f"{p['wrong_refused']} / {p['wrong_binds']} | {p['errors']} |")
    on_off = ["| server | wrong passwords | on/off auths/s | on/off CPU/auth | on/off p99 | "
              "goal (auths/s) |", "|---|---:|---:|---:|---:|---|"]
    for server in servers:
        for wrong in WRONG_PERCENTS:
            on, off = points.get((server, True, wrong)), points.get((server, False, wrong))
            rate = ratio(on, off, "rate")
            on_off.append(f"| {server} | {wrong}% | {cell(rate)} | {cell(ratio(on, off, 'cpu'))} "
                          f"| {cell(ratio(on, off, 'p99'))} | "
                          f"{goal_cell(rate, 0.9, server == 'numadir' and wrong == 0)} |")
    wrong_load = ["| server | policy | 10%/0% auths/s | 10%/0% CPU/auth | 10%/0% p99 | "
                  "goal (auths/s) |", "|---|---|---:|---:|---:|---|"]
    for server in servers:
        for policy in (True, False):
            ten, zero = points.get((server, policy, 10)), points.get((server, policy, 0))
            rate = ratio(ten, zero, "rate")
            wrong_load.append(f"| {server} | {label[policy]} | {cell(rate)} | "
                              f"{cell(ratio(ten, zero, 'cpu'))} | "
                              f"{cell(ratio(ten, zero, 'p99'))} | "
                              f"{goal_cell(rate, 0.8, server == 'numadir' and policy)} |")
    versus = []
    if "numadir" in servers and "slapd" in servers:
        versus = ["| policy | wrong passwords | numadir/slapd auths/s | numadir/slapd CPU/auth | "
                  "numadir/slapd p99 |", "|---|---:|---:|---:|---:|"]
        for policy in (False, True):
            for wrong in WRONG_PERCENTS:
                n, s = points.get(("numadir", policy, wrong)), points.get(("slapd", policy, wrong))
                versus.append(f"| {label[policy]} | {wrong}% | {cell(ratio(n, s, 'rate'))} | "
                              f"{cell(ratio(n, s, 'cpu'))} | {cell(ratio(n, s, 'p99'))} |")
    text = ("\n".join(lines) +
            "\n\nPolicy on / off (goal for numadir with no wrong passwords: ≥ 0.90x the "
            "auths/s; under the 10% load the goal is the 10%/0% one below):\n\n" +
            "\n".join(on_off) + "\n\n10% wrong passwords / 0% (goal for numadir with the policy "
            "on: ≥ 0.80x the auths/s):\n\n" + "\n".join(wrong_load))
    if versus:
        text += "\n\nnumadir / slapd under each load:\n\n" + "\n".join(versus)
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release",
                        help="the build whose server/numadir is measured")
    parser.add_argument("--authrate-build", default="",
                        help="the build whose perf/authrate drives the servers (default: "
                        "--build-dir); it needs --wrong-percent")
    parser.add_argument("--users", type=int, help=f"users (default {DEFAULTS['users']})")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2, help="authrate -t")
    parser.add_argument("--duration", type=float,
                        help=f"seconds measured per point (default {DEFAULTS['duration']:g})")
    parser.add_argument("--warmup", type=float,
                        help=f"seconds of warm-up per point (default {DEFAULTS['warmup']:g})")
    parser.add_argument("--rounds", type=int,
                        help=f"rounds, interleaved (default {DEFAULTS['rounds']})")
    parser.add_argument("--servers", default="numadir,slapd", help="numadir and/or slapd")
    parser.add_argument("--dispatcher", default="percpu", choices=["percpu", "single"],
                        help="numadir's threads.dispatcher")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: " + ", ".join(f"{k} {v:g}" for k, v in QUICK.items()) +
                        " unless given")
    parser.add_argument("--results", default="",
                        help="a file whose ppolicy section to write (e.g. perf/RESULTS.md; "
                        "default: print only)")
    args = parser.parse_args()
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    servers = args.servers.split(",")
    if not servers or any(s not in ("numadir", "slapd") for s in servers):
        raise SystemExit("ppolicy_bench: --servers takes numadir and/or slapd")
    build = os.path.abspath(args.build_dir)
    authrate_build = os.path.abspath(args.authrate_build or args.build_dir)
    help_text = subprocess.run([f"{authrate_build}/perf/authrate", "--help"],
                               capture_output=True, text=True).stdout
    if "--wrong-percent" not in help_text:
        raise SystemExit(f"ppolicy_bench: {authrate_build}/perf/authrate has no --wrong-percent: "
                         "rebuild it, or pass --authrate-build")
    # What bench.run_authrate reads of its `args`.
    authrate_args = argparse.Namespace(users=args.users, authrate_threads=args.threads,
                                       duration=args.duration, warmup=args.warmup)
    command = "perf/ppolicy_bench.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    keys = [(server, policy, wrong) for wrong in WRONG_PERCENTS for server in servers
            for policy in (False, True)]

    work = tempfile.mkdtemp(prefix="numadir-ppolicy-bench-")
    started = {}
    runs = {}
    try:
        ldif = write_ldif(work, args.users)
        print(f"ppolicy_bench: {args.users} users and the policy entry generated; starting "
              f"{len(keys)} servers", flush=True)
        for key in keys:
            server, policy, wrong = key
            name = point_name(server, policy, wrong)
            if server == "numadir":
                started[key] = bench.start_numadir(build, work, name, args.dispatcher, ldif,
                                                   extra=NUMADIR_POLICY if policy else "")
            else:
                started[key] = start_slapd(work, ldif, name, policy)
            problem = check_policy(started[key], policy)
            if problem and not problem.startswith("skipped"):
                raise RuntimeError(f"{name}: {problem}")
            print(f"ppolicy_bench: {name}: pid {started[key].process.pid}, port "
                  f"{started[key].port}, policy {'on' if policy else 'off'} "
                  f"({problem or 'checked: the control is answered as expected'})", flush=True)
        for round_index in range(args.rounds):
            order = keys if round_index % 2 == 0 else list(reversed(keys))
            for key in order:
                server, policy, wrong = key
                extra = ["--seed", str(round_index + 1)]
                if wrong:
                    extra += ["--wrong-percent", str(wrong)]
                summary = bench.run_authrate(authrate_build, started[key], args.connections,
                                             authrate_args, extra=extra)
                runs.setdefault(key, []).append(summary)
                print(f"ppolicy_bench: round {round_index + 1}/{args.rounds} "
                      f"{point_name(server, policy, wrong):>14}: "
                      f"{summary['auths_per_sec']:.0f} auths/s, "
                      f"cpu {summary.get('server_cpu_us_per_auth') or 0:.1f} us/auth, "
                      f"p99 {summary['latency_ms']['p99']:.3f} ms, wrong refused "
                      f"{summary.get('wrong_password_refused', 0)}/"
                      f"{summary.get('wrong_password_binds', 0)}, "
                      f"errors {summary['errors']['total']}", flush=True)
    finally:
        for server in started.values():
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    points = {key: summarize(summaries) for key, summaries in runs.items()}
    info = bench.machine()
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    errors = sum(p["errors"] for p in points.values())
    refused = sum(p["wrong_refused"] for p in points.values())
    made = sum(p["wrong_binds"] for p in points.values())
    quick = ("\n\n**Smoke run (--quick): these figures check that the benchmark works; they "
             "measure nothing.**" if args.quick else "")
    setup = (
        f"Command: `{command}` — {args.users} users ({{SSHA}} passwords) and one policy entry "
        f"(pwdMaxFailure {MAX_FAILURE}, pwdLockout TRUE, pwdLockoutDuration 300, "
        "pwdFailureCountInterval 300, pwdMaxAge 0), the same data, indexes and access rules for "
        f"every server; numadir `{args.dispatcher}` (durability \"sync\"), policy on = "
        "`[passwords] default_policy`, `use_lockout = true`; slapd back-mdb (synced commits) "
        "with `moduleload ppolicy`, policy on = `overlay ppolicy`, `ppolicy_default`, "
        f"`ppolicy_use_lockout`. authrate with {args.connections} connections and "
        f"{args.threads} thread(s), {args.duration:g} s measured after {args.warmup:g} s "
        f"warm-up per point, {args.rounds} round(s) interleaved (a server per point; even "
        "rounds in order, odd ones reversed), medians shown. Under the 10% load, 10% of the "
        "auths (drawn per auth) bind with a wrong password; auths/s counts every completed "
        "search+bind cycle, those refused with invalidCredentials (as expected) included. At "
        f"10% wrong passwords with pwdMaxFailure {MAX_FAILURE} a user is essentially never "
        "locked: a successful bind clears the failures, so a lock needs "
        f"{MAX_FAILURE} wrong binds of one user in a row (odds 10^-{MAX_FAILURE}); what is "
        "measured is the cost of counting failures and clearing them, not of lockouts. "
        f"Date {now}; `nproc` {nproc}, {info['cpu']}, Linux {info['kernel']}; {info['slapd']}. "
        "Load generator and servers share the machine's CPUs. Errors over all runs: "
        f"{errors}; wrong-password binds refused as expected: {refused} of {made}.")
    section = (f"{BEGIN}\n### Password policy: {now}\n\n" +
               textwrap.fill(setup, 100, break_long_words=False, break_on_hyphens=False) +
               quick + f"\n\n{tables(points, servers)}\n{END}")
    if args.results:
        bench.write_section(args.results, BEGIN, END, HEADING, section)
    print(section)
    if errors or refused != made:
        print("ppolicy_bench: errors, or wrong passwords not refused as expected: see above",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
