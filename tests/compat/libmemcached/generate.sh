#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates the libmemcached vectors from the real library, on this machine:
#   tests/compat/vectors/{ketama,ketama-spy,libmemcached-consistent,libmemcached-modula}__*.tsv
#   tests/compat/vectors/libmemcached__*.tsv   (behaviour combinations, see "Settings" below)
#
#   tests/compat/libmemcached/generate.sh
#
# Installs what it needs (Debian: libmemcached-dev, memcached, gcc, python3) if it is missing,
# builds libmemcached_peer.c against the installed libmemcached, and
#   - writes the "route" vectors with memcached_generate_hash() (no server needed), for the
#     four presets and for every combination of the behaviours chash takes as preset settings;
#   - writes the "e2e" vectors end to end: memcached servers started here on 127.0.0.1 (free
#     ports from 41211 up, always stopped on exit), every key SET through libmemcached and then
#     looked for on every server directly; the e2e-replicas cases also check libmemcached's own
#     replication (MEMCACHED_BEHAVIOR_NUMBER_OF_REPLICAS).
# Every key of keys.hex is used: libmemcached takes (pointer, length) keys of any bytes up to
# 250, and none of ours has whitespace or control bytes that the memcached protocol could not
# carry. The behaviour-combination files use every 10th key (195), to keep ~320 files small.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
compat=$(dirname "$here")
out=$compat/vectors
keys=$compat/keys.hex
cmd="tests/compat/libmemcached/generate.sh"

# ---- Tools -------------------------------------------------------------------------------------
missing=()
for pkg in libmemcached-dev memcached gcc; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ((${#missing[@]})); then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi
lm_version=$(dpkg-query -W -f='${Version}' libmemcached11)
mc_version=$(dpkg-query -W -f='${Version}' memcached)

tmp=$(mktemp -d)
server_pids=()
cleanup() {
  local pid
  for pid in "${server_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${server_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

cc -O2 -Wall -Wextra -o "$tmp/peer" "$here/libmemcached_peer.c" -lmemcached
mkdir -p "$out"

# The behaviours each preset stands for, as libmemcached_peer.c applies them (in this order,
# before adding servers); chash's presets are these lists (src/presets/libmemcached.cc).
settings_of() {
  case $1 in
    ketama) echo "ketama_weighted=1" ;;
    ketama-spy) echo "ketama_weighted=1,distribution=CONSISTENT_KETAMA_SPY" ;;
    libmemcached-consistent) echo "distribution=CONSISTENT" ;;
    libmemcached-modula) echo "" ;;
    *) echo "generate.sh: unknown preset $1" >&2; exit 1 ;;
  esac
}
setup_of() {
  case $1 in
    ketama) echo "MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED=1" ;;
    ketama-spy) echo "MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED=1 then MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY" ;;
    libmemcached-consistent) echo "MEMCACHED_BEHAVIOR_DISTRIBUTION=MEMCACHED_DISTRIBUTION_CONSISTENT" ;;
    libmemcached-modula) echo "default distribution (MEMCACHED_DISTRIBUTION_MODULA)" ;;
  esac
}
# join_settings "a,b" "c" -> "a,b,c"; "-" (the peer's "no settings") when all are empty.
join_settings() {
  local out="" part
  for part in "$@"; do [[ -n $part ]] && out+="${out:+,}$part"; done
  echo "${out:--}"
}

header() {  # header PRESET HASH REPLICAS WHAT NODE=WEIGHT...
  local preset=$1 hash=$2 replicas=$3 what=$4 n
  shift 4
  local setup
  setup="$(setup_of "$preset")"
  [[ $hash != - ]] && setup+=", MEMCACHED_BEHAVIOR_HASH=$hash"
  echo "# peer: libmemcached $lm_version (Debian libmemcached11), $what"
  echo "# client: $setup, then servers added in this order"
  echo "# command: $cmd"
  echo "@preset $preset"
  [[ $hash != - ]] && echo "@option hash $hash"
  [[ $replicas != 1 ]] && echo "@option replicas $replicas"
  for n in "$@"; do echo "@node ${n%=*} ${n##*=}"; done
}

route_vector() {  # route_vector PRESET CASE HASH NODE=WEIGHT...
  local preset=$1 case=$2 hash=$3
  shift 3
  local f="$out/${preset}__${case}.tsv"
  {
    header "$preset" "$hash" 1 "memcached_generate_hash() and memcached_server_by_key()" "$@"
    "$tmp/peer" route "$(join_settings "$(settings_of "$preset")" \
      "$([[ $hash != - ]] && echo "hash=$hash")")" "$keys" "$@"
  } >"$f.tmp"
  mv "$f.tmp" "$f"
  echo "wrote $f"
}

# ---- Node lists --------------------------------------------------------------------------------
one=(10.0.1.1:11211=1)
two=(10.0.1.1:11211=1 10.0.1.2:11211=1)
# Unequal weights (the start of libmemcached's own ketama test list).
typical=(10.0.1.1:11211=600 10.0.1.2:11211=300 10.0.1.3:11211=200 10.0.1.4:11211=350
         10.0.1.5:11211=1000)
typical_unweighted=(cache-a.example:11211=1 cache-b.example:11211=1 cache-c.example:11211=1
                    cache-d.example:11211=1 cache-e.example:11211=1)
many_weighted=()
many=()
for i in $(seq 1 50); do
  many_weighted+=("10.0.2.$i:11211=$((i % 5 + 1))")
  many+=("10.0.2.$i:11211=1")
done
max100=()
for i in $(seq 1 100); do max100+=("mc$i.example.net:11211=1"); done
many150=()
for i in $(seq 1 150); do many150+=("10.0.4.$i:11211=1"); done
# Port 11211 written and left out (both drop it from the point names), and other ports.
default_port=(mc1.example=1 mc2.example:11211=2 mc3.example:11212=1 10.0.3.4=3 10.0.3.5:22122=1)
default_port_unweighted=(mc1.example=1 mc2.example:11211=1 mc3.example:11212=1 10.0.3.4=1
                         10.0.3.5:22122=1)
# IPv6 (libmemcached keeps the brackets in the host) and a unix socket (port 0).
names=("[::1]:11211=1" "[2001:db8::5]:11300=2" /var/run/memcached/memcached.sock=1 localhost=1)

# ---- Route vectors -------------------------------------------------------------------------------
p=ketama
route_vector $p one - "${one[@]}"
route_vector $p two - "${two[@]}"
route_vector $p typical - "${typical[@]}"
route_vector $p many - "${many_weighted[@]}"
route_vector $p many-equal - "${many[@]}"
route_vector $p max100 - "${max100[@]}"
route_vector $p default-port - "${default_port[@]}"
route_vector $p names - "${names[@]}"
for h in default crc fnv1_64 fnv1a_32 murmur jenkins; do
  route_vector $p "hash-$h" "$h" "${typical[@]}"
done

p=ketama-spy
route_vector $p one - "${one[@]}"
route_vector $p two - "${two[@]}"
route_vector $p typical - "${typical[@]}"
route_vector $p many - "${many_weighted[@]}"
route_vector $p default-port - "${default_port[@]}"
route_vector $p names - "${names[@]}"
for h in crc fnv1a_64 murmur3; do
  route_vector $p "hash-$h" "$h" "${typical[@]}"
done

p=libmemcached-consistent
route_vector $p one - "${one[@]}"
route_vector $p two - "${two[@]}"
route_vector $p typical - "${typical_unweighted[@]}"
route_vector $p weighted - "${typical[@]}"
route_vector $p many - "${many[@]}"
route_vector $p max100 - "${max100[@]}"
route_vector $p default-port - "${default_port_unweighted[@]}"
route_vector $p names - "[::1]:11211=1" "[2001:db8::5]:11300=1" /var/run/memcached/memcached.sock=1
for h in md5 crc fnv1_64 fnv1a_64 fnv1_32 fnv1a_32 murmur murmur3 jenkins; do
  route_vector $p "hash-$h" "$h" "${typical_unweighted[@]}"
done
route_vector $p weighted-hash-fnv1a_32 fnv1a_32 "${typical[@]}"

p=libmemcached-modula
route_vector $p one - "${one[@]}"
route_vector $p two - "${two[@]}"
route_vector $p typical - "${typical[@]}"
route_vector $p many - "${many150[@]}"
for h in md5 crc fnv1_64 fnv1a_64 fnv1_32 fnv1a_32 murmur murmur3 jenkins; do
  route_vector $p "hash-$h" "$h" "${typical_unweighted[@]}"
done

# The one hash Debian's build lacks: chash refuses it as the peer does.
if [[ $("$tmp/peer" hashes | awk '$1 == "hsieh" { print $2 }') != refused ]]; then
  echo "generate.sh: this libmemcached accepts MEMCACHED_HASH_HSIEH; add it to the presets" >&2
  exit 1
fi

# ---- Settings: behaviour combinations -------------------------------------------------------------
# libmemcached clients configured by behaviours alone, as users set them (pylibmc "distribution",
# "ketama_weighted", "hash"; PHP OPT_DISTRIBUTION, OPT_LIBKETAMA_COMPATIBLE, OPT_HASH; C
# memcached_behavior_set), applied in the order of the file name's tokens, before the servers
# are added. chash reads them as @setting lines on the bare client (@preset libmemcached-modula).
#   kw-on / kw-off        MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED 1 / 0
#   ketama-on / -off      MEMCACHED_BEHAVIOR_KETAMA 1 / 0
#   dist-<d>              MEMCACHED_BEHAVIOR_DISTRIBUTION (modula, consistent, ketama = CONSISTENT_
#                         KETAMA, spy = CONSISTENT_KETAMA_SPY, weighted = CONSISTENT_WEIGHTED)
#   khash-<h> / hash-<h>  MEMCACHED_BEHAVIOR_KETAMA_HASH / MEMCACHED_BEHAVIOR_HASH
sub_keys=$tmp/keys-every-10th.hex
awk 'NR % 10 == 1' "$keys" >"$sub_keys"
dist_name() {
  case $1 in
    modula) echo MODULA ;; consistent) echo CONSISTENT ;; ketama) echo CONSISTENT_KETAMA ;;
    spy) echo CONSISTENT_KETAMA_SPY ;; weighted) echo CONSISTENT_WEIGHTED ;;
    *) echo "generate.sh: unknown distribution token $1" >&2; exit 1 ;;
  esac
}
on_off() { [[ $1 == on ]] && echo "$2" || echo "$3"; }

settings_vector() {  # settings_vector PRESET FILE-STEM "TOKEN ..." NODE=WEIGHT...
  local preset=$1 stem=$2 tokens=$3 t peer_list="" lines=() d n
  shift 3
  for t in $tokens; do
    case $t in
      kw-*) peer_list+=",ketama_weighted=$(on_off "${t#kw-}" 1 0)"
            lines+=("@setting ketama_weighted $(on_off "${t#kw-}" true false)") ;;
      ketama-*) peer_list+=",ketama=$(on_off "${t#ketama-}" 1 0)"
                lines+=("@setting ketama $(on_off "${t#ketama-}" true false)") ;;
      dist-*) d=$(dist_name "${t#dist-}")
              peer_list+=",distribution=$d"; lines+=("@setting distribution $d") ;;
      khash-*) peer_list+=",ketama_hash=${t#khash-}"; lines+=("@setting ketama_hash ${t#khash-}") ;;
      hash-*) peer_list+=",hash=${t#hash-}"; lines+=("@setting hash ${t#hash-}") ;;
      *) echo "generate.sh: unknown token $t" >&2; exit 1 ;;
    esac
  done
  local f="$out/${stem}.tsv"
  {
    echo "# peer: libmemcached $lm_version (Debian libmemcached11), memcached_generate_hash() and memcached_server_by_key()"
    echo "# client: $(setup_of "$preset"), then the @settings in this order (one" \
         "memcached_behavior_set each), then servers added in this order"
    echo "# keys: every 10th key of tests/compat/keys.hex"
    echo "# command: $cmd"
    echo "@preset $preset"
    for t in "${lines[@]}"; do echo "$t"; done
    for n in "$@"; do echo "@node ${n%=*} ${n##*=}"; done
    "$tmp/peer" route "$(join_settings "$(settings_of "$preset")" "${peer_list#,}")" "$sub_keys" "$@"
  } >"$f.tmp"
  mv "$f.tmp" "$f"
  echo "wrote $f"
}

# A name for a token list: "kw-on dist-spy hash-crc" -> "kw-on_dist-spy_hash-crc".
stem_of() { local s="$*"; s=${s// /_}; echo "${s:-none}"; }

# 30 servers of weight 1 (ports 11212, 11213 and 11211 in turn; 11211 is left out of the names).
many30=()
for i in $(seq 1 30); do many30+=("cache$i.example:$((11211 + i % 3))=1"); done
settings_nodes() {  # settings_nodes SET: that node list, one NAME=WEIGHT a word
  case $1 in
    equal) echo "${default_port_unweighted[@]}" ;;
    weighted) echo "${default_port[@]}" ;;
    many) echo "${many30[@]}" ;;
  esac
}

combo_hashes=(- default md5 crc fnv1a_32 murmur jenkins)
for set in equal weighted many; do
  read -r -a nodes <<<"$(settings_nodes "$set")"
  # Every distribution (or none) x KETAMA_WEIGHTED (none, off, on; set first) x HASH (set last);
  # the 30-server set with the default hash only.
  for d in - modula consistent ketama spy weighted; do
    for kw in - off on; do
      for h in "${combo_hashes[@]}"; do
        [[ $set == many && $h != - ]] && continue
        tokens=""
        [[ $kw != - ]] && tokens+=" kw-$kw"
        [[ $d != - ]] && tokens+=" dist-$d"
        [[ $h != - ]] && tokens+=" hash-$h"
        tokens=${tokens# }
        settings_vector libmemcached-modula "libmemcached__${set}_$(stem_of $tokens)" "$tokens" \
          "${nodes[@]}"
      done
    done
  done
  [[ $set == many ]] && continue
  # The order matters: KETAMA_WEIGHTED after a distribution replaces it (and sets the hashes);
  # a hash before KETAMA_WEIGHTED=1 is lost; MODULA and CONSISTENT_KETAMA_SPY keep the weighting;
  # KETAMA_HASH changes nothing.
  for tokens in "dist-modula kw-on" "dist-consistent kw-on" "dist-ketama kw-on" "dist-spy kw-on" \
                "dist-weighted kw-on" "dist-modula kw-off" "dist-consistent kw-off" \
                "dist-ketama kw-off" "dist-spy kw-off" "dist-weighted kw-off" \
                "hash-crc kw-on" "hash-crc kw-off" "hash-fnv1a_32 dist-weighted" \
                "hash-murmur dist-spy" "ketama-on" "ketama-off" "kw-on ketama-on" \
                "kw-on dist-modula dist-spy" "kw-on ketama-off dist-spy" "kw-on khash-crc" \
                "dist-consistent khash-md5 hash-crc" "dist-spy khash-jenkins"; do
    settings_vector libmemcached-modula "libmemcached__${set}_$(stem_of $tokens)" "$tokens" \
      "${nodes[@]}"
  done
done
# The presets are shorthands that settings extend.
read -r -a nodes <<<"$(settings_nodes weighted)"
settings_vector ketama ketama__set-dist-spy "dist-spy" "${nodes[@]}"
settings_vector ketama-spy ketama-spy__set-kw-off "kw-off" "${nodes[@]}"
settings_vector ketama ketama__set-hash-crc "hash-crc" "${nodes[@]}"
read -r -a nodes <<<"$(settings_nodes equal)"
settings_vector libmemcached-consistent libmemcached-consistent__set-kw-on "kw-on" "${nodes[@]}"
settings_vector libmemcached-consistent libmemcached-consistent__set-dist-spy_hash-md5 \
  "dist-spy hash-md5" "${nodes[@]}"

# ---- Ties ----------------------------------------------------------------------------------------
# Two servers sharing a point value (found by find_ties.py), listed both ways: the keys on the
# contested point must change owner, proving that the lower server index wins a tie.
tie_vectors() {  # tie_vectors PRESET SCHEME
  local preset=$1 scheme=$2 a b expected changed
  read -r a b expected < <(python3 "$here/find_ties.py" "$scheme" "$keys")
  route_vector "$preset" tie - "$a=1" "$b=1"
  route_vector "$preset" tie-swapped - "$b=1" "$a=1"
  changed=$(paste "$out/${preset}__tie.tsv" "$out/${preset}__tie-swapped.tsv" |
            awk -F'\t' '!/^[#@]/ && $2 != $4' | wc -l)
  if [[ $changed != "$expected" ]]; then
    echo "generate.sh: $preset tie: $changed keys changed owner, expected $expected" >&2
    exit 1
  fi
  echo "  $preset tie: $a and $b; $changed keys change owner with the order"
}
tie_vectors ketama ketama
tie_vectors ketama-spy ketama-spy
tie_vectors libmemcached-consistent consistent

# ---- End to end against memcached ----------------------------------------------------------------
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
e2e_nodes=()
start_servers() {  # start_servers N: memcached on the first N free ports from 41211
  local port=41211 pid tries
  e2e_nodes=()
  while ((${#e2e_nodes[@]} < $1)); do
    ((port < 41411)) || { echo "generate.sh: no free ports" >&2; exit 1; }
    if ! port_in_use "$port"; then
      memcached -l 127.0.0.1 -p "$port" -U 0 -t 1 -m 16 -c 64 -u nobody &
      pid=$!
      server_pids+=("$pid")
      for tries in $(seq 1 50); do
        port_in_use "$port" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      port_in_use "$port" && e2e_nodes+=("127.0.0.1:$port")
    fi
    port=$((port + 1))
  done
}

e2e_vector() {  # e2e_vector PRESET CASE REPLICAS WEIGHT...
  local preset=$1 case=$2 replicas=$3 i
  shift 3
  local nodes=()
  for i in $(seq 0 $(($# - 1))); do
    local w=("$@")
    nodes+=("${e2e_nodes[$i]}=${w[$i]}")
  done
  local f="$out/${preset}__${case}.tsv"
  {
    header "$preset" - "$replicas" "end to end: SET through libmemcached (binary protocol, \
NUMBER_OF_REPLICAS=$((replicas - 1))), then GET from each memcached $mc_version directly" "${nodes[@]}"
    "$tmp/peer" e2e "$(join_settings "$(settings_of "$preset")")" "$((replicas - 1))" "$keys" \
      "${nodes[@]}"
  } >"$f.tmp"
  mv "$f.tmp" "$f"
  echo "wrote $f"
}

start_servers 5
e2e_vector ketama e2e 1 1 2 1 3 1
e2e_vector ketama e2e-replicas 3 1 2 1 3 1
e2e_vector ketama-spy e2e 1 1 2 1 3 1
e2e_vector libmemcached-consistent e2e 1 1 1 1 1 1
e2e_vector libmemcached-consistent e2e-replicas 2 1 1 1 1 1
e2e_vector libmemcached-modula e2e 1 1 1 1 1 1
e2e_vector libmemcached-modula e2e-replicas 3 1 1 1 1 1
