#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/compat/vectors/groupcache__*.tsv with the real groupcache consistenthash
# package as Debian ships it (golang-github-golang-groupcache-dev), built by Debian's Go
# (golang-go) in GOPATH mode against /usr/share/gocode — no module download.
#
#   tests/compat/groupcache/generate.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
keys="$here/../keys.hex"
vectors="$here/../vectors"
mkdir -p "$vectors"

need=""
command -v go >/dev/null 2>&1 || need="$need golang-go"
[ -f /usr/share/gocode/src/github.com/golang/groupcache/consistenthash/consistenthash.go ] ||
  need="$need golang-github-golang-groupcache-dev"
if [ -n "$need" ]; then
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# GOPATH mode over Debian's source tree; a private build cache.
export GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$tmp/cache" GOFLAGS=
go build -o "$tmp/vectors" "$here/vectors.go"

peer="groupcache consistenthash $(dpkg-query -W -f '${Version}' golang-github-golang-groupcache-dev) (Debian golang-github-golang-groupcache-dev), $(go version | cut -d' ' -f3)"
gen() {  # gen CASE REPLICAS NODE...
  case_=$1
  shift
  "$tmp/vectors" "$vectors/groupcache__$case_.tsv" "$peer" "$keys" "$@"
}
nodes() {  # nodes PREFIX N SUFFIX: PREFIX0SUFFIX .. PREFIX(N-1)SUFFIX
  i=0
  while [ "$i" -lt "$2" ]; do
    printf '%s%d%s\n' "$1" "$i" "$3"
    i=$((i + 1))
  done
}
# HTTPPool peers are base URLs; 50 replicas is HTTPPool's default (defaultReplicas).
gen one 50 http://10.0.0.1:8000
gen two 50 http://10.0.0.1:8000 http://10.0.0.2:8000
gen five 50 http://10.0.0.1:8000 http://10.0.0.2:8000 http://10.0.0.3:8000 \
  http://10.0.0.4:8000 http://10.0.0.5:8000
# shellcheck disable=SC2046
gen many 50 $(nodes http://10.0.1. 50 :8000)
# A URL with the scheme's default port left out is hashed as written: no normalization.
gen default-port 50 http://cache-a http://cache-b:80 http://cache-c:8080
# Other replica counts (HTTPPoolOptions.Replicas, or consistenthash.New(n, nil) directly).
gen replicas1 1 http://10.0.0.1:8000 http://10.0.0.2:8000 http://10.0.0.3:8000
gen replicas3 3 http://10.0.0.1:8000 http://10.0.0.2:8000 http://10.0.0.3:8000 \
  http://10.0.0.4:8000 http://10.0.0.5:8000
gen replicas160 160 http://10.0.0.1:8000 http://10.0.0.2:8000 http://10.0.0.3:8000 \
  http://10.0.0.4:8000 http://10.0.0.5:8000
# crc32("0peer-26151ece0097") == crc32("0peer-0d78f0a7eaad") (found by a search over random
# names): with one replica both points coincide, and the node added last owns the position.
gen tie 1 peer-26151ece0097 peer-0d78f0a7eaad peer-000000000000

for f in "$vectors"/groupcache__*.tsv; do
  printf '%s: %s keys\n' "$(basename "$f")" "$(grep -cv '^[#@]' "$f")"
done
