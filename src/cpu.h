// SPDX-License-Identifier: Apache-2.0
// What the CPU the library runs on can do, for the few kernels built more than once (baseline
// x86-64; AVX2, each AVX2 file compiled alone with -mavx2; AVX-512 by target attribute):
// multi-buffer MD5 (hash/md5_multi.cc) and Guava's lanes and key hashes (presets/jvm.cc).
// Not installed.
#pragma once

namespace chash::internal {

// True when the CPU and the OS support AVX2 (CPUID and the YMM state saved by the OS, as libgcc's
// __builtin_cpu_supports checks); false on other architectures. Decided once per process.
bool cpu_has_avx2() noexcept;

// True when the CPU and the OS support AVX-512 F, BW, DQ and VL (and BMI2), the set the
// AVX-512 kernels use (presets/jvm_avx512.cc).
bool cpu_has_avx512() noexcept;

// cpu_has_avx512() and VBMI2 (byte compression), for the UTF-16 encoder
// (presets/java_strings.cc).
bool cpu_has_avx512_vbmi2() noexcept;

}  // namespace chash::internal
