#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one GoogleTest binary as N shards at once (GoogleTest's GTEST_TOTAL_SHARDS/GTEST_SHARD_INDEX:
# every test in exactly one shard) and fails if any shard fails. `make asan` and `make tsan` use it
# so that a sanitized suite keeps both cores busy, as ctest -j does for the normal tree; the tests
# already run side by side there (free ports, their own temporary directories).
#   scripts/gtest-shards.sh N BINARY [GTEST ARGS...]
# Each shard's output goes to a file and is printed whole when the shard ends, in shard order, so
# two shards' lines never interleave.
set -uo pipefail
if [[ $# -lt 2 || ! "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 SHARDS BINARY [ARGS...]" >&2
  exit 2
fi
shards=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pids=()
for ((i = 0; i < shards; i++)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$@" >"$dir/$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for ((i = 0; i < shards; i++)); do
  wait "${pids[$i]}"
  s=$?
  echo "== $(basename "$1") shard $((i + 1))/$shards: exit $s"
  cat "$dir/$i.log"
  [[ $s -eq 0 ]] || rc=1
done
exit $rc
