#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes dist/grafana/chash-proxy.json, the Grafana dashboard over chash-proxy's /metrics.

    python3 dist/grafana/dashboard.py            # rewrite chash-proxy.json
    python3 dist/grafana/dashboard.py --check    # exit 1 when chash-proxy.json is not its output

The JSON is generated so that a panel is one line here and every panel is built the same way
(docs/PACKAGING.md, "The Grafana dashboard"). Grafana 9+ schema (schemaVersion 37); the Prometheus
data source is a dashboard variable, so the file imports on any Grafana without editing. The
metric names are those of docs/REFERENCE.md "Admin port and metrics"; tests/dist/test_grafana.py
checks that each one queried here exists in a running chash-proxy's /metrics with the labels
used, that each expression parses (promtool), and that this file and its output agree.
"""
import json
import os
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "chash-proxy.json")
DS = {"type": "prometheus", "uid": "${datasource}"}
RATE = "$__rate_interval"

# Label matchers: every query is narrowed by the variables above it.
S = 'job=~"$job",instance=~"$instance"'
P = S + ',pool=~"$pool"'
B = P + ',backend=~"$backend"'


def rate(metric, sel, by):
    return f"sum by ({by}) (rate({metric}{{{sel}}}[{RATE}]))"


class Dashboard:
    """Lays panels out on Grafana's 24-column grid, row by row."""

    def __init__(self):
        self.panels = []
        self.y = 0
        self.x = 0
        self.row_h = 0
        self.next_id = 1

    def _id(self):
        self.next_id += 1
        return self.next_id - 1

    def row(self, title):
        self._newline()
        self.panels.append({"type": "row", "id": self._id(), "title": title, "collapsed": False,
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []})
        self.y += 1

    def _newline(self):
        self.y += self.row_h
        self.x = 0
        self.row_h = 0

    def _place(self, w, h):
        if self.x + w > 24:
            self._newline()
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def _targets(self, queries, fmt=None):
        out = []
        for i, (expr, legend) in enumerate(queries):
            t = {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": chr(65 + i)}
            if fmt:
                t["format"] = fmt
            out.append(t)
        return out

    def timeseries(self, title, description, unit, queries, w=12, h=8, stack=False, bars=False):
        custom = {"drawStyle": "bars" if bars else "line", "fillOpacity": 60 if bars else 10,
                  "lineWidth": 1, "showPoints": "never", "spanNulls": False,
                  "stacking": {"mode": "normal" if stack else "none", "group": "A"}}
        self.panels.append({
            "type": "timeseries", "id": self._id(), "title": title, "description": description,
            "datasource": DS, "gridPos": self._place(w, h),
            "fieldConfig": {"defaults": {"unit": unit, "min": 0, "custom": custom},
                            "overrides": []},
            "options": {"legend": {"displayMode": "table", "placement": "bottom",
                                   "calcs": ["mean", "max", "lastNotNull"]},
                        "tooltip": {"mode": "multi", "sort": "desc"}},
            "targets": self._targets(queries)})

    def stat(self, title, description, unit, expr, legend="", mappings=None, w=3, h=4,
             text_mode="auto", thresholds=None):
        steps = [{"color": "green", "value": None}] + (thresholds or [])
        self.panels.append({
            "type": "stat", "id": self._id(), "title": title, "description": description,
            "datasource": DS, "gridPos": self._place(w, h),
            "fieldConfig": {"defaults": {"unit": unit, "mappings": mappings or [],
                                         "thresholds": {"mode": "absolute", "steps": steps}},
                            "overrides": []},
            "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                          "values": False},
                        "colorMode": "value", "graphMode": "area", "justifyMode": "auto",
                        "orientation": "auto", "textMode": text_mode},
            "targets": self._targets([(expr, legend)])})

    def state_timeline(self, title, description, expr, legend, mappings, w=24, h=8):
        self.panels.append({
            "type": "state-timeline", "id": self._id(), "title": title,
            "description": description, "datasource": DS, "gridPos": self._place(w, h),
            "fieldConfig": {"defaults": {"mappings": mappings, "custom": {"fillOpacity": 80},
                                         "thresholds": {"mode": "absolute", "steps": [
                                             {"color": "red", "value": None},
                                             {"color": "green", "value": 1}]}},
                            "overrides": []},
            "options": {"mergeValues": True, "showValue": "never", "rowHeight": 0.9,
                        "legend": {"displayMode": "list", "placement": "bottom"},
                        "tooltip": {"mode": "single", "sort": "none"}},
            "targets": self._targets([(expr, legend)])})

    def heatmap(self, title, description, expr, w=12, h=8):
        self.panels.append({
            "type": "heatmap", "id": self._id(), "title": title, "description": description,
            "datasource": DS, "gridPos": self._place(w, h),
            "options": {"calculate": False, "cellGap": 1, "yAxis": {"unit": "s"},
                        "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64},
                        "tooltip": {"show": True, "yHistogram": True},
                        "legend": {"show": True}},
            "fieldConfig": {"defaults": {}, "overrides": []},
            "targets": self._targets([(expr, "{{le}}")], fmt="heatmap")})


def variable(name, label, query, include_all=True):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "definition": query, "query": {"query": query, "refId": f"var-{name}"},
            "refresh": 2, "sort": 1, "multi": include_all, "includeAll": include_all,
            "allValue": ".*", "current": {}, "hide": 0, "regex": ""}


UP_DOWN = [{"type": "value", "options": {"0": {"text": "down", "color": "red", "index": 0},
                                         "1": {"text": "up", "color": "green", "index": 1}}}]


def build():
    d = Dashboard()
    d.row("Overview")
    d.stat("Proxies", "chash-proxy processes reporting (chash_proxy_build_info).", "none",
           f"count(chash_proxy_build_info{{{S}}})")
    d.stat("Version", "chash version of each proxy.", "none",
           f"count by (version) (chash_proxy_build_info{{{S}}})", "{{version}}",
           text_mode="name")
    d.stat("Requests/s", "Commands received, selected pools.", "reqps",
           f"sum(rate(chash_proxy_requests_total{{{P}}}[{RATE}]))")
    d.stat("Error replies", "Error replies made by the proxy per command received.",
           "percentunit",
           f"sum(rate(chash_proxy_errors_total{{{P}}}[{RATE}])) / "
           f"sum(rate(chash_proxy_requests_total{{{P}}}[{RATE}]))",
           thresholds=[{"color": "orange", "value": 0.001}, {"color": "red", "value": 0.01}])
    d.stat("p99 latency", "Request parsed to reply ready, 99th percentile, selected pools.", "s",
           "histogram_quantile(0.99, "
           + rate("chash_proxy_request_duration_seconds_bucket", P, "le") + ")",
           thresholds=[{"color": "orange", "value": 0.01}, {"color": "red", "value": 0.1}])
    d.stat("Clients", "Open client connections, every pool.", "none",
           f"sum(chash_proxy_clients{{{S}}})")
    d.stat("Backends down", "Backends down or ejected now (chash_proxy_backend_up == 0).", "none",
           f"count(chash_proxy_backend_up{{{B}}} == 0) or vector(0)",
           thresholds=[{"color": "red", "value": 1}])
    d.stat("Last reload", "Whether each proxy applied its last reload attempt.", "none",
           f"min(chash_proxy_last_reload_success{{{S}}})",
           mappings=[{"type": "value", "options": {"0": {"text": "refused", "color": "red"},
                                                   "1": {"text": "applied", "color": "green"}}}])

    d.row("Traffic per pool")
    d.timeseries("Requests/s", "Commands received from clients.", "reqps",
                 [(rate("chash_proxy_requests_total", P, "pool"), "{{pool}}")])
    d.timeseries("Errors/s", "Error replies the proxy made, and requests no backend could take or "
                 "answer (forward errors).", "reqps",
                 [(rate("chash_proxy_errors_total", P, "pool"), "{{pool}} error replies"),
                  (rate("chash_proxy_forward_errors_total", P, "pool"), "{{pool}} forward")])
    d.timeseries("Local replies and fragments/s", "Commands the proxy answered itself; parts of "
                 "multi-key requests split over backends.", "reqps",
                 [(rate("chash_proxy_local_replies_total", P, "pool"), "{{pool}} local"),
                  (rate("chash_proxy_fragments_total", P, "pool"), "{{pool}} fragments")])
    d.timeseries("Client bytes/s", "Bytes read from clients (in) and written to them (out).",
                 "Bps",
                 [(rate("chash_proxy_request_bytes_total", P, "pool"), "{{pool}} in"),
                  (rate("chash_proxy_response_bytes_total", P, "pool"), "{{pool}} out")])

    d.row("Latency")
    d.timeseries("Latency quantiles", "Request parsed to reply ready (histogram, 50 us .. 2 s): "
                 "quantiles interpolated within the buckets.", "s",
                 [("histogram_quantile(%s, %s)"
                   % (q, rate("chash_proxy_request_duration_seconds_bucket", P, "pool, le")),
                   "{{pool}} p%s" % name)
                  for q, name in (("0.5", "50"), ("0.9", "90"), ("0.99", "99"),
                                  ("0.999", "99.9"))])
    d.heatmap("Latency distribution", "Requests per histogram bucket, selected pools.",
              f"sum by (le) (increase(chash_proxy_request_duration_seconds_bucket{{{P}}}"
              f"[{RATE}]))")
    d.timeseries("Mean latency", "Sum of request durations over their count.", "s",
                 [(rate("chash_proxy_request_duration_seconds_sum", P, "pool") + " / "
                   + rate("chash_proxy_request_duration_seconds_count", P, "pool"),
                   "{{pool}}")], w=24)

    d.row("Backends")
    d.state_timeline("Backend state", "1 takes traffic, 0 down or ejected.",
                     f"chash_proxy_backend_up{{{B}}}", "{{pool}} {{backend}}", UP_DOWN)
    d.timeseries("Requests/s per backend", "Requests sent (tcp pools: connections relayed).",
                 "reqps",
                 [(rate("chash_proxy_backend_requests_total", B, "pool, backend"),
                   "{{pool}} {{backend}}")])
    d.timeseries("Load over the mean", "Each backend's requests/s over its pool's mean: how "
                 "evenly the hashing spreads the load (1 is even; what `chash analyze` calls "
                 "max/mean).", "none",
                 [(rate("chash_proxy_backend_requests_total", B, "pool, backend")
                   + " / on (pool) group_left () avg by (pool) ("
                   + rate("chash_proxy_backend_requests_total", B, "pool, backend") + ")",
                   "{{pool}} {{backend}}")])
    d.timeseries("Backend errors/s", "Failures counted towards ejection, timeouts, connections "
                 "that failed, and connections the server closed.", "short",
                 [(rate("chash_proxy_backend_errors_total", B, "pool, backend"),
                   "{{backend}} errors"),
                  (rate("chash_proxy_backend_timeouts_total", B, "pool, backend"),
                   "{{backend}} timeouts"),
                  (rate("chash_proxy_backend_connection_errors_total", B, "pool, backend"),
                   "{{backend}} connection errors"),
                  (rate("chash_proxy_backend_eof_total", B, "pool, backend"),
                   "{{backend}} closed by server")])
    d.timeseries("Ejections", "Times each backend went down, per interval.", "short",
                 [(f"sum by (pool, backend) (increase(chash_proxy_backend_ejections_total{{{B}}}"
                   f"[{RATE}]))", "{{pool}} {{backend}}")], bars=True)
    d.timeseries("Backend connections", "Open connections to each backend, every worker "
                 "(redis/memcache: pooled server connections; tcp: relays).", "none",
                 [(f"sum by (pool, backend) (chash_proxy_backend_connections{{{B}}})",
                   "{{pool}} {{backend}}")])
    d.timeseries("Backend bytes/s", "Bytes of requests queued to each backend (out) and read from "
                 "it (in).", "Bps",
                 [(rate("chash_proxy_backend_request_bytes_total", B, "pool, backend"),
                   "{{backend}} out"),
                  (rate("chash_proxy_backend_response_bytes_total", B, "pool, backend"),
                   "{{backend}} in")])
    d.timeseries("Replies/s per backend", "Replies to forwarded requests (tcp pools: 0).",
                 "reqps",
                 [(rate("chash_proxy_backend_responses_total", B, "pool, backend"),
                   "{{pool}} {{backend}}")])

    d.row("Clients")
    d.timeseries("Client connections", "Open client connections per pool.", "none",
                 [(f"sum by (pool) (chash_proxy_pool_clients{{{P}}})", "{{pool}}"),
                  (f"sum(chash_proxy_clients{{{S}}})", "every pool")])
    d.timeseries("Connections accepted and refused/s", "Refused: over client_connections.",
                 "short",
                 [(f"sum(rate(chash_proxy_clients_accepted_total{{{S}}}[{RATE}]))", "accepted"),
                  (f"sum(rate(chash_proxy_clients_rejected_total{{{S}}}[{RATE}]))", "refused")])
    d.timeseries("Client connections ended/s", "Closed by the client, ended on a socket error "
                 "or a malformed request, and closed for unread replies over "
                 "client_output_limit.", "short",
                 [(rate("chash_proxy_client_eof_total", P, "pool"), "{{pool}} closed by client"),
                  (rate("chash_proxy_client_errors_total", P, "pool"), "{{pool}} errors"),
                  (rate("chash_proxy_client_output_limit_total", P, "pool"),
                   "{{pool}} over the output limit")])
    d.timeseries("Pub/Sub messages/s", "Pub/Sub messages and keyspace notifications delivered "
                 "to subscribed clients (docs/REDIS.md, Pub/Sub).", "short",
                 [(rate("chash_proxy_pubsub_messages_total", P, "pool"), "{{pool}}")])
    d.timeseries("Hostile or failed clients/s", "Clients closed for malformed requests, failed "
                 "AUTH, failed TLS handshakes.", "short",
                 [(f"sum(rate(chash_proxy_protocol_errors_total{{{S}}}[{RATE}]))",
                   "protocol errors"),
                  (f"sum(rate(chash_proxy_auth_failures_total{{{S}}}[{RATE}]))", "AUTH failures"),
                  (f"sum(rate(chash_proxy_tls_handshake_failures_total{{{S}}}[{RATE}]))",
                   "TLS handshake failures")])

    d.row("Membership changes: warm-up, rebalance, safe failover, reloads")
    d.timeseries("Warm-up/s", "After a resize: moved keys looked up at their previous owner, "
                 "values copied to the new owner, old copies removed, failed steps "
                 "(docs/FAILURES.md, warm-up).", "short",
                 [(rate("chash_proxy_warmup_reads_total", P, "pool"), "{{pool}} reads"),
                  (rate("chash_proxy_warmup_copies_total", P, "pool"), "{{pool}} copies"),
                  (rate("chash_proxy_warmup_removed_total", P, "pool"), "{{pool}} removed"),
                  (rate("chash_proxy_warmup_errors_total", P, "pool"), "{{pool}} errors")])
    d.timeseries("Rebalance keys/s", "POST /rebalance: keys listed at previous owners, moved to "
                 "their owner, skipped (home already, or gone), failed, conflicts (the owner holds "
                 "another value: both copies kept).", "short",
                 [(rate("chash_proxy_rebalance_scanned_total", P, "pool"), "{{pool}} scanned"),
                  (rate("chash_proxy_rebalance_moved_total", P, "pool"), "{{pool}} moved"),
                  (rate("chash_proxy_rebalance_skipped_total", P, "pool"), "{{pool}} skipped"),
                  (rate("chash_proxy_rebalance_failed_total", P, "pool"), "{{pool}} failed"),
                  (rate("chash_proxy_rebalance_conflicts_total", P, "pool"), "{{pool}} conflicts")])
    d.timeseries("Rebalances running", "1 while a rebalance of the pool runs.", "none",
                 [(f"max by (pool) (chash_proxy_rebalance_running{{{P}}})", "{{pool}}")],
                 w=8)
    d.timeseries("Safe failover/s", "Writes of a down backend's keys noted to delete on it, and "
                 "keys swept from it before it took traffic again.", "short",
                 [(rate("chash_proxy_backend_absent_writes_total", B, "pool, backend"),
                   "{{backend}} absent writes"),
                  (rate("chash_proxy_backend_swept_keys_total", B, "pool, backend"),
                   "{{backend}} swept")], w=8)
    d.timeseries("Replica reads/s", "Reads sent to replicas (read_policy), and those a replica "
                 "refused that went to the master.", "reqps",
                 [(rate("chash_proxy_replica_reads_total", P, "pool"), "{{pool}} replica reads"),
                  (rate("chash_proxy_replica_fallbacks_total", P, "pool"), "{{pool}} fallbacks")],
                 w=8)
    d.timeseries("Reloads", "Configuration reloads applied and refused, per interval.", "short",
                 [(f"sum(increase(chash_proxy_reloads_total{{{S}}}[{RATE}]))", "applied"),
                  (f"sum(increase(chash_proxy_reload_failures_total{{{S}}}[{RATE}]))",
                   "refused")], bars=True)
    d.timeseries("Time since the last reload attempt", "Seconds since each proxy last loaded or "
                 "tried to load its config.", "s",
                 [(f"time() - chash_proxy_last_reload_timestamp_seconds{{{S}}}", "{{instance}}")])

    d.row("Process")
    d.timeseries("CPU", "CPU time per second (1 = one core busy).", "none",
                 [(f"rate(process_cpu_seconds_total{{{S}}}[{RATE}])", "{{instance}}")], w=8)
    d.timeseries("Memory", "Resident and virtual memory.", "bytes",
                 [(f"process_resident_memory_bytes{{{S}}}", "{{instance}} resident"),
                  (f"process_virtual_memory_bytes{{{S}}}", "{{instance}} virtual")], w=8)
    d.timeseries("File descriptors", "Open descriptors (one per client and per backend "
                 "connection) and the limit.", "none",
                 [(f"process_open_fds{{{S}}}", "{{instance}} open"),
                  (f"process_max_fds{{{S}}}", "{{instance}} limit")], w=8)
    d.stat("Uptime", "Time since each proxy started.", "s",
           f"time() - process_start_time_seconds{{{S}}}", "{{instance}}", w=24, h=3)

    d.row("Fleet: membership and health through etcd (docs/FLEET.md)")
    d.timeseries("etcd reachable", "1 while etcd answers each proxy (its lease is kept alive); 0: "
                 "serving the last applied membership, changes refused.", "none",
                 [(f"min by (instance) (chash_proxy_etcd_up{{{S}}})", "{{instance}}")], w=8)
    d.timeseries("Membership revision and epoch", "The servers-key revision and the fleet state "
                 "epoch each proxy routes by: one line per proxy, apart only while a change rolls "
                 "out.", "none",
                 [(f"max by (instance, pool) (chash_proxy_membership_revision{{{P}}})",
                   "{{instance}} {{pool}} revision"),
                  (f"max by (instance, pool) (chash_proxy_fleet_epoch{{{P}}})",
                   "{{instance}} {{pool}} epoch")], w=8)
    d.timeseries("Fleet members and lag", "Live proxies serving the pool, and the epochs the most "
                 "lagging one is behind.", "none",
                 [(f"max by (pool) (chash_proxy_fleet_members{{{P}}})", "{{pool}} members"),
                  (f"max by (pool) (chash_proxy_fleet_member_lag{{{P}}})", "{{pool}} max lag")],
                 w=8)
    d.timeseries("Fleet ejections", "Servers the fleet has ejected (a quorum of proxies cannot "
                 "reach them).", "none",
                 [(f"sum by (pool, backend) (chash_proxy_fleet_ejected{{{P}}})",
                   "{{pool}} {{backend}}")], w=8)
    d.timeseries("Unreachable from one proxy/s", "Requests a proxy refused because it alone "
                 "cannot reach a backend the fleet routes to (no split brain).", "reqps",
                 [(rate("chash_proxy_fleet_unreachable_total", B, "instance, backend"),
                   "{{instance}} {{backend}}")], w=8)
    d.timeseries("Fleet state changes", "State transactions each proxy wrote, values in etcd "
                 "refused, and which proxy leads (rebalances, flushes).", "short",
                 [(f"sum by (instance) (increase(chash_proxy_fleet_transitions_total{{{S}}}[{RATE}]))",
                   "{{instance}} transitions"),
                  (f"sum by (instance) (increase(chash_proxy_fleet_refused_total{{{S}}}[{RATE}]))",
                   "{{instance}} refused"),
                  (f"max by (instance) (chash_proxy_fleet_leader{{{S}}})", "{{instance}} leader")],
                 w=8)

    d.row("Blocking commands (BLPOP, BZMPOP, XREAD BLOCK ...)")
    d.timeseries("Blocked clients", "Clients waiting on a blocking command, each on a backend "
                 "connection of its own.", "none",
                 [(f"sum by (pool) (chash_proxy_blocked_clients{{{P}}})", "{{pool}}")], w=12)
    d.timeseries("Blocking commands refused/s", "Refused because max_blocked_clients were "
                 "blocked already.", "reqps",
                 [(rate("chash_proxy_blocked_refused_total", P, "pool"), "{{pool}}")], w=12)
    d.timeseries("Clients' own connections", "Backend connections of one client's own (RESP3, "
                 "SELECT, WATCH, blocking commands), per backend.", "none",
                 [(f"sum by (pool, backend) (chash_proxy_backend_own_connections{{{P}}})",
                   "{{pool}} {{backend}}")], w=12)
    d.timeseries("Own connections refused/s", "Refused at a backend's limit: max_own_connections, "
                 "or its maxclients less the room kept for the shared connections.", "reqps",
                 [(rate("chash_proxy_own_refused_total", P, "pool"), "{{pool}}")], w=12)

    d.row("Hot keys (docs/HOTKEYS.md)")
    d.timeseries("Hottest keys", "Requests per second of each pool's hottest keys over the last "
                 "hot_keys window (key as shown: an HMAC with hash_keys), and the server each "
                 "routes to.", "reqps",
                 [(f"topk(10, max by (pool, key, owner) "
                   f"(chash_proxy_hot_key_requests_per_second{{{P}}}))",
                   "{{pool}} {{key}} on {{owner}}")], w=12)
    d.timeseries("Share of requests on the hottest key", "The top key's rate over all the pool's "
                 "sampled requests in the window: what one shard carries whatever the ring.",
                 "percentunit",
                 [(f"max by (pool) (chash_proxy_hot_key_requests_per_second{{{P},rank=\"1\"}}) / "
                   f"on (pool) (sum by (pool) "
                   f"(chash_proxy_hot_keys_sampled_requests_per_second{{{P}}}))", "{{pool}}")],
                 w=12)
    d.timeseries("Hot cache", "Reads of hot keys answered from the proxy's copy (hits), sent on "
                 "(misses), copies taken and dropped by writes through the proxy.", "reqps",
                 [(rate("chash_proxy_hot_cache_hits_total", P, "pool"), "{{pool}} hits"),
                  (rate("chash_proxy_hot_cache_misses_total", P, "pool"), "{{pool}} misses"),
                  (rate("chash_proxy_hot_cache_fills_total", P, "pool"), "{{pool}} fills"),
                  (rate("chash_proxy_hot_cache_invalidations_total", P, "pool"),
                   "{{pool}} invalidations")], w=12)
    d.timeseries("Hot reads to replicas/s", "Reads of hot keys sent to a replica of their owner "
                 "(hot_reads: replicas).", "reqps",
                 [(rate("chash_proxy_hot_replica_reads_total", P, "pool"), "{{pool}}")], w=12)
    d.timeseries("Shadow copies/s", "Requests copied to each memcache pool's shadow pool "
                 "(shadow:, replies discarded), and copies dropped because the shadow server "
                 "was down, unreachable or had 1000 copies unanswered.", "reqps",
                 [(rate("chash_proxy_shadow_sent_total", P, "pool"), "{{pool}} sent"),
                  (rate("chash_proxy_shadow_dropped_total", P, "pool"), "{{pool}} dropped")],
                 w=12)

    return {
        "title": "chash-proxy",
        "uid": "chash-proxy",
        "description": "chash-proxy (Redis/memcached/TCP sharding proxy) over its Prometheus "
                       "metrics: traffic, latency, backends, clients, membership changes.",
        "tags": ["chash", "redis", "memcached", "proxy"],
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 37,
        "version": 1,
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "",
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "weekStart": "",
        "links": [],
        "annotations": {"list": [
            {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
             "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
             "name": "Annotations & Alerts", "type": "dashboard"},
            {"datasource": DS, "enable": True, "hide": False, "iconColor": "purple",
             "name": "Reloads", "titleFormat": "reload",
             "expr": f"changes(chash_proxy_last_reload_timestamp_seconds{{{S}}}[1m]) > 0",
             "step": "30s", "textFormat": "{{instance}}"}]},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0, "includeAll": False,
             "multi": False, "refresh": 1, "regex": "", "options": []},
            variable("job", "Job", "label_values(chash_proxy_build_info, job)"),
            variable("instance", "Instance",
                     'label_values(chash_proxy_build_info{job=~"$job"}, instance)'),
            variable("pool", "Pool", f"label_values(chash_proxy_requests_total{{{S}}}, pool)"),
            variable("backend", "Backend",
                     f"label_values(chash_proxy_backend_up{{{P}}}, backend)"),
        ]},
        "panels": d.panels,
    }


def render():
    return json.dumps(build(), indent=2) + "\n"


def main(argv):
    text = render()
    if argv[1:] == ["--check"]:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{OUT} is not dashboard.py's output: run python3 {argv[0]}",
                      file=sys.stderr)
                return 1
        return 0
    if argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
