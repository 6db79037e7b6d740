#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Deep check of java_string_hashcode against the real JDK: ~17.9M strings (every 1-3 byte string,
# and every 4-byte string over 32 boundary bytes). Not part of the unit tests (the JDK is not a
# test dependency); run it after touching src/hash/java.cc. Needs a JDK (17) and a C++20 compiler.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
c++ -std=c++20 -O2 -I"$root/include" "$root/src/hash/java.cc" "$here/java_exhaustive_check.cc" \
  -o "$dir/check"
java -cp /usr/share/java/guava.jar "$here/JavaVectors.java" exhaustive | "$dir/check"
