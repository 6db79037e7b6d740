#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench-memcached: memcached through chash-proxy in two parts, all on 127.0.0.1 —
faults: a write-heavy Zipf load while servers fail, with and without a replicated pool
(docs/MEMCACHED.md "Replicated pools"); throughput: requests/s and proxy CPU per request of
the text, meta and binary protocols next to nutcracker and memcached directly
(bench/memcached/throughput.py). --part faults|throughput|all (default all, in that order).

The faults part. Backends: three memcached (-m 64 -t 1) on free loopback ports, m1..m3, for
each system (a rebalance after a return moves every key it finds on the servers: sharing them,
one proxy's would move the other's keys). Systems, one chash-proxy process each (so each one's CPU is its
own):
  plain       auto_eject_hosts, safe failover and return (failover_invalidate), one owner a key
  replicated  the same plus `replicas: 3`, `write_policy: majority`
Both get the same requests, alternated one by one on one connection each (a shared 2-core
machine drifts; side by side in one run, the two see the same faults at the same moments).

The load: keys drawn Zipf (s = --zipf-s) over --keys keys; --write-ratio of the requests are
sets of the key's next version ("v<N>"), the rest gets. Every key is written once first. The
client is sequential, so the history needs no concurrency model: each key's latest acknowledged
version is known when a get is sent. A get that misses a key with an acknowledged version is a
LOST write; one that returns an older version than the acknowledged one is a STALE read; a
SERVER_ERROR is an error (a write that failed is not acknowledged, and may or may not have
landed: either version is then fine until the next acknowledged one).

Faults, at fractions of --duration, to both systems' servers at once: 15% m1 SIGKILLed, 35%
m1 restarted (empty), 55% m2 SIGSTOPped (it keeps its values), 75% m2 SIGCONTed. Measured per system: requests, gets, sets,
lost writes, stale reads, errors, misses, the proxy's CPU per request (utime+stime over the
run, from /proc), and requests/s.

Output (--out DIR): memcached.md (the faults table), throughput.md and throughput.json (the
throughput part; see throughput.py for what it measures). --check exits 1 when the replicated
pool lost a write or served a stale read, or when a fault went unseen (no error nor ejection at
all in the plain pool), and in the throughput part on a reply error or mismatch or a system that
served nothing — never on a rate or a CPU figure. Everything is bounded: --time-limit stops the
run, only 127.0.0.1 is bound or connected to, every process and the temp dir are removed at exit.

  python3 bench/memcached/run.py --chash-proxy build-release/chash-proxy      # ~90 s
  python3 bench/memcached/run.py --part throughput --tp-duration 20           # 20 s per system
  python3 bench/memcached/run.py --short --check --chash-proxy build/chash-proxy   # ~15 s
"""

import argparse
import bisect
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
import testports  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import throughput  # noqa: E402  (bench/memcached/throughput.py: the throughput part)

PROCS = []


def cleanup():
    for p in PROCS:
        try:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait(timeout=5)
        except Exception:  # noqa: BLE001 — best effort at exit
            pass
    PROCS.clear()


def wait_port(port, deadline=10.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def start_memcached(port):
    args = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "1", "-m", "64"]
    if os.geteuid() == 0:
        args += ["-u", "root"]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    PROCS.append(p)
    if not wait_port(port):
        sys.exit(f"memcached on 127.0.0.1:{port} did not start")
    return p


class Client:
    """A blocking memcached text-protocol client for set/get (3 s timeouts)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=3)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def set(self, key, value):
        self.s.sendall(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))
        return self._line()

    def get(self, key):
        """(value or None, error line or None)."""
        self.s.sendall(b"get %s\r\n" % key)
        value = None
        while True:
            line = self._line()
            if line == b"END":
                return value, None
            if line.startswith(b"VALUE "):
                n = int(line.split()[3])
                value = self._exact(n + 2)[:-2]
                continue
            return None, line


class System:
    def __init__(self, name, prefix, port, proc):
        self.name, self.prefix, self.port, self.proc = name, prefix, port, proc
        self.client = Client(port)
        self.acked = {}  # key -> latest acknowledged version
        self.counts = dict(requests=0, gets=0, sets=0, lost=0, stale=0, errors=0, misses=0)
        self.examples = []

    def cpu(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def write(self, i, version):
        key = b"%s:%d" % (self.prefix, i)
        self.counts["requests"] += 1
        self.counts["sets"] += 1
        reply = self.client.set(key, b"v%d" % version)
        if reply == b"STORED":
            self.acked[i] = version
        else:
            self.counts["errors"] += 1

    def read(self, i):
        key = b"%s:%d" % (self.prefix, i)
        self.counts["requests"] += 1
        self.counts["gets"] += 1
        value, error = self.client.get(key)
        if error is not None:
            self.counts["errors"] += 1
            return
        acked = self.acked.get(i)
        if value is None:
            self.counts["misses"] += 1
            if acked is not None:
                self.counts["lost"] += 1
                self.note(f"{key.decode()}: miss, v{acked} acknowledged")
            return
        got = int(value[1:])
        if acked is not None and got < acked:
            self.counts["stale"] += 1
            self.note(f"{key.decode()}: v{got} read, v{acked} acknowledged")

    def note(self, text):
        if len(self.examples) < 5:
            self.examples.append(text)


def proxy_config(name, port, servers, extra):
    lines = [f"{name}:", f"  listen: 127.0.0.1:{port}", "  protocol: memcache", "  timeout: 300",
             "  auto_eject_hosts: true", "  server_failure_limit: 1",
             "  server_retry_timeout: 300"] + [f"  {e}" for e in extra] + ["  servers:"]
    lines += [f"    - 127.0.0.1:{p}:1 m{i + 1}" for i, p in enumerate(servers)]
    return "\n".join(lines) + "\n"


def start_proxy(name, args, port, tmp):
    """A proxy process (its log in tmp), or None when it did not listen within 10 s."""
    log = open(os.path.join(tmp, f"{name}.log"), "w")
    p = subprocess.Popen(args, stdout=log, stderr=log)
    PROCS.append(p)
    return p if wait_port(port) else None


def run_faults(a, tmp):
    """The faults part: plain vs replicated through a kill, a restart, a stop and a resume."""
    ports = testports.free_ports(8)
    mc_ports, proxy_ports = [ports[0:3], ports[3:6]], ports[6:]
    memcached = [[start_memcached(p) for p in mc] for mc in mc_ports]
    systems = []
    for (name, prefix, extra), port, mc in zip(
            [("plain", b"p", []), ("replicated", b"r", ["replicas: 3", "write_policy: majority"])],
            proxy_ports, mc_ports):
        path = os.path.join(tmp, f"{name}.yml")
        with open(path, "w") as f:
            f.write(proxy_config(name, port, mc, extra))
        log = open(os.path.join(tmp, f"{name}.log"), "w")
        p = subprocess.Popen([a.chash_proxy, "-c", path, "--no-stats"], stdout=log, stderr=log)
        PROCS.append(p)
        if not wait_port(port):
            sys.exit(f"chash-proxy ({name}) did not start; see {log.name}")
        systems.append(System(name, prefix, port, p))

    rng = random.Random(a.seed)
    weights = [1.0 / (r + 1) ** a.zipf_s for r in range(a.keys)]
    cdf, total = [], 0.0
    for w in weights:
        total += w
        cdf.append(total)
    perm = list(range(a.keys))
    rng.shuffle(perm)
    version = [1] * a.keys
    for i in range(a.keys):
        for s in systems:
            s.write(i, 1)
    for s in systems:
        s.counts = {k: 0 for k in s.counts}
    def kill_m1():
        for mc in memcached:
            mc[0].kill()
            mc[0].wait()

    def restart_m1():
        for mc, ports_of in zip(memcached, mc_ports):
            mc[0] = start_memcached(ports_of[0])

    def signal_m2(sig):
        for mc in memcached:
            mc[1].send_signal(sig)

    faults = [(0.15, "m1 SIGKILLed", kill_m1), (0.35, "m1 restarted empty", restart_m1),
              (0.55, "m2 SIGSTOPped", lambda: signal_m2(signal.SIGSTOP)),
              (0.75, "m2 SIGCONTed", lambda: signal_m2(signal.SIGCONT))]
    cpu0 = [s.cpu() for s in systems]
    start = time.monotonic()
    events = []
    while True:
        now = time.monotonic() - start
        if now >= a.duration:
            break
        while faults and now >= faults[0][0] * a.duration:
            at, what, act = faults.pop(0)
            act()
            events.append(f"{now:5.1f} s  {what}")
        i = perm[bisect.bisect_left(cdf, rng.random() * total)]
        if rng.random() < a.write_ratio:
            version[i] += 1
            for s in systems:
                s.write(i, version[i])
        else:
            for s in systems:
                s.read(i)
    elapsed = time.monotonic() - start
    # A last read of every key: what was lost shows even for keys the load never read again.
    for i in range(a.keys):
        for s in systems:
            s.read(i)
    cpu = [s.cpu() - c for s, c in zip(systems, cpu0)]

    out = ["| system | requests | req/s | gets | sets | lost writes | stale reads | "
           "errors | misses | proxy CPU µs/request |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for s, c in zip(systems, cpu):
        k = s.counts
        out.append(f"| {s.name} | {k['requests']} | {k['requests'] / elapsed:.0f} | {k['gets']} | "
                   f"{k['sets']} | {k['lost']} | {k['stale']} | {k['errors']} | {k['misses']} | "
                   f"{1e6 * c / max(1, k['requests']):.1f} |")
    text = ("# make bench-memcached\n\n"
            f"{a.keys} keys, Zipf s={a.zipf_s}, {a.write_ratio:.0%} sets, {a.duration:.0f} s "
            "(the table counts the load and a final read of every key)\n\n"
            + "\n".join(out) + "\n\nFaults:\n\n" + "\n".join(f"    {e}" for e in events) + "\n")
    for s in systems:
        if s.examples:
            text += f"\n{s.name}, first lost/stale reads:\n\n" + "\n".join(
                f"    {e}" for e in s.examples) + "\n"
    print(text)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "memcached.md"), "w") as f:
        f.write(text)
    if a.check:
        rep = systems[1].counts
        plain = systems[0].counts
        if rep["lost"] or rep["stale"]:
            print("check: the replicated pool lost writes or served stale reads", file=sys.stderr)
            return 1
        if len(events) != 4 or plain["errors"] + plain["misses"] == 0:
            print("check: the faults were not felt", file=sys.stderr)
            return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chash-proxy", default=os.environ.get("CHASH_PROXY", "build/chash-proxy"))
    ap.add_argument("--out", default="build-release/bench-memcached")
    ap.add_argument("--part", choices=["faults", "throughput", "all"], default="all",
                    help="which part to run (default all: faults, then throughput)")
    ap.add_argument("--duration", type=float, default=30.0, help="faults: seconds of load (default 30)")
    ap.add_argument("--keys", type=int, default=2000, help="faults: keys (default 2000)")
    ap.add_argument("--zipf-s", type=float, default=0.99, help="faults: Zipf exponent")
    ap.add_argument("--write-ratio", type=float, default=0.7, help="faults: share of sets")
    ap.add_argument("--tp-duration", type=float, default=10.0,
                    help="throughput: seconds of load per system, the sum of its rounds (default 10)")
    ap.add_argument("--tp-round", type=float, default=1.0, help="throughput: seconds per round (default 1)")
    ap.add_argument("--tp-keys", type=int, default=10000, help="throughput: keys (default 10000)")
    ap.add_argument("--tp-value-bytes", type=int, default=100, help="throughput: value size (default 100)")
    ap.add_argument("--tp-set-ratio", type=float, default=0.1, help="throughput: share of sets (default 0.1)")
    ap.add_argument("--tp-conns", type=int, default=8, help="throughput: connections per system (default 8)")
    ap.add_argument("--tp-depth", type=int, default=32, help="throughput: requests per pipelined batch (default 32)")
    ap.add_argument("--tp-workers", type=int, default=1,
                    help="throughput: chash-proxy worker threads (default 1, as nutcracker's one thread)")
    ap.add_argument("--nutcracker", default=os.environ.get("NUTCRACKER", "nutcracker"),
                    help="throughput: nutcracker binary (default: on PATH or /usr/sbin; absent: its row says so)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--short", action="store_true",
                    help="faults: --duration 8 --keys 500; throughput: --tp-duration 1 --tp-round 0.5 "
                         "--tp-keys 2000 (a check of every reply, not a measurement)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 on a lost write or stale read of the replicated pool, unfelt faults, "
                         "or (throughput) a reply error or mismatch or a system that served nothing; "
                         "never on timing")
    a = ap.parse_args()
    if a.short:
        a.duration, a.keys = 8.0, 500
        a.tp_duration, a.tp_round, a.tp_keys = 1.0, 0.5, 2000
    if not (os.path.isfile(a.chash_proxy) and os.access(a.chash_proxy, os.X_OK)):
        print(f"chash-proxy: {a.chash_proxy} is not an executable", file=sys.stderr)
        return 2
    if shutil.which("memcached") is None:
        print("memcached is not installed (scripts/bootstrap.sh installs it)", file=sys.stderr)
        return 2
    if a.tp_keys < a.tp_conns or a.tp_value_bytes < 24 or not 0 <= a.tp_set_ratio <= 1:
        print("throughput: --tp-keys must be at least --tp-conns, --tp-value-bytes at least 24 "
              "(a value names its key and version), --tp-set-ratio within 0..1", file=sys.stderr)
        return 2
    # Debian installs nutcracker in /usr/sbin, which a user's PATH may lack.
    a.nutcracker = shutil.which(a.nutcracker) or shutil.which(a.nutcracker, path="/usr/sbin")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("time limit reached"))
    signal.alarm(int(a.time_limit))
    tmp = tempfile.mkdtemp(prefix="bench-memcached-")
    status = 0
    try:
        if a.part in ("faults", "all"):
            status = run_faults(a, tmp)
            cleanup()  # the faults part's servers leave the machine before the throughput part
        if a.part in ("throughput", "all"):
            text, data, failures = throughput.run(
                a, tmp, testports.free_ports, start_memcached,
                lambda name, args, port: start_proxy(name, args, port, tmp))
            print(text)
            os.makedirs(a.out, exist_ok=True)
            with open(os.path.join(a.out, "throughput.md"), "w") as f:
                f.write(text)
            with open(os.path.join(a.out, "throughput.json"), "w") as f:
                json.dump(data, f, indent=1)
                f.write("\n")
            if a.check and failures:
                for why in failures:
                    print(f"check: throughput: {why}", file=sys.stderr)
                status = 1
        return status
    finally:
        cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        cleanup()
