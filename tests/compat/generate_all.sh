#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates every compatibility vector file from the real peers (`make compat-vectors`).
# Each generator installs its own peer from Debian or npm (idempotent), runs it on loopback and
# rewrites tests/compat/vectors/<preset>__*.tsv. Peers that are in neither registry need a
# checkout of their public source, given by an environment variable; without it that generator
# is skipped and its committed vectors are kept:
#   KETAMA_SRC     libketama (RJ/ketama)          -> libketama vectors
#   LIBMEMCACHED_1018_SRC  libmemcached with tag 1.0.18 -> vectors-libmemcached-1.0.18/
#   HASH_RING_SRC  Python hash_ring (Doist)        -> hash_ring vectors
#   JEDIS_SRC      Jedis v3.10.0 (redis/jedis)     -> jedis and guava vectors
#   ENVOY_SRC      Envoy (envoyproxy/envoy)        -> tests/compat/envoy/published.txt
set -uo pipefail
cd "$(dirname "$0")"
failed=()
run() {
  echo "== $*"
  if ! "$@"; then failed+=("$1"); fi
}
python3 make_keys.py
run ./libmemcached/generate.sh
if [ -n "${LIBMEMCACHED_1018_SRC:-}" ]; then run ./libmemcached/generate_1018.sh "$LIBMEMCACHED_1018_SRC"; else echo "== skip libmemcached 1.0.18 (set LIBMEMCACHED_1018_SRC)"; fi
run ./twemproxy/generate.sh
run ./nginx/generate.sh
run ./uhashring/generate.sh
run ./node-hashring/generate.sh
run ./redis-cluster/generate.sh
run ./groupcache/generate.sh
run ./spymemcached/generate.sh
run ./articles/generate.sh
if [ -n "${KETAMA_SRC:-}" ]; then run ./libketama/generate.sh "$KETAMA_SRC"; else echo "== skip libketama (set KETAMA_SRC)"; fi
if [ -n "${HASH_RING_SRC:-}" ]; then run ./hash_ring/generate.sh "$HASH_RING_SRC"; else echo "== skip hash_ring (set HASH_RING_SRC)"; fi
if [ -n "${JEDIS_SRC:-}" ]; then run ./jvm/generate.sh "$JEDIS_SRC"; else echo "== skip jedis/guava (set JEDIS_SRC)"; fi
if [ -n "${ENVOY_SRC:-}" ]; then run python3 ./envoy/extract.py "$ENVOY_SRC"; else echo "== skip envoy (set ENVOY_SRC)"; fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "compat-vectors: failed: ${failed[*]}" >&2
  exit 1
fi
echo "compat-vectors: done; run 'make test' to check every preset against them"
