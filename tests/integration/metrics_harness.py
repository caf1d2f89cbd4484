#!/usr/bin/python3
"""What the metrics integration tests (metrics_prometheus_test.py, metrics_endpoint_test.py,
metrics_families_test.py) share: the metric families of the contract (docs/metrics.md), a
[metrics] table for numadir.toml on a free loopback port, an HTTP client for the endpoint, a
parser of the Prometheus text / OpenMetrics exposition, and Debian's prometheus run in a
temporary directory (PrometheusServer) with a client of its HTTP API.

  port = free_port()
  with NumadirServer(..., extra_toml=metrics_toml(port)) as server:
      status, headers, body = http_get(port, "/metrics")
      samples = parse_exposition(body.decode())
      with PrometheusServer([f"127.0.0.1:{port}"]) as prometheus:
          prometheus.wait_for_up(1)
          value = prometheus.query_scalar('sum(numadir_auths_total)')

Standard library only (http.client, json, ssl, urllib).
"""
import http.client
import json
import math
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from numadir_harness import fail

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALERTS_FILE = os.path.join(REPO, "etc", "prometheus", "numadir-alerts.yml")
PROMETHEUS_EXAMPLE = os.path.join(REPO, "etc", "prometheus", "prometheus.yml")
DASHBOARD_FILE = os.path.join(REPO, "etc", "grafana", "numadir-dashboard.json")

OPERATIONS = ("bind", "search", "compare", "add", "modify", "delete", "modrdn", "extended")
# The buckets of numadir_operation_duration_seconds and numadir_writer_commit_duration_seconds.
DURATION_BUCKETS = (1e-05, 2.5e-05, 5e-05, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                    0.025, 0.05, 0.1, 0.25, 0.5, 1.0, math.inf)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, math.inf)

# The contract's families: name -> (type, labels). Counters are named with their _total suffix
# as they appear in the Prometheus text format.
FAMILIES = {
    "numadir_build_info": ("gauge", ("version",)),
    "numadir_operations_total": ("counter", ("op", "result")),
    "numadir_auths_total": ("counter", ()),
    "numadir_operation_duration_seconds": ("histogram", ("op", "node")),
    "numadir_connections_open": ("gauge", ("listener", "node")),
    "numadir_connections_accepted_total": ("counter", ("listener", "node")),
    "numadir_connections_refused_total": ("counter", ("listener", "node")),
    "numadir_connections_closed_total": ("counter", ("listener", "node", "reason")),
    "numadir_listener_requests_total": ("counter", ("listener", "node")),
    "numadir_pool_queue_depth": ("gauge", ("node",)),
    "numadir_pool_queue_high_water": ("gauge", ("node",)),
    "numadir_pool_queue_capacity": ("gauge", ("node",)),
    "numadir_pool_tasks_total": ("counter", ("node",)),
    "numadir_pool_helped_total": ("counter", ("node",)),
    "numadir_pool_submit_refused_total": ("counter", ("node",)),
    "numadir_pool_lock_acquisitions_total": ("counter", ("node",)),
    "numadir_pool_lock_contended_total": ("counter", ("node",)),
    "numadir_pool_lock_wait_seconds_total": ("counter", ("node",)),
    "numadir_worker_busy_seconds_total": ("counter", ("node",)),
    "numadir_worker_parks_total": ("counter", ("node",)),
    "numadir_writer_jobs_total": ("counter", ()),
    "numadir_writer_failed_jobs_total": ("counter", ()),
    "numadir_writer_commits_total": ("counter", ()),
    "numadir_writer_batch_size": ("histogram", ()),
    "numadir_writer_commit_duration_seconds": ("histogram", ()),
    "numadir_access_log_dropped_lines_total": ("counter", ()),
    "numadir_tls_handshakes_total": ("counter", ("kind",)),
    "numadir_password_policy_lockouts_total": ("counter", ()),
    "numadir_replication_consumer_up": ("gauge", ("rid", "state")),
    "numadir_replication_consumer_changes_applied_total": ("counter", ("rid",)),
    "numadir_replication_consumer_csn_timestamp_seconds": ("gauge", ("rid",)),
    "numadir_context_csn_timestamp_seconds": ("gauge", ()),
    "numadir_sync_consumers": ("gauge", ("mode",)),
    "numadir_sync_consumer_lag_seconds": ("gauge", ("peer", "rid")),
    "numadir_sync_consumer_queue_depth": ("gauge", ("peer", "rid")),
    "process_resident_memory_bytes": ("gauge", ()),
    "process_open_fds": ("gauge", ()),
    "process_max_fds": ("gauge", ()),
    "process_cpu_seconds_total": ("counter", ()),
    "process_start_time_seconds": ("gauge", ()),
}
# Families a server shows only in some configurations: the single dispatcher's lock, the access
# log's drops (when the log is on), a replication consumer's, a provider's sync searches (a
# series per search), the contextCSN (once known). Every other family is in every scrape.
CONDITIONAL = {
    "numadir_pool_lock_acquisitions_total": "dispatcher = \"single\"",
    "numadir_pool_lock_contended_total": "dispatcher = \"single\"",
    "numadir_pool_lock_wait_seconds_total": "dispatcher = \"single\"",
    "numadir_access_log_dropped_lines_total": "the access log on",
    "numadir_password_policy_lockouts_total": "a password policy ([passwords] default_policy)",
    "numadir_replication_consumer_up": "a [[replication]] consumer",
    "numadir_replication_consumer_changes_applied_total": "a [[replication]] consumer",
    "numadir_replication_consumer_csn_timestamp_seconds": "a [[replication]] consumer",
    "numadir_context_csn_timestamp_seconds": "a contextCSN (after a change)",
    "numadir_sync_consumers": "a provider (sync searches)",
    "numadir_sync_consumer_lag_seconds": "a sync search being served",
    "numadir_sync_consumer_queue_depth": "a sync search being served",
}
ALWAYS = [name for name in FAMILIES if name not in CONDITIONAL]

OPENMETRICS_ACCEPT = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
# What Prometheus 2.42 itself sends (scrape.go's scrapeAcceptHeader).
PROMETHEUS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def free_port() -> int:
    """A loopback TCP port nothing listens on now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def metrics_toml(port: int, host: str = "127.0.0.1", **keys) -> str:
    """A [metrics] table listening on host:port; `keys` are more keys (strings quoted)."""
    lines = ["[metrics]", f'listen = "{host}:{port}"']
    for name, value in keys.items():
        if isinstance(value, bool):
            lines.append(f"{name} = {'true' if value else 'false'}")
        elif isinstance(value, int):
            lines.append(f"{name} = {value}")
        else:
            lines.append(f'{name} = "{value}"')
    return "\n".join(lines) + "\n"


def http_get(port: int, path: str = "/metrics", headers: dict = None, method: str = "GET",
             context: ssl.SSLContext = None, timeout: float = 10, host: str = "127.0.0.1"):
    """One request on a new connection (HTTPS with `context`). Returns (status, {lowercase header
    name: value}, body bytes)."""
    if context is not None:
        connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request(method, path, headers=headers or {})
        response = connection.getresponse()
        body = response.read()
        return (response.status, {k.lower(): v for k, v in response.getheaders()}, body)
    finally:
        connection.close()


def wait_for_endpoint(port: int, timeout: float = 30, context: ssl.SSLContext = None,
                      headers: dict = None) -> str:
    """Waits until GET /metrics answers 200 (numadir starts the endpoint beside its listeners).
    Returns: the body. Fails the test if it never does."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            status, _, body = http_get(port, context=context, headers=headers, timeout=5)
            if status == 200:
                return body.decode()
            last = f"status {status}"
        except (OSError, http.client.HTTPException) as error:
            last = repr(error)
        time.sleep(0.1)  # Poll: nothing signals the endpoint's start but its port.
    fail(f"the metrics endpoint on port {port} did not answer 200 within {timeout:.0f}s "
         f"(last: {last})")


# -- the exposition formats -------------------------------------------------------------------
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$')
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def parse_value(text: str) -> float:
    """A sample value or an le bound: Python's float() reads "+Inf", "-Inf" and "NaN" too."""
    return float(text)


def parse_labels(text: str) -> dict:
    labels = {}
    position = 0
    while position < len(text):
        match = _LABEL.match(text, position)
        if match is None:
            fail(f"malformed labels {{{text}}} at {position}")
        labels[match.group(1)] = re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1),
                                                                            m.group(1)),
                                        match.group(2))
        position = match.end()
    return labels


class Exposition:
    """A parsed scrape: samples[name] = [(labels, value)], types[family] = type."""

    def __init__(self, text: str):
        self.text = text
        self.samples = {}
        self.types = {}
        for line in text.splitlines():
            if not line:
                continue
            if line.startswith("#"):
                parts = line.split(None, 3)
                if len(parts) >= 4 and parts[1] == "TYPE":
                    self.types[parts[2]] = parts[3].strip()
                continue
            match = _SAMPLE.match(line)
            if match is None:
                fail(f"malformed sample line {line!r}")
            labels = parse_labels(match.group(3) or "")
            self.samples.setdefault(match.group(1), []).append((labels,
                                                                parse_value(match.group(4))))

    def names(self) -> set:
        return set(self.samples)

    def has_family(self, family: str) -> bool:
        kind = FAMILIES.get(family, ("", ()))[0]
        if kind == "histogram":
            return family + "_bucket" in self.samples and family + "_count" in self.samples
        return family in self.samples

    def values(self, name: str, **match) -> list:
        """The samples of `name` whose labels include `match`, as [(labels, value)]."""
        return [(labels, value) for labels, value in self.samples.get(name, [])
                if all(labels.get(k) == v for k, v in match.items())]

    def total(self, name: str, **match) -> float:
        return sum(value for _, value in self.values(name, **match))

    def buckets(self, family: str, **match) -> dict:
        """le (float) -> cumulative count summed over the series matching `match`."""
        out = {}
        for labels, value in self.values(family + "_bucket", **match):
            le = parse_value(labels["le"])
            out[le] = out.get(le, 0) + value
        return out


def parse_exposition(text: str) -> Exposition:
    return Exposition(text)


def scrape(port: int, accept: str = None, context: ssl.SSLContext = None,
           headers: dict = None) -> Exposition:
    headers = dict(headers or {})
    if accept:
        headers["Accept"] = accept
    status, _, body = http_get(port, headers=headers, context=context)
    if status != 200:
        fail(f"GET /metrics answered {status}: {body[:200]!r}")
    return parse_exposition(body.decode())


def promtool(*args, input_text: str = None, timeout: float = 60):
    """Runs promtool; returns (exit status, stdout + stderr)."""
    result = subprocess.run([PROMTOOL, *args], input=input_text, capture_output=True, text=True,
                            timeout=timeout)
    return result.returncode, result.stdout + result.stderr


# -- names used by the example files --------------------------------------------------------
_NAME = re.compile(r'\b((?:numadir|process)_[a-zA-Z0-9_]+)\b')


def metric_names(expr: str) -> set:
    """The metric names `expr` reads (numadir_* and process_*)."""
    return set(_NAME.findall(expr))


def dashboard_queries(path: str = DASHBOARD_FILE) -> list:
    """Every PromQL expression of the Grafana dashboard: panel targets and query variables."""
    with open(path) as stream:
        dashboard = json.load(stream)
    queries = []

    def walk(panels):
        for panel in panels:
            for target in panel.get("targets", []):
                if target.get("expr"):
                    queries.append((panel.get("title", ""), target["expr"]))
            walk(panel.get("panels", []))

    walk(dashboard.get("panels", []))
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        if isinstance(query, dict):
            query = query.get("query")
        if variable.get("type") == "query" and query:
            queries.append((f"variable {variable['name']}", query))
    return queries


def grafana_to_promql(expr: str) -> str:
    """A dashboard expression as Prometheus takes it: Grafana's variables replaced, and a
    variable's label_values(metric, label) as the PromQL that lists those values."""
    expr = expr.replace("$__rate_interval", "5s").replace("$__interval", "5s")
    values = re.fullmatch(r"\s*label_values\((.*),\s*(\w+)\s*\)\s*", expr)
    if values:
        expr = f"group by ({values.group(2)}) ({values.group(1)})"
    return re.sub(r'\$\{?instance\}?', ".*", expr)


def alert_rules(path: str = ALERTS_FILE) -> list:
    """(alert name, expr) of the alerting rules file (a small YAML reader: promtool has checked
    its syntax; rules are "- alert: X" followed by "expr: ...")."""
    rules = []
    name = None
    with open(path) as stream:
        for line in stream:
            stripped = line.strip()
            if stripped.startswith("- alert:"):
                name = stripped.split(":", 1)[1].strip()
            elif stripped.startswith("expr:") and name is not None:
                rules.append((name, stripped.split(":", 1)[1].strip()))
                name = None
    return rules


# -- prometheus ------------------------------------------------------------------------------
class PrometheusServer:
    """Debian's prometheus scraping `targets` every second, with its own config and data under a
    temporary directory and its web API on a free loopback port. A context manager.
    `job_extra`: more YAML lines of the scrape job (e.g. a tls_config)."""

    def __init__(self, targets, scrape_interval: str = "1s", scrape_timeout: str = "900ms",
                 job_extra: str = "", rule_files=(), keep: bool = False):
        self.targets = list(targets)
        self.scrape_interval = scrape_interval
        self.scrape_timeout = scrape_timeout
        self.job_extra = job_extra
        self.rule_files = list(rule_files)
        self.keep = keep
        self.dir = None
        self.process = None
        self.port = None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="numadir-it-prometheus-")
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc):
        self._stop()
        return False

    def _start(self):
        self.config = os.path.join(self.dir, "prometheus.yml")
        rules = "".join(f"  - {path}\n" for path in self.rule_files)
        targets = ", ".join(f'"{t}"' for t in self.targets)
        with open(self.config, "w") as stream:
            stream.write(f"""global:
  scrape_interval: {self.scrape_interval}
  scrape_timeout: {self.scrape_timeout}
  evaluation_interval: {self.scrape_interval}
{"rule_files:" + chr(10) + rules if rules else ""}
scrape_configs:
  - job_name: numadir
    static_configs:
      - targets: [{targets}]
{self.job_extra}
""")
        for attempt in range(5):  # The port is free when chosen; retry if taken meanwhile.
            self.port = free_port()
            self.log_path = os.path.join(self.dir, "prometheus.log")
            log = open(self.log_path, "wb")
            self.process = subprocess.Popen(
                [PROMETHEUS, f"--config.file={self.config}",
                 f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn",
                 "--storage.tsdb.retention.time=1h", "--web.enable-lifecycle"],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL)
            log.close()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready",
                                                timeout=2) as response:
                        if response.status == 200:
                            print(f"  prometheus: pid {self.process.pid}, port {self.port}, "
                                  f"scraping {targets} every {self.scrape_interval}",
                                  flush=True)
                            return
                except OSError:
                    pass
                time.sleep(0.1)  # Poll /-/ready: Prometheus signals readiness only there.
            if self.process.poll() is None:
                break
            if "address already in use" not in self.log_text():
                break
        fail(f"prometheus did not become ready; its log: {self.log_text()[-2000:]}")

    def log_text(self) -> str:
        try:
            with open(self.log_path, "rb") as stream:
                return stream.read().decode(errors="replace")
        except OSError:
            return ""

    def _stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.dir is not None:
            if self.keep:
                print(f"  kept {self.dir}", flush=True)
            else:
                shutil.rmtree(self.dir, ignore_errors=True)

    def api(self, path: str, **params):
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                answer = json.load(response)
        except urllib.error.HTTPError as error:
            answer = json.load(error)
        return answer

    def query(self, expr: str, at: float = None) -> list:
        """An instant query; returns the result vector [(labels, value)]. Fails on an error."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        answer = self.api("query", **params)
        if answer.get("status") != "success":
            fail(f"prometheus query {expr!r}: {answer.get('errorType')}: {answer.get('error')}")
        data = answer["data"]
        if data["resultType"] == "scalar":
            return [({}, float(data["result"][1]))]
        if data["resultType"] != "vector":
            fail(f"prometheus query {expr!r}: a {data['resultType']}, not a vector")
        return [(item["metric"], float(item["value"][1])) for item in data["result"]]

    def query_scalar(self, expr: str, at: float = None) -> float:
        """The value of a query that yields one sample. Fails if it yields none or several."""
        result = self.query(expr, at)
        if len(result) != 1:
            fail(f"prometheus query {expr!r} at {at}: {len(result)} samples, expected one: "
                 f"{result[:5]}")
        return result[0][1]

    def wait_for(self, expr: str, predicate, timeout: float = 30):
        """Waits until the query's result satisfies predicate(result). Returns the result."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if predicate(result) or time.monotonic() >= deadline:
                return result
            time.sleep(0.25)  # Poll: a scrape lands every scrape_interval.

    def targets_health(self) -> list:
        answer = self.api("targets")
        return [(t["scrapeUrl"], t["health"], t.get("lastError", ""))
                for t in answer["data"]["activeTargets"]]
