#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Markdown tables for bench/proxy/run.sh (make bench-proxy).

Input: the TSV run.sh writes, one row per measurement:
  proto target workers test pipeline ops p50_ms p99_ms proxy_us_per_op client_cores note
("-" where there is no value; workers empty for direct rows). One table per protocol, rows
grouped by test and pipeline depth so the targets of one workload sit together (bigkeys rows,
proto redis-10k / memcache-10k, are the medians of their rounds). The baseline
is nutcracker (same test and depth) for redis and memcache, and the faster of haproxy and
nginx stream at the same worker count for tcp. Below each table: the geometric mean of
chash-proxy's ratios per worker count.
"""
import math
import sys

TITLES = {
    "redis": "redis (redis-benchmark; direct = one of the 3 redis-servers)",
    "memcache": "memcache (bench/proxy/mcbench.c; direct = one of the 3 memcached)",
    "tcp": "tcp (wrk over HTTP keep-alive; direct = the nginx backend)",
    "redis-10k": "redis, bigkeys (redis-benchmark; the targets up at once, taken in turn)",
    "tls": "redis over TLS (redis-benchmark --tls; chash-proxy with tls: and server_tls:; plaintext rows for reference; targets in turn, median of the rounds)",
    "memcache-10k": "memcache, bigkeys (bench/proxy/mcbench.c; the targets up at once, taken in turn)",
    "cluster": "redis cluster (3 masters; direct = redis-benchmark --cluster, cluster-aware; chash-proxy's cluster pool in front of the same nodes; targets in turn, median of the rounds)",
}
TESTS = {"set": "SET", "get": "GET", "mget": "MGET", "http": "HTTP GET", "mset": "MSET", "del": "DEL",
         "set1": "SET (1 key)", "get1": "GET (1 key)"}
PEERS_TCP = ("haproxy", "nginx stream")


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


def fmt_ops(v):
    return "—" if v is None else f"{v:,.0f}"


def fmt_ms(v):
    return "—" if v is None else f"{v:.3f}"


def fmt_ratio(v):
    return "—" if v is None else f"{v:.2f}×"


def main(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 11:
                parts += [""] * (11 - len(parts))
            proto, target, workers, test, pipe, ops, p50, p99, us, cores, note = parts[:11]
            rows.append(dict(proto=proto, target=target, workers=workers, test=test,
                             pipe=int(pipe), ops=num(ops), p50=num(p50), p99=num(p99),
                             us=num(us), cores=num(cores), note=note))
    protos = list(dict.fromkeys(r["proto"] for r in rows))
    for proto in protos:
        rs = [r for r in rows if r["proto"] == proto]
        test_order = {t: i for i, t in enumerate(dict.fromkeys(r["test"] for r in rs))}
        target_order = {t: i for i, t in enumerate(dict.fromkeys(r["target"] for r in rs))}
        rs.sort(key=lambda r: (test_order[r["test"]], r["pipe"], target_order[r["target"]],
                               int(r["workers"] or 0)))

        def baseline(r):
            if proto == "cluster":  # the cluster-aware client straight to the nodes
                for x in rs:
                    if x["target"].startswith("direct") and x["test"] == r["test"] and x["pipe"] == r["pipe"]:
                        return x if x["ops"] is not None else None
                return None
            if proto == "tcp":
                peers = [x for x in rs if x["target"] in PEERS_TCP and x["workers"] == r["workers"]
                         and x["ops"] is not None]
                return max(peers, key=lambda x: x["ops"]) if peers else None
            for x in rs:
                if x["target"] == "nutcracker" and x["test"] == r["test"] and x["pipe"] == r["pipe"]:
                    return x if x["ops"] is not None else None
            return None

        base_name = {"tcp": "best peer", "cluster": "direct"}.get(proto, "nutcracker")
        print(f"### {TITLES.get(proto, proto)}")
        print()
        head = ["test", "pipeline", "target", "workers", "ops/s", "p50 ms", "p99 ms",
                f"ops/s ÷ {base_name}", f"p99 ÷ {base_name}", "proxy CPU µs/op", "client CPU", "note"]
        print("| " + " | ".join(head) + " |")
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        summary = {}
        for r in rs:
            b = baseline(r)
            ops_ratio = p99_ratio = None
            if b is not None and r["ops"] is not None:
                ops_ratio = r["ops"] / b["ops"]
                if r["p99"] and b["p99"]:
                    p99_ratio = r["p99"] / b["p99"]
            if r["target"] == "chash-proxy" and ops_ratio is not None:
                s = summary.setdefault(r["workers"], [[], []])
                s[0].append(ops_ratio)
                if p99_ratio is not None:
                    s[1].append(p99_ratio)
            name, _, keys = r["test"].partition("-")
            test = TESTS.get(name, name)
            if keys.isdigit():  # bigkeys rows: "mget-10000"
                test += f" ({int(keys):,} keys)"
            elif r["test"] == "mget":
                test += " (10 keys)"
            pipe = str(r["pipe"]) if proto != "tcp" else "—"
            cores = "—" if r["cores"] is None else f"{r['cores']:.2f}"
            us = "—" if r["us"] is None else f"{r['us']:.2f}"
            note = r["note"].replace("|", "/")
            print(f"| {test} | {pipe} | {r['target']} | {r['workers'] or '—'} | {fmt_ops(r['ops'])} | "
                  f"{fmt_ms(r['p50'])} | {fmt_ms(r['p99'])} | {fmt_ratio(ops_ratio)} | "
                  f"{fmt_ratio(p99_ratio)} | {us} | {cores} | {note} |")
        print()
        for w in sorted(summary, key=lambda w: int(w or 0)):
            ops_r, p99_r = summary[w]
            gm = lambda v: math.exp(sum(math.log(x) for x in v) / len(v)) if v else None
            print(f"chash-proxy, {w} worker{'s' if w != '1' else ''}: ops/s {fmt_ratio(gm(ops_r))} and "
                  f"p99 {fmt_ratio(gm(p99_r))} of {base_name} (geometric mean over {len(ops_r)} row{'s' if len(ops_r) != 1 else ''})  ")
        if summary:
            print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: table.py RESULTS.tsv")
    main(sys.argv[1])
