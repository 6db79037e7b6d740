#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""make bench-python: lookups/s of the Python package chash next to uhashring (and hash_ring).

Same keys, same nodes, one run; every answer is checked against the peer's before timing.
  chash.Router.route         one key per call
  chash.Router.route_many    the whole key list per call (GIL released, batch lookup); the
                             native ring also with a tuple (its keys are read in place)
  chash.compat...HashRing    the uhashring drop-in's get_node (one key per call, Python wrapper)
                             and get_nodes_many (the batch), alternated round by round
  uhashring.HashRing         Debian python3-uhashring 2.1, get_node
  chash.Router(algorithm="ring")  a native table (xxh3), against uhashring's default mode
  hash_ring.HashRing         only when HASH_RING=<checkout of github Doist/hash_ring> is given
Prints a Markdown table (best of REPEAT runs). Usage: bench.py [NODES] [KEYS]
"""
import os
import sys
import time

import chash
from chash.compat.uhashring import HashRing as DropIn

NODES = int(sys.argv[1]) if len(sys.argv) > 1 else 10
KEYS = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
REPEAT = int(os.environ.get("REPEAT", "5"))


def best(fn):
    t = min(_timed(fn) for _ in range(REPEAT))
    return KEYS / t


def best_alternating(*fns):
    """Best of REPEAT rounds for each fn, every round running them all in turn: two calls
    compared side by side see the same machine (a load that comes and goes hits both)."""
    times = [[] for _ in fns]
    for _ in range(REPEAT):
        for t, fn in zip(times, fns):
            t.append(_timed(fn))
    return [KEYS / min(t) for t in times]


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    import uhashring

    nodes = [f"10.0.{i // 250}.{i % 250 + 1}:11211" for i in range(NODES)]
    keys = [f"user:{i}:{(i * 2654435761) % 1000003}" for i in range(KEYS)]
    rows = []
    for mode, preset, kwargs in [("default", "uhashring", {}),
                                 ("ketama", "uhashring-ketama", {"hash_fn": "ketama"})]:
        peer = uhashring.HashRing(nodes, **kwargs)
        router = chash.Router(nodes, preset=preset)
        dropin = DropIn(nodes, **kwargs)
        want = [peer.get_node(k) for k in keys]
        assert router.route_many(keys) == want, "route_many disagrees with uhashring"
        assert [router.route(k) for k in keys] == want, "route disagrees with uhashring"
        assert [dropin.get_node(k) for k in keys] == want, "the drop-in disagrees with uhashring"
        assert dropin.get_nodes_many(keys) == want, "the drop-in's batch disagrees with uhashring"
        base = best(lambda: [peer.get_node(k) for k in keys])
        route = router.route
        # The drop-in's batch call against a loop of its get_node, alternated in one run.
        one, many = best_alternating(lambda: [dropin.get_node(k) for k in keys],
                                     lambda: dropin.get_nodes_many(keys))
        results = [
            (f"uhashring.HashRing({kwargs or ''}).get_node", base),
            ("chash.compat.uhashring.HashRing.get_node", one),
            ("chash.compat.uhashring.HashRing.get_nodes_many", many),
            (f"chash.Router(preset='{preset}').route", best(lambda: [route(k) for k in keys])),
            (f"chash.Router(preset='{preset}').route_many", best(lambda: router.route_many(keys))),
        ]
        rows += [(mode, name, rate, rate / base) for name, rate in results]

    # A native table (xxh3 ring): what the binding costs when the hash is cheap.
    peer = uhashring.HashRing(nodes)
    base = best(lambda: [peer.get_node(k) for k in keys])
    router = chash.Router(nodes, algorithm="ring")
    route = router.route
    tkeys = tuple(keys)  # read in place; a list's keys are copied before the GIL is released
    rows += [("native", name, rate, rate / base) for name, rate in [
        ("chash.Router(algorithm='ring').route", best(lambda: [route(k) for k in keys])),
        ("chash.Router(algorithm='ring').route_many", best(lambda: router.route_many(keys))),
        ("chash.Router(algorithm='ring').route_many(tuple)", best(lambda: router.route_many(tkeys))),
    ]]

    checkout = os.environ.get("HASH_RING")
    if checkout:
        sys.path.insert(0, checkout)
        from hash_ring import HashRing as HR  # noqa: N814

        peer = HR(nodes)
        router = chash.Router(nodes, preset="hash_ring")
        want = [peer.get_node(k) for k in keys]
        assert router.route_many(keys) == want, "route_many disagrees with hash_ring"
        base = best(lambda: [peer.get_node(k) for k in keys])
        route = router.route
        rows += [("hash_ring", name, rate, rate / base) for name, rate in [
            ("hash_ring.HashRing.get_node", base),
            ("chash.Router(preset='hash_ring').route", best(lambda: [route(k) for k in keys])),
            ("chash.Router(preset='hash_ring').route_many", best(lambda: router.route_many(keys))),
        ]]

    print(f"{NODES} nodes, {KEYS:,} keys (`{keys[0]}` ...), best of {REPEAT}; "
          f"Python {sys.version.split()[0]}; every answer equal to the peer's\n")
    print("| ring | call | lookups/s | × peer |")
    print("|---|---|---:|---:|")
    for mode, name, rate, ratio in rows:
        print(f"| {mode} | `{name}` | {rate:,.0f} | {ratio:.1f}× |")


if __name__ == "__main__":
    main()
