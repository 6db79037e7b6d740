# SPDX-License-Identifier: Apache-2.0
"""A drop-in for uhashring 2.1's ``HashRing``, routed by chash's ``uhashring`` presets.

Switching is one import line::

    from chash.compat.uhashring import HashRing   # was: from uhashring import HashRing
    ring = HashRing({"cache-1": 1, "cache-2": 2}, hash_fn="ketama")
    ring.get_node("user:42")

Answers equal uhashring 2.1's (Debian python3-uhashring 2.1-3), constructor forms, options and
quirks included. The key -> node lookup (``get_node``, ``get_server``, ``__getitem__``,
``range``, ...) runs in chash for the default mode (MD5 as a 128-bit integer, ``vnodes * weight``
points per node) and for ``hash_fn="ketama"`` with 4 replicas and one ``vnodes`` for every node
(libketama's 4-byte points, ``vnodes * len(nodes) * weight // sum(weights)`` digests per node);
the point list (``get_points``, positions) is computed here, and only when asked for.

Where chash has no preset for the ring, the ring is kept here in Python, the way uhashring keeps
it (a dict point -> node, last writer wins, and a sorted list bisected right), so the answers stay
uhashring's at uhashring's speed:
  - a callable ``hash_fn`` (points ``hash_fn(f"{node}-{i}")``, keys ``hash_fn(key)``);
  - ``hash_fn="ketama"`` with ``replicas`` other than 4, or nodes with different ``vnodes``;
  - the default mode after a node was reconfigured to fewer points and then removed: uhashring
    only ever adds points when a node is reconfigured, and removes the node's current count, so
    the points above it stay in its ring, owned by a node it no longer lists;
  - node names chash refuses: an empty name, or two nodes with the same str() (1 and "1").

As in uhashring, a key is hashed as ``str(key)`` encoded as UTF-8 (so ``b"k"`` hashes as
``"b'k'"``), except by a callable ``hash_fn``, which gets the key itself.
"""
from bisect import bisect_right, insort
from collections import Counter
from hashlib import md5

from .. import Router

__all__ = ["HashRing"]

_CONF_KEYS = ("hostname", "instance", "nodename", "port", "vnodes", "weight")


def _md5_int(text):
    return int(md5(str(text).encode("utf-8")).hexdigest(), 16)


class HashRing:
    """Consistent hash ring with uhashring 2.1's constructor, methods and answers."""

    def __init__(self, nodes=[], **kwargs):  # noqa: B006 - uhashring's signature
        hash_fn = kwargs.get("hash_fn", None)
        vnodes = kwargs.get("vnodes", None)
        weight_fn = kwargs.get("weight_fn", None)
        self._hash_fn = None
        if hash_fn == "ketama":
            self._ketama = True
            self._replicas = kwargs.get("replicas", 4)
            vnodes = 40 if vnodes is None else vnodes
        else:
            # uhashring: a false hash_fn (None, "", 0) is the default MD5, anything else must be
            # callable.
            if hash_fn and not callable(hash_fn):
                raise TypeError("hash_fn should be a callable function")
            self._ketama = False
            self._hash_fn = hash_fn or None
            vnodes = 160 if vnodes is None else vnodes
        if weight_fn and not callable(weight_fn):
            raise TypeError("weight_fn should be a callable function")
        self._default_vnodes = vnodes
        self._weight_fn = weight_fn
        self._nodes = {}
        self._dist = Counter()  # uhashring's distribution, kept as it keeps it
        # Default mode in chash: node -> k, its points are "<node>-0" .. "<node>-(k-1)".
        self._prefix = {}
        # The ring in Python (a dict position -> node and its sorted positions) when chash cannot
        # route it; None while chash does.
        self._py = None
        if self._hash_fn is not None:
            self._py = ({}, [])
        self._router = None
        self._names = {}
        self._str_names = (None, False)  # (the _names it is about, every node a str)
        self._points = None  # (sorted positions, position -> node, Counter), built on demand
        if self._configure_nodes(nodes):
            self._create_ring(list(self._nodes.items()))

    # ---- configuration -------------------------------------------------------------------------
    def _configure_nodes(self, nodes):
        """uhashring's _configure_nodes: set the nodes' configuration; True when the ring changes."""
        if isinstance(nodes, str):
            nodes = [nodes]
        elif not isinstance(nodes, (dict, list)):
            raise ValueError(
                "nodes configuration should be a list or a dict, got {}".format(type(nodes)))
        changed = False
        for node in nodes:
            conf = {"hostname": node, "instance": None, "nodename": node, "port": None,
                    "vnodes": self._default_vnodes, "weight": 1}
            current = self._nodes.get(node, {})
            if not current:
                changed = True
            if isinstance(nodes, dict):
                node_conf = nodes[node]
                if isinstance(node_conf, int):
                    conf["weight"] = node_conf
                elif isinstance(node_conf, dict):
                    for k, v in node_conf.items():
                        if k in conf:
                            conf[k] = v
                            if k in ("nodename", "vnodes", "weight") and current.get(k) != v:
                                changed = True
                else:
                    raise ValueError(
                        "node configuration should be a dict or an int, got {}".format(
                            type(node_conf)))
            if self._weight_fn:
                conf["weight"] = self._weight_fn(**conf)
            if current.get("weight") != conf["weight"]:
                changed = True
            self._nodes[node] = conf
        return changed

    def _hash(self, text):
        return self._hash_fn(text) if self._hash_fn is not None else _md5_int(text)

    def _create_ring(self, items):
        """uhashring's runtime._create_ring: ketama rebuilds from every node, the default ring adds
        the given nodes' points to the ones it has."""
        self._points = None
        if self._ketama:
            self._build_ketama()
            return
        for node, conf in items:
            count = conf["vnodes"] * conf["weight"]
            if count > 0:
                self._dist[node] += count
            if self._py is not None:
                ring = self._py[0]
                for w in range(count):
                    ring[self._hash(f"{node}-{w}")] = node
            elif count > self._prefix.get(node, 0):
                self._prefix[node] = count
        if self._py is not None:
            self._py = (self._py[0], sorted(self._py[0]))
        self._route_prefixes()

    def _route_prefixes(self):
        """The default ring in chash: every node's points are a prefix "<node>-0" .. ."""
        self._router = None
        self._names = {}
        if self._py is not None:
            return
        entries = []
        for node, k in self._prefix.items():
            if k > 0:
                self._names[str(node)] = node
                entries.append((str(node), k))
        if entries:
            # k points named <node>-0.. are the points of weight k with one point per weight.
            try:
                self._router = Router(entries, preset="uhashring", vnodes=1)
            except ValueError:  # names chash refuses ("", two nodes whose str() is equal)
                self._to_python()

    def _to_python(self):
        """Keep the default ring in Python from now on (its points are no longer prefixes)."""
        ring = {}
        for node, k in self._prefix.items():
            for w in range(k):
                ring[_md5_int(f"{node}-{w}")] = node
        self._py = (ring, sorted(ring))
        self._prefix = {}
        self._router = None
        self._names = {}

    def _build_ketama(self):
        """KetamaRing._create_ring: every node's ks digests, `replicas` points each."""
        self._router = None
        self._names = {}
        self._py = None
        total = sum(c["weight"] for c in self._nodes.values())
        n = len(self._nodes)
        if n and total == 0:
            raise ZeroDivisionError("integer division or modulo by zero")  # as uhashring
        self._dist = Counter()
        for node, conf in self._nodes.items():
            points = conf["vnodes"] * n * conf["weight"] // total * self._replicas
            if points > 0:
                self._dist[node] += points
        if not self._dist:
            self._py = ({}, [])
            return
        vnodes = {c["vnodes"] for c in self._nodes.values()}
        if self._replicas == 4 and len(vnodes) == 1:
            entries = []
            for node, conf in self._nodes.items():
                self._names[str(node)] = node
                entries.append((str(node), conf["weight"]))
            try:
                self._router = Router(entries, preset="uhashring-ketama", vnodes=vnodes.pop())
                return
            except ValueError:  # names chash refuses: the ring below, as uhashring builds it
                self._names = {}
        ring, keys = {}, []
        for node, conf in self._nodes.items():
            for w in range(conf["vnodes"] * n * conf["weight"] // total):
                digest = md5(f"{node}-{w}".encode("utf-8")).digest()
                for i in range(self._replicas):
                    # IndexError past 4 replicas, as uhashring's hashi()
                    r = 4 * i
                    pos = (digest[3 + r] << 24 | digest[2 + r] << 16 | digest[1 + r] << 8
                           | digest[r])
                    ring[pos] = node
                    insort(keys, pos)
        self._py = (ring, keys)

    def _node(self, name):
        return self._names.get(name, name)

    def __setitem__(self, nodename, conf={"weight": 1}):  # noqa: B006 - uhashring's signature
        """Add (or reconfigure) a node: ``ring[name] = {"weight": 2}`` or ``add_node(name)``."""
        if self._configure_nodes({nodename: conf}):
            self._create_ring([(nodename, self._nodes[nodename])])

    add_node = __setitem__

    def __delitem__(self, nodename):
        """Remove a node; KeyError when it is not in the ring."""
        try:
            conf = self._nodes.pop(nodename)
        except KeyError:
            raise KeyError("node '{}' not found, available nodes: {}".format(
                nodename, self._nodes.keys())) from None
        self._points = None
        if self._ketama:
            self._build_ketama()
            return
        self._dist.pop(nodename)  # KeyError for a node without points, as in uhashring
        count = conf["vnodes"] * conf["weight"]
        if self._py is None:
            if count == self._prefix.get(nodename, 0):
                self._prefix.pop(nodename, None)
                self._route_prefixes()
                return
            self._to_python()  # points above `count` stay (or a missing one raises below)
        ring = self._py[0]
        for w in range(count):
            del ring[self._hash(f"{nodename}-{w}")]
        self._py = (ring, sorted(ring))

    remove_node = __delitem__

    def regenerate(self):
        self._create_ring(list(self._nodes.items()))

    # ---- hashing and points (pure Python, on demand) ---------------------------------------------
    def hashi(self, key, replica=0):
        if not self._ketama:
            return self._hash(key)
        digest = md5(str(key).encode("utf-8")).digest()
        return int.from_bytes(digest[4 * replica:4 * replica + 4], "little")

    get_key = hashi

    def _ring_points(self):
        """(sorted positions, position -> node)."""
        if self._py is not None:
            return self._py[1], self._py[0]
        if self._points is None:
            ring, keys = {}, []
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
            else:
                for node, k in self._prefix.items():
                    for w in range(k):
                        ring[_md5_int(f"{node}-{w}")] = node
                keys = sorted(ring)
            self._points = (keys, ring)
        return self._points

    def _empty(self):
        return not self._py[0] if self._py is not None else self._router is None

    def _get_pos(self, key):
        keys = self._ring_points()[0]
        p = bisect_right(keys, self.hashi(key))
        return 0 if p == len(keys) else p

    # ---- lookups -----------------------------------------------------------------------------------
    def get_node(self, key):
        """The name of the node that owns ``key`` (None for an empty ring)."""
        if self._py is not None:
            ring, keys = self._py
            if not ring:
                return None
            return ring[keys[self._get_pos(key)]]
        if self._router is None:
            return None
        return self._node(self._router.route(str(key)))

    def get_nodes_many(self, keys):
        """get_node for many keys in one call (chash's batch lookup; not in uhashring)."""
        if self._py is not None:
            return [self.get_node(k) for k in keys]
        if self._router is None:
            return [None for _ in keys]
        # One call into chash for the whole batch: str(key) is taken there, and only for keys
        # that are not str already; the names come back as the Router's own objects, mapped
        # back to the caller's node objects only when some node is not a str.
        names = self._router.route_many(keys, as_str=True)
        if self._str_names[0] is not self._names:  # each rebuild makes a new _names dict
            self._str_names = (self._names, all(type(n) is str for n in self._names.values()))
        if self._str_names[1]:
            return names
        get = self._names.get
        return [get(n, n) for n in names]

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
        return None if self._empty() else self._get_pos(key)

    def get_server(self, key):
        """A ketama-style (position, node name) tuple."""
        if self._empty():
            return None
        keys, ring = self._ring_points()
        pos = keys[self._get_pos(key)]
        return (pos, ring[pos])

    def get_points(self):
        keys, ring = self._ring_points()
        return [(k, ring[k]) for k in keys]

    def get_nodes(self):
        return self._nodes.keys()

    def get_instances(self):
        return [c.get("instance") for c in self._nodes.values() if c.get("instance")]

    def range(self, key, size=None, unique=True):
        """Node configurations in ring order from the key's owner (distinct unless unique=False)."""
        if unique and self._py is None:
            if self._router is None:
                return
            for name in self._router.route_n(str(key), size or len(self._nodes)):
                yield self._nodes[self._node(name)]
            return
        # uhashring's walk over the points from the key's position, wrapping once.
        if unique:
            size = size or len(self._nodes)
        keys, ring = self._ring_points()
        pos = self._get_pos(key)
        seen = set()
        count = 0
        for k in keys[pos:] + keys[:pos]:
            node = ring[k]
            if unique:
                if node in seen:
                    continue
                seen.add(node)
            yield self._nodes[node]
            count += 1
            if count == size:
                return

    def iterate_nodes(self, key, distinct=True):
        if self._empty():
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
        return self._dist

    @property
    def ring(self):
        return self._ring_points()[1]

    continuum = ring

    @property
    def size(self):
        return len(self._ring_points()[1])
