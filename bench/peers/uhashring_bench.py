# SPDX-License-Identifier: Apache-2.0
"""uhashring (Debian python3-uhashring) in its default mode, as the uhashring preset.

    python3 uhashring_bench.py NODES.txt KEYS.txt ROUNDS  ->  "uhashring\t<ns per key>\t<checksum>"
"""
import sys
import time

from uhashring import HashRing


def main():
    nodes = [l.strip() for l in open(sys.argv[1]) if l.strip()]
    keys = [l.strip() for l in open(sys.argv[2]) if l.strip()]
    rounds = int(sys.argv[3])
    index = {n: i for i, n in enumerate(nodes)}
    ring = HashRing(nodes=nodes)
    get = ring.get_node
    best, checksum = float("inf"), 0
    for r in range(rounds + 1):  # the first pass warms up
        t0 = time.perf_counter_ns()
        owners = [get(k) for k in keys]
        ns = (time.perf_counter_ns() - t0) / len(keys)
        checksum = sum(index[o] * (i % 1000 + 1) for i, o in enumerate(owners))
        if r > 0:
            best = min(best, ns)
    print(f"uhashring\t{best:.2f}\t{checksum}")


main()
