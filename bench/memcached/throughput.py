# SPDX-License-Identifier: Apache-2.0
"""The throughput part of make bench-memcached (bench/memcached/run.py --part throughput):
requests/s and CPU per request of chash-proxy's text, meta and binary protocols next to
nutcracker (text) and memcached itself, side by side in one run, all on 127.0.0.1.

Systems, each in front of its own memcached (-m 64 -t 1) on free loopback ports, so that no
system's keys or memory sit in another's servers:
  direct memcached   text, one memcached, no proxy: the reference
  nutcracker         text; a twemproxy pool (distribution: ketama, hash: md5) of 3 memcached
  chash-proxy        text, meta (mg/ms) and binary (get/set packets): the same pool file, one
                     process per protocol (--tp-workers worker threads, 1 by default as
                     nutcracker's one thread), so each one's CPU is its own
nutcracker speaks neither the meta nor the binary protocol: those rows say n/a.

The load: --tp-keys keys (key:00042), --tp-value-bytes values, keys uniform (each backend of a
pool gets a third), --tp-set-ratio of the requests sets, the rest gets. --tp-conns connections
per system, each sending batches of --tp-depth pipelined requests and reading all their replies
before the next batch. Each connection owns the keys i with i % conns == its number, so it alone
writes them: a get must return the value this connection last set for the key (the values carry
key and version), or a miss before its first set. Every key is set once before the rounds (not
measured). Every reply is parsed and checked: a wrong value, a miss of a set key, a hit of
another key or a reply out of order (binary: opaque) is a mismatch; an error reply, a refused
set, a reply that does not parse or a connection lost is an error.

The machine is shared and noisy, so the systems take turns: rounds of --tp-round seconds,
round-robin (each cycle starting one system later), until each has had --tp-duration seconds.
A round sends batches until its time is up and then waits for the batches in flight. Per
system, over its own rounds only: requests, requests/s, the proxy's CPU (utime+stime of
/proc/PID/stat, all its threads) per request, its memcached servers' CPU per request, and the
client's CPU (this process) per second of round — near 1.0 the Python client, not the system,
set the pace.
"""

import json
import os
import random
import resource
import selectors
import socket
import struct
import subprocess
import time

CLK = os.sysconf("SC_CLK_TCK")
# A batch in flight longer than this is a hang (a proxy that stopped answering), not slowness:
# the connection is given up and its requests counted as errors.
STALL_SECONDS = 5.0

TEXT, META, BINARY = "text", "meta", "binary"
BIN_HDR = struct.Struct(">BBHBBHIIQ")  # magic opcode keylen extlen datatype status/vbucket bodylen opaque cas
BIN_GET, BIN_SET = 0x00, 0x01
UNKNOWN = object()  # a key whose last set failed: either value may be stored


class ProtocolError(Exception):
    """A reply that cannot be parsed: the connection's stream is lost from there on."""


def proc_cpu(pid):
    """utime + stime of a process (all its threads) in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def own_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Conn:
    """One pipelined client connection: generates batches, parses and checks their replies."""

    def __init__(self, system, number, port, a):
        self.sys, self.proto = system, system.proto
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.keys = list(range(number, a.tp_keys, a.tp_conns))
        # The same seed per connection number in every system: each sees the same request mix.
        self.rng = random.Random(a.seed * 1000 + number)
        self.depth, self.set_ratio, self.vbytes = a.tp_depth, a.tp_set_ratio, a.tp_value_bytes
        self.cur = {}  # key index -> the value last set by this connection (or UNKNOWN)
        self.version = {}
        self.items = []  # the batch in flight: (is_set, key index, expected value or None)
        self.k = 0  # replies of the batch parsed so far
        self.buf, self.pos = b"", 0
        self.opaque0 = 0
        self.sent_at = 0.0
        self.dead = False

    def value(self, i):
        v = self.version.get(i, 0) + 1
        self.version[i] = v
        head = b"key:%05d v%d " % (i, v)
        return head + b"." * (self.vbytes - len(head))

    def send_batch(self, preload=None):
        """Send the next batch: the given keys as sets (the preload), else the random mix."""
        items, out = [], []
        proto = self.proto
        rng = self.rng
        if preload is not None:
            picks = [(True, i) for i in preload]
        else:
            keys, n = self.keys, len(self.keys)
            picks = [(rng.random() < self.set_ratio, keys[int(rng.random() * n)])
                     for _ in range(self.depth)]
        opaque = self.opaque0
        for is_set, i in picks:
            key = b"key:%05d" % i
            if is_set:
                val = self.value(i)
                self.cur[i] = val
                items.append((True, i, val))
                if proto == TEXT:
                    out.append(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(val), val))
                elif proto == META:
                    out.append(b"ms %s %d\r\n%s\r\n" % (key, len(val), val))
                else:
                    out.append(BIN_HDR.pack(0x80, BIN_SET, len(key), 8, 0, 0,
                                            8 + len(key) + len(val), opaque, 0)
                               + b"\0\0\0\0\0\0\0\0" + key + val)  # extras: flags 0, exptime 0
            else:
                items.append((False, i, self.cur.get(i)))
                if proto == TEXT:
                    out.append(b"get %s\r\n" % key)
                elif proto == META:
                    out.append(b"mg %s v\r\n" % key)
                else:
                    out.append(BIN_HDR.pack(0x80, BIN_GET, len(key), 0, 0, 0, len(key), opaque, 0) + key)
            opaque = (opaque + 1) & 0xFFFFFFFF
        self.items, self.k = items, 0
        self.sent_at = time.monotonic()
        self.sock.sendall(b"".join(out))

    # The parsers read replies from self.buf at self.pos for self.items[self.k:], stop at the
    # first incomplete one, and count into self.sys.c. They return True once the batch is done.

    def check_get(self, i, expected, got):
        """got: the value bytes, or None for a miss."""
        c = self.sys.c
        if got is None:
            c["misses"] += 1
            if expected is not None and expected is not UNKNOWN:
                self.sys.mismatch(f"key:{i:05d}: miss, a value was set")
            return
        c["hits"] += 1
        if expected is UNKNOWN:
            return
        if got != expected:
            self.sys.mismatch(f"key:{i:05d}: got {got[:24]!r}, expected {(expected or b'a miss')[:24]!r}")

    def set_failed(self, i, why):
        self.cur[i] = UNKNOWN
        self.sys.error(f"key:{i:05d}: set answered {why!r}")

    def parse_text(self):
        b, p, items, k = self.buf, self.pos, self.items, self.k
        n = len(items)
        try:
            while k < n:
                e = b.find(b"\r\n", p)
                if e < 0:
                    break
                is_set, i, expected = items[k]
                if is_set:
                    if b[p:e] != b"STORED":
                        self.set_failed(i, b[p:e])
                    p = e + 2
                elif b.startswith(b"VALUE ", p):
                    parts = b[p + 6:e].split(b" ")
                    if len(parts) != 3:
                        raise ProtocolError(f"bad VALUE line {b[p:e][:60]!r}")
                    end = e + 2 + int(parts[2])
                    if len(b) < end + 7:
                        break
                    if b[end:end + 7] != b"\r\nEND\r\n":
                        raise ProtocolError(f"no END after the value of key:{i:05d}")
                    if parts[0] != b"key:%05d" % i:
                        self.sys.mismatch(f"key:{i:05d}: a value of {parts[0][:40]!r}")
                    else:
                        self.check_get(i, expected, b[e + 2:end])
                    p = end + 7
                elif e == p + 3 and b.startswith(b"END", p):
                    self.check_get(i, expected, None)
                    p = e + 2
                else:
                    self.sys.error(f"key:{i:05d}: get answered {b[p:e][:60]!r}")
                    p = e + 2
                k += 1
        except ValueError as err:
            raise ProtocolError(str(err)) from None
        self.pos, self.k = p, k
        return k == n

    def parse_meta(self):
        b, p, items, k = self.buf, self.pos, self.items, self.k
        n = len(items)
        try:
            while k < n:
                e = b.find(b"\r\n", p)
                if e < 0:
                    break
                is_set, i, expected = items[k]
                if is_set:
                    if b[p:e] != b"HD":
                        self.set_failed(i, b[p:e])
                    p = e + 2
                elif b.startswith(b"VA ", p):
                    end = e + 2 + int(b[p + 3:e].split(b" ", 1)[0])
                    if len(b) < end + 2:
                        break
                    if b[end:end + 2] != b"\r\n":
                        raise ProtocolError(f"no CRLF after the value of key:{i:05d}")
                    self.check_get(i, expected, b[e + 2:end])
                    p = end + 2
                elif e == p + 2 and b.startswith(b"EN", p):
                    self.check_get(i, expected, None)
                    p = e + 2
                else:
                    self.sys.error(f"key:{i:05d}: mg answered {b[p:e][:60]!r}")
                    p = e + 2
                k += 1
        except ValueError as err:
            raise ProtocolError(str(err)) from None
        self.pos, self.k = p, k
        return k == n

    def parse_binary(self):
        b, p, items, k = self.buf, self.pos, self.items, self.k
        n = len(items)
        while k < n:
            if len(b) - p < 24:
                break
            magic, op, keylen, extlen, _dt, status, bodylen, opaque, _cas = BIN_HDR.unpack_from(b, p)
            if magic != 0x81:
                raise ProtocolError(f"response magic 0x{magic:02x}")
            if len(b) - p < 24 + bodylen:
                break
            is_set, i, expected = items[k]
            want_op = BIN_SET if is_set else BIN_GET
            body = p + 24
            if op != want_op or opaque != (self.opaque0 + k) & 0xFFFFFFFF:
                self.sys.mismatch(f"key:{i:05d}: response opcode 0x{op:02x} opaque {opaque}, expected "
                                  f"0x{want_op:02x} {(self.opaque0 + k) & 0xFFFFFFFF}")
            elif is_set:
                if status != 0:
                    self.set_failed(i, f"status 0x{status:04x} {b[body:body + bodylen][:60]!r}")
            elif status == 0:
                self.check_get(i, expected, b[body + extlen + keylen:body + bodylen])
            elif status == 1:
                self.check_get(i, expected, None)
            else:
                self.sys.error(f"key:{i:05d}: get status 0x{status:04x} {b[body:body + bodylen][:60]!r}")
            p = body + bodylen
            k += 1
        self.pos, self.k = p, k
        return k == n

    def on_readable(self):
        """Read what is there; True when the batch in flight is fully answered."""
        data = self.sock.recv(262144)
        if not data:
            raise ProtocolError("connection closed")
        self.buf += data
        done = (self.parse_text if self.proto == TEXT else
                self.parse_meta if self.proto == META else self.parse_binary)()
        if done:
            if self.pos != len(self.buf):
                raise ProtocolError(f"{len(self.buf) - self.pos} bytes after the batch's last reply")
            self.sys.c["requests"] += len(self.items)
            self.sys.c["sets"] += sum(1 for it in self.items if it[0])
            self.buf, self.pos = b"", 0
            self.opaque0 = (self.opaque0 + len(self.items)) & 0xFFFFFFFF
            self.items = []
        return done

    def give_up(self, why):
        """The stream is lost: count the batch's unanswered requests as errors, stop using it."""
        self.sys.error(f"connection {self.keys[0]}: {why}; {len(self.items) - self.k} requests unanswered")
        self.sys.c["errors"] += max(0, len(self.items) - self.k - 1)
        self.dead = True
        self.items = []
        try:
            self.sock.close()
        except OSError:
            pass


class System:
    def __init__(self, name, proto, port, proxy, backends):
        self.name, self.proto, self.port = name, proto, port
        self.proxy = proxy  # Popen of the proxy, or None (direct)
        self.backends = backends  # Popens of its memcached
        self.c = dict(requests=0, sets=0, hits=0, misses=0, errors=0, mismatches=0)
        self.seconds = self.proxy_cpu = self.backend_cpu = self.client_cpu = 0.0
        self.rounds = 0
        self.examples = []
        self.conns = []
        self.broken = None  # why it could not be measured at all

    def note(self, text):
        if len(self.examples) < 5:
            self.examples.append(text)

    def error(self, text):
        self.c["errors"] += 1
        self.note("error: " + text)

    def mismatch(self, text):
        self.c["mismatches"] += 1
        self.note("mismatch: " + text)

    def cpus(self):
        proxy = proc_cpu(self.proxy.pid) if self.proxy else 0.0
        return proxy, sum(proc_cpu(b.pid) for b in self.backends), own_cpu()


def drive(conns, seconds, preload=None):
    """Batches on every connection until `seconds` have passed (preload: until every key is set),
    then the batches in flight are waited for. A connection silent for STALL_SECONDS is given up."""
    sel = selectors.DefaultSelector()
    todo = {}
    for c in conns:
        if c.dead:
            continue
        if preload is not None:
            todo[c] = [c.keys[j:j + c.depth] for j in range(0, len(c.keys), c.depth)]
        try:
            c.send_batch(todo[c].pop(0) if preload is not None else None)
        except OSError as err:
            c.give_up(f"send: {err}")
            continue
        sel.register(c.sock, selectors.EVENT_READ, c)
    end = time.monotonic() + seconds
    next_stall_check = end
    live = len(sel.get_map())
    while live:
        events = sel.select(timeout=0.5)
        now = time.monotonic()
        for key, _ in events:
            c = key.data
            try:
                if not c.on_readable():
                    continue
                more = todo[c] if preload is not None else now < end
                if more:
                    c.send_batch(todo[c].pop(0) if preload is not None else None)
                    continue
            except (OSError, ProtocolError) as err:
                sel.unregister(c.sock)
                c.give_up(str(err))
                live -= 1
                continue
            sel.unregister(c.sock)
            live -= 1
        if events and now < next_stall_check:
            continue
        next_stall_check = now + 0.5
        for key in list(sel.get_map().values()):
            c = key.data
            if now - c.sent_at > STALL_SECONDS:
                sel.unregister(c.sock)
                c.give_up(f"no reply for {STALL_SECONDS:.0f} s")
                live -= 1
    sel.close()


def run_round(s, seconds):
    p0, b0, c0 = s.cpus()
    t0 = time.monotonic()
    drive(s.conns, seconds)
    t1 = time.monotonic()
    p1, b1, c1 = s.cpus()
    s.seconds += t1 - t0
    s.proxy_cpu += p1 - p0
    s.backend_cpu += b1 - b0
    s.client_cpu += c1 - c0
    s.rounds += 1


def pool_yaml(name, port, servers):
    """The pool both nutcracker and chash-proxy read: twemproxy's ketama over md5 (the keys land
    on the same servers in both)."""
    lines = [f"{name}:", f"  listen: 127.0.0.1:{port}", "  hash: md5", "  distribution: ketama",
             "  timeout: 2000", "  server_connections: 1", "  auto_eject_hosts: false", "  servers:"]
    lines += [f"    - 127.0.0.1:{p}:1 m{i + 1}" for i, p in enumerate(servers)]
    return "\n".join(lines) + "\n"


def version_of(args):
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=5)
        return (out.stdout + out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "?"


def fmt_int(x):
    return f"{x:,.0f}"


def run(a, tmp, free_ports, start_memcached, start_proxy):
    """The whole part. start_proxy(name, args, port) -> Popen or None (did not listen).
    Returns (markdown text, JSON-able dict, list of check failures)."""
    load0 = os.getloadavg()
    started = time.time()
    nutcracker = a.nutcracker
    systems, na = [], []

    def servers(n):
        ports = free_ports(n)
        return ports, [start_memcached(p) for p in ports]

    ports, mcs = servers(1)
    systems.append(System("direct memcached", TEXT, ports[0], None, mcs))
    if nutcracker:
        front, stats = free_ports(2)
        ports, mcs = servers(3)
        path = os.path.join(tmp, "tp-nutcracker.yml")
        with open(path, "w") as f:
            f.write(pool_yaml("nc", front, ports))
        p = start_proxy("nutcracker", [nutcracker, "-c", path, "-s", str(stats), "-a", "127.0.0.1"], front)
        systems.append(System("nutcracker", TEXT, front, p, mcs))
        if p is None:
            systems[-1].broken = "did not listen"
    else:
        na.append((TEXT, "nutcracker", "not available: nutcracker not found (--nutcracker PATH)"))
    for proto in (TEXT, META, BINARY):
        front = free_ports(1)[0]
        ports, mcs = servers(3)
        path = os.path.join(tmp, f"tp-chash-{proto}.yml")
        with open(path, "w") as f:
            f.write(pool_yaml("mc", front, ports))
        p = start_proxy(f"chash-proxy-{proto}",
                        [a.chash_proxy, "-c", path, "--no-stats", "-w", str(a.tp_workers)], front)
        systems.append(System("chash-proxy", proto, front, p, mcs))
        if p is None:
            systems[-1].broken = "did not listen"
    na += [(META, "nutcracker", "n/a: nutcracker has no meta protocol"),
           (BINARY, "nutcracker", "n/a: nutcracker has no binary protocol")]

    failures = []
    runnable = []
    for s in systems:
        if s.broken is None:
            try:
                s.conns = [Conn(s, j, s.port, a) for j in range(a.tp_conns)]
            except OSError as err:
                s.broken = f"connect: {err}"
        if s.broken is not None:
            failures.append(f"{s.name} {s.proto}: {s.broken}")
            continue
        drive(s.conns, 0, preload=True)
        # The preload's replies are checked too; only its errors and mismatches are kept.
        s.c.update(requests=0, sets=0, hits=0, misses=0)
        runnable.append(s)

    per_system = max(1, round(a.tp_duration / a.tp_round))
    for cycle in range(per_system):
        shift = cycle % max(1, len(runnable))
        for s in runnable[shift:] + runnable[:shift]:
            if any(not c.dead for c in s.conns):
                run_round(s, a.tp_round)
    for s in runnable:
        for c in s.conns:
            if not c.dead:
                c.sock.close()
    load1 = os.getloadavg()

    base = next((s for s in systems if s.name == "chash-proxy" and s.proto == TEXT), None)

    def rate(s):
        return s.c["requests"] / s.seconds if s.seconds else 0.0

    def us(cpu, s):
        return 1e6 * cpu / s.c["requests"] if s.c["requests"] else 0.0

    order = {TEXT: 0, META: 1, BINARY: 2}
    rows = sorted([(order[s.proto], 0 if s.proxy is None else 1 if s.name == "nutcracker" else 2, s)
                   for s in systems] + [(order[p], 1, (p, n, why)) for p, n, why in na],
                  key=lambda r: r[:2])
    label = {TEXT: "text", META: "meta (mg/ms)", BINARY: "binary (get/set)"}
    out = ["| protocol | system | requests | req/s | req/s ÷ chash-proxy text | proxy CPU µs/request | "
           "÷ chash-proxy text | memcached CPU µs/request | client CPU (cores) | errors | mismatches |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for _, _, s in rows:
        if isinstance(s, tuple):
            out.append(f"| {label[s[0]]} | {s[1]} | {s[2]} | | | | | | | | |")
            continue
        k = s.c
        if not s.seconds:
            out.append(f"| {label[s.proto]} | {s.name} | not measured: {s.broken or 'no round'} | | | | | | | | |")
            continue
        r_ratio = f"{rate(s) / rate(base):.2f}×" if base and rate(base) else "—"
        if s.proxy is None:
            cpu, c_ratio = "— (no proxy)", "—"
        else:
            cpu = f"{us(s.proxy_cpu, s):.2f}"
            c_ratio = (f"{us(s.proxy_cpu, s) / us(base.proxy_cpu, base):.2f}×"
                       if base and base.proxy_cpu > 0 else "—")
        out.append(f"| {label[s.proto]} | {s.name} | {fmt_int(k['requests'])} | {fmt_int(rate(s))} | "
                   f"{r_ratio} | {cpu} | {c_ratio} | {us(s.backend_cpu, s):.2f} | "
                   f"{s.client_cpu / s.seconds:.2f} | {k['errors']} | {k['mismatches']} |")
    for s in systems:
        if s not in runnable:
            continue
        if s.c["errors"] or s.c["mismatches"]:
            failures.append(f"{s.name} {s.proto}: {s.c['errors']} errors, {s.c['mismatches']} mismatches")
        if s.c["requests"] == 0:
            failures.append(f"{s.name} {s.proto}: served no request")

    when = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(started))
    versions = {"memcached": version_of(["memcached", "-V"]),
                "chash-proxy": version_of([a.chash_proxy, "--version"])}
    if nutcracker:
        versions["nutcracker"] = version_of([nutcracker, "--version"])
    head = (f"{when}; load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} at the start, "
            f"{load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f} at the end; {os.cpu_count()} CPUs; "
            f"{time.time() - started:.0f} s\n"
            f"{a.tp_keys} keys (uniform), {a.tp_value_bytes}-byte values, {a.tp_set_ratio:.0%} sets / "
            f"{1 - a.tp_set_ratio:.0%} gets; {a.tp_conns} connections × {a.tp_depth} pipelined per system; "
            f"{per_system} rounds of {a.tp_round:g} s per system, round-robin; chash-proxy -w {a.tp_workers}; "
            f"proxies in front of 3 memcached -t 1 each (ketama, md5), direct: 1 memcached\n"
            f"{'; '.join(f'{k}: {v}' for k, v in versions.items())}; chash-proxy {a.chash_proxy}")
    text = ("# make bench-memcached: throughput\n\n" + "\n".join("    " + l for l in head.splitlines())
            + "\n\n" + "\n".join(out) + "\n")
    for s in systems:
        if s.examples:
            text += (f"\n{s.name} {s.proto}, first errors/mismatches:\n\n"
                     + "\n".join(f"    {e}" for e in s.examples) + "\n")
    if failures:
        text += "\n" + "\n".join(f"not measured / failed: {f}" for f in failures) + "\n"

    data = {
        "date": when, "loadavg_start": list(load0), "loadavg_end": list(load1), "cpus": os.cpu_count(),
        "seconds": round(time.time() - started, 1), "versions": versions, "chash_proxy": a.chash_proxy,
        "config": {"keys": a.tp_keys, "value_bytes": a.tp_value_bytes, "set_ratio": a.tp_set_ratio,
                   "conns": a.tp_conns, "depth": a.tp_depth, "round_seconds": a.tp_round,
                   "rounds_per_system": per_system, "chash_proxy_workers": a.tp_workers, "seed": a.seed},
        "systems": [{
            "system": s.name, "protocol": s.proto, "rounds": s.rounds, "seconds": round(s.seconds, 3),
            **s.c, "requests_per_s": round(rate(s), 1),
            "proxy_cpu_s": None if s.proxy is None else round(s.proxy_cpu, 3),
            "proxy_cpu_us_per_request": None if s.proxy is None else round(us(s.proxy_cpu, s), 3),
            "memcached_cpu_us_per_request": round(us(s.backend_cpu, s), 3),
            "client_cpu_cores": round(s.client_cpu / s.seconds, 3) if s.seconds else None,
            "examples": s.examples} for s in systems],
        "not_applicable": [{"protocol": p, "system": n, "why": why} for p, n, why in na],
        "failures": failures,
    }
    return text, data, failures
