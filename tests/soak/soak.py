#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""chash-proxy soak: fault and load figures (docs/RELIABILITY.md).

Starts chash-proxy with a Redis pool (3 redis-server) and a memcached pool (3 memcached), all on
127.0.0.1 with free ports in a temp dir; drives steady GET/SET/MGET (and multi-key get) load from
N clients per pool; meanwhile runs one event at a time (backend kill and restart, SIGSTOP past the
timeout, reloads, idle/slow clients, slow admin clients, malformed input, SIGTERM with drain,
binary hand-over) and prints one table row per event.

Every request ends as exactly one of:
  ok          a well-formed reply that is not an error
  failed      an error reply (-ERR / SERVER_ERROR ...) or the connection closed before the reply
  unanswered  no reply within --deadline seconds while the connection stays open (must be 0)
  wrong       a reply that does not belong to the request (desync; must be 0)
A client is "hung" when it waits --deadline seconds for a reply or a close and gets neither.

Exit status: 0 when every assertion holds (no unanswered request, no hung client, no wrong reply,
no failure in the steady-state window, RSS growth within --rss-bound-mib, every admin poll
answered, no request lost by drain or hand-over, no refused connect during hand-over); 1
otherwise; 2 on a setup error.

  python3 tests/soak/soak.py --proxy build-release/chash-proxy            # full (~5 min)
  python3 tests/soak/soak.py --proxy build/chash-proxy --short            # < 60 s
"""

import argparse
import asyncio
import ctypes
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from array import array

# FAILED: an error reply. CUT: the connection closed after the request was written, no reply.
OK, FAILED, UNANSWERED, WRONG, CUT = 0, 1, 2, 3, 4
REDIS, MEMCACHE = 0, 1

_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _die_with_parent():
    # PR_SET_PDEATHSIG: a server never outlives the harness, whatever kills it.
    _libc.prctl(1, signal.SIGKILL)


def now():
    return time.monotonic()


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from testports import expect_reply, free_port  # noqa: E402  (tests/testports.py)


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def p99(values):
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(0.99 * len(v)))]


class Recorder:
    """Every load request: send time, latency, outcome, pool (compact arrays)."""

    def __init__(self):
        self.t = array("d")
        self.lat = array("f")
        self.code = array("b")
        self.pool = array("b")
        self.hung = []  # times a load client was left hanging
        self.refused = []  # times a connect was refused
        self.connect_errors = []  # other connect failures (times)
        self.wrong_examples = []
        self.closed_between = []  # times a client found its idle connection closed by the proxy

    def add(self, t, lat, code, pool):
        self.t.append(t)
        self.lat.append(lat)
        self.code.append(code)
        self.pool.append(pool)

    def window(self, a, b):
        """Counts by outcome of the requests sent in [a, b), and the latencies of those answered."""
        n = [0] * 5
        lats = []
        for i in range(len(self.t)):
            if a <= self.t[i] < b:
                c = self.code[i]
                n[c] += 1
                if c in (OK, FAILED):
                    lats.append(self.lat[i])
        return n, lats

    def count_between(self, times, a, b):
        return sum(1 for x in times if a <= x < b)


# ---------------------------------------------------------------------------------------------
# Protocol clients


async def read_resp(r):
    line = await r.readuntil(b"\r\n")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return ("status", rest)
    if kind == b"-":
        return ("error", rest)
    if kind == b":":
        return ("int", int(rest))
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return ("bulk", None)
        data = await r.readexactly(n + 2)
        return ("bulk", data[:-2])
    if kind == b"*":
        n = int(rest)
        if n < 0:
            return ("array", None)
        return ("array", [await read_resp(r) for _ in range(n)])
    raise ValueError(f"bad RESP line {line[:60]!r}")


async def read_mc(r):
    """One memcached reply: ('error', line) or ('line', line) or ('values', [(key, data)])."""
    values = []
    while True:
        line = (await r.readuntil(b"\r\n"))[:-2]
        if line.startswith(b"VALUE "):
            parts = line.split()
            n = int(parts[3])
            data = await r.readexactly(n + 2)
            values.append((parts[1], data[:-2]))
            continue
        if line == b"END":
            return ("values", values)
        if line.startswith((b"SERVER_ERROR", b"CLIENT_ERROR")) or line == b"ERROR":
            return ("error", line)
        if values:
            raise ValueError(f"bad memcached line inside a get reply {line[:60]!r}")
        return ("line", line)


def resp_cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class LoadClient:
    """One connection issuing one request at a time, reconnecting when it is closed."""

    def __init__(self, h, kind, port_fn, rnd):
        self.h = h
        self.kind = kind
        self.port_fn = port_fn
        self.rnd = rnd
        self.seq = 0

    def key(self):
        return b"soak:%d" % self.rnd.randrange(self.h.args.keys)

    def value(self, key):
        self.seq += 1
        return key + b"|%d|" % self.seq + b"v" * self.rnd.randrange(16, 200)

    def request(self):
        x = self.rnd.random()
        if self.kind == REDIS:
            if x < 0.45:
                k = self.key()
                return resp_cmd(b"GET", k), ("get", k)
            if x < 0.85:
                k = self.key()
                return resp_cmd(b"SET", k, self.value(k)), ("set", k)
            ks = [self.key() for _ in range(self.rnd.randrange(2, 6))]
            return resp_cmd(b"MGET", *ks), ("mget", ks)
        if x < 0.45:
            k = self.key()
            return b"get " + k + b"\r\n", ("mget", [k])
        if x < 0.85:
            k = self.key()
            v = self.value(k)
            return b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v), ("set", k)
        ks = [self.key() for _ in range(self.rnd.randrange(2, 6))]
        return b"get " + b" ".join(ks) + b"\r\n", ("mget", ks)

    def check(self, want, reply):
        """OK, FAILED or WRONG for this reply to this request."""
        op, keys = want
        kind, val = reply
        if kind == "error":
            return FAILED
        if self.kind == REDIS:
            if op == "set":
                return OK if kind == "status" and val == b"OK" else WRONG
            if op == "get":
                ok = kind == "bulk" and (val is None or val.startswith(keys + b"|"))
                return OK if ok else WRONG
            if kind != "array" or val is None or len(val) != len(keys):
                return WRONG
            for k, (t, v) in zip(keys, val):
                if t != "bulk" or not (v is None or v.startswith(k + b"|")):
                    return WRONG
            return OK
        if op == "set":
            return OK if kind == "line" and val == b"STORED" else WRONG
        if kind != "values":
            return WRONG
        # Hits come back in the order asked (duplicates included), misses left out.
        i = 0
        for k, v in val:
            while i < len(keys) and keys[i] != k:
                i += 1
            if i == len(keys) or not v.startswith(k + b"|"):
                return WRONG
            i += 1
        return OK

    async def run(self):
        h = self.h
        rec = h.rec
        pool = self.kind
        reader_fn = read_resp if self.kind == REDIS else read_mc
        while not h.stopping:
            try:
                r, w = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", self.port_fn()), h.args.deadline)
            except ConnectionRefusedError:
                rec.refused.append(now())
                await asyncio.sleep(0.05)
                continue
            except (OSError, asyncio.TimeoutError):
                rec.connect_errors.append(now())
                await asyncio.sleep(0.05)
                continue
            try:
                while not h.stopping:
                    if r.at_eof():
                        # Closed by the proxy between two requests: reconnect before sending, as
                        # pooled clients check a connection before reuse (go-redis's connCheck).
                        rec.closed_between.append(now())
                        break
                    req, want = self.request()
                    t0 = now()
                    try:
                        w.write(req)
                        await asyncio.wait_for(w.drain(), h.args.deadline)
                        reply = await asyncio.wait_for(reader_fn(r), h.args.deadline)
                    except asyncio.TimeoutError:
                        rec.add(t0, (now() - t0) * 1e3, UNANSWERED, pool)
                        rec.hung.append(t0)
                        break
                    except (asyncio.IncompleteReadError, ConnectionError, OSError,
                            asyncio.LimitOverrunError):
                        rec.add(t0, (now() - t0) * 1e3, CUT, pool)
                        break
                    except ValueError as e:
                        rec.add(t0, (now() - t0) * 1e3, WRONG, pool)
                        if len(rec.wrong_examples) < 5:
                            rec.wrong_examples.append(f"{want[0]} {want[1]!r}: {e}")
                        break
                    code = self.check(want, reply)
                    if code == WRONG and len(rec.wrong_examples) < 5:
                        rec.wrong_examples.append(f"{want[0]} {want[1]!r} -> {reply!r}"[:300])
                    rec.add(t0, (now() - t0) * 1e3, code, pool)
                    if code == WRONG:
                        break
                    # At least 1 ms between requests: a close the proxy sends right after a reply
                    # (draining) reaches the client before it sends again. With no pause at all
                    # the next request races the close, which no RESP/memcached server can avoid.
                    await asyncio.sleep(self.rnd.uniform(0.001, 2 * h.args.pace - 0.001))
            finally:
                w.close()


# ---------------------------------------------------------------------------------------------
# Processes


class Server:
    def __init__(self, h, kind, name):
        self.h, self.kind, self.name = h, kind, name
        self.port = free_port()
        self.proc = None
        self.stopped = False

    def argv(self):
        if self.kind == REDIS:
            return ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
                    "--loglevel", "warning", "--dir", self.h.tmp]
        argv = ["memcached", "-l", "127.0.0.1", "-p", str(self.port), "-U", "0", "-m", "64",
                "-t", "1"]
        if os.geteuid() == 0:
            argv += ["-u", "root"]
        return argv

    async def start(self):
        log = open(os.path.join(self.h.tmp, f"{self.name}.log"), "ab")
        self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent)
        log.close()
        await wait_port(self.port, 5, self.proc)
        # The port answering is not enough: it must be this server that answers there.
        ask = (b"*1\r\n$4\r\nPING\r\n", b"+PONG") if self.kind == REDIS else (b"version\r\n",
                                                                               b"VERSION ")
        if self.proc.poll() is not None or not expect_reply(self.port, *ask):
            raise RuntimeError(f"{self.name}: {self.argv()[0]} on port {self.port} is not "
                               f"answering as itself (exit {self.proc.poll()}; see "
                               f"{self.name}.log)")

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        self.stopped = True

    def cont(self):
        os.kill(self.proc.pid, signal.SIGCONT)
        self.stopped = False

    def entry(self):
        return f"127.0.0.1:{self.port}:1 {self.name}"


async def wait_port(port, limit, proc=None):
    end = now() + limit
    while now() < end:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process {proc.args[0]} exited with {proc.returncode}")
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        except OSError:
            await asyncio.sleep(0.02)
    raise RuntimeError(f"port {port} not listening after {limit} s")


class Proxy:
    def __init__(self, h, extra):
        self.h = h
        self.extra = extra
        self.proc = None

    async def start(self):
        h = self.h
        log = open(os.path.join(h.tmp, "proxy.log"), "ab")
        argv = [h.args.proxy, "-c", h.config_path] + self.extra
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                     preexec_fn=_die_with_parent)
        log.close()

    async def wait_ready(self):
        await wait_port(self.h.admin_port, 10, self.proc)
        await wait_port(self.h.redis_port, 10, self.proc)
        await wait_port(self.h.mc_port, 10, self.proc)

    async def wait_exit(self, limit):
        end = now() + limit
        while now() < end:
            if self.proc.poll() is not None:
                return self.proc.returncode
            await asyncio.sleep(0.02)
        return None

    @property
    def pid(self):
        return self.proc.pid


# ---------------------------------------------------------------------------------------------
# Admin port


async def http(port, method, path, timeout=2.0):
    """(status code, body) or raises."""

    async def go():
        r, w = await asyncio.open_connection("127.0.0.1", port)
        try:
            w.write(f"{method} {path} HTTP/1.1\r\nHost: soak\r\nContent-Length: 0\r\n\r\n"
                    .encode())
            data = await r.read()
        finally:
            w.close()
        head, _, body = data.partition(b"\r\n\r\n")
        return int(head.split(b" ", 2)[1]), body

    return await asyncio.wait_for(go(), timeout)


async def status(h):
    try:
        code, body = await http(h.admin_port, "GET", "/status")
        if code == 200:
            return json.loads(body)
    except (OSError, asyncio.TimeoutError, ValueError, IndexError):
        pass
    return None


def server_up(st, name):
    for p in st["pools"]:
        for s in p["servers"]:
            if s["name"] == name:
                return s["up"]
    return None


async def poll_status(h):
    """Every up/down change of every server, as (time, name, up), for the whole run."""
    last = {}
    while not h.stopping:
        st = await status(h)
        if st is not None:
            t = now()
            for p in st["pools"]:
                for s in p["servers"]:
                    if last.get(s["name"]) != s["up"]:
                        last[s["name"]] = s["up"]
                        h.timeline.append((t, s["name"], s["up"]))
        await asyncio.sleep(0.02)


def first_change(h, name, up, after):
    for t, n, u in h.timeline:
        if t >= after and n == name and u == up:
            return t
    return None


async def wait_status(h, pred, limit, step=0.02):
    """Time at which /status first satisfies pred, or None."""
    end = now() + limit
    while now() < end:
        st = await status(h)
        if st is not None and pred(st):
            return now()
        await asyncio.sleep(step)
    return None


# ---------------------------------------------------------------------------------------------
# The harness


class Harness:
    def __init__(self, args):
        self.args = args
        self.rec = Recorder()
        self.stopping = False
        self.rows = []
        self.failures = []
        self.tmp = tempfile.mkdtemp(prefix="chash-soak-")
        self.config_path = os.path.join(self.tmp, "proxy.yml")
        self.handover_path = os.path.join(self.tmp, "handover.sock")
        self.redis = [Server(self, REDIS, f"r{i}") for i in range(1, 4)]
        self.mc = [Server(self, MEMCACHE, f"m{i}") for i in range(1, 4)]
        self.extra_redis = Server(self, REDIS, "r4")
        self.redis_port = free_port()
        self.mc_port = free_port()
        self.admin_port = free_port()
        self.stats_port = None
        self.proxy = None
        self.help = ""
        self.rss_baseline = None
        self.rss_peak = 0
        self.timeline = []

    # -- config -------------------------------------------------------------------------------

    def write_config(self, redis_servers):
        a = self.args

        def pool(name, port, redis, servers):
            lines = [f"{name}:", f"  listen: 127.0.0.1:{port}", f"  redis: {str(redis).lower()}",
                     "  hash: fnv1a_64", "  distribution: ketama", f"  timeout: {a.timeout}",
                     "  auto_eject_hosts: true", f"  server_failure_limit: {a.failure_limit}",
                     f"  server_retry_timeout: {a.retry}", "  servers:"]
            lines += [f"    - {s.entry()}" for s in servers]
            return lines

        lines = pool("rpool", self.redis_port, True, redis_servers)
        lines += pool("mpool", self.mc_port, False, self.mc)
        lines += ["chash_proxy:", f"  workers: {a.workers}", f"  admin: 127.0.0.1:{self.admin_port}",
                  f"  drain_timeout: {a.drain_timeout}"]
        tmp = self.config_path + ".new"
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, self.config_path)

    # -- measuring ----------------------------------------------------------------------------

    def rss(self):
        if self.proxy is None:
            return None
        v = rss_kib(self.proxy.pid)
        if v is not None:
            self.rss_peak = max(self.rss_peak, v)
        return v

    def fail(self, msg):
        self.failures.append(msg)

    def row(self, name, t_before, t0, t1, t_after, rss0, rss1, hung=0, eject=None, recover=None,
            note="", lost=None, refused=None):
        rec = self.rec
        n, _ = rec.window(t_before, t_after)
        ok, failed, unanswered, wrong, cut = n[OK], n[FAILED] + n[CUT], n[UNANSWERED], n[WRONG], n[CUT]
        lat = [rec.window(t_before, t0)[1], rec.window(t0, t1)[1], rec.window(t1, t_after)[1]]
        if cut:
            note = f"{cut} of the failed cut by a close; " + note
        between = rec.count_between(rec.closed_between, t_before, t_after)
        if between:
            note += f"; {between} idle connections closed by the proxy between requests"
        load_hung = rec.count_between(rec.hung, t_before, t_after)
        r = dict(event=name, ok=ok, failed=failed, unanswered=unanswered, wrong=wrong,
                 hung=hung + load_hung, p99=[p99(x) for x in lat], eject=eject, recover=recover,
                 rss0=rss0, rss1=rss1, note=note, lost=lost, refused=refused,
                 seconds=t_after - t_before)
        self.rows.append(r)
        self.print_row(r)
        if unanswered:
            self.fail(f"{name}: {unanswered} requests unanswered")
        if r["hung"]:
            self.fail(f"{name}: {r['hung']} clients hung")
        if wrong:
            self.fail(f"{name}: {wrong} wrong replies: {rec.wrong_examples}")
        if ok == 0:
            self.fail(f"{name}: no request succeeded (is the load running?)")
        if lost:
            self.fail(f"{name}: {lost} requests lost")
        if refused:
            self.fail(f"{name}: {refused} connection attempts refused")
        return r

    @staticmethod
    def fmt_ms(v):
        return "-" if v is None else (f"{v:.1f}" if v < 100 else f"{v:.0f}")

    @staticmethod
    def fmt_s(v):
        return "-" if v is None else f"{v:.2f}"

    @staticmethod
    def fmt_mib(v):
        return "-" if v is None else f"{v / 1024:.1f}"

    HEADER = ("| event | ok | failed | unanswered | hung | p99 ms before / during / after "
              "| eject s | recover s | RSS MiB before → after | notes |\n"
              "|---|---:|---:|---:|---:|---|---:|---:|---|---|")

    def row_text(self, r):
        p = " / ".join(self.fmt_ms(x) for x in r["p99"])
        note = r["note"]
        if r["wrong"]:
            note = f"WRONG {r['wrong']}; " + note
        if r["lost"] is not None:
            note = f"lost {r['lost']}; " + note
        if r["refused"] is not None:
            note = f"refused connects {r['refused']}; " + note
        return (f"| {r['event']} | {r['ok']} | {r['failed']} | {r['unanswered']} | {r['hung']} "
                f"| {p} | {self.fmt_s(r['eject'])} | {self.fmt_s(r['recover'])} "
                f"| {self.fmt_mib(r['rss0'])} → {self.fmt_mib(r['rss1'])} | {note.strip('; ')} |")

    def print_row(self, r):
        print(f"soak: {self.row_text(r)}", flush=True)

    def not_available(self, name, why):
        print(f"soak: | {name} | not available: {why} |", flush=True)
        self.rows.append(dict(event=name, na=why))

    # -- lifecycle ----------------------------------------------------------------------------

    async def setup(self):
        a = self.args
        if not os.access(a.proxy, os.X_OK):
            raise RuntimeError(f"{a.proxy}: not an executable")
        for tool in ("redis-server", "memcached"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} is not installed")
        self.help = subprocess.run([a.proxy, "--help"], capture_output=True, text=True,
                                   timeout=10).stdout
        for s in self.redis + self.mc:
            await s.start()
        self.write_config(self.redis)
        extra = []
        if "--stats-port" in self.help:
            # nutcracker's stats port (default 0.0.0.0:22222): on loopback, on a free port.
            self.stats_port = free_port()
            extra += ["-s", str(self.stats_port), "-a", "127.0.0.1"]
        if "--takeover" in self.help:
            extra += ["--handover-socket", self.handover_path]
        self.proxy_extra = extra
        self.proxy = Proxy(self, extra)
        await self.proxy.start()
        await self.proxy.wait_ready()

    def cleanup(self):
        for s in self.redis + self.mc + [self.extra_redis]:
            if s.proc is not None and s.proc.poll() is None:
                if s.stopped:
                    os.kill(s.proc.pid, signal.SIGCONT)
                s.proc.kill()
                s.proc.wait()
        for p in getattr(self, "all_proxies", []) + [self.proxy]:
            if p is not None and p.proc is not None and p.proc.poll() is None:
                p.proc.kill()
                p.proc.wait()

    def log_tail(self, n=30):
        try:
            with open(os.path.join(self.tmp, "proxy.log"), "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    # -- events -------------------------------------------------------------------------------

    async def windowed(self, name, action, **kw):
        """Before window, the action (its duration is 'during'), after window; one row."""
        W = self.args.window
        rss0 = self.rss()
        t_before = now()
        await asyncio.sleep(W)
        t0 = now()
        extra = await action() or {}
        t1 = now()
        await asyncio.sleep(W)
        t_after = now()
        rss1 = self.rss()
        return self.row(name, t_before, t0, t1, t_after, rss0, rss1, **extra, **kw)

    async def ev_steady(self):
        await asyncio.sleep(self.args.window)

    def up_down(self, server, t_fault, t_heal):
        """Eject time (fault → /status down) and recover time (heal → /status up again)."""
        t_down = first_change(self, server.name, False, t_fault)
        flaps = sum(1 for t, n, u in self.timeline if n == server.name and u and
                    t_fault <= t < t_heal)
        note = ""
        if t_down is None:
            return dict(note=f"{server.name} never ejected; ")
        if t_down > t_heal:
            note = f"{server.name} ejected only after the fault ended; "
        if flaps:
            note += f"{server.name} shown up {flaps}x while still faulty; "
        t_up = first_change(self, server.name, True, max(t_down, t_heal))
        if t_up is None:
            self.fail(f"{server.name}: not back up")
        return dict(eject=t_down - t_fault, recover=None if t_up is None else t_up - t_heal,
                    note=note)

    def is_up(self, name):
        for t, n, u in reversed(self.timeline):
            if n == name:
                return u
        return None

    async def wait_up(self, server, after):
        end = now() + self.args.retry / 1e3 + 10
        await asyncio.sleep(0.1)  # the poller's next round
        while now() < end and not self.is_up(server.name):
            await asyncio.sleep(0.02)

    async def kill_restart(self, server):
        t_kill = now()
        server.kill()
        await asyncio.sleep(self.args.downtime)
        await server.start()
        t_restart = now()
        await self.wait_up(server, t_restart)
        r = self.up_down(server, t_kill, t_restart)
        r["note"] += f"down {t_restart - t_kill:.1f} s"
        return r

    async def ev_sigstop(self):
        server = self.redis[1]
        hold = self.args.timeout / 1e3 * 2.5
        t_stop = now()
        server.stop()
        await asyncio.sleep(hold)
        server.cont()
        t_cont = now()
        await self.wait_up(server, t_cont)
        r = self.up_down(server, t_stop, t_cont)
        r["note"] += f"{server.name} stopped {hold:.2f} s (timeout {self.args.timeout} ms)"
        return r

    async def ev_hang(self):
        # Not a proxy fault: proves the harness sees unanswered requests and hung clients.
        os.kill(self.proxy.pid, signal.SIGSTOP)
        await asyncio.sleep(self.args.deadline + 1)
        os.kill(self.proxy.pid, signal.SIGCONT)

    async def ev_reloads(self):
        a = self.args
        before = await status(self)
        v0 = before["version"]
        n_hup = a.reloads
        for _ in range(n_hup):
            os.kill(self.proxy.pid, signal.SIGHUP)
            await asyncio.sleep(0.1)
        posts_ok = 0
        for _ in range(max(2, n_hup // 2)):
            code, _ = await http(self.admin_port, "POST", "/reload")
            posts_ok += code == 200
            await asyncio.sleep(0.1)
        # One reload adds a server (r4), one removes it again.
        if self.extra_redis.proc is None or self.extra_redis.proc.poll() is not None:
            await self.extra_redis.start()
        self.write_config(self.redis + [self.extra_redis])
        t = now()
        os.kill(self.proxy.pid, signal.SIGHUP)
        t_add = await wait_status(self, lambda st: any(
            s["name"] == "r4" for p in st["pools"] for s in p["servers"])
            and st["applied_version"] == st["version"], 10)
        await asyncio.sleep(a.window / 2)
        self.write_config(self.redis)
        t2 = now()
        code, _ = await http(self.admin_port, "POST", "/reload")
        posts_ok += code == 200
        # Removed from the routing: gone, or kept as "retired" for the warm-up window (its
        # keys are read through from it until the window ends; see docs/FAILURES.md).
        t_rm = await wait_status(self, lambda st: not any(
            s["name"] == "r4" and s.get("role") != "retired"
            for p in st["pools"] for s in p["servers"])
            and st["applied_version"] == st["version"], 10)
        after = await status(self)
        if t_add is None or t_rm is None:
            self.fail("reload: adding or removing r4 was not applied within 10 s")
        note = (f"{n_hup} SIGHUP + {posts_ok} POST /reload ok; version {v0}→{after['version']}; "
                f"+r4 applied in {self.fmt_s(None if t_add is None else t_add - t)} s, "
                f"-r4 in {self.fmt_s(None if t_rm is None else t_rm - t2)} s")
        return dict(note=note)

    async def ev_idle_slow(self):
        a = self.args
        hung = 0
        closed = 0
        idle = []
        for i in range(a.idle):
            port = self.redis_port if i % 2 == 0 else self.mc_port
            try:
                idle.append((port, *(await asyncio.open_connection("127.0.0.1", port))))
            except OSError:
                closed += 1

        async def slow(i):
            port = self.redis_port if i % 2 == 0 else self.mc_port
            k = b"slow:%d" % i
            if port == self.redis_port:
                req, reader = resp_cmd(b"SET", k, k + b"|x"), read_resp
            else:
                req, reader = b"set %s 0 0 %d\r\n%s|x\r\n" % (k, len(k) + 2, k), read_mc
            r, w = await asyncio.open_connection("127.0.0.1", port)
            try:
                for b in req:
                    w.write(bytes([b]))
                    await asyncio.sleep(a.trickle)
                reply = await asyncio.wait_for(reader(r), a.deadline)
                return "ok" if reply[0] != "error" else "error"
            except asyncio.TimeoutError:
                return "hung"
            except (OSError, asyncio.IncompleteReadError):
                return "closed"
            finally:
                w.close()

        results = await asyncio.gather(*(slow(i) for i in range(a.slow)))
        hung += results.count("hung")
        # The idle ones must still be served.
        idle_ok = 0

        async def poke(port, r, w):
            try:
                if port == self.redis_port:
                    w.write(resp_cmd(b"PING"))
                    rep = await asyncio.wait_for(read_resp(r), a.deadline)
                else:
                    w.write(b"version\r\n")
                    rep = await asyncio.wait_for(read_mc(r), a.deadline)
                return "ok" if rep[0] != "error" else "error"
            except asyncio.TimeoutError:
                return "hung"
            except (OSError, asyncio.IncompleteReadError):
                return "closed"
            finally:
                w.close()

        pokes = await asyncio.gather(*(poke(*c) for c in idle))
        idle_ok = pokes.count("ok")
        hung += pokes.count("hung")
        closed += pokes.count("closed")
        if results.count("ok") != a.slow:
            self.fail(f"slow clients: {results}")
        note = (f"{a.idle} idle clients ({idle_ok} served after idling, {closed} closed); "
                f"{a.slow} slow clients at {a.trickle * 1e3:.0f} ms/byte: "
                f"{results.count('ok')} answered")
        return dict(hung=hung, note=note)

    async def ev_slow_admin(self):
        a = self.args
        request = b"GET /metrics HTTP/1.1\r\nHost: soak\r\n\r\n"

        async def trickler():
            r, w = await asyncio.open_connection("127.0.0.1", self.admin_port)
            t = now()
            try:
                for b in request:
                    w.write(bytes([b]))
                    await w.drain()
                    try:
                        data = await asyncio.wait_for(r.read(4096), 0.5)
                        # Answered or closed: either is a verdict, not a hang.
                        return ("closed" if not data else "answered", now() - t)
                    except asyncio.TimeoutError:
                        pass
                    if now() - t > a.deadline + 5:
                        return ("hung", now() - t)
                data = await asyncio.wait_for(r.read(), a.deadline)
                return ("answered", now() - t)
            except asyncio.TimeoutError:
                return ("hung", now() - t)
            except OSError:
                return ("closed", now() - t)
            finally:
                w.close()

        async def silent(port):
            r, w = await asyncio.open_connection("127.0.0.1", port)
            t = now()
            try:
                await asyncio.wait_for(r.read(), a.deadline + 5)
                return ("closed", now() - t)
            except asyncio.TimeoutError:
                return ("hung", now() - t)
            except OSError:
                return ("closed", now() - t)
            finally:
                w.close()

        clients = [asyncio.ensure_future(trickler()) for _ in range(a.slow_admin)]
        clients += [asyncio.ensure_future(silent(self.admin_port)) for _ in range(a.slow_admin)]
        if self.stats_port is not None:
            # Stats consumers that connect and never read: the document waits in the socket.
            clients += [asyncio.ensure_future(silent(self.stats_port))
                        for _ in range(a.slow_admin)]
        await asyncio.sleep(0.3)
        polls, worst, bad, stats_polls, stats_bad = 0, 0.0, 0, 0, 0
        v0 = (await status(self) or {}).get("version")
        os.kill(self.proxy.pid, signal.SIGHUP)
        t_hup = now()
        t_reloaded = None
        while not all(c.done() for c in clients):
            t = now()
            try:
                code, body = await http(self.admin_port, "GET", "/metrics", timeout=a.deadline)
                if code != 200 or b"chash_proxy_requests_total" not in body:
                    bad += 1
            except (OSError, asyncio.TimeoutError, ValueError, IndexError):
                bad += 1
            polls += 1
            if self.stats_port is not None:
                # nutcracker's stats port: one JSON document per connection, then a close.
                try:
                    sr, sw = await asyncio.open_connection("127.0.0.1", self.stats_port)
                    try:
                        doc = await asyncio.wait_for(sr.read(), a.deadline)
                    finally:
                        sw.close()
                    if "rpool" not in json.loads(doc):
                        stats_bad += 1
                except (OSError, asyncio.TimeoutError, ValueError):
                    stats_bad += 1
                stats_polls += 1
            worst = max(worst, now() - t)
            if t_reloaded is None:
                st = await status(self)
                if st and v0 is not None and st["version"] > v0:
                    t_reloaded = now() - t_hup
            await asyncio.sleep(0.2)
        verdicts = [c.result() for c in clients]
        hung = sum(1 for v, _ in verdicts if v == "hung")
        longest = max(t for _, t in verdicts)
        if bad:
            self.fail(f"slow admin: {bad} of {polls} /metrics polls failed")
        if stats_bad:
            self.fail(f"slow admin: {stats_bad} of {stats_polls} stats port reads failed")
        if t_reloaded is None:
            self.fail("slow admin: SIGHUP reload not seen while admin clients stalled")
        stats_silent = f" + {a.slow_admin} stats" if self.stats_port is not None else ""
        note = (f"{a.slow_admin} trickling + {a.slow_admin} silent admin{stats_silent} clients, "
                f"closed after "
                f"≤{longest:.1f} s; {polls} /metrics polls, {bad} failed, slowest "
                f"{worst * 1e3:.0f} ms"
                + (f"; {stats_polls} stats port reads, {stats_bad} failed" if stats_polls else "")
                + f"; SIGHUP applied in {self.fmt_s(t_reloaded)} s")
        return dict(hung=hung, note=note)

    async def ev_malformed(self):
        a = self.args
        rnd = random.Random(7)
        redis_junk = [
            ("resp-bad-count", b"*abc\r\n"),
            ("resp-10GB-bulk", b"*1\r\n$10737418240\r\n"),
            ("resp-negative-bulk", b"*2\r\n$3\r\nGET\r\n$-5\r\n"),
            ("resp-huge-count", b"*99999999999\r\n"),
            ("resp-bulk-outside-array", b"$5\r\nhello\r\n"),
            ("resp-40-digit-bulk", b"*1\r\n" + b"$" + b"9" * 40 + b"\r\n"),
        ]
        mc_junk = [
            ("mc-binary-protocol", b"\x80\x00\x00\x05" + bytes(rnd.randrange(256)
                                                               for _ in range(40))),
            ("mc-300-byte-key", b"get " + b"k" * 300 + b"\r\n"),
            ("mc-negative-length", b"set k 0 0 -1\r\nxx\r\n"),
            ("mc-2^32-length", b"set k 0 0 4294967296\r\n"),
            ("mc-3000-bytes-no-newline", b"x" * 3000),
            ("mc-unknown-command", b"bogus command line\r\n"),
        ]
        outcomes = {"answered": 0, "closed": 0, "hung": 0}
        closed_kinds = {}
        hung_kinds = {}

        async def send(port, label, junk):
            r, w = await asyncio.open_connection("127.0.0.1", port)
            try:
                w.write(junk)
                await w.drain()
                data = await asyncio.wait_for(r.read(65536), a.deadline)
                verdict = "answered" if data else "closed"
            except asyncio.TimeoutError:
                verdict = "hung"
            except OSError:
                verdict = "closed"
            finally:
                w.close()
            outcomes[verdict] += 1
            if verdict != "answered":
                kinds = closed_kinds if verdict == "closed" else hung_kinds
                kinds[label] = kinds.get(label, 0) + 1

        n = 0
        for round_ in range(a.malformed_rounds):
            jobs = [send(self.redis_port, *j) for j in redis_junk]
            jobs += [send(self.mc_port, *j) for j in mc_junk]
            # Random binary ending in a newline, on both ports.
            for port, label in ((self.redis_port, "resp-random"), (self.mc_port, "mc-random")):
                jobs.append(send(port, label, bytes(rnd.randrange(256) for _ in range(
                    rnd.randrange(1, 200))) + b"\r\n"))
            n += len(jobs)
            await asyncio.gather(*jobs)
        detail = lambda d: ", ".join(f"{k} {v}" for k, v in sorted(d.items()))
        note = (f"{n} malformed connections: {outcomes['answered']} answered, "
                f"{outcomes['closed']} closed without a reply ({detail(closed_kinds)})")
        if hung_kinds:
            note += f"; hung: {detail(hung_kinds)}"
        return dict(hung=outcomes["hung"], note=note)

    async def ev_handover(self):
        a = self.args
        old = self.proxy
        churn = {"ok": 0, "refused": 0, "failed": 0}
        done = False

        async def churner(port, req, reader):
            while not done:
                try:
                    r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port),
                                                  a.deadline)
                except ConnectionRefusedError:
                    churn["refused"] += 1
                    await asyncio.sleep(0.01)
                    continue
                except (OSError, asyncio.TimeoutError):
                    churn["failed"] += 1
                    continue
                try:
                    w.write(req)
                    await asyncio.wait_for(reader(r), a.deadline)
                    churn["ok"] += 1
                except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError):
                    churn["failed"] += 1
                finally:
                    w.close()
                await asyncio.sleep(0.005)

        # A backend down across the hand-over (m3 killed and ejected before, restarted after):
        # the new process starts with it out (proxy/control/handover_state.h). Without that its
        # first requests for m3's keys failed until it ejected m3 anew (one CI run lost 2).
        gone = self.mc[2]
        gone.kill()
        if await wait_status(self, lambda st: server_up(st, gone.name) is False, 10) is None:
            self.fail(f"handover: {gone.name} killed but never shown down")
        tasks = [asyncio.ensure_future(churner(self.redis_port, resp_cmd(b"PING"), read_resp)),
                 asyncio.ensure_future(churner(self.mc_port, b"version\r\n", read_mc))]
        t_start = now()
        refused0 = len(self.rec.refused)
        # Requests in flight in the old process while it hands over: r3 paused for a moment.
        server = self.redis[2]
        server.stop()
        new = Proxy(self, self.proxy_extra + ["--takeover"])
        self.all_proxies.append(new)
        await new.start()
        await asyncio.sleep(0.3)
        server.cont()
        rc = await old.wait_exit(a.drain_timeout / 1e3 + 10)
        t_old_gone = now()
        if new.proc.poll() is None:
            self.proxy = new
        else:
            self.fail(f"handover: the new process exited with {new.proc.returncode}")
        await asyncio.sleep(a.window / 2)
        await gone.start()
        t_back = now()
        await self.wait_up(gone, t_back)
        back = first_change(self, gone.name, True, t_back)
        if back is None:
            self.fail(f"handover: {gone.name} restarted but the new process never let it back")
        done = True
        await asyncio.gather(*tasks)
        if rc is None:
            self.fail("handover: the old process did not exit")
        elif rc != 0:
            self.fail(f"handover: the old process exited with {rc}")
        refused = churn["refused"] + len(self.rec.refused) - refused0
        lost, at_deadline, sent = self.losses(t_start, t_start, None if rc is None else t_old_gone)
        note = (f"old pid {old.pid} exited {rc} {t_old_gone - t_start:.2f} s after the new one "
                f"started (drain_timeout {a.drain_timeout} ms); {sent} requests sent meanwhile, "
                f"{at_deadline} cut as the old one closed its last busy clients at drain_timeout; "
                f"{churn['ok']} connect-ask-close cycles ok, {churn['failed']} failed; "
                f"{gone.name} down across it, back in the new process "
                f"{'-' if back is None else f'{back - t_back:.2f} s'} after its restart; "
                f"RSS: old before, new after")
        if churn["failed"]:
            self.fail(f"handover: {churn['failed']} connect-ask-close cycles failed")
        return dict(note=note, refused=refused, lost=lost)

    def losses(self, t_from, t_drain, t_exit):
        """Requests sent from t_from on, by fate: (lost, cut at the drain deadline, sent in all).

        The old process drains from t_drain; when it was still running at drain_timeout it closes
        the clients left, and a request in flight on one of them at that moment is cut. Those are
        the cost of the configured bound, told apart; every other request that was not answered
        ok is lost."""
        rec = self.rec
        deadline = t_drain + self.args.drain_timeout / 1e3
        deadline_hit = t_exit is not None and t_exit >= deadline - 0.05
        lost = at_deadline = sent = 0
        for i in range(len(rec.t)):
            if rec.t[i] < t_from:
                continue
            sent += 1
            c = rec.code[i]
            if c == OK:
                continue
            end = rec.t[i] + rec.lat[i] / 1e3
            if c == CUT and deadline_hit and t_exit - 0.25 <= end <= t_exit + 0.05:
                at_deadline += 1
            else:
                lost += 1
        return lost, at_deadline, sent

    async def ev_drain(self):
        a = self.args
        # Hold one redis backend for a moment so requests are in flight when SIGTERM arrives.
        server = self.redis[2]
        server.stop()
        await asyncio.sleep(min(0.3, a.timeout / 1e3 / 3))
        t_term = now()
        os.kill(self.proxy.pid, signal.SIGTERM)
        await asyncio.sleep(0.1)
        server.cont()
        rc = await self.proxy.wait_exit(a.drain_timeout / 1e3 + 10)
        t_exit = now()
        if rc is None:
            self.fail("drain: the proxy did not exit")
        elif rc != 0:
            self.fail(f"drain: the proxy exited with {rc}")
        rec = self.rec
        in_flight = lost = 0
        for i in range(len(rec.t)):
            if rec.t[i] < t_term <= rec.t[i] + rec.lat[i] / 1e3:
                in_flight += 1
                lost += rec.code[i] != OK
        lost_after, at_deadline, sent_after = self.losses(t_term, t_term,
                                                          None if rc is None else t_exit)
        refused_after = self.rec.count_between(self.rec.refused, t_term, now())
        self.stopping = True
        return dict(lost=lost + lost_after, note=(
            f"{in_flight} requests in flight at SIGTERM ({server.name} paused), {lost} of them "
            f"lost; {sent_after} sent after it, {at_deadline} cut as the proxy closed its last "
            f"busy clients at drain_timeout; {refused_after} connects refused after it; exit {rc} "
            f"after {t_exit - t_term:.2f} s (drain_timeout {a.drain_timeout} ms)"))

    # -- main ---------------------------------------------------------------------------------

    async def run(self):
        a = self.args
        self.all_proxies = []
        await self.setup()
        poller = asyncio.ensure_future(poll_status(self))
        print(f"soak: chash-proxy {a.proxy} pid {self.proxy.pid}; redis pool :{self.redis_port} "
              f"memcached pool :{self.mc_port} admin :{self.admin_port}; {a.clients} clients per "
              f"pool; window {a.window} s; tmp {self.tmp}", flush=True)
        load = []
        for i in range(a.clients):
            for kind, port in ((REDIS, lambda: self.redis_port), (MEMCACHE, lambda: self.mc_port)):
                c = LoadClient(self, kind, port, random.Random(i * 2 + kind))
                load.append(asyncio.ensure_future(c.run()))
        await asyncio.sleep(a.window)  # warm-up: connections, allocator arenas
        self.rss_baseline = self.rss()
        print(self.HEADER.replace("\n", "\nsoak: ").join(["soak: ", ""]), flush=True)

        await self.windowed("steady load", self.ev_steady)
        if a.inject_hang:
            await self.windowed("self-check: proxy SIGSTOPped past the deadline", self.ev_hang)
        if self.rows[-1]["failed"]:
            self.fail(f"steady load: {self.rows[-1]['failed']} requests failed with no fault")
        skip = set(a.skip.split(","))
        events = [
            ("kill", f"kill -9 redis {self.redis[0].name}, restart",
             lambda: self.kill_restart(self.redis[0])),
            ("kill", f"kill -9 memcached {self.mc[0].name}, restart",
             lambda: self.kill_restart(self.mc[0])),
            ("sigstop", f"SIGSTOP redis {self.redis[1].name} past timeout, SIGCONT",
             self.ev_sigstop),
            ("reload", "reloads (SIGHUP, POST /reload, +server, -server)", self.ev_reloads),
            ("idle", f"{a.idle} idle + {a.slow} slow clients", self.ev_idle_slow),
            ("admin", "slow and silent admin clients", self.ev_slow_admin),
            ("malformed", "malformed input", self.ev_malformed),
        ]
        for key, name, action in events:
            if key not in skip:
                await self.windowed(name, action)
        rss_end = self.rss()
        if "handover" in skip:
            pass
        elif "--takeover" in self.help:
            await self.windowed("binary hand-over under load", self.ev_handover)
        else:
            self.not_available("binary hand-over under load",
                               "chash-proxy --help has no --takeover")
        if "drain" in skip:
            pass
        elif "--takeover" in self.help or a.force_drain:
            # The last event: the proxy exits.
            W = a.window
            rss0 = self.rss()
            t_before = now()
            await asyncio.sleep(W)
            t0 = now()
            extra = await self.ev_drain()
            t1 = now()
            self.row("SIGTERM with drain", t_before, t0, t1, t1, rss0, None, **extra)
        else:
            self.not_available("SIGTERM with drain", "chash-proxy --help has no --takeover")
        self.stopping = True
        await asyncio.gather(*load, poller)

        growth = None if rss_end is None or self.rss_baseline is None else (
            rss_end - self.rss_baseline) / 1024
        print(f"soak: proxy RSS after warm-up {self.fmt_mib(self.rss_baseline)} MiB, after the "
              f"fault events {self.fmt_mib(rss_end)} MiB (growth {growth:.1f} MiB, bound "
              f"{a.rss_bound_mib} MiB), peak {self.fmt_mib(self.rss_peak)} MiB", flush=True)
        if growth is not None and growth > a.rss_bound_mib:
            self.fail(f"RSS grew {growth:.1f} MiB > {a.rss_bound_mib} MiB")
        total = len(self.rec.t)
        print(f"soak: {total} load requests in all; refused connects "
              f"{len(self.rec.refused)}, other connect errors {len(self.rec.connect_errors)}",
              flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--proxy", default=os.environ.get("CHASH_PROXY"),
                   help="chash-proxy binary (default: $CHASH_PROXY)")
    p.add_argument("--short", action="store_true", help="the short form (< 60 s) for make test")
    p.add_argument("--markdown", help="also write the table to this file")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (configs, server logs)")
    p.add_argument("--clients", type=int, help="load clients per pool")
    p.add_argument("--window", type=float, help="seconds before and after each event")
    p.add_argument("--pace", type=float, help="mean pause between a client's requests, s")
    p.add_argument("--deadline", type=float, default=5.0,
                   help="no reply within this many seconds = unanswered / hung")
    p.add_argument("--timeout", type=int, default=500, help="pool timeout, ms")
    p.add_argument("--retry", type=int, default=500, help="server_retry_timeout, ms")
    p.add_argument("--failure-limit", type=int, default=2, help="server_failure_limit")
    p.add_argument("--drain-timeout", type=int, default=3000, help="chash_proxy.drain_timeout, ms")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--keys", type=int, default=10000)
    p.add_argument("--downtime", type=float, help="seconds a killed backend stays down")
    p.add_argument("--reloads", type=int, help="SIGHUPs in the reload event")
    p.add_argument("--idle", type=int, help="idle clients")
    p.add_argument("--slow", type=int, help="slow (trickling) clients")
    p.add_argument("--trickle", type=float, help="seconds between a slow client's bytes")
    p.add_argument("--slow-admin", type=int, help="trickling (and as many silent) admin clients")
    p.add_argument("--malformed-rounds", type=int)
    p.add_argument("--rss-bound-mib", type=float, help="allowed RSS growth over the run")
    p.add_argument("--time-limit", type=float, help="hard limit for the whole run, s")
    p.add_argument("--force-drain", action="store_true",
                   help="run the SIGTERM-with-drain event even when --help has no --takeover")
    p.add_argument("--skip", default="",
                   help="comma-separated events to skip: kill,sigstop,reload,idle,admin,malformed,"
                   "handover,drain")
    p.add_argument("--inject-hang", action="store_true",
                   help="self-check: SIGSTOP the proxy past the deadline once (must then fail)")
    a = p.parse_args(argv)
    short = dict(clients=4, window=1.0, pace=0.01, downtime=1.25, reloads=6, idle=100, slow=10,
                 trickle=0.02, slow_admin=3, malformed_rounds=5, rss_bound_mib=48,
                 time_limit=100)
    full = dict(clients=12, window=10.0, pace=0.005, downtime=5.25, reloads=30, idle=300, slow=40,
                trickle=0.05, slow_admin=8, malformed_rounds=100, rss_bound_mib=64,
                time_limit=600)
    for k, v in (short if a.short else full).items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if not a.proxy:
        p.error("--proxy or $CHASH_PROXY is required")
    return a


def main(argv):
    args = parse_args(argv)
    h = Harness(args)
    rc = 0
    t_start = now()
    try:
        asyncio.run(asyncio.wait_for(h.run(), args.time_limit))
    except asyncio.TimeoutError:
        h.fail(f"the run did not finish within {args.time_limit} s")
    except RuntimeError as e:
        print(f"soak: setup error: {e}", file=sys.stderr)
        print(h.log_tail(), file=sys.stderr)
        rc = 2
    finally:
        h.cleanup()
    rows = [r for r in h.rows]
    table = [Harness.HEADER]
    for r in rows:
        if "na" in r:
            table.append(f"| {r['event']} | not available: {r['na']} | | | | | | | | |")
        else:
            table.append(h.row_text(r))
    print("\n" + "\n".join(table))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(table) + "\n")
    print(f"\nsoak: {now() - t_start:.0f} s", end="")
    if h.failures:
        print(f"; FAILED ({len(h.failures)}):")
        for f in h.failures:
            print(f"  - {f}")
        print("--- proxy log (tail) ---\n" + h.log_tail())
        rc = rc or 1
    elif rc == 0:
        print("; every assertion holds (0 unanswered, 0 hung, 0 wrong, RSS bounded)")
    if args.keep:
        print(f"soak: logs kept in {h.tmp}")
    else:
        shutil.rmtree(h.tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
