#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Redis's own TCL test units run directly against redis-server and through chash-proxy pools of
# one and of three backends (docs/COMPATIBILITY.md has the counts and what fails why).
#
#   make redis-suite REDIS_SRC=/path/to/redis-7.0.15     # a checkout of github redis/redis 7.0.15
#   REDIS_SRC=... MODES="one" UNITS="unit/type/list" bash tests/redis_suite/run.sh
#
# Nothing is downloaded: REDIS_SRC is a checkout the caller made (the tag of the installed
# redis-server: Debian 12 has 7.0.15), and it is never copied into this repository. Its runner is
# used as Redis's docs say for an external server (`./runtest --host H --port P`), which skips
# the tests tagged external:skip; tests tagged needs:repl, needs:debug and needs:config-maxmemory
# are left out in every mode (TAGS), as a proxy cannot offer replication, DEBUG or server-wide
# CONFIG SET. Three backends run with --singledb (a sharded pool has no SELECT-able whole
# database) and `allow_flushall: true` (the runner flushes between tests).
#
# Everything listens on 127.0.0.1 at free ports and is stopped at the end; one run at a time
# (Redis's runner listens on a fixed port of its own, 21079). Per mode and unit the
# counts of [ok] / [err] / [exception] go to stdout and to $OUT/summary.md; each unit's log to
# $OUT/<mode>-<unit>.log.
set -euo pipefail

: "${REDIS_SRC:?REDIS_SRC=<a checkout of redis 7.0.15> is required}"
CHASH_PROXY=${CHASH_PROXY:-$(cd "$(dirname "$0")/../.." && pwd)/build/chash-proxy}
OUT=${OUT:-$(cd "$(dirname "$0")/../.." && pwd)/build/redis-suite}
MODES=${MODES:-"direct one three"}
UNITS=${UNITS:-"unit/type/string unit/type/incr unit/type/list unit/type/hash unit/type/set
  unit/type/zset unit/expire unit/multi unit/keyspace unit/scripting unit/pubsub unit/tracking
  unit/functions unit/protocol unit/sort unit/type/stream unit/type/stream-cgroups"}
TAGS=${TAGS:-"-needs:repl -needs:debug -needs:config-maxmemory"}
# Skipped in every mode, by name (a ';'-separated list), because a failure there aborts the rest
# of the unit (an error outside an assert): "Script ACL check" needs the backend's own ACL users
# (ACL SETUSER, then AUTH as that user), which a proxy with users of its own (`acl:`) does not
# pass on.
SKIPTESTS=${SKIPTESTS:-"Script ACL check"}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-900}

[ -x "$CHASH_PROXY" ] || { echo "no chash-proxy at $CHASH_PROXY (make build)" >&2; exit 2; }
[ -f "$REDIS_SRC/tests/test_helper.tcl" ] || { echo "$REDIS_SRC has no tests/" >&2; exit 2; }
command -v tclsh8.6 >/dev/null || { echo "tclsh8.6 is needed (apt-get install tcl)" >&2; exit 2; }
# The runner looks for the binaries under src/ (some units start redis-cli or a server of
# their own there): the installed ones, linked in a scratch copy of the tests.
WORK=$(mktemp -d /tmp/chash-redis-suite.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$OUT" "$WORK/src"
cp -r "$REDIS_SRC/tests" "$REDIS_SRC/runtest" "$WORK/"
for b in redis-server redis-cli redis-benchmark redis-check-aof redis-check-rdb redis-sentinel; do
  if command -v "$b" >/dev/null; then ln -s "$(command -v "$b")" "$WORK/src/$b"; fi
done

# free_port, start_proxy, stop_all
# shellcheck source=../suite_lib.sh
source "$(dirname "$0")/../suite_lib.sh"
wait_port() {
  for _ in $(seq 1 200); do
    if redis-cli -h 127.0.0.1 -p "$1" PING >/dev/null 2>&1; then return 0; fi
    sleep 0.05
  done
  echo "nothing answers on 127.0.0.1:$1" >&2
  return 1
}
start_redis() {  # port dir
  mkdir -p "$2"
  redis-server --port "$1" --bind 127.0.0.1 --save "" --appendonly no --dir "$2" \
    --logfile "$2/redis.log" &
  PIDS+=($!)
  wait_port "$1"
}

summary="$OUT/summary.md"
echo "| mode | unit | ok | err | exception |" >"$summary"
echo "| --- | --- | --- | --- | --- |" >>"$summary"

# Each unit gets fresh servers (and a fresh proxy), as runtest gives each unit its own server:
# a unit that leaves a backend busy (a script timeout test) cannot spoil the next.
start_mode() {  # mode dir -> sets port, extra
  local mode=$1 dir=$2
  mkdir -p "$dir"
  extra=()
  case "$mode" in
    direct)
      port=$(free_port)
      start_redis "$port" "$dir/r0"
      ;;
    one | three)
      local n=1
      [ "$mode" = three ] && n=3
      port=$(free_port)
      {
        echo "suite:"
        echo "  listen: 127.0.0.1:$port"
        echo "  redis: true"
        echo "  hash_tag: \"{}\""
        echo "  allow_flushall: true"
        echo "  allow_config_set: true"
        echo "  servers:"
      } >"$dir/proxy.yml"
      for i in $(seq 1 "$n"); do
        local p
        p=$(free_port)
        start_redis "$p" "$dir/r$i"
        echo "    - 127.0.0.1:$p:1 r$i" >>"$dir/proxy.yml"
      done
      start_proxy "$port" "$dir/proxy.yml"
      if [ "$mode" = three ]; then extra+=(--singledb); fi
      ;;
    *)
      echo "unknown mode $mode (direct, one, three)" >&2
      exit 2
      ;;
  esac
}

for mode in $MODES; do
  for unit in $UNITS; do
    name="$mode-$(echo "$unit" | tr / -)"
    start_mode "$mode" "$WORK/$name"
    log="$OUT/$name.log"
    skips=()
    IFS=';' read -r -a names <<<"$SKIPTESTS"
    for t in "${names[@]}"; do [ -n "$t" ] && skips+=(--skiptest "$t"); done
    (cd "$WORK" && timeout "$UNIT_TIMEOUT" tclsh8.6 tests/test_helper.tcl --host 127.0.0.1 \
      --port "$port" --single "$unit" --tags "$TAGS" --timeout 120 "${extra[@]}" "${skips[@]}" \
      >"$log" 2>&1) || true
    stop_all
    plain="${log%.log}.txt"  # without the runner's colours
    sed 's/\x1b\[[0-9;]*m//g' "$log" >"$plain"
    ok=$(grep -c '^\[ok\]' "$plain" || true)
    err=$(grep -c '^\[err\]' "$plain" || true)
    exc=$(grep -c '^\[exception\]' "$plain" || true)
    echo "| $mode | $unit | $ok | $err | $exc |" | tee -a "$summary"
  done
done
echo "summary: $summary"
