# SPDX-License-Identifier: Apache-2.0
"""chash: consistent hashing with byte-exact peer presets, at C++ speed.

The routing is libchash's (the C++ library); this package is its Python face.

    >>> import chash
    >>> r = chash.Router(["cache-1", "cache-2", "cache-3"], preset="ketama")
    >>> r.route("user:42") in r.nodes
    True

See docs/PYTHON.md for the API.
"""
from ._chash import (  # noqa: F401
    Router,
    __version__,
    address_presets,
    algorithms,
    canonical_ring_spec,
    hash,
    hashes,
    presets,
    ring_spec,
    slot,
)

__all__ = [
    "__version__",
    "Router",
    "presets",
    "address_presets",
    "algorithms",
    "hashes",
    "slot",
    "hash",
    "ring_spec",
    "canonical_ring_spec",
]
