#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/compat/vectors/twemproxy{,-modula}__<case>.tsv from a real nutcracker.

Run by generate.sh (which installs the packages and cleans up): gen.py WORKDIR [CASE...].

For each case: FLUSHALL the backends, write a nutcracker.yml (listen on a free 127.0.0.1 port,
redis: true, the distribution / hash / hash_tag under test, the server lines), start nutcracker,
SET every key through it, then ask every backend for KEYS * to learn which server holds each key.

Node names in the vectors (@node) follow the preset's convention: a server line
"ADDR:WEIGHT NAME" is written @node NAME WEIGHT; an unnamed "ADDR:WEIGHT" is @node ADDR WEIGHT,
ADDR being "host:port" or a unix socket path.

Keys: every key of tests/compat/keys.hex. They are non-empty, at most 249 bytes and sent as RESP
bulk strings, which nutcracker takes byte for byte; none is skipped. The ketama_tie case adds
keys made to land on a tied ketama point (see tie_case), after the keys.hex ones.
"""
import hashlib
import os
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
COMPAT = os.path.dirname(HERE)
VECTORS = os.path.join(COMPAT, "vectors")
WORK = sys.argv[1]
ONLY = set(sys.argv[2:])
PEER = os.environ.get("PEER", "nutcracker")
COMMAND = "tests/compat/twemproxy/generate.sh"

KEYS = [bytes.fromhex(line.strip()) for line in open(os.path.join(COMPAT, "keys.hex"))
        if line.strip()]
assert len(set(KEYS)) == len(KEYS), "keys.hex has duplicates"

PIDS = os.path.join(WORK, "pids")
procs = []


def log(msg):
    print(f"[twemproxy] {msg}", file=sys.stderr, flush=True)


def spawn(cmd, logname):
    out = open(os.path.join(WORK, logname), "ab")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    procs.append(p)
    with open(PIDS, "a") as f:
        f.write(f"{p.pid}\n")
    return p


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from testports import free_port  # noqa: E402  (tests/testports.py: below the ephemeral range)


def port_is_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


# ---- A minimal RESP client ---------------------------------------------------------------------

class Resp:
    def __init__(self, address, timeout=20.0):
        if isinstance(address, str):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(address)
        self.buf = b""

    def close(self):
        self.sock.close()

    @staticmethod
    def encode(*args):
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(parts)

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("connection closed")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RuntimeError("server error: " + rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError(f"bad reply {line!r}")

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        return self.reply()

    def pipeline(self, commands):
        self.sock.sendall(b"".join(self.encode(*c) for c in commands))
        return [self.reply() for _ in commands]


def wait_ready(address, proc, what, seconds=15.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            c = Resp(address, timeout=2.0)
            try:
                if c.call("PING") == b"PONG":
                    return
            finally:
                c.close()
        except (OSError, RuntimeError, ConnectionError):
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what} not ready after {seconds} s")


# ---- Backends ----------------------------------------------------------------------------------

class Backend:
    """One redis-server: TCP on 127.0.0.1 (addr "127.0.0.1:PORT") or a unix socket (addr PATH)."""

    def __init__(self, port=None, unix_path=None):
        self.port, self.unix_path = port, unix_path
        tag = f"redis-{port}" if port else "redis-" + os.path.basename(unix_path)
        cmd = ["redis-server", "--bind", "127.0.0.1", "--port", str(port or 0), "--save", "",
               "--appendonly", "no", "--daemonize", "no", "--databases", "1",
               "--dir", WORK, "--dbfilename", f"{tag}.rdb", "--logfile", ""]
        if unix_path:
            cmd += ["--unixsocket", unix_path, "--unixsocketperm", "700"]
        self.proc = spawn(cmd, f"{tag}.log")
        self.address = unix_path if unix_path else ("127.0.0.1", port)
        self.addr = unix_path if unix_path else f"127.0.0.1:{port}"

    def ready(self):
        wait_ready(self.address, self.proc, f"redis-server {self.addr}")
        self.conn = Resp(self.address)

    def flush(self):
        assert self.conn.call("FLUSHALL") == b"OK"

    def keys(self):
        return self.conn.call("KEYS", "*")


def start_tcp_backends(n):
    out = [Backend(port=free_port()) for _ in range(n)]
    for i, b in enumerate(out):
        # A port found free can be taken by another program before redis binds it: move on.
        for attempt in range(5):
            try:
                b.ready()
                break
            except RuntimeError:
                if attempt == 4:
                    raise
                stop(b.proc)
                b = out[i] = Backend(port=free_port())
    return out


def start_default_port_backend():
    # The unnamed-server rule under test needs port 11211 itself (nutcracker drops ":11211" from
    # the hashed name). Wait a bounded time if another test holds it.
    for _ in range(120):
        if port_is_free(11211):
            b = Backend(port=11211)
            try:
                b.ready()
                return b
            except RuntimeError:
                stop(b.proc)
        time.sleep(0.5)
    return None


# ---- Cases -------------------------------------------------------------------------------------

HASHES = ["one_at_a_time", "md5", "crc16", "crc32", "crc32a", "fnv1_64", "fnv1a_64", "fnv1_32",
          "fnv1a_32", "hsieh", "murmur", "jenkins"]
WEIGHTS5 = [3, 1, 2, 5, 1]


def srv(backend, weight, name=None):
    return {"backend": backend, "weight": weight, "name": name}


def ketama_points(name):
    """nutcracker's 160 points of an equal-weight server in a pool of two (nc_ketama.c)."""
    out = []
    for i in range(40):
        out.extend(struct.unpack("<4I", hashlib.md5(f"{name}-{i}".encode()).digest()))
    return out


def md5_key_hash(key):
    return struct.unpack("<I", hashlib.md5(key).digest()[:4])[0]


def tie_case():
    """Two named servers sharing a ketama point, and keys that land on it.

    Searches "tie-<k>" (k from 0, bounded) for a name with a point equal to one of "tie-a"'s.
    nutcracker orders its servers "tie-a" first (shorter name) and glibc's qsort keeps equal
    points in that order, so the tie goes to "tie-a" though the yml lists it second. The extra
    keys are the 80 point names themselves (with hash md5 a key "NAME-i" hashes exactly onto a
    point: >= vs >) and keys whose hash falls in the gap just before the tied point.
    """
    a = "tie-a"
    a_points = set(ketama_points(a))
    for k in range(500000):
        b = f"tie-{k}"
        common = a_points.intersection(ketama_points(b))
        if common:
            break
    else:
        raise RuntimeError("no ketama tie found")
    tie = min(common)
    ring = sorted(set(ketama_points(a)) | set(ketama_points(b)))
    before = ring[ring.index(tie) - 1] if ring.index(tie) > 0 else ring[-1]
    extra = [f"{n}-{i}".encode() for n in (a, b) for i in range(40)]
    found = 0
    for n in range(2000000):
        key = f"tie-key-{n}".encode()
        if before < md5_key_hash(key) <= tie:
            extra.append(key)
            found += 1
            if found == 20:
                break
    log(f"tie case: {a} and {b} share point {tie}; {found} keys in ({before}, {tie}]")
    return b, a, extra


def cases(tcp, default_port, unix):
    """(case, servers, options, extra keys, distributions) — options are the yml settings
    besides distribution."""
    five = [srv(tcp[i], w) for i, w in enumerate(WEIGHTS5)]
    out = [
        ("one", [srv(tcp[0], 1)], {}),
        ("two", [srv(tcp[0], 1), srv(tcp[1], 1)], {}),
        ("five_weighted", five, {}),
        # 50 equal servers: nutcracker's float arithmetic gives each 156 ketama points, not 160.
        ("many50", [srv(tcp[i], 1) for i in range(50)], {}),
        # Weights 29:30:61 floor to 112/120/240 points in float (exact arithmetic: 116/120/244).
        ("float_points", [srv(tcp[0], 29), srv(tcp[1], 30), srv(tcp[2], 61)], {}),
        # Names of different lengths, not in sorted order: nutcracker sorts by (length, bytes).
        ("named", [srv(tcp[0], 1, "redis-b"), srv(tcp[1], 2, "redis-a"),
                   srv(tcp[2], 1, "cache-10"), srv(tcp[3], 3, "cache-9"), srv(tcp[4], 1, "x")],
         {}),
        ("mixed_named", [srv(tcp[0], 2), srv(tcp[1], 1, "shard-1"), srv(tcp[2], 1),
                         srv(tcp[3], 2, "s2")], {}),
        # Debian's example nutcracker.yml (pool omega): a weight past chash's own 65,536, which
        # nutcracker takes (any positive int) — ketama shares are ratios, modula one slot each.
        ("large_weights", [srv(tcp[0], 100000), srv(tcp[1], 70000), srv(tcp[2], 1)],
         {"hash": "hsieh"}),
        ("hash_tag_braces", five, {"hash_tag": "{}"}),
        ("hash_tag_colons", five, {"hash_tag": "::", "hash": "murmur"}),
    ]
    if default_port is not None:
        out.append(("default_port", [srv(tcp[0], 1), srv(default_port, 2), srv(tcp[1], 1),
                                     srv(tcp[2], 1)], {}))
    if unix:
        out.append(("unix_socket", [srv(unix[0], 1), srv(tcp[0], 1), srv(unix[1], 2),
                                    srv(unix[2], 1, "sock-named")], {}))
    for h in HASHES:
        out.append((f"hash_{h}", five, {"hash": h}))
    out = [c + ([], ("ketama", "modula")) for c in out]
    b, a, extra = tie_case()
    out.append(("ketama_tie", [srv(tcp[0], 1, b), srv(tcp[1], 1, a)], {"hash": "md5"}, extra,
                ("ketama",)))
    return out


def yml(distribution, listen_port, servers, options):
    lines = ["pool:", f"  listen: 127.0.0.1:{listen_port}", "  redis: true",
             f"  distribution: {distribution}", "  auto_eject_hosts: false",
             "  preconnect: false", "  timeout: 10000"]
    if "hash" in options:
        lines.append(f"  hash: {options['hash']}")
    if "hash_tag" in options:
        lines.append(f"  hash_tag: \"{options['hash_tag']}\"")
    lines.append("  servers:")
    for s in servers:
        line = f"{s['backend'].addr}:{s['weight']}"
        if s["name"]:
            line += f" {s['name']}"
        lines.append(f"   - {line}")
    return "\n".join(lines) + "\n"


def run_case(preset, distribution, case, servers, options, extra, backends):
    known = set(KEYS)
    keys = KEYS + [k for k in extra if k not in known]
    conf = os.path.join(WORK, f"{preset}__{case}.yml")
    for b in backends:
        b.flush()
    for attempt in range(3):
        listen = free_port()
        with open(conf, "w") as f:
            f.write(yml(distribution, listen, servers, options))
        check = subprocess.run(["nutcracker", "-t", "-c", conf], capture_output=True, timeout=30)
        if check.returncode != 0:
            raise RuntimeError(f"nutcracker -t refused {conf}: {check.stderr.decode()}")
        nc = spawn(["nutcracker", "-c", conf, "-o", os.path.join(WORK, f"{preset}__{case}.log"),
                    "-s", str(free_port()), "-a", "127.0.0.1"], f"{preset}__{case}.out")
        try:
            try:
                wait_ready(("127.0.0.1", listen), nc, "nutcracker")
            except RuntimeError:
                # Its listen or stats port was taken meanwhile: try other ports.
                if attempt == 2:
                    raise
                continue
            c = Resp(("127.0.0.1", listen))
            try:
                for i in range(0, len(keys), 256):
                    batch = keys[i:i + 256]
                    replies = c.pipeline([("SET", k, b"1") for k in batch])
                    bad = [r for r in replies if r != b"OK"]
                    if bad:
                        raise RuntimeError(f"SET through nutcracker failed: {bad[:3]}")
            finally:
                c.close()
            break
        finally:
            stop(nc)
    owner = {}
    for s in servers:
        node = s["name"] or s["backend"].addr
        for k in s["backend"].keys():
            if k in owner:
                raise RuntimeError(f"key {k!r} on two servers")
            owner[k] = node
    missing = [k for k in keys if k not in owner]
    if missing or len(owner) != len(keys):
        raise RuntimeError(f"{len(missing)} keys not found on any server, {len(owner)} stored")
    path = os.path.join(VECTORS, f"{preset}__{case}.tsv")
    with open(path + ".tmp", "w") as f:
        f.write(f"# peer: {PEER}\n")
        f.write(f"# command: {COMMAND}\n")
        f.write(f"# nutcracker.yml: distribution {distribution}; server lines: " +
                ", ".join(f"\"{s['backend'].addr}:{s['weight']}" +
                          (f" {s['name']}" if s["name"] else "") + "\"" for s in servers) + "\n")
        f.write(f"@preset {preset}\n")
        for k in ("hash", "hash_tag"):
            if k in options:
                f.write(f"@option {k} {options[k]}\n")
        for s in servers:
            f.write(f"@node {s['name'] or s['backend'].addr} {s['weight']}\n")
        for k in keys:
            f.write(f"{k.hex()}\t{owner[k]}\n")
    os.replace(path + ".tmp", path)
    counts = {}
    for v in owner.values():
        counts[v] = counts.get(v, 0) + 1
    log(f"{os.path.basename(path)}: {len(keys)} keys over {len(counts)} servers")


def main():
    os.makedirs(VECTORS, exist_ok=True)
    try:
        tcp = start_tcp_backends(50)
        unix = []
        for i in range(3):
            unix.append(Backend(unix_path=os.path.join(WORK, f"r{i}.sock")))
        for b in unix:
            b.ready()
        default_port = start_default_port_backend()
        if default_port is None:
            log("127.0.0.1:11211 stayed busy: case default_port NOT regenerated")
        backends = tcp + unix + ([default_port] if default_port else [])
        todo = cases(tcp, default_port, unix)
        names = {c[0] for c in todo}
        unknown = ONLY - names
        if unknown:
            raise SystemExit(f"unknown case(s) {sorted(unknown)}; cases: {sorted(names)}")
        for preset, distribution in (("twemproxy", "ketama"), ("twemproxy-modula", "modula")):
            for case, servers, options, extra, distributions in todo:
                if (ONLY and case not in ONLY) or distribution not in distributions:
                    continue
                used = {id(s["backend"]) for s in servers}
                run_case(preset, distribution, case, servers, options, extra,
                         [b for b in backends if id(b) in used])
    finally:
        for p in procs:
            stop(p)


if __name__ == "__main__":
    main()
