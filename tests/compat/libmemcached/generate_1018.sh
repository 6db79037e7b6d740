#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libmemcached 1.0.18 as released, built from its source, for the preset setting version=1.0.18:
#   - replays every libmemcached route vector of tests/compat/vectors/ (all have at most 100
#     servers) on 1.0.18: it must pick the same server as 1.1.4 for every key, except where
#     1.0.18 differs by design — MURMUR3, which 1.0.18 computes as MURMUR (those files are
#     written again from 1.0.18 into the folder below), and bracketed IPv6 server strings, which
#     1.0.18 cannot parse (skipped; chash refuses them with version=1.0.18);
#   - writes tests/compat/vectors-libmemcached-1.0.18/*.tsv: those, and more than 100 servers,
#     where 1.1.4 (Debian) aborts and 1.0.18 does not.
#
#   tests/compat/libmemcached/generate_1018.sh /path/to/libmemcached   # or LIBMEMCACHED_1018_SRC=
#
# The path is a checkout of github.com/awesomized/libmemcached (or the original launchpad tree)
# that has the tag 1.0.18, or an unpacked 1.0.18 source tree. Debian 12 ships only 1.1.4, and
# 1.0.18 is in no registry this project uses, so nothing of it is copied here: this script
# exports the tag into a temporary folder, builds only libmemcached.so there (autoreconf,
# configure, make; Debian packages autoconf automake libtool bison flex g++ are installed if
# missing) and links libmemcached_peer.c against it. The export has no .git folder, so
# configure defines NDEBUG as for a release tarball (m4/ax_assert.m4): the build must report
# "Assertions enabled: no", or the >100-server continuum would abort as 1.1.4's does.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
compat=$(dirname "$here")
vectors=$compat/vectors
out=$compat/vectors-libmemcached-1.0.18
keys=$compat/keys.hex
cmd="tests/compat/libmemcached/generate_1018.sh"
src=${1:-${LIBMEMCACHED_1018_SRC:-}}
[[ -n ${LIBMEMCACHED_1018_BUILT:-} || ( -n $src && -d $src ) ]] ||
  { echo "usage: $cmd /path/to/libmemcached (tag 1.0.18)" >&2; exit 2; }

missing=()
for pkg in autoconf automake libtool bison flex g++ gcc; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n ${LIBMEMCACHED_1018_BUILT:-} ]]; then
  # A tree this script built before (kept with KEEP_BUILD=1): skip the build.
  tree=$LIBMEMCACHED_1018_BUILT
  origin=$(cat "$tree/.chash-origin")
else
  tree=$tmp/src
  mkdir "$tree"
  if git -C "$src" rev-parse --verify -q 1.0.18 >/dev/null 2>&1; then
    git -C "$src" archive 1.0.18 | tar -x -C "$tree"
    origin="$(git -C "$src" rev-parse 1.0.18^{commit}) (tag 1.0.18)"
  else
    (cd "$src" && tar --exclude=.git --exclude=.bzr -cf - .) | tar -x -C "$tree"
    origin="source tree $src"
  fi
  grep -q '\[1\.0\.18\]' "$tree/version.m4" || { echo "$cmd: $src is not 1.0.18" >&2; exit 1; }
  echo "$origin" >"$tree/.chash-origin"
  echo "building libmemcached 1.0.18 in $tree (a few minutes)"
  (
    cd "$tree"
    autoreconf -fi >"$tmp/autoreconf.log" 2>&1
    # -fpermissive lets gcc 12 accept 1.0.18's older C++ should any of it be rejected; -w hides
    # its warnings. Only the library is built: the peer needs nothing else.
    ./configure --disable-dtrace --disable-sasl --without-memcached \
      CFLAGS="-O2 -w" CXXFLAGS="-O2 -w -fpermissive" >"$tmp/configure.log" 2>&1
    grep -q 'Assertions enabled: *no' "$tmp/configure.log" ||
      { echo "$cmd: configure enabled assertions; 1.0.18 releases have them off" >&2; exit 1; }
    make -j"$(nproc)" libmemcached/csl/parser.cc libmemcached/csl/scanner.cc >"$tmp/make.log" 2>&1
    make -j"$(nproc)" libmemcached/libmemcached.la >>"$tmp/make.log" 2>&1
  ) || { tail -20 "$tmp"/*.log >&2; exit 1; }
  if [[ -n ${KEEP_BUILD:-} ]]; then
    mv "$tree" "$KEEP_BUILD" && tree=$KEEP_BUILD
    echo "kept the build in $tree (LIBMEMCACHED_1018_BUILT=$tree reuses it)"
  fi
fi
lib=$tree/libmemcached/.libs
cc -O2 -Wall -I"$tree" -o "$tmp/peer" "$here/libmemcached_peer.c" "$lib/libmemcached.so" \
  -Wl,-rpath,"$lib"
"$tmp/peer" hashes >/dev/null

# ---- 1. Every libmemcached route vector, replayed on 1.0.18 ------------------------------------
# The behaviour list of a vector file, as libmemcached_peer takes it: the preset's own list
# (generate.sh settings_of), the @setting lines in order, then @option hash.
preset_settings() {
  case $1 in
    ketama) echo "ketama_weighted=1" ;;
    ketama-spy) echo "ketama_weighted=1,distribution=CONSISTENT_KETAMA_SPY" ;;
    libmemcached-consistent) echo "distribution=CONSISTENT" ;;
    *) echo "" ;;
  esac
}
replayed=0
replayed_keys=0
skipped=()
differ=()
murmur3=()
for f in "$vectors"/{ketama,ketama-spy,libmemcached-consistent,libmemcached-modula,libmemcached}__*.tsv; do
  grep -q '^@option replicas' "$f" && continue  # the e2e-replicas walks, not a route
  if grep -q '^@node \[' "$f"; then
    # 1.0.18's memcached_servers_parse splits "[::1]:11211" at the first ':' (host "["); chash
    # refuses bracketed names with version=1.0.18.
    skipped+=("$(basename "$f")")
    continue
  fi
  preset=$(awk '$1 == "@preset" { print $2 }' "$f")
  list=$(preset_settings "$preset")
  while read -r name value; do
    case $value in true) value=1 ;; false) value=0 ;; esac
    list+="${list:+,}$name=$value"
  done < <(awk '$1 == "@setting" { print $2, $3 }' "$f")
  hash=$(awk '$1 == "@option" && $2 == "hash" { print $3 }' "$f")
  [[ -n $hash ]] && list+="${list:+,}hash=$hash"
  mapfile -t nodes < <(awk '$1 == "@node" { print $2 "=" $3 }' "$f")
  awk -F'\t' '!/^[#@]/ { print $1 }' "$f" >"$tmp/keys"
  "$tmp/peer" route "${list:--}" "$tmp/keys" "${nodes[@]}" | grep -v '^#' >"$tmp/got"
  if ! diff -q <(grep -v '^[#@]' "$f" | cut -f1,2) "$tmp/got" >/dev/null &&
    grep -qiE '^@(setting|option) hash murmur3' "$f"; then
    # Expected: 1.0.18's MURMUR3 is MurmurHash2. Keep 1.0.18's answer as a vector of its own.
    mkdir -p "$out"
    {
      echo "# peer: libmemcached 1.0.18 built from $origin with NDEBUG, memcached_generate_hash() and memcached_server_by_key()"
      echo "# the configuration of tests/compat/vectors/$(basename "$f") (1.1.4), replayed on 1.0.18"
      echo "# command: $cmd"
      awk '$1 == "@preset" { print; print "@setting version 1.0.18"; next } /^@/' "$f"
      cat "$tmp/got"
    } >"$out/$(basename "$f")"
    echo "wrote $out/$(basename "$f") (MURMUR3 is MURMUR in 1.0.18)"
    murmur3+=("$(basename "$f")")
    continue
  fi
  if ! diff -q <(grep -v '^[#@]' "$f" | cut -f1,2) "$tmp/got" >/dev/null; then
    n=$(paste <(grep -v '^[#@]' "$f" | cut -f2) <(cut -f2 "$tmp/got") | awk -F'\t' '$1 != $2' |
        wc -l)
    differ+=("$(basename "$f") ($n keys)")
    continue
  fi
  replayed=$((replayed + 1))
  replayed_keys=$((replayed_keys + $(wc -l <"$tmp/got")))
done
echo "1.0.18 agrees with 1.1.4 on $replayed route vector files ($replayed_keys keys);" \
  "differs as expected (MURMUR3) on ${#murmur3[@]}: ${murmur3[*]};" \
  "skipped (bracketed IPv6 names): ${skipped[*]}"
if ((${#differ[@]})); then
  printf '%s: 1.0.18 and 1.1.4 differ on %s\n' "$cmd" "${differ[@]}" >&2
  exit 1
fi

# ---- 2. More than 100 servers ----------------------------------------------------------------
mkdir -p "$out"
half_keys=$tmp/keys-every-2nd.hex
awk 'NR % 2 == 1' "$keys" >"$half_keys"
vector_1018() {  # vector_1018 PRESET CASE "NAME=VALUE ..." NODE=WEIGHT...
  local preset=$1 case=$2 settings=$3 s list n
  shift 3
  list=$(preset_settings "$preset")
  for s in $settings; do list+="${list:+,}$s"; done
  local f="$out/${preset}__${case}.tsv"
  {
    echo "# peer: libmemcached 1.0.18 built from $origin with NDEBUG, memcached_generate_hash() and memcached_server_by_key()"
    echo "# client: the preset's behaviours, then the @settings in this order, then servers added in this order"
    echo "# keys: every 2nd key of tests/compat/keys.hex"
    echo "# command: $cmd"
    echo "@preset $preset"
    echo "@setting version 1.0.18"
    for s in $settings; do
      local v=${s#*=}
      case $v in 1) v=true ;; 0) v=false ;; esac
      echo "@setting ${s%%=*} $v"
    done
    for n in "$@"; do echo "@node ${n%=*} ${n##*=}"; done
    "$tmp/peer" route "${list:--}" "$half_keys" "$@"
  } >"$f.tmp"
  mv "$f.tmp" "$f"
  echo "wrote $f"
}
equal150=() weighted150=() equal200=() equal250=()
for i in $(seq 1 150); do
  equal150+=("10.0.6.$i:11211=1")
  weighted150+=("mc$i.example.net:$((11211 + i % 2))=$((i % 4 + 1))")
done
for i in $(seq 1 200); do equal200+=("mc$i.example.net=1"); done
for i in $(seq 1 250); do equal250+=("cache-$i.example:11211=1"); done

vector_1018 ketama many150 "" "${equal150[@]}"
vector_1018 ketama many200 "" "${equal200[@]}"  # 156 points each (float rounding)
vector_1018 ketama weighted150 "" "${weighted150[@]}"
vector_1018 ketama-spy many150 "" "${equal150[@]}"
vector_1018 libmemcached-consistent many150 "" "${equal150[@]}"
vector_1018 libmemcached-consistent many250 "" "${equal250[@]}"
vector_1018 libmemcached-consistent weighted150 "" "${weighted150[@]}"
vector_1018 libmemcached-consistent many150-hash-crc "hash=crc" "${equal150[@]}"
vector_1018 libmemcached-consistent many150-spy-hash-md5 \
  "distribution=CONSISTENT_KETAMA_SPY hash=md5" "${equal150[@]}"
vector_1018 libmemcached-modula many150-ketama-hash-fnv1a_32 "ketama=1 hash=fnv1a_32" \
  "${equal150[@]}"
