#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/compat/vectors/nginx-hash-consistent__*.tsv, nginx-hash__*.tsv and
# nginx-ip-hash__*.tsv end to end with Debian's nginx (and libnginx-mod-stream): per case gen.py
# writes an nginx.conf into a temp dir, starts nginx (one process) with the upstream under test,
# its backends and a front server on 127.0.0.1 (the default-port case also 127.0.0.2:80,
# 127.0.0.3:80, [::1] and unix sockets), sends every key through it and records which upstream
# server answered. Every nginx is stopped on exit, error or interrupt.
#
#   tests/compat/nginx/generate.sh                 # all cases
#   tests/compat/nginx/generate.sh --only stream   # only cases whose <preset>__<case> has "stream"
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x /usr/sbin/nginx ] || [ ! -f /usr/lib/nginx/modules/ngx_stream_module.so ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  # Where a service manager runs, the packaged nginx service starts on port 80 of every address
  # and would take 127.0.0.2:80; stop it with `systemctl stop nginx` before running this.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    nginx libnginx-mod-stream >/dev/null 2>&1 ||
    { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends nginx libnginx-mod-stream >/dev/null; }
fi
work=$(mktemp -d /tmp/chash-nginx-gen.XXXXXX)
cleanup() {
  # gen.py stops every nginx it starts; this is the backstop for a crash or a signal.
  if [ -f "$work/pids" ]; then
    while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$work/pids"
    sleep 0.3
    while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done <"$work/pids"
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
timeout 900 /usr/bin/python3 -B "$here/gen.py" --pids "$work/pids" "$@"
