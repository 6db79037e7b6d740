#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates the vectors of the five presets that reproduce the hand-written rings of the
# articles chash grew from (tests/compat/README.md, "Article vectors"):
#   guava-iphash, guava-treemap  article 000 (IP Hash 与一致性哈希): IPHashLoadBalancer and
#                                ConsistentHashLoadBalancer on Guava's murmur3_128
#   java-hashcode-ring           article 002 (一致性hash算法和hash算法的区别): TreeMap ring on
#                                Math.abs(String.hashCode())
#   python-md5-ring              article 003 (优雅求模一致性哈希算法): ConsistentHashRing on MD5
#   murmur64a-treemap            article 004 (一致性哈希算法的原理与应用剖析): ConsistentHash on
#                                MurmurHash64A, seed 0x1234ABCD
# The articles' code is re-implemented (same behaviour) in ArticleRings.java (Java: 000, 002,
# 004; compiled here against Debian's libguava-java, Guava 31.1, and run on the Debian JDK) and
# article_rings.py (Python: 003; Debian's /usr/bin/python3). No checkout is needed. Afterwards
# crosscheck.py recomputes every file with an independent Python implementation and prints, per
# file, the number of keys and of distinct nodes chosen.
#
#   tests/compat/articles/generate.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
keys="$here/../keys.hex"
vectors="$here/../vectors"
mkdir -p "$vectors"

# ---- Peers: installed only when missing (idempotent) ------------------------------------------
need=""
command -v javac >/dev/null 2>&1 || need="$need default-jdk-headless"
[ -f /usr/share/java/guava.jar ] || need="$need libguava-java"
[ -x /usr/bin/python3 ] || need="$need python3"
if [ -n "$need" ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
guava=/usr/share/java/guava.jar
javac -nowarn -encoding UTF-8 -d "$tmp" -cp "$guava" "$here/ArticleRings.java"

jdk=$(java -version 2>&1 | head -n 1 | sed 's/"//g')
guava_ver=$(dpkg-query -W -f '${Version}' libguava-java)
pyver=$(/usr/bin/python3 -c 'import platform; print(platform.python_version())')
pydeb=$(dpkg-query -W -f '${Version}' python3 2>/dev/null || echo unknown)
java_impl="re-implemented in tests/compat/articles/ArticleRings.java"
peer000="article 000 (IPHashLoadBalancer / ConsistentHashLoadBalancer, $java_impl)"
peer000="$peer000 re-run with Guava $guava_ver (Debian libguava-java), $jdk"
peer002="article 002 (TreeMap ring on Math.abs(String.hashCode()), $java_impl) run on $jdk"
peer004="article 004 (ConsistentHash + HashService MurmurHash64A, $java_impl) run on $jdk"
peer004="$peer004 with -Dfile.encoding=UTF-8 (key.getBytes() is UTF-8)"
peer003="article 003 (ConsistentHashRing, re-implemented in tests/compat/articles/article_rings.py)"
peer003="$peer003 run on /usr/bin/python3 $pyver (Debian python3 $pydeb)"

# Every file of the five presets is rewritten: none is left from an earlier case list.
for p in guava-iphash guava-treemap java-hashcode-ring python-md5-ring murmur64a-treemap; do
  rm -f "$vectors/${p}__"*.tsv
done

java_case() {  # java_case PEER PRESET CASE VNODES|- NODE...
  peer=$1 preset=$2 case_=$3 vn=$4
  shift 4
  java -Dfile.encoding=UTF-8 -cp "$tmp:$guava" ArticleRings \
    "$vectors/${preset}__$case_.tsv" "$peer" "$keys" "$preset" "$vn" "$@"
}
py_case() {  # py_case CASE VNODES|- NODE WEIGHT ...
  case_=$1 vn=$2
  shift 2
  /usr/bin/python3 "$here/article_rings.py" "$vectors/python-md5-ring__$case_.tsv" "$peer003" \
    "$keys" "$vn" "$@"
}
seq_nodes() {  # seq_nodes PREFIX FIRST LAST [SUFFIX]: PREFIX<FIRST>SUFFIX .. PREFIX<LAST>SUFFIX
  i=$2
  while [ "$i" -le "$3" ]; do
    printf '%s%d%s\n' "$1" "$i" "${4:-}"
    i=$((i + 1))
  done
}

# ---- guava-iphash (article 000): servers.get(Math.abs(asInt % n)); names only label positions
java_case "$peer000" guava-iphash one - 10.0.1.1:8080
java_case "$peer000" guava-iphash two - 10.0.1.1:8080 10.0.1.2:8080
# The article's nginx upstream.
java_case "$peer000" guava-iphash three - 10.0.1.1:8080 10.0.1.2:8080 10.0.1.3:8080
# shellcheck disable=SC2046
java_case "$peer000" guava-iphash five - $(seq_nodes 10.0.1. 1 5 :8080)
# shellcheck disable=SC2046
java_case "$peer000" guava-iphash many - $(seq_nodes 10.0.1. 1 50 :8080)
# shellcheck disable=SC2046
java_case "$peer000" guava-iphash names - $(seq_nodes cache- 0 6)

# ---- guava-treemap (article 000): server point + <server>#VN<i>, default 150 vnodes ----------
java_case "$peer000" guava-treemap one - 192.168.0.1
java_case "$peer000" guava-treemap two - 192.168.0.1 192.168.0.2
# shellcheck disable=SC2046
java_case "$peer000" guava-treemap five - $(seq_nodes 192.168.0. 1 5)
# shellcheck disable=SC2046
java_case "$peer000" guava-treemap many - $(seq_nodes 192.168.0. 1 40)
# Only the servers' own points.
# shellcheck disable=SC2046
java_case "$peer000" guava-treemap vnodes0 0 $(seq_nodes 192.168.0. 1 5)
# shellcheck disable=SC2046
java_case "$peer000" guava-treemap vnodes10 10 $(seq_nodes 192.168.0. 1 5)
# The article's "150~200 per server", upper end.
# shellcheck disable=SC2046
java_case "$peer000" guava-treemap vnodes200 200 $(seq_nodes 192.168.0. 1 5)
java_case "$peer000" guava-treemap names - ServerA ServerB ServerC ServerD

# ---- java-hashcode-ring (article 002): server point + <server>#<i>, default 3 vnodes ----------
article002="123.111.0.0 123.101.3.1 111.20.35.2 123.98.26.3"
java_case "$peer002" java-hashcode-ring one - 123.111.0.0
java_case "$peer002" java-hashcode-ring two - 123.111.0.0 123.101.3.1
# The article's four servers, with its 3 virtual nodes, and without (its first variant).
# shellcheck disable=SC2086
java_case "$peer002" java-hashcode-ring four - $article002
# shellcheck disable=SC2086
java_case "$peer002" java-hashcode-ring four-vnodes0 0 $article002
# shellcheck disable=SC2086
java_case "$peer002" java-hashcode-ring four-vnodes100 100 $article002
# shellcheck disable=SC2086
java_case "$peer002" java-hashcode-ring five - $article002 111.20.35.3
# shellcheck disable=SC2046
java_case "$peer002" java-hashcode-ring many - $(seq_nodes 10.0.0. 1 30)
# shellcheck disable=SC2046
java_case "$peer002" java-hashcode-ring names - $(seq_nodes cache- 1 5)
# "Aa" and "BB" have the same String.hashCode(), so cache-Aa and cache-BB (and every
# <name>#<i> of theirs) share all their points: cache-BB, put later, owns them all.
java_case "$peer002" java-hashcode-ring tie - cache-Aa cache-BB cache-C
# "polygenelubricants".hashCode() is Integer.MIN_VALUE: Math.abs leaves it negative, so that
# point sorts first in the TreeMap (every other position is >= 0, so it routes as 2^31 would).
java_case "$peer002" java-hashcode-ring min-value - 123.111.0.0 polygenelubricants 123.98.26.3

# ---- python-md5-ring (article 003): <node>_v<i>, default 150 vnodes, weight = vnode multiple -
py_case one - ServerA 1
py_case two - ServerA 1 ServerB 1
# The article's own test: three servers with 3 virtual nodes, then ServerD added.
py_case three-vnodes3 3 ServerA 1 ServerB 1 ServerC 1
py_case four-vnodes3 3 ServerA 1 ServerB 1 ServerC 1 ServerD 1
py_case five - ServerA 1 ServerB 1 ServerC 1 ServerD 1 ServerE 1
# shellcheck disable=SC2046
py_case many - $(seq_nodes cache- 0 49 ' 1')
# The nodes of the article's hash_ring example, here on the article's own MD5 ring.
py_case ips - 127.0.0.1:6379 1 127.0.0.1:6380 1 127.0.0.1:6381 1 127.0.0.1:6382 1
# Weights by vnode count (the article's section 4.1): weight w -> 150 * w points.
py_case weighted - ServerA 1 ServerB 2 ServerC 3 ServerD 1
# The article's example figures: 300 virtual nodes for a fast server, 50 for a slow one.
py_case weighted-vnodes50 50 fast-1 6 slow-1 1 slow-2 1 fast-2 6

# ---- murmur64a-treemap (article 004): <node>0 .. <node>499 -------------------------------------
java_case "$peer004" murmur64a-treemap one - 192.168.0.1
java_case "$peer004" murmur64a-treemap two - 192.168.0.1 192.168.0.2
# shellcheck disable=SC2046
java_case "$peer004" murmur64a-treemap five - $(seq_nodes 192.168.0. 1 5)
# The article's test: ten nodes, 500 replicas (its comment says 100: that is ten-vnodes100).
# shellcheck disable=SC2046
java_case "$peer004" murmur64a-treemap ten - $(seq_nodes 192.168.0. 1 10)
# shellcheck disable=SC2046
java_case "$peer004" murmur64a-treemap ten-vnodes100 100 $(seq_nodes 192.168.0. 1 10)
# 50 nodes: "192.168.0.1" + "10" is "192.168.0.11" + "0", so point names repeat across nodes
# and the later node owns the point.
# shellcheck disable=SC2046
java_case "$peer004" murmur64a-treemap many - $(seq_nodes 192.168.0. 1 50)
# shellcheck disable=SC2046
java_case "$peer004" murmur64a-treemap names - $(seq_nodes cache- 1 12)

# ---- self-check ---------------------------------------------------------------------------------
/usr/bin/python3 "$here/crosscheck.py"
