# SPDX-License-Identifier: Apache-2.0
"""A drop-in for uhashring 2.1's ``HashRing``, routed by chash's ``uhashring`` presets.

Switching is one import line::

    from chash.compat.uhashring import HashRing   # was: from uhashring import HashRing
    ring = HashRing({"cache-1": 1, "cache-2": 2}, hash_fn="ketama")
    ring.get_node("user:42")

Answers equal uhashring 2.1's (Debian python3-uhashring 2.1-3) for the default mode (MD5 as a
128-bit integer, ``vnodes * weight`` points per node) and ``hash_fn="ketama"`` (libketama's 4-byte
points, ``vnodes * len(nodes) * weight // sum(weights)`` digests per node): the key -> node lookup
(``get_node``, ``get_server``, ``__getitem__``, ``range``, ...) runs in chash; the point list
(``get_points``, positions) is computed here the way docs/compat/python-node.md describes, and
only when asked for.

As in uhashring, a key is hashed as ``str(key)`` encoded as UTF-8 (so ``b"k"`` hashes as
``"b'k'"``). Not offered: a callable ``hash_fn`` and ``replicas`` other than 4 (chash has no
such preset option) -- they raise NotImplementedError; per-node ``vnodes`` that differ are
supported in the default mode only.
"""
from bisect import bisect_right, insort
from collections import Counter
from hashlib import md5

from .. import Router

__all__ = ["HashRing"]

_CONF_KEYS = ("hostname", "instance", "nodename", "port", "vnodes", "weight")


class HashRing:
    """Consistent hash ring with uhashring 2.1's constructor, methods and answers."""

    def __init__(self, nodes=[], **kwargs):  # noqa: B006 - uhashring's signature
        hash_fn = kwargs.get("hash_fn", None)
        vnodes = kwargs.get("vnodes", None)
        weight_fn = kwargs.get("weight_fn", None)
        if hash_fn == "ketama":
            replicas = kwargs.get("replicas", 4)
            if replicas != 4:
                raise NotImplementedError("chash's uhashring-ketama preset has 4 points per digest")
            self._ketama = True
            vnodes = 40 if vnodes is None else vnodes
        elif hash_fn is None:
            self._ketama = False
            vnodes = 160 if vnodes is None else vnodes
        elif callable(hash_fn):
            raise NotImplementedError("a callable hash_fn: use uhashring itself")
        else:
            raise TypeError("hash_fn should be a callable function")
        if weight_fn is not None and not callable(weight_fn):
            raise TypeError("weight_fn should be a callable function")
        self._default_vnodes = vnodes
        self._weight_fn = weight_fn
        self._nodes = {}
        self._router = None
        self._points = None  # (sorted positions, position -> node name), built on demand
        self._configure_nodes(nodes)
        self._rebuild()

    # ---- configuration -------------------------------------------------------------------------
    def _configure_nodes(self, nodes):
        if isinstance(nodes, str):
            nodes = [nodes]
        elif not isinstance(nodes, (dict, list)):
            raise ValueError(
                "nodes configuration should be a list or a dict, got {}".format(type(nodes)))
        for node in nodes:
            conf = {"hostname": node, "instance": None, "nodename": node, "port": None,
                    "vnodes": self._default_vnodes, "weight": 1}
            if isinstance(nodes, dict):
                node_conf = nodes[node]
                if isinstance(node_conf, int):
                    conf["weight"] = node_conf
                elif isinstance(node_conf, dict):
                    conf.update((k, v) for k, v in node_conf.items() if k in _CONF_KEYS)
                else:
                    raise ValueError(
                        "node configuration should be a dict or an int, got {}".format(
                            type(node_conf)))
            if self._weight_fn:
                conf["weight"] = self._weight_fn(**conf)
            self._nodes[node] = conf

    def _rebuild(self):
        self._points = None
        self._router = None
        self._names = {}
        entries = []
        for node, conf in self._nodes.items():
            name = str(node)
            self._names[name] = node
            entries.append((name, conf["weight"], conf["vnodes"]))
        if not any(w * v > 0 for _, w, v in entries):
            return  # an empty ring: every lookup answers None, as in uhashring
        vnodes = {v for _, _, v in entries}
        if self._ketama:
            if len(vnodes) != 1:
                raise NotImplementedError("per-node vnodes with hash_fn='ketama'")
            self._router = Router([(n, w) for n, w, _ in entries], preset="uhashring-ketama",
                                  vnodes=vnodes.pop())
        elif len(vnodes) == 1:
            self._router = Router([(n, w) for n, w, _ in entries], preset="uhashring",
                                  vnodes=vnodes.pop())
        else:
            # vnodes * weight points named <node>-0.. are the same points as 1 * (vnodes * weight)
            self._router = Router([(n, w * v) for n, w, v in entries], preset="uhashring",
                                  vnodes=1)

    def _node(self, name):
        return self._names.get(name, name)

    def __setitem__(self, nodename, conf={"weight": 1}):  # noqa: B006 - uhashring's signature
        """Add (or reconfigure) a node: ``ring[name] = {"weight": 2}`` or ``add_node(name)``."""
        self._configure_nodes({nodename: conf})
        self._rebuild()

    add_node = __setitem__

    def __delitem__(self, nodename):
        """Remove a node; KeyError when it is not in the ring."""
        try:
            self._nodes.pop(nodename)
        except KeyError:
            raise KeyError("node '{}' not found, available nodes: {}".format(
                nodename, self._nodes.keys())) from None
        self._rebuild()

    remove_node = __delitem__

    def regenerate(self):
        self._rebuild()

    # ---- hashing and points (pure Python, on demand) ---------------------------------------------
    def hashi(self, key, replica=0):
        digest = md5(str(key).encode("utf-8"))
        if not self._ketama:
            return int(digest.hexdigest(), 16)
        return int.from_bytes(digest.digest()[4 * replica:4 * replica + 4], "little")

    get_key = hashi

    def _ring_points(self):
        if self._points is None:
            ring, keys, counts = {}, [], Counter()
            if self._ketama:
                total = sum(c["weight"] for c in self._nodes.values())
                for node, conf in self._nodes.items():
                    count = conf["vnodes"] * len(self._nodes) * conf["weight"] // total if total else 0
                    for w in range(count):
                        digest = md5(f"{node}-{w}".encode("utf-8")).digest()
                        for i in range(4):
                            pos = int.from_bytes(digest[4 * i:4 * i + 4], "little")
                            ring[pos] = node
                            insort(keys, pos)
                            counts[node] += 1
            else:
                for node, conf in self._nodes.items():
                    for w in range(conf["vnodes"] * conf["weight"]):
                        ring[self.hashi(f"{node}-{w}")] = node
                        counts[node] += 1
                keys = sorted(ring)
            self._points = (keys, ring, counts)
        return self._points

    def _get_pos(self, key):
        keys = self._ring_points()[0]
        p = bisect_right(keys, self.hashi(key))
        return 0 if p == len(keys) else p

    # ---- lookups -----------------------------------------------------------------------------------
    def get_node(self, key):
        """The name of the node that owns ``key`` (None for an empty ring)."""
        if self._router is None:
            return None
        return self._node(self._router.route(str(key)))

    def get_nodes_many(self, keys):
        """get_node for many keys in one call (chash's batch lookup; not in uhashring)."""
        if self._router is None:
            return [None for _ in keys]
        return [self._node(n) for n in self._router.route_many([str(k) for k in keys])]

    def _conf(self, key):
        node = self.get_node(key)
        return None if node is None else self._nodes[node]

    def __getitem__(self, key):
        conf = self._conf(key)
        return None if conf is None else conf["instance"]

    get_node_instance = __getitem__

    def get(self, key):
        return self._conf(key)

    def get_node_hostname(self, key):
        conf = self._conf(key)
        return None if conf is None else conf["hostname"]

    def get_node_port(self, key):
        conf = self._conf(key)
        return None if conf is None else conf["port"]

    def get_node_weight(self, key):
        conf = self._conf(key)
        return None if conf is None else conf["weight"]

    def get_node_pos(self, key):
        return None if self._router is None else self._get_pos(key)

    def get_server(self, key):
        """A ketama-style (position, node name) tuple."""
        if self._router is None:
            return None
        keys, ring, _ = self._ring_points()
        pos = keys[self._get_pos(key)]
        return (pos, ring[pos])

    def get_points(self):
        keys, ring, _ = self._ring_points()
        return [(k, ring[k]) for k in keys]

    def get_nodes(self):
        return self._nodes.keys()

    def get_instances(self):
        return [c.get("instance") for c in self._nodes.values() if c.get("instance")]

    def range(self, key, size=None, unique=True):
        """Node configurations in ring order from the key's owner (distinct unless unique=False)."""
        if self._router is None:
            return
        if unique:
            size = size or len(self._nodes)
            for name in self._router.route_n(str(key), size):
                yield self._nodes[self._node(name)]
            return
        keys, ring, _ = self._ring_points()
        pos = self._get_pos(key)
        seen = 0
        for k in keys[pos:] + keys[:pos]:
            yield self._nodes[ring[k]]
            seen += 1
            if seen == size:
                return

    def iterate_nodes(self, key, distinct=True):
        if self._router is None:
            yield None
            return
        for node in self.range(key, unique=distinct):
            yield node["nodename"]

    def print_continuum(self):
        points = self.get_points()
        print(f"Numpoints in continuum: {len(points)}" if points else "Continuum empty")
        for point, node in points:
            print(f"{node} ({point})")

    # ---- properties ------------------------------------------------------------------------------
    @property
    def conf(self):
        return self._nodes

    nodes = conf

    @property
    def distribution(self):
        """Points per node (Counter), as uhashring counts them."""
        return self._ring_points()[2]

    @property
    def ring(self):
        return self._ring_points()[1]

    continuum = ring

    @property
    def size(self):
        return len(self._ring_points()[1])
