// SPDX-License-Identifier: Apache-2.0
// What the CPU the library runs on can do, for the few kernels built twice (baseline x86-64 and
// AVX2, each AVX2 file compiled alone with -mavx2): multi-buffer MD5 (hash/md5_multi.cc) and
// Guava's lanes (presets/jvm.cc). Not installed.
#pragma once

namespace chash::internal {

// True when the CPU and the OS support AVX2 (CPUID and the YMM state saved by the OS, as libgcc's
// __builtin_cpu_supports checks); false on other architectures. Decided once per process.
bool cpu_has_avx2() noexcept;

}  // namespace chash::internal
