#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package chash needs to build, test and run its demo. Idempotent and fast
# when everything is present (one dpkg-query, no apt-get). Uses sudo when not root.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  clang libclang-rt-dev           # libFuzzer and sanitizer runtimes for clang
  libxxhash-dev xxhash            # xxh3/xxh64, and xxhsum for check values
  libssl-dev                      # MD5 (OpenSSL EVP); chash-proxy TLS (libssl)
  openssl                         # the TLS tests and bench make their certificates with it
  zlib1g-dev                      # CRC32
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
  libjemalloc-dev                 # chash-proxy's allocator (as redis-server's; proxy/CMakeLists.txt)
  libcpp-httplib-dev              # chash-proxy's etcd client (HTTP/JSON v3 API; membership/etcd/)
  etcd-server etcd-client         # the fleet tests and make bench-fleet run real etcd (docs/FLEET.md)
  librsvg2-bin                    # rsvg-convert: render SVG plots to PNG to look at them
  chromium libpng-dev             # the admin status page's browser test: headless Chromium, its screenshot decoded
  redis-server redis-tools        # chash-proxy tests run real redis-server and redis-benchmark
  curl netcat-openbsd             # the proxy docs' examples (curl the admin port, nc the stats port) run as written
  redis-sentinel                  # chash-proxy Sentinel tests run three real Sentinels
  memcached                       # chash-proxy memcache pools are tested against real memcached
  nutcracker haproxy nginx libnginx-mod-stream wrk libmemcached-tools  # make bench-proxy peers and load
  python3 python3-dev pybind11-dev  # the Python package chash (python/, docs/PYTHON.md)
  python3-pytest python3-uhashring  # its tests; uhashring also regenerates tests/compat vectors
  python3-redis                   # chash-proxy ACL tests drive the proxy with redis-py (RESP2 AUTH user pass)
  python3-pymemcache              # chash-proxy client tests drive the memcache pool with pymemcache
  tcl                             # make redis-suite: Redis's own TCL test units (tests/redis_suite)
  python3-nose python3-memcache   # make twemproxy-suite: twemproxy's nose tests (tests/twemproxy_suite)
  clang-format                    # .clang-format (developers: clang-format -i; not needed to build)
  python3-build python3-setuptools python3-wheel python3-venv python3-pip  # pip install ., wheels
  help2man lintian dpkg-dev fakeroot file  # make package: chash(1)/chash-proxy(8) from --help, the .deb checked by lintian
  man-db bash-completion          # the package test renders the man pages (man -l) and loads the completions
  prometheus                      # the dashboard test: Prometheus scrapes a proxy; promtool checks
  openjdk-17-jdk-headless junit5  # bindings/java: javac, jar, the JNI headers; its tests on JUnit 5's console launcher
  libguava-java libspymemcached-java  # bindings/java's drop-ins are checked against the real Guava and spymemcached
  golang-go golang-github-golang-groupcache-dev  # bindings/go (cgo) and groupcache's consistenthash, its drop-in's peer
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# The npm packages, from their lockfiles, once: the Node.js clients the proxy tests drive
# (ioredis, node-redis; tests/clients/node), and the Node binding's build and test tools
# (node-addon-api, node-gyp, the peer hashring; bindings/node). node and npm come with the machine
# (Node 20, its headers in /usr/include/node).
install_node_clients() {
  local root dir
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  for dir in "$root/tests/clients/node" "$root/bindings/node"; do
    if [ ! -d "$dir/node_modules" ] && command -v npm >/dev/null 2>&1; then
      echo "bootstrap: npm ci in $dir" >&2
      # --ignore-scripts: bindings/node's own install script builds the addon, which needs this
      # tree's libchash_c; the CMake build runs node-gyp with it (bindings/node/CMakeLists.txt).
      # No dependency of either directory needs an install script.
      npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts >/dev/null
    fi
  done
}

if [ ${#missing[@]} -eq 0 ]; then
  install_node_clients
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "bootstrap: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_node_clients
