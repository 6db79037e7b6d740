#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/compat/vectors/twemproxy__*.tsv and twemproxy-modula__*.tsv end to end:
# starts real redis-server backends on free 127.0.0.1 ports (and unix sockets), runs the Debian
# nutcracker (twemproxy) in front of them with a generated nutcracker.yml per case, SETs every
# key of tests/compat/keys.hex through nutcracker and reads each backend's KEYS to learn where
# nutcracker put each key (gen.py). Every process is stopped on exit, error or interrupt.
#
#   tests/compat/twemproxy/generate.sh            # all cases
#   tests/compat/twemproxy/generate.sh named one  # only the cases named (both presets)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
need=""
command -v nutcracker >/dev/null 2>&1 || [ -x /usr/sbin/nutcracker ] || need="$need nutcracker"
command -v redis-server >/dev/null 2>&1 || need="$need redis-server"
if [ -n "$need" ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  # Where a service manager runs, the packaged nutcracker/redis services start on their default
  # ports; this script never uses them (it starts its own processes on free ports).
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
PATH="$PATH:/usr/sbin"
export PATH
work=$(mktemp -d /tmp/chash-twemproxy.XXXXXX)
cleanup() {
  # gen.py records every process it starts, one pid a line; it stops them itself, this is the
  # backstop for a crash or a signal.
  if [ -f "$work/pids" ]; then
    while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$work/pids"
    sleep 0.3
    while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$work/pids"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
nc_deb=$(dpkg-query -W -f='${Version}' nutcracker 2>/dev/null || echo "?")
redis_deb=$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null || echo "?")
nc_version=$(nutcracker --version 2>&1 | sed -n 's/^This is nutcracker-\(.*\)$/\1/p')
PEER="nutcracker $nc_version (Debian nutcracker $nc_deb) in front of redis-server (Debian $redis_deb)" \
  timeout 1200 /usr/bin/python3 "$here/gen.py" "$work" "$@"
