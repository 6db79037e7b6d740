#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/compat/vectors/uhashring*__*.tsv with the real uhashring (Debian python3-uhashring).

Run by generate.sh with Debian's /usr/bin/python3 (the package installs into its dist-packages).
Every key of keys.hex is used: uhashring hashes str(key).encode("utf-8"), so keys are passed as
the str they decode to; all keys of keys.hex are valid UTF-8 (a key that is not would be skipped
and counted on stderr). Each case adds the point names "<node>-0" .. "<node>-3" and "<node>-28"
as keys: they hash exactly onto ring points, where bisect_right (the first point > the key)
decides.
"""
import collections
import os
import sys

from uhashring import HashRing

HERE = os.path.dirname(os.path.abspath(__file__))
COMPAT = os.path.dirname(HERE)
PEER = os.environ.get("PEER", "uhashring")


def load_keys():
    keys, skipped = [], 0
    with open(os.path.join(COMPAT, "keys.hex")) as f:
        for line in f:
            raw = bytes.fromhex(line.strip())
            try:
                keys.append((line.strip(), raw.decode("utf-8")))
            except UnicodeDecodeError:
                skipped += 1
    if skipped:
        print(f"uhashring: skipped {skipped} keys that are not UTF-8", file=sys.stderr)
    return keys


def hosts(n, port=11211):
    return [f"10.0.{i // 250}.{i % 250 + 1}:{port}" for i in range(n)]


def with_point_keys(keys, nodes):
    have = {h for h, _ in keys}
    extra = [f"{n}-{i}" for n in nodes for i in range(4)] + [f"{n}-28" for n in nodes]
    return keys + [(k.encode().hex(), k) for k in extra if k.encode().hex() not in have]


def tied_keys(ring, keys):
    """How many keys the peer places on a position two points share (dict: the last one wins)."""
    counts = collections.Counter(ring.runtime._keys)
    return sum(1 for _, key in keys if counts[ring.get_server(key)[0]] > 1)


def write(preset, case, nodes, weights, options, ring, keys, replicas=1):
    keys = with_point_keys(keys, nodes)
    ties = tied_keys(ring, keys)
    if case == "tie" and preset == "uhashring-ketama" and ties == 0:
        sys.exit(f"{preset}__{case}: no key lands on a tied position")
    path = os.path.join(COMPAT, "vectors", f"{preset}__{case}.tsv")
    with open(path, "w") as f:
        f.write(f"# peer: {PEER}\n")
        f.write("# command: tests/compat/uhashring/generate.sh\n")
        f.write("# keys: keys.hex, then the point names <node>-0..3 and <node>-28\n")
        f.write(f"@preset {preset}\n")
        for name, value in options:
            f.write(f"@option {name} {value}\n")
        if replicas > 1:
            f.write(f"@option replicas {replicas}\n")
        for n in nodes:
            f.write(f"@node {n} {weights.get(n, 1)}\n")
        for hexkey, key in keys:
            if replicas == 1:
                got = [ring.get_node(key)]
            else:
                got = [c["nodename"] for c in ring.range(key, size=replicas)]
            assert all(g is not None for g in got), (case, key)
            f.write(hexkey + "\t" + "\t".join(got) + "\n")
    print(f"wrote {path} ({len(keys)} keys, {ties} on tied points)", file=sys.stderr)


def make_ring(nodes, weights, ketama, vnodes):
    kwargs = {}
    if ketama:
        kwargs["hash_fn"] = "ketama"
    if vnodes is not None:
        kwargs["vnodes"] = vnodes
    if weights:
        # The dict form: insertion order is the node order, as a list would give it.
        conf = {n: {"weight": weights.get(n, 1)} for n in nodes}
        return HashRing(nodes=conf, **kwargs)
    return HashRing(nodes=list(nodes), **kwargs)


def main():
    keys = load_keys()
    five = ["cache-a", "cache-b", "cache-c", "cache-d", "cache-e"]
    cases = [
        # (case, nodes, weights, vnodes, replicas)
        ("one", hosts(1), {}, None, 1),
        ("two", hosts(2), {}, None, 1),
        ("five", five, {}, None, 1),
        ("weighted", five, {"cache-a": 1, "cache-b": 2, "cache-c": 1, "cache-d": 3, "cache-e": 5},
         None, 1),
        ("drained", five, {"cache-a": 2, "cache-b": 1, "cache-c": 0, "cache-d": 1, "cache-e": 1},
         None, 1),
        ("many", hosts(50), {}, None, 1),
        # Two nodes with a shared ketama point (found by search: md5("node-546-28") and
        # md5("node-699-28") share their first four bytes): the node listed last owns it (dict
        # assignment); those two point names are keys too.
        ("tie", ["node-546", "node-699"], {}, None, 1),
        # Names are hashed as written: a default port (11211) is not dropped.
        ("names", ["10.0.0.1", "10.0.0.2:11211", "10.0.0.3:11212", "memcache-4", "[::1]:11211"],
         {}, None, 1),
        ("vnodes-x4", hosts(5), {}, "x4", 1),
        ("vnodes-small", five,
         {"cache-a": 1, "cache-b": 3, "cache-c": 1, "cache-d": 2, "cache-e": 1}, 7, 1),
        ("replicas3", hosts(7), {}, None, 3),
        ("replicas-all", five, {"cache-a": 1, "cache-b": 2, "cache-c": 1, "cache-d": 1,
                                "cache-e": 1}, None, 5),
    ]
    for ketama, preset in ((False, "uhashring"), (True, "uhashring-ketama")):
        for case, nodes, weights, vnodes, replicas in cases:
            if vnodes == "x4":
                # Four times the mode's default (160 by default, 40 with hash_fn="ketama").
                vnodes = 160 if ketama else 640
            ring = make_ring(nodes, weights, ketama, vnodes)
            options = [("vnodes", vnodes)] if vnodes is not None else []
            write(preset, case, nodes, weights, options, ring, keys, replicas)


if __name__ == "__main__":
    main()
