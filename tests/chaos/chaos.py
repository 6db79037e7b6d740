#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make chaos: Jepsen-style histories of chash-proxy (and nutcracker beside it) under faults,
checked against a per-key register model (tests/chaos/history.py; docs/RELIABILITY.md "Histories
under faults").

Each run is one system x pool x scenario x seed, on 127.0.0.1 only, on free ports, in a temp
directory removed afterwards:

  backends   five redis-server (or memcached) n1..n5, each behind the loopback forwarder of
             bench/fleet/run.py (Cutter), which can cut ONE proxy's connections to one backend;
             the pool starts on n1..n4 (n5 is there for an add).
  systems    chash-etcd    3 chash-proxy, membership from etcd (3 members on loopback)
             chash-file    3 chash-proxy on files; a change rewrites each file and POSTs /reload
                           in turn, --stagger seconds apart
             chash-single  1 chash-proxy on its file, safe return (auto_eject_hosts, warm-up,
                           failover tracking: docs/FAILURES.md "Safe failover and return")
             nutcracker    3 nutcracker; a change restarts each in turn
  load       C client processes, one request at a time, each to the next proxy in turn; half
             the requests on a few hot keys, half over all K; a write (a value unique per key:
             "CLIENT.SEQ") or a read; every operation recorded with its invocation, completion
             and result: ok, fail (never sent), info (timeout, connection cut, error reply to a
             write: unknown outcome).
  faults     from a schedule drawn by random.Random("SEED:SCENARIO") (the same for every
             system), printed; --seeds N replays it:
               kill-return  SIGKILL a backend, restart it 2.5-5 s later (redis: with its AOF,
                            appendfsync always, so every acknowledged write survives; memcached:
                            empty)
               kill-empty   the same, restarted empty (no persistence): a cache may forget
                            (nil is a miss, not stale), it may not serve an older value
               stop         SIGSTOP a backend 1.5-4 s (past the 1 s timeout), SIGCONT
               proxy-kill   SIGKILL a proxy, restart it 1-3 s later
               partition    cut one proxy from one backend for 2-5 s (the others reach it)
               add          n5 added               remove   one of n1..n4 removed
               change-overlap  n5 added, and 0.05-2 s later (any phase of the first change)
                            one of n1..n4 removed
               etcd-member  SIGKILL one etcd member, restart it 2-5 s later (chash-etcd only)
               kill-change  a backend killed, and while it is out (or returning) n5 added
               mixed        three of the above, drawn at random
  end        every fault healed; the fleet settles (etcd: phase stable, nothing ejected or
             returning); then every key is read through every proxy (the final reads) and
             directly on every backend (where a lost write is, if anywhere).
  check      stale reads and lost writes (tests/chaos/history.py).

  python3 tests/chaos/chaos.py --chash-proxy build/chash-proxy --short --check --out /tmp/chaos
  python3 tests/chaos/chaos.py --chash-proxy build/chash-proxy --seeds 1-10 --doc docs/RELIABILITY.md
  python3 tests/chaos/chaos.py --chash-proxy build/chash-proxy --seeds 7 --systems chash-etcd \\
      --scenarios kill-return --keep-tmp        # replay one seed, keep configs and logs
"""

import argparse
import collections
import http.client
import importlib.util
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import history  # noqa: E402

_spec = importlib.util.spec_from_file_location("chash_bench_fleet", os.path.join(ROOT, "bench", "fleet", "run.py"))
fl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fl)  # it imports bench/resize/run.py as `rz`
rz = fl.rz

HOST = rz.HOST
NAMES = ["n1", "n2", "n3", "n4", "n5"]
SYSTEMS = ["chash-etcd", "chash-file", "chash-single", "nutcracker"]
SCENARIOS = ["kill-return", "kill-empty", "stop", "proxy-kill", "partition", "add", "remove", "change-overlap",
             "etcd-member", "kill-change", "mixed"]
POOLS = ["redis", "memcache"]
SHORT_SCENARIOS = ["kill-return", "kill-change", "stop", "change-overlap", "partition", "proxy-kill"]
# make test's form: issue 35's scenarios, a backend killed and returned first, on both chash systems
SHORT_PAIRS = [("chash-etcd", "kill-return"), ("chash-single", "kill-return"), ("chash-etcd", "kill-change"),
               ("chash-single", "kill-change"), ("chash-etcd", "stop"),
               ("chash-etcd", "change-overlap"), ("chash-single", "change-overlap"), ("chash-etcd", "partition"),
               ("chash-etcd", "proxy-kill")]
now, log = rz.now, rz.log
BEGIN, END = "<!-- chaos:begin -->", "<!-- chaos:end -->"


def nproxies(system):
    return 1 if system == "chash-single" else 3


# -------------------------------------------------------------------------------------------------
# backends


class Backends:
    """n1..n5 on their own ports, restartable with or without persistence."""

    def __init__(self, env, d, pool, persist):
        self.env, self.dir, self.pool, self.persist = env, d, pool, persist
        self.ports = rz.free_ports(5)
        self.servers = [None] * 5
        self.stopped = set()
        self.old = []
        for i in range(5):
            self.start(i, persist)
        for p in self.ports:
            if not rz.wait_listen(p, 10.0):
                raise RuntimeError(f"{pool} backend did not start")

    def start(self, i, persist):
        d = os.path.join(self.dir, NAMES[i])
        os.makedirs(d, exist_ok=True)
        if self.pool == "redis":
            cmd = ["redis-server", "--port", str(self.ports[i]), "--bind", HOST, "--save", "", "--dir", d,
                   "--appendonly", "yes" if persist else "no", "--appendfsync", "always"]
            if not persist:  # restarted empty: forget any earlier AOF
                shutil.rmtree(os.path.join(d, "appendonlydir"), ignore_errors=True)
        else:
            cmd = ["memcached", "-l", HOST, "-p", str(self.ports[i]), "-U", "0", "-m", "64", "-t", "1"]
            if os.geteuid() == 0:
                cmd += ["-u", "root"]
        if self.servers[i] is not None:
            self.old.append(self.servers[i])
        self.servers[i] = rz.Server(f"{self.pool}-{NAMES[i]}", cmd, os.path.join(d, "server.log"),
                                    self.env.server_limit, d)
        self.stopped.discard(i)

    def pid(self, i):
        return self.servers[i].pid()

    def kill(self, i):
        pid = self.pid(i)
        if pid:
            os.kill(pid, signal.SIGKILL)
        self.servers[i].p.wait(5)

    def restart(self, i, persist):
        self.start(i, persist)
        return rz.wait_listen(self.ports[i], 10.0)

    def sigstop(self, i):
        os.kill(self.pid(i), signal.SIGSTOP)
        self.stopped.add(i)

    def sigcont(self, i):
        pid = self.pid(i)
        if pid:
            os.kill(pid, signal.SIGCONT)
        self.stopped.discard(i)

    def alive(self, i):
        return self.servers[i].alive()

    def stop(self):
        for i in list(self.stopped):
            try:
                self.sigcont(i)
            except OSError:
                pass
        for s in self.servers + self.old:
            if s is not None:
                s.stop(grace=1.0)


# -------------------------------------------------------------------------------------------------
# etcd: N members on loopback, through its JSON gateway


class EtcdCluster(fl.Etcd):  # range, put and wipe are bench/fleet's; its own members and _post
    def __init__(self, env, n):
        self.env, self.n = env, n
        ports = rz.free_ports(2 * n)
        self.clients, self.peers = ports[:n], ports[n:]
        self.servers = [None] * n
        self.old = []
        self.base = tempfile.mkdtemp(prefix="chash-chaos-etcd-", dir=env.shm)
        for i in range(n):
            self.start(i)
        end = now() + 30
        while now() < end:
            try:
                self.range("/x")
                return
            except (OSError, ValueError, RuntimeError):
                time.sleep(0.1)
        raise RuntimeError("etcd did not start: " + self.servers[0].tail())

    def start(self, i):
        cluster = ",".join(f"e{k + 1}=http://{HOST}:{self.peers[k]}" for k in range(self.n))
        url, purl = f"http://{HOST}:{self.clients[i]}", f"http://{HOST}:{self.peers[i]}"
        d = os.path.join(self.base, f"e{i + 1}")
        cmd = [self.env.args.etcd, "--name", f"e{i + 1}", "--data-dir", d, "--listen-client-urls", url,
               "--advertise-client-urls", url, "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
               "--initial-cluster", cluster, "--initial-cluster-state", "new", "--initial-cluster-token", "chaos",
               "--heartbeat-interval", "100", "--election-timeout", "1000", "--logger", "zap",
               "--log-outputs", os.path.join(self.base, f"e{i + 1}.log")]
        if self.servers[i] is not None:
            self.old.append(self.servers[i])
        self.servers[i] = rz.Server(f"etcd-e{i + 1}", cmd, os.path.join(self.base, f"e{i + 1}.out"),
                                    self.env.server_limit, self.base)

    def kill(self, i):
        pid = self.servers[i].pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
        self.servers[i].p.wait(5)

    def alive(self, i):
        return self.servers[i].alive()

    def endpoints(self):
        return [f"{HOST}:{p}" for p in self.clients]

    def _post(self, path, body):
        err = None
        for i in range(self.n):
            if not self.servers[i].alive():
                continue
            c = http.client.HTTPConnection(HOST, self.clients[i], timeout=3)
            try:
                c.request("POST", path, json.dumps(body))
                r = c.getresponse()
                text = r.read()
                if r.status != 200:
                    err = RuntimeError(f"etcd {path}: {r.status} {text[:200]!r}")
                    continue
                return json.loads(text)
            except OSError as e:
                err = e
            finally:
                c.close()
        raise err or RuntimeError("no etcd member alive")

    def stop(self):
        for s in self.servers + self.old:
            if s is not None:
                s.stop(grace=1.0)
        shutil.rmtree(self.base, ignore_errors=True)


# -------------------------------------------------------------------------------------------------
# proxies


def pool_yaml(listen, redis, servers, chash, extra=()):
    lines = ["cache:", f"  listen: {HOST}:{listen}", "  hash: fnv1a_64", "  distribution: ketama",
             f"  redis: {'true' if redis else 'false'}", "  timeout: 1000", "  auto_eject_hosts: true",
             "  server_retry_timeout: 1000", "  server_failure_limit: 1"]
    if chash:
        lines += ["  warmup: true", "  failover_track_keys: 100000", "  failover_overflow: flush"]
    lines += [f"  {e}" for e in extra]
    lines.append("  servers:")
    lines += [f"    - {HOST}:{port}:1 {name}" for name, port in servers]
    return "\n".join(lines) + "\n"


class Proxy:
    def __init__(self, run, i):
        self.run, self.env, self.system, self.i = run, run.env, run.system, i
        self.port, self.admin, self.stats = rz.free_ports(3)
        self.path = os.path.join(run.dir, f"p{i + 1}.yml")
        self.log = os.path.join(run.dir, f"p{i + 1}.log")
        self.server = None
        self.old = []
        self.pid = None

    def config(self, servers):
        redis = self.run.pool == "redis"
        if self.system == "nutcracker":
            return pool_yaml(self.port, redis, servers, False)
        text = pool_yaml(self.port, redis, servers, True) + f"chash_proxy:\n  admin: {HOST}:{self.admin}\n"
        if self.system == "chash-etcd":
            eps = ", ".join(self.env.etcd.endpoints())
            text += f"  membership:\n    etcd: [{eps}]\n    id: p{self.i + 1}\n    lease_ttl: 3000\n"
        return text

    def start(self, servers=None):
        a = self.env.args
        if servers is not None:
            rz.write_atomic(self.path, self.config(servers))
        if self.system == "nutcracker":
            cmd = [a.nutcracker, "-c", self.path, "-s", str(self.stats), "-a", HOST]
        else:
            cmd = [a.chash_proxy, "-c", self.path, "--no-stats", "--workers", str(a.workers)]
        for attempt in range(40):
            if self.server is not None:
                self.old.append(self.server)
            self.server = rz.Server(f"{self.system}-p{self.i + 1}", cmd, self.log, self.env.server_limit,
                                    self.run.dir)
            if rz.wait_listen(self.port, 15.0, proc=self.server.p):
                break
            if "failed to run command" not in self.server.tail() or attempt == 39:
                raise RuntimeError(f"{self.system} p{self.i + 1} did not listen: {self.server.tail()}")
            time.sleep(1.0)  # the binary is being relinked: try again
        self.pid = self.server.pid()

    def kill(self):
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
        self.server.p.wait(5)
        self.pid = None

    def alive(self):
        return self.server is not None and self.server.alive()

    def http(self, method, path, timeout=5):
        c = http.client.HTTPConnection(HOST, self.admin, timeout=timeout)
        try:
            c.request(method, path)
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        finally:
            c.close()

    def change(self, servers):
        """A file-fed member's change: chash-proxy reloads, nutcracker restarts."""
        rz.write_atomic(self.path, self.config(servers))
        if self.system == "nutcracker":
            self.server.stop(grace=3.0)
            self.start()
            return "restarted"
        status, body = self.http("POST", "/reload")
        return f"reload {status}"

    def stop(self):
        for s in [self.server] + self.old:
            if s is not None:
                s.stop(grace=1.0)
        self.server = None


# -------------------------------------------------------------------------------------------------
# the load: one process per client, a history each


def _key(k):
    # The varying part first: nutcracker's fnv1a_64 (32-bit) sends "chaos:0".."chaos:99" to two
    # servers of four; "c0:chaos".."c99:chaos" spread over all of them.
    return b"c%d:chaos" % k


def client_main(j, cfg, outpath):
    rz.die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    ports, redis, nkeys, hot, rate, write_ratio, seed, t0, t_end, timeout = cfg
    rnd = random.Random(seed * 7919 + j)
    conns = [None] * len(ports)
    turn = j % len(ports)
    hist, errs = [], collections.Counter()
    seq = 0
    interval = 1.0 / rate if rate > 0 else 0.0
    next_t = t0 + rnd.random() * interval
    while now() < t0:
        time.sleep(min(0.01, max(0.0, t0 - now())))
    while True:
        t = now()
        if t >= t_end:
            break
        if interval:
            if t < next_t:
                time.sleep(next_t - t)
            next_t = max(next_t + interval, now() - 0.25)
        turn = (turn + 1) % len(ports)
        # half the requests on a few hot keys (concurrent writers and readers of one key), half
        # over every key (keys not written for a while: what a server that returns still holds)
        k = rnd.randrange(min(hot, nkeys)) if rnd.random() < 0.5 else rnd.randrange(nkeys)
        is_w = rnd.random() < write_ratio
        value = None
        if is_w:
            seq += 1
            value = f"{j}.{seq}"
        ti = now()
        c = conns[turn]
        if c is None:
            try:
                c = rz.Conn(ports[turn], redis, timeout=timeout)
                conns[turn] = c
            except OSError as e:
                hist.append((j, "w" if is_w else "r", k, value, ti, now(), "fail", turn))
                errs[f"connect: {type(e).__name__}"] += 1
                time.sleep(0.005)
                continue
        try:
            if is_w:
                ok = c.set(_key(k), value.encode())
                status = "ok" if ok else "info"
                if not ok:
                    errs["not stored"] += 1
            else:
                v = c.get(_key(k))
                value = None if v is None else v.decode("utf-8", "replace")
                status = "ok"
        except rz.ProtoError as e:
            status = "info" if is_w else "fail"
            errs[" ".join(str(e).split()[:6])[:80]] += 1
        except (OSError, ValueError) as e:
            status = "info"
            errs[f"connection: {type(e).__name__}"] += 1
            c.close()
            conns[turn] = None
        hist.append((j, "w" if is_w else "r", k, value if is_w or status == "ok" else None, ti, now(), status, turn))
    for c in conns:
        if c is not None:
            c.close()
    with open(outpath, "w") as f:
        json.dump({"ops": hist, "errors": dict(errs)}, f)


# -------------------------------------------------------------------------------------------------
# the fault schedule


def make_schedule(seed, scenario, D):
    """[(offset s, action, args...)], drawn from random.Random("SEED:SCENARIO") only."""
    rnd = random.Random(f"{seed}:{scenario}")
    ev = []

    def one(kind, t):
        b = rnd.randrange(4)  # one of n1..n4 (n5 is the spare for an add)
        p = rnd.randrange(3)  # a proxy (mod the system's count)
        if kind in ("kill-return", "kill-empty"):
            d = rnd.uniform(2.5, 5.0)
            ev.append((t, "kill", b))
            ev.append((t + d, "restart", b, kind == "kill-return"))
            return t + d
        if kind == "stop":
            d = rnd.uniform(1.5, 4.0)
            ev.append((t, "sigstop", b))
            ev.append((t + d, "sigcont", b))
            return t + d
        if kind == "proxy-kill":
            d = rnd.uniform(1.0, 3.0)
            ev.append((t, "proxy-kill", p))
            ev.append((t + d, "proxy-start", p))
            return t + d
        if kind == "partition":
            d = rnd.uniform(2.0, 5.0)
            ev.append((t, "cut", p, b))
            ev.append((t + d, "restore", p, b))
            return t + d
        if kind == "add":
            ev.append((t, "add", 4))
            return t + 1.0
        if kind == "remove":
            ev.append((t, "remove", b))
            return t + 1.0
        if kind == "change-overlap":
            d = rnd.uniform(0.05, 2.0)
            ev.append((t, "add", 4))
            ev.append((t + d, "remove", b))
            return t + d + 1.0
        if kind == "etcd-member":
            d = rnd.uniform(2.0, 5.0)
            m = rnd.randrange(3)
            ev.append((t, "etcd-kill", m))
            ev.append((t + d, "etcd-start", m))
            return t + d
        if kind == "kill-change":
            d = rnd.uniform(2.5, 5.0)
            ev.append((t, "kill", b))
            ev.append((t + d, "restart", b, True))
            ev.append((t + rnd.uniform(0.5, d + 1.5), "add", 4))
            return t + d + 1.0
        raise ValueError(kind)

    if scenario == "mixed":
        t = rnd.uniform(0.15, 0.25) * D
        kinds = ["kill-return", "stop", "proxy-kill", "partition", "add", "remove"]
        for kind in rnd.sample(kinds, 3):
            if kind == "add" and any(e[1] == "add" for e in ev):
                continue
            t = one(kind, t) + rnd.uniform(0.3, 1.0)
            if t > 0.75 * D:
                break
    else:
        one(scenario, rnd.uniform(0.2, 0.3) * D)
    ev.sort(key=lambda e: e[0])
    return ev


def fmt_event(e):
    t, act, *args = e
    return f"{t:5.2f}s {act}" + ("(" + ", ".join(str(x) for x in args) + ")" if args else "")


# -------------------------------------------------------------------------------------------------
# one run


class Run:
    def __init__(self, env, system, pool, scenario, seed):
        self.env, self.system, self.pool, self.scenario, self.seed = env, system, pool, scenario, seed
        self.dir = tempfile.mkdtemp(prefix=f"{system}-{pool}-{scenario}-s{seed}-", dir=env.dir)
        self.events = []       # (offset, text)
        self.faults = 0        # faults actually injected
        self.servers = [0, 1, 2, 3]  # the membership the operator wants (indices into NAMES)
        self.threads = []
        self.problems = []

    def note(self, text):
        self.events.append((now() - self.t0, text))
        log(f"    {now() - self.t0:6.2f}s {text}")

    def members(self, idx=None):
        idx = self.servers if idx is None else idx
        return [(NAMES[i], self.cutter_ports[i]) for i in idx]

    # membership changes, as each system's operator makes them
    def change(self, kind, b):
        if kind == "add":
            if b in self.servers:
                return
            self.servers = sorted(self.servers + [b])
        else:
            if b not in self.servers or len(self.servers) < 2:
                return
            self.servers = [x for x in self.servers if x != b]
        want = list(self.servers)
        self.faults += 1
        if self.system == "chash-etcd":
            live = [p for p in self.proxies if p.alive()]
            p = live[0] if live else self.proxies[0]
            if not self.change_ways:
                # the first change through a proxy's admin port, a later one as etcdctl would
                srv = urllib.parse.quote(f"{HOST}:{self.cutter_ports[b]}:1 {NAMES[b]}")
                path = (f"/fleet/add?pool=cache&server={srv}" if kind == "add"
                        else f"/fleet/remove?pool=cache&server={NAMES[b]}")
                try:
                    st, body = p.http("POST", path)
                except OSError as e:
                    st, body = 0, str(e)
                self.note(f"{kind} {NAMES[b]}: POST {path.split('?')[0]} on p{p.i + 1}: {st} "
                          f"{' '.join(body.split())[:120]}")
                if st != 200:
                    self.problems.append(f"{kind} {NAMES[b]} refused: {st} {' '.join(body.split())[:120]}")
            else:
                value = json.dumps([f"{HOST}:{self.cutter_ports[i]}:1 {NAMES[i]}" for i in want])
                try:
                    self.env.etcd.put("/chash/pools/cache/servers", value)
                    self.note(f"{kind} {NAMES[b]}: servers key written in etcd ({len(want)} servers)")
                except (OSError, RuntimeError) as e:
                    self.note(f"{kind} {NAMES[b]}: etcd write failed: {e}")
                    self.problems.append(f"etcd write failed: {e}")
            self.change_ways.append(kind)
            return
        servers = self.members(want)
        stagger = self.env.args.stagger if len(self.proxies) > 1 else 0.0

        def roll():
            for k, p in enumerate(self.proxies):
                if k:
                    time.sleep(stagger)
                if p.server is None or not p.alive():
                    rz.write_atomic(p.path, p.config(servers))  # picked up when it restarts
                    continue
                try:
                    r = p.change(servers)
                except (OSError, RuntimeError) as e:
                    r = f"failed: {e}"
                self.note(f"{kind} {NAMES[b]}: p{p.i + 1} {r}")
        th = threading.Thread(target=roll, daemon=True)
        th.start()
        self.threads.append(th)

    def act(self, e):
        _, act, *args = e
        n = len(self.proxies)
        try:
            if act == "kill":
                self.backends.kill(args[0])
                self.down.add(args[0])
                self.faults += 1
                self.note(f"SIGKILL {NAMES[args[0]]}")
            elif act == "restart":
                persist = args[1] and self.pool == "redis"
                ok = self.backends.restart(args[0], persist)
                self.down.discard(args[0])
                self.note(f"{NAMES[args[0]]} restarted {'with its AOF' if persist else 'empty'}"
                          + ("" if ok else " (NOT LISTENING)"))
            elif act == "sigstop":
                self.backends.sigstop(args[0])
                self.faults += 1
                self.note(f"SIGSTOP {NAMES[args[0]]}")
            elif act == "sigcont":
                self.backends.sigcont(args[0])
                self.note(f"SIGCONT {NAMES[args[0]]}")
            elif act == "proxy-kill":
                p = self.proxies[args[0] % n]
                if p.alive():
                    p.kill()
                    self.faults += 1
                    self.note(f"SIGKILL proxy p{p.i + 1}")
            elif act == "proxy-start":
                p = self.proxies[args[0] % n]
                if not p.alive():
                    p.start()
                    self.cutter.call("pids", [q.pid for q in self.proxies if q.pid])
                    self.note(f"proxy p{p.i + 1} restarted")
            elif act == "cut":
                p = self.proxies[args[0] % n]
                if p.pid:
                    self.cutter.call("cut", args[1], p.pid)
                    self.cuts.add((args[1], p.pid))
                    self.faults += 1
                    self.note(f"p{p.i + 1} cut from {NAMES[args[1]]}")
            elif act == "restore":
                for (b, pid) in list(self.cuts):
                    if b == args[1]:
                        self.cutter.call("restore", b, pid)
                        self.cuts.discard((b, pid))
                self.note(f"{NAMES[args[1]]} restored for p{args[0] % n + 1}")
            elif act in ("add", "remove"):
                self.change(act, args[0])
            elif act == "etcd-kill":
                if self.env.etcd is None or self.system != "chash-etcd":
                    self.note("etcd member stop: not applicable to this system")
                    return
                self.env.etcd.kill(args[0])
                self.etcd_down.add(args[0])
                self.faults += 1
                self.note(f"SIGKILL etcd member e{args[0] + 1} (of {self.env.etcd.n})")
            elif act == "etcd-start":
                if args[0] in self.etcd_down:
                    self.env.etcd.start(args[0])
                    self.etcd_down.discard(args[0])
                    self.note(f"etcd member e{args[0] + 1} restarted")
        except (OSError, RuntimeError, ValueError) as err:
            self.problems.append(f"{act}{tuple(args)}: {err}")
            self.note(f"{act}{tuple(args)} FAILED: {err}")

    def heal(self):
        for th in self.threads:
            th.join(30)
        for i in list(self.backends.stopped):
            self.backends.sigcont(i)
            self.note(f"heal: SIGCONT {NAMES[i]}")
        for i in list(self.down):
            self.backends.restart(i, self.pool == "redis" and self.scenario != "kill-empty")
            self.down.discard(i)
            self.note(f"heal: {NAMES[i]} restarted")
        for (b, pid) in list(self.cuts):
            self.cutter.call("restore", b, pid)
            self.cuts.discard((b, pid))
        for m in list(self.etcd_down):
            self.env.etcd.start(m)
            self.etcd_down.discard(m)
        for p in self.proxies:
            if not p.alive():
                p.start()
                self.note(f"heal: proxy p{p.i + 1} restarted")
        self.cutter.call("pids", [q.pid for q in self.proxies if q.pid])

    def watch(self):
        """chash-etcd: note every change of the fleet's state (phase, epoch, ejected, returning)."""
        last = None
        while self.watching:
            try:
                st = json.loads(self.env.etcd.range("/chash/pools/cache/state").get("/chash/pools/cache/state",
                                                                                   "{}"))
                t = st.get("target", {})
                cur = (st.get("phase"), st.get("epoch"), tuple(t.get("ejected", []) or []),
                       json.dumps(st.get("returning")), len(t.get("servers", [])))
                if cur != last:
                    last = cur
                    self.note(f"fleet: epoch {cur[1]} {cur[0]}, {cur[4]} servers, ejected {list(cur[2])}"
                              + (f", returning {cur[3]}" if st.get("returning") else ""))
            except (OSError, ValueError, RuntimeError):
                pass
            time.sleep(0.05)

    def settle(self, limit):
        """Wait until the fleet is quiet: chash-etcd's state stable with nothing ejected or
        returning; the file-fed systems: their retry timeout twice over."""
        end = now() + limit
        if self.system == "nutcracker":
            time.sleep(min(3.0, limit))
            return True
        if self.system != "chash-etcd":
            # every worker on the last config, no server ejected or down (a returning one swept)
            time.sleep(1.5)
            last = None
            while now() < end:
                ok = True
                for p in self.proxies:
                    try:
                        st = json.loads(p.http("GET", "/status", timeout=2)[1])
                        states = [x.get("state") for pool in st.get("pools", []) for x in pool.get("servers", [])]
                        last = states
                        if st.get("applied_version") != st.get("version") or any(
                                x in ("ejected", "down") for x in states):
                            ok = False
                    except (OSError, ValueError):
                        ok = False
                if ok:
                    time.sleep(0.5)
                    return True
                time.sleep(0.1)
            self.problems.append(f"the proxies did not settle: server states {last}")
            return False
        last = None
        while now() < end:
            try:
                st = json.loads(self.env.etcd.range("/chash/pools/cache/state").get("/chash/pools/cache/state",
                                                                                   "{}"))
                last = st
                target = st.get("target", {})
                if (st.get("phase") == "stable" and not target.get("ejected") and not st.get("returning")
                        and len(target.get("servers", [])) == len(self.servers)):
                    time.sleep(0.5)
                    return True
            except (OSError, ValueError, RuntimeError):
                pass
            time.sleep(0.1)
        self.problems.append("the fleet did not settle: " + json.dumps(last)[:300])
        return False

    def final_reads(self, nkeys):
        """Every key through every proxy (final reads, in the history) and on every backend."""
        redis = self.pool == "redis"
        ops, errors = [], 0
        for p in self.proxies:
            conn = None
            failed_in_a_row = 0  # a proxy that answers nothing (nutcracker with every server out):
            for k in range(nkeys):  # its remaining keys are not read, so the phase stays bounded
                if failed_in_a_row >= 20:
                    errors += 1
                    continue
                for attempt in range(6):
                    try:
                        if conn is None:
                            conn = rz.Conn(p.port, redis, timeout=2.0)
                        ti = now()
                        v = conn.get(_key(k))
                        ops.append(history.Op("final", "r", k, None if v is None else v.decode("utf-8", "replace"),
                                              ti, now(), "ok", True, f"p{p.i + 1}"))
                        failed_in_a_row = 0
                        break
                    except (rz.ProtoError, OSError, ValueError):
                        errors += 1
                        if conn is not None:
                            conn.close()
                            conn = None
                        time.sleep(0.2)
                else:
                    failed_in_a_row += 1
            if conn is not None:
                conn.close()
        where = collections.defaultdict(set)  # (key, value) -> backends holding it
        for i in range(5):
            try:
                conn = rz.Conn(self.backends.ports[i], redis, timeout=2.0)
            except OSError:
                continue
            try:
                for k in range(nkeys):
                    v = conn.get(_key(k))
                    if v is not None:
                        where[(k, v.decode("utf-8", "replace"))].add(NAMES[i])
            except (rz.ProtoError, OSError, ValueError):
                pass
            finally:
                conn.close()
        return ops, errors, where

    def go(self):
        env, a = self.env, self.env.args
        self.change_ways, self.down, self.cuts, self.etcd_down = [], set(), set(), set()
        redis = self.pool == "redis"
        persist = redis and self.scenario in ("kill-return", "kill-change", "mixed")
        self.backends = Backends(env, self.dir, self.pool, persist)
        self.cutter_ports = rz.free_ports(5)
        self.cutter = fl.Cutter(env.ctx, self.cutter_ports, self.backends.ports)
        self.proxies = []
        self.t0 = now()
        try:
            if self.system == "chash-etcd":
                env.etcd.wipe()
            self.proxies = [Proxy(self, i) for i in range(nproxies(self.system))]
            for p in self.proxies:
                p.start(self.members())
            self.cutter.call("pids", [p.pid for p in self.proxies])
            if self.system == "chash-etcd":
                end = now() + 15
                while now() < end:
                    try:
                        st = env.etcd.range("/chash/pools/cache/state")
                        regs = env.etcd.range("/chash/proxies/", prefix=True)
                        if st and len(regs) == 3:
                            break
                    except (OSError, RuntimeError, ValueError):
                        pass
                    time.sleep(0.05)
                else:
                    raise RuntimeError("the fleet did not register in etcd")
            D = a.duration
            schedule = make_schedule(self.seed, self.scenario, D)
            log(f"  schedule (seed {self.seed}): " + "; ".join(fmt_event(e) for e in schedule))
            t0 = now() + 0.3
            self.t0 = t0
            outs = [os.path.join(self.dir, f"client{j}.json") for j in range(a.clients)]
            cfg = ([p.port for p in self.proxies], redis, a.keys, a.hot_keys, a.rate, a.write_ratio, self.seed, t0,
                   t0 + D, a.client_timeout)
            procs = [env.ctx.Process(target=client_main, args=(j, cfg, outs[j]), daemon=True)
                     for j in range(a.clients)]
            for p in procs:
                p.start()
            self.watching = True
            if self.system == "chash-etcd":
                w = threading.Thread(target=self.watch, daemon=True)
                w.start()
            for e in schedule:
                while now() < t0 + e[0]:
                    time.sleep(0.005)
                self.act(e)
            for p in procs:
                p.join(D + 30)
                if p.is_alive():
                    p.kill()
            self.note("load over")
            self.heal()
            settled = self.settle(a.settle)
            self.watching = False
            self.note("settled" if settled else "NOT settled")
            finals, final_errors, where = self.final_reads(a.keys)
            ops, errs = [], collections.Counter()
            for path in outs:
                try:
                    with open(path) as f:
                        d = json.load(f)
                except (OSError, ValueError):
                    self.problems.append(f"no history from {os.path.basename(path)}")
                    continue
                errs.update(d["errors"])
                for (j, f_, k, v, ti, tc, st, turn) in d["ops"]:
                    ops.append(history.Op(f"c{j}", f_, k, v, ti - t0, tc - t0, st, False, f"p{turn + 1}"))
            finals = [o._replace(invoke=o.invoke - t0, complete=o.complete - t0) for o in finals]
            cache = self.pool != "redis" and self.scenario in ("kill-return", "kill-empty", "kill-change", "mixed")
            cache = cache or self.scenario == "kill-empty"
            res = history.check(ops + finals, cache=cache, strict=a.strict_nil, present=set(where))
            res["lost_where"] = [f"{k}={v}: on {','.join(sorted(where.get((k, v), ()))) or 'no backend'}"
                                 for (k, v) in res["lost_writes"][:20]]
            res["lost_on_no_backend"] = sum(1 for kv in res["lost_writes"] if not where.get(kv))
            res["final_errors"] = final_errors
            res["error_kinds"] = dict(errs.most_common(8))
            res.update(system=self.system, pool=self.pool, scenario=self.scenario, seed=self.seed,
                       faults=self.faults, events=[(round(t, 2), x) for t, x in self.events],
                       problems=self.problems, settled=settled, cache_mode=cache,
                       schedule=[fmt_event(e) for e in schedule])
            if a.out and (res["stale"] or res["lost"] or a.keep_histories):
                os.makedirs(a.out, exist_ok=True)
                base = os.path.join(a.out, f"{self.system}-{self.pool}-{self.scenario}-s{self.seed}")
                history.dump_jsonl(base + ".jsonl", ops + finals)
            return res
        finally:
            for p in self.proxies:
                p.stop()
            self.cutter.stop()
            self.backends.stop()
            if not a.keep_tmp:
                shutil.rmtree(self.dir, ignore_errors=True)


# -------------------------------------------------------------------------------------------------
# reports


def aggregate(results):
    rows = collections.OrderedDict()
    for r in results:
        key = (r["scenario"], r["system"], r["pool"])
        x = rows.setdefault(key, {"runs": 0, "ops": 0, "ok": 0, "lost": 0, "stale": 0, "errors": 0, "misses": 0,
                                  "dropped": 0, "bad_seeds": [], "faults": 0, "other": 0})
        x["runs"] += 1
        x["ops"] += r["ops"]
        x["ok"] += r["ok"]
        x["lost"] += r["lost"]
        x["stale"] += r["stale"]
        x["errors"] += r["fail"] + r["info"]
        x["misses"] += r["misses"]
        x["dropped"] += r["dropped"]
        x["faults"] += r["faults"]
        x["other"] += r["garbage"] + r["future"]
        if r["lost"] or r["stale"] or r["garbage"] or r["future"]:
            x["bad_seeds"].append(r["seed"])
    return rows


def table(results):
    lines = ["| scenario | system | pool | runs | operations | lost writes | stale reads | errors | misses "
             "| seeds with anomalies |", "|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for (scenario, system, pool), x in aggregate(results).items():
        bold = system.startswith("chash") and system != "chash-file"
        lost = f"**{x['lost']:,}**" if bold else f"{x['lost']:,}"
        stale = f"**{x['stale']:,}**" if bold else f"{x['stale']:,}"
        seeds = ", ".join(str(s) for s in x["bad_seeds"][:12]) or "—"
        lines.append(f"| {scenario} | {system} | {pool} | {x['runs']} | {x['ops']:,} | {lost} | {stale} | "
                     f"{x['errors']:,} | {x['misses']:,} | {seeds} |")
    return "\n".join(lines)


def replace_doc(path, text):
    with open(path) as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} markers")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path + ".new", "w") as f:
        f.write(head + BEGIN + "\n" + text.strip() + "\n" + END + tail)
    os.replace(path + ".new", path)


def check_results(results, a):
    bad = []
    for r in results:
        name = f"{r['system']}/{r['pool']}/{r['scenario']}/seed {r['seed']}"
        if not r["system"].startswith("chash"):
            continue
        if r["system"] == "chash-file":
            continue  # staggered file reloads promise nothing across proxies (docs/FLEET.md)
        if r["lost"]:
            bad.append(f"{name}: {r['lost']} lost acknowledged writes")
        if r["stale"]:
            bad.append(f"{name}: {r['stale']} stale reads")
        if r["garbage"] or r["future"]:
            bad.append(f"{name}: {r['garbage']} reads of unwritten values, {r['future']} from the future")
        if r["faults"] == 0 and not (r["scenario"] == "etcd-member" and r["system"] != "chash-etcd"):
            bad.append(f"{name}: no fault was injected")
        if r["ok"] < a.min_ops:
            bad.append(f"{name}: only {r['ok']} operations completed (at least {a.min_ops} wanted)")
        if r["final_reads"] < a.keys:
            bad.append(f"{name}: only {r['final_reads']} final reads of {a.keys} keys")
        for p in r["problems"]:
            bad.append(f"{name}: {p}")
    if not results:
        bad.append("no run completed")
    return bad


def parse_seeds(text):
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            out += list(range(int(lo), int(hi) + 1))
        else:
            out.append(int(part))
    return out


def parse_args(argv):
    e = rz.env_default
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__[__doc__.index("Each run"):],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chash-proxy", default=e("CHASH_PROXY", os.path.join(ROOT, "build-release", "chash-proxy")))
    p.add_argument("--nutcracker", default=e("NUTCRACKER", "nutcracker"))
    p.add_argument("--etcd", default=e("ETCD", "etcd"))
    p.add_argument("--seeds", default=e("CHAOS_SEEDS", "1-3"), help="e.g. 1,2,3 or 1-20")
    p.add_argument("--systems", default=e("CHAOS_SYSTEMS", ",".join(SYSTEMS)))
    p.add_argument("--scenarios", default=e("CHAOS_SCENARIOS", ",".join(SCENARIOS)))
    p.add_argument("--pools", default=e("CHAOS_POOLS", ",".join(POOLS)))
    p.add_argument("--duration", type=float, default=float(e("CHAOS_DURATION", 10)), help="load seconds a run")
    p.add_argument("--keys", type=int, default=int(e("CHAOS_KEYS", 1000)))
    p.add_argument("--hot-keys", type=int, default=int(e("CHAOS_HOT_KEYS", 50)),
                   help="half the requests go to the first N keys, half to any key")
    p.add_argument("--clients", type=int, default=int(e("CHAOS_CLIENTS", 4)))
    p.add_argument("--rate", type=float, default=float(e("CHAOS_RATE", 150)), help="requests/s per client")
    p.add_argument("--write-ratio", type=float, default=float(e("CHAOS_WRITE_RATIO", 0.4)))
    p.add_argument("--client-timeout", type=float, default=2.0)
    p.add_argument("--stagger", type=float, default=1.0, help="seconds between the file-fed proxies' changes")
    p.add_argument("--settle", type=float, default=20.0, help="at most this long for the fleet to settle")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--etcd-members", type=int, default=3)
    p.add_argument("--min-ops", type=int, default=0, help="--check: fewer ok operations a run fail it "
                                                             "(default: a quarter of the paced load)")
    p.add_argument("--time-limit", type=float, default=float(e("CHAOS_TIME_LIMIT", 4500)),
                   help="wall clock of the whole run: no run starts that could end after it, and a "
                        "hard stop (SIGALRM) a little after it")
    p.add_argument("--out", default=e("CHAOS_OUT", ""))
    p.add_argument("--doc", default="", help="replace the section between the chaos markers of this file")
    p.add_argument("--keep-tmp", action="store_true")
    p.add_argument("--strict-nil", action="store_true",
                   help="a nil read after an acknowledged write is a stale read (default: a miss, "
                        "counted apart: a cache in front of a dead server misses its keys)")
    p.add_argument("--keep-histories", action="store_true", help="write every run's history (default: "
                                                                  "those with anomalies)")
    p.add_argument("--short", action="store_true",
                   help="make test's form: chash-etcd and chash-single, Redis, seed 1, 7 s runs: "
                        "kill-return and kill-change on both, stop, change-overlap, partition and "
                        "proxy-kill (~90 s)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 on a lost write or stale read by chash-etcd or chash-single (chash-file "
                        "and nutcracker promise nothing across proxies: measured, never checked), on a "
                        "run with no fault injected, too few operations or a missing final read")
    a = p.parse_args(argv)
    a.chash_proxy = os.path.abspath(a.chash_proxy)
    a.pairs = None  # --short: only these (system, scenario) runs
    if a.short:
        a.systems, a.pools = "chash-etcd,chash-single", "redis"
        if "--scenarios" not in " ".join(argv):
            a.scenarios = ",".join(SHORT_SCENARIOS)
            a.pairs = SHORT_PAIRS
        if "--seeds" not in " ".join(argv):
            a.seeds = "1"
        a.duration, a.keys, a.hot_keys, a.clients, a.rate = 7.0, 400, 40, 3, 150.0
        a.settle, a.time_limit = 12.0, min(a.time_limit, 150.0)
    if not a.min_ops:
        a.min_ops = int(a.duration * a.clients * a.rate * 0.25)
    return a


def main(argv):
    a = parse_args(argv)
    systems = [s for s in a.systems.split(",") if s]
    scenarios = [s for s in a.scenarios.split(",") if s]
    pools = [s for s in a.pools.split(",") if s]
    seeds = parse_seeds(a.seeds)
    for s in systems:
        if s not in SYSTEMS:
            raise SystemExit(f"unknown system {s} ({', '.join(SYSTEMS)})")
    for s in scenarios:
        if s not in SCENARIOS:
            raise SystemExit(f"unknown scenario {s} ({', '.join(SCENARIOS)})")
    for s in pools:
        if s not in POOLS:
            raise SystemExit(f"unknown pool {s} ({', '.join(POOLS)})")
    need = ["redis-server" if "redis" in pools else None, "memcached" if "memcache" in pools else None,
            a.etcd if "chash-etcd" in systems else None, a.nutcracker if "nutcracker" in systems else None]
    for tool in need:
        if tool and shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found (scripts/bootstrap.sh installs it)")
    if any(s.startswith("chash") for s in systems) and not os.access(a.chash_proxy, os.X_OK):
        raise SystemExit(f"no chash-proxy at {a.chash_proxy} (--chash-proxy PATH)")
    env = rz.Env()
    env.args = a
    env.ctx = multiprocessing.get_context("fork")
    env.shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    env.dir = tempfile.mkdtemp(prefix="chash-chaos-", dir=env.shm)
    env.server_limit = a.time_limit + 60
    env.etcd = None
    start = now()
    deadline = start + a.time_limit
    rz.die_with_parent(signal.SIGTERM)  # under ctest or make: go when the parent goes

    def on_alarm(*_):
        raise KeyboardInterrupt("the time limit")
    signal.signal(signal.SIGTERM, lambda *_: on_alarm())
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(a.time_limit + (20 if a.short else 60)))  # hard: even a stuck run ends (ctest: 180 s)
    results, failed = [], []
    log(f"chaos: seeds {seeds}, systems {systems}, pools {pools}, scenarios {scenarios}; "
        f"{a.duration:.0f} s a run, {a.clients} clients x {a.rate:.0f}/s, {a.keys} keys, {a.write_ratio:.0%} writes")
    interrupted = None
    try:
        if "chash-etcd" in systems:
            env.etcd = EtcdCluster(env, a.etcd_members)
        for seed in seeds:
            for pool in pools:
                for scenario in scenarios:
                    for system in systems:
                        if scenario == "etcd-member" and system != "chash-etcd":
                            continue
                        if a.pairs is not None and (system, scenario) not in a.pairs:
                            continue
                        if now() + a.duration + a.settle + 10 > deadline:
                            raise KeyboardInterrupt("time limit: stopping here")
                        log(f"{system} / {pool} / {scenario} / seed {seed} ...")
                        try:
                            r = Run(env, system, pool, scenario, seed).go()
                        except (RuntimeError, OSError, ValueError) as err:
                            log(f"  the run failed: {err}")
                            failed.append(f"{system}/{pool}/{scenario}/seed {seed}: the run failed: {err}")
                            continue
                        results.append(r)
                        log(f"  {r['ops']} operations ({r['ok']} ok, {r['fail']} fail, {r['info']} info), "
                            f"{r['faults']} faults: lost {r['lost']}, stale {r['stale']}"
                            + (f", misses {r['misses']}, dropped {r['dropped']}" if r["cache_mode"] else "")
                            + (f", garbage {r['garbage']}, future {r['future']}" if r["garbage"] or r["future"] else "")
                            + f"; final errors {r['final_errors']}")
                        for x in (r["stale_examples"][:3] + r["lost_examples"][:3] + r["lost_where"][:3]
                                  + r["other_examples"][:2]):
                            log("    " + x)
                        if r["error_kinds"]:
                            log("    errors: " + "; ".join(f"{k} x{v}" for k, v in r["error_kinds"].items()))
                        for p in r["problems"]:
                            log("    problem: " + p)
    except KeyboardInterrupt as e:
        interrupted = str(e) or "interrupted"
        log(f"chaos: {interrupted}")
    finally:
        signal.alarm(0)
        if env.etcd is not None:
            env.etcd.stop()
        if a.keep_tmp:
            log(f"chaos: kept {env.dir}")
        else:
            shutil.rmtree(env.dir, ignore_errors=True)
    version = "?"
    try:
        out = subprocess.run(["timeout", "5", a.chash_proxy, "--version"], capture_output=True, text=True)
        version = (out.stdout or out.stderr).strip().splitlines()[0].replace("This is ", "")[:80]
    except (OSError, IndexError):
        pass
    md = [f"`tests/chaos/chaos.py` ({time.strftime('%Y-%m-%d')}, {version}): seeds {a.seeds}; "
          f"{a.duration:.0f} s of load a run, "
          f"{a.clients} clients x {a.rate:.0f} requests/s round-robin over the proxies, {a.keys} keys, "
          f"{a.write_ratio:.0%} writes; {len(results)} runs in {now() - start:.0f} s.", "", table(results), ""]
    if interrupted:
        md.append(f"(stopped early: {interrupted})")
    for f_ in failed:
        md.append(f"- {f_}")
    text = "\n".join(md)
    print(text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "chaos.md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(a.out, "chaos.json"), "w") as f:
            json.dump([{k: v for k, v in r.items() if k != "lost_writes"} for r in results], f, indent=1)
    if a.doc:
        replace_doc(a.doc, text)
    if a.check:
        bad = check_results(results, a) + failed
        if interrupted:
            bad.append(f"stopped early: {interrupted}")
        for b in bad:
            print("check failed: " + b)
        if bad:
            sys.exit(1)
        print("check: no lost write and no stale read through chash-etcd and chash-single")


if __name__ == "__main__":
    main(sys.argv[1:])
