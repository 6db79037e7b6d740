# SPDX-License-Identifier: Apache-2.0
SHELL := /bin/bash
# Thin wrapper over CMake. `make demo` and `make test` are the two commands a newcomer needs.
JOBS ?= $(shell nproc)
BUILD ?= build
CMAKE_FLAGS ?=

FUZZ_SECONDS ?= 10

BENCH_FLAGS ?= --benchmark_min_time=0.2 --benchmark_repetitions=3
PEER_NODES ?= 10,100,1000
PEER_KEYS ?= 100000
PREFIX ?= /usr/local

.PHONY: all bootstrap build bindings bench-bindings release install package wheel demo test unit-test asan tsan fuzz bench bench-peers bench-python bench-proxy bench-resize bench-fleet bench-hotkeys bench-pubsub bench-memcached bench-route soak chaos compat-vectors redis-suite memcached-suite twemproxy-suite clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

build: bootstrap
	@echo "make: $@ starts at $$(date +%T)"
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# The Java, Go and Node bindings over libchash_c (bindings/, docs/BINDINGS.md) in the normal tree:
# build/bindings/java/chash-VERSION.jar and libchash_jni.so, the Go packages vetted,
# bindings/node/build/Release/chash.node. `make test` runs their tests (ctest -L bindings).
bindings: bootstrap
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHASH_BUILD_BINDINGS=ON $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target bindings chash-cli

release: bootstrap
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DCHASH_BUILD_TESTS=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build build-release -j $(JOBS) --target chash-cli chash-demo

# A Release build of libchash (static and shared), the CLI and chash-proxy, installed under PREFIX:
# include/chash, lib/libchash.{a,so}, lib/cmake/chash (find_package), lib/pkgconfig/chash.pc,
# bin/chash, bin/chash-proxy. DESTDIR=... is honoured (staged installs for packaging).
install: bootstrap
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DCHASH_BUILD_TESTS=OFF \
	  -DCHASH_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS) >/dev/null
	cmake --build build-release -j $(JOBS)
	cmake --install build-release

# The Debian package (docs/PACKAGING.md): a Release tree for the prefix /usr built with Debian's
# hardening flags (dpkg-buildflags, hardening=+all; its -g and -O2 left to the build type), packed
# by CPack into build-deb/package/chash_VERSION-REVISION_ARCH.deb, then checked as `make test`
# checks the test tree's (tests/dist/test_deb.py: programs, library, man pages, completion,
# unit, Depends, lintian). `sudo apt install ./build-deb/package/chash_*.deb` installs it.
DEB_FLAGS = DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --get
package: bootstrap
	@echo "make: $@ starts at $$(date +%T)"
	cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
	  -DCHASH_BUILD_TESTS=OFF -DCHASH_BUILD_BENCH=OFF -DCHASH_BUILD_EXAMPLES=OFF -DCHASH_PYTHON=OFF \
	  -DCHASH_BUILD_BINDINGS=OFF \
	  -DCMAKE_C_FLAGS="$$($(DEB_FLAGS) CPPFLAGS) $$($(DEB_FLAGS) CFLAGS | sed 's/ *-g\b//; s/ *-O2\b//')" \
	  -DCMAKE_CXX_FLAGS="$$($(DEB_FLAGS) CPPFLAGS) $$($(DEB_FLAGS) CXXFLAGS | sed 's/ *-g\b//; s/ *-O2\b//')" \
	  -DCMAKE_EXE_LINKER_FLAGS="$$($(DEB_FLAGS) LDFLAGS)" \
	  -DCMAKE_SHARED_LINKER_FLAGS="$$($(DEB_FLAGS) LDFLAGS)" $(CMAKE_FLAGS) >/dev/null
	cmake --build build-deb -j $(JOBS)
	rm -f build-deb/package/chash_*.deb
	cd build-deb && cpack
	CHASH_BUILD_DIR=$(CURDIR)/build-deb CHASH_DEB=$$(ls build-deb/package/chash_*.deb) \
	  /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/dist/test_deb.py
	@ls -l build-deb/package/chash_*.deb

# A wheel of the Python package as `pip install .` builds it: a fresh Release CMake tree of the
# library and the module (kept in build-python/ for the next run), by Debian's python3-build
# without PyPI; build-python/dist/chash-VERSION-cpXY-cpXY-linux_ARCH.whl.
wheel: bootstrap
	@echo "make: $@ starts at $$(date +%T)"
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) /usr/bin/python3 -m build --wheel --no-isolation \
	  --outdir build-python/dist .
	@ls -l build-python/dist/chash-*.whl

# The main job: the consistent-hashing scenarios with measured numbers; plots in ./chash-demo/.
demo: release
	./build-release/chash demo --out-dir chash-demo

# Every test: the normal build, the unit tests under ASan+UBSan, the concurrency tests under TSan,
# and each libFuzzer target for FUZZ_SECONDS.
test: unit-test asan tsan fuzz
	@echo "make: test ends at $$(date +%T)"

unit-test: build
	@echo "make: $@ starts at $$(date +%T)"
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# One clang tree with ASan+UBSan holds both the sanitized unit and proxy tests and the libFuzzer
# targets, so that libchash, the CLI's library and the proxy's are compiled once for both. The C
# ABI's tests (tests/c_api, C11 through libchash_c.so) run there too: its error paths' leaks are
# LeakSanitizer's to find (~15 s on 2 busy cores, most of it the 608 peer vector files).
SANITIZED_TREE = CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
	  -DCHASH_SANITIZE=address,undefined -DCHASH_FUZZ=ON \
	  -DCHASH_BUILD_BENCH=OFF -DCHASH_BUILD_EXAMPLES=OFF >/dev/null

asan: bootstrap
	@echo "make: $@ starts at $$(date +%T)"
	$(SANITIZED_TREE)
	cmake --build build-asan -j $(JOBS) --target chash_unit_tests chash_proxy_tests chash_c_tests
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  bash scripts/gtest-shards.sh $(JOBS) ./build-asan/tests/chash_unit_tests --gtest_brief=1
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ./build-asan/tests/c_api/chash_c_tests
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  bash scripts/gtest-shards.sh $(JOBS) ./build-asan/tests/proxy/chash_proxy_tests --gtest_brief=1

# -O1 -g1 (line tables) instead of RelWithDebInfo's -O2 -g: what TSan's reports need, and the tree
# compiles in ~55% of the time (GCC with -fsanitize=thread: proxy/core/worker.cc 8.7 s -> 5.0 s).
TSAN_FLAGS = -O1 -g1 -DNDEBUG
tsan: bootstrap
	@echo "make: $@ starts at $$(date +%T)"
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHASH_SANITIZE=thread \
	  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(TSAN_FLAGS)" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(TSAN_FLAGS)" \
	  -DCHASH_BUILD_BENCH=OFF -DCHASH_BUILD_EXAMPLES=OFF >/dev/null
	cmake --build build-tsan -j $(JOBS) --target chash_concurrency_tests chash_proxy_tests
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp \
	  ./build-tsan/tests/chash_concurrency_tests --gtest_brief=1
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/tests/tsan.supp \
	  bash scripts/gtest-shards.sh $(JOBS) ./build-tsan/tests/proxy/chash_proxy_tests --gtest_brief=1

# libFuzzer (clang) with ASan+UBSan over every parser of untrusted input; FUZZ_SECONDS each,
# JOBS at a time (scripts/fuzz-all.sh). The sanitized suites run as JOBS GoogleTest shards at once
# (scripts/gtest-shards.sh), as ctest -j runs the normal tree: 5.5 -> 3 min for ASan on 2 cores.
fuzz: bootstrap
	@echo "make: $@ starts at $$(date +%T)"
	$(SANITIZED_TREE)
	cmake --build build-asan -j $(JOBS) --target chash_fuzzers
	bash scripts/fuzz-all.sh build-asan $(FUZZ_SECONDS) $(JOBS)

# Google Benchmark suites (docs/BENCHMARKS.md): latency chains, throughput, batch, build, quality.
bench: release
	cmake -S . -B build-release -DCHASH_BUILD_BENCH=ON >/dev/null
	cmake --build build-release -j $(JOBS) --target chash_bench
	./build-release/bench/chash_bench $(BENCH_FLAGS) --benchmark_out=build-release/bench.json --benchmark_out_format=json
	python3 bench/report.py build-release/bench.json

# chash next to the peers (libmemcached, Guava, uhashring, node hashring, groupcache) on the same keys.
bench-peers: release
	cmake -S . -B build-release -DCHASH_BUILD_BENCH=ON >/dev/null
	cmake --build build-release -j $(JOBS) --target chash_peers
	BUILD=$(CURDIR)/build-release bash bench/peers/run.sh $(PEER_NODES) $(PEER_KEYS)

# Each binding next to its native peer in one process, alternating (bench/bindings/run.sh;
# docs/BENCHMARKS.md "Bindings"): Java vs Guava and spymemcached, Go vs groupcache, Node vs
# hashring, at 10, 100 and 1000 nodes on BINDINGS_KEYS keys. A RelWithDebInfo tree, as `make test`'s.
BINDINGS_KEYS ?= 100000
bench-bindings: bindings
	BUILD=$(CURDIR)/$(BUILD) bash bench/bindings/run.sh $(BINDINGS_KEYS)

# `chash route` as a whole process on a 2M-key file (bench/route/run.sh; BASELINE=<other chash>
# alternates with another binary and compares outputs).
bench-route: release
	bash bench/route/run.sh

# The Python package's lookups/s next to uhashring (and hash_ring with HASH_RING=<checkout>), on
# the same keys, answers checked (bench/python/bench.py; docs/BENCHMARKS.md). PY_NODES/PY_KEYS.
PY_NODES ?= 10
PY_KEYS ?= 100000
bench-python: release
	cmake --build build-release -j $(JOBS) --target chash_python
	PYTHONPATH=$(CURDIR)/build-release/python /usr/bin/python3 bench/python/bench.py $(PY_NODES) $(PY_KEYS)

# chash-proxy next to nutcracker (redis, memcache), haproxy and nginx stream (tcp) and direct, all
# on loopback with the same backends (docs/BENCHMARKS.md). Knobs in bench/proxy/run.sh: REQUESTS=...
bench-proxy: release
	cmake --build build-release -j $(JOBS) --target chash-proxy
	CHASH_PROXY=$(CURDIR)/build-release/chash-proxy OUT=$(CURDIR)/build-release/bench-proxy.md \
	  bash bench/proxy/run.sh

# A cache's hit ratio through a resize (a node added, one removed, one failing and returning with
# its old values), nutcracker next to chash-proxy on the same nutcracker.yml, 5 redis-server then
# 5 memcached on 127.0.0.1 (docs/RESIZE.md). ~14 minutes with the defaults (15 at most); tables
# on stdout and in build-release/bench-resize/resize.md, with SVG plots and the per-second CSV.
# Knobs: RESIZE_FLAGS="--keys 5000 --duration 9 --clients 4 --chash-pool-extra 'warmup: true'"
# (python3 bench/resize/run.py --help; RESIZE_* environment variables too).
RESIZE_FLAGS ?=
bench-resize: release
	cmake --build build-release -j $(JOBS) --target chash-proxy
	CHASH_PROXY=$(CURDIR)/build-release/chash-proxy python3 bench/resize/run.py \
	  --out $(CURDIR)/build-release/bench-resize $(RESIZE_FLAGS)

# A fleet of three proxies through a staggered resize and a partial partition: nutcracker,
# chash-proxy on files and chash-proxy fed by etcd, one load round-robin over the three, 5
# redis-server and one etcd on 127.0.0.1 (docs/FLEET.md). ~5 minutes with the defaults;
# tables on stdout and in build-release/bench-fleet/fleet.md, SVG plots, per-second CSV.
# Knobs: FLEET_FLAGS="--duration 15 --keys 5000 --systems chash-etcd,nutcracker"
# (python3 bench/fleet/run.py --help; FLEET_* environment variables too).
FLEET_FLAGS ?=
bench-fleet: release
	cmake --build build-release -j $(JOBS) --target chash-proxy
	CHASH_PROXY=$(CURDIR)/build-release/chash-proxy python3 bench/fleet/run.py \
	  --out $(CURDIR)/build-release/bench-fleet $(FLEET_FLAGS)

# Pub/Sub fan-out (docs/BENCHMARKS.md): messages/s to 1, 10 and 50 subscribers through chash-proxy
# and directly, alternated in one run. ~1 minute. Knobs: PUBSUB_FLAGS="--messages 100000 --rounds 5"
PUBSUB_FLAGS ?=
bench-pubsub: release
	cmake --build build-release -j $(JOBS) --target chash-proxy
	python3 bench/pubsub/run.py --chash-proxy $(CURDIR)/build-release/chash-proxy \
	  --out $(CURDIR)/build-release/bench-pubsub $(PUBSUB_FLAGS)

# Hot keys (docs/HOTKEYS.md): one key at 30% of a Zipf load, cache off / hot_cache / hot_reads.
HOTKEYS_FLAGS ?=
bench-hotkeys: release
	cmake --build build-release -j $(JOBS) --target chash-proxy
	CHASH_PROXY=$(CURDIR)/build-release/chash-proxy python3 bench/hotkeys/run.py \
	  --out $(CURDIR)/build-release/bench-hotkeys $(HOTKEYS_FLAGS)

# memcached through chash-proxy, two parts (docs/BENCHMARKS.md "make bench-memcached"), ~90 s.
# faults (docs/MEMCACHED.md "Replicated pools"): a write-heavy Zipf load, plain vs `replicas: 3`
# side by side, 3 memcached each on 127.0.0.1, one killed and restarted empty, one stopped and
# resumed; lost writes, stale reads, proxy CPU per request (~30 s). throughput: chash-proxy's
# text, meta and binary protocols, nutcracker (text) and memcached directly, each in front of its
# own memcached, a 90% get load in 1 s rounds taken in turn; requests/s and proxy CPU per request,
# every reply checked (~50 s). Knobs: MEMCACHED_BENCH_FLAGS="--part throughput --tp-duration 20"
# or "--part faults --duration 60 --keys 5000 --write-ratio 0.5" (python3 bench/memcached/run.py --help)
MEMCACHED_BENCH_FLAGS ?=
bench-memcached: release
	cmake --build build-release -j $(JOBS) --target chash-proxy
	python3 bench/memcached/run.py --chash-proxy $(CURDIR)/build-release/chash-proxy \
	  --out $(CURDIR)/build-release/bench-memcached $(MEMCACHED_BENCH_FLAGS)

# Jepsen-style histories under faults (docs/RELIABILITY.md "Histories under faults"): chash-proxy
# through etcd (3 proxies, 3 etcd members), on staggered file reloads, alone with safe return,
# and nutcracker beside them; Redis and memcached pools; backend kill/return, SIGSTOP, a proxy
# killed or partitioned, an etcd member stopped, adds and removes in every phase; each history
# checked for lost acknowledged writes and stale reads, per seed (a failing seed replays with
# --seeds N). Writes the table into docs/RELIABILITY.md between its chaos markers, histories
# with anomalies into build-release/chaos. ~1 hour with the defaults (seeds 1-3; CHAOS_SEEDS=1-10).
# Knobs: CHAOS_FLAGS="--seeds 1-20 --systems chash-etcd --scenarios kill-return,stop"
CHAOS_FLAGS ?=
chaos: release
	cmake --build build-release -j $(JOBS) --target chash-proxy
	python3 tests/chaos/chaos.py --chash-proxy $(CURDIR)/build-release/chash-proxy \
	  --out $(CURDIR)/build-release/chaos --doc docs/RELIABILITY.md $(CHAOS_FLAGS)

# Fault and load figures (docs/RELIABILITY.md): a Release chash-proxy with 3 redis-server and 3
# memcached on 127.0.0.1 under steady load while backends are killed, paused and reloaded, with
# idle, slow, admin and malformed clients, then SIGTERM with drain (and a binary hand-over when the
# binary has --takeover). ~5 minutes; prints one row per event, fails on any unanswered request,
# hung client or unbounded RSS. The short form runs in `make test` (ctest -L soak). Knobs:
# SOAK_FLAGS="--clients 20 --window 5 ..." (python3 tests/soak/soak.py --help).
SOAK_FLAGS ?=
soak: bootstrap
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DCHASH_BUILD_TESTS=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build build-release -j $(JOBS) --target chash-proxy
	timeout 900 python3 tests/soak/soak.py --proxy build-release/chash-proxy \
	  --markdown build-release/soak.md $(SOAK_FLAGS)

# Redis's own TCL units (type/string ... scripting) directly against redis-server and through
# chash-proxy pools of one and three backends (docs/COMPATIBILITY.md); REDIS_SRC is a checkout
# of redis 7.0.15 made by the caller (nothing is downloaded). ~15 minutes. Knobs: MODES, UNITS.
redis-suite: build
	REDIS_SRC=$(REDIS_SRC) CHASH_PROXY=$(CURDIR)/$(BUILD)/chash-proxy OUT=$(CURDIR)/$(BUILD)/redis-suite \
	  bash tests/redis_suite/run.sh

# memcached's own t/*.t (Perl, prove) directly against memcached and through a chash-proxy pool of
# one memcached (docs/COMPATIBILITY.md); MEMCACHED_SRC is a checkout of memcached 1.6.18 made by
# the caller (nothing is downloaded). Knobs: MODES, FILES, FILE_TIMEOUT (seconds per file, 300).
memcached-suite: build
	MEMCACHED_SRC=$(MEMCACHED_SRC) CHASH_PROXY=$(CURDIR)/$(BUILD)/chash-proxy OUT=$(CURDIR)/$(BUILD)/memcached-suite \
	  bash tests/memcached_suite/run.sh

# twemproxy's own nose tests against nutcracker and chash-proxy (TWEMPROXY_SRC: a checkout).
twemproxy-suite: build
	TWEMPROXY_SRC=$(TWEMPROXY_SRC) CHASH_PROXY=$(CURDIR)/$(BUILD)/chash-proxy \
	  OUT=$(CURDIR)/$(BUILD)/twemproxy-suite bash tests/twemproxy_suite/run.sh

# Regenerate the compatibility vectors from the real peers (installs them; see tests/compat/).
# Peers outside Debian/npm need a checkout: KETAMA_SRC, HASH_RING_SRC, JEDIS_SRC, ENVOY_SRC.
compat-vectors:
	bash tests/compat/generate_all.sh

clean:
	rm -rf build build-release build-asan build-tsan build-fuzz build-deb build-python
