# SPDX-License-Identifier: Apache-2.0
"""chash.compat.uhashring.HashRing against the real uhashring 2.1 (Debian python3-uhashring)."""
import hashlib
import random
import zlib

import pytest

from chash.compat import uhashring as ours

uhashring = pytest.importorskip("uhashring")

rng = random.Random(16)
KEYS = ([f"user:{i}" for i in range(3000)] + [f"k{rng.getrandbits(64):x}" for i in range(2000)] +
        ["", "ключ", "{tag}x", 42, 3.5, b"bytes-key", None])
HOSTS = [f"10.0.0.{i}:11211" for i in range(1, 9)]
MODES = [dict(), dict(hash_fn="ketama"), dict(vnodes=40), dict(hash_fn="ketama", vnodes=160)]


def same(a, b, keys=KEYS):
    for k in keys:
        assert a.get_node(k) == b.get_node(k), k
    assert a.get_nodes_many(keys) == [b.get_node(k) for k in keys]
    # Any iterable, as a list comprehension would take it.
    assert a.get_nodes_many(iter(keys)) == a.get_nodes_many(tuple(keys))
    for k in keys[:300]:
        assert a.get_server(k) == b.get_server(k), k
        assert list(a.range(k, size=3)) == list(b.range(k, size=3)), k
        assert a.get_node_pos(k) == b.get_node_pos(k), k
        assert list(a.iterate_nodes(k)) == list(b.iterate_nodes(k)), k
        assert a[k] == b[k]
    assert list(a.range("x", unique=False))[:50] == list(b.range("x", unique=False))[:50]
    assert a.get_points() == b.get_points()
    assert a.distribution == b.distribution
    assert a.size == b.size
    assert list(a.get_nodes()) == list(b.get_nodes())


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("nodes", [
    HOSTS[:3],
    HOSTS,
    "single-node",
    {h: i % 3 + 1 for i, h in enumerate(HOSTS)},
    {h: {"weight": i % 2 + 1, "instance": f"client-{i}"} for i, h in enumerate(HOSTS[:5])},
    {"a": 1, "b": 0, "c": 2},
], ids=["three", "eight", "str", "weighted", "conf", "drained"])
def test_same_answers_as_uhashring(mode, nodes):
    same(ours.HashRing(nodes, **mode), uhashring.HashRing(nodes, **mode))


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_add_remove_and_reweight_track_uhashring(mode):
    a, b = ours.HashRing(HOSTS[:4], **mode), uhashring.HashRing(HOSTS[:4], **mode)
    steps = [
        lambda r: r.add_node("10.0.1.1:11211"),
        lambda r: r.add_node("10.0.1.2:11211", {"weight": 3}),
        lambda r: r.remove_node(HOSTS[1]),
        lambda r: r.__setitem__("10.0.1.3:11211", {"weight": 2, "instance": "c3"}),
        lambda r: r.__delitem__("10.0.1.1:11211"),
        lambda r: r.add_node(HOSTS[1]),
    ]
    for step in steps:
        step(a)
        step(b)
        same(a, b, KEYS[:2000])


def test_weight_fn_and_per_node_vnodes():
    nodes = {h: {"weight": 1, "vnodes": 100 + 20 * i} for i, h in enumerate(HOSTS[:4])}
    same(ours.HashRing(nodes), uhashring.HashRing(nodes))
    fn = lambda **conf: len(conf["hostname"]) % 3 + 1  # noqa: E731
    same(ours.HashRing(HOSTS, weight_fn=fn), uhashring.HashRing(HOSTS, weight_fn=fn))


def test_empty_ring_and_errors_match():
    a, b = ours.HashRing(), uhashring.HashRing()
    assert a.get_node("k") is None and b.get_node("k") is None
    assert a.get_server("k") is None and b.get_server("k") is None
    with pytest.raises(KeyError):
        a.remove_node("nope")
    with pytest.raises(ValueError):
        ours.HashRing(42)
    with pytest.raises(ValueError):
        ours.HashRing({"a": "x"})
    for bad in ("md5", 3):
        with pytest.raises(TypeError):
            uhashring.HashRing(["a"], hash_fn=bad)
        with pytest.raises(TypeError):
            ours.HashRing(["a"], hash_fn=bad)
    with pytest.raises(TypeError):
        ours.HashRing(["a"], weight_fn="x")
    # uhashring takes a false hash_fn or weight_fn as "none given"
    same(ours.HashRing(HOSTS, hash_fn="", weight_fn=0), uhashring.HashRing(HOSTS, hash_fn="",
                                                                          weight_fn=0))


def crc(key):
    return zlib.crc32(str(key).encode("utf-8"))


def crc_small(key):  # a tiny hash space: points collide, the last one written wins
    return zlib.crc32(str(key).encode("utf-8")) % 500


def md5_hex(key):  # positions that are str, compared as str
    return hashlib.md5(repr(key).encode("utf-8")).hexdigest()


# Rings chash has no preset for, kept in Python the way uhashring keeps them.
PY_MODES = [dict(hash_fn=crc), dict(hash_fn=crc_small, vnodes=20), dict(hash_fn=md5_hex),
            dict(hash_fn="ketama", replicas=1), dict(hash_fn="ketama", replicas=3),
            dict(hash_fn="ketama", replicas=2, vnodes=80)]


@pytest.mark.parametrize("mode", PY_MODES, ids=str)
@pytest.mark.parametrize("nodes", [
    HOSTS[:3],
    {h: i % 3 + 1 for i, h in enumerate(HOSTS)},
    {h: {"weight": i % 2 + 1, "vnodes": 10 + 7 * i} for i, h in enumerate(HOSTS[:5])},
], ids=["three", "weighted", "vnodes"])
def test_rings_kept_in_python_match(mode, nodes):
    same(ours.HashRing(nodes, **mode), uhashring.HashRing(nodes, **mode))


def test_ketama_per_node_vnodes_and_more_replicas_than_a_digest_has():
    nodes = {h: {"weight": 1 + i % 2, "vnodes": 20 + 10 * i} for i, h in enumerate(HOSTS)}
    same(ours.HashRing(nodes, hash_fn="ketama"), uhashring.HashRing(nodes, hash_fn="ketama"))
    with pytest.raises(IndexError):
        uhashring.HashRing(HOSTS, hash_fn="ketama", replicas=5)
    with pytest.raises(IndexError):
        ours.HashRing(HOSTS, hash_fn="ketama", replicas=5)


def test_a_node_reconfigured_to_fewer_points_keeps_its_old_ones():
    # uhashring adds points on reconfiguration and removes the current count: after weight 3 ->
    # 1 and a removal, the node's points 160..479 stay in the ring.
    a, b = ours.HashRing(HOSTS[:4]), uhashring.HashRing(HOSTS[:4])
    for r in (a, b):
        r.add_node(HOSTS[1], {"weight": 3})
        r.add_node(HOSTS[1], {"weight": 1})
    same(a, b, KEYS[:2000])
    for r in (a, b):
        r.remove_node(HOSTS[1])
    assert a.get_nodes_many(KEYS) == [b.get_node(k) for k in KEYS]
    assert HOSTS[1] in a.get_nodes_many(KEYS)  # the ghost still owns keys, as in uhashring
    assert a.get_points() == b.get_points() and a.distribution == b.distribution
    for r in (a, b):
        r.add_node("10.0.9.9:11211", {"weight": 2})
        r.regenerate()
    assert a.get_nodes_many(KEYS) == [b.get_node(k) for k in KEYS]
    assert a.get_points() == b.get_points() and a.distribution == b.distribution
    with pytest.raises(KeyError):  # the ghost has no configuration: uhashring's get() fails too
        b.get(next(k for k in KEYS if b.get_node(k) == HOSTS[1]))
    with pytest.raises(KeyError):
        a.get(next(k for k in KEYS if a.get_node(k) == HOSTS[1]))


def outcome(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e)
    return None


@pytest.mark.parametrize("mode", MODES + PY_MODES, ids=str)
def test_random_changes_track_uhashring(mode):
    rnd = random.Random(str(mode))
    names = [f"cache-{i}" for i in range(12)]
    start = {n: rnd.randint(1, 3) for n in names[:4]}
    a, b = ours.HashRing(dict(start), **mode), uhashring.HashRing(dict(start), **mode)
    keys = KEYS[:2000]
    for _ in range(25):
        name = rnd.choice(names)
        op = rnd.randrange(5)
        if op == 0:
            step = lambda r: r.add_node(name)  # noqa: E731
        elif op == 1:
            conf = {"weight": rnd.randint(0, 3)}
            if rnd.random() < 0.3:
                conf["vnodes"] = rnd.choice([5, 40, 160])
            step = lambda r: r.__setitem__(name, dict(conf))  # noqa: E731
        elif op in (2, 3):
            step = lambda r: r.remove_node(name)  # noqa: E731
        else:
            step = lambda r: r.regenerate()  # noqa: E731
        assert outcome(lambda: step(a)) == outcome(lambda: step(b))
        assert outcome(lambda: a.get_nodes_many(keys)) == outcome(
            lambda: [b.get_node(k) for k in keys])
        if outcome(lambda: [b.get_node(k) for k in keys]) is None:
            assert a.get_nodes_many(keys) == [b.get_node(k) for k in keys]
        assert a.distribution == b.distribution
        assert outcome(a.get_points) == outcome(b.get_points)
        if outcome(b.get_points) is None:  # a failed removal leaves uhashring's list stale
            assert a.get_points() == b.get_points()
        assert dict(a.nodes) == dict(b.nodes)


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_keys_that_are_point_names_land_on_their_point(mode):
    # "<node>-<i>" hashes to the point itself: the search's tie rule (bisect_right) decides.
    keys = [f"{h}-{i}" for h in HOSTS for i in range(200)]
    a, b = ours.HashRing(HOSTS, **mode), uhashring.HashRing(HOSTS, **mode)
    assert a.get_nodes_many(keys) == [b.get_node(k) for k in keys]
    assert [a.get_node(k) for k in keys] == [b.get_node(k) for k in keys]


@pytest.mark.parametrize("mode", MODES, ids=str)
@pytest.mark.parametrize("nodes", [[""], ["", "a", "b"], [1, "1", 2], [1, 2, 3]], ids=str)
def test_node_names_chash_refuses_are_kept_in_python(mode, nodes):
    # chash refuses an empty name and two nodes named alike ("1" twice once str()'d); uhashring
    # takes both (the later node's points overwrite the earlier's).
    a, b = ours.HashRing(list(nodes), **mode), uhashring.HashRing(list(nodes), **mode)
    same(a, b, KEYS[:1000])
    for r in (a, b):
        r.add_node("c", {"weight": 2})
        r.remove_node(nodes[0])
    same(a, b, KEYS[:1000])
