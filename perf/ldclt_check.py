#!/usr/bin/python3
"""Cross-checks authrate against 389-ds's ldclt (Debian package 389-ds-base) on the same OpenLDAP
slapd, in their closest mode: a new connection per bind, bind only (ldclt `-e
bindeach,bindonly,randombinddn` against authrate `--mode bind-only --reconnect`), the same
number of threads and connections, runs alternated, medians compared. Writes its table between
the ldclt markers of RESULTS.md.

  perf/ldclt_check.py --build-dir build/release [--threads 4] [--repeat 3] [--duration 10]

Needs /usr/bin/ldclt: apt-get install 389-ds-base.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

BEGIN = "<!-- ldclt:begin -->"
END = "<!-- ldclt:end -->"


def run_ldclt(port, args, credentials):
    # -N samples of 10 s each; ldclt prints the average rate over them at the end. The bind DNs
    # and passwords come from a file: ldclt's XXX templates zero-pad numbers (user007), which
    # gen_users.py's names (user7) are not. Failed binds are errors (not ignored), so a run
    # that binds wrongly stops instead of measuring failures.
    samples = max(1, int(args.duration // 10))
    result = subprocess.run(
        ["ldclt", "-h", "127.0.0.1", "-p", str(port), "-e",
         f"bindeach,bindonly,randombinddnfromfile={credentials}", "-n", str(args.threads),
         "-N", str(samples), "-E", "10", "-q"], capture_output=True, text=True,
        timeout=samples * 10 + 120)
    if "Max allowed errors reached" in result.stdout + result.stderr:
        raise RuntimeError(f"ldclt binds failed: {result.stdout[-1000:]}{result.stderr[-1000:]}")
    rates = re.findall(r"Global average rate: *[\d.]+/thr *\(([\d.]+)/sec\)",
                       result.stdout + result.stderr)
    if not rates:
        raise RuntimeError(f"ldclt printed no rate: {result.stdout[-1000:]}{result.stderr[-1000:]}")
    return float(rates[-1])


def run_authrate(build, port, args):
    result = subprocess.run(
        [f"{build}/perf/authrate", "-H", f"ldap://127.0.0.1:{port}", "-b", bench.PEOPLE,
         "--mode", "bind-only", "--reconnect", "--first", "0", "--last", str(args.users - 1),
         "-t", str(args.threads), "-c", str(args.threads), "-d", str(args.duration),
         "--warmup", "1", "--json"], capture_output=True, text=True, timeout=args.duration + 120)
    if result.returncode != 0:
        raise RuntimeError(f"authrate failed: {result.stderr[-1000:]}")
    return json.loads(result.stdout)["auths_per_sec"]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build/release")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--results", default="perf/RESULTS.md")
    args = parser.parse_args()
    if shutil.which("ldclt") is None:
        sys.exit("ldclt_check: ldclt is missing: apt-get install 389-ds-base")
    build = os.path.abspath(args.build_dir)
    work = tempfile.mkdtemp(prefix="numadir-ldclt-")
    slapd = None
    ldclt_rates, authrate_rates = [], []
    try:
        ldif = bench.generate_users(work, args.users)
        credentials = os.path.join(work, "credentials")
        with open(credentials, "w") as stream:
            for n in range(args.users):
                stream.write(f"uid=user{n},{bench.PEOPLE}\tpassword{n}\n")  # DN TAB password
        slapd = bench.start_slapd(work, ldif, types.SimpleNamespace(slapd_loglevel="0",
                                                                    slapd_extra="threads 4"))
        for rep in range(args.repeat):
            ldclt_rates.append(run_ldclt(slapd.port, args, credentials))
            authrate_rates.append(run_authrate(build, slapd.port, args))
            print(f"ldclt_check: rep {rep + 1}: ldclt {ldclt_rates[-1]:.0f}/s, "
                  f"authrate {authrate_rates[-1]:.0f}/s", flush=True)
    finally:
        if slapd is not None:
            slapd.stop()
        shutil.rmtree(work, ignore_errors=True)
    ldclt_median = statistics.median(ldclt_rates)
    authrate_median = statistics.median(authrate_rates)
    ratio = authrate_median / ldclt_median
    info = bench.machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    section = f"""{BEGIN}
### authrate against ldclt: {now}

Command: `perf/ldclt_check.py {" ".join(sys.argv[1:])}`. Server: OpenLDAP slapd (back-mdb,
loglevel 0, threads 4), {args.users} users. Mode compared: a new connection per simple bind,
bind only, random user: ldclt `-e bindeach,bindonly,randombinddnfromfile -n {args.threads}` and
authrate `--mode bind-only --reconnect -t {args.threads} -c {args.threads}`; runs alternated,
{args.repeat} each. Machine: {info['nproc']} CPUs, {info['cpu']}; {info['slapd']}.

| tool | binds/s per run | median |
|---|---|---:|
| ldclt | {", ".join(f"{r:.0f}" for r in ldclt_rates)} | {ldclt_median:.0f} |
| authrate | {", ".join(f"{r:.0f}" for r in authrate_rates)} | {authrate_median:.0f} |

authrate / ldclt = {ratio:.2f} ({"within" if abs(ratio - 1) <= 0.15 else "outside"} ±15%).
{END}"""
    bench.write_section(args.results, BEGIN, END, "Cross-check of authrate with ldclt", section)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
