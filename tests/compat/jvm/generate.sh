#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/compat/vectors/guava__*.tsv and jedis__*.tsv with the real peers:
#   guava: Debian's libguava-java (Guava 31.1) on the Debian JDK, via GuavaVectors.java;
#   jedis: Jedis' own Sharded / JedisShardInfo / Hashing classes, compiled here from a Jedis 3.x
#          source checkout (Jedis is not in Debian; Sharded was removed in Jedis 4.0), via
#          JedisVectors.java. Nothing is installed from the checkout and it is not modified.
#
#   tests/compat/jvm/generate.sh /path/to/jedis-checkout
#
# Get the checkout with: git clone https://github.com/redis/jedis && git -C jedis checkout v3.10.0
# (verified with v3.10.0, the last 3.x release). Jedis' compile-time dependencies slf4j-api and
# commons-pool2 come from Debian (libslf4j-java, libcommons-pool2-java).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ] || [ ! -f "$1/src/main/java/redis/clients/jedis/util/Sharded.java" ]; then
  echo "usage: $0 JEDIS_CHECKOUT   (a Jedis 3.x source tree: git checkout v3.10.0)" >&2
  exit 2
fi
jedis=$(cd "$1" && pwd)
keys="$here/../keys.hex"
vectors="$here/../vectors"
mkdir -p "$vectors"

# ---- Peers: installed only when missing (idempotent) ------------------------------------------
need=""
command -v javac >/dev/null 2>&1 || need="$need default-jdk-headless"
[ -f /usr/share/java/guava.jar ] || need="$need libguava-java"
[ -f /usr/share/java/slf4j-api.jar ] || need="$need libslf4j-java"
[ -f /usr/share/java/commons-pool2.jar ] || need="$need libcommons-pool2-java"
if [ -n "$need" ]; then
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

jdk=$(java -version 2>&1 | head -n 1 | sed 's/"//g')
guava_ver=$(dpkg-query -W -f '${Version}' libguava-java)

# ---- guava ---------------------------------------------------------------------------------------
guava() {  # guava CASE KEYSET NODE...
  case_=$1 keyset=$2
  shift 2
  java -cp /usr/share/java/guava.jar "$here/GuavaVectors.java" "$vectors/guava__$case_.tsv" \
    "Guava $guava_ver (Debian libguava-java), $jdk" "$keyset" "$@"
}
nodes() {  # nodes PREFIX N: PREFIX0 .. PREFIX(N-1), one a line
  i=0
  while [ "$i" -lt "$2" ]; do
    printf '%s%d\n' "$1" "$i"
    i=$((i + 1))
  done
}
# Guava numbers buckets; the names are labels for the buckets in list order.
guava one "$keys" cache-0
guava two "$keys" cache-0 cache-1
# shellcheck disable=SC2046
guava five "$keys" $(nodes cache- 5)
# shellcheck disable=SC2046
guava many "$keys" $(nodes cache- 50)
# shellcheck disable=SC2046
guava thousand "$keys" $(nodes cache- 1000)
# Keys that are not UTF-8 show how the JDK's decoding (U+FFFD) reaches the hash; 1000 buckets so
# that a wrong hash almost always shows.
# shellcheck disable=SC2046
guava malformed-utf8 malformed $(nodes b 1000)

# ---- jedis ---------------------------------------------------------------------------------------
cp="/usr/share/java/slf4j-api.jar:/usr/share/java/commons-pool2.jar"
javac -nowarn -encoding UTF-8 -d "$tmp/classes" -cp "$cp" -sourcepath "$jedis/src/main/java" \
  -implicit:class "$here/JedisVectors.java" 2>"$tmp/javac.log" || {
  cat "$tmp/javac.log" >&2
  exit 1
}
rev=$(git -C "$jedis" describe --tags --always 2>/dev/null ||
  sed -n 's:.*<version>\(3\.[^<]*\)</version>.*:\1:p' "$jedis/pom.xml" | head -n 1)
jedis_peer="Jedis $rev util.Sharded (built from source), $jdk"

jedis() {  # jedis CASE HASH KEYMODE KEYSET NODE WEIGHT ...
  case_=$1
  shift
  java -cp "$tmp/classes:$cp" JedisVectors "$vectors/jedis__$case_.tsv" "$jedis_peer" "$@"
}
jedis one MURMUR_HASH bytes "$keys" 10.0.0.1:6379 1
jedis two MURMUR_HASH bytes "$keys" 10.0.0.1:6379 1 10.0.0.2:6379 1
jedis weighted MURMUR_HASH bytes "$keys" \
  10.0.0.1:6379 1 10.0.0.2:6379 2 10.0.0.3:6379 3 10.0.0.4:6379 1 10.0.0.5:6379 5
# shellcheck disable=SC2046
jedis many MURMUR_HASH bytes "$keys" $(nodes 10.0.1. 50 | sed 's/$/:6379 1/')
# Named shards: points from the name, not the position.
jedis named MURMUR_HASH bytes "$keys" \
  redis-a=10.0.0.1:6379 1 redis-b=10.0.0.2:6379 1 redis-c=10.0.0.3:6380 2 \
  redis-d=10.0.0.4:6379 1 redis-e=10.0.0.5:6379 3
# Named and unnamed together, and a weight-0 shard (no points, but it still counts in the
# positions the unnamed shards are named by).
jedis mixed MURMUR_HASH bytes "$keys" \
  10.0.0.1:6379 1 shard-b=10.0.0.2:6379 2 10.0.0.3:6379 0 10.0.0.4:6379 1 shard-e=10.0.0.5:6379 1
# Hosts written without a port (JedisShardInfo(host) uses 6379): unnamed shards are placed by
# position, so the written name does not matter.
jedis default-port MURMUR_HASH bytes "$keys" cache-a 1 cache-b 1 cache-c 1
jedis md5 MD5 bytes "$keys" \
  10.0.0.1:6379 1 10.0.0.2:6379 2 10.0.0.3:6379 3 10.0.0.4:6379 1 10.0.0.5:6379 5
# s212*0 and s511*59 have the same MD5 point, 749275365 (found by a search over names): the later
# put (s511) owns it. The point before it is 747476510; 200 extra keys hash in between.
jedis md5-tie MD5 bytes "$keys+arc:747476510:749275365" s212=10.0.0.1:6379 1 s511=10.0.0.2:6379 1
# Key tags (ShardedJedis(shards, Sharded.DEFAULT_KEY_TAG_PATTERN)) on String keys.
jedis tag MURMUR_HASH tag "$keys+tag-edge" \
  10.0.0.1:6379 1 10.0.0.2:6379 1 10.0.0.3:6379 2 10.0.0.4:6379 1 10.0.0.5:6379 1
# Binary keys (BinaryShardedJedis): the raw bytes are hashed.
jedis binary MURMUR_HASH bytes malformed \
  10.0.0.1:6379 1 10.0.0.2:6379 2 10.0.0.3:6379 3 10.0.0.4:6379 1 10.0.0.5:6379 5

for f in "$vectors"/guava__*.tsv "$vectors"/jedis__*.tsv; do
  printf '%s: %s keys\n' "$(basename "$f")" "$(grep -cv '^[#@]' "$f")"
done
