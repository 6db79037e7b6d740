# SPDX-License-Identifier: Apache-2.0
# Shared by the external suites' runners (tests/redis_suite/run.sh, tests/memcached_suite/run.sh),
# which source it after defining PIDS=() and their own wait_port PORT (a protocol's ping).

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
start_proxy() {  # port config
  "$CHASH_PROXY" -c "$2" --no-stats -o "$(dirname "$2")/proxy.log" &
  PIDS+=($!)
  wait_port "$1"
}
stop_all() {
  # A server still busy (a redis-server running a script a unit left busy ignores SIGTERM):
  # KILL after 5 s.
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  PIDS=()
}
