#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# memcached's own Perl tests (t/*.t, run with prove) directly against memcached and through a
# chash-proxy pool of one memcached (docs/COMPATIBILITY.md lists what passes and why not).
#
#   make memcached-suite MEMCACHED_SRC=/path/to/memcached-1.6.18   # github memcached/memcached 1.6.18
#   MEMCACHED_SRC=... MODES="proxy" FILES="t/getset.t t/metaget.t" bash tests/memcached_suite/run.sh
#
# Nothing is downloaded: MEMCACHED_SRC is a checkout the caller made (the tag of the installed
# memcached: Debian 12 has 1.6.18), and it is never copied into this repository. Its tests are
# pointed at a running server as memcached's t/lib/MemcachedTest.pm allows:
# T_MEMD_USE_DAEMON=host:port makes every new_memcached(ARGS) connect to that server, ARGS
# ignored. So a test that starts its server with options of its own (-m 3, -o ext_path=...,
# -B binary, -I 1000 ...) or stops/restarts it (the handle then has no pid) runs against the
# plain server below and fails or dies in every mode; what matters is the difference between the
# modes. The helpers ask `./memcached-debug -h` what the build supports: the installed memcached
# is linked there in a scratch copy of t/ (with T_MEMD_USE_DAEMON new_memcached starts nothing;
# the few tests that start a server themselves get that binary, direct, in every mode).
#
# Modes: direct (one `memcached -l 127.0.0.1 -U 0 -t 4 -m 64`), proxy (the same memcached behind
# a chash-proxy pool of it alone, `protocol: memcache`). Each file gets fresh processes. Every
# process listens on 127.0.0.1 at free ports and is stopped at the end. Per mode and file the
# result (pass / fail / timeout / skip), the counts of `ok` / `not ok` TAP lines and the first
# failing check go to stdout and to $OUT/summary.md; each file's `prove -v` output to
# $OUT/<mode>-<file>.log.
set -euo pipefail

: "${MEMCACHED_SRC:?MEMCACHED_SRC=<a checkout of memcached 1.6.18> is required}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CHASH_PROXY=${CHASH_PROXY:-$ROOT/build/chash-proxy}
OUT=${OUT:-$ROOT/build/memcached-suite}
MEMCACHED=${MEMCACHED:-$(command -v memcached || echo /usr/bin/memcached)}
MODES=${MODES:-"direct proxy"}
FILE_TIMEOUT=${FILE_TIMEOUT:-300}

[ -x "$CHASH_PROXY" ] || { echo "no chash-proxy at $CHASH_PROXY (make build)" >&2; exit 2; }
[ -f "$MEMCACHED_SRC/t/lib/MemcachedTest.pm" ] || { echo "$MEMCACHED_SRC has no t/lib/MemcachedTest.pm" >&2; exit 2; }
[ -x "$MEMCACHED" ] || { echo "no memcached at $MEMCACHED (apt-get install memcached)" >&2; exit 2; }
command -v prove >/dev/null || { echo "prove is needed (apt-get install perl)" >&2; exit 2; }
if [ -z "${FILES:-}" ]; then
  FILES=$(cd "$MEMCACHED_SRC" && ls t/*.t)
fi

WORK=$(mktemp -d /tmp/chash-memcached-suite.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$OUT" "$WORK/src"
# The tests run from the checkout's root (t/lib, t/*.pem, t/authfile ... are found from there):
# a scratch copy of t/, with the installed binary as the build's memcached-debug.
# line-lengths.t reads doc/protocol.txt. issue_67.t starts servers of its own on the default
# port of every address through the build's `timedrun` (a C helper, with the debug build's
# `-o relaxed_privileges`): not provided, so it fails at once in every mode, listening nowhere.
cp -r "$MEMCACHED_SRC/t" "$WORK/src/"
if [ -d "$MEMCACHED_SRC/doc" ]; then cp -r "$MEMCACHED_SRC/doc" "$WORK/src/"; fi
ln -s "$MEMCACHED" "$WORK/src/memcached-debug"
ln -s "$MEMCACHED" "$WORK/src/memcached"

# free_port, start_proxy, stop_all
# shellcheck source=../suite_lib.sh
source "$(dirname "$0")/../suite_lib.sh"
wait_port() {  # port: until a `version` is answered
  for _ in $(seq 1 200); do
    if python3 - "$1" 2>/dev/null <<'EOF'; then return 0; fi
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"version\r\n")
sys.exit(0 if s.recv(64).startswith(b"VERSION ") else 1)
EOF
    sleep 0.05
  done
  echo "nothing answers on 127.0.0.1:$1" >&2
  return 1
}
start_memcached() {  # port dir
  local user=()
  [ "$(id -u)" = 0 ] && user=(-u root)
  mkdir -p "$2"
  "$MEMCACHED" -l 127.0.0.1 -p "$1" -U 0 -t 4 -m 64 "${user[@]}" >"$2/memcached.log" 2>&1 &
  PIDS+=($!)
  wait_port "$1"
}

start_mode() {  # mode dir -> sets port (what the tests connect to)
  local mode=$1 dir=$2 mport
  mkdir -p "$dir"
  case "$mode" in
    direct)
      port=$(free_port)
      start_memcached "$port" "$dir/m1" || return 1
      ;;
    proxy)
      mport=$(free_port)
      start_memcached "$mport" "$dir/m1" || return 1
      port=$(free_port)
      cat >"$dir/proxy.yml" <<EOF
suite:
  listen: 127.0.0.1:$port
  protocol: memcache
  servers:
    - 127.0.0.1:$mport:1 m1
EOF
      start_proxy "$port" "$dir/proxy.yml" || return 1
      ;;
    *)
      echo "unknown mode $mode (direct, proxy)" >&2
      exit 2
      ;;
  esac
}

# The first failing check: its TAP line (`not ok N - name`), else why the file ended (a die
# message, a bad plan); after a timeout, the last TAP line before it.
first_failure() {  # log rc
  local f
  if [ "$2" = 124 ]; then
    f="timeout after ${FILE_TIMEOUT}s, the last line: $(grep -E '^(not )?ok ' "$1" | tail -1 || true)"
  else
    f=$(grep -m1 -E '^not ok' "$1" | grep -v '# TODO' || true)
    [ -n "$f" ] || f=$(grep -m1 -E ' at (t/|/).* line [0-9]+|^# Looks like|Bad plan|Dubious' "$1" || true)
  fi
  echo "$f" | sed -e 's/[[:space:]]*$//' -e 's/|/\\|/g' | cut -c1-200
}

summary="$OUT/summary.md"
echo "| file | mode | result | ok | not ok | first failure |" >"$summary"
echo "| --- | --- | --- | --- | --- | --- |" >>"$summary"

for file in $FILES; do
  case "$file" in t/*) ;; *) file="t/$file" ;; esac
  [ -f "$WORK/src/$file" ] || { echo "no $file in $MEMCACHED_SRC" >&2; exit 2; }
  base=$(basename "$file" .t)
  for mode in $MODES; do
    name="$mode-$base"
    log="$OUT/$name.log"
    if ! start_mode "$mode" "$WORK/$name" >"$log" 2>&1; then
      stop_all
      echo "| $base | $mode | error | 0 | 0 | could not start the servers: $(tail -1 "$log") |" | tee -a "$summary"
      continue
    fi
    rc=0
    # The Console formatter writes each TAP line as it comes (prove's default for a file, not a
    # terminal, holds them until the test ends: a file cut by the timeout would log nothing).
    (cd "$WORK/src" && T_MEMD_USE_DAEMON="127.0.0.1:$port" timeout "$FILE_TIMEOUT" \
      prove -v --merge --formatter TAP::Formatter::Console "$file" >"$log" 2>&1) || rc=$?
    stop_all
    ok=$(grep -c -E '^ok ' "$log" || true)
    nok=$(grep -c -E '^not ok ' "$log" || true)
    if [ "$rc" = 124 ]; then
      result=timeout
    elif [ "$rc" != 0 ]; then
      result=fail
    elif grep -q -E '^t/.*skipped:|^1\.\.0 # (SKIP|skip)' "$log"; then
      result=skip
    else
      result=pass
    fi
    why=""
    if [ "$result" = fail ] || [ "$result" = timeout ]; then why=$(first_failure "$log" "$rc"); fi
    if [ "$result" = skip ]; then
      why=$(grep -m1 -o -E '(skipped|# (SKIP|skip)).*' "$log" | cut -c1-200 || true)
    fi
    echo "| $base | $mode | $result | $ok | $nok | $why |" | tee -a "$summary"
  done
done
echo "summary: $summary"
