#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Self-check of the article vectors (run by generate.sh after writing them).

For every vectors/<preset>__<case>.tsv of the five article presets, prints the number of keys
and of distinct nodes chosen, and recomputes every line with a second, independent
implementation written here in Python from the articles' descriptions:
  murmur3_x64_128 (Guava's murmur3_128: asInt = the low 4 bytes of h1, asLong = h1, little-
  endian), Java's String.hashCode over UTF-16 code units with Math.abs on int32, MurmurHash64A
  with seed 0x1234ABCD, and the MD5 ring with a linear scan as article 003 writes it.
Any disagreement, or one node chosen where there are several, is an error (exit 1).

MurmurHash64A is also checked against the real Jedis: jedis__one.tsv / jedis__two.tsv
(Jedis 3.x Sharded, Hashing.MURMUR_HASH = the same hash and seed) are recomputed when present.
"""
import bisect
import glob
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(os.path.dirname(HERE), "vectors")
PRESETS = ("guava-iphash", "guava-treemap", "java-hashcode-ring", "python-md5-ring",
           "murmur64a-treemap")
M64 = (1 << 64) - 1


def signed(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def rotl64(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def fmix64(k):
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & M64
    k ^= k >> 33
    return k


def murmur3_x64_128(data, seed=0):
    """(h1, h2) of MurmurHash3_x64_128 (Austin Appleby's reference)."""
    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
    h1 = h2 = seed
    n = len(data)
    nblocks = n // 16
    for b in range(nblocks):
        k1 = int.from_bytes(data[16 * b:16 * b + 8], "little")
        k2 = int.from_bytes(data[16 * b + 8:16 * b + 16], "little")
        k1 = (rotl64((k1 * c1) & M64, 31) * c2) & M64
        h1 ^= k1
        h1 = (((rotl64(h1, 27) + h2) & M64) * 5 + 0x52DCE729) & M64
        k2 = (rotl64((k2 * c2) & M64, 33) * c1) & M64
        h2 ^= k2
        h2 = (((rotl64(h2, 31) + h1) & M64) * 5 + 0x38495AB5) & M64
    tail = data[16 * nblocks:]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (rotl64((k2 * c2) & M64, 33) * c1) & M64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (rotl64((k1 * c1) & M64, 31) * c2) & M64
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & M64
    h2 = (h2 + h1) & M64
    h1 = fmix64(h1)
    h2 = fmix64(h2)
    h1 = (h1 + h2) & M64
    h2 = (h2 + h1) & M64
    return h1, h2


def guava_as_long(s):
    return signed(murmur3_x64_128(s.encode("utf-8"))[0], 64)


def guava_as_int(s):
    return signed(murmur3_x64_128(s.encode("utf-8"))[0], 32)


def java_hashcode(s):
    units = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    return signed(h, 32)


def java_abs_int(v):
    # Math.abs(int): -2**31 has no positive int and stays -2**31.
    return signed(abs(v), 32)


def murmur64a(data, seed=0x1234ABCD):
    m, r = 0xC6A4A7935BD1E995, 47
    h = (seed ^ (len(data) * m)) & M64
    n8 = len(data) // 8 * 8
    for i in range(0, n8, 8):
        k = (int.from_bytes(data[i:i + 8], "little") * m) & M64
        k ^= k >> r
        k = (k * m) & M64
        h ^= k
        h = (h * m) & M64
    if len(data) > n8:
        h ^= int.from_bytes(data[n8:], "little")
        h = (h * m) & M64
    h ^= h >> r
    h = (h * m) & M64
    h ^= h >> r
    return signed(h, 64)


def md5_position(s):
    return int(hashlib.md5(s.encode()).hexdigest(), 16) % (2**32)


class SortedRing:
    """(position, node) puts in order; a later put on a taken position owns it."""

    def __init__(self):
        self.owner = {}

    def put(self, pos, node):
        self.owner[pos] = node

    def freeze(self):
        self.positions = sorted(self.owner)
        return self

    def first_at_or_after(self, pos):
        i = bisect.bisect_left(self.positions, pos)
        return self.owner[self.positions[i] if i < len(self.positions) else self.positions[0]]


def load(path):
    preset, vnodes, nodes, lines = None, None, [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if line.startswith("@"):
                parts = line.split(" ")
                if parts[0] == "@preset":
                    preset = parts[1]
                elif parts[0] == "@option" and parts[1] == "vnodes":
                    vnodes = int(parts[2])
                elif parts[0] == "@node":
                    nodes.append((parts[1], int(parts[2])))
                else:
                    raise ValueError(f"{path}: unexpected {line}")
                continue
            key_hex, node = line.split("\t")
            lines.append((bytes.fromhex(key_hex), node))
    return preset, vnodes, nodes, lines


def router(preset, vnodes, nodes):
    names = [n for n, _ in nodes]
    if preset == "guava-iphash":
        # Math.abs(h % n): Java's % truncates, so this is abs(h) % n.
        return lambda k: names[abs(guava_as_int(k)) % len(names)]
    ring = SortedRing()
    if preset == "guava-treemap":
        count = 150 if vnodes is None else vnodes
        for n in names:
            ring.put(guava_as_long(n), n)
            for i in range(count):
                ring.put(guava_as_long(f"{n}#VN{i}"), n)
        ring.freeze()
        return lambda k: ring.first_at_or_after(guava_as_long(k))
    if preset == "java-hashcode-ring":
        count = 3 if vnodes is None else vnodes
        for n in names:
            ring.put(java_abs_int(java_hashcode(n)), n)
            for i in range(count):
                ring.put(java_abs_int(java_hashcode(f"{n}#{i}")), n)
        ring.freeze()
        return lambda k: ring.first_at_or_after(java_abs_int(java_hashcode(k)))
    if preset == "murmur64a-treemap":
        count = 500 if vnodes is None else vnodes
        for n in names:
            for i in range(count):
                ring.put(murmur64a(f"{n}{i}".encode()), n)
        ring.freeze()
        return lambda k: ring.first_at_or_after(murmur64a(k.encode()))
    if preset == "python-md5-ring":
        count = 150 if vnodes is None else vnodes
        owner, order = {}, []
        for n, w in nodes:
            for i in range(count * w):
                p = md5_position(f"{n}_v{i}")
                owner[p] = n
                order.append(p)
        order.sort()

        def scan(k):  # the article's linear scan
            p = md5_position(k)
            for q in order:
                if q >= p:
                    return owner[q]
            return owner[order[0]]
        return scan
    raise ValueError(preset)


def jedis_router(nodes):
    """Jedis 3.x Sharded with unnamed JedisShardInfo: points SHARD-<i>-NODE-<n>, 160 * weight."""
    ring = SortedRing()
    for i, (n, w) in enumerate(nodes):
        for j in range(160 * w):
            ring.put(murmur64a(f"SHARD-{i}-NODE-{j}".encode()), n)
    ring.freeze()
    return lambda raw: ring.first_at_or_after(murmur64a(raw))


def main():
    errors = 0
    files = sorted(f for p in PRESETS for f in glob.glob(os.path.join(VECTORS, f"{p}__*.tsv")))
    for path in files:
        preset, vnodes, nodes, lines = load(path)
        route = router(preset, vnodes, nodes)
        wrong = 0
        for raw, node in lines:
            if route(raw.decode("utf-8")) != node:
                wrong += 1
        chosen = {node for _, node in lines}
        ok = wrong == 0 and (len(nodes) == 1 or len(chosen) > 1)
        errors += not ok
        print(f"{os.path.basename(path)}: {len(lines)} keys, {len(chosen)} of {len(nodes)} nodes"
              f" chosen; {'all agree' if wrong == 0 else f'{wrong} DISAGREE'} with the Python"
              " re-check"
              f"{'' if ok else '  <-- ERROR'}")
    if not files:
        print("no article vector files", file=sys.stderr)
        errors += 1
    for case in ("one", "two"):
        path = os.path.join(VECTORS, f"jedis__{case}.tsv")
        if not os.path.exists(path):
            continue
        _, _, nodes, lines = load(path)
        route = jedis_router(nodes)
        wrong = sum(1 for raw, node in lines if route(raw) != node)
        errors += wrong != 0
        print(f"MurmurHash64A vs the real Jedis ({os.path.basename(path)}): {len(lines)} keys,"
              f" {wrong} disagree")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
