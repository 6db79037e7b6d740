#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the libketama vectors, tests/compat/vectors/libketama__*.tsv, from the real
# libketama (the original last.fm C library), on this machine.
#
#   tests/compat/libketama/generate.sh /path/to/ketama        (or KETAMA_SRC=/path/to/ketama)
#
# libketama is in no package registry: regenerating needs a checkout of its repository (e.g.
# github.com/RJ/ketama; the vectors were made from commit 18cf9a7717dad0d8106a5205900a17617043fe2c,
# the last one) somewhere outside this repo. Its code is compiled into a temporary folder and
# never copied here. Installs gcc and python3 (Debian) if missing.
#
# Every key of keys.hex is used: libketama hashes keys as C strings (up to the first NUL byte),
# and none of ours contains a NUL.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
compat=$(dirname "$here")
out=$compat/vectors
keys=$compat/keys.hex
cmd="tests/compat/libketama/generate.sh KETAMA_CHECKOUT"

src=${1:-${KETAMA_SRC:-}}
if [[ -z $src || ! -f $src/libketama/ketama.c ]]; then
  echo "usage: $0 /path/to/ketama-checkout   (a checkout of github.com/RJ/ketama)" >&2
  exit 2
fi
rev=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo "unknown revision")

missing=()
dpkg -s gcc >/dev/null 2>&1 || missing+=(gcc)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ((${#missing[@]})); then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -w -I"$src/libketama" -o "$tmp/peer" "$here/libketama_peer.c" \
  "$src/libketama/ketama.c" "$src/libketama/md5.c" -lm
mkdir -p "$out"

vector() {  # vector CASE NODE=MEMORY...
  local case=$1 n
  shift
  local f="$out/libketama__${case}.tsv"
  # A fresh servers file per case: libketama caches continua in shared memory by file.
  local servers="$tmp/$case.servers"
  for n in "$@"; do printf '%s\t%s\n' "${n%=*}" "${n##*=}"; done >"$servers"
  {
    echo "# peer: libketama (RJ/ketama $rev), ketama_roll() on a \"host:port<TAB>memory\" file, ketama_get_server()"
    echo "# command: $cmd"
    echo "@preset libketama"
    for n in "$@"; do echo "@node ${n%=*} ${n##*=}"; done
    "$tmp/peer" "$servers" "$keys"
  } >"$f.tmp"
  mv "$f.tmp" "$f"
  echo "wrote $f"
}

equal() {  # equal N: N servers of equal memory
  local i
  for i in $(seq 1 "$1"); do echo "10.0.2.$i:11211=1"; done
}

vector one 10.0.1.1:11211=300
vector two 10.0.1.1:11211=300 10.0.1.2:11211=300
# Memory in MB, as libketama's own ketama.servers example.
vector typical 10.0.1.1:11211=600 10.0.1.2:11211=300 10.0.1.3:11211=200 10.0.1.4:11211=350 \
  10.0.1.5:11211=1000
# Equal weights where the float/double mix of ketama_create_continuum decides the point counts:
# with 49 servers a double-only computation gives 156 points instead of 160, with 50 a float-only
# one does, and with 61 libketama itself gives 156.
mapfile -t nodes < <(equal 49)
vector many-49 "${nodes[@]}"
mapfile -t nodes < <(equal 50)
vector many-50 "${nodes[@]}"
mapfile -t nodes < <(equal 61)
vector many-61 "${nodes[@]}"
nodes=()
for i in $(seq 1 50); do nodes+=("10.0.3.$i:11211=$((i % 7 * 128 + 64))"); done
vector many-weighted "${nodes[@]}"
mapfile -t nodes < <(equal 117)
vector max117 "${nodes[@]}"
# libketama has no default port: the address is hashed exactly as written.
vector noport cache-a=100 cache-b:11211=100 10.0.3.4=200 10.0.3.5:22122=100

# Two servers sharing a point value (found by ../libmemcached/find_ties.py), listed both ways:
# glibc's qsort keeps file order among equal points, so the keys on the contested point change
# owner with the order.
read -r a b expected < <(python3 "$here/../libmemcached/find_ties.py" libketama "$keys")
vector tie "$a=1" "$b=1"
vector tie-swapped "$b=1" "$a=1"
changed=$(paste "$out/libketama__tie.tsv" "$out/libketama__tie-swapped.tsv" |
          awk -F'\t' '!/^[#@]/ && $2 != $4' | wc -l)
if [[ $changed != "$expected" ]]; then
  echo "generate.sh: libketama tie: $changed keys changed owner, expected $expected" >&2
  exit 1
fi
echo "  libketama tie: $a and $b; $changed keys change owner with the order"
