#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-proxy: chash-proxy next to its peers on this machine, same backends for all.
#
#   redis     redis-benchmark -> direct (one of the 3 redis-servers) | nutcracker | chash-proxy
#   memcache  mcbench (bench/proxy/mcbench.c) -> direct (one of 3 memcached) | nutcracker | chash-proxy
#   tcp       wrk -> direct (the nginx backend) | haproxy | nginx stream | chash-proxy
#   tls       redis-benchmark --tls -> direct TLS to a redis-server | chash-proxy with TLS on both
#             sides (tls: + server_tls:), and the same without TLS for reference (direct, chash-proxy
#             plaintext); all up at once on the same 3 redis-servers (each with a plain and a TLS
#             port), taken in turn for TLS_ROUNDS rounds; a row is the median of its rounds
#   cluster   redis-benchmark --cluster straight to a 3-master Redis Cluster (redis-cli --cluster
#             create) | redis-benchmark through chash-proxy's cluster pool (1 and 2 workers; and
#             CHASH_PROXY_BEFORE's beside each), all up at once, taken in turn for CLUSTER_ROUNDS
#             rounds; a row is the median of its rounds
#   bigkeys   requests of BIG_KEYS (10,000) keys — redis MSET, MGET, DEL (redis-benchmark) and a
#             memcached get (mcbench) — through nutcracker and chash-proxy (and, with
#             CHASH_PROXY_BEFORE=<binary>, an older chash-proxy), all up at once on the same
#             backends and taken in turn: BIG_ROUNDS rounds, each running every test on every
#             target (the order rotating per round); a row is the median of its rounds (issue 15)
#
# nutcracker and chash-proxy run one after the other on the *same* nutcracker.yml (ketama,
# fnv1a_64, 3 servers). chash-proxy and the tcp peers run with 1 and 2 workers (nutcracker is
# single-threaded). Every server listens on 127.0.0.1 on a free port, with its config, pid file
# and log in a temp dir, runs under `timeout`, and is stopped on exit. A side that does not start
# or whose client fails becomes a "not available: <why>" row; the run goes on.
#
# Knobs (environment): PROTOCOLS="redis memcache tcp bigkeys tls", REQUESTS=200000 (per redis/memcache run),
# CLIENTS=50, PIPELINES="1 16", WORKERS="1 2", KEYSPACE=100000, DATA_SIZE=3, MGET_KEYS=10,
# REDIS_TESTS="set get mget", MC_TESTS="set get mget", REDIS_THREADS= (redis-benchmark --threads),
# TCP_SECONDS=10, TCP_CONNECTIONS=50, TCP_THREADS=2, TCP_BALANCE=hash|round-robin,
# TCP_BACKEND_WORKERS=1, ROUNDS=1 (runs per row; the row is the run with the median ops/s),
# PIN_CLIENT= PIN_PROXY= PIN_BACKENDS= (taskset CPU lists; empty: no pinning), LIMIT=120 (seconds
# per client run), SERVER_LIMIT=1200 (seconds any server may live), CHASH_PROXY=<binary>,
# OUT=<markdown file; the raw rows go next to it as .tsv>, KEEP_TMP=1 (keep configs and logs).
# bigkeys: BIG_KEYS=10000, BIG_REQUESTS=200 (per run), BIG_CLIENTS=4, BIG_ROUNDS=10,
# BIG_WORKERS=1 (chash-proxy workers), BIG_REDIS_TESTS="mset mget del", BIG_MC_TESTS="get"
# (set1 and get1 in either: single-key SET/GET, -d DATA_SIZE, the same alternation, pipelined
# BIG_PIPELINE deep, default 1),
# CHASH_PROXY_BEFORE=<a chash-proxy binary to measure beside this one>.
# tls: TLS_REQUESTS=20000 (per run), TLS_ROUNDS=3, TLS_TESTS="get set", TLS_PIPELINES="1 16"
# (chash-proxy with 1 worker; certificates made with openssl in the temp dir).
# cluster: CLUSTER_REQUESTS=50000 (per run), CLUSTER_ROUNDS=3, CLUSTER_TESTS="get set",
# CLUSTER_PIPELINES="1 16", CLUSTER_WORKERS="1 2".
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
CHASH_PROXY=${CHASH_PROXY:-$root/build-release/chash-proxy}
PROTOCOLS=${PROTOCOLS:-redis memcache tcp bigkeys tls cluster}
BIG_KEYS=${BIG_KEYS:-10000}
BIG_REQUESTS=${BIG_REQUESTS:-200}
BIG_CLIENTS=${BIG_CLIENTS:-4}
BIG_ROUNDS=${BIG_ROUNDS:-10}
BIG_WORKERS=${BIG_WORKERS:-1}
BIG_REDIS_TESTS=${BIG_REDIS_TESTS:-mset mget del}
BIG_MC_TESTS=${BIG_MC_TESTS:-get}
CHASH_PROXY_BEFORE=${CHASH_PROXY_BEFORE:-}
BIG_PIPELINE=${BIG_PIPELINE:-1}
TLS_REQUESTS=${TLS_REQUESTS:-20000}
TLS_ROUNDS=${TLS_ROUNDS:-3}
TLS_TESTS=${TLS_TESTS:-get set}
TLS_PIPELINES=${TLS_PIPELINES:-1 16}
CLUSTER_REQUESTS=${CLUSTER_REQUESTS:-50000}
CLUSTER_ROUNDS=${CLUSTER_ROUNDS:-3}
CLUSTER_TESTS=${CLUSTER_TESTS:-get set}
CLUSTER_PIPELINES=${CLUSTER_PIPELINES:-1 16}
CLUSTER_WORKERS=${CLUSTER_WORKERS:-1 2}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-1 16}
WORKERS=${WORKERS:-1 2}
KEYSPACE=${KEYSPACE:-100000}
DATA_SIZE=${DATA_SIZE:-3}
MGET_KEYS=${MGET_KEYS:-10}
REDIS_TESTS=${REDIS_TESTS:-set get mget}
MC_TESTS=${MC_TESTS:-set get mget}
REDIS_THREADS=${REDIS_THREADS:-}
TCP_SECONDS=${TCP_SECONDS:-10}
TCP_CONNECTIONS=${TCP_CONNECTIONS:-50}
TCP_THREADS=${TCP_THREADS:-2}
TCP_BALANCE=${TCP_BALANCE:-hash}
TCP_BACKEND_WORKERS=${TCP_BACKEND_WORKERS:-1}
PIN_CLIENT=${PIN_CLIENT:-}
PIN_PROXY=${PIN_PROXY:-}
PIN_BACKENDS=${PIN_BACKENDS:-}
ROUNDS=${ROUNDS:-1}
LIMIT=${LIMIT:-120}
SERVER_LIMIT=${SERVER_LIMIT:-1200}
OUT=${OUT:-$root/build-release/bench-proxy.md}
HOST=127.0.0.1  # every server binds here and every client connects here; nothing else

case $TCP_BALANCE in hash|round-robin) ;; *) echo "run.sh: TCP_BALANCE must be hash or round-robin" >&2; exit 2 ;; esac
[ -x "$CHASH_PROXY" ] || { echo "run.sh: $CHASH_PROXY not built (make bench-proxy builds it)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/chash-bench-proxy.XXXXXX")
chmod 755 "$tmp"  # nginx workers may drop to nobody
results=$tmp/results.tsv
: >"$results"
pids=()
declare -A logs=()  # server pid -> its log

stop() {  # stop PID: TERM the server's process group (timeout relays it), KILL after 5 s
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  local keep=() p
  for p in "${pids[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
  pids=(${keep[@]+"${keep[@]}"})
}

cleanup() {
  local p
  for p in ${pids[@]+"${pids[@]}"}; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in ${pids[@]+"${pids[@]}"}; do kill -KILL -- "-$p" 2>/dev/null || true; done
  if [ -n "${KEEP_TMP:-}" ]; then echo "run.sh: configs and logs kept in $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_ports() {  # free_ports N: N distinct free loopback ports
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

why=""
started=""
start() {  # start NAME CPUS PORT CMD...: CMD in the background, bounded by SERVER_LIMIT; waits
           # until PORT accepts; sets $started to its pid, or returns 1 with the reason in $why
  local name=$1 cpus=$2 port=$3
  shift 3
  timeout -k 5 "$SERVER_LIMIT" bash -c 'cpus=$1; shift; if [ -n "$cpus" ]; then exec taskset -c "$cpus" "$@"; else exec "$@"; fi' \
    pin "$cpus" "$@" >"$tmp/$name.log" 2>&1 </dev/null &
  started=$!
  pids+=("$started")
  logs[$started]=$tmp/$name.log
  local i
  for ((i = 0; i < 100; i++)); do
    if ! kill -0 "$started" 2>/dev/null; then
      why="$name exited: $(tail -n 2 "$tmp/$name.log" | tr '\n' ' ' | cut -c1-200)"
      stop "$started"
      return 1
    fi
    if (exec 3<>"/dev/tcp/$HOST/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  why="$name did not listen on $HOST:$port within 10 s: $(tail -n 2 "$tmp/$name.log" | tr '\n' ' ' | cut -c1-200)"
  stop "$started"
  return 1
}

alive() {  # alive PID|-: 0 if the server still runs (or PID is -), else 1 with the reason in $why
  [ "$1" = - ] && return 0
  kill -0 "$1" 2>/dev/null && return 0
  why="the server died: $(tail -n 2 "${logs[$1]:-/dev/null}" | tr '\n' ' ' | cut -c1-200)"
  return 1
}

ticks() {  # ticks PGID: CPU clock ticks used so far by every process of the group
  local total=0 p t
  for p in $(pgrep -g "$1" 2>/dev/null); do
    t=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null) || t=0
    total=$((total + ${t:-0}))
  done
  echo "$total"
}
CLK_TCK=$(getconf CLK_TCK)

row() {  # row PROTO TARGET WORKERS TEST PIPELINE OPS P50 P99 PROXY_US CLIENT_CORES NOTE
  local IFS=$'\t'
  echo "$*" >>"$results"
}

na() {  # na PROTO TARGET WORKERS REASON: rows for a side that could not run
  local proto=$1 target=$2 workers=$3 reason=$4 t p
  local tests=$REDIS_TESTS
  [ "$proto" = memcache ] && tests=$MC_TESTS
  if [ "$proto" = tcp ]; then
    row tcp "$target" "$workers" http 1 - - - - - "not available: $reason"
  else
    for t in $tests; do for p in $PIPELINES; do row "$proto" "$target" "$workers" "$t" "$p" - - - - - "not available: $reason"; done; done
  fi
  echo "  $target${workers:+ ($workers workers)}: not available: $reason" >&2
}

client() {  # client NAME SERVER_PID|- CMD...: runs CMD bounded by LIMIT, stopped early if the
            # server dies; sets $cpu (client CPU time over wall time, in cores); 1 on failure
  local name=$1 server=$2 TIMEFORMAT='%R %U %S' cpid dog rc=0
  shift 2
  local cmd=(timeout -k 5 "$LIMIT" "$@")
  [ -n "$PIN_CLIENT" ] && cmd=(taskset -c "$PIN_CLIENT" "${cmd[@]}")
  # In the background so that a signal reaches our trap at once; `time wait` charges the
  # client's CPU (its rusage arrives when it is reaped) over its wall time.
  "${cmd[@]}" >"$tmp/client.out" 2>"$tmp/client.err" </dev/null &
  cpid=$!
  pids+=("$cpid")
  dog=""
  if [ "$server" != - ]; then
    (while kill -0 "$cpid" 2>/dev/null; do
       kill -0 "$server" 2>/dev/null || { kill -TERM "$cpid" 2>/dev/null; exit 0; }
       sleep 0.5
     done) &
    dog=$!
  fi
  { time wait "$cpid"; } 2>"$tmp/client.time" || rc=$?
  [ -n "$dog" ] && { kill "$dog" 2>/dev/null || true; wait "$dog" 2>/dev/null || true; }
  local keep=() p
  for p in "${pids[@]}"; do [ "$p" = "$cpid" ] || keep+=("$p"); done
  pids=(${keep[@]+"${keep[@]}"})
  if [ "$rc" = 0 ]; then
    read -r wall u s <"$tmp/client.time"
    cpu=$(awk -v u="$u" -v s="$s" -v w="$wall" 'BEGIN { printf "%.2f", (u + s) / (w > 0 ? w : 1) }')
    return 0
  fi
  sleep 0.3  # a server that just crashed: report that, not the client's view of it
  if [ "$server" != - ] && ! alive "$server"; then return 1; fi
  why="$name failed (exit $rc): $(tail -n 2 "$tmp/client.err" | tr '\n' ' ' | cut -c1-200)"
  return 1
}

proxy_us() {  # proxy_us TICKS_BEFORE TICKS_AFTER OPS: proxy CPU microseconds per operation
  awk -v a="$1" -v b="$2" -v n="$3" -v hz="$CLK_TCK" 'BEGIN { if (n > 0) printf "%.2f", (b - a) * 1e6 / hz / n; else print "-" }'
}

# ---------------------------------------------------------------------------------------------
# redis

measure() {  # measure PROTO TARGET WORKERS TEST PIPELINE PGID|- ONCE ARGS...: ROUNDS runs of ONCE
            # (which sets m_ops m_p50 m_p99 m_n m_note, or returns 1 with $why); one row, the
            # round with the median ops/s, with the proxy CPU per op and client CPU of that round
  local proto=$1 target=$2 workers=$3 test=$4 pipe=$5 pgid=$6 once=$7 k before after us
  shift 7
  local runs=()
  for ((k = 0; k < ROUNDS; k++)); do
    before=0
    [ "$pgid" != - ] && before=$(ticks "$pgid")
    if ! alive "$pgid" || ! "$once" "$pgid" "$@"; then
      row "$proto" "$target" "$workers" "$test" "$pipe" - - - - - "not available: $why"
      echo "  $target${workers:+ w$workers} $test P$pipe: not available: $why" >&2
      return 0
    fi
    us=-
    if [ "$pgid" != - ]; then after=$(ticks "$pgid"); us=$(proxy_us "$before" "$after" "$m_n"); fi
    runs+=("$m_ops"$'\t'"$m_p50"$'\t'"$m_p99"$'\t'"$us"$'\t'"$cpu"$'\t'"$m_note")
    echo "  $target${workers:+ w$workers} $test P$pipe: $m_ops ops/s, p50 $m_p50 ms, p99 $m_p99 ms $m_note" >&2
  done
  local median
  median=$(printf '%s\n' "${runs[@]}" | sort -t $'\t' -k1,1g | sed -n "$(((${#runs[@]} + 1) / 2))p")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$proto" "$target" "$workers" "$test" "$pipe" "$median" >>"$results"
}

redis_once() {  # redis_once PGID|- PORT TEST PIPELINE
  local pgid=$1 port=$2 t=$3 p=$4 i args
  args=(redis-benchmark -h "$HOST" -p "$port" -c "$CLIENTS" -n "$REQUESTS" -r "$KEYSPACE"
        -d "$DATA_SIZE" -P "$p" --csv)
  [ -n "$REDIS_THREADS" ] && args+=(--threads "$REDIS_THREADS")
  [ -n "${tls_cacert:-}" ] && args+=(--tls --cacert "$tls_cacert")
  [ -n "${cluster_mode:-}" ] && args+=(--cluster)
  if [ "$t" = mget ]; then
    args+=(MGET)
    for ((i = 0; i < MGET_KEYS; i++)); do args+=("key:__rand_int__"); done
  else
    args+=(-t "$t")
  fi
  client redis-benchmark "$pgid" "${args[@]}" || return 1
  # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
  local line rps p50 p99
  line=$(grep -v '^"test"' "$tmp/client.out" | tail -n 1 | tr -d '"' || true)
  IFS=, read -r _ rps _ _ p50 _ p99 _ <<<"$line"
  if [ -z "${p99:-}" ]; then why="no result from redis-benchmark"; return 1; fi
  m_ops=$rps m_p50=$p50 m_p99=$p99 m_n=$REQUESTS m_note=""
}

turn() {  # turn RUNS NAME WORKERS PID|- PORT TEST PIPELINE: one redis_once run of a target taken
         # in turn, appended to RUNS as a row (with the proxy's CPU per op, if PID is a proxy); sets
         # $us; 1 with $why on failure
  local runs=$1 name=$2 w=$3 pid=$4 port=$5 t=$6 p=$7 before=0
  us=-
  [ "$pid" != - ] && before=$(ticks "$pid")
  redis_once "$pid" "$port" "$t" "$p" || return 1
  [ "$pid" != - ] && us=$(proxy_us "$before" "$(ticks "$pid")" "$m_n")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n' "$name" "$w" "$t" "$p" "$m_ops" "$m_p50" "$m_p99" "$us" "$cpu" >>"$runs"
}

redis_bench() {  # redis_bench TARGET WORKERS PORT PGID|-
  local target=$1 workers=$2 port=$3 pgid=$4 t p
  for t in $REDIS_TESTS; do
    for p in $PIPELINES; do
      measure redis "$target" "$workers" "$t" "$p" "$pgid" redis_once "$port" "$t" "$p"
    done
  done
}

# key_proxies PROTO BENCH FRONT PORT1 PORT2 PORT3: BENCH (redis_bench | mc_bench) direct to the
# first backend, then through nutcracker and chash-proxy (each WORKERS count) on the same
# nutcracker.yml: ketama, fnv1a_64, the three backends, listening on FRONT.
# A nutcracker config (chash-proxy reads the same file): FILE POOL LISTEN_PORT REDIS(true|false)
# TIMEOUT_MS NAME_PREFIX PORT1 PORT2 PORT3 — ketama with fnv1a_64 over three local servers.
nutcracker_yml() {
  cat >"$1" <<YML
$2:
  listen: $HOST:$3
  hash: fnv1a_64
  distribution: ketama
  redis: $4
  timeout: $5
  server_connections: 1
  auto_eject_hosts: false
  servers:
    - $HOST:$7:1 ${6}1
    - $HOST:$8:1 ${6}2
    - $HOST:$9:1 ${6}3
YML
}

key_proxies() {
  local proto=$1 bench=$2 front=$3 redis=false prefix=m
  shift 3
  [ "$proto" = redis ] && redis=true prefix=r
  nutcracker_yml "$tmp/$proto.yml" "$proto" "$front" "$redis" 2000 "$prefix" "$1" "$2" "$3"
  "$bench" "direct (${prefix}1)" "" "$1" -
  local stats pid w
  stats=$(free_ports 1)
  if start "nutcracker-$proto" "$PIN_PROXY" "$front" nutcracker -c "$tmp/$proto.yml" -s "$stats" -a "$HOST"; then
    pid=$started
    "$bench" nutcracker 1 "$front" "$pid"
    stop "$pid"
  else
    na "$proto" nutcracker 1 "$why"
  fi
  for w in $WORKERS; do
    if start "chash-proxy-$proto-w$w" "$PIN_PROXY" "$front" "$CHASH_PROXY" -c "$tmp/$proto.yml" --workers "$w" --log-level warn -s 0 -a "$HOST"; then
      pid=$started
      "$bench" chash-proxy "$w" "$front" "$pid"
      stop "$pid"
    else
      na "$proto" chash-proxy "$w" "$why"
    fi
  done
}

run_redis() {
  echo "redis: 3 redis-servers; redis-benchmark -c $CLIENTS -n $REQUESTS -r $KEYSPACE -d $DATA_SIZE" >&2
  local ports r i
  read -r -a ports <<<"$(free_ports 4)"
  local front=${ports[3]}
  for i in 0 1 2; do
    if ! start "redis$i" "$PIN_BACKENDS" "${ports[$i]}" redis-server --bind "$HOST" --port "${ports[$i]}" \
         --save "" --appendonly no --dir "$tmp" --protected-mode yes --daemonize no; then
      echo "redis: backends did not start: $why" >&2
      na redis "direct (r1)" "" "$why"
      return 0
    fi
  done
  key_proxies redis redis_bench "$front" "${ports[@]:0:3}"
  for r in ${pids[@]+"${pids[@]}"}; do stop "$r"; done
}

# ---------------------------------------------------------------------------------------------
# memcache

mc_once() {  # mc_once PGID|- PORT TEST PIPELINE
  local pgid=$1 port=$2 t=$3 p=$4
  client mcbench "$pgid" "$tmp/mcbench" -h "$HOST" -p "$port" -c "$CLIENTS" -n "$REQUESTS" -P "$p" -t "$t" \
    -r "$KEYSPACE" -d "$DATA_SIZE" -k "$MGET_KEYS" -T "$LIMIT" || return 1
  local errs
  read -r m_ops m_p50 m_p99 errs <"$tmp/client.out" || { why="no result from mcbench"; return 1; }
  m_n=$REQUESTS m_note=""
  [ "${errs:-0}" != 0 ] && m_note="$errs error replies"
  return 0
}

mc_bench() {  # mc_bench TARGET WORKERS PORT PGID|-
  local target=$1 workers=$2 port=$3 pgid=$4 t p
  for t in $MC_TESTS; do
    for p in $PIPELINES; do
      measure memcache "$target" "$workers" "$t" "$p" "$pgid" mc_once "$port" "$t" "$p"
    done
  done
}

run_memcache() {
  echo "memcache: 3 memcached; mcbench -c $CLIENTS -n $REQUESTS -r $KEYSPACE -d $DATA_SIZE" >&2
  if ! cc -O2 -o "$tmp/mcbench" "$here/mcbench.c" 2>"$tmp/cc.err"; then
    na memcache "direct (m1)" "" "cannot compile bench/proxy/mcbench.c: $(head -n 1 "$tmp/cc.err")"
    return 0
  fi
  local ports i user=()
  [ "$(id -u)" = 0 ] && user=(-u nobody)  # memcached refuses to run as root without -u
  read -r -a ports <<<"$(free_ports 4)"
  local front=${ports[3]}
  for i in 0 1 2; do
    if ! start "memcached$i" "$PIN_BACKENDS" "${ports[$i]}" memcached -l "$HOST" -p "${ports[$i]}" -U 0 -t 1 -m 64 "${user[@]}"; then
      na memcache "direct (m1)" "" "$why"
      return 0
    fi
  done
  key_proxies memcache mc_bench "$front" "${ports[@]:0:3}"
  local r
  for r in ${pids[@]+"${pids[@]}"}; do stop "$r"; done
}

# ---------------------------------------------------------------------------------------------
# tcp

wrk_once() {  # wrk_once PGID|- PORT
  local pgid=$1 port=$2
  LIMIT=$((TCP_SECONDS + 30)) client wrk "$pgid" wrk -t "$TCP_THREADS" -c "$TCP_CONNECTIONS" -d "${TCP_SECONDS}s" \
    --latency --timeout 2s "http://$HOST:$port/" || return 1
  local parsed errs
  # wrk: "50%  215.00us", "99%    1.20ms", "123 requests in 10.00s", "Requests/sec: 1.2",
  # "Socket errors: connect 0, read 0, write 0, timeout 0", "Non-2xx or 3xx responses: N"
  parsed=$(awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    $1 == "50%" { p50 = ms($2) } $1 == "99%" { p99 = ms($2) }
    / requests in / { n = $1 } /^Requests\/sec:/ { ops = $2 }
    /Socket errors:/ { gsub(/,/, ""); errs += $4 + $6 + $8 + $10 }
    /Non-2xx/ { errs += $NF }
    END { printf "%s %.3f %.3f %s %d\n", ops, p50, p99, n, errs }' "$tmp/client.out")
  read -r m_ops m_p50 m_p99 m_n errs <<<"$parsed"
  if [ -z "$m_ops" ] || [ "${m_n:-0}" = 0 ]; then
    why="no requests completed $(grep -m1 -iE 'error|timeout' "$tmp/client.out" || true)"
    return 1
  fi
  m_note=""
  [ "$errs" != 0 ] && m_note="$errs socket errors or non-2xx replies"
  return 0
}

wrk_bench() {  # wrk_bench TARGET WORKERS PORT PGID|-
  measure tcp "$1" "$2" http 1 "$4" wrk_once "$3"
}

nginx_stream_module() {  # a load_module line unless nginx has the stream module built in
  local v
  v=$(nginx -V 2>&1)
  if grep -qE -- '--with-stream( |$)' <<<"$v"; then return 0; fi
  local dir
  dir=$(grep -oE -- '--modules-path=[^ ]+' <<<"$v" | cut -d= -f2)
  echo "load_module ${dir:-/usr/lib/nginx/modules}/ngx_stream_module.so;"
}

run_tcp() {
  echo "tcp: nginx backend (worker_processes $TCP_BACKEND_WORKERS, 3 ports); wrk -t$TCP_THREADS -c$TCP_CONNECTIONS -d${TCP_SECONDS}s; balance $TCP_BALANCE" >&2
  local ports
  read -r -a ports <<<"$(free_ports 4)"
  local b1=${ports[0]} b2=${ports[1]} b3=${ports[2]} front=${ports[3]}
  local pre=$tmp/nginx-backend
  mkdir -p "$pre/logs"
  cat >"$pre/nginx.conf" <<CONF
worker_processes $TCP_BACKEND_WORKERS;
daemon off;
pid $pre/nginx.pid;
error_log $pre/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $pre/body;
  proxy_temp_path $pre/proxy;
  fastcgi_temp_path $pre/fastcgi;
  uwsgi_temp_path $pre/uwsgi;
  scgi_temp_path $pre/scgi;
  keepalive_requests 10000000;
  keepalive_timeout 120s;
  server {
    listen $HOST:$b1;
    listen $HOST:$b2;
    listen $HOST:$b3;
    location / { default_type text/plain; return 200 "ok\n"; }
  }
}
CONF
  if ! nginx -t -q -p "$pre/" -c "$pre/nginx.conf" -e "$pre/logs/error.log" 2>"$tmp/nginx-t.err" ||
     ! start nginx-backend "$PIN_BACKENDS" "$b1" nginx -p "$pre/" -c "$pre/nginx.conf" -e "$pre/logs/error.log"; then
    na tcp "direct (nginx)" "" "${why:-nginx backend config: $(tail -n 1 "$tmp/nginx-t.err")}"
    return 0
  fi
  wrk_bench "direct (nginx)" "" "$b1" -

  local load w pid
  load=$(nginx_stream_module)
  for w in $WORKERS; do
    # haproxy, mode tcp
    local hbal="balance source
  hash-type consistent"
    [ "$TCP_BALANCE" = round-robin ] && hbal="balance roundrobin"
    cat >"$tmp/haproxy-w$w.cfg" <<CONF
global
  nbthread $w
  maxconn 4096
  pidfile $tmp/haproxy-w$w.pid
defaults
  mode tcp
  timeout connect 2s
  timeout client 120s
  timeout server 120s
frontend front
  bind $HOST:$front
  default_backend back
backend back
  $hbal
  server b1 $HOST:$b1
  server b2 $HOST:$b2
  server b3 $HOST:$b3
CONF
    if start "haproxy-w$w" "$PIN_PROXY" "$front" haproxy -db -f "$tmp/haproxy-w$w.cfg"; then
      pid=$started
      wrk_bench haproxy "$w" "$front" "$pid"
      stop "$pid"
    else
      na tcp haproxy "$w" "$why"
    fi

    # nginx stream
    local np=$tmp/nginx-stream-w$w nbal="hash \$remote_addr consistent;"
    [ "$TCP_BALANCE" = round-robin ] && nbal=""
    mkdir -p "$np/logs"
    cat >"$np/nginx.conf" <<CONF
$load
worker_processes $w;
daemon off;
pid $np/nginx.pid;
error_log $np/logs/error.log warn;
events { worker_connections 4096; }
stream {
  upstream back {
    $nbal
    server $HOST:$b1;
    server $HOST:$b2;
    server $HOST:$b3;
  }
  server {
    listen $HOST:$front;
    proxy_pass back;
    proxy_connect_timeout 2s;
    proxy_timeout 120s;
  }
}
CONF
    if start "nginx-stream-w$w" "$PIN_PROXY" "$front" nginx -p "$np/" -c "$np/nginx.conf" -e "$np/logs/error.log"; then
      pid=$started
      wrk_bench "nginx stream" "$w" "$front" "$pid"
      stop "$pid"
    else
      na tcp "nginx stream" "$w" "$why"
    fi

    # chash-proxy
    cat >"$tmp/tcp.yml" <<YML
gamma:
  listen: $HOST:$front
  protocol: tcp
  balance: $TCP_BALANCE
  servers:
    - $HOST:$b1:1 b1
    - $HOST:$b2:1 b2
    - $HOST:$b3:1 b3
YML
    if start "chash-proxy-tcp-w$w" "$PIN_PROXY" "$front" "$CHASH_PROXY" -c "$tmp/tcp.yml" --workers "$w" --log-level warn -s 0 -a "$HOST"; then
      pid=$started
      wrk_bench chash-proxy "$w" "$front" "$pid"
      stop "$pid"
    else
      na tcp chash-proxy "$w" "$why"
    fi
  done
  local r
  for r in ${pids[@]+"${pids[@]}"}; do stop "$r"; done
}

# ---------------------------------------------------------------------------------------------
# bigkeys: 10,000-key requests, every proxy up at once, taken in turn

big_redis_once() {  # big_redis_once PORT TEST: one redis-benchmark run of BIG_KEYS-key requests
  local port=$1 t=$2 i
  local args=(redis-benchmark -h "$HOST" -p "$port" -c "$BIG_CLIENTS" -n "$BIG_REQUESTS" -r "$KEYSPACE" -P 1 --csv)
  local value
  value=$(head -c "$DATA_SIZE" /dev/zero | tr '\0' x)
  case $t in
    set1 | get1) args=(redis-benchmark -h "$HOST" -p "$port" -c "$BIG_CLIENTS" -n "$BIG_REQUESTS" -r "$KEYSPACE" -P "$BIG_PIPELINE" --csv -d "$DATA_SIZE" -t "${t%1}") ;;
    mset) args+=(MSET); for ((i = 0; i < BIG_KEYS; i++)); do args+=("key:__rand_int__" "$value"); done ;;
    mget) args+=(MGET); for ((i = 0; i < BIG_KEYS; i++)); do args+=("key:__rand_int__"); done ;;
    del) args+=(DEL); for ((i = 0; i < BIG_KEYS; i++)); do args+=("key:__rand_int__"); done ;;
  esac
  client redis-benchmark - "${args[@]}" || return 1
  # The last CSV line; its test name is the (long) command, so take the numbers from the end:
  # ...,"rps","avg","min","p50","p95","p99","max"
  local line
  line=$(grep -v '^"test"' "$tmp/client.out" | tail -n 1 | tr -d '"' || true)
  read -r m_ops m_p50 m_p99 <<<"$(awk -F, '{ print $(NF-6), $(NF-3), $(NF-1) }' <<<"$line")"
  if [ -z "${m_p99:-}" ]; then why="no result from redis-benchmark"; return 1; fi
  m_n=$BIG_REQUESTS m_note=""
}

big_mc_once() {  # big_mc_once PORT TEST: one mcbench run of BIG_KEYS-key gets (set1/get1: one key)
  local port=$1 t=$2 errs mode=mget pipeline=1
  [ "$t" = set1 ] && mode=set
  [ "$t" = get1 ] && mode=get
  [ "$mode" != mget ] && pipeline=$BIG_PIPELINE
  client mcbench - "$tmp/mcbench" -h "$HOST" -p "$port" -c "$BIG_CLIENTS" -n "$BIG_REQUESTS" -P "$pipeline" -t "$mode" \
    -r "$KEYSPACE" -d "$DATA_SIZE" -k "$BIG_KEYS" -T "$LIMIT" || return 1
  read -r m_ops m_p50 m_p99 errs <"$tmp/client.out" || { why="no result from mcbench"; return 1; }
  m_n=$BIG_REQUESTS m_note=""
  [ "${errs:-0}" != 0 ] && m_note="$errs error replies"
  return 0
}

# big_rounds PROTO ONCE TESTS: the rounds over every started target (names in big_names, ports
# in big_ports, pids in big_pids), then one row per target and test: the medians of its rounds
big_rounds() {
  local proto=$1 once=$2 tests=$3 round t k n=${#big_names[@]}
  declare -A runs=() cpu_ticks=() failed=()
  for ((round = 0; round < BIG_ROUNDS; round++)); do
    for t in $tests; do
      for ((k = 0; k < n; k++)); do
        local j=$(((k + round) % n)) name=${big_names[$(((k + round) % n))]}
        [ -n "${failed[$name/$t]:-}" ] && continue
        local pid=${big_pids[$j]} before after
        if ! alive "$pid"; then failed[$name/$t]=$why; continue; fi
        before=$(ticks "$pid")
        if ! "$once" "${big_ports[$j]}" "$t"; then
          alive "$pid" || true
          failed[$name/$t]=$why
          echo "  $name $t: not available: $why" >&2
          continue
        fi
        after=$(ticks "$pid")
        cpu_ticks[$name/$t]=$(( ${cpu_ticks[$name/$t]:-0} + after - before ))
        runs[$name/$t]+="$m_ops $m_p50 $m_p99 $cpu"$'\n'
        echo "  round $((round + 1)) $name $t: $m_ops req/s, p50 $m_p50 ms, p99 $m_p99 ms" >&2
      done
    done
  done
  for t in $tests; do
    for ((k = 0; k < n; k++)); do
      local name=${big_names[$k]} target workers=1
      target=${name%% *}
      [ "$target" = chash-proxy ] && workers=$BIG_WORKERS
      [ "$name" = "chash-proxy (before)" ] && target="chash-proxy (before)"
      local label=$t-$BIG_KEYS
      case $t in set1 | get1) label=$t ;; esac
      if [ -n "${failed[$name/$t]:-}" ] && [ -z "${runs[$name/$t]:-}" ]; then
        row "$proto" "$target" "$workers" "$label" 1 - - - - - "not available: ${failed[$name/$t]}"
        continue
      fi
      local med count us
      # The median of each column on its own (ops/s, p50, p99, client cores).
      med=$(printf '%s' "${runs[$name/$t]}" | awk '
        { for (i = 1; i <= 4; i++) v[i, NR] = $i; n = NR }
        END {
          for (i = 1; i <= 4; i++) {
            m = 0; for (r = 1; r <= n; r++) a[r] = v[i, r]
            for (x = 2; x <= n; x++) { y = a[x]; z = x - 1; while (z >= 1 && a[z] + 0 > y + 0) { a[z + 1] = a[z]; z-- } a[z + 1] = y }
            m = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            printf "%s%s", (i > 1 ? "\t" : ""), m
          }
        }')
      count=$(printf '%s' "${runs[$name/$t]}" | grep -c .)
      us=$(proxy_us 0 "${cpu_ticks[$name/$t]}" $((count * BIG_REQUESTS)))
      IFS=$'\t' read -r mo m50 m99 mc <<<"$med"
      local depth=1
      case $t in set1 | get1) depth=$BIG_PIPELINE ;; esac
      row "$proto" "$target" "$workers" "$label" "$depth" "$mo" "$m50" "$m99" "$us" "$mc" "median of $count runs${failed[$name/$t]:+; some failed: ${failed[$name/$t]}}"
    done
  done
}

# big_proxies PROTO FRONT1 FRONT2 FRONT3 B1 B2 B3: start nutcracker, chash-proxy and the optional
# older chash-proxy on the same nutcracker-style config (one front port each)
big_proxies() {
  local proto=$1 redis=false prefix=m
  shift
  local fronts=("$1" "$2" "$3")
  shift 3
  [ "$proto" = redis ] && redis=true prefix=r
  big_names=() big_ports=() big_pids=()
  local i
  for i in 0 1 2; do
    nutcracker_yml "$tmp/big-$proto-$i.yml" "$proto" "${fronts[$i]}" "$redis" 5000 "$prefix" "$1" "$2" "$3"
  done
  local stats
  stats=$(free_ports 1)
  if start "big-nutcracker-$proto" "$PIN_PROXY" "${fronts[0]}" nutcracker -c "$tmp/big-$proto-0.yml" -s "$stats" -a "$HOST"; then
    big_names+=(nutcracker) big_ports+=("${fronts[0]}") big_pids+=("$started")
  else
    row "$proto-10k" nutcracker 1 "-" 1 - - - - - "not available: $why"
  fi
  if start "big-chash-proxy-$proto" "$PIN_PROXY" "${fronts[1]}" "$CHASH_PROXY" -c "$tmp/big-$proto-1.yml" --workers "$BIG_WORKERS" --log-level warn -s 0 -a "$HOST"; then
    big_names+=(chash-proxy) big_ports+=("${fronts[1]}") big_pids+=("$started")
  else
    row "$proto-10k" chash-proxy "$BIG_WORKERS" "-" 1 - - - - - "not available: $why"
  fi
  if [ -n "$CHASH_PROXY_BEFORE" ]; then
    if start "big-chash-proxy-before-$proto" "$PIN_PROXY" "${fronts[2]}" "$CHASH_PROXY_BEFORE" -c "$tmp/big-$proto-2.yml" --workers "$BIG_WORKERS" --log-level warn -s 0 -a "$HOST"; then
      big_names+=("chash-proxy (before)") big_ports+=("${fronts[2]}") big_pids+=("$started")
    else
      row "$proto-10k" "chash-proxy (before)" "$BIG_WORKERS" "-" 1 - - - - - "not available: $why"
    fi
  fi
}

run_bigkeys() {
  echo "bigkeys: requests of $BIG_KEYS keys; $BIG_CLIENTS connections, $BIG_REQUESTS requests per run, $BIG_ROUNDS rounds" >&2
  local ports i r user=()
  # redis
  read -r -a ports <<<"$(free_ports 6)"
  local ok=1
  for i in 0 1 2; do
    if ! start "big-redis$i" "$PIN_BACKENDS" "${ports[$i]}" redis-server --bind "$HOST" --port "${ports[$i]}" \
         --save "" --appendonly no --dir "$tmp" --protected-mode yes --daemonize no; then
      row redis-10k "direct (r1)" "" "-" 1 - - - - - "not available: backends: $why"
      ok=0
      break
    fi
  done
  if [ "$ok" = 1 ]; then
    big_proxies redis "${ports[3]}" "${ports[4]}" "${ports[5]}" "${ports[@]:0:3}"
    [ "${#big_names[@]}" -gt 0 ] && big_rounds redis-10k big_redis_once "$BIG_REDIS_TESTS"
  fi
  for r in ${pids[@]+"${pids[@]}"}; do stop "$r"; done
  # memcache
  if [ -n "$BIG_MC_TESTS" ]; then
    if ! cc -O2 -o "$tmp/mcbench" "$here/mcbench.c" 2>"$tmp/cc.err"; then
      row memcache-10k "direct (m1)" "" "-" 1 - - - - - "not available: cannot compile mcbench.c"
      return 0
    fi
    [ "$(id -u)" = 0 ] && user=(-u nobody)
    read -r -a ports <<<"$(free_ports 6)"
    for i in 0 1 2; do
      if ! start "big-memcached$i" "$PIN_BACKENDS" "${ports[$i]}" memcached -l "$HOST" -p "${ports[$i]}" -U 0 -t 1 -m 256 "${user[@]}"; then
        row memcache-10k "direct (m1)" "" "-" 1 - - - - - "not available: backends: $why"
        return 0
      fi
    done
    big_proxies memcache "${ports[3]}" "${ports[4]}" "${ports[5]}" "${ports[@]:0:3}"
    if [ "${#big_names[@]}" -gt 0 ]; then
      # Fill the key space once (through the first proxy: all route alike), then the rounds.
      client mcbench - "$tmp/mcbench" -h "$HOST" -p "${big_ports[0]}" -c 20 -n $((KEYSPACE * 3)) -P 16 -t set \
        -r "$KEYSPACE" -d "$DATA_SIZE" -T "$LIMIT" || echo "  bigkeys: filling memcached failed: $why" >&2
      big_rounds memcache-10k big_mc_once "$BIG_MC_TESTS"
    fi
    for r in ${pids[@]+"${pids[@]}"}; do stop "$r"; done
  fi
}

# ---------------------------------------------------------------------------------------------
# tls

run_tls() {
  echo "tls: 3 redis-servers (plain + TLS ports); redis-benchmark -c $CLIENTS -n $TLS_REQUESTS, $TLS_ROUNDS rounds" >&2
  local d=$tmp/tls ports i k t p r target
  mkdir -p "$d"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  if ! { openssl req -x509 "${ec[@]}" -keyout "$d/ca.key" -out "$d/ca.crt" -days 2 -subj /CN=bench-ca &&
         openssl req -new "${ec[@]}" -keyout "$d/s.key" -out "$d/s.csr" -subj /CN=localhost &&
         printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$d/s.ext" &&
         openssl x509 -req -in "$d/s.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
           -extfile "$d/s.ext" -out "$d/s.crt"; } >"$d/openssl.log" 2>&1; then
    na tls "direct TLS (r1)" "" "openssl could not make certificates"
    return 0
  fi
  read -r -a ports <<<"$(free_ports 8)"  # 0-2 plain, 3-5 TLS, 6 proxy TLS, 7 proxy plain
  for i in 0 1 2; do
    if ! start "tls-redis$i" "$PIN_BACKENDS" "${ports[$((i + 3))]}" redis-server --bind "$HOST" \
         --port "${ports[$i]}" --tls-port "${ports[$((i + 3))]}" --tls-cert-file "$d/s.crt" \
         --tls-key-file "$d/s.key" --tls-ca-cert-file "$d/ca.crt" --tls-auth-clients no \
         --save "" --appendonly no --dir "$tmp" --protected-mode yes --daemonize no; then
      na tls "direct TLS (r1)" "" "backends: $why"
      return 0
    fi
  done
  nutcracker_yml "$d/tls.yml" tls "${ports[6]}" true 2000 t "${ports[@]:3:3}"
  printf '  tls: {cert: %s, key: %s}\n  server_tls: {ca: %s}\n' "$d/s.crt" "$d/s.key" "$d/ca.crt" >>"$d/tls.yml"
  nutcracker_yml "$d/plain.yml" plain "${ports[7]}" true 2000 r "${ports[@]:0:3}"
  local tls_pid plain_pid
  if ! start chash-proxy-tls "$PIN_PROXY" "${ports[6]}" "$CHASH_PROXY" -c "$d/tls.yml" --workers 1 --log-level warn -s 0 -a "$HOST"; then
    na tls "chash-proxy TLS" 1 "$why"
    return 0
  fi
  tls_pid=$started
  if ! start chash-proxy-plain "$PIN_PROXY" "${ports[7]}" "$CHASH_PROXY" -c "$d/plain.yml" --workers 1 --log-level warn -s 0 -a "$HOST"; then
    na tls "chash-proxy" 1 "$why"
    return 0
  fi
  plain_pid=$started
  # Alternating: every round takes each target in turn, so drift on a shared machine hits all.
  local REQUESTS=$TLS_REQUESTS runs=$d/runs
  : >"$runs"
  for ((k = 0; k < TLS_ROUNDS; k++)); do
    for t in $TLS_TESTS; do
      for p in $TLS_PIPELINES; do
        for target in "direct TLS (r1)|-|${ports[3]}|-|$d/ca.crt" "chash-proxy TLS|1|${ports[6]}|$tls_pid|$d/ca.crt" \
                      "direct (r1)|-|${ports[0]}|-|" "chash-proxy|1|${ports[7]}|$plain_pid|"; do
          IFS='|' read -r name w port pid tls_cacert <<<"$target"
          [ "$w" = - ] && w=""
          if turn "$runs" "$name" "$w" "$pid" "$port" "$t" "$p"; then
            echo "  $name $t P$p: $m_ops ops/s, p50 $m_p50 ms" >&2
          else
            echo "  $name $t P$p: not available: $why" >&2
          fi
        done
      done
    done
  done
  tls_cacert=""
  median_rows tls "$runs"  # one row per target, test and depth: the median round
  for r in ${pids[@]+"${pids[@]}"}; do stop "$r"; done
}

# ---------------------------------------------------------------------------------------------
# cluster

cluster_ports() {  # cluster_ports N: N free loopback ports whose bus ports (+10000) are free too
  python3 - "$1" <<'PY'
import socket, sys
socks, out = [], []
while len(out) < int(sys.argv[1]):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    if p + 10000 > 65535:
        s.close()
        continue
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 10000))
    except OSError:
        s.close()
        continue
    socks += [s, b]
    out.append(p)
print(" ".join(map(str, out)))
PY
}

# The round with the median ops/s of each target, test and depth (RUNS file: target workers test
# pipe ops p50 p99 - cores), as rows of protocol PROTO.
median_rows() {  # median_rows PROTO RUNS
  python3 - "$1" "$2" >>"$results" <<'PY'
import sys
groups = {}
for line in open(sys.argv[2]):
    f = line.rstrip("\n").split("\t")
    groups.setdefault(tuple(f[:4]), []).append(f)
for key, runs in groups.items():
    runs.sort(key=lambda f: float(f[4]))
    print("\t".join([sys.argv[1]] + runs[(len(runs) - 1) // 2]))
PY
}

run_cluster() {
  echo "cluster: 3 masters (redis-cli --cluster create); redis-benchmark -c $CLIENTS -n $CLUSTER_REQUESTS, $CLUSTER_ROUNDS rounds" >&2
  local d=$tmp/cluster ports i k t p w target name port pid seeds="" cmd=(redis-cli --cluster create)
  mkdir -p "$d"
  read -r -a ports <<<"$(cluster_ports 3)"
  for i in 0 1 2; do
    if ! start "cluster$i" "$PIN_BACKENDS" "${ports[$i]}" redis-server --bind "$HOST" --port "${ports[$i]}" \
         --cluster-enabled yes --cluster-config-file "$d/nodes-$i.conf" --cluster-node-timeout 2000 \
         --save "" --appendonly no --dir "$d" --protected-mode yes --daemonize no; then
      na cluster "direct (--cluster)" "" "cluster nodes: $why"
      return 0
    fi
    cmd+=("$HOST:${ports[$i]}")
    seeds+="${seeds:+, }$HOST:${ports[$i]}"
  done
  if ! "${cmd[@]}" --cluster-replicas 0 --cluster-yes >"$d/create.log" 2>&1; then
    na cluster "direct (--cluster)" "" "redis-cli --cluster create failed: $(tail -n 1 "$d/create.log")"
    return 0
  fi
  for ((i = 0; i < 100; i++)); do
    redis-cli -h "$HOST" -p "${ports[0]}" cluster info 2>/dev/null | grep -q cluster_state:ok && break
    sleep 0.1
  done
  local targets=("direct (--cluster)|-|${ports[0]}|-|1")
  for w in $CLUSTER_WORKERS; do
    read -r port <<<"$(free_ports 1)"
    printf 'cluster:\n  listen: %s:%s\n  redis: true\n  timeout: 2000\n  cluster: [%s]\n' \
      "$HOST" "$port" "$seeds" >"$d/proxy$w.yml"
    if ! start "chash-proxy-cluster$w" "$PIN_PROXY" "$port" "$CHASH_PROXY" -c "$d/proxy$w.yml" \
         --workers "$w" --log-level warn -s 0 -a "$HOST"; then
      na cluster chash-proxy "$w" "$why"
      continue
    fi
    targets+=("chash-proxy|$w|$port|$started|")
    [ -n "$CHASH_PROXY_BEFORE" ] || continue
    read -r port <<<"$(free_ports 1)"
    sed "2s/listen: .*/listen: $HOST:$port/" "$d/proxy$w.yml" >"$d/before$w.yml"
    if start "chash-proxy-before-cluster$w" "$PIN_PROXY" "$port" "$CHASH_PROXY_BEFORE" \
         -c "$d/before$w.yml" --workers "$w" --log-level warn -s 0 -a "$HOST"; then
      targets+=("chash-proxy (before)|$w|$port|$started|")
    fi
  done
  sleep 0.5  # the proxies read the map (CLUSTER NODES) right after starting
  local REQUESTS=$CLUSTER_REQUESTS runs=$d/runs
  : >"$runs"
  for ((k = 0; k < CLUSTER_ROUNDS; k++)); do
    for t in $CLUSTER_TESTS; do
      for p in $CLUSTER_PIPELINES; do
        for target in "${targets[@]}"; do
          IFS='|' read -r name w port pid cluster_mode <<<"$target"
          [ "$w" = - ] && w=""
          if turn "$runs" "$name" "$w" "$pid" "$port" "$t" "$p"; then
            echo "  $name ${w:+$w worker(s) }$t P$p: $m_ops ops/s, p99 $m_p99 ms, proxy CPU $us µs/op" >&2
          else
            echo "  $name $t P$p: not available: $why" >&2
          fi
        done
      done
    done
  done
  cluster_mode=""
  median_rows cluster "$runs"
  for pid in ${pids[@]+"${pids[@]}"}; do stop "$pid"; done
}

# ---------------------------------------------------------------------------------------------

began=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for proto in $PROTOCOLS; do
  case $proto in
    redis) run_redis ;;
    memcache) run_memcache ;;
    tcp) run_tcp ;;
    bigkeys) run_bigkeys ;;
    tls) run_tls ;;
    cluster) run_cluster ;;
    *) echo "run.sh: unknown protocol '$proto' (redis memcache tcp bigkeys tls cluster)" >&2; exit 2 ;;
  esac
done

model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git -C "$root" status --porcelain -- proxy 2>/dev/null)" ] && rev="$rev+dirty"
pins="none"
[ -n "$PIN_CLIENT$PIN_PROXY$PIN_BACKENDS" ] && pins="client ${PIN_CLIENT:-any}, proxy ${PIN_PROXY:-any}, backends ${PIN_BACKENDS:-any}"
mkdir -p "$(dirname "$OUT")"
{
  echo "bench-proxy: $(date -u +%Y-%m-%dT%H:%MZ), chash-proxy $rev; $(nproc) CPUs ($model); load $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) after; $(( $(date +%s) - began )) s"
  echo "clients, proxies and backends share the machine; pinning: $pins"
  echo "versions: $(redis-server --version | grep -oE 'v=[^ ]+' | cut -c3-) redis, $(nutcracker --version 2>&1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -n 1) nutcracker, $(memcached -V | cut -d' ' -f2) memcached, $(haproxy -v | grep -oE 'version [^ ]+' | cut -d' ' -f2) haproxy, $(nginx -v 2>&1 | cut -d/ -f2) nginx"
  echo "redis/memcache: $CLIENTS connections, $REQUESTS requests per row, keys random in $KEYSPACE, $DATA_SIZE-byte values, mget = $MGET_KEYS keys; tcp: wrk -t$TCP_THREADS -c$TCP_CONNECTIONS -d${TCP_SECONDS}s, balance $TCP_BALANCE"
  echo "bigkeys: $BIG_KEYS keys per request, $BIG_CLIENTS connections, $BIG_REQUESTS requests per run, $BIG_ROUNDS rounds (targets in turn), chash-proxy $BIG_WORKERS worker(s)${CHASH_PROXY_BEFORE:+, before = $CHASH_PROXY_BEFORE}"
  echo
  python3 "$here/table.py" "$results"
} >"$OUT"
cp "$results" "${OUT%.md}.tsv"
cat "$OUT"
echo "run.sh: written to $OUT" >&2
