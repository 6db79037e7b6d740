#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/compat/vectors/hash_ring__*.tsv with the real hash_ring (Python), which is
# neither in Debian nor reachable on PyPI from here: it runs from a git checkout of its public
# repository (github Doist/hash_ring), unmodified and not installed.
#
#   tests/compat/hash_ring/generate.sh /path/to/hash_ring-checkout
#
# Verified with master 22c91ce (the Python 3 port). When the checkout has the history, the 1.3.1
# release (commit d261dfa, Python 2 only) is also run, with Python 2 shims, and must agree.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ] || [ ! -f "$1/hash_ring/ring.py" ]; then
  echo "usage: $0 HASH_RING_CHECKOUT   (a checkout of github Doist/hash_ring)" >&2
  exit 2
fi
checkout=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rev=$(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo unknown)
release=""
if git -C "$checkout" cat-file -e d261dfa:hash_ring/hash_ring.py 2>/dev/null; then
  git -C "$checkout" show d261dfa:hash_ring/hash_ring.py > "$tmp/hash_ring_1_3_1.py"
  release="$tmp/hash_ring_1_3_1.py"
fi
pyver=$(/usr/bin/python3 -c 'import platform; print(platform.python_version())')
mkdir -p "$here/../vectors"
# -B: write no __pycache__ into the checkout.
PEER="hash_ring (Python, Doist/hash_ring $rev; = release 1.3.1), /usr/bin/python3 $pyver" \
  /usr/bin/python3 -B "$here/gen.py" "$checkout" $release
