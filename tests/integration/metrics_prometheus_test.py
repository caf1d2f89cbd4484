#!/usr/bin/python3
"""numadir's metrics endpoint scraped by Debian's real prometheus, while authrate loads it:

  - a raw scrape holds every metric family of the contract that every configuration has
    (metrics_harness.ALWAYS), with its TYPE and labels; `promtool check metrics` passes on the
    Prometheus text 0.0.4 (served by default); OpenMetrics 1.0.0 (when Accept asks for it, as
    Prometheus does) ends with "# EOF", names counter families without _total, and is what
    Prometheus's scrapes parse (promtool reads the Prometheus text format only);
  - a planted slow operation: a user whose userPassword is an {ARGON2} hash of numadir's default
    cost (m=64 MiB, t=2: within the [passwords] ceilings, about 0.1 s to check) binds BINDS
    times; once the count has caught up (within 5 s: an operation is counted when its result
    is handed on, just after the client may read it), the bind histogram's buckets have grown
    by BINDS at and above the slowest bind's client-side time (the server's time is inside the
    client's) and not at all below half the fastest one (the hash alone takes longer than
    that: a round trip on loopback is well under half of it), and _sum by between those
    bounds times BINDS;
  - prometheus (its own config and data under a temporary directory, scrape_interval 1s,
    scrape_timeout 900ms) scrapes the endpoint: up == 1;
  - authrate (16 connections, 2 s warm-up, 15 s measured) runs search+bind auths; then the
    Prometheus API, at a time 1.5 s before the end of authrate's measured window, gives
    rate(numadir_operations_total{op="bind"}[10s]) within ±15% of authrate's auths/s (one bind
    per auth; 10 s of a steady closed loop against authrate's 15 s mean: the 15% covers the
    windows' difference and Prometheus's extrapolation at the edges), the result="success" part
    ≥ 99% of it (every bind is right), numadir_auths_total's rate the same, the histogram's
    count rate equal to the counter's (±2%: every bind counted once in both), and
    histogram_quantile(0.99, ...) of the bind histogram within a floor of 25 µs (a bind through
    the queue, a digest and the encoding cannot take less at p99 under load) and the upper
    bound of the bucket holding authrate's own p99 per auth (search + bind + two round trips:
    the server's bind time is a part of it; histogram_quantile interpolates inside a bucket, so
    the client's p99 is rounded up to its bucket's bound); the same for p50. The connections
    open at that time equal authrate's connections.

  metrics_prometheus_test.py --numadir build/release/server/numadir --gen perf/gen_users.py \\
      --bin-dir build/release

Exits 0 when every check passes; otherwise 1 with the first failing check (observed vs expected).
"""
import json
import math
import os
import subprocess
import sys
import time

import ldap  # python3-ldap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import PEOPLE, check, fail, parse_args, run_suite, wait_for  # noqa: E402
from metrics_harness import (  # noqa: E402
    ALWAYS, DURATION_BUCKETS, FAMILIES, OPENMETRICS_ACCEPT, PROMETHEUS_ACCEPT, PrometheusServer,
    free_port, http_get, metrics_toml, parse_exposition, promtool, scrape, wait_for_endpoint)

USERS = 1000
SLOW_DN = f"uid=slow-argon2,{PEOPLE}"
SLOW_PW = "a costly password"
BINDS = 4
CONNECTIONS = 16
WARMUP_S = 2
DURATION_S = 15
RATE_BOUND = 0.15
P99_FLOOR_S = 25e-6

S = None
ARGS = None
PORT = None


def check_families():
    wait_for_endpoint(PORT)
    # Some traffic first, so that the per-operation families have series to show.
    rc, _, _ = S.ldap("ldapsearch", "-x", "-D", f"uid=user1,{PEOPLE}", "-w", "password1", "-b",
                      PEOPLE, "uid=user2", "1.1")
    check(rc == 0, "a bind and a search as user1")
    _, _, body = http_get(PORT)
    body = body.decode()
    exposition = parse_exposition(body)
    missing = [name for name in ALWAYS if not exposition.has_family(name)]
    check(not missing, f"every one of the {len(ALWAYS)} families of every configuration is in "
          "a scrape", f"missing: {missing}")
    wrong_types = []
    for name in ALWAYS:
        kind = FAMILIES[name][0]
        declared = exposition.types.get(name)
        if declared != kind:
            wrong_types.append(f"{name}: {declared} (expected {kind})")
    check(not wrong_types, "each has its # TYPE line with the contract's type", f"{wrong_types}")
    labels = []
    for name in ALWAYS:
        kind, wanted = FAMILIES[name]
        sample = name + "_bucket" if kind == "histogram" else name
        for series, _ in exposition.values(sample):
            names = set(series) - {"le"}
            if names != set(wanted):
                labels.append(f"{sample}{series}: expected labels {sorted(wanted)}")
                break
    check(not labels, "each family's series carry exactly the contract's labels", f"{labels}")
    build = exposition.values("numadir_build_info")
    check(len(build) == 1 and build[0][1] == 1 and build[0][0].get("version"),
          f"numadir_build_info is 1 with a version ({build})")
    nodes = {labels["node"] for labels, _ in exposition.values("numadir_pool_queue_capacity")}
    check(nodes and all(node.startswith(("node", "pool")) for node in nodes),
          f"pools are labelled by their name: {sorted(nodes)}")


def check_promtool():
    status, headers, body = http_get(PORT)
    check(status == 200 and headers.get("content-type", "").startswith("text/plain") and
          "version=0.0.4" in headers.get("content-type", ""),
          f"without Accept: Prometheus text 0.0.4 ({headers.get('content-type')})")
    check(int(headers.get("content-length", -1)) == len(body), "Content-Length is the body's "
          f"length ({headers.get('content-length')} vs {len(body)})")
    code, out = promtool("check", "metrics", input_text=body.decode())
    check(code == 0, "promtool check metrics passes on the Prometheus text", out[-3000:])
    status, headers, body = http_get(PORT, headers={"Accept": OPENMETRICS_ACCEPT})
    text = body.decode()
    check(status == 200 and headers.get("content-type", "").startswith(
        "application/openmetrics-text") and "version=1.0.0" in headers.get("content-type", ""),
        f"Accept: application/openmetrics-text: OpenMetrics 1.0.0 "
        f"({headers.get('content-type')})")
    check(text.endswith("# EOF\n"), "the OpenMetrics text ends with # EOF", repr(text[-80:]))
    # OpenMetrics names a counter family without its _total suffix; its samples keep it.
    check("# TYPE numadir_operations counter" in text and
          "# TYPE numadir_operation_duration_seconds histogram" in text and
          "numadir_operations_total{" in text,
          "OpenMetrics TYPE lines: counters named without _total, histograms as such")
    # promtool check metrics reads the Prometheus text format only (it takes OpenMetrics'
    # counter families, named without _total, as samples without help): the OpenMetrics text is
    # checked by Prometheus's own OpenMetrics parser instead, which Prometheus 2.42 asks for
    # first (a scrape it cannot parse is up == 0: see the next group).
    status, headers, _ = http_get(PORT, headers={"Accept": PROMETHEUS_ACCEPT})
    check(headers.get("content-type", "").startswith("application/openmetrics-text"),
          "Prometheus 2.42's own Accept header gets OpenMetrics", f"{headers.get('content-type')}")
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, kind = line.split()[2:4]
            if kind == "counter" and name.endswith("_total"):
                fail(f"OpenMetrics counter family {name} is named with its _total suffix")
    check(True, "no OpenMetrics counter family is named with _total")


def bind_buckets():
    exposition = scrape(PORT)
    buckets = exposition.buckets("numadir_operation_duration_seconds", op="bind")
    count = exposition.total("numadir_operation_duration_seconds_count", op="bind")
    total = exposition.total("numadir_operation_duration_seconds_sum", op="bind")
    return buckets, count, total


def check_slow_bind():
    before, count_before, sum_before = bind_buckets()
    check(sorted(before) == sorted(DURATION_BUCKETS),
          "the bind histogram has the contract's buckets", f"{sorted(before)}")
    conn = ldap.initialize(S.url, bytes_mode=False)
    conn.protocol_version = 3
    conn.set_option(ldap.OPT_NETWORK_TIMEOUT, 10)
    times = []
    for _ in range(BINDS):
        started = time.monotonic()
        conn.simple_bind_s(SLOW_DN, SLOW_PW)
        times.append(time.monotonic() - started)
    conn.unbind_s()
    low, high = min(times) / 2, max(times)
    print(f"  {BINDS} argon2 binds took {', '.join(f'{t * 1000:.1f}' for t in times)} ms "
          "(client side)", flush=True)
    # An operation is measured when its result is handed to the connection, so the client can
    # read it a moment before it is counted: wait (boundedly) for the count to catch up.
    after, count_after, sum_after = wait_for(
        lambda: (lambda b: b if b[1] - count_before >= BINDS else None)(bind_buckets()),
        timeout=5) or bind_buckets()
    deltas = {le: after[le] - before.get(le, 0) for le in after}
    print("  bucket deltas: " + " ".join(f"{le:g}:{d:g}" for le, d in sorted(deltas.items())),
          flush=True)
    check(count_after - count_before == BINDS, f"_count grew by the {BINDS} binds",
          f"{count_after - count_before}")
    check(all(deltas[le] == BINDS for le in deltas if le >= high),
          f"every bucket at and above the slowest bind's {high * 1000:.1f} ms grew by {BINDS}",
          f"{deltas}")
    below = [le for le in deltas if le < low]
    check(below and all(deltas[le] == 0 for le in below),
          f"none of the {len(below)} buckets below half the fastest bind ({low * 1000:.1f} ms) "
          "grew", f"{deltas}")
    grown = sum_after - sum_before
    check(BINDS * low <= grown <= BINDS * high + 0.01,
          f"_sum grew by {grown * 1000:.1f} ms: between {BINDS} x {low * 1000:.1f} and "
          f"{BINDS} x {high * 1000:.1f} ms", f"{grown}")


def bucket_bound(seconds: float) -> float:
    """The smallest bucket bound at or above `seconds`."""
    return next(le for le in DURATION_BUCKETS if le >= seconds)


def check_prometheus():
    with PrometheusServer([f"127.0.0.1:{PORT}"], keep=ARGS.keep) as prometheus:
        up = prometheus.wait_for('up{job="numadir"}', lambda r: r and r[0][1] == 1, 30)
        check(up and up[0][1] == 1, "prometheus scrapes numadir: up == 1",
              f"{up}; targets {prometheus.targets_health()}")
        # Enough scrapes for the 10 s rates to cover the measured window only.
        command = [os.path.join(ARGS.bin_dir, "perf", "authrate"), "-H", S.url, "-b", PEOPLE,
                   "--first", "0", "--last", str(USERS - 1), "-c", str(CONNECTIONS), "-t", "2",
                   "-d", str(DURATION_S), "--warmup", str(WARMUP_S), "--json"]
        started = time.time()
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=DURATION_S * 4 + 60)
        try:
            summary = json.loads(result.stdout)
        except json.JSONDecodeError:
            fail(f"authrate printed no JSON (exit {result.returncode}): {result.stderr[-1000:]}")
        check(result.returncode == 0 and summary["errors"]["total"] == 0 and
              summary["auths"] > 0, f"authrate: {summary['auths_per_sec']:.0f} auths/s, p50 "
              f"{summary['latency_ms']['p50']:.3f} ms, p99 {summary['latency_ms']['p99']:.3f} "
              f"ms, no error", f"exit {result.returncode}, {summary['errors']}")
        # authrate measures from its warm-up's end for DURATION_S: query 1.5 s before the end,
        # so the 10 s windows lie inside the measured time. Wait for a scrape past that time.
        at = started + WARMUP_S + DURATION_S - 1.5
        time.sleep(max(0.0, at + 2 - time.time()))
        rate = summary["auths_per_sec"]
        binds = prometheus.query_scalar(
            'sum(rate(numadir_operations_total{op="bind"}[10s]))', at)
        check(abs(binds - rate) <= RATE_BOUND * rate,
              f"rate(numadir_operations_total{{op=\"bind\"}}[10s]) = {binds:.0f}/s is within "
              f"±{RATE_BOUND:.0%} of authrate's {rate:.0f} auths/s", f"{binds / rate:.3f}x")
        success = prometheus.query_scalar(
            'sum(rate(numadir_operations_total{op="bind",result="success"}[10s]))', at)
        check(success >= 0.99 * binds, f"result=\"success\": {success:.0f}/s of them",
              f"{success} vs {binds}")
        auths = prometheus.query_scalar("sum(rate(numadir_auths_total[10s]))", at)
        check(abs(auths - binds) <= 0.02 * binds,
              f"rate(numadir_auths_total[10s]) = {auths:.0f}/s, the same", f"{auths}")
        counted = prometheus.query_scalar(
            'sum(rate(numadir_operation_duration_seconds_count{op="bind"}[10s]))', at)
        check(abs(counted - binds) <= 0.02 * binds,
              f"the bind histogram counts them all ({counted:.0f}/s)", f"{counted}")
        searches = prometheus.query_scalar(
            'sum(rate(numadir_operations_total{op="search"}[10s]))', at)
        check(abs(searches - binds) <= 0.05 * binds,
              f"as many searches ({searches:.0f}/s): one per auth", f"{searches}")
        for quantile, key in ((0.99, "p99"), (0.5, "p50")):
            server = prometheus.query_scalar(
                f"histogram_quantile({quantile}, sum by (le) "
                f'(rate(numadir_operation_duration_seconds_bucket{{op="bind"}}[10s])))', at)
            client = summary["latency_ms"][key] / 1000
            bound = bucket_bound(client)
            floor = P99_FLOOR_S if key == "p99" else 0
            check(not math.isnan(server) and floor < server <= bound,
                  f"server-side bind {key} {server * 1e6:.0f} µs is within ({floor * 1e6:.0f} µs, "
                  f"{bound * 1e6:.0f} µs] (authrate's {key} per auth {client * 1e6:.0f} µs, "
                  "rounded up to its bucket)", f"{server}")
        by_node = prometheus.query(
            'histogram_quantile(0.99, sum by (le, node) '
            '(rate(numadir_operation_duration_seconds_bucket{op="bind"}[10s])))', at)
        check(by_node and all(labels.get("node") for labels, _ in by_node),
              f"p99 per node: {[(l['node'], round(v * 1e6)) for l, v in by_node]} µs")
        open_connections = prometheus.query_scalar("sum(numadir_connections_open)", at)
        # The scrape itself is an HTTP connection, not an LDAP one: only authrate's count.
        check(open_connections == CONNECTIONS,
              f"numadir_connections_open summed: {open_connections:.0f} = authrate's "
              f"{CONNECTIONS} connections", f"{open_connections}")
        requests = prometheus.query_scalar("sum(rate(numadir_listener_requests_total[10s]))", at)
        check(requests >= 1.9 * binds, f"listener requests {requests:.0f}/s: a search and a "
              "bind per auth", f"{requests}")


def set_server(server):
    global S
    S = server


def main() -> int:
    global ARGS, PORT
    ARGS = parse_args(__doc__)
    if not ARGS.bin_dir:
        print("metrics_prometheus: --bin-dir is required")
        return 2
    made = subprocess.run([ARGS.numadir, "passwd", "-h", "ARGON2", "-s", SLOW_PW],
                          capture_output=True, text=True, timeout=60)
    if made.returncode != 0:
        print(f"numadir passwd -h ARGON2 failed: {made.stderr}")
        return 1
    slow = (f"dn: {SLOW_DN}\nobjectClass: inetOrgPerson\nuid: slow-argon2\ncn: slow\n"
            f"sn: Argon2\nuserPassword: {made.stdout.strip()}\n")
    PORT = free_port()
    return run_suite("metrics_prometheus", ARGS, [
        ("every family of the contract is in a scrape", check_families),
        ("promtool check metrics in both formats", check_promtool),
        ("a planted slow bind lands in the right buckets", check_slow_bind),
        ("prometheus's rates and quantiles agree with authrate's", check_prometheus),
    ], set_server, users=USERS, extra_ldif=slow, extra_toml=metrics_toml(PORT))


if __name__ == "__main__":
    sys.exit(main())
