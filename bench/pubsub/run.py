#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench-pubsub: Pub/Sub fan-out through chash-proxy next to the same redis-server
directly, alternated in one run on the same machine (docs/BENCHMARKS.md "Pub/Sub fan-out").

Backends: three redis-server (--save "" --appendonly no) on free 127.0.0.1 ports. Targets:
  direct        the redis-server that owns the channel, directly
  chash-proxy   a pool of the three (ketama, fnv1a_64): the channel routed to its owner, the
                subscribers' own connections there, PUBLISH on the proxy's shared connection
Load (bench/pubsub/psbench.c, built here with `cc`): S subscribers SUBSCRIBE one channel, one
publisher pipelines N PUBLISHes of a D-byte payload (--pipeline at a time); a run ends when
every subscriber has all N messages. Measured: messages delivered per second (S x N / the time
from the first PUBLISH to the last subscriber's last message) and PUBLISHes per second. For each
subscriber count, the targets alternate (direct, proxy, direct, proxy ...) for --rounds rounds,
and the table gives each one's median and the proxy/direct ratio of the medians. A run that
loses a message fails the whole bench (exit 1).

  python3 bench/pubsub/run.py                          # ~1 minute
  python3 bench/pubsub/run.py --short --check          # < 15 s: every message arrives once

Knobs: --subscribers 1,10,50  --messages 50000  --payload 32  --pipeline 64  --rounds 3
       --workers 2  --chash-proxy PATH  --out DIR  --time-limit 300
"""

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


sys.path.insert(0, os.path.join(ROOT, "tests"))
from testports import free_port  # noqa: E402  (tests/testports.py: below the ephemeral range)


def wait_port(port, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def find_proxy(given):
    for p in [given, os.path.join(ROOT, "build-release/chash-proxy"),
              os.path.join(ROOT, "build/chash-proxy")]:
        if p and os.access(p, os.X_OK):
            return p
    sys.exit("run.py: no chash-proxy (make release, or --chash-proxy PATH)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--subscribers", default="1,10,50")
    ap.add_argument("--messages", type=int, default=50000)
    ap.add_argument("--payload", type=int, default=32)
    ap.add_argument("--pipeline", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chash-proxy", default=os.environ.get("CHASH_PROXY"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build-release/bench-pubsub"))
    ap.add_argument("--time-limit", type=float, default=300)
    ap.add_argument("--short", action="store_true", help="5 subscribers, 5000 messages, 1 round")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every message arrived")
    a = ap.parse_args()
    if a.short:
        a.subscribers, a.messages, a.rounds = "5", 5000, 1
    proxy = find_proxy(a.chash_proxy)
    for prog in ("redis-server", "cc"):
        if shutil.which(prog) is None:
            sys.exit("run.py: %s is needed (scripts/bootstrap.sh)" % prog)
    tmp = tempfile.mkdtemp(prefix="chash-bench-pubsub.")
    procs = []

    def cleanup(*_):
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    signal.signal(signal.SIGTERM, lambda *_: (cleanup(), sys.exit(1)))
    try:
        psbench = os.path.join(tmp, "psbench")
        subprocess.run(["cc", "-O2", "-pthread", "-o", psbench, os.path.join(HERE, "psbench.c")],
                       check=True)
        ports = []
        for i in range(3):
            port = free_port()
            procs.append(subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", tmp, "--logfile", os.path.join(tmp, "n%d.log" % i)]))
            ports.append(port)
        for p in ports:
            if not wait_port(p):
                sys.exit("run.py: redis-server did not start")
        listen = free_port()
        cfg = os.path.join(tmp, "proxy.yml")
        with open(cfg, "w") as f:
            f.write("p:\n  listen: 127.0.0.1:%d\n  redis: true\n  timeout: 5000\n  servers:\n" % listen)
            for i, p in enumerate(ports):
                f.write("    - 127.0.0.1:%d:1 n%d\n" % (p, i + 1))
        procs.append(subprocess.Popen([proxy, "-c", cfg, "--no-stats", "--workers", str(a.workers)],
                                      stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "proxy.log"), "w")))
        if not wait_port(listen):
            sys.exit("run.py: chash-proxy did not start (see its log)")
        # The channel's owner, found by publishing through the proxy with one direct subscriber
        # on each server: the one whose PUBSUB NUMSUB shows the proxy's subscriber.
        channel = "bench"
        owner = None
        probe = socket.create_connection(("127.0.0.1", listen))
        probe.sendall(b"SUBSCRIBE %s\r\n" % channel.encode())
        probe.recv(200)  # the confirmation: subscribed on the owner by now
        for p in ports:
            c = socket.create_connection(("127.0.0.1", p))
            c.sendall(b"PUBSUB NUMSUB %s\r\n" % channel.encode())
            r = c.recv(200)
            c.close()
            if r.endswith(b":1\r\n"):
                owner = p
        probe.close()
        if owner is None:
            sys.exit("run.py: could not find the channel's backend")
        targets = [("direct", owner), ("chash-proxy", listen)]
        results = {}
        deadline = time.time() + a.time_limit
        lost_any = False
        for subs in [int(x) for x in a.subscribers.split(",")]:
            for rnd in range(a.rounds):
                for name, port in targets:
                    if time.time() > deadline:
                        break
                    out = subprocess.run(
                        [psbench, "-p", str(port), "-s", str(subs), "-n", str(a.messages), "-d",
                         str(a.payload), "-P", str(a.pipeline), "-c", channel, "-t", "60"],
                        capture_output=True, text=True, timeout=120)
                    line = out.stdout.strip()
                    kv = dict(x.split("=") for x in line.split()) if line else {}
                    if out.returncode != 0 or not kv or int(kv.get("lost", 1)) != 0:
                        lost_any = True
                        print("%s %d subscribers: %s %s" % (name, subs, line, out.stderr.strip()))
                        continue
                    results.setdefault((subs, name), []).append(
                        (float(kv["delivered_per_s"]), float(kv["published_per_s"])))
                    print("round %d  %-12s %3d subscribers  %10.0f msg/s delivered  %9.0f PUBLISH/s"
                          % (rnd + 1, name, subs, float(kv["delivered_per_s"]),
                             float(kv["published_per_s"])), flush=True)
        rows = ["| subscribers | direct msg/s (median) | chash-proxy msg/s (median) | proxy / direct |",
                "| --- | --- | --- | --- |"]
        for subs in [int(x) for x in a.subscribers.split(",")]:
            d = results.get((subs, "direct"), [])
            p = results.get((subs, "chash-proxy"), [])
            if not d or not p:
                continue
            md = statistics.median(x[0] for x in d)
            mp = statistics.median(x[0] for x in p)
            rows.append("| %d | %.0f | %.0f | %.2f |" % (subs, md, mp, mp / md))
        table = "\n".join(rows)
        print("\n" + table)
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "pubsub.md"), "w") as f:
            f.write("Pub/Sub fan-out, %d messages of %d bytes, pipeline %d, %d rounds, chash-proxy "
                    "--workers %d\n\n%s\n" % (a.messages, a.payload, a.pipeline, a.rounds,
                                                a.workers, table))
        if a.check and lost_any:
            print("run.py: messages were lost (see above)")
            return 1
        return 0
    finally:
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
