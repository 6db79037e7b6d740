#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target in DIR (DIR/*_fuzz) for SECONDS each, JOBS at a time (a libFuzzer
# process is one thread), each over its growing corpus DIR/corpus/NAME and the seeds in
# fuzz/corpus/NAME. Prints each target's summary lines when it ends; fails if any target found
# a crash, a leak or a timeout (its full output is printed then, with the reproducer's path).
#   scripts/fuzz-all.sh DIR SECONDS JOBS
set -uo pipefail
if [[ $# -ne 3 || ! "$2" =~ ^[0-9]+$ || ! "$3" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 DIR SECONDS JOBS" >&2
  exit 2
fi
dir=$1 seconds=$2 jobs=$3
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
targets=("$dir"/*_fuzz)
[[ -x "${targets[0]}" ]] || { echo "fuzz-all: no *_fuzz targets in $dir" >&2; exit 2; }

rc=0
# Reports one finished target: its summary, or all of its output when it failed.
report() {
  local name=$1 status=$2
  if [[ $status -eq 0 ]]; then
    echo "fuzz: $name for ${seconds}s: $(grep -E '^Done' "$logs/$name.log" | tail -1)"
  else
    echo "fuzz: $name FAILED (exit $status):"
    cat "$logs/$name.log"
    rc=1
  fi
}

declare -A running=()  # pid -> target name
for f in "${targets[@]}"; do
  while [[ ${#running[@]} -ge $jobs ]]; do
    wait -n -p done_pid
    s=$?
    report "${running[$done_pid]}" "$s"
    unset "running[$done_pid]"
  done
  name=$(basename "$f")
  mkdir -p "$dir/corpus/$name"
  "$f" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=0 \
    "$dir/corpus/$name" "fuzz/corpus/$name" >"$logs/$name.log" 2>&1 &
  running[$!]=$name
done
while [[ ${#running[@]} -gt 0 ]]; do
  wait -n -p done_pid
  s=$?
  report "${running[$done_pid]}" "$s"
  unset "running[$done_pid]"
done
exit $rc
