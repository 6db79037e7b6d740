# SPDX-License-Identifier: Apache-2.0
"""chash.compat.uhashring.HashRing against the real uhashring 2.1 (Debian python3-uhashring)."""
import random

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
    with pytest.raises(NotImplementedError):
        ours.HashRing(["a"], hash_fn=lambda k: 1)
