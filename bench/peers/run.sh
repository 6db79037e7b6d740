#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The peer comparison: the same keys and node list through chash (presets and native algorithms)
# and through the peers as Debian/npm ship them — libmemcached ketama (C), Guava (Java, JIT warmed),
# uhashring (Python), node hashring (Node), groupcache (Go). Prints a table (table.py): ns per
# lookup each, the ratio to chash's equivalent preset and to chash's native algorithms, and
# whether the peer chose the same node as the preset for every key (equal checksums).
#
#   bench/peers/run.sh [NODES [KEYS]]      default 100 nodes, 100,000 keys of 16 bytes
#   BUILD=build-release ROUNDS=5 bench/peers/run.sh
#   PEERS=guava ONLY=guava,jump,jumpback bench/peers/run.sh 1000000
#                                          only those peers, and only those chash presets and
#                                          algorithms (rings and maglev do not fit a million nodes)
#
# Needs $BUILD/bench/chash_peers (make bench-peers builds it). Nothing listens on the network;
# every program is bounded by `timeout`. A missing peer is reported and skipped.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$root/build-release}
NODES=${1:-100}
KEYS=${2:-100000}
ROUNDS=${ROUNDS:-5}
LIMIT=${LIMIT:-300}  # seconds per program
PEERS=${PEERS:-libmemcached,guava,uhashring,node-hashring,groupcache}
ONLY=${ONLY:-}       # chash presets and algorithms to time (default: all)
wants() { [[ ",$PEERS," == *",$1,"* ]]; }
chash_peers=$BUILD/bench/chash_peers
[ -x "$chash_peers" ] || { echo "run.sh: $chash_peers not built (make bench-peers)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/results.tsv
"$chash_peers" gen "$tmp" "$NODES" "$KEYS" || exit 1

peer() {  # peer NAME COMMAND...: appends the program's result line, or reports why not
  local name=$1
  shift
  if ! timeout "$LIMIT" "$@" >>"$out" 2>"$tmp/$name.err"; then
    echo "run.sh: $name skipped: $(tail -n 3 "$tmp/$name.err")" >&2
  fi
}

peer chash "$chash_peers" run "$tmp" "$ROUNDS" $ONLY

if ! wants libmemcached; then
  :
elif cc -O2 -o "$tmp/libmemcached_bench" "$here/libmemcached_bench.c" -lmemcached 2>"$tmp/cc.err"; then
  peer libmemcached "$tmp/libmemcached_bench" "$tmp/nodes.txt" "$tmp/keys.txt" "$ROUNDS"
else
  echo "run.sh: libmemcached skipped (apt-get install libmemcached-dev): $(head -n 2 "$tmp/cc.err")" >&2
fi

guava=/usr/share/java/guava.jar
if ! wants guava; then
  :
elif command -v javac >/dev/null && [ -f "$guava" ] &&
   javac -nowarn -cp "$guava" -d "$tmp" "$here/GuavaBench.java" 2>"$tmp/javac.err"; then
  peer guava java -cp "$guava:$tmp" GuavaBench "$tmp/nodes.txt" "$tmp/keys.txt" "$ROUNDS"
else
  echo "run.sh: guava skipped (apt-get install default-jdk-headless libguava-java)" >&2
fi

if wants uhashring; then
  peer uhashring /usr/bin/python3 "$here/uhashring_bench.py" "$tmp/nodes.txt" "$tmp/keys.txt" "$ROUNDS"
fi

if wants node-hashring; then
  NODE_PATH=$root/tests/compat/node-hashring/node_modules \
    peer node-hashring node "$here/hashring_bench.js" "$tmp/nodes.txt" "$tmp/keys.txt" "$ROUNDS"
fi

if ! wants groupcache; then
  :
elif command -v go >/dev/null && (cd "$here" && GO111MODULE=off GOPATH=/usr/share/gocode \
     GOCACHE="$tmp/gocache" GOFLAGS= go build -o "$tmp/groupcache_bench" groupcache_bench.go) 2>"$tmp/go.err"; then
  peer groupcache "$tmp/groupcache_bench" "$tmp/nodes.txt" "$tmp/keys.txt" "$ROUNDS"
else
  echo "run.sh: groupcache skipped (apt-get install golang-go golang-github-golang-groupcache-dev): $(head -n 2 "$tmp/go.err")" >&2
fi

echo "peers: $NODES nodes, $KEYS keys of 16 bytes, least of $ROUNDS passes each; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$here/table.py" "$out"
