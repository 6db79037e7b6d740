// SPDX-License-Identifier: Apache-2.0
#include "allocation_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bool counting = false;
thread_local std::size_t allocations = 0;
}  // namespace

namespace chash::testing {

void start_counting_allocations() noexcept {
  allocations = 0;
  counting = true;
}

std::size_t stop_counting_allocations() noexcept {
  counting = false;
  return allocations;
}

}  // namespace chash::testing

// Replacements of the global allocation functions (malloc underneath, which the sanitizers
// still see). Every unaligned form is replaced, nothrow included, so each allocation is freed by
// its own family (ASan checks the pairing); the aligned forms keep the runtime's pair.
void* operator new(std::size_t n) {
  if (counting) ++allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (counting) ++allocations;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept {
  return ::operator new(n, t);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
