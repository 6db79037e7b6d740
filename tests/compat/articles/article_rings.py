#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes one tests/compat/vectors/python-md5-ring__<case>.tsv: the node the Python ring of
article 003 ("优雅求模一致性哈希算法", ConsistentHashRing) picks for each key.

The article's ring, re-implemented here with the same behaviour (not copied):
  position(s) = int(md5(s.encode()).hexdigest(), 16) % 2**32
  add_node(node): for i in range(vnodes): ring[position(f"{node}_v{i}")] = node, and the
                  position is appended to a list that is then sorted (vnodes defaults to 150)
  get_node(key):  the first listed position >= position(key) -> ring[it], else
                  ring[<the smallest position>]
Nodes are added in the order given. A position two points share is owned by the node written
last (dict assignment), as in the article. The article's section 4.1 weights a node by its
number of virtual nodes; here a node of weight w gets vnodes * w points, named _v0 ..
_v{vnodes * w - 1} (weight 1 is the article's ring).

    /usr/bin/python3 article_rings.py OUT PEER KEYS VNODES NODE WEIGHT [NODE WEIGHT ...]

VNODES is "-" for the default (no @option line) or a number (@option vnodes N). Keys are given
as the str their UTF-8 bytes decode to; a key that is not UTF-8 is skipped and counted in a #
line. After the keys of keys.hex come the article's own test keys (data_1 .. data_5,
my_cache_key) and, per node, the point names <node>_v0, <node>_v1 and the last one, which hash
exactly onto a point (the ">=" decides them).
"""
import bisect
import hashlib
import sys

DEFAULT_VNODES = 150


def position(s):
    return int(hashlib.md5(s.encode()).hexdigest(), 16) % (2**32)


class Ring:
    def __init__(self, vnodes):
        self.vnodes = vnodes
        self.ring = {}  # position -> node
        self.sorted_keys = []  # every position appended, duplicates kept, as the article does
        self.puts = 0
        self.same_node = 0
        self.taken_over = 0

    def add_node(self, node, weight=1):
        for i in range(self.vnodes * weight):
            p = position(f"{node}_v{i}")
            before = self.ring.get(p)
            if before is not None:
                if before == node:
                    self.same_node += 1
                else:
                    self.taken_over += 1
            self.puts += 1
            self.ring[p] = node
            self.sorted_keys.append(p)
        self.sorted_keys.sort()

    def get_node(self, key):
        # The article scans sorted_keys for the first position >= the key's; bisect_left finds
        # the same one.
        p = position(key)
        i = bisect.bisect_left(self.sorted_keys, p)
        return self.ring[self.sorted_keys[i] if i < len(self.sorted_keys) else self.sorted_keys[0]]


def main():
    if len(sys.argv) < 7 or (len(sys.argv) - 5) % 2 != 0:
        sys.exit("usage: article_rings.py OUT PEER KEYS VNODES NODE WEIGHT [NODE WEIGHT ...]")
    out, peer, keys_path, vnodes_arg = sys.argv[1:5]
    rest = sys.argv[5:]
    nodes = [(rest[i], int(rest[i + 1])) for i in range(0, len(rest), 2)]
    assert len({n for n, _ in nodes}) == len(nodes), "duplicate node"
    vnodes = DEFAULT_VNODES if vnodes_arg == "-" else int(vnodes_arg)

    keys, seen, skipped = [], set(), 0
    with open(keys_path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            raw = bytes.fromhex(line)
            try:
                s = raw.decode("utf-8")
            except UnicodeDecodeError:
                skipped += 1
                continue
            assert s.encode() == raw, line
            if s not in seen:
                seen.add(s)
                keys.append(s)
    from_file = len(keys)

    ring = Ring(vnodes)
    for name, weight in nodes:
        ring.add_node(name, weight)

    extra = [f"data_{i}" for i in range(1, 6)] + ["my_cache_key"]
    for name, weight in nodes:
        count = vnodes * weight
        extra += [f"{name}_v{i}" for i in sorted({0, 1, count - 1}) if 0 <= i < count]
    for k in extra:
        if k not in seen:
            seen.add(k)
            keys.append(k)

    chosen = set()
    with open(out, "w", encoding="utf-8") as f:
        f.write(f"# peer: {peer}\n")
        f.write("# command: tests/compat/articles/generate.sh\n")
        f.write(
            f"# keys: the {from_file} keys of keys.hex that are UTF-8 ({skipped} skipped: Python"
            f" takes str), then {len(keys) - from_file} more: the article's data_1..data_5 and"
            " my_cache_key, then per node <node>_v0, <node>_v1 and its last point name\n")
        f.write(f"# ring: {ring.puts} puts, {len(ring.ring)} positions; "
                f"{ring.same_node + ring.taken_over} puts onto a position already held "
                f"({ring.taken_over} by another node, which the later node now owns)\n")
        if any(w != 1 for _, w in nodes):
            f.write(f"# weights: a node of weight w has {vnodes} * w points, <node>_v0 .."
                    f" <node>_v{{{vnodes} * w - 1}} (the article's weights by vnode count)\n")
        f.write("@preset python-md5-ring\n")
        if vnodes_arg != "-":
            f.write(f"@option vnodes {vnodes}\n")
        for name, weight in nodes:
            f.write(f"@node {name} {weight}\n")
        for k in keys:
            node = ring.get_node(k)
            chosen.add(node)
            f.write(f"{k.encode().hex()}\t{node}\n")
    if len(nodes) > 1 and len(chosen) < 2:
        sys.exit(f"{out}: every key went to one node")


if __name__ == "__main__":
    main()
