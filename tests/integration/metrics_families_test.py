#!/usr/bin/python3
"""Every metric family of the contract in a real scrape, with values that mean what they say,
and the example files under etc/ checked against what numadir really exports, so that they
cannot rot:

  - a provider (percpu, [replication.provider], an ldaps:// listener, the access log on) and a
    replica (dispatcher = "single", a [[replication.consumer]] of the provider,
    refreshAndPersist), both with [metrics] on, the provider with a password policy
    (pwdMaxFailure 3, pwdLockout): between the two scrapes every family of
    metrics_harness.FAMILIES is present, and each scrape has every family that every
    configuration has; after a change on the provider and an ldaps:// search: the provider's
    writer commits, batch size and commit time count it, its contextCSN time is within a minute
    of now, 6 wrong passwords for one account count one lockout, it serves one refreshAndPersist sync search whose lag and queue depth it shows per
    peer and rid, a full TLS handshake is counted; the replica's consumer rid 1 is "persisting"
    (up 1) with the provider's contextCSN time as its cookie's, changes applied counted, and
    its single pool shows lock acquisitions;
  - Debian's prometheus scraping both, with etc/prometheus/numadir-alerts.yml loaded: every
    rule evaluates without error (health "ok"); every PromQL expression of
    etc/grafana/numadir-dashboard.json (Grafana's $instance and $__rate_interval filled in) is
    accepted by the query API, and every metric name the dashboard and the rules read is in a
    scrape;
  - promtool check rules on the alerts, and promtool test rules on each alert (its expression
    and `for` against input series that must fire it, and ones that must not; annotations,
    which are text, left out of the comparison).

  metrics_families_test.py --numadir build/release/server/numadir --gen perf/gen_users.py

Exits 0 when every check passes; otherwise 1 with the first failing check (observed vs expected).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numadir_harness import (  # noqa: E402
    PEOPLE, ROOT_DN, ROOT_PW, NumadirServer, CheckFailed, check, fail, parse_args, run_checks,
    wait_for)
from metrics_harness import (  # noqa: E402
    ALERTS_FILE, ALWAYS, FAMILIES, PrometheusServer, alert_rules,
    dashboard_queries, free_port, grafana_to_promql, metric_names, metrics_toml, promtool,
    scrape, wait_for_endpoint)
from replication_test import consumer_toml  # noqa: E402

USERS = 100
POLICY_DN = "cn=default,ou=policies,dc=example,dc=com"
MAX_FAILURE = 3
POLICY_LDIF = f"""dn: ou=policies,dc=example,dc=com
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
P = None  # The provider.
R = None  # The replica.
PPORT = None
RPORT = None
ARGS = None
SCRAPES = {}


WORK = None  # The temporary directory: the certificate and an empty ldap.conf.


def ldap_env():
    """ldap-utils' environment: nothing from ~/.ldaprc or /etc/ldap/ldap.conf, the test's
    certificate trusted (LDAPNOINIT would make libldap ignore the LDAPTLS_* variables)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("LDAP")}
    env["HOME"] = WORK
    env["LDAPCONF"] = os.path.join(WORK, "ldap.conf")
    env["LDAPRC"] = "numadir-test-no-ldaprc"
    env["LDAPTLS_CACERT"] = os.path.join(WORK, "server.crt")
    env["LDAPTLS_REQCERT"] = "demand"
    return env


def check_provider():
    wait_for_endpoint(PPORT)
    result = subprocess.run(["/usr/bin/ldapmodify", "-x", "-H", P.url, "-D", ROOT_DN, "-w",
                             ROOT_PW], input=f"dn: uid=user1,{PEOPLE}\nchangetype: modify\n"
                            "replace: description\ndescription: changed\n", capture_output=True,
                            text=True, timeout=60, env=ldap_env())
    check(result.returncode == 0, "a modify on the provider", result.stderr)
    result = subprocess.run(["/usr/bin/ldapsearch", "-x", "-H", P.ldaps_url, "-b", PEOPLE,
                             "-LLL", "uid=user2", "1.1"], capture_output=True, text=True,
                            timeout=60, env=ldap_env())
    check(result.returncode == 0, "a search over ldaps://", result.stderr)
    exposition = scrape(PPORT)
    SCRAPES["provider"] = exposition
    check(exposition.total("numadir_writer_commits_total") >= 1 and
          exposition.total("numadir_writer_jobs_total") >= 1,
          "the provider's writer counted the commit",
          f"{exposition.values('numadir_writer_commits_total')}")
    check(exposition.total("numadir_writer_batch_size_count") >= 1 and
          exposition.total("numadir_writer_commit_duration_seconds_count") >= 1,
          "its batch size and commit time histograms counted it")
    csn = exposition.total("numadir_context_csn_timestamp_seconds")
    check(abs(csn - time.time()) < 60, f"its contextCSN time {csn:.0f} is within a minute of "
          f"now ({time.time():.0f})")
    full = exposition.total("numadir_tls_handshakes_total", kind="full")
    check(full >= 1, f"{full:.0f} full TLS handshake(s) counted")
    check(exposition.total("numadir_access_log_dropped_lines_total") == 0,
          "the access log (on) shows its dropped lines: 0")
    check(exposition.total("numadir_password_policy_lockouts_total") == 0,
          "the password policy (on) shows its lockouts: 0")
    for attempt in range(2 * MAX_FAILURE):
        result = subprocess.run(["/usr/bin/ldapwhoami", "-x", "-H", P.url, "-D",
                                 f"uid=user5,{PEOPLE}", "-w", f"wrong{attempt}"],
                                capture_output=True, text=True, timeout=60, env=ldap_env())
        if result.returncode != 49:
            fail(f"a wrong password for user5: exit {result.returncode}, expected 49")
    locked = wait_for(lambda: scrape(PPORT).total("numadir_password_policy_lockouts_total") >= 1,
                      timeout=10)
    time.sleep(0.5)  # Failures are flushed every failure_flush_ms (100 ms): let any more land.
    lockouts = scrape(PPORT).total("numadir_password_policy_lockouts_total")
    check(locked and lockouts == 1, f"{2 * MAX_FAILURE} wrong passwords for one account "
          f"(pwdMaxFailure {MAX_FAILURE}): one lockout counted", f"{lockouts}")
    sync = wait_for(lambda: scrape(PPORT).total("numadir_sync_consumers",
                                                mode="refreshAndPersist") == 1, timeout=30)
    check(sync, "the provider serves one refreshAndPersist sync search")
    exposition = scrape(PPORT)
    SCRAPES["provider"] = exposition
    lag = exposition.values("numadir_sync_consumer_lag_seconds", rid="1")
    depth = exposition.values("numadir_sync_consumer_queue_depth", rid="1")
    check(len(lag) == 1 and lag[0][0].get("peer") and 0 <= lag[0][1] < 60,
          f"its lag per sync search (peer, rid 1): {lag}")
    check(len(depth) == 1 and depth[0][1] >= 0, f"and its queue depth: {depth}")
    check(exposition.total("numadir_sync_consumers", mode="refreshOnly") == 0,
          "no refreshOnly search")


def check_replica():
    wait_for_endpoint(RPORT)
    # An operation, so that the per-operation families have series on the replica too.
    result = subprocess.run(["/usr/bin/ldapsearch", "-x", "-H", R.url, "-b", PEOPLE, "-LLL",
                             "uid=user2", "1.1"], capture_output=True, text=True, timeout=60,
                            env=ldap_env())
    check(result.returncode == 0, "a search on the replica", result.stderr)

    def persisting():
        exposition = scrape(RPORT)
        return exposition if exposition.total("numadir_replication_consumer_up", rid="1",
                                              state="persisting") == 1 else None

    exposition = wait_for(persisting, timeout=60)
    check(exposition is not None, "the replica's consumer rid 1 is persisting (up 1)",
          f"{scrape(RPORT).values('numadir_replication_consumer_up')}")
    others = [(labels, value) for labels, value in
              exposition.values("numadir_replication_consumer_up", rid="1")
              if labels["state"] != "persisting" and value != 0]
    check(not others, "no other state of it is 1", f"{others}")
    provider_csn = SCRAPES["provider"].total("numadir_context_csn_timestamp_seconds")

    def caught_up():
        exposition = scrape(RPORT)
        csn = exposition.total("numadir_replication_consumer_csn_timestamp_seconds", rid="1")
        return exposition if abs(csn - provider_csn) < 0.001 else None

    exposition = wait_for(caught_up, timeout=30)
    check(exposition is not None, "its cookie's CSN time is the provider's contextCSN time "
          f"({provider_csn:.3f})",
          f"{scrape(RPORT).values('numadir_replication_consumer_csn_timestamp_seconds')}")
    applied = exposition.total("numadir_replication_consumer_changes_applied_total", rid="1")
    check(applied >= USERS, f"it applied {applied:.0f} changes (the refresh of {USERS} users and "
          "the modify)")
    check(exposition.total("numadir_pool_lock_acquisitions_total") > 0,
          "its single dispatcher's lock acquisitions are counted")
    SCRAPES["replica"] = exposition


def check_families():
    provider, replica = SCRAPES["provider"], SCRAPES["replica"]
    for name, exposition in (("provider", provider), ("replica", replica)):
        missing = [f for f in ALWAYS if not exposition.has_family(f)]
        check(not missing, f"the {name}'s scrape has every family of every configuration",
              f"missing {missing}")
    missing = [f for f in FAMILIES if not (provider.has_family(f) or replica.has_family(f))]
    check(not missing, f"between them, all {len(FAMILIES)} families of the contract",
          f"missing {missing}")
    for family, (kind, labels) in FAMILIES.items():
        for exposition in (provider, replica):
            declared = exposition.types.get(family)
            if exposition.has_family(family) and declared != kind:
                fail(f"{family}: # TYPE {declared}, expected {kind}")
            sample = family + "_bucket" if kind == "histogram" else family
            for series, _ in exposition.values(sample):
                if set(series) - {"le"} != set(labels):
                    fail(f"{sample}{series}: expected the labels {sorted(labels)}")
    check(True, "every family has its TYPE and labels")


def all_names() -> set:
    return SCRAPES["provider"].names() | SCRAPES["replica"].names()


def check_examples_with_prometheus():
    names = all_names()
    used = {}
    for title, expr in dashboard_queries():
        for name in metric_names(expr):
            used.setdefault(name, []).append(f"dashboard: {title}")
    for alert, expr in alert_rules():
        for name in metric_names(expr):
            used.setdefault(name, []).append(f"alert {alert}")
    unknown = {name: where for name, where in used.items() if name not in names}
    check(used and not unknown, f"the {len(used)} metric names the dashboard and the alerts "
          "read are all in a real scrape", f"{unknown}")
    check(len(dashboard_queries()) >= 20, f"the dashboard has {len(dashboard_queries())} "
          "queries")
    with PrometheusServer([f"127.0.0.1:{PPORT}", f"127.0.0.1:{RPORT}"],
                          rule_files=[ALERTS_FILE], keep=ARGS.keep) as prometheus:
        up = prometheus.wait_for('up{job="numadir"} == 1', lambda r: len(r) == 2, 30)
        check(len(up) == 2, "prometheus scrapes both: up == 1",
              f"{prometheus.targets_health()}")
        prometheus.wait_for("numadir_build_info", lambda r: len(r) == 2, 10)
        time.sleep(3)  # A few scrapes, so that the rates have two samples each.
        empty = []
        for title, expr in dashboard_queries():
            result = prometheus.query(grafana_to_promql(expr))  # Fails on a PromQL error.
            if not result:
                empty.append(title)
        check(True, "every dashboard query is valid PromQL for Prometheus 2.42")
        # Queries of families that have series here must give some (ones that need traffic
        # this test does not make, e.g. refused submits, may be 0 but still have a series).
        check(not empty, "and each gives series on these two servers", f"empty: {empty}")

        def rules_evaluated(_):
            groups = prometheus.api("rules")["data"]["groups"]
            rules = [rule for group in groups for rule in group["rules"]]
            return rules if rules and all(rule.get("lastEvaluation", "").startswith("2") and
                                          not rule["lastEvaluation"].startswith("0001")
                                          for rule in rules) else None

        rules = wait_for(lambda: rules_evaluated(None), timeout=20)
        check(rules is not None and len(rules) == len(alert_rules()),
              f"prometheus loaded the {len(alert_rules())} alerting rules and evaluated them")
        bad = [(rule["name"], rule.get("lastError")) for rule in rules if rule["health"] != "ok"]
        check(not bad, "every rule's health is ok", f"{bad}")
        active = [(rule["name"], rule.get("state")) for rule in rules
                  if rule.get("state") != "inactive"]
        check(not active, "none is pending or firing on two healthy servers", f"{active}")


def without_annotations(path: str, out: str):
    """Copies the rules file leaving out each `annotations:` block (text only)."""
    lines = []
    skipping = None
    with open(path) as stream:
        for line in stream:
            indent = len(line) - len(line.lstrip())
            if skipping is not None:
                if line.strip() and indent <= skipping:
                    skipping = None
                else:
                    continue
            if line.strip() == "annotations:":
                skipping = indent
                continue
            lines.append(line)
    with open(out, "w") as stream:
        stream.writelines(lines)


RULE_TESTS = """rule_files:
  - {rules}
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'up{{job="numadir",instance="a:9330"}}'
        values: '0x20'
      - series: 'up{{job="numadir",instance="b:9330"}}'
        values: '1x20'
      - series: 'up{{job="other",instance="c:9100"}}'
        values: '0x20'
      # 10 lockouts a minute on a, 1 a minute on b.
      - series: 'numadir_password_policy_lockouts_total{{job="numadir",instance="a:9330"}}'
        values: '0+10x20'
      - series: 'numadir_password_policy_lockouts_total{{job="numadir",instance="b:9330"}}'
        values: '0+1x20'
      - series: 'numadir_sync_consumer_lag_seconds{{instance="a:9330",peer="192.0.2.2",rid="1"}}'
        values: '120x20'
      - series: 'numadir_sync_consumer_lag_seconds{{instance="a:9330",peer="192.0.2.3",rid="2"}}'
        values: '5x20'
      - series: 'numadir_replication_consumer_up{{instance="c:9330",rid="1",state="waiting to retry"}}'
        values: '1x20'
      - series: 'numadir_replication_consumer_up{{instance="c:9330",rid="1",state="persisting"}}'
        values: '0x20'
      - series: 'numadir_replication_consumer_up{{instance="c:9330",rid="2",state="persisting"}}'
        values: '1x20'
      - series: 'numadir_replication_consumer_up{{instance="c:9330",rid="2",state="waiting to retry"}}'
        values: '0x20'
      - series: 'numadir_replication_consumer_up{{instance="c:9330",rid="3",state="idle"}}'
        values: '1x20'
      - series: 'numadir_pool_queue_depth{{instance="a:9330",node="node0"}}'
        values: '900x20'
      - series: 'numadir_pool_queue_capacity{{instance="a:9330",node="node0"}}'
        values: '1000x20'
      - series: 'numadir_pool_queue_depth{{instance="a:9330",node="node1"}}'
        values: '100x20'
      - series: 'numadir_pool_queue_capacity{{instance="a:9330",node="node1"}}'
        values: '1000x20'
      - series: 'numadir_pool_submit_refused_total{{instance="a:9330",node="node0"}}'
        values: '0+5x20'
      - series: 'numadir_pool_submit_refused_total{{instance="a:9330",node="node1"}}'
        values: '0x20'
    alert_rule_test:
      # Nothing fires before its `for` has passed.
      - eval_time: 0m
        alertname: NumadirScrapeDown
        exp_alerts: []
      - eval_time: 5m
        alertname: NumadirReplicationConsumerNotUp
        exp_alerts: []
      - eval_time: 15m
        alertname: NumadirScrapeDown
        exp_alerts:
          - exp_labels: {{severity: critical, job: numadir, instance: "a:9330"}}
      - eval_time: 15m
        alertname: NumadirLockoutStorm
        exp_alerts:
          - exp_labels: {{severity: warning, job: numadir, instance: "a:9330"}}
      - eval_time: 15m
        alertname: NumadirReplicationLag
        exp_alerts:
          - exp_labels: {{severity: warning, instance: "a:9330", peer: "192.0.2.2", rid: "1"}}
      - eval_time: 15m
        alertname: NumadirReplicationConsumerNotUp
        exp_alerts:
          - exp_labels: {{severity: warning, instance: "c:9330", rid: "1"}}
      - eval_time: 15m
        alertname: NumadirPoolQueueNearlyFull
        exp_alerts:
          - exp_labels: {{severity: warning, instance: "a:9330", node: "node0"}}
      - eval_time: 15m
        alertname: NumadirPoolSubmitsRefused
        exp_alerts:
          - exp_labels: {{severity: info, instance: "a:9330", node: "node0"}}
"""


def check_promtool_rules():
    code, out = promtool("check", "rules", ALERTS_FILE)
    check(code == 0, "promtool check rules etc/prometheus/numadir-alerts.yml", out[-2000:])
    with tempfile.TemporaryDirectory(prefix="numadir-it-rules-") as directory:
        rules = os.path.join(directory, "rules.yml")
        without_annotations(ALERTS_FILE, rules)
        tests = os.path.join(directory, "tests.yml")
        with open(tests, "w") as stream:
            stream.write(RULE_TESTS.format(rules=rules))
        code, out = promtool("test", "rules", tests)
        check(code == 0, "promtool test rules: each alert fires on the series it is for, and "
              "only on those", out[-3000:])
    names = {name for name, _ in alert_rules()}
    tested = set(re.findall(r"alertname: (\w+)", RULE_TESTS))
    check(names == tested, f"every alert of the file is tested ({sorted(names)})",
          f"untested {sorted(names - tested)}")


def make_certificate(directory: str):
    crt, key = os.path.join(directory, "server.crt"), os.path.join(directory, "server.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", crt, "-days",
                    "2", "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return crt, key


def main() -> int:
    global P, R, PPORT, RPORT, ARGS
    ARGS = parse_args(__doc__)
    global WORK
    work = WORK = tempfile.mkdtemp(prefix="numadir-it-metrics-families-")
    try:
        crt, key = make_certificate(work)
        open(os.path.join(work, "ldap.conf"), "w").close()
        PPORT, RPORT = free_port(), free_port()
        provider_toml = (metrics_toml(PPORT) +
                         f'\n[replication.provider]\nenabled = true\nsessionlog = 100\n'
                         f'\n[log]\nlevel = "stats"\nfile = "{work}/provider-access.log"\n'
                         f'\n[tls]\ncertificate = "{crt}"\nkey = "{key}"\n'
                         f'\n[passwords]\ndefault_policy = "{POLICY_DN}"\n')
        with NumadirServer(ARGS.numadir, ARGS.gen, users=USERS, keep=ARGS.keep,
                           extra_ldif=POLICY_LDIF,
                           listen=("ldap://127.0.0.1:0", "ldaps://127.0.0.1:0"),
                           extra_database_toml="server_id = 1",
                           extra_toml=provider_toml) as provider:
            P = provider
            replica_toml = (metrics_toml(RPORT) + '\n[threads]\ndispatcher = "single"\n' +
                            consumer_toml(work, provider.url, 1))
            with NumadirServer(ARGS.numadir, ARGS.gen, users=0, keep=ARGS.keep,
                               extra_database_toml="server_id = 2",
                               extra_toml=replica_toml) as replica:
                R = replica
                return run_checks("metrics_families", [
                    ("the provider's families", check_provider),
                    ("the replica's families", check_replica),
                    ("every family of the contract, with its type and labels", check_families),
                    ("the dashboard and the alerts against a real scrape and prometheus",
                     check_examples_with_prometheus),
                    ("promtool checks and unit-tests the alerting rules", check_promtool_rules),
                ], keep_going=ARGS.keep_going)
    except CheckFailed as error:
        message = f"FAIL metrics_families: the servers: {error}"
        print(message, flush=True)
        sys.stderr.write(message + "\n")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
