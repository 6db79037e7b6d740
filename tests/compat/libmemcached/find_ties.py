#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Finds two servers whose rings share point values, for the "tie" vector cases.

Where two servers put a point on the same ring position, which one owns it is decided by how the
peer orders equal points (libmemcached: its qsort comparator falls back to the server index;
libketama: glibc's qsort, a stable merge sort, keeps file order). Random names seldom tie, so
this tries server names "10.0.X.Y:11211" until some pairs collide, and picks the pair for which
the most keys of keys.hex change owner when the two (alone on the ring) swap places in the
server list. The peer produces the vectors; this only chooses the node list and predicts how many
keys must change owner between the "tie" and "tie-swapped" files (generate.sh checks it).

    find_ties.py SCHEME KEYS.hex   ->   "<name A> <name B> <keys that change owner>"

SCHEME (two servers of equal weight in each):
  ketama      libmemcached weighted ketama: MD5 of "host-i" (port 11211 is left out), i < 40,
              four points per digest; keys hashed with MD5 (first four digest bytes, LE)
  ketama-spy  the same with "/host:port-i"
  consistent  libmemcached unweighted: one_at_a_time of "host-i", i < 100, one point each;
              keys hashed with one_at_a_time (bytes read as signed char, as libhashkit does).
              one_at_a_time collides often on such names: the pair found shares 28 points.
  libketama   libketama: MD5 of "host:port-i", i < 40, four points per digest; keys MD5
"""
import bisect
import hashlib
import sys


def md5_points(s):
    d = hashlib.md5(s.encode()).digest()
    return [int.from_bytes(d[4 * h:4 * h + 4], "little") for h in range(4)]


def md5_key(k):
    return int.from_bytes(hashlib.md5(k).digest()[:4], "little")


def oaat(data):
    h = 0
    for b in data:
        h = (h + ((b - 256) if b >= 128 else b)) & 0xFFFFFFFF  # signed char, as libhashkit
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


def points(scheme, name):
    host = name[:-len(":11211")]
    if scheme == "ketama":
        return [p for i in range(40) for p in md5_points(f"{host}-{i}")]
    if scheme == "ketama-spy":
        return [p for i in range(40) for p in md5_points(f"/{name}-{i}")]
    if scheme == "consistent":
        return [oaat(f"{host}-{i}".encode()) for i in range(100)]
    if scheme == "libketama":
        return [p for i in range(40) for p in md5_points(f"{name}-{i}")]
    raise SystemExit(f"unknown scheme {scheme}")


def owners(ring, key_positions):
    """Owner index of each key: the first point >= its position (the lower index first among
    equal points), wrapping to the first point."""
    values = [v for v, _ in ring]
    out = []
    for k in key_positions:
        i = bisect.bisect_left(values, k)
        out.append(ring[i % len(ring)][1])
    return out


def flips(scheme, a, b, key_positions):
    """Keys whose owner changes when a and b swap places in the server list."""
    first = sorted([(p, a) for p in points(scheme, a)] + [(p, b) for p in points(scheme, b)],
                   key=lambda t: (t[0], t[1] != a))
    second = sorted(first, key=lambda t: (t[0], t[1] != b))
    return sum(x != y for x, y in zip(owners(first, key_positions), owners(second, key_positions)))


def main():
    scheme, keys_path = sys.argv[1], sys.argv[2]
    keys = [bytes.fromhex(l.strip()) for l in open(keys_path) if l.strip()]
    key_hash = oaat if scheme == "consistent" else md5_key
    key_positions = sorted(key_hash(k) for k in keys)

    owner_of_value = {}
    pairs = []
    for i in range(6000):
        name = f"10.0.{i // 256}.{i % 256}:11211"
        for p in set(points(scheme, name)):
            other = owner_of_value.get(p)
            if other is not None and other != name:
                pairs.append((other, name, p))
            owner_of_value.setdefault(p, name)
    best = None
    for a, b, _ in pairs:
        n = flips(scheme, a, b, key_positions)
        if best is None or n > best[2]:
            best = (a, b, n)
    if best is None or best[2] == 0:
        raise SystemExit("find_ties: no usable tie found")
    print(*best)


if __name__ == "__main__":
    main()
