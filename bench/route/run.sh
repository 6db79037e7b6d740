#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `chash route` as a whole process: keys read from a file, routed, one node name a line written
# out — what a bulk user (a key dump through the CLI) gets. Issue 15's target: >= 20 M keys/s for
# ring and maglev on a 2M-key file. Each row is the least wall time of ROUNDS runs; with
# BASELINE=<another chash binary> the two binaries alternate run by run (one noisy moment hits
# both) and their outputs are compared byte for byte.
#
#   bench/route/run.sh [KEYS]                       default 2,000,000 keys, 100 nodes
#   BASELINE=/tmp/chash-old ROUNDS=10 bench/route/run.sh
#
# Nothing touches the network; the key file is made in a temporary directory and removed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CHASH=${CHASH:-$root/build-release/chash}
BASELINE=${BASELINE:-}
KEYS=${1:-2000000}
NODES=${NODES:-100}
ROUNDS=${ROUNDS:-7}
ROUTES=${ROUTES:-"--algo=ring --algo=maglev --algo=jump --algo=jumpback --preset=ketama --preset=guava"}
[ -x "$CHASH" ] || { echo "run.sh: $CHASH not built (make release)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$KEYS" > "$tmp/keys.txt" <<'PY'
import random, sys
r = random.Random(1)
out = sys.stdout
for _ in range(int(sys.argv[1])):
    out.write("user:%016x\n" % r.getrandbits(64))
PY
nodes=$(seq -s, -f "10.0.0.%g:11211" 1 "$NODES")

# Least wall milliseconds of one run of "$@" > $out, over the runs so far (global best_$tag).
run_once() {
  local tag=$1 out=$2
  shift 2
  local t0 t1
  t0=$(date +%s%N)
  "$@" > "$out"
  t1=$(date +%s%N)
  local ms=$(((t1 - t0) / 1000000))
  local var="best_$tag"
  if [ -z "${!var:-}" ] || [ "$ms" -lt "${!var}" ]; then printf -v "$var" '%s' "$ms"; fi
}

echo "| route | keys | nodes | chash ms | M keys/s |$([ -n "$BASELINE" ] && echo ' baseline ms | M keys/s | after / before | same output |')"
echo "|---|---:|---:|---:|---:|$([ -n "$BASELINE" ] && echo '---:|---:|---:|---|')"
for r in $ROUTES; do
  unset best_new best_old
  for _ in $(seq "$ROUNDS"); do
    run_once new "$tmp/new.out" "$CHASH" route "$r" --nodes "$nodes" --keys-file "$tmp/keys.txt"
    if [ -n "$BASELINE" ]; then
      run_once old "$tmp/old.out" "$BASELINE" route "$r" --nodes "$nodes" --keys-file "$tmp/keys.txt"
    fi
  done
  [ "$(wc -l < "$tmp/new.out")" -eq "$KEYS" ] || { echo "run.sh: $r: wrong line count" >&2; exit 1; }
  row="| ${r#--} | $KEYS | $NODES | $best_new | $(awk -v k="$KEYS" -v m="$best_new" 'BEGIN{printf "%.1f", k/m/1000}') |"
  if [ -n "$BASELINE" ]; then
    same=$(cmp -s "$tmp/new.out" "$tmp/old.out" && echo yes || echo NO)
    row+=" $best_old | $(awk -v k="$KEYS" -v m="$best_old" 'BEGIN{printf "%.1f", k/m/1000}') |"
    row+=" $(awk -v a="$best_new" -v b="$best_old" 'BEGIN{printf "%.2fx", b/a}') | $same |"
  fi
  echo "$row"
done
