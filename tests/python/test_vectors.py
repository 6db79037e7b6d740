# SPDX-License-Identifier: Apache-2.0
"""Every preset against the peer vectors the C++ compat test uses (tests/compat/README.md)."""
import glob
import os

import pytest

import chash

HERE = os.path.dirname(os.path.abspath(__file__))
COMPAT = os.path.join(os.path.dirname(HERE), "compat")
FILES = sorted(glob.glob(os.path.join(COMPAT, "vectors", "*.tsv")) +
               glob.glob(os.path.join(COMPAT, "vectors-libmemcached-1.0.18", "*.tsv")))


def load(path):
    v = dict(preset=None, options={}, settings=[], nodes=[], keys=[], expected=[])
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if line.startswith("@"):
                tag, _, rest = line.partition(" ")
                if tag == "@preset":
                    v["preset"] = rest
                elif tag == "@option":
                    name, _, value = rest.partition(" ")
                    v["options"][name] = value
                elif tag == "@setting":
                    name, _, value = rest.partition(" ")
                    v["settings"].append((name, value))
                elif tag == "@node":
                    name, _, weight = rest.partition(" ")
                    v["nodes"].append((name, int(weight)))
                continue
            fields = line.split("\t")
            v["keys"].append(bytes.fromhex(fields[0]))
            v["expected"].append(fields[1:])
    return v


def test_vectors_are_present():
    assert len(FILES) > 100


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f)[:-4] for f in FILES])
def test_preset_agrees_with_the_peer(path):
    v = load(path)
    opts = dict(v["options"])
    replicas = int(opts.pop("replicas", 1))
    kwargs = {}
    if "hash" in opts:
        kwargs["hash"] = opts.pop("hash")
    if "hash_tag" in opts:
        kwargs["hash_tag"] = opts.pop("hash_tag")
    if "vnodes" in opts:
        kwargs["vnodes"] = int(opts.pop("vnodes"))
    assert not opts, f"unknown @option {opts}"
    r = chash.Router(v["nodes"], preset=v["preset"], settings=v["settings"] or None, **kwargs)
    if replicas == 1:
        got = [[n if n is not None else "<none>"] for n in r.route_many(v["keys"])]
    else:
        got = [r.route_n(k, replicas) for k in v["keys"]]
    bad = [(k, e, g) for k, e, g in zip(v["keys"], v["expected"], got) if e != g]
    assert not bad, f"{len(bad)} of {len(got)} keys disagree, first: {bad[:3]}"


ARTICLE_RINGS = ("guava-treemap", "java-hashcode-ring", "python-md5-ring", "murmur64a-treemap")
RING_FILES = [f for f in FILES if os.path.basename(f).split("__")[0] in ARTICLE_RINGS]


def test_every_article_ring_has_vectors():
    assert {os.path.basename(f).split("__")[0] for f in RING_FILES} == set(ARTICLE_RINGS)


@pytest.mark.parametrize("path", RING_FILES, ids=[os.path.basename(f)[:-4] for f in RING_FILES])
def test_article_ring_as_a_ring_spec_agrees_with_the_article(path):
    v = load(path)
    vnodes = int(v["options"]["vnodes"]) if "vnodes" in v["options"] else None
    spec = chash.ring_spec(v["preset"], vnodes=vnodes)
    assert spec is not None and spec == chash.canonical_ring_spec(spec)
    r = chash.Router(v["nodes"], ring=spec)
    got = [[n] for n in r.route_many(v["keys"])]
    bad = [(k, e, g) for k, e, g in zip(v["keys"], v["expected"], got) if e != g]
    assert not bad, f"{len(bad)} of {len(got)} keys disagree via ring={spec!r}: {bad[:3]}"
