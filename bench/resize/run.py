#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench-resize: what a cluster resize does to a cache's hit ratio, nutcracker next to
chash-proxy, on the same nutcracker.yml, all on 127.0.0.1.

Per protocol (redis, memcache) five backends (redis-server --save "" --appendonly no, or
memcached -U 0 -m 256) run on free loopback ports, each behind a TCP forwarder of this script
(one process, selectors) that can "cut" a backend (close its connections, refuse new ones) and
"restore" it with its memory intact. The proxies only ever talk to the forwarders. Then, for
each scenario x key distribution x proxy, one after the other (backends flushed in between):

  add     the pool starts with n1..n4; at T = D/3 the config becomes n1..n5
  remove  the pool starts with n1..n5; at T = D/3 n5 is removed
  fail    n1..n5 with auto_eject_hosts: true, server_retry_timeout: 2000,
          server_failure_limit: 1; at D/3 n3 is cut, at 2D/3 it comes back, holding the values
          it had (stale where the load wrote the key meanwhile)

A change of config is what each proxy's users do: nutcracker (no reload) is stopped and started
again on the same port with the new file (the restart gap is measured: SIGTERM to the new one
accepting); chash-proxy gets POST /reload on its admin port (then /status is polled until every
worker routes with the new version). Both read the same pool (ketama, fnv1a_64, timeout: 1000,
servers 127.0.0.1:PORT:1 nN); chash-proxy's file adds a chash_proxy: {admin: ...} section and
the --chash-pool-extra keys (a key it refuses makes its row "not available: <its error>").

The load: the N keys k:0..k:N-1 are filled through the proxy (~100-byte values "VERSION:random"),
then C client processes run for D seconds at --rate requests/s in all: each request picks a key
from the popularity distribution (zipf s=0.99 over the N keys, a precomputed CDF + bisect, ranks
mapped to keys by a seeded permutation; or uniform) and does a GET; a miss counts one database
read, sleeps --db-latency-ms and puts the key back through the proxy (read-through; memcached
"add" / redis "SET NX", so that a fill never overwrites a newer write); --write-ratio of the
requests are SETs (a new version) of a key drawn from the same distribution. The script keeps
each key's latest acknowledged version (the "database", shared memory; a key is written by one
client only, so versions never race): a hit returning an older version than the one
acknowledged before the GET was sent is a stale read. Errors (error replies, closed or refused
connections, timeouts) are counted apart: hit ratio = hits / (hits + misses) per second.

Output (--out DIR): resize.md (the tables, the plots linked), resize.csv (per second and proxy:
requests, gets, hits, misses, sets, errors, stale, fills, hit ratio), one SVG per protocol x
scenario x distribution (hit ratio over time, one line per proxy, the change marked). The
tables are printed too. Table columns: steady hit ratio (mean of the seconds before T), the
lowest per-second hit ratio after T, seconds from T until the hit ratio stays within 2 points of
steady, the miss spike (database reads in the 10 s after T beyond the steady rate; and as a
share of the key space), errors, stale reads, the change (restart gap / reload time), the
achieved load and the proxy's CPU.

Everything is bounded: servers run under `timeout`, a wall-clock limit (--time-limit) stops the
run and reports what was measured; every process and the temp dir are removed at exit (also on
Ctrl-C and errors). Only 127.0.0.1 is ever bound or connected to.

Knobs (flag, environment variable, default):
  --keys N               RESIZE_KEYS         50000
  --duration S           RESIZE_DURATION     30      load seconds per run (change at D/3)
  --clients C            RESIZE_CLIENTS      8       client processes
  --rate R               RESIZE_RATE         4000    requests/s of all clients (0: unpaced)
  --distribution LIST    RESIZE_DISTRIBUTION zipf,uniform
  --scenarios LIST       RESIZE_SCENARIOS    add,remove,fail
  --protocols LIST       RESIZE_PROTOCOLS    redis,memcache
  --proxies LIST         RESIZE_PROXIES      nutcracker,chash-proxy  (chash-proxy-plain: one
                                             more chash-proxy row without the extra keys)
  --db-latency-ms MS     RESIZE_DB_LATENCY_MS 1      per miss (0 allowed)
  --write-ratio F        RESIZE_WRITE_RATIO  0.05
  --seed N               RESIZE_SEED         1
  --out DIR              RESIZE_OUT          build-release/bench-resize
  --chash-pool-extra 'K: V'  RESIZE_CHASH_POOL_EXTRA ('K: V; K2: V2')  repeatable
  --chash-workers N      RESIZE_CHASH_WORKERS 1
  --chash-proxy PATH     CHASH_PROXY         the first of build-release/chash-proxy,
                                             build/chash-proxy, chash-proxy on PATH
  --nutcracker PATH      NUTCRACKER          nutcracker (on PATH)
  --time-limit S         RESIZE_TIME_LIMIT   900     wall clock of the whole run
  --keep-tmp             RESIZE_KEEP_TMP=1   keep configs and logs

  python3 bench/resize/run.py --keys 5000 --duration 9 --clients 4      # ~4 minutes
  python3 bench/resize/run.py --protocols redis --scenarios add --distribution zipf \\
      --chash-pool-extra 'warmup: true' --proxies nutcracker,chash-proxy,chash-proxy-plain
"""

import argparse
import bisect
import ctypes
import hashlib
import http.client
import json
import math
import multiprocessing
import os
import random
import resource
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"  # every socket here binds or connects to this address, nothing else
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import testports  # noqa: E402  (tests/testports.py)
NAMES = ["n1", "n2", "n3", "n4", "n5"]
SCENARIOS = {
    "add": "add a node (n1..n4 → n1..n5)",
    "remove": "remove a node (n1..n5 → n1..n4)",
    "fail": "fail and return (n3 cut at D/3, back at 2D/3 with its old values)",
}
COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
DASHES = ["", ' stroke-dasharray="8,5"', ' stroke-dasharray="2,4"', ' stroke-dasharray="12,4,2,4"']  # lines that coincide stay visible

# per-second counters of each client
REQ, GETS, HITS, MISSES, SETS, ERRORS, STALE, FILLS = range(8)
METRICS = 8

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def die_with_parent(sig=signal.SIGKILL):
    _libc.prctl(1, int(sig))  # PR_SET_PDEATHSIG


def now():
    return time.monotonic()


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_ports(n):
    """n distinct ports below the ephemeral range (tests/testports.py says why)."""
    return testports.free_ports(n, HOST)


def can_connect(port, timeout=0.2):
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_listen(port, limit=10.0, step=0.002, proc=None):
    end = now() + limit
    while now() < end:
        if can_connect(port):
            return True
        if proc is not None and proc.poll() is not None:
            return False
        time.sleep(step)
    return False


def proc_children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


# ---------------------------------------------------------------------------------------------
# servers


class Server:
    """A command under `timeout` in its own process group (timeout's), output to LOG. The
    parent dying sends timeout SIGTERM, which it relays to the command."""

    def __init__(self, name, cmd, logpath, limit, cwd):
        self.name, self.log = name, logpath
        self.out = open(logpath, "ab")
        self.p = subprocess.Popen(
            ["timeout", "-k", "3", str(int(limit)), *cmd], stdout=self.out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, cwd=cwd, preexec_fn=lambda: die_with_parent(signal.SIGTERM))

    def pid(self):
        """The command's own pid (timeout's child), or None."""
        for _ in range(200):
            kids = proc_children(self.p.pid)
            if kids:
                return kids[0]
            if self.p.poll() is not None:
                return None
            time.sleep(0.005)
        return None

    def alive(self):
        return self.p.poll() is None

    def tail(self, n=3):
        try:
            with open(self.log, "rb") as f:
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
            return " ".join(lines[-n:])[:300]
        except OSError:
            return ""

    def stop(self, grace=3.0):
        if self.p.poll() is None:
            try:
                self.p.send_signal(signal.SIGTERM)  # timeout relays it to the command
            except OSError:
                pass
            try:
                self.p.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.p.wait(2)
        except subprocess.TimeoutExpired:
            pass
        self.out.close()


# ---------------------------------------------------------------------------------------------
# the forwarder: one process, selectors; listens on LISTEN[i], relays to TARGET[i]


class _End:
    __slots__ = ("sock", "peer", "out", "idx", "events", "closed")

    def __init__(self, sock, idx):
        self.sock, self.idx, self.peer, self.out, self.events, self.closed = sock, idx, None, bytearray(), 0, False


def forwarder_main(ctrl, listen_ports, target_ports):
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sel = selectors.DefaultSelector()
    n = len(listen_ports)
    listeners = [None] * n
    ends = [set() for _ in range(n)]  # client-side ends per backend

    def open_listener(i):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((HOST, listen_ports[i]))
        s.listen(1024)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, ("L", i))
        listeners[i] = s

    def update(e):
        if e.closed:
            return
        ev = (selectors.EVENT_READ if not e.peer.out else 0) | (selectors.EVENT_WRITE if e.out else 0)
        if ev == e.events:
            return
        if e.events == 0:
            sel.register(e.sock, ev, e)
        elif ev == 0:
            sel.unregister(e.sock)
        else:
            sel.modify(e.sock, ev, e)
        e.events = ev

    def close_pair(e):
        for x in (e, e.peer):
            if x.closed:
                continue
            x.closed = True
            if x.events:
                sel.unregister(x.sock)
                x.events = 0
            x.sock.close()
            ends[x.idx].discard(x)

    def cut(i):
        if listeners[i] is not None:
            sel.unregister(listeners[i])
            listeners[i].close()
            listeners[i] = None
        for e in list(ends[i]):
            close_pair(e)

    for i in range(n):
        open_listener(i)
    sel.register(ctrl, selectors.EVENT_READ, ("C",))
    ctrl.send("ready")
    while True:
        for key, ev in sel.select(1.0):
            d = key.data
            if isinstance(d, tuple):
                if d[0] == "C":
                    try:
                        msg = ctrl.recv()
                    except EOFError:
                        return
                    op = msg[0]
                    try:
                        if op == "quit":
                            ctrl.send("ok")
                            return
                        if op == "cut":
                            cut(msg[1])
                        elif op == "restore":
                            if listeners[msg[1]] is None:
                                open_listener(msg[1])
                        elif op == "reset":
                            for i in range(n):
                                cut(i)
                                open_listener(i)
                        ctrl.send("ok")
                    except OSError as e:
                        ctrl.send(f"error: {e}")
                    continue
                i = d[1]
                while listeners[i] is not None:
                    try:
                        c, _ = listeners[i].accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    try:
                        b = socket.create_connection((HOST, target_ports[i]), timeout=1.0)
                    except OSError:
                        c.close()
                        continue
                    for s in (c, b):
                        s.setblocking(False)
                        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
                    ec, eb = _End(c, i), _End(b, i)
                    ec.peer, eb.peer = eb, ec
                    ends[i].add(ec)
                    ends[i].add(eb)
                    update(ec)
                    update(eb)
                continue
            e = d
            if e.closed:
                continue
            if ev & selectors.EVENT_READ:
                try:
                    data = e.sock.recv(262144)
                except (BlockingIOError, InterruptedError):
                    data = None
                except OSError:
                    close_pair(e)
                    continue
                if data == b"":
                    close_pair(e)
                    continue
                if data:
                    p = e.peer
                    if p.out:
                        p.out += data
                    else:
                        try:
                            k = p.sock.send(data)
                        except (BlockingIOError, InterruptedError):
                            k = 0
                        except OSError:
                            close_pair(e)
                            continue
                        if k < len(data):
                            p.out += data[k:]
                    if p.out:
                        update(e)
                        update(p)
            if ev & selectors.EVENT_WRITE and not e.closed and e.out:
                try:
                    k = e.sock.send(e.out)
                except (BlockingIOError, InterruptedError):
                    k = 0
                except OSError:
                    close_pair(e)
                    continue
                del e.out[:k]
                if not e.out:
                    update(e)
                    update(e.peer)


class Forwarders:
    def __init__(self, ctx, listen_ports, target_ports):
        self.listen = listen_ports
        self.ctrl, child = ctx.Pipe()
        self.p = ctx.Process(target=forwarder_main, args=(child, listen_ports, target_ports), daemon=True)
        self.p.start()
        if not self.ctrl.poll(10) or self.ctrl.recv() != "ready":
            raise RuntimeError("the forwarder did not start")

    def call(self, *msg):
        self.ctrl.send(msg)
        if not self.ctrl.poll(10):
            raise RuntimeError(f"forwarder: no answer to {msg}")
        r = self.ctrl.recv()
        if r != "ok":
            raise RuntimeError(f"forwarder: {msg}: {r}")

    def cpu(self):
        return cpu_seconds(self.p.pid)

    def stop(self):
        try:
            if self.p.is_alive():
                self.ctrl.send(("quit",))
                self.p.join(2)
        except (OSError, BrokenPipeError):
            pass
        if self.p.is_alive():
            self.p.kill()
            self.p.join(2)


# ---------------------------------------------------------------------------------------------
# protocol clients


class ProtoError(Exception):
    pass


class Conn:
    """A blocking connection with a reply reader, for REDIS or memcache."""

    def __init__(self, port, redis, timeout=2.0):
        self.redis = redis
        self.s = socket.create_connection((HOST, port), timeout=1.0)
        self.s.settimeout(timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

    def _fill(self):
        d = self.s.recv(262144)
        if not d:
            raise ConnectionError("connection closed by the proxy")
        if self.pos:
            del self.buf[:self.pos]
            self.pos = 0
        self.buf += d

    def line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                ln = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return ln
            self._fill()

    def exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        d = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n + 2
        return d

    # requests
    def get_cmd(self, key):
        if self.redis:
            return b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key)
        return b"get %s\r\n" % key

    def set_cmd(self, key, value, only_new=False):
        if self.redis:
            if only_new:
                return b"*4\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nNX\r\n" % (len(key), key, len(value), value)
            return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(value), value)
        return b"%s %s 0 0 %d\r\n%s\r\n" % (b"add" if only_new else b"set", key, len(value), value)

    # replies
    def get_reply(self):
        """The value, or None on a miss; ProtoError on an error reply."""
        ln = self.line()
        if self.redis:
            if ln[:1] == b"$":
                n = int(ln[1:])
                return None if n < 0 else self.exact(n)
            raise ProtoError(ln[:200].decode("utf-8", "replace"))
        if ln == b"END":
            return None
        if ln.startswith(b"VALUE "):
            v = self.exact(int(ln.rsplit(b" ", 1)[1]))
            end = self.line()
            if end != b"END":
                raise ProtoError("no END after VALUE")
            return v
        raise ProtoError(ln[:200].decode("utf-8", "replace"))

    def set_reply(self):
        """True: stored; False: not stored (add / NX on an existing key); ProtoError: error."""
        ln = self.line()
        if self.redis:
            if ln == b"+OK":
                return True
            if ln == b"$-1":
                return False
            raise ProtoError(ln[:200].decode("utf-8", "replace"))
        if ln == b"STORED":
            return True
        if ln == b"NOT_STORED":
            return False
        raise ProtoError(ln[:200].decode("utf-8", "replace"))

    def get(self, key):
        self.s.sendall(self.get_cmd(key))
        return self.get_reply()

    def set(self, key, value, only_new=False):
        self.s.sendall(self.set_cmd(key, value, only_new))
        return self.set_reply()


def make_value(version, pad):
    head = b"%d:" % version
    return head + pad[:max(0, 100 - len(head))]


def value_version(v):
    i = v.find(b":")
    if i <= 0:
        raise ProtoError("value without a version")
    return int(v[:i])


def fill(port, redis, n, seed, deadline):
    """SET k:0..k:n-1 (version 1) through the proxy, pipelined; returns (errors, seconds)."""
    rnd = random.Random(seed)
    pad = bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(200))
    t = now()
    c = Conn(port, redis, timeout=5.0)
    errors = 0
    batch = 500
    try:
        for lo in range(0, n, batch):
            if now() > deadline:
                raise TimeoutError("wall-clock limit during the fill")
            hi = min(n, lo + batch)
            c.s.sendall(b"".join(c.set_cmd(b"k:%d" % k, make_value(1, pad[k % 97:])) for k in range(lo, hi)))
            for _ in range(lo, hi):
                try:
                    if not c.set_reply():
                        errors += 1
                except ProtoError:
                    errors += 1
    finally:
        c.close()
    return errors, now() - t


# ---------------------------------------------------------------------------------------------
# the load


def worker_main(j, cfg, stats, db, stop, cpu_out):
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    (port, redis, nclients, rate, write_ratio, db_latency, seed, t0, deadline, nsec, cdf, perm) = cfg
    rnd = random.Random(seed * 1_000_003 + j)
    pad = bytes(rnd.choice(b"abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(200))
    n = len(perm)
    interval = nclients / rate if rate > 0 else 0.0
    uniform = cdf is None
    base_row = j * nsec * METRICS
    conn = None
    next_t = t0 + (interval * j / nclients if interval else 0.0)
    delay = time.sleep
    while now() < t0:
        delay(min(0.01, max(0.0, t0 - now())))
    while True:
        t = now()
        if t >= deadline or stop.value:
            break
        if interval:
            if t < next_t:
                delay(next_t - t)
                t = now()
                if t >= deadline:
                    break
            next_t += interval
            if t - next_t > 0.25:  # far behind (a stall): do not burst to catch up
                next_t = t
        sec = int(t - t0)
        if sec >= nsec:
            break
        row = base_row + sec * METRICS
        stats[row + REQ] += 1
        if uniform:
            r = rnd.randrange(n)
        else:
            r = bisect.bisect_left(cdf, rnd.random())
            if r >= n:
                r = n - 1
        try:
            if conn is None:
                conn = Conn(port, redis)
            if rnd.random() < write_ratio:
                # this client owns the ranks = j (mod nclients): versions of a key never race
                r = r - r % nclients + j
                if r >= n:
                    r -= nclients
                if r < 0:
                    stats[row + REQ] -= 1
                    continue
                k = perm[r]
                ver = db[k] + 1
                stats[row + SETS] += 1
                if conn.set(b"k:%d" % k, make_value(ver, pad[rnd.randrange(97):])):
                    db[k] = ver
            else:
                k = perm[r]
                seen = db[k]  # acknowledged before the GET is sent
                stats[row + GETS] += 1
                v = conn.get(b"k:%d" % k)
                if v is None:
                    stats[row + MISSES] += 1
                    if db_latency > 0:
                        delay(db_latency)
                    stats[row + FILLS] += 1
                    conn.set(b"k:%d" % k, make_value(db[k], pad[rnd.randrange(97):]), only_new=True)
                else:
                    stats[row + HITS] += 1
                    if value_version(v) < seen:
                        stats[row + STALE] += 1
        except ProtoError:
            stats[row + ERRORS] += 1
        except (OSError, ValueError):
            stats[row + ERRORS] += 1
            if conn is not None:
                conn.close()
                conn = None
            delay(0.002)  # a refused connect: do not spin
    if conn is not None:
        conn.close()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    cpu_out[j] = ru.ru_utime + ru.ru_stime


def interrupt_on_signals():
    """SIGTERM and SIGHUP (a `timeout`, a closed terminal) raise KeyboardInterrupt, so that a run
    stops its servers and removes its files as on Ctrl-C."""
    def on_signal(sig, _frame):
        raise KeyboardInterrupt(f"signal {sig}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)


def shuffled(n, seed):
    """0..n-1 in a random order fixed by `seed`: which key is the i-th most popular."""
    perm = list(range(n))
    random.Random(seed).shuffle(perm)
    return perm


def zipf_cdf(n, s):
    w = [1.0 / (i + 1) ** s for i in range(n)]
    total = sum(w)
    cdf, acc = [], 0.0
    for x in w:
        acc += x
        cdf.append(acc / total)
    cdf[-1] = 1.0
    return cdf


def fnv1a_64(key):
    """nutcracker's fnv1a_64: 32-bit arithmetic, the 64-bit basis and prime truncated, signed bytes."""
    h = 0x84222325
    for c in key:
        h = ((h ^ (c if c < 128 else c | 0xFFFFFF00)) * 0x1B3) & 0xFFFFFFFF
    return h


_owners = {}


def ketama_owners(names, n):
    """Each key's server under nutcracker's ketama (docs/compat/twemproxy.md; equal weights, 160
    points per server, so the model holds for 4 and 5 servers); checked after every fill."""
    names = tuple(names)
    if (names, n) not in _owners:
        pts = []
        for order, name in enumerate(names):
            for i in range(40):
                d = hashlib.md5(f"{name}-{i}".encode()).digest()
                pts += [(int.from_bytes(d[4 * j:4 * j + 4], "little"), order) for j in range(4)]
        pts.sort()
        ring, who = [p for p, _ in pts], [o for _, o in pts]
        out = []
        for k in range(n):
            i = bisect.bisect_left(ring, fnv1a_64(b"k:%d" % k))
            out.append(names[who[i if i < len(ring) else 0]])
        _owners[(names, n)] = out
    return _owners[(names, n)]


# ---------------------------------------------------------------------------------------------
# configs and proxies


def pool_yaml(listen, redis, servers, fail, extra=()):
    lines = ["cache:", f"  listen: {HOST}:{listen}", "  hash: fnv1a_64", "  distribution: ketama",
             f"  redis: {'true' if redis else 'false'}", "  timeout: 1000"]
    if fail:
        lines += ["  auto_eject_hosts: true", "  server_retry_timeout: 2000", "  server_failure_limit: 1"]
    lines += [f"  {e}" for e in extra]
    lines.append("  servers:")
    lines += [f"    - {HOST}:{port}:1 {name}" for name, port in servers]
    return "\n".join(lines) + "\n"


def write_atomic(path, text):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class NotAvailable(Exception):
    pass


class Nutcracker:
    kind = "nutcracker"

    def __init__(self, env, label):
        self.env, self.label = env, label
        self.port, self.stats = free_ports(2)
        self.path = os.path.join(env.dir, "nutcracker.yml")
        self.server = None
        self.cpu_done = 0.0
        self.pid = None

    def config(self, servers, fail):
        return pool_yaml(self.port, self.env.redis, servers, fail)

    def _start(self, i):
        a = self.env.args
        self.server = Server(f"nutcracker-{i}", [a.nutcracker, "-c", self.path, "-s", str(self.stats), "-a", HOST],
                             os.path.join(self.env.dir, "nutcracker.log"), self.env.server_limit, self.env.dir)
        if not wait_listen(self.port, 10.0, proc=self.server.p):
            why = self.server.tail()
            self.server.stop()
            self.server = None
            raise NotAvailable(f"nutcracker did not listen: {why}")
        self.pid = self.server.pid()

    def start(self, servers, fail):
        write_atomic(self.path, self.config(servers, fail))
        self._start(0)

    def cpu(self):
        return self.cpu_done + (cpu_seconds(self.pid) if self.pid else 0.0)

    def change(self, servers, fail):
        """Restart with the new config on the same port; returns a description and the gap."""
        write_atomic(self.path, self.config(servers, fail))
        t = now()
        self.cpu_done += cpu_seconds(self.pid) if self.pid else 0.0
        self.server.stop(grace=5.0)
        self._start(1)
        gap = now() - t
        return {"gap_ms": gap * 1000.0, "text": f"restart: port closed {gap * 1000:.0f} ms"}

    def stop(self):
        if self.server is not None:
            self.server.stop()
            self.server = None


class ChashProxy:
    kind = "chash-proxy"

    def __init__(self, env, label, extra):
        self.env, self.label, self.extra = env, label, list(extra)
        self.port, self.admin = free_ports(2)
        slug = "".join(ch if ch.isalnum() else "-" for ch in label).strip("-")[:60]
        self.path = os.path.join(env.dir, f"{slug}.yml")
        self.server = None
        self.pid = None

    def config(self, servers, fail):
        return (pool_yaml(self.port, self.env.redis, servers, fail, self.extra)
                + f"chash_proxy:\n  admin: {HOST}:{self.admin}\n")

    def start(self, servers, fail):
        a = self.env.args
        write_atomic(self.path, self.config(servers, fail))
        chk = subprocess.run(["timeout", "10", a.chash_proxy, "-c", self.path, "--check"], capture_output=True,
                             text=True, stdin=subprocess.DEVNULL)
        if chk.returncode != 0:
            why = " ".join((chk.stderr + chk.stdout).split()).replace(self.path, os.path.basename(self.path))
            raise NotAvailable(f"chash-proxy refused the config: {why[:300]}")
        self.server = Server("chash-proxy", [a.chash_proxy, "-c", self.path, "--no-stats", "--workers",
                                             str(a.chash_workers)],
                             os.path.join(self.env.dir, "chash-proxy.log"), self.env.server_limit, self.env.dir)
        if not wait_listen(self.port, 10.0, proc=self.server.p) or not wait_listen(self.admin, 5.0, proc=self.server.p):
            why = self.server.tail()
            self.server.stop()
            self.server = None
            raise NotAvailable(f"chash-proxy did not listen: {why}")
        self.pid = self.server.pid()

    def cpu(self):
        return cpu_seconds(self.pid) if self.pid else 0.0

    def _http(self, method, path):
        c = http.client.HTTPConnection(HOST, self.admin, timeout=5)
        try:
            c.request(method, path)
            r = c.getresponse()
            return r.status, r.read().decode("utf-8", "replace")
        finally:
            c.close()

    def change(self, servers, fail):
        write_atomic(self.path, self.config(servers, fail))
        t = now()
        status, body = self._http("POST", "/reload")
        text = " ".join(body.split())[:200]
        if status != 200 or "refused" in text:
            return {"gap_ms": None, "text": f"reload refused ({status}): {text}", "failed": True}
        applied = None
        while now() - t < 5.0:
            try:
                st = json.loads(self._http("GET", "/status")[1])
                if st.get("applied_version") == st.get("version"):
                    applied = now() - t
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.002)
        if applied is None:
            return {"gap_ms": 0.0, "text": "reload: workers not on the new version after 5 s"}
        return {"gap_ms": 0.0, "text": f"reload: no gap, applied in {applied * 1000:.0f} ms"}

    def stop(self):
        if self.server is not None:
            self.server.stop()
            self.server = None


# ---------------------------------------------------------------------------------------------
# the run


class Env:
    pass


def flush_backend(port, redis):
    c = Conn(port, redis, timeout=5.0)
    try:
        c.s.sendall(b"*1\r\n$8\r\nFLUSHALL\r\n" if redis else b"flush_all\r\n")
        ln = c.line()
        if ln not in (b"+OK", b"OK"):
            raise RuntimeError(f"flush of {port}: {ln!r}")
    finally:
        c.close()
    if not redis:
        # flush_all hides the items at once but curr_items counts them until the LRU crawler
        # reclaims them: have it run, so that the placement check after the fill counts right
        end = now() + 3.0
        while backend_keys(port, redis) and now() < end:
            c = Conn(port, redis, timeout=5.0)
            try:
                c.s.sendall(b"lru_crawler crawl all\r\n")
                c.line()  # OK, or BUSY while a crawl runs
            finally:
                c.close()
            time.sleep(0.05)


def backend_keys(port, redis):
    c = Conn(port, redis, timeout=5.0)
    try:
        if redis:
            c.s.sendall(b"*1\r\n$6\r\nDBSIZE\r\n")
            return int(c.line()[1:])
        c.s.sendall(b"stats\r\n")
        n = 0
        while True:
            ln = c.line()
            if ln == b"END":
                return n
            if ln.startswith(b"STAT curr_items "):
                n = int(ln.split()[2])
    finally:
        c.close()


def run_one(env, proxy, scenario, dist, global_deadline):
    """One proxy through one scenario; returns a result dict."""
    a = env.args
    redis = env.redis
    fwd = [(NAMES[i], env.fwd_ports[i]) for i in range(5)]
    D = float(a.duration)
    T = D / 3.0
    fail = scenario == "fail"
    first = fwd[:4] if scenario == "add" else fwd
    res = {"proxy": proxy.label, "scenario": scenario, "dist": dist, "proto": env.proto, "events": [],
           "note": "", "seconds": [], "available": True}
    for i in range(5):
        flush_backend(env.backend_ports[i], redis)
    env.fwd.call("reset")
    try:
        proxy.start(first, fail)
    except NotAvailable as e:
        res["available"], res["note"] = False, str(e)
        return res
    try:
        ferr, fsec = fill(proxy.port, redis, a.keys, a.seed, global_deadline)
        res["fill"] = (ferr, fsec)
        if ferr:
            res["note"] = f"{ferr} fill errors"
        # the fill must have put every key where nutcracker's ketama puts it
        before = ketama_owners([name for name, _ in first], a.keys)
        want = [before.count(name) for name in NAMES]
        got = [backend_keys(env.backend_ports[i], redis) for i in range(5)]
        if got != want:
            res["note"] = (res["note"] + "; " if res["note"] else "") + f"keys per backend {got}, ketama: {want}"
        if fail:
            res["moved"] = before.count("n3")
        else:
            after = ketama_owners([name for name, _ in (fwd if scenario == "add" else fwd[:4])], a.keys)
            res["moved"] = sum(1 for x, y in zip(before, after) if x != y)
        ctx = env.ctx
        nsec = int(math.ceil(D))
        stats = ctx.RawArray("q", a.clients * nsec * METRICS)
        db = ctx.RawArray("q", a.keys)
        for k in range(a.keys):
            db[k] = 1
        stop = ctx.RawValue("b", 0)
        cpu_out = ctx.RawArray("d", a.clients)
        t0 = now() + 0.5
        deadline = min(t0 + D, global_deadline)
        cdf = env.cdf if dist == "zipf" else None
        cfg = (proxy.port, redis, a.clients, a.rate, a.write_ratio, a.db_latency_ms / 1000.0, a.seed, t0, deadline,
               nsec, cdf, env.perm)
        procs = [ctx.Process(target=worker_main, args=(j, cfg, stats, db, stop, cpu_out), daemon=True)
                 for j in range(a.clients)]
        for p in procs:
            p.start()
        env.workers = procs
        env.stop_flag = stop
        cpu_proxy0, cpu_fwd0 = proxy.cpu(), env.fwd.cpu()
        events = [(T, "change")] if not fail else [(T, "cut"), (2 * D / 3.0, "restore")]
        for at, what in events:
            wait = t0 + at - now()
            if t0 + at >= deadline:
                break
            if wait > 0:
                time.sleep(wait)
            ev = {"at": now() - t0, "what": what}
            if what == "change":
                target = fwd if scenario == "add" else fwd[:4]
                try:
                    ev.update(proxy.change(target, fail))
                except NotAvailable as e:
                    ev.update({"text": f"restart failed: {e}", "failed": True})
                    res["note"] = (res["note"] + "; " if res["note"] else "") + ev["text"]
                    res["events"].append(ev)
                    break
            elif what == "cut":
                env.fwd.call("cut", 2)
                ev["text"] = f"n3 cut at {ev['at']:.1f} s"
            else:
                env.fwd.call("restore", 2)
                ev["text"] = f"n3 back at {ev['at']:.1f} s"
            res["events"].append(ev)
            log(f"    {proxy.label}: {ev['text']} (at {ev['at']:.2f} s)")
        while now() < deadline and all(p.is_alive() for p in procs):
            time.sleep(0.05)
        for p in procs:
            p.join(max(0.1, deadline + 5 - now()))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(1)
        env.workers = []
        if proxy.server is not None and not proxy.server.alive():
            res["note"] = ((res["note"] + "; " if res["note"] else "")
                           + f"{proxy.kind} exited during the run: {proxy.server.tail()}")
        load_sec = max(1e-9, min(now(), deadline) - t0)
        res["proxy_cpu"] = (proxy.cpu() - cpu_proxy0) / load_sec
        res["fwd_cpu"] = (env.fwd.cpu() - cpu_fwd0) / load_sec
        res["client_cpu"] = sum(cpu_out) / load_sec
        res["partial"] = deadline < t0 + D
        done = int(min(nsec, math.floor(deadline - t0 + 1e-6)))
        for s in range(done):
            row = [0] * METRICS
            for j in range(a.clients):
                base = (j * nsec + s) * METRICS
                for m in range(METRICS):
                    row[m] += stats[base + m]
            res["seconds"].append(row)
        try:
            res["backend_keys"] = [backend_keys(env.backend_ports[i], redis) for i in range(5)]
        except (OSError, ValueError, ProtoError):
            pass
    except (OSError, ProtoError, TimeoutError) as e:
        res["note"] = (res["note"] + "; " if res["note"] else "") + f"run failed: {e}"
        if not res["seconds"]:
            res["available"] = False
    finally:
        proxy.stop()
    return res


# ---------------------------------------------------------------------------------------------
# figures


def ratio(row):
    g = row[HITS] + row[MISSES]
    return row[HITS] / g if g else None


def summarize(res, D):
    T = D / 3.0
    secs = res["seconds"]
    out = {}
    before = [s for s in range(len(secs)) if s + 1 <= T + 1e-9]
    end = int(math.floor(2 * D / 3.0 + 1e-9)) if res["scenario"] == "fail" else len(secs)
    end = min(end, len(secs))
    after = [s for s in range(len(secs)) if s + 1 > T + 1e-9 and s < end]
    rb = [ratio(secs[s]) for s in before if ratio(secs[s]) is not None]
    steady = sum(rb) / len(rb) if rb else None
    out["steady"] = steady
    miss_rate = sum(secs[s][MISSES] for s in before) / len(before) if before else 0.0
    ra = [(s, ratio(secs[s])) for s in after if ratio(secs[s]) is not None]
    out["min_after"] = min((r for _, r in ra), default=None)
    out["recovery"] = None
    if steady is not None and ra:
        bad = [s for s, r in ra if r < steady - 0.02]
        if not bad:
            out["recovery"] = 0.0
        elif bad[-1] >= ra[-1][0]:
            out["recovery"] = -(end - T)  # not back within the window
        else:
            out["recovery"] = bad[-1] + 1 - T
    win = [s for s in after][:10]
    out["spike"] = sum(secs[s][MISSES] for s in win) - miss_rate * len(win) if win else None
    out["spike_window"] = len(win)
    out["errors"] = sum(r[ERRORS] for r in secs)
    out["stale"] = sum(r[STALE] for r in secs)
    out["rps"] = sum(r[REQ] for r in secs) / len(secs) if secs else 0.0
    return out


def fmt_ratio(x):
    return "—" if x is None else f"{x:.3f}"


def table(results, args):
    D = float(args.duration)
    hdr = ("| proxy | steady hit ratio | min hit ratio after T | back within 2 pts | miss spike (DB reads) | "
           "of keys | keys moved | errors | stale reads | change | load req/s | proxy CPU |")
    lines = [hdr, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in results:
        if not r["available"]:
            lines.append(f"| {r['proxy']} | not available: {r['note']} |" + "  |" * 10)
            continue
        s = summarize(r, D)
        rec = s["recovery"]
        rec_s = "—" if rec is None else (f"> {-rec:.0f} s" if rec < 0 else f"{rec:.0f} s")
        spike = s["spike"]
        spike_s = "—" if spike is None else f"{spike:,.0f} ({s['spike_window']} s)"
        share = "—" if spike is None else f"{100.0 * spike / args.keys:.1f}%"
        moved = "—" if r.get("moved") is None else f"{100.0 * r['moved'] / args.keys:.1f}%"
        change = "; ".join(e.get("text", "") for e in r["events"]) or "—"
        note = r["note"]
        if r.get("partial"):
            note = (note + "; " if note else "") + "partial: wall-clock limit"
        if note:
            change += f" ({note})"
        lines.append(f"| {r['proxy']} | {fmt_ratio(s['steady'])} | {fmt_ratio(s['min_after'])} | {rec_s} | "
                     f"{spike_s} | {share} | {moved} | {s['errors']:,} | {s['stale']:,} | {change} | {s['rps']:,.0f} | "
                     f"{100.0 * r.get('proxy_cpu', 0.0):.0f}% |")
    return "\n".join(lines)


def svg(path, title, D, results, events):
    W, H = 760, 400
    ml, mr, mt, mb = 60, 20, 40, 80
    pw, ph = W - ml - mr, H - mt - mb

    def X(t):
        return ml + pw * t / D

    def Y(v):
        return mt + ph * (1.0 - v)

    esc = lambda s: s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         'font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="14">{esc(title)}</text>']
    for i in range(6):
        v = i / 5.0
        o.append(f'<line x1="{ml}" y1="{Y(v):.1f}" x2="{ml + pw}" y2="{Y(v):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{ml - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    step = max(1, int(math.ceil(D / 10.0)))
    for t in range(0, int(D) + 1, step):
        o.append(f'<line x1="{X(t):.1f}" y1="{mt + ph}" x2="{X(t):.1f}" y2="{mt + ph + 4}" stroke="black"/>')
        o.append(f'<text x="{X(t):.1f}" y="{mt + ph + 17}" text-anchor="middle">{t}</text>')
    o.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    o.append(f'<text x="{ml + pw / 2}" y="{mt + ph + 34}" text-anchor="middle">seconds</text>')
    o.append(f'<text x="16" y="{mt + ph / 2}" text-anchor="middle" transform="rotate(-90 16 {mt + ph / 2})">'
             'hit ratio (per second)</text>')
    for at, text in events:
        o.append(f'<line x1="{X(at):.1f}" y1="{mt}" x2="{X(at):.1f}" y2="{mt + ph}" stroke="#555" '
                 'stroke-dasharray="5,4"/>')
        o.append(f'<text x="{X(at) + 4:.1f}" y="{mt + ph - 8}" fill="#555">{esc(text)}</text>')
    lx = ml
    for i, r in enumerate(results):
        color = COLORS[i % len(COLORS)]
        pts = []
        for s, row in enumerate(r["seconds"]):
            v = ratio(row)
            if v is not None:
                pts.append(f"{X(s + 0.5):.1f},{Y(v):.1f}")
        dash = DASHES[i % len(DASHES)]
        width = 4 if i == 0 else 2
        if pts:
            o.append(f'<polyline fill="none" stroke="{color}" stroke-width="{width}" stroke-opacity="0.85"'
                     f'{dash} points="{" ".join(pts)}"/>')
        ly = mt + ph + 56
        label = r["proxy"] + ("" if r["available"] else " (not available)")
        o.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 24}" y2="{ly - 4}" stroke="{color}" '
                 f'stroke-width="{width}"{dash}/>')
        o.append(f'<text x="{lx + 30}" y="{ly}">{esc(label)}</text>')
        lx += 40 + 7 * len(label)
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


# ---------------------------------------------------------------------------------------------


def env_default(name, default):
    v = os.environ.get(name)
    return v if v not in (None, "") else default


def parse_args(argv):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__[__doc__.index("Knobs"):],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keys", type=int, default=int(env_default("RESIZE_KEYS", 50000)))
    p.add_argument("--duration", type=float, default=float(env_default("RESIZE_DURATION", 30)),
                   help="load seconds per run; the change at D/3 (fail: back at 2D/3)")
    p.add_argument("--clients", type=int, default=int(env_default("RESIZE_CLIENTS", 8)))
    p.add_argument("--rate", type=float, default=float(env_default("RESIZE_RATE", 4000)),
                   help="requests/s of all clients together (0: as fast as they go)")
    p.add_argument("--distribution", "--distributions", dest="distribution",
                   default=env_default("RESIZE_DISTRIBUTION", "zipf,uniform"), help="zipf,uniform")
    p.add_argument("--scenarios", "--scenario", dest="scenarios",
                   default=env_default("RESIZE_SCENARIOS", "add,remove,fail"), help="add,remove,fail")
    p.add_argument("--protocols", "--protocol", dest="protocols",
                   default=env_default("RESIZE_PROTOCOLS", "redis,memcache"), help="redis,memcache")
    p.add_argument("--proxies", default=env_default("RESIZE_PROXIES", "nutcracker,chash-proxy"),
                   help="nutcracker,chash-proxy,chash-proxy-plain")
    p.add_argument("--db-latency-ms", type=float, default=float(env_default("RESIZE_DB_LATENCY_MS", 1)))
    p.add_argument("--write-ratio", type=float, default=float(env_default("RESIZE_WRITE_RATIO", 0.05)))
    p.add_argument("--seed", type=int, default=int(env_default("RESIZE_SEED", 1)))
    p.add_argument("--out", default=env_default("RESIZE_OUT", os.path.join(ROOT, "build-release", "bench-resize")))
    p.add_argument("--chash-pool-extra", action="append", default=None, metavar="'KEY: VALUE'",
                   help="a key for chash-proxy's pool (repeatable), e.g. 'warmup: true'")
    p.add_argument("--chash-workers", type=int, default=int(env_default("RESIZE_CHASH_WORKERS", 1)))
    p.add_argument("--chash-proxy", default=env_default("CHASH_PROXY", default_chash_proxy()))
    p.add_argument("--nutcracker", default=env_default("NUTCRACKER", "nutcracker"))
    p.add_argument("--time-limit", type=float, default=float(env_default("RESIZE_TIME_LIMIT", 900)))
    p.add_argument("--keep-tmp", action="store_true", default=env_default("RESIZE_KEEP_TMP", "") not in ("", "0"))
    a = p.parse_args(argv)
    if a.chash_pool_extra is None:
        a.chash_pool_extra = [x.strip() for x in env_default("RESIZE_CHASH_POOL_EXTRA", "").split(";") if x.strip()]
    for e in a.chash_pool_extra:
        if "\n" in e or ":" not in e or e.strip().startswith("-"):
            p.error(f"--chash-pool-extra {e!r}: one 'key: value' line")
    a.distribution = [x for x in a.distribution.split(",") if x]
    a.scenarios = [x for x in a.scenarios.split(",") if x]
    a.protocols = [x for x in a.protocols.split(",") if x]
    a.proxies = [x for x in a.proxies.split(",") if x]
    for name, vals, ok in (("--distribution", a.distribution, ("zipf", "uniform")),
                           ("--scenarios", a.scenarios, tuple(SCENARIOS)),
                           ("--protocols", a.protocols, ("redis", "memcache")),
                           ("--proxies", a.proxies, ("nutcracker", "chash-proxy", "chash-proxy-plain"))):
        for v in vals:
            if v not in ok:
                p.error(f"{name}: unknown {v!r} (one of {', '.join(ok)})")
    if a.keys < 10 or a.duration < 3 or a.clients < 1 or not 0 <= a.write_ratio < 1 or a.db_latency_ms < 0:
        p.error("need --keys >= 10, --duration >= 3, --clients >= 1, 0 <= --write-ratio < 1, --db-latency-ms >= 0")
    return a


def default_chash_proxy():
    """The chash-proxy a run uses unless told: `make bench-resize`'s Release build, else the
    developer build, else an installed one; build-release's path when there is none (the run
    then stops at once, saying so)."""
    for built in (os.path.join(ROOT, "build-release", "chash-proxy"),
                  os.path.join(ROOT, "build", "chash-proxy")):
        if os.access(built, os.X_OK):
            return built
    return shutil.which("chash-proxy") or os.path.join(ROOT, "build-release", "chash-proxy")


def missing_binaries(a):
    """Each proxy binary the run needs and cannot execute, with how to get it."""
    missing = []
    if ("chash-proxy" in a.proxies or "chash-proxy-plain" in a.proxies) and not (
            os.path.isfile(a.chash_proxy) and os.access(a.chash_proxy, os.X_OK)):
        missing.append(f"chash-proxy: {a.chash_proxy} is not an executable (make bench-resize "
                       "builds build-release/chash-proxy; or give --chash-proxy PATH / CHASH_PROXY)")
    if "nutcracker" in a.proxies and shutil.which(a.nutcracker) is None:
        missing.append(f"nutcracker: {a.nutcracker} not found (apt-get install nutcracker; or give "
                       "--nutcracker PATH / NUTCRACKER, or --proxies without it)")
    return missing


def tool_version(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL)
        return " ".join((r.stdout + r.stderr).split())[:80]
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def main(argv):
    a = parse_args(argv)
    began = now()
    global_deadline = began + a.time_limit
    # A proxy that is not there would only fill its rows with "not available": stop before
    # anything starts.
    missing = missing_binaries(a)
    if missing:
        for m in missing:
            log(f"run.py: {m}")
        return 2
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="chash-bench-resize.")
    ctx = multiprocessing.get_context("fork")
    servers, fwds, envs = [], [], []
    load0 = open("/proc/loadavg").read().split()[:3]

    interrupt_on_signals()
    perm = shuffled(a.keys, a.seed)
    cdf = zipf_cdf(a.keys, 0.99) if "zipf" in a.distribution else None
    all_results = []  # (proto, scenario, dist, [results])
    limit_hit = False
    interrupted = None
    try:
        for proto in a.protocols:
            if now() > global_deadline:
                limit_hit = True
                break
            redis = proto == "redis"
            env = Env()
            env.args, env.proto, env.redis, env.ctx, env.perm, env.cdf = a, proto, redis, ctx, perm, cdf
            env.dir = os.path.join(tmp, proto)
            os.makedirs(env.dir)
            env.server_limit = a.time_limit + 120
            env.workers = []
            envs.append(env)
            ports = free_ports(10)
            env.backend_ports, env.fwd_ports = ports[:5], ports[5:]
            log(f"{proto}: 5 backends on {HOST}:{env.backend_ports}, forwarders on {env.fwd_ports}")
            for i, port in enumerate(env.backend_ports):
                d = os.path.join(env.dir, NAMES[i])
                os.makedirs(d)
                if redis:
                    cmd = ["redis-server", "--bind", HOST, "--port", str(port), "--save", "", "--appendonly", "no",
                           "--dir", d, "--protected-mode", "yes", "--daemonize", "no"]
                else:
                    cmd = ["memcached", "-l", HOST, "-p", str(port), "-U", "0", "-m", "256"]
                    if os.geteuid() == 0:
                        cmd += ["-u", "root"]
                srv = Server(f"{proto}-{NAMES[i]}", cmd, os.path.join(d, "server.log"), env.server_limit, d)
                servers.append(srv)
                if not wait_listen(port, 10.0, proc=srv.p):
                    raise RuntimeError(f"{proto} backend {NAMES[i]} did not start: {srv.tail()}")
            env.fwd = Forwarders(ctx, env.fwd_ports, env.backend_ports)
            fwds.append(env.fwd)
            proxies = []
            for name in a.proxies:
                if name == "nutcracker":
                    proxies.append(lambda env=env: Nutcracker(env, "nutcracker"))
                elif name == "chash-proxy":
                    label = "chash-proxy" + (f" ({'; '.join(a.chash_pool_extra)})" if a.chash_pool_extra else "")
                    proxies.append(lambda env=env, label=label: ChashProxy(env, label, a.chash_pool_extra))
                elif name == "chash-proxy-plain" and (a.chash_pool_extra or "chash-proxy" not in a.proxies):
                    proxies.append(lambda env=env: ChashProxy(env, "chash-proxy", []))
            for scenario in a.scenarios:
                for dist in a.distribution:
                    group = []
                    all_results.append((proto, scenario, dist, group))
                    log(f"  {proto} / {scenario} / {dist}")
                    for make in proxies:
                        proxy = make()
                        if limit_hit or now() + 2 > global_deadline:
                            limit_hit = True
                            group.append({"proxy": proxy.label, "available": False, "events": [], "seconds": [],
                                          "note": "not run (wall-clock limit)"})
                            continue
                        r = run_one(env, proxy, scenario, dist, global_deadline)
                        group.append(r)
                        if r["available"]:
                            s = summarize(r, a.duration)
                            log(f"    {proxy.label}: steady {fmt_ratio(s['steady'])}, min {fmt_ratio(s['min_after'])}, "
                                f"spike {s['spike'] if s['spike'] is None else round(s['spike'])}, errors {s['errors']}, "
                                f"stale {s['stale']}, {s['rps']:.0f} req/s; CPU proxy {r['proxy_cpu']:.2f}, "
                                f"clients {r['client_cpu']:.2f}, forwarder {r['fwd_cpu']:.2f} cores; "
                                f"keys per backend {r.get('backend_keys')}")
                        else:
                            log(f"    {proxy.label}: not available: {r['note']}")
                        if now() > global_deadline:
                            limit_hit = True
                    if limit_hit:
                        break
                if limit_hit:
                    break
            if limit_hit:
                break
    except KeyboardInterrupt as e:
        interrupted = str(e) or "Ctrl-C"
        log(f"run.py: interrupted ({interrupted}); stopping everything")
    finally:
        for env in envs:
            for p in getattr(env, "workers", []):
                if p.is_alive():
                    p.kill()
        for f in fwds:
            f.stop()
        for srv in servers:
            srv.stop()
        if a.keep_tmp:
            log(f"run.py: configs and logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    # report
    D = float(a.duration)
    csv = ["protocol,scenario,distribution,proxy,second,requests,gets,hits,misses,sets,errors,stale,fills,hit_ratio"]
    md = []
    model = ""
    try:
        for ln in open("/proc/cpuinfo"):
            if ln.startswith("model name"):
                model = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    rev = tool_version(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    md.append(f"bench-resize: {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, chash {rev}; "
              f"{os.cpu_count()} CPUs ({model}); load {' '.join(load0)} before, "
              f"{' '.join(open('/proc/loadavg').read().split()[:3])} after; {now() - began:.0f} s")
    md.append(f"versions: {tool_version([a.nutcracker, '--version']).split(' async')[0]}; "
              f"{tool_version([a.chash_proxy, '--version'])}; {tool_version(['redis-server', '--version']).split(' sha')[0]}; "
              f"{tool_version(['memcached', '-V'])}")
    md.append(f"load: {a.keys:,} keys, {a.clients} client processes, {a.rate:g} requests/s in all, "
              f"{a.write_ratio:g} writes, {a.db_latency_ms:g} ms per database read; {D:g} s per run, change at "
              f"{D / 3:.1f} s (fail: n3 back at {2 * D / 3:.1f} s); seed {a.seed}; chash-proxy {a.chash_workers} "
              f"worker(s){', pool extra: ' + '; '.join(a.chash_pool_extra) if a.chash_pool_extra else ''}")
    if limit_hit:
        md.append(f"**stopped by the wall-clock limit ({a.time_limit:g} s)**: the rest was not run")
    if interrupted:
        md.append(f"**interrupted ({interrupted})**: partial results")
    md.append("")
    md.append("Hit ratio = hits / (hits + misses) per second; errors apart. *Back within 2 pts*: from the change "
              "until the last second below steady − 0.02 (\"> W s\": still below at the end of the window). "
              "*Miss spike*: database reads in the seconds after the change (up to 10) beyond the steady rate; "
              "*of keys*: that over the key space; *keys moved*: the share of keys whose server changes (fail: "
              "n3's share), from nutcracker's ketama over these key names (checked against the backends after "
              "every fill), the most a cold-cache spike can reach. *Stale reads*: hits older than the version the load had "
              "written and seen acknowledged before the GET.")
    for proto, scenario, dist, group in all_results:
        if not group:
            continue
        base = f"{proto}-{scenario}-{dist}"
        title = f"{proto} · {SCENARIOS[scenario]} · {dist}"
        events = []
        for r in group:
            for e in r["events"]:
                events.append((e["at"], e["what"]))
        marks = [(D / 3.0, "change")] if scenario != "fail" else [(D / 3.0, "n3 cut"), (2 * D / 3.0, "n3 back")]
        svg(os.path.join(a.out, base + ".svg"), title, D, group, marks)
        tab = table(group, a)
        md += ["", f"### {title}", "", tab, "", f"![{base}]({base}.svg)"]
        print(f"\n### {title}\n\n{tab}", flush=True)
        for r in group:
            for s, row in enumerate(r["seconds"]):
                hr = ratio(row)
                csv.append(",".join([proto, scenario, dist, f'"{r["proxy"]}"', str(s)] + [str(x) for x in row]
                                    + ["" if hr is None else f"{hr:.4f}"]))
    ran = [r for _, _, _, g in all_results for r in g if r["available"] and "client_cpu" in r]
    if ran:
        mean = lambda k: sum(r[k] for r in ran) / len(ran)
        md += ["", f"CPU during the load, mean of {len(ran)} runs, in cores (of {os.cpu_count()}): clients "
                   f"{mean('client_cpu'):.2f}, forwarders {mean('fwd_cpu'):.2f}, proxy {mean('proxy_cpu'):.2f} "
                   "(backends not counted)."]
    with open(os.path.join(a.out, "resize.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(a.out, "resize.csv"), "w") as f:
        f.write("\n".join(csv) + "\n")
    log(f"run.py: written to {a.out}/resize.md (tables), resize.csv, *.svg; {now() - began:.0f} s")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
