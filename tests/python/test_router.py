# SPDX-License-Identifier: Apache-2.0
"""chash.Router: the C++ CLI's answers, every preset, batches, failover, bad input, threads."""
import subprocess
import threading

import pytest

import chash

KEYS = [f"user:{i}" for i in range(2000)] + ["", "{tag}a", "{tag}b", "ключ", "x" * 300]
NODES = [f"10.0.0.{i}:11211" for i in range(1, 8)]


def cli_route(cli, args, nodes, keys):
    out = subprocess.run([cli, "route", *args, "--nodes", ",".join(nodes)],
                         input="\n".join(keys) + "\n", capture_output=True, text=True,
                         check=True).stdout
    return out.splitlines()


@pytest.mark.parametrize("kwargs,args", [
    (dict(preset="ketama"), ["--preset", "ketama"]),
    (dict(preset="twemproxy"), ["--preset", "twemproxy"]),
    (dict(preset="twemproxy", hash="fnv1a_64", hash_tag="{}"),
     ["--preset", "twemproxy", "--hash", "fnv1a_64", "--hash-tag", "{}"]),
    (dict(preset="uhashring"), ["--preset", "uhashring"]),
    (dict(preset="jedis"), ["--preset", "jedis"]),
    (dict(algorithm="ring"), ["--algo", "ring"]),
    (dict(algorithm="ring", vnodes=40, hash="md5"), ["--algo", "ring", "--vnodes", "40", "--hash", "md5"]),
    (dict(algorithm="maglev"), ["--algo", "maglev"]),
    (dict(algorithm="jump"), ["--algo", "jump"]),
    (dict(algorithm="jumpback"), ["--algo", "jumpback"]),
    (dict(algorithm="memento-jumpback"), ["--algo", "memento-jumpback"]),
    (dict(algorithm="rendezvous"), ["--algo", "rendezvous"]),
    (dict(algorithm="slots"), ["--algo", "slots"]),
])
def test_route_matches_the_cli(cli, kwargs, args):
    keys = [k for k in KEYS if k]  # the CLI reads one key a line; the empty line is not a key
    r = chash.Router(NODES, **kwargs)
    assert r.route_many(keys) == cli_route(cli, args, NODES, keys)


def test_every_preset_builds_and_routes():
    addresses = set(chash.address_presets())
    assert "ketama" in chash.presets() and "uhashring" in chash.presets()
    for name in chash.presets():
        r = chash.Router(NODES, preset=name)
        keys = [f"192.168.{i // 250}.{i % 250}" for i in range(500)] if name in addresses else KEYS
        got = r.route_many(keys)
        assert set(got) <= set(NODES), name
        assert got == [r.route(k) for k in keys], name


@pytest.mark.parametrize("algorithm", chash.algorithms())
def test_every_algorithm_route_many_equals_route(algorithm):
    r = chash.Router(NODES, algorithm=algorithm)
    assert r.route_many(KEYS) == [r.route(k) for k in KEYS]
    assert r.route_many(k.encode() for k in KEYS) == r.route_many(KEYS)


def test_node_forms_are_equivalent():
    a = chash.Router([("a", 1), ("b", 2), ("c", 1)], preset="ketama")
    b = chash.Router({"a": 1, "b": 2, "c": 1}, preset="ketama")
    assert a.route_many(KEYS) == b.route_many(KEYS)
    assert a.nodes == ["a", "b", "c"] and a.weights == {"a": 1, "b": 2, "c": 1}
    plain = chash.Router(["a", "b", "c"])
    assert plain.weights == {"a": 1, "b": 1, "c": 1} and len(plain) == 3
    assert chash.Router([b"a", b"b"]).route(b"k") in (b"a", b"b")


def test_route_n_is_distinct_and_starts_with_route():
    r = chash.Router(NODES, preset="ketama")
    for k in KEYS[:200]:
        got = r.route_n(k, 3)
        assert len(got) == 3 and len(set(got)) == 3 and got[0] == r.route(k)
    assert sorted(r.route_n("k", 100)) == sorted(NODES)
    assert r.route_n("k", 0) == []


def test_mark_down_moves_only_that_nodes_keys():
    r = chash.Router(NODES, preset="twemproxy")
    before = r.route_many(KEYS)
    second = {k: r.route_n(k, 2)[1] for k in KEYS}
    r.mark_down(NODES[2])
    assert r.down == [NODES[2]] and r.is_down(NODES[2])
    after = r.route_many(KEYS)
    assert after == [r.route(k) for k in KEYS]
    for k, b, a in zip(KEYS, before, after):
        if b == NODES[2]:
            assert a == second[k], k  # its own next choice
        else:
            assert a == b, k
    r.mark_up(NODES[2])
    assert r.route_many(KEYS) == before


def test_add_and_remove_return_new_routers():
    r = chash.Router(NODES, algorithm="ring")
    bigger = r.add("10.0.0.99:11211", 2)
    assert r.nodes == NODES and bigger.nodes == NODES + ["10.0.0.99:11211"]
    assert bigger.weights["10.0.0.99:11211"] == 2
    smaller = bigger.remove("10.0.0.99:11211")
    assert smaller.route_many(KEYS) == r.route_many(KEYS)
    moved = sum(a != b for a, b in zip(r.route_many(KEYS), bigger.route_many(KEYS)))
    assert 0 < moved < len(KEYS) / 2
    r.mark_down(NODES[0])
    assert r.add("x").down == [NODES[0]]


def test_distribution_counts_every_key():
    r = chash.Router({"a": 1, "b": 3})
    d = r.distribution(KEYS)
    assert set(d) == {"a", "b"} and sum(d.values()) == len(KEYS) and d["b"] > d["a"]


def test_slot_and_hash_check_values():
    assert chash.slot("123456789") == 12739  # 0x31C3 & 0x3FFF, Redis cluster.c
    assert chash.slot("{user1000}.following") == chash.slot("{user1000}.followers")
    assert chash.hash("crc16", "123456789") == 0x31C3
    assert chash.hash("md5", b"k") == chash.hash("md5", "k")
    assert "xxh3" in chash.hashes()


@pytest.mark.parametrize("make,exc", [
    (lambda: chash.Router([]), ValueError),
    (lambda: chash.Router(["a", "a"]), ValueError),
    (lambda: chash.Router(["a"], preset="no-such-preset"), ValueError),
    (lambda: chash.Router(["a"], algorithm="no-such-algorithm"), ValueError),
    (lambda: chash.Router(["a"], algorithm="ring", preset="ketama"), ValueError),
    (lambda: chash.Router(["a"], hash="nope"), ValueError),
    (lambda: chash.Router(["a"], hash_tag="{"), ValueError),
    (lambda: chash.Router([("a", -1)]), ValueError),
    (lambda: chash.Router([("a", 0)]), ValueError),
    (lambda: chash.Router([("a", "1")]), TypeError),
    (lambda: chash.Router([("a", 1.5)]), TypeError),
    (lambda: chash.Router([1, 2]), TypeError),
    (lambda: chash.Router("ab"), TypeError),
    (lambda: chash.Router(None), TypeError),
    (lambda: chash.Router(["a"]).route(1), TypeError),
    (lambda: chash.Router(["a"]).route(None), TypeError),
    (lambda: chash.Router(["a"]).route_many(["k", 2]), TypeError),
    (lambda: chash.Router(["a"]).route_many("k"), TypeError),
    (lambda: chash.Router(["a"]).route_n("k", -1), ValueError),
    (lambda: chash.Router(["a"]).mark_down("b"), ValueError),
    (lambda: chash.Router(["a"]).remove("b"), ValueError),
    (lambda: chash.Router(["a"]).add("a"), ValueError),
    (lambda: chash.hash("nope", "k"), ValueError),
    (lambda: chash.Router(["a"], vnodes=-1), ValueError),
    (lambda: chash.Router(["a"], vnodes="160"), TypeError),
    (lambda: chash.Router(["a"], algorithm=1), TypeError),
    (lambda: chash.Router(["a"], preset="ketama", settings=[("x",)]), TypeError),
    (lambda: chash.Router(["a"], preset="ketama", settings={"x": 1}), TypeError),
    (lambda: chash.Router(["a"], preset="libmemcached-modula", settings={"nope": "1"}), ValueError),
    (lambda: chash.Router(["a"], algorithm="jump", vnodes=10), ValueError),
    (lambda: chash.Router([("a", 1 << 40)]), ValueError),
    (lambda: chash.Router(["a"]).route("\ud800"), ValueError),  # UnicodeEncodeError
    (lambda: chash.slot(3), TypeError),
])
def test_bad_input_raises(make, exc):
    with pytest.raises(exc):
        make()


def test_error_messages_are_the_librarys():
    with pytest.raises(ValueError, match="ketama"):
        chash.Router(["a"], preset="no-such-preset")  # the message lists the valid presets


def test_route_many_in_threads_while_another_thread_changes_the_topology():
    r = chash.Router(NODES, preset="ketama")
    expected = r.route_many(KEYS)
    stop = threading.Event()
    errors = []

    def reader():
        try:
            while not stop.is_set():
                assert r.route_many(KEYS) == expected
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def writer():
        cur = r
        for i in range(200):
            cur = cur.add(f"n{i}") if i % 2 == 0 else cur.remove(f"n{i - 1}")
            cur.mark_down(NODES[i % len(NODES)])
            cur.route_many(KEYS[:100])
        stop.set()

    threads = [threading.Thread(target=reader) for _ in range(3)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors


def test_docstring_examples():
    import doctest
    runner = doctest.DocTestRunner()
    parser = doctest.DocTestParser()
    docs = [chash.__doc__, chash.Router.__init__.__doc__, chash.slot.__doc__, chash.hash.__doc__]
    for i, doc in enumerate(docs):
        runner.run(parser.get_doctest(doc, {"chash": chash}, f"doc{i}", None, 0))
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted >= 4


def test_ring_spec_router_and_its_errors():
    nodes = ["ServerA", "ServerB", "ServerC"]
    spec = "points={name}_v{i}; vnodes=3; hash=md5-int32"
    r = chash.Router(nodes, ring=spec)
    same = chash.Router(nodes, preset="python-md5-ring", vnodes=3)
    keys = [f"data_{i}" for i in range(500)]
    assert r.route_many(keys) == same.route_many(keys)
    # vnodes overrides the spec's count; add/remove keep the spec.
    assert chash.Router(nodes, ring=spec, vnodes=150).route_many(keys) == chash.Router(
        nodes, preset="python-md5-ring").route_many(keys)
    grown = r.add("ServerD")
    assert grown.route_many(keys) == chash.Router(nodes + ["ServerD"], ring=spec).route_many(keys)
    assert "ring spec points={name}_v{i}" in r.description
    with pytest.raises(ValueError, match=r"ring spec: hash: unknown hash \"sha1\""):
        chash.Router(nodes, ring="hash=sha1")
    with pytest.raises(ValueError, match="one of algorithm, preset and ring"):
        chash.Router(nodes, ring=spec, preset="ketama")
    with pytest.raises(ValueError, match="vnodes: given twice"):
        chash.canonical_ring_spec("vnodes=1; vnodes=2")
    assert chash.ring_spec("ketama") is None
    assert chash.ring_spec("java-hashcode-ring", vnodes=0).startswith(
        "points={name}#{i}; from=0; vnodes=0; bare=first")


def test_replicas_is_route_n_default_and_survives_add_remove():
    nodes = [f"cache-{i}" for i in range(6)]
    r = chash.Router(nodes, preset="ketama", replicas=3)
    assert r.replicas == 3
    for i in range(200):
        k = f"k{i}"
        got = r.route_n(k)
        assert len(got) == 3 and len(set(got)) == 3 and got[0] == r.route(k)
        assert got == r.route_n(k, 3)
        assert r.route_n(k, 1) == [r.route(k)]
    assert r.add("cache-6").replicas == 3 and r.remove("cache-0").replicas == 3
    r.mark_down("cache-1")
    assert all("cache-1" not in r.route_n(f"k{i}") for i in range(200))
    assert chash.Router(nodes).replicas == 1 and len(chash.Router(nodes).route_n("x")) == 1
    with pytest.raises(ValueError, match="replicas must be >= 1"):
        chash.Router(nodes, replicas=0)
    with pytest.raises(TypeError):
        r.route_n("k", "3")


# ---- the hand-written entry points (route's descriptor, route_many on the keys' own bytes) ----
BIG = KEYS * 3 + [k.encode() for k in KEYS] + ["ключ-" + str(i) for i in range(600)]


def test_route_takes_one_key_positionally_or_as_key_and_nothing_else():
    r = chash.Router(NODES, preset="ketama")
    assert r.route(key="user:1") == r.route("user:1") == chash.Router.route(r, "user:1")
    with pytest.raises(TypeError, match="exactly one argument"):
        r.route()
    with pytest.raises(TypeError, match="exactly one argument"):
        r.route("a", "b")
    with pytest.raises(TypeError, match="exactly one argument"):
        r.route("a", key="b")
    with pytest.raises(TypeError, match="unexpected keyword argument 'name'"):
        r.route(name="a")
    with pytest.raises(TypeError, match="a key must be str or bytes, not int"):
        r.route(1)
    with pytest.raises(TypeError):
        chash.Router.route("not a router", "k")  # the descriptor checks self
    assert "key" in chash.Router.route.__doc__ and "key" in str(
        __import__("inspect").signature(chash.Router.route))


def test_route_on_a_subclass_and_on_one_not_initialised():
    class Mine(chash.Router):
        pass

    assert Mine(NODES).route("k") == chash.Router(NODES).route("k")

    class Broken(chash.Router):
        def __init__(self):  # does not call Router.__init__
            pass

    with pytest.raises(TypeError):
        Broken().route("k")


@pytest.mark.parametrize("kwargs", [dict(preset="ketama"), dict(preset="uhashring"),
                                    dict(algorithm="ring"), dict(algorithm="jump")], ids=str)
def test_route_many_reads_every_kind_of_sequence_the_same(kwargs):
    r = chash.Router(NODES, **kwargs)
    want = [r.route(k) for k in BIG]
    assert len(BIG) >= 512  # past the size that releases the GIL (and copies a list's keys)
    assert r.route_many(BIG) == want
    assert r.route_many(tuple(BIG)) == want
    assert r.route_many(iter(BIG)) == want
    assert r.route_many(k for k in BIG) == want
    assert r.route_many(BIG[:10]) == want[:10]  # short: the GIL is kept, keys read in place
    assert r.route_many([]) == [] and r.route_many(()) == []
    dist = r.distribution(BIG)
    assert sum(dist.values()) == len(BIG)
    assert all(dist[n] == want.count(n) for n in NODES)
    # answers are the Router's own name objects
    assert all(a is b for a, b in zip(r.route_many(BIG[:50]), [r.route(k) for k in BIG[:50]]))


def test_route_many_errors_leave_the_next_call_intact():
    r = chash.Router(NODES)
    want = r.route_many(BIG)
    for bad in (BIG + [3], BIG[:5] + [None], BIG[:600] + ["\ud800"], tuple(BIG) + (b"x", 1.5)):
        with pytest.raises((TypeError, ValueError)):
            r.route_many(bad)
    with pytest.raises(TypeError):
        r.route_many(7)
    assert r.route_many(BIG) == want


def test_route_many_survives_its_list_changing_in_another_thread():
    # The list's keys are copied before the GIL is released: a thread replacing them meanwhile
    # cannot free bytes the batch reads. Each answer is the route of the key before or after.
    r = chash.Router(NODES, preset="ketama")
    keys = [f"key-{i}" for i in range(20000)]
    stop = threading.Event()

    def mutate():
        i = 0
        while not stop.is_set():
            keys[i % len(keys)] = f"other-{i}"
            i += 1

    t = threading.Thread(target=mutate)
    t.start()
    try:
        for _ in range(20):
            got = r.route_many(keys)
            assert len(got) == len(keys) and set(got) <= set(NODES)
    finally:
        stop.set()
        t.join(60)
    assert r.route_many(keys) == [r.route(k) for k in keys]


def test_route_many_copies_keys_of_every_length_exactly():
    # A list of >= 512 keys is copied into one buffer (short keys by overlapping word copies):
    # every length, str (ASCII and not) and bytes, routes as route() does.
    r = chash.Router([f"n{i}" for i in range(7)])
    keys = []
    for n in range(0, 71):
        keys += ["k" * n, "é" * (n // 2) + "a" * (n % 2), ("x%d" % n) * (n // 3 + 1),
                 bytes(range(256))[:n]]
    keys *= 3
    assert len(keys) >= 512
    want = [r.route(k) for k in keys]
    assert r.route_many(keys) == want and r.route_many(tuple(keys)) == want
    assert r.route_many(keys[:100]) == want[:100]
