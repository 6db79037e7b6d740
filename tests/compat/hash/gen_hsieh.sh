#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Golden vectors for hsieh (Paul Hsieh's SuperFastHash as twemproxy and libmemcached have it).
# No Debian package ships a working binary (libhashkit is built without hsieh and returns 0), so
# this compiles the two peers' own, unmodified source files; only their umbrella headers are
# replaced by stubs that provide <stdint.h>/<stddef.h>.
#
# Usage: gen_hsieh.sh TWEMPROXY/src/hashkit/nc_hsieh.c LIBMEMCACHED/src/libhashkit/hsieh.cc \
#          < keys.hex > hsieh.tsv
# (checkouts of twitter/twemproxy and awesomized/libmemcached; vectors in tests/testdata were
# made from twemproxy 60aaf855 and libmemcached 374774df.)
set -eu
[ $# -eq 2 ] || { echo "usage: $0 nc_hsieh.c hsieh.cc < keys.hex" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/stub/libhashkit"
printf '#include <stdint.h>\n#include <stddef.h>\n' > "$dir/stub/nc_core.h"
printf '#include <stdint.h>\n#include <stddef.h>\n' > "$dir/stub/libhashkit/common.h"
cc -O2 -I"$dir/stub" -c "$1" -o "$dir/twemproxy.o"
c++ -O2 -I"$dir/stub" -DHAVE_HSIEH_HASH=1 -c "$2" -o "$dir/libmemcached.o"
c++ -O2 -std=c++17 "$here/hsieh_peers_main.cc" "$dir/twemproxy.o" "$dir/libmemcached.o" \
  -o "$dir/hsieh_peers"
"$dir/hsieh_peers"
