#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The consumer test (ctest "consumer", tests/CMakeLists.txt): libchash used from outside its
# source tree, the three ways a user does (README, "Use libchash from your project").
#   1. install this build tree into a scratch prefix (cmake --install --prefix);
#   (a) find_package(chash 0.2): consumer links chash::chash (libchash.so.0.2 from the prefix),
#       consumer_static links chash::chash_static (no libchash in its dynamic section);
#   (b) pkg-config --cflags --libs chash with g++ directly, shared, and static from
#       `pkg-config --static --libs` (checks Requires.private / Libs.private);
#   (c) add_subdirectory(<source tree>): only the library is configured (no CLI, proxy, tests,
#       benchmarks, examples, C ABI), no chash warning flags reach the consumer, C++20 comes from
#       the target; then builds and runs it;
#   (d) the C ABI: libchash_c.so.1, chash_c.pc and chash::chash_c installed; main.c built by the
#       C compiler with `pkg-config chash_c`, loading libchash_c.so.1 and not libchash.so.
# Each consumer routes keys and exits 1 on a wrong node or version (tests/consumer/main.cc).
# Usage: run.sh SOURCE_DIR BUILD_DIR WORK_DIR. Env: CMAKE, CC, CXX, LAUNCHER (default: ccache if
# installed), BUILD_TYPE (of the add_subdirectory build; the tree's own, so ccache can reuse it).
set -euo pipefail
start=$SECONDS

src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
work=$3
cmake=${CMAKE:-cmake}
cxx=${CXX:-c++}
cc=${CC:-cc}
launcher=${LAUNCHER-$(command -v ccache || true)}
# (c) compiles the library again in another directory; without the directory in the hash, ccache
# can answer from the objects of the tree under test.
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
build_type=${BUILD_TYPE:-RelWithDebInfo}
consumer=$src/tests/consumer

fail() { echo "consumer: FAIL: $*" >&2; exit 1; }
step() { echo "consumer: [$((SECONDS - start)) s] $*"; }
# Configure flags every variant shares: the tree's compiler and build type, ccache.
common=(-DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE="$build_type")
if [ -n "$launcher" ]; then common+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"); fi
# chash itself (in (c)) also enables C.
chash_c=(-DCMAKE_C_COMPILER="$cc")
if [ -n "$launcher" ]; then chash_c+=(-DCMAKE_C_COMPILER_LAUNCHER="$launcher"); fi
# grep reads a here-string, not a pipe: under pipefail `cmd | grep -q` fails when grep quits early.
needs_lib() {  # needs_lib BINARY: BINARY's dynamic section names libchash.so.MAJOR.MINOR
  grep -q 'NEEDED.*\[libchash\.so\.0\.2\]' <<<"$(readelf -d "$1")" ||
    fail "$1 does not load libchash.so.0.2"
}
no_lib() {  # no_lib BINARY: libchash is linked in, not loaded
  if grep -q 'NEEDED.*libchash' <<<"$(readelf -d "$1")"; then
    fail "$1 loads libchash, want it static"
  fi
}

rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
prefix=$work/prefix

# ---- 1. install ----------------------------------------------------------------------------------
step "install $build -> $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
grep -q 'SONAME.*\[libchash\.so\.0\.2\]' <<<"$(readelf -d "$prefix/lib/libchash.so")" ||
  fail "libchash.so has no SONAME libchash.so.0.2"
for f in include/chash/chash.h include/chash/internal/fastmod.h include/chash/version.h \
         lib/libchash.a lib/cmake/chash/chashConfig.cmake lib/cmake/chash/chashConfigVersion.cmake \
         lib/pkgconfig/chash.pc; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
# SameMinorVersion: a 0.2.x install satisfies 0.2 and 0.2.0, not 0.1, 0.3 or 1.0.
cat >"$work/version_check.cmake" <<CMAKE
include($prefix/lib/cmake/chash/chashConfigVersion.cmake)
message("\${PACKAGE_VERSION_COMPATIBLE}")
CMAKE
for want in 0.2:TRUE 0.2.0:TRUE 0.2.1:FALSE 0.1:FALSE 0.3:FALSE 1.0:FALSE; do
  v=${want%%:*}
  IFS=. read -r major minor patch <<<"$v"
  got=$("$cmake" -DPACKAGE_FIND_VERSION="$v" -DPACKAGE_FIND_VERSION_MAJOR="$major" \
          -DPACKAGE_FIND_VERSION_MINOR="$minor" -DPACKAGE_FIND_VERSION_PATCH="${patch:-0}" \
          -DPACKAGE_FIND_VERSION_COUNT=$((${patch:+1} + 2)) -P "$work/version_check.cmake" 2>&1)
  [ "$got" = "${want#*:}" ] || fail "find_package(chash $v) against 0.2.0: compatible=$got"
done

# ---- (a) find_package ----------------------------------------------------------------------------
step "(a) find_package(chash 0.2)"
"$cmake" -S "$consumer" -B "$work/find_package" "${common[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/find_package.log"
grep -q "^chash_DIR:PATH=$prefix/lib/cmake/chash\$" "$work/find_package/CMakeCache.txt" ||
  fail "find_package found another chash: $(grep ^chash_DIR "$work/find_package/CMakeCache.txt")"
"$cmake" --build "$work/find_package" -j2 >>"$work/find_package.log"
needs_lib "$work/find_package/consumer"
grep -q "libchash.so.0.2 => $prefix/lib/" <<<"$(ldd "$work/find_package/consumer")" ||
  fail "consumer loads no libchash.so.0.2 from $prefix/lib: $(ldd "$work/find_package/consumer")"
no_lib "$work/find_package/consumer_static"
"$work/find_package/consumer"
"$work/find_package/consumer_static"

# ---- (b) pkg-config ------------------------------------------------------------------------------
step "(b) pkg-config chash"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion chash)" = 0.2.0 ] || fail "pkg-config --modversion chash"
mkdir -p "$work/pkg-config"
cd "$work/pkg-config"
# shellcheck disable=SC2046  # pkg-config output is a list of flags
$launcher "$cxx" -std=c++20 -O2 -Wall -Wextra -Werror $(pkg-config --cflags chash) \
  -c "$consumer/main.cc" -o main.o
# shellcheck disable=SC2046
"$cxx" main.o $(pkg-config --libs chash) -Wl,-rpath,"$prefix/lib" -o consumer
needs_lib consumer
./consumer
# Static: libchash.a by name, everything else as `pkg-config --static` lists it.
static_libs=$(pkg-config --static --libs chash)
# shellcheck disable=SC2086
"$cxx" main.o ${static_libs/-lchash/-l:libchash.a} -o consumer_static
no_lib consumer_static
./consumer_static
cd "$work"

# ---- (c) add_subdirectory ------------------------------------------------------------------------
step "(c) add_subdirectory($src)"
"$cmake" -S "$consumer" -B "$work/add_subdirectory" -G "Unix Makefiles" "${common[@]}" \
  "${chash_c[@]}" -DCHASH_SOURCE_DIR="$src" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  >"$work/add_subdirectory.log"
# Every target the build has, less CMake's own: the consumer's two and the library's three.
cmake_own='^(all|clean|depend|edit_cache|rebuild_cache|install.*|list_install_components|test)$'
targets=$("$cmake" --build "$work/add_subdirectory" --target help |
          sed -n 's/^\.\.\. \([^ ]*\).*/\1/p' | grep -v '\.[ois]$' | grep -Ev "$cmake_own" |
          sort | tr '\n' ' ')
[ "$targets" = "chash chash_objects chash_shared consumer consumer_static " ] ||
  fail "add_subdirectory(chash) should add only the library; targets: $targets"
python3 - "$work/add_subdirectory/compile_commands.json" <<'PY' || fail "consumer compile flags"
import json, re, sys
for entry in json.load(open(sys.argv[1])):
    if not entry["file"].endswith("tests/consumer/main.cc"):
        continue
    cmd = entry["command"]
    if not re.search(r"-std=(gnu|c)\+\+20", cmd):
        sys.exit("C++20 not propagated: " + cmd)
    if "-Werror" in cmd or "-Wold-style-cast" in cmd:
        sys.exit("chash's warning flags leaked into the consumer: " + cmd)
PY
"$cmake" --build "$work/add_subdirectory" -j2 >>"$work/add_subdirectory.log"
"$work/add_subdirectory/consumer"
"$work/add_subdirectory/consumer_static"

# ---- (d) the C ABI: pkg-config chash_c with a C compiler -----------------------------------------
# A C program linking only libchash_c.so.1 (docs/BINDINGS.md); main.c checks main.cc's answers.
if [ -e "$prefix/lib/libchash_c.so" ]; then
  step "(d) pkg-config chash_c, $cc -std=c11"
  grep -q 'SONAME.*\[libchash_c\.so\.1\]' <<<"$(readelf -d "$prefix/lib/libchash_c.so")" ||
    fail "libchash_c.so has no SONAME libchash_c.so.1"
  [ -e "$prefix/include/chash/chash_c.h" ] || fail "not installed: include/chash/chash_c.h"
  grep -q 'chash::chash_c' "$prefix"/lib/cmake/chash/chashTargets.cmake ||
    fail "the CMake package has no chash::chash_c"
  [ "$(pkg-config --modversion chash_c)" = 0.2.0 ] || fail "pkg-config --modversion chash_c"
  mkdir -p "$work/c-abi"
  # shellcheck disable=SC2046  # pkg-config output is a list of flags
  "$cc" -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror $(pkg-config --cflags chash_c) \
    "$consumer/main.c" $(pkg-config --libs chash_c) -Wl,-rpath,"$prefix/lib" -o "$work/c-abi/consumer_c"
  needed=$(readelf -d "$work/c-abi/consumer_c")
  grep -q 'NEEDED.*\[libchash_c\.so\.1\]' <<<"$needed" || fail "consumer_c does not load libchash_c.so.1"
  if grep -q 'NEEDED.*\[libchash\.so' <<<"$needed"; then fail "consumer_c loads libchash.so"; fi
  "$work/c-abi/consumer_c"
fi

step "ok in $((SECONDS - start)) s"
