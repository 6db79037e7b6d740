#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench-hotkeys: what hot-key relief takes off the shard that owns a hot key — chash-proxy
with the hot cache off, with `hot_cache: {ttl: 1s}` and with `hot_reads: replicas`, alternated
in one run on the same backends, all on 127.0.0.1 (docs/HOTKEYS.md).

Backends: three redis-server (--save "" --appendonly no) on free loopback ports, n1..n3, and one
replica of each (--replicaof), running throughout; only the hot_reads run lists the replicas in
its pool (`- {server: "127.0.0.1:P:1 nI", replicas: [127.0.0.1:R]}`), so the other two never
read from them (every run's masters feed their replica the same write stream).

Systems (one chash-proxy process per run, fresh counters; each pool with `hot_keys: {window: 1s}`
so the hot set is learnt within a second; hash fnv1a_64, ketama, timeout 1000):
  cache-off   hot keys found and shown, no relief (the "before")
  hot_cache   `hot_cache: {ttl: 1s}`: GETs of hot keys answered from the proxy's copy,
              invalidated by any write of the key through the proxy
  hot_reads   `hot_reads: replicas`: reads of hot keys spread over the owner and its replica
Each round runs every system once (the order rotated round to round: A B C, B C A, ...), since
a shared 2-core machine drifts; the table sums the rounds.

The load: C client processes (fork), each with one connection and a pipeline of --pipeline
requests (raw RESP), paced to --rate requests/s in all (0: as fast as they go). Keys k:0..K-1
and k:hot are written first (version 1). A read is of k:hot with probability --hot-share (0.30),
else of a key drawn Zipf (s = --zipf-s) over k:0..K-1 (ranks mapped to keys by a seeded
permutation). --write-ratio of the requests are SETs of a new version ("VERSION:padding", ~100
bytes) of a key drawn the same way among the keys this client owns (key rank = client mod C;
k:hot is client 0's), so a key's versions never race. The script keeps each key's latest
acknowledged version (shared memory): a GET returning an older version than the one
acknowledged before the GET was sent is a STALE read (a copy served after a write through the
proxy; with hot_reads, a replica behind its master). Each run: --warmup seconds of load (about
two hot_keys windows: the hot set learnt, the replicas probed) and then --duration measured.

Measured per run over the measured interval:
  req/s, GET p50 / p99 (ms; from a pipelined batch's send to the reply, 2% buckets),
  per backend: INFO stats total_commands_processed and INFO commandstats cmdstat_get deltas per
      second; the hot backend is the owner of k:hot that /status's hot_keys top list names (else
      the master with the most GETs);
  origin reads saved = 1 - (backend GETs per client GET) / (the same of the cache-off runs),
      backends = the three masters and their replicas;
  cache hits: chash_proxy_hot_cache_hits_total (/metrics) delta, and as a share of client GETs;
      replica reads: chash_proxy_hot_replica_reads_total delta;
  stale reads (all keys; k:hot's in the CSV), errors, the proxy's CPU.

Output (--out DIR): hotkeys.md (the table, the per-round table, the hot list), hotkeys.csv (one
line per run). Everything is bounded: every process runs under `timeout`, --time-limit stops the
run (and reports what was measured), only 127.0.0.1 is bound or connected to, all processes
and the temp dir are removed at exit (also on Ctrl-C, SIGTERM and errors).

Knobs (flag, environment variable, default):
  --duration S        HOTKEYS_DURATION     20      measured seconds per run
  --warmup S          HOTKEYS_WARMUP       2.5     unmeasured load before (~2 windows)
  --rounds N          HOTKEYS_ROUNDS       2       each system once per round
  --systems LIST      HOTKEYS_SYSTEMS      cache-off,hot_cache,hot_reads
  --keys K            HOTKEYS_KEYS         10000
  --clients C         HOTKEYS_CLIENTS      4
  --pipeline P        HOTKEYS_PIPELINE     4
  --rate R            HOTKEYS_RATE         8000    requests/s of all clients (0: unpaced)
  --hot-share F       HOTKEYS_HOT_SHARE    0.30    of the reads, to k:hot
  --zipf-s S          HOTKEYS_ZIPF_S       0.99
  --write-ratio F     HOTKEYS_WRITE_RATIO  0.05
  --ttl T             HOTKEYS_TTL          1s      hot_cache ttl
  --window T          HOTKEYS_WINDOW       1s      hot_keys window
  --workers N         HOTKEYS_WORKERS      2       chash-proxy --workers
  --chash-proxy PATH  CHASH_PROXY          build-release/chash-proxy, else build/proxy/ or build/
  --out DIR           HOTKEYS_OUT          build-release/bench-hotkeys
  --time-limit S      HOTKEYS_TIME_LIMIT   600
  --short                                  --duration 5 --rounds 1 --keys 2000 --warmup 2 (< 40 s)
  --keep-tmp          HOTKEYS_KEEP_TMP=1   keep configs and logs

  python3 bench/hotkeys/run.py                                   # ~2.5 minutes
  python3 bench/hotkeys/run.py --short --out /tmp/bench-hotkeys  # ~30 s
"""

import argparse
import http.client
import json
import math
import multiprocessing
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "resize"))
import run as rz  # noqa: E402  (bench/resize/run.py: processes, the RESP client, values)

HOST = rz.HOST  # 127.0.0.1, and nothing else
NAMES = ["n1", "n2", "n3"]
POOL = "cache"
HOT_KEY = b"k:hot"
SYSTEMS = {
    "cache-off": "chash-proxy, hot_cache off",
    "hot_cache": "chash-proxy, hot_cache: {ttl: TTL}",
    "hot_reads": "chash-proxy, hot_reads: replicas",
}
now, log = rz.now, rz.log

# per-client counters (measured interval only, except REQ_ALL)
REQ, GETS, SETS, ERRORS, STALE, HOT_GETS, HOT_STALE, REQ_ALL, MISSES = range(9)
NCOUNT = 9
NB = 1000          # latency buckets: b = floor(ln(us) * BPL), 2% wide
BPL = 50.0


# ---------------------------------------------------------------------------------------------
# the load


def worker_main(j, cfg, counts, hist, db):
    rz.die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    (port, nclients, rate, pipeline, write_ratio, hot_share, seed, t0, tm0, tm1, cdf, perm) = cfg
    rnd = random.Random(seed * 1_000_003 + j)
    pad = bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(200))
    n = len(perm)
    hot_i = n  # db index of k:hot
    interval = pipeline * nclients / rate if rate > 0 else 0.0
    next_t = t0 + (interval * j / nclients if interval else 0.0)
    bisect_left, rand, log_ = rz.bisect.bisect_left, rnd.random, math.log
    pc = time.perf_counter
    c = [0] * NCOUNT
    h = [0] * NB
    conn = None
    while now() < t0:
        time.sleep(min(0.01, max(0.0, t0 - now())))
    while True:
        t = now()
        if t >= tm1:
            break
        if interval:
            if t < next_t:
                time.sleep(next_t - t)
                t = now()
                if t >= tm1:
                    break
            next_t += interval
            if t - next_t > 0.25:  # far behind (a stall): do not burst to catch up
                next_t = t
        measured = tm0 <= t
        # the batch: (kind, db index, key, version set / seen)
        batch = []
        for _ in range(pipeline):
            if rand() < write_ratio:
                if j == 0 and rand() < hot_share:
                    i = hot_i
                else:
                    r = bisect_left(cdf, rand())
                    r = r - r % nclients + j  # this client's ranks only: versions never race
                    if r >= n:
                        r -= nclients
                    if r < 0:
                        continue
                    i = perm[r]
                batch.append((1, i, db[i] + 1))
            else:
                if rand() < hot_share:
                    i = hot_i
                else:
                    r = bisect_left(cdf, rand())
                    i = perm[r if r < n else n - 1]
                batch.append((0, i, db[i]))  # the version acknowledged before the GET is sent
        if not batch:
            continue
        try:
            if conn is None:
                conn = rz.Conn(port, True, timeout=3.0)
            out = []
            for kind, i, ver in batch:
                key = HOT_KEY if i == hot_i else b"k:%d" % i
                if kind:
                    out.append(conn.set_cmd(key, rz.make_value(ver, pad[(ver * 7 + i) % 97:])))
                else:
                    out.append(conn.get_cmd(key))
            ts = pc()
            conn.s.sendall(b"".join(out))
            for kind, i, ver in batch:
                c[REQ_ALL] += 1
                if measured:
                    c[REQ] += 1
                try:
                    if kind:
                        ok = conn.set_reply()
                        if ok:
                            # pending SETs of this key in the same batch are this client's own,
                            # in order: the acknowledged version only grows
                            if db[i] < ver:
                                db[i] = ver
                        if measured:
                            c[SETS] += 1
                    else:
                        v = conn.get_reply()
                        lat = pc() - ts
                        if measured:
                            c[GETS] += 1
                            b = int(log_(lat * 1e6) * BPL) if lat > 1e-6 else 0
                            h[b if b < NB else NB - 1] += 1
                            if i == hot_i:
                                c[HOT_GETS] += 1
                        if v is None:
                            if measured:
                                c[MISSES] += 1  # never in this load (no expiry, no eviction)
                        elif rz.value_version(v) < ver:
                            if measured:
                                c[STALE] += 1
                                if i == hot_i:
                                    c[HOT_STALE] += 1
                except rz.ProtoError:
                    if measured:
                        c[ERRORS] += 1
        except (OSError, ValueError):
            if measured:
                c[ERRORS] += 1
            if conn is not None:
                conn.close()
                conn = None
            time.sleep(0.002)
    if conn is not None:
        conn.close()
    for k in range(NCOUNT):
        counts[j * NCOUNT + k] = c[k]
    for b in range(NB):
        hist[j * NB + b] = h[b]


def percentile(hist, q):
    total = sum(hist)
    if total == 0:
        return None
    want, acc = q * total, 0
    for b, x in enumerate(hist):
        acc += x
        if acc >= want:
            return math.exp((b + 0.5) / BPL) / 1000.0  # ms
    return None


# ---------------------------------------------------------------------------------------------
# backends


def redis_cmd(port, *args, timeout=5.0):
    """One command on a fresh connection; the reply as bytes (bulk / status) or int."""
    c = rz.Conn(port, True, timeout=timeout)
    try:
        c.s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
        ln = c.line()
        if ln[:1] == b"$":
            n = int(ln[1:])
            return None if n < 0 else c.exact(n)
        if ln[:1] == b":":
            return int(ln[1:])
        if ln[:1] == b"-":
            raise RuntimeError(ln.decode("utf-8", "replace"))
        return ln[1:]
    finally:
        c.close()


def backend_stats(port):
    """(total_commands_processed, GET calls, SET calls) of one redis-server."""
    text = redis_cmd(port, b"INFO", b"all").decode("utf-8", "replace")
    total = gets = sets = 0
    for ln in text.splitlines():
        if ln.startswith("total_commands_processed:"):
            total = int(ln.split(":", 1)[1])
        elif ln.startswith("cmdstat_get:"):
            gets = int(re.search(r"calls=(\d+)", ln).group(1))
        elif ln.startswith("cmdstat_set:"):
            sets = int(re.search(r"calls=(\d+)", ln).group(1))
    return total, gets, sets


def replication_up(port):
    try:
        text = redis_cmd(port, b"INFO", b"replication", timeout=1.0).decode("utf-8", "replace")
    except (OSError, RuntimeError, ValueError):
        return False
    return "master_link_status:up" in text


# ---------------------------------------------------------------------------------------------
# the proxy


class NotAvailable(Exception):
    pass


class Proxy:
    def __init__(self, env, system):
        self.env, self.system = env, system
        self.port, self.admin = rz.free_ports(2)
        self.path = os.path.join(env.dir, f"{system}-{self.port}.yml")
        self.server = None
        self.pid = None

    def config(self):
        a = self.env.args
        lines = [f"{POOL}:", f"  listen: {HOST}:{self.port}", "  hash: fnv1a_64", "  distribution: ketama",
                 "  redis: true", "  timeout: 1000"]
        if self.system != "fill":  # the fill's proxy: no hot-key keys at all
            lines.append(f"  hot_keys: {{window: {a.window}}}")
        if self.system == "hot_cache":
            lines.append(f"  hot_cache: {{ttl: {a.ttl}}}")
        if self.system == "hot_reads":
            lines.append("  hot_reads: replicas")
        lines.append("  servers:")
        for name, port, rport in zip(NAMES, self.env.masters, self.env.replicas):
            if self.system == "hot_reads":
                lines.append(f'    - {{server: "{HOST}:{port}:1 {name}", replicas: [{HOST}:{rport}]}}')
            else:
                lines.append(f"    - {HOST}:{port}:1 {name}")
        lines += ["chash_proxy:", f"  admin: {HOST}:{self.admin}"]
        return "\n".join(lines) + "\n"

    def start(self):
        a = self.env.args
        rz.write_atomic(self.path, self.config())
        chk = subprocess.run(["timeout", "10", a.chash_proxy, "-c", self.path, "--check"], capture_output=True,
                             text=True, stdin=subprocess.DEVNULL)
        if chk.returncode != 0:
            why = " ".join((chk.stderr + chk.stdout).split()).replace(self.path, os.path.basename(self.path))
            raise NotAvailable(f"chash-proxy refused the config (exit {chk.returncode}): {why[:400]}")
        self.server = rz.Server(f"chash-proxy-{self.system}", [a.chash_proxy, "-c", self.path, "--no-stats",
                                                               "--workers", str(a.workers)],
                                os.path.join(self.env.dir, f"{self.system}.log"), self.env.server_limit,
                                self.env.dir)
        if not rz.wait_listen(self.port, 10.0, proc=self.server.p) or \
                not rz.wait_listen(self.admin, 5.0, proc=self.server.p):
            why = self.server.tail()
            self.stop()
            raise NotAvailable(f"chash-proxy did not listen: {why}")
        self.pid = self.server.pid()

    def http(self, path):
        c = http.client.HTTPConnection(HOST, self.admin, timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        finally:
            c.close()

    def status(self):
        try:
            s, body = self.http("/status")
            return json.loads(body) if s == 200 else None
        except (OSError, ValueError):
            return None

    def metrics(self):
        """{name: value} of this pool's series (pool="cache"; unlabelled ones too)."""
        out = {}
        try:
            s, body = self.http("/metrics")
        except OSError:
            return out
        if s != 200:
            return out
        for ln in body.splitlines():
            if not ln or ln[0] == "#":
                continue
            m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)', ln)
            if not m:
                continue
            name, labels, val = m.group(1), m.group(2) or "", m.group(3)
            if labels and f'pool="{POOL}"' not in labels:
                continue
            if name == "chash_proxy_hot_key_requests_per_second":
                out.setdefault(name, []).append((labels, val))
                continue
            try:
                out[name] = out.get(name, 0.0) + float(val)
            except ValueError:
                pass
        return out

    def cpu(self):
        return rz.cpu_seconds(self.pid) if self.pid else 0.0

    def stop(self):
        if self.server is not None:
            self.server.stop()
            self.server = None


def pool_of(status):
    if not status:
        return None
    for p in status.get("pools", []):
        if p.get("name") == POOL:
            return p
    return None


def wait_replicas(proxy, limit):
    """Until /status shows every replica of the pool up: "" when it does, else what it shows
    (no replica entries after 1.5 s, or some not up after `limit` seconds)."""
    start = now()
    reps = []
    while now() < start + limit:
        p = pool_of(proxy.status())
        reps = [s for s in (p or {}).get("servers", []) if s.get("role") == "replica"]
        if reps and all(s.get("up") for s in reps):
            return ""
        if not reps and now() > start + 1.5:
            return "no replicas in /status's servers; "
        time.sleep(0.1)
    return f"replicas not all up in /status after {limit:g} s ({sum(1 for s in reps if s.get('up'))} of {len(reps)}); "


# ---------------------------------------------------------------------------------------------
# one run


HOT_METRICS = ("chash_proxy_hot_cache_hits_total", "chash_proxy_hot_cache_misses_total",
               "chash_proxy_hot_cache_fills_total", "chash_proxy_hot_cache_invalidations_total",
               "chash_proxy_hot_replica_reads_total")


def fill(env, port):
    """SET k:0..K-1 and k:hot (version 1) through the proxy, pipelined."""
    a = env.args
    pad = bytes(random.Random(a.seed).choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(200))
    c = rz.Conn(port, True, timeout=5.0)
    errors = 0
    try:
        keys = [b"k:%d" % k for k in range(a.keys)] + [HOT_KEY]
        for lo in range(0, len(keys), 500):
            part = keys[lo:lo + 500]
            c.s.sendall(b"".join(c.set_cmd(k, rz.make_value(1, pad[lo % 97:])) for k in part))
            for _ in part:
                try:
                    if not c.set_reply():
                        errors += 1
                except rz.ProtoError:
                    errors += 1
    finally:
        c.close()
    for i in range(a.keys + 1):
        env.db[i] = max(env.db[i], 1)
    return errors


def run_one(env, system, rnd_no):
    a = env.args
    res = {"system": system, "round": rnd_no, "available": True, "note": ""}
    proxy = Proxy(env, system)
    procs = []
    try:
        try:
            proxy.start()
        except NotAvailable as e:
            res.update(available=False, note=str(e))
            return res
        if system == "hot_reads":
            res["note"] += wait_replicas(proxy, 5.0)
        counts = multiprocessing.Array("q", a.clients * NCOUNT, lock=False)
        hist = multiprocessing.Array("q", a.clients * NB, lock=False)
        t0 = now() + 0.3
        tm0, tm1 = t0 + a.warmup, t0 + a.warmup + a.duration
        cfg = (proxy.port, a.clients, a.rate, a.pipeline, a.write_ratio, a.hot_share, a.seed * 101 + rnd_no * 7
               + list(SYSTEMS).index(system), t0, tm0, tm1, env.cdf, env.perm)
        procs = [env.ctx.Process(target=worker_main, args=(j, cfg, counts, hist, env.db), daemon=True)
                 for j in range(a.clients)]
        for p in procs:
            p.start()
        env.live = procs
        while now() < tm0:
            time.sleep(0.005)
        ports = env.masters + env.replicas
        b0 = [backend_stats(p) for p in ports]
        m0 = proxy.metrics()
        cpu0, s0 = proxy.cpu(), now()
        while now() < tm1:
            time.sleep(0.005)
        b1 = [backend_stats(p) for p in ports]
        m1 = proxy.metrics()
        cpu1, s1 = proxy.cpu(), now()
        st = proxy.status()
        for p in procs:
            p.join(15)
            if p.is_alive():
                p.kill()
                res["note"] += "a client did not finish; "
        env.live = []
        elapsed = s1 - s0
        c = [sum(counts[j * NCOUNT + k] for j in range(a.clients)) for k in range(NCOUNT)]
        h = [sum(hist[j * NB + b] for j in range(a.clients)) for b in range(NB)]
        res.update(elapsed=elapsed, counts=c, hist=h, proxy_cpu=(cpu1 - cpu0) / elapsed,
                   backend={ports[i]: tuple((b1[i][k] - b0[i][k]) for k in range(3)) for i in range(len(ports))})
        missing = [m for m in HOT_METRICS if m not in m1]
        res["metrics"] = {m: (m1[m] - m0.get(m, 0.0)) if m in m1 else None for m in HOT_METRICS}
        if missing:
            res["missing_metrics"] = missing
        # the hot list and the owner of k:hot
        pool = pool_of(st)
        hk = pool.get("hot_keys") if pool else None
        res["hot_top"] = (hk or {}).get("top", [])[:5] if isinstance(hk, dict) else []
        owner = None
        for e in res["hot_top"]:
            if e.get("key") == HOT_KEY.decode():
                owner = e.get("owner")
        res["owner_from"] = "status" if owner in NAMES else "gets"
        if owner not in NAMES:
            gets = [res["backend"][p][1] for p in env.masters]
            owner = NAMES[gets.index(max(gets))]
            if not hk:
                res["note"] += "no hot_keys in /status; "
            else:
                res["note"] += "k:hot not in /status's hot_keys top; "
        res["owner"] = owner
        res["status_hot_keys"] = {k: v for k, v in (hk or {}).items() if k != "top"} if isinstance(hk, dict) else None
        return res
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        proxy.stop()


def derive(env, r):
    """Rates and shares of one result (or of a merged one)."""
    c, el = r["counts"], r["elapsed"]
    oi = NAMES.index(r["owner"])
    hot_port, hot_rep = env.masters[oi], env.replicas[oi]
    others = [p for p in env.masters if p != hot_port]
    be = r["backend"]
    origin_gets = sum(be[p][1] for p in env.masters + env.replicas)
    d = {
        "rps": c[REQ] / el,
        "p50": percentile(r["hist"], 0.50),
        "p99": percentile(r["hist"], 0.99),
        "hot_cmds": be[hot_port][0] / el,
        "hot_gets": be[hot_port][1] / el,
        "other_cmds": max(be[p][0] for p in others) / el,
        "hot_replica_cmds": be[hot_rep][0] / el,
        "origin_per_get": origin_gets / c[GETS] if c[GETS] else None,
        "gets": c[GETS], "stale": c[STALE], "hot_stale": c[HOT_STALE], "errors": c[ERRORS],
        "hits": r["metrics"].get("chash_proxy_hot_cache_hits_total"),
        "replica_reads": r["metrics"].get("chash_proxy_hot_replica_reads_total"),
        "proxy_cpu": r["proxy_cpu"],
    }
    return d


def merge(rs):
    """One result of several runs of a system: counts, histograms and backend deltas summed."""
    out = {"system": rs[0]["system"], "available": True, "elapsed": sum(r["elapsed"] for r in rs),
           "counts": [sum(r["counts"][k] for r in rs) for k in range(NCOUNT)],
           "hist": [sum(r["hist"][b] for r in rs) for b in range(NB)],
           "proxy_cpu": sum(r["proxy_cpu"] * r["elapsed"] for r in rs) / sum(r["elapsed"] for r in rs)}
    # the owner: the same key, the same ring, so the same in every run (checked)
    owners = {r["owner"] for r in rs}
    out["owner"] = rs[0]["owner"]
    out["owners"] = owners
    out["backend"] = {p: tuple(sum(r["backend"][p][k] for r in rs) for k in range(3)) for p in rs[0]["backend"]}
    out["metrics"] = {}
    for m in HOT_METRICS:
        vals = [r["metrics"].get(m) for r in rs]
        out["metrics"][m] = None if any(v is None for v in vals) else sum(vals)
    return out


# ---------------------------------------------------------------------------------------------
# the report


def fmt(x, spec="{:,.0f}", none="—"):
    return none if x is None else spec.format(x)


def table(env, merged, base):
    head = ("| system | req/s | GET p50 ms | GET p99 ms | hot backend cmds/s | other backends cmds/s (max) | "
            "hot backend's replica cmds/s | origin reads saved | cache hits (of GETs) | replica reads | "
            "stale reads | errors | proxy CPU |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for system, m in merged:
        label = SYSTEMS[system].replace("TTL", env.args.ttl)
        if not m.get("available"):
            lines.append(f"| {label} | not available: {m['note']} |" + " |" * 11)
            continue
        d = derive(env, m)
        saved = None
        if base and base.get("origin_per_get") and d["origin_per_get"] is not None:
            saved = 1 - d["origin_per_get"] / base["origin_per_get"]
            saved = 0.0 if abs(saved) < 0.0005 else saved
        hits = "—" if d["hits"] is None else (
            f"{d['hits'] / m['elapsed']:,.0f}/s ({d['hits'] / d['gets']:.0%})" if d["gets"] else f"{d['hits']:,.0f}")
        rr = "—" if d["replica_reads"] is None else f"{d['replica_reads'] / m['elapsed']:,.0f}/s"
        lines.append(f"| {label} | {d['rps']:,.0f} | {fmt(d['p50'], '{:.2f}')} | {fmt(d['p99'], '{:.2f}')} | "
                     f"{d['hot_cmds']:,.0f} ({d['hot_gets']:,.0f} GET) | {d['other_cmds']:,.0f} | "
                     f"{d['hot_replica_cmds']:,.0f} | {fmt(saved, '{:.1%}')} | {hits} | {rr} | "
                     f"{d['stale']:,} (k:hot {d['hot_stale']:,}) | {d['errors']:,} | {d['proxy_cpu']:.0%} |")
    return "\n".join(lines)


def parse_args(argv):
    e = rz.env_default
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__[__doc__.index("Knobs"):],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    default_bin = os.path.join(ROOT, "build-release", "chash-proxy")
    for alt in (os.path.join(ROOT, "build", "proxy", "chash-proxy"), os.path.join(ROOT, "build", "chash-proxy")):
        if not os.access(default_bin, os.X_OK) and os.access(alt, os.X_OK):
            default_bin = alt
    p.add_argument("--duration", type=float, default=float(e("HOTKEYS_DURATION", 20)), help="measured s per run")
    p.add_argument("--warmup", type=float, default=float(e("HOTKEYS_WARMUP", 2.5)), help="unmeasured s before")
    p.add_argument("--rounds", type=int, default=int(e("HOTKEYS_ROUNDS", 2)))
    p.add_argument("--systems", default=e("HOTKEYS_SYSTEMS", ",".join(SYSTEMS)), help=",".join(SYSTEMS))
    p.add_argument("--keys", type=int, default=int(e("HOTKEYS_KEYS", 10000)))
    p.add_argument("--clients", type=int, default=int(e("HOTKEYS_CLIENTS", 4)))
    p.add_argument("--pipeline", type=int, default=int(e("HOTKEYS_PIPELINE", 4)))
    p.add_argument("--rate", type=float, default=float(e("HOTKEYS_RATE", 8000)), help="req/s in all (0: unpaced)")
    p.add_argument("--hot-share", type=float, default=float(e("HOTKEYS_HOT_SHARE", 0.30)))
    p.add_argument("--zipf-s", type=float, default=float(e("HOTKEYS_ZIPF_S", 0.99)))
    p.add_argument("--write-ratio", type=float, default=float(e("HOTKEYS_WRITE_RATIO", 0.05)))
    p.add_argument("--ttl", default=e("HOTKEYS_TTL", "1s"), help="hot_cache ttl (1s, 500ms)")
    p.add_argument("--window", default=e("HOTKEYS_WINDOW", "1s"), help="hot_keys window")
    p.add_argument("--workers", type=int, default=int(e("HOTKEYS_WORKERS", 2)), help="chash-proxy --workers")
    p.add_argument("--seed", type=int, default=int(e("HOTKEYS_SEED", 1)))
    p.add_argument("--chash-proxy", default=e("CHASH_PROXY", default_bin))
    p.add_argument("--out", default=e("HOTKEYS_OUT", os.path.join(ROOT, "build-release", "bench-hotkeys")))
    p.add_argument("--time-limit", type=float, default=float(e("HOTKEYS_TIME_LIMIT", 600)))
    p.add_argument("--short", action="store_true", help="--duration 5 --rounds 1 --keys 2000 --warmup 2 (< 40 s)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless the hot_cache runs had 0 stale reads and cache hits, every run "
                        "had 0 errors, and hot_cache saved origin reads (the ctest short form)")
    p.add_argument("--keep-tmp", action="store_true", default=e("HOTKEYS_KEEP_TMP", "") not in ("", "0"))
    a = p.parse_args(argv)
    a.chash_proxy = os.path.abspath(a.chash_proxy)  # the servers run in the temp dir
    if a.short:
        a.duration, a.rounds, a.keys, a.warmup = 5.0, 1, 2000, min(a.warmup, 2.0)
    a.systems = [s for s in a.systems.split(",") if s]
    for s in a.systems:
        if s not in SYSTEMS:
            p.error(f"--systems: unknown {s!r} (one of {', '.join(SYSTEMS)})")
    for name in ("ttl", "window"):
        if not re.fullmatch(r"\d+(ms|s|m)?", getattr(a, name)):
            p.error(f"--{name}: a duration (1s, 500ms, or milliseconds)")
    if a.keys < 10 or a.duration < 1 or a.clients < 1 or a.pipeline < 1 or a.rounds < 1 or \
            not 0 <= a.write_ratio < 1 or not 0 <= a.hot_share < 1:
        p.error("need --keys >= 10, --duration >= 1, --clients/--pipeline/--rounds >= 1, "
                "0 <= --write-ratio < 1, 0 <= --hot-share < 1")
    return a


def main(argv):
    a = parse_args(argv)
    began = now()
    deadline = began + a.time_limit
    if not os.access(a.chash_proxy, os.X_OK):
        raise SystemExit(f"run.py: {a.chash_proxy} is not an executable (make bench-hotkeys builds it; "
                         "or CHASH_PROXY=...)")
    env = rz.Env()
    env.args = a
    env.ctx = multiprocessing.get_context("fork")
    env.dir = tempfile.mkdtemp(prefix="chash-bench-hotkeys.")
    env.server_limit = a.time_limit + 60
    env.live = []
    load0 = open("/proc/loadavg").read().split()[:3]

    rz.interrupt_on_signals()
    perm = rz.shuffled(a.keys, a.seed)
    env.perm, env.cdf = perm, rz.zipf_cdf(a.keys, a.zipf_s)
    env.db = multiprocessing.Array("q", [1] * (a.keys + 1), lock=False)
    servers, results, interrupted, limit_hit, failed = [], [], None, False, None
    try:
        ports = rz.free_ports(6)
        env.masters, env.replicas = ports[:3], ports[3:]
        for i, port in enumerate(env.masters + env.replicas):
            name = NAMES[i % 3] + ("" if i < 3 else "-replica")
            d = os.path.join(env.dir, name)
            os.makedirs(d)
            cmd = ["redis-server", "--bind", HOST, "--port", str(port), "--save", "", "--appendonly", "no",
                   "--dir", d, "--protected-mode", "yes", "--daemonize", "no"]
            if i >= 3:
                cmd += ["--replicaof", HOST, str(env.masters[i - 3])]
            else:
                cmd += ["--repl-diskless-sync-delay", "0"]  # the replicas sync at once
            srv = rz.Server(name, cmd, os.path.join(d, "server.log"), env.server_limit, d)
            servers.append(srv)
            if not rz.wait_listen(port, 10.0, proc=srv.p):
                raise RuntimeError(f"redis-server {name} did not start: {srv.tail()}")
        end = now() + 15
        while not all(replication_up(p) for p in env.replicas):
            if now() > end:
                raise RuntimeError("the replicas did not sync with their masters in 15 s")
            time.sleep(0.05)
        log(f"run.py: masters {env.masters}, replicas {env.replicas} on {HOST}; {a.chash_proxy}")
        # the keys, through a cache-off proxy (the ring every run uses)
        filler = Proxy(env, "fill")
        try:
            filler.start()
        except NotAvailable as e:
            raise RuntimeError(f"the fill proxy: {e}")
        try:
            errs = fill(env, filler.port)
        finally:
            filler.stop()
        if errs:
            log(f"run.py: fill: {errs} errors")
        for rnd_no in range(a.rounds):
            order = a.systems[rnd_no % len(a.systems):] + a.systems[:rnd_no % len(a.systems)]
            for system in order:
                if now() + a.warmup + a.duration + 10 > deadline:
                    limit_hit = True
                    break
                log(f"round {rnd_no + 1}/{a.rounds}: {system} ...")
                r = run_one(env, system, rnd_no)
                results.append(r)
                if not r["available"]:
                    log(f"  not available: {r['note']}")
                    continue
                d = derive(env, r)
                log(f"  {d['rps']:,.0f} req/s, GET p50 {fmt(d['p50'], '{:.2f}')} p99 {fmt(d['p99'], '{:.2f}')} ms; "
                    f"hot backend {r['owner']} ({r['owner_from']}) {d['hot_cmds']:,.0f} cmds/s, others max "
                    f"{d['other_cmds']:,.0f}; backend GETs per GET {fmt(d['origin_per_get'], '{:.3f}')}; "
                    f"hits {fmt(d['hits'])}, replica reads {fmt(d['replica_reads'])}; stale {d['stale']} "
                    f"(k:hot {d['hot_stale']}), errors {d['errors']}; proxy CPU {d['proxy_cpu']:.0%}"
                    + (f"; {r['note']}" if r["note"] else "")
                    + (f"; missing metrics {r['missing_metrics']}" if r.get("missing_metrics") else ""))
            if limit_hit:
                log("run.py: time limit: stopping here")
                break
    except KeyboardInterrupt as e:
        interrupted = str(e) or "Ctrl-C"
        log(f"run.py: interrupted ({interrupted}); stopping everything")
    except (RuntimeError, OSError) as e:
        failed = f"{type(e).__name__}: {e}"
        log(f"run.py: {failed}")
    finally:
        for p in env.live:
            if p.is_alive():
                p.kill()
        for srv in servers:
            srv.stop()
        if a.keep_tmp:
            log(f"run.py: configs and logs kept in {env.dir}")
        else:
            shutil.rmtree(env.dir, ignore_errors=True)

    # report
    merged = []
    for system in a.systems:
        rs = [r for r in results if r["system"] == system]
        ok = [r for r in rs if r["available"]]
        if ok:
            merged.append((system, merge(ok)))
        elif rs:
            merged.append((system, rs[0]))
    base = None
    for system, m in merged:
        if system == "cache-off" and m.get("available"):
            base = derive(env, m)
    os.makedirs(a.out, exist_ok=True)
    md = [f"# make bench-hotkeys ({time.strftime('%Y-%m-%d %H:%M')})", "",
          f"chash-proxy (--workers {a.workers}, hot_keys window {a.window}) in front of 3 redis-server (n1..n3, "
          f"one replica each) on 127.0.0.1; {a.keys:,} keys + k:hot; {a.clients} clients × pipeline {a.pipeline}, "
          + (f"{a.rate:,.0f} req/s in all" if a.rate > 0 else "unpaced")
          + f"; reads: k:hot {a.hot_share:.0%}, the rest Zipf s={a.zipf_s} over the keys; {a.write_ratio:.0%} "
          f"versioned SETs; {a.rounds} round(s) × {a.duration:g} s measured per system (after {a.warmup:g} s "
          f"warm-up), systems alternated; load average at start {' '.join(load0)}.", "",
          "Command: `python3 bench/hotkeys/run.py " + " ".join(argv) + "`" if argv else
          "Command: `python3 bench/hotkeys/run.py`", "",
          table(env, merged, base), "",
          "hot backend: the master owning k:hot (cmds/s: INFO total_commands_processed, GET: cmdstat_get); "
          "origin reads saved: 1 − (backend GETs, masters + replicas, per client GET) / (the same, cache off); "
          "cache hits: chash_proxy_hot_cache_hits_total; stale: a GET older than the version acknowledged "
          "before it was sent (with hot_reads a replica may lag its master: stale reads there are the "
          "replication lag, documented, not a cache bug).", ""]
    ok_runs = [r for r in results if r["available"]]
    if ok_runs:
        md += ["Per run:", "", "| round | system | req/s | GET p99 ms | hot backend | hot cmds/s | other max cmds/s | "
               "backend GETs per GET | cache hits | replica reads | stale |", "|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
        for r in ok_runs:
            d = derive(env, r)
            md.append(f"| {r['round'] + 1} | {r['system']} | {d['rps']:,.0f} | {fmt(d['p99'], '{:.2f}')} | "
                      f"{r['owner']} ({r['owner_from']}) | {d['hot_cmds']:,.0f} | {d['other_cmds']:,.0f} | "
                      f"{fmt(d['origin_per_get'], '{:.3f}')} | {fmt(d['hits'])} | {fmt(d['replica_reads'])} | "
                      f"{d['stale']:,} |")
        md.append("")
        top = next((r["hot_top"] for r in reversed(ok_runs) if r.get("hot_top")), None)
        if top:
            md.append("Hot list (/status, last run): " + ", ".join(
                f"{e.get('key')} {e.get('rate', 0):,.0f}/s on {e.get('owner')}" for e in top))
            md.append("")
    notes = sorted({f"{r['system']}: {r['note'].strip('; ')}" for r in results if r.get("note")})
    notes += sorted({f"{r['system']}: /metrics lacks {', '.join(r['missing_metrics'])}"
                     for r in results if r.get("missing_metrics")})
    notes += [f"{r['system']} round {r['round'] + 1}: {r['counts'][MISSES]} GETs found no value (no key was ever deleted)"
              for r in ok_runs if r["counts"][MISSES]]
    owners = {r["owner"] for r in ok_runs}
    if len(owners) > 1:
        notes.append(f"k:hot's owner differed between runs: {sorted(owners)}")
    if limit_hit:
        notes.append("stopped at --time-limit: not every run was made")
    if interrupted:
        notes.append(f"interrupted ({interrupted})")
    if failed:
        notes.append(f"the run failed: {failed}")
    if notes:
        md += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    with open(os.path.join(a.out, "hotkeys.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.out, "hotkeys.csv"), "w") as f:
        f.write("round,system,available,seconds,requests,gets,sets,errors,stale,hot_gets,hot_stale,req_s,"
                "misses,get_p50_ms,get_p99_ms,hot_backend,hot_cmds_s,hot_gets_s,other_max_cmds_s,hot_replica_cmds_s,"
                "backend_gets_per_get,cache_hits,cache_misses,cache_fills,cache_invalidations,replica_reads,"
                "proxy_cpu,note\n")
        for r in results:
            if not r["available"]:
                f.write(f"{r['round'] + 1},{r['system']},0," + "," * 24 + f"\"{r['note']}\"\n")
                continue
            d, c, m = derive(env, r), r["counts"], r["metrics"]
            cells = [r["round"] + 1, r["system"], 1, f"{r['elapsed']:.3f}", c[REQ], c[GETS], c[SETS], c[ERRORS],
                     c[STALE], c[HOT_GETS], c[HOT_STALE], f"{d['rps']:.1f}", c[MISSES], fmt(d["p50"], "{:.3f}", ""),
                     fmt(d["p99"], "{:.3f}", ""), r["owner"], f"{d['hot_cmds']:.1f}", f"{d['hot_gets']:.1f}",
                     f"{d['other_cmds']:.1f}", f"{d['hot_replica_cmds']:.1f}", fmt(d["origin_per_get"], "{:.4f}", "")]
            cells += [fmt(m.get(k), "{:.0f}", "") for k in HOT_METRICS]
            cells += [f"{d['proxy_cpu']:.3f}", '"' + r["note"].replace('"', "'") + '"']
            f.write(",".join(str(x) for x in cells) + "\n")
    print("\n".join(md))
    if interrupted:
        sys.exit(130)
    if failed:
        sys.exit(1)
    if not ok_runs:
        sys.exit(1)
    if a.check:
        problems = []
        for r in ok_runs:
            d = derive(env, r)
            if d["errors"]:
                problems.append(f"{r['system']} round {r['round'] + 1}: {d['errors']} errors")
            if r["system"] == "hot_cache":
                if d["stale"]:
                    problems.append(f"hot_cache round {r['round'] + 1}: {d['stale']} stale reads")
                if not d["hits"]:
                    problems.append(f"hot_cache round {r['round'] + 1}: no cache hits")
                if base is not None and d["origin_per_get"] is not None and \
                        base["origin_per_get"] is not None and \
                        d["origin_per_get"] >= base["origin_per_get"]:
                    problems.append("hot_cache saved no origin reads")
        if len(ok_runs) < len(a.systems):
            problems.append("not every system ran")
        for p_ in problems:
            log(f"check: {p_}")
        if problems:
            sys.exit(1)
        log("check: passed")


if __name__ == "__main__":
    main(sys.argv[1:])
