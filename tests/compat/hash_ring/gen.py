#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/compat/vectors/hash_ring__*.tsv with the real hash_ring (Amir Salihefendic's).

    gen.py CHECKOUT [RELEASE_SOURCE]

CHECKOUT is a checkout of the hash_ring repository (github Doist/hash_ring): its package is
imported from there, unmodified. RELEASE_SOURCE, when given, is the hash_ring.py of the 1.3.1
release (Python 2 only); it is loaded with Python 2 shims (an `md5` module, xrange, list-returning
map, Python 2 integer division) and must agree with the checkout on every vector line.

Every key of keys.hex is used: hash_ring hashes bytes(key, "utf-8"), so keys are passed as the
str they decode to (all keys of keys.hex are valid UTF-8; one that is not would be skipped). Each
case adds the point names "<node>-0" .. "<node>-3" and "<node>-28" as keys: they hash exactly
onto ring points, where bisect_right (the first point > the key) decides.
"""
import builtins
import collections
import hashlib
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
COMPAT = os.path.dirname(HERE)
PEER = os.environ.get("PEER", "hash_ring")


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
        print(f"hash_ring: skipped {skipped} keys that are not UTF-8", file=sys.stderr)
    return keys


class _Md5Py2:
    """hashlib.md5 as Python 2's md5.new(): update() takes str, digest() returns a byte str."""

    def __init__(self):
        self._h = hashlib.md5()

    def update(self, s):
        self._h.update(s.encode("utf-8"))

    def digest(self):
        return self._h.digest().decode("latin-1")


class _Py2Int(int):
    """An int whose `/` is Python 2's integer (floor) division."""

    def _wrap(v):
        return _Py2Int(v) if isinstance(v, int) else v

    __mul__ = lambda a, b: _Py2Int._wrap(int.__mul__(a, b))
    __rmul__ = lambda a, b: _Py2Int._wrap(int.__rmul__(a, b))
    __add__ = lambda a, b: _Py2Int._wrap(int.__add__(a, b))
    __radd__ = lambda a, b: _Py2Int._wrap(int.__radd__(a, b))
    __truediv__ = lambda a, b: int(a) // int(b)
    __rtruediv__ = lambda a, b: int(b) // int(a)


def load_release(path):
    """The 1.3.1 release's HashRing class, run under Python 3 with Python 2 shims."""
    md5_module = types.ModuleType("md5")
    md5_module.new = _Md5Py2
    sys.modules["md5"] = md5_module
    module = types.ModuleType("hash_ring_1_3_1")
    module.xrange = range
    module.map = lambda f, it: list(builtins.map(f, it))
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), module.__dict__)
    return module.HashRing


def hosts(n, port=11211):
    return [f"10.0.{i // 250}.{i % 250 + 1}:{port}" for i in range(n)]


def with_point_keys(keys, nodes):
    have = {h for h, _ in keys}
    extra = [f"{n}-{i}" for n in nodes for i in range(4)] + [f"{n}-28" for n in nodes]
    return keys + [(k.encode().hex(), k) for k in extra if k.encode().hex() not in have]


def tied_keys(ring, keys):
    """How many keys the peer places on a position two points share (dict: the last one wins)."""
    counts = collections.Counter(ring._sorted_keys)
    return sum(1 for _, key in keys if counts[ring._sorted_keys[ring.get_node_pos(key)]] > 1)


def lines(ring, keys, replicas):
    for hexkey, key in keys:
        if replicas == 1:
            got = [ring.get_node(key)]
        else:
            it = ring.iterate_nodes(key)
            got = [next(it) for _ in range(replicas)]
        assert all(g is not None for g in got), key
        yield hexkey + "\t" + "\t".join(got) + "\n"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    from hash_ring import HashRing  # the checkout's package, as users import it

    release = load_release(sys.argv[2]) if len(sys.argv) == 3 else None
    keys = load_keys()
    five = ["cache-a", "cache-b", "cache-c", "cache-d", "cache-e"]
    cases = [
        # (case, nodes, weights, replicas); hash_ring has no other setting (40 x 3 points each).
        ("one", hosts(1), {}, 1),
        ("two", hosts(2), {}, 1),
        ("five", five, {}, 1),
        ("weighted", five,
         {"cache-a": 1, "cache-b": 2, "cache-c": 1, "cache-d": 3, "cache-e": 5}, 1),
        ("drained", five,
         {"cache-a": 2, "cache-b": 1, "cache-c": 0, "cache-d": 1, "cache-e": 1}, 1),
        ("many", hosts(50), {}, 1),
        # Two nodes with a shared point (found by search: md5("node-546-28") and
        # md5("node-699-28") share their first four bytes): the node listed last owns it (dict
        # assignment).
        ("tie", ["node-546", "node-699"], {}, 1),
        ("many-weighted", hosts(50), {h: 1 + i % 7 for i, h in enumerate(hosts(50))}, 1),
        # Names are hashed as written: a default port (11211) is not dropped.
        ("names", ["10.0.0.1", "10.0.0.2:11211", "10.0.0.3:11212", "memcache-4", "[::1]:11211"],
         {}, 1),
        ("replicas3", hosts(7), {}, 3),
        ("replicas-all", five, {"cache-a": 1, "cache-b": 2, "cache-c": 1, "cache-d": 1,
                                "cache-e": 1}, 5),
    ]
    for case, nodes, weights, replicas in cases:
        ring = HashRing(list(nodes), dict(weights) if weights else None)
        case_keys = with_point_keys(keys, nodes)
        ties = tied_keys(ring, case_keys)
        if case == "tie" and ties == 0:
            sys.exit("hash_ring__tie: no key lands on a tied position")
        body = list(lines(ring, case_keys, replicas))
        if release is not None:
            py2_weights = {n: _Py2Int(weights.get(n, 1)) for n in nodes}
            old = list(lines(release(list(nodes), py2_weights), case_keys, replicas))
            if old != body:
                sys.exit(f"hash_ring: the 1.3.1 release disagrees with the checkout on {case}")
        path = os.path.join(COMPAT, "vectors", f"hash_ring__{case}.tsv")
        with open(path, "w") as f:
            f.write(f"# peer: {PEER}\n")
            f.write("# command: tests/compat/hash_ring/generate.sh CHECKOUT\n")
            f.write("# keys: keys.hex, then the point names <node>-0..3 and <node>-28\n")
            f.write("@preset hash_ring\n")
            if replicas > 1:
                f.write(f"@option replicas {replicas}\n")
            for n in nodes:
                f.write(f"@node {n} {weights.get(n, 1)}\n")
            f.writelines(body)
        checked = " (1.3.1 release agrees)" if release is not None else ""
        print(f"wrote {path} ({len(body)} keys, {ties} on tied points){checked}", file=sys.stderr)


if __name__ == "__main__":
    main()
