#!/usr/bin/env bash
# Prepends the SPDX license line to every project source file that lacks one:
#   // SPDX-License-Identifier: Apache-2.0   C, C++, Java, Go, JavaScript, version.h.in
#   # SPDX-License-Identifier: Apache-2.0    shell, Python, CMake, Makefile, chash.pc.in, and
#                                            other scripts that start with #!
# as the first line, or after a #! line (and after a Python coding line that follows it).
# Idempotent: a file with an SPDX-License-Identifier in its first 5 lines is left alone.
# Skipped: data and vectors (tests/compat/vectors, tests/testdata, fuzz corpora, .tsv, .txt other
# than CMakeLists.txt, .json, .md, .svg, .hex), vendored trees (third_party/, vendor/,
# node_modules/), and generated files (a "DO NOT EDIT" or "@generated" in their first 5 lines;
# *.in templates are sources, not generated). Files are those git tracks or would track
# (git ls-files --cached --others --exclude-standard), so build trees are never touched.
#
# Usage: scripts/spdx.sh           add the line where it is missing; lists the files it changed
#        scripts/spdx.sh --check   list the files that lack it; exit 1 if there are any
set -euo pipefail
cd "$(dirname "$0")/.."

readonly ID="SPDX-License-Identifier: Apache-2.0"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

# The comment leader for file $1: "//", "#", or nothing when the file is skipped.
leader() {
  local f=$1
  case "$f" in
    tests/compat/vectors/* | tests/testdata/* | fuzz/corpus/*) return ;;
    third_party/* | */third_party/* | vendor/* | */vendor/* | */node_modules/*) return ;;
  esac
  case "$f" in
    *.in) ;;  # templates: their output is generated, they are not
    *) if head -n 5 -- "$f" | grep -qiE 'do not edit|@generated'; then return; fi ;;
  esac
  case "$f" in
    *.h | *.hpp | *.cc | *.cpp | *.c | *.java | *.go | *.js | *.h.in) echo "//" ;;
    *.sh | *.py | *.cmake | *.cmake.in | *.pc.in | CMakeLists.txt | */CMakeLists.txt) echo "#" ;;
    Makefile | */Makefile | *.mk) echo "#" ;;
    *)  # no extension (in the file's own name): a script when it starts with #!
      case "${f##*/}" in
        *.*) ;;  # data or docs
        *) if head -c 2 -- "$f" | grep -q '^#!'; then echo "#"; fi ;;
      esac ;;
  esac
}

missing=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  c=$(leader "$f")
  [ -n "$c" ] || continue
  if head -n 5 -- "$f" | grep -q 'SPDX-License-Identifier'; then continue; fi
  missing=$((missing + 1))
  echo "$f"
  [ "$check" -eq 1 ] && continue
  tmp=$(mktemp)
  awk -v line="$c $ID" '
    !done && NR == 1 && /^#!/ { print; next }
    !done && NR == 2 && /^#.*coding[:=]/ { print; next }
    !done { print line; done = 1 }
    { print }
    END { if (!done) print line }
  ' "$f" >"$tmp"
  cat "$tmp" >"$f"  # keeps the file's mode (scripts stay executable)
  rm -f "$tmp"
done < <(git ls-files -z --cached --others --exclude-standard)

if [ "$check" -eq 1 ] && [ "$missing" -gt 0 ]; then
  echo "spdx: $missing file(s) without \"$ID\" (scripts/spdx.sh adds it)" >&2
  exit 1
fi
