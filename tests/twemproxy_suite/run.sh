#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# twemproxy's own integration tests (tests/ of github twemproxy/twemproxy, nose) run against
# nutcracker and against chash-proxy started by the same command lines (docs/COMPATIBILITY.md
# has the counts).
#
#   make twemproxy-suite TWEMPROXY_SRC=/path/to/twemproxy
#
# Nothing is downloaded and the suite is never copied into this repository: TWEMPROXY_SRC is a
# checkout the caller made. Its tests start their own redis-server and memcached processes on
# 127.0.0.1 (fixed ports 2100-2101, 4100, 2200-2201, 4200, and their stats ports) from the
# `_binaries/` folder; here that folder holds the installed redis-server, redis-cli, memcached and,
# named `nutcracker`, either Debian's nutcracker or chash-proxy. The suite stops its servers with
# `pkill -f` on patterns naming those ports. Needs Debian's python3-nose, python3-redis and
# python3-memcache (scripts/bootstrap.sh).
set -euo pipefail

: "${TWEMPROXY_SRC:?TWEMPROXY_SRC=<a checkout of twemproxy> is required}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CHASH_PROXY=${CHASH_PROXY:-$ROOT/build/chash-proxy}
NUTCRACKER=${NUTCRACKER:-$(command -v nutcracker || echo /usr/sbin/nutcracker)}
OUT=${OUT:-$ROOT/build/twemproxy-suite}
PEERS=${PEERS:-"nutcracker chash-proxy"}
PY=${PY:-/usr/bin/python3}  # Debian's, with python3-nose

[ -d "$TWEMPROXY_SRC/tests/test_redis" ] || { echo "$TWEMPROXY_SRC has no tests/" >&2; exit 2; }
"$PY" -c 'import nose, redis, memcache' 2>/dev/null ||
  { echo "python3-nose, python3-redis, python3-memcache are needed (scripts/bootstrap.sh)" >&2; exit 2; }
mkdir -p "$OUT"
summary="$OUT/summary.md"
echo "| proxy | ran | failed or errors |" >"$summary"
echo "| --- | --- | --- |" >>"$summary"
for peer in $PEERS; do
  work=$(mktemp -d /tmp/chash-twemproxy-suite.XXXXXX)
  cp -r "$TWEMPROXY_SRC/tests" "$work/"
  mkdir -p "$work/tests/_binaries"
  for b in redis-server redis-cli redis-sentinel memcached; do
    ln -sf "$(command -v "$b")" "$work/tests/_binaries/$b"
  done
  case "$peer" in
    nutcracker) ln -sf "$NUTCRACKER" "$work/tests/_binaries/nutcracker" ;;
    chash-proxy) ln -sf "$CHASH_PROXY" "$work/tests/_binaries/nutcracker" ;;
    *) echo "unknown peer $peer" >&2; exit 2 ;;
  esac
  log="$OUT/$peer.log"
  # test_redis and test_system (45 tests); test_memcache collects nothing under Debian's nose.
  (cd "$work/tests" && timeout 600 "$PY" -m nose -v test_redis test_system >"$log" 2>&1) || true
  ran=$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' "$log")
  failed=$(grep -cE ' \.\.\. (FAIL|ERROR)$' "$log" || true)
  echo "| $peer | ${ran:-0} | $failed |" | tee -a "$summary"
  rm -rf "$work"
done
echo "summary: $summary (logs in $OUT)"
