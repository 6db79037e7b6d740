#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/compat/vectors/redis-cluster__*.tsv end to end: starts real redis-server
# nodes in cluster mode on free 127.0.0.x ports, creates each cluster with
# `redis-cli --cluster create`, and records which node accepts each key (cluster.py). Slots are
# cross-checked with the npm package cluster-key-slot (installed here from package-lock.json).
# Every server is stopped on exit, error or interrupt.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
need=""
command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
command -v redis-cli >/dev/null 2>&1 || need="$need redis-tools"
if [ -n "$need" ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  # Debian's policy-rc.d in containers keeps the packaged service from starting; elsewhere the
  # packaged redis-server service is not used by this script.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
if [ ! -f "$here/node_modules/cluster-key-slot/package.json" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --silent)
fi
work=$(mktemp -d)
cleanup() {
  for f in "$work"/server-*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    kill "$pid" 2>/dev/null || true
  done
  sleep 0.2
  for f in "$work"/server-*.pid; do
    [ -f "$f" ] || continue
    kill -9 "$(cat "$f")" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
version=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
deb=$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null || echo "?")
mkdir -p "$here/../vectors"
cks=$(cd "$here" && node -p 'require("cluster-key-slot/package.json").version')
PEER="redis-server $version (Debian redis-server $deb), redis-cli --cluster create;"
PEER="$PEER keyslots cross-checked with cluster-key-slot $cks (npm)" \
  /usr/bin/python3 "$here/cluster.py" "$work"
