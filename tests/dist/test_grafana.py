# SPDX-License-Identifier: Apache-2.0
# dist/grafana/chash-proxy.json against a real chash-proxy: every metric a panel, variable or
# annotation queries is in the proxy's /metrics with the labels the query uses, every chash
# family the proxy serves has a panel, each expression parses (promtool check rules), the scrape
# passes `promtool check metrics`, and the JSON is dashboard.py's output.
import json
import os
import re
import subprocess
import sys

import time
import urllib.parse
import urllib.request

import pytest
import redis

from conftest import (ROOT, Processes, build_dir, built, free_port, http_get, require_tool,
                      start_redis, wait_port)

DASHBOARD = os.path.join(ROOT, "dist", "grafana", "chash-proxy.json")
GENERATOR = os.path.join(ROOT, "dist", "grafana", "dashboard.py")
# Labels Prometheus adds when it scrapes; the proxy does not serve them.
TARGET_LABELS = {"job", "instance"}
# Families the dashboard leaves out on purpose. Sentinel and Redis Cluster series appear only
# with such pools (not started here); a new family the proxy serves must be queried by a panel
# or listed here with the reason (docs/PACKAGING.md, "Adding panels").
NOT_CHARTED = {
    # name: why
}

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SELECTOR = re.compile(rf"({NAME})\{{([^}}]*)\}}")
MATCHER = re.compile(rf"({NAME})\s*(=~|!~|!=|=)\s*\"")
BY = re.compile(rf"\bby \(([^)]*)\) \((?:rate|increase)?\(?({NAME})\{{")


@pytest.fixture(scope="module")
def dashboard():
    with open(DASHBOARD, encoding="utf-8") as f:
        return json.load(f)


def queries(d):
    """Every PromQL text in the dashboard, with where it is."""
    out = []
    for p in d["panels"]:
        for t in p.get("targets", []):
            out.append((f"panel {p['title']!r}", t["expr"]))
    for v in d["templating"]["list"]:
        if v["type"] == "query":
            out.append((f"variable {v['name']}", v["query"]["query"]))
    for a in d["annotations"]["list"]:
        if "expr" in a:
            out.append((f"annotation {a['name']}", a["expr"]))
    return out


def parse_scrape(text):
    """{series name: set of label names} from a Prometheus text exposition."""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(rf"({NAME})(\{{(.*)\}})? ", line)
        assert m, f"unparsable line in /metrics: {line!r}"
        labels = set(re.findall(rf"({NAME})=\"", m.group(3) or ""))
        series.setdefault(m.group(1), set()).update(labels)
    return series


class Stack:
    """chash-proxy with a redis pool over two redis-servers, and a Prometheus scraping it."""


def prom_query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", body
    return body["data"]["result"]


def redis_traffic(port, n):
    c = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
    for i in range(n):
        c.set(f"k{i}", str(i))
    assert c.mget([f"k{i}" for i in range(n)]) == [str(i).encode() for i in range(n)]
    c.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grafana")
    ps = Processes(str(tmp))
    try:
        proxy = built(os.environ.get("CHASH_PROXY", os.path.join(build_dir(), "chash-proxy")),
                      "chash-proxy")
        prometheus = require_tool("prometheus", "prometheus")
        r1, r2 = start_redis(ps, "r1"), start_redis(ps, "r2")
        st = Stack()
        st.port, st.admin, st.prom = free_port(), free_port(), free_port()
        # The pool's servers come from etcd (docs/FLEET.md), so the fleet's series are served.
        etcd_client, etcd_peer = free_port(), free_port()
        e = ps.start("etcd", [require_tool("etcd", "etcd-server"), "--name", "g1", "--data-dir",
                              str(tmp / "etcd"), "--listen-client-urls",
                              f"http://127.0.0.1:{etcd_client}", "--advertise-client-urls",
                              f"http://127.0.0.1:{etcd_client}", "--listen-peer-urls",
                              f"http://127.0.0.1:{etcd_peer}", "--initial-advertise-peer-urls",
                              f"http://127.0.0.1:{etcd_peer}", "--initial-cluster",
                              f"g1=http://127.0.0.1:{etcd_peer}", "--logger", "zap",
                              "--log-outputs", str(tmp / "etcd.log")])
        wait_port(etcd_client, e, limit=30)
        config = tmp / "proxy.yml"
        config.write_text(
            f"cache:\n  listen: 127.0.0.1:{st.port}\n  redis: true\n  hash: fnv1a_64\n"
            f"  distribution: ketama\n  timeout: 2000\n"
            # A short window, every request sampled: the hot-key series have ranks at once.
            f"  hot_keys: {{window: 1s, sample: 1, min_rate: 1}}\n  hot_cache: {{ttl: 1s}}\n"
            f"  servers:\n"
            f"    - 127.0.0.1:{r1}:1 r1\n    - 127.0.0.1:{r2}:1 r2\n"
            f"chash_proxy:\n  admin: 127.0.0.1:{st.admin}\n"
            f"  membership:\n    etcd: [127.0.0.1:{etcd_client}]\n    id: g1\n")
        p = ps.start("proxy", [proxy, "-c", str(config), "--no-stats"])
        wait_port(st.admin, p)
        wait_port(st.port, p)
        # Scraped every 250 ms, so that rates over $__rate_interval (given 5s below) have points.
        prom_config = tmp / "prometheus.yml"
        prom_config.write_text(
            "global: {scrape_interval: 250ms, evaluation_interval: 1s}\n"
            "scrape_configs:\n  - job_name: chash-proxy\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{st.admin}']}}]\n")
        pp = ps.start("prometheus", [prometheus, f"--config.file={prom_config}",
                                     f"--storage.tsdb.path={tmp / 'tsdb'}",
                                     f"--web.listen-address=127.0.0.1:{st.prom}"])
        wait_port(st.prom, pp, limit=60)
        # It listens before its storage is open (503 until then).
        deadline = time.monotonic() + 60
        while http_get(st.prom, "/-/ready")[0] != 200:
            assert pp.poll() is None and time.monotonic() < deadline, ps.log("prometheus")[-2000:]
            time.sleep(0.05)
        # Traffic while it scrapes, so that the rates are the proxy's real ones, not zeros, and
        # a reload halfway, for the reload panels and annotation.
        deadline = time.monotonic() + 60
        reloaded = False
        while True:
            redis_traffic(st.port, 100)
            got = prom_query(st.prom, 'count_over_time(up{job="chash-proxy"}[1m])')
            samples = float(got[0]["value"][1]) if got else 0
            if samples >= 4 and not reloaded:
                time.sleep(1.1)  # the reload's timestamp is in seconds: make it a new one
                status, body = http_get(st.admin, "/reload", method="POST")
                assert status == 200, body
                reloaded = True
            if reloaded and samples >= 16:
                break
            assert time.monotonic() < deadline, ps.log("prometheus")[-2000:]
            time.sleep(0.1)
        status, st.metrics = http_get(st.admin, "/metrics")
        assert status == 200, st.metrics
        yield st
    finally:
        ps.stop_all()


@pytest.fixture(scope="module")
def scrape(stack):
    return stack.metrics


def grafana_values(expr, rate_interval="5s"):
    """expr as Grafana sends it with every variable at All (.*)."""
    expr = expr.replace("$__rate_interval", rate_interval)
    return re.sub(r"\$\{?(\w+)\}?", ".*", expr)


def test_every_queried_metric_is_served_with_its_labels(dashboard, scrape):
    served = parse_scrape(scrape)
    problems = []
    for where, expr in queries(dashboard):
        for name, inside in SELECTOR.findall(expr):
            if name not in served:
                problems.append(f"{where}: {name} is not in /metrics")
                continue
            for label, _ in MATCHER.findall(inside):
                if label not in TARGET_LABELS and label not in served[name]:
                    problems.append(f"{where}: {name} has no label {label}")
        for labels, name in BY.findall(expr):
            for label in (x.strip() for x in labels.split(",")):
                if name in served and label not in TARGET_LABELS and label not in served[name]:
                    problems.append(f"{where}: `by ({labels})` but {name} has no label {label}")
        # A bare name (no selector) would also have to exist.
        for name in re.findall(rf"\b({NAME})\b(?!\s*[({{=])", re.sub(r'"[^"]*"', '""', expr)):
            if name.startswith(("chash_proxy_", "process_")) and name not in served:
                problems.append(f"{where}: {name} is not in /metrics")
    assert not problems, "\n".join(problems)


def test_every_family_the_proxy_serves_is_charted(dashboard, scrape):
    text = json.dumps(dashboard)
    families = re.findall(rf"^# TYPE ({NAME}) ", scrape, re.M)
    assert "chash_proxy_requests_total" in families
    missing = [f for f in families
               if f.startswith("chash_proxy_") and f not in NOT_CHARTED
               and not re.search(rf"\b{f}(_bucket|_sum|_count)?\b", text)]
    assert not missing, (f"/metrics has families no panel queries: {missing}; add panels in "
                         f"{GENERATOR} (docs/PACKAGING.md) or list them in NOT_CHARTED with why")


def test_expressions_parse(dashboard, tmp_path):
    """promtool parses each expression, with Grafana's variables given values as it would."""
    promtool = require_tool("promtool", "prometheus")
    rules = []
    for i, (where, expr) in enumerate(queries(dashboard)):
        if expr.startswith("label_values("):  # Grafana's own function around a selector
            expr = re.match(r"label_values\((.*), *" + NAME + r"\)$", expr).group(1)
        expr = grafana_values(expr)
        rules.append({"record": f"dashboard:query_{i}", "expr": expr})
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    r = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_scrape_passes_promtool_check_metrics(scrape):
    promtool = require_tool("promtool", "prometheus")
    r = subprocess.run([promtool, "check", "metrics"], input=scrape, capture_output=True,
                       text=True)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), (
        r.stdout + r.stderr)


def test_json_is_the_generators_output():
    r = subprocess.run([sys.executable, GENERATOR, "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_grafana_schema(dashboard):
    """What Grafana 9+ needs to import it anywhere: a data source variable used by every query,
    unique panel ids, panels on the 24-column grid without overlaps."""
    assert dashboard["schemaVersion"] >= 36 and dashboard["uid"] and dashboard["title"]
    ds = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    assert len(ds) == 1 and ds[0]["query"] == "prometheus"
    ref = {"type": "prometheus", "uid": "${" + ds[0]["name"] + "}"}
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    cells = {}
    for p in dashboard["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = p["title"]
        if p["type"] == "row":
            continue
        assert p["datasource"] == ref, p["title"]
        assert p["targets"], p["title"]
        assert len({t["refId"] for t in p["targets"]}) == len(p["targets"]), p["title"]
        for t in p["targets"]:
            assert t["datasource"] == ref and t["expr"], p["title"]
    for v in dashboard["templating"]["list"]:
        if v["type"] == "query":
            assert v["datasource"] == ref, v["name"]


def test_every_query_returns_series_in_prometheus(dashboard, stack):
    """A real Prometheus scraping the proxy evaluates each query as Grafana would send it: each
    one answers with series (vector matching and aggregations hold at run time, not only in
    the parser), and the request rate it computes is the traffic this test sent."""
    empty = []
    for where, expr in queries(dashboard):
        if expr.startswith("label_values("):
            metric = re.match(r"label_values\((.*), *(" + NAME + r")\)$", expr)
            result = prom_query(stack.prom, grafana_values(metric.group(1)))
            if not result or not all(metric.group(2) in r["metric"] for r in result):
                empty.append(f"{where}: no {metric.group(2)} values")
            continue
        if not prom_query(stack.prom, grafana_values(expr)):
            empty.append(f"{where}: {expr}")
    assert not empty, "queries with no series:\n" + "\n".join(empty)
    rps = prom_query(stack.prom, grafana_values(
        'sum(rate(chash_proxy_requests_total{job=~"$job",pool=~"$pool"}[$__rate_interval]))'))
    assert float(rps[0]["value"][1]) > 0, rps
