#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The peer comparison: the same keys and node list through chash (presets and native algorithms,
# one key at a time and in batches) and through the peers as Debian/npm ship them — libmemcached
# ketama (C), Guava (Java, JIT warmed, SerialGC), uhashring (Python), node hashring (Node),
# groupcache (Go). Prints one table per node count (table.py): ns per lookup each, the ratio to
# chash's equivalent preset (one key at a time and route_batch) and to chash's native
# algorithms, and whether the peer chose the same node as the preset for every key (equal
# checksums).
#
#   bench/peers/run.sh [NODES[,NODES...] [KEYS]]   default 100 nodes, 100,000 keys of 16 bytes
#   BUILD=build-release ROUNDS=5 REPEAT=3 bench/peers/run.sh 10,100,1000
#   PEERS="libmemcached guava" bench/peers/run.sh 10,100    # chash and these peers only
#
# ROUNDS: timed passes per program run (each reports its least). REPEAT: the programs are run
# in turn REPEAT times (chash, peer, peer, ..., chash, peer, ...), so that a noisy minute on the
# shared machine hits both sides; the table takes each program's least over the repeats.
# JAVA_OPTS: the JVM's flags (default -XX:+UseSerialGC, the collector the targets name).
#   PEERS=guava ONLY=guava,jump,jumpback bench/peers/run.sh 1000000
#                                          only those peers, and only those chash presets and
#                                          algorithms (rings and maglev do not fit a million nodes)
#
# Needs $BUILD/bench/chash_peers (make bench-peers builds it). Nothing listens on the network;
# every program is bounded by `timeout`. A missing peer is reported and skipped; so is a peer
# that refuses the node count (libmemcached aborts past 100 servers in a consistent
# distribution, and the ketama preset refuses them too).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
BUILD=${BUILD:-$root/build-release}
NODES=${1:-100}
KEYS=${2:-100000}
ROUNDS=${ROUNDS:-5}
REPEAT=${REPEAT:-1}
LIMIT=${LIMIT:-300}  # seconds per program
PEERS=${PEERS:-libmemcached guava uhashring node-hashring groupcache}
JAVA_OPTS=${JAVA_OPTS:--XX:+UseSerialGC}
ONLY=${ONLY:-}       # chash presets and algorithms to time (default: all)
chash_peers=$BUILD/bench/chash_peers
[ -x "$chash_peers" ] || { echo "run.sh: $chash_peers not built (make bench-peers)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wanted() { [[ " $PEERS " == *" $1 "* ]]; }

# Build the peers once.
have=()
if wanted libmemcached; then
  if cc -O2 -o "$tmp/libmemcached_bench" "$here/libmemcached_bench.c" -lmemcached 2>"$tmp/cc.err"; then
    have+=(libmemcached)
  else
    echo "run.sh: libmemcached skipped (apt-get install libmemcached-dev): $(head -n 2 "$tmp/cc.err")" >&2
  fi
fi
guava=/usr/share/java/guava.jar
if wanted guava; then
  if command -v javac >/dev/null && [ -f "$guava" ] &&
     javac -nowarn -cp "$guava" -d "$tmp" "$here/GuavaBench.java" 2>"$tmp/javac.err"; then
    have+=(guava)
  else
    echo "run.sh: guava skipped (apt-get install default-jdk-headless libguava-java)" >&2
  fi
fi
wanted uhashring && have+=(uhashring)
if wanted node-hashring; then
  if [ -d "$root/tests/compat/node-hashring/node_modules/hashring" ]; then
    have+=(node-hashring)
  else
    echo "run.sh: node-hashring skipped: no tests/compat/node-hashring/node_modules (npm ci there)" >&2
  fi
fi
if wanted groupcache; then
  if ! command -v go >/dev/null; then
    echo "run.sh: groupcache skipped: no go (apt-get install golang-go golang-github-golang-groupcache-dev)" >&2
  elif (cd "$here" && GO111MODULE=off GOPATH=/usr/share/gocode \
       GOCACHE="$tmp/gocache" GOFLAGS= go build -o "$tmp/groupcache_bench" groupcache_bench.go) 2>"$tmp/go.err"; then
    have+=(groupcache)
  else
    echo "run.sh: groupcache skipped (apt-get install golang-go golang-github-golang-groupcache-dev): $(head -n 2 "$tmp/go.err")" >&2
  fi
fi

for n in ${NODES//,/ }; do
  dir=$tmp/n$n
  mkdir -p "$dir"
  out=$dir/results.tsv
  : >"$out"
  "$chash_peers" gen "$dir" "$n" "$KEYS" || exit 1
  peer() {  # peer NAME COMMAND...: appends the program's result line, or reports why not
    local name=$1
    shift
    if ! timeout "$LIMIT" "$@" >>"$out" 2>"$dir/$name.err"; then
      echo "run.sh: $n nodes: $name skipped: $(tail -n 3 "$dir/$name.err")" >&2
    fi
  }
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  for ((r = 1; r <= REPEAT; ++r)); do
    peer chash "$chash_peers" run "$dir" "$ROUNDS" $ONLY
    for p in "${have[@]}"; do
      case $p in
        libmemcached)
          if ((n > 100)); then
            ((r == 1)) && echo "run.sh: $n nodes: libmemcached skipped: 1.1.4 aborts past 100 servers in a consistent distribution (update_continuum's assert)" >&2
          else
            peer libmemcached "$tmp/libmemcached_bench" "$dir/nodes.txt" "$dir/keys.txt" "$ROUNDS"
          fi ;;
        # shellcheck disable=SC2086  # JAVA_OPTS is a list of flags
        guava) peer guava java $JAVA_OPTS -cp "$guava:$tmp" GuavaBench "$dir/nodes.txt" "$dir/keys.txt" "$ROUNDS" ;;
        uhashring) peer uhashring /usr/bin/python3 "$here/uhashring_bench.py" "$dir/nodes.txt" "$dir/keys.txt" "$ROUNDS" ;;
        node-hashring) NODE_PATH=$root/tests/compat/node-hashring/node_modules \
          peer node-hashring node "$here/hashring_bench.js" "$dir/nodes.txt" "$dir/keys.txt" "$ROUNDS" ;;
        groupcache) peer groupcache "$tmp/groupcache_bench" "$dir/nodes.txt" "$dir/keys.txt" "$ROUNDS" ;;
      esac
    done
  done
  echo
  echo "peers: $n nodes, $KEYS keys of 16 bytes, least of $ROUNDS passes x $REPEAT runs each (alternating); $(nproc) CPUs, load $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after; java $JAVA_OPTS"
  echo
  python3 "$here/table.py" "$out"
done
