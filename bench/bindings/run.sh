#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The bindings next to their native peers (docs/BENCHMARKS.md, "Bindings"): Java against Guava and
# spymemcached, Go against groupcache, Node against npm hashring — each in one process with its
# peer, alternating, on KEYS keys (default 100,000) at 10, 100 and 1000 nodes. Prints a Markdown
# table. BUILD is a tree with the bindings built (make bindings); nothing is downloaded.
#
#   make bench-bindings            (or: BUILD=build bash bench/bindings/run.sh [KEYS])
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD:-$root/build}
keys=${1:-100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

jar=$(ls "$build"/bindings/java/chash-[0-9]*.jar | head -1)
# chash-tests.jar: the tests' spymemcached node helper (dev.chash.Keys), shared with the bench.
cp="$jar:$build/bindings/java/chash-tests.jar:/usr/share/java/guava.jar:/usr/share/java/spymemcached.jar"
javac -d "$tmp/java" -cp "$cp" "$here/JavaBench.java"

# Go in GOPATH mode over the build tree's link to bindings/go and Debian's groupcache source.
export GO111MODULE=off GOFLAGS= GOPROXY=off GOCACHE="$build/bindings/go/gocache"
export GOPATH="$build/bindings/go/gopath:/usr/share/gocode"
export CGO_CFLAGS="-I$root/include" CGO_LDFLAGS="-L$build -Wl,-rpath,$build"
mkdir -p "$tmp/gosrc/chash-bench"
cp "$here/go/main.go" "$tmp/gosrc/chash-bench/"
(cd "$tmp/gosrc/chash-bench" && go build -o "$tmp/gobench" main.go)

echo "| binding | peer | nodes | peer ns/key | chash single ns/key | single speedup | chash batch ns/key | batch speedup |"
echo "|---|---|---|---|---|---|---|---|"
java -Dchash.jni.library="$build/bindings/java/libchash_jni.so" -cp "$tmp/java:$cp" JavaBench "$keys"
"$tmp/gobench" "$keys"
CHASH_NODE_ADDON="$root/bindings/node/build/Release/chash.node" node "$here/node/bench.js" "$keys"
