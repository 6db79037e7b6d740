#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench-fleet: a fleet of three proxies in front of five redis-server, one versioned
read/write load round-robin over the three, through a staggered resize and a partial
partition, for nutcracker, chash-proxy with file reloads, and chash-proxy fed by etcd; all on
127.0.0.1, side by side in one run (docs/FLEET.md).

The backends (redis-server --save "" --appendonly no) sit behind one forwarder process of this
script, which relays TCP to them and can cut ONE proxy's connections to one backend: it knows
which proxy process owns each connection (the peer socket's inode, looked up in /proc/net/tcp and
the proxies' /proc/PID/fd), so all three proxies use the same server addresses — as they must
when etcd holds them — and only one of them loses its path (a flaky NIC, a partial partition).

Systems (each three processes):
  nutcracker   one nutcracker.yml per process; a change restarts each on its port in turn.
  chash-file   chash-proxy on the same kind of file (warmup and safe return on, its defaults);
               a change rewrites each file and POSTs /reload in turn.
  chash-etcd   chash-proxy with `membership: {etcd: [...]}`; a change is one write of the
               servers key (the admin API of one proxy), the fleet moves itself.
Scenarios:
  resize       n1..n4 -> n1..n5 at T = D/3; the file-fed systems take it --stagger seconds
               apart (p1 at T, p2 at T+S, p3 at T+2S), as a config push to three hosts does.
  partition    n3 cut from p1 only, at T for --partition seconds, then restored (the other two
               reach n3 throughout); auto_eject_hosts: true, server_retry_timeout: 1000,
               server_failure_limit: 1 everywhere.
The load: C client processes, each request to the next proxy in turn; keys k:0..N-1 filled
first (version 1); each request a GET (zipf s=0.99, or uniform) or with --write-ratio a SET of
a new version (a key is written by one client only, so versions never race); a miss is one
database read (--db-latency-ms) and a fill (SET NX). A hit older than the version acknowledged
before the GET was sent is a stale read. Counted per second: requests, hits, misses, stale
reads, errors (error replies, refused or broken connections). Phases: before the event,
during (the event plus 3 s), after; misses beyond the steady rate are "extra".

Output (--out DIR): fleet.md (tables), fleet.csv (per second), one SVG per scenario (stale reads
and misses per second, one line per system). Bounded: every process runs under `timeout`,
--time-limit stops the whole run, only 127.0.0.1 is used, all is removed at exit.

  python3 bench/fleet/run.py                         # ~5 minutes
  python3 bench/fleet/run.py --short --check         # make test's form (ctest proxy_bench_fleet_short)
  python3 bench/fleet/run.py --duration 15 --keys 5000 --systems chash-etcd,nutcracker
  FLEET_TRACE_MISSES=1 python3 bench/fleet/run.py --short   # also one stderr line per miss: key, time, proxy
"""

import argparse
import base64
import http.client
import json
import multiprocessing
import os
import random
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "resize"))
import run as rz  # noqa: E402  (bench/resize/run.py: processes, the RESP client, values)

HOST = rz.HOST
NAMES = ["n1", "n2", "n3", "n4", "n5"]
SYSTEMS = ["nutcracker", "chash-file", "chash-etcd"]
SCENARIOS = {"resize": "a staggered resize: n1..n4 -> n1..n5",
             "partition": "a partial partition: n3 cut from p1 only"}
REQ, HITS, MISSES, STALE, ERRORS, SETS = range(6)
METRICS = 6
COLORS = {"nutcracker": "#d62728", "chash-file": "#ff7f0e", "chash-etcd": "#2ca02c"}
now, log = rz.now, rz.log
TRACE_MISSES = os.environ.get("FLEET_TRACE_MISSES", "") == "1"  # one line per miss, to stderr


# ---------------------------------------------------------------------------------------------
# the forwarder: listens on LISTEN[i], relays to TARGET[i], and can cut one process's connections


def _inode_of(local_port, remote_port):
    """The inode of the open loopback TCP socket from `local_port` (the proxy's end) to
    `remote_port` (the forwarder's listener). Both ports, and a live inode: an ephemeral port is
    reused for other destinations, and a TIME_WAIT entry of an earlier connection (inode 0) may
    come first in the table — matching the local port alone then found no owner, and the cut
    missed that connection (the partition was not felt)."""
    local, remote = ":%04X" % local_port, ":%04X" % remote_port
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[1].endswith(local) and parts[2].endswith(remote) and parts[9] != "0":
                        return parts[9]
        except OSError:
            pass
    return None


def _owner(sock, pids):
    """Which of `pids` holds the other end of the accepted socket `sock` (None: none of them)."""
    try:
        inode = _inode_of(sock.getpeername()[1], sock.getsockname()[1])
    except OSError:
        return None
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                        return pid
                except OSError:
                    pass
        except OSError:
            pass
    return None


def cutter_main(ctrl, listen_ports, target_ports):
    rz.die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sel = selectors.DefaultSelector()
    n = len(listen_ports)
    pids = []              # the proxies' pids, to tell connections apart
    blocked = [set() for _ in range(n)]  # per backend: pids cut from it
    pairs = {}             # client socket -> (backend socket, backend index, owner pid)
    peer = {}
    for i in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((HOST, listen_ports[i]))
        s.listen(1024)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, ("L", i))
    sel.register(ctrl, selectors.EVENT_READ, ("C",))
    ctrl.send("ready")
    buffers = {}

    def close(s):
        for x in (s, peer.get(s)):
            if x is None or x not in peer:
                continue
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            x.close()
            peer.pop(x, None)
            pairs.pop(x, None)
            buffers.pop(x, None)

    while True:
        for key, ev in sel.select(1.0):
            d = key.data
            if d[0] == "C":
                try:
                    msg = ctrl.recv()
                except EOFError:
                    return
                if msg[0] == "quit":
                    ctrl.send("ok")
                    return
                if msg[0] == "pids":
                    pids[:] = msg[1]
                    # Connections made before the pids were known: find their owners now.
                    for c, (b, i, o) in list(pairs.items()):
                        if o is None:
                            pairs[c] = (b, i, _owner(c, pids))
                elif msg[0] == "cut":
                    _, i, pid = msg
                    blocked[i].add(pid)
                    for c, (b, j, o) in list(pairs.items()):
                        if j == i and o == pid:
                            close(c)
                elif msg[0] == "restore":
                    blocked[msg[1]].discard(msg[2])
                ctrl.send("ok")
                continue
            if d[0] == "L":
                i = d[1]
                while True:
                    try:
                        c, _ = key.fileobj.accept()
                    except (BlockingIOError, InterruptedError, OSError):
                        break
                    o = _owner(c, pids) if pids else None
                    if o is not None and o in blocked[i]:
                        c.close()  # this proxy's path is cut: the connect is refused
                        continue
                    try:
                        b = socket.create_connection((HOST, target_ports[i]), timeout=1.0)
                    except OSError:
                        c.close()
                        continue
                    for s in (c, b):
                        s.setblocking(False)
                        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    peer[c], peer[b] = b, c
                    pairs[c] = (b, i, o)
                    sel.register(c, selectors.EVENT_READ, ("D",))
                    sel.register(b, selectors.EVENT_READ, ("D",))
                continue
            s = key.fileobj
            if s not in peer:
                continue
            try:
                data = s.recv(262144)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                close(s)
                continue
            try:
                p = peer[s]
                p.setblocking(True)  # loopback, small replies: a short blocking send is simplest
                p.sendall(data)
                p.setblocking(False)
            except OSError:
                close(s)


class Cutter:
    def __init__(self, ctx, listen_ports, target_ports):
        self.ctrl, child = ctx.Pipe()
        self.p = ctx.Process(target=cutter_main, args=(child, listen_ports, target_ports), daemon=True)
        self.p.start()
        if not self.ctrl.poll(10) or self.ctrl.recv() != "ready":
            raise RuntimeError("the forwarder did not start")

    def call(self, *msg):
        self.ctrl.send(msg)
        if not self.ctrl.poll(10) or self.ctrl.recv() != "ok":
            raise RuntimeError(f"forwarder: no answer to {msg}")

    def stop(self):
        try:
            self.ctrl.send(("quit",))
            self.p.join(2)
        except (OSError, BrokenPipeError):
            pass
        if self.p.is_alive():
            self.p.kill()


# ---------------------------------------------------------------------------------------------
# etcd (one member), through its JSON gateway


class Etcd:
    def __init__(self, env):
        self.client, peer = rz.free_ports(2)
        d = os.path.join(env.dir, "etcd")
        url = f"http://{HOST}:{self.client}"
        purl = f"http://{HOST}:{peer}"
        self.server = rz.Server("etcd", [env.args.etcd, "--name", "e1", "--data-dir", d, "--listen-client-urls", url,
                                         "--advertise-client-urls", url, "--listen-peer-urls", purl,
                                         "--initial-advertise-peer-urls", purl, "--initial-cluster", f"e1={purl}",
                                         "--logger", "zap", "--log-outputs", os.path.join(env.dir, "etcd.log")],
                                os.path.join(env.dir, "etcd.out"), env.server_limit, env.dir)
        end = now() + 15
        while now() < end:
            try:
                self.range("/x")
                return
            except (OSError, ValueError, RuntimeError):
                time.sleep(0.05)
        raise RuntimeError("etcd did not start: " + self.server.tail())

    def _post(self, path, body):
        c = http.client.HTTPConnection(HOST, self.client, timeout=5)
        try:
            c.request("POST", path, json.dumps(body))
            r = c.getresponse()
            text = r.read()
            if r.status != 200:
                raise RuntimeError(f"etcd {path}: {r.status} {text[:200]!r}")
            return json.loads(text)
        finally:
            c.close()

    def range(self, key, prefix=False):
        body = {"key": base64.b64encode(key.encode()).decode()}
        if prefix:
            body["range_end"] = base64.b64encode(key[:-1].encode() + bytes([key.encode()[-1] + 1])).decode()
        r = self._post("/v3/kv/range", body)
        return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv.get("value", "")).decode()
                for kv in r.get("kvs", [])}

    def put(self, key, value):
        self._post("/v3/kv/put", {"key": base64.b64encode(key.encode()).decode(),
                                  "value": base64.b64encode(value.encode()).decode()})

    def wipe(self):
        self._post("/v3/kv/deleterange", {"key": base64.b64encode(b"\0").decode(),
                                          "range_end": base64.b64encode(b"\0").decode()})

    def stop(self):
        self.server.stop()


# ---------------------------------------------------------------------------------------------
# the three proxies of one system


def pool_yaml(listen, servers, extra=()):
    lines = ["cache:", f"  listen: {HOST}:{listen}", "  hash: fnv1a_64", "  distribution: ketama", "  redis: true",
             "  timeout: 1000", "  auto_eject_hosts: true", "  server_retry_timeout: 1000",
             "  server_failure_limit: 1"]
    lines += [f"  {e}" for e in extra]
    lines.append("  servers:")
    lines += [f"    - {HOST}:{port}:1 {name}" for name, port in servers]
    return "\n".join(lines) + "\n"


class Member:
    def __init__(self, env, system, i):
        self.env, self.system, self.i = env, system, i
        self.port, self.admin, self.stats = rz.free_ports(3)
        self.path = os.path.join(env.dir, f"{system}-p{i + 1}.yml")
        self.server = None
        self.pid = None

    def config(self, servers):
        if self.system == "nutcracker":
            return pool_yaml(self.port, servers)
        text = pool_yaml(self.port, servers) + f"chash_proxy:\n  admin: {HOST}:{self.admin}\n"
        if self.system == "chash-etcd":
            text += (f"  membership:\n    etcd: [{HOST}:{self.env.etcd.client}]\n    id: p{self.i + 1}\n"
                     "    lease_ttl: 3000\n")
        return text

    def start(self, servers):
        a = self.env.args
        rz.write_atomic(self.path, self.config(servers))
        if self.system == "nutcracker":
            cmd = [a.nutcracker, "-c", self.path, "-s", str(self.stats), "-a", HOST]
        else:
            cmd = [a.chash_proxy, "-c", self.path, "--no-stats", "--workers", "1"]
        self.server = rz.Server(f"{self.system}-p{self.i + 1}", cmd,
                                os.path.join(self.env.dir, f"{self.system}-p{self.i + 1}.log"),
                                self.env.server_limit, self.env.dir)
        if not rz.wait_listen(self.port, 15.0, proc=self.server.p):
            raise RuntimeError(f"{self.system} p{self.i + 1} did not listen: {self.server.tail()}")
        self.pid = self.server.pid()

    def http(self, method, path):
        c = http.client.HTTPConnection(HOST, self.admin, timeout=5)
        try:
            c.request(method, path)
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        finally:
            c.close()

    def change(self, servers):
        """The file-fed systems' change at this member: nutcracker restarts, chash-file reloads."""
        rz.write_atomic(self.path, self.config(servers))
        if self.system == "nutcracker":
            self.server.stop(grace=5.0)
            self.start(servers)
        else:
            status, body = self.http("POST", "/reload")
            if status != 200:
                raise RuntimeError(f"reload p{self.i + 1}: {status} {body[:200]}")

    def stop(self):
        if self.server is not None:
            self.server.stop()
            self.server = None


# ---------------------------------------------------------------------------------------------
# the load


def worker_main(j, cfg, stats, db, cpu_out):
    rz.die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    (ports, nclients, rate, write_ratio, db_latency, seed, t0, deadline, nsec, cdf, perm) = cfg
    rnd = random.Random(seed * 1_000_003 + j)
    pad = bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(200))
    n = len(perm)
    interval = nclients / rate if rate > 0 else 0.0
    conns = [None] * len(ports)
    turn = j
    next_t = t0 + (interval * j / nclients if interval else 0.0)
    while now() < t0:
        time.sleep(min(0.01, max(0.0, t0 - now())))
    while True:
        t = now()
        if t >= deadline:
            break
        if interval:
            if t < next_t:
                time.sleep(next_t - t)
                t = now()
            next_t += interval
            if t - next_t > 0.25:
                next_t = t
        sec = int(t - t0)
        if sec >= nsec:
            break
        row = (j * nsec + sec) * METRICS
        stats[row + REQ] += 1
        turn = (turn + 1) % len(ports)  # round-robin over the fleet
        r = rnd.randrange(n) if cdf is None else min(n - 1, rz.bisect.bisect_left(cdf, rnd.random()))
        try:
            if conns[turn] is None:
                conns[turn] = rz.Conn(ports[turn], True)
            conn = conns[turn]
            if rnd.random() < write_ratio:
                r = r - r % nclients + j  # this client's keys only: versions never race
                if r >= n:
                    r -= nclients
                if r < 0:
                    continue
                k = perm[r]
                ver = db[k] + 1
                stats[row + SETS] += 1
                if conn.set(b"k:%d" % k, rz.make_value(ver, pad[rnd.randrange(97):])):
                    db[k] = ver
            else:
                k = perm[r]
                seen = db[k]
                v = conn.get(b"k:%d" % k)
                if v is None:
                    stats[row + MISSES] += 1
                    if TRACE_MISSES:
                        log(f"  miss k:{k} v{seen} at {t - t0:.3f}s through proxy {turn}")
                    if db_latency > 0:
                        time.sleep(db_latency)
                    conn.set(b"k:%d" % k, rz.make_value(db[k], pad[rnd.randrange(97):]), only_new=True)
                else:
                    stats[row + HITS] += 1
                    if rz.value_version(v) < seen:
                        stats[row + STALE] += 1
        except rz.ProtoError:
            stats[row + ERRORS] += 1
        except (OSError, ValueError):
            stats[row + ERRORS] += 1
            if conns[turn] is not None:
                conns[turn].close()
                conns[turn] = None
            time.sleep(0.002)
    for c in conns:
        if c is not None:
            c.close()
    ru = rz.resource.getrusage(rz.resource.RUSAGE_SELF)
    cpu_out[j] = ru.ru_utime + ru.ru_stime


# ---------------------------------------------------------------------------------------------
# one run: a system, a scenario


def flush_all(env):
    for port in env.redis_ports:
        c = rz.Conn(port, True, timeout=5.0)
        try:
            c.s.sendall(b"*1\r\n$8\r\nFLUSHALL\r\n")
            c.line()
        finally:
            c.close()


def run_one(env, system, scenario):
    a = env.args
    flush_all(env)
    if env.etcd is not None:
        env.etcd.wipe()
    four = [(NAMES[i], env.listen[i]) for i in range(4)]
    five = [(NAMES[i], env.listen[i]) for i in range(5)]
    start_servers = four if scenario == "resize" else five
    members = [Member(env, system, i) for i in range(3)]
    events = []
    try:
        for m in members:
            m.start(start_servers)
        env.cutter.call("pids", [m.pid for m in members])
        if system == "chash-etcd":
            end = now() + 10
            while now() < end:
                st = env.etcd.range("/chash/pools/cache/state")
                regs = env.etcd.range("/chash/proxies/", prefix=True)
                if st and len(regs) == 3:
                    break
                time.sleep(0.05)
        errs, _ = rz.fill(members[0].port, True, a.keys, a.seed, now() + 120)
        if errs:
            log(f"  fill: {errs} errors")
        D, T = a.duration, a.duration / 3.0
        db = multiprocessing.Array("q", [1] * a.keys, lock=False)
        nsec = int(D) + 1
        stats = multiprocessing.Array("q", a.clients * nsec * METRICS, lock=False)
        cpu_out = multiprocessing.Array("d", a.clients, lock=False)
        rnd = random.Random(a.seed)
        perm = list(range(a.keys))
        rnd.shuffle(perm)
        cdf = rz.zipf_cdf(a.keys, 0.99) if a.distribution == "zipf" else None
        t0 = now() + 0.5
        cfg = ([m.port for m in members], a.clients, a.rate, a.write_ratio, a.db_latency_ms / 1000.0, a.seed, t0,
               t0 + D, nsec, cdf, perm)
        procs = [env.ctx.Process(target=worker_main, args=(j, cfg, stats, db, cpu_out), daemon=True)
                 for j in range(a.clients)]
        for p in procs:
            p.start()
        while now() < t0 + T:
            time.sleep(0.01)
        te = now() - t0
        if scenario == "resize":
            if system == "chash-etcd":
                s, body = members[0].http("POST", "/fleet/add?pool=cache&server=" +
                                          f"{HOST}:{env.listen[4]}:1%20n5")
                events.append((te, f"servers key written ({s})"))
                end = now() + 20
                while now() < end:
                    st = json.loads(env.etcd.range("/chash/pools/cache/state").get("/chash/pools/cache/state", "{}"))
                    if st.get("phase") == "stable" and len(st.get("target", {}).get("servers", [])) == 5:
                        events.append((now() - t0, "every proxy on n1..n5, rebalanced (stable)"))
                        break
                    time.sleep(0.01)
            else:
                for i, m in enumerate(members):
                    while now() < t0 + T + i * a.stagger:
                        time.sleep(0.01)
                    m.change(five)
                    events.append((now() - t0, f"p{i + 1} on n1..n5"))
            during_end = T + 2 * a.stagger + 3.0
        else:
            env.cutter.call("cut", 2, members[0].pid)
            events.append((te, "n3 cut from p1"))
            while now() < t0 + T + a.partition:
                time.sleep(0.01)
            env.cutter.call("restore", 2, members[0].pid)
            events.append((now() - t0, "n3 back for p1"))
            during_end = T + a.partition + 3.0
        for p in procs:
            p.join(D + 30)
        per_sec = [[0] * METRICS for _ in range(nsec)]
        for j in range(a.clients):
            for s in range(nsec):
                row = (j * nsec + s) * METRICS
                for k in range(METRICS):
                    per_sec[s][k] += stats[row + k]
        return {"system": system, "scenario": scenario, "per_sec": per_sec, "T": T, "during_end": during_end,
                "events": events, "D": D, "rate": a.rate}
    finally:
        for m in members:
            m.stop()


def phases(res):
    """Sums per phase: before (from 2 s, the warm start left out), during, after."""
    T, E = res["T"], res["during_end"]
    out = {"before": [0] * METRICS, "during": [0] * METRICS, "after": [0] * METRICS}
    secs = {"before": 0, "during": 0, "after": 0}
    for s, row in enumerate(res["per_sec"]):
        if s < 2:
            continue
        ph = "before" if s < int(T) else "during" if s < int(E) else "after"
        secs[ph] += 1
        for k in range(METRICS):
            out[ph][k] += row[k]
    steady = out["before"][MISSES] / max(1, secs["before"])
    extra = max(0, round(out["during"][MISSES] + out["after"][MISSES] - steady * (secs["during"] + secs["after"])))
    return out, extra


def table(results):
    lines = ["| scenario | system | stale reads (during / after) | misses (during / after) | extra misses | "
             "errors (during / after) | requests |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in results:
        ph, extra = phases(r)
        d, af = ph["during"], ph["after"]
        total = sum(row[REQ] for row in r["per_sec"])
        lines.append(f"| {r['scenario']} | {r['system']} | {d[STALE] + af[STALE]:,} ({d[STALE]:,} / {af[STALE]:,}) | "
                     f"{d[MISSES] + af[MISSES]:,} ({d[MISSES]:,} / {af[MISSES]:,}) | {extra:,} | "
                     f"{d[ERRORS] + af[ERRORS]:,} ({d[ERRORS]:,} / {af[ERRORS]:,}) | {total:,} |")
    return "\n".join(lines)


def svg(path, title, results):
    W, H, L, B = 760, 300, 60, 40
    D = max(r["D"] for r in results)
    ymax = max(1, max(row[STALE] + row[MISSES] for r in results for row in r["per_sec"]))
    X = lambda t: L + (W - L - 20) * t / D  # noqa: E731
    Y = lambda v: H - B - (H - B - 30) * v / ymax  # noqa: E731
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
         f'<text x="{L}" y="16" font-size="13">{title}: stale reads + misses per second</text>',
         f'<line x1="{L}" y1="{H - B}" x2="{W - 20}" y2="{H - B}" stroke="#000"/>',
         f'<line x1="{L}" y1="{H - B}" x2="{L}" y2="26" stroke="#000"/>',
         f'<text x="{L - 6}" y="{Y(ymax) + 4}" text-anchor="end">{ymax}</text>',
         f'<text x="{L - 6}" y="{H - B + 4}" text-anchor="end">0</text>',
         f'<text x="{(W + L) / 2}" y="{H - 8}" text-anchor="middle">seconds</text>']
    for t in range(0, int(D) + 1, 5):
        o.append(f'<text x="{X(t)}" y="{H - B + 14}" text-anchor="middle">{t}</text>')
    for t, text in results[0]["events"][:1]:
        o.append(f'<line x1="{X(t)}" y1="{H - B}" x2="{X(t)}" y2="26" stroke="#999" stroke-dasharray="4,3"/>')
    for k, r in enumerate(results):
        pts = " ".join(f"{X(s + 0.5):.1f},{Y(row[STALE] + row[MISSES]):.1f}" for s, row in enumerate(r["per_sec"]))
        c = COLORS.get(r["system"], "#333")
        o.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.8" points="{pts}"/>')
        o.append(f'<text x="{W - 180}" y="{40 + 14 * k}" fill="{c}">{r["system"]}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def parse_args(argv):
    e = rz.env_default
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=int(e("FLEET_KEYS", 20000)))
    p.add_argument("--duration", type=float, default=float(e("FLEET_DURATION", 24)))
    p.add_argument("--clients", type=int, default=int(e("FLEET_CLIENTS", 6)))
    p.add_argument("--rate", type=float, default=float(e("FLEET_RATE", 3000)))
    p.add_argument("--write-ratio", type=float, default=float(e("FLEET_WRITE_RATIO", 0.1)))
    p.add_argument("--db-latency-ms", type=float, default=float(e("FLEET_DB_LATENCY_MS", 1)))
    p.add_argument("--distribution", default=e("FLEET_DISTRIBUTION", "zipf"), choices=["zipf", "uniform"])
    p.add_argument("--stagger", type=float, default=float(e("FLEET_STAGGER", 2.0)))
    p.add_argument("--partition", type=float, default=float(e("FLEET_PARTITION", 6.0)))
    p.add_argument("--systems", default=e("FLEET_SYSTEMS", ",".join(SYSTEMS)))
    p.add_argument("--scenarios", default=e("FLEET_SCENARIOS", ",".join(SCENARIOS)))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=e("FLEET_OUT", os.path.join(ROOT, "build-release", "bench-fleet")))
    p.add_argument("--chash-proxy", default=e("CHASH_PROXY", os.path.join(ROOT, "build-release", "chash-proxy")))
    p.add_argument("--nutcracker", default=e("NUTCRACKER", "nutcracker"))
    p.add_argument("--etcd", default=e("ETCD", "etcd"))
    p.add_argument("--time-limit", type=float, default=float(e("FLEET_TIME_LIMIT", 900)))
    p.add_argument("--keep-tmp", action="store_true", default=e("FLEET_KEEP_TMP", "") == "1")
    p.add_argument("--short", action="store_true",
                   help="make test's form: chash-etcd only, both scenarios, 12 s runs, 3,000 keys, "
                        "3 clients at 1,500 req/s (~45 s)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 unless every chash-etcd run shows 0 stale reads and 0 extra misses, "
                        "the resize reached stable with no error, and the partition was felt (p1's "
                        "errors for n3's keys, during it only)")
    a = p.parse_args(argv)
    if a.short:
        a.systems, a.scenarios = "chash-etcd", ",".join(SCENARIOS)
        a.duration, a.keys, a.clients, a.rate = 12.0, 3000, 3, 1500.0
        a.partition, a.time_limit = 3.0, 150.0
    return a


def check(results):
    """--check: what etcd promises for the fleet (docs/FLEET.md); the list of failures."""
    bad = []
    for r in results:
        if r["system"] != "chash-etcd":
            continue
        ph, extra = phases(r)
        name = f"{r['scenario']}/{r['system']}"
        stale = ph["during"][STALE] + ph["after"][STALE]
        errors = ph["during"][ERRORS] + ph["after"][ERRORS]
        requests = sum(row[REQ] for row in r["per_sec"])
        if requests < r["D"] * r["rate"] * 0.5:
            bad.append(f"{name}: only {requests} requests")
        if stale:
            bad.append(f"{name}: {stale} stale reads")
        if extra:
            bad.append(f"{name}: {extra} extra misses")
        if r["scenario"] == "resize":
            if errors:
                bad.append(f"{name}: {errors} errors")
            if not any("stable" in text for _, text in r["events"]):
                bad.append(f"{name}: the fleet did not reach stable on n1..n5")
        else:
            if ph["during"][ERRORS] == 0:
                bad.append(f"{name}: no error from p1 for n3's keys: the partition was not felt")
            if ph["after"][ERRORS]:
                bad.append(f"{name}: {ph['after'][ERRORS]} errors after n3 came back for p1")
    if not any(r["system"] == "chash-etcd" for r in results):
        bad.append("no chash-etcd run")
    return bad


def main(argv):
    a = parse_args(argv)
    systems = [s for s in a.systems.split(",") if s]
    scenarios = [s for s in a.scenarios.split(",") if s]
    for s in systems:
        if s not in SYSTEMS:
            raise SystemExit(f"unknown system {s} ({', '.join(SYSTEMS)})")
    for s in scenarios:
        if s not in SCENARIOS:
            raise SystemExit(f"unknown scenario {s} ({', '.join(SCENARIOS)})")
    env = rz.Env()
    env.args = a
    env.ctx = multiprocessing.get_context("fork")
    env.dir = tempfile.mkdtemp(prefix="chash-bench-fleet-")
    env.server_limit = a.time_limit + 60
    deadline = now() + a.time_limit
    servers, env.cutter, env.etcd = [], None, None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = []
    try:
        env.redis_ports = rz.free_ports(5)
        env.listen = rz.free_ports(5)
        for name, port in zip(NAMES, env.redis_ports):
            servers.append(rz.Server(name, ["redis-server", "--port", str(port), "--bind", HOST, "--save", "",
                                            "--appendonly", "no"], os.path.join(env.dir, f"{name}.log"),
                                     env.server_limit, env.dir))
        for port in env.redis_ports:
            if not rz.wait_listen(port, 10.0):
                raise RuntimeError("redis-server did not start")
        env.cutter = Cutter(env.ctx, env.listen, env.redis_ports)
        if "chash-etcd" in systems:
            env.etcd = Etcd(env)
        for scenario in scenarios:
            for system in systems:
                if now() + a.duration + 30 > deadline:
                    log("time limit: stopping here")
                    break
                log(f"{scenario} / {system} ...")
                r = run_one(env, system, scenario)
                results.append(r)
                ph, extra = phases(r)
                log(f"  stale {ph['during'][STALE] + ph['after'][STALE]}, misses {ph['during'][MISSES] + ph['after'][MISSES]}"
                    f" (extra {extra}), errors {ph['during'][ERRORS] + ph['after'][ERRORS]}; "
                    + "; ".join(f"{t:.1f}s {e}" for t, e in r["events"]))
    finally:
        if env.cutter is not None:
            env.cutter.stop()
        if env.etcd is not None:
            env.etcd.stop()
        for s in servers:
            s.stop()
        if not a.keep_tmp:
            shutil.rmtree(env.dir, ignore_errors=True)
    os.makedirs(a.out, exist_ok=True)
    md = [f"# make bench-fleet ({time.strftime('%Y-%m-%d %H:%M')})", "",
          f"3 proxies, 5 redis-server, {a.keys} keys, {a.clients} clients at {a.rate:.0f} req/s round-robin over the "
          f"proxies, {a.write_ratio:.0%} writes, {a.distribution}, {a.duration:.0f} s a run, the event at "
          f"{a.duration / 3:.0f} s; stagger {a.stagger} s, partition {a.partition} s.", "", table(results), ""]
    for scenario in scenarios:
        rs = [r for r in results if r["scenario"] == scenario]
        if not rs:
            continue
        name = f"fleet-{scenario}.svg"
        svg(os.path.join(a.out, name), SCENARIOS[scenario], rs)
        md.append(f"![{SCENARIOS[scenario]}]({name})")
        for r in rs:
            md.append(f"- {scenario}/{r['system']}: " + "; ".join(f"{t:.1f} s {e}" for t, e in r["events"]))
        md.append("")
    with open(os.path.join(a.out, "fleet.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.out, "fleet.csv"), "w") as f:
        f.write("scenario,system,second,requests,hits,misses,stale,errors,sets\n")
        for r in results:
            for s, row in enumerate(r["per_sec"]):
                f.write(f"{r['scenario']},{r['system']},{s},{row[REQ]},{row[HITS]},{row[MISSES]},{row[STALE]},"
                        f"{row[ERRORS]},{row[SETS]}\n")
    print("\n".join(md))
    if a.check:
        bad = check(results)
        for b in bad:
            print("check failed: " + b)
        if bad:
            sys.exit(1)
        print("check: 0 stale reads and 0 extra misses through etcd")


if __name__ == "__main__":
    main(sys.argv[1:])
