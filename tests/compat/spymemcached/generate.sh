#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/compat/vectors/spymemcached__*.tsv with the real spymemcached 2.12 as Debian
# ships it (libspymemcached-java) on the Debian JDK, via SpymemcachedVectors.java.
#
#   tests/compat/spymemcached/generate.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
keys="$here/../keys.hex"
vectors="$here/../vectors"
mkdir -p "$vectors"

need=""
command -v javac >/dev/null 2>&1 || need="$need default-jdk-headless"
[ -f /usr/share/java/spymemcached.jar ] || need="$need libspymemcached-java"
if [ -n "$need" ]; then
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need
fi

jdk=$(java -version 2>&1 | head -n 1 | sed 's/"//g')
peer="spymemcached $(dpkg-query -W -f '${Version}' libspymemcached-java) (Debian libspymemcached-java) KetamaNodeLocator, KETAMA_HASH, $jdk"

spy() {  # spy CASE ADDR...
  case_=$1
  shift
  java -cp /usr/share/java/spymemcached.jar "$here/SpymemcachedVectors.java" \
    "$vectors/spymemcached__$case_.tsv" "$peer" "$keys" "$@"
}
hosts() {  # hosts N [PORT]: 10.0.a.b:PORT, N of them
  i=0
  while [ "$i" -lt "$1" ]; do
    printf '10.0.%d.%d:%s\n' $((i / 250)) $((i % 250 + 1)) "${2:-11211}"
    i=$((i + 1))
  done
}
spy one 10.0.0.1:11211
spy two 10.0.0.1:11211 10.0.0.2:11211
spy five 10.0.0.1:11211 10.0.0.2:11212 10.0.0.3:11211 10.0.0.4:11213 10.0.0.5:11211
# 61 servers: libketama's float arithmetic gives each 39 digests; spymemcached always 40.
# shellcheck disable=SC2046
spy sixty-one $(hosts 61)
# 1000 servers: past libketama's 117; 160,000 points, so some are shared (the later server owns
# them; the file says how many, with keys in those arcs).
# shellcheck disable=SC2046
spy thousand $(hosts 1000)
# Resolved host names print as "name/ip:port", and that whole string is hashed.
spy names cache-a.example=10.1.0.1:11211 cache-b.example=10.1.0.2:11211 \
  cache-c.example=10.1.0.3:11211 cache-d.example=10.1.0.4:11212

for f in "$vectors"/spymemcached__*.tsv; do
  printf '%s: %s keys\n' "$(basename "$f")" "$(grep -cv '^[#@]' "$f")"
done
