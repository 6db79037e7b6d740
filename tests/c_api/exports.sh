#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# libchash_c.so exports exactly the functions include/chash/chash_c.h declares — each with the
# symbol version src/c/chash_c.map gives it — and nothing else: no libchash C++ symbol, no
# libstdc++ template instance (ctest "c_api_exports").
# Usage: exports.sh LIBCHASH_C_SO CHASH_C_H CHASH_C_MAP
set -euo pipefail
lib=$1 header=$2 map=$3
fail() { echo "c_api_exports: FAIL: $*" >&2; exit 1; }

declared=$(grep -o 'chash_[a-z0-9_]*(' "$header" | tr -d '(' | sort -u)
listed=$(grep -o '^ *chash_[a-z0-9_]*;' "$map" | tr -d ' ;' | sort -u)
# "ADDR T name@@VERSION"; the version nodes themselves appear as absolute symbols "0 A CHASH_C_1.0".
exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | sort -u)
versions=$(nm -D --defined-only "$lib" | awk '$2 == "A" { print $3 }' | sort -u)

[ "$declared" = "$listed" ] ||
  fail "the header and the version script list different functions:
$(diff <(echo "$declared") <(echo "$listed"))"
others=$(grep -v '^chash_[a-z0-9_]*@@\?CHASH_C_[0-9.]*$' <<<"$exported" || true)
[ -z "$others" ] || fail "exported beyond the C API:
$(head -20 <<<"$others")"
names=$(sed 's/@.*//' <<<"$exported")
[ "$names" = "$declared" ] || fail "declared but not exported (or the reverse):
$(diff <(echo "$declared") <(echo "$names"))"
grep -qv '^CHASH_C_' <<<"$versions" && fail "unexpected absolute symbols: $versions"
echo "c_api_exports: $(wc -l <<<"$exported") functions, all chash_*, versions: $(echo $versions)"
