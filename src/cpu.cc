// SPDX-License-Identifier: Apache-2.0
#include "cpu.h"

namespace chash::internal {

bool cpu_has_avx2() noexcept {
#if defined(__x86_64__)
  static const bool has = [] {
    __builtin_cpu_init();  // safe before libgcc's own constructor has run
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
#else
  return false;
#endif
}

bool cpu_has_avx512() noexcept {
#if defined(__x86_64__)
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("bmi2");
  }();
  return has;
#else
  return false;
#endif
}

bool cpu_has_avx512_vbmi2() noexcept {
#if defined(__x86_64__)
  static const bool has = [] {
    __builtin_cpu_init();
    return cpu_has_avx512() && __builtin_cpu_supports("avx512vbmi2");
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace chash::internal
