#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/testdata/hash/*.tsv from real peers on this machine (see README.md).
#
#   TWEMPROXY_SRC=/path/to/twemproxy LIBMEMCACHED_SRC=/path/to/libmemcached \
#   FNV_SRC=/path/to/fnv tests/compat/hash/gen_all.sh
#
# Without those checkouts, hsieh.tsv (no packaged binary has hsieh) and fnv_test_suite.tsv (the
# published FNV suite, parsed from test_fnv.c) are left as they are.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out="$root/tests/testdata/hash"
guava=/usr/share/java/guava.jar
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 "$here/keys.py" > "$tmp/keys.hex"

/usr/bin/python3 "$here/gen_python.py" stdlib < "$tmp/keys.hex" > "$out/python_stdlib.tsv"
/usr/bin/python3 "$here/gen_python.py" xxhash < "$tmp/keys.hex" > "$out/python_xxhash.tsv"
/usr/bin/python3 "$here/gen_python.py" murmur < "$tmp/keys.hex" > "$out/appleby_murmur.tsv"
sh "$here/gen_xxhsum.sh" < "$tmp/keys.hex" > "$out/xxhsum.tsv"

cc -O2 -o "$tmp/gen_c_peers" "$here/gen_c_peers.c" -lhashkit -lmurmurhash
"$tmp/gen_c_peers" hashkit < "$tmp/keys.hex" > "$out/libhashkit.tsv"
"$tmp/gen_c_peers" libmurmurhash < "$tmp/keys.hex" > "$out/libmurmurhash.tsv"

java -cp "$guava" "$here/JavaVectors.java" guava < "$tmp/keys.hex" > "$out/guava.tsv"
java -cp "$guava" "$here/JavaVectors.java" utf8 > "$out/java_string_hashcode.tsv"

if [ -n "${FNV_SRC:-}" ]; then
  python3 "$here/gen_fnv_suite.py" "$FNV_SRC/test_fnv.c" > "$out/fnv_test_suite.tsv"
else
  echo "gen_all: FNV_SRC not set; kept $out/fnv_test_suite.tsv" >&2
fi

if [ -n "${TWEMPROXY_SRC:-}" ] && [ -n "${LIBMEMCACHED_SRC:-}" ]; then
  sh "$here/gen_hsieh.sh" "$TWEMPROXY_SRC/src/hashkit/nc_hsieh.c" \
    "$LIBMEMCACHED_SRC/src/libhashkit/hsieh.cc" < "$tmp/keys.hex" > "$out/hsieh.tsv"
else
  echo "gen_all: TWEMPROXY_SRC/LIBMEMCACHED_SRC not set; kept $out/hsieh.tsv" >&2
fi
echo "gen_all: wrote $(ls "$out" | wc -l) files to $out" >&2
